/* test_chain.c - the conformance suite of DMM chains: every preset and a
 * multi-class chain, run in-process on real memory (DMM_PS_REAL), with the
 * check function after every operation of the stress tests; and the
 * simulator's M against the footprint of the same replay on real memory. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "allocators/chain/chain.h"
#include "allocators/chain/desc.h"
#include "allocators/classes/registry.h"
#include "allocators/sim/sim.h"

typedef struct cfg {
    char name[32];
    char text[1024];
} cfg_t;

static const char *const preset_names[] = { "kng", "lea", "fib", "s10", "exa", "tlsf" };
#define NPRESET_NAMES (sizeof preset_names / sizeof preset_names[0])

/* Chains made of several classes, with a gap and an unbounded tail. */
static const char *const chains[] = {
    "sss           range=(0,256]          split=no  coalesce=no  list=sll   fit=first order=lifo\n"
    "segregated    range=(256,65536]      split=yes coalesce=yes list=btree fit=best  order=fifo lists=6\n"
    "buddy-binary  range=(65536,1048576]  split=yes coalesce=yes list=dll   fit=first order=lifo\n",
    "buddy-binary  range=(0,8]            split=no  coalesce=no  list=dll   fit=first order=fifo\n"
    "segregated    range=(8,inf]          split=no  coalesce=yes list=sll   fit=first order=lifo\n",
    "exact         range=(0,1024]         split=no  coalesce=no  list=sll   fit=exact order=lifo\n"
    "kingsley      range=(2048,inf]       split=no  coalesce=no  list=sll   fit=exact order=lifo\n",
    /* block caches (cache.h) in front of classes whose usable() needs the
     * lock and of classes whose does not */
    "cache         max=512 count=4\n"
    "sss           range=(0,256]          split=no  coalesce=no  list=sll   fit=first order=lifo\n"
    "segregated    range=(256,65536]      split=yes coalesce=yes list=btree fit=best  order=fifo lists=6\n"
    "buddy-binary  range=(65536,1048576]  split=yes coalesce=yes list=dll   fit=first order=lifo\n",
    "cache         max=1024 count=64\n"
    "lea           range=(0,inf]          split=yes coalesce=yes list=dll   fit=best  order=fifo\n",
    /* TLSF between two other classes, and a cache in front */
    "cache         max=256 count=16\n"
    "sss           range=(0,64]           split=no  coalesce=no  list=sll   fit=first order=lifo\n"
    "tlsf          range=(64,300000]      split=yes coalesce=yes list=dll   fit=first order=lifo\n"
    "kingsley      range=(300000,inf]     split=no  coalesce=no  list=sll   fit=exact order=lifo\n",
    /* empty sss areas given back (a release policy), behind a cache */
    "cache         max=128 count=8\n"
    "release       keep=65536 delay=2000\n"
    "sss           range=(0,4096]         split=no  coalesce=no  list=dll   fit=first order=fifo\n"
    "segregated    range=(4096,inf]       split=yes coalesce=yes list=sll   fit=first order=lifo\n",
    /* a pool held from the start, smaller than the heaps of the tests:
     * chunks inside it and beyond it */
    "pool          bytes=2097152\n"
    "tlsf          range=(0,300000]       split=yes coalesce=yes list=dll   fit=first order=lifo\n"
    "kingsley      range=(300000,inf]     split=no  coalesce=no  list=sll   fit=exact order=lifo\n",
};
/* The chains above whose cache is kept per thread (dmm_chain_cache_per_thread)
 * in the tests on real memory, as the preload libraries keep it: chain N is
 * also run as "tlsN" (lea's: its usable() takes the lock). */
static const int per_thread[] = { 5 };

static cfg_t *all_cfgs(size_t *n)
{
    size_t k = NPRESET_NAMES + sizeof chains / sizeof chains[0] +
               sizeof per_thread / sizeof per_thread[0];
    cfg_t *c = cr_malloc(k * sizeof *c);
    size_t i = 0;
    for (; i < NPRESET_NAMES; i++) {
        snprintf(c[i].name, sizeof c[i].name, "%s", preset_names[i]);
        snprintf(c[i].text, sizeof c[i].text, "%s", dmm_desc_preset(preset_names[i]));
    }
    for (size_t j = 0; j < sizeof chains / sizeof chains[0]; j++, i++) {
        snprintf(c[i].name, sizeof c[i].name, "chain%zu", j + 1);
        snprintf(c[i].text, sizeof c[i].text, "%s", chains[j]);
    }
    for (size_t j = 0; j < sizeof per_thread / sizeof per_thread[0]; j++, i++) {
        snprintf(c[i].name, sizeof c[i].name, "tls%d", per_thread[j]);
        snprintf(c[i].text, sizeof c[i].text, "%s", chains[per_thread[j] - 1]);
    }
    *n = k;
    return c;
}

static void free_cfgs(struct criterion_test_params *p)
{
    cr_free(p->params);
}

static dmm_chain_t *make(const cfg_t *cfg, int mode)
{
    dmm_desc_t d;
    dmm_err_t err = { { 0 } };
    cr_assert_eq(dmm_desc_parse(cfg->name, cfg->text, strlen(cfg->text), &d, &err), 0,
                 "%s", err.msg);
    dmm_chain_t *c = dmm_chain_new(&d, mode, &err);
    cr_assert_not_null(c, "%s: %s", cfg->name, err.msg);
    if (mode == DMM_PS_REAL && !strncmp(cfg->name, "tls", 3))
        cr_assert_eq(dmm_chain_cache_per_thread(c), 0, "%s", cfg->name);
    return c;
}

ParameterizedTestParameters(chain, alignment_sizes_and_usable)
{
    size_t n;
    cfg_t *c = all_cfgs(&n);
    return cr_make_param_array(cfg_t, c, n, free_cfgs);
}

ParameterizedTest(cfg_t *cfg, chain, alignment_sizes_and_usable)
{
    dmm_chain_t *c = make(cfg, DMM_PS_REAL);
    static void *held[6000];
    size_t k = 0;
    for (size_t n = 0; n <= 5000; n += (n < 600 ? 1 : 37)) {
        unsigned char *p = dmm_chain_malloc(c, n);
        cr_assert_not_null(p, "%s: malloc(%zu)", cfg->name, n);
        cr_assert_eq((uintptr_t)p % 16, 0, "%s: malloc(%zu) = %p", cfg->name, n, (void *)p);
        size_t u = dmm_chain_usable(c, p);
        cr_assert_geq(u, n ? n : 1, "%s: usable %zu < %zu", cfg->name, u, n);
        memset(p, (int)(n & 0xff), u);
        held[k++] = p;
    }
    for (size_t s = 8192; s <= (8u << 20); s *= 2) {
        unsigned char *p = dmm_chain_malloc(c, s + 8);
        cr_assert_not_null(p);
        cr_assert_eq((uintptr_t)p % 16, 0);
        cr_assert_geq(dmm_chain_usable(c, p), s + 8);
        memset(p, 1, s + 8);
        held[k++] = p;
    }
    cr_assert_eq(dmm_chain_check(c), 0, "%s", cfg->name);
    /* no two blocks overlap: the patterns survived */
    size_t idx = 0;
    for (size_t n = 0; n <= 5000; n += (n < 600 ? 1 : 37), idx++) {
        unsigned char *p = held[idx];
        for (size_t b = 0; b < n; b++)
            cr_assert_eq(p[b], (unsigned char)(n & 0xff), "%s: block of %zu overwritten", cfg->name, n);
    }
    for (size_t i = 0; i < k; i++)
        dmm_chain_free(c, held[i]);
    cr_assert_eq(dmm_chain_check(c), 0, "%s", cfg->name);
    dmm_chain_delete(c);
}

ParameterizedTestParameters(chain, malloc_family_semantics)
{
    size_t n;
    cfg_t *c = all_cfgs(&n);
    return cr_make_param_array(cfg_t, c, n, free_cfgs);
}

