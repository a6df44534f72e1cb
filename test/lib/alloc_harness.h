/* alloc_harness.h - one allocator class driven directly, as the chain would
 * (its own page source and cost counters, owner 1), for the class tests.
 * Header-only; a test includes it once. */
#ifndef DMM_TEST_ALLOC_HARNESS_H
#define DMM_TEST_ALLOC_HARNESS_H

#include <criterion/criterion.h>

#include <stdlib.h>

#include "allocators/core/alloc.h"

typedef struct harness {
    dmm_pagesrc_t *ps;
    dmm_cost_t     cost;
    dmm_alloc_t    a;
} harness_t;

/* Class ops with description d, on a page source of mode (DMM_PS_SIM or
 * DMM_PS_REAL), initialised. */
static inline harness_t *harness_new(const dmm_class_ops_t *ops, dmm_alloc_desc_t d, int mode)
{
    harness_t *h = calloc(1, sizeof *h);
    cr_assert(h);
    h->ps = malloc(sizeof *h->ps);
    cr_assert(h->ps);
    cr_assert_eq(dmm_pagesrc_init(h->ps, mode), 0);
    h->a.ops = ops;
    h->a.desc = d;
    h->a.owner = 1;
    h->a.ps = h->ps;
    h->a.cost = &h->cost;
    h->a.state = h->a.state_area;
    cr_assert_eq(h->a.ops->init(&h->a), 0, "init %s", ops->name);
    return h;
}

static inline void harness_free(harness_t *h)
{
    h->a.ops->destroy(&h->a);
    dmm_pagesrc_fini(h->ps);
    free(h->ps);
    free(h);
}

#endif
