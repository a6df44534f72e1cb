/* opstream.c - reduce a trace to the operation stream (see opstream.h).
 *
 * Live blocks are found by address in a hash table (tracer/base/hash.h),
 * which holds each one's id and size (pack(), below).  A realloc that moved
 * its block is recorded as RELEASE (the old address, at the moment it
 * could first be reused) and then REALLOC (the new address); between the
 * two the block waits in a per-thread slot. */
#include "tracer/format/opstream.h"
#include "tracer/format/load.h"
#include "tracer/format/trc_read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Addresses 0 and UINT64_MAX are never held: a corrupt trace's free(0) or
 * free(0xff..ff) finds nothing, and later frees of such a block count as
 * unknown. */
static int holdable(uint64_t key)
{
    return key != 0 && key != UINT64_MAX;
}

/* A live block's id and size as one value of b->live and b->pending: the
 * id in the low 32 bits, the size in the high ones, or SIZE_IN_BIG there
 * and the size in b->big (by id).  pack: 0, or -1 out of memory. */
#define SIZE_IN_BIG 0xffffffffu

static int pack(dmm_opbuild_t *b, uint32_t id, uint64_t size, uint64_t *v)
{
    if (size >= SIZE_IN_BIG) {
        if (dmm_u64map_put(&b->big, id, size) != 0)
            return -1;
        size = SIZE_IN_BIG;
    }
    *v = (uint64_t)id | size << 32;
    return 0;
}

/* The size of the block of value v, which stays live. */
static uint64_t size_of(const dmm_opbuild_t *b, uint64_t v)
{
    if (v >> 32 != SIZE_IN_BIG)
        return v >> 32;
    const uint64_t *big = dmm_u64map_get(&b->big, (uint32_t)v);
    return big ? *big : 0;
}

/* The id of value v, whose block ends or changes size now: its size into
 * b->size_before. */
static uint32_t unpack(dmm_opbuild_t *b, uint64_t v)
{
    uint32_t id = (uint32_t)v;
    uint64_t size = v >> 32;
    if (size == SIZE_IN_BIG && !dmm_u64map_take(&b->big, id, &size))
        size = 0;
    b->size_before = size;
    return id;
}

/* The block live at address key taken out of b->live, its value into *v:
 * 1, or 0 when there is none. */
static int live_take(dmm_opbuild_t *b, uint64_t key, uint64_t *v)
{
    return holdable(key) && dmm_u64map_take(&b->live, key, v);
}

/* Block id of size at address key, into b->live: 0, or -1 out of memory. */
static int live_put(dmm_opbuild_t *b, uint64_t key, uint32_t id, uint64_t size)
{
    uint64_t v;
    if (!holdable(key))
        return 0;
    return pack(b, id, size, &v) != 0 ? -1 : dmm_u64map_put(&b->live, key, v);
}

/* The ordinal of thread tid's ops into b->thread, given in the order
 * threads make their first op: 0, or -1 (out of memory).  Threads past the
 * 256th share the last. */
static int set_thread(dmm_opbuild_t *b, uint32_t tid)
{
    if (b->thread_key == (uint64_t)tid + 1)
        return 0;   /* the usual case: the thread of the record before */
    int added;
    uint64_t *slot = dmm_u64map_slot(&b->threads, (uint64_t)tid + 1, &added);
    if (!slot)
        return -1;
    if (added) {
        dmm_opstream_t *s = b->s;
        *slot = s->nthreads < DMM_OP_THREADS ? s->nthreads++ : DMM_OP_THREADS - 1;
    }
    b->thread = (uint8_t)*slot;
    b->thread_key = (uint64_t)tid + 1;
    return 0;
}

static int emit(dmm_opbuild_t *b, unsigned kind, unsigned flags, unsigned align_log2,
                uint32_t id, uint64_t size)
{
    if (set_thread(b, b->tid) != 0)
        return -1;
    dmm_op_t op = { .kind = (uint8_t)kind, .flags = (uint8_t)flags,
                    .align_log2 = (uint8_t)align_log2, .thread = b->thread, .id = id,
                    .size = size };
    return b->emit(b->ctx, &op);
}

static unsigned align_log2_of(const dmm_rec_t *r)
{
    uint64_t a = 0;
    switch (r->op) {
    case DMM_TRC_MEMALIGN: case DMM_TRC_POSIX_MEMALIGN: case DMM_TRC_ALIGNED_ALLOC:
    case DMM_TRC_VALLOC: case DMM_TRC_PVALLOC:
        a = r->arg;
        break;
    default:
        return 0;
    }
    if (a <= 16)
        return 0;
    unsigned l = 0;
    while (l < 63 && (1ull << l) < a)
        l++;
    return l;
}

/* A new block of size at address p: give it the next id.  One probe of
 * b->live finds a block still there and makes the new one's slot. */
