/* chain.c - route each call to the allocator of its size range, find the
 * owner of a block from the page map, and keep the fallback path. */
#include "allocators/chain/chain.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "tracer/base/spinlock.h"

#define LARGE_MAGIC 0x4c415247454d4d44ull   /* "DMMEGRAL" */

typedef struct large_hdr {
    uintptr_t chunk;      /* what the page source returned */
    uint32_t  len_pages;  /* its length in pages */
    uint32_t  magic32;    /* low half of LARGE_MAGIC */
} large_hdr_t;
_Static_assert(sizeof(large_hdr_t) == 16, "the fallback header is 16 bytes");

/* The chain's own pages (dmm_chain_populate): no other thread uses it. */
static void populate_self(dmm_chain_t *c)
{
    if (c->mode != DMM_PS_REAL || !c->desc.pool)
        return;
    (void)madvise(c, sizeof *c, 23 /* MADV_POPULATE_WRITE */);
    for (size_t off = 0; off < sizeof *c; off += DMM_PAGE) {
        volatile char *q = (volatile char *)c + off;
        *q = *q;
    }
}

dmm_chain_t *dmm_chain_new(const dmm_desc_t *d, int mode, dmm_err_t *err)
{
    void *m = mmap(NULL, sizeof(dmm_chain_t), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        dmm_err_set(err, "no memory for the chain: %s", strerror(errno));
        return NULL;
    }
    dmm_chain_t *c = m;
    if (dmm_pagesrc_init(&c->ps, mode) != 0) {
        dmm_err_set(err, "page source: %s", strerror(errno));
        munmap(m, sizeof *c);
        return NULL;
    }
    c->ps.cost = &c->cost;
    dmm_pagesrc_retain(&c->ps, dmm_desc_retain(d));
    if (d->huge)
        (void)dmm_pagesrc_huge(&c->ps);   /* a fresh page source: cannot fail */
    if (d->pool && dmm_pagesrc_pool(&c->ps, d->pool) != 0) {
        dmm_err_set(err, "pool of %zu bytes: %s", d->pool, strerror(errno));
        dmm_pagesrc_fini(&c->ps);
        munmap(m, sizeof *c);
        return NULL;
    }
    c->desc = *d;
    c->mode = mode;
    for (int i = 0; i < d->n; i++) {
        dmm_alloc_t *a = &c->alloc[i];
        a->ops = dmm_class_ops(d->a[i].cls);
        a->desc = d->a[i];
        a->owner = (unsigned)i + 1;
        a->release = d->release;
        a->grow = d->grow;
        a->ps = &c->ps;
        a->cost = &c->cost;
        a->state = a->state_area;
        if (!a->ops) {
            dmm_err_set(err, "allocator %d (%s): this class is not built into dmm yet",
                     i + 1, dmm_class_name(d->a[i].cls) ? dmm_class_name(d->a[i].cls) : "?");
            c->n = i;
            dmm_chain_delete(c);
            return NULL;
        }
        if (a->ops->init(a) != 0) {
            dmm_err_set(err, "allocator %d (%s): cannot be set up with these options: %s",
                     i + 1, a->ops->name, strerror(errno));
            c->n = i;
            dmm_chain_delete(c);
            return NULL;
        }
        c->n = i + 1;
    }
    populate_self(c);
    return c;
}

void dmm_chain_populate(dmm_chain_t *c)
{
    populate_self(c);
    dmm_pagesrc_pool_populate(&c->ps);
    if (c->mode != DMM_PS_REAL || !c->desc.pool)
        return;
    /* the calling thread's block cache, a byte on each of its pages */
    char *end = (char *)(&dmm_chain_thread_cache + 1);
    for (char *q = (char *)&dmm_chain_thread_cache; q < end;
         q = (char *)(((uintptr_t)q | (DMM_PAGE - 1)) + 1))
        *(volatile char *)q = *(volatile char *)q;
}

