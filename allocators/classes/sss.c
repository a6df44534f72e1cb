/* sss.c - simple segregated storage ("sss"): areas that each hold blocks of
 * one size only, with no per-block header.
 *
 * Areas are 64 KiB, aligned to 64 KiB (dmm_pagesrc_get(ps, 64 KiB, 64 KiB,
 * owner)); a 32-byte area header at the start (links, block size, class)
 * is found from any block by masking the pointer, and the blocks tile the
 * rest of the area: (64 KiB - 32) / size blocks, carved by a bump pointer in
 * the class's newest area as they are first needed.
 *
 * Size classes (block sizes): every 16 bytes up to 1024 (16, 32, ...,
 * 1024), then four per doubling up to 8192 (1280, 1536, 1792, 2048, 2560,
 * ..., 7168, 8192); a request gets the smallest class >= it, and a class is
 * never smaller than the list's minimum block (dmm_flist_min_block: 16 SLL,
 * 32 DLL, 48 BTREE).  Only the classes that meet (lo, hi] exist.  Requests
 * above 8192 bytes get an area of their own: page-rounded 32 + n bytes,
 * 64 KiB-aligned (so that masking finds its header too), given back when
 * the block is freed.
 *
 * Options: list (SLL, DLL, BTREE) and order (FIFO, LIFO) shape each class's
 * free list.  Ignored: fit (every block of a list has the same size, so any
 * is a fit: the list is searched first-fit), split and coalesce (blocks are
 * never split or merged).  An SLL is sss's own (sss_sll_t): as every block
 * of a class has its size, a free block holds only its link, and a list is
 * its head and, for FIFO, its tail; its nodes are counted as dmm_flist
 * counts an SLL's (a push 1, a pop 1, an empty list 0).  DLL and BTREE
 * lists are dmm_flist's.
 *
 * Release (the chain's release policy, dmm_release_t): without one, areas
 * are kept until destroy, even when all their blocks are free.  With one,
 * each area counts its blocks out (live); an area other than its class's
 * newest (the one with the bump) whose last block comes back is empty and
 * joins a queue, oldest first, stamped with the allocator's clock (one tick
 * per malloc or free call).  It leaves the queue when a block of it is
 * taken again (DLL, BTREE), when a class needs a new area (the oldest
 * first), or it is given back to the page source when it has waited `delay`
 * ticks or when the queue holds more than `keep` bytes.  A DLL's or BTREE's
 * blocks of it are first taken out of the class's list, a remove per
 * block, every node visited counted.
 *
 * An SLL under a release policy is kept per area, as mimalloc keeps a
 * page's: each area lists its own free blocks, LIFO, from its header, and
 * the class keeps its areas in two lists, those that list free blocks
 * (order LIFO: an area joins it first, when its first free block comes
 * back; FIFO: last) and those that list none.  malloc takes the first
 * listed area's first block, else bumps; an area that empties leaves the
 * class for the queue with its blocks (none of which a malloc takes
 * again: it serves again as a new area, or goes back), and nothing is
 * unlisted when it goes.  A push or a pop counts a node, an area moving
 * between the two lists a header write.  So giving an area back walks
 * nothing, where a class-wide list needs a remove per block (DLL) or a walk
 * of the list (an SLL, as sss kept one under a policy before). */
#include "allocators/core/alloc.h"
#include "allocators/core/freelist.h"
#include "allocators/classes/registry.h"

#include <errno.h>
#include <string.h>

#define AREA      ((size_t)64 << 10)
#define AREA_HDR  32u
#define MAX_CLASS 8192u
#define NCLASSES  76u          /* 64 of 16 bytes + 12 up to 8192 */
#define LARGE_BS  0u

typedef struct sss_area {
    struct sss_area *next, *prev;  /* its class's areas (per-area lists: those
                                      that list free blocks, or those that list
                                      none), or the empty queue, or the
                                      one-block areas */
    uint32_t bs;               /* block size; LARGE_BS for a one-block area */
    uint16_t live;             /* blocks out (release on) */
    uint16_t idx;              /* its class's index */
    union {
        size_t len;            /* a one-block area: its length */
        uint32_t since;        /* queued: the clock when it became empty */
        void *free;            /* per-area lists, not queued: its free blocks, LIFO */
    } u;
} sss_area_t;
_Static_assert(sizeof(sss_area_t) == AREA_HDR, "the area header is 32 bytes");
_Static_assert((AREA - AREA_HDR) / 16 <= UINT16_MAX, "live counts an area's blocks");

typedef struct sss_sll {
    void *head, *tail;         /* tail: FIFO only; per-area lists: the areas
                                  that list free blocks (sss_area_t) */
} sss_sll_t;

