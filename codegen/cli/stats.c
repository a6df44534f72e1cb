/* stats.c - `dmm stats`: the paper's Table 2 for a trace, and the detail
 * behind it (tracer/stats/).
 *
 *   dmm stats [--json] [--top N] TRACE      (TRACE "-" = standard input)
 */
#include "codegen/cli/cli.h"
#include "codegen/cli/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/base/file.h"
#include "tracer/format/load.h"
#include "tracer/stats/stats.h"

#define DEFAULT_TOP   10

static void usage(FILE *f)
{
    fputs("usage: dmm stats [--json] [--top N] TRACE\n"
          "  Print the paper's Table 2 statistics of TRACE (any format dmm reads;\n"
          "  \"-\" reads standard input) and the detail behind them.\n"
          "  --json    one JSON object instead of text\n"
          "  --top N   list the N most requested sizes and call sites (default 10)\n",
          f);
}

static int parse_top(const char *s, size_t *top)
{
    char *end;
    if (!s || !*s || *s == '-')
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || v > 1000000)
        return -1;
    *top = (size_t)v;
    return 0;
}

/* The statistics of the trace at path, and its header (and stacks) in t:
 * a .trc counted as it is scanned, never held whole (dmm_stats_scan_trc),
 * any other format loaded.  0, or -1 with err set and nothing to free. */
static int compute(const char *path, dmm_trace_t *t, dmm_stats_t *st, dmm_err_t *err)
{
    uint8_t *buf;
    size_t len;
    memset(t, 0, sizeof *t);
    if (dmm_read_file(path, &buf, &len, err) != 0)
        return -1;
    int rc;
    if (len && dmm_format_detect(buf, len) == DMM_FMT_TRC) {
        rc = dmm_stats_scan_trc(path, buf, len, t, st, err);
        free(buf);
        t->path = strdup(path);
        if (rc != 0 || !t->path) {
            if (rc == 0)
                dmm_stats_free(st);
            dmm_trace_free(t);
            return rc ? -1 : dmm_err_set(err, "%s: out of memory", path);
        }
        return 0;
    }
    rc = dmm_trace_parse(path, buf, len, DMM_FMT_UNKNOWN, t, err);
    free(buf);
    if (rc != 0)
        return -1;
    if (dmm_stats_compute(t, st, err) != 0) {
        dmm_trace_free(t);
        return -1;
    }
    return 0;
}

int dmm_stats_main(int argc, char **argv)
{
    int json = 0;
    size_t top = DEFAULT_TOP;
    const char *path = NULL;
    int opts_done = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!opts_done && strcmp(a, "--") == 0) {
            opts_done = 1;
        } else if (!opts_done && strcmp(a, "--json") == 0) {
            json = 1;
        } else if (!opts_done && strcmp(a, "--top") == 0) {
            if (parse_top(i + 1 < argc ? argv[++i] : NULL, &top) != 0) {
                fprintf(stderr, "dmm stats: --top needs a count from 0 to 1000000\n");
                usage(stderr);
                return 1;
            }
        } else if (!opts_done && strncmp(a, "--top=", 6) == 0) {
            if (parse_top(a + 6, &top) != 0) {
                fprintf(stderr, "dmm stats: --top needs a count from 0 to 1000000\n");
                usage(stderr);
                return 1;
            }
        } else if (!opts_done && (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)) {
            usage(stdout);
            return 0;
        } else if (!opts_done && a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "dmm stats: unknown option %s\n", a);
            usage(stderr);
            return 1;
        } else if (path) {
            fprintf(stderr, "dmm stats: one trace at a time\n");
            usage(stderr);
            return 1;
        } else {
            path = a;
        }
    }
    if (!path) {
        usage(stderr);
        return 1;
    }

    char picked[4096];
    if (!(path = dmm_cli_trace("stats", path, picked, sizeof picked)))
        return 2;
    dmm_trace_t t;
    dmm_stats_t st;
    dmm_err_t err = { { 0 } };
    if (compute(path, &t, &st, &err) != 0) {
        fprintf(stderr, "dmm stats: %s\n", err.msg);
        return 2;
    }
    if (!json && t.truncated)
        fprintf(stderr, "dmm stats: warning: %s\n", t.note[0] ? t.note : "trace is truncated");
    dmm_stats_print(stdout, &t, &st, json, top);
    dmm_stats_free(&st);
    dmm_trace_free(&t);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "dmm stats: error writing the output\n");
        return 2;
    }
    return 0;
}
