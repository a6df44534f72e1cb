/* sim.h - the simulator: replay a trace's operation stream through a chain
 * built in DMM_PS_SIM mode, and measure it.
 *
 * T is the counted cost (cost.h), M the page source's peak footprint.  The
 * result depends only on the operation stream and the description: the same
 * inputs give the same numbers on any run (the page source places chunks by
 * offset, and no class looks at absolute addresses). */
#ifndef DMM_SIM_SIM_H
#define DMM_SIM_SIM_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "allocators/chain/chain.h"
#include "allocators/core/cost.h"
#include "allocators/chain/desc.h"
#include "tracer/format/opstream.h"

#define DMM_SIM_HIST 32

/* The paper's weighted sum of cost and footprint (eq. 1):
 *   0.5 T/T_ref + 0.5 M/M_ref.
 * The search's fitness (codegen/search/fitness.h) is this expression, and
 * dmm_sim_bound_t compares it with its cap: one definition, so that both
 * round alike.  It never decreases when T or M grows. */
static inline double dmm_sim_weighted(uint64_t T, size_t M, uint64_t T_ref, size_t M_ref)
{
    return 0.5 * (double)T / (double)T_ref + 0.5 * (double)M / (double)M_ref;
}

/* Limits on one simulation (dmm_sim_run_bounded).  T and M only grow as the
 * replay goes on (costs are counts, M a peak), and each allocation or
 * realloc still to come costs at least one call's units (the units of a
 * call the block cache serves, when the chain has one) (and each free of
 * a live block, when no request may fail: one failure ends the replay, so
 * every block the stream allocates is live until its free), so once
 *   dmm_sim_weighted(T so far + calls to come x a call's units,
 *                    max(M so far, M_floor), T_ref, M_ref) >= cap
 * the final value is at least cap as well: r->capped_at notes the first
 * operation after which that holds, and with stop_at_cap the replay ends
 * there.  calls is dmm_sim_calls(stream, fail_limit == 0) (0: the calls to
 * come are not counted).  M_floor is a footprint the result is known to reach anyway
 * (the trace's peak of live bytes, when no request may fail: every live
 * block lies in memory held from the page source).  Failing more than fail_limit
 * requests ends the replay (r->over_fail_at).  stop and deadline end it too
 * (r->interrupted): they are looked at every 4096 operations and whenever
 * T grew by 2^22 since the last look (one operation of a hopeless DMM may
 * walk millions of list nodes).  lean leaves out what only reports use
 * (usable sizes, so int_frag and ext_frag): T and M are the same. */
typedef struct dmm_sim_bound {
    uint64_t T_ref;
    size_t   M_ref;
    double   cap;          /* <= 0: no cap */
    size_t   M_floor;
    uint64_t calls;
    int      stop_at_cap;
    int      lean;
    uint64_t fail_limit;
    const volatile sig_atomic_t *stop;   /* NULL: none */
    double   deadline;     /* dmm_sim_now() seconds; <= 0: none */
    /* d is simulated with a pool of its own address span (dmm_sim_pool_of;
     * d's pool line left out): what a latency-minded deployment holds,
     * where no call takes a fresh page.  One more replay, to the end and
     * without the limits, finds the span first. */
    int      pooled;
} dmm_sim_bound_t;

/* The operations of s that call the allocator: allocations and reallocs,
 * and with frees the frees of blocks the stream allocated before (what a
 * replay in which nothing fails calls): dmm_sim_bound_t.calls.  0 when out
 * of memory (no calls counted: a looser bound, nothing else). */
uint64_t dmm_sim_calls(const dmm_opstream_t *s, int frees);

/* CLOCK_MONOTONIC in seconds: the clock of dmm_sim_bound_t.deadline. */
double dmm_sim_now(void);