ParameterizedTest(cfg_t *cfg, chain, malloc_family_semantics)
{
    dmm_chain_t *c = make(cfg, DMM_PS_REAL);
    /* malloc(0): distinct, usable pointers */
    void *a = dmm_chain_malloc(c, 0), *b = dmm_chain_malloc(c, 0);
    cr_assert(a && b && a != b);
    /* calloc clears a block that was dirty */
    unsigned char *d = dmm_chain_malloc(c, 200);
    memset(d, 0xee, 200);
    dmm_chain_free(c, d);
    unsigned char *z = dmm_chain_calloc(c, 10, 20);
    for (int i = 0; i < 200; i++)
        cr_assert_eq(z[i], 0);
    /* overflow */
    errno = 0;
    cr_assert_null(dmm_chain_calloc(c, SIZE_MAX / 2, 3));
    cr_assert_eq(errno, ENOMEM);
    /* realloc keeps contents, growing and shrinking, in and across classes */
    size_t sizes[] = { 10, 100, 3000, 70000, 500, 2000000, 40, 5 };
    unsigned char *r = dmm_chain_realloc(c, NULL, 1);
    r[0] = 7;
    size_t have = 1;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        for (size_t k = 1; k < have; k++)
            r[k] = (unsigned char)(k * 31);
        r = dmm_chain_realloc(c, r, sizes[i]);
        cr_assert_not_null(r);
        size_t keep = have < sizes[i] ? have : sizes[i];
        cr_assert_eq(r[0], 7, "%s: realloc to %zu lost byte 0", cfg->name, sizes[i]);
        for (size_t k = 1; k < keep; k++)
            cr_assert_eq(r[k], (unsigned char)(k * 31), "%s: realloc to %zu lost byte %zu",
                         cfg->name, sizes[i], k);
        have = sizes[i];
        cr_assert_eq(dmm_chain_check(c), 0);
    }
    cr_assert_null(dmm_chain_realloc(c, r, 0), "realloc(p, 0) frees and returns NULL");
    /* aligned blocks */
    for (size_t al = 32; al <= (1u << 20); al *= 2) {
        void *p = dmm_chain_memalign(c, al, 100);
        cr_assert_not_null(p);
        cr_assert_eq((uintptr_t)p % al, 0, "%s: memalign(%zu)", cfg->name, al);
        cr_assert_geq(dmm_chain_usable(c, p), 100);
        memset(p, 3, 100);
        dmm_chain_free(c, p);
    }
    /* a huge request fails with ENOMEM and the heap still works */
    errno = 0;
    cr_assert_null(dmm_chain_malloc(c, (size_t)1 << 62));
    cr_assert_eq(errno, ENOMEM);
    void *after = dmm_chain_malloc(c, 64);
    cr_assert_not_null(after);
    dmm_chain_free(c, after);
    dmm_chain_free(c, a);
    dmm_chain_free(c, b);
    dmm_chain_free(c, z);
    cr_assert_eq(dmm_chain_check(c), 0);
    dmm_chain_delete(c);
}

ParameterizedTestParameters(chain, random_stress_with_patterns_and_checks)
{
    size_t n;
    cfg_t *c = all_cfgs(&n);
    return cr_make_param_array(cfg_t, c, n, free_cfgs);
}

ParameterizedTest(cfg_t *cfg, chain, random_stress_with_patterns_and_checks)
{
    dmm_chain_t *c = make(cfg, DMM_PS_REAL);
    enum { SLOTS = 512, OPS = 20000 };
    static unsigned char *p[SLOTS];
    static size_t len[SLOTS];
    memset(p, 0, sizeof p);
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < OPS; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int s = (int)(x % SLOTS);
        size_t n = (x >> 20) % 100 < 90 ? (x >> 32) % 512 : (x >> 32) % 200000;
        unsigned char tag = (unsigned char)(s * 7 + 1);
        if (p[s]) {
            for (size_t k = 0; k < len[s]; k += 1 + len[s] / 64)
                cr_assert_eq(p[s][k], tag, "%s: op %d: block %d corrupted at %zu", cfg->name, i, s, k);
            if ((x >> 50) & 1) {
                p[s] = dmm_chain_realloc(c, p[s], n + 1);
                cr_assert_not_null(p[s]);
                len[s] = n + 1;
                memset(p[s], tag, len[s]);
            } else {
                dmm_chain_free(c, p[s]);
                p[s] = NULL;
            }
        } else {
            p[s] = dmm_chain_malloc(c, n);
            cr_assert_not_null(p[s]);
            len[s] = n;
            memset(p[s], tag, n);
        }
        cr_assert_eq(dmm_chain_check(c), 0, "%s: op %d", cfg->name, i);
    }
    for (int s = 0; s < SLOTS; s++)
        dmm_chain_free(c, p[s]);
    cr_assert_eq(dmm_chain_check(c), 0);
    dmm_chain_delete(c);
}

typedef struct thr {
    dmm_chain_t *c;
    int          id;
    void       **mailbox;   /* blocks handed to the next thread */
    int          failures;
} thr_t;

static void *stress_thread(void *arg)
{
    thr_t *t = arg;
    uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(t->id + 1);
    void *mine[256] = { 0 };
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int s = (int)(x % 256);
        if (mine[s]) {
            if (((unsigned char *)mine[s])[0] != (unsigned char)t->id)
                t->failures++;
            /* every 8th block is freed by the next thread */
            void *give = mine[s];
            if ((x >> 40) % 8 == 0)
                give = __atomic_exchange_n(&t->mailbox[s], give, __ATOMIC_ACQ_REL);
            dmm_chain_free(t->c, give);
            mine[s] = NULL;
        } else {
            size_t n = 1 + (x >> 24) % 3000;
            mine[s] = dmm_chain_malloc(t->c, n);
            if (!mine[s]) {
                t->failures++;
                continue;
            }
            memset(mine[s], t->id, n);
        }
    }
    for (int s = 0; s < 256; s++)
        dmm_chain_free(t->c, mine[s]);
    return NULL;
}

ParameterizedTestParameters(chain, four_threads_with_cross_thread_frees)
{
    size_t n;
    cfg_t *c = all_cfgs(&n);
    return cr_make_param_array(cfg_t, c, n, free_cfgs);
}

