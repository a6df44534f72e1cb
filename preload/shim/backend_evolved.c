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
 *   called through its class's ops by name (dmm_evolved.h).
 * Everything else (calloc, realloc, the aligned calls, the fallback path,
 * fork, DMM_STATS, DMM_CHECK, DMM_OFFLOAD) is the chain's and the shim's;
 * DMM_CHECK's blocks also come from dmm_backend_malloc and go back through
 * dmm_backend_free.  The allocator classes are compiled with DMM_COUNT=0:
 * no cost counting. */
#include "preload/shim/backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
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
 * and the chain's calloc, realloc and fallback path exclude these calls. */
void *dmm_backend_malloc(dmm_chain_t *c, size_t n)
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

/* inline: a hint that lets link-time optimisation put this, and the class
 * call in it, into free (backend.h declares it, so this is still the
 * function's one external definition). */
inline void dmm_backend_free(dmm_chain_t *c, void *p)
{
    unsigned o = dmm_pagesrc_owner(&c->ps, p);
    if (__builtin_expect(o < 1 || o > (unsigned)dmm_evolved_description()->n, 0)) {
        dmm_chain_free(c, p);            /* the fallback path */
        return;
    }
    int i = (int)o - 1;
    dmm_spin_lock_mt(&c->locks[i]);
    dmm_evolved_class_free(c, i, p);
    dmm_spin_unlock_mt(&c->locks[i]);
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
