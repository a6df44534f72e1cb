/* resident.c - the resident bytes of a block of glibc's (resident.h). */
#include "preload/recorder/resident.h"

#include "tracer/base/spinlock.h"
#include "tracer/base/sys.h"

#define PAGE   4096u
#define CHUNKS 512u   /* pages asked about per mincore call */

/* glibc's usable size of block p. */
static size_t usable_of(const void *p)
{
    size_t head = ((const size_t *)p)[-1];
    /* glibc: a mapped chunk's header is 16 bytes, a heap chunk's 8 (the
     * next chunk's first word is the block's last) */
    return (head & ~(size_t)7) - ((head & 2) ? 16 : 8);
}

/* The resident bytes of [p, p + usable), or -1 when mincore refuses (the
 * range is not mapped). */
static int64_t resident_at(const void *p, size_t usable)
{
    uintptr_t start = (uintptr_t)p & ~(uintptr_t)(PAGE - 1);
    uintptr_t end = ((uintptr_t)p + usable + PAGE - 1) & ~(uintptr_t)(PAGE - 1);
    unsigned char vec[CHUNKS];
    uint64_t pages = 0;
    for (uintptr_t a = start; a < end; a += (uintptr_t)CHUNKS * PAGE) {
        size_t len = end - a < (uintptr_t)CHUNKS * PAGE ? end - a : (size_t)CHUNKS * PAGE;
        if (DMM_SYS(SYS_mincore, a, len, vec) != 0)
            return -1;
        for (size_t i = 0; i < (len + PAGE - 1) / PAGE; i++)
            pages += vec[i] & 1u;
    }
    uint64_t bytes = pages * PAGE;
    return (int64_t)(bytes < usable ? bytes : usable);
}

uint64_t dmm_resident_bytes(const void *p)
{
    size_t usable = usable_of(p);
    int64_t r = resident_at(p, usable);
    return r < 0 ? usable : (uint64_t)r;   /* cannot tell: as if all of it */
}

static const void *g_live[DMM_RESIDENT_LIVE];
static size_t      g_usable[DMM_RESIDENT_LIVE];   /* read when listed: at the end the
                                                     block may be gone unsaid */
static unsigned    g_nlive;
static int         g_lock;

/* p's place in the list, or g_nlive; under the lock. */
static unsigned find(const void *p)
{
    unsigned i = 0;
    while (i < g_nlive && g_live[i] != p)
        i++;
    return i;
}

/* g_nlive is written under the lock, and read without it (an atomic load)
 * where an empty list lets a call skip the lock. */
static void drop(unsigned i)
{
    unsigned n = g_nlive - 1;
    g_live[i] = g_live[n];
    g_usable[i] = g_usable[n];
    __atomic_store_n(&g_nlive, n, __ATOMIC_RELAXED);
}

void dmm_resident_update(const void *p)
{
    if (!p)
        return;
    int mapped = dmm_resident_mapped(p);
    if (!mapped && !__atomic_load_n(&g_nlive, __ATOMIC_RELAXED))
        return;   /* nothing listed: nothing to take off */
    dmm_spin_lock(&g_lock);
    unsigned i = find(p);
    if (mapped && i == g_nlive && g_nlive < DMM_RESIDENT_LIVE) {
        g_live[g_nlive] = p;
        g_usable[g_nlive] = usable_of(p);
        __atomic_store_n(&g_nlive, g_nlive + 1, __ATOMIC_RELAXED);
    } else if (mapped && i < g_nlive) {
        g_usable[i] = usable_of(p);
    } else if (!mapped && i < g_nlive)
        drop(i);
    dmm_spin_unlock(&g_lock);
}

void dmm_resident_forget(const void *p)
{
    if (!__atomic_load_n(&g_nlive, __ATOMIC_RELAXED))
        return;
    dmm_spin_lock(&g_lock);
    unsigned i = find(p);
    if (i < g_nlive)
        drop(i);
    dmm_spin_unlock(&g_lock);
}

void dmm_resident_each(void (*fn)(const void *p, uint64_t bytes, void *ctx), void *ctx)
{
    dmm_spin_lock(&g_lock);
    for (unsigned i = 0; i < g_nlive; i++) {
        int64_t r = resident_at(g_live[i], g_usable[i]);
        if (r >= 0)   /* else freed unseen (while the tracer was off) and unmapped */
            fn(g_live[i], (uint64_t)r, ctx);
    }
    dmm_spin_unlock(&g_lock);
}

void dmm_resident_atfork_child(void)
{
    g_lock = 0;
}
