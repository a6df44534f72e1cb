/* test_kingsley.c - the Kingsley allocator (allocators/classes/kingsley.c): every
 * size 1..4096 and the powers of two up to 1 MiB (alignment, usable =
 * power of two - 16, owner, payload writes) in both page-source modes; a
 * 200k-operation random stress with payload patterns and check() after every
 * operation for the first 5000 and every 499th after; LIFO reuse per class;
 * lazy carving; the footprint never shrinks before destroy; resize within a
 * class only; check() sees corrupted headers and lists. */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "allocators/classes/registry.h"
#include "allocators/core/alloc.h"

typedef struct harness {
    dmm_pagesrc_t *ps;
    dmm_cost_t     cost;
    dmm_alloc_t    a;
} harness_t;

static harness_t *h_new(size_t lo, size_t hi, int mode)
{
    harness_t *h = calloc(1, sizeof *h);
    cr_assert(h);
    h->ps = malloc(sizeof *h->ps);
    cr_assert(h->ps);
    cr_assert_eq(dmm_pagesrc_init(h->ps, mode), 0);
    h->a.ops = &dmm_class_kingsley;
    h->a.desc = (dmm_alloc_desc_t){ .cls = DMM_CLASS_KINGSLEY, .lo = lo, .hi = hi,
                                    .split = 1, .coalesce = 1, .list = DMM_LIST_BTREE };
    h->a.owner = 1;
    h->a.ps = h->ps;
    h->a.cost = &h->cost;
    h->a.state = h->a.state_area;
    cr_assert_eq(h->a.ops->init(&h->a), 0);
    return h;
}

/* Held for no chunk of the allocator: page-map pages, and chunks the page
 * source retains for reuse. */
static size_t map_bytes(const dmm_pagesrc_t *ps)
{
    return dmm_pagesrc_overhead(ps);
}

static size_t fp(const harness_t *h) { return h->ps->footprint - map_bytes(h->ps); }

static void h_end(harness_t *h)
{
    h->a.ops->destroy(&h->a);
    cr_assert_eq(fp(h), 0, "destroy gives every chunk back");
    dmm_pagesrc_fini(h->ps);
    free(h->ps);
    free(h);
}

static size_t chk(harness_t *h) { return h->a.ops->check(&h->a); }
static void *am(harness_t *h, size_t n) { return h->a.ops->malloc(&h->a, n); }
static void af(harness_t *h, void *p) { h->a.ops->free(&h->a, p); }
static size_t au(harness_t *h, void *p) { return h->a.ops->usable(&h->a, p); }

static uint64_t rng;
static uint64_t rnd(void)
{
    uint64_t x = rng += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* the block size Kingsley must use for n: the power of two >= n + 16, >= 32 */
static size_t block_for(size_t n)
{
    size_t b = 32;
    while (b < n + 16)
        b *= 2;
    return b;
}

static void one_size(harness_t *h, size_t n)
{
    unsigned char *p = am(h, n);
    cr_assert(p, "malloc(%zu)", n);
    cr_assert_eq((uintptr_t)p % 16, 0);
    size_t u = au(h, p);
    cr_assert_eq(u, block_for(n) - 16, "usable(%zu) = %zu, want %zu", n, u, block_for(n) - 16);
    cr_assert_eq(dmm_pagesrc_owner(h->ps, p), 1u);
    cr_assert_eq(dmm_pagesrc_owner(h->ps, p + u - 1), 1u);
    memset(p, 0x5A, u);
    af(h, p);
}

Test(kingsley, every_size, .timeout = 120)
{
    for (int mode = 0; mode < 2; mode++) {
        harness_t *h = h_new(0, DMM_SIZE_INF, mode);
        for (size_t n = 1; n <= 4096; n++) {
            one_size(h, n);
            if (n % 256 == 0)
                cr_assert_eq(chk(h), 0);
        }
        for (size_t n = 1; n <= (1u << 20); n *= 2) {
            one_size(h, n);
            one_size(h, n + 1);
            if (n > 16)
                one_size(h, n - 16);
            cr_assert_eq(chk(h), 0);
        }
        one_size(h, (size_t)5 << 20);
        cr_assert_eq(chk(h), 0);
        h_end(h);
    }
}

/* internal fragmentation: usable is exactly the power of two minus 16 */
Test(kingsley, internal_fragmentation)
{
    harness_t *h = h_new(0, DMM_SIZE_INF, DMM_PS_SIM);
    const size_t cases[][2] = { {1, 16}, {16, 16}, {17, 48}, {48, 48}, {49, 112}, {100, 112},
                                {112, 112}, {113, 240}, {1000, 1008}, {1008, 1008},
                                {1009, 2032}, {4096, 8176}, {65520, 65520}, {65521, 131056} };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        void *p = am(h, cases[i][0]);
        cr_assert_eq(au(h, p), cases[i][1], "usable(%zu) = %zu", cases[i][0], au(h, p));
    }
    cr_assert_eq(chk(h), 0);
    h_end(h);
}

