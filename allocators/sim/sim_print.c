/* sim_print.c - the simulator's results side by side: a table for people
 * or one JSON object for programs (see sim.h).  Both read the same table
 * of rows, so they cannot drift apart. */
#include "allocators/sim/sim.h"

#include <stddef.h>
#include <string.h>

#include "tracer/base/json.h"

typedef struct col {
    const char *label;
    int kind;   /* 0 u64, 1 bytes, 2 ratio %, 3 ops/s */
    size_t off;
} col_t;

_Static_assert(sizeof(size_t) == sizeof(uint64_t), "counters are read as 8 bytes");
#define U64(f) offsetof(dmm_sim_result_t, f)
static const col_t rows[] = {
    { "T (cost units)", 0, U64(T) },
    { "M (peak footprint, bytes)", 1, U64(M) },
    { "page-map bytes (of M)", 1, U64(map_bytes) },
    { "address span (bytes)", 1, U64(span) },
    { "peak live requested (bytes)", 1, U64(peak_live) },
    { "utilisation (peak live / M)", 2, U64(util) },
    { "internal frag. at peak (/M)", 2, U64(int_frag) },
    { "external frag. at peak (/M)", 2, U64(ext_frag) },
    { "operations", 0, U64(ops) },
    { "failed", 0, U64(failed) },
    { "free-list nodes visited", 0, U64(cost.nodes) },
    { "header reads", 0, U64(cost.hdr_reads) },
    { "header writes", 0, U64(cost.hdr_writes) },
    { "splits", 0, U64(cost.splits) },
    { "coalesces", 0, U64(cost.coalesces) },
    { "page-source calls", 0, U64(cost.pagesrc_calls) },
    { "bytes copied by realloc", 1, U64(cost.copied) },
    { "size-class lookup steps", 0, U64(cost.lookups) },
    { "fresh pages", 0, U64(cost.pages) },
    { "page-source system calls", 0, U64(cost.syscalls) },
    { "calls served by the cache", 0, U64(cost.cached) },
    { "largest single-op cost", 0, U64(max_op_cost) },
    { "p99.9 single-op cost (under)", 0, U64(p999_op_cost) },
    { "fallback-path requests", 0, U64(large_served) },
    { "check violations", 0, U64(violations) },
};
/* Only with --time: the rest of the output is the same on every run. */
static const col_t speed_row = { "simulated ops/s", 3, U64(seconds) };
/* Only with a fitted pool (dmm sim --fit-pool). */
static const col_t pool_row = { "pool keeping M (bytes)", 1, U64(pool_fit) };

static void cell(const dmm_sim_result_t *r, const col_t *c, char *buf, size_t n)
{
    const char *base = (const char *)r;
    switch (c->kind) {
    case 0: case 1: {
        uint64_t v;   /* size_t and uint64_t fields alike: 8 bytes */
        memcpy(&v, base + c->off, sizeof v);
        snprintf(buf, n, "%llu", (unsigned long long)v);
        break;
    }
    case 2: {
        double v;
        memcpy(&v, base + c->off, sizeof v);
        snprintf(buf, n, "%.2f%%", v * 100);
        break;
    }
    case 3:
        snprintf(buf, n, "%.2fM", r->seconds > 0 ? (double)r->ops / r->seconds / 1e6 : 0);
        break;
    }
}

static void json_key(const char *label, char *out, size_t n)
{
    size_t k = 0;
    for (const char *p = label; *p && k + 1 < n; p++) {
        if (*p == '(')
            break;
        char ch = *p;
        if (ch >= 'A' && ch <= 'Z')
            ch = (char)(ch - 'A' + 'a');
        if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9'))
            out[k++] = ch;
        else if (k && out[k - 1] != '_')
            out[k++] = '_';
    }
    while (k && out[k - 1] == '_')
        k--;
    out[k] = 0;
}

void dmm_sim_print_table(FILE *f, const dmm_sim_result_t *res, int n, const dmm_desc_t *descs,
                         int flags)
{
    fprintf(f, "%-30s", "");
    for (int i = 0; i < n; i++)
        fprintf(f, " %16.16s", res[i].name);
    fprintf(f, "\n");
    size_t nrows = sizeof rows / sizeof rows[0];
    for (size_t k = 0; k < nrows + 2; k++) {
        const col_t *c = k < nrows ? &rows[k] : k == nrows ? &speed_row : &pool_row;
        if ((c == &speed_row && !(flags & DMM_SIM_PRINT_TIMED)) ||
            (c == &pool_row && !(flags & DMM_SIM_PRINT_POOL)))
            continue;
        fprintf(f, "%-30s", c->label);
        for (int i = 0; i < n; i++) {
            char b[64];
            cell(&res[i], c, b, sizeof b);
            fprintf(f, " %16s", b);
        }
        fprintf(f, "\n");
    }
    fprintf(f, "\nRequests served, per allocator of each chain\n");
    for (int i = 0; i < n; i++) {
        uint64_t total = res[i].large_served;
        for (int j = 0; j < res[i].n; j++)
            total += res[i].served[j];
        fprintf(f, "  %s\n", res[i].name);
        for (int j = 0; j < res[i].n; j++) {
            char line[256];
            dmm_desc_print_line(&descs[i].a[j], line, sizeof line);
            fprintf(f, "    %12llu %6.2f%%  %s\n", (unsigned long long)res[i].served[j],
                   total ? 100.0 * (double)res[i].served[j] / (double)total : 0, line);
        }
        fprintf(f, "    %12llu %6.2f%%  fallback path (outside every range, or aligned > 16)\n",
               (unsigned long long)res[i].large_served,
               total ? 100.0 * (double)res[i].large_served / (double)total : 0);
    }
    fprintf(f, "\nOperations by cost (units per operation)\n%-30s", "");
    for (int i = 0; i < n; i++)
        fprintf(f, " %16.16s", res[i].name);
    fprintf(f, "\n");
    int top = 0;
    for (int i = 0; i < n; i++)
        for (int b = 0; b < DMM_SIM_HIST; b++)
            if (res[i].hist[b] && b > top)
                top = b;
    for (int b = 0; b <= top; b++) {
        char label[64];
        snprintf(label, sizeof label, "%llu-%llu", b ? 1ull << b : 0ull, (2ull << b) - 1);
        fprintf(f, "%-30s", label);
        for (int i = 0; i < n; i++)
            fprintf(f, " %16llu", (unsigned long long)res[i].hist[b]);
        fprintf(f, "\n");
    }
}

