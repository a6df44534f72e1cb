/* test_segregated.c - the classes "segregated", "sss" and "exact":
 * contract (alignment, usable size, page-map owner, payload writable),
 * random stress over every option combination with check() after every
 * operation and payload patterns verified, coalescing, splitting, size
 * classes, no headers in sss, one list per size in exact, bounded footprint
 * in a steady state, and destroy giving every chunk back. */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocators/core/alloc.h"
#include "allocators/core/freelist.h"
#include "allocators/core/pagesrc.h"
#include "allocators/classes/segfit.h"
#include "allocators/classes/registry.h"

/* ---- harness --------------------------------------------------------- */

typedef struct {
    dmm_pagesrc_t *ps;
    dmm_alloc_t a;
    dmm_cost_t cost;
    size_t fp0;
} h_t;

/* h_init under a release policy (rel; NULL: none). */
static void h_init_rel(h_t *h, dmm_class_t cls, size_t lo, size_t hi, int split, int coalesce,
                       int list, int fit, int order, unsigned lists, int mode,
                       const dmm_release_t *rel)
{
    memset(h, 0, sizeof *h);
    h->ps = malloc(sizeof *h->ps);
    cr_assert(h->ps);
    cr_assert_eq(dmm_pagesrc_init(h->ps, mode), 0);
    h->a.ops = dmm_class_ops(cls);
    cr_assert(h->a.ops, "class %d not linked", cls);
    h->a.desc = (dmm_alloc_desc_t){ .cls = cls, .lo = lo, .hi = hi, .split = (uint8_t)split,
                                    .coalesce = (uint8_t)coalesce, .list = (uint8_t)list,
                                    .fit = (uint8_t)fit, .order = (uint8_t)order,
                                    .lists = lists };
    h->a.owner = 1;
    h->a.ps = h->ps;
    h->a.cost = &h->cost;
    if (rel)
        h->a.release = *rel;
    cr_assert_eq(h->a.ops->init(&h->a), 0, "init: %s", strerror(errno));
    h->fp0 = h->ps->footprint;
}

static void h_init(h_t *h, dmm_class_t cls, size_t lo, size_t hi, int split, int coalesce,
                   int list, int fit, int order, unsigned lists, int mode)
{
    h_init_rel(h, cls, lo, hi, split, coalesce, list, fit, order, lists, mode, NULL);
}

/* Held for no chunk of the allocator: page-map pages, and chunks the page
 * source retains for reuse. */
static size_t map_bytes(const dmm_pagesrc_t *ps)
{
    return dmm_pagesrc_overhead(ps);
}

/* destroy gives everything back: what is left is the page map */
static void h_fini(h_t *h)
{
    h->a.ops->destroy(&h->a);
    cr_assert_eq(h->ps->footprint, map_bytes(h->ps), "destroy left %zu bytes held",
                 h->ps->footprint - map_bytes(h->ps));
    dmm_pagesrc_fini(h->ps);
    free(h->ps);
}

static void *h_malloc(h_t *h, size_t n)
{
    void *p = h->a.ops->malloc(&h->a, n);
    cr_assert(p, "malloc(%zu) failed: %s", n, strerror(errno));
    cr_assert_eq((uintptr_t)p & 15, 0, "malloc(%zu) = %p not 16-aligned", n, p);
    cr_assert_geq(h->a.ops->usable(&h->a, p), n);
    cr_assert_eq(dmm_pagesrc_owner(h->ps, p), 1u);
    return p;
}

static void h_check(h_t *h, const char *what)
{
    size_t v = h->a.ops->check(&h->a);
    cr_assert_eq(v, 0, "%s: check() found %zu violations", what, v);
}

static const dmm_class_t CLASSES[] = { DMM_CLASS_SEGREGATED, DMM_CLASS_SSS, DMM_CLASS_EXACT };
static const char *const LN[] = { "sll", "dll", "btree" };
static const char *const FN[] = { "first", "best", "exact" };
static const char *const ON[] = { "fifo", "lifo" };

static uint64_t rng_state;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* ---- contract ------------------------------------------------------- */

Test(contract, many_sizes_every_class_and_list)
{
    for (size_t c = 0; c < 3; c++)
        for (int list = 0; list < 3; list++) {
            h_t h;
            h_init(&h, CLASSES[c], 0, DMM_SIZE_INF, 1, 1, list, DMM_FIT_FIRST,
                   DMM_ORDER_LIFO, 0, DMM_PS_REAL);
            static void *ps[3000];
            size_t k = 0;
            for (size_t n = 1; n <= 20000; n += (n < 1100 ? 1 : 97))
                ps[k++] = h_malloc(&h, n);
            size_t big[] = { 65000, 65536, 70000, 131072, 300000, 1 << 20 };
            for (size_t i = 0; i < sizeof big / sizeof big[0]; i++)
                ps[k++] = h_malloc(&h, big[i]);
            h_check(&h, "after mallocs");
            for (size_t i = 0; i < k; i++)
                memset(ps[i], (int)i, h.a.ops->usable(&h.a, ps[i]));
            h_check(&h, "after writing every usable byte");
            for (size_t i = 0; i < k; i += 2)
                h.a.ops->free(&h.a, ps[i]);
            h_check(&h, "after freeing half");
            for (size_t i = 1; i < k; i += 2)
                h.a.ops->free(&h.a, ps[i]);
            h_check(&h, "after freeing all");
            h_fini(&h);
        }
}

