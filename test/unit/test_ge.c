/* test_ge.c - the GE search (codegen/search/ge.c) and `dmm evolve`: reproducible
 * from the seed whatever the number of threads, the phenotype cache, invalid
 * individuals, eq. 1 on the references, elitism, the time budget and stop
 * request, the Pareto search's front against every design enumerated, and the command's outputs and bad inputs. */
#include <criterion/criterion.h>

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen/search/climb.h"
#include "codegen/search/ge.h"
#include "codegen/grammar/grammar.h"
#include "allocators/sim/sim.h"

#include "test/lib/rundmm.h"

/* ---- a small trace in memory --------------------------------------------- */

static const uint64_t sizes[] = { 16, 24, 40, 100, 256, 1000, 4000 };
#define NSIZES (sizeof sizes / sizeof sizes[0])

/* ~300 mallocs and their frees, at most 40 blocks live, sizes from a few. */
static void small_trace(dmm_trace_t *t)
{
    memset(t, 0, sizeof *t);
    t->path = strdup("mem.trc");
    uint64_t live[40];
    int nlive = 0;
    uint64_t next = 0x10000, x = 12345;
    for (int i = 0; i < 600; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        unsigned r = (unsigned)(x >> 33);
        if (nlive == 40 || (nlive > 0 && r % 3 == 0)) {
            int k = (int)(r / 3 % (unsigned)nlive);
            dmm_rec_t *rec = dmm_trace_push(t);
            cr_assert_not_null(rec);
            rec->op = DMM_TRC_FREE;
            rec->ptr_in = live[k];
            live[k] = live[--nlive];
        } else {
            dmm_rec_t *rec = dmm_trace_push(t);
            cr_assert_not_null(rec);
            rec->op = DMM_TRC_MALLOC;
            rec->size = sizes[r % NSIZES];
            rec->ptr_out = next;
            live[nlive++] = next;
            next += 8192;
        }
    }
}

static dmm_opstream_t ops;
static dmm_grammar_t *gram;     /* generated from the trace */

static void setup(void)
{
    dmm_trace_t t;
    small_trace(&t);
    dmm_err_t e;
    cr_assert_eq(dmm_opstream_build(&t, &ops, &e), 0, "%s", e.msg);
    cr_assert_gt(ops.nops, 300);
    dmm_err_t err = { { 0 } };
    char *text = dmm_grammar_for_trace(&t, 0, "mem.trc", &err);
    cr_assert_not_null(text, "%s", err.msg);
    gram = dmm_grammar_parse("mem.bnf", text, strlen(text), &err);
    cr_assert_not_null(gram, "%s", err.msg);
    free(text);
    dmm_trace_free(&t);
}

static void teardown(void)
{
    dmm_grammar_free(gram);
    dmm_opstream_free(&ops);
}

static dmm_grammar_t *grammar(const char *text)
{
    dmm_err_t err = { { 0 } };
    dmm_grammar_t *g = dmm_grammar_parse("test.bnf", text, strlen(text), &err);
    cr_assert_not_null(g, "%s", err.msg);
    return g;
}

static void small_config(dmm_ge_config_t *c, uint64_t seed, int jobs)
{
    dmm_ge_config_default(c);
    c->pop = 30;
    c->elite = 3;
    c->gens = 8;
    c->seed = seed;
    c->jobs = jobs;
}

static void run(const dmm_ge_config_t *c, const dmm_grammar_t *g, dmm_ge_result_t *r)
{
    dmm_err_t err = { { 0 } };
    cr_assert_eq(dmm_ge_run(c, g, &ops, r, &err), 0, "%s", err.msg);
}

static void run_on(const dmm_ge_config_t *c, const dmm_grammar_t *g, const dmm_opstream_t *s,
                   dmm_ge_result_t *r)
{
    dmm_err_t err = { { 0 } };
    cr_assert_eq(dmm_ge_run(c, g, s, r, &err), 0, "%s", err.msg);
}

static void text_of(const dmm_ge_result_t *r, char *buf, size_t cap)
{
    dmm_desc_print(&r->best, buf, cap);
}

/* Everything but the clock. */
static void expect_same_run(const dmm_ge_result_t *a, const dmm_ge_result_t *b, const char *what)
{
    cr_expect_eq(a->found, b->found, "%s", what);
    cr_expect_eq(a->F, b->F, "%s: best F %.17g vs %.17g", what, a->F, b->F);
    cr_expect_eq(a->T, b->T, "%s", what);
    cr_expect_eq(a->M, b->M, "%s", what);
    char ta[8192], tb[8192];
    text_of(a, ta, sizeof ta);
    text_of(b, tb, sizeof tb);
    cr_expect_str_eq(ta, tb, "%s", what);
    cr_expect_eq(memcmp(a->genome, b->genome, (size_t)a->length * sizeof *a->genome), 0, "%s",
                 what);
    cr_assert_eq(a->nlog, b->nlog, "%s", what);
    for (int i = 0; i < a->nlog; i++) {
        const dmm_ge_gen_t *x = &a->log[i], *y = &b->log[i];
        cr_expect(x->best_F == y->best_F && x->mean_F == y->mean_F && x->best_T == y->best_T &&
                      x->best_M == y->best_M && x->evaluations == y->evaluations &&
                      x->cache_hits == y->cache_hits && x->simulations == y->simulations &&
                      x->invalid == y->invalid && x->nvalid == y->nvalid,
                  "%s: generation %d differs", what, i);
    }
    cr_expect_eq(a->evaluations, b->evaluations, "%s", what);
    cr_expect_eq(a->cache_hits, b->cache_hits, "%s", what);
}

TestSuite(ge, .init = setup, .fini = teardown, .timeout = 60);

Test(ge, same_seed_same_result_whatever_the_jobs)
{
    dmm_ge_config_t c;
    dmm_ge_result_t r1, r2, r1b;
    small_config(&c, 7, 1);
    run(&c, gram, &r1);
    small_config(&c, 7, 2);
    run(&c, gram, &r2);
    small_config(&c, 7, 1);
    run(&c, gram, &r1b);
    cr_assert(r1.found, "the generated grammar gives valid DMMs");
    cr_expect_eq(r1.nlog, 9, "the initial population and 8 generations");
    cr_expect_eq(r1.evaluations, 30 + 8 * 27u);
    expect_same_run(&r1, &r2, "jobs 1 vs 2");
    expect_same_run(&r1, &r1b, "twice in a row");
    /* the best F is what eq. 1 gives for its T and M */
    cr_expect_eq(r1.F, dmm_ge_fitness(r1.T, r1.M, r1.T_KNG, r1.M_LEA));
    dmm_ge_result_free(&r1);
    dmm_ge_result_free(&r2);
    dmm_ge_result_free(&r1b);
}

Test(ge, a_different_seed_takes_another_path)
{
    dmm_ge_config_t c;
    dmm_ge_result_t a, b;
    small_config(&c, 1, 2);
    run(&c, gram, &a);
    small_config(&c, 2, 2);
    run(&c, gram, &b);
    cr_assert(a.found && b.found);
    int differ = memcmp(a.genome, b.genome, (size_t)a.length * sizeof *a.genome) != 0;
    for (int i = 0; i < a.nlog && i < b.nlog; i++)
        differ |= a.log[i].mean_F != b.log[i].mean_F;
    cr_expect(differ, "seeds 1 and 2 gave the same populations");
    dmm_ge_result_free(&a);
    dmm_ge_result_free(&b);
}

/* r.top: the best distinct designs simulated to the end, best first, the
 * first the run's best. */
Test(ge, the_top_designs_are_distinct_and_best_first)
{
    dmm_ge_config_t c;
    dmm_ge_result_t r;
    small_config(&c, 5, 2);
    c.top = 4;
    run(&c, gram, &r);
    cr_assert(r.found);
    cr_assert_geq(r.ntop, 2);
    cr_assert_leq(r.ntop, 4);
    char best[8192];
    dmm_desc_t eff = r.best;
    dmm_desc_effective(&eff);   /* the cache knows a DMM by its effective text */
    dmm_desc_print(&eff, best, sizeof best);
    cr_expect_str_eq(r.top[0].key, best);
    cr_expect_eq(r.top[0].F, r.F);
    for (int i = 0; i < r.ntop; i++) {
        dmm_desc_t d;
        dmm_err_t err;
        cr_expect_eq(dmm_desc_parse("top", r.top[i].key, strlen(r.top[i].key), &d, &err), 0,
                     "%s", err.msg);
        cr_expect_eq(r.top[i].F, dmm_ge_fitness(r.top[i].T, r.top[i].M, r.T_KNG, r.M_LEA));
        for (int k = 0; k < i; k++) {
            cr_expect_leq(r.top[k].F, r.top[i].F);
            cr_expect_str_neq(r.top[k].key, r.top[i].key);
            cr_expect(r.top[k].T != r.top[i].T || r.top[k].M != r.top[i].M,
                      "top %d and %d replay alike", k, i);
        }
    }
    dmm_ge_result_free(&r);
    c.top = 0;
    run(&c, gram, &r);
    cr_expect_eq(r.ntop, 0);
    cr_expect_null(r.top);
    dmm_ge_result_free(&r);
}

/* d's T, M and W on ops with a pool of its own address span, as dmm sim
 * gives them, and its T without one. */
static void pooled_sim(const char *text, uint64_t *T, size_t *M, uint64_t *W, uint64_t *T_open)
{
    dmm_desc_t d;
    dmm_err_t err;
    cr_assert_eq(dmm_desc_parse("d", text, strlen(text), &d, &err), 0, "%s", err.msg);
    dmm_sim_result_t r;
    cr_assert_eq(dmm_sim_run(&ops, &d, "d", 0, &r, &err), 0, "%s", err.msg);
    *T_open = r.T;
    d.pool = dmm_sim_pool_of(&r);
    cr_assert_eq(dmm_sim_run(&ops, &d, "d", 0, &r, &err), 0, "%s", err.msg);
    *T = r.T;
    *M = r.M;
    *W = r.max_op_cost;
}

/* cfg.pooled (dmm evolve --pooled): each design is scored as it runs with
 * a pool of its own address span, where no call takes a fresh page: the
 * best's and the front's T, M and W are what dmm sim gives the design with
 * that pool line, and T is below the unpooled design's. */
