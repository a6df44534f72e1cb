/* codegen.c - `dmm codegen`: a .dmm description as the C source of
 * libdmm_evolved.so (codegen/emit/).
 *
 *   dmm codegen [-o OUT.c] [--trace NAME] [--seed S] [--fitness F] BEST.dmm
 *
 * The trace, seed and fitness default to the key=value words of the .dmm's
 * title line ("# dmm 1  trace=app.trc seed=7 fitness=0.61"). */
#include "codegen/cli/cli.h"

#include <stdio.h>
#include <string.h>

#include "allocators/chain/desc.h"
#include "codegen/cli/util.h"
#include "codegen/emit/emit.h"
#include "tracer/base/file.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: dmm codegen [-o OUT.c] [--trace NAME] [--seed S] [--fitness F] BEST.dmm\n\n"
               "Writes the C source of libdmm_evolved.so for a .dmm description (a file or\n"
               "a preset): the DMM map as the paper's Table 1 in its header comment, the\n"
               "chain as constants and a dispatch with the range bounds as literals.\n"
               "--trace, --seed and --fitness default to the .dmm title's trace=, seed=\n"
               "and fitness= words.  Without -o the source goes to standard output.\n"
               "Exit status: 0 written, 1 usage, 2 a bad .dmm or an unwritable output.\n");
}

int dmm_codegen_main(int argc, char **argv)
{
    const char *out = NULL, *in = NULL;
    dmm_emit_info_t info = { 0 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = !strcmp(a, "-o") ? &out
                          : !strcmp(a, "--trace") ? &info.trace
                          : !strcmp(a, "--seed") ? &info.seed
                          : !strcmp(a, "--fitness") ? &info.fitness : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (slot) {
            if (i + 1 >= argc) {
                fprintf(stderr, "dmm codegen: %s needs a value\n", a);
                return 1;
            }
            *slot = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "dmm codegen: unknown option '%s'\n", a);
            usage(stderr);
            return 1;
        } else if (in) {
            fprintf(stderr, "dmm codegen: one .dmm at a time ('%s' and '%s')\n", in, a);
            return 1;
        } else
            in = a;
    }
    if (!in) {
        usage(stderr);
        return 1;
    }
    static dmm_desc_t d;
    if (dmm_cli_desc("codegen", in, &d) != 0)
        return 2;
    dmm_emit_title_t title;
    dmm_emit_info_from_title(&d, &info, &title);
    info.source = in;

    if (!out)
        return dmm_emit_c(stdout, &d, &info) == 0 && fflush(stdout) == 0 ? 0 : 2;
    /* OUT appears whole or not at all, replacing an older one */
    dmm_outfile_t o;
    dmm_err_t e;
    if (dmm_out_open(&o, out, 1, &e) != 0) {
        fprintf(stderr, "dmm codegen: %s\n", e.msg);
        return 2;
    }
    if (dmm_emit_c(o.fp, &d, &info) != 0) {
        dmm_out_abort(&o);
        fprintf(stderr, "dmm codegen: %s: cannot write\n", out);
        return 2;
    }
    if (dmm_out_commit(&o, &e) != 0) {
        fprintf(stderr, "dmm codegen: %s\n", e.msg);
        return 2;
    }
    return 0;
}