Test(contract, narrow_ranges)
{
    struct { size_t lo, hi; } r[] = { { 0, 8 }, { 8, 64 }, { 100, 200 }, { 1000, 1100 },
                                      { 4096, 9000 }, { 8192, 65536 }, { 65536, 1 << 20 } };
    for (size_t c = 0; c < 3; c++)
        for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) {
            h_t h;
            h_init(&h, CLASSES[c], r[i].lo, r[i].hi, 1, 1, DMM_LIST_DLL, DMM_FIT_BEST,
                   DMM_ORDER_FIFO, 3, DMM_PS_REAL);
            void *p[64];
            size_t step = (r[i].hi - r[i].lo + 63) / 64;
            size_t k = 0;
            for (size_t n = r[i].lo + 1; n <= r[i].hi && k < 64; n += step ? step : 1)
                p[k++] = h_malloc(&h, n);
            for (size_t j = 0; j < k; j++)
                memset(p[j], 0xa5, h.a.ops->usable(&h.a, p[j]));
            h_check(&h, "narrow");
            for (size_t j = 0; j < k; j++)
                h.a.ops->free(&h.a, p[j]);
            h_check(&h, "narrow freed");
            h_fini(&h);
        }
}

Test(contract, bad_options_rejected)
{
    for (size_t c = 0; c < 3; c++) {
        dmm_pagesrc_t *ps = malloc(sizeof *ps);
        dmm_pagesrc_init(ps, DMM_PS_SIM);
        dmm_cost_t cost = { 0 };
        dmm_alloc_t a = { .ops = dmm_class_ops(CLASSES[c]), .owner = 1, .ps = ps, .cost = &cost };
        a.desc = (dmm_alloc_desc_t){ .cls = CLASSES[c], .lo = 0, .hi = 100, .list = 7 };
        errno = 0;
        cr_expect_eq(a.ops->init(&a), -1);
        cr_expect_eq(errno, EINVAL);
        a.desc = (dmm_alloc_desc_t){ .cls = CLASSES[c], .lo = 100, .hi = 100 };
        errno = 0;
        cr_expect_eq(a.ops->init(&a), -1);
        cr_expect_eq(errno, EINVAL);
        dmm_pagesrc_fini(ps);
        free(ps);
    }
}

/* ---- random stress ---------------------------------------------------- */

#define MAXLIVE 400

typedef struct {
    unsigned char *p;
    size_t n;
    unsigned char pat;
} live_t;

static size_t pick_size(size_t lo, size_t hi)
{
    size_t r = rnd() % 1000, n;
    if (r < 700)
        n = 1 + rnd() % 256;
    else if (r < 950)
        n = 1 + rnd() % 4096;
    else if (r < 995)
        n = 1 + rnd() % 40000;
    else
        n = 1 + rnd() % 150000;
    if (hi != DMM_SIZE_INF && hi - lo < (size_t)1 << 40)
        n = lo + 1 + n % (hi - lo);
    else
        n = lo + n;
    return n;
}

static void fill(live_t *l)
{
    memset(l->p, l->pat, l->n);
}

static void verify(const live_t *l, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (l->p[i] != l->pat)
            cr_assert_fail("%s: payload of %p (%zu bytes) corrupted at %zu", what, (void *)l->p,
                           l->n, i);
}

static void stress(h_t *h, size_t lo, size_t hi, unsigned nops, uint64_t seed, const char *name)
{
    static live_t live[MAXLIVE];
    size_t nlive = 0;
    rng_state = seed;
    for (unsigned op = 0; op < nops; op++) {
        unsigned r = (unsigned)(rnd() % 100);
        if (nlive < MAXLIVE && (r < 50 || nlive == 0)) {
            size_t n = pick_size(lo, hi);
            live_t *l = &live[nlive++];
            l->p = h->a.ops->malloc(&h->a, n);
            cr_assert(l->p, "%s op %u: malloc(%zu) failed", name, op, n);
            cr_assert_eq((uintptr_t)l->p & 15, 0);
            cr_assert_geq(h->a.ops->usable(&h->a, l->p), n, "%s: usable", name);
            cr_assert_eq(dmm_pagesrc_owner(h->ps, l->p), 1u);
            l->n = n;
            l->pat = (unsigned char)(rnd() | 1);
            fill(l);
        } else if (r < 90) {
            size_t i = rnd() % nlive;
            verify(&live[i], live[i].n, name);
            h->a.ops->free(&h->a, live[i].p);
            live[i] = live[--nlive];
        } else {
            size_t i = rnd() % nlive;
            size_t n = pick_size(lo, hi);
            if (h->a.ops->resize(&h->a, live[i].p, n) == 0) {
                verify(&live[i], live[i].n < n ? live[i].n : n, name);
                cr_assert_geq(h->a.ops->usable(&h->a, live[i].p), n, "%s: resize usable", name);
                live[i].n = n;
                fill(&live[i]);
            }
        }
        size_t v = h->a.ops->check(&h->a);
        if (v)
            cr_assert_fail("%s: op %u: check() = %zu", name, op, v);
    }
    for (size_t i = 0; i < nlive; i++) {
        verify(&live[i], live[i].n, name);
        h->a.ops->free(&h->a, live[i].p);
        size_t v = h->a.ops->check(&h->a);
        if (v)
            cr_assert_fail("%s: final free %zu: check() = %zu", name, i, v);
    }
}

