/* buddy.c - buddy systems (paper section 3.2): "buddy-binary" and
 * "buddy-fib", one implementation with two size sequences.
 *
 * Sizes.  Block sizes S[0] < S[1] < ... < S[top], all multiples of 16, each
 * including a 16-byte header:
 *   binary     S[0] = 32 (64 with list=btree), S[j] = 2 S[j-1];
 *   Fibonacci  S[0] = 32, S[1] = 48 (64, 96 with list=btree),
 *              S[j] = S[j-1] + S[j-2]: 32 48 80 128 208 336 544 880 ...
 * (list=btree needs 48 bytes of tree node in a free block's payload.)  A
 * request of n bytes takes the smallest S[j] >= n + 16; usable = S[j] - 16.
 *
 * Regions.  The allocator takes its memory in regions, chunks from the page
 * source of one size S[top]: the smallest size >= min(hi + 16, 1 MiB), and
 * at least 4 KiB (Fibonacci regions are rounded up to whole pages; the tail
 * is not used).  A region is the root of a buddy tree.  A request above
 * S[top] - 16 (possible when hi > 1 MiB - 16) gets a dedicated chunk of its
 * own, page-rounded, whose header says LARGE and holds the chunk length; it
 * goes straight back to the page source on free.
 *
 * Splitting.  A block of index k splits into a left part of index k-1 at its
 * start and a right part of index k-1 (binary) or k-2 (Fibonacci) after it.
 * A Fibonacci request is served from the smaller part when that one is big
 * enough, so splitting F(k) for F(j) takes the fewest splits.
 *
 * Buddies: the left/right and memory bits.  Every header carries two bits,
 * R (the block is the right part of its parent) and M (memory), as in the
 * Fibonacci buddy system of Cranston & Thomas (1975): on a split, the left
 * part gets R=0, M=parent's R; the right part gets R=1, M=parent's M; a
 * merge of left L and right R restores the parent's R = L.M and M = R.M.
 * The two children thus keep the parent's two bits, and so on up the tree.
 * The buddy of a left block of index k is the block at addr + S[k] (index
 * k, or k-1 for Fibonacci); the buddy of a right block of index k is at
 * addr - S[b], b = k (binary) or k+1 (Fibonacci).  A buddy is mergeable when
 * its header says free, its index is b and its R bit is the opposite of
 * ours (a block that starts at the buddy's address with the buddy's index is
 * the buddy itself).  Binary buddies could use offset ^ size instead; the
 * same bits serve both, and check() verifies the binary ones against the
 * offset anyway.
 *
 * Header (16 bytes, before the payload):
 *   word 0  bits  0- 7  index j (0xFF: LARGE chunk)
 *           bit   8     FREE
 *           bit   9     VIRGIN (free, never handed out: split=no only)
 *           bit  10     R      right part of its parent
 *           bit  11     M      memory bit
 *           bit  12     RBASE  the block at the start of its region
 *           bits 16-31  magic 0xBDxx, xx = the allocator's owner id
 *           bits 32-63  registry slot (RBASE blocks and LARGE chunks)
 *   word 1  free-list link (next) while free; the chunk length when LARGE.
 *   DLL lists keep their prev link in the payload's first word; list=btree
 *   keeps a dmm_fnode_t (freelist.h) at the payload.
 *
 * Options:
 *   split=yes   an empty size class is served by splitting the smallest
 *               larger free block (a new region when there is none);
 *   split=no    free blocks are never split: an empty class gets a fresh
 *               block cut from never-used region space (VIRGIN blocks, kept
 *               on lists of their own; cutting it is counted as splits, it
 *               is the same work), else from a new region; resize() cannot
 *               shrink a block to a smaller size;
 *   coalesce    on free, merge with the buddy while it is free and whole
 *               (counted per merge); a merge with VIRGIN space is VIRGIN;
 *   list        sll / dll / btree: the container of each size class's free
 *               list (SLL: remove walks the list; DLL: O(1); BTREE:
 *               freelist.h's AVL tree, O(log n));
 *   order       fifo / lifo: which free block of a class is reused first;
 *   fit         ignored: every block in a buddy class list has one size.
 * A region that becomes wholly free is given back to the page source,
 * except one kept for reuse (so a loop of alloc/free at a region boundary
 * does not call the page source each time).
 *
 * State: DMM_OWNER_META pages (the per-size lists), and a META registry of
 * every region and LARGE chunk (for destroy and check), grown by doubling. */
