/* sim.c - `dmm sim`: a trace through simulated DMMs, side by side
 * (allocators/sim/).
 *
 *   dmm sim [--dmm FILE|PRESET]... [--all] [--json] [--check N] [--time]
 *           [--fit-pool] [--no-cache] TRACE */
#include "codegen/cli/cli.h"
#include "codegen/cli/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocators/chain/desc.h"
#include "allocators/sim/sim.h"
#include "tracer/format/opcache.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: dmm sim [--dmm FILE|PRESET]... [--all] [--json] [--check N] [--time]\n"
            "               [--fit-pool] [--no-cache] TRACE\n"
            "  Replay TRACE (any format dmm reads) through each DMM, simulated, and print\n"
            "  T (counted cost), M (peak footprint) and what lies behind them.\n"
            "  --dmm X     a .dmm file or a preset: kng, lea, fib, s10, exa, tlsf\n"
            "              (repeatable)\n"
            "  --all       the five presets, then the --dmm ones, side by side\n"
            "  --json      one JSON object instead of the table\n"
            "  --check N   run every allocator's check() every N operations\n"
            "  --time      also print simulated operations per second (varies by run)\n"
            "  --fit-pool  also print the largest pool each DMM holds at no cost: its M\n"
            "              with the line `pool bytes=N` equals its M without a pool\n"
            "              (what `make evolve POOL=auto` adds; 0: not a page)\n"
            "  --no-cache  parse TRACE even when TRACE.ops holds its operations, and\n"
            "              write no TRACE.ops (by default it is kept beside the trace)\n"
            "  Exit status: 0 done, 1 usage error, 2 bad input, 3 a --check found a\n"
            "  fault (named on stderr).\n");
}

int dmm_sim_main(int argc, char **argv)
{
    const char *names[DMM_DESC_MAX];
    int nnames = 0, all = 0, json = 0, flags = 0, no_cache = 0;
    uint64_t check = 0;
    const char *trace = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--dmm") && i + 1 < argc) {
            if (nnames == DMM_DESC_MAX - DMM_DESC_NPRESETS) {
                fprintf(stderr, "dmm sim: too many --dmm\n");
                return 1;
            }
            names[nnames++] = argv[++i];
        } else if (!strcmp(argv[i], "--all")) {
            all = 1;
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "--time")) {
            flags |= DMM_SIM_PRINT_TIMED;
        } else if (!strcmp(argv[i], "--fit-pool")) {
            flags |= DMM_SIM_PRINT_POOL;
        } else if (!strcmp(argv[i], "--no-cache")) {
            no_cache = 1;
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
    char picked[4096];
    if (!(trace = dmm_cli_trace("sim", trace, picked, sizeof picked)))
        return 2;
    const char *list[DMM_DESC_MAX];
    int n = 0;
    if (all)
        for (int i = 0; i < DMM_DESC_NPRESETS; i++)
            list[n++] = dmm_desc_preset_name(i);
    for (int i = 0; i < nnames; i++)
        list[n++] = names[i];

    dmm_desc_t *descs = calloc((size_t)n, sizeof *descs);
    dmm_sim_result_t *res = calloc((size_t)n, sizeof *res);
    dmm_err_t err;
    for (int i = 0; i < n; i++)
        if (dmm_desc_load(list[i], &descs[i], &err) != 0) {
            fprintf(stderr, "dmm sim: %s\n", err.msg);
            free(descs);
            free(res);
            return 2;
        }
    dmm_opstream_t s;
    dmm_opload_t info;
    dmm_err_t terr;
    if (dmm_opstream_load(trace, !no_cache, &s, &info, &terr) != 0) {
        fprintf(stderr, "dmm sim: %s\n", terr.msg);
        free(descs);
        free(res);
        return 2;
    }
    if (info.note[0])
        fprintf(stderr, "dmm sim: warning: %s\n", info.note);
    if (s.nops == 0) {
        fprintf(stderr, "dmm sim: %s: no allocation operations to replay\n", trace);
        dmm_opstream_free(&s);
        free(descs);
        free(res);
        return 2;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        if (dmm_sim_run(&s, &descs[i], list[i], check, &res[i], &err) != 0) {
            fprintf(stderr, "dmm sim: %s: %s\n", list[i], err.msg);
            rc = 2;
            break;
        }
        if (res[i].violations) {
            fprintf(stderr, "dmm sim: %s\n", err.msg);
            rc = 3;
        }
        if ((flags & DMM_SIM_PRINT_POOL) &&
            dmm_sim_fit_pool(&s, &descs[i], &res[i].pool_fit, &err) != 0) {
            fprintf(stderr, "dmm sim: %s: %s\n", list[i], err.msg);
            rc = 2;
            break;
        }
    }
    if (rc != 2) {
        if (json)
            dmm_sim_print_json(stdout, res, n, descs, trace, flags);
        else
            dmm_sim_print_table(stdout, res, n, descs, flags);
    }
    dmm_opstream_free(&s);
    free(descs);
    free(res);
    return rc;
}