/* After everything is freed with coalescing, the only chunk left is the
 * top's, all of it one free block, and every list is empty. */
static void expect_all_merged(h_t *h, const char *name)
{
    seg_t *s = h->a.state;
    size_t nchunks = 0;
    for (seg_chunk_t *c = s->chunks; c; c = c->next)
        nchunks++;
    cr_assert_leq(nchunks, 1, "%s: %zu chunks kept after freeing everything", name, nchunks);
    for (size_t i = 0; i < s->n; i++)
        cr_assert_eq(s->ents[i].l->count, 0, "%s: list %zu not empty", name, i);
    if (nchunks)
        cr_assert(s->top == (char *)s->chunks + 40 && s->top_size == s->chunks->len - 48,
                  "%s: the top is not the whole chunk", name);
}

static void stress_all_combinations(dmm_class_t cls, unsigned nops)
{
    unsigned combos = 0;
    for (int list = 0; list < 3; list++)
        for (int fit = 0; fit < 3; fit++)
            for (int order = 0; order < 2; order++)
                for (int split = 0; split < 2; split++)
                    for (int coal = 0; coal < 2; coal++) {
                        char name[128];
                        snprintf(name, sizeof name, "%s list=%s fit=%s order=%s split=%d coalesce=%d",
                                 dmm_class_name(cls), LN[list], FN[fit], ON[order], split, coal);
                        h_t h;
                        h_init(&h, cls, 0, DMM_SIZE_INF, split, coal, list, fit, order, 0,
                               DMM_PS_REAL);
                        stress(&h, 0, DMM_SIZE_INF, nops, 0x9e3779b97f4a7c15ull + combos, name);
                        if (coal && cls != DMM_CLASS_SSS)
                            expect_all_merged(&h, name);
                        h_fini(&h);
                        combos++;
                    }
    cr_assert_eq(combos, 72);
}

/* Operations per combination, with check() after each; a third of them
 * under AddressSanitizer, which makes every check several times slower (the
 * full count runs in the plain pass of make test). */
#ifdef __SANITIZE_ADDRESS__
#define OPS(n) ((n) / 3)
#else
#define OPS(n) (n)
#endif

Test(stress, segregated_72_combinations, .timeout = 600)
{
    stress_all_combinations(DMM_CLASS_SEGREGATED, OPS(20000));
}

Test(stress, exact_72_combinations, .timeout = 600)
{
    stress_all_combinations(DMM_CLASS_EXACT, OPS(6000));
}

Test(stress, sss_72_combinations, .timeout = 600)
{
    stress_all_combinations(DMM_CLASS_SSS, OPS(6000));
}

Test(stress, segregated_ranges_and_list_counts, .timeout = 600)
{
    unsigned lists[] = { 1, 2, 3, 10, 17, 64 };
    struct { size_t lo, hi; } r[] = { { 0, 512 }, { 64, 8192 }, { 8192, 200000 }, { 0, DMM_SIZE_INF } };
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
        for (size_t j = 0; j < sizeof r / sizeof r[0]; j++) {
            char name[96];
            snprintf(name, sizeof name, "segregated lists=%u (%zu,%zu]", lists[i], r[j].lo, r[j].hi);
            h_t h;
            h_init(&h, DMM_CLASS_SEGREGATED, r[j].lo, r[j].hi, 1, 1, DMM_LIST_BTREE,
                   DMM_FIT_BEST, DMM_ORDER_FIFO, lists[i], DMM_PS_SIM);
            stress(&h, r[j].lo, r[j].hi, 5000, 77 + i * 10 + j, name);
            expect_all_merged(&h, name);
            h_fini(&h);
        }
}

/* ---- segregated specifics ---------------------------------------------- */

