/* test_lea.c - the "lea" allocator class: alignment and ownership of every
 * size, a long random stress with payload patterns and check() after the
 * operations, coalescing, best fit, the large-object path, in-place resize,
 * trimming, a bounded steady-state footprint, FIFO/LIFO order, and check()
 * catching a corrupted header. */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "allocators/core/alloc.h"
#include "allocators/classes/registry.h"

/* ---- harness ---- */

static dmm_pagesrc_t *ps;
static dmm_alloc_t *A;
static dmm_cost_t cost;

static void setup_opts(int mode, int order)
{
    ps = malloc(sizeof *ps);
    cr_assert_not_null(ps);
    cr_assert_eq(dmm_pagesrc_init(ps, mode), 0);
    A = calloc(1, sizeof *A);
    cr_assert_not_null(A);
    memset(&cost, 0, sizeof cost);
    A->ops = &dmm_class_lea;
    A->desc = (dmm_alloc_desc_t){ .cls = DMM_CLASS_LEA, .lo = 0, .hi = SIZE_MAX, .split = 1,
                                  .coalesce = 1, .list = DMM_LIST_DLL, .fit = DMM_FIT_BEST,
                                  .order = (uint8_t)order };
    A->owner = 1;
    A->ps = ps;
    A->cost = &cost;
    cr_assert_eq(A->ops->init(A), 0);
}

static void setup_real(void) { setup_opts(DMM_PS_REAL, DMM_ORDER_FIFO); }

static void teardown(void)
{
    if (A) {
        A->ops->destroy(A);
        free(A);
        A = NULL;
    }
    if (ps) {
        dmm_pagesrc_fini(ps);
        free(ps);
        ps = NULL;
    }
}

static void *M(size_t n)
{
    void *p = A->ops->malloc(A, n);
    cr_assert_not_null(p, "malloc(%zu)", n);
    cr_assert_eq((uintptr_t)p % 16, 0, "malloc(%zu) = %p not 16-aligned", n, p);
    cr_assert_geq(A->ops->usable(A, p), n);
    cr_assert_eq(dmm_pagesrc_owner(ps, p), 1);
    return p;
}

static void F(void *p) { A->ops->free(A, p); }

static size_t CHECK(void) { return A->ops->check(A); }

/* Bytes held in page-map pages: what a footprint keeps after all is given back. */
/* Held for no chunk of the allocator: page-map pages, and chunks the page
 * source retains for reuse. */
static size_t map_bytes(void)
{
    return dmm_pagesrc_overhead(ps);
}

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

TestSuite(lea, .init = setup_real, .fini = teardown);

/* ---- every size ---- */

Test(lea, every_size_aligned_owned_usable)
{
    for (size_t n = 1; n <= 8192; n++) {
        unsigned char *p = M(n);
        memset(p, 0x5a, A->ops->usable(A, p));
        cr_assert_eq(CHECK(), 0, "after malloc(%zu)", n);
        F(p);
    }
    cr_assert_eq(CHECK(), 0);
    for (size_t n = 1; n <= ((size_t)4 << 20); n <<= 1) {
        for (int d = -1; d <= 1; d++) {
            size_t m = n + (size_t)d;
            if (m == 0)
                continue;
            unsigned char *p = M(m);
            memset(p, 0xa5, A->ops->usable(A, p));
            cr_assert_eq(CHECK(), 0, "after malloc(%zu)", m);
            F(p);
            cr_assert_eq(CHECK(), 0, "after free of %zu", m);
        }
    }
    /* many alive at once, freed in reverse */
    static void *live[3000];
    for (size_t i = 0; i < 3000; i++) {
        live[i] = M(i * 7 + 1);
        memset(live[i], (int)i, i * 7 + 1);
    }
    cr_assert_eq(CHECK(), 0);
    for (size_t i = 3000; i-- > 0;) {
        unsigned char *p = live[i];
        for (size_t k = 0; k < i * 7 + 1; k++)
            cr_assert_eq(p[k], (unsigned char)i);
        F(p);
    }
    cr_assert_eq(CHECK(), 0);
}

