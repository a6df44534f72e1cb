/* sim.c - replay an operation stream through a simulated chain, and the
 * `dmm sim` command. */
#include "allocators/sim/sim.h"
#include "tracer/stats/stats.h"
#include "tracer/base/json.h"
#include "tracer/format/load.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static unsigned bucket(uint64_t v)
{
    unsigned b = 0;
    while (v > 1 && b < DMM_SIM_HIST - 1) {
        v >>= 1;
        b++;
    }
    return b;
}

/* usable() of a block, without counting its cost: it is the simulator's
 * measurement, not the program's work. */
static size_t usable_uncounted(dmm_chain_t *c, void *p)
{
    dmm_cost_t saved = c->cost;
    size_t u = dmm_chain_usable(c, p);
    c->cost = saved;
    return u;
}

int dmm_sim_run(const dmm_opstream_t *s, const dmm_desc_t *d, const char *name,
                uint64_t check_every, dmm_sim_result_t *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    dmm_chain_t *c = dmm_chain_new(d, DMM_PS_SIM, err, errlen);
    if (!c)
        return -1;
    void **ptr = calloc(s->nids ? s->nids : 1, sizeof *ptr);
    size_t *req = calloc(s->nids ? s->nids : 1, sizeof *req);
    size_t *use = calloc(s->nids ? s->nids : 1, sizeof *use);
    if (!ptr || !req || !use) {
        free(ptr);
        free(req);
        free(use);
        dmm_chain_delete(c);
        snprintf(err, errlen, "out of memory for %u block slots", s->nids);
        return -1;
    }
    double t0 = now();
    size_t live = 0, live_usable = 0, peak_seen = 0;
    uint64_t before = 0;
    int rc = 0;
    for (size_t i = 0; i < s->nops; i++) {
        const dmm_op_t *op = &s->ops[i];
        uint32_t id = op->id;
        if (id >= s->nids)
            continue;
        switch (op->kind) {
        case DMM_OP_ALLOC: {
            void *p = op->align_log2 > 4
                          ? dmm_chain_memalign(c, (size_t)1 << op->align_log2, op->size)
                          : dmm_chain_malloc(c, op->size);
            if (!p) {
                r->failed++;
                break;
            }
            ptr[id] = p;
            req[id] = op->size;
            use[id] = usable_uncounted(c, p);
            live += req[id];
            live_usable += use[id];
            break;
        }
        case DMM_OP_REALLOC: {
            if (!ptr[id]) {   /* its allocation failed: treat as a new one */
                void *p = dmm_chain_malloc(c, op->size);
                if (!p) {
                    r->failed++;
                    break;
                }
                ptr[id] = p;
            } else {
                void *p = dmm_chain_realloc(c, ptr[id], op->size ? op->size : 1);
                if (!p) {
                    r->failed++;
                    break;
                }
                live -= req[id];
                live_usable -= use[id];
                ptr[id] = p;
            }
            req[id] = op->size;
            use[id] = usable_uncounted(c, ptr[id]);
            live += req[id];
            live_usable += use[id];
            break;
        }
        case DMM_OP_FREE:
            if (ptr[id]) {
                dmm_chain_free(c, ptr[id]);
                live -= req[id];
                live_usable -= use[id];
                ptr[id] = NULL;
            }
            break;
        default:
            continue;
        }
        r->ops++;
        uint64_t after = dmm_cost_units(&c->cost);
        uint64_t cost = after - before;
        before = after;
        r->hist[bucket(cost)]++;
        if (cost > r->max_op_cost)
            r->max_op_cost = cost;
        if (live > r->peak_live)
            r->peak_live = live;
        if (c->ps.peak > peak_seen) {
            /* the footprint's new peak: how is it used at this moment? */
            peak_seen = c->ps.peak;
            r->int_frag = peak_seen ? (double)(live_usable - live) / (double)peak_seen : 0;
            r->ext_frag = peak_seen ? (double)(peak_seen - live_usable) / (double)peak_seen : 0;
        }
        if (check_every && (r->ops % check_every) == 0) {
            size_t v = dmm_chain_check(c);
            if (v && !r->violations)
                snprintf(err, errlen, "%s: %zu violations after operation %zu", name, v, i);
            r->violations += v;
        }
    }
    if (check_every)
        r->violations += dmm_chain_check(c);
    r->seconds = now() - t0;
    r->cost = c->cost;
    r->T = dmm_cost_units(&c->cost);
    r->M = c->ps.peak;
    r->util = r->M ? (double)r->peak_live / (double)r->M : 0;
    r->n = c->n;
    for (int i = 0; i < c->n; i++)
        r->served[i] = c->alloc[i].served;
    r->large_served = c->large_served;
    free(ptr);
    free(req);
    free(use);
    dmm_chain_delete(c);
    return rc;
}

