/* backend_evolved.c - libdmm_evolved.so's back end (backend.h): the chain
 * that `dmm codegen` wrote into dmm_evolved.c, for the program it was
 * evolved for.
 *
 *   LD_PRELOAD=build/libdmm_evolved.so ./app
 *
 * Two differences from libdmm.so's back end:
 * - the chain's description is the constant of dmm_evolved.c; DMM_CONFIG is
 *   not read (a one-line notice says so if it is set);
 * - malloc and free skip the chain's generic dispatch: the allocator is
 *   picked by dmm_evolved_pick(), whose range bounds are constants, and
 *   called through its class's ops by name (dmm_evolved.h); a cache line's
 *   max and count are constants too, and a cache hit calls no allocator.
 * realloc decides as the chain's does, and gets and gives its blocks
 * through these malloc and free.
 * Everything else (calloc, the aligned calls, the fallback path, fork,
 * DMM_STATS, DMM_CHECK, DMM_OFFLOAD) is the chain's and the shim's;
 * DMM_CHECK's blocks also come from dmm_backend_malloc and go back through
 * dmm_backend_free.  The allocator classes are compiled with DMM_COUNT=0:
 * no cost counting. */
#include "preload/shim/backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "preload/shim/dmm_evolved.h"
#include "preload/shim/shim.h"
#include "tracer/base/spinlock.h"

const char dmm_backend_lib[] = "libdmm_evolved.so";

const dmm_desc_t *dmm_backend_desc(int check)
{
    (void)check;   /* the chain always starts: nothing to ignore */
    const char *cfg = environ ? secure_getenv("DMM_CONFIG") : NULL;
    const dmm_desc_t *d = dmm_evolved_description();
    if (cfg && *cfg)
        dmm_shim_say("DMM_CONFIG ignored: libdmm_evolved.so runs the chain it was built with: ",
                     d->title);
    return d;
}

/* The allocators' locks are the chain's own words (c->locks), taken as
 * chain.c takes them, so that dmm_chain_lock_all() holds them across fork
 * and the chain's calloc, realloc and fallback path exclude these calls.
 * With a cache (dmm_evolved_cache_max() > 0, a constant), a request it
 * covers first pops the thread's cache (allocators/chain/cache.h), which
 * the chain keeps per thread in the preload libraries (shim.c).
 *
 * class_malloc: a request the cache did not serve; inline into the miss
 * path (dmm_backend_malloc_miss, which link-time optimisation puts into the
 * shim's malloc_slow: one stack frame for both), and out of line as
 * malloc_class for the rest. */
static inline __attribute__((always_inline)) void *class_malloc(dmm_chain_t *c, size_t n)
{
    if (n == 0)
        n = 1;
    int i = dmm_evolved_pick(n);
    if (__builtin_expect(i < 0, 0))
        return dmm_chain_malloc(c, n);   /* the fallback path */
    dmm_spin_lock_mt(&c->locks[i]);
    void *p = dmm_evolved_class_malloc(c, i, n);
    if (p)
        c->alloc[i].served++;
    dmm_spin_unlock_mt(&c->locks[i]);
    if (!p)
        errno = ENOMEM;
    return p;
}

static __attribute__((noinline)) void *malloc_class(dmm_chain_t *c, size_t n)
{
    return class_malloc(c, n);
}

/* The thread's cache, for a request it covers; NULL when it has nothing.
 * malloc(0) looks in bin 0 (then 1), as the chain does (chain.c).  Where
 * every block of the chain that can enter the cache lies in an odd bin (or
 * every one in an even bin: dmm_evolved_cache_parity), a request starts at
 * the first bin of that parity, which is the block the chain's look at its
 * own bin and then the next would give (the first of the two is always
 * empty): a malloc of 208 bytes on lea's blocks of 216 took 4 instructions
 * more, one of 200 none. */
static inline void *cache_pop(size_t n)
{
    if (dmm_evolved_cache_max() && n <= dmm_evolved_cache_max()) {
        size_t b = dmm_cache_bin_for_request(n);
        if (dmm_evolved_cache_parity() == 1)
            b |= 1;
        else if (dmm_evolved_cache_parity() == 2)
            b += b & 1;
        return dmm_cache_pop(&dmm_chain_thread_cache, b);
    }
    return NULL;
}