ParameterizedTest(cfg_t *cfg, chain, four_threads_with_cross_thread_frees)
{
    dmm_chain_t *c = make(cfg, DMM_PS_REAL);
    static void *mailbox[256];
    memset(mailbox, 0, sizeof mailbox);
    thr_t t[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        t[i] = (thr_t){ .c = c, .id = i + 1, .mailbox = mailbox };
        pthread_create(&th[i], NULL, stress_thread, &t[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        cr_expect_eq(t[i].failures, 0, "%s: thread %d", cfg->name, i);
    }
    for (int s = 0; s < 256; s++)
        dmm_chain_free(c, mailbox[s]);
    cr_assert_eq(dmm_chain_check(c), 0, "%s", cfg->name);
    dmm_chain_delete(c);
}

/* ---- the simulator against real memory --------------------------------- */

/* Write block p of n bytes: all of it up to 8 KiB, else its first and last
 * 4 KiB (where a neighbour's header or boundary tag would be). */
static void scribble(void *p, size_t n, int byte)
{
    if (n <= 8192) {
        memset(p, byte, n);
    } else {
        memset(p, byte, 4096);
        memset((char *)p + n - 4096, byte, 4096);
    }
}

/* Replay s on c (real memory), writing every payload (scribble). */
static void replay_real(const dmm_opstream_t *s, dmm_chain_t *c)
{
    void **ptr = calloc(s->nids, sizeof *ptr);
    for (size_t i = 0; i < s->nops; i++) {
        const dmm_op_t *op = &s->ops[i];
        if (op->kind == DMM_OP_ALLOC) {
            ptr[op->id] = dmm_chain_malloc(c, op->size);
            scribble(ptr[op->id], op->size, 0x5a);
        } else if (op->kind == DMM_OP_REALLOC) {
            ptr[op->id] = dmm_chain_realloc(c, ptr[op->id], op->size);
            scribble(ptr[op->id], op->size, 0x5b);
        } else {
            dmm_chain_free(c, ptr[op->id]);
            ptr[op->id] = NULL;
        }
    }
    free(ptr);
}

static void synthetic_stream_of(dmm_opstream_t *s, size_t cap)
{
    memset(s, 0, sizeof *s);
    s->ops = malloc(cap * sizeof *s->ops);
    uint32_t live[4096];
    size_t nlive = 0;
    uint64_t x = 12345;
    while (s->nops < cap - 2) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        unsigned r = (unsigned)(x >> 33);
        if (nlive && (r % 100 < 45 || nlive == 4096)) {
            size_t k = (r >> 8) % nlive;
            if (r % 7 == 0) {
                s->ops[s->nops++] = (dmm_op_t){ .kind = DMM_OP_REALLOC, .id = live[k],
                                                .size = 1 + (r >> 12) % 9000 };
            } else {
                s->ops[s->nops++] = (dmm_op_t){ .kind = DMM_OP_FREE, .id = live[k] };
                live[k] = live[--nlive];
            }
        } else {
            size_t n = r % 10 < 8 ? 1 + (r >> 10) % 256 : 1 + (r >> 10) % 300000;
            live[nlive++] = s->nids;
            s->ops[s->nops++] = (dmm_op_t){ .kind = DMM_OP_ALLOC, .id = s->nids++, .size = n };
        }
    }
}

static void synthetic_stream(dmm_opstream_t *s)
{
    synthetic_stream_of(s, 150000);
}

ParameterizedTestParameters(chain, simulated_M_is_the_real_footprint)
{
    size_t n;
    cfg_t *c = all_cfgs(&n);
    return cr_make_param_array(cfg_t, c, n, free_cfgs);
}

ParameterizedTest(cfg_t *cfg, chain, simulated_M_is_the_real_footprint)
{
    dmm_opstream_t s;
    /* the chains with a block cache replay a third of it, for time: their
     * classes get the 150k one in the chains above */
    if (strstr(cfg->text, "cache"))
        synthetic_stream_of(&s, 50000);
    else
        synthetic_stream(&s);
    dmm_desc_t d;
    dmm_err_t err = { { 0 } };
    cr_assert_eq(dmm_desc_parse(cfg->name, cfg->text, strlen(cfg->text), &d, &err), 0);
    dmm_sim_result_t r1, r2;
    cr_assert_eq(dmm_sim_run(&s, &d, cfg->name, 0, &r1, &err), 0, "%s", err.msg);
    cr_assert_eq(dmm_sim_run(&s, &d, cfg->name, 0, &r2, &err), 0, "%s", err.msg);
    cr_expect_eq(r1.T, r2.T, "%s: the simulation is deterministic", cfg->name);
    cr_expect_eq(r1.M, r2.M);
    /* the same stream on real memory, writing every payload */
    dmm_chain_t *c = make(cfg, DMM_PS_REAL);
    replay_real(&s, c);
    cr_expect_eq(c->ps.peak, r1.M, "%s: real peak %zu, simulated M %zu", cfg->name, c->ps.peak, r1.M);
    cr_expect_eq(dmm_cost_units(&c->cost), r1.T, "%s: the same steps were counted", cfg->name);
    cr_expect_eq(dmm_chain_check(c), 0);
    dmm_chain_delete(c);
    free(s.ops);
}

/* cfg simulated on s (check() after every operation) and replayed on real
 * memory: the same footprint peak and the same counted cost.  Its
 * description in *d, the simulation in *r; the real chain's bytes copied
 * by realloc. */
static uint64_t expect_sim_is_real(const dmm_opstream_t *s, const cfg_t *cfg, dmm_desc_t *d,
                                   dmm_sim_result_t *r)
{
    dmm_err_t err = { { 0 } };
    cr_assert_eq(dmm_desc_parse(cfg->name, cfg->text, strlen(cfg->text), d, &err), 0);
    cr_assert_eq(dmm_sim_run(s, d, cfg->name, 1, r, &err), 0, "%s", err.msg);
    cr_expect_eq(r->violations, 0);
    dmm_chain_t *c = make(cfg, DMM_PS_REAL);
    replay_real(s, c);
    cr_expect_eq(c->ps.peak, r->M, "%s: real peak %zu, simulated M %zu", cfg->name, c->ps.peak,
                 r->M);
    cr_expect_eq(dmm_cost_units(&c->cost), r->T, "%s", cfg->name);
    uint64_t copied = c->cost.copied;
    dmm_chain_delete(c);
    return copied;
}

/* A large block that realloc grows on the fallback path grows where it is
 * when the pages after it are free, else moves its pages
 * (dmm_pagesrc_move): its bytes arrive, none is counted as copied, two
 * system calls a move are; and the simulator, running the same code, still
 * predicts the real footprint and cost. */
Test(chain, growing_a_large_block_moves_its_pages_not_its_bytes)
{
    dmm_opstream_t s;
    memset(&s, 0, sizeof s);
    s.ops = malloc(64 * sizeof *s.ops);
    size_t n = 200 << 10;
    s.ops[s.nops++] = (dmm_op_t){ .kind = DMM_OP_ALLOC, .id = 0, .size = n };
    s.ops[s.nops++] = (dmm_op_t){ .kind = DMM_OP_ALLOC, .id = 1, .size = 100 };
    for (int k = 0; k < 8; k++) {
        n += n / 2;
        s.ops[s.nops++] = (dmm_op_t){ .kind = DMM_OP_REALLOC, .id = 0, .size = n };
        s.ops[s.nops++] = (dmm_op_t){ .kind = DMM_OP_ALLOC, .id = 2 + (uint32_t)k, .size = 5000 };
    }
    s.ops[s.nops++] = (dmm_op_t){ .kind = DMM_OP_FREE, .id = 0 };
    s.nids = 10;
    cfg_t cfg = { "move", "sss range=(0,1024] list=dll\n" };
    dmm_desc_t d;
    dmm_sim_result_t r;
    uint64_t copied = expect_sim_is_real(&s, &cfg, &d, &r);
    cr_expect_eq(copied, 0, "%llu bytes copied", (unsigned long long)copied);
    /* the bytes arrive: a pattern survives every move */
    dmm_chain_t *c = make(&cfg, DMM_PS_REAL);
    n = 200 << 10;
    unsigned char *p = dmm_chain_malloc(c, n);
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 7 + 1);
    uint64_t sys0 = c->cost.syscalls;
    int moved = 0;
    for (int k = 0; k < 6; k++) {
        size_t m = n + n / 2;
        void *hold = dmm_chain_malloc(c, 3000);   /* something after it */
        unsigned char *q = dmm_chain_realloc(c, p, m);
        cr_assert_not_null(q);
        moved += q != p;
        for (size_t i = 0; i < n; i += 511)
            cr_assert_eq(q[i], (unsigned char)(i * 7 + 1), "byte %zu after move %d", i, k);
        for (size_t i = n; i < m; i++)
            q[i] = (unsigned char)(i * 7 + 1);
        cr_assert_geq(dmm_chain_usable(c, q), m);
        dmm_chain_free(c, hold);
        p = q;
        n = m;
    }
    cr_expect_geq(moved, 1, "the block after it makes the first realloc move it");
    cr_expect_geq(c->cost.syscalls - sys0, 2 * (unsigned)moved);
    cr_expect_eq(c->cost.copied, 0);
    cr_expect_eq(dmm_chain_check(c), 0);
    dmm_chain_free(c, p);
    dmm_chain_delete(c);
    free(s.ops);
}

/* A block that realloc grows step by step (a vector's 1.125x) leaves its
 * class for the fallback path once it must move past DMM_LARGE_MOVE_MIN,
 * with room: from then on it grows where it is, and nothing more is copied
 * (a power-of-two class would copy it at 256K and 512K).  Its bytes stay,
 * and the simulator, running the same code, predicts the real footprint
 * and cost. */