void dmm_chain_delete(dmm_chain_t *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->n; i++)
        if (c->alloc[i].ops && c->alloc[i].ops->destroy)
            c->alloc[i].ops->destroy(&c->alloc[i]);
    dmm_pagesrc_fini(&c->ps);
    munmap(c, sizeof *c);
}

int dmm_chain_which(const dmm_chain_t *c, size_t n)
{
    for (int i = 0; i < c->n; i++) {
        if (n <= c->desc.a[i].lo)
            return -1;          /* below this range, and the rest are above */
        if (n <= c->desc.a[i].hi)
            return i;
    }
    return -1;
}

/* A simulated chain belongs to the one thread that replays through it: its
 * allocators need no lock (an atomic exchange per call in a search, which
 * runs several threads).  The real one takes them while other threads run.
 * A single-threaded process is looked at first, so that the library's
 * fast path is what dmm_spin_lock_mt alone makes it. */
static inline void lock(const dmm_chain_t *c, int *l)
{
    if (!__libc_single_threaded && c->mode == DMM_PS_REAL)
        dmm_spin_lock_mt(l);
}

static inline void unlock(const dmm_chain_t *c, int *l)
{
    if (__libc_single_threaded || c->mode == DMM_PS_REAL)
        dmm_spin_unlock_mt(l);
}

/* ---- the fallback path ---------------------------------------------- */

/* The block at chunk + off, its header written. */
static void *large_place(dmm_chain_t *c, char *chunk, size_t len, size_t off)
{
    char *p = chunk + off;
    large_hdr_t *h = (large_hdr_t *)(p - 16);
    h->chunk = (uintptr_t)chunk;
    h->len_pages = (uint32_t)(len / DMM_PAGE);
    h->magic32 = (uint32_t)LARGE_MAGIC;
    DMM_COST(&c->cost, hdr_writes, 1);
    __atomic_fetch_add(&c->large_served, 1, __ATOMIC_RELAXED);
    return p;
}

/* A block of n bytes on the fallback path; [zero[0], zero[1]) of it is
 * known to read as zero (dmm_pagesrc_get_zero; empty when equal). */
static void *large_alloc(dmm_chain_t *c, size_t n, size_t align, size_t zero[2])
{
    zero[0] = zero[1] = 0;
    size_t off = align > 16 ? align : 16;
    if (n > SIZE_MAX - off - DMM_PAGE || (n + off) / DMM_PAGE >= UINT32_MAX) {
        errno = ENOMEM;
        return NULL;
    }
    size_t len = dmm_align_up(n + off, DMM_PAGE);
    size_t z[2];
    char *chunk = dmm_pagesrc_get_zero(&c->ps, len, align > DMM_PAGE ? align : 0,
                                       DMM_OWNER_LARGE, z);
    DMM_COST(&c->cost, pagesrc_calls, 1);
    if (!chunk)
        return NULL;
    if (z[0] < z[1] && z[1] > off) {
        zero[0] = z[0] > off ? z[0] - off : 0;
        zero[1] = z[1] - off < n ? z[1] - off : n;
        if (zero[0] >= zero[1])
            zero[0] = zero[1] = 0;
    }
    return large_place(c, chunk, len, off);
}

void *dmm_chain_large_room(dmm_chain_t *c, size_t n)
{
    /* in huge pages a room would be held: the extents it lies in are held
     * whole as soon as the block or a chunk after it is in them */
    if (c->ps.huge || n > ((size_t)UINT32_MAX - 1) * DMM_PAGE / DMM_LARGE_ROOM_TIMES)
        return NULL;
    size_t len = dmm_align_up(n + 16, DMM_PAGE);
    size_t room = len * (DMM_LARGE_ROOM_TIMES - 1);
    if (room < DMM_LARGE_ROOM_MIN)
        room = DMM_LARGE_ROOM_MIN;
    int e = errno;
    char *chunk = dmm_pagesrc_get_room(&c->ps, len, room, DMM_OWNER_LARGE);
    DMM_COST(&c->cost, pagesrc_calls, 1);
    if (!chunk) {
        errno = e;
        return NULL;
    }
    return large_place(c, chunk, len, 16);
}

