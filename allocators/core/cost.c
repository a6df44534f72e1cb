/* cost.c - T from the cost counters.
 *
 * A cost unit is about one nanosecond of the machine the weights were
 * measured on (a 2-core AMD EPYC VM; README "Cost model" says how):
 *
 *   call 20, free-list node visited 1, header read 3, header write 3,
 *   split 10, coalesce 10, size-class lookup step 5, page-source call 50,
 *   page-source system call (mprotect, madvise) 1000, fresh page 2100
 *   (the page fault of its first touch), realloc copy 1 per 5 bytes, a call
 *   the block cache serves alone 10 (instead of a call's 20).
 *
 * The step weights are a least-squares fit of measured replay times on the
 * counters (bench/peers.py prints the fit); the page fault and the system
 * call were timed directly.  The paper's Figure 9 counted one unit per node
 * visited and nothing else; version 1 of these weights (op 1, node 1,
 * header 1, split 4, coalesce 4, page-source call 50, copy 1 per 64 bytes)
 * ranked real speed poorly (median Spearman 0.3 over 11 traces).
 *
 * Changing a weight changes every fitness: say so in the README. */
#include "allocators/core/cost.h"

#include <stddef.h>

enum {
    W_OP = 20, W_NODE = 1, W_HDR_READ = 3, W_HDR_WRITE = 3,
    W_SPLIT = 10, W_COALESCE = 10, W_LOOKUP = 5, W_PAGESRC = 50,
    W_SYSCALL = 1000, W_PAGE = 2100, W_COPY_BYTES = 5, W_CACHED = 10,
};

#define W(key, step, field, weight) { key, step, offsetof(dmm_cost_t, field), weight }
const dmm_cost_weight_t dmm_cost_weights[DMM_COST_NWEIGHTS] = {
    W("calls", "call", ops, W_OP),
    W("free_list_nodes_visited", "node visited", nodes, W_NODE),
    W("header_reads", "header read", hdr_reads, W_HDR_READ),
    W("header_writes", "header write", hdr_writes, W_HDR_WRITE),
    W("splits", "split", splits, W_SPLIT),
    W("coalesces", "coalesce", coalesces, W_COALESCE),
    W("size_class_lookup_steps", "size-class lookup step", lookups, W_LOOKUP),
    W("page_source_calls", "page-source call", pagesrc_calls, W_PAGESRC),
    W("page_source_system_calls", "page-source system call", syscalls, W_SYSCALL),
    W("fresh_pages", "fresh page", pages, W_PAGE),
    W("bytes_copied_by_realloc", "byte copied", copied, 1.0 / W_COPY_BYTES),
    W("calls_served_by_the_cache", "call served by the block cache", cached, W_CACHED),
};

uint64_t dmm_cost_units(const dmm_cost_t *c)
{
    return c->ops * W_OP + c->nodes * W_NODE + c->hdr_reads * W_HDR_READ +
           c->hdr_writes * W_HDR_WRITE + c->splits * W_SPLIT +
           c->coalesces * W_COALESCE + c->lookups * W_LOOKUP +
           c->pagesrc_calls * W_PAGESRC + c->syscalls * W_SYSCALL + c->pages * W_PAGE +
           c->copied / W_COPY_BYTES + c->cached * W_CACHED;
}

void dmm_cost_add(dmm_cost_t *a, const dmm_cost_t *b)
{
    a->ops += b->ops;
    a->nodes += b->nodes;
    a->hdr_reads += b->hdr_reads;
    a->hdr_writes += b->hdr_writes;
    a->splits += b->splits;
    a->coalesces += b->coalesces;
    a->pagesrc_calls += b->pagesrc_calls;
    a->copied += b->copied;
    a->lookups += b->lookups;
    a->pages += b->pages;
    a->syscalls += b->syscalls;
    a->cached += b->cached;
}
