/* stats.c - what a program asks of its allocator (see stats.h): the
 * paper's Table 2 and the detail behind it, computed from a trace.
 *
 * The Table 2 numbers are taken over the operation stream (opstream.h), so
 * that they describe exactly what `dmm sim` will replay: Objects = block
 * lifetimes (ids); Total memory = the sizes of all allocating ops (allocs
 * and the new sizes of reallocs); Max in use = the peak of live requested
 * bytes, a realloc changing its block's size; Average size = Total memory /
 * allocating ops; Memory ops = allocs + reallocs + frees.  Calls by kind are
 * counted over the records as recorded, failed calls included.
 *
 * Sizes and threads are counted in hash tables (tracer/base/hash.h), sites
 * in an array indexed by stack id, so a trace of n records costs O(n) plus
 * sorting the distinct values. */
#include "tracer/stats/stats.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/base/hash.h"
#include "tracer/format/opstream.h"

/* Count one more of key. */
static int count(dmm_u64map_t *m, uint64_t key)
{
    uint64_t *c = dmm_u64map_slot(m, key, NULL);
    if (!c)
        return -1;
    ++*c;
    return 0;
}

/* ---- computation ---- */

unsigned dmm_stats_bucket(uint64_t size)
{
    if (size == 0)
        return 0;
    if (size <= 16)
        return 1;
    unsigned lg = 64 - (unsigned)__builtin_clzll(size - 1);   /* ceil(log2 size) */
    return lg - 3;
}

void dmm_stats_bucket_range(unsigned b, uint64_t *lo, uint64_t *hi)
{
    if (b == 0) {
        *lo = *hi = 0;
    } else if (b == 1) {
        *lo = 1;
        *hi = 16;
    } else {
        *lo = (1ull << (b + 2)) + 1;
        *hi = b + 3 >= 64 ? UINT64_MAX : 1ull << (b + 3);
    }
}

static int cmp_size_by_count(const void *a, const void *b)
{
    const dmm_stats_size_t *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return x->size < y->size ? -1 : x->size > y->size;
}