/* While the process has one thread and the chain serves unchecked (so no
 * lock is needed and nothing is to be checked), a request the cache did not
 * serve: its allocator's common case, which calls nothing (sss: a list's
 * head or a bump, dmm_evolved_class_malloc_fast); NULL for the rest, n == 0
 * included (sss's class index wraps past its classes; the chain's malloc
 * serves it as 1 byte). */
static inline void *class_fast_malloc(size_t n)
{
    if (!dmm_evolved_has_fast() || !__libc_single_threaded ||
        __atomic_load_n(&dmm_shim_state, __ATOMIC_ACQUIRE) != DMM_SHIM_ON)
        return NULL;
    dmm_chain_t *c = dmm_shim_chain;
    int i = dmm_evolved_pick(n);
    if (i < 0)
        return NULL;
    void *p = dmm_evolved_class_malloc_fast(c, i, n);
    if (p)
        c->alloc[i].served++;
    return p;
}

/* inline, and no stack frame: link-time optimisation puts it into malloc. */
inline void *dmm_backend_malloc_fast(size_t n)
{
    void *p = cache_pop(n);
    return p ? p : class_fast_malloc(n);
}

void *dmm_backend_malloc_miss(dmm_chain_t *c, size_t n)
{
    return class_malloc(c, n);
}

void *dmm_backend_malloc(dmm_chain_t *c, size_t n)
{
    void *p = cache_pop(n);
    return p ? p : malloc_class(c, n);
}

/* Block p of allocator i into the thread's cache: 1, or 0 when it does not
 * fit there. */
static inline int cache_keep(dmm_chain_t *c, int i, void *p)
{
    size_t u;
    if (dmm_evolved_usable_nolock(i)) {
        u = dmm_evolved_class_usable(c, i, p);
    } else {
        dmm_spin_lock_mt(&c->locks[i]);
        u = dmm_evolved_class_usable(c, i, p);
        dmm_spin_unlock_mt(&c->locks[i]);
    }
    return u <= dmm_evolved_cache_max() &&
           dmm_chain_cache_push_thread(p, dmm_cache_bin_for_block(u), dmm_evolved_cache_count());
}

/* Block p of allocator i (or of the fallback path: i < 0) that the cache
 * did not take back to its allocator.  errno is kept without a save here:
 * a free's one system call is the page source's, which keeps it (pagesrc.c
 * drop). */
static inline __attribute__((always_inline)) void class_free(dmm_chain_t *c, int i, void *p)
{
    dmm_spin_lock_mt(&c->locks[i]);
    dmm_evolved_class_free(c, i, p);
    dmm_spin_unlock_mt(&c->locks[i]);
}

static __attribute__((noinline)) void free_class(dmm_chain_t *c, int i, void *p)
{
    if (i < 0)
        dmm_chain_free(c, p);            /* the fallback path */
    else
        class_free(c, i, p);
}

/* Block p of allocator i: into the thread's cache if it fits, else back to
 * its allocator. */
static __attribute__((noinline)) void free_block(dmm_chain_t *c, int i, void *p)
{
    if (dmm_evolved_cache_max() && cache_keep(c, i, p))
        return;
    free_class(c, i, p);
}

/* Block p of allocator i, u usable bytes, that the thread's cache did not
 * take (too large, or its bin full): to its allocator, unless the bins
 * refused because the thread is not registered yet (cache.h): free_block's
 * push registers it. */
static __attribute__((noinline)) void free_refused(int i, void *p, size_t u)
{
    if (u > dmm_evolved_cache_max() || dmm_chain_thread_cache.registered)
        class_free(dmm_shim_chain, i, p);
    else
        free_block(dmm_shim_chain, i, p);
}

/* p outside the newest arena's blocks, or free not yet (or not) freeing
 * at once (dmm_shim_free_arena() is then an empty arena): looked up in
 * every arena; not a block of the chain: the shim's (glibc's, or
 * DMM_CHECK's, or offloaded). */
