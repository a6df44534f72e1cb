/* opstream.c - reduce a trace to the operation stream (see opstream.h).
 *
 * Live blocks are found by address in an open-addressing hash table.  A
 * realloc that moved its block is recorded as RELEASE (the old address, at
 * the moment it could first be reused) and then REALLOC (the new address);
 * between the two the block's id waits in a per-thread slot. */
#include "tracer/format/opstream.h"

#include <stdlib.h>
#include <string.h>

typedef struct slot {
    uint64_t key;       /* 0 = empty, DEAD = deleted */
    uint32_t id;
} slot_t;

#define DEAD UINT64_MAX

typedef struct map {
    slot_t *s;
    size_t  cap, used, live;  /* used counts live and dead slots */
} map_t;

static size_t hash64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k;
}

static int map_grow(map_t *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 1024;
    if (m->live * 4 < m->cap)   /* mostly tombstones: rehash at the same size */
        ncap = m->cap;
    slot_t *ns = calloc(ncap, sizeof *ns);
    if (!ns)
        return -1;
    for (size_t i = 0; i < m->cap; i++) {
        uint64_t k = m->s[i].key;
        if (k == 0 || k == DEAD)
            continue;
        size_t j = hash64(k) & (ncap - 1);
        while (ns[j].key)
            j = (j + 1) & (ncap - 1);
        ns[j] = m->s[i];
    }
    free(m->s);
    m->s = ns;
    m->cap = ncap;
    m->used = m->live;
    return 0;
}

/* Returns the slot holding key, or NULL.  0 and DEAD mark empty and
 * deleted slots, so they are never keys: a corrupt trace's free(0) or
 * free(0xff..ff) finds nothing. */
static slot_t *map_find(map_t *m, uint64_t key)
{
    if (!m->cap || key == 0 || key == DEAD)
        return NULL;
    for (size_t j = hash64(key) & (m->cap - 1);; j = (j + 1) & (m->cap - 1)) {
        if (m->s[j].key == key)
            return &m->s[j];
        if (m->s[j].key == 0)
            return NULL;
    }
}

static int map_put(map_t *m, uint64_t key, uint32_t id)
{
    if (key == 0 || key == DEAD)
        return 0;   /* cannot be held; later frees of it count as unknown */
    slot_t *s = map_find(m, key);
    if (s) {
        s->id = id;
        return 0;
    }
    if ((m->used + 1) * 4 >= m->cap * 3 && map_grow(m) != 0)
        return -1;
    size_t j = hash64(key) & (m->cap - 1);
    while (m->s[j].key != 0 && m->s[j].key != DEAD)
        j = (j + 1) & (m->cap - 1);
    if (m->s[j].key == 0)
        m->used++;
    m->s[j].key = key;
    m->s[j].id = id;
    m->live++;
    return 0;
}

static int map_take(map_t *m, uint64_t key, uint32_t *id)
{
    slot_t *s = map_find(m, key);
    if (!s)
        return 0;
    *id = s->id;
    s->key = DEAD;
    m->live--;
    return 1;
}

typedef struct builder {
    dmm_opstream_t *s;
    size_t cap;
    map_t live;       /* address -> id */
    map_t pending;    /* tid -> id of a block between RELEASE and REALLOC */
} builder_t;

