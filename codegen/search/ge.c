/* ge.c - the grammatical-evolution engine (see ge.h). */
#include "codegen/search/ge.h"

#include "codegen/search/climb.h"
#include "codegen/search/pareto.h"
#include "codegen/search/order.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "allocators/sim/sim.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ---- random numbers: xoshiro256**, seeded by splitmix64 ---------------- */

typedef struct rng {
    uint64_t s[4];
} rng_t;

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void rng_seed(rng_t *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(rng_t *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* Uniform in [0, n), n > 0, without modulo bias. */
static uint64_t rng_below(rng_t *r, uint64_t n)
{
    uint64_t lim = -n % n;   /* 2^64 mod n */
    for (;;) {
        uint64_t x = rng_next(r);
        if (x >= lim)
            return x % n;
    }
}

/* Uniform in [0, 1). */
static double rng_unit(rng_t *r)
{
    return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

/* ---- phenotype cache: canonical .dmm text -> T, M, F ------------------- */

/* A design's objectives as the search compares them: T/T_KNG, M/M_LEA and
 * W/W_KNG (with several traces, their means over the traces), and the
 * worst trace's F. */
typedef struct norm {
    double t, m, w, p, F_worst, F_mean;
} norm_t;

typedef struct entry {
    char    *key;       /* NULL: empty slot */
    uint64_t hash;
    int      pending;   /* >= 0: being simulated for that individual */
    int      valid;
    int      hopeless;
    uint64_t T;
    size_t   M;
    uint64_t W, P;
    double   F;
    norm_t   n;
} entry_t;

typedef struct cache {
    pthread_mutex_t lock;
    entry_t        *slots;
    size_t          cap, n;   /* cap a power of two */
} cache_t;

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static int cache_init(cache_t *c)
{
    c->cap = 1024;
    c->n = 0;
    c->slots = calloc(c->cap, sizeof *c->slots);
    if (!c->slots)
        return -1;
    pthread_mutex_init(&c->lock, NULL);
    return 0;
}

static void cache_destroy(cache_t *c)
{
    if (!c->slots)
        return;
    for (size_t i = 0; i < c->cap; i++)
        free(c->slots[i].key);
    free(c->slots);
    c->slots = NULL;
    pthread_mutex_destroy(&c->lock);
}

/* The slot of key, or the empty slot where it would go.  Caller locks. */
static entry_t *cache_slot(entry_t *slots, size_t cap, const char *key, uint64_t h)
{
    for (size_t i = h & (cap - 1);; i = (i + 1) & (cap - 1)) {
        entry_t *e = &slots[i];
        if (!e->key || (e->hash == h && !strcmp(e->key, key)))
            return e;
    }
}

/* Copy of the entry of key into *out; 1 if found. */
static int cache_get(cache_t *c, const char *key, entry_t *out)
{
    uint64_t h = fnv1a(key);
    pthread_mutex_lock(&c->lock);
    entry_t *e = cache_slot(c->slots, c->cap, key, h);
    int found = e->key != NULL;
    if (found)
        *out = *e;
    pthread_mutex_unlock(&c->lock);
    return found;
}

/* Insert (or overwrite) key; 0, or -1 out of memory. */
static int cache_put(cache_t *c, const char *key, int pending, int valid, int hopeless,
                     uint64_t T, size_t M, uint64_t W, uint64_t P, double F,
                     const norm_t *n)
{
    uint64_t h = fnv1a(key);
    int rc = 0;
    pthread_mutex_lock(&c->lock);
    if ((c->n + 1) * 2 > c->cap) {
        size_t ncap = c->cap * 2;
        entry_t *ns = calloc(ncap, sizeof *ns);
        if (!ns) {
            rc = -1;
            goto out;
        }
        for (size_t i = 0; i < c->cap; i++)
            if (c->slots[i].key)
                *cache_slot(ns, ncap, c->slots[i].key, c->slots[i].hash) = c->slots[i];
        free(c->slots);
        c->slots = ns;
        c->cap = ncap;
    }
    entry_t *e = cache_slot(c->slots, c->cap, key, h);
    if (!e->key) {
        e->key = strdup(key);
        if (!e->key) {
            rc = -1;
            goto out;
        }
        e->hash = h;
        c->n++;
    }
    e->pending = pending;
    e->valid = valid;
    e->hopeless = hopeless;
    e->T = T;
    e->M = M;
    e->W = W;
    e->P = P;
    e->F = F;
    e->n = n ? *n : (norm_t){ 0, 0, 0, 0, 0, 0 };
out:
    pthread_mutex_unlock(&c->lock);
    return rc;
}

/* ---- individuals and the run's state ------------------------------------ */

typedef struct indiv {
    uint32_t  *genome;
    int        valid;
    int        hopeless;   /* ranked at the cap: F is the cap, T and M what
                              was measured when the replay stopped */
    double     F;
    uint64_t   T;
    size_t     M;
    uint64_t   W;          /* its costliest single operation */
    uint64_t   P;          /* its 99.9th percentile of single operations */
    norm_t     n;
    norm_t     xn;         /* several traces: more_traces()'s result */
    double     xF;
    int        lines;      /* allocators of its description */
    /* evaluation scratch */
    int        todo;       /* 1: to simulate; 2: same phenotype as dup_of */
    int        dup_of;
    int        unevaluated; /* the search stopped before its result */
    int        cut;        /* its replay stopped at the cap */
    double     saved;      /* ... and this is the estimated time it saved */
    double     secs;       /* seconds its replay took */
    char      *key;        /* canonical text (malloc'd) while evaluating */
    dmm_desc_t desc;
} indiv_t;

typedef struct state {
    const dmm_ge_config_t *cfg;
    const dmm_grammar_t   *g;
    const dmm_opstream_t  *s;
    rng_t     rng;
    cache_t   cache;
    dmm_desc_t key_desc;  /* evaluate()'s scratch */
    int       jobs;
    uint64_t  T_KNG;
    size_t    M_LEA;
    uint64_t  W_KNG, P_KNG;
    int       nobj;        /* cfg.objectives: how many (0: eq. 1) */
    dmm_ge_trace_t *xt;    /* cfg.extra with their references */
    dmm_sim_bound_t *xbound; /* ... and the bound of each one's simulations */
    indiv_t  *parents;     /* ... the survivors so far (NSGA-II's P) */
    int       nparents;
    int      *pfront;      /* ... their fronts and crowding distances */
    double   *pcrowd;
    dmm_ge_result_t *r;    /* ... whose front the evaluations feed */
    double    hv;          /* ... the front's hypervolume so far */
    int       nfront;
    double    cap;         /* rank of hopeless candidates; DMM_GE_WORST: none */
    dmm_sim_bound_t bound; /* for every simulation */
    double    deadline;    /* now() when the time budget is spent; 0: none */
    int       interrupted; /* a simulation was stopped: the search ends */
    int       best_hopeless; /* the run's best so far is ranked at the cap */
    int       failed_worker; /* a remote worker failed: which; else -1 */
    indiv_t  *pop, *next;
    indiv_t   climbed;     /* the climb's best, to put into the population */
    int       has_climbed;
    uint32_t *spare;       /* the unused second child of an odd count */
    uint32_t *genomes;     /* every individual's genome, in one block */
    char     *pheno;       /* mapping output */
    size_t    pheno_cap;
    uint64_t  evaluations, cache_hits, simulations, invalid, hopeless, cut;
    double    saved_s;
    int       oom;
    /* the parallel phase */
    int      *work;        /* indices of pop to simulate, longest expected first */
    double   *expect;      /* ... the seconds each is expected to take */
    dmm_ge_times_t times;  /* what the replays so far took (order.h) */
    int       nwork;
    int       cursor;
    pthread_mutex_t wlock;
} state_t;

void dmm_ge_config_default(dmm_ge_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->pop = 100;
    cfg->elite = 10;
    cfg->gens = 250;
    cfg->tournament = 2;
    cfg->pcross = 0.8;
    cfg->pmut = 0.02;
    cfg->wraps = 3;
    cfg->length = 50;
    cfg->codon_bound = 1u << 31;
    cfg->seed = 1;
    cfg->hopeless = 1;
    cfg->top = 5;
    cfg->lean[0] = 0.25;
    cfg->lean[1] = 0.1;
    cfg->lean[2] = 0.03;
    cfg->nlean = 3;
}

static void set_invalid(indiv_t *x)
{
    x->valid = 0;
    x->W = 0;
    x->P = 0;
    x->hopeless = 0;
    x->F = DMM_GE_WORST;
    x->T = 0;
    x->M = 0;
    x->lines = 0;
}

/* Score one individual with the caller's fitness (a worker thread). */
static void score_custom(state_t *st, indiv_t *x)
{
    const dmm_ge_custom_t *c = st->cfg->custom;
    uint64_t T = 0;
    size_t M = 0;
    double F = c->fitness(x->key, &T, &M, c->arg);
    if (!(F < DMM_GE_WORST)) {
        set_invalid(x);
    } else {
        x->valid = 1;
        x->hopeless = 0;
        x->secs = 0;
        x->T = T;
        x->M = M;
        x->F = F;
        x->n = (norm_t){ 0, 0, 0, 0, F, F };
    }
    if (cache_put(&st->cache, x->key, -1, x->valid, 0, x->T, x->M, 0, 0, x->F, &x->n) != 0)
        __atomic_store_n(&st->oom, 1, __ATOMIC_RELAXED);
}

/* x's rank from its bounded replay r (see "Bounded evaluation" in ge.h). */
static void rank_replay(state_t *st, indiv_t *x, const dmm_sim_result_t *r)
{
    if (r->capped_at) {
        x->valid = 1;
        x->hopeless = 1;
        x->F = st->cap;
        x->T = r->T;
        x->M = r->M;
        if (!r->complete && r->ops) {
            x->cut = 1;
            x->saved = r->seconds * (double)(st->s->nops - r->ops) / (double)r->ops;
        }
        return;
    }
    if (r->over_fail_at || r->M == 0) {
        set_invalid(x);
        return;
    }
    x->valid = 1;
    x->T = r->T;
    x->M = r->M;
    x->W = r->max_op_cost;
    x->P = r->p999_op_cost;
    x->F = dmm_ge_fitness(r->T, r->M, st->T_KNG, st->M_LEA);
    x->n = (norm_t){ (double)r->T / (double)st->T_KNG, (double)r->M / (double)st->M_LEA,
                     (double)r->max_op_cost / (double)(st->W_KNG ? st->W_KNG : 1),
                     (double)r->p999_op_cost / (double)(st->P_KNG ? st->P_KNG : 1), x->F, x->F };
    if (st->cfg->nextra) {   /* more_traces() scored it on every trace */
        x->n = x->xn;
        x->F = x->xF;
        return;
    }
    if (x->F >= st->cap) {   /* cannot happen: the bound saw the same numbers */
        x->hopeless = 1;
        x->F = st->cap;
    }
}

/* x's result from its replay r, here or on another process. */
static void apply_result(state_t *st, indiv_t *x, const dmm_sim_result_t *r)
{
    x->cut = 0;
    x->saved = 0;
    x->hopeless = 0;   /* the slot may have held a hopeless individual */
    x->secs = r->seconds;
    if (r->interrupted) {
        set_invalid(x);
        x->unevaluated = 1;
        __atomic_store_n(&st->interrupted, 1, __ATOMIC_RELAXED);
        return;   /* not cached: it has no result */
    }
    rank_replay(st, x, r);
    if (cache_put(&st->cache, x->key, -1, x->valid, x->hopeless, x->T, x->M, x->W, x->P, x->F,
                  &x->n) != 0)
        __atomic_store_n(&st->oom, 1, __ATOMIC_RELAXED);
}

/* Several traces: r, x's replay of the first, becomes what x scores on all
 * of them (see ge.h): T and M summed, the largest W, and the replay invalid
 * or interrupted when one of them is; x->n and the aggregate F are left in
 * r's stead for apply_result (through xF, below). */
static void more_traces(state_t *st, indiv_t *x, dmm_sim_result_t *r)
{
    if (r->interrupted || r->over_fail_at || r->M == 0)
        return;
    int n = st->cfg->nextra + 1;
    double F0 = dmm_ge_fitness(r->T, r->M, st->T_KNG, st->M_LEA);
    norm_t sum = { (double)r->T / (double)st->T_KNG, (double)r->M / (double)st->M_LEA,
                   (double)r->max_op_cost / (double)(st->W_KNG ? st->W_KNG : 1),
                   (double)r->p999_op_cost / (double)(st->P_KNG ? st->P_KNG : 1), F0, 0 };
    double Fsum = F0;
    dmm_sim_result_t *q = malloc(sizeof *q);
    dmm_err_t err;
    if (!q) {
        __atomic_store_n(&st->oom, 1, __ATOMIC_RELAXED);
        r->M = 0;
        return;
    }
    for (int k = 0; k + 1 < n; k++) {
        const dmm_ge_trace_t *t = &st->xt[k];
        if (dmm_sim_run_bounded(t->s, &x->desc, "ge", 0, &st->xbound[k], q, &err) != 0 ||
            q->over_fail_at || q->M == 0 || q->interrupted) {
            r->interrupted = q->interrupted;
            r->M = 0;   /* invalid */
            break;
        }
        double Fk = dmm_ge_fitness(q->T, q->M, t->kng.T, t->lea.M);
        Fsum += Fk;
        sum.t += (double)q->T / (double)t->kng.T;
        sum.m += (double)q->M / (double)t->lea.M;
        sum.w += (double)q->max_op_cost / (double)(t->kng.W ? t->kng.W : 1);
        sum.p += (double)q->p999_op_cost / (double)(t->kng.P ? t->kng.P : 1);
        if (q->p999_op_cost > r->p999_op_cost)
            r->p999_op_cost = q->p999_op_cost;
        if (Fk > sum.F_worst)
            sum.F_worst = Fk;
        r->T += q->T;
        r->M += q->M;
        r->seconds += q->seconds;
        if (q->max_op_cost > r->max_op_cost)
            r->max_op_cost = q->max_op_cost;
    }
    free(q);
    x->xn = (norm_t){ sum.t / n, sum.m / n, sum.w / n, sum.p / n, sum.F_worst, Fsum / n };
    x->xF = st->cfg->worst_case ? sum.F_worst : Fsum / n;
}

/* Simulate one individual (a worker thread). */
static void simulate(state_t *st, indiv_t *x)
{
    if (st->cfg->custom) {
        score_custom(st, x);
        return;
    }
    dmm_sim_result_t *r = malloc(sizeof *r);
    dmm_err_t err;
    if (!r) {
        __atomic_store_n(&st->oom, 1, __ATOMIC_RELAXED);   /* read after the join */
        set_invalid(x);
        return;
    }
    if (dmm_sim_run_bounded(st->s, &x->desc, "ge", 0, &st->bound, r, &err) != 0) {
        memset(r, 0, sizeof *r);   /* the chain did not build: invalid */
    }
    if (st->cfg->nextra)
        more_traces(st, x, r);
    apply_result(st, x, r);
    free(r);
}

/* Must the search stop now (a stop request, the time budget)? */
static int must_stop(state_t *st)
{
    if (__atomic_load_n(&st->interrupted, __ATOMIC_RELAXED))
        return 1;
    if ((st->cfg->stop && *st->cfg->stop) || (st->deadline > 0 && now() >= st->deadline)) {
        __atomic_store_n(&st->interrupted, 1, __ATOMIC_RELAXED);
        return 1;
    }
    return 0;
}

/* The next individual to simulate, or -1 (none left, or stop). */
static int take_next(state_t *st)
{
    pthread_mutex_lock(&st->wlock);
    int i = st->cursor < st->nwork && !must_stop(st) ? st->work[st->cursor++] : -1;
    pthread_mutex_unlock(&st->wlock);
    return i;
}

static void *worker(void *arg)
{
    state_t *st = arg;
    for (int i; (i = take_next(st)) >= 0;)
        simulate(st, &st->pop[i]);
    return NULL;
}

/* The calling thread's part with cfg.remote: keep every remote worker busy
 * and take their results.  A stop request abandons what is out; a worker
 * that fails ends the search. */
static void dispatch(state_t *st)
{
    const dmm_ge_remote_t *rm = st->cfg->remote;
    int nw = rm->nworkers, busy = 0;
    int *out = malloc((size_t)(nw > 0 ? nw : 1) * sizeof *out);   /* item, or -1: idle */
    dmm_sim_result_t *r = malloc(sizeof *r);
    if (!out || !r) {
        free(out);
        free(r);
        __atomic_store_n(&st->oom, 1, __ATOMIC_RELAXED);
        return;
    }
    for (int w = 0; w < nw; w++)
        out[w] = -1;
    for (;;) {
        for (int w = 0; w < nw && st->failed_worker < 0; w++) {
            if (out[w] >= 0)
                continue;
            int i = take_next(st);
            if (i < 0)
                break;
            double left = st->deadline > 0 ? st->deadline - now() : 0;
            if (st->deadline > 0 && left <= 0)
                left = 1e-3;
            out[w] = i;
            busy++;
            if (rm->start(rm->arg, w, i, st->pop[i].key, &st->bound, left) != 0 &&
                !(st->cfg->stop && *st->cfg->stop))
                st->failed_worker = w;
        }
        if (!busy || st->failed_worker >= 0 || (st->cfg->stop && *st->cfg->stop))
            break;
        int w = -1, item = -1;
        int got = rm->finish(rm->arg, &w, &item, r, 0.05);
        if (got < 0) {
            st->failed_worker = w >= 0 ? w : 0;
            break;
        }
        if (got == 1 && w >= 0 && w < nw && out[w] == item) {
            apply_result(st, &st->pop[item], r);
            out[w] = -1;
            busy--;
        }
    }
    for (int w = 0; w < nw; w++)   /* abandoned: no result */
        if (out[w] >= 0) {
            set_invalid(&st->pop[out[w]]);
            st->pop[out[w]].unevaluated = 1;
        }
    if (st->failed_worker >= 0 || busy)
        __atomic_store_n(&st->interrupted, 1, __ATOMIC_RELAXED);
    free(out);
    free(r);
}

/* ---- the operators -------------------------------------------------------- */

static void random_genome(state_t *st, uint32_t *g)
{
    for (int i = 0; i < st->cfg->length; i++)
        g[i] = (uint32_t)rng_below(&st->rng, st->cfg->codon_bound);
}

/* Is a better than b?  Lower F; ties to the lower index. */
static int better(const indiv_t *pop, int a, int b)
{
    if (pop[a].F != pop[b].F)
        return pop[a].F < pop[b].F;
    return a < b;
}

/* Tournament selection: the best of cfg.tournament individuals drawn with
 * replacement. */
static int select_parent(state_t *st)
{
    int best = (int)rng_below(&st->rng, (uint64_t)st->cfg->pop);
    for (int k = 1; k < st->cfg->tournament; k++) {
        int c = (int)rng_below(&st->rng, (uint64_t)st->cfg->pop);
        if (better(st->pop, c, best))
            best = c;
    }
    return best;
}

/* One-point crossover, the same point in both parents (the paper's "fixed
 * point crossover"); with probability 1 - pcross the children are copies. */
static void crossover(state_t *st, const uint32_t *a, const uint32_t *b, uint32_t *c1, uint32_t *c2)
{
    int L = st->cfg->length;
    int point = L;
    if (L > 1 && rng_unit(&st->rng) < st->cfg->pcross)
        point = 1 + (int)rng_below(&st->rng, (uint64_t)(L - 1));
    memcpy(c1, a, (size_t)point * sizeof *c1);
    memcpy(c2, b, (size_t)point * sizeof *c2);
    memcpy(c1 + point, b + point, (size_t)(L - point) * sizeof *c1);
    memcpy(c2 + point, a + point, (size_t)(L - point) * sizeof *c2);
}

/* Each codon replaced by a fresh random one with probability pmut. */
static void mutate(state_t *st, uint32_t *g)
{
    for (int i = 0; i < st->cfg->length; i++)
        if (rng_unit(&st->rng) < st->cfg->pmut)
            g[i] = (uint32_t)rng_below(&st->rng, st->cfg->codon_bound);
}

/* Map x's genome and write its cache key into text: the canonical text of
 * what the allocators do, not of how the genes said it (options a class
 * does not read would make one DMM many).  0, or -1: invalid. */
static int phenotype_key(state_t *st, indiv_t *x, char *text, size_t cap)
{
    const dmm_ge_custom_t *custom = st->cfg->custom;
    dmm_err_t err;
    if (dmm_ge_map(st->g, x->genome, (size_t)st->cfg->length, st->cfg->wraps, st->pheno,
                   st->pheno_cap) < 0)
        return -1;
    if (custom) {
        x->lines = 0;
        return custom->canon(st->pheno, text, cap, custom->arg) != 0 ? -1 : 0;
    }
    if (dmm_phenotype_to_desc(st->pheno, &x->desc, &err) != 0)
        return -1;
    x->desc.title[0] = 0;
    x->lines = x->desc.n;
    st->key_desc = x->desc;
    dmm_desc_effective(&st->key_desc);
    return dmm_desc_print(&st->key_desc, text, cap) >= cap ? -1 : 0;
}

static int front_add(state_t *st, dmm_ge_result_t *r, const indiv_t *x);

/* Give pop[from..to) a fitness: map each genome and look its phenotype up
 * in the cache, in index order (so which ones hit is reproducible); then
 * simulate the new phenotypes on the worker threads, each into its own slot;
 * then copy the results to the duplicates.  0, or -1 out of memory. */
static int evaluate(state_t *st, int from, int to)
{
    const dmm_ge_config_t *cfg = st->cfg;
    const dmm_ge_custom_t *custom = cfg->custom;
    st->nwork = 0;
    for (int i = from; i < to; i++) {
        indiv_t *x = &st->pop[i];
        x->todo = 0;
        x->unevaluated = 0;
        x->cut = 0;
        st->evaluations++;
        char text[DMM_DESC_MAX * 160 + 300];
        if (phenotype_key(st, x, text, sizeof text) != 0) {
            set_invalid(x);
            st->invalid++;
            continue;
        }
        entry_t e;
        if (cache_get(&st->cache, text, &e)) {
            st->cache_hits++;
            if (e.pending >= 0) {   /* an earlier individual of this generation */
                x->todo = 2;
                x->dup_of = e.pending;
                continue;
            }
            x->valid = e.valid;
            x->hopeless = e.hopeless;
            x->T = e.T;
            x->M = e.M;
            x->W = e.W;
            x->P = e.P;
            x->F = e.F;
            x->n = e.n;
            if (!e.valid)
                st->invalid++;
            continue;
        }
        x->key = strdup(text);
        if (!x->key || cache_put(&st->cache, text, i, 0, 0, 0, 0, 0, 0, DMM_GE_WORST, NULL) != 0)
            return -1;
        x->todo = 1;
        st->work[st->nwork++] = i;
    }

    for (int k = 0; k < st->nwork; k++)
        st->expect[k] = dmm_ge_times_expect(&st->times, st->pop[st->work[k]].key);
    dmm_ge_order(st->work, st->expect, st->nwork);
    st->cursor = 0;
    st->simulations += (uint64_t)st->nwork;
    int remote = cfg->remote && !custom && cfg->remote->nworkers > 0;
    int nthreads = st->jobs < st->nwork ? st->jobs : st->nwork;
    pthread_t tid[256];
    int started = 0;
    /* the calling thread simulates too, or hands out the remote work */
    for (int k = remote ? 0 : 1; k < nthreads && k < 256; k++) {
        if (pthread_create(&tid[started], NULL, worker, st) != 0)
            break;
        started++;
    }
    if (remote)
        dispatch(st);
    else
        worker(st);
    for (int k = 0; k < started; k++)
        pthread_join(tid[k], NULL);

    /* stopped: what was not simulated has no result */
    for (int k = st->cursor; k < st->nwork; k++) {
        indiv_t *x = &st->pop[st->work[k]];
        set_invalid(x);
        x->unevaluated = 1;
    }
    st->simulations -= (uint64_t)(st->nwork - st->cursor);
    for (int i = from; i < to; i++) {
        indiv_t *x = &st->pop[i];
        if (x->todo == 2) {
            const indiv_t *o = &st->pop[x->dup_of];
            x->valid = o->valid;
            x->hopeless = o->hopeless;
            x->unevaluated = o->unevaluated;
            x->T = o->T;
            x->M = o->M;
            x->W = o->W;
            x->P = o->P;
            x->F = o->F;
            x->n = o->n;
        }
        if (x->unevaluated) {
            st->evaluations--;
            if (x->todo == 2)
                st->cache_hits--;
            continue;
        }
        if (x->todo == 0)
            continue;   /* a cache hit or an invalid mapping: counted above */
        if (!x->valid)
            st->invalid++;
        if (x->todo == 1 && x->hopeless)
            st->hopeless++;
        if (st->nobj && x->todo == 1 && x->valid && !x->hopeless &&
            front_add(st, st->r, x) != 0)
            st->oom = 1;
        if (x->cut) {
            st->cut++;
            st->saved_s += x->saved;
        }
    }
    for (int k = 0; k < st->nwork; k++) {
        const indiv_t *x = &st->pop[st->work[k]];
        if (!x->unevaluated)   /* out of memory: the order suffers, nothing else */
            dmm_ge_times_note(&st->times, x->key, x->secs);
    }
    for (int k = 0; k < st->nwork; k++) {
        free(st->pop[st->work[k]].key);
        st->pop[st->work[k]].key = NULL;
    }
    if (st->oom)
        return -1;
    return st->interrupted ? 1 : 0;
}

/* Order of the population, best first (ties by index). */
static int cmp_rank(const void *a, const void *b, void *arg)
{
    const indiv_t *pop = arg;
    int i = *(const int *)a, j = *(const int *)b;
    if (i == j)
        return 0;
    return better(pop, i, j) ? -1 : 1;
}

static void copy_indiv(const state_t *st, indiv_t *dst, const indiv_t *src)
{
    uint32_t *g = dst->genome;
    *dst = *src;
    dst->genome = g;
    dst->key = NULL;
    memcpy(dst->genome, src->genome, (size_t)st->cfg->length * sizeof *g);
}

/* Generational replacement with elitism: next[0..elite) are the elite of pop
 * (best first), next[elite..pop) the children of tournament-selected parents
 * after crossover and mutation; then next becomes pop.  Returns the index
 * from which the new population needs evaluating. */
static int nsga_replace(state_t *st);
static int front_add(state_t *st, dmm_ge_result_t *r, const indiv_t *x);

static int replace(state_t *st)
{
    const dmm_ge_config_t *cfg = st->cfg;
    if (st->nobj)
        return nsga_replace(st);
    int *rank = malloc((size_t)cfg->pop * sizeof *rank);
    if (!rank)
        return -1;
    for (int i = 0; i < cfg->pop; i++)
        rank[i] = i;
    qsort_r(rank, (size_t)cfg->pop, sizeof *rank, cmp_rank, st->pop);
    for (int i = 0; i < cfg->elite; i++)
        copy_indiv(st, &st->next[i], &st->pop[rank[i]]);
    free(rank);

    for (int i = cfg->elite; i < cfg->pop; i += 2) {
        const indiv_t *a = &st->pop[select_parent(st)];
        const indiv_t *b = &st->pop[select_parent(st)];
        uint32_t *c1 = st->next[i].genome;
        uint32_t *c2 = i + 1 < cfg->pop ? st->next[i + 1].genome : st->spare;
        crossover(st, a->genome, b->genome, c1, c2);
        mutate(st, c1);
        if (i + 1 < cfg->pop)
            mutate(st, c2);
    }
    indiv_t *t = st->pop;
    st->pop = st->next;
    st->next = t;
    return cfg->elite;
}

/* ---- several objectives (NSGA-II, pareto.h) ------------------------------ */

int dmm_ge_objective_values(int bits, double t, double m, double w, double p, double *o)
{
    int k = 0;
    if (bits & DMM_GE_OBJ_TIME)
        o[k++] = t;
    if (bits & DMM_GE_OBJ_MEMORY)
        o[k++] = m;
    if (bits & DMM_GE_OBJ_WORST)
        o[k++] = w;
    if (bits & DMM_GE_OBJ_P999)
        o[k++] = p;
    return k;
}

/* The objectives the search compares of n into o[0..nobj). */
static void objectives(const state_t *st, const norm_t *n, double *o)
{
    dmm_ge_objective_values(st->cfg->objectives, n->t, n->m, n->w, n->p, o);
}

/* An invalid individual's objectives: worse than any valid one's, and
 * finite, so that crowding distances stay numbers. */
#define OBJ_INVALID 1e300

typedef struct {
    const int    *front;
    const double *crowd;
} crowded_t;

static int cmp_crowded(const void *a, const void *b, void *arg)
{
    const crowded_t *c = arg;
    int i = *(const int *)a, j = *(const int *)b;
    if (i == j)
        return 0;
    if (dmm_pareto_crowded_better(c->front, c->crowd, i, j))
        return -1;
    if (dmm_pareto_crowded_better(c->front, c->crowd, j, i))
        return 1;
    return i < j ? -1 : 1;
}

/* NSGA-II's step: the parents become the best cfg.pop of the parents and
 * the population just evaluated, by front and crowding distance; the new
 * population is their children (binary tournaments on the same order,
 * crossover, mutation).  Returns 0 (all of it to evaluate), or -1 out of
 * memory. */
static int nsga_replace(state_t *st)
{
    const dmm_ge_config_t *cfg = st->cfg;
    int N = cfg->pop, m = st->nparents + N, k = st->nobj, rc = -1;
    double *obj = malloc((size_t)m * (size_t)k * sizeof *obj);
    double *crowd = malloc((size_t)m * sizeof *crowd);
    int *front = malloc((size_t)m * sizeof *front), *order = malloc((size_t)m * sizeof *order);
    if (!obj || !crowd || !front || !order || !st->parents)
        goto out;
    /* candidates 0..nparents: the parents; then the population */
    for (int i = 0; i < m; i++) {
        const indiv_t *x = i < st->nparents ? &st->parents[i] : &st->pop[i - st->nparents];
        if (x->valid)
            objectives(st, &x->n, obj + (size_t)i * k);
        else
            for (int j = 0; j < k; j++)
                obj[(size_t)i * k + j] = OBJ_INVALID;
        order[i] = i;
    }
    if (dmm_pareto_rank(obj, m, k, front, crowd) != 0)
        goto out;
    crowded_t c = { front, crowd };
    qsort_r(order, (size_t)m, sizeof *order, cmp_crowded, &c);
    /* the survivors, through next (the parents may be among the sources) */
    for (int i = 0; i < N; i++) {
        int o = order[i];
        copy_indiv(st, &st->next[i],
                   o < st->nparents ? &st->parents[o] : &st->pop[o - st->nparents]);
        st->pfront[i] = front[o];
        st->pcrowd[i] = crowd[o];
    }
    for (int i = 0; i < N; i++)
        copy_indiv(st, &st->parents[i], &st->next[i]);
    st->nparents = N;
    /* their children */
    for (int i = 0; i < N; i += 2) {
        int pa[2];
        for (int h = 0; h < 2; h++) {
            int best = (int)rng_below(&st->rng, (uint64_t)N);
            for (int t = 1; t < cfg->tournament; t++) {
                int q = (int)rng_below(&st->rng, (uint64_t)N);
                if (dmm_pareto_crowded_better(st->pfront, st->pcrowd, q, best) ||
                    (!dmm_pareto_crowded_better(st->pfront, st->pcrowd, best, q) && q < best))
                    best = q;
            }
            pa[h] = best;
        }
        uint32_t *c1 = st->next[i].genome;
        uint32_t *c2 = i + 1 < N ? st->next[i + 1].genome : st->spare;
        crossover(st, st->parents[pa[0]].genome, st->parents[pa[1]].genome, c1, c2);
        mutate(st, c1);
        if (i + 1 < N)
            mutate(st, c2);
    }
    indiv_t *t = st->pop;
    st->pop = st->next;
    st->next = t;
    rc = 0;
out:
    free(obj);
    free(crowd);
    free(front);
    free(order);
    return rc;
}

/* The run's front (r->front): x, just simulated to the end, joins it
 * unless a design of it dominates x or has x's very objectives; the designs
 * x dominates leave it.  0, or -1 out of memory. */
static int front_add(state_t *st, dmm_ge_result_t *r, const indiv_t *x)
{
    double ox[DMM_PARETO_MAXOBJ], oy[DMM_PARETO_MAXOBJ];
    int k = st->nobj;
    objectives(st, &x->n, ox);
    int kept = 0;
    for (int i = 0; i < r->nfront; i++) {
        dmm_ge_top_t *y = &r->front[i];
        dmm_ge_objective_values(st->cfg->objectives, y->t, y->m, y->w, y->p, oy);
        int same = 1;
        for (int j = 0; j < k; j++)
            same &= ox[j] == oy[j];
        if (same || dmm_pareto_dominates(oy, ox, k))
            return 0;   /* nothing of the front dominates what it held */
        if (dmm_pareto_dominates(ox, oy, k))
            free(y->key);
        else
            r->front[kept++] = *y;
    }
    dmm_ge_top_t *f = realloc(r->front, (size_t)(kept + 1) * sizeof *f);
    char *key = strdup(x->key);
    if (!f || !key) {
        free(key);
        if (f)
            r->front = f;
        r->nfront = kept;
        return -1;
    }
    f[kept] = (dmm_ge_top_t){ key, x->F, x->T, x->M, x->W, x->P, x->n.t, x->n.m, x->n.w, x->n.p,
                              x->n.F_worst, 0 };
    r->front = f;
    r->nfront = kept + 1;
    return 0;
}

/* The front's hypervolume, normalised, up to DMM_GE_HV_REF. */
static double front_hv(const state_t *st, const dmm_ge_result_t *r)
{
    int k = st->nobj;
    double *o = malloc((size_t)(r->nfront > 0 ? r->nfront : 1) * (size_t)k * sizeof *o);
    double ref[DMM_PARETO_MAXOBJ] = { DMM_GE_HV_REF, DMM_GE_HV_REF, DMM_GE_HV_REF };
    if (!o)
        return -1;
    for (int i = 0; i < r->nfront; i++) {
        const dmm_ge_top_t *y = &r->front[i];
        dmm_ge_objective_values(st->cfg->objectives, y->t, y->m, y->w, y->p, o + (size_t)i * k);
    }
    double hv = dmm_pareto_hypervolume(o, r->nfront, k, ref);
    free(o);
    return hv;
}

static int front_cmp(const void *a, const void *b)
{
    const dmm_ge_top_t *x = a, *y = b;
    if (x->T != y->T)
        return x->T < y->T ? -1 : 1;
    if (x->M != y->M)
        return x->M < y->M ? -1 : 1;
    if (x->W != y->W)
        return x->W < y->W ? -1 : 1;
    if (x->P != y->P)
        return x->P < y->P ? -1 : 1;
    return strcmp(x->key, y->key);
}

/* cfg.custom: the canonical text of r's best genome into r->best_key (a
 * valid genome maps and canonicalises again to the same text). */
static void best_key(state_t *st, dmm_ge_result_t *r)
{
    const dmm_ge_custom_t *c = st->cfg->custom;
    char text[DMM_DESC_MAX * 160 + 300];
    if (dmm_ge_map(st->g, r->genome, (size_t)st->cfg->length, st->cfg->wraps, st->pheno,
                   st->pheno_cap) < 0 ||
        c->canon(st->pheno, text, sizeof text, c->arg) != 0)
        text[0] = 0;
    char *k = strdup(text);
    if (!k) {
        st->oom = 1;
        return;
    }
    free(r->best_key);
    r->best_key = k;
}

/* x becomes the run's best. */
static void set_best(state_t *st, dmm_ge_result_t *r, const indiv_t *x)
{
    r->found = 1;
    r->F = x->F;
    r->T = x->T;
    r->M = x->M;
    r->W = x->W;
    r->P = x->P;
    r->F_mean = x->n.F_mean;
    r->F_worst = x->n.F_worst;
    st->best_hopeless = x->hopeless;
    r->best = x->desc;   /* every valid individual holds its own */
    memcpy(r->genome, x->genome, (size_t)st->cfg->length * sizeof *r->genome);
    if (st->cfg->custom)
        best_key(st, r);
}

/* The statistics of the current population into row; tracks the best of the
 * run in r. */
static void record(state_t *st, int gen, double t0, dmm_ge_result_t *r)
{
    const dmm_ge_config_t *cfg = st->cfg;
    dmm_ge_gen_t *row = &r->log[r->nlog++];
    memset(row, 0, sizeof *row);
    row->gen = gen;
    row->evaluations = st->evaluations;
    row->cache_hits = st->cache_hits;
    row->simulations = st->simulations;
    row->invalid = st->invalid;
    row->hopeless = st->hopeless;
    row->cut = st->cut;
    row->saved_s = st->saved_s;
    row->best_F = DMM_GE_WORST;
    row->mean_F = DMM_GE_WORST;
    double sum = 0;
    int best = -1;
    for (int i = 0; i < cfg->pop; i++) {
        const indiv_t *x = &st->pop[i];
        if (!x->valid)
            continue;
        row->nvalid++;
        sum += x->F;
        if (best < 0 || better(st->pop, i, best))
            best = i;
    }
    if (best >= 0) {
        const indiv_t *x = &st->pop[best];
        row->best_F = x->F;
        row->mean_F = sum / row->nvalid;
        row->best_T = x->T;
        row->best_M = x->M;
        row->best_lines = x->lines;
        if (!r->found || x->F < r->F)
            set_best(st, r, x);
    }
    if (st->nobj) {
        row->hypervolume = front_hv(st, r);
        row->front = r->nfront;
    }
    row->seconds = now() - t0;
    row->eval_per_s = row->seconds > 0 ? (double)st->evaluations / row->seconds : 0;
    double per_gen = row->seconds / (gen + 1);
    double left = per_gen * (cfg->gens - gen);
    if (cfg->time_budget > 0 && cfg->time_budget - row->seconds < left)
        left = cfg->time_budget - row->seconds;
    row->eta = left < 0 ? 0 : left;
}

/* ---- the climb (ge.h, "Climb") ------------------------------------------- */

/* The time budget's end for what runs next, and for its simulations. */
static void set_deadline(state_t *st, double d)
{
    st->deadline = d;
    st->bound.deadline = d;
    for (int k = 0; k < st->cfg->nextra; k++)
        st->xbound[k].deadline = d;
}

/* The climb's cap: the cfg.top-th best F (one per T and M, as r->top
 * counts them) of the designs simulated to the end so far, if below the
 * run's cap. */
static double climb_cap(const state_t *st)
{
    enum { KMAX = 64 };
    int k = st->cfg->top < 1 ? 1 : st->cfg->top > KMAX ? KMAX : st->cfg->top, n = 0;
    const entry_t *best[KMAX];
    const cache_t *c = &st->cache;
    for (size_t i = 0; i < c->cap; i++) {
        const entry_t *e = &c->slots[i];
        if (!e->key || !e->valid || e->hopeless || e->pending >= 0)
            continue;
        int same = 0;
        for (int j = 0; j < n && !same; j++)
            same = best[j]->T == e->T && best[j]->M == e->M;
        if (same || (n == k && e->F >= best[n - 1]->F))
            continue;
        int j = n < k ? n++ : n - 1;
        for (; j > 0 && best[j - 1]->F > e->F; j--)
            best[j] = best[j - 1];
        best[j] = e;
    }
    return n == k && best[k - 1]->F < st->cap ? best[k - 1]->F : st->cap;
}

/* x, better than the run's best, becomes it. */
static void climb_adopt(state_t *st, dmm_ge_result_t *r, const indiv_t *x)
{
    set_best(st, r, x);
    copy_indiv(st, &st->climbed, x);
    st->has_climbed = 1;
}

/* After a climb, with time left for more generations: the climb's best, if
 * better than the population's, takes the place of its worst. */
static void climb_inject(state_t *st)
{
    if (!st->has_climbed)
        return;
    st->has_climbed = 0;
    int best = 0, worst = 0;
    for (int i = 1; i < st->cfg->pop; i++) {
        if (better(st->pop, i, best))
            best = i;
        if (better(st->pop, worst, i))
            worst = i;
    }
    if (st->climbed.F < st->pop[best].F)
        copy_indiv(st, &st->pop[worst], &st->climbed);
}

/* The genomes to climb from, best first, into starts (room for max): the
 * run's best, then (with a time budget) the last population's valid
 * individuals simulated to the end, in rank order, one per T and M.
 * Returns how many; their F in F. */
static int climb_starts(state_t *st, const dmm_ge_result_t *r, uint32_t *starts, double *F,
                        uint64_t *T, size_t *M, int max)
{
    const dmm_ge_config_t *cfg = st->cfg;
    size_t L = (size_t)cfg->length;
    int n = 1;
    memcpy(starts, r->genome, L * sizeof *starts);
    F[0] = r->F;
    T[0] = r->T;
    M[0] = r->M;
    if (cfg->time_budget <= 0)
        return n;
    int *rank = malloc((size_t)cfg->pop * sizeof *rank);
    if (!rank)
        return n;
    for (int i = 0; i < cfg->pop; i++)
        rank[i] = i;
    qsort_r(rank, (size_t)cfg->pop, sizeof *rank, cmp_rank, st->pop);
    for (int i = 0; i < cfg->pop && n < max; i++) {
        const indiv_t *x = &st->pop[rank[i]];
        if (!x->valid || x->hopeless || x->unevaluated)
            continue;
        int same = 0;
        for (int j = 0; j < n && !same; j++)
            same = T[j] == x->T && M[j] == x->M;
        if (same)
            continue;
        memcpy(starts + (size_t)n * L, x->genome, L * sizeof *starts);
        F[n] = x->F;
        T[n] = x->T;
        M[n] = x->M;
        n++;
    }
    free(rank);
    return n;
}

/* One batch of neighbours of cur (moves mv[0..k)) into pop[0..k), given a
 * fitness under the climb's cap.  Returns evaluate()'s result; *best the
 * best of them with F below Fcur, or -1. */
static int climb_batch(state_t *st, const uint32_t *cur, const dmm_climb_move_t *mv, int k,
                       double Fcur, int *best)
{
    size_t L = (size_t)st->cfg->length;
    for (int j = 0; j < k; j++) {
        memcpy(st->pop[j].genome, cur, L * sizeof *cur);
        st->pop[j].genome[mv[j].pos] = mv[j].codon;
    }
    double cap = st->cap, bcap = st->bound.cap;
    if (cap < DMM_GE_WORST) {
        st->cap = climb_cap(st);
        st->bound.cap = st->cap;
    }
    int ev = evaluate(st, 0, k);
    st->cap = cap;
    st->bound.cap = bcap;
    *best = -1;
    for (int j = 0; ev >= 0 && j < k; j++) {
        const indiv_t *x = &st->pop[j];
        if (x->valid && !x->hopeless && !x->unevaluated && x->F < Fcur &&
            (*best < 0 || x->F < st->pop[*best].F))
            *best = j;
    }
    return ev;
}

/* The climb.  0, or -1 out of memory. */
static int climb(state_t *st, dmm_ge_result_t *r)
{
    const dmm_ge_config_t *cfg = st->cfg;
    dmm_ge_climb_t *c = &r->climb;
    if (cfg->climb <= 0 || st->nobj || !r->found || st->best_hopeless)
        return 0;
    double t0 = now();
    size_t L = (size_t)cfg->length;
    int B = cfg->pop < DMM_GE_CLIMB_BATCH ? cfg->pop : DMM_GE_CLIMB_BATCH;
    int max = cfg->elite > 1 ? cfg->elite : 1, rc = -1;
    uint32_t *starts = malloc((size_t)max * L * sizeof *starts);
    uint32_t *cur = malloc(L * sizeof *cur);
    double *F = malloc((size_t)max * sizeof *F);
    uint64_t *T = malloc((size_t)max * sizeof *T);
    size_t *M = malloc((size_t)max * sizeof *M);
    dmm_climb_move_t *mv = NULL;
    if (!starts || !cur || !F || !T || !M)
        goto out;
    int nstarts = climb_starts(st, r, starts, F, T, M, max);
    indiv_t *pop = st->pop;   /* the batches go to st->next: the population stays */
    st->pop = st->next;
    st->next = pop;
    if (!c->ran)
        c->F_start = r->F;
    c->ran = 1;
    rc = 0;
    for (int s = 0; s < nstarts && !must_stop(st); s++) {
        memcpy(cur, starts + (size_t)s * L, L * sizeof *cur);
        double Fcur = F[s];
        c->starts++;
        c->optimum = 0;
        for (;;) {
            long nm = dmm_climb_moves(st->g, cur, cfg->length, cfg->wraps, cfg->codon_bound, &mv);
            if (nm < 0) {
                rc = -1;
                goto done;
            }
            for (long i = nm - 1; i > 0; i--) {   /* the order: from the run's generator */
                long j = (long)rng_below(&st->rng, (uint64_t)i + 1);
                dmm_climb_move_t t = mv[i];
                mv[i] = mv[j];
                mv[j] = t;
            }
            int best = -1, ev = 0;
            for (long b = 0; b < nm && best < 0 && ev == 0; b += B) {
                if (must_stop(st))
                    goto done;
                int k = nm - b < B ? (int)(nm - b) : B;
                uint64_t e0 = st->evaluations, s0 = st->simulations;
                ev = climb_batch(st, cur, mv + b, k, Fcur, &best);
                if (ev < 0) {
                    rc = -1;
                    goto done;
                }
                c->neighbours += st->evaluations - e0;
                c->simulations += st->simulations - s0;
            }
            free(mv);
            mv = NULL;
            if (best >= 0) {
                const indiv_t *x = &st->pop[best];
                memcpy(cur, x->genome, L * sizeof *cur);
                Fcur = x->F;
                c->steps++;
                if (x->F < r->F)
                    climb_adopt(st, r, x);
            }
            if (ev == 1)
                goto done;   /* stopped */
            if (best < 0) {
                c->optimum = 1;
                break;
            }
        }
    }
done:
    st->next = st->pop;
    st->pop = pop;
out:
    c->seconds += now() - t0;
    free(mv);
    free(starts);
    free(cur);
    free(F);
    free(T);
    free(M);
    return rc;
}

/* Generations from *gen on (0: the initial population, already drawn)
 * until cfg.gens are done or the search must stop; *gen is then the next
 * one to run.  0, or -1 out of memory. */
static int generations(state_t *st, int *gen, double t0, dmm_ge_result_t *r)
{
    const dmm_ge_config_t *cfg = st->cfg;
    for (; *gen <= cfg->gens; (*gen)++) {
        int from = 0, ev;
        if (*gen > 0 && must_stop(st))
            break;
        if (*gen > 0)
            from = replace(st);            /* selection, crossover, mutation */
        if (from < 0 || (ev = evaluate(st, from, cfg->pop)) < 0)
            return -1;
        record(st, *gen, t0, r);
        r->log[r->nlog - 1].partial = ev == 1;
        if (st->oom)
            return -1;
        if (cfg->progress)
            cfg->progress(&r->log[r->nlog - 1], cfg, cfg->progress_arg);
        if (ev == 1) {
            (*gen)++;
            break;
        }
    }
    return 0;
}

/* ---- the run -------------------------------------------------------------- */

/* Nothing of the run came within the cap: the best's real F, T and M from
 * one replay to the end (its rank, the cap, is what the search used). */
static int finish_best(state_t *st, dmm_ge_result_t *r)
{
    dmm_sim_result_t *res = malloc(sizeof *res);
    dmm_err_t err;
    if (!res)
        return -1;
    const dmm_sim_bound_t all = { .pooled = 1, .fail_limit = UINT64_MAX };
    if (dmm_sim_run_bounded(st->s, &r->best, "ge", 0, st->cfg->pooled ? &all : NULL, res,
                            &err) == 0 && res->M) {
        r->T = res->T;
        r->M = res->M;
        r->W = res->max_op_cost;
        r->P = res->p999_op_cost;
        r->F = dmm_ge_fitness(res->T, res->M, st->T_KNG, st->M_LEA);
        r->F_mean = r->F_worst = r->F;
    }
    free(res);
    return 0;
}

/* T_KNG, M_LEA, the cap and the bound of every simulation. */
static int references(state_t *st, dmm_err_t *err)
{
    dmm_ge_ref_t refs[2] = { st->cfg->kng, st->cfg->lea };
    if (!refs[0].T || !refs[1].M ||
        (st->cfg->objectives & (DMM_GE_OBJ_WORST | DMM_GE_OBJ_P999) && !refs[0].W)) {
        refs[0] = (dmm_ge_ref_t){ .name = "kng" };
        refs[1] = (dmm_ge_ref_t){ .name = "lea" };
        if (dmm_ge_references(st->s, refs, 2, err) != 0)
            return -1;
    }
    const dmm_ge_ref_t *kng = &refs[0], *lea = &refs[1];
    if (!kng->T || !lea->M) {
        dmm_err_set(err, "the references cost nothing on this trace (T_KNG=%llu, M_LEA=%zu)",
                    (unsigned long long)kng->T, lea->M);
        return -1;
    }
    st->T_KNG = kng->T;
    st->M_LEA = lea->M;
    st->W_KNG = kng->W;
    st->P_KNG = kng->P;
    for (int k = 0; k < st->cfg->nextra; k++) {
        dmm_ge_trace_t *t = &st->xt[k];
        *t = st->cfg->extra[k];
        if (!t->kng.T || !t->lea.M || !t->kng.W) {
            dmm_ge_ref_t xr[2] = { { .name = "kng" }, { .name = "lea" } };
            if (dmm_ge_references(t->s, xr, 2, err) != 0)
                return -1;
            t->kng = xr[0];
            t->lea = xr[1];
        }
        if (!t->kng.T || !t->lea.M) {
            dmm_err_set(err, "trace %d: the references cost nothing on it", k + 2);
            return -1;
        }
        dmm_sim_bound_t *xb = &st->xbound[k];
        xb->T_ref = t->kng.T;
        xb->M_ref = t->lea.M;
        xb->fail_limit = t->kng.failed < t->lea.failed ? t->kng.failed : t->lea.failed;
        xb->lean = 1;
    }
    dmm_sim_bound_t *b = &st->bound;
    b->T_ref = kng->T;
    b->M_ref = lea->M;
    b->fail_limit = kng->failed < lea->failed ? kng->failed : lea->failed;
    b->lean = 1;
    st->cap = DMM_GE_WORST;
    if (st->cfg->hopeless > 0 && !st->cfg->objectives && !st->cfg->nextra) {
        double fk = dmm_ge_fitness(kng->T, kng->M, kng->T, lea->M);
        double fl = dmm_ge_fitness(lea->T, lea->M, kng->T, lea->M);
        st->cap = st->cfg->hopeless * (fk > fl ? fk : fl);
        b->cap = st->cap;
        b->stop_at_cap = !st->cfg->finish_hopeless;
        b->calls = dmm_sim_calls(st->s, b->fail_limit == 0);
        /* with no failure allowed, every live byte of the trace is held */
        if (b->fail_limit == 0 && !kng->failed)
            b->M_floor = kng->peak_live;
    }
    return 0;
}

/* references(), with room first for the other traces' (freed on failure:
 * the run has not started). */
static int start_references(state_t *st, dmm_err_t *err)
{
    int n = st->cfg->nextra;
    if (n) {
        st->xt = calloc((size_t)n, sizeof *st->xt);
        st->xbound = calloc((size_t)n, sizeof *st->xbound);
        if (!st->xt || !st->xbound) {
            dmm_err_set(err, "out of memory for %d traces", n + 1);
            goto fail;
        }
    }
    if (references(st, err) == 0)
        return 0;
fail:
    free(st->xt);
    free(st->xbound);
    st->xt = NULL;
    st->xbound = NULL;
    return -1;
}

static int check_config(const dmm_ge_config_t *c, dmm_err_t *err)
{
    const char *bad = NULL;
    if (c->pop < 2 || c->pop > 1000000)
        bad = "population must be in 2..1000000";
    else if (c->elite < 0 || c->elite >= c->pop)
        bad = "elite must be in 0..population-1";
    else if (c->gens < 0)
        bad = "generations must be >= 0";
    else if (c->tournament < 1 || c->tournament > c->pop)
        bad = "tournament size must be in 1..population";
    else if (!(c->pcross >= 0 && c->pcross <= 1))
        bad = "crossover probability must be in [0,1]";
    else if (!(c->pmut >= 0 && c->pmut <= 1))
        bad = "mutation probability must be in [0,1]";
    else if (c->wraps < 0 || c->wraps > 1000)
        bad = "wraps must be in 0..1000";
    else if (c->length < 1 || c->length > 100000)
        bad = "genome length must be in 1..100000";
    else if (c->codon_bound < 1)
        bad = "codon bound must be >= 1";
    else if (c->jobs < 0)
        bad = "jobs must be >= 0";
    else if (!(c->time_budget >= 0))
        bad = "time budget must be >= 0";
    else if (!(c->hopeless == 0 || c->hopeless >= 1))
        bad = "the hopeless factor must be 0 (off) or >= 1";
    else if (c->custom && (!c->custom->canon || !c->custom->fitness))
        bad = "a custom fitness needs canon() and fitness()";
    else if (c->objectives & ~(DMM_GE_OBJ_TIME | DMM_GE_OBJ_MEMORY | DMM_GE_OBJ_WORST |
                               DMM_GE_OBJ_P999) ||
             (c->objectives && (__builtin_popcount((unsigned)c->objectives) < 2 ||
                                __builtin_popcount((unsigned)c->objectives) > 3)))
        bad = "objectives: two or three of time, memory, worst and p999";
    else if (c->objectives && c->custom)
        bad = "a custom fitness has one objective";
    else if (c->nextra < 0 || (c->nextra && !c->extra))
        bad = "more traces: nextra given without them";
    else if (c->nextra && (c->custom || c->remote))
        bad = "several traces are evaluated in this process, with the simulator's fitness";
    else if (c->nlean < 0 || c->nlean > DMM_GE_LEAN_MAX)
        bad = "lean: at most 8 weights";
    else if (!(c->climb >= 0 && c->climb <= 0.9))
        bad = "climb: its share of the time budget must be in [0, 0.9]";
    for (int i = 0; !bad && i < c->nlean; i++)
        if (!(c->lean[i] > 0 && c->lean[i] < 1))
            bad = "lean: each weight of time must be in (0,1)";
    if (bad)
        dmm_err_set(err, "%s", bad);
    return bad ? -1 : 0;
}

/* Best first; equal F by text, so that the list is the same on every run. */
static int top_cmp(const void *a, const void *b)
{
    const dmm_ge_top_t *x = a, *y = b;
    if (x->F != y->F)
        return x->F < y->F ? -1 : 1;
    return strcmp(x->key, y->key);
}

/* r->top: the k best valid phenotypes of the cache that were simulated to
 * the end, no two with the same T and M.  0, or -1 out of memory. */
static int collect_top(const cache_t *c, int k, dmm_ge_result_t *r)
{
    size_t n = 0;
    for (size_t i = 0; i < c->cap; i++) {
        const entry_t *e = &c->slots[i];
        n += e->key && e->valid && !e->hopeless && e->pending < 0;
    }
    if (k <= 0 || n == 0)
        return 0;
    dmm_ge_top_t *all = malloc(n * sizeof *all);
    if (!all)
        return -1;
    n = 0;
    for (size_t i = 0; i < c->cap; i++) {
        const entry_t *e = &c->slots[i];
        if (e->key && e->valid && !e->hopeless && e->pending < 0)
            all[n++] = (dmm_ge_top_t){ e->key, e->F, e->T, e->M, e->W, e->P, e->n.t, e->n.m,
                                       e->n.w, e->n.p, e->n.F_worst, 0 };
    }
    qsort(all, n, sizeof *all, top_cmp);
    /* designs that replay the trace with the same T and M behave alike on
     * it: the first of them stands for all */
    int kept = 0;
    for (size_t i = 0; i < n && kept < k; i++) {
        int same = 0;
        for (int j = 0; j < kept && !same; j++)
            same = all[j].T == all[i].T && all[j].M == all[i].M;
        if (same)
            continue;
        all[kept] = all[i];
        if (!(all[kept].key = strdup(all[i].key))) {
            r->ntop = kept;
            r->top = all;
            return -1;
        }
        kept++;
    }
    r->ntop = kept;
    r->top = all;
    return 0;
}

/* r->lean: for each weight w of cfg.lean, the valid phenotype of the cache
 * simulated to the end that minimises w*t + (1-w)*m (ties by text), unless
 * a design of r->top or of an earlier weight has its T and M.  0, or -1 out
 * of memory. */
static int collect_lean(const cache_t *c, const dmm_ge_config_t *cfg, dmm_ge_result_t *r)
{
    if (cfg->nlean <= 0 || cfg->objectives || cfg->custom)
        return 0;
    if (!(r->lean = calloc((size_t)cfg->nlean, sizeof *r->lean)))
        return -1;
    for (int k = 0; k < cfg->nlean; k++) {
        double w = cfg->lean[k], best = 0;
        const entry_t *pick = NULL;
        for (size_t i = 0; i < c->cap; i++) {
            const entry_t *e = &c->slots[i];
            if (!e->key || !e->valid || e->hopeless || e->pending >= 0)
                continue;
            double v = w * e->n.t + (1 - w) * e->n.m;
            if (!pick || v < best || (v == best && strcmp(e->key, pick->key) < 0)) {
                pick = e;
                best = v;
            }
        }
        if (!pick)
            break;
        int same = 0;
        for (int j = 0; j < r->ntop && !same; j++)
            same = r->top[j].T == pick->T && r->top[j].M == pick->M;
        for (int j = 0; j < r->nlean && !same; j++)
            same = r->lean[j].T == pick->T && r->lean[j].M == pick->M;
        if (same)
            continue;
        dmm_ge_top_t *t = &r->lean[r->nlean];
        *t = (dmm_ge_top_t){ NULL, pick->F, pick->T, pick->M, pick->W, pick->P, pick->n.t,
                             pick->n.m, pick->n.w, pick->n.p, pick->n.F_worst, w };
        if (!(t->key = strdup(pick->key)))
            return -1;
        r->nlean++;
    }
    return 0;
}

void dmm_ge_result_free(dmm_ge_result_t *r)
{
    for (int i = 0; i < r->ntop; i++)
        free(r->top[i].key);
    free(r->top);
    r->top = NULL;
    r->ntop = 0;
    for (int i = 0; i < r->nlean; i++)
        free(r->lean[i].key);
    free(r->lean);
    r->lean = NULL;
    r->nlean = 0;
    for (int i = 0; i < r->nfront; i++)
        free(r->front[i].key);
    free(r->front);
    r->front = NULL;
    r->nfront = 0;
    free(r->genome);
    free(r->log);
    free(r->best_key);
    r->genome = NULL;
    r->log = NULL;
    r->best_key = NULL;
}

/* The run's arrays, each individual's genome in one block (st->genomes):
 * the population, the next one and (several objectives) the parents.  0,
 * or -1 out of memory (dmm_ge_run frees what was had). */
static int alloc_state(state_t *st, dmm_ge_result_t *r)
{
    const dmm_ge_config_t *cfg = st->cfg;
    size_t L = (size_t)cfg->length, N = (size_t)cfg->pop;
    st->pheno_cap = 1u << 20;
    st->pheno = malloc(st->pheno_cap);
    st->pop = calloc(N, sizeof *st->pop);
    st->next = calloc(N, sizeof *st->next);
    st->work = malloc(N * sizeof *st->work);
    st->expect = malloc(N * sizeof *st->expect);
    st->spare = malloc(L * sizeof *st->spare);
    st->climbed.genome = malloc(L * sizeof *st->climbed.genome);
    st->genomes = malloc(3 * N * L * sizeof *st->genomes);
    if (st->nobj) {
        st->parents = calloc(N, sizeof *st->parents);
        st->pfront = calloc(N, sizeof *st->pfront);
        st->pcrowd = calloc(N, sizeof *st->pcrowd);
    }
    r->genome = calloc(L, sizeof *r->genome);
    r->log = calloc((size_t)cfg->gens + 1, sizeof *r->log);
    if (!st->pheno || !st->pop || !st->next || !st->work || !st->expect || !st->spare ||
        !st->climbed.genome ||
        !st->genomes || !r->genome || !r->log ||
        (st->nobj && (!st->parents || !st->pfront || !st->pcrowd)) || cache_init(&st->cache) != 0)
        return -1;
    for (size_t i = 0; i < N; i++) {
        st->pop[i].genome = st->genomes + i * L;
        st->next[i].genome = st->genomes + (N + i) * L;
        if (st->parents)
            st->parents[i].genome = st->genomes + (2 * N + i) * L;
    }
    return 0;
}

int dmm_ge_run(const dmm_ge_config_t *cfg, const dmm_grammar_t *g, const dmm_opstream_t *s,
               dmm_ge_result_t *r, dmm_err_t *err)
{
    memset(r, 0, sizeof *r);
    if (check_config(cfg, err) != 0)
        return -1;
    double t0 = now();
    state_t st;
    memset(&st, 0, sizeof st);
    st.cfg = cfg;
    st.g = g;
    st.s = s;
    st.jobs = cfg->jobs;
    if (st.jobs <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        st.jobs = n > 0 ? (int)n : 1;
    }
    if (st.jobs > 256)
        st.jobs = 256;
    rng_seed(&st.rng, cfg->seed);
    st.cap = DMM_GE_WORST;
    st.failed_worker = -1;
    if (!cfg->custom && start_references(&st, err) != 0)
        return -1;
    int climbing = cfg->climb > 0 && !cfg->objectives;
    st.bound.stop = cfg->stop;
    st.bound.pooled = cfg->pooled;
    for (int k = 0; k < cfg->nextra; k++) {
        st.xbound[k].stop = cfg->stop;
        st.xbound[k].pooled = cfg->pooled;
    }
    if (cfg->time_budget > 0)   /* the generations' share (the climb's: below) */
        set_deadline(&st, t0 + cfg->time_budget * (climbing ? 1 - cfg->climb : 1));
    r->T_KNG = st.T_KNG;
    r->M_LEA = st.M_LEA;
    r->W_KNG = st.W_KNG;
    r->P_KNG = st.P_KNG;
    st.nobj = __builtin_popcount((unsigned)cfg->objectives);
    st.r = r;
    r->cap = st.cap;
    r->length = cfg->length;

    int rc = -1;
    pthread_mutex_init(&st.wlock, NULL);
    if (alloc_state(&st, r) != 0) {
        dmm_err_set(err, "out of memory for a population of %d", cfg->pop);
        goto out;
    }

    /* generation 0: a random population */
    r->stopped = DMM_GE_DONE;
    for (int i = 0; i < cfg->pop; i++)
        random_genome(&st, st.pop[i].genome);
    int gen = 0;
    for (;;) {
        if (generations(&st, &gen, t0, r) != 0)
            goto oom;
        if (!climbing || st.failed_worker >= 0 || (cfg->stop && *cfg->stop))
            break;
        if (cfg->time_budget > 0)   /* the generations' share is spent: the rest */
            set_deadline(&st, t0 + cfg->time_budget);
        if (st.deadline > 0 && now() >= st.deadline)
            break;
        st.interrupted = 0;
        if (climb(&st, r) != 0)
            goto oom;
        if (st.interrupted || cfg->time_budget <= 0 || gen > cfg->gens)
            break;
        /* every climb ended where no neighbour is better, with time left:
         * more generations, the climb's best among them, then climb again */
        climb_inject(&st);
        set_deadline(&st, now() + (st.deadline - now()) * (1 - cfg->climb));
    }
    if (st.failed_worker >= 0) {
        r->stopped = DMM_GE_WORKER_FAILED;
        r->failed_worker = st.failed_worker;
    } else if (st.interrupted) {
        r->stopped = cfg->stop && *cfg->stop ? DMM_GE_STOPPED : DMM_GE_TIME;
    }
    if (r->found && st.best_hopeless && !cfg->custom && finish_best(&st, r) != 0)
        goto oom;
    if (collect_top(&st.cache, cfg->top, r) != 0 || collect_lean(&st.cache, cfg, r) != 0)
        goto oom;
    if (r->nfront)
        qsort(r->front, (size_t)r->nfront, sizeof *r->front, front_cmp);
    rc = 0;
    goto out;
oom:
    dmm_err_set(err, "out of memory during the search");
out:
    r->evaluations = st.evaluations;
    r->cache_hits = st.cache_hits;
    r->simulations = st.simulations;
    r->invalid = st.invalid;
    r->hopeless = st.hopeless;
    r->cut = st.cut;
    r->saved_s = st.saved_s;
    r->seconds = now() - t0;
    if (st.pop)
        for (int i = 0; i < cfg->pop; i++)
            free(st.pop[i].key);
    cache_destroy(&st.cache);
    pthread_mutex_destroy(&st.wlock);
    free(st.genomes);
    free(st.pop);
    free(st.next);
    free(st.parents);
    free(st.pfront);
    free(st.pcrowd);
    free(st.xt);
    free(st.xbound);
    free(st.work);
    free(st.expect);
    dmm_ge_times_free(&st.times);
    free(st.spare);
    free(st.climbed.genome);
    free(st.pheno);
    return rc;
}