/* ---- dmm sim ----------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: dmm sim [--dmm FILE|PRESET]... [--all] [--json] [--check N] [--time] TRACE\n"
            "  Replay TRACE (any format dmm reads) through each DMM, simulated, and print\n"
            "  T (counted cost), M (peak footprint) and what lies behind them.\n"
            "  --dmm X     a .dmm file or a preset: kng, lea, fib, s10, exa (repeatable)\n"
            "  --all       the five presets, then the --dmm ones, side by side\n"
            "  --json      one JSON object instead of the table\n"
            "  --check N   run every allocator's check() every N operations\n"
            "  --time      also print simulated operations per second (varies by run)\n");
}

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
    { "largest single-op cost", 0, U64(max_op_cost) },
    { "fallback-path requests", 0, U64(large_served) },
    { "check violations", 0, U64(violations) },
};
/* Only with --time: the rest of the output is the same on every run. */
static const col_t speed_row = { "simulated ops/s", 3, U64(seconds) };

static void cell(const dmm_sim_result_t *r, const col_t *c, char *buf, size_t n, int json)
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
        snprintf(buf, n, json ? "%.6f" : "%.2f%%", json ? v : v * 100);
        break;
    }
    case 3:
        snprintf(buf, n, json ? "%.0f" : "%.2fM", r->seconds > 0
                 ? (double)r->ops / r->seconds / (json ? 1 : 1e6) : 0);
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

static void print_table(const dmm_sim_result_t *res, int n, const dmm_desc_t *descs, int timed)
{
    printf("%-30s", "");
    for (int i = 0; i < n; i++)
        printf(" %16.16s", res[i].name);
    printf("\n");
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
        printf("%-30s", rows[k].label);
        for (int i = 0; i < n; i++) {
            char b[64];
            cell(&res[i], &rows[k], b, sizeof b, 0);
            printf(" %16s", b);
        }
        printf("\n");
    }
    if (timed) {
        printf("%-30s", speed_row.label);
        for (int i = 0; i < n; i++) {
            char b[64];
            cell(&res[i], &speed_row, b, sizeof b, 0);
            printf(" %16s", b);
        }
        printf("\n");
    }
    printf("\nRequests served, per allocator of each chain\n");
    for (int i = 0; i < n; i++) {
        uint64_t total = res[i].large_served;
        for (int j = 0; j < res[i].n; j++)
            total += res[i].served[j];
        printf("  %s\n", res[i].name);
        for (int j = 0; j < res[i].n; j++) {
            char line[256];
            dmm_desc_print_line(&descs[i].a[j], line, sizeof line);
            printf("    %12llu %6.2f%%  %s\n", (unsigned long long)res[i].served[j],
                   total ? 100.0 * (double)res[i].served[j] / (double)total : 0, line);
        }
        printf("    %12llu %6.2f%%  fallback path (outside every range, or aligned > 16)\n",
               (unsigned long long)res[i].large_served,
               total ? 100.0 * (double)res[i].large_served / (double)total : 0);
    }
    printf("\nOperations by cost (units per operation)\n%-30s", "");
    for (int i = 0; i < n; i++)
        printf(" %16.16s", res[i].name);
    printf("\n");
    int top = 0;
    for (int i = 0; i < n; i++)
        for (int b = 0; b < DMM_SIM_HIST; b++)
            if (res[i].hist[b] && b > top)
                top = b;
    for (int b = 0; b <= top; b++) {
        char label[64];
        snprintf(label, sizeof label, "%llu-%llu", b ? 1ull << b : 0ull, (2ull << b) - 1);
        printf("%-30s", label);
        for (int i = 0; i < n; i++)
            printf(" %16llu", (unsigned long long)res[i].hist[b]);
        printf("\n");
    }
}

