/* stats.c - what a program asks of its allocator (see stats.h): the
 * paper's Table 2 and the detail behind it, computed from a trace.
 *
 * The Table 2 numbers are taken over the operation stream (opstream.h), so
 * that they describe exactly what `dmm sim` will replay: Objects = block
 * lifetimes (ids); Total memory = the sizes of all allocating ops (allocs
 * and the new sizes of reallocs); Max in use = the peak of live requested
 * bytes, a realloc changing its block's size; Average size = Total memory /
 * allocating ops; Memory ops = allocs + reallocs + frees.  Beside them, the
 * same peak with every block rounded up to 16 bytes (at least 16): what a
 * heap of 16-byte aligned blocks holds at least (bench/bounds.py's floor).
 * Calls by kind are counted over the records as recorded, failed calls
 * included.
 *
 * Sizes and threads are counted in hash tables (tracer/base/hash.h), sites
 * in an array indexed by stack id; a live block's size is the op-stream
 * builder's, which holds it beside the block's id (the bytes in use were a
 * table of their own, by id: half the time of a 4.8 M-call trace's count,
 * each new id a cache miss).  So a trace of n records costs O(n) plus
 * sorting the distinct values; nothing holds the records or the
 * operations, so a .trc can be counted as it is scanned. */
#include "tracer/stats/stats.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/base/hash.h"
#include "tracer/format/load.h"
#include "tracer/format/opstream.h"
#include "tracer/format/trc_read.h"

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

/* ---- a record at a time ----
 *
 * The same accumulator serves a trace held whole (dmm_stats_compute) and one
 * scanned (dmm_stats_scan_trc): each record feeds the operation stream's
 * builder, whose ops feed Table 2 and the sizes, and then the counts by
 * kind, threads, times and sites. */
typedef struct acc {
    dmm_stats_t      *st;
    const dmm_trace_t *t;     /* its stacks: t->nstacks covers every record's */
    dmm_opbuild_t     b;
    dmm_opstream_t    s;      /* the builder's counts */
    dmm_u64map_t      sizes;  /* request size -> allocating ops */
    uint64_t          live;   /* blocks live (their sizes: the builder's) */
    dmm_u64map_t      tids;
    uint64_t          in_use, in_use16;
    dmm_stats_site_t *sites;  /* by stack id */
    size_t            capsites;
    uint64_t          tmin, tmax;
    uint32_t          last_tid;
    int               have_tid;
    size_t            idx;
    size_t            res_seen;   /* the op stream's resident entries counted */
    /* scanning a TSC-timed trace: its clock syncs of least and greatest
     * tick count, to turn tmin and tmax into ns at the end */
    int               tsc;
    dmm_tsc_syncs_t   syncs;
} acc_t;

/* The bytes a block of n bytes takes at least when every block is 16-byte
 * aligned (malloc(0) included). */
static uint64_t granules16(uint64_t n)
{
    return n <= 16 ? 16 : (n + 15) & ~(uint64_t)15;
}

/* The resident entries the op stream has gained, each counted before the
 * next op (a FREE's before the op that frees it) with the size its block
 * had then, which the builder noted. */
static void acc_resident(acc_t *a)
{
    dmm_stats_t *st = a->st;
    for (; a->res_seen < a->s.nresident; a->res_seen++) {
        const dmm_resident_t *r = &a->s.resident[a->res_seen];
        uint64_t size = a->b.resident_size[a->res_seen];
        st->resident_blocks++;
        st->resident_size += size;
        st->resident_bytes += r->bytes < size ? r->bytes : size;
    }
}