#include "allocators/core/alloc.h"
#include "allocators/core/freelist.h"
#include "allocators/classes/registry.h"

#include <errno.h>
#include <string.h>

#define B_HDR       16u
#define B_MAXSZ     40
#define IDX_LARGE   0xFFu
#define F_FREE      (1ull << 8)
#define F_VIRGIN    (1ull << 9)
#define F_RIGHT     (1ull << 10)
#define F_MEM       (1ull << 11)
#define F_RBASE     (1ull << 12)
#define MAGIC_MASK  (0xFFFFull << 16)
#define SLOT_MASK   (0xFFFFFFFFull << 32)
#define REGION_MAX  (1u << 20)
#define REGION_MIN  DMM_PAGE

typedef struct bhdr {
    uint64_t  info;
    uintptr_t next;
} bhdr_t;
_Static_assert(sizeof(bhdr_t) == B_HDR, "buddy header is 16 bytes");

typedef struct blist {        /* own SLL / DLL of header addresses */
    uintptr_t head, tail;
    size_t    count;
} blist_t;

typedef struct bentry {       /* a region or a LARGE chunk */
    uintptr_t base;
    size_t    len;
} bentry_t;

typedef struct bstate {
    int         fib;
    uint8_t     list, order, split, coalesce;
    unsigned    top;                 /* index of the region size */
    size_t      S[B_MAXSZ];
    size_t      region_len;          /* chunk length of a region */
    uint64_t    magic;               /* pre-shifted magic bits */
    uint64_t    fmask, vmask;        /* non-empty free / virgin lists */
    blist_t     f[B_MAXSZ];          /* free lists, list=sll/dll */
    dmm_flist_t t[B_MAXSZ];          /* free lists, list=btree */
    blist_t     v[B_MAXSZ];          /* virgin lists (DLL, LIFO) */
    uint64_t    nused;               /* blocks handed out from regions */
    uint64_t    nlarge;              /* LARGE chunks held */
    bentry_t   *reg;                 /* META array */
    size_t      nreg, capreg;
} bstate_t;

/* Test and debugging hooks (declared by the tests). */
size_t dmm_buddy_debug_sizes(const dmm_alloc_t *a, size_t *out, size_t max);
size_t dmm_buddy_debug_listed(const dmm_alloc_t *a, unsigned j, int virgin);
size_t dmm_buddy_debug_regions(const dmm_alloc_t *a);

static inline bstate_t *B(dmm_alloc_t *a) { return (bstate_t *)a->state; }
static inline bhdr_t *H(uintptr_t blk) { return (bhdr_t *)blk; }
static inline uintptr_t *PREV(uintptr_t blk) { return (uintptr_t *)(blk + B_HDR); }
static inline unsigned IDX(uint64_t info) { return (unsigned)(info & 0xFF); }
static inline uint32_t SLOT(uint64_t info) { return (uint32_t)(info >> 32); }
static inline uint64_t bit(unsigned j) { return 1ull << j; }

/* ---------------------------------------------------------------------
 * Free lists
 * --------------------------------------------------------------------- */

static void own_insert(dmm_alloc_t *a, blist_t *l, uintptr_t blk, int dll, int lifo)
{
    H(blk)->next = 0;
    if (dll)
        *PREV(blk) = 0;
    DMM_COST(a->cost, nodes, 1);
    DMM_COST(a->cost, hdr_writes, 1);
    if (!l->head) {
        l->head = l->tail = blk;
    } else if (lifo) {
        H(blk)->next = l->head;
        if (dll) {
            *PREV(l->head) = blk;
            DMM_COST(a->cost, hdr_writes, 1);
        }
        l->head = blk;
    } else {
        H(l->tail)->next = blk;
        DMM_COST(a->cost, hdr_writes, 1);
        if (dll)
            *PREV(blk) = l->tail;
        l->tail = blk;
    }
    l->count++;
}

static uintptr_t own_pop(dmm_alloc_t *a, blist_t *l, int dll)
{
    uintptr_t blk = l->head;
    DMM_COST(a->cost, nodes, 1);
    l->head = H(blk)->next;
    if (!l->head) {
        l->tail = 0;
    } else if (dll) {
        *PREV(l->head) = 0;
        DMM_COST(a->cost, hdr_writes, 1);
    }
    l->count--;
    return blk;
}