Test(ge, a_pooled_search_scores_each_design_with_its_pool)
{
    dmm_ge_config_t c;
    dmm_ge_result_t r;
    small_config(&c, 5, 2);
    c.pooled = 1;
    c.objectives = DMM_GE_OBJ_TIME | DMM_GE_OBJ_WORST;
    run(&c, gram, &r);
    cr_assert(r.found);
    cr_assert_gt(r.nfront, 0);
    char best[8192];
    dmm_desc_print(&r.best, best, sizeof best);
    uint64_t T, W, T_open;
    size_t M;
    pooled_sim(best, &T, &M, &W, &T_open);
    cr_expect_eq(r.T, T, "best: T %llu, pooled sim %llu", (unsigned long long)r.T,
                 (unsigned long long)T);
    cr_expect_eq(r.M, M);
    cr_expect_eq(r.W, W);
    cr_expect_lt(T, T_open, "no fresh page is counted in a pool");
    for (int i = 0; i < r.nfront; i++) {
        pooled_sim(r.front[i].key, &T, &M, &W, &T_open);
        cr_expect_eq(r.front[i].T, T, "front %d", i);
        cr_expect_eq(r.front[i].M, M, "front %d", i);
        cr_expect_eq(r.front[i].W, W, "front %d", i);
    }
    dmm_ge_result_free(&r);
}

Test(ge, the_cache_answers_repeated_phenotypes)
{
    dmm_ge_config_t c;
    dmm_ge_result_t r;
    small_config(&c, 3, 2);
    run(&c, gram, &r);
    cr_expect_gt(r.cache_hits, 0);
    cr_expect_eq(r.simulations + r.cache_hits + (r.invalid - 0) >= r.evaluations, 1);
    cr_expect_lt(r.simulations, r.evaluations);
    dmm_ge_result_free(&r);

    /* a grammar with one phenotype: one simulation, every other evaluation
     * a hit */
    dmm_grammar_t *g = grammar("<S> ::= <C> false false 4000 SLL EXACT LIFO\n"
                               "<C> ::= Kingsley\n");
    small_config(&c, 3, 2);
    run(&c, g, &r);
    cr_expect_eq(r.simulations, 1);
    cr_expect_eq(r.cache_hits, r.evaluations - 1);
    cr_expect_eq(r.invalid, 0);
    dmm_ge_result_free(&r);
    dmm_grammar_free(g);
}

/* Kingsley reads none of the options and Lea only the order: phenotypes
 * that differ elsewhere are one DMM, simulated once (dmm_desc_effective),
 * and the search's result is what it would be without that. */
Test(ge, options_a_class_does_not_read_are_one_phenotype)
{
    dmm_grammar_t *g = grammar("<S> ::= Kingsley <B> <B> 4000 <L> <F> <O>\n"
                               "<B> ::= true | false\n"
                               "<L> ::= SLL | DLL | BTREE\n"
                               "<F> ::= FIRST | BEST | EXACT\n"
                               "<O> ::= LIFO | FIFO\n");
    dmm_ge_config_t c;
    dmm_ge_result_t r;
    small_config(&c, 5, 2);
    run(&c, g, &r);
    cr_expect_eq(r.simulations, 1, "%llu simulations", (unsigned long long)r.simulations);
    cr_expect_eq(r.invalid, 0);
    dmm_ge_result_free(&r);
    dmm_grammar_free(g);

    g = grammar("<S> ::= Lea <B> <B> 4000 <L> <F> <O>\n"
                "<B> ::= true | false\n"
                "<L> ::= SLL | DLL | BTREE\n"
                "<F> ::= FIRST | BEST | EXACT\n"
                "<O> ::= LIFO | FIFO\n");
    small_config(&c, 5, 2);
    run(&c, g, &r);
    cr_expect_eq(r.simulations, 2, "one per order: %llu", (unsigned long long)r.simulations);
    dmm_ge_result_free(&r);
    dmm_grammar_free(g);
}

/* Needs 1 + 4 + 16 + 64 + 256 = 341 codons: more than 50 with 3 wraps. */
static const char deep[] =
    "<S> ::= <A> <A> <A> <A>\n"
    "<A> ::= <B> <B> <B> <B>\n"
    "<B> ::= <C> <C> <C> <C>\n"
    "<C> ::= <D> <D> <D> <D>\n"
    "<D> ::= Kingsley | Lea\n";

Test(ge, invalid_only_grammar_completes_with_no_valid_individual)
{
    dmm_grammar_t *g = grammar(deep);
    dmm_ge_config_t c;
    dmm_ge_result_t r;
    small_config(&c, 5, 2);
    run(&c, g, &r);
    cr_expect_eq(r.found, 0);
    cr_expect_eq(r.nlog, c.gens + 1, "the run still completes");
    cr_expect_eq(r.simulations, 0);
    cr_expect_eq(r.invalid, r.evaluations);
    for (int i = 0; i < r.nlog; i++) {
        cr_expect_eq(r.log[i].nvalid, 0);
        cr_expect_eq(r.log[i].best_F, DMM_GE_WORST);
    }
    dmm_ge_result_free(&r);
    dmm_grammar_free(g);
}

static void sim_preset(const char *name, dmm_sim_result_t *r)
{
    dmm_desc_t d;
    dmm_err_t err = { { 0 } };
    cr_assert_eq(dmm_desc_load(name, &d, &err), 0, "%s", err.msg);
    cr_assert_eq(dmm_sim_run(&ops, &d, name, 0, r, &err), 0, "%s", err.msg);
}

Test(ge, kng_scores_exactly_half_plus_half_its_memory_over_lea)
{
    static dmm_sim_result_t kng, lea;
    sim_preset("kng", &kng);
    sim_preset("lea", &lea);
    double F = dmm_ge_fitness(kng.T, kng.M, kng.T, lea.M);
    cr_expect_eq(F, 0.5 + 0.5 * (double)kng.M / (double)lea.M);
    cr_expect_eq(dmm_ge_fitness(lea.T, lea.M, kng.T, lea.M),
                 0.5 * (double)lea.T / (double)kng.T + 0.5);

    /* the engine's own references are the same simulations */
    dmm_grammar_t *g = grammar("<S> ::= Kingsley false false 4000 SLL EXACT LIFO\n");
    dmm_ge_config_t c;
    dmm_ge_result_t r;
    small_config(&c, 1, 1);
    c.gens = 0;
    run(&c, g, &r);
    cr_expect_eq(r.T_KNG, kng.T);
    cr_expect_eq(r.M_LEA, lea.M);
    cr_assert(r.found);
    /* Kingsley over (0, 4000] holds every request of the trace, as kng does */
    cr_expect_eq(r.T, kng.T);
    cr_expect_eq(r.M, kng.M);
    cr_expect_eq(r.F, 0.5 + 0.5 * (double)kng.M / (double)lea.M);
    dmm_ge_result_free(&r);
    dmm_grammar_free(g);
}

Test(ge, elitism_keeps_the_best_F_from_rising)
{
    dmm_ge_config_t c;
    dmm_ge_result_t r;
    small_config(&c, 11, 2);
    c.gens = 15;
    c.pmut = 0.1;   /* plenty of disruption */
    run(&c, gram, &r);
    cr_assert_eq(r.nlog, 16);
    for (int i = 1; i < r.nlog; i++)
        cr_expect_leq(r.log[i].best_F, r.log[i - 1].best_F, "generation %d", i);
    cr_expect_eq(r.F, r.log[r.nlog - 1].best_F);
    dmm_ge_result_free(&r);
}

Test(ge, a_time_budget_or_a_stop_request_ends_early)
{
    dmm_ge_config_t c;
    dmm_ge_result_t r;
    small_config(&c, 1, 2);
    c.gens = 100000;
    c.time_budget = 0.3;
    run(&c, gram, &r);
    cr_expect_eq(r.stopped, DMM_GE_TIME);
    cr_expect_lt(r.nlog, 100001);
    cr_expect_lt(r.seconds, 10);
    cr_expect(r.found);
    dmm_ge_result_free(&r);

    volatile sig_atomic_t stop = 1;
    small_config(&c, 1, 2);
    c.stop = &stop;
    run(&c, gram, &r);
    cr_expect_eq(r.stopped, DMM_GE_STOPPED);
    cr_expect_eq(r.nlog, 1, "the initial generation only");
    cr_expect(r.log[0].partial);
    cr_expect_not(r.found, "stopped before anything was simulated");
    cr_expect_eq(r.simulations, 0);
    dmm_ge_result_free(&r);
}

/* ---- bounded evaluation ----------------------------------------------------- */

/* nlive blocks of random sizes (nsizes distinct ones, 16 B to 8 KiB), every
 * other one freed, then nchurn times: free a random live one, allocate
 * another.  A DMM that searches one list of all free blocks for the best
 * fit walks thousands of nodes per call here: hundreds of times KNG's T. */
static void churn_trace(dmm_trace_t *t, int nlive, int nchurn, int nsizes)
{
    memset(t, 0, sizeof *t);
    t->path = strdup("churn.trc");
    uint64_t *live = calloc((size_t)nlive, sizeof *live);
    cr_assert_not_null(live);
    uint64_t next = 0x10000, x = 777;
    int n = 0;
    for (int i = 0; i < nlive + nlive / 2 + 2 * nchurn; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        unsigned r = (unsigned)(x >> 33);
        dmm_rec_t *rec = dmm_trace_push(t);
        cr_assert_not_null(rec);
        int phase = i < nlive ? 0 : i < nlive + nlive / 2 ? 1 : 2;
        if (phase == 1 || (phase == 2 && (i - nlive - nlive / 2) % 2 == 0)) {
            int k = phase == 1 ? 2 * (i - nlive) : (int)(r % (unsigned)n);
            if (phase == 2)
                while (!live[k])
                    k = (k + 1) % n;
            rec->op = DMM_TRC_FREE;
            rec->ptr_in = live[k];
            live[k] = 0;
            continue;
        }
        int k = n < nlive ? n++ : 0;
        while (live[k])
            k++;
        rec->op = DMM_TRC_MALLOC;
        rec->size = 16 + (uint64_t)(r % (unsigned)nsizes) * (8192 / (uint64_t)nsizes);
        rec->ptr_out = next;
        live[k] = next;
        next += 16384;
    }
    free(live);
}

static void load_churn(dmm_opstream_t *s, dmm_grammar_t **g)
{
    dmm_trace_t t;
    churn_trace(&t, 1500, 30000, 2000);
    dmm_err_t e = { { 0 } };
    cr_assert_eq(dmm_opstream_build(&t, s, &e), 0, "%s", e.msg);
    char *text = dmm_grammar_for_trace(&t, 0, "churn.trc", &e);
    cr_assert_not_null(text, "%s", e.msg);
    *g = dmm_grammar_parse("churn.bnf", text, strlen(text), &e);
    cr_assert_not_null(*g, "%s", e.msg);
    free(text);
    dmm_trace_free(&t);
}