Test(segregated, s10_size_classes)
{
    h_t h;
    h_init(&h, DMM_CLASS_SEGREGATED, 0, DMM_SIZE_INF, 1, 1, DMM_LIST_DLL, DMM_FIT_FIRST,
           DMM_ORDER_LIFO, 0, DMM_PS_SIM);
    seg_t *s = h.a.state;
    cr_assert_eq(s->n, 10);
    cr_assert_eq(s->minblk, 48);
    for (size_t i = 0; i < 9; i++)
        cr_expect_eq(s->ents[i].key, (size_t)48 << i, "bound %zu = %zu", i, s->ents[i].key);
    cr_expect_eq(s->ents[9].key, SIZE_MAX);
    cr_expect_eq(dmm_seg_class_of(s, 48), 0);
    cr_expect_eq(dmm_seg_class_of(s, 64), 1);
    cr_expect_eq(dmm_seg_class_of(s, 96), 1);
    cr_expect_eq(dmm_seg_class_of(s, 12288), 8);
    cr_expect_eq(dmm_seg_class_of(s, 12304), 9);
    cr_expect_eq(dmm_seg_class_of(s, (size_t)1 << 40), 9);
    h_fini(&h);

    /* a bounded range wider than the lists: steps of 2^k */
    h_init(&h, DMM_CLASS_SEGREGATED, 8, 7832240, 0, 1, DMM_LIST_SLL, DMM_FIT_FIRST,
           DMM_ORDER_LIFO, 10, DMM_PS_SIM);
    s = h.a.state;
    cr_expect_eq(s->ents[0].key, 32);
    cr_expect_eq(s->ents[1].key, 128);          /* k = ceil(18 / 9) = 2 */
    cr_expect_eq(s->ents[8].key, (size_t)32 << 16);
    cr_expect_eq(s->ents[9].key, SIZE_MAX);
    h_fini(&h);
}

Test(segregated, split_counted_and_used)
{
    for (int split = 0; split < 2; split++) {
        h_t h;
        h_init(&h, DMM_CLASS_SEGREGATED, 0, DMM_SIZE_INF, split, 0, DMM_LIST_SLL,
               DMM_FIT_FIRST, DMM_ORDER_LIFO, 0, DMM_PS_SIM);
        void *big = h_malloc(&h, 4000);
        void *guard = h_malloc(&h, 16);
        h.a.ops->free(&h.a, big);
        uint64_t s0 = h.cost.splits;
        void *small = h_malloc(&h, 100);
        h_check(&h, "after split");
        if (split) {
            cr_expect_eq(small, big, "split: the freed big block is reused");
            cr_expect_eq(h.cost.splits, s0 + 1);
            /* the rest of the big block serves the next request */
            void *next = h_malloc(&h, 100);
            cr_expect_eq((char *)next, (char *)small + 112);
            h.a.ops->free(&h.a, next);
        } else {
            cr_expect_neq(small, big, "no split: a small request does not take a big block");
            cr_expect_eq(h.cost.splits, s0);
        }
        h.a.ops->free(&h.a, small);
        h.a.ops->free(&h.a, guard);
        h_check(&h, "end");
        h_fini(&h);
    }
}

Test(segregated, coalescing_merges)
{
    h_t h;
    h_init(&h, DMM_CLASS_SEGREGATED, 0, DMM_SIZE_INF, 0, 1, DMM_LIST_DLL, DMM_FIT_FIRST,
           DMM_ORDER_LIFO, 0, DMM_PS_SIM);
    char *a = h_malloc(&h, 200), *b = h_malloc(&h, 200), *c = h_malloc(&h, 200);
    char *d = h_malloc(&h, 200);
    cr_assert_eq(b, a + 208);
    cr_assert_eq(c, b + 208);
    h.a.ops->free(&h.a, a);
    h.a.ops->free(&h.a, c);
    uint64_t c0 = h.cost.coalesces;
    h.a.ops->free(&h.a, b);
    cr_expect_eq(h.cost.coalesces, c0 + 2, "b merged with both neighbours");
    h_check(&h, "merged");
    /* one free block of 3 * 208 bytes at a */
    char *e = h_malloc(&h, 3 * 208 - 8);
    cr_expect_eq(e, a);
    h.a.ops->free(&h.a, e);
    /* freeing the block before the top merges everything into the top */
    h.a.ops->free(&h.a, d);
    h_check(&h, "all free");
    expect_all_merged(&h, "coalescing_merges");
    h_fini(&h);
}

Test(segregated, wholly_free_chunks_returned)
{
    h_t h;
    h_init(&h, DMM_CLASS_SEGREGATED, 0, DMM_SIZE_INF, 1, 1, DMM_LIST_DLL, DMM_FIT_BEST,
           DMM_ORDER_FIFO, 0, DMM_PS_SIM);
    static void *p[2000];
    for (int i = 0; i < 2000; i++)
        p[i] = h_malloc(&h, 1000);      /* ~2 MB: about 31 chunks */
    size_t fp_full = h.ps->footprint;
    for (int i = 0; i < 2000; i++)
        h.a.ops->free(&h.a, p[i]);
    h_check(&h, "freed");
    expect_all_merged(&h, "wholly_free_chunks_returned");
    cr_expect_leq(h.ps->footprint, h.fp0 + map_bytes(h.ps) + (64 << 10));
    cr_expect_gt(fp_full, h.ps->footprint + (1 << 20));
    /* a block bigger than a chunk gets its own chunk, given back on free */
    size_t out = h.ps->chunk_bytes;   /* the page source may retain what comes back */
    void *q = h_malloc(&h, 500000);
    cr_expect_geq(h.ps->chunk_bytes, out + 500000);
    h.a.ops->free(&h.a, q);
    cr_expect_eq(h.ps->chunk_bytes, out);
    h_fini(&h);
}

