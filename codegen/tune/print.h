/* print.h - what dmm tune-glibc prints: the outcome of a search (the
 * winner as lines to paste, the final run's table) and of --verify, as
 * text for people or as one JSON object (tracer/base/json.h) for scripts,
 * which read every number from it rather than computing their own. */
#ifndef DMM_TUNE_PRINT_H
#define DMM_TUNE_PRINT_H

#include <stdio.h>

#include "codegen/search/ge.h"
#include "codegen/tune/measure.h"
#include "codegen/tune/search.h"
#include "codegen/tune/tunables.h"
#include "codegen/tune/verify.h"

/* One search, start to end. */
typedef struct dmm_tune_outcome {
    dmm_ge_config_t   cfg;
    dmm_tuner_t       tu;
    const char       *trace;
    const char       *grammar_path;  /* NULL: the built-in grammar */
    dmm_tune_result_t r;
    dmm_tunables_t    best;      /* the winner: the search's best, pruned, or the defaults */
    double            prune_tol; /* < 0: no pruning */
    int               pruned;    /* mask of the tunables put back to default */
    int               tuned;     /* best sets something */
    dmm_tune_final_t  fr;        /* fr.n == 0: no final run */
    double            t_search, t_total;
    char              full[8192];   /* GLIBC_TUNABLES to paste */
} dmm_tune_outcome_t;

void dmm_tune_print_text(const dmm_tune_outcome_t *o, FILE *f);
void dmm_tune_print_json(const dmm_tune_outcome_t *o, FILE *f);

void dmm_tune_print_verify_text(const dmm_tune_verify_t *v, FILE *f);
void dmm_tune_print_verify_json(const dmm_tune_verify_t *v, FILE *f);

#endif