/* ---- several objectives (NSGA-II) ----------------------------------------- */

static const char *const pareto_classes[] = { "SegregatedFreeList", "SimpleSegregatedStorage",
                                              "ExactSegregatedFit", "BuddySystemBinary",
                                              "Kingsley", "Lea", "TLSF" };
static const char *const pareto_lists[] = { "SLL", "DLL", "BTREE" };
static const char *const pareto_fits[] = { "FIRST", "BEST", "EXACT" };
static const char pareto_grammar[] =
    "<S> ::= <C> <B> <B> 8192 <L> <F> LIFO\n"
    "<C> ::= SegregatedFreeList | SimpleSegregatedStorage | ExactSegregatedFit\n"
    "      | BuddySystemBinary | Kingsley | Lea | TLSF\n"
    "<B> ::= true | false\n"
    "<L> ::= SLL | DLL | BTREE\n"
    "<F> ::= FIRST | BEST | EXACT\n";

typedef struct {
    uint64_t T;
    size_t   M;
} tm_t;

#define PARETO_DESIGNS (7 * 2 * 2 * 3 * 3)

/* Every design of pareto_grammar simulated: its T and M into all; their
 * number. */
static int enumerate_designs(const dmm_opstream_t *s, tm_t *all)
{
    static dmm_sim_result_t res;
    int n = 0;
    for (int c = 0; c < 7; c++)
        for (int sp = 0; sp < 2; sp++)
            for (int co = 0; co < 2; co++)
                for (int l = 0; l < 3; l++)
                    for (int f = 0; f < 3; f++) {
                        char ph[200];
                        snprintf(ph, sizeof ph, "%s %s %s 8192 %s %s LIFO", pareto_classes[c],
                                 sp ? "true" : "false", co ? "true" : "false",
                                 pareto_lists[l], pareto_fits[f]);
                        dmm_desc_t d;
                        dmm_err_t err = { { 0 } };
                        cr_assert_eq(dmm_phenotype_to_desc(ph, &d, &err), 0, "%s: %s", ph,
                                     err.msg);
                        cr_assert_eq(dmm_sim_run(s, &d, "enum", 0, &res, &err), 0, "%s",
                                     err.msg);
                        cr_assert_eq(res.failed, 0, "%s", ph);
                        all[n++] = (tm_t){ res.T, res.M };
                    }
    return n;
}

/* Every design of pareto_grammar simulated; the (T, M) that none of the
 * others dominates, each once, into front; their number. */
static int enumerated_front(const dmm_opstream_t *s, tm_t *front, int cap)
{
    static tm_t all[PARETO_DESIGNS];
    int n = enumerate_designs(s, all);
    int k = 0;
    for (int i = 0; i < n; i++) {
        int out = 0;
        for (int j = 0; j < n && !out; j++)
            out = (all[j].T <= all[i].T && all[j].M <= all[i].M &&
                   (all[j].T < all[i].T || all[j].M < all[i].M));
        for (int j = 0; j < k && !out; j++)
            out = front[j].T == all[i].T && front[j].M == all[i].M;
        if (!out) {
            cr_assert_lt(k, cap);
            front[k++] = all[i];
        }
    }
    return k;
}

/* A churning trace where speed and memory pull apart. */
static void load_pareto(dmm_opstream_t *s)
{
    dmm_trace_t t;
    churn_trace(&t, 400, 4000, 64);
    dmm_err_t e = { { 0 } };
    cr_assert_eq(dmm_opstream_build(&t, s, &e), 0, "%s", e.msg);
    dmm_trace_free(&t);
}

/* The search's front is the one found by simulating every design of a
 * small grammar: every point of it, nothing else. */
Test(ge, a_pareto_search_finds_the_whole_front_of_a_small_grammar)
{
    static dmm_opstream_t s;
    load_pareto(&s);
    tm_t want[64];
    int nwant = enumerated_front(&s, want, 64);
    cr_assert_gt(nwant, 1, "a front of one point would test little");

    dmm_grammar_t *g = grammar(pareto_grammar);
    dmm_ge_config_t c;
    dmm_ge_result_t r;
    small_config(&c, 11, 2);
    c.objectives = DMM_GE_OBJ_TIME | DMM_GE_OBJ_MEMORY;
    c.pop = 40;
    c.gens = 30;
    run_on(&c, g, &s, &r);
    cr_assert(r.found);
    cr_expect_eq(r.nfront, nwant, "front: %d designs, enumerated %d", r.nfront, nwant);
    for (int i = 0; i < nwant; i++) {
        int seen = 0;
        for (int j = 0; j < r.nfront && !seen; j++)
            seen = r.front[j].T == want[i].T && r.front[j].M == want[i].M;
        cr_expect(seen, "T=%llu M=%zu of the enumerated front is not in the search's",
                  (unsigned long long)want[i].T, want[i].M);
    }
    /* in order of T, each with M falling, and eq. 1's winner still given */
    for (int j = 1; j < r.nfront; j++) {
        cr_expect_lt(r.front[j - 1].T, r.front[j].T);
        cr_expect_gt(r.front[j - 1].M, r.front[j].M);
    }
    /* the hypervolume never falls from one generation to the next */
    for (int i = 1; i < r.nlog; i++)
        cr_expect_geq(r.log[i].hypervolume, r.log[i - 1].hypervolume);
    cr_expect_gt(r.log[r.nlog - 1].hypervolume, 0);
    dmm_ge_result_free(&r);

    /* the same seed, the same front, whatever the threads */
    dmm_ge_result_t r1;
    c.jobs = 1;
    run_on(&c, g, &s, &r1);
    dmm_ge_result_t r2;
    c.jobs = 2;
    run_on(&c, g, &s, &r2);
    cr_expect_eq(r1.nfront, r2.nfront);
    for (int j = 0; j < r1.nfront && j < r2.nfront; j++)
        cr_expect_str_eq(r1.front[j].key, r2.front[j].key);
    dmm_ge_result_free(&r1);
    dmm_ge_result_free(&r2);
    dmm_grammar_free(g);
    dmm_opstream_free(&s);
}

/* r.lean: for each weight w, the design of least w*T/T_KNG + (1-w)*M/M_LEA
 * of all those the search simulated, which on a small grammar is every one
 * (found by simulating each), unless a top design or an earlier weight's
 * has its T and M; eq. 1's F given as for any design. */
Test(ge, the_lean_designs_minimise_their_weighted_sums)
{
    static dmm_opstream_t s;
    dmm_trace_t t;
    churn_trace(&t, 1000, 8000, 5);   /* a front of three: the least M is slow */
    dmm_err_t e = { { 0 } };
    cr_assert_eq(dmm_opstream_build(&t, &s, &e), 0, "%s", e.msg);
    dmm_trace_free(&t);
    static tm_t all[PARETO_DESIGNS];
    int n = enumerate_designs(&s, all);
    dmm_grammar_t *g = grammar(pareto_grammar);
    dmm_ge_config_t c;
    dmm_ge_result_t r;
    small_config(&c, 11, 2);
    c.pop = 40;
    c.gens = 30;
    c.top = 2;
    c.hopeless = 0;
    run_on(&c, g, &s, &r);   /* weights 0.25 (eq. 1's best), 0.1, 0.03 (0.1's) */
    cr_assert(r.found);
    cr_assert_eq(r.ntop, 2);
    int k = 0;
    for (int w = 0; w < c.nlean; w++) {
        double lw = c.lean[w], best = INFINITY;
        tm_t pick = { 0, 0 };
        for (int i = 0; i < n; i++) {
            double v = lw * ((double)all[i].T / (double)r.T_KNG) +
                       (1 - lw) * ((double)all[i].M / (double)r.M_LEA);
            if (v < best) {
                best = v;
                pick = all[i];
            }
        }
        int dup = 0;
        for (int j = 0; j < r.ntop; j++)
            dup |= r.top[j].T == pick.T && r.top[j].M == pick.M;
        for (int j = 0; j < k; j++)
            dup |= r.lean[j].T == pick.T && r.lean[j].M == pick.M;
        if (dup)
            continue;
        cr_assert_lt(k, r.nlean, "weight %g: no lean design where T=%llu M=%zu is the least",
                     lw, (unsigned long long)pick.T, pick.M);
        cr_expect_eq(r.lean[k].weight, lw);
        cr_expect_eq(r.lean[k].T, pick.T, "weight %g", lw);
        cr_expect_eq(r.lean[k].M, pick.M, "weight %g", lw);
        cr_expect_eq(r.lean[k].F, dmm_ge_fitness(r.lean[k].T, r.lean[k].M, r.T_KNG, r.M_LEA));
        cr_expect_gt(r.lean[k].F, r.top[0].F, "eq. 1 prefers its winner");
        cr_expect_lt(r.lean[k].M, r.top[0].M, "a lean design holds less than eq. 1's winner");
        k++;
    }
    cr_expect_eq(r.nlean, k);
    cr_expect_geq(k, 1, "this trace has a lean design apart from eq. 1's");
    cr_expect_lt(k, c.nlean, "and weights that pick a top one or the same");
    dmm_ge_result_free(&r);
    /* none asked, none given; nor with a front to choose from */
    c.nlean = 0;
    run_on(&c, g, &s, &r);
    cr_expect_eq(r.nlean, 0);
    cr_expect_null(r.lean);
    dmm_ge_result_free(&r);
    c.nlean = 1;
    c.objectives = DMM_GE_OBJ_TIME | DMM_GE_OBJ_MEMORY;
    run_on(&c, g, &s, &r);
    cr_expect_eq(r.nlean, 0);
    dmm_ge_result_free(&r);
    dmm_grammar_free(g);
    dmm_opstream_free(&s);
}

/* Several traces: a design's F is the mean (or the worst) of its F on each,
 * against that trace's own KNG and LEA, exactly as simulating it on each
 * alone gives; its T and M are the sums. */