Test(segregated, resize_in_place_and_into_next)
{
    h_t h;
    h_init(&h, DMM_CLASS_SEGREGATED, 0, DMM_SIZE_INF, 1, 1, DMM_LIST_DLL, DMM_FIT_FIRST,
           DMM_ORDER_LIFO, 0, DMM_PS_SIM);
    char *a = h_malloc(&h, 500), *b = h_malloc(&h, 500), *c = h_malloc(&h, 16);
    cr_expect_eq(h.a.ops->resize(&h.a, a, 400), 0, "shrink in place");
    h_check(&h, "shrunk");
    cr_expect_eq(h.a.ops->resize(&h.a, a, 500), 0, "grow back into the freed tail");
    h_check(&h, "grown back");
    cr_expect_eq(h.a.ops->resize(&h.a, a, 600), -1, "next block in use");
    h.a.ops->free(&h.a, b);
    cr_expect_eq(h.a.ops->resize(&h.a, a, 900), 0, "grow into the free next block");
    cr_expect_geq(h.a.ops->usable(&h.a, a), 900);
    h_check(&h, "grown");
    cr_expect_eq(h.a.ops->resize(&h.a, c, 3000), 0, "grow into the top");
    h_check(&h, "grown into top");
    h.a.ops->free(&h.a, a);
    h.a.ops->free(&h.a, c);
    expect_all_merged(&h, "resize");
    h_fini(&h);

    /* without coalescing a block only shrinks in place */
    h_init(&h, DMM_CLASS_SEGREGATED, 0, DMM_SIZE_INF, 0, 0, DMM_LIST_SLL, DMM_FIT_FIRST,
           DMM_ORDER_LIFO, 0, DMM_PS_SIM);
    a = h_malloc(&h, 500);
    cr_expect_eq(h.a.ops->resize(&h.a, a, 500), 0);
    cr_expect_eq(h.a.ops->resize(&h.a, a, 2000), -1);
    h_check(&h, "no coalesce");
    h_fini(&h);
}

/* ---- sss specifics ------------------------------------------------------ */

Test(sss, no_header)
{
    h_t h;
    h_init(&h, DMM_CLASS_SSS, 0, DMM_SIZE_INF, 1, 1, DMM_LIST_SLL, DMM_FIT_BEST,
           DMM_ORDER_LIFO, 0, DMM_PS_SIM);
    size_t sizes[] = { 16, 48, 64, 208, 1024 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        char *p = h_malloc(&h, sizes[i]), *q = h_malloc(&h, sizes[i]);
        cr_expect_eq(q - p, (ptrdiff_t)sizes[i], "%zu-byte blocks %td apart", sizes[i], q - p);
        cr_expect_eq(h.a.ops->usable(&h.a, p), sizes[i]);
    }
    /* classes: 16-byte steps to 1024, then four per doubling */
    char *p = h_malloc(&h, 1000), *q = h_malloc(&h, 1000);
    cr_expect_eq(q - p, 1008);
    p = h_malloc(&h, 1025);
    q = h_malloc(&h, 1100);
    cr_expect_eq(q - p, 1280);
    p = h_malloc(&h, 5000);
    cr_expect_eq(h.a.ops->usable(&h.a, p), 5120);
    p = h_malloc(&h, 8192);
    cr_expect_eq(h.a.ops->usable(&h.a, p), 8192);
    /* above 8192: an area of its own, given back on free */
    size_t fp = h.ps->footprint;
    p = h_malloc(&h, 8193);
    cr_expect_eq((uintptr_t)p & 0xffff, 32);
    cr_expect_eq(h.a.ops->usable(&h.a, p), 12288 - 32);
    cr_expect_eq(h.ps->footprint, fp + 12288);
    h.a.ops->free(&h.a, p);
    cr_expect_eq(h.ps->footprint, fp);
    h_check(&h, "sss");
    /* DLL and BTREE nodes need 32 and 48 bytes: the smallest blocks grow */
    h_fini(&h);
    h_init(&h, DMM_CLASS_SSS, 0, 100, 0, 0, DMM_LIST_BTREE, DMM_FIT_FIRST, DMM_ORDER_FIFO, 0,
           DMM_PS_SIM);
    p = h_malloc(&h, 1);
    q = h_malloc(&h, 1);
    cr_expect_eq(q - p, 48);
    h_fini(&h);
}

/* The bound codegen reads (dmm_sss_usable_max): every block of the range
 * has at most that many usable bytes, the largest exactly, and none is a
 * one-block area (dmm_sss_usable_classed agrees with usable()); a range
 * that reaches past the classes has none. */