/* Table 2 and the size tables: one op of the stream. */
static int acc_op(void *ctx, const dmm_op_t *op)
{
    acc_t *a = ctx;
    dmm_stats_t *st = a->st;
    if (a->res_seen < a->s.nresident)
        acc_resident(a);
    switch (op->kind) {
    case DMM_OP_ALLOC:
    case DMM_OP_REALLOC: {
        if (op->kind == DMM_OP_ALLOC) {
            st->ops_alloc++;
            a->live++;
        } else {
            st->ops_realloc++;
            a->in_use -= a->b.size_before;
            a->in_use16 -= granules16(a->b.size_before);
        }
        a->in_use += op->size;
        a->in_use16 += granules16(op->size);
        st->total_bytes += op->size;
        if (st->alloc_calls == 0 || op->size < st->min_size)
            st->min_size = op->size;
        if (op->size > st->max_size)
            st->max_size = op->size;
        st->alloc_calls++;
        st->hist[dmm_stats_bucket(op->size)]++;
        if (count(&a->sizes, op->size) != 0)
            return -1;
        break;
    }
    case DMM_OP_FREE:
        st->ops_free++;
        a->live--;
        a->in_use -= a->b.size_before;
        a->in_use16 -= granules16(a->b.size_before);
        break;
    default:
        break;
    }
    st->memory_ops++;
    if (a->in_use > st->max_in_use)
        st->max_in_use = a->in_use;
    if (a->in_use16 > st->max_in_use_16)
        st->max_in_use_16 = a->in_use16;
    return 0;
}

/* Calls by kind, threads, times and allocation sites: one record. */
static int acc_sites(acc_t *a, const dmm_rec_t *r)
{
    if (r->stack == 0 || r->stack >= a->t->nstacks)
        return 0;
    if (r->stack >= a->capsites) {
        size_t n = a->capsites ? a->capsites : 64;
        while (n <= r->stack)
            n *= 2;
        dmm_stats_site_t *v = realloc(a->sites, n * sizeof *v);
        if (!v)
            return -1;
        memset(v + a->capsites, 0, (n - a->capsites) * sizeof *v);
        a->sites = v;
        a->capsites = n;
    }
    a->sites[r->stack].count++;
    a->sites[r->stack].bytes += r->size;
    return 0;
}

static int acc_record(acc_t *a, const dmm_rec_t *r)
{
    dmm_stats_t *st = a->st;
    if (dmm_opbuild_put(&a->b, r, a->idx++, NULL) != 0)
        return -1;
    st->records++;
    if (r->op >= DMM_TRC_OP_MAX)
        return 0;
    st->op_count[r->op]++;
    if (r->op == DMM_TRC_STACKDEF || r->op == DMM_TRC_MODULE)
        return 0;   /* bookkeeping, not calls of the program */
    if (!a->have_tid || r->tid != a->last_tid) {   /* runs of one thread are common */
        if (count(&a->tids, r->tid) != 0)
            return -1;
        a->last_tid = r->tid;
        a->have_tid = 1;
    }
    if (r->time < a->tmin)
        a->tmin = r->time;
    if (r->time > a->tmax)
        a->tmax = r->time;
    int allocating = (dmm_op_is_alloc(r->op) || r->op == DMM_TRC_REALLOC ||
                      r->op == DMM_TRC_REALLOCARRAY) &&
                     !(r->flags & DMM_TRC_RF_FAILED) && r->ptr_out != 0;
    return allocating ? acc_sites(a, r) : 0;
}

static void acc_start(acc_t *a, dmm_stats_t *st, const dmm_trace_t *t)
{
    memset(st, 0, sizeof *st);
    memset(a, 0, sizeof *a);
    a->st = st;
    a->t = t;
    a->tmin = UINT64_MAX;
    dmm_opbuild_init(&a->b, &a->s, acc_op, a);
}

/* The distinct sizes, ordered by popularity, and the sites, by bytes. */
static int acc_lists(acc_t *a)
{
    dmm_stats_t *st = a->st;
    size_t n = dmm_u64map_count(&a->sizes);
    if (n && !(st->sizes = malloc(n * sizeof *st->sizes)))
        return -1;
    size_t pos = 0, k = 0;
    uint64_t size, cnt;
    while (dmm_u64map_next(&a->sizes, &pos, &size, &cnt))
        st->sizes[k++] = (dmm_stats_size_t){ .size = size, .count = cnt };
    if (n)
        qsort(st->sizes, n, sizeof *st->sizes, cmp_size_by_count);
    st->nsizes = n;
    st->distinct_sizes = n;
    size_t m = 0;
    for (size_t id = 1; id < a->capsites; id++)
        if (a->sites[id].count) {
            a->sites[m] = a->sites[id];
            a->sites[m].stack = (uint32_t)id;
            m++;
        }
    if (m) {
        qsort(a->sites, m, sizeof *a->sites, cmp_site_by_bytes);
        st->sites = a->sites;
        st->nsites = m;
        a->sites = NULL;
    }
    return 0;
}

