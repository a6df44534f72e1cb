/* pareto.h - ranking by several objectives at once (NSGA-II, Deb et al.
 * 2002): non-dominated sorting, crowding distance, the hypervolume of a
 * front and its knee.  Pure functions over n points of k objectives each
 * (obj[i * k + j], 1 <= k <= DMM_PARETO_MAXOBJ), every objective minimised.
 *
 * a dominates b when a is nowhere worse and somewhere better.  Fronts: 0
 * holds the points nothing dominates, front f + 1 those that only points
 * of fronts <= f dominate.  Equal points share a front. */
#ifndef DMM_SEARCH_PARETO_H
#define DMM_SEARCH_PARETO_H

#include <stddef.h>

#define DMM_PARETO_MAXOBJ 3

/* 1 when a dominates b. */
int dmm_pareto_dominates(const double *a, const double *b, int k);

/* front[i] for every point (0 = non-dominated), and crowd[i] its crowding
 * distance within its front (the sum over objectives of the gap between
 * its neighbours in that objective, normalised by the front's range in it;
 * a front's extremes in any objective get INFINITY).  crowd may be NULL.
 * 0, or -1 out of memory. */
int dmm_pareto_rank(const double *obj, int n, int k, int *front, double *crowd);

/* The crowded comparison: 1 when point a is preferred to point b (a lower
 * front, or the same front and a larger crowding distance), else 0. */
int dmm_pareto_crowded_better(const int *front, const double *crowd, int a, int b);

/* The hypervolume that the points dominate within the box up to ref (k = 1,
 * 2 or 3; points not below ref in every objective add nothing); -1 for
 * k > 3 or out of memory. */
double dmm_pareto_hypervolume(const double *obj, int n, int k, const double *ref);

/* The knee of a front: the point nearest (Euclidean) to the ideal point
 * (the front's best value in every objective), each objective scaled by the
 * front's range in it; ties to the lower index.  -1 when n = 0. */
int dmm_pareto_knee(const double *obj, int n, int k);

#endif
