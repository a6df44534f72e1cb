/* evolve.h - the paper's search on one trace, as `dmm evolve` runs it: the
 * steps from a trace file to a directory of results.
 *
 *   load        the operation stream (from TRACE.ops when that is valid,
 *               else the trace, parsed, and TRACE.ops written), the grammar
 *               (generated from the stream, or a file); DIR created and
 *               writable
 *   references  the five presets simulated on the stream (eq. 1 takes kng's
 *               T and lea's M)
 *               (more traces: each loaded as the first, the grammar from the
 *               sizes of every trace the search sees)
 *   search      grammatical evolution (ge.h), progress and stop as cfg says;
 *               with more traces seen, a design's F is the mean (or worst)
 *               of its F on each against that trace's own references
 *   score       the best design on every trace, seen and held out
 *               (traces.csv)
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
#include <stdio.h>

#include "allocators/chain/desc.h"
#include "codegen/grammar/grammar.h"
#include "codegen/search/fitness.h"
#include "codegen/search/ge.h"
#include "tracer/format/opcache.h"
#include "tracer/format/opstream.h"

#define DMM_EVOLVE_TOP_MAX 50   /* the most top-N.dmm files (--top) */
#define DMM_EVOLVE_TRACES_MAX 64 /* traces besides the first (seen or held out) */

/* A trace besides the first: another the search scores every design on
 * (seen), or one it never sees (held out: --holdout), on which the best is
 * scored after the search. */
typedef struct dmm_evolve_trace {
    const char     *path;
    int             holdout;
    char            name[128];
    dmm_opstream_t  s;
    dmm_opload_t    load;
    dmm_ge_ref_t    refs[DMM_DESC_NPRESETS];   /* the presets on it */
} dmm_evolve_trace_t;

/* The best design scored on one trace (dmm_evolve_score): its T, M and
 * eq. 1 against that trace's own KNG and LEA, and the best preset's. */
typedef struct dmm_evolve_score {
    const char *name;
    int         holdout;
    uint64_t    ops, T, T_KNG, failed;
    size_t      M, M_LEA;
    double      F, F_preset;
    const char *preset;      /* the preset with the lowest F on it */
} dmm_evolve_score_t;

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
    /* more traces (dmm_evolve_add_trace), their cfg.extra, and after
     * dmm_evolve_score the best on every trace, the first one first */
    dmm_evolve_trace_t more[DMM_EVOLVE_TRACES_MAX];
    int              nmore;
    dmm_ge_trace_t   extra[DMM_EVOLVE_TRACES_MAX];
    dmm_evolve_score_t score[DMM_EVOLVE_TRACES_MAX + 1];
    int              nscore;
} dmm_evolve_t;

/* A run with the paper's parameters (dmm_ge_config_default). */
void dmm_evolve_init(dmm_evolve_t *ev, const char *trace, const char *out);

/* One more trace, before load: seen by the search (holdout 0) or held out.
 * 0, or -1 with err when there are already DMM_EVOLVE_TRACES_MAX. */
int  dmm_evolve_add_trace(dmm_evolve_t *ev, const char *path, int holdout, dmm_err_t *err);
int  dmm_evolve_load(dmm_evolve_t *ev, dmm_err_t *err);
int  dmm_evolve_references(dmm_evolve_t *ev, dmm_err_t *err);
/* The search; ev->r.stopped says whether it ran to the end. */
int  dmm_evolve_search(dmm_evolve_t *ev, dmm_err_t *err);
/* The best design simulated on every trace, seen and held out, into
 * ev->score (nothing when the search found none).  0, or -1 with err. */
int  dmm_evolve_score(dmm_evolve_t *ev, dmm_err_t *err);
/* traces.csv: each row of ev->score (holdout.c). */
void dmm_evolve_put_traces(FILE *f, const dmm_evolve_t *ev);
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