static int cmp_site_by_bytes(const void *a, const void *b)
{
    const dmm_stats_site_t *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* Table 2 and the size tables, from the operation stream. */
static int walk_ops(const dmm_opstream_t *s, dmm_stats_t *st, dmm_u64map_t *sizes)
{
    uint64_t *bsize = calloc(s->nids ? s->nids : 1, sizeof *bsize);
    uint8_t *live = calloc(s->nids / 8 + 1, 1);
    if (!bsize || !live) {
        free(bsize);
        free(live);
        return -1;
    }
    uint64_t in_use = 0, nlive = 0;
    int rc = 0;
    for (size_t i = 0; i < s->nops && rc == 0; i++) {
        const dmm_op_t *op = &s->ops[i];
        if (op->id >= s->nids)
            continue;   /* the op stream never does this; be safe anyway */
        uint8_t bit = (uint8_t)(1u << (op->id & 7));
        uint8_t *lb = &live[op->id / 8];
        switch (op->kind) {
        case DMM_OP_ALLOC:
        case DMM_OP_REALLOC:
            if (op->kind == DMM_OP_ALLOC)
                st->ops_alloc++;
            else
                st->ops_realloc++;
            if (*lb & bit) {
                in_use -= bsize[op->id];
            } else {
                *lb |= bit;
                nlive++;
            }
            bsize[op->id] = op->size;
            in_use += op->size;
            st->total_bytes += op->size;
            if (st->alloc_calls == 0 || op->size < st->min_size)
                st->min_size = op->size;
            if (op->size > st->max_size)
                st->max_size = op->size;
            st->alloc_calls++;
            st->hist[dmm_stats_bucket(op->size)]++;
            rc = count(sizes, op->size);
            break;
        case DMM_OP_FREE:
            st->ops_free++;
            if (*lb & bit) {
                *lb &= (uint8_t)~bit;
                in_use -= bsize[op->id];
                nlive--;
            }
            break;
        default:
            break;
        }
        if (in_use > st->max_in_use)
            st->max_in_use = in_use;
    }
    st->live_blocks = nlive;
    st->live_bytes = in_use;
    free(bsize);
    free(live);
    return rc;
}

/* Calls by kind, threads, duration and allocation sites, from the records. */
static int walk_records(const dmm_trace_t *t, dmm_stats_t *st)
{
    dmm_u64map_t tids = DMM_U64MAP_INIT;
    dmm_stats_site_t *sites = NULL;
    int rc = 0;
    if (t->nstacks > 1 && t->stacks) {
        sites = calloc(t->nstacks, sizeof *sites);
        if (!sites)
            return -1;
    }
    uint64_t tmin = UINT64_MAX, tmax = 0;
    uint32_t last_tid = 0;
    int have_tid = 0;
    for (size_t i = 0; i < t->nrecs && rc == 0; i++) {
        const dmm_rec_t *r = &t->recs[i];
        if (r->op >= DMM_TRC_OP_MAX)
            continue;
        st->op_count[r->op]++;
        if (r->op == DMM_TRC_STACKDEF || r->op == DMM_TRC_MODULE)
            continue;   /* bookkeeping, not calls of the program */
        if (!have_tid || r->tid != last_tid) {   /* runs of one thread are common */
            rc = count(&tids, r->tid);
            last_tid = r->tid;
            have_tid = 1;
        }
        if (r->time < tmin)
            tmin = r->time;
        if (r->time > tmax)
            tmax = r->time;
        int allocating = (dmm_op_is_alloc(r->op) || r->op == DMM_TRC_REALLOC ||
                          r->op == DMM_TRC_REALLOCARRAY) &&
                         !(r->flags & DMM_TRC_RF_FAILED) && r->ptr_out != 0;
        if (sites && allocating && r->stack != 0 && r->stack < t->nstacks) {
            sites[r->stack].count++;
            sites[r->stack].bytes += r->size;
        }
    }
    st->threads = dmm_u64map_count(&tids);
    dmm_u64map_free(&tids);
    st->has_time = !(t->flags & DMM_TRC_F_NOTIME);
    st->duration_ns = tmin <= tmax ? tmax - tmin : 0;
    if (sites && rc == 0) {
        size_t n = 0;
        for (size_t k = 1; k < t->nstacks; k++)
            if (sites[k].count) {
                sites[n] = sites[k];
                sites[n].stack = (uint32_t)k;
                n++;
            }
        qsort(sites, n, sizeof *sites, cmp_site_by_bytes);
        st->sites = sites;
        st->nsites = n;
    } else {
        free(sites);
    }
    return rc;
}

int dmm_stats_compute(const dmm_trace_t *t, dmm_stats_t *st, dmm_err_t *err)
{
    memset(st, 0, sizeof *st);
    const char *name = t->path ? t->path : "trace";
    dmm_opstream_t s;
    if (dmm_opstream_build(t, &s, err) != 0)
        return -1;
    st->objects = s.nids;
    st->memory_ops = s.nops;
    st->free_null = s.free_null;
    st->unknown_free = s.unknown_free;
    st->failed = s.failed;
    st->reused_live = s.reused_live;
    st->records = t->nrecs;

    dmm_u64map_t sizes = DMM_U64MAP_INIT;   /* request size -> allocating ops */
    int rc = walk_ops(&s, st, &sizes);
    dmm_opstream_free(&s);
    if (rc == 0)
        rc = walk_records(t, st);
    size_t n = dmm_u64map_count(&sizes);
    if (rc == 0 && n && !(st->sizes = malloc(n * sizeof *st->sizes)))
        rc = -1;
    if (rc != 0) {
        dmm_u64map_free(&sizes);
        dmm_stats_free(st);
        return dmm_err_set(err, "%s: out of memory computing statistics", name);
    }
    st->avg_size = st->alloc_calls ? (double)st->total_bytes / (double)st->alloc_calls : 0.0;

    /* The distinct sizes, ordered by popularity. */
    size_t pos = 0, k = 0;
    uint64_t size, cnt;
    while (dmm_u64map_next(&sizes, &pos, &size, &cnt))
        st->sizes[k++] = (dmm_stats_size_t){ .size = size, .count = cnt };
    dmm_u64map_free(&sizes);
    if (n)
        qsort(st->sizes, n, sizeof *st->sizes, cmp_size_by_count);
    st->nsizes = n;
    st->distinct_sizes = n;
    return 0;
}

void dmm_stats_free(dmm_stats_t *st)
{
    if (!st)
        return;
    free(st->sizes);
    free(st->sites);
    memset(st, 0, sizeof *st);
}
