/* replay.c - `dmm replay`: a trace's operations through this process's
 * malloc, timed (tracer/replay/).
 *
 *   dmm replay [--no-write] [--check] [--json] [--csv FILE] [--plot FILE.png]
 *              [--samples N] [--runs N] [--threads] TRACE
 *   dmm replay --mdriver [--json] [--no-cache] TRACE|DIR...
 *
 * Exit status: 0, 1 (usage, or an output or the system failed), 2 (a bad
 * trace), 3 (--check found a corruption). */
#include "codegen/cli/cli.h"
#include "codegen/cli/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dirent.h>
#include <sys/stat.h>

#include "tracer/replay/analyse.h"
#include "tracer/replay/mdrun.h"
#include "tracer/replay/plot.h"
#include "tracer/replay/print.h"
#include "tracer/replay/replay.h"

typedef struct cli_opts {
    dmm_replay_opts_t replay;
    int json;
    const char *csv, *plot;
} cli_opts_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: dmm replay [--no-write | --write-all] [--check] [--json] [--csv FILE]\n"
            "                  [--plot FILE.png] [--samples N] [--runs N] [--threads]\n"
            "                  [--no-cache] TRACE\n"
            "\n"
            "Replays TRACE's operation stream (alloc, realloc, free) through this process's\n"
            "malloc: run dmm under LD_PRELOAD= of the allocator to measure (none: glibc).\n"
            "Reports time per operation (TSC cycles and ns; mean, p50, p99, p99.9, max per\n"
            "kind), the best and worst operation and how many took over 100x the best, peak\n"
            "RSS, peak requested bytes and the wastage (peak held - peak requested), and for\n"
            "mdriver .rep traces mdriver's table and perf index.\n"
            "\n"
            "  --no-write    do not write the payloads (by default each block is written as\n"
            "                the program wrote it, so that resident memory is honest: every\n"
            "                byte, except of a large block whose free in the trace says how\n"
            "                much of it was resident: that much, from its start)\n"
            "  --write-all   write every byte of every block, whatever the trace says\n"
            "  --check       verify every block's contents before its free and after realloc;\n"
            "                the first corruption is reported, exit status 3\n"
            "  --json        one JSON object with every number\n"
            "  --csv FILE    op, requested bytes, RSS bytes, held bytes at each sample\n"
            "  --plot FILE   requested vs held over the run, a PNG drawn by gnuplot\n"
            "  --samples N   RSS samples over the run (default 1000)\n"
            "  --runs N      replay N times from the same start (the first N-1 in forked\n"
            "                children) and time each operation by its fastest run: what the\n"
            "                allocator does recurs in every run, an interrupt does not; the\n"
            "                rest (memory, wall time) is the last run's (default 1)\n"
            "  --threads     run each thread's operations on a thread of its own, still one\n"
            "                at a time in the trace's order, so that an allocator with memory\n"
            "                per thread (glibc's arenas, thread caches) holds what it held in\n"
            "                the program (default: every operation on one thread)\n"
            "  --no-cache    parse TRACE even when TRACE.ops holds its operations, and\n"
            "                write no TRACE.ops (by default it is kept beside the trace)\n"
            "\n"
            "dmm replay --mdriver [--json] [--no-cache] TRACE|DIR...\n"
            "\n"
            "Scores the allocator as the CS:APP malloc lab's mdriver does, on each TRACE\n"
            "(a directory: its .rep files, by name): one run with every payload checked,\n"
            "every block 8-byte aligned and none overlapping another; utilisation = peak\n"
            "payload / peak heap (the library's footprint for dmm's libraries, else the\n"
            "peak anonymous RSS over its level before the trace); then timed runs over the\n"
            "warm heap, the fastest kept once the 3 fastest agree within 1 %% (at most 20).\n"
            "Prints mdriver's table and perf index (util 40, thru 60 against 54,500 Kops).\n"
            "Exit status 3 when a trace fails its checks.\n");
}

static int is_rep(const struct dirent *e)
{
    size_t n = strlen(e->d_name);
    return n > 4 && !strcmp(e->d_name + n - 4, ".rep");
}

/* dmm replay --mdriver: every TRACE (a directory: its .rep files) scored
 * as mdriver scores (mdrun.h). */
