/* test_order.c - the order of a generation's simulations: longest expected
 * first, from what each allocator line's last replay took. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>

#include "codegen/search/order.h"

static const char a[] = "sss range=(0,64] split=no coalesce=no list=sll fit=first order=lifo\n";
static const char b[] = "lea range=(64,inf] split=no coalesce=no list=sll fit=first order=fifo\n";

Test(order, a_dmm_is_expected_to_take_as_long_as_its_slowest_line)
{
    dmm_ge_times_t t = DMM_GE_TIMES_INIT;
    char ab[256];
    snprintf(ab, sizeof ab, "# dmm 1 title\n%s%s", a, b);
    cr_expect(isinf(dmm_ge_times_expect(&t, ab)), "never seen: the slowest of all");
    cr_assert_eq(dmm_ge_times_note(&t, a, 0.5), 0);
    cr_expect(isinf(dmm_ge_times_expect(&t, ab)), "one line never seen");
    cr_assert_eq(dmm_ge_times_note(&t, b, 2.0), 0);
    cr_expect_float_eq(dmm_ge_times_expect(&t, a), 0.5, 1e-6);
    cr_expect_float_eq(dmm_ge_times_expect(&t, ab), 2.0, 1e-6);
    /* the last replay counts */
    cr_assert_eq(dmm_ge_times_note(&t, ab, 0.25), 0);
    cr_expect_float_eq(dmm_ge_times_expect(&t, b), 0.25, 1e-6);
    cr_expect_float_eq(dmm_ge_times_expect(&t, a), 0.25, 1e-6);
    dmm_ge_times_free(&t);
}

Test(order, longest_first_and_equal_ones_in_their_order)
{
    int work[] = { 4, 7, 9, 11, 12, 20 };
    double expect[] = { 0.1, HUGE_VAL, 0.3, 0.1, 2.0, HUGE_VAL };
    dmm_ge_order(work, expect, 6);
    int want[] = { 7, 20, 12, 9, 4, 11 };
    for (int i = 0; i < 6; i++)
        cr_expect_eq(work[i], want[i], "position %d: %d, not %d", i, work[i], want[i]);
    for (int i = 1; i < 6; i++)
        cr_expect_geq(expect[i - 1], expect[i]);
    dmm_ge_order(work, expect, 0);
}