static large_hdr_t *large_hdr(const void *p)
{
    return (large_hdr_t *)((char *)p - 16);
}

/* ---- small aligned blocks of the fallback path -----------------------
 *
 * memalign and its kin with an alignment above 16 bytes go to the fallback
 * path, whose chunks are whole pages: 100 000 posix_memalign(64, ~100)
 * held 400 MB there, against glibc's 23 MB.  A request whose slot -- the
 * block and a fallback header before it, rounded up to the alignment --
 * takes at most DMM_SLAB_SLOT_MAX bytes shares a slab instead: a chunk of
 * SLAB_BYTES, aligned to its length, of slots of one size S (a multiple of
 * 32), each block aligned to the largest power of two that divides S (at
 * least the alignment asked for).  The header before a block says "slab"
 * (len_pages 0, SLAB_MAGIC32) and names the slab, so free, usable and
 * realloc find it as they find any block of the fallback path.  A slab
 * with a free slot is on its size's list; one that empties goes back to
 * the page source unless it is the last of its size.  The same code runs
 * in simulation, so the footprint stays the library's. */
#define SLAB_BYTES   (64u << 10)
#define SLAB_MAGIC32 0x42414c53u   /* "SLAB" */

typedef struct dmm_slab {
    uint32_t slot;           /* bytes a slot */
    uint32_t nslots;
    uint32_t first;          /* offset of the first slot */
    uint32_t used;           /* slots out */
    uint32_t fresh;          /* slots handed out at least once: the next is fresh */
    uint32_t pad;
    void    *free;           /* freed blocks, linked through their first word */
    struct dmm_slab *prev, *next;   /* its size's list of slabs with a free slot */
} slab_t;

static int is_slab_block(const void *p)
{
    const large_hdr_t *h = large_hdr(p);
    return h->len_pages == 0 && h->magic32 == SLAB_MAGIC32;
}

static void slab_unlink(dmm_chain_t *c, slab_t *sb)
{
    if (sb->prev)
        sb->prev->next = sb->next;
    else
        c->slabs[sb->slot / 32 - 1] = sb->next;
    if (sb->next)
        sb->next->prev = sb->prev;
    sb->prev = sb->next = NULL;
}

static void slab_push(dmm_chain_t *c, slab_t *sb)
{
    slab_t **head = &c->slabs[sb->slot / 32 - 1];
    sb->prev = NULL;
    sb->next = *head;
    if (*head)
        (*head)->prev = sb;
    *head = sb;
}

/* A block of slot size S (a multiple of 32, at most DMM_SLAB_SLOT_MAX);
 * NULL + ENOMEM. */
static void *slab_alloc(dmm_chain_t *c, size_t S)
{
    lock(c, &c->slab_lock);
    slab_t *sb = c->slabs[S / 32 - 1];
    if (!sb) {
        sb = dmm_pagesrc_get(&c->ps, SLAB_BYTES, SLAB_BYTES, DMM_OWNER_LARGE);
        DMM_COST(&c->cost, pagesrc_calls, 1);
        if (!sb) {
            unlock(c, &c->slab_lock);
            errno = ENOMEM;
            return NULL;
        }
        size_t a = S & -S;   /* the blocks' alignment */
        size_t first = dmm_align_up(sizeof *sb + 16, a) - 16;
        *sb = (slab_t){ .slot = (uint32_t)S, .first = (uint32_t)first,
                        .nslots = (uint32_t)((SLAB_BYTES - first) / S) };
        DMM_COST(&c->cost, hdr_writes, 1);
        slab_push(c, sb);
    }
    char *p;
    if (sb->free) {
        p = sb->free;
        sb->free = *(void **)p;
        DMM_COST(&c->cost, nodes, 1);
    } else {
        p = (char *)sb + sb->first + (size_t)sb->fresh++ * S + 16;
        large_hdr_t *h = large_hdr(p);
        h->chunk = (uintptr_t)sb;
        h->len_pages = 0;
        h->magic32 = SLAB_MAGIC32;
        DMM_COST(&c->cost, hdr_writes, 1);
    }
    if (++sb->used == sb->nslots)
        slab_unlink(c, sb);   /* full */
    unlock(c, &c->slab_lock);
    __atomic_fetch_add(&c->large_served, 1, __ATOMIC_RELAXED);
    return p;
}

