/* test_cost.c - the cost model: T is the weighted sum of the counters, with
 * the weights of the table that dmm sim --json prints for reports and fits
 * (cost_model), and every counter of that table is one dmm sim prints, so
 * that a report can sum T again from the JSON alone. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocators/core/cost.h"
#include "test/lib/rundmm.h"
#include "tracer/base/file.h"
#include "tracer/base/jsonread.h"

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
                     .pages = 9, .syscalls = 10, .cached = 12 };
    cr_expect_eq(dmm_cost_units(&c),
                 20 + 2 + 9 + 12 + 50 + 60 + 350 + 2 + 40 + 18900 + 10000 + 120);
}

/* dmm sim --json prints the table as cost_model, and every counter it
 * names is a number of each DMM whose weighted sum is that DMM's T. */
Test(cost, dmm_sim_prints_the_model_its_t_is_the_sum_of)
{
    char dir[] = "/tmp/dmm-cost-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char rep[300], err[2048];
    snprintf(rep, sizeof rep, "%s/t.rep", dir);
    FILE *f = fopen(rep, "w");
    cr_assert_not_null(f);
    fputs("0\n4\n9\n1\na 0 24\na 1 5000\nr 0 700\na 2 100000\nf 1\na 3 24\nf 0\nf 2\nf 3\n", f);
    fclose(f);
    char *args[] = { "dmm", "sim", "--all", "--json", rep, NULL };
    cr_assert_eq(run_dmm(dir, args, err, sizeof err), 0, "%s", err);
    char out[300];
    snprintf(out, sizeof out, "%s/stdout", dir);
    uint8_t *text;
    size_t len;
    dmm_err_t e;
    cr_assert_eq(dmm_read_file(out, &text, &len, &e), 0, "%s", e.msg);
    dmm_jsonread_t j;
    cr_assert_eq(dmm_jsonread_parse(&j, (const char *)text, len, &e), 0, "%s", e.msg);
    cr_assert_eq(dmm_jsonread_count(&j, "cost_model"), DMM_COST_NWEIGHTS);
    long n = dmm_jsonread_count(&j, "dmms");
    cr_assert_eq(n, 5);
    for (long d = 0; d < n; d++) {
        double t, sum = 0;
        char path[128];
        snprintf(path, sizeof path, "dmms.%ld.t", d);
        cr_assert_eq(dmm_jsonread_num(&j, path, &t), 0);
        for (int w = 0; w < DMM_COST_NWEIGHTS; w++) {
            char key[64];
            double weight, count;
            snprintf(path, sizeof path, "cost_model.%d.counter", w);
            cr_assert_geq(dmm_jsonread_str(&j, path, key, sizeof key), 0);
            cr_expect_str_eq(key, dmm_cost_weights[w].key);
            snprintf(path, sizeof path, "cost_model.%d.weight", w);
            cr_assert_eq(dmm_jsonread_num(&j, path, &weight), 0);
            snprintf(path, sizeof path, "dmms.%ld.%s", d, key);
            cr_assert_eq(dmm_jsonread_num(&j, path, &count), 0, "no %s in dmms", key);
            sum += weight < 1 ? (double)((uint64_t)count / (uint64_t)(1 / weight + 0.5))
                              : weight * count;
        }
        cr_expect_eq((uint64_t)sum, (uint64_t)t, "DMM %ld: sum %.0f, t %.0f", d, sum, t);
    }
    dmm_jsonread_free(&j);
    free(text);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
}
