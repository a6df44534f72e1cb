/* opcache.h - a trace's operation stream, kept beside the trace so that the
 * next command reads 16 bytes per operation instead of parsing the trace
 * again (a 20 M-operation trace: ~25 s to parse, under a second from the
 * cache).
 *
 * The cache of TRACE is TRACE.ops: a header (magic, version; the trace's
 * size, modification time, device and inode when the cache was made; the
 * stream's counts; the trace's cut-short note; CRC-32C of the header and of
 * the operations) and the operations as they lie in memory.  It is used
 * only when every one of those agrees with the trace as it is now and with
 * the file itself, and every operation is well formed; anything else (an
 * older or newer trace, a damaged or foreign file) and the trace is parsed
 * again and the cache replaced.  A cache that cannot be written (a
 * read-only directory) is not an error: the stream is built each time. */
#ifndef DMM_FORMAT_OPCACHE_H
#define DMM_FORMAT_OPCACHE_H

#include <stddef.h>

#include "tracer/base/err.h"
#include "tracer/format/opstream.h"

typedef struct dmm_opload {
    int  from_cache;     /* the stream came from TRACE.ops */
    int  cache_written;  /* ... or was parsed and TRACE.ops (re)written */
    char note[512];      /* the trace was cut short: why; else "" */
} dmm_opload_t;

/* The operation stream of the trace at path, from its cache when valid
 * (use_cache), else parsed (dmm_trace_load, dmm_opstream_build) and, with
 * use_cache, the cache written.  0, or -1 with err (the trace's own error:
 * a cache never causes one). */
int dmm_opstream_load(const char *path, int use_cache, dmm_opstream_t *s, dmm_opload_t *info,
                      dmm_err_t *err);

/* The cache's name for a trace: path + ".ops".  0, or -1 when it does not
 * fit in cap. */
int dmm_opcache_path(const char *path, char *buf, size_t cap);

#endif
