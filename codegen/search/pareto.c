/* pareto.c - non-dominated sorting, crowding distance, hypervolume and knee
 * (see pareto.h). */
#include "codegen/search/pareto.h"

#include <math.h>
#include <stdlib.h>

int dmm_pareto_dominates(const double *a, const double *b, int k)
{
    int better = 0;
    for (int j = 0; j < k; j++) {
        if (a[j] > b[j])
            return 0;
        better |= a[j] < b[j];
    }
    return better;
}

typedef struct {
    const double *obj;
    int k, j;
} by_obj_t;

static int cmp_by_obj(const void *x, const void *y, void *arg)
{
    const by_obj_t *c = arg;
    int a = *(const int *)x, b = *(const int *)y;
    double va = c->obj[(size_t)a * c->k + c->j], vb = c->obj[(size_t)b * c->k + c->j];
    if (va != vb)
        return va < vb ? -1 : 1;
    return (a > b) - (a < b);
}

/* Crowding distances of the m points idx[0..m) of one front. */
static void crowding(const double *obj, int k, int *idx, int m, double *crowd)
{
    for (int i = 0; i < m; i++)
        crowd[idx[i]] = 0;
    if (m <= 2) {
        for (int i = 0; i < m; i++)
            crowd[idx[i]] = INFINITY;
        return;
    }
    for (int j = 0; j < k; j++) {
        by_obj_t c = { obj, k, j };
        qsort_r(idx, (size_t)m, sizeof *idx, cmp_by_obj, &c);
        double lo = obj[(size_t)idx[0] * k + j], hi = obj[(size_t)idx[m - 1] * k + j];
        crowd[idx[0]] = crowd[idx[m - 1]] = INFINITY;
        if (!(hi > lo))
            continue;
        for (int i = 1; i + 1 < m; i++)
            if (crowd[idx[i]] != INFINITY)
                crowd[idx[i]] += (obj[(size_t)idx[i + 1] * k + j] -
                                  obj[(size_t)idx[i - 1] * k + j]) / (hi - lo);
    }
}

int dmm_pareto_rank(const double *obj, int n, int k, int *front, double *crowd)
{
    if (n <= 0)
        return 0;
    /* Deb's fast non-dominated sort: how many dominate each point, and
     * whom each dominates */
    int *count = calloc((size_t)n, sizeof *count);
    char *dom = calloc((size_t)n * (size_t)n, 1);   /* dom[i*n+j]: i dominates j */
    int *cur = malloc((size_t)n * sizeof *cur), *nxt = malloc((size_t)n * sizeof *nxt);
    if (!count || !dom || !cur || !nxt) {
        free(count);
        free(dom);
        free(cur);
        free(nxt);
        return -1;
    }
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            const double *a = obj + (size_t)i * k, *b = obj + (size_t)j * k;
            if (dmm_pareto_dominates(a, b, k)) {
                dom[(size_t)i * n + j] = 1;
                count[j]++;
            } else if (dmm_pareto_dominates(b, a, k)) {
                dom[(size_t)j * n + i] = 1;
                count[i]++;
            }
        }
    int m = 0;
    for (int i = 0; i < n; i++)
        if (count[i] == 0)
            cur[m++] = i;
    for (int f = 0; m > 0; f++) {
        int m2 = 0;
        for (int a = 0; a < m; a++) {
            int i = cur[a];
            front[i] = f;
            for (int j = 0; j < n; j++)
                if (dom[(size_t)i * n + j] && --count[j] == 0)
                    nxt[m2++] = j;
        }
        if (crowd)
            crowding(obj, k, cur, m, crowd);
        int *t = cur;
        cur = nxt;
        nxt = t;
        m = m2;
    }
    free(count);
    free(dom);
    free(cur);
    free(nxt);
    return 0;
}

int dmm_pareto_crowded_better(const int *front, const double *crowd, int a, int b)
{
    if (front[a] != front[b])
        return front[a] < front[b];
    return crowd[a] > crowd[b];
}

/* The 2-objective hypervolume of idx[0..m) (by their first two objectives)
 * up to ref; idx is reordered. */
static double hv2(const double *obj, int k, int *idx, int m, const double *ref)
{
    by_obj_t c = { obj, k, 0 };
    qsort_r(idx, (size_t)m, sizeof *idx, cmp_by_obj, &c);
    double hv = 0, y = ref[1];
    for (int i = 0; i < m; i++) {
        const double *p = obj + (size_t)idx[i] * k;
        if (p[0] < ref[0] && p[1] < y) {
            hv += (ref[0] - p[0]) * (y - p[1]);
            y = p[1];
        }
    }
    return hv;
}

double dmm_pareto_hypervolume(const double *obj, int n, int k, const double *ref)
{
    if (k < 1 || k > 3)
        return -1;
    if (k == 1) {
        double best = ref[0];
        for (int i = 0; i < n; i++)
            if (obj[i] < best)
                best = obj[i];
        return ref[0] - best;
    }
    int *idx = malloc((size_t)(n > 0 ? n : 1) * sizeof *idx);
    if (!idx)
        return -1;
    double hv = 0;
    if (k == 2) {
        for (int i = 0; i < n; i++)
            idx[i] = i;
        hv = hv2(obj, k, idx, n, ref);
    } else {
        /* slices along the third objective: between consecutive values of
         * it, the area that the points at or below the slice dominate */
        int *z = malloc((size_t)(n > 0 ? n : 1) * sizeof *z);
        if (!z) {
            free(idx);
            return -1;
        }
        for (int i = 0; i < n; i++)
            z[i] = i;
        by_obj_t c = { obj, k, 2 };
        qsort_r(z, (size_t)n, sizeof *z, cmp_by_obj, &c);
        for (int s = 0; s < n; s++) {
            double lo = obj[(size_t)z[s] * k + 2];
            if (lo >= ref[2])
                break;
            double hi = s + 1 < n ? obj[(size_t)z[s + 1] * k + 2] : ref[2];
            if (hi > ref[2])
                hi = ref[2];
            if (!(hi > lo))
                continue;
            for (int i = 0; i <= s; i++)
                idx[i] = z[i];
            hv += hv2(obj, k, idx, s + 1, ref) * (hi - lo);
        }
        free(z);
    }
    free(idx);
    return hv;
}

int dmm_pareto_knee(const double *obj, int n, int k)
{
    if (n <= 0)
        return -1;
    double lo[DMM_PARETO_MAXOBJ], hi[DMM_PARETO_MAXOBJ];
    for (int j = 0; j < k; j++) {
        lo[j] = hi[j] = obj[j];
        for (int i = 1; i < n; i++) {
            double v = obj[(size_t)i * k + j];
            lo[j] = v < lo[j] ? v : lo[j];
            hi[j] = v > hi[j] ? v : hi[j];
        }
    }
    int best = 0;
    double bd = INFINITY;
    for (int i = 0; i < n; i++) {
        double d = 0;
        for (int j = 0; j < k; j++)
            if (hi[j] > lo[j]) {
                double t = (obj[(size_t)i * k + j] - lo[j]) / (hi[j] - lo[j]);
                d += t * t;
            }
        if (d < bd) {
            bd = d;
            best = i;
        }
    }
    return best;
}
