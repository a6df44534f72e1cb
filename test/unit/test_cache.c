/* test_cache.c - the block cache in front of a chain (allocators/chain/
 * cache.h): what it keeps, what it serves, what it costs in T, and that a
 * thread's cache goes back to the allocators when the thread exits.  (The
 * conformance suite, test_chain.c, runs chains with caches through every
 * other test, on real memory and simulated.) */
#include <criterion/criterion.h>

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "allocators/chain/chain.h"
#include "allocators/chain/desc.h"
#include "allocators/sim/sim.h"

static dmm_chain_t *chain_of(const char *text, int mode)
{
    dmm_desc_t d;
    dmm_err_t err = { { 0 } };
    cr_assert_eq(dmm_desc_parse("t", text, strlen(text), &d, &err), 0, "%s", err.msg);
    dmm_chain_t *c = dmm_chain_new(&d, mode, &err);
    cr_assert_not_null(c, "%s", err.msg);
    return c;
}

#define SSS_CACHED "cache max=256 count=2\nsss range=(0,1024]\n"

Test(cache, a_freed_block_is_served_again_without_its_allocator)
{
    dmm_chain_t *c = chain_of(SSS_CACHED, DMM_PS_SIM);
    void *p = dmm_chain_malloc(c, 40);          /* sss: a 48-byte block */
    cr_expect_eq(c->alloc[0].served, 1);
    cr_expect_eq(c->cost.ops, 1);
    dmm_chain_free(c, p);
    cr_expect_eq(c->cost.cached, 1, "the free pushed it");
    cr_expect_eq(c->cost.ops, 1, "and called no allocator");
    /* a request of 41..48 bytes pops bin 6; one of 33..40 finds bin 5 empty
     * and takes bin 6 */
    cr_expect_eq(dmm_chain_malloc(c, 36), p);
    cr_expect_eq(c->alloc[0].served, 1);
    cr_expect_eq(c->cost.cached, 2);
    dmm_chain_free(c, p);
    cr_expect_eq(dmm_chain_malloc(c, 48), p);
    /* bigger than the block: not from the cache */
    dmm_chain_free(c, p);
    void *q = dmm_chain_malloc(c, 64);
    cr_expect_neq(q, p);
    cr_expect_eq(c->alloc[0].served, 2);
    cr_expect_eq(dmm_chain_check(c), 0);
    dmm_chain_delete(c);
}

Test(cache, count_blocks_per_size_and_nothing_above_max)
{
    dmm_chain_t *c = chain_of(SSS_CACHED, DMM_PS_SIM);
    void *b[3], *big = dmm_chain_malloc(c, 300);
    for (int i = 0; i < 3; i++)
        b[i] = dmm_chain_malloc(c, 100);   /* 112-byte blocks */
    uint64_t ops = c->cost.ops;
    for (int i = 0; i < 3; i++)
        dmm_chain_free(c, b[i]);
    cr_expect_eq(c->cost.cached, 2, "count=2: the third goes to its allocator");
    cr_expect_eq(c->cost.ops, ops + 1);
    dmm_chain_free(c, big);
    cr_expect_eq(c->cost.cached, 2, "a 304-byte block is above max=256");
    /* LIFO: the last one cached comes out first */
    cr_expect_eq(dmm_chain_malloc(c, 100), b[1]);
    cr_expect_eq(dmm_chain_malloc(c, 100), b[0]);
    cr_expect_eq(dmm_chain_check(c), 0);
    dmm_chain_delete(c);
}

Test(cache, a_flush_gives_every_block_back)
{
    dmm_chain_t *c = chain_of("cache max=1024 count=100\nlea range=(0,inf]\n", DMM_PS_SIM);
    void *b[64];
    for (int i = 0; i < 64; i++)
        b[i] = dmm_chain_malloc(c, 16 * (size_t)i + 8);   /* usable: the same */
    for (int i = 0; i < 64; i++)
        dmm_chain_free(c, b[i]);
    cr_expect_eq(c->cost.cached, 64);
    dmm_chain_cache_flush(c);
    for (unsigned k = 0; k < DMM_CACHE_BINS; k++)
        cr_expect_null(c->cache.head[k]);
    uint64_t served = c->alloc[0].served;
    void *p = dmm_chain_malloc(c, 100);
    cr_expect_eq(c->alloc[0].served, served + 1, "the cache is empty: lea served it");
    dmm_chain_free(c, p);
    cr_expect_eq(dmm_chain_check(c), 0);
    dmm_chain_delete(c);
}

/* The cache pays in T as its weight says, and the simulation of a chain
 * with one is the same on every run. */