Test(ge, several_traces_score_each_against_its_own_references)
{
    static dmm_opstream_t s2;
    load_pareto(&s2);
    dmm_ge_trace_t more = { &s2, { 0 }, { 0 } };
    dmm_ge_config_t c;
    dmm_ge_result_t r;
    for (int worst = 0; worst <= 1; worst++) {
        small_config(&c, 4, 2);
        c.gens = 3;
        c.extra = &more;
        c.nextra = 1;
        c.worst_case = worst;
        run(&c, gram, &r);
        cr_assert(r.found);
        static dmm_sim_result_t k1, l1, k2, l2, b1, b2;
        dmm_desc_t d;
        dmm_err_t err = { { 0 } };
        cr_assert_eq(dmm_desc_load("kng", &d, &err), 0);
        cr_assert_eq(dmm_sim_run(&ops, &d, "k1", 0, &k1, &err), 0);
        cr_assert_eq(dmm_sim_run(&s2, &d, "k2", 0, &k2, &err), 0);
        cr_assert_eq(dmm_desc_load("lea", &d, &err), 0);
        cr_assert_eq(dmm_sim_run(&ops, &d, "l1", 0, &l1, &err), 0);
        cr_assert_eq(dmm_sim_run(&s2, &d, "l2", 0, &l2, &err), 0);
        cr_assert_eq(dmm_sim_run(&ops, &r.best, "b1", 0, &b1, &err), 0);
        cr_assert_eq(dmm_sim_run(&s2, &r.best, "b2", 0, &b2, &err), 0);
        double F1 = dmm_ge_fitness(b1.T, b1.M, k1.T, l1.M);
        double F2 = dmm_ge_fitness(b2.T, b2.M, k2.T, l2.M);
        cr_expect_float_eq(r.F_mean, (F1 + F2) / 2, 1e-12);
        cr_expect_float_eq(r.F_worst, F1 > F2 ? F1 : F2, 1e-12);
        cr_expect_float_eq(r.F, worst ? r.F_worst : r.F_mean, 1e-12);
        cr_expect_eq(r.T, b1.T + b2.T);
        cr_expect_eq(r.M, b1.M + b2.M);
        cr_expect_eq(r.cap, DMM_GE_WORST, "no cap over several traces");
        dmm_ge_result_free(&r);
    }
    /* the same run whatever the threads */
    dmm_ge_result_t a, b;
    small_config(&c, 6, 1);
    c.gens = 3;
    c.extra = &more;
    c.nextra = 1;
    run(&c, gram, &a);
    c.jobs = 3;
    run(&c, gram, &b);
    expect_same_run(&a, &b, "several traces, 1 and 3 jobs");
    dmm_ge_result_free(&a);
    dmm_ge_result_free(&b);
    dmm_opstream_free(&s2);
}

Test(ge, objectives_are_two_or_three_of_time_memory_and_worst)
{
    dmm_grammar_t *g = grammar(pareto_grammar);
    dmm_ge_config_t c;
    dmm_ge_result_t r;
    dmm_err_t err = { { 0 } };
    small_config(&c, 1, 1);
    c.objectives = DMM_GE_OBJ_TIME;
    cr_expect_neq(dmm_ge_run(&c, g, &ops, &r, &err), 0);
    cr_expect(strstr(err.msg, "two or three") != NULL, "%s", err.msg);
    dmm_ge_result_free(&r);
    c.objectives = 16;
    cr_expect_neq(dmm_ge_run(&c, g, &ops, &r, &err), 0);
    dmm_ge_result_free(&r);
    c.objectives = DMM_GE_OBJ_TIME | DMM_GE_OBJ_MEMORY | DMM_GE_OBJ_WORST | DMM_GE_OBJ_P999;
    cr_expect_neq(dmm_ge_run(&c, g, &ops, &r, &err), 0, "four: the hypervolume takes three");
    dmm_ge_result_free(&r);
    /* worst: the front's W is each design's costliest operation */
    c.objectives = DMM_GE_OBJ_TIME | DMM_GE_OBJ_MEMORY | DMM_GE_OBJ_WORST;
    c.gens = 4;
    static dmm_opstream_t s;
    load_pareto(&s);
    run_on(&c, g, &s, &r);
    cr_assert_gt(r.nfront, 0);
    cr_expect_gt(r.W_KNG, 0);
    for (int j = 0; j < r.nfront; j++) {
        dmm_desc_t d;
        cr_assert_eq(dmm_desc_parse("front", r.front[j].key, strlen(r.front[j].key), &d, &err),
                     0, "%s", err.msg);
        static dmm_sim_result_t res;
        cr_assert_eq(dmm_sim_run(&s, &d, "front", 0, &res, &err), 0, "%s", err.msg);
        cr_expect_eq(res.max_op_cost, r.front[j].W);
        cr_expect_eq(res.p999_op_cost, r.front[j].P);
        cr_expect_eq(res.T, r.front[j].T);
    }
    dmm_ge_result_free(&r);
    /* p999: the 99.9th percentile, normalised by kng's */
    c.objectives = DMM_GE_OBJ_TIME | DMM_GE_OBJ_P999;
    run_on(&c, g, &s, &r);
    cr_assert_gt(r.nfront, 0);
    cr_expect_gt(r.P_KNG, 0);
    for (int j = 0; j < r.nfront; j++)
        cr_expect_float_eq(r.front[j].p, (double)r.front[j].P / (double)r.P_KNG, 1e-12);
    dmm_ge_result_free(&r);
    dmm_grammar_free(g);
    dmm_opstream_free(&s);
}


/* Every generation's numbers but the clock and the cuts. */
static void expect_same_log(const dmm_ge_result_t *a, const dmm_ge_result_t *b)
{
    cr_assert_eq(a->nlog, b->nlog);
    for (int i = 0; i < a->nlog; i++) {
        const dmm_ge_gen_t *x = &a->log[i], *y = &b->log[i];
        cr_expect_eq(x->best_F, y->best_F, "generation %d", i);
        cr_expect_eq(x->mean_F, y->mean_F, "generation %d", i);
        cr_expect_eq(x->nvalid, y->nvalid, "generation %d", i);
        cr_expect_eq(x->simulations, y->simulations, "generation %d", i);
        cr_expect_eq(x->hopeless, y->hopeless, "generation %d", i);
        cr_expect_eq(x->invalid, y->invalid, "generation %d", i);
    }
}

Test(ge, cutting_hopeless_candidates_changes_nothing_but_the_time)
{
    dmm_opstream_t s;
    dmm_grammar_t *g;
    load_churn(&s, &g);
    dmm_ge_config_t c;
    dmm_ge_result_t cut, full;
    dmm_err_t err = { { 0 } };
    small_config(&c, 3, 2);
    c.pop = 30;
    c.gens = 4;
    cr_assert_eq(dmm_ge_run(&c, g, &s, &cut, &err), 0, "%s", err.msg);
    c.finish_hopeless = 1;
    cr_assert_eq(dmm_ge_run(&c, g, &s, &full, &err), 0, "%s", err.msg);

    expect_same_run(&cut, &full, "cut vs simulated to the end");
    expect_same_log(&cut, &full);
    cr_expect_gt(cut.hopeless, 3, "the trace has hopeless candidates: %llu",
                 (unsigned long long)cut.hopeless);
    cr_expect_eq(cut.hopeless, full.hopeless);
    cr_expect_gt(cut.cut, 0);
    cr_expect_leq(cut.cut, cut.hopeless);
    cr_expect_gt(cut.saved_s, 0);
    cr_expect_eq(full.cut, 0, "--finish-hopeless cuts nothing");
    cr_expect_lt(cut.F, cut.cap, "the best is within the cap");
    dmm_ge_result_free(&cut);
    dmm_ge_result_free(&full);
    dmm_grammar_free(g);
    dmm_opstream_free(&s);
}

Test(ge, a_cut_replay_is_a_lower_bound_and_the_rank_is_the_cap)
{
    dmm_opstream_t s;
    dmm_grammar_t *g;
    load_churn(&s, &g);
    dmm_err_t err = { { 0 } };
    dmm_desc_t kng, lea, slow;
    cr_assert_eq(dmm_desc_load("kng", &kng, &err), 0);
    cr_assert_eq(dmm_desc_load("lea", &lea, &err), 0);
    /* one list for every size, searched best fit: every call walks it */
    const char *text = "segregated range=(0,1073741824] split=yes coalesce=no list=sll "
                       "fit=best order=fifo lists=1\n";
    cr_assert_eq(dmm_desc_parse("slow", text, strlen(text), &slow, &err), 0, "%s", err.msg);
    dmm_sim_result_t rk, rl, full, part;
    cr_assert_eq(dmm_sim_run(&s, &kng, "kng", 0, &rk, &err), 0);
    cr_assert_eq(dmm_sim_run(&s, &lea, "lea", 0, &rl, &err), 0);
    cr_assert_eq(dmm_sim_run(&s, &slow, "slow", 0, &full, &err), 0);
    double F = dmm_sim_weighted(full.T, full.M, rk.T, rl.M);
    cr_assert_gt(F, 3, "the list walk is hopeless: F %.3f", F);

    dmm_sim_bound_t b = { .T_ref = rk.T, .M_ref = rl.M, .cap = 2.5, .M_floor = rk.peak_live,
                          .stop_at_cap = 1 };
    cr_assert_eq(dmm_sim_run_bounded(&s, &slow, "slow", 0, &b, &part, &err), 0);
    cr_expect_gt(part.capped_at, 0);
    cr_expect_eq(part.ops, part.capped_at, "stopped right there");
    cr_expect_lt(part.ops, full.ops * 3 / 4, "before the end: %llu of %llu",
                 (unsigned long long)part.ops, (unsigned long long)full.ops);
    cr_expect_not(part.complete);
    cr_expect_leq(part.T, full.T);
    cr_expect_leq(part.M, full.M);
    cr_expect_geq(full.M, rk.peak_live, "the floor is a floor");
    cr_expect_geq(dmm_sim_weighted(part.T, rk.peak_live > part.M ? rk.peak_live : part.M, rk.T,
                                   rl.M), 2.5);

    /* without stop_at_cap the same point is noted and the replay goes on */
    b.stop_at_cap = 0;
    dmm_sim_result_t on;
    cr_assert_eq(dmm_sim_run_bounded(&s, &slow, "slow", 0, &b, &on, &err), 0);
    cr_expect_eq(on.capped_at, part.capped_at);
    cr_expect(on.complete);
    cr_expect_eq(on.T, full.T);
    cr_expect_eq(on.M, full.M);

    /* counting the calls still to come (each costs a call's units at
     * least) cuts sooner, and still only what reaches the cap */
    uint64_t calls = dmm_sim_calls(&s, 0), all = dmm_sim_calls(&s, 1);
    cr_expect_gt(calls, s.nops / 3);
    cr_expect_gt(all, calls, "the churn trace frees");
    cr_expect_eq(full.failed, 0);
    cr_expect_eq(full.cost.ops, all, "every allocation, realloc and free is one call");
    cr_expect_eq(rk.cost.ops, all);
    b.stop_at_cap = 1;
    b.calls = all;   /* fail_limit 0: frees count */
    dmm_sim_result_t sooner;
    cr_assert_eq(dmm_sim_run_bounded(&s, &slow, "slow", 0, &b, &sooner, &err), 0);
    cr_expect_gt(sooner.capped_at, 0);
    cr_expect_lt(sooner.capped_at, part.capped_at, "%llu, not before %llu",
                 (unsigned long long)sooner.capped_at, (unsigned long long)part.capped_at);
    b.cap = 0.999 * dmm_sim_weighted(rk.T, rk.M, rk.T, rl.M);
    dmm_sim_result_t ref;
    cr_assert_eq(dmm_sim_run_bounded(&s, &kng, "kng", 0, &b, &ref, &err), 0);
    cr_expect_gt(ref.capped_at, 0, "kng's own F is above the cap");
    b.cap = 1.001 * dmm_sim_weighted(rk.T, rk.M, rk.T, rl.M);
    cr_assert_eq(dmm_sim_run_bounded(&s, &kng, "kng", 0, &b, &ref, &err), 0);
    cr_expect_eq(ref.capped_at, 0, "kng's own F is below the cap: never cut");
    cr_expect(ref.complete);
    dmm_grammar_free(g);
    dmm_opstream_free(&s);
}

