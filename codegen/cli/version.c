/* version.c - `dmm --version` and `dmm COMMAND --version`: the version, the
 * git revision the binary was built from (when built from a checkout), the
 * compiler, and the features compiled in, each with the version of the
 * library behind it.
 *
 * The Makefile passes DMM_VERSION, DMM_GIT_REV (empty outside a checkout)
 * and DMM_MPI_BUILT (1 when libdmm_mpi.so was built beside dmm). */
#include "codegen/cli/cli.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <zstd.h>
#include <libunwind.h>

#include "codegen/search/mpi.h"

#ifndef DMM_VERSION
#define DMM_VERSION "unknown"
#endif
#ifndef DMM_GIT_REV
#define DMM_GIT_REV ""
#endif
#ifndef DMM_MPI_BUILT
#define DMM_MPI_BUILT 0
#endif

#define STR_(x) #x
#define STR(x) STR_(x)

void dmm_version_print(FILE *f)
{
    fprintf(f, "dmm %s", DMM_VERSION);
    if (DMM_GIT_REV[0])
        fprintf(f, " (git %s)", DMM_GIT_REV);
    fprintf(f, "\n");
#if defined(__clang__)
    fprintf(f, "built with: %s\n", __VERSION__);
#elif defined(__GNUC__)
    fprintf(f, "built with: gcc %s\n", __VERSION__);
#endif
    /* zstd: compiled against one version, running another */
    fprintf(f, "features:\n");
    fprintf(f, "  +zstd       %s (built against %s): zstd-compressed trace blocks, "
               "written and read\n",
            ZSTD_versionString(), ZSTD_VERSION_STRING);
    fprintf(f, "  +libunwind  %d.%d%s%s: call stacks in libdmmtrace.so (DMM_TRACE_STACK; "
               "libunwind.so.8, opened when asked for)\n",
            UNW_VERSION_MAJOR, UNW_VERSION_MINOR,
            STR(UNW_VERSION_EXTRA)[0] ? "." : "", STR(UNW_VERSION_EXTRA));
    char path[PATH_MAX + 64];
    int found = dmm_mpi_plugin_path(path, sizeof path);
    if (!DMM_MPI_BUILT)
        fprintf(f, "  -mpi        dmm evolve --mpi: not built (no mpicc; Debian: libopenmpi-dev)\n");
    else if (found > 0)
        fprintf(f, "  +mpi        Open MPI plugin %s: dmm evolve --mpi\n", path);
    else
        fprintf(f, "  -mpi        dmm evolve --mpi: built, but %s is missing\n",
                found < 0 ? "libdmm_mpi.so" : path);
}
