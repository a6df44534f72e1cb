/* cache.h - the block cache a chain may keep in front of its allocators
 * (the .dmm line `cache max=M count=K`, desc.h).
 *
 * A freed block whose usable size u is at most M bytes is not given back to
 * its allocator but pushed on bin u / 8 (a LIFO stack linked through the
 * block's first word), while that bin holds fewer than K blocks; a request
 * of n <= M bytes pops bin ceil(n / 8), whose blocks all have at least n
 * usable bytes, or when it is empty the next bin (classes that round sizes
 * to 16 bytes leave every other bin empty), before it calls any allocator.  To its allocator a cached
 * block is still allocated: it is not coalesced, split or reused by other
 * sizes until it leaves the cache, which the search weighs (T falls, M may
 * grow).
 *
 * The simulator and libdmm.so's other chains keep one cache in the chain;
 * the preload libraries' chain keeps one per thread (dmm_chain_cache_per_thread,
 * chain.h), so that a hit takes no lock: a block freed in another thread
 * goes to that thread's cache, and a thread's cache goes back to the
 * allocators when the thread exits.  The same push and pop run in all
 * three, so a simulated cache holds exactly the blocks the library's would
 * in a single-threaded program. */
#ifndef DMM_CHAIN_CACHE_H
#define DMM_CHAIN_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "allocators/chain/desc.h"

/* Bins 0 .. max/8 hold blocks; a pop looks at the bin after its own too,
 * and the evolved library's (backend_evolved.c, cache_pop) may start one
 * beyond max/8 (an odd bin, where max/8 is even): both always empty. */
#define DMM_CACHE_BINS (DMM_DESC_CACHE_MAX / 8 + 3)
/* A bin count that refuses every push (above any count= a .dmm allows): a
 * thread's bins start so, until its first push's slow path registers it
 * for the give-back at exit and opens them, and end so when it exits and
 * has given its cache back. */
#define DMM_CACHE_CLOSED 0xffffu
_Static_assert(DMM_DESC_CACHE_COUNT < DMM_CACHE_CLOSED, "a closed bin refuses every push");

typedef struct dmm_cache {
    void    *head[DMM_CACHE_BINS];
    uint16_t count[DMM_CACHE_BINS];
    int      registered;   /* per-thread: given back at thread exit */
} dmm_cache_t;

/* The bin a request of n bytes (n <= DMM_DESC_CACHE_MAX) pops (n = 0:
 * bin 0, which only a block of fewer than 8 usable bytes would be on, then
 * bin 1). */
static inline size_t dmm_cache_bin_for_request(size_t n)
{
    return (n + 7) >> 3;
}

/* The bin a block of u usable bytes (u <= DMM_DESC_CACHE_MAX) is pushed on. */
static inline size_t dmm_cache_bin_for_block(size_t u)
{
    return u >> 3;
}

/* A block of bin b, or else of bin b + 1; NULL when both are empty. */
static inline void *dmm_cache_pop(dmm_cache_t *k, size_t b)
{
    void *p = k->head[b];
    if (__builtin_expect(!p, 0) && !(p = k->head[++b]))
        return NULL;
    k->head[b] = *(void **)p;
    k->count[b]--;
    return p;
}

/* Push p on bin b if it holds fewer than limit blocks: 1, else 0. */
static inline int dmm_cache_push(dmm_cache_t *k, size_t b, void *p, unsigned limit)
{
    if (k->count[b] >= limit)
        return 0;
    *(void **)p = k->head[b];
    k->head[b] = p;
    k->count[b]++;
    return 1;
}

#endif
