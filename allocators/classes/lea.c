/* lea.c - "lea": a Lea-style (dlmalloc-like) allocator, written anew after
 * the public description of dlmalloc's design (boundary tags, bins, top
 * chunk, mmap threshold) and the paper's section 3.1.
 *
 * Blocks.  Every block is a multiple of 16 bytes and starts 16-aligned:
 *
 *     b+0   prev_foot   size of the previous block, valid only while that
 *                       block is free (otherwise it is the tail of the
 *                       previous block's payload)
 *     b+8   head        size | CINUSE (this block in use) | PINUSE (the
 *                       previous block in use)
 *     b+16  payload     (in-use) or fd, bk bin links (free)
 *
 * An in-use block of size S offers S - 8 usable bytes: its payload runs
 * into the next block's prev_foot.  A free block's size is repeated in the
 * next block's prev_foot (its footer).  Minimum block: 32 bytes.
 *
 * Segments.  Blocks live in segments taken from the page source in 64 KiB
 * granules (dlmalloc's default granularity): a 32-byte segment header
 * (len, next, prev), the blocks, and a 32-byte fence at the end (a block
 * header with CINUSE|FENCE and size 0, then a pointer back to the segment).
 * The free block at the end of the newest segment is the top (wilderness):
 * it is in no bin and is split only when no bin can serve a request.  When
 * the top is too small, a new chunk is taken; if the page source places it
 * right after the newest segment the segment grows (like sbrk), otherwise
 * it becomes a new segment and the old top goes into the bins.  Under the
 * chain's `grow by=pages` (dmm_desc_t.grow) a chunk is, while the segments
 * hold less than 256 KiB, whole pages instead, at least a quarter of what
 * they hold: a small heap is not held in 64 KiB pieces.
 *
 * Bins (paper: exact small lists, approximate best fit for the rest).
 *   - 32 exact small bins, one per 16-byte block size below 512 bytes
 *     (dlmalloc uses 8-byte steps below 256; we are 16-aligned, so 16-byte
 *     steps up to 512);
 *   - 60 large bins, 4 per power of two from 512 B to 16 MiB, plus one bin
 *     for everything larger; each holds its blocks sorted by size;
 *   - a 128-bit map of non-empty bins.
 *   Bins are circular doubly linked lists with one head pointer each.
 *   malloc: the exact small bin, else best fit in the request's large bin
 *   (walk the sorted list to the first block that fits), else the smallest
 *   block of the next non-empty bin (bitmap), else the top, else a new
 *   chunk.  A block is split when the remainder is >= 32 bytes.
 *
 * free: immediate coalescing with both neighbours through the boundary
 * tags; the result goes back into a bin, or becomes the top.
 *
 * Large objects: n >= 128 KiB gets a chunk of its own (32-byte header:
 * next, prev, len, head with LARGE), given back to the page source on free.
 *
 * Trim: when the top exceeds 256 KiB, its tail pages are given back so that
 * 64 KiB of top remain; a segment other than the newest that becomes
 * entirely free is given back whole.  Under the chain's release policy
 * (dmm_release_t) the threshold is its keep= instead (at least 64 KiB; a
 * delay is not kept): keep=0 or delay=0 trims whatever exceeds 64 KiB,
 * keep=inf never trims and keeps wholly free segments, their block in a
 * bin.
 *
 * Options: `order` is honoured (FIFO or LIFO among blocks of equal size in
 * a bin), and the chain's growth rule (`grow by=pages`, above); split,
 * coalesce, list and fit are ignored: Lea is a fixed design (always splits,
 * always coalesces, doubly linked bins, best fit).
 *
 * Cost: every head/footer read and write (hdr_reads, hdr_writes), every bin
 * node visited (nodes), every split, coalesce and page-source call. */
#include "allocators/core/alloc.h"
#include "allocators/classes/registry.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#define PINUSE  ((size_t)1)
#define CINUSE  ((size_t)2)
#define LARGEF  ((size_t)4)
#define FENCEF  ((size_t)8)
#define FLAGS   ((size_t)15)