static int new_block(dmm_opbuild_t *b, uint64_t p, uint64_t size, unsigned flags,
                     unsigned align_log2, dmm_err_t *err, size_t idx)
{
    dmm_opstream_t *s = b->s;
    if (s->nids == UINT32_MAX)
        return dmm_err_set(err, "record %zu: more than 4294967295 blocks", idx);
    uint32_t id = s->nids;
    if (holdable(p)) {
        int added;
        uint64_t *slot = dmm_u64map_slot(&b->live, p, &added);
        if (!slot)
            return dmm_err_set(err, "record %zu: out of memory", idx);
        if (!added) {
            /* The address is still live: a free we never saw.  Close the
             * old block so that the stream stays consistent.  (emit does
             * not touch b->live: the slot stays where it is.) */
            s->reused_live++;
            if (emit(b, DMM_OP_FREE, 0, 0, unpack(b, *slot), 0) != 0)
                return -1;
        }
        if (pack(b, id, size, slot) != 0)
            return dmm_err_set(err, "record %zu: out of memory", idx);
    }
    s->nids++;
    if (emit(b, DMM_OP_ALLOC, flags, align_log2, id, size) != 0)
        return dmm_err_set(err, "record %zu: out of memory", idx);
    return 0;
}

void dmm_opbuild_init(dmm_opbuild_t *b, dmm_opstream_t *s,
                      int (*emit_op)(void *ctx, const dmm_op_t *op), void *ctx)
{
    memset(s, 0, sizeof *s);
    memset(b, 0, sizeof *b);
    b->s = s;
    b->emit = emit_op;
    b->ctx = ctx;
}

/* A realloc record: its block found (moved: in the thread's pending slot;
 * in place: under its old address) and carried to its new address. */
static int put_realloc(dmm_opbuild_t *b, const dmm_rec_t *r, size_t idx, dmm_err_t *err)
{
    dmm_opstream_t *s = b->s;
    uint64_t v;
    int have;
    if (r->ptr_in && dmm_u64map_take(&b->pending, (uint64_t)r->tid + 1, &v))
        have = 1;
    else if (r->ptr_in)
        have = live_take(b, r->ptr_in, &v);   /* in place: still under its old address */
    else
        have = 0;
    if (!have) {
        /* realloc(NULL, n), or of a block we never saw: a malloc */
        if (r->ptr_in)
            s->unknown_free++;
        return r->ptr_out ? new_block(b, r->ptr_out, r->size, 0, 0, err, idx) : 0;
    }
    uint32_t id = unpack(b, v);
    if (r->ptr_out == 0)   /* realloc(p, 0) freed p */
        return emit(b, DMM_OP_FREE, 0, 0, id, 0);
    uint64_t old;
    if (r->ptr_out != r->ptr_in && live_take(b, r->ptr_out, &old)) {
        uint64_t before = b->size_before;
        s->reused_live++;
        if (emit(b, DMM_OP_FREE, 0, 0, unpack(b, old), 0) != 0)
            return -1;
        b->size_before = before;
    }
    if (live_put(b, r->ptr_out, id, r->size) != 0 ||
        emit(b, DMM_OP_REALLOC, 0, 0, id, r->size) != 0)
        return -1;
    return 0;
}

/* Block id's resident bytes into the stream's list, and its size into
 * b->resident_size: 0, or -1 out of memory. */
static int put_resident(dmm_opbuild_t *b, uint32_t id, uint64_t bytes, uint64_t size)
{
    dmm_opstream_t *s = b->s;
    size_t n0 = s->nresident;
    if (n0 == 0 || (n0 >= 16 && (n0 & (n0 - 1)) == 0)) {   /* full: 16, 32, 64 ... */
        size_t cap = n0 ? 2 * n0 : 16;
        dmm_resident_t *n = realloc(s->resident, cap * sizeof *n);
        if (!n)
            return -1;
        s->resident = n;
        uint64_t *z = realloc(b->resident_size, cap * sizeof *z);
        if (!z)
            return -1;
        b->resident_size = z;
    }
    b->resident_size[s->nresident] = size;
    s->resident[s->nresident++] = (dmm_resident_t){ .id = id, .bytes = bytes };
    return 0;
}

int dmm_opbuild_put(dmm_opbuild_t *b, const dmm_rec_t *r, size_t idx, dmm_err_t *err)
{
    dmm_opstream_t *s = b->s;
    uint64_t v;
    if (r->flags & DMM_TRC_RF_FAILED) {
        s->failed++;
        return 0;   /* a failed realloc leaves its block as it was */
    }
    b->tid = r->tid;   /* the thread of the ops it makes (emit) */
    switch (r->op) {
    case DMM_TRC_MALLOC: case DMM_TRC_CALLOC: case DMM_TRC_MEMALIGN:
    case DMM_TRC_POSIX_MEMALIGN: case DMM_TRC_ALIGNED_ALLOC:
    case DMM_TRC_VALLOC: case DMM_TRC_PVALLOC:
        if (r->ptr_out == 0) {
            s->failed++;
            return 0;
        }
        return new_block(b, r->ptr_out, r->size, r->op == DMM_TRC_CALLOC ? DMM_OPF_ZERO : 0,
                         align_log2_of(r), err, idx);
    case DMM_TRC_FREE:
        if (r->ptr_in == 0) {
            s->free_null++;
        } else if (live_take(b, r->ptr_in, &v)) {
            uint32_t id = unpack(b, v);
            return ((r->flags & DMM_TRC_RF_RESIDENT) ?
                    put_resident(b, id, r->arg, b->size_before) : 0) ||
                   emit(b, DMM_OP_FREE, 0, 0, id, 0) ? -1 : 0;
        } else {
            s->unknown_free++;
        }
        return 0;
    case DMM_TRC_RELEASE:   /* the block, as it is, waits for its REALLOC */
        if (live_take(b, r->ptr_in, &v))
            return dmm_u64map_put(&b->pending, (uint64_t)r->tid + 1, v);
        return 0;
    case DMM_TRC_REALLOC: case DMM_TRC_REALLOCARRAY:
        return put_realloc(b, r, idx, err);
    case DMM_TRC_RESIDENT: {   /* a block still live at the end */
        const uint64_t *lv = holdable(r->ptr_in) ? dmm_u64map_get(&b->live, r->ptr_in) : NULL;
        return lv ? put_resident(b, (uint32_t)*lv, r->arg, size_of(b, *lv)) : 0;
    }
    default:
        return 0;   /* thread exit, fork, exec, modules: no allocator work */
    }
}

