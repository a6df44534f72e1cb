/* kingsley.c - the Kingsley allocator (BSD 4.2 malloc; paper section 3.1):
 * power-of-two size classes, one LIFO free list per class, no splitting, no
 * coalescing, memory never given back until destroy().
 *
 * Blocks.  A block of class k is 2^k bytes (k = 5 .. 62: 32 B .. 4 EiB) and
 * starts with a 16-byte header; the payload follows it, so a block of class
 * k has 2^k - 16 usable bytes and a request of n bytes goes to the smallest
 * class with 2^k >= n + 16 (the smallest class, 32 B, holds up to 16 B).
 *
 *   offset 0  uint32  magic  'KNG1'
 *          4  uint8   class k
 *          5  uint8   state  K_USED / K_FREE
 *          6  uint16  owner  (the allocator's page-map id)
 *          8  uint64  next   free-list link while free, 0 while in use
 *
 * Chunks.  A class is refilled with a chunk from the page source: 64 KiB
 * (or 4 blocks, whichever is more) for blocks under 64 KiB, exactly one
 * block for blocks of 64 KiB and more.  Chunks are carved lazily: each class
 * keeps a bump pointer into its newest chunk, so a page is only touched
 * (its header written) when a block in it is first handed out.  Every block
 * is aligned to min(2^k, 4096), hence 16-byte aligned.
 *
 * Nothing is ever given back before destroy(), however large: that is
 * Kingsley, and it keeps the reference allocator of the fitness (T_KNG)
 * simple and fast.  Freed blocks are reused for their own class only.
 *
 * Options: split, coalesce, list, fit and order mean nothing for Kingsley
 * and are ignored (its lists are always LIFO singly linked stacks).
 * resize() succeeds only when the new size falls in the same class.
 *
 * State: one DMM_OWNER_META page (the per-class heads, bump pointers,
 * counts) plus a META array recording every chunk (for destroy and check),
 * grown by doubling. */
#include "allocators/core/alloc.h"
#include "allocators/classes/registry.h"

#include <errno.h>
#include <string.h>

#define K_MAGIC    0x31474E4Bu   /* "KNG1" little-endian */
#define K_USED     0x55
#define K_FREE     0xF3
#define K_HDR      16u
#define K_MIN      5              /* 32-byte blocks */
#define K_MAX      62
#define K_NCLASS   64
#define K_SMALL    (64u << 10)    /* blocks below this share chunks */

typedef struct khdr {
    uint32_t  magic;
    uint8_t   cls;
    uint8_t   state;
    uint16_t  owner;
    uintptr_t next;
} khdr_t;
_Static_assert(sizeof(khdr_t) == K_HDR, "Kingsley header is 16 bytes");

typedef struct kchunk {
    uintptr_t base;
    size_t    len;
} kchunk_t;

typedef struct kng {
    uintptr_t head[K_NCLASS];    /* free list (header addresses) */
    uintptr_t bump[K_NCLASS];    /* next block to carve in the newest chunk */
    uintptr_t end[K_NCLASS];     /* end of the newest chunk */
    uint64_t  nfree[K_NCLASS];
    uint64_t  nused[K_NCLASS];
    kchunk_t *chunks;            /* META array */
    size_t    nchunks, capchunks;
} kng_t;

static inline kng_t *K(dmm_alloc_t *a) { return (kng_t *)a->state; }

static size_t chunk_len(unsigned k)
{
    size_t b = (size_t)1 << k;
    if (b >= K_SMALL)
        return b;
    return b * 4 > K_SMALL ? b * 4 : K_SMALL;
}

/* The class of an n-byte request, or 0 if none can hold it. */
static unsigned class_of(size_t n)
{
    if (n > ((size_t)1 << K_MAX) - K_HDR)
        return 0;
    size_t need = n + K_HDR;
    if (need <= ((size_t)1 << K_MIN))
        return K_MIN;
    return (unsigned)(64 - __builtin_clzll((unsigned long long)(need - 1)));
}