static void slab_free(dmm_chain_t *c, void *p)
{
    slab_t *sb = (slab_t *)large_hdr(p)->chunk;
    DMM_COST(&c->cost, hdr_reads, 1);
    lock(c, &c->slab_lock);
    *(void **)p = sb->free;
    sb->free = p;
    if (sb->used-- == sb->nslots)
        slab_push(c, sb);   /* was full */
    /* empty, and not the last of its size: back to the page source */
    if (sb->used == 0 && (sb->prev || sb->next)) {
        slab_unlink(c, sb);
        DMM_COST(&c->cost, pagesrc_calls, 1);
        dmm_pagesrc_put(&c->ps, sb, SLAB_BYTES);
    }
    unlock(c, &c->slab_lock);
}

static size_t large_usable(const void *p)
{
    const large_hdr_t *h = large_hdr(p);
    if (is_slab_block(p))
        return ((const slab_t *)h->chunk)->slot - 16;
    return h->chunk + (size_t)h->len_pages * DMM_PAGE - (uintptr_t)p;
}

static void large_free(dmm_chain_t *c, void *p)
{
    large_hdr_t *h = large_hdr(p);
    if (is_slab_block(p)) {
        slab_free(c, p);
        return;
    }
    DMM_COST(&c->cost, hdr_reads, 1);
    DMM_COST(&c->cost, pagesrc_calls, 1);
    dmm_pagesrc_put(&c->ps, (void *)h->chunk, (size_t)h->len_pages * DMM_PAGE);
}

/* Grow large block p to n bytes where it is (its room, or free pages after
 * its chunk): 1, or 0 (nothing changed). */
static int large_extend(dmm_chain_t *c, void *p, size_t n)
{
    if (is_slab_block(p))
        return 0;
    large_hdr_t *h = large_hdr(p);
    size_t off = (uintptr_t)p - h->chunk, oldlen = (size_t)h->len_pages * DMM_PAGE;
    DMM_COST(&c->cost, hdr_reads, 1);
    if (n > SIZE_MAX - off - DMM_PAGE || (n + off) / DMM_PAGE >= UINT32_MAX)
        return 0;
    size_t len = dmm_align_up(n + off, DMM_PAGE);
    DMM_COST(&c->cost, pagesrc_calls, 1);
    if (dmm_pagesrc_extend(&c->ps, (void *)h->chunk, oldlen, len) != 0)
        return 0;
    h->len_pages = (uint32_t)(len / DMM_PAGE);
    DMM_COST(&c->cost, hdr_writes, 1);
    return 1;
}

/* Grow large block p (a chunk of its own, 16-byte offset) to n bytes, still
 * on the fallback path, by moving its pages into a new chunk instead of
 * copying its bytes (dmm_pagesrc_move): glibc's mremap of an mmapped
 * chunk.  The new block, or NULL (nothing changed: the caller copies). */
static void *large_grow(dmm_chain_t *c, void *p, size_t n)
{
    large_hdr_t old = *large_hdr(p);
    if ((uintptr_t)p != old.chunk + 16 || is_slab_block(p))
        return NULL;
    size_t oldlen = (size_t)old.len_pages * DMM_PAGE;
    size_t zero[2];
    char *q = large_alloc(c, n, 16, zero);
    if (!q)
        return NULL;
    large_hdr_t nh = *large_hdr(q);
    if (dmm_pagesrc_move(&c->ps, (void *)old.chunk, (void *)nh.chunk, oldlen) != 0) {
        large_free(c, q);
        return NULL;
    }
    *large_hdr(q) = nh;   /* the move brought the old header along */
    DMM_COST(&c->cost, hdr_writes, 1);
    DMM_COST(&c->cost, pagesrc_calls, 1);
    dmm_pagesrc_put(&c->ps, (void *)old.chunk, oldlen);
    return q;
}