#define NSLOT 1024
typedef struct slot {
    unsigned char *p;
    size_t n;
    uint8_t pat;
} slot_t;

static size_t pick_size(size_t hi)
{
    uint64_t r = rnd() % 1000;
    size_t n;
    if (r < 700)
        n = 1 + rnd() % 256;
    else if (r < 930)
        n = 257 + rnd() % 3840;
    else if (r < 995)
        n = 4097 + rnd() % 61440;
    else
        n = 65537 + rnd() % (2u << 20);
    return n > hi ? 1 + rnd() % hi : n;
}

static void verify(const slot_t *s, long op)
{
    size_t step = s->n <= 8192 ? 1 : 61;
    for (size_t i = 0; i < s->n; i += step)
        cr_assert_eq(s->p[i], s->pat, "op %ld: payload byte %zu of %zu changed", op, i, s->n);
    cr_assert_eq(s->p[s->n - 1], s->pat);
}

static void stress(harness_t *h, uint64_t seed, long nops, long full, size_t hi)
{
    static slot_t s[NSLOT];
    memset(s, 0, sizeof s);
    rng = seed;
    uint64_t pat = 1;
    size_t peak_fp = 0;
    for (long op = 0; op < nops; op++) {
        slot_t *x = &s[rnd() % NSLOT];
        if (x->p) {
            verify(x, op);
            if (rnd() % 8 == 0) {
                size_t n2 = pick_size(hi);
                int same = block_for(n2) == block_for(x->n);
                int r = h->a.ops->resize(&h->a, x->p, n2);
                cr_assert_eq(r, same ? 0 : -1, "op %ld resize %zu -> %zu", op, x->n, n2);
                if (r == 0) {
                    slot_t y = *x;
                    y.n = n2 < x->n ? n2 : x->n;
                    verify(&y, op);
                    x->n = n2;
                    x->pat = (uint8_t)pat++;
                    memset(x->p, x->pat, x->n);
                }
            } else {
                af(h, x->p);
                x->p = NULL;
            }
        } else {
            x->n = pick_size(hi);
            x->p = am(h, x->n);
            cr_assert(x->p, "op %ld malloc(%zu)", op, x->n);
            cr_assert_eq((uintptr_t)x->p % 16, 0);
            cr_assert_eq(au(h, x->p), block_for(x->n) - 16);
            cr_assert_eq(dmm_pagesrc_owner(h->ps, x->p), 1u);
            x->pat = (uint8_t)pat++;
            memset(x->p, x->pat, x->n);
        }
        /* Kingsley never gives memory back */
        cr_assert_geq(fp(h), peak_fp, "op %ld: footprint shrank", op);
        peak_fp = fp(h);
        if (op < full || op % 499 == 0) {
            size_t bad = chk(h);
            cr_assert_eq(bad, 0, "op %ld: check() = %zu", op, bad);
        }
    }
    for (int i = 0; i < NSLOT; i++)
        if (s[i].p) {
            verify(&s[i], nops);
            af(h, s[i].p);
            s[i].p = NULL;
        }
    cr_assert_eq(chk(h), 0);
    cr_assert_eq(fp(h), peak_fp);
}

Test(kingsley, stress_sim, .timeout = 300)
{
    harness_t *h = h_new(0, 4u << 20, DMM_PS_SIM);
    stress(h, 1, 200000, 5000, 4u << 20);
    cr_assert_eq(h->ps->footprint, h->ps->peak, "the footprint only grows");
    h_end(h);
}

Test(kingsley, stress_real, .timeout = 300)
{
    harness_t *h = h_new(0, 1u << 16, DMM_PS_REAL);
    stress(h, 2, 200000, 5000, 1u << 16);
    h_end(h);
}