Test(sss, a_range_inside_the_classes_bounds_its_blocks)
{
    static const struct {
        size_t lo, hi;
        int list;
        size_t max;
    } r[] = {
        { 0, 127, DMM_LIST_SLL, 128 },   { 0, 64, DMM_LIST_SLL, 64 },
        { 0, 8, DMM_LIST_DLL, 32 },      { 0, 16, DMM_LIST_BTREE, 48 },
        { 1024, 1100, DMM_LIST_SLL, 1280 }, { 100, 8192, DMM_LIST_SLL, 8192 },
        { 0, 8193, DMM_LIST_SLL, SIZE_MAX }, { 8192, 20000, DMM_LIST_SLL, SIZE_MAX },
        { 0, DMM_SIZE_INF, DMM_LIST_SLL, SIZE_MAX },
    };
    for (size_t k = 0; k < sizeof r / sizeof r[0]; k++) {
        dmm_alloc_desc_t d = { .cls = DMM_CLASS_SSS, .lo = r[k].lo, .hi = r[k].hi,
                               .list = (uint8_t)r[k].list };
        cr_expect_eq(dmm_sss_usable_max(&d), r[k].max, "(%zu, %zu]", r[k].lo, r[k].hi);
        if (r[k].max == SIZE_MAX)
            continue;
        h_t h;
        h_init(&h, DMM_CLASS_SSS, r[k].lo, r[k].hi, 0, 0, r[k].list, DMM_FIT_FIRST,
               DMM_ORDER_LIFO, 0, DMM_PS_SIM);
        for (size_t n = r[k].lo + 1; n <= r[k].hi; n += 1 + n / 64) {
            void *p = h_malloc(&h, n);
            size_t u = h.a.ops->usable(&h.a, p);
            cr_assert_eq(dmm_sss_usable_classed(&h.a, p), u, "%zu bytes", n);
            cr_assert_leq(u, r[k].max, "(%zu, %zu]: %zu bytes", r[k].lo, r[k].hi, n);
        }
        void *p = h_malloc(&h, r[k].hi);
        cr_expect_eq(h.a.ops->usable(&h.a, p), r[k].max, "(%zu, %zu]", r[k].lo, r[k].hi);
        h_fini(&h);
    }
}

Test(sss, freed_blocks_reused_in_order)
{
    for (int list = DMM_LIST_SLL; list <= DMM_LIST_DLL; list++)
        for (int order = 0; order < 2; order++) {
            h_t h;
            h_init(&h, DMM_CLASS_SSS, 0, 4096, 0, 0, list, DMM_FIT_FIRST, order, 0,
                   DMM_PS_SIM);
            void *a = h_malloc(&h, 100), *b = h_malloc(&h, 100), *d = h_malloc(&h, 100);
            h.a.ops->free(&h.a, a);
            h.a.ops->free(&h.a, b);
            h.a.ops->free(&h.a, d);
            h_check(&h, "three freed");
            void *c = h_malloc(&h, 100);
            cr_expect_eq(c, order == DMM_ORDER_LIFO ? d : a, "%s %s", LN[list], ON[order]);
            c = h_malloc(&h, 100);
            cr_expect_eq(c, b, "%s %s", LN[list], ON[order]);
            cr_expect_eq(h.a.ops->resize(&h.a, c, 112), 0);
            cr_expect_eq(h.a.ops->resize(&h.a, c, 113), -1);
            h_check(&h, "order");
            /* emptied and refilled: FIFO's tail starts again */
            h_malloc(&h, 100);
            h.a.ops->free(&h.a, c);
            cr_expect_eq(h_malloc(&h, 100), c);
            h_check(&h, "refilled");
            h_fini(&h);
        }
}

/* sss keeps an SLL as links alone; check() follows them and sees a link
 * out of the class's blocks, a cycle, and a FIFO tail that is not the last
 * node. */
Test(sss, check_sees_a_broken_sll)
{
    for (int order = 0; order < 2; order++) {
        h_t h;
        h_init(&h, DMM_CLASS_SSS, 0, 4096, 0, 0, DMM_LIST_SLL, DMM_FIT_FIRST, order, 0,
               DMM_PS_SIM);
        void **p[4];
        for (int i = 0; i < 4; i++)
            p[i] = h_malloc(&h, 48);
        void *other = h_malloc(&h, 64);
        for (int i = 0; i < 3; i++)
            h.a.ops->free(&h.a, p[i]);
        h_check(&h, "sound");
        void **first = order == DMM_ORDER_LIFO ? p[2] : p[0];
        void *link = *first;
        *first = other;   /* a block of another class */
        cr_expect_gt(h.a.ops->check(&h.a), 0, "%s: a foreign link", ON[order]);
        *first = (char *)p[1] + 16;   /* inside a block */
        cr_expect_gt(h.a.ops->check(&h.a), 0, "%s: a link into a block", ON[order]);
        *first = first;   /* a cycle */
        cr_expect_gt(h.a.ops->check(&h.a), 0, "%s: a cycle", ON[order]);
        *first = NULL;    /* cut short: FIFO's tail is no longer the last */
        size_t v = h.a.ops->check(&h.a);
        cr_expect_gt(v, 0, "%s: a list cut short", ON[order]);
        *first = link;
        h_check(&h, "mended");
        h_fini(&h);
    }
}