static void own_remove(dmm_alloc_t *a, blist_t *l, uintptr_t blk, int dll)
{
    uintptr_t pred = 0, nx = H(blk)->next;
    if (dll) {
        pred = *PREV(blk);
        DMM_COST(a->cost, nodes, 1);
    } else {
        uintptr_t p = l->head;
        DMM_COST(a->cost, nodes, 1);
        while (p && p != blk) {
            pred = p;
            p = H(p)->next;
            DMM_COST(a->cost, nodes, 1);
        }
        if (!p)
            return;   /* not listed: cannot happen when the headers are sound */
    }
    if (pred) {
        H(pred)->next = nx;
        DMM_COST(a->cost, hdr_writes, 1);
    } else {
        l->head = nx;
    }
    if (nx) {
        if (dll) {
            *PREV(nx) = pred;
            DMM_COST(a->cost, hdr_writes, 1);
        }
    } else {
        l->tail = pred;
    }
    l->count--;
}

static size_t fcount(const bstate_t *st, unsigned j)
{
    return st->list == DMM_LIST_BTREE ? st->t[j].count : st->f[j].count;
}

static void f_insert(dmm_alloc_t *a, bstate_t *st, unsigned j, uintptr_t blk)
{
    if (st->list == DMM_LIST_BTREE)
        dmm_flist_insert(&st->t[j], (void *)(blk + B_HDR), st->S[j] - B_HDR);
    else
        own_insert(a, &st->f[j], blk, st->list == DMM_LIST_DLL, st->order == DMM_ORDER_LIFO);
    st->fmask |= bit(j);
}

static uintptr_t f_pop(dmm_alloc_t *a, bstate_t *st, unsigned j)
{
    uintptr_t blk;
    if (st->list == DMM_LIST_BTREE)
        blk = (uintptr_t)dmm_flist_take(&st->t[j], st->S[j] - B_HDR, NULL) - B_HDR;
    else
        blk = own_pop(a, &st->f[j], st->list == DMM_LIST_DLL);
    if (!fcount(st, j))
        st->fmask &= ~bit(j);
    return blk;
}

static void f_remove(dmm_alloc_t *a, bstate_t *st, unsigned j, uintptr_t blk)
{
    if (st->list == DMM_LIST_BTREE)
        dmm_flist_remove(&st->t[j], (void *)(blk + B_HDR));
    else
        own_remove(a, &st->f[j], blk, st->list == DMM_LIST_DLL);
    if (!fcount(st, j))
        st->fmask &= ~bit(j);
}

static void v_insert(dmm_alloc_t *a, bstate_t *st, unsigned j, uintptr_t blk)
{
    own_insert(a, &st->v[j], blk, 1, 1);
    st->vmask |= bit(j);
}

static uintptr_t v_pop(dmm_alloc_t *a, bstate_t *st, unsigned j)
{
    uintptr_t blk = own_pop(a, &st->v[j], 1);
    if (!st->v[j].count)
        st->vmask &= ~bit(j);
    return blk;
}

static void v_remove(dmm_alloc_t *a, bstate_t *st, unsigned j, uintptr_t blk)
{
    own_remove(a, &st->v[j], blk, 1);
    if (!st->v[j].count)
        st->vmask &= ~bit(j);
}

/* ---------------------------------------------------------------------
 * Registry of regions and LARGE chunks
 * --------------------------------------------------------------------- */

/* The slot for a new entry, or -1 (errno ENOMEM). */
static long reg_add(dmm_alloc_t *a, bstate_t *st, uintptr_t base, size_t len)
{
    if (st->nreg == st->capreg) {
        size_t cap = st->capreg ? st->capreg * 2 : DMM_PAGE / sizeof(bentry_t);
        bentry_t *n = dmm_pagesrc_get(a->ps, cap * sizeof(bentry_t), 0, DMM_OWNER_META);
        DMM_COST(a->cost, pagesrc_calls, 1);
        if (!n)
            return -1;
        if (st->reg) {
            memcpy(n, st->reg, st->nreg * sizeof(bentry_t));
            dmm_pagesrc_put(a->ps, st->reg, st->capreg * sizeof(bentry_t));
            DMM_COST(a->cost, pagesrc_calls, 1);
        }
        st->reg = n;
        st->capreg = cap;
    }
    st->reg[st->nreg].base = base;
    st->reg[st->nreg].len = len;
    return (long)st->nreg++;
}

