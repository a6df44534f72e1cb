/* sim.c - replay an operation stream through a simulated chain and
 * measure it (see sim.h). */
#include "allocators/sim/sim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tracer/base/spinlock.h"

double dmm_sim_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* floor(log2 v), 0 for v <= 1, at most DMM_SIM_HIST - 1 */
static unsigned bucket(uint64_t v)
{
    unsigned b = v > 1 ? 63u - (unsigned)__builtin_clzll(v) : 0;
    return b < DMM_SIM_HIST - 1 ? b : DMM_SIM_HIST - 1;
}

/* usable() of a block, without counting its cost: it is the simulator's
 * measurement, not the program's work. */
static size_t usable_uncounted(dmm_chain_t *c, void *p)
{
    dmm_cost_t saved = c->cost;
    size_t u = dmm_chain_usable(c, p);
    c->cost = saved;
    return u;
}

/* Stop and deadline are looked at every 4096 operations, and whenever
 * the cost grew by this much since (a few milliseconds of work: one
 * operation of a hopeless DMM may walk millions of list nodes). */
#define CHECK_COST ((uint64_t)1 << 22)

static int is_call(const dmm_op_t *op)
{
    return op->kind == DMM_OP_ALLOC || op->kind == DMM_OP_REALLOC;
}

uint64_t dmm_sim_calls(const dmm_opstream_t *s, int frees)
{
    uint64_t n = 0;
    uint8_t *live = frees ? calloc(s->nids / 8 + 1, 1) : NULL;
    if (frees && !live)
        return 0;
    for (size_t i = 0; i < s->nops; i++) {
        const dmm_op_t *op = &s->ops[i];
        if (op->id >= s->nids)
            continue;
        uint8_t bit = (uint8_t)(1u << (op->id & 7));
        if (is_call(op)) {
            n++;
            if (live)
                live[op->id / 8] |= bit;
        } else if (live && op->kind == DMM_OP_FREE && (live[op->id / 8] & bit)) {
            n++;
            live[op->id / 8] &= (uint8_t)~bit;
        }
    }
    free(live);
    return n;
}

/* Where a bounded replay stands: when stop and deadline are looked at next
 * (a cost), and the cost from which the cap may be reached with the
 * footprint M_at (a threshold a little under the exact one: crossing it
 * only leads to the exact test, dmm_sim_weighted). */
typedef struct watch {
    uint64_t next_T;
    uint64_t T_near;
    size_t   M_at;
} watch_t;

static uint64_t near_cap(const dmm_sim_bound_t *b, size_t M)
{
    double x = (b->cap - 0.5 * (double)M / (double)b->M_ref) * 2.0 * (double)b->T_ref;
    x = x * (1 - 1e-9) - 2;
    if (!(x > 0))
        return 0;
    return x >= 1.8e19 ? UINT64_MAX : (uint64_t)x;
}

/* After each operation: 1 when the bound ends the replay here.  T_later is
 * what the calls still to come cost at least. */
static int bound_reached(const dmm_sim_bound_t *b, const dmm_chain_t *c, uint64_t T,
                         uint64_t T_later, dmm_sim_result_t *r, watch_t *w)
{
    if (r->failed > b->fail_limit) {
        r->over_fail_at = r->ops;
        return 1;
    }
    if (b->cap > 0 && !r->capped_at) {
        size_t M = c->ps.peak > b->M_floor ? c->ps.peak : b->M_floor;
        if (M != w->M_at) {
            w->M_at = M;
            w->T_near = near_cap(b, M);
        }
        if (T + T_later >= w->T_near &&
            dmm_sim_weighted(T + T_later, M, b->T_ref, b->M_ref) >= b->cap) {
            r->capped_at = r->ops;
            if (b->stop_at_cap)
                return 1;
        }
    }
    if ((r->ops & 4095) != 0 && T < w->next_T)
        return 0;
    w->next_T = T + CHECK_COST;
    if ((b->stop && *b->stop) || (b->deadline > 0 && dmm_sim_now() >= b->deadline)) {
        r->interrupted = 1;
        return 1;
    }
    return 0;
}

int dmm_sim_run(const dmm_opstream_t *s, const dmm_desc_t *d, const char *name,
                uint64_t check_every, dmm_sim_result_t *r, dmm_err_t *err)
{
    return dmm_sim_run_bounded(s, d, name, check_every, NULL, r, err);
}