static __attribute__((noinline)) void free_elsewhere(void *p)
{
    dmm_chain_t *c = dmm_shim_free_chain();
    unsigned o = c ? dmm_pagesrc_owner_older(&c->ps, p) : DMM_OWNER_NONE;
    if (o - 1u < (unsigned)dmm_evolved_count())
        free_block(c, (int)o - 1, p);
    else if (o == DMM_OWNER_LARGE)
        free_class(c, -1, p);
    else
        dmm_shim_free_other(p);
}

/* Block p of allocator i, which the page map found: into the thread's
 * cache if it fits, else to its allocator.  Called with i a constant (each
 * case of dmm_backend_free_any's switch), so that what codegen knows of
 * allocator i folds: how its blocks are sized (the block's header word,
 * when its class keeps the size there: hdr_usable), whether a block can
 * be larger than the cache's max= at all (dmm_evolved_usable_max: sss's
 * classes, python3's sss up to 127 bytes under max=1024, cannot), and its
 * one-thread common case.  A block that its cache bin has no room for goes
 * the one-thread way too, as a block above max= does: perl deleting
 * 100 000 hash entries fills every bin (callgrind, perl on its own design:
 * 53 instructions a free through the locked way, 25 this way). */
static inline __attribute__((always_inline)) void free_in(int i, void *p)
{
    if (dmm_evolved_cache_max() && (dmm_evolved_hdr_usable(i) || dmm_evolved_usable_nolock(i))) {
        size_t u = dmm_evolved_hdr_usable(i) ? dmm_hdr_usable(p)
                                             : dmm_evolved_class_usable(dmm_shim_chain, i, p);
        int fits = dmm_evolved_usable_max(i) <= dmm_evolved_cache_max() ||
                   u <= dmm_evolved_cache_max();
        if (__builtin_expect(fits, 1) &&
            dmm_cache_push(&dmm_chain_thread_cache, dmm_cache_bin_for_block(u), p,
                           dmm_evolved_cache_count()))
            return;
        /* a full bin, or a block above max=: one thread, a registered
         * cache (else free_block's push registers it), no lock */
        if (dmm_evolved_has_fast() && __libc_single_threaded &&
            (dmm_chain_thread_cache.registered || !fits) &&
            dmm_evolved_class_free_fast(dmm_shim_chain, i, p))
            return;
        free_refused(i, p, u);
        return;
    }
    /* one thread: no lock to take (as class_fast_malloc) */
    if (dmm_evolved_has_fast() && __libc_single_threaded &&
        dmm_evolved_class_free_fast(dmm_shim_chain, i, p))
        return;
    free_block(dmm_shim_chain, i, p);
}

/* inline, with every path but a cache push and a class's one-thread
 * common case (sss: a list push) a tail call: link-time optimisation puts
 * it into free, which then needs no stack frame for either (backend.h
 * declares it, so this is still the function's one external definition).
 * One page-map look-up, in the newest arena, finds the owner, and a switch
 * on it free_in() for that allocator, whose tests fold (callgrind,
 * work_pairs -s 28 on python3's design: 40 instructions a free to the
 * cache with one free_in for every allocator, 30 this way); the cases past
 * the chain's allocators fold away. */
inline void dmm_backend_free_any(void *p)
{
    const dmm_arena_t *a = dmm_shim_free_arena();
    uintptr_t off = (uintptr_t)p - a->base;
    if (__builtin_expect(off >= __atomic_load_n(&a->used, __ATOMIC_ACQUIRE), 0)) {
        if (p)   /* free(NULL) does nothing, in every state: no look-ups for it
                  * (cc1plus makes 261 k of its 1.6 M frees so: 54 instructions
                  * each through the slow way) */
            free_elsewhere(p);
        return;
    }
    unsigned i = __atomic_load_n(&a->map, __ATOMIC_RELAXED)[off / DMM_PAGE] - 1u;
    /* the first allocator, the smallest sizes, tested first: most programs
     * free those most (with more than four cases the switch is a jump
     * table, which would leave them no faster than the rest) */
    if (__builtin_expect(i == 0, 1)) {
        free_in(0, p);
        return;
    }
    switch (i) {
#define FREE_IN(k)                            \
    case k:                                   \
        if (k < dmm_evolved_count()) {        \
            free_in(k, p);                    \
            return;                           \
        }                                     \
        break;
#define FREE_IN8(k) FREE_IN(k) FREE_IN(k + 1) FREE_IN(k + 2) FREE_IN(k + 3) \
    FREE_IN(k + 4) FREE_IN(k + 5) FREE_IN(k + 6) FREE_IN(k + 7)
    FREE_IN8(0) FREE_IN8(8) FREE_IN8(16) FREE_IN8(24)   /* 0: folds away */
#undef FREE_IN8
#undef FREE_IN
    default:
        break;
    }
    free_elsewhere(p);
}

