/* fitness.c - eq. 1 and the simulation of its references (see fitness.h). */
#include "codegen/search/fitness.h"

#include <stdio.h>
#include <stdlib.h>

#include "allocators/chain/desc.h"
#include "allocators/sim/sim.h"

double dmm_ge_fitness(uint64_t T, size_t M, uint64_t T_KNG, size_t M_LEA)
{
    return dmm_sim_weighted(T, M, T_KNG, M_LEA);
}

int dmm_ge_references(const dmm_opstream_t *s, dmm_ge_ref_t *refs, int n, dmm_err_t *err)
{
    dmm_sim_result_t *r = malloc(sizeof *r);
    if (!r) {
        dmm_err_set(err, "out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        dmm_desc_t d;
        dmm_err_t e;
        if (dmm_desc_load(refs[i].name, &d, &e) != 0 ||
            dmm_sim_run(s, &d, refs[i].name, 0, r, &e) != 0) {
            dmm_err_set(err, "reference %s: %s", refs[i].name, e.msg);
            free(r);
            return -1;
        }
        refs[i].T = r->T;
        refs[i].M = r->M;
        refs[i].W = r->max_op_cost;
        refs[i].P = r->p999_op_cost;
        refs[i].failed = r->failed;
        refs[i].peak_live = r->peak_live;
    }
    free(r);
    return 0;
}