/* Under a release policy sss keeps an SLL per area: an area's blocks come
 * back to it, LIFO, the class takes from the areas in the order they got a
 * free block again (order=lifo: the latest first), and an area given back
 * takes its blocks with it, no node visited. */
Test(sss, an_sll_under_a_release_policy_is_kept_per_area)
{
    const dmm_release_t at_once = { .on = 1, .keep = 0, .delay = 0 };
    for (int order = 0; order < 2; order++) {
        h_t h;
        h_init_rel(&h, DMM_CLASS_SSS, 0, 4096, 0, 0, DMM_LIST_SLL, DMM_FIT_FIRST, order, 0,
                   DMM_PS_SIM, &at_once);
        const size_t per = (65536 - 32) / 64;
        char **b = malloc(3 * per * sizeof *b);
        for (size_t i = 0; i < 3 * per; i++)
            b[i] = h_malloc(&h, 64);
        cr_expect_eq((uintptr_t)b[0] & 0xffff, 32, "%s", ON[order]);
        cr_expect_eq((uintptr_t)b[per] & 0xffff, 32, "%s: the next area", ON[order]);
        /* area 0 gets a block back, then area 1, then area 0 another */
        char *x0 = b[5], *x1 = b[per + 7], *y0 = b[9];
        h.a.ops->free(&h.a, x0);
        h.a.ops->free(&h.a, x1);
        h.a.ops->free(&h.a, y0);
        h_check(&h, "three back");
        char *want[3] = { y0, x0, x1 };
        if (order == DMM_ORDER_LIFO)
            want[0] = x1, want[1] = y0, want[2] = x0;
        for (int k = 0; k < 3; k++)
            cr_expect_eq(h_malloc(&h, 64), want[k], "%s: malloc %d", ON[order], k);
        cr_expect_neq(h_malloc(&h, 64), NULL);   /* no list: the bump */
        h_check(&h, "taken again");
        /* area 1 emptied: given back at its last free, its blocks with it */
        size_t out = h.ps->chunk_bytes;   /* the page source may retain it */
        for (size_t i = per; i < 2 * per - 1; i++)
            h.a.ops->free(&h.a, b[i]);
        uint64_t nodes = h.cost.nodes;
        h.a.ops->free(&h.a, b[2 * per - 1]);
        cr_expect_eq(h.cost.nodes, nodes + 1, "%s: the last free visits its own node alone",
                     ON[order]);
        cr_expect_eq(h.ps->chunk_bytes, out - 65536, "%s", ON[order]);
        h_check(&h, "area given back");
        free(b);
        h_fini(&h);
    }
}

/* check() follows each area's list: a link to another area's block, into a
 * block, a cycle, and a list cut short are each seen. */
Test(sss, check_sees_a_broken_list_of_an_area)
{
    const dmm_release_t never = { .on = 1, .keep = DMM_SIZE_INF, .delay = UINT64_MAX };
    h_t h;
    h_init_rel(&h, DMM_CLASS_SSS, 0, 4096, 0, 0, DMM_LIST_SLL, DMM_FIT_FIRST, DMM_ORDER_LIFO, 0,
               DMM_PS_SIM, &never);
    const size_t per = (65536 - 32) / 48;
    void ***p = malloc((per + 2) * sizeof *p);
    for (size_t i = 0; i < per + 2; i++)
        p[i] = h_malloc(&h, 48);
    h.a.ops->free(&h.a, p[1]);
    h.a.ops->free(&h.a, p[2]);   /* area 0's list: p[2], p[1] */
    h.a.ops->free(&h.a, p[per]); /* area 1's: p[per] */
    h_check(&h, "sound");
    void **first = p[2];
    void *link = *first;
    *first = p[per];   /* a block of another area */
    cr_expect_gt(h.a.ops->check(&h.a), 0, "a link to another area");
    *first = (char *)p[3] + 16;   /* inside a block */
    cr_expect_gt(h.a.ops->check(&h.a), 0, "a link into a block");
    *first = first;   /* a cycle */
    cr_expect_gt(h.a.ops->check(&h.a), 0, "a cycle");
    *first = NULL;    /* cut short: p[1] is free, yet listed nowhere */
    cr_expect_gt(h.a.ops->check(&h.a), 0, "a list cut short");
    *first = link;
    h_check(&h, "mended");
    free(p);
    h_fini(&h);
}

/* ---- exact specifics ---------------------------------------------------- */

static void size_is(void *block, size_t size, void *arg)
{
    (void)block;
    size_t *kv = arg;
    if (size != kv[0])
        kv[1]++;
}

