/* backend_chain.c - libdmm.so's back end (backend.h): any chain, named by
 * DMM_CONFIG at the start, called through the chain's generic dispatch. */
#include "preload/shim/backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "preload/shim/shim.h"

const char dmm_backend_lib[] = "libdmm.so";

const dmm_desc_t *dmm_backend_desc(int check)
{
    const char *cfg = environ ? secure_getenv("DMM_CONFIG") : NULL;
    if (!cfg || !*cfg)
        cfg = "lea";
    static dmm_desc_t d;
    dmm_err_t err;
    if (dmm_desc_load(cfg, &d, &err) != 0) {
        dmm_shim_say(err.msg, "; DMM_CONFIG ignored, using glibc malloc");
        if (check)
            dmm_shim_say("DMM_CHECK ignored: ", "it checks libdmm.so's chain, not glibc's malloc");
        return NULL;
    }
    return &d;
}

void *dmm_backend_malloc(dmm_chain_t *c, size_t n)
{
    return dmm_chain_malloc(c, n);
}

/* libdmm.so's chain keeps its thread caches itself (dmm_chain_malloc). */
void *dmm_backend_malloc_fast(size_t n)
{
    (void)n;
    return NULL;
}

void *dmm_backend_malloc_miss(dmm_chain_t *c, size_t n)
{
    return dmm_chain_malloc(c, n);
}

void dmm_backend_free(dmm_chain_t *c, void *p)
{
    dmm_chain_free(c, p);
}

void *dmm_backend_calloc(dmm_chain_t *c, size_t nmemb, size_t size)
{
    return dmm_chain_calloc(c, nmemb, size);
}

void *dmm_backend_realloc(dmm_chain_t *c, void *p, size_t n)
{
    return dmm_chain_realloc(c, p, n);
}

void dmm_backend_free_any(void *p)
{
    dmm_chain_t *c = dmm_shim_free_chain();
    if (!c || !dmm_chain_owns(c, p)) {
        dmm_shim_free_other(p);
        return;
    }
    int e = errno;
    dmm_chain_free(c, p);
    errno = e;
}

/* What dmm_chain_free does inside the allocator's lock. */
void dmm_backend_class_free(dmm_chain_t *c, int i, void *p)
{
    DMM_COST(&c->cost, ops, 1);
    c->alloc[i].ops->free(&c->alloc[i], p);
}

int dmm_backend_stats(const dmm_chain_t *c, char *buf, size_t len)
{
    return snprintf(buf, len,
                    "dmm: %s\n"
                    "dmm: T %llu cost units; footprint %zu bytes now, %zu at peak; "
                    "%llu page-source calls\n"
                    "dmm: ops %llu, nodes %llu, header reads %llu, writes %llu, "
                    "splits %llu, coalesces %llu, realloc copies %llu bytes, fallback %llu\n",
                    c->desc.title[0] ? c->desc.title : "dmm 1",
                    (unsigned long long)dmm_cost_units(&c->cost), c->ps.footprint, c->ps.peak,
                    (unsigned long long)c->ps.calls, (unsigned long long)c->cost.ops,
                    (unsigned long long)c->cost.nodes, (unsigned long long)c->cost.hdr_reads,
                    (unsigned long long)c->cost.hdr_writes, (unsigned long long)c->cost.splits,
                    (unsigned long long)c->cost.coalesces, (unsigned long long)c->cost.copied,
                    (unsigned long long)c->large_served);
}
