/* build.h - a DMM description compiled into its own libdmm_evolved.so
 * without make (`dmm build`): the C source of emit.h, compiled with the
 * sources of libdmm_evolved.so and the flags that a build kit file names.
 *
 * The kit file (make writes BUILD/dmm-build.txt; make install copies the
 * sources to PREFIX/share/dmm/src/ with the file beside them) holds lines
 *
 *   root DIR          where the sources are (includes are named from it);
 *                     relative to the kit file's folder unless absolute
 *   cc CC             the compiler make used
 *   cflags FLAGS...   compile flags (blank-separated, no quoting)
 *   ldflags FLAGS...  link flags, before -o
 *   libs FLAGS...     after the sources
 *   src PATH          a source file, relative to root (repeated)
 *
 * and comments (#).  The compiler runs once over every source and the
 * emitted one, as one -flto program, like make's libdmm_evolved.so. */
#ifndef DMM_EMIT_BUILD_H
#define DMM_EMIT_BUILD_H

#include "allocators/chain/desc.h"
#include "codegen/emit/emit.h"
#include "tracer/base/err.h"

/* Where the kit is for the dmm binary at exe_dir: exe_dir/dmm-build.txt
 * (the build tree), else exe_dir/../share/dmm/src/dmm-build.txt
 * (installed).  0 with the path in path, or -1 with err naming both. */
int dmm_build_find_kit(const char *exe_dir, char *path, size_t len, dmm_err_t *err);

/* Compile d into the shared library out (written whole or not at all,
 * replacing an older one) with the kit at kit_path; cc, when not NULL,
 * replaces the kit's compiler.  The compiler's messages go to stderr; with
 * verbose its command line too.  0, or -1 with err (a bad kit names its
 * line; a failed compile names the compiler and its status). */
int dmm_build_library(const dmm_desc_t *d, const dmm_emit_info_t *info, const char *kit_path,
                      const char *cc, const char *out, int verbose, dmm_err_t *err);

#endif
