/* test_freelist.c - the free-block containers (allocators/core/freelist.h) in all
 * 18 combinations of kind x fit x order, against a reference model: which
 * block each take() must return, the walk order, remove() of listed and
 * unlisted blocks, exact node counts in hand cases, the AVL height bound, a
 * 100k-operation random stress with check() after every operation, and a
 * printed micro-benchmark. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "allocators/core/freelist.h"

/* ---- combinations ---- */

typedef struct combo {
    int kind, fit, order;
} combo_t;

static const char *kind_name[] = { "sll", "dll", "btree" };
static const char *fit_name[] = { "first", "best", "exact" };
static const char *order_name[] = { "fifo", "lifo" };

static combo_t all_combos[18];

static void fill_combos(void)
{
    int i = 0;
    for (int k = 0; k < 3; k++)
        for (int f = 0; f < 3; f++)
            for (int o = 0; o < 2; o++)
                all_combos[i++] = (combo_t){ k, f, o };
}

#define COMBO_PARAMS(name)                                                    \
    ParameterizedTestParameters(freelist, name)                               \
    {                                                                         \
        fill_combos();                                                        \
        return cr_make_param_array(combo_t, all_combos, 18);                  \
    }

#define CFMT "%s/%s/%s"
#define CARG(c) kind_name[(c)->kind], fit_name[(c)->fit], order_name[(c)->order]

/* ---- deterministic random numbers ---- */

static uint64_t rng_state;
static uint64_t rnd(void)
{
    uint64_t x = rng_state += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
static size_t rnd_below(size_t n) { return (size_t)(rnd() % n); }

/* ---- the arena: slots of SLOT bytes carved from one aligned buffer ---- */

#define SLOT 512
#define NSLOTS 256

static unsigned char *arena;

static void *slot(size_t i) { return arena + i * SLOT; }

static void arena_setup(void)
{
    arena = aligned_alloc(64, (size_t)SLOT * NSLOTS);
    cr_assert_not_null(arena);
    memset(arena, 0xA5, (size_t)SLOT * NSLOTS);
}

static void arena_teardown(void) { free(arena); }

/* A block not in a list: its memory holds what a program might leave. */
static void scribble(void *b, size_t n)
{
    unsigned char *p = b;
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)rnd();
}

/* ---- the reference model ---- */

typedef struct mentry {
    void    *addr;
    size_t   size;
    uint64_t ord;       /* insertion number */
} mentry_t;

typedef struct model {
    combo_t  c;
    mentry_t e[NSLOTS];
    size_t   n;
    uint64_t ord;
} model_t;

/* Position in policy order: FIFO oldest first, LIFO newest first. */
static int64_t pol(const model_t *m, const mentry_t *e)
{
    return m->c.order == DMM_ORDER_LIFO ? -(int64_t)e->ord : (int64_t)e->ord;
}

/* Does a come before b in list order (SLL/DLL) or in-order (BTREE)? */
static int before(const model_t *m, const mentry_t *a, const mentry_t *b)
{
    if (m->c.kind == DMM_LIST_BTREE && a->size != b->size)
        return a->size < b->size;
    return pol(m, a) < pol(m, b);
}

static void model_insert(model_t *m, void *addr, size_t size)
{
    m->e[m->n++] = (mentry_t){ addr, size, m->ord++ };
}

/* The index the list must give for want, or -1. */
static ssize_t model_choose(const model_t *m, size_t want)
{
    int fit = m->c.fit;
    if (m->c.kind == DMM_LIST_BTREE && fit == DMM_FIT_FIRST)
        fit = DMM_FIT_BEST;         /* the tree's order is by size */
    ssize_t best = -1;
    for (size_t i = 0; i < m->n; i++) {
        const mentry_t *e = &m->e[i];
        if (fit == DMM_FIT_EXACT ? e->size != want : e->size < want)
            continue;
        if (best < 0) {
            best = (ssize_t)i;
            continue;
        }
        const mentry_t *b = &m->e[best];
        if (fit == DMM_FIT_BEST && e->size != b->size) {
            if (e->size < b->size)
                best = (ssize_t)i;
        } else if (pol(m, e) < pol(m, b)) {
            best = (ssize_t)i;
        }
    }
    return best;
}

static void model_drop(model_t *m, size_t i) { m->e[i] = m->e[--m->n]; }

/* ---- comparing the list with the model ---- */

typedef struct walked {
    void  *addr[NSLOTS + 1];
    size_t size[NSLOTS + 1];
    size_t n;
} walked_t;

static void walk_fn(void *b, size_t size, void *arg)
{
    walked_t *w = arg;
    if (w->n <= NSLOTS) {
        w->addr[w->n] = b;
        w->size[w->n] = size;
    }
    w->n++;
}