Test(lea, enomem_for_impossible_sizes)
{
    errno = 0;
    cr_expect_null(A->ops->malloc(A, SIZE_MAX - 10));
    cr_expect_eq(errno, ENOMEM);
    errno = 0;
    cr_expect_null(A->ops->malloc(A, SIZE_MAX / 2 + 1));
    cr_expect_eq(errno, ENOMEM);
    cr_expect_eq(CHECK(), 0);
}

/* ---- stress ---- */

typedef struct slot {
    unsigned char *p;
    size_t n;
    unsigned char seed;
} slot_t;

static size_t rand_size(void)
{
    unsigned r = (unsigned)(rnd() % 1000);
    if (r < 700)
        return 1 + rnd() % 256;
    if (r < 900)
        return 257 + rnd() % 3840;
    if (r < 993)
        return 4097 + rnd() % 61440;
    return 65537 + rnd() % 400000;
}

static void fill(slot_t *s)
{
    memset(s->p, s->seed, s->n);
}

static void verify(const slot_t *s, size_t upto)
{
    for (size_t k = 0; k < upto; k++)
        if (s->p[k] != s->seed)
            cr_assert_fail("payload of a %zu-byte block changed at %zu", s->n, k);
}

static void stress(unsigned long nops, size_t nslots, unsigned long full_checks)
{
    slot_t *sl = calloc(nslots, sizeof *sl);
    cr_assert_not_null(sl);
    unsigned char seed = 1;
    unsigned long in_place = 0, moved = 0;
    for (unsigned long op = 0; op < nops; op++) {
        slot_t *s = &sl[rnd() % nslots];
        if (!s->p) {
            s->n = rand_size();
            s->p = M(s->n);
            s->seed = seed++;
            fill(s);
        } else if (rnd() % 100 < 12) {
            size_t n2 = rand_size();
            size_t keep = n2 < s->n ? n2 : s->n;
            if (A->ops->resize(A, s->p, n2) == 0) {
                cr_assert_geq(A->ops->usable(A, s->p), n2);
                verify(s, keep);
                in_place++;
            } else {
                unsigned char *q = M(n2);
                memcpy(q, s->p, keep);
                verify(s, s->n);
                F(s->p);
                s->p = q;
                moved++;
            }
            s->n = n2;
            s->seed = seed++;
            fill(s);
        } else {
            verify(s, s->n);
            F(s->p);
            s->p = NULL;
        }
        if (op < full_checks || op % 100 == 0) {
            size_t v = CHECK();
            if (v)
                cr_assert_fail("check() = %zu after operation %lu", v, op);
        }
    }
    cr_expect_gt(in_place, 0);
    cr_expect_gt(moved, 0);
    for (size_t i = 0; i < nslots; i++)
        if (sl[i].p) {
            verify(&sl[i], sl[i].n);
            F(sl[i].p);
        }
    cr_assert_eq(CHECK(), 0);
    /* everything free: at most the newest segment's trimmed top is held */
    cr_expect_leq(ps->footprint - map_bytes(), (size_t)320 << 10,
                  "footprint %zu after freeing everything", ps->footprint - map_bytes());
    free(sl);
}

Test(lea, stress_300k_real)
{
    stress(300000, 3000, 20000);
}

Test(lea, stress_100k_sim_lifo)
{
    teardown();
    setup_opts(DMM_PS_SIM, DMM_ORDER_LIFO);
    stress(100000, 1000, 5000);
}

/* ---- coalescing ---- */

