/* test_pareto.c - non-dominated sorting, crowding distance, hypervolume and
 * knee (codegen/search/pareto.c) on points whose answers are worked out by
 * hand. */
#include <criterion/criterion.h>

#include <math.h>

#include "codegen/search/pareto.h"

Test(pareto, domination_needs_somewhere_better_and_nowhere_worse)
{
    double a[] = { 1, 2 }, b[] = { 2, 2 }, c[] = { 1, 2 }, d[] = { 0, 3 };
    cr_expect(dmm_pareto_dominates(a, b, 2));
    cr_expect_not(dmm_pareto_dominates(b, a, 2));
    cr_expect_not(dmm_pareto_dominates(a, c, 2), "equal points do not dominate");
    cr_expect_not(dmm_pareto_dominates(a, d, 2));
    cr_expect_not(dmm_pareto_dominates(d, a, 2));
}

Test(pareto, fronts_and_crowding)
{
    /* front 0: (0,4) (1,2) (2,1) (4,0); front 1: (2,3) (3,2); front 2: (4,4);
     * and (1,2) twice */
    double p[] = { 0, 4, 1, 2, 2, 1, 4, 0, 2, 3, 3, 2, 4, 4, 1, 2 };
    int n = 8, front[8];
    double crowd[8];
    cr_assert_eq(dmm_pareto_rank(p, n, 2, front, crowd), 0);
    int want[] = { 0, 0, 0, 0, 1, 1, 2, 0 };
    for (int i = 0; i < n; i++)
        cr_expect_eq(front[i], want[i], "point %d: front %d, want %d", i, front[i], want[i]);
    /* the extremes of a front are infinitely crowded away */
    cr_expect(isinf(crowd[0]) && isinf(crowd[3]));
    cr_expect(isinf(crowd[4]) && isinf(crowd[5]) && isinf(crowd[6]));
    /* (2,1): neighbours in x are (1,2)/(1,2) and (4,0): (4-1)/4; in y
     * (4,0) and (1,2): (2-0)/4 */
    cr_expect_float_eq(crowd[2], 3.0 / 4 + 2.0 / 4, 1e-12);
    /* the crowded comparison: lower front first, then larger distance */
    cr_expect(dmm_pareto_crowded_better(front, crowd, 2, 4));
    cr_expect(dmm_pareto_crowded_better(front, crowd, 0, 2));
    cr_expect_not(dmm_pareto_crowded_better(front, crowd, 6, 5));
}

Test(pareto, hypervolume_in_one_two_and_three_objectives)
{
    double one[] = { 3, 1, 2 }, r1[] = { 4 };
    cr_expect_float_eq(dmm_pareto_hypervolume(one, 3, 1, r1), 3, 1e-12);
    /* two points whose boxes up to (2,2) overlap in [1,2]x[1,2]: 2 + 2 - 1;
     * a dominated point and one beyond the reference add nothing */
    double two[] = { 0, 1, 1, 0, 1.5, 1.5, 3, 0 }, r2[] = { 2, 2 };
    cr_expect_float_eq(dmm_pareto_hypervolume(two, 4, 2, r2), 3, 1e-12);
    /* three objectives: a unit corner cube up to (2,2,2) from (1,1,1) is 1;
     * (0,0,1.5) adds a 2 x 2 x 0.5 slab less what it shares with the cube
     * (1 x 1 x 0.5): 1 + 2 - 0.5 */
    double three[] = { 1, 1, 1, 0, 0, 1.5 }, r3[] = { 2, 2, 2 };
    cr_expect_float_eq(dmm_pareto_hypervolume(three, 1, 3, r3), 1, 1e-12);
    cr_expect_float_eq(dmm_pareto_hypervolume(three, 2, 3, r3), 2.5, 1e-12);
    cr_expect_float_eq(dmm_pareto_hypervolume(three, 0, 3, r3), 0, 1e-12);
    cr_expect_lt(dmm_pareto_hypervolume(three, 2, 4, r3), 0, "four objectives: refused");
}

Test(pareto, the_knee_is_nearest_the_ideal_point)
{
    /* scaled to [0,1] each: (0,1) (0.2,0.3) (1,0): the middle one */
    double p[] = { 0, 10, 2, 3, 10, 0 };
    cr_expect_eq(dmm_pareto_knee(p, 3, 2), 1);
    cr_expect_eq(dmm_pareto_knee(p, 0, 2), -1);
    double flat[] = { 5, 1, 5, 1 };
    cr_expect_eq(dmm_pareto_knee(flat, 2, 2), 0, "ties to the lower index");
}
