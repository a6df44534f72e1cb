/* test_buddy.c - the buddy systems (allocators/classes/buddy.c), binary and
 * Fibonacci, in all 2x2x3x2 combinations of split x coalesce x list x order:
 * every size 1..4096 and the powers of two up to 1 MiB (alignment, usable
 * size, owner, payload writes), a 200k-operation random stress with payload
 * patterns and check() after every operation for the first 5000 and every
 * 499th after, coalescing back to whole regions, split counts, the
 * Fibonacci sequence and buddy geometry, the left/right and memory bits
 * through exhaustive fill-and-free of regions and corruption that check()
 * must see, resize, the LARGE path and the footprint. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocators/core/alloc.h"
#include "allocators/classes/registry.h"

size_t dmm_buddy_debug_sizes(const dmm_alloc_t *a, size_t *out, size_t max);
size_t dmm_buddy_debug_listed(const dmm_alloc_t *a, unsigned j, int virgin);
size_t dmm_buddy_debug_regions(const dmm_alloc_t *a);

/* ---- harness ---- */

typedef struct harness {
    dmm_pagesrc_t *ps;
    dmm_cost_t     cost;
    dmm_alloc_t    a;
} harness_t;

typedef struct combo {
    int fib, split, coalesce, list, order;
} combo_t;

static const char *list_name[] = { "sll", "dll", "btree" };
#define CFMT "%s split=%d coalesce=%d list=%s order=%s"
#define CARG(c) (c)->fib ? "buddy-fib" : "buddy-binary", (c)->split, (c)->coalesce, \
                list_name[(c)->list], (c)->order ? "lifo" : "fifo"

static harness_t *h_new(const combo_t *c, size_t lo, size_t hi, int mode)
{
    harness_t *h = calloc(1, sizeof *h);
    cr_assert(h);
    h->ps = malloc(sizeof *h->ps);
    cr_assert(h->ps);
    cr_assert_eq(dmm_pagesrc_init(h->ps, mode), 0);
    h->a.ops = c->fib ? &dmm_class_buddy_fib : &dmm_class_buddy_binary;
    h->a.desc = (dmm_alloc_desc_t){
        .cls = c->fib ? DMM_CLASS_BUDDY_FIB : DMM_CLASS_BUDDY_BINARY,
        .lo = lo, .hi = hi, .split = (uint8_t)c->split, .coalesce = (uint8_t)c->coalesce,
        .list = (uint8_t)c->list, .fit = DMM_FIT_FIRST, .order = (uint8_t)c->order,
    };
    h->a.owner = 1;
    h->a.ps = h->ps;
    h->a.cost = &h->cost;
    h->a.state = h->a.state_area;
    cr_assert_eq(h->a.ops->init(&h->a), 0, "init " CFMT, CARG(c));
    return h;
}

/* Held for no chunk of the allocator: page-map pages, and chunks the page
 * source retains for reuse. */
static size_t map_bytes(const dmm_pagesrc_t *ps)
{
    return dmm_pagesrc_overhead(ps);
}