static const model_t *sort_model;
static int cmp_entries(const void *a, const void *b)
{
    return before(sort_model, a, b) ? -1 : before(sort_model, b, a) ? 1 : 0;
}

static void expect_same(const dmm_flist_t *l, const model_t *m, const char *when)
{
    cr_assert_eq(dmm_flist_check(l), 0, CFMT ": check() after %s", CARG(&m->c), when);
    cr_assert_eq(l->count, m->n, CFMT ": count after %s", CARG(&m->c), when);
    size_t bytes = 0;
    for (size_t i = 0; i < m->n; i++)
        bytes += m->e[i].size;
    cr_assert_eq(l->bytes, bytes, CFMT ": bytes after %s", CARG(&m->c), when);

    static walked_t w;
    w.n = 0;
    dmm_flist_walk(l, walk_fn, &w);
    cr_assert_eq(w.n, m->n, CFMT ": walk count after %s", CARG(&m->c), when);
    static mentry_t sorted[NSLOTS];
    memcpy(sorted, m->e, m->n * sizeof *sorted);
    sort_model = m;
    qsort(sorted, m->n, sizeof *sorted, cmp_entries);
    for (size_t i = 0; i < m->n; i++) {
        cr_assert_eq(w.addr[i], sorted[i].addr, CFMT ": walk[%zu] after %s", CARG(&m->c), i, when);
        cr_assert_eq(w.size[i], sorted[i].size, CFMT ": walk size[%zu] after %s", CARG(&m->c), i,
                     when);
    }
}

/* A random block size for a kind: few distinct values, so ties happen. */
static size_t rnd_size(int kind)
{
    size_t min = dmm_flist_min_block(kind);
    return min + 64 * rnd_below(8);   /* up to min + 448 <= SLOT */
}

/* ======================================================================
 * Basic facts
 * ====================================================================== */

Test(freelist, min_block)
{
    cr_assert_eq(dmm_flist_min_block(DMM_LIST_SLL), 16);
    cr_assert_eq(dmm_flist_min_block(DMM_LIST_DLL), 32);
    cr_assert_eq(dmm_flist_min_block(DMM_LIST_BTREE), 48);
    cr_assert_eq(sizeof(dmm_fnode_t), 48);
}

/* A list without counters counts nothing and works the same. */
Test(freelist, null_cost, .init = arena_setup, .fini = arena_teardown)
{
    for (int kind = 0; kind < 3; kind++) {
        dmm_flist_t l;
        dmm_flist_init(&l, kind, DMM_FIT_BEST, DMM_ORDER_LIFO, NULL);
        for (size_t i = 0; i < 10; i++)
            dmm_flist_insert(&l, slot(i), 48 + 16 * i);
        cr_assert_eq(dmm_flist_remove(&l, slot(3)), 0);
        size_t got = 0;
        cr_assert_eq(dmm_flist_take(&l, 90, &got), slot(4));
        cr_assert_eq(got, 48 + 16 * 4);
        cr_assert_eq(dmm_flist_check(&l), 0);
        cr_assert_eq(l.count, 8);
    }
}

/* ======================================================================
 * Hand-written sequences checked against the model
 * ====================================================================== */

COMBO_PARAMS(model_sequence)
ParameterizedTest(combo_t *c, freelist, model_sequence, .init = arena_setup,
                  .fini = arena_teardown)
{
    static model_t m;
    memset(&m, 0, sizeof m);
    m.c = *c;
    dmm_cost_t cost = { 0 };
    dmm_flist_t l;
    dmm_flist_init(&l, c->kind, c->fit, c->order, &cost);
    expect_same(&l, &m, "init");
    size_t min = dmm_flist_min_block(c->kind);

    /* Sizes with repeats, out of order. */
    const size_t mult[] = { 4, 2, 7, 2, 4, 9, 1, 4, 2, 7, 3, 12 };
    const size_t nb = sizeof mult / sizeof mult[0];
    for (size_t i = 0; i < nb; i++) {
        size_t sz = min + 16 * mult[i];
        dmm_flist_insert(&l, slot(i), sz);
        model_insert(&m, slot(i), sz);
        expect_same(&l, &m, "insert");
    }
    cr_assert_eq(dmm_flist_take(&l, min + 16 * 13, NULL), NULL, CFMT ": nothing is that large",
                 CARG(c));
    if (c->fit == DMM_FIT_EXACT) {
        cr_assert_eq(dmm_flist_take(&l, min + 16 * 5, NULL), NULL, CFMT ": no exact 5", CARG(c));
        cr_assert_eq(dmm_flist_take(&l, min + 16 * 8, NULL), NULL, CFMT ": no exact 8", CARG(c));
    }
    expect_same(&l, &m, "failed takes");

    /* Take every want from small to large, twice, and interleave removes. */
    const size_t wants[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 2, 4, 4, 2, 7, 12, 1, 1 };
    for (size_t i = 0; i < sizeof wants / sizeof wants[0]; i++) {
        size_t want = wants[i] == 0 ? 0 : min + 16 * wants[i];
        ssize_t exp = model_choose(&m, want);
        size_t got = 12345;
        void *b = dmm_flist_take(&l, want, &got);
        if (exp < 0) {
            cr_assert_eq(b, NULL, CFMT ": take(%zu) gave a block, none expected", CARG(c), want);
            cr_assert_eq(got, 12345);
        } else {
            cr_assert_eq(b, m.e[exp].addr, CFMT ": take(%zu) gave slot %td, expected slot %td",
                         CARG(c), want, b ? ((unsigned char *)b - arena) / SLOT : -1,
                         ((unsigned char *)m.e[exp].addr - arena) / SLOT);
            cr_assert_eq(got, m.e[exp].size);
            model_drop(&m, (size_t)exp);
            scribble(b, got);
        }
        expect_same(&l, &m, "take");
        if (i % 3 == 2) {       /* put one back, at a fresh slot */
            size_t s = nb + i;
            size_t sz = min + 16 * mult[i % nb];
            dmm_flist_insert(&l, slot(s), sz);
            model_insert(&m, slot(s), sz);
            expect_same(&l, &m, "insert");
        }
    }
    cr_assert_gt(cost.nodes, 0);
}