Test(chain, a_growing_block_moves_once_to_a_place_with_room)
{
    dmm_opstream_t s;
    memset(&s, 0, sizeof s);
    s.ops = malloc(256 * sizeof *s.ops);
    s.ops[s.nops++] = (dmm_op_t){ .kind = DMM_OP_ALLOC, .id = 0, .size = 64 };
    uint32_t id = 1;
    for (size_t n = 64; n < (900 << 10);) {
        n += n / 8;
        s.ops[s.nops++] = (dmm_op_t){ .kind = DMM_OP_REALLOC, .id = 0, .size = n };
        s.ops[s.nops++] = (dmm_op_t){ .kind = DMM_OP_ALLOC, .id = id++, .size = 3000 };
    }
    s.ops[s.nops++] = (dmm_op_t){ .kind = DMM_OP_FREE, .id = 0 };
    s.nids = id;
    cfg_t cfg = { "room", "kingsley range=(0,4194304]\n" };
    dmm_desc_t d;
    dmm_sim_result_t r;
    expect_sim_is_real(&s, &cfg, &d, &r);
    dmm_err_t err = { { 0 } };
    /* the room is a hole below the chunks placed after it: a pool of the
     * peak's chunks leaves some beyond it (fresh pages), a pool of the
     * address span none */
    cr_expect_gt(r.span, r.M - r.map_bytes, "span %zu, M %zu", r.span, r.M);
    dmm_sim_result_t rp;
    d.pool = r.M - r.map_bytes;
    cr_assert_eq(dmm_sim_run(&s, &d, cfg.name, 1, &rp, &err), 0, "%s", err.msg);
    cr_expect_gt(rp.cost.pages, 0);
    d.pool = r.span;
    cr_assert_eq(dmm_sim_run(&s, &d, cfg.name, 1, &rp, &err), 0, "%s", err.msg);
    cr_expect_eq(rp.cost.pages, 0, "%llu fresh pages beyond a pool of the span",
                 (unsigned long long)rp.cost.pages);
    /* step by step on real memory: where it is, and what it holds */
    dmm_chain_t *c = make(&cfg, DMM_PS_REAL);
    size_t n = 64;
    unsigned char *p = dmm_chain_malloc(c, n);
    memset(p, 1, n);
    unsigned char *large = NULL;
    uint64_t copied = 0;
    while (n < (900 << 10)) {
        size_t m = n + n / 8;
        dmm_chain_malloc(c, 3000);   /* left live: something after each class block */
        unsigned char *q = dmm_chain_realloc(c, p, m);
        cr_assert_not_null(q);
        for (size_t i = 0; i < n; i += 97)
            cr_assert_eq(q[i], (unsigned char)(1 + i % 13), "byte %zu at %zu", i, m);
        for (size_t i = 0; i < m; i++)
            q[i] = (unsigned char)(1 + i % 13);
        if (m >= DMM_LARGE_MOVE_MIN && !large) {
            large = q;
            cr_expect_eq(dmm_pagesrc_owner(&c->ps, q), DMM_OWNER_LARGE);
            copied = c->cost.copied;
        } else if (large) {
            cr_expect_eq(q, large, "moved again at %zu bytes", m);
        }
        p = q;
        n = m;
    }
    cr_expect_eq(c->cost.copied, copied, "copied again after the move");
    cr_expect_lt(copied, (size_t)256 << 10, "%llu bytes copied", (unsigned long long)copied);
    cr_expect_eq(dmm_chain_check(c), 0);
    dmm_chain_free(c, p);
    dmm_chain_delete(c);
    /* in huge pages a room would be held whole: the block stays in its class */
    cfg_t huge = { "room-huge", "pages huge=yes\nkingsley range=(0,4194304]\n" };
    c = make(&huge, DMM_PS_SIM);
    p = dmm_chain_malloc(c, 100 << 10);
    p = dmm_chain_realloc(c, p, 300 << 10);
    cr_assert_not_null(p);
    cr_expect_eq(dmm_pagesrc_owner(&c->ps, p), 1, "in the class, not on the fallback path");
    dmm_chain_free(c, p);
    dmm_chain_delete(c);
    free(s.ops);
}

/* ---- the release policy (sss, lea) ------------------------------------- */

/* lea reads keep= as its top's trim threshold: keep=inf never trims (nor
 * gives a wholly free segment back), any other keeps at most that much top;
 * the same in the simulator as on real memory. */
Test(chain, lea_trims_its_top_as_the_release_policy_says)
{
    static const struct {
        const char *line;
        int holds;
    } pol[] = {
        { "", 0 },
        { "release keep=0 delay=0\n", 0 },
        { "release keep=1048576 delay=inf\n", 0 },
        { "release keep=inf delay=inf\n", 1 },
    };
    dmm_opstream_t s;
    memset(&s, 0, sizeof s);
    s.ops = malloc(10000 * sizeof *s.ops);
    for (uint32_t i = 0; i < 3000; i++)
        s.ops[s.nops++] = (dmm_op_t){ .kind = DMM_OP_ALLOC, .id = i, .size = 1000 };
    for (uint32_t i = 0; i < 3000; i++)
        s.ops[s.nops++] = (dmm_op_t){ .kind = DMM_OP_FREE, .id = 2999 - i };
    s.nids = 3000;
    size_t held0 = 0;
    for (size_t p = 0; p < sizeof pol / sizeof pol[0]; p++) {
        cfg_t cfg;
        snprintf(cfg.name, sizeof cfg.name, "leatrim%zu", p);
        snprintf(cfg.text, sizeof cfg.text, "%slea range=(0,inf]\n", pol[p].line);
        dmm_desc_t d;
        dmm_err_t err = { { 0 } };
        cr_assert_eq(dmm_desc_parse(cfg.name, cfg.text, strlen(cfg.text), &d, &err), 0);
        dmm_sim_result_t r;
        cr_assert_eq(dmm_sim_run(&s, &d, cfg.name, 499, &r, &err), 0, "%s", err.msg);
        cr_expect_eq(r.violations, 0, "%s", cfg.text);
        dmm_chain_t *c = make(&cfg, DMM_PS_REAL);
        replay_real(&s, c);
        cr_expect_eq(c->ps.peak, r.M, "%s", cfg.text);
        cr_expect_eq(dmm_cost_units(&c->cost), r.T, "%s", cfg.text);
        cr_expect_eq(dmm_chain_check(c), 0, "%s", cfg.text);
        size_t held = c->ps.footprint;
        if (p == 0)
            held0 = held;
        else if (pol[p].holds)
            cr_expect_geq(held, held0 + (3u << 19), "%s: holds %zu, no policy %zu", cfg.text,
                          held, held0);
        else
            cr_expect_leq(held, held0, "%s: holds %zu, no policy %zu", cfg.text, held, held0);
        dmm_chain_delete(c);
    }
    free(s.ops);
}

/* A small heap (60 blocks of 100 to 1000 bytes, every third freed, then
 * the rest): under `grow by=pages` every class that reads it takes pages,
 * not 64 KiB granules, and the library holds what the simulator predicts,
 * to the byte. */
Test(chain, small_heaps_grow_by_pages_as_the_library_does)
{
    dmm_opstream_t s;
    memset(&s, 0, sizeof s);
    s.ops = malloc(1000 * sizeof *s.ops);
    size_t live = 0, peak = 0;
    for (uint32_t i = 0; i < 60; i++) {
        size_t n = 100 + (i * 37) % 901;
        s.ops[s.nops++] = (dmm_op_t){ .kind = DMM_OP_ALLOC, .id = i, .size = n };
        live += n;
        peak = live > peak ? live : peak;
        if (i % 3 == 2) {
            s.ops[s.nops++] = (dmm_op_t){ .kind = DMM_OP_FREE, .id = i - 1 };
            live -= 100 + ((i - 1) * 37) % 901;
        }
    }
    for (uint32_t i = 0; i < 60; i++)
        if (i % 3 != 1)
            s.ops[s.nops++] = (dmm_op_t){ .kind = DMM_OP_FREE, .id = i };
    s.nids = 60;
    static const char *const cls[] = {
        "lea range=(0,inf]\n",
        "segregated range=(0,inf] split=yes coalesce=yes list=dll fit=best\n",
        "exact range=(0,inf] split=yes coalesce=yes list=dll\n",
        "tlsf range=(0,inf]\n",
    };
    static const char *const grow[] = { "", "grow by=pages\n", "grow by=pages\nrelease keep=0\n" };
    for (size_t k = 0; k < sizeof cls / sizeof cls[0]; k++) {
        size_t m[3];
        for (size_t g = 0; g < 3; g++) {
            cfg_t cfg;
            snprintf(cfg.name, sizeof cfg.name, "grow%zu.%zu", k, g);
            snprintf(cfg.text, sizeof cfg.text, "%s%s", grow[g], cls[k]);
            dmm_desc_t d;
            dmm_err_t err = { { 0 } };
            cr_assert_eq(dmm_desc_parse(cfg.name, cfg.text, strlen(cfg.text), &d, &err), 0);
            dmm_sim_result_t r, rc;   /* check() after every call; its reads count */
            cr_assert_eq(dmm_sim_run(&s, &d, cfg.name, 1, &rc, &err), 0, "%s", err.msg);
            cr_expect_eq(rc.violations, 0, "%s", cfg.text);
            cr_assert_eq(dmm_sim_run(&s, &d, cfg.name, 0, &r, &err), 0, "%s", err.msg);
            dmm_chain_t *c = make(&cfg, DMM_PS_REAL);
            replay_real(&s, c);
            cr_expect_eq(c->ps.peak, r.M, "%s", cfg.text);
            cr_expect_eq(dmm_cost_units(&c->cost), r.T, "%s", cfg.text);
            cr_expect_eq(dmm_chain_check(c), 0, "%s", cfg.text);
            dmm_chain_delete(c);
            m[g] = r.M;
        }
        /* about 22 KB live at the peak: a 64 KiB granule, or a few pages */
        cr_expect_lt(m[1] + 32768, m[0], "%sby pages %zu, by 64 KiB %zu (peak live %zu)", cls[k],
                     m[1], m[0], peak);
        cr_expect_leq(m[2], m[1], "%s", cls[k]);
    }
    free(s.ops);
}