typedef struct sss_class {
    union {
        sss_sll_t q;           /* list=sll */
        dmm_flist_t l;         /* list=dll, list=btree */
    };
    sss_area_t *areas;         /* newest first; the first holds the bump (per-area
                                  lists: the newest alone, linked in q or full) */
    sss_area_t *full;          /* per-area lists: the areas that list no free block */
    char *bump, *bump_end;
    size_t bs;
    size_t carved, live;
} sss_class_t;

typedef struct sss {
    dmm_alloc_t *a;
    dmm_pagesrc_t *ps;
    dmm_cost_t *cost;
    unsigned first, ncls;      /* class indices [first, first + ncls) */
    uint8_t sll, lifo;         /* the list: sss_sll_t (LIFO or FIFO), or dmm_flist */
    uint8_t fast;              /* sll and no release policy: the inline paths */
    uint8_t parea;             /* sll and a release policy: per-area lists */
    sss_class_t *cls;
    void *meta;                /* META chunk holding cls, or NULL */
    size_t meta_len;
    sss_area_t *large;
    size_t nlarge;
    dmm_release_t rel;
    uint32_t clock;            /* malloc + free calls (release on) */
    sss_area_t *qhead, *qtail; /* empty areas, oldest first */
    size_t qbytes;
} sss_t;

/* ---- size classes ------------------------------------------------------ */

static inline unsigned class_index(size_t n)
{
    if (n <= 16)
        return 0;
    if (n <= 1024)
        return (unsigned)((n + 15) / 16 - 1);
    unsigned g = 0;
    while (((size_t)2048 << g) < n)
        g++;
    size_t base = (size_t)1024 << g, step = base / 4;
    return 64 + 4 * g + (unsigned)((n - base + step - 1) / step - 1);
}

static size_t class_size(unsigned i)
{
    if (i < 64)
        return 16 * (size_t)(i + 1);
    unsigned g = (i - 64) / 4, j = (i - 64) % 4;
    size_t base = (size_t)1024 << g;
    return base + (j + 1) * (base / 4);
}

static inline sss_area_t *area_of(const void *p)
{
    return (sss_area_t *)((uintptr_t)p & ~(uintptr_t)(AREA - 1));
}

/* ---- a class's free blocks ------------------------------------------------ */

/* An SLL's head, unlisted (a node counted); NULL from an empty list (none).
 * LIFO keeps no tail. */
static inline void *sll_pop_as(sss_t *s, sss_class_t *c, int lifo)
{
    void **h = c->q.head;
    if (!h)
        return NULL;
    DMM_COST(s->cost, nodes, 1);
    c->q.head = *h;
    if (!lifo && !c->q.head)
        c->q.tail = NULL;
    return h;
}

static inline void *sll_pop(sss_t *s, sss_class_t *c)
{
    return sll_pop_as(s, c, s->lifo);
}

static inline void sll_push_as(sss_t *s, sss_class_t *c, void *p, int lifo)
{
    DMM_COST(s->cost, nodes, 1);
    void **n = p;
    if (lifo) {
        *n = c->q.head;
        c->q.head = n;
        return;
    }
    *n = NULL;
    if (c->q.tail)
        *(void **)c->q.tail = n;
    else
        c->q.head = n;
    c->q.tail = n;
}

static inline void sll_push(sss_t *s, sss_class_t *c, void *p)
{
    sll_push_as(s, c, p, s->lifo);
}

/* Take ar out of the doubly linked list that *head starts (a class's
 * areas, those that list no free block, the empty queue, the one-block
 * areas). */
static inline void area_unlink(sss_area_t **head, sss_area_t *ar)
{
    if (ar->prev)
        ar->prev->next = ar->next;
    else
        *head = ar->next;
    if (ar->next)
        ar->next->prev = ar->prev;
}

/* Per-area lists: ar joins its class's areas that list free blocks (LIFO:
 * first, FIFO: last) or leaves them; or joins or leaves those that list
 * none.  A move between the two is a header write. */
static inline void avail_add(sss_class_t *c, sss_area_t *ar, int lifo)
{
    sss_area_t *h = c->q.head;
    if (lifo || !h) {
        ar->prev = NULL;
        ar->next = h;
        if (h)
            h->prev = ar;
        else
            c->q.tail = ar;
        c->q.head = ar;
        return;
    }
    sss_area_t *t = c->q.tail;
    ar->next = NULL;
    ar->prev = t;
    t->next = ar;
    c->q.tail = ar;
}

static inline void avail_del(sss_class_t *c, sss_area_t *ar)
{
    if (ar->prev)
        ar->prev->next = ar->next;
    else
        c->q.head = ar->next;
    if (ar->next)
        ar->next->prev = ar->prev;
    else
        c->q.tail = ar->prev;
}

static inline void full_add(sss_class_t *c, sss_area_t *ar)
{
    ar->prev = NULL;
    ar->next = c->full;
    if (c->full)
        c->full->prev = ar;
    c->full = ar;
}

