/* evolve.h - the paper's search on one trace, as `dmm evolve` runs it: the
 * steps from a trace file to a directory of results.
 *
 *   load        the operation stream (from TRACE.ops when that is valid,
 *               else the trace, parsed, and TRACE.ops written), the grammar
 *               (generated from the stream, or a file); DIR created and
 *               writable
 *   references  the five presets simulated on the stream (eq. 1 takes kng's
 *               T and lea's M)
 *   search      grammatical evolution (ge.h), progress and stop as cfg says
 *   write       DIR/grammar.bnf (when generated), references.csv, log.csv,
 *               search.json, top-1.dmm .. top-K.dmm (the cfg.top best
 *               distinct designs, best first: the candidates `make evolve`
 *               measures for real); with cfg.objectives also front-1.dmm ..
 *               front-N.dmm (the run's front, by T), front.csv (them, the
 *               presets and the weighted-sum winner) and front.gp (gnuplot:
 *               front.png); and best.dmm last, so that its presence means a
 *               complete run; a run without a valid individual removes an
 *               older best.dmm instead
 *
 * Every file appears whole or not at all (tracer/base/file.h).  A step
 * returns 0, or -1 with err set to a message naming the file and the fault;
 * nothing is written to DIR before the search has a result. */
#ifndef DMM_SEARCH_EVOLVE_H
#define DMM_SEARCH_EVOLVE_H

#include <stddef.h>
#include <stdint.h>

#include "allocators/chain/desc.h"
#include "codegen/grammar/grammar.h"
#include "codegen/search/fitness.h"
#include "codegen/search/ge.h"
#include "tracer/format/opcache.h"
#include "tracer/format/opstream.h"

#define DMM_EVOLVE_TOP_MAX 50   /* the most top-N.dmm files (--top) */

typedef struct dmm_evolve {
    /* inputs */
    const char      *trace;         /* the trace file */
    const char      *grammar_path;  /* a .bnf, or NULL: generated from the trace */
    const char      *out;           /* DIR */
    dmm_ge_config_t  cfg;           /* the caller sets progress and stop */
    int              no_cache;      /* parse the trace even if TRACE.ops is valid,
                                       and write no TRACE.ops (opcache.h) */
    /* after load */
    char             name[128];     /* the trace's file name, for titles */
    char             warning[600];  /* why the trace was cut short, or "" */
    dmm_opload_t     load;          /* whether the stream came from TRACE.ops */
    char            *gtext;         /* the generated grammar's text, or NULL */
    dmm_grammar_t   *g;
    dmm_opstream_t   s;
    /* after references and search */
    dmm_ge_ref_t     refs[DMM_DESC_NPRESETS];
    dmm_ge_result_t  r;
    int              jobs;          /* simulation threads the search used */
} dmm_evolve_t;

/* A run with the paper's parameters (dmm_ge_config_default). */
void dmm_evolve_init(dmm_evolve_t *ev, const char *trace, const char *out);

int  dmm_evolve_load(dmm_evolve_t *ev, dmm_err_t *err);
int  dmm_evolve_references(dmm_evolve_t *ev, dmm_err_t *err);
/* The search; ev->r.stopped says whether it ran to the end. */
int  dmm_evolve_search(dmm_evolve_t *ev, dmm_err_t *err);
/* Every output; best.dmm only when ev->r.found. */
int  dmm_evolve_write(dmm_evolve_t *ev, dmm_err_t *err);

/* cfg.objectives: the index in ev->r.front of the front's knee (the design
 * nearest the ideal point, pareto.h), or -1 for an empty front. */
int  dmm_evolve_knee(const dmm_evolve_t *ev);

/* The best's canonical .dmm text with its title ("dmm 1  trace=NAME
 * seed=S fitness=F T=T M=M"); the length, or 0 when it did not fit. */
size_t dmm_evolve_best_text(dmm_evolve_t *ev, char *buf, size_t cap);

void dmm_evolve_free(dmm_evolve_t *ev);

#endif