static void sim_or_fail(const dmm_opstream_t *s, const dmm_desc_t *d, dmm_sim_result_t *r,
                        int *rc);
static void expect_same_replay(const dmm_sim_result_t *a, int rca, const dmm_sim_result_t *b,
                               int rcb, const char *cls, const char *what);

/* Phases that leave areas empty: 20000 blocks of 32 bytes, all freed but
 * for every 500th; 2000 of them again (taken from the empty areas' lists);
 * 20000 of 80 bytes, freed; 20000 of 48, freed; then 2000 calls more.
 * Without a release policy each phase takes areas of its own and keeps
 * them; with one, a class that needs an area takes an empty one first. */
static void phase_stream(dmm_opstream_t *s)
{
    memset(s, 0, sizeof *s);
    s->ops = malloc(200000 * sizeof *s->ops);
    const size_t n = 20000;
#define OP(k, i, sz) (s->ops[s->nops++] = (dmm_op_t){ .kind = (k), .id = (i), .size = (sz) })
    for (size_t i = 0; i < n; i++)
        OP(DMM_OP_ALLOC, i, 32);
    for (size_t i = 0; i < n; i++)
        if (i % 500)
            OP(DMM_OP_FREE, i, 0);
    for (size_t i = 0; i < n / 10; i++)
        OP(DMM_OP_ALLOC, n + i, 32);
    for (size_t i = 0; i < n; i++)
        OP(DMM_OP_ALLOC, 2 * n + i, 80);
    for (size_t i = 0; i < n; i++)
        OP(DMM_OP_FREE, 2 * n + i, 0);
    for (size_t i = 0; i < n; i++)
        OP(DMM_OP_ALLOC, 3 * n + i, 48);
    for (size_t i = 0; i < n; i++)
        OP(DMM_OP_FREE, 3 * n + i, 0);
    for (size_t i = 0; i < 2000; i++) {   /* time passes */
        OP(DMM_OP_ALLOC, 4 * n + i, 32);
        OP(DMM_OP_FREE, 4 * n + i, 0);
    }
#undef OP
    s->nids = 4 * n + 2000;
}

Test(chain, a_release_policy_gives_empty_areas_back_as_the_library_does)
{
    static const char *const lists[] = { "sll", "dll", "btree" };
    static const struct {
        const char *line;
        int holds;   /* it keeps the empty areas to the end */
    } pol[] = {
        { "", 1 },
        { "release keep=0 delay=0\n", 0 },
        { "release keep=262144 delay=inf\n", 0 },
        { "release keep=8388608 delay=inf\n", 1 },   /* more than ever empty */
        { "release keep=inf delay=1000\n", 0 },
        { "release keep=inf delay=1000000\n", 1 },   /* longer than the stream */
        { "cache max=64 count=32\nrelease keep=65536 delay=5000\n", 0 },
        { "release keep=inf delay=inf\n", 1 },   /* never to the OS, yet reused */
    };
    dmm_opstream_t s;
    phase_stream(&s);
    for (size_t l = 0; l < 3; l++) {
        size_t M0 = 0, F1 = 0;
        for (size_t p = 0; p < sizeof pol / sizeof pol[0]; p++) {
            cfg_t cfg;
            snprintf(cfg.name, sizeof cfg.name, "release%zu%s", p, lists[l]);
            snprintf(cfg.text, sizeof cfg.text,
                     "%ssss range=(0,1024] list=%s order=fifo\nlea range=(1024,inf]\n",
                     pol[p].line, lists[l]);
            dmm_desc_t d;
            dmm_err_t err = { { 0 } };
            cr_assert_eq(dmm_desc_parse(cfg.name, cfg.text, strlen(cfg.text), &d, &err), 0);
            dmm_sim_result_t r;
            cr_assert_eq(dmm_sim_run(&s, &d, cfg.name, 997, &r, &err), 0, "%s", err.msg);
            cr_expect_eq(r.violations, 0, "%s", cfg.text);
            if (p == 0)
                M0 = r.M;
            else
                cr_expect_lt(r.M, M0 - M0 / 5, "%s: M %zu, without a policy %zu", cfg.text,
                             r.M, M0);
            dmm_chain_t *c = make(&cfg, DMM_PS_REAL);
            replay_real(&s, c);
            /* what it holds at the end: the empty areas, or not */
            size_t held = c->ps.footprint;
            if (p == 1)
                F1 = held;
            else if (pol[p].holds)
                cr_expect_gt(held, F1 + (512 << 10), "%s: holds %zu at the end, at once %zu",
                             cfg.text, held, F1);
            else
                cr_expect_leq(held, F1 + (256 << 10), "%s: holds %zu at the end, at once %zu",
                              cfg.text, held, F1);
            cr_expect_eq(c->ps.peak, r.M, "%s: real peak %zu, simulated M %zu", cfg.text,
                         c->ps.peak, r.M);
            cr_expect_eq(dmm_cost_units(&c->cost), r.T, "%s", cfg.text);
            cr_expect_eq(dmm_chain_check(c), 0, "%s", cfg.text);
            dmm_chain_delete(c);
        }
    }
    /* classes that do not read the policy: the same replay with it */
    const char *other = "kingsley range=(0,64]\nbuddy-binary range=(64,4096]\n"
                        "segregated range=(4096,inf] split=yes coalesce=yes\n";
    char with[256];
    snprintf(with, sizeof with, "release keep=0 delay=0\n%s", other);
    dmm_desc_t d0, d1;
    dmm_err_t err = { { 0 } };
    cr_assert_eq(dmm_desc_parse("o", other, strlen(other), &d0, &err), 0);
    cr_assert_eq(dmm_desc_parse("w", with, strlen(with), &d1, &err), 0);
    dmm_sim_result_t r0, r1;
    int rc0, rc1;
    sim_or_fail(&s, &d0, &r0, &rc0);
    sim_or_fail(&s, &d1, &r1, &rc1);
    expect_same_replay(&r0, rc0, &r1, rc1, "kingsley, buddy, segregated", "a release policy");
    free(s.ops);
}

/* Replay s on c, as the evolved library serves its calls (codegen's
 * dmm_sss_*_fast_known, one thread): sss's common case first where the
 * chain would take c's first allocator, the chain's malloc or free where it
 * says no; each call it serves counted as the chain counts a call.  at[i]:
 * op i's block as an offset in the first arena. */
static size_t replay_fast(const dmm_opstream_t *s, dmm_chain_t *c, int dll, int rel, int lifo,
                          uintptr_t *at)
{
    void **ptr = calloc(s->nids, sizeof *ptr);
    dmm_alloc_t *a = &c->alloc[0];
    size_t served = 0;
    for (size_t i = 0; i < s->nops; i++) {
        const dmm_op_t *op = &s->ops[i];
        void *p = ptr[op->id];
        if (op->kind == DMM_OP_ALLOC) {
            p = op->size && op->size <= a->desc.hi
                    ? dmm_sss_malloc_fast_known(a, op->size, dll, rel, lifo) : NULL;
            served += p != NULL;
            c->cost.ops += p != NULL;
            if (!p)
                p = dmm_chain_malloc(c, op->size);
        } else if (op->kind == DMM_OP_REALLOC) {
            p = dmm_chain_realloc(c, p, op->size);
        } else {
            int fast = dmm_pagesrc_owner(&c->ps, p) == a->owner &&
                       dmm_sss_free_fast_known(a, p, dll, rel, lifo);
            served += (size_t)fast;
            c->cost.ops += (uint64_t)fast;
            if (!fast)
                dmm_chain_free(c, p);
            p = NULL;
        }
        ptr[op->id] = p;
        at[i] = p ? (uintptr_t)p - c->ps.arenas[0].base : 0;
    }
    free(ptr);
    return served;
}

