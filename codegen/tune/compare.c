/* compare.c - medians, changes and the Mann-Whitney U test (see
 * compare.h). */
#include "codegen/tune/compare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

dmm_tune_stat3_t dmm_tune_stat3(const double *v, int n)
{
    dmm_tune_stat3_t s = { 0, 0, 0 };
    if (n <= 0)
        return s;
    double *c = malloc((size_t)n * sizeof *c);
    if (!c)
        return s;
    memcpy(c, v, (size_t)n * sizeof *c);
    qsort(c, (size_t)n, sizeof *c, cmp_double);
    s.min = c[0];
    s.max = c[n - 1];
    s.med = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
    free(c);
    return s;
}

double dmm_tune_pct(double a, double b)
{
    return b > 0 ? 100.0 * (a - b) / b : 0;
}

double dmm_tune_mann_whitney(const double *x, int n, const double *y, int m)
{
    if (n < 1 || m < 1)
        return 1;
    double U = 0;
    int ties = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < m; j++) {
            if (x[i] > y[j])
                U += 1;
            else if (x[i] == y[j]) {
                U += 0.5;
                ties = 1;
            }
        }
    int N = n + m;
    if (ties || n > 60 || m > 60) {
        double *all = malloc((size_t)N * sizeof *all);
        if (!all)
            return 1;
        memcpy(all, x, (size_t)n * sizeof *all);
        memcpy(all + n, y, (size_t)m * sizeof *all);
        qsort(all, (size_t)N, sizeof *all, cmp_double);
        double tsum = 0;
        for (int i = 0; i < N;) {
            int k = i;
            while (k < N && all[k] == all[i])
                k++;
            double t = k - i;
            tsum += t * t * t - t;
            i = k;
        }
        free(all);
        double var = (double)n * m / 12.0 * ((N + 1) - tsum / ((double)N * (N - 1)));
        if (!(var > 0))
            return 1;
        double z = (fabs(U - (double)n * m / 2.0) - 0.5) / sqrt(var);
        if (z < 0)
            z = 0;
        return erfc(z / sqrt(2.0));
    }
    /* f[j][u]: orderings of i values of x and j of y in which u pairs have
     * the x above the y; built up over i. */
    int maxu = n * m;
    size_t w = (size_t)maxu + 1;
    double *f = calloc((size_t)(m + 1) * w, sizeof *f), *g = calloc((size_t)(m + 1) * w, sizeof *g);
    if (!f || !g) {
        free(f);
        free(g);
        return 1;
    }
    for (int j = 0; j <= m; j++)
        f[(size_t)j * w] = 1;
    for (int i = 1; i <= n; i++) {
        memset(g, 0, (size_t)(m + 1) * w * sizeof *g);
        g[0] = 1;
        for (int j = 1; j <= m; j++)
            for (int u = 0; u <= maxu; u++)
                g[(size_t)j * w + (size_t)u] = (u >= j ? f[(size_t)j * w + (size_t)(u - j)] : 0) +
                                               g[(size_t)(j - 1) * w + (size_t)u];
        double *t = f;
        f = g;
        g = t;
    }
    double total = 0, lo = 0, hi = 0;
    int uo = (int)U;
    for (int u = 0; u <= maxu; u++) {
        double c = f[(size_t)m * w + (size_t)u];
        total += c;
        if (u <= uo)
            lo += c;
        if (u >= uo)
            hi += c;
    }
    free(f);
    free(g);
    double p = 2 * (lo < hi ? lo : hi) / total;
    return p > 1 ? 1 : p;
}

int dmm_tune_measurable(double p, double def_med, double tun_med)
{
    if (!(p < 0.05) || fabs(dmm_tune_pct(tun_med, def_med)) < 0.5)
        return 0;
    return tun_med < def_med ? -1 : 1;
}

dmm_tune_cmp_t dmm_tune_compare(const double *def, const double *tun, int n)
{
    dmm_tune_cmp_t c;
    c.def = dmm_tune_stat3(def, n);
    c.tun = dmm_tune_stat3(tun, n);
    c.change_pct = dmm_tune_pct(c.tun.med, c.def.med);
    c.p = dmm_tune_mann_whitney(tun, n, def, n);
    c.measurable = dmm_tune_measurable(c.p, c.def.med, c.tun.med);
    return c;
}