#define MINBLK        ((size_t)32)
#define SMALL_LIMIT   ((size_t)512)
#define NSMALL        32
#define NLARGE_POW    15                    /* 2^9 .. 2^23 */
#define NBINS         (NSMALL + 4 * NLARGE_POW + 1)
#define SEGHDR        ((size_t)32)
#define FENCE         ((size_t)32)
#define SEG_OVH       (SEGHDR + FENCE)
#define GRAN          ((size_t)64 << 10)
#define GRAN_FROM     ((size_t)256 << 10)   /* segments' bytes from which growth is in GRAN */
#define LARGE_MIN     ((size_t)128 << 10)
#define TRIM_THRESHOLD ((size_t)256 << 10)
#define TOP_KEEP      ((size_t)64 << 10)
#define LHDR          ((size_t)32)

typedef struct blk {
    size_t      prev_foot;
    size_t      head;
    struct blk *fd, *bk;
} blk_t;

typedef struct seg {
    size_t      len;
    struct seg *next, *prev;
    size_t      pad;
} seg_t;

typedef struct lchunk {
    struct lchunk *next, *prev;
    size_t         len;
    size_t         head;      /* at payload - 8, like a block's head */
} lchunk_t;

typedef struct lea {
    blk_t      *bins[NBINS];
    uint64_t    map[2];
    seg_t      *segs;         /* newest first */
    blk_t      *top;          /* free block at the end of segs, or NULL */
    lchunk_t   *larges;
    size_t      nfree, freebytes;   /* blocks in bins */
    size_t      nsegs, nlarge;
    size_t      held;         /* bytes of the segments */
    uint8_t     by_pages;     /* grow by=pages (dmm_desc_t.grow) */
    dmm_cost_t *c;
    dmm_cost_t  dummy;
    uint8_t     order;
    size_t      trim_at;      /* top size above which it is trimmed; SIZE_MAX: never */
} lea_t;

_Static_assert(sizeof(lea_t) <= DMM_STATE_AREA, "lea state must fit the state area");
_Static_assert(sizeof(lchunk_t) == LHDR, "large header");
_Static_assert(sizeof(seg_t) == SEGHDR, "segment header");

/* ---- header access, counted ---- */

#define CNT(st, f, n) DMM_COST((st)->c, f, n)

static inline size_t rd_head(lea_t *st, const blk_t *b)
{
    CNT(st, hdr_reads, 1);
    return b->head;
}

/* Relaxed atomic: dmm_lea_usable() reads a block's head without the lock
 * (usable_nolock) while the lock holder may set its PINUSE bit (a plain
 * store on x86-64, as before). */
static inline void wr_head(lea_t *st, blk_t *b, size_t v)
{
    CNT(st, hdr_writes, 1);
    __atomic_store_n(&b->head, v, __ATOMIC_RELAXED);
}

static inline size_t rd_foot(lea_t *st, const blk_t *b)   /* prev_foot of b */
{
    CNT(st, hdr_reads, 1);
    return b->prev_foot;
}

static inline blk_t *at(const void *b, size_t off)
{
    return (blk_t *)((char *)b + off);
}

/* A free block: head and footer. */
static inline void set_free(lea_t *st, blk_t *b, size_t size, size_t pinuse)
{
    wr_head(st, b, size | pinuse);
    CNT(st, hdr_writes, 1);
    at(b, size)->prev_foot = size;
}

static inline size_t bsize(size_t head) { return head & ~FLAGS; }

static inline seg_t *fence_seg(const blk_t *fence) { return *(seg_t *const *)((const char *)fence + 16); }

static void write_fence(lea_t *st, seg_t *s, size_t pinuse)
{
    blk_t *f = at(s, s->len - FENCE);
    wr_head(st, f, CINUSE | FENCEF | pinuse);
    *(seg_t **)((char *)f + 16) = s;
}

/* ---- bins ---- */

static unsigned bin_index(size_t size)
{
    if (size < SMALL_LIMIT)
        return (unsigned)(size >> 4);
    unsigned k = 63u - (unsigned)__builtin_clzll((unsigned long long)size);
    if (k >= 9 + NLARGE_POW)
        return NBINS - 1;
    return NSMALL + (k - 9) * 4 + (unsigned)((size >> (k - 2)) & 3);
}

static inline void mark(lea_t *st, unsigned i) { st->map[i >> 6] |= (uint64_t)1 << (i & 63); }
static inline void unmark(lea_t *st, unsigned i) { st->map[i >> 6] &= ~((uint64_t)1 << (i & 63)); }