Test(lea, coalescing_merges_everything)
{
    enum { N = 500 };
    static void *b[N];
    for (int i = 0; i < N; i++)
        b[i] = M(96);
    uint64_t calls = cost.pagesrc_calls;
    /* free in a random order */
    for (int i = N - 1; i > 0; i--) {
        int j = (int)(rnd() % (unsigned)(i + 1));
        void *t = b[i];
        b[i] = b[j];
        b[j] = t;
    }
    void *lowest = b[0];
    for (int i = 0; i < N; i++) {
        if ((uintptr_t)b[i] < (uintptr_t)lowest)
            lowest = b[i];
        F(b[i]);
        cr_assert_eq(CHECK(), 0);
    }
    cr_expect_gt(cost.coalesces, (uint64_t)N / 2);
    /* one free block: a request of nearly the whole segment fits without
     * a new chunk, at the lowest address */
    void *big = M(60000);
    cr_expect_eq(big, lowest);
    cr_expect_eq(cost.pagesrc_calls, calls);
    F(big);
    cr_assert_eq(CHECK(), 0);
}

Test(lea, whole_old_segment_goes_back)
{
    /* fill the first segment past 1 MiB, then make lea take a chunk that
     * cannot follow it, so that the first one becomes an old segment */
    static void *b[3000];
    int n = 0;
    b[n++] = M(1000);
    char *first = b[0];
    while (n < 2000) {
        b[n] = M(1000);
        if ((char *)b[n++] > first + (1 << 20))
            break;
    }
    /* a chunk of another owner right after it */
    void *other = dmm_pagesrc_get(ps, 4096, 0, 2);
    cr_assert_not_null(other);
    for (int i = 0; i < 200; i++)
        b[n++] = M(20000);
    cr_assert_eq(CHECK(), 0);
    size_t fp = ps->footprint;
    for (int i = 0; i < n; i++) {
        F(b[i]);
        cr_assert_eq(CHECK(), 0);
    }
    cr_expect_lt(ps->footprint + ((size_t)1 << 20), fp, "an old segment that became free is given back");
    cr_expect_eq(dmm_pagesrc_owner(ps, first), DMM_OWNER_NONE);
    cr_expect_eq(dmm_pagesrc_owner(ps, other), 2);
    cr_expect_leq(ps->footprint - map_bytes(), ((size_t)320 << 10) + 4096);
}

/* ---- best fit ---- */

Test(lea, best_fit_small_bins)
{
    void *a = M(100), *g1 = M(16), *b = M(200), *g2 = M(16), *c = M(300), *g3 = M(16);
    F(a);
    F(b);
    F(c);
    cr_assert_eq(CHECK(), 0);
    void *p = M(150);
    cr_expect_eq(p, b, "150 bytes go into the 200-byte hole");
    cr_assert_eq(CHECK(), 0);
    (void)g1, (void)g2, (void)g3;
}

Test(lea, best_fit_in_sorted_large_bin)
{
    /* 2100, 2500, 2300: all in the same bin [2048, 2560) */
    void *x = M(2492), *g1 = M(16), *y = M(2092), *g2 = M(16), *z = M(2292), *g3 = M(16);
    F(x);
    F(y);
    F(z);
    cr_assert_eq(CHECK(), 0);
    void *p = M(2200);
    cr_expect_eq(p, z, "2200 bytes go into the 2300-byte hole, not the 2500 one");
    void *q = M(2400);
    cr_expect_eq(q, x);
    cr_assert_eq(CHECK(), 0);
    (void)g1, (void)g2, (void)g3;
}

Test(lea, order_fifo_and_lifo)
{
    for (int order = 0; order < 2; order++) {
        teardown();
        setup_opts(DMM_PS_REAL, order);
        void *x = M(56), *g1 = M(16), *y = M(56), *g2 = M(16);
        void *lx = M(3000), *g3 = M(16), *ly = M(3000), *g4 = M(16);
        F(x);
        F(y);
        F(lx);
        F(ly);
        cr_assert_eq(CHECK(), 0);
        void *p = M(56), *lp = M(3000);
        if (order == DMM_ORDER_FIFO) {
            cr_expect_eq(p, x);
            cr_expect_eq(lp, lx);
        } else {
            cr_expect_eq(p, y);
            cr_expect_eq(lp, ly);
        }
        (void)g1, (void)g2, (void)g3, (void)g4;
    }
}

