/* segfit.c - the boundary-tag engine that the "segregated" and "exact"
 * classes share (segfit.h describes blocks, chunks and the top): malloc from
 * the request's list or a larger one, splitting, carving from the top or a
 * new chunk; free with coalescing; resize in place; check and destroy.  The
 * classes differ only in their lists (segregated.c: size classes; exact.c:
 * one list per size), reached through seg_t.req_list.
 *
 * malloc: the request's list, with the list's fit (first, best, exact) and
 * order; if that gives nothing and split=yes, the next non-empty larger list
 * (any block there is big enough: taken first-fit even when fit=exact; each
 * empty list looked at counts as one node); the block taken is split when
 * split=yes and the rest is at least the minimum block (the rest is listed;
 * counted as a split).  Else the block is carved from the top, else from a
 * new chunk.  With split=no a block taken from a list is used whole.
 *
 * free: coalesce=yes merges with a free neighbour on either side (boundary
 * tags; the neighbour leaves its list with dmm_flist_remove; one coalesce
 * counted per merge) and into the top; a chunk that becomes wholly free is
 * given back at once (except the chunk of the top).  coalesce=no lists the
 * block as it is; chunks are then kept until destroy.
 *
 * resize: in place if the block is big enough (split=yes also gives back a
 * tail of at least the minimum block); coalesce=yes also grows into a free
 * next block or the top when together they are big enough. */
#include "allocators/classes/segfit.h"

#include <errno.h>
#include <string.h>

#define F_INUSE 1u
#define F_PFREE 2u
#define F_FENCE 4u
#define SZ(h)   ((h) & ~(size_t)15)

#define CHUNK_HDR  40u
#define CHUNK_OVH  48u                 /* header + fencepost */
#define CHUNK_STD  ((size_t)64 << 10)
#define STD_FROM   ((size_t)256 << 10)  /* grow by=pages: chunks' bytes from which chunks are standard */
#define SLAB_LEN   DMM_PAGE

/* ---- counted header access ------------------------------------------ */

static inline size_t rd(seg_t *s, const char *p)
{
    DMM_COST(s->cost, hdr_reads, 1);
    return *(const size_t *)p;
}

/* Relaxed atomic: dmm_seg_usable() reads an allocated block's header
 * without the lock (usable_nolock) while the lock holder may change its
 * flag bits (a plain store on x86-64, as before). */
static inline void wr(seg_t *s, char *p, size_t v)
{
    DMM_COST(s->cost, hdr_writes, 1);
    __atomic_store_n((size_t *)p, v, __ATOMIC_RELAXED);
}

static inline size_t raw(const char *p) { return *(const size_t *)p; }

/* ---- state ------------------------------------------------------------ */

void *dmm_seg_sa_alloc(seg_t *s, size_t len)
{
    len = dmm_align_up(len, 16);
    if (len > s->sa_left)
        return NULL;
    void *p = s->sa_next;
    s->sa_next += len;
    s->sa_left -= len;
    return p;
}

/* len bytes of META pages, counted; NULL with errno = ENOMEM. */
static void *meta_get(seg_t *s, size_t len)
{
    void *p = dmm_pagesrc_get(s->ps, len, 0, DMM_OWNER_META);
    DMM_COST(s->cost, pagesrc_calls, 1);
    if (!p)
        errno = ENOMEM;
    return p;
}

dmm_flist_t *dmm_seg_new_list(seg_t *s)
{
    dmm_flist_t *l = dmm_seg_sa_alloc(s, sizeof *l);
    if (!l) {
        if (s->slab_left < sizeof *l) {
            char *pg = meta_get(s, SLAB_LEN);
            if (!pg)
                return NULL;
            *(void **)pg = s->slabs;
            s->slabs = pg;
            s->slab_next = pg + 16;
            s->slab_left = SLAB_LEN - 16;
        }
        l = (dmm_flist_t *)s->slab_next;
        s->slab_next += dmm_align_up(sizeof *l, 16);
        s->slab_left -= dmm_align_up(sizeof *l, 16);
    }
    dmm_flist_init(l, s->kind, s->fit, s->order, s->cost);
    return l;
}