/* First non-empty bin with index >= i, or NBINS. */
static unsigned next_bin(const lea_t *st, unsigned i)
{
    while (i < NBINS) {
        uint64_t w = st->map[i >> 6] & (~(uint64_t)0 << (i & 63));
        if (w)
            return (i & ~63u) + (unsigned)__builtin_ctzll(w);
        i = (i & ~63u) + 64;
    }
    return NBINS;
}

/* Link n before `pos` in the circular list of bin i (pos NULL: at the tail). */
static void link_before(lea_t *st, unsigned i, blk_t *n, blk_t *pos)
{
    blk_t *h = st->bins[i];
    if (!h) {
        n->fd = n->bk = n;
        st->bins[i] = n;
        mark(st, i);
        return;
    }
    blk_t *p = pos ? pos : h;
    n->fd = p;
    n->bk = p->bk;
    p->bk->fd = n;
    p->bk = n;
    if (pos == h)
        st->bins[i] = n;
}

static void bin_insert(lea_t *st, blk_t *b, size_t size)
{
    unsigned i = bin_index(size);
    st->nfree++;
    st->freebytes += size;
    blk_t *h = st->bins[i];
    if (i < NSMALL || !h) {
        /* exact bin: FIFO appends at the tail, LIFO pushes at the head */
        link_before(st, i, b, st->order == DMM_ORDER_LIFO ? h : NULL);
        return;
    }
    /* sorted bin: ascending sizes; FIFO after equal sizes (walking back
     * from the largest), LIFO before them (walking from the smallest) */
    if (st->order == DMM_ORDER_LIFO) {
        blk_t *p = h;
        do {
            CNT(st, nodes, 1);
            if (bsize(rd_head(st, p)) >= size) {
                link_before(st, i, b, p);
                return;
            }
            p = p->fd;
        } while (p != h);
        link_before(st, i, b, NULL);
        return;
    }
    blk_t *p = h->bk;
    for (;;) {
        CNT(st, nodes, 1);
        if (bsize(rd_head(st, p)) <= size) {
            link_before(st, i, b, p == h->bk ? NULL : p->fd);
            return;
        }
        if (p == h) {
            link_before(st, i, b, h);
            return;
        }
        p = p->bk;
    }
}

static void bin_unlink(lea_t *st, blk_t *b, size_t size)
{
    unsigned i = bin_index(size);
    st->nfree--;
    st->freebytes -= size;
    if (b->fd == b) {
        st->bins[i] = NULL;
        unmark(st, i);
        return;
    }
    b->bk->fd = b->fd;
    b->fd->bk = b->bk;
    if (st->bins[i] == b)
        st->bins[i] = b->fd;
}

/* An unlisted free block of at least `want` bytes from the bins, or NULL. */
static blk_t *bin_take(lea_t *st, size_t want, size_t *got)
{
    unsigned i = bin_index(want);
    if (i >= NSMALL && st->bins[i]) {
        /* best fit within the request's own sorted bin, unless even its
         * largest (last) block is too small */
        blk_t *h = st->bins[i], *p = h;
        CNT(st, nodes, 1);
        if (bsize(rd_head(st, h->bk)) >= want) {
            for (;;) {
                CNT(st, nodes, 1);
                size_t ps = bsize(rd_head(st, p));
                if (ps >= want) {
                    bin_unlink(st, p, ps);
                    *got = ps;
                    return p;
                }
                p = p->fd;
            }
        }
        i++;
    }
    /* exact small bin, or the smallest block of the next non-empty bin */
    unsigned j = next_bin(st, i);
    if (j == NBINS)
        return NULL;
    blk_t *b = st->bins[j];
    CNT(st, nodes, 1);
    size_t bs = bsize(rd_head(st, b));
    bin_unlink(st, b, bs);
    *got = bs;
    return b;
}

/* ---- segments ---- */

static void *ps_get(dmm_alloc_t *a, lea_t *st, size_t len)
{
    CNT(st, pagesrc_calls, 1);
    return dmm_pagesrc_get(a->ps, len, 0, a->owner);
}

static void ps_put(dmm_alloc_t *a, lea_t *st, void *p, size_t len)
{
    CNT(st, pagesrc_calls, 1);
    dmm_pagesrc_put(a->ps, p, len);
}

static void seg_unlink(lea_t *st, seg_t *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        st->segs = s->next;
    if (s->next)
        s->next->prev = s->prev;
    st->nsegs--;
}