/* The description's fields beside its canonical line, so that programs need
 * not parse .dmm text: lists only where the line has it (0 = the class's
 * default), hi null for an unbounded range. */
static void json_alloc(dmm_json_t *j, const dmm_alloc_desc_t *a, uint64_t served)
{
    char line[256];
    dmm_desc_print_line(a, line, sizeof line);
    dmm_json_obj(j, NULL);
    dmm_json_string(j, "line", line);
    dmm_json_u64(j, "served", served);
    dmm_json_string(j, "class", dmm_class_name(a->cls));
    dmm_json_string(j, "paper_class", dmm_class_paper_name(a->cls));
    dmm_json_u64(j, "lo", a->lo);
    if (a->hi == DMM_SIZE_INF)
        dmm_json_null(j, "hi");
    else
        dmm_json_u64(j, "hi", a->hi);
    dmm_json_bool(j, "split", a->split);
    dmm_json_bool(j, "coalesce", a->coalesce);
    dmm_json_string(j, "list", dmm_desc_list_name(a->list));
    dmm_json_string(j, "fit", dmm_desc_fit_name(a->fit));
    dmm_json_string(j, "order", dmm_desc_order_name(a->order));
    if (a->lists)
        dmm_json_u64(j, "lists", a->lists);
    dmm_json_close_obj(j);
}

static void json_cell(dmm_json_t *j, const char *key, const dmm_sim_result_t *r, const col_t *c)
{
    const char *base = (const char *)r;
    uint64_t u;
    double v;
    switch (c->kind) {
    case 0: case 1:
        memcpy(&u, base + c->off, sizeof u);   /* size_t and uint64_t fields alike */
        dmm_json_u64(j, key, u);
        break;
    case 2:
        memcpy(&v, base + c->off, sizeof v);
        dmm_json_num(j, key, "%.6f", v);
        break;
    case 3:
        dmm_json_num(j, key, "%.0f", r->seconds > 0 ? (double)r->ops / r->seconds : 0);
        break;
    }
}

void dmm_sim_print_json(FILE *f, const dmm_sim_result_t *res, int n, const dmm_desc_t *descs,
                        const char *trace, int flags)
{
    dmm_json_t j;
    dmm_json_begin(&j, f, 1);
    dmm_json_string(&j, "trace", trace);
    dmm_json_arr(&j, "cost_model");
    for (int w = 0; w < DMM_COST_NWEIGHTS; w++) {
        dmm_json_obj(&j, NULL);
        dmm_json_string(&j, "counter", dmm_cost_weights[w].key);
        dmm_json_string(&j, "step", dmm_cost_weights[w].step);
        dmm_json_num(&j, "weight", "%g", dmm_cost_weights[w].weight);
        dmm_json_close_obj(&j);
    }
    dmm_json_close_arr(&j);
    dmm_json_arr(&j, "dmms");
    for (int i = 0; i < n; i++) {
        dmm_json_obj(&j, NULL);
        dmm_json_string(&j, "name", res[i].name);
        dmm_json_string(&j, "title", descs[i].title);
        for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
            char key[64];
            json_key(rows[k].label, key, sizeof key);
            json_cell(&j, key, &res[i], &rows[k]);
        }
        /* the calls the chain served, as T counts them (cost_model's "calls") */
        dmm_json_u64(&j, "calls", res[i].cost.ops);
        if (flags & DMM_SIM_PRINT_TIMED)
            json_cell(&j, "simulated_ops_per_s", &res[i], &speed_row);
        if (flags & DMM_SIM_PRINT_POOL)
            json_cell(&j, "pool_keeping_m", &res[i], &pool_row);
        dmm_json_arr(&j, "allocators");
        for (int a = 0; a < res[i].n; a++)
            json_alloc(&j, &descs[i].a[a], res[i].served[a]);
        dmm_json_close_arr(&j);
        dmm_json_u64(&j, "fallback_served", res[i].large_served);
        dmm_json_arr_flat(&j, "cost_histogram");
        for (int b = 0; b < DMM_SIM_HIST; b++)
            dmm_json_u64(&j, NULL, res[i].hist[b]);
        dmm_json_close_arr(&j);
        dmm_json_close_obj(&j);
    }
    dmm_json_close_arr(&j);
    dmm_json_end(&j);
}