/* remove(): listed blocks in any position; unlisted blocks (garbage, taken,
 * listed in another list) give -1 and change nothing. */
COMBO_PARAMS(remove)
ParameterizedTest(combo_t *c, freelist, remove, .init = arena_setup, .fini = arena_teardown)
{
    static model_t m;
    memset(&m, 0, sizeof m);
    m.c = *c;
    dmm_cost_t cost = { 0 };
    dmm_flist_t l, other;
    dmm_flist_init(&l, c->kind, c->fit, c->order, &cost);
    dmm_flist_init(&other, c->kind, c->fit, c->order, &cost);
    size_t min = dmm_flist_min_block(c->kind);
    rng_state = 7;

    cr_assert_eq(dmm_flist_remove(&l, slot(0)), -1, CFMT ": remove from an empty list", CARG(c));
    for (size_t i = 0; i < 40; i++) {
        size_t sz = min + 16 * rnd_below(5);
        dmm_flist_insert(&l, slot(i), sz);
        model_insert(&m, slot(i), sz);
    }
    for (size_t i = 40; i < 50; i++)
        dmm_flist_insert(&other, slot(i), min + 16 * rnd_below(5));
    expect_same(&l, &m, "inserts");

    for (int round = 0; round < 200; round++) {
        /* an unlisted block full of garbage */
        size_t s = 60 + rnd_below(NSLOTS - 60);
        scribble(slot(s), SLOT);
        cr_assert_eq(dmm_flist_remove(&l, slot(s)), -1, CFMT ": remove of garbage slot %zu",
                     CARG(c), s);
        /* a block listed in the other list */
        cr_assert_eq(dmm_flist_remove(&l, slot(40 + rnd_below(10))), -1,
                     CFMT ": remove of another list's block", CARG(c));
        expect_same(&l, &m, "failed removes");
        cr_assert_eq(dmm_flist_check(&other), 0);
    }

    /* Remove listed blocks in random order; a removed block, untouched or
     * scribbled, cannot be removed again. */
    while (m.n) {
        size_t i = rnd_below(m.n);
        void *b = m.e[i].addr;
        cr_assert_eq(dmm_flist_remove(&l, b), 0, CFMT ": remove of a listed block", CARG(c));
        model_drop(&m, i);
        expect_same(&l, &m, "remove");
        cr_assert_eq(dmm_flist_remove(&l, b), -1, CFMT ": second remove", CARG(c));
        if (rnd() & 1)
            scribble(b, SLOT);
        cr_assert_eq(dmm_flist_remove(&l, b), -1, CFMT ": remove after scribble", CARG(c));
        expect_same(&l, &m, "failed remove");
    }
    cr_assert_eq(l.head, NULL);
    cr_assert_eq(l.tail, NULL);
    cr_assert_eq(l.root, NULL);
}

/* ======================================================================
 * Random stress: 100k operations, check() after each
 * ====================================================================== */

