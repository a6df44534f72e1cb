/* sim.h - the simulator: replay a trace's operation stream through a chain
 * built in DMM_PS_SIM mode, and measure it.
 *
 * T is the counted cost (cost.h), M the page source's peak footprint.  The
 * result depends only on the operation stream and the description: the same
 * inputs give the same numbers on any run (the page source places chunks by
 * offset, and no class looks at absolute addresses). */
#ifndef DMM_SIM_SIM_H
#define DMM_SIM_SIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "allocators/chain/chain.h"
#include "allocators/core/cost.h"
#include "allocators/chain/desc.h"
#include "tracer/format/opstream.h"

#define DMM_SIM_HIST 32

typedef struct dmm_sim_result {
    char       name[128];      /* preset name or file */
    uint64_t   T;              /* cost units */
    dmm_cost_t cost;           /* the counters behind T */
    size_t     M;              /* peak footprint (bytes from the page source) */
    size_t     peak_live;      /* peak of live requested bytes */
    double     util;           /* peak_live / M */
    double     int_frag;       /* at M's peak: (usable - requested) of live blocks / M */
    double     ext_frag;       /* at M's peak: (M - usable of live blocks) / M */
    uint64_t   max_op_cost;    /* the most expensive single operation */
    uint64_t   hist[DMM_SIM_HIST]; /* operations by cost: bucket k holds [2^k, 2^(k+1)) */
    uint64_t   ops, failed;
    int        n;              /* allocators in the chain */
    uint64_t   served[DMM_DESC_MAX];
    uint64_t   large_served;   /* the fallback path */
    size_t     violations;     /* from check(), when asked */
    double     seconds;        /* wall time of the replay */
} dmm_sim_result_t;

/* Replay s through d.  check_every > 0 runs every allocator's check() every
 * that many operations (and at the end).  0, or -1 with err set. */
int dmm_sim_run(const dmm_opstream_t *s, const dmm_desc_t *d, const char *name,
                uint64_t check_every, dmm_sim_result_t *r, dmm_err_t *err);

/* The results of n simulations (descs[i] gave res[i]) side by side
 * (sim_print.c): a table for people, or one JSON object for programs (the
 * trace; per DMM its name, title, every row of the table, the allocators
 * with their fields and the requests each served, the cost histogram).
 * timed adds the simulated operations per second, which vary by run. */
void dmm_sim_print_table(FILE *f, const dmm_sim_result_t *res, int n, const dmm_desc_t *descs,
                         int timed);
void dmm_sim_print_json(FILE *f, const dmm_sim_result_t *res, int n, const dmm_desc_t *descs,
                        const char *trace, int timed);

#endif