/* ---- large objects ---- */

Test(lea, large_objects_use_their_own_chunks)
{
    M(10);
    size_t fp = ps->footprint;
    uint64_t calls = cost.pagesrc_calls;
    unsigned char *p = M((size_t)1 << 20);
    cr_expect_geq(ps->footprint, fp + ((size_t)1 << 20));
    cr_expect_eq(cost.pagesrc_calls, calls + 1);
    memset(p, 1, (size_t)1 << 20);
    cr_expect_eq(dmm_pagesrc_owner(ps, p + ((size_t)1 << 20) - 1), 1);
    cr_assert_eq(CHECK(), 0);
    F(p);
    cr_expect_eq(ps->footprint, fp);
    cr_expect_eq(dmm_pagesrc_owner(ps, p), DMM_OWNER_NONE);
    cr_assert_eq(CHECK(), 0);
    /* just below the threshold: an ordinary block */
    void *q = M((128 << 10) - 1);
    cr_expect_neq(dmm_pagesrc_owner(ps, q), DMM_OWNER_NONE);
    F(q);
    cr_assert_eq(CHECK(), 0);
}

Test(lea, large_resize)
{
    unsigned char *p = M((size_t)1 << 20);
    memset(p, 7, 200000);
    size_t out = ps->chunk_bytes;   /* the page source may retain what comes back */
    cr_expect_eq(A->ops->resize(A, p, 200000), 0);
    cr_expect_lt(ps->chunk_bytes, out);
    cr_expect_geq(A->ops->usable(A, p), 200000);
    for (size_t i = 0; i < 200000; i++)
        cr_assert_eq(p[i], 7);
    cr_expect_eq(A->ops->resize(A, p, 300000), -1);
    cr_expect_eq(A->ops->resize(A, p, 1000), -1, "small again: the chain moves it");
    cr_assert_eq(CHECK(), 0);
    F(p);
    cr_assert_eq(CHECK(), 0);
}

/* ---- resize ---- */

Test(lea, resize_in_place)
{
    unsigned char *p = M(1000);
    memset(p, 3, 1000);
    /* grow into the top */
    cr_expect_eq(A->ops->resize(A, p, 5000), 0);
    cr_expect_geq(A->ops->usable(A, p), 5000);
    cr_assert_eq(CHECK(), 0);
    for (int i = 0; i < 1000; i++)
        cr_assert_eq(p[i], 3);
    memset(p, 4, 5000);
    /* shrink: the tail goes back and is reused */
    cr_expect_eq(A->ops->resize(A, p, 100), 0);
    size_t u = A->ops->usable(A, p);
    cr_expect_geq(u, 100);
    cr_expect_lt(u, 1000);
    cr_assert_eq(CHECK(), 0);
    unsigned char *q = M(3000);
    cr_expect(q > p && q < p + 5000, "the shrunk tail is reused");
    /* blocked by an in-use neighbour */
    cr_expect_eq(A->ops->resize(A, p, u + 100), -1);
    cr_assert_eq(CHECK(), 0);
    /* grow into a freed neighbour */
    F(q);
    cr_expect_eq(A->ops->resize(A, p, 2000), 0);
    cr_expect_geq(A->ops->usable(A, p), 2000);
    for (int i = 0; i < 100; i++)
        cr_assert_eq(p[i], 4);
    cr_assert_eq(CHECK(), 0);
    /* same size and tiny shrink (no split) */
    size_t u2 = A->ops->usable(A, p);
    cr_expect_eq(A->ops->resize(A, p, u2), 0);
    cr_expect_eq(A->ops->resize(A, p, u2 - 8), 0);
    cr_expect_eq(A->ops->usable(A, p), u2);
    cr_assert_eq(CHECK(), 0);
    F(p);
    cr_assert_eq(CHECK(), 0);
}