COMBO_PARAMS(stress)
ParameterizedTest(combo_t *c, freelist, stress, .init = arena_setup, .fini = arena_teardown)
{
    static model_t m;
    memset(&m, 0, sizeof m);
    m.c = *c;
    dmm_cost_t cost = { 0 };
    dmm_flist_t l;
    dmm_flist_init(&l, c->kind, c->fit, c->order, &cost);
    rng_state = 1000 + (uint64_t)(c->kind * 6 + c->fit * 2 + c->order);

    /* Free slots (not listed). */
    static size_t freeslots[NSLOTS];
    size_t nfree = NSLOTS;
    for (size_t i = 0; i < NSLOTS; i++)
        freeslots[i] = i;
    size_t min = dmm_flist_min_block(c->kind);
    size_t takes = 0, nulls = 0, removes = 0;

    for (int op = 0; op < 100000; op++) {
        /* Drift the target population between ~20 and ~200. */
        size_t target = (op / 5000) % 2 ? 200 : 20;
        unsigned r = (unsigned)rnd_below(100);
        bool grow = m.n < target;
        if (nfree && (m.n == 0 || r < (grow ? 60u : 40u))) {
            size_t k = rnd_below(nfree);
            size_t s = freeslots[k];
            freeslots[k] = freeslots[--nfree];
            size_t sz = rnd_size(c->kind);
            dmm_flist_insert(&l, slot(s), sz);
            model_insert(&m, slot(s), sz);
        } else if (r < 85) {
            size_t want = rnd() & 1 ? rnd_size(c->kind) : min + 16 * rnd_below(4) - rnd_below(16);
            ssize_t exp = model_choose(&m, want);
            size_t got = 0;
            uint64_t before_nodes = cost.nodes;
            void *b = dmm_flist_take(&l, want, &got);
            takes++;
            if (exp < 0) {
                cr_assert_eq(b, NULL, CFMT ": op %d take(%zu): got a block", CARG(c), op, want);
                nulls++;
            } else {
                cr_assert_eq(b, m.e[exp].addr, CFMT ": op %d take(%zu): wrong block", CARG(c), op,
                             want);
                cr_assert_eq(got, m.e[exp].size);
                model_drop(&m, (size_t)exp);
                freeslots[nfree++] = (size_t)((unsigned char *)b - arena) / SLOT;
                scribble(b, 64);
            }
            if (c->kind != DMM_LIST_BTREE)
                cr_assert_leq(cost.nodes - before_nodes, m.n + 1);
        } else if (m.n) {
            size_t i = rnd_below(m.n);
            void *b = m.e[i].addr;
            cr_assert_eq(dmm_flist_remove(&l, b), 0, CFMT ": op %d remove", CARG(c), op);
            model_drop(&m, i);
            freeslots[nfree++] = (size_t)((unsigned char *)b - arena) / SLOT;
            scribble(b, 64);
            removes++;
        }
        cr_assert_eq(dmm_flist_check(&l), 0, CFMT ": check() after op %d", CARG(c), op);
        cr_assert_eq(l.count, m.n);
        if (op % 997 == 0)
            expect_same(&l, &m, "stress op");
    }
    expect_same(&l, &m, "stress end");
    cr_assert_gt(takes, 1000);
    cr_assert_gt(removes, 1000);
    if (c->fit == DMM_FIT_EXACT)
        cr_assert_gt(nulls, 0);
}

/* ======================================================================
 * Node counts in hand cases
 * ====================================================================== */