int dmm_sim_fit_pool(const dmm_opstream_t *s, const dmm_desc_t *d, size_t *bytes,
                     dmm_err_t *err)
{
    dmm_desc_t e = *d;
    e.pool = 0;
    dmm_sim_result_t r;
    if (dmm_sim_run(s, &e, "pool", 0, &r, err) != 0)
        return -1;
    size_t m = r.M;
    /* lo pages keep M (0: no pool), more than hi do not */
    size_t lo = 0, hi = r.M > r.map_bytes ? (r.M - r.map_bytes) / DMM_PAGE : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo + 1) / 2;
        e.pool = mid * DMM_PAGE;
        if (dmm_sim_run(s, &e, "pool", 0, &r, err) != 0)
            return -1;
        if (r.M <= m)
            lo = mid;
        else
            hi = mid - 1;
    }
    *bytes = lo * DMM_PAGE;
    return 0;
}

/* A block of the replay, by id: its address (NULL: not live), requested
 * and usable bytes.  One cache line holds all an operation needs. */
typedef struct slot {
    void  *ptr;
    size_t req, use;
} slot_t;

/* The blocks of a replay and their live totals. */
typedef struct blocks {
    slot_t *b;
    size_t  n;             /* slots */
    size_t  live, live_usable;
} blocks_t;

/* Slot tables outlive their replay: a search replays one trace thousands
 * of times, and a fresh table of millions of slots is a page fault per
 * 170 of them.  A kept table is cleared with memset instead. */
#define SPARE_TABLES 4
static int     g_table_lock;
static int     g_ntables;
static slot_t *g_table[SPARE_TABLES];
static size_t  g_table_n[SPARE_TABLES];

static int blocks_open(blocks_t *bl, size_t n)
{
    memset(bl, 0, sizeof *bl);
    bl->n = n ? n : 1;
    dmm_spin_lock(&g_table_lock);
    for (int i = g_ntables; i-- > 0;) {
        if (g_table_n[i] < bl->n)
            continue;
        bl->b = g_table[i];
        bl->n = g_table_n[i];
        g_ntables--;
        g_table[i] = g_table[g_ntables];
        g_table_n[i] = g_table_n[g_ntables];
        break;
    }
    dmm_spin_unlock(&g_table_lock);
    if (bl->b) {
        memset(bl->b, 0, n * sizeof *bl->b);
        return 0;
    }
    bl->b = calloc(bl->n, sizeof *bl->b);
    return bl->b ? 0 : -1;
}

static void blocks_close(blocks_t *bl)
{
    dmm_spin_lock(&g_table_lock);
    if (g_ntables < SPARE_TABLES) {
        g_table[g_ntables] = bl->b;
        g_table_n[g_ntables] = bl->n;
        g_ntables++;
        bl->b = NULL;
    }
    dmm_spin_unlock(&g_table_lock);
    free(bl->b);
    bl->b = NULL;
}

/* Replay one operation: 1 when it called the allocator, 0 when not (the
 * free of a block whose allocation failed), -1 when it is not an operation
 * (skipped).  lean: the usable sizes are not asked for. */
static int replay_op(dmm_chain_t *c, blocks_t *bl, const dmm_op_t *op, dmm_sim_result_t *r,
                     int lean)
{
    slot_t *b = &bl->b[op->id];
    switch (op->kind) {
    case DMM_OP_ALLOC: {
        void *p = op->align_log2 > 4 ? dmm_chain_memalign(c, (size_t)1 << op->align_log2, op->size)
                                     : dmm_chain_malloc(c, op->size);
        if (!p) {
            r->failed++;
            return 1;
        }
        b->ptr = p;
        break;
    }
    case DMM_OP_REALLOC: {
        /* a block whose allocation failed: treat as a new one */
        void *p = !b->ptr ? dmm_chain_malloc(c, op->size)
                          : dmm_chain_realloc(c, b->ptr, op->size ? op->size : 1);
        if (!p) {
            r->failed++;
            return 1;
        }
        if (b->ptr) {
            bl->live -= b->req;
            bl->live_usable -= b->use;
        }
        b->ptr = p;
        break;
    }
    case DMM_OP_FREE:
        if (b->ptr) {
            dmm_chain_free(c, b->ptr);
            bl->live -= b->req;
            bl->live_usable -= b->use;
            b->ptr = NULL;
            return 1;
        }
        return 0;
    default:
        return -1;
    }
    b->req = op->size;
    b->use = lean ? 0 : usable_uncounted(c, b->ptr);
    bl->live += b->req;
    bl->live_usable += b->use;
    return 1;
}

static int run_bounded(const dmm_opstream_t *s, const dmm_desc_t *d, const char *name,
                       uint64_t check_every, const dmm_sim_bound_t *b, dmm_sim_result_t *r,
                       dmm_err_t *err);

