/* evolved_shim.c - the malloc family of libdmm_evolved.so: a program on the
 * DMM that `make evolve` made for it.
 *
 *   LD_PRELOAD=build/libdmm_evolved.so ./app
 *
 * The same shim as libdmm.so (dmm_shim.c, included below with DMM_EVOLVED),
 * with two differences:
 * - the chain's description is the constant dmm_evolved_desc that
 *   `dmm codegen` wrote into dmm_evolved.c (found on the include path);
 *   DMM_CONFIG is not read (a one-line notice says so if it is set);
 * - malloc and free skip the chain's generic dispatch: the allocator is
 *   picked by dmm_evolved_which(), whose range bounds are constants, and
 *   called through its class's ops by name, which -flto makes direct calls.
 * Everything else (calloc, realloc, the aligned variants, the fallback
 * path, fork handling, DMM_STATS, DMM_CHECK) is the chain's and
 * dmm_shim.c's code; DMM_CHECK's blocks also come from shim_malloc and go
 * back through shim_free.
 * The allocator classes are compiled with DMM_COUNT=0: no cost counting. */
#include "dmm_evolved.c"

#include <errno.h>
#include <sched.h>

#include "allocators/chain/chain.h"

extern char __libc_single_threaded;

/* The chain's per-allocator locks, the words chain.c takes (skipped while
 * the process is single-threaded); dmm_chain_lock_all() holds the same
 * words across fork.  A busy lock is waited for yielding at once, as
 * chain.c does: spinning first (1024 pauses, about 27 us) measured worse on
 * this 2-core machine, where the holder is often preempted: work_media -t 4
 * 0.70 s against 0.29, -t 2 0.14 against 0.11 (medians of 8 interleaved
 * runs), and no better for DMM_OFFLOAD's python3 run (0.63 against 0.65). */
static void evolved_wait(int *l)
{
    while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(l, __ATOMIC_RELAXED))
            sched_yield();
}

static inline void evolved_lock(int *l)
{
    if (__libc_single_threaded)
        return;
    if (__builtin_expect(__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE), 0))
        evolved_wait(l);
}

static inline void evolved_unlock(int *l)
{
    if (__libc_single_threaded)
        *l = 0;
    else
        __atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

static inline void *shim_malloc(dmm_chain_t *c, size_t n)
{
    if (n == 0)
        n = 1;
    int i = dmm_evolved_which(n);
    if (__builtin_expect(i < 0, 0))
        return dmm_chain_malloc(c, n);   /* the fallback path */
    evolved_lock(&c->locks[i]);
    void *p = dmm_evolved_class_malloc(c, i, n);
    if (p)
        c->alloc[i].served++;
    evolved_unlock(&c->locks[i]);
    if (!p)
        errno = ENOMEM;
    return p;
}

/* p is a block of the chain (the shim checked). */
static inline void shim_free(dmm_chain_t *c, void *p)
{
    unsigned o = dmm_pagesrc_owner(&c->ps, p);
    if (__builtin_expect(o < 1 || o > (unsigned)dmm_evolved_desc.n, 0)) {
        dmm_chain_free(c, p);            /* the fallback path */
        return;
    }
    int i = (int)o - 1;
    evolved_lock(&c->locks[i]);
    dmm_evolved_class_free(c, i, p);
    evolved_unlock(&c->locks[i]);
}

/* Allocator i's free, its lock held by the caller (the DMM_OFFLOAD
 * helper). */
static inline void shim_class_free(dmm_chain_t *c, int i, void *p)
{
    dmm_evolved_class_free(c, i, p);
}

#define DMM_EVOLVED 1
#include "dmm_shim.c"