Test(freelist, node_counts_lists, .init = arena_setup, .fini = arena_teardown)
{
    for (int kind = DMM_LIST_SLL; kind <= DMM_LIST_DLL; kind++) {
        for (int order = 0; order < 2; order++) {
            dmm_cost_t cost = { 0 };
            dmm_flist_t l;
            /* sizes in insertion order: 64 32 128 96 48 */
            const size_t sz[] = { 64, 32, 128, 96, 48 };
            size_t min = dmm_flist_min_block(kind);

            /* FIRST: the taken block's list position + 1. */
            dmm_flist_init(&l, kind, DMM_FIT_FIRST, order, &cost);
            for (int i = 0; i < 5; i++)
                dmm_flist_insert(&l, slot((size_t)i), sz[i] < min ? min : sz[i]);
            cr_assert_eq(cost.nodes, 5, "insert counts one node");
            /* LIFO list: 48 96 128 32 64; FIFO: 64 32 128 96 48 */
            cost.nodes = 0;
            void *b = dmm_flist_take(&l, 100, NULL);
            cr_assert_eq(b, slot(2));   /* 128 */
            cr_assert_eq(cost.nodes, 3, "%s/%s: position 2 -> 3 nodes", kind_name[kind],
                         order_name[order]);
            cost.nodes = 0;
            b = dmm_flist_take(&l, 90, NULL);
            cr_assert_eq(b, slot(3));   /* 96: LIFO 48 96 .. -> 2; FIFO 64 32 96 48 -> 3 */
            cr_assert_eq(cost.nodes, order == DMM_ORDER_LIFO ? 2 : 3);
            cost.nodes = 0;
            cr_assert_eq(dmm_flist_take(&l, 200, NULL), NULL);
            cr_assert_eq(cost.nodes, 3, "a failed take scans the whole list");
            cost.nodes = 0;
            b = dmm_flist_take(&l, 0, NULL);
            cr_assert_eq(b, order == DMM_ORDER_LIFO ? slot(4) : slot(0));
            cr_assert_eq(cost.nodes, 1, "the head fits: 1 node");

            /* BEST: whole list unless a perfect fit stops it. */
            dmm_flist_init(&l, kind, DMM_FIT_BEST, order, &cost);
            for (int i = 0; i < 5; i++)
                dmm_flist_insert(&l, slot((size_t)i), sz[i] < min ? min : sz[i]);
            cost.nodes = 0;
            cr_assert_eq(dmm_flist_take(&l, 90, NULL), slot(3));
            cr_assert_eq(cost.nodes, 5);
            cost.nodes = 0;
            cr_assert_eq(dmm_flist_take(&l, 64, NULL), slot(0));
            /* LIFO now 48 128 32 64 -> 4; FIFO 64 32 128 48 -> 1 */
            cr_assert_eq(cost.nodes, order == DMM_ORDER_LIFO ? 4 : 1);

            /* EXACT: up to the first size == want. */
            dmm_flist_init(&l, kind, DMM_FIT_EXACT, order, &cost);
            for (int i = 0; i < 5; i++)
                dmm_flist_insert(&l, slot((size_t)i), sz[i] < min ? min : sz[i]);
            cost.nodes = 0;
            cr_assert_eq(dmm_flist_take(&l, 80, NULL), NULL);
            cr_assert_eq(cost.nodes, 5);
            cost.nodes = 0;
            cr_assert_eq(dmm_flist_take(&l, 96, NULL), slot(3));
            cr_assert_eq(cost.nodes, order == DMM_ORDER_LIFO ? 2 : 4);

            /* remove: SLL walks to the block, DLL counts 1. */
            cost.nodes = 0;
            void *last = order == DMM_ORDER_LIFO ? slot(0) : slot(4);
            cr_assert_eq(dmm_flist_remove(&l, last), 0);
            cr_assert_eq(cost.nodes, kind == DMM_LIST_SLL ? 4 : 1);
            cr_assert_eq(dmm_flist_check(&l), 0);
        }
    }
}

Test(freelist, node_counts_tree, .init = arena_setup, .fini = arena_teardown)
{
    dmm_cost_t cost = { 0 };
    dmm_flist_t l;
    dmm_flist_init(&l, DMM_LIST_BTREE, DMM_FIT_BEST, DMM_ORDER_FIFO, &cost);
    /* 127 nodes inserted so that the tree is perfect, height 7. */
    size_t k = 0;
    for (int level = 0; level < 7; level++) {
        size_t step = (size_t)128 >> level;
        for (size_t v = step / 2; v < 128; v += step)
            dmm_flist_insert(&l, slot(k++), 48 + 16 * v);
    }
    cr_assert_eq(dmm_flist_check(&l), 0);
    cr_assert_eq(l.root->height, 7);
    cr_assert_eq(l.root->size, 48 + 16 * 64);
    /* A take of a leaf: 7 nodes down, then the retrace: the leaf's parent
     * loses a child but keeps its height (the sibling leaf), so 1 up. */
    cost.nodes = 0;
    void *b = dmm_flist_take(&l, 48 + 16 * 1, NULL);
    cr_assert_not_null(b);
    cr_assert_eq(((dmm_fnode_t *)b)->size, 48 + 16 * 1);
    cr_assert_eq(cost.nodes, 7 + 1);
    /* Nothing fits: 7 nodes, no delete. */
    cost.nodes = 0;
    cr_assert_eq(dmm_flist_take(&l, 48 + 16 * 200, NULL), NULL);
    cr_assert_eq(cost.nodes, 7);
    cr_assert_eq(dmm_flist_check(&l), 0);
}

/* ======================================================================
 * Ties and the AVL bound
 * ====================================================================== */

Test(freelist, tree_ties, .init = arena_setup, .fini = arena_teardown)
{
    for (int order = 0; order < 2; order++) {
        for (int fit = 0; fit < 3; fit++) {
            dmm_cost_t cost = { 0 };
            dmm_flist_t l;
            dmm_flist_init(&l, DMM_LIST_BTREE, fit, order, &cost);
            /* 30 blocks of size 64 and 30 of 96, interleaved */
            for (size_t i = 0; i < 60; i++)
                dmm_flist_insert(&l, slot(i), i % 2 ? 96 : 64);
            for (size_t i = 0; i < 30; i++) {
                size_t exp = order == DMM_ORDER_FIFO ? 2 * i : 58 - 2 * i;
                cr_assert_eq(dmm_flist_take(&l, fit == DMM_FIT_EXACT ? 64 : 50, NULL), slot(exp),
                             "%s/%s take %zu", fit_name[fit], order_name[order], i);
                cr_assert_eq(dmm_flist_check(&l), 0);
            }
            cr_assert_eq(dmm_flist_take(&l, 64, NULL), fit == DMM_FIT_EXACT ? NULL
                                                       : order == DMM_ORDER_FIFO ? slot(1)
                                                                                 : slot(59));
        }
    }
}