/* ---- footprint ---- */

Test(lea, trim_gives_top_back)
{
    static void *b[400];
    for (int i = 0; i < 400; i++)
        b[i] = M(4000);
    size_t fp = ps->footprint;
    for (int i = 399; i >= 0; i--)
        F(b[i]);
    cr_assert_eq(CHECK(), 0);
    cr_expect_lt(ps->footprint, fp);
    cr_expect_leq(ps->footprint - map_bytes(), (size_t)320 << 10);
}

Test(lea, steady_state_footprint_bounded)
{
    enum { LIVE = 2000 };
    static void *b[LIVE];
    static size_t sz[LIVE];
    size_t live = 0, peak_live = 0, peak_after_warmup = 0;
    for (int i = 0; i < LIVE; i++) {
        sz[i] = 16 + rnd() % 4000;
        b[i] = M(sz[i]);
        live += sz[i];
    }
    for (int round = 0; round < 200; round++) {
        for (int k = 0; k < LIVE / 2; k++) {
            int i = (int)(rnd() % LIVE);
            F(b[i]);
            live -= sz[i];
            sz[i] = 16 + rnd() % 4000;
            b[i] = M(sz[i]);
            live += sz[i];
            if (live > peak_live)
                peak_live = live;
        }
        if (round == 20)
            peak_after_warmup = ps->peak;
    }
    cr_assert_eq(CHECK(), 0);
    cr_expect_leq(ps->peak, peak_live * 3 / 2 + ((size_t)512 << 10),
                  "peak %zu for %zu live bytes", ps->peak, peak_live);
    cr_expect_leq(ps->peak, peak_after_warmup * 5 / 4 + ((size_t)256 << 10),
                  "footprint keeps growing: %zu after warm-up, %zu at the end",
                  peak_after_warmup, ps->peak);
}

Test(lea, destroy_gives_everything_back)
{
    for (int i = 0; i < 1000; i++)
        M(1 + rnd() % 20000);
    M((size_t)1 << 20);
    cr_assert_eq(CHECK(), 0);
    A->ops->destroy(A);
    cr_expect_eq(ps->footprint, map_bytes());
    cr_expect_eq(CHECK(), 0);
    /* usable again after destroy */
    F(M(100));
    cr_expect_eq(CHECK(), 0);
}

/* ---- check() sees corruption ---- */

Test(lea, check_catches_corruption)
{
    unsigned char *a = M(100), *b = M(100), *c = M(100);
    (void)c;
    cr_assert_eq(CHECK(), 0);
    F(b);
    cr_assert_eq(CHECK(), 0);
    /* a's payload overrun past its usable bytes lands in b's header */
    size_t u = A->ops->usable(A, a);
    size_t saved;
    memcpy(&saved, a + u, sizeof saved);
    size_t junk = saved ^ 0x30;
    memcpy(a + u, &junk, sizeof junk);
    cr_expect_gt(CHECK(), 0);
    memcpy(a + u, &saved, sizeof saved);
    cr_expect_eq(CHECK(), 0);
}

Test(lea, costs_are_counted)
{
    void *p = M(100), *q = M(100);
    F(p);
    F(q);
    cr_expect_gt(cost.hdr_reads, 0);
    cr_expect_gt(cost.hdr_writes, 0);
    cr_expect_gt(cost.splits, 0);
    cr_expect_gt(cost.coalesces, 0);
    cr_expect_gt(cost.pagesrc_calls, 0);
    void *r[10];
    for (int i = 0; i < 10; i++) {
        r[i] = M(3000 + 8 * (size_t)i);
        M(16);
    }
    for (int i = 0; i < 10; i++)
        F(r[i]);
    uint64_t nodes = cost.nodes;
    M(3050);
    cr_expect_gt(cost.nodes, nodes, "the sorted bin walk is counted");
}