/* The same replay through the chain's malloc, realloc and free alone. */
static void replay_chain(const dmm_opstream_t *s, dmm_chain_t *c, uintptr_t *at)
{
    void **ptr = calloc(s->nids, sizeof *ptr);
    for (size_t i = 0; i < s->nops; i++) {
        const dmm_op_t *op = &s->ops[i];
        void *p = ptr[op->id];
        if (op->kind == DMM_OP_ALLOC)
            p = dmm_chain_malloc(c, op->size);
        else if (op->kind == DMM_OP_REALLOC)
            p = dmm_chain_realloc(c, p, op->size);
        else
            dmm_chain_free(c, p), p = NULL;
        ptr[op->id] = p;
        at[i] = p ? (uintptr_t)p - c->ps.arenas[0].base : 0;
    }
    free(ptr);
}

/* sss's common cases by name (what the evolved library inlines into malloc
 * and free), with an SLL or a DLL, either order, under each release policy
 * (told its form, as codegen tells it):
 * a replay that tries them first takes the same block on every call, holds
 * the same memory, counts the same steps and leaves the same lists as one
 * through the chain's calls alone; and they serve most calls. */
Test(chain, sss_common_cases_by_name_do_what_its_malloc_and_free_do)
{
    static const char *const pol[] = {
        "", "release keep=0 delay=0\n", "release keep=262144 delay=inf\n",
        "release keep=inf delay=1000\n", "release keep=inf delay=inf\n",
    };
    static const int forms[] = { DMM_SSS_REL_NONE, DMM_SSS_REL_AT_ONCE, DMM_SSS_REL_ANY,
                                 DMM_SSS_REL_ANY, DMM_SSS_REL_NEVER };
    dmm_opstream_t st[2];
    phase_stream(&st[0]);
    synthetic_stream_of(&st[1], 60000);
    for (int k = 0; k < 2; k++) {
        uintptr_t *want = malloc(st[k].nops * sizeof *want), *got = malloc(st[k].nops * sizeof *got);
        for (int dll = 0; dll < 2; dll++)
            for (int lifo = 0; lifo < 2; lifo++)
                for (size_t p = 0; p < sizeof pol / sizeof pol[0]; p++) {
                    cfg_t cfg;
                    snprintf(cfg.name, sizeof cfg.name, "fast%zu",
                             (size_t)((k * 2 + dll) * 2 + lifo) * 8 + p);
                    snprintf(cfg.text, sizeof cfg.text,
                             "%ssss range=(0,1024] list=%s order=%s\nlea range=(1024,inf]\n",
                             pol[p], dll ? "dll" : "sll", lifo ? "lifo" : "fifo");
                    dmm_chain_t *a = make(&cfg, DMM_PS_SIM);
                    replay_chain(&st[k], a, want);
                    dmm_chain_t *b = make(&cfg, DMM_PS_SIM);
                    int form = dmm_sss_release_form(&b->desc.release);
                    cr_expect_eq(form, forms[p], "%s", cfg.text);
                    size_t served = replay_fast(&st[k], b, dll, form, lifo, got);
                    size_t i = 0;
                    while (i < st[k].nops && want[i] == got[i])
                        i++;
                    cr_expect_eq(i, st[k].nops, "%s: op %zu of %zu took +%#lx, not +%#lx",
                                 cfg.text, i, st[k].nops, i < st[k].nops ? (unsigned long)got[i] : 0,
                                 i < st[k].nops ? (unsigned long)want[i] : 0);
                    cr_expect_eq(b->ps.peak, a->ps.peak, "%s", cfg.text);
                    cr_expect_eq(b->ps.footprint, a->ps.footprint, "%s", cfg.text);
                    cr_expect_eq(dmm_cost_units(&b->cost), dmm_cost_units(&a->cost), "%s",
                                 cfg.text);
                    cr_expect_eq(dmm_chain_check(b), 0, "%s", cfg.text);
                    cr_expect_gt(served, st[k].nops / 2, "%s: %zu of %zu calls", cfg.text,
                                 served, st[k].nops);
                    dmm_chain_delete(a);
                    dmm_chain_delete(b);
                }
        free(want);
        free(got);
        free(st[k].ops);
    }
}

/* A simulated page source hands out chunks as their last simulation left
 * them, without zeroing (the search's speed depends on it): that is exact
 * only if no class reads a byte it did not write.  Every class with every
 * list, fit, order, split and coalesce, as the first and the second
 * allocator of a chain: the same T, M and histogram whatever the chunks
 * hold, and check() finds nothing. */
Test(chain, simulation_depends_on_no_byte_it_did_not_write)
{
    static const char *const lists[] = { "sll", "dll", "btree" };
    static const char *const fits[] = { "first", "best", "exact" };
    dmm_opstream_t s;
    synthetic_stream_of(&s, 20000);
    int tried = 0;
    for (int k = 1; k < DMM_CLASS_COUNT; k++) {
        for (int v = 0; v < 6; v++) {
            char text[512];
            const char *yn[] = { "no", "yes" };
            snprintf(text, sizeof text,
                     "%-12s range=(0,2048]   split=%s coalesce=%s list=%s fit=%s order=%s\n"
                     "%-12s range=(2048,inf] split=%s coalesce=%s list=%s fit=%s order=%s\n",
                     dmm_class_name(k), yn[v & 1], yn[(v >> 1) & 1], lists[v % 3],
                     fits[v % 3 == 2 ? 0 : (v + 1) % 3], v & 1 ? "fifo" : "lifo",
                     dmm_class_name(k % (DMM_CLASS_COUNT - 1) + 1), yn[(v >> 1) & 1], yn[v & 1],
                     lists[(v + 1) % 3], fits[v % 2], v & 2 ? "fifo" : "lifo");
            dmm_desc_t d;
            dmm_err_t err = { { 0 } };
            if (dmm_desc_parse("fill", text, strlen(text), &d, &err) != 0)
                continue;   /* a combination the class does not take */
            tried++;
            dmm_sim_result_t r[3];
            const int fill[3] = { -1, 0xa5, 0x00 };
            for (int f = 0; f < 3; f++) {
                dmm_pagesrc_sim_fill(fill[f]);
                cr_assert_eq(dmm_sim_run(&s, &d, "fill", 4999, &r[f], &err), 0, "%s", err.msg);
                cr_expect_eq(r[f].violations, 0, "%s", text);
            }
            dmm_pagesrc_sim_fill(-1);
            for (int f = 1; f < 3; f++) {
                cr_expect_eq(r[f].T, r[0].T, "fill %#x changes T of\n%s", fill[f], text);
                cr_expect_eq(r[f].M, r[0].M, "fill %#x changes M of\n%s", fill[f], text);
                cr_expect_eq(memcmp(r[f].hist, r[0].hist, sizeof r[0].hist), 0, "%s", text);
                cr_expect_eq(r[f].max_op_cost, r[0].max_op_cost, "%s", text);
            }
        }
    }
    cr_expect_geq(tried, 4 * (DMM_CLASS_COUNT - 1), "only %d chains parsed", tried);
    free(s.ops);
}

/* dmm_desc_effective() resets the options a class does not read, and the
 * search simulates lines that differ only there once: so for every class,
 * every value of every option it claims not to read gives the same replay
 * (T, M, histogram), and so does the effective description. */
static void sim_or_fail(const dmm_opstream_t *s, const dmm_desc_t *d, dmm_sim_result_t *r,
                        int *rc)
{
    dmm_err_t err = { { 0 } };
    *rc = dmm_sim_run(s, d, "opt", 0, r, &err);
}