/* The first listed area's first block, unlisted (a node counted); NULL
 * when no area lists one. */
static inline void *parea_pop(sss_t *s, sss_class_t *c)
{
    sss_area_t *ar = c->q.head;
    if (!ar)
        return NULL;
    DMM_COST(s->cost, nodes, 1);
    void **b = ar->u.free;
    ar->u.free = *b;
    if (!ar->u.free) {
        DMM_COST(s->cost, hdr_writes, 1);
        avail_del(c, ar);
        full_add(c, ar);
    }
    return b;
}

static inline void parea_push(sss_t *s, sss_class_t *c, void *p, int lifo)
{
    sss_area_t *ar = area_of(p);
    DMM_COST(s->cost, nodes, 1);
    if (!ar->u.free) {
        DMM_COST(s->cost, hdr_writes, 1);
        area_unlink(&c->full, ar);
        avail_add(c, ar, lifo);
    }
    *(void **)p = ar->u.free;
    ar->u.free = p;
}

static void *list_take(sss_t *s, sss_class_t *c)
{
    if (s->parea)
        return parea_pop(s, c);
    if (s->sll)
        return sll_pop(s, c);
    size_t got;
    return dmm_flist_take(&c->l, c->bs, &got);
}

static void list_put(sss_t *s, sss_class_t *c, void *p)
{
    if (s->parea)
        parea_push(s, c, p, s->lifo);
    else if (s->sll)
        sll_push(s, c, p);
    else
        dmm_flist_insert(&c->l, p, c->bs);
}

static void list_init(sss_t *s, sss_class_t *c, const dmm_alloc_desc_t *d)
{
    if (s->sll)
        c->q.head = c->q.tail = NULL;
    else
        dmm_flist_init(&c->l, d->list, DMM_FIT_FIRST, d->order, s->cost);
}

/* ---- the ops -------------------------------------------------------------- */

/* A policy's delay as sss counts it: the clock is 32 bits, so a delay past
 * half its range is none. */
static uint64_t rel_delay(const dmm_release_t *r)
{
    return r->delay > UINT32_MAX / 2 ? UINT64_MAX : r->delay;
}

int dmm_sss_release_form(const dmm_release_t *r)
{
    if (!r->on)
        return DMM_SSS_REL_NONE;
    uint64_t d = rel_delay(r);
    if (r->keep == 0 || d == 0)
        return DMM_SSS_REL_AT_ONCE;
    if (r->keep == DMM_SIZE_INF && d == UINT64_MAX)
        return DMM_SSS_REL_NEVER;
    return DMM_SSS_REL_ANY;
}

static int sss_init(dmm_alloc_t *a)
{
    const dmm_alloc_desc_t *d = &a->desc;
    if (!dmm_alloc_desc_ok(a)) {
        errno = EINVAL;
        return -1;
    }
    memset(a->state_area, 0, sizeof a->state_area);
    sss_t *s = (sss_t *)a->state_area;
    s->a = a;
    s->ps = a->ps;
    s->cost = a->cost;
    s->rel = a->release;
    s->sll = d->list == DMM_LIST_SLL;
    s->lifo = d->order == DMM_ORDER_LIFO;
    s->fast = s->sll && !s->rel.on;
    s->parea = s->sll && s->rel.on;
    s->rel.delay = rel_delay(&s->rel);
    if (d->lo < MAX_CLASS) {
        s->first = class_index(d->lo + 1);
        unsigned last = class_index(d->hi < MAX_CLASS ? d->hi : MAX_CLASS);
        s->ncls = last - s->first + 1;
    }
    size_t off = dmm_align_up(sizeof *s, 16), need = s->ncls * sizeof(sss_class_t);
    if (off + need <= sizeof a->state_area) {
        s->cls = (sss_class_t *)(a->state_area + off);
    } else {
        s->meta_len = dmm_align_up(need, DMM_PAGE);
        s->meta = dmm_pagesrc_get(s->ps, s->meta_len, 0, DMM_OWNER_META);
        DMM_COST(s->cost, pagesrc_calls, 1);
        if (!s->meta) {
            errno = ENOMEM;
            return -1;
        }
        s->cls = s->meta;
    }
    size_t minb = dmm_flist_min_block(d->list);
    for (unsigned i = 0; i < s->ncls; i++) {
        sss_class_t *c = &s->cls[i];
        memset(c, 0, sizeof *c);
        list_init(s, c, d);
        c->bs = class_size(s->first + i);
        if (c->bs < minb)
            c->bs = minb;
    }
    a->state = s;
    return 0;
}