static int record_chunk(dmm_alloc_t *a, uintptr_t base, size_t len)
{
    kng_t *st = K(a);
    if (st->nchunks == st->capchunks) {
        size_t cap = st->capchunks ? st->capchunks * 2 : DMM_PAGE / sizeof(kchunk_t);
        kchunk_t *n = dmm_pagesrc_get(a->ps, cap * sizeof(kchunk_t), 0, DMM_OWNER_META);
        DMM_COST(a->cost, pagesrc_calls, 1);
        if (!n)
            return -1;
        if (st->chunks) {
            memcpy(n, st->chunks, st->nchunks * sizeof(kchunk_t));
            dmm_pagesrc_put(a->ps, st->chunks, st->capchunks * sizeof(kchunk_t));
            DMM_COST(a->cost, pagesrc_calls, 1);
        }
        st->chunks = n;
        st->capchunks = cap;
    }
    st->chunks[st->nchunks].base = base;
    st->chunks[st->nchunks].len = len;
    st->nchunks++;
    return 0;
}

static int k_init(dmm_alloc_t *a)
{
    if (a->desc.hi <= a->desc.lo || a->owner == 0 || a->owner > DMM_OWNER_MAX_ALLOC) {
        errno = EINVAL;
        return -1;
    }
    kng_t *st = dmm_pagesrc_get(a->ps, sizeof(kng_t), 0, DMM_OWNER_META);
    DMM_COST(a->cost, pagesrc_calls, 1);
    if (!st)
        return -1;
    memset(st, 0, sizeof *st);
    a->state = st;
    return 0;
}

static void *k_malloc(dmm_alloc_t *a, size_t n)
{
    kng_t *st = K(a);
    unsigned k = class_of(n);
    if (!k) {
        errno = ENOMEM;
        return NULL;
    }
    khdr_t *h;
    if (st->head[k]) {
        h = (khdr_t *)st->head[k];
        DMM_COST(a->cost, nodes, 1);
        DMM_COST(a->cost, hdr_reads, 1);
        st->head[k] = h->next;
        st->nfree[k]--;
    } else {
        size_t b = (size_t)1 << k;
        if (st->bump[k] == st->end[k]) {
            size_t len = chunk_len(k);
            void *c = dmm_pagesrc_get(a->ps, len, 0, a->owner);
            DMM_COST(a->cost, pagesrc_calls, 1);
            if (!c)
                return NULL;
            if (record_chunk(a, (uintptr_t)c, len) != 0) {
                dmm_pagesrc_put(a->ps, c, len);
                DMM_COST(a->cost, pagesrc_calls, 1);
                errno = ENOMEM;
                return NULL;
            }
            st->bump[k] = (uintptr_t)c;
            st->end[k] = (uintptr_t)c + len;
        }
        h = (khdr_t *)st->bump[k];
        st->bump[k] += b;
        h->magic = K_MAGIC;
        h->cls = (uint8_t)k;
        h->owner = (uint16_t)a->owner;
    }
    h->state = K_USED;
    h->next = 0;
    DMM_COST(a->cost, hdr_writes, 1);
    st->nused[k]++;
    return (char *)h + K_HDR;
}

static void k_free(dmm_alloc_t *a, void *p)
{
    if (!p)
        return;
    kng_t *st = K(a);
    khdr_t *h = (khdr_t *)((char *)p - K_HDR);
    unsigned k = h->cls;
    DMM_COST(a->cost, hdr_reads, 1);
    h->state = K_FREE;
    h->next = st->head[k];
    DMM_COST(a->cost, hdr_writes, 1);
    st->head[k] = (uintptr_t)h;
    st->nfree[k]++;
    st->nused[k]--;
}

size_t dmm_kingsley_usable(dmm_alloc_t *a, const void *p)
{
    const khdr_t *h = (const khdr_t *)((const char *)p - K_HDR);
    DMM_COST(a->cost, hdr_reads, 1);
    return ((size_t)1 << h->cls) - K_HDR;
}