static int tree_height(const dmm_flist_t *l) { return l->root ? (int)l->root->height : 0; }

Test(freelist, avl_balance)
{
    const size_t N = 100000;
    unsigned char *buf = aligned_alloc(16, N * 48);
    cr_assert_not_null(buf);
    double bound = 1.45 * log2((double)N) + 2;
    for (int variant = 0; variant < 4; variant++) {
        int order = variant & 1;
        int same_size = variant >> 1;
        dmm_cost_t cost = { 0 };
        dmm_flist_t l;
        dmm_flist_init(&l, DMM_LIST_BTREE, DMM_FIT_BEST, order, &cost);
        for (size_t i = 0; i < N; i++) {
            dmm_flist_insert(&l, buf + i * 48, same_size ? 48 : 48 + 16 * i);
            if ((i & (i + 1)) == 0) {   /* at 2^k - 1 nodes */
                cr_assert_leq(tree_height(&l), 1.45 * log2((double)(i + 1)) + 2);
            }
        }
        cr_assert_eq(dmm_flist_check(&l), 0);
        printf("avl %s %s-sizes: height %d for %zu nodes inserted in key order (bound %.1f)\n",
               order_name[order], same_size ? "equal" : "rising", tree_height(&l), N, bound);
        cr_assert_leq(tree_height(&l), bound, "variant %d: height %d > %.1f", variant,
                      tree_height(&l), bound);
        /* ~log2 nodes per operation */
        cr_assert_lt(cost.nodes / N, 2 * (uint64_t)bound);
        /* Take half from the small end, check the balance again. */
        for (size_t i = 0; i < N / 2; i++)
            cr_assert_not_null(dmm_flist_take(&l, 0, NULL));
        cr_assert_eq(dmm_flist_check(&l), 0);
        cr_assert_leq(tree_height(&l), 1.45 * log2((double)(N / 2)) + 2);
        printf("avl %s %s-sizes: height %d for %zu nodes after sequential inserts and taking half\n",
                    order_name[order], same_size ? "equal" : "rising", tree_height(&l), N / 2);
    }
    free(buf);
}

/* check() finds what is broken. */
Test(freelist, check_finds_damage, .init = arena_setup, .fini = arena_teardown)
{
    for (int kind = 0; kind < 3; kind++) {
        dmm_flist_t l;
        dmm_cost_t cost = { 0 };
        dmm_flist_init(&l, kind, DMM_FIT_BEST, DMM_ORDER_FIFO, &cost);
        for (size_t i = 0; i < 20; i++)
            dmm_flist_insert(&l, slot(i), 48 + 16 * (i % 7));
        cr_assert_eq(dmm_flist_check(&l), 0);

        l.count++;
        cr_assert_gt(dmm_flist_check(&l), 0, "%s: count", kind_name[kind]);
        l.count--;
        l.bytes += 16;
        cr_assert_gt(dmm_flist_check(&l), 0, "%s: bytes", kind_name[kind]);
        l.bytes -= 16;
        cr_assert_eq(dmm_flist_check(&l), 0);

        dmm_fnode_t *n = slot(5);
        size_t keep = n->size;
        /* bytes kept in step, so only the size itself is wrong */
        n->size = 40;   /* not a multiple of 16 (above SLL's minimum) */
        l.bytes = l.bytes - keep + 40;
        cr_assert_gt(dmm_flist_check(&l), 0, "%s: odd size", kind_name[kind]);
        l.bytes = l.bytes - 40 + 16;
        n->size = 16;
        if (kind == DMM_LIST_SLL)
            cr_assert_eq(dmm_flist_check(&l), 0, "sll: 16 is a valid size");
        else
            cr_assert_gt(dmm_flist_check(&l), 0, "%s: size below min", kind_name[kind]);
        l.bytes = l.bytes - 16 + keep;
        n->size = keep;
        cr_assert_eq(dmm_flist_check(&l), 0);

        if (kind != DMM_LIST_BTREE) {
            /* a cycle: the tail points back into the list */
            dmm_fnode_t *t = l.tail;
            t->next = slot(3);
            cr_assert_gt(dmm_flist_check(&l), 0, "%s: cycle", kind_name[kind]);
            t->next = NULL;
            l.tail = slot(7);
            cr_assert_gt(dmm_flist_check(&l), 0, "%s: tail", kind_name[kind]);
            l.tail = t;
            if (kind == DMM_LIST_DLL) {
                dmm_fnode_t *x = slot(9);
                dmm_fnode_t *p = x->prev;
                x->prev = slot(2);
                cr_assert_gt(dmm_flist_check(&l), 0, "dll: prev");
                x->prev = p;
            }
        } else {
            dmm_fnode_t *r = l.root;
            int64_t h = r->height;
            r->height = h + 1;
            cr_assert_gt(dmm_flist_check(&l), 0, "btree: height");
            r->height = h;
            dmm_fnode_t *c = r->next;
            dmm_fnode_t *cp = c->parent;
            c->parent = c;
            cr_assert_gt(dmm_flist_check(&l), 0, "btree: parent");
            c->parent = cp;
            /* order: swap the sizes of the root's children's keys */
            size_t s = r->size;
            r->size = 48 + 16 * 100;
            cr_assert_gt(dmm_flist_check(&l), 0, "btree: order");
            r->size = s;
            /* balance: hang the right subtree's content off nothing */
            dmm_fnode_t *rr = r->prev;
            r->prev = NULL;
            cr_assert_gt(dmm_flist_check(&l), 0, "btree: balance");
            r->prev = rr;
        }
        cr_assert_eq(dmm_flist_check(&l), 0, "%s: restored", kind_name[kind]);
    }
}