Test(exact, one_list_per_size)
{
    h_t h;
    h_init(&h, DMM_CLASS_EXACT, 0, DMM_SIZE_INF, 0, 0, DMM_LIST_SLL, DMM_FIT_EXACT,
           DMM_ORDER_LIFO, 0, DMM_PS_SIM);
    void *p = h_malloc(&h, 200);
    h.a.ops->free(&h.a, p);
    void *q = h_malloc(&h, 100);
    cr_expect_neq(q, p, "a 100-byte request never gets the free 200-byte block");
    void *r = h_malloc(&h, 200);
    cr_expect_eq(r, p, "the 200-byte list gives its block back");
    void *s2 = h_malloc(&h, 195);     /* same block size (208): same list */
    cr_expect_neq(s2, p);
    h.a.ops->free(&h.a, s2);
    void *t = h_malloc(&h, 200);
    cr_expect_eq(t, s2);
    /* a random workload: every list holds blocks of exactly its size */
    static void *live[500];
    rng_state = 42;
    for (int i = 0; i < 500; i++)
        live[i] = h_malloc(&h, 1 + rnd() % 3000);
    for (int i = 0; i < 500; i += 2)
        h.a.ops->free(&h.a, live[i]);
    h_check(&h, "exact");
    seg_t *s = h.a.state;
    cr_expect_gt(s->n, 100, "one list per distinct size (%zu)", s->n);
    cr_expect_eq(s->ents[0].l->count, 0, "nothing under the smallest size");
    for (size_t i = 1; i < s->n; i++) {
        size_t kv[2] = { s->ents[i].key, 0 };
        dmm_flist_walk(s->ents[i].l, size_is, kv);
        cr_expect_eq(kv[1], 0, "list of %zu holds %zu blocks of other sizes", kv[0], kv[1]);
    }
    h_fini(&h);
}

Test(exact, split_takes_larger_size)
{
    h_t h;
    h_init(&h, DMM_CLASS_EXACT, 0, DMM_SIZE_INF, 1, 0, DMM_LIST_DLL, DMM_FIT_EXACT,
           DMM_ORDER_FIFO, 0, DMM_PS_SIM);
    char *p = h_malloc(&h, 1000);
    void *g = h_malloc(&h, 16);
    h.a.ops->free(&h.a, p);
    uint64_t s0 = h.cost.splits;
    char *q = h_malloc(&h, 100);
    cr_expect_eq(q, p, "a larger size's block is split");
    cr_expect_eq(h.cost.splits, s0 + 1);
    h_check(&h, "split");
    /* the rest (1008 - 112 = 896) sits under size 112's list; a new size
     * 896 takes it over */
    char *r = h_malloc(&h, 888);
    cr_expect_eq(r, p + 112);
    h_check(&h, "migrated");
    h.a.ops->free(&h.a, q);
    h.a.ops->free(&h.a, r);
    h.a.ops->free(&h.a, g);
    h_check(&h, "end");
    h_fini(&h);
}

/* ---- footprint ---------------------------------------------------------- */

/* The same 1000 sizes allocated and freed 50 times in different orders:
 * with coalescing (or sss, whose areas serve the same sizes again) the peak
 * after the first round never grows; without splitting or coalescing free
 * blocks are reused whole and the peak settles within twice the first.
 * (split=yes with coalesce=no has no such bound: small requests keep
 * splitting the large free blocks and nothing rebuilds them.) */
Test(footprint, steady_state_bounded, .timeout = 300)
{
    for (size_t c = 0; c < 3; c++)
        for (int coal = 0; coal < 2; coal++) {
            h_t h;
            h_init(&h, CLASSES[c], 0, DMM_SIZE_INF, coal, coal, DMM_LIST_DLL, DMM_FIT_FIRST,
                   DMM_ORDER_LIFO, 0, DMM_PS_SIM);
            static void *p[1000];
            static size_t n[1000];
            rng_state = 1234;
            for (int i = 0; i < 1000; i++)
                n[i] = 1 + rnd() % 2000;
            size_t peak1 = 0, live = 0;
            for (int i = 0; i < 1000; i++)
                live += n[i];
            for (int round = 0; round < 50; round++) {
                for (int i = 0; i < 1000; i++)
                    p[i] = h_malloc(&h, n[(i + round * 7) % 1000]);
                for (int i = 0; i < 1000; i++)
                    h.a.ops->free(&h.a, p[(i * 13 + round) % 1000]);
                if (round == 0)
                    peak1 = h.ps->peak;
            }
            h_check(&h, "steady");
            const char *name = dmm_class_name(CLASSES[c]);
            if (coal || CLASSES[c] == DMM_CLASS_SSS)
                cr_expect_eq(h.ps->peak, peak1, "%s coalesce=%d: peak %zu after 50 rounds, %zu after 1",
                             name, coal, h.ps->peak, peak1);
            else
                cr_expect_leq(h.ps->peak, 2 * peak1, "%s: peak %zu after 50 rounds, %zu after 1",
                              name, h.ps->peak, peak1);
            /* sss: up to one 64 KiB area per class that is only partly used */
            size_t slack = CLASSES[c] == DMM_CLASS_SSS ? 76 * (64 << 10) : (256 << 10);
            cr_expect_leq(peak1, 2 * live + slack, "%s: peak %zu for %zu live bytes", name, peak1,
                          live);
            h_fini(&h);
        }
}
