/* optlib.h - the libraries only some recordings need, opened when one asks
 * for them: libunwind for call stacks (DMM_TRACE_STACK), libzstd for
 * compressed blocks (DMM_TRACE_COMPRESS).  Linked to libdmmtrace.so, the
 * dynamic loader mapped and relocated them (and libunwind's liblzma) in
 * every traced process, used or not: 0.45 ms of a process's start (a
 * program that allocates once: 3.45 ms plain, 3.91 ms with the three
 * libraries preloaded and nothing called), which a traced tree of short
 * processes pays in each.
 *
 * Opened once, from the recorder's start (inside the recorder: their own
 * mallocs go straight to glibc), by their Debian sonames; never closed. */
#ifndef DMM_RECORDER_OPTLIB_H
#define DMM_RECORDER_OPTLIB_H

#include <stddef.h>

/* libunwind's unw_backtrace(buffer, size): NULL until dmm_optlib_unwind()
 * succeeded. */
extern int (*dmm_unw_backtrace)(void **, int);

/* The part of zstd block.c uses (zstd.h's names, static-context API):
 * all NULL until dmm_optlib_zstd() succeeded. */
typedef struct dmm_zstd_api {
    size_t (*estimateCCtxSize)(int level);
    size_t (*compressBound)(size_t srcSize);
    void *(*initStaticCCtx)(void *workspace, size_t workspaceSize);
    size_t (*compressCCtx)(void *cctx, void *dst, size_t dstCapacity, const void *src,
                           size_t srcSize, int level);
    unsigned (*isError)(size_t code);
} dmm_zstd_api_t;
extern dmm_zstd_api_t dmm_zstd;

/* Open the library; 1 when it is there, else 0 with *why set to the
 * loader's reason (a static string, valid until the next dl* call). */
int dmm_optlib_unwind(const char **why);
int dmm_optlib_zstd(const char **why);

#endif