int dmm_sim_run_bounded(const dmm_opstream_t *s, const dmm_desc_t *d, const char *name,
                        uint64_t check_every, const dmm_sim_bound_t *b, dmm_sim_result_t *r,
                        dmm_err_t *err)
{
    if (!b || !b->pooled)
        return run_bounded(s, d, name, check_every, b, r, err);
    dmm_desc_t e = *d;
    e.pool = 0;
    dmm_sim_bound_t open = { .lean = 1, .fail_limit = b->fail_limit, .stop = b->stop,
                             .deadline = b->deadline };
    if (run_bounded(s, &e, name, 0, &open, r, err) != 0)
        return -1;
    if (r->interrupted || r->over_fail_at || !r->M)
        return 0;   /* what it is: the bounded run would end the same way */
    e.pool = dmm_sim_pool_of(r);
    return run_bounded(s, &e, name, check_every, b, r, err);
}

static int run_bounded(const dmm_opstream_t *s, const dmm_desc_t *d, const char *name,
                       uint64_t check_every, const dmm_sim_bound_t *b, dmm_sim_result_t *r,
                       dmm_err_t *err)
{
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    dmm_chain_t *c = dmm_chain_new(d, DMM_PS_SIM, err);
    if (!c)
        return -1;
    blocks_t bl;
    if (blocks_open(&bl, s->nids) != 0) {
        dmm_chain_delete(c);
        dmm_err_set(err, "out of memory for %u block slots", s->nids);
        return -1;
    }
    /* the least a call costs: one the block cache serves alone, if any */
    const dmm_cost_t one_call = { .ops = 1 }, one_cached = { .cached = 1 };
    uint64_t call_units = dmm_cost_units(&one_call);
    if (d->cache_max && dmm_cost_units(&one_cached) < call_units)
        call_units = dmm_cost_units(&one_cached);
    uint64_t calls_later = b ? b->calls : 0;
    double t0 = dmm_sim_now();
    size_t peak_seen = 0;
    uint64_t before = 0;
    watch_t watch = { CHECK_COST, 0, (size_t)-1 };
    const int lean = b && b->lean;
    int rc = 0;
    size_t i;
    for (i = 0; i < s->nops; i++) {
        const dmm_op_t *op = &s->ops[i];
        int called = op->id < s->nids ? replay_op(c, &bl, op, r, lean) : -1;
        if (called < 0)
            continue;
        r->ops++;
        uint64_t after = dmm_cost_units(&c->cost);
        uint64_t cost = after - before;
        before = after;
        r->hist[bucket(cost)]++;
        if (cost > r->max_op_cost)
            r->max_op_cost = cost;
        if (bl.live > r->peak_live)
            r->peak_live = bl.live;
        if (!lean && c->ps.peak > peak_seen) {
            /* the footprint's new peak: how is it used at this moment? */
            peak_seen = c->ps.peak;
            r->int_frag = (double)(bl.live_usable - bl.live) / (double)peak_seen;
            r->ext_frag = (double)(peak_seen - bl.live_usable) / (double)peak_seen;
        }
        if (check_every && (r->ops % check_every) == 0) {
            size_t v = dmm_chain_check(c);
            if (v && !r->violations)
                dmm_err_set(err, "%s: %zu violations after operation %zu", name, v, i);
            r->violations += v;
        }
        /* what dmm_sim_calls(s, fail_limit == 0) counted */
        if (calls_later && called && (is_call(op) || b->fail_limit == 0))
            calls_later--;
        if (b && bound_reached(b, c, after, calls_later * call_units, r, &watch)) {
            i++;
            break;
        }
    }
    r->complete = i == s->nops;
    uint64_t want = r->ops - r->ops / 1000, seen = 0;   /* 99.9 % of them */
    for (unsigned k = 0; k < DMM_SIM_HIST && r->ops; k++)
        if ((seen += r->hist[k]) >= want) {
            r->p999_op_cost = k + 1 < 64 ? (uint64_t)1 << (k + 1) : UINT64_MAX;
            break;
        }
    if (check_every)
        r->violations += dmm_chain_check(c);
    r->seconds = dmm_sim_now() - t0;
    r->cost = c->cost;
    r->T = dmm_cost_units(&c->cost);
    r->M = c->ps.peak;
    r->map_bytes = dmm_pagesrc_map_bytes(&c->ps);
    r->span = c->ps.narenas ? c->ps.arenas[0].used : 0;
    r->util = r->M ? (double)r->peak_live / (double)r->M : 0;
    r->n = c->n;
    for (int i = 0; i < c->n; i++)
        r->served[i] = c->alloc[i].served;
    r->large_served = c->large_served;
    blocks_close(&bl);
    dmm_chain_delete(c);
    return rc;
}
