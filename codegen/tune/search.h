/* search.h - dmm tune-glibc's search: the GE engine (codegen/search/ge.h)
 * over a grammar of settings (tunables.h), with a fitness of the caller's
 * own, and the pruning of settings that do not pay for themselves.
 *
 * dmm tune-glibc's fitness measures candidates by replays (measure.h); the
 * tests inject a deterministic one. */
#ifndef DMM_TUNE_SEARCH_H
#define DMM_TUNE_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#include "codegen/grammar/grammar.h"
#include "codegen/search/ge.h"
#include "codegen/tune/tunables.h"

/* F of settings t (lower better; DMM_GE_WORST: invalid); may fill T and M
 * for the engine's log. */
typedef double (*dmm_tune_fitness_fn)(const dmm_tunables_t *t, uint64_t *T, size_t *M,
                                      void *arg);

typedef struct dmm_tune_result {
    int             found;
    dmm_tunables_t  best;
    double          F;
    dmm_ge_result_t ge;     /* the engine's result: log, counts, time */
} dmm_tune_result_t;

/* dmm tune-glibc's defaults: population 12, elite 2, 8 generations,
 * tournament 2, crossover 0.8, mutation 0.15 per codon, 8 codons, 2 wraps,
 * one job (candidates are timed one at a time), seed 1. */
void dmm_tune_config_default(dmm_ge_config_t *cfg);

/* The search.  With fold_arena, arena_max is set to default before a
 * candidate is keyed and scored (a one-thread replay cannot see it; see
 * measure.h).  0 (r filled), or -1 with err.  Free r with
 * dmm_tune_result_free. */
int dmm_tune_search(const dmm_ge_config_t *cfg, const dmm_grammar_t *g, int fold_arena,
                    dmm_tune_fitness_fn fitness, void *arg, dmm_tune_result_t *r, dmm_err_t *err);
void dmm_tune_result_free(dmm_tune_result_t *r);

/* Parsimony: for each tunable t sets, in table order, score t with and
 * without it (fresh calls of fitness, side by side) and put it back to
 * default when F without it is at most tol above F with it.  Returns the
 * mask (1 << index) of the tunables put back. */
int dmm_tune_prune(dmm_tunables_t *t, double tol, dmm_tune_fitness_fn fitness, void *arg);

#endif