static int emit(builder_t *b, unsigned kind, unsigned flags, unsigned align_log2,
                uint32_t id, uint64_t size)
{
    dmm_opstream_t *s = b->s;
    if (s->nops == b->cap) {
        size_t ncap = b->cap ? b->cap * 2 : 4096;
        dmm_op_t *n = realloc(s->ops, ncap * sizeof *n);
        if (!n)
            return -1;
        s->ops = n;
        b->cap = ncap;
    }
    s->ops[s->nops++] = (dmm_op_t){ .kind = (uint8_t)kind, .flags = (uint8_t)flags,
                                    .align_log2 = (uint8_t)align_log2, .id = id,
                                    .size = size };
    return 0;
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

/* A new block of size at address p: give it the next id. */
static int new_block(builder_t *b, uint64_t p, uint64_t size, unsigned flags,
                     unsigned align_log2, dmm_err_t *err, size_t idx)
{
    dmm_opstream_t *s = b->s;
    uint32_t old;
    if (s->nids == UINT32_MAX)
        return dmm_err_set(err, "record %zu: more than 4294967295 blocks", idx);
    if (map_take(&b->live, p, &old)) {
        /* The address is still live: a free we never saw.  Close the old
         * block so that the stream stays consistent. */
        s->reused_live++;
        if (emit(b, DMM_OP_FREE, 0, 0, old, 0) != 0)
            return -1;
    }
    uint32_t id = s->nids++;
    if (map_put(&b->live, p, id) != 0 || emit(b, DMM_OP_ALLOC, flags, align_log2, id, size) != 0)
        return dmm_err_set(err, "record %zu: out of memory", idx);
    return 0;
}

int dmm_opstream_build(const dmm_trace_t *t, dmm_opstream_t *s, dmm_err_t *err)
{
    memset(s, 0, sizeof *s);
    if (err)
        err->msg[0] = 0;
    builder_t b = { .s = s };
    int rc = 0;
    for (size_t i = 0; i < t->nrecs && rc == 0; i++) {
        const dmm_rec_t *r = &t->recs[i];
        uint32_t id;
        if (r->flags & DMM_TRC_RF_FAILED) {
            s->failed++;
            continue;   /* a failed realloc leaves its block as it was */
        }
        switch (r->op) {
        case DMM_TRC_MALLOC: case DMM_TRC_CALLOC: case DMM_TRC_MEMALIGN:
        case DMM_TRC_POSIX_MEMALIGN: case DMM_TRC_ALIGNED_ALLOC:
        case DMM_TRC_VALLOC: case DMM_TRC_PVALLOC:
            if (r->ptr_out == 0) {
                s->failed++;
                break;
            }
            rc = new_block(&b, r->ptr_out, r->size,
                           r->op == DMM_TRC_CALLOC ? DMM_OPF_ZERO : 0,
                           align_log2_of(r), err, i);
            break;
        case DMM_TRC_FREE:
            if (r->ptr_in == 0)
                s->free_null++;
            else if (map_take(&b.live, r->ptr_in, &id))
                rc = emit(&b, DMM_OP_FREE, 0, 0, id, 0);
            else
                s->unknown_free++;
            break;
        case DMM_TRC_RELEASE:
            if (map_take(&b.live, r->ptr_in, &id))
                rc = map_put(&b.pending, (uint64_t)r->tid + 1, id);
            break;
        case DMM_TRC_REALLOC: case DMM_TRC_REALLOCARRAY: {
            int have;
            slot_t *pend = map_find(&b.pending, (uint64_t)r->tid + 1);
            if (pend && r->ptr_in) {
                id = pend->id;
                map_take(&b.pending, (uint64_t)r->tid + 1, &id);
                have = 1;
            } else if (r->ptr_in) {
                /* in place: the block is still under its old address */
                have = map_take(&b.live, r->ptr_in, &id);
            } else {
                have = 0;
            }
            if (!have) {
                /* realloc(NULL, n), or of a block we never saw: a malloc */
                if (r->ptr_in)
                    s->unknown_free++;
                if (r->ptr_out)
                    rc = new_block(&b, r->ptr_out, r->size, 0, 0, err, i);
                break;
            }
            if (r->ptr_out == 0) {
                /* realloc(p, 0) freed p */
                rc = emit(&b, DMM_OP_FREE, 0, 0, id, 0);
                break;
            }
            uint32_t old;
            if (r->ptr_out != r->ptr_in && map_take(&b.live, r->ptr_out, &old)) {
                s->reused_live++;
                if (emit(&b, DMM_OP_FREE, 0, 0, old, 0) != 0)
                    rc = -1;
            }
            if (rc == 0 && (map_put(&b.live, r->ptr_out, id) != 0 ||
                            emit(&b, DMM_OP_REALLOC, 0, 0, id, r->size) != 0))
                rc = -1;
            break;
        }
        default:
            break;   /* thread exit, fork, exec, modules: no allocator work */
        }
        if (rc != 0 && err && !err->msg[0])
            dmm_err_set(err, "%s: record %zu: out of memory building the operation stream",
                        t->path ? t->path : "trace", i);
    }
    free(b.live.s);
    free(b.pending.s);
    if (rc != 0) {
        dmm_opstream_free(s);
        return -1;
    }
    return 0;
}

void dmm_opstream_free(dmm_opstream_t *s)
{
    free(s->ops);
    memset(s, 0, sizeof *s);
}