static int mdriver_main(int argc, char **argv)
{
    dmm_mdrun_opts_t mo;
    dmm_mdrun_opts_default(&mo);
    int json = 0, nt = 0, rc = 0;
    static char paths[256][4096];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        struct stat sb;
        if (!strcmp(a, "--mdriver"))
            continue;
        if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--no-cache")) {
            mo.no_cache = 1;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "dmm replay --mdriver: unknown option %s (--json, --no-cache)\n", a);
            return 1;
        } else if (stat(a, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            struct dirent **e;
            int n = scandir(a, &e, is_rep, alphasort);
            if (n < 0) {
                fprintf(stderr, "dmm replay: %s: %s\n", a, strerror(errno));
                return 2;
            }
            if (n == 0)
                fprintf(stderr, "dmm replay: %s: no .rep trace in it\n", a);
            for (int k = 0; k < n; k++) {
                if (nt < 256)
                    snprintf(paths[nt++], sizeof paths[0], "%s/%s", a, e[k]->d_name);
                free(e[k]);
            }
            free(e);
        } else if (nt < 256) {
            snprintf(paths[nt++], sizeof paths[0], "%s", a);
        }
    }
    if (nt == 0) {
        fprintf(stderr, "dmm replay --mdriver: no trace (TRACE or DIR of .rep files)\n");
        return 1;
    }
    static dmm_mdrun_t m[256];
    for (int i = 0; i < nt; i++) {
        int st = dmm_mdrun(paths[i], &mo, &m[i]);
        if (st && !rc)
            rc = st;
        if (!st && !m[i].valid)
            rc = 3;
    }
    if (json)
        dmm_mdrun_json(stdout, m, nt, &mo);
    else
        dmm_mdrun_print(stdout, m, nt, &mo);
    fflush(stdout);
    return rc;
}

/* -1: go on; otherwise the exit status (0 after --help). */
static int parse(int argc, char **argv, cli_opts_t *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--no-write")) {
            o->replay.write = 0;
        } else if (!strcmp(a, "--write-all")) {
            o->replay.write_all = 1;
        } else if (!strcmp(a, "--check")) {
            o->replay.check = 1;
        } else if (!strcmp(a, "--threads")) {
            o->replay.threads = 1;
        } else if (!strcmp(a, "--no-cache")) {
            o->replay.no_cache = 1;
        } else if (!strcmp(a, "--json")) {
            o->json = 1;
        } else if (!strcmp(a, "--csv") && i + 1 < argc) {
            o->csv = argv[++i];
        } else if (!strcmp(a, "--plot") && i + 1 < argc) {
            o->plot = argv[++i];
        } else if (!strcmp(a, "--samples") && i + 1 < argc) {
            char *end;
            errno = 0;
            unsigned long long n = strtoull(argv[++i], &end, 10);
            if (*end || errno || n == 0 || n > 100000000ull || argv[i][0] == '-') {
                fprintf(stderr, "dmm replay: --samples needs a count from 1 to 100000000\n");
                return 1;
            }
            o->replay.samples = n;
        } else if (!strcmp(a, "--runs") && i + 1 < argc) {
            char *end;
            errno = 0;
            unsigned long n = strtoul(argv[++i], &end, 10);
            if (*end || errno || n == 0 || n > 1000 || argv[i][0] == '-') {
                fprintf(stderr, "dmm replay: --runs needs a count from 1 to 1000\n");
                return 1;
            }
            o->replay.runs = (unsigned)n;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "dmm replay: unknown option or missing value: %s\n", a);
            usage(stderr);
            return 1;
        } else if (!o->replay.trace) {
            o->replay.trace = a;
        } else {
            usage(stderr);
            return 1;
        }
    }
    if (!o->replay.trace) {
        usage(stderr);
        return 1;
    }
    static char picked[4096];   /* the replay keeps the name */
    if (!(o->replay.trace = dmm_cli_trace("replay", o->replay.trace, picked, sizeof picked)))
        return 2;
    if (o->replay.write_all && !o->replay.write) {
        fprintf(stderr, "dmm replay: --write-all and --no-write contradict each other\n");
        return 1;
    }
    if (o->replay.check && !o->replay.write) {
        fprintf(stderr, "dmm replay: --check needs the payloads written; drop --no-write\n");
        return 1;
    }
    return -1;
}

int dmm_replay_main(int argc, char **argv)
{
    /* stdout's buffer is static: printing the report must not allocate
     * from the allocator under test (a kept chunk would enter its peak) */
    static char outbuf[1 << 16];
    setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--mdriver"))
            return mdriver_main(argc, argv);
    cli_opts_t o = { .replay = { .write = 1, .samples = 1000 } };
    int rc = parse(argc, argv, &o);
    if (rc >= 0)
        return rc;

    dmm_replay_t r;
    rc = dmm_replay_open(&r, &o.replay);
    if (rc)
        return rc;
    int runs_rc = dmm_replay_run_fastest(&r);
    if (runs_rc == 1) {
        dmm_replay_close(&r);
        return 1;
    }
    dmm_replay_analyse(&r);
    if (r.corrupt)
        fprintf(stderr, "dmm replay: %s: corruption at op %zu (%s of block %u, %" PRIu64
                        " bytes): offset %" PRId64 ": %s\n",
                o.replay.trace, r.bad_op, dmm_replay_kind_name(r.L.ops[r.bad_op].kind),
                r.bad_id, r.bad_size, r.bad_off, r.bad_what);
    if (o.json)
        dmm_replay_print_json(stdout, &r);
    else
        dmm_replay_print_text(stdout, &r);
    fflush(stdout);
    rc = r.corrupt || runs_rc == 3 ? 3 : 0;
    if (o.csv && dmm_replay_write_csv(&r, o.csv) != 0 && !rc)
        rc = 1;
    if (o.plot && dmm_replay_plot(&r, o.plot) != 0 && !rc)
        rc = 1;
    dmm_replay_close(&r);
    return rc;
}