static int k_resize(dmm_alloc_t *a, void *p, size_t n)
{
    const khdr_t *h = (const khdr_t *)((const char *)p - K_HDR);
    DMM_COST(a->cost, hdr_reads, 1);
    return class_of(n) == h->cls ? 0 : -1;
}

static int hdr_ok(dmm_alloc_t *a, const khdr_t *h, unsigned k)
{
    return h->magic == K_MAGIC && h->cls == k && h->owner == a->owner &&
           (h->state == K_USED || h->state == K_FREE);
}

static size_t k_check(dmm_alloc_t *a)
{
    kng_t *st = K(a);
    size_t bad = 0;
    uint64_t freec[K_NCLASS] = {0}, usedc[K_NCLASS] = {0};

    /* every carved block of every chunk */
    for (size_t i = 0; i < st->nchunks; i++) {
        uintptr_t base = st->chunks[i].base;
        size_t len = st->chunks[i].len;
        if (dmm_pagesrc_owner(a->ps, (void *)base) != a->owner ||
            dmm_pagesrc_owner(a->ps, (void *)(base + len - 1)) != a->owner ||
            (base & (DMM_PAGE - 1))) {
            bad++;
            continue;
        }
        const khdr_t *h0 = (const khdr_t *)base;
        unsigned k = h0->cls;
        if (k < K_MIN || k > K_MAX || chunk_len(k) != len) {
            bad++;
            continue;
        }
        size_t b = (size_t)1 << k;
        uintptr_t end = base + len;
        if (st->bump[k] > base && st->bump[k] <= end)
            end = st->bump[k];   /* the newest chunk: carved up to the bump */
        for (uintptr_t p = base; p < end; p += b) {
            const khdr_t *h = (const khdr_t *)p;
            if (!hdr_ok(a, h, k)) {
                bad++;
                continue;
            }
            if (h->state == K_FREE)
                freec[k]++;
            else
                usedc[k]++;
        }
    }
    /* every free list */
    for (unsigned k = 0; k < K_NCLASS; k++) {
        uint64_t n = 0;
        for (uintptr_t p = st->head[k]; p; n++) {
            if (k < K_MIN || n > st->nfree[k]) {   /* cycle or count too low */
                bad++;
                break;
            }
            const khdr_t *h = (const khdr_t *)p;
            if ((p & (DMM_ALIGN - 1)) || dmm_pagesrc_owner(a->ps, h) != a->owner ||
                !hdr_ok(a, h, k) || h->state != K_FREE) {
                bad++;
                break;
            }
            p = h->next;
        }
        if (n != st->nfree[k] || freec[k] != st->nfree[k] || usedc[k] != st->nused[k])
            bad++;
        if ((st->bump[k] == 0) != (st->end[k] == 0) || st->bump[k] > st->end[k] ||
            (k >= K_MIN && k <= K_MAX && st->bump[k] &&
             (st->end[k] - st->bump[k]) % ((size_t)1 << k)))
            bad++;
    }
    return bad;
}

static void k_destroy(dmm_alloc_t *a)
{
    kng_t *st = K(a);
    if (!st)
        return;
    for (size_t i = 0; i < st->nchunks; i++) {
        dmm_pagesrc_put(a->ps, (void *)st->chunks[i].base, st->chunks[i].len);
        DMM_COST(a->cost, pagesrc_calls, 1);
    }
    if (st->chunks) {
        dmm_pagesrc_put(a->ps, st->chunks, st->capchunks * sizeof(kchunk_t));
        DMM_COST(a->cost, pagesrc_calls, 1);
    }
    dmm_pagesrc_put(a->ps, st, sizeof *st);
    DMM_COST(a->cost, pagesrc_calls, 1);
    a->state = NULL;
}

const dmm_class_ops_t dmm_class_kingsley = {
    .name = "kingsley",
    .options = 0,
    .usable_nolock = 1,
    .init = k_init,
    .malloc = k_malloc,
    .free = k_free,
    .usable = dmm_kingsley_usable,
    .resize = k_resize,
    .check = k_check,
    .destroy = k_destroy,
};