/* ---- the block cache (cache.h) -------------------------------------- */

/* Every bin closed until the thread registers (dmm_chain_cache_register):
 * the first push of a thread fails, and its slow path registers. */
__thread dmm_cache_t dmm_chain_thread_cache __attribute__((tls_model("initial-exec"))) = {
    .count = { [0 ... DMM_CACHE_BINS - 1] = DMM_CACHE_CLOSED },
};

static dmm_chain_t *tls_chain;   /* the chain whose cache is per thread */
static pthread_key_t tls_key;

/* A block of at least n bytes from c's cache, or NULL. */
static void *cache_take(dmm_chain_t *c, size_t n)
{
    size_t b = dmm_cache_bin_for_request(n);
    void *p;
    if (c->cache_tls) {
        p = dmm_cache_pop(&dmm_chain_thread_cache, b);
    } else {
        lock(c, &c->cache_lock);
        p = dmm_cache_pop(&c->cache, b);
        unlock(c, &c->cache_lock);
    }
    if (p)
        DMM_COST(&c->cost, cached, 1);
    return p;
}

/* Keep block p of allocator i in c's cache: 1, or 0 when it does not fit
 * (too large, or its bin is full). */
static int cache_give(dmm_chain_t *c, int i, void *p)
{
    dmm_alloc_t *a = &c->alloc[i];
    size_t u;
    if (a->ops->usable_nolock) {
        u = a->ops->usable(a, p);
    } else {
        lock(c, &c->locks[i]);
        u = a->ops->usable(a, p);
        unlock(c, &c->locks[i]);
    }
    if (u > c->desc.cache_max)
        return 0;
    size_t b = dmm_cache_bin_for_block(u);
    int kept;
    if (c->cache_tls) {
        kept = dmm_chain_cache_push_thread(p, b, c->desc.cache_count);
    } else {
        lock(c, &c->cache_lock);
        kept = dmm_cache_push(&c->cache, b, p, c->desc.cache_count);
        unlock(c, &c->cache_lock);
    }
    if (kept)
        DMM_COST(&c->cost, cached, 1);
    return kept;
}

/* Every block of k back to its allocator. */
static void cache_drain(dmm_chain_t *c, dmm_cache_t *k)
{
    for (unsigned b = 0; b + 1 < DMM_CACHE_BINS; b++) {
        void *p;
        while ((p = dmm_cache_pop(k, b))) {
            unsigned o = dmm_pagesrc_owner(&c->ps, p);
            dmm_alloc_t *a = &c->alloc[o - 1];
            lock(c, &c->locks[o - 1]);
            a->ops->free(a, p);
            unlock(c, &c->locks[o - 1]);
        }
    }
}

/* Thread exit: the thread's cache back to the allocators, and closed. */
static void thread_exit(void *arg)
{
    (void)arg;
    dmm_cache_t *k = &dmm_chain_thread_cache;
    if (tls_chain)
        cache_drain(tls_chain, k);
    for (unsigned b = 0; b < DMM_CACHE_BINS; b++)
        k->count[b] = DMM_CACHE_CLOSED;
}

void dmm_chain_cache_register(void)
{
    dmm_cache_t *k = &dmm_chain_thread_cache;
    k->registered = 1;
    if (!__atomic_load_n(&tls_chain, __ATOMIC_ACQUIRE))
        return;   /* no chain keeps its cache per thread: the bins stay closed */
    for (unsigned b = 0; b < DMM_CACHE_BINS; b++)   /* open: empty */
        k->count[b] = 0;
    pthread_setspecific(tls_key, k);
}