/* The caller's fitness raises the stop flag on its 4th call: the search
 * ends in generation 0, with what was evaluated. */
static volatile sig_atomic_t stop_flag;
static int calls;

static int canon_any(const char *phenotype, char *key, size_t cap, void *arg)
{
    (void)arg;
    snprintf(key, cap, "%s", phenotype);
    return 0;
}

static double fitness_then_stop(const char *key, uint64_t *T, size_t *M, void *arg)
{
    (void)arg;
    *T = strlen(key);
    *M = 1;
    if (++calls == 4)
        stop_flag = 1;
    return 1.0 + (double)strlen(key) / 1000;
}

Test(ge, a_stop_request_ends_the_generation_under_way)
{
    dmm_ge_config_t c;
    dmm_ge_result_t r;
    dmm_ge_custom_t cu = { canon_any, fitness_then_stop, NULL };
    small_config(&c, 5, 1);
    c.custom = &cu;
    c.stop = &stop_flag;
    stop_flag = 0;
    calls = 0;
    dmm_err_t err = { { 0 } };
    cr_assert_eq(dmm_ge_run(&c, gram, NULL, &r, &err), 0, "%s", err.msg);
    cr_expect_eq(r.stopped, DMM_GE_STOPPED);
    cr_expect_eq(r.nlog, 1);
    cr_expect(r.log[0].partial);
    cr_expect_eq(calls, 4, "no evaluation after the request");
    cr_expect(r.found, "the best of what was evaluated is kept");
    cr_expect_eq(r.log[0].nvalid, 4);
    dmm_ge_result_free(&r);
}

/* A time budget ends a long simulation in the middle.  The references
 * are simulated first, outside the run (kng and lea given): under ASan on a
 * slower machine lea alone took 20 s of this trace, and the budget is about
 * the candidates. */
Test(ge, a_time_budget_ends_a_long_simulation)
{
    dmm_opstream_t s;
    dmm_grammar_t *g;
    dmm_trace_t t;
    churn_trace(&t, 20000, 100000, 500);
    dmm_err_t e = { { 0 } };
    cr_assert_eq(dmm_opstream_build(&t, &s, &e), 0, "%s", e.msg);
    dmm_trace_free(&t);
    /* only a hopelessly slow DMM, never cut (no cap) */
    g = grammar("<S> ::= SegregatedFreeList true false 1073741824 SLL BEST FIFO\n");
    dmm_ge_config_t c;
    dmm_ge_result_t r;
    small_config(&c, 1, 1);
    c.pop = 2;
    c.elite = 1;
    c.hopeless = 0;
    c.time_budget = 0.5;
    dmm_ge_ref_t refs[2] = { { .name = "kng" }, { .name = "lea" } };
    cr_assert_eq(dmm_ge_references(&s, refs, 2, &e), 0, "%s", e.msg);
    c.kng = refs[0];
    c.lea = refs[1];
    run_on(&c, g, &s, &r);
    cr_expect_eq(r.stopped, DMM_GE_TIME);
    cr_expect_lt(r.seconds, 3.0, "stopped within a simulation: %.2f s", r.seconds);
    cr_expect(r.log[0].partial);
    dmm_ge_result_free(&r);
    dmm_grammar_free(g);
    dmm_opstream_free(&s);
}

Test(ge, bad_configurations_are_refused)
{
    dmm_ge_config_t c;
    dmm_ge_result_t r;
    dmm_err_t err = { { 0 } };
    small_config(&c, 1, 1);
    c.elite = c.pop;
    cr_expect_eq(dmm_ge_run(&c, gram, &ops, &r, &err), -1);
    cr_expect_not_null(strstr(err.msg, "elite"), "%s", err.msg);
    dmm_ge_result_free(&r);
    small_config(&c, 1, 1);
    c.length = 0;
    cr_expect_eq(dmm_ge_run(&c, gram, &ops, &r, &err), -1);
    dmm_ge_result_free(&r);
    small_config(&c, 1, 1);
    c.lean[1] = 1;   /* a weight of time must leave memory some */
    cr_expect_eq(dmm_ge_run(&c, gram, &ops, &r, &err), -1);
    cr_expect_not_null(strstr(err.msg, "lean"), "%s", err.msg);
    dmm_ge_result_free(&r);
    small_config(&c, 1, 1);
    c.nlean = DMM_GE_LEAN_MAX + 1;
    cr_expect_eq(dmm_ge_run(&c, gram, &ops, &r, &err), -1);
    cr_expect_not_null(strstr(err.msg, "lean"), "%s", err.msg);
    dmm_ge_result_free(&r);
    const double climbs[] = { -0.1, 0.95, NAN };
    for (int i = 0; i < 3; i++) {
        small_config(&c, 1, 1);
        c.climb = climbs[i];
        cr_expect_eq(dmm_ge_run(&c, gram, &ops, &r, &err), -1);
        cr_expect_not_null(strstr(err.msg, "climb"), "%s", err.msg);
        dmm_ge_result_free(&r);
    }
}

/* ---- the climb ------------------------------------------------------------ */

/* Each move of a genome changes one decision: mapped, its phenotype differs
 * from the genome's in exactly one word, and every other alternative of
 * each rule of a few alternatives is there once. */
Test(ge, a_genomes_neighbours_each_take_one_decision_differently)
{
    dmm_grammar_t *g = grammar(pareto_grammar);
    uint32_t genome[12] = { 5, 900001, 13, 6, 7, 8, 9, 10, 11, 12, 13, 14 };
    char base[256], ph[256];
    cr_assert_gt(dmm_ge_map(g, genome, 12, 0, base, sizeof base), 0);
    dmm_climb_move_t *mv;
    long n = dmm_climb_moves(g, genome, 12, 0, 1u << 31, &mv);
    /* <S> has one alternative; <C> 7, <B> 2 twice, <L> 3, <F> 3 */
    cr_assert_eq(n, 6 + 1 + 1 + 2 + 2, "%ld moves", n);
    int words_changed[5] = { 0 };
    for (long i = 0; i < n; i++) {
        uint32_t h[12];
        memcpy(h, genome, sizeof h);
        cr_expect_neq(h[mv[i].pos], mv[i].codon);
        h[mv[i].pos] = mv[i].codon;
        cr_assert_gt(dmm_ge_map(g, h, 12, 0, ph, sizeof ph), 0);
        /* compare word by word */
        char a[256], b[256];
        strcpy(a, base);
        strcpy(b, ph);
        int diff = 0, w = 0, which = -1;
        char *sa, *sb, *ta = strtok_r(a, " ", &sa), *tb = strtok_r(b, " ", &sb);
        for (; ta && tb; ta = strtok_r(NULL, " ", &sa), tb = strtok_r(NULL, " ", &sb), w++)
            if (strcmp(ta, tb)) {
                diff++;
                which = w;
            }
        cr_expect_eq(diff, 1, "move %ld: %s against %s", i, ph, base);
        if (which >= 0 && which != 3)   /* word 3 is the size, a terminal */
            words_changed[which < 3 ? which : which - 1]++;
        for (long j = 0; j < i; j++)
            cr_expect(!(mv[j].pos == mv[i].pos && mv[j].codon == mv[i].codon), "twice");
    }
    cr_expect_eq(words_changed[0], 6, "every other class");
    cr_expect_eq(words_changed[1], 1);
    cr_expect_eq(words_changed[2], 1);
    cr_expect_eq(words_changed[3], 2);
    cr_expect_eq(words_changed[4], 2);
    free(mv);
    /* a rule of many alternatives: 1, 2, 4 ... places either side */
    static const char many[] = "<S> ::= <C> false false <Z> SLL FIRST LIFO\n"
                               "<C> ::= Kingsley | Lea\n"
                               "<Z> ::= 16 | 32 | 48 | 64 | 80 | 96 | 112 | 128 | 144 | 160 "
                               "| 176 | 192 | 208 | 224 | 240 | 256 | 272 | 288 | 304 | 320\n";
    dmm_grammar_t *g2 = grammar(many);
    uint32_t g20[3] = { 0, 1, 2 * 20 + 5 };   /* size alternative 5 of 20 */
    n = dmm_climb_moves(g2, g20, 3, 0, 1u << 31, &mv);
    /* <C>: 1; <Z>: 5-1 5-2 5-4, 5+1 5+2 5+4 5+8 */
    cr_assert_eq(n, 1 + 7, "%ld moves", n);
    uint32_t want[] = { 44, 46, 43, 47, 41, 49, 53 };
    for (int k = 0; k < 7; k++) {
        int found = 0;
        for (long i = 0; i < n; i++)
            found |= mv[i].pos == 2 && mv[i].codon == want[k];
        cr_expect(found, "codon %u", want[k]);
    }
    free(mv);
    dmm_grammar_free(g2);
    dmm_grammar_free(g);
}