static void expect_same_replay(const dmm_sim_result_t *a, int rca, const dmm_sim_result_t *b,
                               int rcb, const char *cls, const char *what)
{
    cr_expect_eq(rca, rcb, "%s: %s decides whether it builds", cls, what);
    if (rca || rcb)
        return;
    cr_expect_eq(a->T, b->T, "%s: %s changes T (%llu, %llu)", cls, what,
                 (unsigned long long)a->T, (unsigned long long)b->T);
    cr_expect_eq(a->M, b->M, "%s: %s changes M", cls, what);
    cr_expect_eq(memcmp(a->hist, b->hist, sizeof a->hist), 0, "%s: %s", cls, what);
}

Test(chain, options_a_class_does_not_read_change_nothing)
{
    dmm_opstream_t s;
    synthetic_stream_of(&s, 20000);
    int checked = 0;
    for (int k = 1; k < DMM_CLASS_COUNT; k++) {
        const dmm_class_ops_t *ops = dmm_class_ops(k);
        cr_assert_not_null(ops);
        char text[512];
        snprintf(text, sizeof text,
                 "%s range=(0,65536] split=yes coalesce=yes list=dll fit=best order=fifo\n"
                 "kingsley range=(65536,inf] split=no coalesce=no list=sll fit=first order=lifo\n",
                 dmm_class_name(k));
        dmm_desc_t base;
        dmm_err_t err = { { 0 } };
        cr_assert_eq(dmm_desc_parse("opt", text, strlen(text), &base, &err), 0, "%s", err.msg);
        dmm_sim_result_t r0, r;
        int rc0, rc;
        sim_or_fail(&s, &base, &r0, &rc0);
        cr_expect_eq(rc0, 0, "%s builds", dmm_class_name(k));
        dmm_desc_t eff = base;
        dmm_desc_effective(&eff);
        sim_or_fail(&s, &eff, &r, &rc);
        expect_same_replay(&r0, rc0, &r, rc, dmm_class_name(k), "the effective description");
        static const struct { unsigned bit; const char *name; unsigned nvals; } opt[] = {
            { DMM_OPT_SPLIT, "split", 2 }, { DMM_OPT_COALESCE, "coalesce", 2 },
            { DMM_OPT_LIST, "list", 3 },   { DMM_OPT_FIT, "fit", 3 },
            { DMM_OPT_ORDER, "order", 2 }, { DMM_OPT_LISTS, "lists", 3 },
        };
        for (size_t o = 0; o < sizeof opt / sizeof opt[0]; o++) {
            if (ops->options & opt[o].bit)
                continue;
            for (unsigned v = 0; v < opt[o].nvals; v++) {
                dmm_desc_t d = base;
                dmm_alloc_desc_t *a = &d.a[0];
                switch (opt[o].bit) {
                case DMM_OPT_SPLIT: a->split = (uint8_t)v; break;
                case DMM_OPT_COALESCE: a->coalesce = (uint8_t)v; break;
                case DMM_OPT_LIST: a->list = (uint8_t)v; break;
                case DMM_OPT_FIT: a->fit = (uint8_t)v; break;
                case DMM_OPT_ORDER: a->order = (uint8_t)v; break;
                default: a->lists = v == 0 ? 0 : v == 1 ? 3 : 20; break;
                }
                sim_or_fail(&s, &d, &r, &rc);
                expect_same_replay(&r0, rc0, &r, rc, dmm_class_name(k), opt[o].name);
                checked++;
            }
        }
        if (!ops->reads_grow) {   /* nor the chain's growth rule */
            dmm_desc_t d = base;
            d.grow = DMM_GROW_PAGES;
            sim_or_fail(&s, &d, &r, &rc);
            expect_same_replay(&r0, rc0, &r, rc, dmm_class_name(k), "grow by=pages");
            checked++;
        }
    }
    cr_expect_geq(checked, 30, "only %d variations were unread options", checked);
    free(s.ops);
}

/* A class that claims hdr_usable (alloc.h) keeps it: the evolved library's
 * free then sizes its blocks from the header word alone.  Checked on every
 * live block after frees have changed neighbours' flag bits, small blocks
 * and lea's large ones alike. */
Test(chain, header_usable_is_what_the_classes_claim)
{
    int checked = 0;
    for (int k = DMM_CLASS_NONE + 1; k < DMM_CLASS_COUNT; k++) {
        const dmm_class_ops_t *ops = dmm_class_ops((dmm_class_t)k);
        if (!ops->hdr_usable)
            continue;
        cr_assert(ops->usable_nolock, "%s: hdr_usable without usable_nolock", ops->name);
        char text[256];
        snprintf(text, sizeof text,
                 "%s range=(0,1048576] split=yes coalesce=yes list=dll fit=first order=lifo\n",
                 dmm_class_name((dmm_class_t)k));
        cfg_t cfg;
        snprintf(cfg.name, sizeof cfg.name, "%s", dmm_class_name((dmm_class_t)k));
        snprintf(cfg.text, sizeof cfg.text, "%s", text);
        dmm_chain_t *c = make(&cfg, DMM_PS_REAL);
        static void *held[4000];
        unsigned seed = 7;
        for (int i = 0; i < 4000; i++) {
            seed = seed * 1103515245u + 12345u;
            size_t n = (seed >> 8) % 8 == 0 ? 60000 + (seed >> 4) % 240000 : (seed >> 8) % 2000;
            held[i] = dmm_chain_malloc(c, n);
            cr_assert_not_null(held[i], "%s: malloc(%zu)", cfg.name, n);
            if (i % 3 == 1) {   /* a neighbour freed, another taken */
                dmm_chain_free(c, held[i - 1]);
                held[i - 1] = NULL;
            }
        }
        int small = 0, large = 0;
        for (int i = 0; i < 4000; i++) {
            if (!held[i] || dmm_pagesrc_owner(&c->ps, held[i]) != 1)
                continue;
            size_t u = dmm_chain_usable(c, held[i]), h = dmm_hdr_usable(held[i]);
            cr_assert_geq(h, u, "%s: header says %zu, usable %zu", cfg.name, h, u);
            if (u <= DMM_HDR_USABLE_EXACT)
                cr_assert_eq(h, u, "%s: header says %zu, usable %zu", cfg.name, h, u);
            small += u <= DMM_HDR_USABLE_EXACT;
            large += u > DMM_HDR_USABLE_EXACT;
            dmm_chain_free(c, held[i]);
        }
        cr_expect_gt(small, 1000, "%s: %d small blocks", cfg.name, small);
        cr_expect_gt(large, 100, "%s: %d large blocks", cfg.name, large);
        cr_assert_eq(dmm_chain_check(c), 0, "%s", cfg.name);
        dmm_chain_delete(c);
        checked++;
    }
    cr_expect_geq(checked, 3, "lea, segregated and exact claim hdr_usable");
}

/* The 99.9th percentile of the per-operation cost is the upper end of the
 * histogram bucket where 99.9 % of the operations are reached. */
Test(chain, the_cost_percentile_reads_the_histogram)
{
    dmm_opstream_t s;
    synthetic_stream_of(&s, 50000);
    const char *texts[] = {
        "tlsf range=(0,inf] split=yes coalesce=yes list=dll fit=first order=lifo\n",
        "segregated range=(0,inf] split=yes coalesce=yes list=dll fit=best order=fifo lists=4\n",
    };
    for (int k = 0; k < 2; k++) {
        dmm_desc_t d;
        dmm_err_t err = { { 0 } };
        cr_assert_eq(dmm_desc_parse("p", texts[k], strlen(texts[k]), &d, &err), 0, "%s", err.msg);
        dmm_sim_result_t r;
        int rc;
        sim_or_fail(&s, &d, &r, &rc);
        cr_assert_eq(rc, 0);
        uint64_t below = 0, want = r.ops - r.ops / 1000;
        unsigned b = 0;
        while (b < DMM_SIM_HIST && (below += r.hist[b]) < want)
            b++;
        cr_assert_eq(r.p999_op_cost, (uint64_t)1 << (b + 1), "%s", texts[k]);
        cr_assert_leq(r.p999_op_cost / 2, r.max_op_cost);
        cr_assert_gt(r.p999_op_cost, 1, "%s", texts[k]);
    }
    free(s.ops);
}

