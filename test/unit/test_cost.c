/* test_cost.c - the cost model: T is the weighted sum of the counters, with
 * the weights of the table that dmm sim --json prints for reports and fits,
 * and every counter of that table is one dmm sim prints. */
#include <criterion/criterion.h>

#include <string.h>

#include "allocators/core/cost.h"

Test(cost, each_counter_costs_its_weight_in_the_table)
{
    for (int w = 0; w < DMM_COST_NWEIGHTS; w++) {
        dmm_cost_t c;
        memset(&c, 0, sizeof c);
        *(uint64_t *)((char *)&c + dmm_cost_weights[w].off) = 1000;
        cr_expect_eq(dmm_cost_units(&c), (uint64_t)(1000 * dmm_cost_weights[w].weight),
                     "%s: %llu units for 1000, table weight %g", dmm_cost_weights[w].key,
                     (unsigned long long)dmm_cost_units(&c), dmm_cost_weights[w].weight);
    }
}

Test(cost, the_table_covers_every_counter_once)
{
    cr_expect_eq(sizeof(dmm_cost_t), DMM_COST_NWEIGHTS * sizeof(uint64_t));
    for (int a = 0; a < DMM_COST_NWEIGHTS; a++)
        for (int b = a + 1; b < DMM_COST_NWEIGHTS; b++)
            cr_expect_neq(dmm_cost_weights[a].off, dmm_cost_weights[b].off);
}

Test(cost, the_sum_of_every_counter)
{
    dmm_cost_t c = { .ops = 1, .nodes = 2, .hdr_reads = 3, .hdr_writes = 4, .splits = 5,
                     .coalesces = 6, .pagesrc_calls = 7, .copied = 11, .lookups = 8,
                     .pages = 9, .syscalls = 10 };
    cr_expect_eq(dmm_cost_units(&c), 20 + 2 + 9 + 12 + 50 + 60 + 350 + 2 + 40 + 18900 + 10000);
}
