/* cost.c - T from the cost counters.  The weights follow the paper's
 * Figure 9 (a node visited is one unit) and price the other steps by the
 * memory accesses and work they stand for:
 *
 *   op 1, node 1, header read 1, header write 1, split 4, coalesce 4,
 *   page-source call 50, realloc copy 1 per 64 bytes.
 *
 * Changing a weight changes every fitness: say so in the README. */
#include "cost.h"

enum {
    W_OP = 1, W_NODE = 1, W_HDR_READ = 1, W_HDR_WRITE = 1,
    W_SPLIT = 4, W_COALESCE = 4, W_PAGESRC = 50, W_COPY_BYTES = 64,
};

uint64_t dmm_cost_units(const dmm_cost_t *c)
{
    return c->ops * W_OP + c->nodes * W_NODE + c->hdr_reads * W_HDR_READ +
           c->hdr_writes * W_HDR_WRITE + c->splits * W_SPLIT +
           c->coalesces * W_COALESCE + c->pagesrc_calls * W_PAGESRC +
           c->copied / W_COPY_BYTES;
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
}