/* The rest from what was accumulated; a's memory given back.  rc: how the
 * records went (0, or -1 out of memory). */
static int acc_finish(acc_t *a, int rc, int has_time, const char *name, dmm_err_t *err)
{
    dmm_stats_t *st = a->st;
    if (rc == 0)
        rc = acc_lists(a);
    acc_resident(a);   /* the blocks live at the end */
    st->objects = a->s.nids;
    st->free_null = a->s.free_null;
    st->unknown_free = a->s.unknown_free;
    st->failed = a->s.failed;
    st->reused_live = a->s.reused_live;
    st->live_blocks = a->live;
    st->live_bytes = a->in_use;
    st->threads = dmm_u64map_count(&a->tids);
    st->has_time = has_time;
    st->duration_ns = 0;
    if (a->tmin <= a->tmax) {
        uint64_t end = a->tmax;
        if (has_time && a->t && a->t->last_sync_ns > end)
            end = a->t->last_sync_ns;
        st->duration_ns = end - a->tmin;
    }
    st->avg_size = st->alloc_calls ? (double)st->total_bytes / (double)st->alloc_calls : 0.0;
    dmm_opbuild_free(&a->b);
    dmm_opstream_free(&a->s);   /* its resident entries */
    dmm_u64map_free(&a->sizes);
    dmm_u64map_free(&a->tids);
    free(a->sites);
    if (rc != 0) {
        dmm_stats_free(st);
        return dmm_err_set(err, "%s: out of memory computing statistics", name);
    }
    return 0;
}

int dmm_stats_compute(const dmm_trace_t *t, dmm_stats_t *st, dmm_err_t *err)
{
    acc_t a;
    acc_start(&a, st, t);
    int rc = 0;
    for (size_t i = 0; i < t->nrecs && rc == 0; i++)
        rc = acc_record(&a, &t->recs[i]);
    return acc_finish(&a, rc, !(t->flags & DMM_TRC_F_NOTIME), t->path ? t->path : "trace",
                      err);
}

/* dmm_stats_scan_trc's sink: the calls in order, the clock syncs apart
 * (the loader converts TSC ticks through them and drops them). */
static int scanned(void *ctx, const dmm_rec_t *r)
{
    acc_t *a = ctx;
    a->tsc = a->t->clock_id == DMM_TRC_CLOCK_TSC;   /* the header is read before any record */
    if (r->op == DMM_TRC_CLOCKSYNC && a->tsc) {
        dmm_tsc_syncs_add(&a->syncs, r);
        return 0;
    }
    return acc_record(a, r);
}

int dmm_stats_scan_trc(const char *name, const uint8_t *buf, size_t len, dmm_trace_t *t,
                       dmm_stats_t *st, dmm_err_t *err)
{
    acc_t a;
    acc_start(&a, st, t);
    int rc = dmm_scan_trc(name, buf, len, t, scanned, &a, err);
    if (rc != 0) {
        acc_finish(&a, 0, 0, name, err);   /* gives a's memory back; err stays the scan's */
        dmm_stats_free(st);
        dmm_trace_free(t);
        if (rc < 0)
            return -1;
        /* calls out of order in a thread: the loader's order, whole */
        if (dmm_trace_parse(name, buf, len, DMM_FMT_TRC, t, err) != 0)
            return -1;
        return dmm_stats_compute(t, st, err);
    }
    int has_time = !(t->flags & DMM_TRC_F_NOTIME);
    if (a.tsc) {   /* as the loader converts, so the same duration */
        double rate = dmm_tsc_syncs_rate(&a.syncs);
        if (rate && a.tmin <= a.tmax) {
            a.tmin = dmm_tsc_to_ns(rate, &a.syncs.lo, a.tmin);
            a.tmax = dmm_tsc_to_ns(rate, &a.syncs.lo, a.tmax);
        } else if (!rate) {
            a.tmin = a.tmax = 0;
            has_time = 0;
        }
    }
    return acc_finish(&a, 0, has_time, name, err);
}

void dmm_stats_free(dmm_stats_t *st)
{
    if (!st)
        return;
    free(st->sizes);
    free(st->sites);
    memset(st, 0, sizeof *st);
}