int dmm_chain_cache_per_thread(dmm_chain_t *c)
{
    if (c->mode != DMM_PS_REAL)
        return -1;
    if (!__atomic_load_n(&tls_chain, __ATOMIC_ACQUIRE)) {
        dmm_chain_t *none = NULL;
        if (pthread_key_create(&tls_key, thread_exit) != 0)
            return -1;
        if (!__atomic_compare_exchange_n(&tls_chain, &none, c, 0, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE)) {
            pthread_key_delete(tls_key);
            return -1;
        }
    }
    if (__atomic_load_n(&tls_chain, __ATOMIC_ACQUIRE) != c)
        return -1;
    c->cache_tls = 1;
    return 0;
}

void dmm_chain_cache_flush(dmm_chain_t *c)
{
    if (c->cache_tls) {
        cache_drain(c, &dmm_chain_thread_cache);
        return;
    }
    lock(c, &c->cache_lock);
    cache_drain(c, &c->cache);
    unlock(c, &c->cache_lock);
}

/* ---- the malloc family --------------------------------------------- */

void *dmm_chain_malloc(dmm_chain_t *c, size_t n)
{
    if (c->desc.cache_max && n <= c->desc.cache_max) {
        void *p = cache_take(c, n);   /* n = 0: bin 0, then 1 */
        if (p)
            return p;
    }
    if (n == 0)
        n = 1;
    DMM_COST(&c->cost, ops, 1);
    int i = dmm_chain_which(c, n);
    if (i < 0) {
        size_t zero[2];
        return large_alloc(c, n, 0, zero);
    }
    dmm_alloc_t *a = &c->alloc[i];
    lock(c, &c->locks[i]);
    void *p = a->ops->malloc(a, n);
    if (p)
        a->served++;
    unlock(c, &c->locks[i]);
    if (!p)
        errno = ENOMEM;
    return p;
}