static void *large_malloc(sss_t *s, size_t n)
{
    if (n > SIZE_MAX - AREA) {
        errno = ENOMEM;
        return NULL;
    }
    size_t len = dmm_align_up(AREA_HDR + n, DMM_PAGE);
    sss_area_t *ar = dmm_pagesrc_get(s->ps, len, AREA, s->a->owner);
    DMM_COST(s->cost, pagesrc_calls, 1);
    if (!ar) {
        errno = ENOMEM;
        return NULL;
    }
    ar->bs = LARGE_BS;
    ar->u.len = len;
    ar->prev = NULL;
    ar->next = s->large;
    if (s->large)
        s->large->prev = ar;
    s->large = ar;
    s->nlarge++;
    DMM_COST(s->cost, hdr_writes, 1);
    return (char *)ar + AREA_HDR;
}

/* ---- release: the queue of empty areas -------------------------------- */

static void queue_add(sss_t *s, sss_area_t *ar)
{
    ar->u.since = s->clock;
    ar->next = NULL;
    ar->prev = s->qtail;
    if (s->qtail)
        s->qtail->next = ar;
    else
        s->qhead = ar;
    s->qtail = ar;
    s->qbytes += AREA;
}

static void queue_del(sss_t *s, sss_area_t *ar)
{
    area_unlink(&s->qhead, ar);
    if (!ar->next)
        s->qtail = ar->prev;
    s->qbytes -= AREA;
}

/* Take the oldest empty area off the queue, its blocks out of its class's
 * list; the area, no longer any class's. */
static sss_area_t *queue_pop(sss_t *s)
{
    sss_area_t *ar = s->qhead;
    queue_del(s, ar);
    sss_class_t *c = &s->cls[ar->idx - s->first];
    size_t per = (AREA - AREA_HDR) / c->bs;
    if (s->parea) {
        /* its blocks were listed in it alone: nothing to unlist */
    } else if (c->l.kind == DMM_LIST_DLL)   /* every one is listed: the area is empty */
        for (size_t k = 0; k < per; k++)
            dmm_flist_unlist_dll(&c->l, (char *)ar + AREA_HDR + k * c->bs);
    else
        for (size_t k = 0; k < per; k++)
            dmm_flist_remove(&c->l, (char *)ar + AREA_HDR + k * c->bs);
    c->carved -= per;
    return ar;
}

/* Whether the policy lets the allocator hold the oldest empty area no
 * longer, at the clock's reading `clock`: 0 when the queue is empty. */
static inline int release_now(const sss_t *s, uint32_t clock)
{
    return s->qhead && (s->qbytes > s->rel.keep ||
                        (s->rel.delay != UINT64_MAX &&
                         (uint32_t)(clock - s->qhead->u.since) >= s->rel.delay));
}

/* release_now() for a policy of the form rel (dmm_sss_release_form): at
 * once, any queued area goes; never, none does; the clock is read only for
 * another form. */
static inline int release_now_as(const sss_t *s, uint32_t clock, int rel)
{
    if (rel == DMM_SSS_REL_NEVER)
        return 0;
    if (rel == DMM_SSS_REL_AT_ONCE)
        return s->qhead != NULL;
    return release_now(s, clock);
}

/* Give back the empty areas the policy no longer lets the allocator hold. */
static void release_due(sss_t *s)
{
    while (release_now(s, s->clock)) {
        sss_area_t *ar = queue_pop(s);
        DMM_COST(s->cost, pagesrc_calls, 1);
        dmm_pagesrc_put(s->ps, ar, AREA);
    }
}

/* A block of ar was taken from its class's list: one more out. */
static void area_took(sss_t *s, sss_class_t *c, sss_area_t *ar)
{
    DMM_COST(s->cost, hdr_writes, 1);
    if (ar->live++ == 0 && ar != c->areas && !s->parea) {
        /* it was queued (the class's newest area never is): back to the
         * class, behind the newest (per-area lists: a queued area lists
         * no block, so no block of it is taken) */
        queue_del(s, ar);
        ar->prev = c->areas;
        ar->next = c->areas->next;
        if (ar->next)
            ar->next->prev = ar;
        c->areas->next = ar;
    }
}

/* A new area for class c: the oldest empty one when there is one (its
 * blocks leave their list; no page-source call), else a fresh one. */
static sss_area_t *area_new(sss_t *s, sss_class_t *c, unsigned idx)
{
    sss_area_t *ar;
    if (s->qhead) {
        ar = queue_pop(s);
    } else {
        ar = dmm_pagesrc_get(s->ps, AREA, AREA, s->a->owner);
        DMM_COST(s->cost, pagesrc_calls, 1);
        if (!ar) {
            errno = ENOMEM;
            return NULL;
        }
    }
    ar->bs = (uint32_t)c->bs;
    ar->live = 0;
    ar->idx = (uint16_t)idx;
    ar->u.len = 0;   /* since 0; per-area lists: none listed */
    if (s->parea) {
        full_add(c, ar);
    } else {
        ar->prev = NULL;
        ar->next = c->areas;
        if (c->areas)
            c->areas->prev = ar;
    }
    c->areas = ar;
    DMM_COST(s->cost, hdr_writes, 1);
    c->bump = (char *)ar + AREA_HDR;
    c->bump_end = (char *)ar + AREA;
    return ar;
}