/* F of one genome, simulated to the end. */
static double genome_F(const dmm_grammar_t *g, const dmm_opstream_t *s, const uint32_t *genome,
                       const dmm_ge_config_t *c, const dmm_ge_result_t *r)
{
    static char ph[1 << 16];
    static dmm_sim_result_t res;
    dmm_desc_t d;
    dmm_err_t err = { { 0 } };
    if (dmm_ge_map(g, genome, (size_t)c->length, c->wraps, ph, sizeof ph) < 0 ||
        dmm_phenotype_to_desc(ph, &d, &err) != 0 ||
        dmm_sim_run(s, &d, "climb", 0, &res, &err) != 0 || res.failed || !res.M)
        return DMM_GE_WORST;
    return dmm_ge_fitness(res.T, res.M, r->T_KNG, r->M_LEA);
}

/* The climb starts where the generations ended, never ends worse, and ends
 * on a genome none of whose neighbours, each simulated here, is better. */
Test(ge, the_climb_ends_where_no_neighbour_is_better)
{
    dmm_opstream_t s;
    dmm_grammar_t *g;
    load_churn(&s, &g);
    dmm_ge_config_t c;
    dmm_ge_result_t plain, cl;
    small_config(&c, 5, 2);
    c.pop = 12;
    c.elite = 2;
    c.gens = 1;   /* a weak search, so that the climb has work */
    run_on(&c, g, &s, &plain);
    cr_expect_eq(plain.climb.ran, 0, "no climb unless asked");
    c.climb = 0.25;
    run_on(&c, g, &s, &cl);
    cr_assert(plain.found && cl.climb.ran);
    cr_expect_eq(cl.climb.F_start, plain.F, "the generations are the same");
    cr_expect_lt(cl.F, plain.F, "the climb improved on %.6f: %.6f", plain.F, cl.F);
    cr_expect_geq(cl.climb.steps, 1);
    cr_expect_eq(cl.climb.starts, 1, "without a time budget: from the best only");
    cr_expect(cl.climb.optimum);
    cr_expect_gt(cl.climb.neighbours, 0);
    cr_expect_leq(cl.climb.simulations, cl.climb.neighbours);
    cr_expect_eq(cl.F, genome_F(g, &s, cl.genome, &c, &cl), "its genome gives its F");
    cr_expect_eq(cl.F, dmm_ge_fitness(cl.T, cl.M, cl.T_KNG, cl.M_LEA));
    cr_expect_eq(cl.top[0].F, cl.F, "the best distinct designs start with it");
    dmm_climb_move_t *mv;
    long n = dmm_climb_moves(g, cl.genome, c.length, c.wraps, c.codon_bound, &mv);
    cr_assert_gt(n, 10);
    uint32_t *h = malloc((size_t)c.length * sizeof *h);
    for (long i = 0; i < n; i++) {
        memcpy(h, cl.genome, (size_t)c.length * sizeof *h);
        h[mv[i].pos] = mv[i].codon;
        double F = genome_F(g, &s, h, &c, &cl);
        cr_expect_geq(F, cl.F, "neighbour %ld is better: %.9f < %.9f", i, F, cl.F);
    }
    free(h);
    free(mv);
    dmm_ge_result_free(&plain);
    dmm_ge_result_free(&cl);
    dmm_grammar_free(g);
    dmm_opstream_free(&s);
}

/* Its order comes from the seed, its simulations run on any number of
 * threads, and its cap (the top-th best F so far) cuts replays without
 * changing a decision: the same result either way. */
Test(ge, the_climb_is_the_same_whatever_the_jobs_and_the_cuts)
{
    dmm_opstream_t s;
    dmm_grammar_t *g;
    load_churn(&s, &g);
    dmm_ge_config_t c;
    dmm_ge_result_t a, b, f;
    small_config(&c, 9, 1);
    c.pop = 12;
    c.elite = 2;
    c.gens = 1;
    c.climb = 0.25;
    run_on(&c, g, &s, &a);
    c.jobs = 2;
    run_on(&c, g, &s, &b);
    c.finish_hopeless = 1;
    run_on(&c, g, &s, &f);
    expect_same_run(&a, &b, "jobs 1 vs 2");
    expect_same_run(&a, &f, "cut vs simulated to the end");
    cr_expect_eq(a.climb.steps, b.climb.steps);
    cr_expect_eq(a.climb.neighbours, f.climb.neighbours);
    cr_expect_eq(a.climb.simulations, f.climb.simulations);
    cr_expect_gt(a.cut, f.cut, "the climb's cap cut replays: %llu", (unsigned long long)a.cut);
    cr_assert_eq(a.ntop, f.ntop);
    for (int i = 0; i < a.ntop; i++) {
        cr_expect_str_eq(a.top[i].key, f.top[i].key, "top %d", i);
        cr_expect_eq(a.top[i].F, f.top[i].F, "top %d", i);
    }
    dmm_ge_result_free(&a);
    dmm_ge_result_free(&b);
    dmm_ge_result_free(&f);
    dmm_grammar_free(g);
    dmm_opstream_free(&s);
}

/* ---- the command ---------------------------------------------------------- */

static char dir[64];

static void cmd_setup(void)
{
    strcpy(dir, "/tmp/dmm-ge-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void cmd_teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

static void put(const char *name, const char *text, char *path)
{
    sprintf(path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

/* A trace whose every address is allocated once, step bytes apart from
 * 0x10000, as mdriver .rep text in dir/name. */
static void put_trace_rep(dmm_trace_t *tp, uint64_t step, const char *name, char *path)
{
    dmm_trace_t t = *tp;
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    uint64_t ids = 0;
    for (size_t i = 0; i < t.nrecs; i++)
        ids += t.recs[i].op == DMM_TRC_MALLOC;
    fprintf(m, "100000\n%llu\n%zu\n1\n", (unsigned long long)ids, t.nrecs);
    /* ids by address: every address is allocated once */
    for (size_t i = 0; i < t.nrecs; i++) {
        const dmm_rec_t *r = &t.recs[i];
        if (r->op == DMM_TRC_MALLOC)
            fprintf(m, "a %llu %llu\n", (unsigned long long)((r->ptr_out - 0x10000) / step),
                    (unsigned long long)r->size);
        else
            fprintf(m, "f %llu\n", (unsigned long long)((r->ptr_in - 0x10000) / step));
    }
    fclose(m);
    put(name, buf, path);
    free(buf);
    dmm_trace_free(&t);
}

/* The small trace as mdriver .rep text. */
static void put_rep(char *path)
{
    dmm_trace_t t;
    small_trace(&t);
    put_trace_rep(&t, 8192, "mem.rep", path);
}


static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return strdup(buf);
}

static int exists(const char *d, const char *name)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", d, name);
    return access(p, F_OK) == 0;
}

/* Files in d, hidden ones included. */
static int count_files(const char *d)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", d);
    FILE *p = popen(cmd, "r");
    int n = -1;
    if (p) {
        if (fscanf(p, "%d", &n) != 1)
            n = -1;
        pclose(p);
    }
    return n;
}

TestSuite(evolve, .init = cmd_setup, .fini = cmd_teardown, .timeout = 60);

Test(evolve, writes_every_output_and_a_best_dmm_that_parses)
{
    char rep[256], outdir[256], err[4096];
    put_rep(rep);
    snprintf(outdir, sizeof outdir, "%s/out", dir);
    char *args[] = { "dmm", "evolve", "--pop", "20", "--elite", "2", "--gens", "6", "--seed",
                     "9", "--jobs", "2", "--out", outdir, rep, NULL };
    int rc = run_dmm(dir, args, err, sizeof err);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err);
    const char *files[] = { "best.dmm", "log.csv", "references.csv", "search.json",
                            "grammar.bnf" };
    for (size_t i = 0; i < 5; i++)
        cr_expect(exists(outdir, files[i]), "%s missing", files[i]);
    /* top-1.dmm .. top-K.dmm: the best distinct designs, best first */
    int ntop = 0;
    double prev_f = 0;
    char p[512];
    for (int k = 1; k <= 5; k++) {
        snprintf(p, sizeof p, "top-%d.dmm", k);
        if (!exists(outdir, p))
            break;
        ntop++;
        snprintf(p, sizeof p, "%s/top-%d.dmm", outdir, k);
        dmm_desc_t t;
        dmm_err_t terr;
        cr_expect_eq(dmm_desc_load(p, &t, &terr), 0, "%s", terr.msg);
        char key[32];
        snprintf(key, sizeof key, "%d", k);
        char buf[64];
        cr_expect_str_eq(dmm_desc_title_value(&t, "rank", buf, sizeof buf), key);
        const char *f = dmm_desc_title_value(&t, "fitness", buf, sizeof buf);
        cr_assert_not_null(f);
        cr_expect_geq(atof(f), prev_f, "top-%d is not worse than top-%d", k, k - 1);
        prev_f = atof(f);
    }
    cr_expect_geq(ntop, 3, "a 20-by-6 search simulated 3 designs of distinct T and M at least");
    /* lean-1.dmm ..: each holds less than the best, with its weight said */
    int nlean = 0;
    snprintf(p, sizeof p, "%s/search.json", outdir);
    char *search = slurp(p);
    cr_assert_not_null(search);
    cr_expect_not_null(strstr(search, "\"lean\": [0.25, 0.1, 0.03]"), "%s", search);
    for (int k = 1; k <= 3; k++) {
        snprintf(p, sizeof p, "lean-%d.dmm", k);
        if (!exists(outdir, p))
            break;
        nlean++;
        snprintf(p, sizeof p, "%s/lean-%d.dmm", outdir, k);
        dmm_desc_t t;
        dmm_err_t terr;
        cr_expect_eq(dmm_desc_load(p, &t, &terr), 0, "%s", terr.msg);
        char buf[64], key[32];
        snprintf(key, sizeof key, "%d", k);
        cr_expect_str_eq(dmm_desc_title_value(&t, "lean", buf, sizeof buf), key);
        cr_expect_not_null(dmm_desc_title_value(&t, "weight", buf, sizeof buf));
        cr_expect_not_null(strstr(search, "\"weight\": "), "%s", search);
    }
    free(search);
    cr_expect_eq(count_files(outdir), 5 + ntop + nlean, "no temporary file left (top %d, lean %d)", ntop, nlean);

    snprintf(p, sizeof p, "%s/best.dmm", outdir);
    char *best = slurp(p);
    cr_assert_not_null(best);
    cr_expect_eq(strncmp(best, "# dmm 1  trace=mem.rep seed=9 fitness=", 38), 0, "%s", best);
    char *nl = strchr(best, '\n');
    cr_assert_not_null(nl);
    *nl = 0;
    cr_expect_not_null(strstr(best, " T="), "%s", best);
    cr_expect_not_null(strstr(best, " M="), "%s", best);
    *nl = '\n';
    dmm_desc_t d;
    dmm_err_t derr;
    cr_expect_eq(dmm_desc_load(p, &d, &derr), 0, "%s", derr.msg);
    cr_expect_gt(d.n, 0);
    free(best);

    /* log.csv: header and one row per generation, best F never rising */
    snprintf(p, sizeof p, "%s/log.csv", outdir);
    char *log = slurp(p);
    cr_assert_not_null(log);
    cr_expect_eq(strncmp(log, "generation,evaluations,cache_hits,best_F,mean_F,best_T,best_M,"
                              "seconds,best_phenotype_dmm_line_count", 96), 0, "%s", log);
    int rows = 0;
    double prev = INFINITY;
    for (char *line = strchr(log, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
        int gen;
        unsigned long long ev, hits;
        double bf;
        cr_assert_eq(sscanf(line + 1, "%d,%llu,%llu,%lf", &gen, &ev, &hits, &bf), 4, "%s", line);
        cr_expect_eq(gen, rows);
        cr_expect_leq(bf, prev, "generation %d", gen);
        prev = bf;
        rows++;
    }
    cr_expect_eq(rows, 7);
    free(log);

    /* references.csv: the five presets; kng's F is 0.5 + 0.5 M_KNG/M_LEA */
    snprintf(p, sizeof p, "%s/references.csv", outdir);
    char *refs = slurp(p);
    cr_assert_not_null(refs);
    unsigned long long kT, kM, lT, lM;
    double kF, lF;
    char *k = strstr(refs, "\nkng,"), *l = strstr(refs, "\nlea,");
    cr_assert(k && l, "%s", refs);
    cr_assert_eq(sscanf(k, "\nkng,%llu,%llu,%lf", &kT, &kM, &kF), 3);
    cr_assert_eq(sscanf(l, "\nlea,%llu,%llu,%lf", &lT, &lM, &lF), 3);
    cr_expect(fabs(kF - (0.5 + 0.5 * (double)kM / (double)lM)) < 1e-8, "%s", refs);
    for (const char *n = "fib\0s10\0exa\0"; *n; n += 4) {
        char key[8];
        snprintf(key, sizeof key, "\n%s,", n);
        cr_expect_not_null(strstr(refs, key), "%s missing: %s", n, refs);
    }
    free(refs);

    snprintf(p, sizeof p, "%s/search.json", outdir);
    char *js = slurp(p);
    cr_assert_not_null(js);
    cr_expect_not_null(strstr(js, "\"seed\": 9"), "%s", js);
    cr_expect_not_null(strstr(js, "\"T_KNG\": "), "%s", js);
    cr_expect_not_null(strstr(js, "\"cache_hits\": "), "%s", js);
    free(js);

    snprintf(p, sizeof p, "%s/stdout", dir);
    char *out = slurp(p);
    cr_assert_not_null(out);
    cr_expect_not_null(strstr(out, "evaluations: "), "%s", out);
    cr_expect_not_null(strstr(out, "eval/s"), "%s", out);
    free(out);
    cr_expect_not_null(strstr(err, "gen 6/6"), "progress lines on stderr: %s", err);

    /* again with --top 2 and --lean none: the older top-3 .. top-5 and
     * lean ones are gone */
    char *args2[] = { "dmm", "evolve", "-q", "--pop", "20", "--elite", "2", "--gens", "6",
                      "--seed", "9", "--top", "2", "--lean", "none", "--out", outdir, rep, NULL };
    rc = run_dmm(dir, args2, err, sizeof err);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err);
    cr_expect(exists(outdir, "top-2.dmm"));
    cr_expect(!exists(outdir, "top-3.dmm"));
    cr_expect(!exists(outdir, "lean-1.dmm"));
    cr_expect_eq(count_files(outdir), 7);
    cr_expect_geq(ntop, 3, "so top-3 was there before");
}