/* Top too big: give its tail pages back, keeping TOP_KEEP bytes. */
static void maybe_trim(dmm_alloc_t *a, lea_t *st)
{
    blk_t *t = st->top;
    if (!t)
        return;
    size_t h = rd_head(st, t), ts = bsize(h);
    if (ts <= st->trim_at)
        return;
    seg_t *s = st->segs;
    size_t cut = (ts - TOP_KEEP) & ~(size_t)(DMM_PAGE - 1);
    if (!cut)
        return;
    s->len -= cut;
    st->held -= cut;
    set_free(st, t, ts - cut, h & PINUSE);
    write_fence(st, s, 0);
    ps_put(a, st, (char *)s + s->len, cut);
}

/* A free, coalesced, unlisted block: into the top, back to the page
 * source with its whole segment, or into a bin. */
static void place_free(dmm_alloc_t *a, lea_t *st, blk_t *b, size_t size)
{
    blk_t *nx = at(b, size);
    if (rd_head(st, nx) & FENCEF) {
        seg_t *s = fence_seg(nx);
        if (s == st->segs) {
            st->top = b;
            maybe_trim(a, st);
            return;
        }
        if ((char *)b == (char *)s + SEGHDR && st->trim_at != SIZE_MAX) {
            seg_unlink(st, s);
            st->held -= s->len;
            ps_put(a, st, s, s->len);
            return;
        }
    }
    bin_insert(st, b, size);
}

/* The chunk to take from the page source for `need` more bytes: 64 KiB
 * granules; under `grow by=pages`, while the segments hold less than
 * GRAN_FROM, whole pages, at least a quarter of what they hold. */
static size_t grow_len(const lea_t *st, size_t need)
{
    if (!st->by_pages || st->held >= GRAN_FROM)
        return dmm_align_up(need, GRAN);
    size_t q = st->held / 4;
    return dmm_align_up(need > q ? need : q, DMM_PAGE);
}

/* The newest segment grown in place by len bytes (its fence moved), into
 * the top. */
static void grow_in_place(lea_t *st, seg_t *cur, size_t len)
{
    blk_t *of = at(cur, cur->len - FENCE);
    cur->len += len;
    st->held += len;
    blk_t *t;
    size_t ts, pin;
    if (st->top) {
        t = st->top;
        size_t h = rd_head(st, t);
        ts = bsize(h) + len;
        pin = h & PINUSE;
        CNT(st, coalesces, 1);
    } else {
        t = of;
        ts = len;
        pin = rd_head(st, of) & PINUSE;
    }
    set_free(st, t, ts, pin);
    write_fence(st, cur, 0);
    st->top = t;
}

/* Make the top hold at least `want` bytes. */
static int grow(dmm_alloc_t *a, lea_t *st, size_t want)
{
    if (want > SIZE_MAX - SEG_OVH - GRAN) {
        errno = ENOMEM;
        return -1;
    }
    seg_t *cur = st->segs;
    size_t len = grow_len(st, want + SEG_OVH);
    char *m = ps_get(a, st, len);
    if (!m) {
        errno = ENOMEM;
        return -1;
    }
    /* grow in place, unless the chunk may begin another arena */
    if (cur && m == (char *)cur + cur->len && (uintptr_t)m % DMM_ARENA_ALIGN != 0) {
        grow_in_place(st, cur, len);
        return 0;
    }
    seg_t *s = (seg_t *)m;
    s->len = len;
    s->prev = NULL;
    s->next = cur;
    if (cur)
        cur->prev = s;
    st->segs = s;
    st->nsegs++;
    st->held += len;
    blk_t *old = st->top;
    blk_t *t = at(s, SEGHDR);
    set_free(st, t, len - SEG_OVH, PINUSE);
    write_fence(st, s, 0);
    st->top = t;
    if (old)
        place_free(a, st, old, bsize(rd_head(st, old)));
    return 0;
}

/* ---- the class ---- */

static inline lea_t *S(dmm_alloc_t *a)
{
    lea_t *st = (lea_t *)a->state;
    st->c = a->cost ? a->cost : &st->dummy;
    return st;
}