/* malloc's every case: a one-block area, the release policy's clock, a
 * new area. */
static __attribute__((noinline)) void *sss_malloc_more(dmm_alloc_t *a, size_t n)
{
    sss_t *s = a->state;
    if (n > MAX_CLASS || !s->ncls)
        return large_malloc(s, n);
    unsigned i = class_index(n) - s->first;
    if (i >= s->ncls)            /* outside (lo, hi]: not ours to class */
        return large_malloc(s, n);
    sss_class_t *c = &s->cls[i];
    if (s->rel.on) {
        s->clock++;
        if (s->qhead)
            release_due(s);
    }
    void *b = list_take(s, c);
    if (b) {
        c->live++;
        if (s->rel.on) {
            DMM_COST(s->cost, hdr_reads, 1);
            area_took(s, c, area_of(b));
        }
        return b;
    }
    if ((size_t)(c->bump_end - c->bump) < c->bs && !area_new(s, c, s->first + i))
        return NULL;
    b = c->bump;
    c->bump += c->bs;
    c->carved++;
    c->live++;
    if (s->rel.on)
        c->areas->live++;
    return b;
}

/* Small enough to inline where it is called by name (the evolved library's
 * malloc, dmm_evolved.c), and calling nothing: a class of 16-byte steps
 * takes its list's head or bumps in its newest area, as sss_malloc_more
 * would, counting the same nodes and headers; NULL, with nothing done, for
 * every other case (n == 0 included: its index wraps past the classes).
 * Unless `known`, only with an SLL and without a release policy (s->fast;
 * LIFO: s->lifo when lifo < 0).  `known` (codegen knows the allocator's
 * .dmm): dll, a DLL, else an SLL; rel, under a release policy of that form
 * (dmm_sss_release_form), which the common case keeps as sss_malloc_more
 * does (the area's blocks out; the allocator's clock where the form reads
 * it) where release_due would give back nothing at this call (release_now)
 * and the head's area is not one that had none out (area_took would move
 * it): the rest goes the slow way.  The state is
 * where sss_init puts it, a->state_area: no load of a->state. */
static inline __attribute__((always_inline)) void *malloc_fast_as(dmm_alloc_t *a, size_t n,
                                                                  int known, int dll, int rel,
                                                                  int lifo)
{
    sss_t *s = (sss_t *)a->state_area;
    if (!__builtin_expect(n <= 1024 && (known || s->fast), 1))
        return NULL;
    unsigned i = (unsigned)((n - 1) >> 4) - s->first;   /* class_index(n) */
    if (i >= s->ncls || (rel && release_now_as(s, s->clock + 1, rel)))
        return NULL;
    sss_class_t *c = &s->cls[i];
    void *h = dll ? (void *)c->l.head : c->q.head;
    if (h) {
        sss_area_t *ar = area_of(h);
        if (rel && ar->live == 0 && ar != c->areas)
            return NULL;
        void *b = dll ? dmm_flist_take_head(&c->l, c->bs)
                  : rel ? parea_pop(s, c)   /* known: an SLL under a policy is per area */
                        : sll_pop_as(s, c, lifo < 0 ? s->lifo : lifo);
        if (b) {
            c->live++;
            if (rel) {
                if (rel == DMM_SSS_REL_ANY)
                    s->clock++;
                DMM_COST(s->cost, hdr_reads, 1);
                DMM_COST(s->cost, hdr_writes, 1);
                ar->live++;
            }
        }
        return b;
    }
    if ((size_t)(c->bump_end - c->bump) < c->bs)
        return NULL;
    void *b = c->bump;
    c->bump += c->bs;
    c->carved++;
    c->live++;
    if (rel) {
        if (rel == DMM_SSS_REL_ANY)
            s->clock++;
        c->areas->live++;
    }
    return b;
}

inline __attribute__((always_inline)) void *dmm_sss_malloc_fast(dmm_alloc_t *a, size_t n)
{
    return malloc_fast_as(a, n, 0, 0, 0, -1);
}

inline __attribute__((always_inline)) void *dmm_sss_malloc_fast_sll(dmm_alloc_t *a, size_t n,
                                                                    int lifo)
{
    return malloc_fast_as(a, n, 1, 0, 0, lifo);
}

inline __attribute__((always_inline)) void *dmm_sss_malloc_fast_known(dmm_alloc_t *a, size_t n,
                                                                      int dll, int rel, int lifo)
{
    return malloc_fast_as(a, n, 1, dll, rel, lifo);
}

