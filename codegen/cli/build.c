/* build.c - `dmm build`: a .dmm description compiled into its own
 * libdmm_evolved.so, without make (codegen/emit/build.h): what an installed
 * dmm does where a source checkout runs make evolve.
 *
 *   dmm build [-o OUT.so] [--cc CC] [-v] DESIGN.dmm|PRESET */
#include "codegen/cli/cli.h"

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "allocators/chain/desc.h"
#include "codegen/cli/util.h"
#include "codegen/emit/build.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: dmm build [-o OUT.so] [--cc CC] [-v] DESIGN.dmm|PRESET\n\n"
               "Compiles a .dmm description (a file or a preset) into its own\n"
               "libdmm_evolved.so: dmm codegen's C source with the sources of the library\n"
               "(beside this dmm: the build tree's, or PREFIX/share/dmm/src when installed),\n"
               "as make evolve does in a source checkout.  Then:\n"
               "LD_PRELOAD=OUT.so ./app\n\n"
               "  -o OUT.so  the library to write (default: libdmm_evolved.so beside\n"
               "             DESIGN.dmm, or in the current directory for a preset);\n"
               "             replaced whole, or left as it was when the build fails\n"
               "  --cc CC    the compiler (default: the one the kit names, make's)\n"
               "  -v         print the compiler's command line\n"
               "Exit status: 0 built, 1 usage, 2 a bad .dmm, no build kit, or the compiler\n"
               "failed (its messages above).\n");
}

int dmm_build_main(int argc, char **argv)
{
    const char *out = NULL, *in = NULL, *cc = NULL;
    int verbose = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if ((!strcmp(a, "-o") || !strcmp(a, "--cc")) && i + 1 < argc) {
            *(a[1] == 'o' ? &out : &cc) = argv[++i];
        } else if (!strcmp(a, "-v")) {
            verbose = 1;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "dmm build: unknown option '%s'\n", a);
            usage(stderr);
            return 1;
        } else if (in) {
            fprintf(stderr, "dmm build: one .dmm at a time ('%s' and '%s')\n", in, a);
            return 1;
        } else {
            in = a;
        }
    }
    if (!in) {
        usage(stderr);
        return 1;
    }
    static dmm_desc_t d;
    if (dmm_cli_desc("build", in, &d) != 0)
        return 2;
    char dflt[PATH_MAX + 32];
    if (!out) {
        char copy[PATH_MAX];
        snprintf(copy, sizeof copy, "%s", in);
        int file = access(in, F_OK) == 0;
        snprintf(dflt, sizeof dflt, "%s/libdmm_evolved.so", file ? dirname(copy) : ".");
        out = dflt;
    }
    dmm_err_t err;
    char exe[PATH_MAX], kit[PATH_MAX + 64];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        fprintf(stderr, "dmm build: cannot find the dmm binary (/proc/self/exe)\n");
        return 2;
    }
    exe[n] = 0;
    if (dmm_build_find_kit(dirname(exe), kit, sizeof kit, &err) != 0) {
        fprintf(stderr, "dmm build: %s\n", err.msg);
        return 2;
    }
    dmm_emit_info_t info = { .source = in };
    dmm_emit_title_t title;
    dmm_emit_info_from_title(&d, &info, &title);
    fprintf(stderr, "dmm build: compiling %s into %s (a minute at most)\n", in, out);
    if (dmm_build_library(&d, &info, kit, cc, out, verbose, &err) != 0) {
        fprintf(stderr, "dmm build: %s\n", err.msg);
        return 2;
    }
    printf("%s\n", out);
    fprintf(stderr, "dmm build: run a program on it: LD_PRELOAD=%s ./app\n", out);
    return 0;
}