static int lea_init(dmm_alloc_t *a)
{
    lea_t *st = (lea_t *)a->state_area;
    memset(st, 0, sizeof *st);
    st->c = a->cost ? a->cost : &st->dummy;
    st->order = a->desc.order == DMM_ORDER_LIFO ? DMM_ORDER_LIFO : DMM_ORDER_FIFO;
    st->by_pages = a->grow == DMM_GROW_PAGES;
    st->trim_at = TRIM_THRESHOLD;
    if (a->release.on)   /* at once (keep=0 or delay=0), never (keep=inf), or keep */
        st->trim_at = !a->release.keep || !a->release.delay ? TOP_KEEP
                      : a->release.keep == DMM_SIZE_INF ? SIZE_MAX
                      : a->release.keep < TOP_KEEP ? TOP_KEEP : a->release.keep;
    a->state = st;
    return 0;
}

/* Block size for n bytes; 0 if too big. */
static size_t req_size(size_t n)
{
    if (n > SIZE_MAX / 2)
        return 0;
    size_t s = dmm_align_up(n + 8, DMM_ALIGN);
    return s < MINBLK ? MINBLK : s;
}

/* Take `want` bytes from free unlisted block b of size bs: in use, the
 * remainder split off when it is a block of its own. */
static void carve(dmm_alloc_t *a, lea_t *st, blk_t *b, size_t bs, size_t want)
{
    size_t pin = rd_head(st, b) & PINUSE;
    if (bs - want >= MINBLK) {
        CNT(st, splits, 1);
        wr_head(st, b, want | CINUSE | pin);
        blk_t *r = at(b, want);
        set_free(st, r, bs - want, PINUSE);
        place_free(a, st, r, bs - want);
    } else {
        wr_head(st, b, bs | CINUSE | pin);
        blk_t *nx = at(b, bs);
        wr_head(st, nx, rd_head(st, nx) | PINUSE);
    }
}

static void *large_alloc(dmm_alloc_t *a, lea_t *st, size_t n)
{
    if (n > SIZE_MAX - LHDR - DMM_PAGE) {
        errno = ENOMEM;
        return NULL;
    }
    size_t len = dmm_align_up(n + LHDR, DMM_PAGE);
    lchunk_t *c = ps_get(a, st, len);
    if (!c) {
        errno = ENOMEM;
        return NULL;
    }
    c->len = len;
    CNT(st, hdr_writes, 1);
    c->head = len | CINUSE | LARGEF;
    c->prev = NULL;
    c->next = st->larges;
    if (st->larges)
        st->larges->prev = c;
    st->larges = c;
    st->nlarge++;
    return c + 1;
}

static void *lea_malloc(dmm_alloc_t *a, size_t n)
{
    lea_t *st = S(a);
    if (n >= LARGE_MIN)
        return large_alloc(a, st, n);
    size_t want = req_size(n), bs;
    blk_t *b = bin_take(st, want, &bs);
    if (!b) {
        if (!st->top || bsize(rd_head(st, st->top)) < want) {
            if (grow(a, st, want) != 0)
                return NULL;
        }
        b = st->top;
        bs = bsize(rd_head(st, b));
        st->top = NULL;
    }
    carve(a, st, b, bs, want);
    return (char *)b + 16;
}

/* Free block b (its head says in use), coalescing with both neighbours. */
static void free_block(dmm_alloc_t *a, lea_t *st, blk_t *b)
{
    size_t h = rd_head(st, b), size = bsize(h), pin = h & PINUSE;
    blk_t *nx = at(b, size);
    if (!pin) {
        size_t psz = rd_foot(st, b);
        blk_t *p = (blk_t *)((char *)b - psz);
        pin = rd_head(st, p) & PINUSE;
        bin_unlink(st, p, psz);     /* the top is never followed by a block */
        b = p;
        size += psz;
        CNT(st, coalesces, 1);
    }
    size_t nh = rd_head(st, nx);
    if (!(nh & CINUSE)) {
        size_t ns = bsize(nh);
        if (nx == st->top)
            st->top = NULL;
        else
            bin_unlink(st, nx, ns);
        size += ns;
        CNT(st, coalesces, 1);
        set_free(st, b, size, pin);
    } else {
        set_free(st, b, size, pin);
        wr_head(st, nx, nh & ~PINUSE);
    }
    place_free(a, st, b, size);
}

static void lea_free(dmm_alloc_t *a, void *p)
{
    if (!p)
        return;
    lea_t *st = S(a);
    blk_t *b = (blk_t *)((char *)p - 16);
    if (rd_head(st, b) & LARGEF) {
        lchunk_t *c = (lchunk_t *)p - 1;
        if (c->prev)
            c->prev->next = c->next;
        else
            st->larges = c->next;
        if (c->next)
            c->next->prev = c->prev;
        st->nlarge--;
        ps_put(a, st, c, c->len);
        return;
    }
    free_block(a, st, b);
}

