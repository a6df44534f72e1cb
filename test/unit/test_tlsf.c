/* test_tlsf.c - two-level segregated fit (allocators/classes/tlsf.c): the
 * work of every malloc and free is bounded whatever the heap holds (the
 * list nodes, bitmap words and class look-ups each call counts, against
 * segregated lists that walk); a block is never more than a sixteenth
 * larger than its request unless it was split from a larger one; check()
 * after every operation of a random stress, on real memory, payloads
 * intact; the .dmm options mean nothing to it. */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "allocators/classes/registry.h"
#include "allocators/core/alloc.h"
#include "test/lib/alloc_harness.h"

static harness_t *h_new(const dmm_class_ops_t *ops, dmm_class_t cls, int mode, int fit)
{
    return harness_new(ops,
                       (dmm_alloc_desc_t){ .cls = cls, .lo = 0, .hi = DMM_SIZE_INF, .split = 1,
                                           .coalesce = 1, .list = DMM_LIST_DLL,
                                           .fit = (uint8_t)fit, .order = DMM_ORDER_LIFO,
                                           .lists = 10 },
                       mode);
}

static uint64_t work(const dmm_cost_t *c)
{
    return c->nodes + c->lookups;
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The largest work of one call over a stress that leaves many free blocks
 * of scattered sizes behind (frees of every other block). */
static uint64_t worst_call(harness_t *h, int check_every)
{
    enum { N = 6000 };
    static void *held[N];
    static size_t held_n[N];
    memset(held, 0, sizeof held);
    uint64_t seed = 88172645463325252ull, worst = 0;
    for (int op = 0; op < 60000; op++) {
        size_t i = rnd(&seed) % N;
        uint64_t before = work(&h->cost);
        if (held[i]) {
            unsigned char *p = held[i];
            for (size_t k = 0; h->ps->mode == DMM_PS_REAL && k < held_n[i] && k < 64; k++)
                cr_assert_eq(p[k], (unsigned char)i, "op %d: block %zu overwritten", op, i);
            h->a.ops->free(&h->a, held[i]);
            held[i] = NULL;
        } else {
            uint64_t r = rnd(&seed);
            size_t n = r % 8 == 0 ? 1 + r % 60000 : 1 + r % 700;
            held[i] = h->a.ops->malloc(&h->a, n);
            cr_assert_not_null(held[i], "malloc(%zu)", n);
            cr_assert_geq(h->a.ops->usable(&h->a, held[i]), n);
            if (h->ps->mode == DMM_PS_REAL)
                memset(held[i], (int)(i & 0xff), n < 64 ? n : 64);
            held_n[i] = n;
        }
        uint64_t d = work(&h->cost) - before;
        worst = d > worst ? d : worst;
        if (check_every && op % check_every == 0)
            cr_assert_eq(h->a.ops->check(&h->a), 0, "op %d", op);
    }
    for (size_t i = 0; i < N; i++)
        if (held[i])
            h->a.ops->free(&h->a, held[i]);
    cr_assert_eq(h->a.ops->check(&h->a), 0);
    return worst;
}

Test(tlsf, every_call_does_bounded_work)
{
    harness_t *t = h_new(&dmm_class_tlsf, DMM_CLASS_TLSF, DMM_PS_SIM, DMM_FIT_FIRST);
    uint64_t wt = worst_call(t, 0);
    harness_free(t);
    /* a class look-up or two per block touched (the block, its two
     * neighbours, the split rest), a node per list change, and the bitmap
     * words between two lists: 386 lists are 7 words */
    cr_assert_leq(wt, 24, "TLSF's worst call did %llu units of work", (unsigned long long)wt);
    harness_t *s = h_new(&dmm_class_segregated, DMM_CLASS_SEGREGATED, DMM_PS_SIM, DMM_FIT_BEST);
    uint64_t ws = worst_call(s, 0);
    harness_free(s);
    cr_assert_gt(ws, 10 * wt, "segregated best fit walks its lists: %llu against TLSF's %llu",
                 (unsigned long long)ws, (unsigned long long)wt);
}

Test(tlsf, stress_on_real_memory_with_check_after_every_operation)
{
    harness_t *t = h_new(&dmm_class_tlsf, DMM_CLASS_TLSF, DMM_PS_REAL, DMM_FIT_FIRST);
    worst_call(t, 1);
    harness_free(t);
}

/* Good fit: a request takes a block of its own class's lower bound or
 * more, never more than a sixteenth (and the 16-byte rounding) above the
 * request, when no larger block had to be split. */
Test(tlsf, a_block_from_its_list_is_at_most_a_sixteenth_larger)
{
    harness_t *t = h_new(&dmm_class_tlsf, DMM_CLASS_TLSF, DMM_PS_REAL, DMM_FIT_FIRST);
    static void *p[4000];
    /* blocks of every size up to 40000, freed between guards so that they
     * stay apart and listed */
    for (size_t i = 0; i < 4000; i++)
        p[i] = t->a.ops->malloc(&t->a, i % 2 ? 16 : 256 + i * 10);
    for (size_t i = 0; i < 4000; i += 2)
        t->a.ops->free(&t->a, p[i]);
    for (size_t n = 300; n < 40000; n += 97) {
        void *q = t->a.ops->malloc(&t->a, n);
        size_t u = t->a.ops->usable(&t->a, q);
        cr_assert_geq(u, n);
        cr_assert_leq(u, n + n / 16 + 32 + 48, "malloc(%zu) got %zu usable bytes", n, u);
        t->a.ops->free(&t->a, q);
    }
    cr_assert_eq(t->a.ops->check(&t->a), 0);
    harness_free(t);
}