/* Drop slot i; the last entry moves into it and its header learns so. */
static void reg_remove(dmm_alloc_t *a, bstate_t *st, uint32_t i)
{
    size_t last = st->nreg - 1;
    if (i != last) {
        st->reg[i] = st->reg[last];
        bhdr_t *h = H(st->reg[i].base);
        h->info = (h->info & ~SLOT_MASK) | ((uint64_t)i << 32);
        DMM_COST(a->cost, hdr_writes, 1);
    }
    st->nreg--;
}

/* ---------------------------------------------------------------------
 * Blocks
 * --------------------------------------------------------------------- */

static unsigned idx_for(dmm_alloc_t *a, const bstate_t *st, size_t need)
{
    unsigned lo = 0, hi = st->top;   /* S[top] >= need */
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        DMM_COST(a->cost, lookups, 1);
        if (st->S[mid] >= need)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* A new region: one block of index top, free (VIRGIN when split=no), not
 * listed.  0 when the page source is exhausted. */
static uintptr_t new_region(dmm_alloc_t *a, bstate_t *st)
{
    void *c = dmm_pagesrc_get(a->ps, st->region_len, 0, a->owner);
    DMM_COST(a->cost, pagesrc_calls, 1);
    if (!c)
        return 0;
    long slot = reg_add(a, st, (uintptr_t)c, st->region_len);
    if (slot < 0) {
        dmm_pagesrc_put(a->ps, c, st->region_len);
        DMM_COST(a->cost, pagesrc_calls, 1);
        errno = ENOMEM;
        return 0;
    }
    bhdr_t *h = c;
    h->info = st->magic | st->top | F_FREE | (st->split ? 0 : F_VIRGIN) | F_RBASE |
              ((uint64_t)slot << 32);
    h->next = 0;
    DMM_COST(a->cost, hdr_writes, 1);
    return (uintptr_t)c;
}

/* Split block blk of index k: the left part keeps blk's address, RBASE and
 * slot and gets lflags; the right part gets rflags.  Returns the right. */
static uintptr_t split_once(dmm_alloc_t *a, bstate_t *st, uintptr_t blk, unsigned k,
                            uint64_t lflags, uint64_t rflags)
{
    uint64_t info = H(blk)->info;
    unsigned kl = k - 1, kr = st->fib ? k - 2 : k - 1;
    uintptr_t r = blk + st->S[kl];
    H(blk)->info = (info & (F_RBASE | SLOT_MASK)) | st->magic | kl | lflags |
                   ((info & F_RIGHT) ? F_MEM : 0);
    H(r)->info = st->magic | kr | rflags | F_RIGHT | ((info & F_MEM) ? F_MEM : 0);
    H(r)->next = 0;
    DMM_COST(a->cost, splits, 1);
    DMM_COST(a->cost, hdr_reads, 1);
    DMM_COST(a->cost, hdr_writes, 2);
    return r;
}

/* List a free block (its header already says free), or give its region
 * back when it is a whole region and another whole one is kept already. */
static void put_free(dmm_alloc_t *a, bstate_t *st, uintptr_t blk, unsigned k, int virgin)
{
    if (k == st->top && fcount(st, k) + st->v[k].count >= 1) {
        reg_remove(a, st, SLOT(H(blk)->info));
        dmm_pagesrc_put(a->ps, (void *)blk, st->region_len);
        DMM_COST(a->cost, pagesrc_calls, 1);
        return;
    }
    if (virgin)
        v_insert(a, st, k, blk);
    else
        f_insert(a, st, k, blk);
}

static void *large_malloc(dmm_alloc_t *a, bstate_t *st, size_t n)
{
    if (n > SIZE_MAX - 2 * DMM_PAGE) {
        errno = ENOMEM;
        return NULL;
    }
    size_t len = dmm_align_up(n + B_HDR, DMM_PAGE);
    void *c = dmm_pagesrc_get(a->ps, len, 0, a->owner);
    DMM_COST(a->cost, pagesrc_calls, 1);
    if (!c)
        return NULL;
    long slot = reg_add(a, st, (uintptr_t)c, len);
    if (slot < 0) {
        dmm_pagesrc_put(a->ps, c, len);
        DMM_COST(a->cost, pagesrc_calls, 1);
        errno = ENOMEM;
        return NULL;
    }
    bhdr_t *h = c;
    h->info = st->magic | IDX_LARGE | ((uint64_t)slot << 32);
    h->next = len;
    DMM_COST(a->cost, hdr_writes, 1);
    st->nlarge++;
    return (char *)c + B_HDR;
}

static void *b_malloc(dmm_alloc_t *a, size_t n)
{
    bstate_t *st = B(a);
    if (n > st->S[st->top] - B_HDR)
        return large_malloc(a, st, n);
    unsigned j = idx_for(a, st, n + B_HDR);
    uintptr_t blk;
    if (st->fmask & bit(j)) {
        blk = f_pop(a, st, j);
    } else {
        /* the smallest block to split: free ones (split=yes) or virgin
         * ones (split=no); a Fibonacci S[1] cannot give an S[0] */
        uint64_t m = st->split ? st->fmask & ~(bit(j + 1) - 1) : st->vmask & ~(bit(j) - 1);
        if (st->fib && j == 0)
            m &= ~bit(1);
        unsigned k;
        if (m) {
            k = (unsigned)__builtin_ctzll(m);
            blk = st->split ? f_pop(a, st, k) : v_pop(a, st, k);
        } else {
            k = st->top;
            blk = new_region(a, st);
            if (!blk)
                return NULL;
        }
        uint64_t fl = F_FREE | (st->split ? 0 : F_VIRGIN);
        while (k > j) {
            unsigned kl = k - 1, kr = st->fib ? k - 2 : k - 1;
            uintptr_t r = split_once(a, st, blk, k, fl, fl);
            /* Fibonacci: go on with the smaller part when it fits and can
             * still reach j (an S[1] cannot split into an S[0]) */
            if (st->fib && kr >= j && !(kr == 1 && j == 0)) {
                put_free(a, st, blk, kl, !st->split);
                blk = r;
                k = kr;
            } else {
                put_free(a, st, r, kr, !st->split);
                k = kl;
            }
        }
    }
    bhdr_t *h = H(blk);
    h->info &= ~(F_FREE | F_VIRGIN);
    h->next = 0;
    DMM_COST(a->cost, hdr_writes, 1);
    st->nused++;
    return (char *)blk + B_HDR;
}

static void b_free(dmm_alloc_t *a, void *p)
{
    if (!p)
        return;
    bstate_t *st = B(a);
    uintptr_t blk = (uintptr_t)p - B_HDR;
    uint64_t info = H(blk)->info;
    DMM_COST(a->cost, hdr_reads, 1);
    if (IDX(info) == IDX_LARGE) {
        size_t len = H(blk)->next;
        reg_remove(a, st, SLOT(info));
        dmm_pagesrc_put(a->ps, (void *)blk, len);
        DMM_COST(a->cost, pagesrc_calls, 1);
        st->nlarge--;
        return;
    }
    unsigned k = IDX(info);
    uint64_t virgin = 0;
    st->nused--;
    while (st->coalesce && k < st->top) {
        uintptr_t bud;
        unsigned kb;
        if (info & F_RIGHT) {
            kb = st->fib ? k + 1 : k;
            bud = blk - st->S[kb];
        } else {
            if (st->fib && k == 0)
                break;   /* no Fibonacci left part has index 0 */
            kb = st->fib ? k - 1 : k;
            bud = blk + st->S[k];
        }
        uint64_t binfo = H(bud)->info;
        DMM_COST(a->cost, hdr_reads, 1);
        if (!(binfo & F_FREE) || IDX(binfo) != kb || !(binfo & F_RIGHT) == !(info & F_RIGHT))
            break;
        if (binfo & F_VIRGIN)
            v_remove(a, st, kb, bud);
        else
            f_remove(a, st, kb, bud);
        uint64_t li = (info & F_RIGHT) ? binfo : info;
        uint64_t ri = (info & F_RIGHT) ? info : binfo;
        blk = blk < bud ? blk : bud;
        k = IDX(li) + 1;
        info = (li & (F_RBASE | SLOT_MASK)) | st->magic | k | ((li & F_MEM) ? F_RIGHT : 0) |
               ((ri & F_MEM) ? F_MEM : 0);
        virgin |= binfo & F_VIRGIN;
        DMM_COST(a->cost, coalesces, 1);
    }
    H(blk)->info = (info & ~(F_FREE | F_VIRGIN)) | F_FREE | virgin;
    DMM_COST(a->cost, hdr_writes, 1);
    put_free(a, st, blk, k, virgin != 0);
}

size_t dmm_buddy_usable(dmm_alloc_t *a, const void *p)
{
    bstate_t *st = B(a);
    const bhdr_t *h = (const bhdr_t *)((const char *)p - B_HDR);
    DMM_COST(a->cost, hdr_reads, 1);
    if (IDX(h->info) == IDX_LARGE)
        return h->next - B_HDR;
    return st->S[IDX(h->info)] - B_HDR;
}

static int b_resize(dmm_alloc_t *a, void *p, size_t n)
{
    bstate_t *st = B(a);
    uintptr_t blk = (uintptr_t)p - B_HDR;
    uint64_t info = H(blk)->info;
    DMM_COST(a->cost, hdr_reads, 1);
    if (IDX(info) == IDX_LARGE)   /* the chunk stays whole */
        return n <= H(blk)->next - B_HDR ? 0 : -1;
    if (n > st->S[st->top] - B_HDR)
        return -1;
    unsigned k = IDX(info), j = idx_for(a, st, n + B_HDR);
    if (j == k)
        return 0;
    if (j > k || !st->split || (st->fib && k < 2))
        return -1;
    /* shrink: split off right parts, keeping the left (our address); a
     * Fibonacci S[1] cannot split, so a block may stay one size above */
    while (k > j) {
        if (st->fib && k < 2)
            break;
        unsigned kr = st->fib ? k - 2 : k - 1;
        uintptr_t r = split_once(a, st, blk, k, 0, F_FREE);
        put_free(a, st, r, kr, 0);
        k--;
    }
    return 0;
}

static void b_destroy(dmm_alloc_t *a)
{
    bstate_t *st = B(a);
    if (!st)
        return;
    for (size_t i = 0; i < st->nreg; i++) {
        dmm_pagesrc_put(a->ps, (void *)st->reg[i].base, st->reg[i].len);
        DMM_COST(a->cost, pagesrc_calls, 1);
    }
    if (st->reg) {
        dmm_pagesrc_put(a->ps, st->reg, st->capreg * sizeof(bentry_t));
        DMM_COST(a->cost, pagesrc_calls, 1);
    }
    dmm_pagesrc_put(a->ps, st, sizeof *st);
    DMM_COST(a->cost, pagesrc_calls, 1);
    a->state = NULL;
}

/* ---------------------------------------------------------------------
 * check()
 * --------------------------------------------------------------------- */

typedef struct ck {
    dmm_alloc_t *a;
    bstate_t    *st;
    unsigned     j;
    size_t       bad, n;
} ck_t;

static size_t node_bad(dmm_alloc_t *a, bstate_t *st, uintptr_t blk, unsigned j, int virgin)
{
    if (!blk || (blk & (DMM_ALIGN - 1)) || dmm_pagesrc_owner(a->ps, (void *)blk) != a->owner)
        return 1;
    uint64_t info = H(blk)->info;
    if ((info & MAGIC_MASK) != st->magic || IDX(info) != j || !(info & F_FREE) ||
        !(info & F_VIRGIN) != !virgin)
        return 1;
    return 0;
}

static void tree_node(void *block, size_t size, void *arg)
{
    ck_t *c = arg;
    c->n++;
    if (size != c->st->S[c->j] - B_HDR ||
        node_bad(c->a, c->st, (uintptr_t)block - B_HDR, c->j, 0))
        c->bad++;
}

/* Walk an own list: links, counts, tail, prev links (DLL). */
static size_t own_check(dmm_alloc_t *a, bstate_t *st, const blist_t *l, unsigned j, int dll,
                        int virgin)
{
    size_t bad = 0, n = 0;
    uintptr_t prev = 0;
    for (uintptr_t p = l->head; p; p = H(p)->next) {
        if (n++ >= l->count || node_bad(a, st, p, j, virgin))
            return bad + 1;
        if (dll && *PREV(p) != prev)
            bad++;
        prev = p;
    }
    if (n != l->count || l->tail != prev)
        bad++;
    return bad;
}

typedef struct frame {
    uintptr_t addr;
    unsigned  idx;
    uint8_t   right, mem, freeleaf;
} frame_t;

/* One region: walk its blocks from the base, rebuild the buddy tree from the
 * R/M bits bottom-up (shift-reduce), count the free and used blocks. */
static size_t region_check(bstate_t *st, size_t slot, size_t *fc, size_t *vc,
                           size_t *uc)
{
    uintptr_t base = st->reg[slot].base, end = base + st->S[st->top];
    frame_t stk[2 * B_MAXSZ + 4];
    int sp = 0;
    size_t bad = 0;
    uintptr_t p = base;
    while (p < end) {
        uint64_t info = H(p)->info;
        unsigned k = IDX(info);
        if ((info & MAGIC_MASK) != st->magic || k > st->top || !(info & F_RBASE) != (p != base) ||
            (p == base && SLOT(info) != slot) || ((info & F_VIRGIN) && !(info & F_FREE)) ||
            ((info & F_VIRGIN) && st->split) || p + st->S[k] > end)
            return bad + 1;
        if (!st->fib) {
            size_t off = p - base;
            if (off % st->S[k] || !(info & F_RIGHT) != !((off / st->S[k]) & 1))
                bad++;
        }
        if (info & F_VIRGIN)
            vc[k]++;
        else if (info & F_FREE)
            fc[k]++;
        else
            (*uc)++;
        if (sp == (int)(sizeof stk / sizeof stk[0]))
            return bad + 1;
        stk[sp++] = (frame_t){p, k, !!(info & F_RIGHT), !!(info & F_MEM), !!(info & F_FREE)};
        while (sp >= 2) {
            frame_t *L = &stk[sp - 2], *R = &stk[sp - 1];
            if (L->right || !R->right || (st->fib && L->idx == 0) || L->idx + 1 > st->top ||
                R->idx != (st->fib ? L->idx - 1 : L->idx) || R->addr != L->addr + st->S[L->idx])
                break;
            if (st->coalesce && L->freeleaf && R->freeleaf)
                bad++;   /* two free buddies that should have merged */
            frame_t par = {L->addr, L->idx + 1, L->mem, R->mem, 0};
            sp -= 2;
            stk[sp++] = par;
        }
        p += st->S[k];
    }
    if (p != end || sp != 1 || stk[0].idx != st->top || stk[0].right || stk[0].mem)
        bad++;
    return bad;
}

static size_t b_check(dmm_alloc_t *a)
{
    bstate_t *st = B(a);
    size_t bad = 0, uc = 0, nlarge = 0;
    size_t fc[B_MAXSZ] = {0}, vc[B_MAXSZ] = {0};

    for (size_t i = 0; i < st->nreg; i++) {
        uintptr_t base = st->reg[i].base;
        size_t len = st->reg[i].len;
        if ((base & (DMM_PAGE - 1)) || dmm_pagesrc_owner(a->ps, (void *)base) != a->owner ||
            dmm_pagesrc_owner(a->ps, (void *)(base + len - 1)) != a->owner) {
            bad++;
            continue;
        }
        uint64_t info = H(base)->info;
        if ((info & MAGIC_MASK) != st->magic) {
            bad++;
        } else if (IDX(info) == IDX_LARGE) {
            nlarge++;
            if (SLOT(info) != i || H(base)->next != len || len % DMM_PAGE ||
                len <= st->S[st->top])
                bad++;
        } else if (len != st->region_len) {
            bad++;
        } else {
            bad += region_check(st, i, fc, vc, &uc);
        }
    }
    if (uc != st->nused || nlarge != st->nlarge)
        bad++;

    for (unsigned j = 0; j < B_MAXSZ; j++) {
        if (j > st->top) {
            if (st->f[j].count || st->t[j].count || st->v[j].count)
                bad++;
            continue;
        }
        if (st->list == DMM_LIST_BTREE) {
            bad += dmm_flist_check(&st->t[j]);
            ck_t c = {a, st, j, 0, 0};
            dmm_flist_walk(&st->t[j], tree_node, &c);
            bad += c.bad;
            if (c.n != st->t[j].count || st->f[j].count)
                bad++;
        } else {
            bad += own_check(a, st, &st->f[j], j, st->list == DMM_LIST_DLL, 0);
            if (st->t[j].count)
                bad++;
        }
        bad += own_check(a, st, &st->v[j], j, 1, 1);
        if (fcount(st, j) != fc[j] || st->v[j].count != vc[j])
            bad++;
        if (!(st->fmask & bit(j)) != !fcount(st, j) || !(st->vmask & bit(j)) != !st->v[j].count)
            bad++;
    }
    if (st->fmask >> (st->top + 1) || st->vmask >> (st->top + 1))
        bad++;
    /* at most one wholly free region is kept */
    if (fcount(st, st->top) + st->v[st->top].count > 1)
        bad++;
    return bad;
}

/* ---------------------------------------------------------------------
 * init
 * --------------------------------------------------------------------- */

static int b_init(dmm_alloc_t *a, int fib)
{
    const dmm_alloc_desc_t *d = &a->desc;
    if (d->hi <= d->lo || a->owner == 0 || a->owner > DMM_OWNER_MAX_ALLOC ||
        d->list > DMM_LIST_BTREE || d->order > DMM_ORDER_LIFO) {
        errno = EINVAL;
        return -1;
    }
    bstate_t *st = dmm_pagesrc_get(a->ps, sizeof(bstate_t), 0, DMM_OWNER_META);
    DMM_COST(a->cost, pagesrc_calls, 1);
    if (!st)
        return -1;
    memset(st, 0, sizeof *st);
    st->fib = fib;
    st->list = d->list;
    st->order = d->order;
    st->split = !!d->split;
    st->coalesce = !!d->coalesce;
    st->magic = (uint64_t)(0xBD00u | (a->owner & 0xFF)) << 16;

    size_t m0 = 32;
    if (st->list == DMM_LIST_BTREE)
        m0 = dmm_align_up(B_HDR + dmm_flist_min_block(DMM_LIST_BTREE), 16);
    size_t target = d->hi >= REGION_MAX - B_HDR ? REGION_MAX : d->hi + B_HDR;
    if (target < REGION_MIN)
        target = REGION_MIN;
    if (fib) {
        st->S[0] = m0;
        st->S[1] = dmm_align_up(m0 + m0 / 2, 16);
    } else {
        size_t s = 32;
        while (s < m0)
            s *= 2;
        st->S[0] = s;
        st->S[1] = 2 * s;
    }
    unsigned j = 0;
    while (st->S[j] < target) {
        j++;
        if (j >= 2)
            st->S[j] = fib ? st->S[j - 1] + st->S[j - 2] : 2 * st->S[j - 1];
    }
    st->top = j;
    st->region_len = dmm_align_up(st->S[j], DMM_PAGE);
    for (unsigned i = 0; i < B_MAXSZ; i++)
        dmm_flist_init(&st->t[i], DMM_LIST_BTREE, DMM_FIT_FIRST, st->order, a->cost);
    a->state = st;
    return 0;
}

static int b_init_binary(dmm_alloc_t *a) { return b_init(a, 0); }
static int b_init_fib(dmm_alloc_t *a) { return b_init(a, 1); }

size_t dmm_buddy_debug_sizes(const dmm_alloc_t *a, size_t *out, size_t max)
{
    const bstate_t *st = a->state;
    for (unsigned j = 0; j <= st->top && j < max; j++)
        out[j] = st->S[j];
    return st->top + 1;
}

size_t dmm_buddy_debug_listed(const dmm_alloc_t *a, unsigned j, int virgin)
{
    const bstate_t *st = a->state;
    if (j >= B_MAXSZ)
        return 0;
    return virgin ? st->v[j].count : fcount(st, j);
}

size_t dmm_buddy_debug_regions(const dmm_alloc_t *a)
{
    const bstate_t *st = a->state;
    return st->nreg - st->nlarge;
}

const dmm_class_ops_t dmm_class_buddy_binary = {
    .name = "buddy-binary",
    .options = DMM_OPT_SPLIT | DMM_OPT_COALESCE | DMM_OPT_LIST | DMM_OPT_ORDER,
    .usable_nolock = 1,
    .init = b_init_binary,
    .malloc = b_malloc,
    .free = b_free,
    .usable = dmm_buddy_usable,
    .resize = b_resize,
    .check = b_check,
    .destroy = b_destroy,
};

const dmm_class_ops_t dmm_class_buddy_fib = {
    .name = "buddy-fib",
    .options = DMM_OPT_SPLIT | DMM_OPT_COALESCE | DMM_OPT_LIST | DMM_OPT_ORDER,
    .usable_nolock = 1,
    .init = b_init_fib,
    .malloc = b_malloc,
    .free = b_free,
    .usable = dmm_buddy_usable,
    .resize = b_resize,
    .check = b_check,
    .destroy = b_destroy,
};