size_t dmm_lea_usable(dmm_alloc_t *a, const void *p)
{
    const blk_t *b = (const blk_t *)((const char *)p - 16);
    /* without the lock (so not S(), which writes the state): only the flag
     * bits of an allocated block's head change (its neighbours' frees and
     * allocations), never its size */
    if (a->cost)
        DMM_COST(a->cost, hdr_reads, 1);
    size_t h = __atomic_load_n(&b->head, __ATOMIC_RELAXED);
    if (h & LARGEF)
        return bsize(h) - LHDR;
    return bsize(h) - 8;
}

static int lea_resize(dmm_alloc_t *a, void *p, size_t n)
{
    lea_t *st = S(a);
    blk_t *b = (blk_t *)((char *)p - 16);
    size_t h = rd_head(st, b);
    if (h & LARGEF) {
        lchunk_t *c = (lchunk_t *)p - 1;
        if (n < LARGE_MIN || n > c->len - LHDR)
            return -1;       /* small again or bigger: the chain moves it */
        size_t len = dmm_align_up(n + LHDR, DMM_PAGE);
        if (len < c->len) {
            ps_put(a, st, (char *)c + len, c->len - len);
            c->len = len;
            CNT(st, hdr_writes, 1);
            __atomic_store_n(&c->head, len | CINUSE | LARGEF, __ATOMIC_RELAXED);
        }
        return 0;
    }
    size_t want = req_size(n), size = bsize(h);
    if (!want)
        return -1;
    if (want <= size) {
        if (size - want >= MINBLK) {
            CNT(st, splits, 1);
            wr_head(st, b, want | CINUSE | (h & PINUSE));
            blk_t *r = at(b, want);
            wr_head(st, r, (size - want) | CINUSE | PINUSE);
            free_block(a, st, r);
        }
        return 0;
    }
    blk_t *nx = at(b, size);
    size_t nh = rd_head(st, nx);
    if (nh & CINUSE)
        return -1;
    size_t ns = bsize(nh);
    if (size + ns < want)
        return -1;
    if (nx == st->top)
        st->top = NULL;
    else
        bin_unlink(st, nx, ns);
    CNT(st, coalesces, 1);
    size_t total = size + ns;
    if (total - want >= MINBLK) {
        CNT(st, splits, 1);
        wr_head(st, b, want | CINUSE | (h & PINUSE));
        blk_t *r = at(b, want);
        set_free(st, r, total - want, PINUSE);
        place_free(a, st, r, total - want);
    } else {
        wr_head(st, b, total | CINUSE | (h & PINUSE));
        blk_t *n2 = at(b, total);
        wr_head(st, n2, rd_head(st, n2) | PINUSE);
    }
    return 0;
}

/* ---- check ---- */

static seg_t *seg_of(const lea_t *st, const void *p)
{
    for (seg_t *s = st->segs; s; s = s->next)
        if ((const char *)p >= (const char *)s + SEGHDR &&
            (const char *)p < (const char *)s + s->len - FENCE)
            return s;
    return NULL;
}