/* Pages of [p, p + len) resident now (mincore). */
static size_t resident_pages(const void *p, size_t len)
{
    uintptr_t lo = (uintptr_t)p & ~(uintptr_t)4095, hi = ((uintptr_t)p + len + 4095) & ~(uintptr_t)4095;
    size_t n = (hi - lo) / 4096, r = 0;
    unsigned char *v = malloc(n);
    cr_assert_not_null(v);
    cr_assert_eq(mincore((void *)lo, hi - lo, v), 0);
    for (size_t i = 0; i < n; i++)
        r += v[i] & 1;
    free(v);
    return r;
}

/* calloc of a block past every class (the fallback path) in fresh or
 * dropped pages leaves them unwritten, so they stay out of the RSS until
 * the program writes them (a table callocked and used in part holds what
 * it uses, as under glibc); in pages that held a block, it clears them. */
Test(chain, calloc_leaves_fresh_pages_of_a_large_block_unwritten)
{
    static const char *const texts[] = {
        "lea           range=(0,65536]       split=yes coalesce=yes list=dll   fit=best  order=fifo\n",
        "pages         huge=yes\n"
        "lea           range=(0,65536]       split=yes coalesce=yes list=dll   fit=best  order=fifo\n",
        "cache         max=1024 count=8\n"
        "retain        bytes=0\n"
        "tlsf          range=(0,65536]       split=yes coalesce=yes list=dll   fit=first order=lifo\n",
    };
    const size_t big = 64u << 20;
    for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++) {
        cfg_t cfg;
        snprintf(cfg.name, sizeof cfg.name, "calloc%zu", t);
        snprintf(cfg.text, sizeof cfg.text, "%s", texts[t]);
        dmm_chain_t *c = make(&cfg, DMM_PS_REAL);
        unsigned char *p = dmm_chain_calloc(c, big / 8, 8);
        cr_assert_not_null(p);
        size_t res = resident_pages(p, big);
        cr_expect_leq(res, 512, "%s: %zu of %zu pages resident after calloc", cfg.name, res,
                      big / 4096);
        cr_expect_eq(p[0] | p[big / 2] | p[big - 1], 0);
        memset(p, 0xee, big);
        dmm_chain_free(c, p);
        /* the same length again: retained (pages and all) or dropped */
        unsigned char *q = dmm_chain_calloc(c, 1, big);
        cr_assert_not_null(q);
        size_t bad = 0;
        for (size_t i = 0; i < big; i++)
            bad += q[i] != 0;
        cr_expect_eq(bad, 0, "%s: %zu bytes of a reused block not cleared", cfg.name, bad);
        /* a large block written, freed, and a shorter calloc in its pages */
        memset(q, 0xee, big);
        dmm_chain_free(c, q);
        unsigned char *r = dmm_chain_calloc(c, 1, big / 2);
        cr_assert_not_null(r);
        for (size_t i = 0; i < big / 2; i += 4093)
            cr_assert_eq(r[i], 0, "%s: byte %zu", cfg.name, i);
        dmm_chain_free(c, r);
        cr_expect_eq(dmm_chain_check(c), 0, "%s", cfg.name);
        dmm_chain_delete(c);
    }
}

/* Small blocks aligned past 16 bytes share slabs of the fallback path (a
 * page each held 100 000 posix_memalign(64, ~100) in 400 MB): each aligned
 * as asked, its bytes its own, reallocated with its contents, given back;
 * the footprint near the live bytes and back down at the end; and the
 * simulator's M is what the library holds, to the byte, as for every
 * other block. */
Test(chain, small_aligned_blocks_share_slabs_as_the_simulator_counts)
{
    static const char *const texts[] = {
        "lea           range=(0,inf]         split=yes coalesce=yes list=dll   fit=best  order=fifo\n",
        "pages         huge=yes\n"
        "sss           range=(0,256]         split=no  coalesce=no  list=sll   fit=first order=lifo\n"
        "tlsf          range=(256,65536]     split=yes coalesce=yes list=dll   fit=first order=lifo\n",
        "pool          bytes=2097152\n"
        "kingsley      range=(0,inf]         split=no  coalesce=no  list=sll   fit=exact order=lifo\n",
    };
    enum { N = 30000, LIVE = 5000 };
    dmm_opstream_t s;
    memset(&s, 0, sizeof s);
    s.ops = malloc(3 * N * sizeof *s.ops);
    uint32_t live[LIVE];
    size_t nlive = 0;
    uint64_t x = 99;
    for (uint32_t id = 0; id < N; id++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        unsigned r = (unsigned)(x >> 33);
        if (nlive == LIVE || (nlive && r % 3 == 0)) {
            size_t k = (r >> 4) % nlive;
            s.ops[s.nops++] = (dmm_op_t){ .kind = DMM_OP_FREE, .id = live[k] };
            live[k] = live[--nlive];
        }
        if (nlive && r % 11 == 0)
            s.ops[s.nops++] = (dmm_op_t){ .kind = DMM_OP_REALLOC, .id = live[(r >> 6) % nlive],
                                          .size = 1 + (r >> 9) % 600 };
        s.ops[s.nops++] = (dmm_op_t){ .kind = DMM_OP_ALLOC, .id = id, .size = 1 + (r >> 12) % 512,
                                      .align_log2 = (uint8_t)(5 + (r >> 20) % 3) };
        live[nlive++] = id;
    }
    while (nlive)
        s.ops[s.nops++] = (dmm_op_t){ .kind = DMM_OP_FREE, .id = live[--nlive] };
    s.nids = N;
    for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++) {
        cfg_t cfg;
        snprintf(cfg.name, sizeof cfg.name, "aligned%zu", t);
        snprintf(cfg.text, sizeof cfg.text, "%s", texts[t]);
        dmm_desc_t d;
        dmm_err_t err = { { 0 } };
        cr_assert_eq(dmm_desc_parse(cfg.name, cfg.text, strlen(cfg.text), &d, &err), 0);
        dmm_sim_result_t res;
        cr_assert_eq(dmm_sim_run(&s, &d, cfg.name, 499, &res, &err), 0, "%s", err.msg);
        cr_expect_eq(res.violations, 0, "%s", cfg.name);
        dmm_chain_t *c = make(&cfg, DMM_PS_REAL);
        unsigned char **ptr = calloc(N, sizeof *ptr);
        size_t *len = calloc(N, sizeof *len);
        for (size_t i = 0; i < s.nops; i++) {
            const dmm_op_t *op = &s.ops[i];
            unsigned char *p = ptr[op->id];
            if (op->kind == DMM_OP_FREE) {
                for (size_t b = 0; b < len[op->id]; b++)
                    cr_assert_eq(p[b], (unsigned char)op->id, "%s: block %u overwritten", cfg.name,
                                 op->id);
                dmm_chain_free(c, p);
                continue;
            }
            size_t keep = op->kind == DMM_OP_REALLOC && len[op->id] < op->size ? len[op->id]
                                                                               : op->size;
            if (op->kind == DMM_OP_REALLOC) {
                p = dmm_chain_realloc(c, p, op->size);
                for (size_t b = 0; b < keep; b++)
                    cr_assert_eq(p[b], (unsigned char)op->id, "%s: realloc lost a byte", cfg.name);
            } else {
                size_t al = (size_t)1 << op->align_log2;
                p = dmm_chain_memalign(c, al, op->size);
                cr_assert_not_null(p);
                cr_assert_eq((uintptr_t)p % al, 0, "%s: %p not aligned to %zu", cfg.name,
                             (void *)p, al);
            }
            cr_assert_geq(dmm_chain_usable(c, p), op->size, "%s", cfg.name);
            memset(p, (unsigned char)op->id, op->size);
            ptr[op->id] = p;
            len[op->id] = op->size;
        }
        cr_expect_eq(c->ps.peak, res.M, "%s: the library held %zu at peak, the simulator says %zu",
                     cfg.name, c->ps.peak, res.M);
        cr_expect_eq(dmm_chain_check(c), 0, "%s", cfg.name);
        /* ~5000 live blocks of at most 640-byte slots: a few MB, not a
         * page each (20 MB and more) */
        cr_expect_lt(c->ps.peak, 12u << 20, "%s: peak footprint %zu", cfg.name, c->ps.peak);
        cr_expect_lt(c->ps.footprint, 5u << 20, "%s: %zu held once every block is freed",
                     cfg.name, c->ps.footprint);
        free(ptr);
        free(len);
        dmm_chain_delete(c);
    }
    free(s.ops);
}