/* lean-N.dmm: the designs for a heavier weight of memory, titled with
 * their weight and listed in search.json; --lean none writes none and
 * removes older ones; a bad list is refused. */
Test(evolve, lean_designs_are_written_and_listed)
{
    char rep[256], bnf[256], outdir[256], err[4096], p[512];
    dmm_trace_t t;
    churn_trace(&t, 1000, 8000, 5);   /* as the_lean_designs_minimise_...: one lean design */
    put_trace_rep(&t, 16384, "churn.rep", rep);
    put("pareto.bnf", pareto_grammar, bnf);
    snprintf(outdir, sizeof outdir, "%s/out", dir);
    char *args[] = { "dmm", "evolve", "-q", "--pop", "40", "--gens", "30", "--seed", "11",
                     "--top", "2", "--hopeless", "0", "--grammar", bnf, "--out", outdir, rep,
                     NULL };
    int rc = run_dmm(dir, args, err, sizeof err);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err);
    cr_assert(exists(outdir, "lean-1.dmm"));
    cr_expect(!exists(outdir, "lean-2.dmm"), "0.25 picks a top design, 0.03 0.1's");
    snprintf(p, sizeof p, "%s/lean-1.dmm", outdir);
    dmm_desc_t d;
    dmm_err_t derr;
    cr_assert_eq(dmm_desc_load(p, &d, &derr), 0, "%s", derr.msg);
    char buf[64];
    cr_expect_str_eq(dmm_desc_title_value(&d, "lean", buf, sizeof buf), "1");
    cr_expect_str_eq(dmm_desc_title_value(&d, "weight", buf, sizeof buf), "0.1");
    snprintf(p, sizeof p, "%s/search.json", outdir);
    char *search = slurp(p);
    cr_assert_not_null(search);
    char *lean = strstr(search, "\"lean\": [\n");
    cr_assert_not_null(lean, "%s", search);
    cr_expect_not_null(strstr(lean, "\"weight\": 0.1,"), "%s", lean);
    cr_expect_not_null(strstr(lean, "\"dmm\": \"# dmm 1  trace=churn.rep seed=11 lean=1 weight=0.1 "),
                       "%s", lean);
    free(search);

    char *args2[] = { "dmm", "evolve", "-q", "--pop", "40", "--gens", "30", "--seed", "11",
                      "--top", "2", "--hopeless", "0", "--lean", "none", "--grammar", bnf,
                      "--out", outdir, rep, NULL };
    rc = run_dmm(dir, args2, err, sizeof err);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err);
    cr_expect(!exists(outdir, "lean-1.dmm"));

    const char *bad[] = { "1", "0", "0.1,", "x", "0.1,,0.2", "0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *args3[] = { "dmm", "evolve", "--lean", (char *)bad[i], "--out", outdir, rep, NULL };
        rc = run_dmm(dir, args3, err, sizeof err);
        cr_expect_eq(rc, 1, "--lean %s: exit %d", bad[i], rc);
        cr_expect_not_null(strstr(err, "--lean"), "%s", err);
    }
}

Test(evolve, same_seed_same_best_dmm_whatever_the_jobs)
{
    char rep[256], o1[256], o2[256], err[4096];
    put_rep(rep);
    snprintf(o1, sizeof o1, "%s/o1", dir);
    snprintf(o2, sizeof o2, "%s/o2", dir);
    char *a1[] = { "dmm", "evolve", "-q", "--pop", "16", "--gens", "4", "--jobs", "1",
                   "--out", o1, rep, NULL };
    char *a2[] = { "dmm", "evolve", "-q", "--pop", "16", "--gens", "4", "--jobs", "2",
                   "--out", o2, rep, NULL };
    cr_assert_eq(run_dmm(dir, a1, err, sizeof err), 0, "%s", err);
    cr_assert_eq(run_dmm(dir, a2, err, sizeof err), 0, "%s", err);
    char p1[512], p2[512];
    snprintf(p1, sizeof p1, "%s/best.dmm", o1);
    snprintf(p2, sizeof p2, "%s/best.dmm", o2);
    char *b1 = slurp(p1), *b2 = slurp(p2);
    cr_assert(b1 && b2);
    cr_expect_str_eq(b1, b2);
    free(b1);
    free(b2);
}

/* dmm evolve climbs by default (a share of --time; without it, to the end),
 * says so on stdout and in search.json, and --climb 0 is the paper's
 * search. */
Test(evolve, the_climb_is_said_and_can_be_turned_off)
{
    char rep[256], o[256], err[4096], p[512], so[512];
    put_rep(rep);
    snprintf(o, sizeof o, "%s/o", dir);
    snprintf(p, sizeof p, "%s/search.json", o);
    snprintf(so, sizeof so, "%s/stdout", dir);
    char *a1[] = { "dmm", "evolve", "--pop", "12", "--elite", "2", "--gens", "1", "--out", o,
                   rep, NULL };
    cr_assert_eq(run_dmm(dir, a1, err, sizeof err), 0, "%s", err);
    char *out = slurp(so);
    cr_assert_not_null(out);
    cr_expect_not_null(strstr(out, "\nclimb: F "), "%s", out);
    char *json = slurp(p);
    cr_assert_not_null(json);
    cr_expect_not_null(strstr(json, "\"climb\": 0.25"), "parameters: %s", json);
    char *c = strstr(json, "\"climb\": {");
    cr_assert_not_null(c, "%s", json);
    cr_expect_not_null(strstr(c, "\"starts\": 1,"), "%s", c);
    cr_expect_not_null(strstr(c, "\"optimum\": true"), "%s", c);
    free(json);
    free(out);
    char *a2[] = { "dmm", "evolve", "--pop", "12", "--elite", "2", "--gens", "1", "--climb",
                   "0", "--out", o, rep, NULL };
    cr_assert_eq(run_dmm(dir, a2, err, sizeof err), 0, "%s", err);
    out = slurp(so);
    cr_assert_not_null(out);
    cr_expect_null(strstr(out, "\nclimb: "), "%s", out);
    free(out);
    json = slurp(p);
    cr_assert_not_null(json);
    cr_expect_not_null(strstr(json, "\"climb\": null"), "%s", json);
    free(json);
    const char *bad[] = { "-0.1", "0.95", "x" };
    for (size_t i = 0; i < 3; i++) {
        char *a3[] = { "dmm", "evolve", "--climb", (char *)bad[i], "--out", o, rep, NULL };
        int rc = run_dmm(dir, a3, err, sizeof err);
        cr_expect_eq(rc, 1, "--climb %s: exit %d", bad[i], rc);
        cr_expect_not_null(strstr(err, "--climb"), "%s", err);
    }
}