inline __attribute__((always_inline)) void *dmm_sss_malloc(dmm_alloc_t *a, size_t n)
{
    void *b = dmm_sss_malloc_fast(a, n);
    return b ? b : sss_malloc_more(a, n);
}

/* free's every case: a one-block area, the release policy, a list other
 * than an SLL. */
static __attribute__((noinline)) void sss_free_more(sss_t *s, sss_area_t *ar, void *p)
{
    if (ar->bs == LARGE_BS) {
        area_unlink(&s->large, ar);
        s->nlarge--;
        DMM_COST(s->cost, pagesrc_calls, 1);
        dmm_pagesrc_put(s->ps, ar, ar->u.len);
        return;
    }
    sss_class_t *c = &s->cls[ar->idx - s->first];
    c->live--;
    list_put(s, c, p);
    if (s->rel.on) {
        s->clock++;
        DMM_COST(s->cost, hdr_writes, 1);
        if (--ar->live == 0 && ar != c->areas) {
            if (s->parea)
                avail_del(c, ar);   /* the block just listed: it lists some */
            else
                area_unlink(&c->areas, ar);
            queue_add(s, ar);
        }
        if (s->qhead)
            release_due(s);
    }
}

/* Inline where called by name, as dmm_sss_malloc_fast, and calling nothing:
 * a block goes on its class's list (LIFO: lifo, or s->lifo when lifo < 0),
 * as sss_free_more would put it: 1; 0 with nothing done for a one-block
 * area, and unless `known` for anything but an SLL without a release policy
 * (s->fast).  `known`: dll and rel as malloc_fast_as reads them; under a
 * release policy, a block whose area it would leave with none out (the
 * area joins the queue), or at a call where release_due would give an area
 * back, goes the slow way.  The state as malloc_fast_as finds it. */
static inline __attribute__((always_inline)) int free_fast_as(dmm_alloc_t *a, void *p, int known,
                                                              int dll, int rel, int lifo)
{
    sss_t *s = (sss_t *)a->state_area;
    sss_area_t *ar = area_of(p);
    if (__builtin_expect(ar->bs == LARGE_BS || !(known || s->fast), 0))
        return 0;
    sss_class_t *c = &s->cls[ar->idx - s->first];
    if (rel && ((ar->live == 1 && ar != c->areas) || release_now_as(s, s->clock + 1, rel)))
        return 0;
    DMM_COST(s->cost, hdr_reads, 1);
    c->live--;
    if (dll)
        dmm_flist_insert(&c->l, p, c->bs);
    else if (rel)
        parea_push(s, c, p, lifo < 0 ? s->lifo : lifo);
    else
        sll_push_as(s, c, p, lifo < 0 ? s->lifo : lifo);
    if (rel) {
        if (rel == DMM_SSS_REL_ANY)
            s->clock++;
        DMM_COST(s->cost, hdr_writes, 1);
        ar->live--;
    }
    return 1;
}

inline __attribute__((always_inline)) int dmm_sss_free_fast(dmm_alloc_t *a, void *p)
{
    return free_fast_as(a, p, 0, 0, 0, -1);
}

inline __attribute__((always_inline)) int dmm_sss_free_fast_sll(dmm_alloc_t *a, void *p, int lifo)
{
    return free_fast_as(a, p, 1, 0, 0, lifo);
}

inline __attribute__((always_inline)) int dmm_sss_free_fast_known(dmm_alloc_t *a, void *p,
                                                                  int dll, int rel, int lifo)
{
    return free_fast_as(a, p, 1, dll, rel, lifo);
}

inline __attribute__((always_inline)) void dmm_sss_free(dmm_alloc_t *a, void *p)
{
    if (dmm_sss_free_fast(a, p))
        return;
    sss_t *s = a->state;
    DMM_COST(s->cost, hdr_reads, 1);
    sss_free_more(s, area_of(p), p);
}

size_t dmm_sss_usable(dmm_alloc_t *a, const void *p)
{
    sss_t *s = a->state;
    const sss_area_t *ar = area_of(p);
    DMM_COST(s->cost, hdr_reads, 1);
    return ar->bs == LARGE_BS ? ar->u.len - AREA_HDR : ar->bs;
}

/* usable() of a block from a class: never a one-block area (codegen calls
 * it where dmm_sss_usable_max() of the allocator's range is not SIZE_MAX,
 * so that free's way to the thread's cache tests nothing of the area's). */
inline __attribute__((always_inline)) size_t dmm_sss_usable_classed(dmm_alloc_t *a,
                                                                    const void *p)
{
    (void)a;
    return area_of(p)->bs;
}

size_t dmm_sss_usable_max(const dmm_alloc_desc_t *d)
{
    /* every request of (lo, hi] has a class, as sss_init numbers them and
     * sss_malloc_more takes them; a block is its class's size, or the
     * list's smallest block where that is larger */
    if (d->lo >= MAX_CLASS || d->hi > MAX_CLASS || d->hi <= d->lo)
        return SIZE_MAX;
    size_t bs = class_size(class_index(d->hi)), minb = dmm_flist_min_block(d->list);
    return bs < minb ? minb : bs;
}

