/* compare.h - two sets of runs compared, the defaults' and the tuned
 * settings': medians and ranges, the change in percent, the Mann-Whitney
 * p-value, and the rule for a change worth reporting.  dmm tune-glibc's
 * final run (replays) and --verify (the real program) both use it, and
 * the scripts read its numbers from their JSON. */
#ifndef DMM_TUNE_COMPARE_H
#define DMM_TUNE_COMPARE_H

typedef struct dmm_tune_stat3 {
    double med, min, max;
} dmm_tune_stat3_t;

/* Median (the mean of the middle two for even n), minimum and maximum of
 * n values; zeros for none. */
dmm_tune_stat3_t dmm_tune_stat3(const double *v, int n);

/* The change from b to a in percent of b (0 when b is not positive). */
double dmm_tune_pct(double a, double b);

/* The two-sided p-value of the Mann-Whitney U test that x (n values) and y
 * (m) come from one distribution: exact (U's distribution over every
 * ordering) without ties, else the normal approximation with the tie
 * correction.  1 when it cannot say. */
double dmm_tune_mann_whitney(const double *x, int n, const double *y, int m);

/* A measurable change: significant at 5 % and the medians 0.5 % or more
 * apart (a shift of one page in 16 MiB can be "significant" and mean
 * nothing).  -1 the tuned median below the defaults', +1 above, 0 none. */
int dmm_tune_measurable(double p, double def_med, double tun_med);

/* One measure of both sides compared. */
typedef struct dmm_tune_cmp {
    dmm_tune_stat3_t def, tun;
    double change_pct;     /* of the tuned median over the defaults' */
    double p;              /* Mann-Whitney, tuned against defaults */
    int    measurable;     /* dmm_tune_measurable */
} dmm_tune_cmp_t;

/* def and tun: n values each. */
dmm_tune_cmp_t dmm_tune_compare(const double *def, const double *tun, int n);

#endif
