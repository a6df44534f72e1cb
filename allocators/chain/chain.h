/* chain.h - a DMM: an ordered chain of allocators, each serving the request
 * sizes of its range (paper Table 1), over one page source.
 *
 * free() and realloc() find a block's allocator in O(1) from the page map.
 * Requests outside every range, and alignments above 16 bytes, take the
 * fallback path: a chunk of their own from the page source with a 16-byte
 * header before the block (DMM_OWNER_LARGE), and so does a block that
 * realloc moves to make it large, with room to grow (DMM_LARGE_ROOM_TIMES).
 * malloc(0) is malloc(1).
 *
 * The same code runs the simulator (DMM_PS_SIM: payloads never touched;
 * calloc does not clear and realloc does not copy, it only counts) and the
 * preload libraries (DMM_PS_REAL).  Calls lock the allocator they use,
 * except while the process is single-threaded.  A description's cache line
 * puts a block cache in front of the allocators (cache.h). */
#ifndef DMM_CHAIN_H
#define DMM_CHAIN_H

/* A large block of at least this many bytes that realloc grows, and that
 * stays on the fallback path, moves its pages to the new chunk
 * (dmm_pagesrc_move: mremap) instead of copying its bytes, as glibc does
 * for its mmapped chunks (its mmap threshold is 128 KiB too). */
#define DMM_LARGE_MOVE_MIN ((size_t)128 << 10)
/* A block that realloc must move to make it larger, to at least
 * DMM_LARGE_MOVE_MIN bytes, moves to the fallback path with room to grow
 * (dmm_pagesrc_get_room): DMM_LARGE_ROOM_TIMES its length in all, at least
 * DMM_LARGE_ROOM_MIN after it.  Growing again, it stays where it is
 * (dmm_pagesrc_extend) and no realloc copies it while its room lasts: a
 * vector grown step by step is copied once, at its move, not at every
 * size-class boundary (a 500 KB copy is a realloc's costliest call).  The
 * room is address space only: not held, not counted in the footprint.  A
 * chain in huge pages gives no room (the extents a room lies in would be
 * held whole): its blocks move as any other. */
#define DMM_LARGE_ROOM_TIMES 8
#define DMM_LARGE_ROOM_MIN ((size_t)1 << 20)

#include <stddef.h>
#include <stdint.h>

#include "allocators/core/alloc.h"
#include "allocators/chain/cache.h"
#include "allocators/chain/desc.h"
#include "tracer/base/err.h"
#include "allocators/core/pagesrc.h"

/* Aligned requests whose slot (the block and a 16-byte header, rounded
 * up to the alignment) takes at most this many bytes share slabs. */
#define DMM_SLAB_SLOT_MAX 4096u

typedef struct dmm_chain {
    dmm_pagesrc_t ps;
    dmm_desc_t    desc;
    int           mode;
    int           n;
    dmm_alloc_t   alloc[DMM_DESC_MAX];
    int           locks[DMM_DESC_MAX];
    dmm_cost_t    cost;
    uint64_t      large_served;  /* requests that took the fallback path */
    int           cache_tls;     /* the cache is per thread (dmm_chain_thread_cache) */
    int           cache_lock;    /* else it is cache, under this lock */
    dmm_cache_t   cache;
    /* small blocks aligned past 16 bytes: the fallback path's slabs with a
     * free slot, one list per slot size (chain.c), under slab_lock */
    struct dmm_slab *slabs[DMM_SLAB_SLOT_MAX / 32];
    int           slab_lock;
} dmm_chain_t;

/* The calling thread's block cache, for the one chain that keeps its cache
 * per thread. */
extern __thread dmm_cache_t dmm_chain_thread_cache __attribute__((tls_model("initial-exec")));

/* A chain for description d (mapped from the OS, never malloc).  NULL with
 * err set ("allocator N (class): why") when a class cannot be set up.  A
 * DMM_PS_REAL chain may be called from any thread; a DMM_PS_SIM one (a
 * simulation) by one thread at a time: it takes no locks. */
dmm_chain_t *dmm_chain_new(const dmm_desc_t *d, int mode, dmm_err_t *err);
/* Give everything back. */
void dmm_chain_delete(dmm_chain_t *c);

void  *dmm_chain_malloc(dmm_chain_t *c, size_t n);
void  *dmm_chain_calloc(dmm_chain_t *c, size_t nmemb, size_t size);
void  *dmm_chain_realloc(dmm_chain_t *c, void *p, size_t n);
/* Where realloc moves a block of old usable bytes that must grow to n: on
 * the fallback path with room (dmm_chain_large_room), or wherever malloc
 * puts n bytes. */
static inline int dmm_chain_grows_large(size_t old, size_t n)
{
    return n > old && n >= DMM_LARGE_MOVE_MIN;
}
/* A block of n bytes on the fallback path, with room to grow in place;
 * NULL, errno unchanged, when no arena has the address space (the caller
 * then takes a block as malloc would). */
void  *dmm_chain_large_room(dmm_chain_t *c, size_t n);
/* align a power of two (callers check POSIX's rules); NULL + ENOMEM. */
void  *dmm_chain_memalign(dmm_chain_t *c, size_t align, size_t n);
void   dmm_chain_free(dmm_chain_t *c, void *p);
size_t dmm_chain_usable(dmm_chain_t *c, const void *p);
/* Is p a block of this chain?  (any address: 1 or 0) */
int    dmm_chain_owns(const dmm_chain_t *c, const void *p);
/* The index of the allocator that serves requests of n bytes, or -1 for the
 * fallback path. */
int    dmm_chain_which(const dmm_chain_t *c, size_t n);
/* Violations found by every allocator's check(). */
size_t dmm_chain_check(dmm_chain_t *c);
/* Keep c's block cache (if its description has one) per thread from now on,
 * each thread's given back to the allocators when the thread exits: what
 * the preload libraries do, before the chain serves any block.  One chain
 * per process may: 0, or -1 (another one does; c keeps one cache). */
int    dmm_chain_cache_per_thread(dmm_chain_t *c);
/* Give the blocks of c's cache (the calling thread's, when per thread) back
 * to their allocators. */
void   dmm_chain_cache_flush(dmm_chain_t *c);
/* The calling thread's cache, ready to push on: set up to be given back
 * at thread exit on the first call (the slow path of a push); its bins
 * stay closed (every push refused) unless a chain keeps its cache per
 * thread. */
void   dmm_chain_cache_register(void);
static inline int dmm_chain_cache_push_thread(void *p, size_t bin, unsigned limit)
{
    dmm_cache_t *k = &dmm_chain_thread_cache;
    if (__builtin_expect(!k->registered, 0))
        dmm_chain_cache_register();
    return dmm_cache_push(k, bin, p, limit);
}
/* Take / release every lock of the chain (fork: prepare, then parent and
 * child). */
void   dmm_chain_lock_all(dmm_chain_t *c);
void   dmm_chain_unlock_all(dmm_chain_t *c);

/* A pooled chain (REAL) keeps every page it uses populated: the pool (see
 * dmm_pagesrc_pool_populate) and the chain's own, its allocators' states
 * and the page source's tables, which its calls would otherwise touch first
 * one by one, and the calling thread's block cache; each page also written
 * once from user space (see pagesrc.c on why).  dmm_chain_new does it; a
 * forked child calls it again (its pages are its parent's until written).
 * Only while no other thread can use the chain.  Nothing without a pool. */
void   dmm_chain_populate(dmm_chain_t *c);

#endif