Test(cache, a_hit_costs_the_cache_weight_instead_of_a_call)
{
    dmm_opstream_t s = { 0 };
    dmm_op_t ops[] = {
        { .kind = DMM_OP_ALLOC, .id = 0, .size = 40 }, { .kind = DMM_OP_FREE, .id = 0 },
        { .kind = DMM_OP_ALLOC, .id = 1, .size = 40 }, { .kind = DMM_OP_FREE, .id = 1 },
    };
    s.ops = ops;
    s.nops = 4;
    s.nids = 2;
    dmm_desc_t with, without;
    dmm_err_t err = { { 0 } };
    const char *t = SSS_CACHED;
    cr_assert_eq(dmm_desc_parse("t", t, strlen(t), &with, &err), 0, "%s", err.msg);
    const char *u = strchr(t, '\n') + 1;
    cr_assert_eq(dmm_desc_parse("u", u, strlen(u), &without, &err), 0, "%s", err.msg);
    dmm_sim_result_t a, b;
    cr_assert_eq(dmm_sim_run(&s, &with, "with", 1, &a, &err), 0, "%s", err.msg);
    cr_assert_eq(dmm_sim_run(&s, &without, "without", 1, &b, &err), 0, "%s", err.msg);
    cr_expect_eq(a.cost.ops, 1, "only the first malloc reaches sss");
    cr_expect_eq(a.cost.cached, 3);
    cr_expect_eq(b.cost.ops, 4);
    const dmm_cost_t call = { .ops = 1 }, hit = { .cached = 1 };
    cr_expect_lt(dmm_cost_units(&hit), dmm_cost_units(&call));
    cr_expect_eq(a.M, b.M);
    cr_expect_eq(a.violations + b.violations, 0);
}

/* ---- per thread -------------------------------------------------------- */

#define N_BLOCKS 32

typedef struct job {
    dmm_chain_t *c;
    void *blocks[N_BLOCKS];
    int alloc;                 /* allocate them first, or only free them */
} job_t;

static void *thread_frees(void *arg)
{
    job_t *j = arg;
    for (int i = 0; i < N_BLOCKS && j->alloc; i++)
        j->blocks[i] = dmm_chain_malloc(j->c, 64);
    for (int i = 0; i < N_BLOCKS; i++)
        dmm_chain_free(j->c, j->blocks[i]);
    /* they sit in this thread's cache until it exits */
    return NULL;
}

static int same_set(void *const *a, void *const *b, int n)
{
    for (int i = 0; i < n; i++) {
        int found = 0;
        for (int k = 0; k < n && !found; k++)
            found = a[i] == b[k];
        if (!found)
            return 0;
    }
    return 1;
}

/* A thread's cached blocks go back to their allocator when it exits, so
 * the next requests reuse them (sss hands out freed blocks before carving
 * new ones); blocks freed in a thread other than the one that allocated
 * them too. */
Test(cache, a_thread_that_exits_gives_its_cache_back)
{
    dmm_chain_t *c = chain_of("cache max=256 count=64\nsss range=(0,1024]\n", DMM_PS_REAL);
    cr_assert_eq(dmm_chain_cache_per_thread(c), 0);
    dmm_chain_t *other = chain_of(SSS_CACHED, DMM_PS_REAL);
    cr_expect_eq(dmm_chain_cache_per_thread(other), -1, "one chain per process");
    cr_expect_eq(other->cache_tls, 0);
    dmm_chain_delete(other);

    job_t j = { .c = c, .alloc = 1 };
    pthread_t th;
    pthread_create(&th, NULL, thread_frees, &j);
    pthread_join(th, NULL);
    void *again[N_BLOCKS];
    uint64_t served = c->alloc[0].served;
    for (int i = 0; i < N_BLOCKS; i++)
        again[i] = dmm_chain_malloc(c, 64);
    cr_expect_eq(c->alloc[0].served, served + N_BLOCKS, "this thread's cache was empty");
    cr_expect(same_set(again, j.blocks, N_BLOCKS), "the exited thread's blocks were reused");

    /* allocated here, freed there */
    job_t k = { .c = c, .alloc = 0 };
    memcpy(k.blocks, again, sizeof again);
    pthread_create(&th, NULL, thread_frees, &k);
    pthread_join(th, NULL);
    void *third[N_BLOCKS];
    for (int i = 0; i < N_BLOCKS; i++)
        third[i] = dmm_chain_malloc(c, 64);
    cr_expect(same_set(third, again, N_BLOCKS), "blocks freed across threads came back");
    for (int i = 0; i < N_BLOCKS; i++)
        dmm_chain_free(c, third[i]);
    cr_expect_eq(dmm_chain_check(c), 0);
    /* this thread's cache holds them now; a flush gives them back */
    dmm_chain_cache_flush(c);
    for (unsigned b = 0; b < DMM_CACHE_BINS; b++)
        cr_expect_null(dmm_chain_thread_cache.head[b]);
}