typedef struct dmm_sim_result {
    char       name[128];      /* preset name or file */
    uint64_t   T;              /* cost units */
    dmm_cost_t cost;           /* the counters behind T */
    size_t     M;              /* peak footprint (bytes from the page source) */
    size_t     map_bytes;      /* of M: page-map pages, held for no chunk (at the end;
                                  they only grow): a pool of M - map_bytes holds the
                                  peak's chunks when they left no hole below them */
    size_t     span;           /* bytes of the first arena's address space its chunks
                                  (and their rooms) took, from its start: a pool this
                                  large has every chunk placed there inside it */
    size_t     peak_live;      /* peak of live requested bytes */
    double     util;           /* peak_live / M */
    double     int_frag;       /* at M's peak: (usable - requested) of live blocks / M */
    double     ext_frag;       /* at M's peak: (M - usable of live blocks) / M */
    uint64_t   max_op_cost;    /* the most expensive single operation */
    uint64_t   p999_op_cost;   /* 99.9 % of the operations cost less than this
                                  (the upper end of hist's bucket that reaches it) */
    uint64_t   hist[DMM_SIM_HIST]; /* operations by cost: bucket k holds [2^k, 2^(k+1)) */
    uint64_t   ops, failed;
    int        n;              /* allocators in the chain */
    uint64_t   served[DMM_DESC_MAX];
    uint64_t   large_served;   /* the fallback path */
    size_t     violations;     /* from check(), when asked */
    double     seconds;        /* wall time of the replay */
    /* with a bound (ops above is then the number replayed) */
    uint64_t   capped_at;      /* operations after which the cap was reached; 0: never */
    uint64_t   over_fail_at;   /* ... after which failures passed fail_limit; 0: never */
    int        interrupted;    /* stop or deadline ended the replay */
    int        complete;       /* every operation was replayed */
    size_t     pool_fit;       /* dmm_sim_fit_pool's answer, when asked (else 0) */
} dmm_sim_result_t;

/* Replay s through d.  check_every > 0 runs every allocator's check() every
 * that many operations (and at the end).  0, or -1 with err set. */
int dmm_sim_run(const dmm_opstream_t *s, const dmm_desc_t *d, const char *name,
                uint64_t check_every, dmm_sim_result_t *r, dmm_err_t *err);
/* The same under the limits of b (NULL: none); when the replay ends early,
 * r holds what was measured up to there. */
int dmm_sim_run_bounded(const dmm_opstream_t *s, const dmm_desc_t *d, const char *name,
                        uint64_t check_every, const dmm_sim_bound_t *b, dmm_sim_result_t *r,
                        dmm_err_t *err);

/* The pool that has every chunk of r's replay inside it: the larger of
 * its peak footprint less the page map and its address span. */
static inline size_t dmm_sim_pool_of(const struct dmm_sim_result *r)
{
    size_t m = r->M > r->map_bytes ? r->M - r->map_bytes : 0;
    return m > r->span ? m : r->span;
}

/* The largest pool that d can hold on s at no cost in memory: the largest
 * bytes (a page multiple) whose line `pool bytes=N` leaves d's peak
 * footprint on s where it is without a pool (d's own pool line is left
 * out), or 0 when not a page of pool does.  A pool counts whole from the
 * start, chunks only beyond it, so its M is at least M without it, and
 * equal while no chunk of the peak lies above a hole in the pool's range
 * (at most M less the page-map bytes; less for a design that gives chunks
 * back below its peak's top: a release policy, `retain bytes=0`).  A
 * binary search over simulations (M with a pool never falls as the pool
 * grows: a page more of it holds a page more and moves at most a page of
 * chunk inside).  0, or -1 with err set. */
int dmm_sim_fit_pool(const dmm_opstream_t *s, const dmm_desc_t *d, size_t *bytes,
                     dmm_err_t *err);

/* dmm_sim_print_*'s flags: the simulated operations per second, which vary
 * by run; pool_fit (from dmm_sim_fit_pool). */
#define DMM_SIM_PRINT_TIMED 1
#define DMM_SIM_PRINT_POOL  2

/* The results of n simulations (descs[i] gave res[i]) side by side
 * (sim_print.c): a table for people, or one JSON object for programs (the
 * trace; per DMM its name, title, every row of the table, the allocators
 * with their fields and the requests each served, the cost histogram).
 * flags: DMM_SIM_PRINT_* rows added to the rest. */
void dmm_sim_print_table(FILE *f, const dmm_sim_result_t *res, int n, const dmm_desc_t *descs,
                         int flags);
void dmm_sim_print_json(FILE *f, const dmm_sim_result_t *res, int n, const dmm_desc_t *descs,
                        const char *trace, int flags);

#endif