static size_t lea_check(dmm_alloc_t *a)
{
    lea_t *st = S(a);
    size_t bad = 0, nsegs = 0, freeblocks = 0, freebytes = 0, held = 0;
    bool top_seen = false;
    for (seg_t *s = st->segs, *prev = NULL; s; prev = s, held += s->len, s = s->next) {
        if (++nsegs > st->nsegs + 1) {
            bad++;
            break;
        }
        bad += s->prev != prev;
        if ((uintptr_t)s % DMM_PAGE || s->len % DMM_PAGE || s->len < SEG_OVH + MINBLK) {
            bad++;
            continue;
        }
        if (dmm_pagesrc_owner(a->ps, s) != a->owner ||
            dmm_pagesrc_owner(a->ps, (char *)s + s->len - 1) != a->owner)
            bad++;
        char *end = (char *)s + s->len - FENCE;
        blk_t *b = at(s, SEGHDR);
        bool prev_inuse = true;
        while ((char *)b < end) {
            size_t h = b->head, sz = bsize(h);
            if (sz < MINBLK || sz % 16 || (h & (LARGEF | FENCEF)) || (char *)b + sz > end) {
                bad++;
                break;
            }
            if (!!(h & PINUSE) != prev_inuse)
                bad++;
            bool inuse = h & CINUSE;
            if (!inuse) {
                if (!prev_inuse)
                    bad++;               /* two adjacent free blocks */
                if (at(b, sz)->prev_foot != sz)
                    bad++;               /* footer disagrees */
                if (b == st->top) {
                    top_seen = true;
                    if (s != st->segs || (char *)b + sz != end)
                        bad++;
                } else {
                    freeblocks++;
                    freebytes += sz;
                    if ((char *)b + sz == end && s == st->segs)
                        bad++;           /* the newest segment's free tail must be the top */
                }
            } else if (b == st->top) {
                bad++;
            }
            prev_inuse = inuse;
            b = at(b, sz);
        }
        if ((char *)b != end)
            bad++;                       /* tiling */
        else {
            blk_t *f = (blk_t *)end;
            if (!(f->head & FENCEF) || !(f->head & CINUSE) || bsize(f->head) != 0 ||
                fence_seg(f) != s || !!(f->head & PINUSE) != prev_inuse)
                bad++;
        }
    }
    if (nsegs != st->nsegs)
        bad++;
    if (st->top && !top_seen)
        bad++;
    bad += nsegs <= st->nsegs && held != st->held;   /* the segments' bytes */
    /* bins */
    size_t listed = 0, listedbytes = 0;
    for (unsigned i = 0; i < NBINS; i++) {
        blk_t *hd = st->bins[i];
        bool bit = (st->map[i >> 6] >> (i & 63)) & 1;
        if (!!hd != bit)
            bad++;
        if (!hd)
            continue;
        if (i < MINBLK / 16) {
            bad++;
            continue;
        }
        blk_t *p = hd;
        size_t last = 0, n = 0;
        do {
            if (++n > st->nfree + 1 || !seg_of(st, p)) {
                bad++;
                break;
            }
            size_t h = p->head, sz = bsize(h);
            if (h & CINUSE || p == st->top)
                bad++;
            if (bin_index(sz) != i)
                bad++;
            if (sz < last)
                bad++;                   /* sorted */
            if (p->fd->bk != p || p->bk->fd != p)
                bad++;
            last = sz;
            listed++;
            listedbytes += sz;
            p = p->fd;
        } while (p != hd);
    }
    if (listed != st->nfree || listedbytes != st->freebytes)
        bad++;
    if (listed != freeblocks || listedbytes != freebytes)
        bad++;
    /* large chunks */
    size_t nl = 0;
    for (lchunk_t *c = st->larges, *prev = NULL; c; prev = c, c = c->next) {
        if (++nl > st->nlarge + 1) {
            bad++;
            break;
        }
        if (c->prev != prev || (uintptr_t)c % DMM_PAGE || c->len % DMM_PAGE ||
            c->head != (c->len | CINUSE | LARGEF) ||
            dmm_pagesrc_owner(a->ps, c) != a->owner)
            bad++;
    }
    if (nl != st->nlarge)
        bad++;
    return bad;
}

static void lea_destroy(dmm_alloc_t *a)
{
    lea_t *st = S(a);
    while (st->larges) {
        lchunk_t *c = st->larges;
        st->larges = c->next;
        ps_put(a, st, c, c->len);
    }
    while (st->segs) {
        seg_t *s = st->segs;
        st->segs = s->next;
        ps_put(a, st, s, s->len);
    }
    dmm_cost_t *c = st->c == &st->dummy ? NULL : st->c;
    uint8_t order = st->order, by_pages = st->by_pages;
    size_t trim_at = st->trim_at;
    memset(st, 0, sizeof *st);
    st->c = c ? c : &st->dummy;
    st->order = order;
    st->by_pages = by_pages;
    st->trim_at = trim_at;
}

const dmm_class_ops_t dmm_class_lea = {
    .name = "lea",
    .options = DMM_OPT_ORDER,
    .usable_nolock = 1,
    .hdr_usable    = 1,
    .reads_release = 1,
    .reads_grow = 1,
    .init = lea_init,
    .malloc = lea_malloc,
    .free = lea_free,
    .usable = dmm_lea_usable,
    .resize = lea_resize,
    .check = lea_check,
    .destroy = lea_destroy,
};
