/* tune_glibc.h - dmm tune-glibc: glibc malloc's tunables searched for one
 * trace, for a program that cannot change its allocator.
 *
 * Four tunables (mallopt's M_TOP_PAD, M_TRIM_THRESHOLD, M_MMAP_THRESHOLD,
 * M_ARENA_MAX), set at start-up through GLIBC_TUNABLES=glibc.malloc.NAME=V:...
 * or the older MALLOC_TOP_PAD_, MALLOC_TRIM_THRESHOLD_, MALLOC_MMAP_THRESHOLD_
 * and MALLOC_ARENA_MAX (glibc 2.36 honours both; `dmm tune-glibc --probe`
 * shows what a process's glibc made of them).  A candidate is one value of
 * each, "default" meaning not set.  Setting any of top_pad, trim_threshold
 * or mmap_threshold turns glibc's dynamic mmap threshold off (by default
 * the threshold rises to the size of the largest mmapped block freed, and
 * trim_threshold to twice that), so an explicit value equal to glibc's
 * default is not the same candidate as "default".
 *
 * The search is the GE engine (codegen/ge.h) with a custom fitness: genomes
 * map through a BNF grammar whose terminals are `name=value` settings
 * (dmm_tune_grammar_text, or any grammar in that notation), and each
 * candidate is scored by replaying the trace (`dmm replay --json`) in a
 * child process with the candidate's environment.  See tune_glibc.c and the
 * README for the fitness and how the noise is handled. */
#ifndef DMM_TUNE_GLIBC_H
#define DMM_TUNE_GLIBC_H

#include <stddef.h>
#include <stdint.h>

#include "codegen/search/ge.h"
#include "codegen/grammar/grammar.h"

enum {
    DMM_TUNE_TOP_PAD,
    DMM_TUNE_TRIM_THRESHOLD,
    DMM_TUNE_MMAP_THRESHOLD,
    DMM_TUNE_ARENA_MAX,
    DMM_TUNE_N
};

#define DMM_TUNE_DEFAULT (-1LL)   /* a tunable left unset */

typedef struct dmm_tunables {
    long long v[DMM_TUNE_N];      /* bytes (arena_max: a count), or DMM_TUNE_DEFAULT */
} dmm_tunables_t;

typedef struct dmm_tunable_info {
    const char *name;       /* the grammar's word: top_pad */
    const char *tunable;    /* glibc.malloc.top_pad */
    const char *env;        /* MALLOC_TOP_PAD_ */
    long long   lo, hi;     /* accepted values */
} dmm_tunable_info_t;

/* The table of the four, in the order above. */
extern const dmm_tunable_info_t dmm_tunables_info[DMM_TUNE_N];

/* All four unset. */
void dmm_tunables_default(dmm_tunables_t *t);
int  dmm_tunables_all_default(const dmm_tunables_t *t);
/* Is glibc's dynamic mmap threshold off under t? */
int  dmm_tunables_static_threshold(const dmm_tunables_t *t);

/* The built-in grammar (static text). */
const char *dmm_tune_grammar_text(void);

/* A phenotype: `name=value` words separated by blanks, each name at most
 * once (missing ones stay default); value "default", or a decimal number of
 * bytes with an optional k, m or g suffix (binary: 1k = 1024).  0, or -1
 * with err naming the word. */
int dmm_tunables_parse(const char *phenotype, dmm_tunables_t *t, char *err, size_t errlen);

/* The canonical text: all four `name=value` in table order, values in
 * bytes or "default".  Returns the length (snprintf's rule). */
size_t dmm_tunables_format(const dmm_tunables_t *t, char *buf, size_t cap);

/* The GLIBC_TUNABLES value of the tunables that are set, `:`-separated
 * (empty when none is).  Returns the length (snprintf's rule). */
size_t dmm_tunables_glibc(const dmm_tunables_t *t, char *buf, size_t cap);

/* Read our four from a GLIBC_TUNABLES value (other entries ignored); 0, or
 * -1 with err for a bad value of one of ours. */
int dmm_tunables_from_glibc(const char *value, dmm_tunables_t *t, char *err, size_t errlen);

/* The search with a fitness of the caller's own (the tests inject a
 * deterministic one; dmm tune-glibc measures).  fitness() returns F (lower
 * better; DMM_GE_WORST: invalid) and may fill T and M for the log.  With
 * fold_arena, arena_max is set to default before a candidate is keyed and
 * scored (a one-thread replay cannot see it; see tune_glibc.c). */
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

/* 0 (r filled), or -1 with err.  Free r with dmm_tune_result_free. */
int dmm_tune_search(const dmm_ge_config_t *cfg, const dmm_grammar_t *g, int fold_arena,
                    dmm_tune_fitness_fn fitness, void *arg, dmm_tune_result_t *r, char *err,
                    size_t errlen);
void dmm_tune_result_free(dmm_tune_result_t *r);

/* Parsimony: for each tunable t sets, in table order, score t with and
 * without it (fresh calls of fitness, side by side) and put it back to
 * default when F without it is at most tol above F with it.  Returns the
 * mask (1 << index) of the tunables put back. */
int dmm_tune_prune(dmm_tunables_t *t, double tol, dmm_tune_fitness_fn fitness, void *arg);

/* The two-sided p-value of the Mann-Whitney U test that x (n values) and y
 * (m) come from one distribution: exact (U's distribution over every
 * ordering) without ties, else the normal approximation with the tie
 * correction.  1 when it cannot say. */
double dmm_tune_mann_whitney(const double *x, int n, const double *y, int m);

int dmm_tune_glibc_main(int argc, char **argv);

#endif
