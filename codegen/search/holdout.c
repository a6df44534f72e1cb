/* holdout.c - the search's best design scored on every trace of a run, the
 * ones it saw and the ones held out (evolve.h: dmm_evolve_score), and the
 * table of it (traces.csv). */
#include "codegen/search/evolve.h"

#include <stdlib.h>
#include <string.h>

#include "allocators/sim/sim.h"

/* The best on stream s (presets refs), into sc. */
static int score_one(const dmm_desc_t *best, const char *name, int holdout,
                     const dmm_opstream_t *s, const dmm_ge_ref_t *refs, dmm_sim_result_t *r,
                     dmm_evolve_score_t *sc, dmm_err_t *err)
{
    dmm_err_t e;
    if (dmm_sim_run(s, best, "best", 0, r, &e) != 0)
        return dmm_err_set(err, "%s: the best design: %s", name, e.msg);
    const dmm_ge_ref_t *kng = &refs[0], *lea = &refs[1];
    *sc = (dmm_evolve_score_t){
        .name = name, .holdout = holdout, .ops = s->nops, .T = r->T, .T_KNG = kng->T,
        .failed = r->failed, .M = r->M, .M_LEA = lea->M,
        .F = dmm_ge_fitness(r->T, r->M, kng->T, lea->M),
    };
    sc->F_preset = DMM_GE_WORST;
    for (int i = 0; i < DMM_DESC_NPRESETS; i++) {
        double f = dmm_ge_fitness(refs[i].T, refs[i].M, kng->T, lea->M);
        if (f < sc->F_preset) {
            sc->F_preset = f;
            sc->preset = refs[i].name;
        }
    }
    return 0;
}

int dmm_evolve_score(dmm_evolve_t *ev, dmm_err_t *err)
{
    ev->nscore = 0;
    if (!ev->r.found)
        return 0;
    dmm_sim_result_t *r = malloc(sizeof *r);
    if (!r)
        return dmm_err_set(err, "out of memory");
    int rc = score_one(&ev->r.best, ev->name, 0, &ev->s, ev->refs, r, &ev->score[0], err);
    for (int k = 0; rc == 0 && k < ev->nmore; k++) {
        const dmm_evolve_trace_t *t = &ev->more[k];
        rc = score_one(&ev->r.best, t->name, t->holdout, &t->s, t->refs, r, &ev->score[k + 1],
                       err);
    }
    free(r);
    if (rc == 0)
        ev->nscore = ev->nmore + 1;
    return rc;
}

void dmm_evolve_put_traces(FILE *f, const dmm_evolve_t *ev)
{
    fprintf(f, "trace,role,operations,T,M,F,T_KNG,M_LEA,failed,best_preset,F_best_preset\n");
    for (int i = 0; i < ev->nscore; i++) {
        const dmm_evolve_score_t *sc = &ev->score[i];
        fprintf(f, "%s,%s,%llu,%llu,%zu,%.9f,%llu,%zu,%llu,%s,%.9f\n", sc->name,
                sc->holdout ? "holdout" : "seen", (unsigned long long)sc->ops,
                (unsigned long long)sc->T, sc->M, sc->F, (unsigned long long)sc->T_KNG, sc->M_LEA,
                (unsigned long long)sc->failed, sc->preset ? sc->preset : "", sc->F_preset);
    }
}