int dmm_seg_setup(dmm_alloc_t *a)
{
    const dmm_alloc_desc_t *d = &a->desc;
    if (!dmm_alloc_desc_ok(a)) {
        errno = EINVAL;
        return -1;
    }
    memset(a->state_area, 0, sizeof a->state_area);
    seg_t *s = (seg_t *)a->state_area;
    s->a = a;
    s->ps = a->ps;
    s->cost = a->cost;
    s->split = d->split;
    s->coalesce = d->coalesce;
    s->by_pages = a->grow == DMM_GROW_PAGES;
    s->kind = d->list;
    s->fit = d->fit;
    s->order = d->order;
    s->minblk = dmm_flist_min_block(d->list) + 16;
    s->sa_next = (char *)a->state_area + dmm_align_up(sizeof *s, 16);
    s->sa_left = sizeof a->state_area - dmm_align_up(sizeof *s, 16);
    a->state = s;
    return 0;
}

void *dmm_seg_meta(seg_t *s, size_t len)
{
    len = dmm_align_up(len, DMM_PAGE);
    void *p = meta_get(s, len);
    if (!p)
        return NULL;
    s->ents_meta = p;
    s->ents_meta_len = len;
    return p;
}

size_t dmm_seg_need(const seg_t *s, size_t n)
{
    if (n > SIZE_MAX / 2)
        return 0;
    size_t need = dmm_align_up(n + 8, 16);
    return need < s->minblk ? s->minblk : need;
}