_Static_assert(DMM_DESC_MAX == 32, "dmm_backend_free_any has a case for each allocator");

void dmm_backend_free(dmm_chain_t *c, void *p)
{
    unsigned o = dmm_pagesrc_owner(&c->ps, p);
    if (o - 1u < (unsigned)dmm_evolved_count())
        free_block(c, (int)o - 1, p);
    else
        free_class(c, -1, p);   /* ours, so the fallback path's */
}

/* dmm_chain_realloc's decisions -- in place when p's allocator serves n
 * and its resize() agrees, else a new block, the bytes copied, p freed --
 * with this library's malloc and free (their cache and one-thread paths)
 * and the allocator's calls by name.  The fallback path's blocks and
 * realloc(p, 0) are the chain's. */
void *dmm_backend_realloc(dmm_chain_t *c, void *p, size_t n)
{
    size_t old = 0;
    if (p) {
        unsigned i = dmm_pagesrc_owner(&c->ps, p) - 1u;
        if (n == 0 || i >= (unsigned)dmm_evolved_count())
            return dmm_chain_realloc(c, p, n);
        dmm_spin_lock_mt(&c->locks[i]);
        old = dmm_evolved_class_usable(c, (int)i, p);
        int done = dmm_evolved_pick(n) == (int)i &&
                   dmm_evolved_class_resize(c, (int)i, p, n) == 0;
        if (done)
            c->alloc[i].served++;
        dmm_spin_unlock_mt(&c->locks[i]);
        if (done)
            return p;
    }
    void *q = p && dmm_chain_grows_large(old, n) ? dmm_chain_large_room(c, n) : NULL;
    if (!q && !(q = dmm_backend_malloc_fast(n)) && !(q = dmm_backend_malloc_miss(c, n)))
        return NULL;
    if (p) {
        memcpy(q, p, old < n ? old : n);
        dmm_backend_free_any(p);
    }
    return q;
}

/* dmm_chain_calloc's decisions -- the fallback path's calloc for a request
 * that neither the cache nor a class serves (it leaves pages that read as
 * zero unwritten), else the chain's malloc and the bytes cleared -- with
 * this library's malloc (its cache and one-thread paths: python3's 121 k
 * callocs took 101 instructions each through the chain's). */
void *dmm_backend_calloc(dmm_chain_t *c, size_t nmemb, size_t size)
{
    size_t n;
    if (__builtin_mul_overflow(nmemb, size, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    if (n && !(dmm_evolved_cache_max() && n <= dmm_evolved_cache_max()) &&
        dmm_evolved_pick(n) < 0)
        return dmm_chain_calloc(c, nmemb, size);
    void *p = dmm_backend_malloc_fast(n);
    if (!p && !(p = dmm_backend_malloc_miss(c, n)))
        return NULL;
    return memset(p, 0, n);
}

void dmm_backend_class_free(dmm_chain_t *c, int i, void *p)
{
    dmm_evolved_class_free(c, i, p);
}

int dmm_backend_stats(const dmm_chain_t *c, char *buf, size_t len)
{
    return snprintf(buf, len,
                    "dmm: %s\n"
                    "dmm: libdmm_evolved.so (no cost counters); footprint %zu bytes now, "
                    "%zu at peak; %llu page-source calls; fallback %llu\n",
                    c->desc.title[0] ? c->desc.title : "dmm 1", c->ps.footprint, c->ps.peak,
                    (unsigned long long)c->ps.calls, (unsigned long long)c->large_served);
}