inline __attribute__((always_inline)) int dmm_sss_resize(dmm_alloc_t *a, void *p, size_t n)
{
    return n <= dmm_sss_usable(a, p) ? 0 : -1;
}

typedef struct {
    const sss_t *s;
    const sss_class_t *c;
    unsigned idx;
    size_t count, viol;
} walk_ctx_t;

static void walk_fn(void *block, size_t size, void *arg)
{
    walk_ctx_t *w = arg;
    const sss_class_t *c = w->c;
    w->count++;
    const sss_area_t *ar = area_of(block);
    if (size != c->bs || dmm_pagesrc_owner(w->s->ps, block) != w->s->a->owner ||
        ar->bs != c->bs || ar->idx != w->idx) {
        w->viol++;
        return;
    }
    size_t off = (size_t)((const char *)block - (const char *)ar);
    if (off < AREA_HDR || (off - AREA_HDR) % c->bs || off + c->bs > AREA ||
        (ar == c->areas && (const char *)block >= c->bump))
        w->viol++;
}

/* An SLL's nodes, each as walk_fn sees it: the walk stops at the first
 * bad one (its link is not to be followed) or past c->carved nodes (a
 * cycle); FIFO's tail is the last node. */
static size_t sll_check(const sss_t *s, const sss_class_t *c, walk_ctx_t *w)
{
    void *last = NULL;
    for (void **n = c->q.head; n; n = *n) {
        size_t viol = w->viol;
        if (w->count > c->carved || ((uintptr_t)n & (DMM_ALIGN - 1)))
            return 1;
        walk_fn(n, c->bs, w);
        if (w->viol != viol)
            return 0;
        last = n;
    }
    return !s->lifo && c->q.tail != last;
}

/* An area header of class index idx, in the page map as ours. */
static int area_bad(const sss_t *s, const sss_area_t *ar, size_t bs, unsigned idx)
{
    return ((uintptr_t)ar & (AREA - 1)) || dmm_pagesrc_owner(s->ps, ar) != s->a->owner ||
           ar->bs != bs || ar->idx != idx;
}

/* The blocks ar has carved: all it holds, or the newest area's up to the
 * bump. */
static size_t area_carved(const sss_class_t *c, const sss_area_t *ar)
{
    return ar == c->areas ? (size_t)(c->bump - ((const char *)ar + AREA_HDR)) / c->bs
                          : (AREA - AREA_HDR) / c->bs;
}

/* Per-area lists: the class's areas are those that list free blocks (c->q)
 * and those that list none (c->full), each list linked both ways, the
 * newest among them; an area's list holds its own blocks (walk_fn sees
 * each), and with its count of blocks out, all it carved; none but the
 * newest is empty (an empty one is queued).  Adds the areas' blocks carved
 * and out to *carved and *live. */
static size_t parea_check(const sss_t *s, const sss_class_t *c, walk_ctx_t *w, size_t *carved,
                          size_t *live)
{
    size_t v = 0, n = 0, per = (AREA - AREA_HDR) / c->bs;
    int newest = 0;
    for (int full = 0; full < 2; full++) {
        const sss_area_t *prev = NULL;
        for (const sss_area_t *ar = full ? c->full : c->q.head; ar; prev = ar, ar = ar->next) {
            if (++n > c->carved + 1 || ar->prev != prev || area_bad(s, ar, c->bs, w->idx) ||
                (ar->u.free == NULL) != full)
                return v + 1;
            size_t k = 0;
            for (void *const *b = ar->u.free; b; b = *b) {
                size_t viol = w->viol;
                if (++k > per || area_of(b) != ar || ((uintptr_t)b & (DMM_ALIGN - 1)))
                    return v + 1;
                walk_fn((void *)b, c->bs, w);
                if (w->viol != viol)
                    return v;
            }
            size_t in = area_carved(c, ar);
            if (ar->live + k != in || (ar->live == 0 && ar != c->areas))
                v++;
            newest |= ar == c->areas;
            *carved += in;
            *live += ar->live;
        }
        if (!full && c->q.tail != prev)
            v++;
    }
    return v + (c->areas && !newest);
}

/* Class i: its areas (and its empty ones in the queue) against its counts
 * and its list. */