Test(evolve, no_valid_individual_exits_2_without_a_best_dmm)
{
    char rep[256], bnf[256], outdir[256], err[4096];
    put_rep(rep);
    put("deep.bnf", deep, bnf);
    snprintf(outdir, sizeof outdir, "%s/out", dir);
    char *args[] = { "dmm", "evolve", "--pop", "10", "--elite", "1", "--gens", "2",
                     "--grammar", bnf, "--out", outdir, rep, NULL };
    int rc = run_dmm(dir, args, err, sizeof err);
    cr_expect_eq(rc, 2, "exit %d: %s", rc, err);
    cr_expect_not_null(strstr(err, "no valid individual"), "%s", err);
    cr_expect(!exists(outdir, "best.dmm"));
    cr_expect(!exists(outdir, "grammar.bnf"), "a given grammar is not copied");
}

Test(evolve, bad_inputs_exit_2_leaving_nothing)
{
    char rep[256], bnf[256], empty[256], outdir[256], err[4096], path[512];
    put_rep(rep);
    put("bad.bnf", "<S> ::= <Undefined>\n", bnf);
    put("empty.rep", "100\n0\n0\n1\n", empty);
    snprintf(outdir, sizeof outdir, "%s/out", dir);

    snprintf(path, sizeof path, "%s/missing.trc", dir);
    char *a1[] = { "dmm", "evolve", "--out", outdir, path, NULL };
    cr_expect_eq(run_dmm(dir, a1, err, sizeof err), 2, "%s", err);
    cr_expect_not_null(strstr(err, "missing.trc"), "%s", err);

    char *a2[] = { "dmm", "evolve", "--out", outdir, empty, NULL };
    cr_expect_eq(run_dmm(dir, a2, err, sizeof err), 2, "%s", err);
    cr_expect_not_null(strstr(err, "empty.rep"), "%s", err);

    char *a3[] = { "dmm", "evolve", "--grammar", bnf, "--out", outdir, rep, NULL };
    cr_expect_eq(run_dmm(dir, a3, err, sizeof err), 2, "%s", err);
    cr_expect_not_null(strstr(err, "bad.bnf"), "%s", err);

    snprintf(path, sizeof path, "%s/sub", rep);   /* under a regular file */
    char *a4[] = { "dmm", "evolve", "--out", path, rep, NULL };
    cr_expect_eq(run_dmm(dir, a4, err, sizeof err), 2, "%s", err);
    cr_expect_not_null(strstr(err, path), "%s", err);

    cr_expect(!exists(dir, "out") || count_files(outdir) == 0, "nothing written");

    char *a5[] = { "dmm", "evolve", "--pop", "10", "--elite", "10", "--out", outdir, rep, NULL };
    cr_expect_eq(run_dmm(dir, a5, err, sizeof err), 1, "%s", err);
}

Test(evolve, a_time_budget_stops_early)
{
    char rep[256], outdir[256], err[4096];
    put_rep(rep);
    snprintf(outdir, sizeof outdir, "%s/out", dir);
    char *args[] = { "dmm", "evolve", "-q", "--pop", "10", "--elite", "1", "--gens", "1000000",
                     "--time", "0.5", "--out", outdir, rep, NULL };
    cr_assert_eq(run_dmm(dir, args, err, sizeof err), 0, "%s", err);
    cr_expect_not_null(strstr(err, "time budget"), "%s", err);
    cr_expect(exists(outdir, "best.dmm"));
    char p[512];
    snprintf(p, sizeof p, "%s/search.json", outdir);
    char *js = slurp(p);
    cr_assert_not_null(js);
    cr_expect_not_null(strstr(js, "\"stopped\": \"time budget\""), "%s", js);
    free(js);
}

/* --objectives: the front as front-N.dmm files that parse, front.csv with
 * them (one the knee), the presets and eq. 1's winner, front.gp, and the
 * hypervolume in log.csv; a bad list is a usage error. */
Test(evolve, objectives_write_the_front)
{
    char rep[256], outdir[256], err[4096];
    put_rep(rep);
    snprintf(outdir, sizeof outdir, "%s/out", dir);
    char *args[] = { "dmm", "evolve", "-q", "--pop", "20", "--gens", "5", "--objectives",
                     "time,memory,worst", "--out", outdir, rep, NULL };
    cr_assert_eq(run_dmm(dir, args, err, sizeof err), 0, "%s", err);
    cr_expect(exists(outdir, "front-1.dmm") && exists(outdir, "front.gp"));
    char p[512];
    snprintf(p, sizeof p, "%s/front.csv", outdir);
    char *csv = slurp(p);
    cr_assert_not_null(csv);
    const char *head = "kind,name,T,M,W,P,time,memory,worst,p999,F\n";
    cr_expect(!strncmp(csv, head, strlen(head)), "%s", csv);
    int fronts = 0, knees = 0, presets = 0, ws = 0;
    for (char *l = strchr(csv, '\n'); l && l[1]; l = strchr(l + 1, '\n')) {
        fronts += !strncmp(l + 1, "front,", 6);
        knees += !strncmp(l + 1, "knee,", 5);
        presets += !strncmp(l + 1, "preset,", 7);
        ws += !strncmp(l + 1, "weighted-sum,best.dmm,", 22);
    }
    cr_expect_eq(knees, 1, "%s", csv);
    cr_expect_eq(presets, 5, "%s", csv);
    cr_expect_eq(ws, 1, "%s", csv);
    for (int i = 1; i <= fronts + knees; i++) {
        char name[512];
        snprintf(name, sizeof name, "%s/front-%d.dmm", outdir, i);
        dmm_desc_t d;
        dmm_err_t e = { { 0 } };
        cr_expect_eq(dmm_desc_load(name, &d, &e), 0, "%s", e.msg);
    }
    snprintf(p, sizeof p, "%s/front-%d.dmm", outdir, fronts + knees + 1);
    cr_expect_neq(access(p, F_OK), 0, "no more front files than designs");
    free(csv);
    snprintf(p, sizeof p, "%s/log.csv", outdir);
    char *log = slurp(p);
    cr_assert_not_null(log);
    cr_expect_not_null(strstr(log, ",hypervolume,front\n"), "%s", log);
    free(log);

    char *bad[] = { "dmm", "evolve", "-q", "--objectives", "time,speed", "--out", outdir, rep,
                    NULL };
    cr_expect_eq(run_dmm(dir, bad, err, sizeof err), 1, "%s", err);
    cr_expect_not_null(strstr(err, "unknown objective 'speed'"), "%s", err);
    char *one[] = { "dmm", "evolve", "-q", "--objectives", "memory", "--out", outdir, rep, NULL };
    cr_expect_eq(run_dmm(dir, one, err, sizeof err), 1, "%s", err);
    cr_expect_not_null(strstr(err, "two or three"), "%s", err);
}

/* Another trace file, unlike mem.rep: blocks of 32 to 3000 bytes, half kept. */
static void put_rep2(char *path)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    fprintf(m, "100000\n400\n%d\n1\n", 400 + 200);
    for (int i = 0; i < 400; i++) {
        fprintf(m, "a %d %d\n", i, 32 + (i * 97) % 2968);
        if (i % 2)
            fprintf(m, "f %d\n", i - 1);
    }
    fclose(m);
    put("other.rep", buf, path);
    free(buf);
}

/* Several traces and --holdout: traces.csv and search.json say how the best
 * does on each, seen and unseen; --mpi takes one trace. */
Test(evolve, several_traces_and_a_holdout)
{
    char rep[256], rep2[256], outdir[256], err[4096];
    put_rep(rep);
    put_rep2(rep2);
    snprintf(outdir, sizeof outdir, "%s/out", dir);
    char *args[] = { "dmm", "evolve", "--pop", "12", "--gens", "3", "--out", outdir, "--holdout",
                     rep2, rep, NULL };
    cr_assert_eq(run_dmm(dir, args, err, sizeof err), 0, "%s", err);
    char p[512];
    snprintf(p, sizeof p, "%s/traces.csv", outdir);
    char *csv = slurp(p);
    cr_assert_not_null(csv, "no traces.csv");
    const char *head = "trace,role,operations,T,M,F,T_KNG,M_LEA,failed,best_preset,"
                       "F_best_preset\n";
    cr_expect(!strncmp(csv, head, strlen(head)), "%s", csv);
    cr_expect_not_null(strstr(csv, "\nmem.rep,seen,"), "%s", csv);
    cr_expect_not_null(strstr(csv, "\nother.rep,holdout,"), "%s", csv);
    free(csv);
    snprintf(p, sizeof p, "%s/search.json", outdir);
    char *js = slurp(p);
    cr_assert_not_null(js);
    cr_expect_not_null(strstr(js, "\"holdout\": true"), "%s", js);
    cr_expect_not_null(strstr(js, "\"F_worst\""), "%s", js);
    free(js);

    /* both seen: the grammar holds both traces' sizes */
    char *both[] = { "dmm", "evolve", "-q", "--pop", "12", "--gens", "2", "--aggregate", "worst",
                     "--out", outdir, rep, rep2, NULL };
    cr_assert_eq(run_dmm(dir, both, err, sizeof err), 0, "%s", err);
    snprintf(p, sizeof p, "%s/grammar.bnf", outdir);
    char *g = slurp(p);
    cr_assert_not_null(g);
    cr_expect_not_null(strstr(g, " 129 "), "a size only other.rep asks for (32 + 97)");
    cr_expect_not_null(strstr(g, " 4000"), "the largest size of mem.rep");
    free(g);
    snprintf(p, sizeof p, "%s/search.json", outdir);
    js = slurp(p);
    cr_assert_not_null(js);
    cr_expect_not_null(strstr(js, "\"aggregate\": \"worst\""), "%s", js);
    cr_expect_not_null(strstr(js, "\"traces_seen\": 2"), "%s", js);
    free(js);

    char *bad[] = { "dmm", "evolve", "--aggregate", "median", "--out", outdir, rep, NULL };
    cr_expect_eq(run_dmm(dir, bad, err, sizeof err), 1, "%s", err);
    char *mpi[] = { "dmm", "evolve", "--mpi", "--out", outdir, rep, rep2, NULL };
    cr_expect_eq(run_dmm(dir, mpi, err, sizeof err), 1, "%s", err);
    cr_expect_not_null(strstr(err, "--mpi takes one trace"), "%s", err);
    char *pooled[] = { "dmm", "evolve", "--mpi", "--pooled", "--out", outdir, rep, NULL };
    cr_expect_eq(run_dmm(dir, pooled, err, sizeof err), 1, "%s", err);
    cr_expect_not_null(strstr(err, "--pooled is not for --mpi"), "%s", err);
}