static void print_json(const dmm_sim_result_t *res, int n, const dmm_desc_t *descs,
                       const char *trace, int timed)
{
    printf("{\"trace\": ");
    dmm_json_str(stdout, trace);
    printf(", \"dmms\": [");
    for (int i = 0; i < n; i++) {
        printf("%s\n  {\"name\": ", i ? "," : "");
        dmm_json_str(stdout, res[i].name);
        for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
            char key[64], b[64];
            json_key(rows[k].label, key, sizeof key);
            cell(&res[i], &rows[k], b, sizeof b, 1);
            printf(", \"%s\": %s", key, b);
        }
        if (timed) {
            char b[64];
            cell(&res[i], &speed_row, b, sizeof b, 1);
            printf(", \"simulated_ops_per_s\": %s", b);
        }
        printf(", \"allocators\": [");
        for (int j = 0; j < res[i].n; j++) {
            char line[256];
            dmm_desc_print_line(&descs[i].a[j], line, sizeof line);
            printf("%s{\"line\": \"%s\", \"served\": %llu}", j ? ", " : "", line,
                   (unsigned long long)res[i].served[j]);
        }
        printf("], \"fallback_served\": %llu, \"cost_histogram\": [",
               (unsigned long long)res[i].large_served);
        for (int b = 0; b < DMM_SIM_HIST; b++)
            printf("%s%llu", b ? ", " : "", (unsigned long long)res[i].hist[b]);
        printf("]}");
    }
    printf("\n]}\n");
}

int dmm_sim_main(int argc, char **argv)
{
    const char *names[DMM_DESC_MAX];
    int nnames = 0, all = 0, json = 0, timed = 0;
    uint64_t check = 0;
    const char *trace = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--dmm") && i + 1 < argc) {
            if (nnames == DMM_DESC_MAX - 5) {
                fprintf(stderr, "dmm sim: too many --dmm\n");
                return 1;
            }
            names[nnames++] = argv[++i];
        } else if (!strcmp(argv[i], "--all")) {
            all = 1;
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "--time")) {
            timed = 1;
        } else if (!strcmp(argv[i], "--check") && i + 1 < argc) {
            char *end;
            check = strtoull(argv[++i], &end, 10);
            if (*end || !check) {
                fprintf(stderr, "dmm sim: --check needs a positive count\n");
                return 1;
            }
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "dmm sim: unknown option %s\n", argv[i]);
            usage(stderr);
            return 1;
        } else if (!trace) {
            trace = argv[i];
        } else {
            usage(stderr);
            return 1;
        }
    }
    if (!trace || (!nnames && !all)) {
        usage(stderr);
        return 1;
    }
    const char *list[DMM_DESC_MAX];
    int n = 0;
    static const char *const presets[] = { "kng", "lea", "fib", "s10", "exa" };
    if (all)
        for (int i = 0; i < 5; i++)
            list[n++] = presets[i];
    for (int i = 0; i < nnames; i++)
        list[n++] = names[i];

    dmm_desc_t *descs = calloc((size_t)n, sizeof *descs);
    dmm_sim_result_t *res = calloc((size_t)n, sizeof *res);
    char err[1024];
    for (int i = 0; i < n; i++)
        if (dmm_desc_load(list[i], &descs[i], err, sizeof err) != 0) {
            fprintf(stderr, "dmm sim: %s\n", err);
            free(descs);
            free(res);
            return 2;
        }
    dmm_trace_t t;
    dmm_err_t terr;
    if (dmm_trace_load(trace, &t, &terr) != 0) {
        fprintf(stderr, "dmm sim: %s\n", terr.msg);
        free(descs);
        free(res);
        return 2;
    }
    if (t.truncated)
        fprintf(stderr, "dmm sim: warning: %s\n", t.note);
    dmm_opstream_t s;
    if (dmm_opstream_build(&t, &s, &terr) != 0) {
        fprintf(stderr, "dmm sim: %s\n", terr.msg);
        dmm_trace_free(&t);
        free(descs);
        free(res);
        return 2;
    }
    dmm_trace_free(&t);
    if (s.nops == 0) {
        fprintf(stderr, "dmm sim: %s: no allocation operations to replay\n", trace);
        dmm_opstream_free(&s);
        free(descs);
        free(res);
        return 2;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        if (dmm_sim_run(&s, &descs[i], list[i], check, &res[i], err, sizeof err) != 0) {
            fprintf(stderr, "dmm sim: %s: %s\n", list[i], err);
            rc = 2;
            break;
        }
        if (res[i].violations) {
            fprintf(stderr, "dmm sim: %s\n", err);
            rc = 3;
        }
    }
    if (rc != 2) {
        if (json)
            print_json(res, n, descs, trace, timed);
        else
            print_table(res, n, descs, timed);
    }
    dmm_opstream_free(&s);
    free(descs);
    free(res);
    return rc;
}
