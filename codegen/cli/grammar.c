/* grammar.c - dmm grammar: the paper's BNF of DMM designs for a trace.
 *
 *   dmm grammar [--paper] [-o OUT] [--force] [--no-cache] TRACE
 *
 * Writes the grammar (grammar.h, dmm_grammar_for_ops) of the trace's
 * operation stream (opcache.h: from TRACE.ops when valid, else built and
 * that cache written, as dmm evolve then reads it) to standard output
 * or to OUT, which appears only once complete and replaces an existing file
 * only with --force.  Exit status as cli.h: 0 done, 1 usage, 2 a trace that
 * does not load or holds no allocation, or an output that cannot be written. */
#include "codegen/cli/cli.h"
#include "codegen/cli/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/grammar/grammar.h"
#include "tracer/format/trace.h"
#include "tracer/format/trc_write.h"
#include "tracer/base/file.h"
#include "tracer/format/load.h"
#include "tracer/format/opcache.h"

static void usage(FILE *f)
{
    fputs("usage: dmm grammar [--paper] [-o OUT] [--force] [--no-cache] TRACE\n"
          "  TRACE        a trace in any format dmm reads; - = stdin\n"
          "  --paper      only the paper's five allocator classes (default: also\n"
          "               Kingsley, Lea and TLSF)\n"
          "  -o OUT       write the grammar to OUT (default: standard output)\n"
          "  --force      replace OUT if it exists\n"
          "  --no-cache   parse TRACE even when TRACE.ops holds its operations, and\n"
          "               write no TRACE.ops\n"
          "The grammar is the paper's Figure 3 with <Size> every distinct request size\n"
          "of the trace and <MaxSize> the largest; edit it freely, the GE engine reads\n"
          "any grammar in that notation.\n",
          f);
}

static int usage_err(const char *msg, const char *arg)
{
    fprintf(stderr, "dmm grammar: %s%s\n", msg, arg ? arg : "");
    usage(stderr);
    return 1;
}

int dmm_grammar_main(int argc, char **argv)
{
    int paper = 0, force = 0, no_cache = 0, opts = 1;
    const char *out = NULL, *path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (opts && !strcmp(a, "--")) {
            opts = 0;
        } else if (opts && (!strcmp(a, "-h") || !strcmp(a, "--help"))) {
            usage(stdout);
            return 0;
        } else if (opts && !strcmp(a, "--paper")) {
            paper = 1;
        } else if (opts && (!strcmp(a, "--force") || !strcmp(a, "-f"))) {
            force = 1;
        } else if (opts && !strcmp(a, "--no-cache")) {
            no_cache = 1;
        } else if (opts && (!strcmp(a, "-o") || !strcmp(a, "--output"))) {
            if (++i >= argc)
                return usage_err(a, " needs a file name");
            out = argv[i];
        } else if (opts && !strncmp(a, "--output=", 9)) {
            out = a + 9;
        } else if (opts && a[0] == '-' && a[1] != '\0') {
            return usage_err("unknown option ", a);
        } else if (path) {
            return usage_err("one trace at a time", NULL);
        } else {
            path = a;
        }
    }
    if (!path)
        return usage_err("no trace given", NULL);
    if (out && !*out)
        return usage_err("-o needs a file name", NULL);

    char picked[4096];
    if (!(path = dmm_cli_trace("grammar", path, picked, sizeof picked)))
        return 2;
    dmm_opstream_t os;
    dmm_opload_t info;
    dmm_err_t err = { { 0 } };
    if (dmm_opstream_load(path, !no_cache, &os, &info, &err) != 0) {
        fprintf(stderr, "dmm grammar: %s\n", err.msg);
        return 2;
    }
    if (info.note[0])
        fprintf(stderr, "dmm grammar: warning: %s\n", info.note);
    char *text = dmm_grammar_for_ops(&os, paper, path, &err);
    dmm_opstream_free(&os);
    if (!text) {
        fprintf(stderr, "dmm grammar: %s\n", err.msg);
        return 2;
    }
    size_t len = strlen(text);
    int rc = 0;
    if (!out || !strcmp(out, "-")) {
        if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0) {
            fprintf(stderr, "dmm grammar: standard output: write error\n");
            rc = 2;
        }
    } else {
        dmm_outfile_t o;
        if (dmm_out_open(&o, out, force, &err) != 0) {
            fprintf(stderr, "dmm grammar: %s\n", err.msg);
            rc = 2;
        } else if (fwrite(text, 1, len, o.fp) != len) {
            fprintf(stderr, "dmm grammar: %s: write error\n", out);
            dmm_out_abort(&o);
            rc = 2;
        } else if (dmm_out_commit(&o, &err) != 0) {
            fprintf(stderr, "dmm grammar: %s\n", err.msg);
            rc = 2;
        }
    }
    free(text);
    return rc;
}