/* ======================================================================
 * Micro-benchmark (printed only)
 * ====================================================================== */

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

Test(freelist, microbench, .timeout = 120)
{
#if defined(__SANITIZE_ADDRESS__)
    const double work = 2e6;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    const double work = 2e6;
#else
    const double work = 1e8;
#endif
#else
    const double work = 1e8;
#endif
    const size_t sizes[] = { 1000, 100000 };
    const size_t BSLOT = 64;
    unsigned char *buf = aligned_alloc(64, (100000 + 1) * BSLOT);
    cr_assert_not_null(buf);
    printf("freelist micro-benchmark: ns per insert+take (nodes per pair), sizes 48..4096, "
           "order lifo\n");
    printf("%-6s %-6s %12s %12s\n", "kind", "fit", "n=1000", "n=100000");
    for (int kind = 0; kind < 3; kind++) {
        for (int fit = 0; fit < 3; fit++) {
            char cell[2][64];
            for (int si = 0; si < 2; si++) {
                size_t n = sizes[si];
                dmm_cost_t cost = { 0 };
                dmm_flist_t l;
                dmm_flist_init(&l, kind, fit, DMM_ORDER_LIFO, &cost);
                rng_state = 42;
                for (size_t i = 0; i < n; i++)
                    dmm_flist_insert(&l, buf + i * BSLOT, 48 + 16 * rnd_below(253));
                size_t spare = n;       /* the one slot not listed */
                /* list kinds scan up to n nodes per take */
                double per = kind == DMM_LIST_BTREE ? 40 : (double)n;
                size_t iters = (size_t)(work / per);
                if (iters < 200)
                    iters = 200;
                if (iters > 2000000)
                    iters = 2000000;
                cost.nodes = 0;
                double t0 = now_ns();
                for (size_t it = 0; it < iters; it++) {
                    size_t s = 48 + 16 * rnd_below(253);
                    dmm_flist_insert(&l, buf + spare * BSLOT, s);
                    size_t want = 48 + 16 * rnd_below(253);
                    void *b = dmm_flist_take(&l, want, NULL);
                    if (!b)
                        b = dmm_flist_take(&l, fit == DMM_FIT_EXACT ? s : 0, NULL);
                    spare = (size_t)((unsigned char *)b - buf) / BSLOT;
                }
                double t1 = now_ns();
                cr_assert_eq(dmm_flist_check(&l), 0);
                snprintf(cell[si], sizeof cell[si], "%.0f (%.0f)", (t1 - t0) / (double)iters,
                         (double)cost.nodes / (double)iters);
            }
            printf("%-6s %-6s %12s %12s\n", kind_name[kind], fit_name[fit], cell[0], cell[1]);
        }
    }
    fflush(stdout);
    free(buf);
}

/* drop_range unlists the blocks of one address range, in one walk from the
 * head that stops at the range's last: slots 0..99 and 100..199 inserted in
 * turn, then slots 100..199 dropped.  The others keep their order; LIFO
 * (the range inserted last is first) visits only the range's blocks. */