void dmm_opbuild_free(dmm_opbuild_t *b)
{
    dmm_u64map_free(&b->live);
    dmm_u64map_free(&b->pending);
    dmm_u64map_free(&b->big);
    dmm_u64map_free(&b->threads);
    free(b->resident_size);
    b->resident_size = NULL;
}
/* dmm_opstream_build's emit: the op appended to the stream's array. */
typedef struct to_array {
    dmm_opstream_t *s;
    size_t cap;
} to_array_t;

static int append_op(void *ctx, const dmm_op_t *op)
{
    to_array_t *a = ctx;
    dmm_opstream_t *s = a->s;
    if (s->nops == a->cap) {
        size_t ncap = a->cap ? a->cap * 2 : 4096;
        dmm_op_t *n = realloc(s->ops, ncap * sizeof *n);
        if (!n)
            return -1;
        s->ops = n;
        a->cap = ncap;
    }
    s->ops[s->nops++] = *op;
    return 0;
}

int dmm_opstream_build(const dmm_trace_t *t, dmm_opstream_t *s, dmm_err_t *err)
{
    if (err)
        err->msg[0] = 0;
    to_array_t a = { .s = s };
    dmm_opbuild_t b;
    dmm_opbuild_init(&b, s, append_op, &a);
    int rc = 0;
    for (size_t i = 0; i < t->nrecs && rc == 0; i++) {
        rc = dmm_opbuild_put(&b, &t->recs[i], i, err);
        if (rc != 0 && err && !err->msg[0])
            dmm_err_set(err, "%s: record %zu: out of memory building the operation stream",
                        t->path ? t->path : "trace", i);
    }
    dmm_opbuild_free(&b);
    if (rc != 0) {
        dmm_opstream_free(s);
        return -1;
    }
    return 0;
}

/* dmm_opstream_build_trc's record sink: each call into the builder. */
typedef struct from_scan {
    dmm_opbuild_t b;
    size_t        idx;
    const char   *name;
    dmm_err_t    *err;
} from_scan_t;

static int put_scanned(void *ctx, const dmm_rec_t *r)
{
    from_scan_t *f = ctx;
    if (r->op == DMM_TRC_CLOCKSYNC)
        return 0;   /* no allocator work, and outside the calls' order */
    if (dmm_opbuild_put(&f->b, r, f->idx, f->err) == 0) {
        f->idx++;
        return 0;
    }
    if (f->err && !f->err->msg[0])
        dmm_err_set(f->err, "%s: record %zu: out of memory building the operation stream",
                    f->name, f->idx);
    return -1;
}

int dmm_opstream_build_trc(const char *name, const uint8_t *buf, size_t len, dmm_opstream_t *s,
                           char *note, size_t notecap, dmm_err_t *err)
{
    if (err)
        err->msg[0] = 0;
    to_array_t a = { .s = s };
    from_scan_t f = { .name = name, .err = err };
    dmm_opbuild_init(&f.b, s, append_op, &a);
    dmm_trace_t t;
    memset(&t, 0, sizeof t);
    int rc = dmm_scan_trc(name, buf, len, &t, put_scanned, &f, err);
    dmm_opbuild_free(&f.b);
    if (rc == 1) {   /* calls out of order in a thread: the loader's order, whole */
        dmm_trace_free(&t);
        dmm_opstream_free(s);
        if (dmm_trace_parse(name, buf, len, DMM_FMT_TRC, &t, err) != 0)
            return -1;
        rc = dmm_opstream_build(&t, s, err);
    }
    if (rc == 0 && note && notecap)
        snprintf(note, notecap, "%s", t.truncated ? t.note : "");
    dmm_trace_free(&t);
    if (rc != 0) {
        dmm_opstream_free(s);
        return -1;
    }
    return 0;
}

void dmm_opstream_free(dmm_opstream_t *s)
{
    free(s->ops);
    free(s->resident);
    memset(s, 0, sizeof *s);
}