/* LIFO per class: the block freed last comes back first; classes apart */
Test(kingsley, lifo_reuse)
{
    harness_t *h = h_new(0, DMM_SIZE_INF, DMM_PS_SIM);
    void *a = am(h, 100), *b = am(h, 100), *c = am(h, 200);
    cr_assert_eq((char *)b - (char *)a, 128, "carved in address order");
    af(h, a);
    af(h, b);
    af(h, c);
    cr_assert_eq(am(h, 50), b);
    cr_assert_eq(am(h, 112), a);
    cr_assert_eq(am(h, 200), c);
    cr_assert_eq(h->cost.splits + h->cost.coalesces, 0, "no splitting, no coalescing");
    cr_assert_eq(chk(h), 0);
    h_end(h);
}

/* chunks: 64 KiB for small classes, one block for 64 KiB and more; a class
 * takes its chunk only when first used */
Test(kingsley, chunks_and_footprint)
{
    harness_t *h = h_new(0, DMM_SIZE_INF, DMM_PS_SIM);
    size_t f0 = fp(h);
    void *p = am(h, 1);
    size_t f1 = fp(h);
    cr_assert_eq(f1 - f0, (64u << 10) + DMM_PAGE, "one 64 KiB chunk and the chunk table");
    for (int i = 1; i < 2048; i++)
        cr_assert_neq(am(h, 10), NULL);
    cr_assert_eq(fp(h), f1, "2048 blocks of 32 bytes fill one chunk");
    am(h, 10);
    cr_assert_eq(fp(h), f1 + (64u << 10));
    size_t f2 = fp(h);
    void *q = am(h, 20000);   /* 32 KiB blocks: a 128 KiB chunk */
    cr_assert_eq(fp(h), f2 + (128u << 10));
    void *r = am(h, 100000);  /* 128 KiB block: its own chunk */
    cr_assert_eq(fp(h), f2 + (256u << 10));
    af(h, p);
    af(h, q);
    af(h, r);
    cr_assert_eq(fp(h), f2 + (256u << 10), "nothing given back");
    cr_assert_eq(am(h, 100000), r);
    cr_assert_eq(chk(h), 0);
    h_end(h);
}

Test(kingsley, resize_same_class_only)
{
    harness_t *h = h_new(0, DMM_SIZE_INF, DMM_PS_SIM);
    void *p = am(h, 100);   /* 128-byte block */
    cr_assert_eq(h->a.ops->resize(&h->a, p, 112), 0);
    cr_assert_eq(h->a.ops->resize(&h->a, p, 49), 0);
    cr_assert_eq(h->a.ops->resize(&h->a, p, 113), -1);
    cr_assert_eq(h->a.ops->resize(&h->a, p, 48), -1);
    cr_assert_eq(au(h, p), 112);
    h_end(h);
}

Test(kingsley, check_sees_corruption)
{
    harness_t *h = h_new(0, DMM_SIZE_INF, DMM_PS_SIM);
    void *a = am(h, 100), *b = am(h, 100);
    af(h, b);
    cr_assert_eq(chk(h), 0);
    unsigned char *hb = (unsigned char *)b - 16;
    hb[4] ^= 1;   /* class */
    cr_assert_gt(chk(h), 0);
    hb[4] ^= 1;
    hb[0] ^= 1;   /* magic */
    cr_assert_gt(chk(h), 0);
    hb[0] ^= 1;
    hb[5] ^= 0xFF;   /* state */
    cr_assert_gt(chk(h), 0);
    hb[5] ^= 0xFF;
    uint64_t *next = (uint64_t *)(hb + 8);
    *next = (uintptr_t)hb;   /* a cycle */
    cr_assert_gt(chk(h), 0);
    *next = 0;
    cr_assert_eq(chk(h), 0);
    unsigned char *ha = (unsigned char *)a - 16;
    ha[5] ^= 0xFF;   /* a used block's state */
    cr_assert_gt(chk(h), 0);
    ha[5] ^= 0xFF;
    cr_assert_eq(chk(h), 0);
    h_end(h);
}

Test(kingsley, bad_desc)
{
    dmm_pagesrc_t *ps = malloc(sizeof *ps);
    cr_assert_eq(dmm_pagesrc_init(ps, DMM_PS_SIM), 0);
    dmm_cost_t cost = {0};
    dmm_alloc_t a = { .ops = &dmm_class_kingsley, .owner = 1, .ps = ps, .cost = &cost };
    a.desc.lo = 100;
    a.desc.hi = 100;
    cr_assert_eq(a.ops->init(&a), -1);
    dmm_pagesrc_fini(ps);
    free(ps);
}