static size_t class_check(const sss_t *s, unsigned i)
{
    const sss_class_t *c = &s->cls[i];
    size_t v = 0, carved = 0, live = 0, per = (AREA - AREA_HDR) / c->bs;
    walk_ctx_t w = { s, c, s->first + i, 0, 0 };
    if (c->areas) {
        size_t used = (size_t)(c->bump - ((const char *)c->areas + AREA_HDR));
        if (used % c->bs || c->bump > c->bump_end ||
            c->bump_end != (const char *)c->areas + AREA)
            v++;
    }
    if (s->parea) {
        v += parea_check(s, c, &w, &carved, &live);
    } else {
        for (const sss_area_t *ar = c->areas; ar; ar = ar->next) {
            if (ar->prev && ar->prev->next != ar)
                v++;
            if (area_bad(s, ar, c->bs, s->first + i)) {
                v++;
                continue;
            }
            live += ar->live;
            if (s->rel.on && ar->live == 0 && ar != c->areas)
                v++;                /* empty, yet not queued */
            carved += area_carved(c, ar);
        }
    }
    size_t queued = 0;   /* blocks of its empty areas */
    for (const sss_area_t *ar = s->qhead; ar; ar = ar->next)
        if (ar->idx == s->first + i)
            queued += per;
    if (carved + queued != c->carved || (s->rel.on && live != c->live))
        v++;
    if (s->parea) {
        /* walked above */
    } else if (s->sll) {
        v += sll_check(s, c, &w);
    } else {
        v += dmm_flist_check(&c->l);
        dmm_flist_walk(&c->l, walk_fn, &w);
        if (w.count != c->l.count)
            v++;
    }
    v += w.viol;
    /* every block carved is out or listed; per-area lists: or in an empty
     * area, which lists none */
    if (w.count + c->live + (s->parea ? queued : 0) != c->carved)
        v++;
    return v;
}

static size_t sss_check(dmm_alloc_t *a)
{
    const sss_t *s = a->state;
    size_t v = 0;
    for (unsigned i = 0; i < s->ncls; i++)
        v += class_check(s, i);
    size_t nq = 0;
    for (const sss_area_t *ar = s->qhead; ar; ar = ar->next) {
        nq++;
        unsigned idx = ar->idx;
        if (!s->rel.on || idx < s->first || idx >= s->first + s->ncls ||
            area_bad(s, ar, s->cls[idx - s->first].bs, idx) || ar->live != 0 ||
            (ar->prev ? ar->prev->next != ar : s->qhead != ar) || (!ar->next && s->qtail != ar))
            v++;
    }
    if (nq * AREA != s->qbytes)
        v++;
    size_t nl = 0;
    for (const sss_area_t *ar = s->large; ar; ar = ar->next) {
        nl++;
        if (((uintptr_t)ar & (AREA - 1)) || dmm_pagesrc_owner(s->ps, ar) != a->owner ||
            ar->bs != LARGE_BS || ar->u.len % DMM_PAGE || (ar->prev && ar->prev->next != ar))
            v++;
    }
    if (nl != s->nlarge)
        v++;
    return v;
}

/* Give back every area of the list that ar starts. */
static void areas_put(sss_t *s, sss_area_t *ar)
{
    while (ar) {
        sss_area_t *next = ar->next;
        DMM_COST(s->cost, pagesrc_calls, 1);
        dmm_pagesrc_put(s->ps, ar, AREA);
        ar = next;
    }
}

static void sss_destroy(dmm_alloc_t *a)
{
    sss_t *s = a->state;
    if (!s)
        return;
    for (unsigned i = 0; i < s->ncls; i++) {
        sss_class_t *c = &s->cls[i];
        if (s->parea) {   /* the newest is on one of the two lists */
            areas_put(s, c->q.head);
            areas_put(s, c->full);
            c->full = NULL;
        } else {
            areas_put(s, c->areas);
        }
        c->areas = NULL;
        if (s->sll)
            c->q.head = c->q.tail = NULL;
        else
            dmm_flist_init(&c->l, c->l.kind, c->l.fit, c->l.order, s->cost);
        c->bump = c->bump_end = NULL;
        c->carved = c->live = 0;
    }
    areas_put(s, s->qhead);
    s->qhead = s->qtail = NULL;
    s->qbytes = 0;
    while (s->large) {
        sss_area_t *ar = s->large;
        s->large = ar->next;
        DMM_COST(s->cost, pagesrc_calls, 1);
        dmm_pagesrc_put(s->ps, ar, ar->u.len);
    }
    s->nlarge = 0;
    if (s->meta) {
        DMM_COST(s->cost, pagesrc_calls, 1);
        dmm_pagesrc_put(s->ps, s->meta, s->meta_len);
        s->meta = NULL;
    }
    a->state = NULL;
}

const dmm_class_ops_t dmm_class_sss = {
    .name = "sss",
    .options = DMM_OPT_LIST | DMM_OPT_ORDER,
    .usable_nolock = 1,
    .reads_release = 1,
    .init = sss_init,
    .malloc = dmm_sss_malloc,
    .free = dmm_sss_free,
    .usable = dmm_sss_usable,
    .resize = dmm_sss_resize,
    .check = sss_check,
    .destroy = sss_destroy,
};
