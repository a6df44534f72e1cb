/* cost.h - the simulator's cost counters.
 *
 * T, the time of a DMM in the paper's fitness (eq. 1), is counted, not
 * measured: every allocator class reports the steps it takes through the
 * DMM_COST() macro, after the paper's Figure 9 (one unit per free-list node
 * visited, memory accesses counted apart).  The simulator and libdmm.so build
 * the classes with DMM_COUNT=1; the evolved library builds them with
 * DMM_COUNT=0, where every DMM_COST() compiles to nothing.
 *
 * dmm_cost_units() turns the counters into T; its weights are documented in
 * the README ("Cost model") and nowhere else. */
#ifndef DMM_CORE_COST_H
#define DMM_CORE_COST_H

#include <stddef.h>
#include <stdint.h>

typedef struct dmm_cost {
    uint64_t ops;           /* calls served: one unit each */
    uint64_t nodes;         /* free-list or tree nodes visited */
    uint64_t hdr_reads;     /* block header or boundary tag reads */
    uint64_t hdr_writes;    /* block header or boundary tag writes */
    uint64_t splits;        /* a block split in two */
    uint64_t coalesces;     /* two free blocks merged */
    uint64_t pagesrc_calls; /* chunks taken from or given back to the page source */
    uint64_t copied;        /* bytes moved by a realloc that could not stay in place */
    uint64_t lookups;       /* steps of a size -> list search (bisection probes) */
    uint64_t pages;         /* fresh pages handed out by the page source (chunks and
                               page-map pages): each one faults when first touched */
    uint64_t syscalls;      /* system calls of the page source (mprotect, madvise, mremap) */
    uint64_t cached;        /* calls the chain's block cache served alone (a malloc
                               that popped a cached block, a free that pushed one):
                               counted here instead of ops */
} dmm_cost_t;

#ifndef DMM_COUNT
#define DMM_COUNT 1
#endif

/* A chain's counters are shared by all its allocators, and in libdmm.so by
 * every thread, which count outside any one lock (the chain counts before it
 * locks, each allocator under its own lock).  So an update is a relaxed
 * atomic load and store: no data race, no lock prefix on the fast path, and
 * now and then a count lost when two threads update the same counter at
 * once, which statistics can afford (a locked add costs more than the
 * counting is worth; the single-threaded simulator loses nothing). */
#if DMM_COUNT
#define DMM_COST(costp, field, n)                                                   \
    __atomic_store_n(&(costp)->field,                                               \
                     __atomic_load_n(&(costp)->field, __ATOMIC_RELAXED) + (uint64_t)(n), \
                     __ATOMIC_RELAXED)
#else
#define DMM_COST(costp, field, n) ((void)(costp))
#endif

/* T in cost units: the weighted sum of the counters (weights in cost.c). */
uint64_t dmm_cost_units(const dmm_cost_t *c);

/* The same weights as a table, for reports and fits (dmm sim --json prints
 * it as "cost_model"): per counter, its key in dmm sim --json, the step it
 * counts, where it is in dmm_cost_t, and its weight in cost units.
 * dmm_cost_units() sums exactly these (bytes copied in whole units). */
typedef struct dmm_cost_weight {
    const char *key;
    const char *step;
    size_t      off;
    double      weight;
} dmm_cost_weight_t;

#define DMM_COST_NWEIGHTS 12
extern const dmm_cost_weight_t dmm_cost_weights[DMM_COST_NWEIGHTS];
/* a += b */
void dmm_cost_add(dmm_cost_t *a, const dmm_cost_t *b);

#endif