Test(freelist, drop_range_unlists_one_range_and_stops_at_its_last, .init = arena_setup,
     .fini = arena_teardown)
{
    for (int kind = DMM_LIST_SLL; kind <= DMM_LIST_DLL; kind++) {
        for (int order = DMM_ORDER_FIFO; order <= DMM_ORDER_LIFO; order++) {
            dmm_cost_t cost = { 0 };
            dmm_flist_t l;
            dmm_flist_init(&l, kind, DMM_FIT_FIRST, order, &cost);
            for (size_t i = 0; i < 200; i++)
                dmm_flist_insert(&l, slot(i), 64);
            cost.nodes = 0;
            size_t got = dmm_flist_drop_range(&l, slot(100), slot(200), 100);
            cr_expect_eq(got, 100, "%s %s", kind_name[kind], order_name[order]);
            cr_expect_eq(l.count, 100);
            cr_expect_eq(l.bytes, 100 * 64);
            cr_expect_eq(dmm_flist_check(&l), 0);
            cr_expect_eq(cost.nodes, order == DMM_ORDER_LIFO ? 100u : 200u,
                         "%s %s: %llu nodes", kind_name[kind], order_name[order],
                         (unsigned long long)cost.nodes);
            /* what is left: slots 0..99, in policy order */
            for (size_t i = 0; i < 100; i++) {
                size_t sz;
                void *b = dmm_flist_take(&l, 64, &sz);
                cr_assert_eq(b, slot(order == DMM_ORDER_LIFO ? 99 - i : i));
            }
            cr_expect_null(l.head);
            cr_expect_eq(dmm_flist_drop_range(&l, slot(0), slot(200), 10), 0);
        }
    }
    /* a tree drops nothing (its blocks are removed one by one) */
    dmm_flist_t t;
    dmm_flist_init(&t, DMM_LIST_BTREE, DMM_FIT_FIRST, DMM_ORDER_FIFO, NULL);
    dmm_flist_insert(&t, slot(0), 64);
    cr_expect_eq(dmm_flist_drop_range(&t, slot(0), slot(1), 1), 0);
    cr_expect_eq(t.count, 1);
}

/* The inline insert and take of an SLL (freelist.h) against the _any calls
 * they stand for: two lists driven alike, sizes from a small set so that a
 * head of exactly the wanted size is common; the same block each time, the
 * same counts, bytes and counted nodes. */
Test(freelist, inline_sll_calls_do_what_the_general_ones_do, .init = arena_setup,
     .fini = arena_teardown)
{
    static const size_t sizes[] = { 32, 48, 64 };
    for (int fit = 0; fit < 3; fit++) {
        for (int order = 0; order < 2; order++) {
            dmm_cost_t ca = { 0 }, cb = { 0 };
            dmm_flist_t a, b;
            dmm_flist_init(&a, DMM_LIST_SLL, fit, order, &ca);
            dmm_flist_init(&b, DMM_LIST_SLL, fit, order, &cb);
            /* the same slots for both lists: each list's blocks are in the
             * first or second half of the arena */
            static bool listed[NSLOTS / 2];
            memset(listed, 0, sizeof listed);
            rng_state = 42 + (uint64_t)(fit * 2 + order);
            int hits = 0;
            for (int op = 0; op < 20000; op++) {
                size_t i = rnd_below(NSLOTS / 2);
                if (!listed[i]) {
                    size_t s = sizes[rnd_below(3)];
                    dmm_flist_insert(&a, slot(i), s);
                    dmm_flist_insert_any(&b, slot(NSLOTS / 2 + i), s);
                    listed[i] = true;
                } else {
                    size_t want = sizes[rnd_below(3)], ga = 0, gb = 0;
                    hits += a.head && a.head->size == want;
                    unsigned char *x = dmm_flist_take(&a, want, &ga);
                    unsigned char *y = dmm_flist_take_any(&b, want, &gb);
                    cr_assert_eq(x ? (x - (unsigned char *)slot(0)) / SLOT : -1,
                                 y ? (y - (unsigned char *)slot(NSLOTS / 2)) / SLOT : -1,
                                 "%s/%s op %d: took different blocks", fit_name[fit],
                                 order_name[order], op);
                    cr_assert_eq(ga, gb);
                    if (x)
                        listed[(x - (unsigned char *)slot(0)) / SLOT] = false;
                }
                cr_assert_eq(a.count, b.count);
                cr_assert_eq(a.bytes, b.bytes);
                cr_assert_eq(ca.nodes, cb.nodes, "%s/%s op %d: nodes %llu vs %llu",
                             fit_name[fit], order_name[order], op,
                             (unsigned long long)ca.nodes, (unsigned long long)cb.nodes);
            }
            cr_assert_gt(hits, 1000, "the inline take's case came up %d times", hits);
            cr_assert_eq(dmm_flist_check(&a), 0);
            cr_assert_eq(dmm_flist_check(&b), 0);
        }
    }
}
