/* libs.h - what the tests that run programs under the preload libraries
 * share: where the built libraries are, whether this test binary is
 * sanitized (the long real-program runs skip then: a sanitizer runtime must
 * come first in the library list, so the sanitized tools cannot run under
 * another allocator's LD_PRELOAD), and the DMM libraries every behaviour is
 * checked on: libdmm.so with each preset and libdmm_evolved.so. */
#ifndef DMM_TEST_LIBS_H
#define DMM_TEST_LIBS_H

#include <stddef.h>

#define LIBDMM  DMM_BUILD_DIR "/libdmm.so"
#define EVOLVED DMM_BUILD_DIR "/libdmm_evolved.so"
#define TRACER  DMM_BUILD_DIR "/libdmmtrace.so"

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

/* libdmm.so with each preset (TLSF's too), and libdmm_evolved.so with the
 * chain it was built with: the environment to add for each, and its name in
 * messages. */
static const struct target {
    const char *preload, *config, *name;
} targets[] __attribute__((unused)) = {
    { "LD_PRELOAD=" LIBDMM, "DMM_CONFIG=kng", "libdmm.so kng" },
    { "LD_PRELOAD=" LIBDMM, "DMM_CONFIG=lea", "libdmm.so lea" },
    { "LD_PRELOAD=" LIBDMM, "DMM_CONFIG=fib", "libdmm.so fib" },
    { "LD_PRELOAD=" LIBDMM, "DMM_CONFIG=s10", "libdmm.so s10" },
    { "LD_PRELOAD=" LIBDMM, "DMM_CONFIG=exa", "libdmm.so exa" },
    { "LD_PRELOAD=" LIBDMM, "DMM_CONFIG=tlsf", "libdmm.so tlsf" },
    { "LD_PRELOAD=" EVOLVED, NULL, "libdmm_evolved.so" },
};
#define NTARGETS (sizeof targets / sizeof targets[0])

#endif
