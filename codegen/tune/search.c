/* search.c - the GE engine run with settings for phenotypes (see
 * search.h): phenotypes are keyed by their canonical text, so that one
 * set of settings is measured once whatever genome spelled it. */
#include "codegen/tune/search.h"

#include <string.h>

typedef struct search_ctx {
    int fold_arena;
    dmm_tune_fitness_fn fitness;
    void *arg;
} search_ctx_t;

static int canon_cb(const char *ph, char *key, size_t cap, void *arg)
{
    const search_ctx_t *c = arg;
    dmm_tunables_t t;
    dmm_err_t err;
    if (dmm_tunables_parse(ph, &t, &err) != 0)
        return -1;
    if (c->fold_arena)
        t.v[DMM_TUNE_ARENA_MAX] = DMM_TUNE_DEFAULT;
    return dmm_tunables_format(&t, key, cap) < cap ? 0 : -1;
}

static double fitness_cb(const char *key, uint64_t *T, size_t *M, void *arg)
{
    const search_ctx_t *c = arg;
    dmm_tunables_t t;
    dmm_err_t err;
    if (dmm_tunables_parse(key, &t, &err) != 0)
        return DMM_GE_WORST;
    return c->fitness(&t, T, M, c->arg);
}

void dmm_tune_config_default(dmm_ge_config_t *cfg)
{
    dmm_ge_config_default(cfg);
    cfg->pop = 12;
    cfg->elite = 2;
    cfg->gens = 8;
    cfg->pmut = 0.15;
    cfg->length = 8;
    cfg->wraps = 2;
    cfg->jobs = 1;
}

int dmm_tune_search(const dmm_ge_config_t *cfg, const dmm_grammar_t *g, int fold_arena,
                    dmm_tune_fitness_fn fitness, void *arg, dmm_tune_result_t *r, dmm_err_t *err)
{
    memset(r, 0, sizeof *r);
    search_ctx_t ctx = { fold_arena, fitness, arg };
    dmm_ge_custom_t custom = { canon_cb, fitness_cb, &ctx };
    dmm_ge_config_t c = *cfg;
    c.custom = &custom;
    if (dmm_ge_run(&c, g, NULL, &r->ge, err) != 0)
        return -1;
    if (r->ge.found && r->ge.best_key &&
        dmm_tunables_parse(r->ge.best_key, &r->best, err) == 0) {
        r->found = 1;
        r->F = r->ge.F;
    }
    return 0;
}

void dmm_tune_result_free(dmm_tune_result_t *r)
{
    dmm_ge_result_free(&r->ge);
}

int dmm_tune_prune(dmm_tunables_t *t, double tol, dmm_tune_fitness_fn fitness, void *arg)
{
    int mask = 0;
    for (int i = 0; i < DMM_TUNE_N; i++) {
        if (t->v[i] == DMM_TUNE_DEFAULT)
            continue;
        dmm_tunables_t without = *t;
        without.v[i] = DMM_TUNE_DEFAULT;
        uint64_t T;
        size_t M;
        double f_with = fitness(t, &T, &M, arg);
        double f_without = fitness(&without, &T, &M, arg);
        if (f_without < DMM_GE_WORST && (f_with >= DMM_GE_WORST || f_without <= f_with + tol)) {
            *t = without;
            mask |= 1 << i;
        }
    }
    return mask;
}