static void h_end(harness_t *h)
{
    h->a.ops->destroy(&h->a);
    cr_assert_eq(h->ps->footprint, map_bytes(h->ps), "destroy gives every chunk back");
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

/* the sizes of a harness's allocator */
static size_t S[64], nS;
static void get_sizes(harness_t *h) { nS = dmm_buddy_debug_sizes(&h->a, S, 64); }

static combo_t all_combos[48];
static void fill_combos(void)
{
    int i = 0;
    for (int f = 0; f < 2; f++)
        for (int s = 0; s < 2; s++)
            for (int c = 0; c < 2; c++)
                for (int l = 0; l < 3; l++)
                    for (int o = 0; o < 2; o++)
                        all_combos[i++] = (combo_t){ f, s, c, l, o };
}

ParameterizedTestParameters(buddy, sizes)
{
    fill_combos();
    return cr_make_param_array(combo_t, all_combos, 48);
}

/* ---- every size ---- */

static void one_size(harness_t *h, const combo_t *c, size_t n)
{
    unsigned char *p = am(h, n);
    cr_assert(p, "malloc(%zu) " CFMT, n, CARG(c));
    cr_assert_eq((uintptr_t)p % 16, 0, "malloc(%zu) aligned", n);
    size_t u = au(h, p);
    cr_assert_geq(u, n, "usable(%zu) = %zu", n, u);
    cr_assert_eq(dmm_pagesrc_owner(h->ps, p), 1u);
    cr_assert_eq(dmm_pagesrc_owner(h->ps, p + u - 1), 1u);
    if (n + 16 <= S[nS - 1]) {
        /* the smallest size that holds n plus the header */
        size_t j = 0;
        while (S[j] < n + 16)
            j++;
        cr_assert_eq(u, S[j] - 16, "usable(%zu) = %zu, want %zu " CFMT, n, u, S[j] - 16, CARG(c));
    } else {
        cr_assert_lt(u, n + 16 + DMM_PAGE, "LARGE usable(%zu) = %zu", n, u);
    }
    memset(p, 0xA5, u);
    af(h, p);
}

ParameterizedTest(combo_t *c, buddy, sizes, .timeout = 300)
{
    for (int mode = 0; mode < 2; mode++) {
        harness_t *h = h_new(c, 0, DMM_SIZE_INF, mode);
        get_sizes(h);
        for (size_t n = 1; n <= 4096; n++) {
            one_size(h, c, n);
            if (n % 512 == 0)
                cr_assert_eq(chk(h), 0);
        }
        for (size_t n = 1; n <= (1u << 20); n *= 2) {
            one_size(h, c, n);
            one_size(h, c, n + 1);
            cr_assert_eq(chk(h), 0, "after size %zu " CFMT, n, CARG(c));
        }
        one_size(h, c, (size_t)3 << 20);
        cr_assert_eq(chk(h), 0);
        h_end(h);
    }
}

/* ---- random stress ---- */

/* 200k operations per combination; a quarter of that under AddressSanitizer
 * (48 combinations), which makes each one several times slower */
#ifdef __SANITIZE_ADDRESS__
#define STRESS_OPS 50000
#else
#define STRESS_OPS 200000
#endif

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

static void fill(slot_t *s) { memset(s->p, s->pat, s->n); }

static void verify(const slot_t *s, long op)
{
    size_t step = s->n <= 8192 ? 1 : 61;
    for (size_t i = 0; i < s->n; i += step)
        cr_assert_eq(s->p[i], s->pat, "op %ld: payload byte %zu of %zu changed", op, i, s->n);
    cr_assert_eq(s->p[s->n - 1], s->pat);
}

static void stress(harness_t *h, const combo_t *c, uint64_t seed, long nops, long full, size_t hi)
{
    static slot_t s[NSLOT];
    memset(s, 0, sizeof s);
    rng = seed;
    uint64_t pat = 1;
    for (long op = 0; op < nops; op++) {
        slot_t *x = &s[rnd() % NSLOT];
        if (x->p) {
            verify(x, op);
            if (rnd() % 8 == 0) {
                size_t n2 = pick_size(hi);
                if (h->a.ops->resize(&h->a, x->p, n2) == 0) {
                    cr_assert_geq(au(h, x->p), n2, "op %ld resize", op);
                    slot_t y = *x;
                    y.n = n2 < x->n ? n2 : x->n;
                    verify(&y, op);
                    x->n = n2;
                    x->pat = (uint8_t)pat++;
                    fill(x);
                }
            } else {
                af(h, x->p);
                x->p = NULL;
            }
        } else {
            x->n = pick_size(hi);
            x->p = am(h, x->n);
            cr_assert(x->p, "op %ld malloc(%zu) " CFMT, op, x->n, CARG(c));
            cr_assert_eq((uintptr_t)x->p % 16, 0);
            cr_assert_geq(au(h, x->p), x->n);
            cr_assert_eq(dmm_pagesrc_owner(h->ps, x->p), 1u);
            x->pat = (uint8_t)pat++;
            fill(x);
        }
        if (op < full || op % 499 == 0) {
            size_t bad = chk(h);
            cr_assert_eq(bad, 0, "op %ld: check() = %zu " CFMT, op, bad, CARG(c));
        }
    }
    for (int i = 0; i < NSLOT; i++)
        if (s[i].p) {
            verify(&s[i], nops);
            af(h, s[i].p);
            s[i].p = NULL;
        }
    cr_assert_eq(chk(h), 0);
}

ParameterizedTestParameters(buddy, stress)
{
    fill_combos();
    return cr_make_param_array(combo_t, all_combos, 48);
}

ParameterizedTest(combo_t *c, buddy, stress, .timeout = 600)
{
    harness_t *h = h_new(c, 0, 4u << 20, DMM_PS_SIM);
    get_sizes(h);
    stress(h, c, 42 + (uint64_t)(c - all_combos), STRESS_OPS, 5000, 4u << 20);
    if (c->coalesce) {
        /* everything merged back: only whole regions are listed, one kept */
        for (unsigned j = 0; j + 1 < nS; j++) {
            cr_assert_eq(dmm_buddy_debug_listed(&h->a, j, 0), 0, "list %u " CFMT, j, CARG(c));
            cr_assert_eq(dmm_buddy_debug_listed(&h->a, j, 1), 0, "virgin %u " CFMT, j, CARG(c));
        }
        cr_assert_eq(dmm_buddy_debug_regions(&h->a), 1);
        cr_assert_eq(dmm_buddy_debug_listed(&h->a, nS - 1, 0) +
                         dmm_buddy_debug_listed(&h->a, nS - 1, 1), 1);
    }
    cr_assert_geq(h->ps->peak, h->ps->footprint);
    h_end(h);
}

/* a small range in REAL mode (pages really committed), small hi */
Test(buddy, stress_real_small_range, .timeout = 300)
{
    for (int f = 0; f < 2; f++) {
        combo_t c = { f, 1, 1, DMM_LIST_DLL, DMM_ORDER_LIFO };
        harness_t *h = h_new(&c, 0, 300, DMM_PS_REAL);
        stress(h, &c, 7, 100000, 100000, 300);
        h_end(h);
    }
}

/* ---- sizes and geometry ---- */

Test(buddy, size_sequences)
{
    combo_t c = { 1, 1, 1, DMM_LIST_SLL, DMM_ORDER_LIFO };
    harness_t *h = h_new(&c, 0, DMM_SIZE_INF, DMM_PS_SIM);
    get_sizes(h);
    const size_t want[] = { 32, 48, 80, 128, 208, 336, 544, 880, 1424, 2304, 3728 };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_assert_eq(S[i], want[i], "fib S[%zu] = %zu", i, S[i]);
    for (size_t i = 2; i < nS; i++)
        cr_assert_eq(S[i], S[i - 1] + S[i - 2]);
    for (size_t i = 0; i < nS; i++)
        cr_assert_eq(S[i] % 16, 0);
    cr_assert_geq(S[nS - 1], 1u << 20);
    cr_assert_lt(S[nS - 2], 1u << 20);
    h_end(h);

    c.list = DMM_LIST_BTREE;   /* a tree node needs 48 bytes of payload */
    h = h_new(&c, 0, DMM_SIZE_INF, DMM_PS_SIM);
    get_sizes(h);
    cr_assert_eq(S[0], 64);
    cr_assert_eq(S[1], 96);
    h_end(h);

    c.fib = 0;
    c.list = DMM_LIST_DLL;
    h = h_new(&c, 0, 100, DMM_PS_SIM);   /* small hi: a one-page region */
    get_sizes(h);
    cr_assert_eq(S[0], 32);
    for (size_t i = 1; i < nS; i++)
        cr_assert_eq(S[i], 2 * S[i - 1]);
    cr_assert_eq(S[nS - 1], 4096);
    h_end(h);
}

/* a split from a fresh region, and where the parts land */
Test(buddy, split_geometry_and_counts)
{
    for (int f = 0; f < 2; f++) {
        combo_t c = { f, 1, 1, DMM_LIST_DLL, DMM_ORDER_LIFO };
        harness_t *h = h_new(&c, 0, 65536, DMM_PS_SIM);
        get_sizes(h);
        size_t t = nS - 1;
        uint64_t s0 = h->cost.splits;
        unsigned char *a = am(h, S[t - 1] - 16);
        cr_assert_eq(h->cost.splits - s0, 1);
        cr_assert_eq((uintptr_t)(a - 16) % DMM_PAGE, 0, "the left part is the region base");
        unsigned char *b = am(h, S[t - 2] - 16);
        cr_assert_eq((size_t)(b - a), S[t - 1], "%s second block at +%zu, want %zu",
                     f ? "fib" : "binary", (size_t)(b - a), S[t - 1]);
        cr_assert_eq(chk(h), 0);
        uint64_t c0 = h->cost.coalesces;
        af(h, a);
        cr_assert_eq(h->cost.coalesces - c0, 0, "a's buddy is in use");
        af(h, b);
        cr_assert_eq(h->cost.coalesces - c0, f ? 1 : 2);
        cr_assert_eq(dmm_buddy_debug_listed(&h->a, (unsigned)t, 0), 1);
        cr_assert_eq(chk(h), 0);
        /* the smallest block from a whole region: one split per level */
        s0 = h->cost.splits;
        void *p = am(h, 1);
        uint64_t want = 0;
        if (f) {   /* S[k] -> S[k-2] while that can still reach S[0] */
            size_t k = t;
            while (k > 0) {
                k = k >= 2 && k - 2 != 1 ? k - 2 : k - 1;
                want++;
            }
        } else {
            want = t;
        }
        cr_assert_eq(h->cost.splits - s0, want, "splits %llu, want %llu",
                     (unsigned long long)(h->cost.splits - s0), (unsigned long long)want);
        af(h, p);
        cr_assert_eq(chk(h), 0);
        h_end(h);
    }
}

/* Fill a region completely with the smallest blocks, in every size mix,
 * free in random order, flipping R and M bits on the way to see that check()
 * notices each, and see the region merge back whole. */
static void fill_and_free(const combo_t *c, uint64_t seed, int flips)
{
    harness_t *h = h_new(c, 0, 4096, DMM_PS_SIM);
    get_sizes(h);
    size_t t = nS - 1;
    static unsigned char *p[8192];
    size_t n = 0;
    rng = seed;
    /* random sizes until a second region is taken */
    while (dmm_buddy_debug_regions(&h->a) < 2) {
        size_t j = rnd() % 3 == 0 ? rnd() % (t + 1) : rnd() % 3;
        p[n] = am(h, S[j] - 16);
        cr_assert(p[n]);
        n++;
        cr_assert_eq(chk(h), 0);
    }
    /* then each size from the largest down, until it needs a new region:
     * after that no free block of that size or more is left anywhere, so at
     * the end the first region is full (a Fibonacci S[1] cannot give an
     * S[0]: index 1 once more after index 0) */
    for (int j = (int)t; j >= -1; j--) {
        size_t jj = j < 0 ? 1 : (size_t)j;
        size_t r0 = dmm_buddy_debug_regions(&h->a);
        while (dmm_buddy_debug_regions(&h->a) == r0) {
            cr_assert_lt(n, 8192);
            p[n] = am(h, S[jj] - 16);
            cr_assert(p[n]);
            n++;
        }
        cr_assert_eq(chk(h), 0);
    }
    /* the first region: regions come from a fresh page source in address
     * order, so it holds the lowest block */
    uintptr_t base = UINTPTR_MAX;
    for (size_t i = 0; i < n; i++)
        if ((uintptr_t)p[i] - 16 < base)
            base = (uintptr_t)p[i] - 16;
    cr_assert_eq(base % DMM_PAGE, 0);
    size_t bytes = 0, inside = 0;
    for (size_t i = 0; i < n; i++)
        if ((uintptr_t)p[i] - 16 >= base && (uintptr_t)p[i] - 16 < base + S[t]) {
            bytes += au(h, p[i]) + 16;
            inside++;
        }
    cr_assert_eq(bytes, S[t], CFMT ": region %zu, blocks %zu", CARG(c), S[t], bytes);
    /* every used block's R and M bits matter */
    for (size_t i = 0; flips && i < n; i++) {
        uint64_t *info = (uint64_t *)(p[i] - 16);
        *info ^= 1ull << 10;
        cr_assert_gt(chk(h), 0, CFMT ": R bit flip of block %zu unseen", CARG(c), i);
        *info ^= 1ull << 10;
        *info ^= 1ull << 11;
        cr_assert_gt(chk(h), 0, CFMT ": M bit flip of block %zu unseen", CARG(c), i);
        *info ^= 1ull << 11;
    }
    cr_assert_eq(chk(h), 0);
    /* free in random order */
    for (size_t i = n; i > 1; i--) {
        size_t k = rnd() % i;
        unsigned char *x = p[k];
        p[k] = p[i - 1];
        p[i - 1] = x;
    }
    for (size_t i = 0; i < n; i++) {
        af(h, p[i]);
        cr_assert_eq(chk(h), 0, CFMT ": free %zu of %zu", CARG(c), i, n);
    }
    if (c->coalesce) {
        for (unsigned j = 0; j < t; j++)
            cr_assert_eq(dmm_buddy_debug_listed(&h->a, j, 0) + dmm_buddy_debug_listed(&h->a, j, 1),
                         0);
        cr_assert_eq(dmm_buddy_debug_regions(&h->a), 1);
    }
    h_end(h);
}

Test(buddy, fill_and_free_region, .timeout = 300)
{
    for (int f = 0; f < 2; f++)
        for (int s = 0; s < 2; s++)
            for (int co = 0; co < 2; co++)
                for (int l = 0; l < 3; l++)
                    for (uint64_t seed = 1; seed <= 12; seed++) {
                        combo_t c = { f, s, co, l, (int)(seed & 1) };
                        fill_and_free(&c, seed, seed <= 2);
                    }
}

/* the free and the virgin lists hold blocks of their size only; corrupting
 * a free block's header or list link is seen */
Test(buddy, check_sees_corruption)
{
    combo_t c = { 1, 1, 0, DMM_LIST_SLL, DMM_ORDER_LIFO };
    harness_t *h = h_new(&c, 0, 65536, DMM_PS_SIM);
    get_sizes(h);
    void *a = am(h, 1), *b = am(h, 1), *d = am(h, 100);
    af(h, b);   /* b is free and listed first (coalesce=no) */
    cr_assert_eq(chk(h), 0);
    uint64_t *info = (uint64_t *)((char *)b - 16);
    *info ^= 1;   /* index */
    cr_assert_gt(chk(h), 0);
    *info ^= 1;
    *info ^= 1ull << 8;   /* free bit */
    cr_assert_gt(chk(h), 0);
    *info ^= 1ull << 8;
    *info ^= 1ull << 20;  /* magic */
    cr_assert_gt(chk(h), 0);
    *info ^= 1ull << 20;
    uint64_t *next = (uint64_t *)((char *)b - 8);
    uint64_t old = *next;
    *next = (uintptr_t)b - 16;   /* a cycle */
    cr_assert_gt(chk(h), 0);
    *next = old;
    cr_assert_eq(chk(h), 0);
    af(h, a);
    af(h, d);
    cr_assert_eq(chk(h), 0);
    h_end(h);
}

/* ---- resize ---- */

Test(buddy, resize)
{
    for (int f = 0; f < 2; f++)
        for (int s = 0; s < 2; s++) {
            combo_t c = { f, s, 1, DMM_LIST_DLL, DMM_ORDER_FIFO };
            harness_t *h = h_new(&c, 0, 4u << 20, DMM_PS_SIM);
            get_sizes(h);
            unsigned char *p = am(h, S[5] - 16);
            cr_assert_eq(au(h, p), S[5] - 16);
            cr_assert_eq(h->a.ops->resize(&h->a, p, S[5] - 20), 0, "same size");
            cr_assert_eq(au(h, p), S[5] - 16);
            cr_assert_eq(h->a.ops->resize(&h->a, p, S[5] - 15), -1, "grow");
            int r = h->a.ops->resize(&h->a, p, 1);
            if (s) {
                cr_assert_eq(r, 0, "shrink by splitting");
                cr_assert_eq(au(h, p), f ? S[1] - 16 : S[0] - 16);
            } else {
                cr_assert_eq(r, -1, "split=no cannot shrink");
                cr_assert_eq(au(h, p), S[5] - 16);
            }
            cr_assert_eq(chk(h), 0);
            af(h, p);
            cr_assert_eq(chk(h), 0);
            cr_assert_eq(dmm_buddy_debug_regions(&h->a), 1);
            /* LARGE: shrink in place, grow refused */
            p = am(h, S[nS - 1] + 1000);
            cr_assert(p);
            size_t u = au(h, p);
            cr_assert_geq(u, S[nS - 1] + 1000);
            cr_assert_eq(h->a.ops->resize(&h->a, p, 1000), 0);
            cr_assert_eq(h->a.ops->resize(&h->a, p, u), 0);
            cr_assert_eq(h->a.ops->resize(&h->a, p, u + 1), -1);
            cr_assert_eq(chk(h), 0);
            af(h, p);
            cr_assert_eq(chk(h), 0);
            h_end(h);
        }
}

/* ---- footprint ---- */

static size_t fp(const harness_t *h) { return h->ps->footprint - map_bytes(h->ps); }

Test(buddy, footprint)
{
    for (int f = 0; f < 2; f++) {
        combo_t c = { f, 1, 1, DMM_LIST_BTREE, DMM_ORDER_LIFO };
        harness_t *h = h_new(&c, 0, 8192, DMM_PS_SIM);
        get_sizes(h);
        size_t f0 = fp(h);
        void *p[1000];
        p[0] = am(h, 100);
        size_t f1 = fp(h);
        cr_assert_gt(f1, f0, "a region taken");
        for (int i = 1; i < 1000; i++)
            p[i] = am(h, 1 + (size_t)i * 7 % 3000);
        size_t f2 = fp(h);
        cr_assert_gt(f2, f1, "grows when needed");
        cr_assert_geq(h->ps->peak, h->ps->footprint);
        for (int i = 0; i < 1000; i++)
            af(h, p[i]);
        cr_assert_eq(chk(h), 0);
        cr_assert_eq(fp(h), f1, "wholly free regions given back, one kept");
        /* the kept region serves again without the page source */
        uint64_t calls = h->cost.pagesrc_calls;
        for (int i = 0; i < 100; i++)
            af(h, am(h, 4000));
        cr_assert_eq(h->cost.pagesrc_calls, calls);
        h_end(h);
    }
}

/* coalesce=no: nothing merges, memory is reused per size */
Test(buddy, no_coalesce_no_merge)
{
    for (int f = 0; f < 2; f++) {
        combo_t c = { f, 1, 0, DMM_LIST_SLL, DMM_ORDER_FIFO };
        harness_t *h = h_new(&c, 0, 8192, DMM_PS_SIM);
        get_sizes(h);
        void *a = am(h, 1), *b = am(h, 1);
        af(h, a);
        af(h, b);
        cr_assert_eq(h->cost.coalesces, 0);
        cr_assert_eq(dmm_buddy_debug_listed(&h->a, 0, 0), 2);
        /* FIFO: a comes back first */
        cr_assert_eq(am(h, 1), a);
        cr_assert_eq(am(h, 1), b);
        cr_assert_eq(chk(h), 0);
        h_end(h);
    }
}

/* split=no: a free block of a larger size is not split for a smaller one */
Test(buddy, no_split_keeps_free_blocks_whole)
{
    for (int f = 0; f < 2; f++) {
        combo_t c = { f, 0, 0, DMM_LIST_DLL, DMM_ORDER_LIFO };
        harness_t *h = h_new(&c, 0, 8192, DMM_PS_SIM);
        get_sizes(h);
        void *big = am(h, S[4] - 16);
        af(h, big);
        cr_assert_eq(dmm_buddy_debug_listed(&h->a, 4, 0), 1);
        void *small = am(h, 1);
        cr_assert_neq((char *)small, (char *)big, "not cut from the freed block");
        cr_assert_eq(dmm_buddy_debug_listed(&h->a, 4, 0), 1);
        cr_assert_eq(am(h, S[4] - 16), big);
        cr_assert_eq(chk(h), 0);
        h_end(h);
    }
}