void *dmm_chain_calloc(dmm_chain_t *c, size_t nmemb, size_t size)
{
    size_t n;
    if (__builtin_mul_overflow(nmemb, size, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    /* the fallback path's block, as dmm_chain_malloc() takes it, may come
     * in pages that read as zero: not written, they stay out of the RSS (a
     * large table callocked and used in part, as glibc serves it) */
    size_t zero[2] = { 0, 0 };
    char *p;
    if (!(c->desc.cache_max && n <= c->desc.cache_max) && n && dmm_chain_which(c, n) < 0) {
        DMM_COST(&c->cost, ops, 1);
        p = large_alloc(c, n, 0, zero);
    } else {
        p = dmm_chain_malloc(c, n);
    }
    if (p && c->mode == DMM_PS_REAL) {
        memset(p, 0, zero[0] < zero[1] ? zero[0] : n);
        if (zero[0] < zero[1])
            memset(p + zero[1], 0, n - zero[1]);
    }
    return p;
}

void *dmm_chain_memalign(dmm_chain_t *c, size_t align, size_t n)
{
    if (align <= DMM_ALIGN)
        return dmm_chain_malloc(c, n);
    DMM_COST(&c->cost, ops, 1);
    if (n == 0)
        n = 1;
    if (n <= DMM_SLAB_SLOT_MAX - 16 && align <= DMM_SLAB_SLOT_MAX) {
        size_t S = dmm_align_up(n + 16, align);
        if (S <= DMM_SLAB_SLOT_MAX)
            return slab_alloc(c, S);
    }
    size_t zero[2];
    return large_alloc(c, n, align, zero);
}

int dmm_chain_owns(const dmm_chain_t *c, const void *p)
{
    unsigned o = dmm_pagesrc_owner(&c->ps, p);
    return (o >= 1 && o <= (unsigned)c->n) || o == DMM_OWNER_LARGE;
}

void dmm_chain_free(dmm_chain_t *c, void *p)
{
    if (!p)
        return;
    unsigned o = dmm_pagesrc_owner(&c->ps, p);
    if (c->desc.cache_max && o >= 1 && o <= (unsigned)c->n && cache_give(c, (int)o - 1, p))
        return;
    DMM_COST(&c->cost, ops, 1);
    if (o == DMM_OWNER_LARGE) {
        large_free(c, p);
        return;
    }
    if (o < 1 || o > (unsigned)c->n)
        return;   /* not ours: callers decide (libdmm.so checks first) */
    dmm_alloc_t *a = &c->alloc[o - 1];
    lock(c, &c->locks[o - 1]);
    a->ops->free(a, p);
    unlock(c, &c->locks[o - 1]);
}

size_t dmm_chain_usable(dmm_chain_t *c, const void *p)
{
    if (!p)
        return 0;
    unsigned o = dmm_pagesrc_owner(&c->ps, p);
    if (o == DMM_OWNER_LARGE)
        return large_usable(p);
    if (o < 1 || o > (unsigned)c->n)
        return 0;
    dmm_alloc_t *a = &c->alloc[o - 1];
    lock(c, &c->locks[o - 1]);
    size_t u = a->ops->usable(a, p);
    unlock(c, &c->locks[o - 1]);
    return u;
}

void *dmm_chain_realloc(dmm_chain_t *c, void *p, size_t n)
{
    if (!p)
        return dmm_chain_malloc(c, n);
    if (n == 0) {
        dmm_chain_free(c, p);
        return NULL;
    }
    DMM_COST(&c->cost, ops, 1);
    unsigned o = dmm_pagesrc_owner(&c->ps, p);
    size_t old;
    if (o == DMM_OWNER_LARGE) {
        old = large_usable(p);
        /* a large block keeps its chunk while it fits and still belongs on
         * the fallback path (where a block that realloc grows past
         * DMM_LARGE_MOVE_MIN stays) */
        int stays = dmm_chain_which(c, n) < 0 || n >= DMM_LARGE_MOVE_MIN;
        if (n <= old && stays && n > old / 2)
            return p;
        /* growing, and still large: where it is, else its pages move, its
         * bytes are not copied */
        if (n > old && stays && large_extend(c, p, n))
            return p;
        if (n > old && old >= DMM_LARGE_MOVE_MIN && dmm_chain_which(c, n) < 0) {
            void *q = large_grow(c, p, n);
            if (q)
                return q;
        }
    } else if (o >= 1 && o <= (unsigned)c->n) {
        dmm_alloc_t *a = &c->alloc[o - 1];
        int i = dmm_chain_which(c, n);
        lock(c, &c->locks[o - 1]);
        old = a->ops->usable(a, p);
        int done = (i == (int)o - 1) && a->ops->resize(a, p, n) == 0;
        if (done)
            a->served++;
        unlock(c, &c->locks[o - 1]);
        if (done)
            return p;
    } else {
        errno = EINVAL;   /* not ours */
        return NULL;
    }
    void *q = dmm_chain_grows_large(old, n) ? dmm_chain_large_room(c, n) : NULL;
    if (!q && !(q = dmm_chain_malloc(c, n)))
        return NULL;
    size_t keep = old < n ? old : n;
    if (c->mode == DMM_PS_REAL)
        memcpy(q, p, keep);
    DMM_COST(&c->cost, copied, keep);
    dmm_chain_free(c, p);
    return q;
}

size_t dmm_chain_check(dmm_chain_t *c)
{
    size_t v = 0;
    for (int i = 0; i < c->n; i++) {
        lock(c, &c->locks[i]);
        v += c->alloc[i].ops->check(&c->alloc[i]);
        unlock(c, &c->locks[i]);
    }
    return v;
}

void dmm_chain_lock_all(dmm_chain_t *c)
{
    for (int i = 0; i < c->n; i++)
        dmm_spin_lock(&c->locks[i]);
    dmm_spin_lock(&c->slab_lock);
    dmm_spin_lock(&c->ps.lock);
}

void dmm_chain_unlock_all(dmm_chain_t *c)
{
    dmm_spin_unlock(&c->ps.lock);
    dmm_spin_unlock(&c->slab_lock);
    for (int i = c->n - 1; i >= 0; i--)
        dmm_spin_unlock(&c->locks[i]);
}