size_t dmm_seg_class_of(const seg_t *s, size_t S)
{
    if (s->map) {
        DMM_COST(s->cost, lookups, 1);
        return s->map(s, S);
    }
    size_t lo = 0, hi = s->n;     /* answer in [lo, hi) */
    if (s->exact) {
        /* last i with key <= S; ents[0].key == 0 */
        while (hi - lo > 1) {
            size_t mid = lo + (hi - lo) / 2;
            DMM_COST(s->cost, lookups, 1);
            if (s->ents[mid].key <= S)
                lo = mid;
            else
                hi = mid;
        }
        return lo;
    }
    /* first i with S <= key; the last key is SIZE_MAX */
    hi = s->n - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        DMM_COST(s->cost, lookups, 1);
        if (S <= s->ents[mid].key)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* ---- chunks and lists ----------------------------------------------- */

/* tlsf: list i holds blocks, or holds none (after a take or a removal). */
static inline void bit_set(seg_t *s, size_t i)
{
    if (s->bits)
        s->bits[i / 64] |= (uint64_t)1 << (i % 64);
}

static inline void bit_update(seg_t *s, size_t i)
{
    if (s->bits && !s->ents[i].l->count)
        s->bits[i / 64] &= ~((uint64_t)1 << (i % 64));
}

/* tlsf: the first list after i that holds blocks, or s->n; each bitmap
 * word read counts as a node. */
static size_t bit_next(seg_t *s, size_t i)
{
    size_t j = i + 1;
    while (j < s->n) {
        DMM_COST(s->cost, nodes, 1);
        uint64_t w = s->bits[j / 64] >> (j % 64);
        if (w)
            return j + (size_t)__builtin_ctzll(w);
        j = (j / 64 + 1) * 64;
    }
    return s->n;
}

static inline void list_put(seg_t *s, char *B, size_t S)
{
    size_t i = dmm_seg_class_of(s, S);
    dmm_flist_insert(s->ents[i].l, B + 8, S);
    bit_set(s, i);
}

static inline void list_del(seg_t *s, char *B, size_t S)
{
    size_t i = dmm_seg_class_of(s, S);
    dmm_flist_remove(s->ents[i].l, B + 8);
    bit_update(s, i);
}

static seg_chunk_t *chunk_new(seg_t *s, size_t len)
{
    seg_chunk_t *c = dmm_pagesrc_get(s->ps, len, 0, s->a->owner);
    DMM_COST(s->cost, pagesrc_calls, 1);
    if (!c)
        return NULL;
    c->len = len;
    s->held += len;
    c->prev = NULL;
    c->next = s->chunks;
    if (s->chunks)
        s->chunks->prev = c;
    s->chunks = c;
    wr(s, (char *)c + len - 8, len | F_INUSE | F_FENCE);
    return c;
}

static void chunk_release(seg_t *s, seg_chunk_t *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        s->chunks = c->next;
    if (c->next)
        c->next->prev = c->prev;
    DMM_COST(s->cost, pagesrc_calls, 1);
    s->held -= c->len;
    dmm_pagesrc_put(s->ps, c, c->len);
}

/* The length of a new top chunk for a block of need bytes (need <=
 * CHUNK_STD - CHUNK_OVH): standard, or under grow by=pages while the chunks
 * hold less than STD_FROM, whole pages, at least a quarter of what they
 * hold. */
static size_t top_chunk_len(const seg_t *s, size_t need)
{
    if (!s->by_pages || s->held >= STD_FROM)
        return CHUNK_STD;
    size_t len = dmm_align_up(need + CHUNK_OVH, DMM_PAGE), q = dmm_align_up(s->held / 4, DMM_PAGE);
    len = len > q ? len : q;
    return len < CHUNK_STD ? len : CHUNK_STD;
}

/* The chunk of free block B, S if the block covers all of it, else NULL.
 * fence_h: the header word at B + S (already read). */
static seg_chunk_t *whole_chunk(char *B, size_t S, size_t fence_h)
{
    if (!(fence_h & F_FENCE))
        return NULL;
    char *c = B + S + 8 - SZ(fence_h);
    return B == c + CHUNK_HDR ? (seg_chunk_t *)c : NULL;
}

/* Write a free block's header (and footer, and the next block's PFREE). */
static void mark_free(seg_t *s, char *B, size_t S, size_t pf)
{
    wr(s, B, S | pf);
    if (s->coalesce) {
        wr(s, B + S - 8, S);
        size_t hn = rd(s, B + S);
        if (!(hn & F_PFREE))
            wr(s, B + S, hn | F_PFREE);
    }
}

/* Use free block B of S bytes (already unlisted) for a block of need bytes;
 * split off the rest when dosplit and it is big enough. */
static void *use_free(seg_t *s, char *B, size_t S, size_t need, int dosplit)
{
    size_t pf = s->coalesce ? (rd(s, B) & F_PFREE) : 0;
    if (dosplit && S - need >= s->minblk) {
        wr(s, B, need | F_INUSE | pf);
        char *R = B + need;
        wr(s, R, S - need);
        if (s->coalesce)
            wr(s, R + (S - need) - 8, S - need);   /* next's PFREE is already set */
        list_put(s, R, S - need);
        DMM_COST(s->cost, splits, 1);
    } else {
        wr(s, B, S | F_INUSE | pf);
        if (s->coalesce) {
            size_t hn = rd(s, B + S);
            wr(s, B + S, hn & ~(size_t)F_PFREE);
        }
    }
    return B + 8;
}

/* Carve need bytes from the start of free block T (size TS, previous block
 * in use, listed nowhere); the rest, if big enough, is returned as a free
 * block through *rest (header and footer written), else used whole. */
static void *carve(seg_t *s, char *T, size_t TS, size_t need, size_t pf, char **rest,
                   size_t *rest_size)
{
    if (TS - need >= s->minblk) {
        wr(s, T, need | F_INUSE | pf);
        char *R = T + need;
        wr(s, R, TS - need);
        if (s->coalesce)
            wr(s, R + (TS - need) - 8, TS - need);
        *rest = R;
        *rest_size = TS - need;
    } else {
        wr(s, T, TS | F_INUSE | pf);
        if (s->coalesce) {
            size_t hn = rd(s, T + TS);
            wr(s, T + TS, hn & ~(size_t)F_PFREE);
        }
        *rest = NULL;
        *rest_size = 0;
    }
    return T + 8;
}

/* ---- the ops ------------------------------------------------------------ */

void *dmm_seg_malloc(dmm_alloc_t *a, size_t n)
{
    seg_t *s = a->state;
    size_t need = dmm_seg_need(s, n);
    if (!need) {
        errno = ENOMEM;
        return NULL;
    }
    long idx = s->req_list(s, need);
    if (idx < 0) {
        errno = ENOMEM;
        return NULL;
    }
    size_t got;
    void *b = dmm_flist_take(s->ents[idx].l, need, &got);
    bit_update(s, (size_t)idx);
    if (b)
        return use_free(s, (char *)b - 8, got, need, s->split);
    if (s->bits) {   /* tlsf: the next list with blocks, found in the bitmap */
        size_t j = bit_next(s, (size_t)idx);
        if (j < s->n && (b = dmm_flist_take(s->ents[j].l, need, &got)) != NULL) {
            bit_update(s, j);
            return use_free(s, (char *)b - 8, got, need, 1);
        }
    } else if (s->split) {
        for (size_t j = (size_t)idx + 1; j < s->n; j++) {
            dmm_flist_t *l = s->ents[j].l;
            if (!l->count) {
                DMM_COST(s->cost, nodes, 1);
                continue;
            }
            uint8_t f = l->fit;
            if (f == DMM_FIT_EXACT)
                l->fit = DMM_FIT_FIRST;
            b = dmm_flist_take(l, need, &got);
            l->fit = f;
            if (b)
                return use_free(s, (char *)b - 8, got, need, 1);
        }
    }
    char *rest;
    size_t rest_size;
    if (need > CHUNK_STD - CHUNK_OVH) {
        /* a chunk of its own; a big enough rest is listed */
        if (need > SIZE_MAX - CHUNK_OVH - DMM_PAGE) {
            errno = ENOMEM;
            return NULL;
        }
        size_t len = dmm_align_up(need + CHUNK_OVH, DMM_PAGE);
        seg_chunk_t *c = chunk_new(s, len);
        if (!c) {
            errno = ENOMEM;
            return NULL;
        }
        void *p = carve(s, (char *)c + CHUNK_HDR, len - CHUNK_OVH, need, 0, &rest, &rest_size);
        if (rest) {
            if (s->coalesce) {
                size_t hn = rd(s, rest + rest_size);
                wr(s, rest + rest_size, hn | F_PFREE);
            }
            list_put(s, rest, rest_size);
        }
        return p;
    }
    if (!s->top || s->top_size < need) {
        size_t len = top_chunk_len(s, need);
        seg_chunk_t *c = chunk_new(s, len);
        if (!c) {
            errno = ENOMEM;
            return NULL;
        }
        if (s->top) {
            /* retire the old top: give its chunk back if it is all free */
            size_t fh = rd(s, s->top + s->top_size);
            seg_chunk_t *w = s->coalesce ? whole_chunk(s->top, s->top_size, fh) : NULL;
            if (w)
                chunk_release(s, w);
            else
                list_put(s, s->top, s->top_size);
        }
        s->top = (char *)c + CHUNK_HDR;
        s->top_size = len - CHUNK_OVH;
        mark_free(s, s->top, s->top_size, 0);
    }
    void *p = carve(s, s->top, s->top_size, need, 0, &rest, &rest_size);
    s->top = rest;
    s->top_size = rest_size;
    return p;
}

void dmm_seg_free(dmm_alloc_t *a, void *p)
{
    seg_t *s = a->state;
    char *B = (char *)p - 8;
    size_t h = rd(s, B);
    size_t S = SZ(h);
    if (!s->coalesce) {
        wr(s, B, S);
        list_put(s, B, S);
        return;
    }
    int to_top = 0;
    char *N = B + S;
    size_t hn = rd(s, N);
    if (!(hn & F_INUSE)) {
        size_t NS = SZ(hn);
        if (N == s->top)
            to_top = 1;
        else
            list_del(s, N, NS);
        S += NS;
        DMM_COST(s->cost, coalesces, 1);
        hn = rd(s, B + S);               /* the block after both */
    }
    if (h & F_PFREE) {
        size_t PS = rd(s, B - 8);
        B -= PS;
        list_del(s, B, PS);
        S += PS;
        DMM_COST(s->cost, coalesces, 1);
    }
    wr(s, B, S);
    wr(s, B + S - 8, S);
    if (!(hn & F_PFREE))
        wr(s, B + S, hn | F_PFREE);
    if (to_top) {
        s->top = B;
        s->top_size = S;
        return;
    }
    seg_chunk_t *w = whole_chunk(B, S, hn);
    if (w) {
        chunk_release(s, w);
        return;
    }
    list_put(s, B, S);
}

size_t dmm_seg_usable(dmm_alloc_t *a, const void *p)
{
    seg_t *s = a->state;
    DMM_COST(s->cost, hdr_reads, 1);
    return SZ(__atomic_load_n((const size_t *)((const char *)p - 8), __ATOMIC_RELAXED)) - 8;
}

int dmm_seg_resize(dmm_alloc_t *a, void *p, size_t n)
{
    seg_t *s = a->state;
    size_t need = dmm_seg_need(s, n);
    if (!need)
        return -1;
    char *B = (char *)p - 8;
    size_t h = rd(s, B);
    size_t S = SZ(h), pf = h & F_PFREE;
    if (need <= S) {
        if (s->split && S - need >= s->minblk) {
            /* give back the tail: make it a used block, then free it */
            wr(s, B, need | F_INUSE | pf);
            wr(s, B + need, (S - need) | F_INUSE);
            DMM_COST(s->cost, splits, 1);
            dmm_seg_free(a, B + need + 8);
        }
        return 0;
    }
    if (!s->coalesce)
        return -1;
    char *N = B + S;
    size_t hn = rd(s, N);
    if ((hn & F_INUSE) || S + SZ(hn) < need)
        return -1;
    size_t NS = SZ(hn), M = S + NS;
    DMM_COST(s->cost, coalesces, 1);
    if (N == s->top) {
        /* carve need from [B, B+M) as from a top at B */
        char *rest;
        size_t rest_size;
        carve(s, B, M, need, pf, &rest, &rest_size);
        s->top = rest;
        s->top_size = rest_size;
        return 0;
    }
    list_del(s, N, NS);
    if (s->split && M - need >= s->minblk) {
        wr(s, B, need | F_INUSE | pf);
        char *R = B + need;
        wr(s, R, M - need);
        wr(s, R + (M - need) - 8, M - need);   /* the next block's PFREE stays set */
        list_put(s, R, M - need);
        DMM_COST(s->cost, splits, 1);
    } else {
        wr(s, B, M | F_INUSE | pf);
        size_t h2 = rd(s, B + M);
        wr(s, B + M, h2 & ~(size_t)F_PFREE);
    }
    return 0;
}

/* ---- check ------------------------------------------------------------- */

typedef struct {
    const seg_t *s;
    size_t idx, count, bytes, viol;
} walk_ctx_t;

static void walk_fn(void *block, size_t size, void *arg)
{
    walk_ctx_t *w = arg;
    const seg_t *s = w->s;
    const char *B = (const char *)block - 8;
    w->count++;
    w->bytes += size;
    if (((uintptr_t)block & 15) || dmm_pagesrc_owner(s->ps, B) != s->a->owner) {
        w->viol++;
        return;
    }
    size_t h = raw(B);
    if ((h & (F_INUSE | F_FENCE)) || SZ(h) != size || B == s->top ||
        dmm_seg_class_of(s, size) != w->idx)
        w->viol++;
}

size_t dmm_seg_check(dmm_alloc_t *a)
{
    const seg_t *s = a->state;
    size_t v = 0, nfree = 0, free_bytes = 0, top_seen = 0;
    int tags = s->coalesce;
    for (const seg_chunk_t *c = s->chunks; c; c = c->next) {
        const char *base = (const char *)c;
        if (c->prev && c->prev->next != c)
            v++;
        if (dmm_pagesrc_owner(s->ps, c) != a->owner || (c->len % DMM_PAGE)) {
            v++;
            continue;
        }
        const char *fence = base + c->len - 8;
        size_t fh = raw(fence);
        if (!(fh & F_FENCE) || !(fh & F_INUSE) || SZ(fh) != c->len)
            v++;
        const char *B = base + CHUNK_HDR;
        int prev_free = 0;
        size_t nblocks = 0;
        while (B < fence) {
            nblocks++;
            size_t h = raw(B), S = SZ(h);
            if (S < s->minblk || B + S > fence || (h & F_FENCE)) {
                v++;
                break;
            }
            int f = !(h & F_INUSE);
            if (tags ? (!!(h & F_PFREE) != prev_free) : (h & F_PFREE) != 0)
                v++;
            if (f) {
                if (tags && raw(B + S - 8) != S)
                    v++;
                if (tags && prev_free)
                    v++;                    /* two free neighbours not merged */
                if (B == s->top) {
                    top_seen++;
                    if (S != s->top_size || B + S != fence)
                        v++;
                } else {
                    nfree++;
                    free_bytes += S;
                }
            }
            prev_free = f;
            B += S;
        }
        if (B != fence)
            v++;
        if (tags && !!(fh & F_PFREE) != prev_free)
            v++;
        if (tags && nblocks == 1 && prev_free && base + CHUNK_HDR != s->top)
            v++;                            /* a wholly free chunk kept */
    }
    if (s->top ? top_seen != 1 : (s->top_size != 0 || top_seen))
        v++;
    size_t listed = 0, listed_bytes = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (i && (s->exact ? s->ents[i].key <= s->ents[i - 1].key
                           : s->ents[i].key < s->ents[i - 1].key))
            v++;
        walk_ctx_t w = { s, i, 0, 0, 0 };
        v += dmm_flist_check(s->ents[i].l);
        dmm_flist_walk(s->ents[i].l, walk_fn, &w);
        v += w.viol;
        if (w.count != s->ents[i].l->count)
            v++;
        if (s->bits && !!(s->bits[i / 64] >> (i % 64) & 1) != !!w.count)
            v++;                            /* the bitmap says otherwise */
        listed += w.count;
        listed_bytes += w.bytes;
    }
    if (listed != nfree || listed_bytes != free_bytes)
        v++;
    return v;
}

void dmm_seg_destroy(dmm_alloc_t *a)
{
    seg_t *s = a->state;
    if (!s)
        return;
    while (s->chunks)
        chunk_release(s, s->chunks);
    s->top = NULL;
    s->top_size = 0;
    while (s->slabs) {
        void *pg = s->slabs;
        s->slabs = *(void **)pg;
        DMM_COST(s->cost, pagesrc_calls, 1);
        dmm_pagesrc_put(s->ps, pg, SLAB_LEN);
    }
    if (s->ents_meta) {
        DMM_COST(s->cost, pagesrc_calls, 1);
        dmm_pagesrc_put(s->ps, s->ents_meta, s->ents_meta_len);
        s->ents_meta = NULL;
    }
    s->n = 0;
    a->state = NULL;
}
