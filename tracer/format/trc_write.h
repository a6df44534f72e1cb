/* trc_write.h - writing a dmm_trace_t as a binary .trc: what dmm convert
 * produces from any input format.  The file appears only when complete
 * (tracer/base/file.h). */
#ifndef DMM_FORMAT_TRC_WRITE_H
#define DMM_FORMAT_TRC_WRITE_H

#include <stdio.h>

#include "tracer/format/trace.h"

/* Records per block in files dmm writes. */
#define DMM_TRC_WRITE_BLOCK_RECS 4096u

/* Write t to path as a .trc; compress: 0 none, 1 zstd.  Refuses to replace
 * an existing file ("exists").  0 or -1 with err set. */
int dmm_write_trc(const dmm_trace_t *t, const char *path, int compress, dmm_err_t *err);
/* The same, replacing an existing file when force is set. */
int dmm_write_trc_ex(const dmm_trace_t *t, const char *path, int compress, int force,
                     dmm_err_t *err);
/* dmm_write_trc in a given version of the format (trcfmt.h):
 * DMM_TRC_VERSION, or an older one that older dmm tools read. */
int dmm_write_trc_version(const dmm_trace_t *t, const char *path, int compress,
                          unsigned version, dmm_err_t *err);
/* Compress the uncompressed blocks of the .trc at path with zstd (level),
 * every other byte kept as it is (header, blocks already compressed, a
 * cut-short tail), the file replaced whole or not at all: what `dmm
 * record` does once the program has ended, so that the recording pays
 * nothing for it.  *before and *after (may be NULL): the sizes.  0, or -1
 * with err set (the file left as it was). */
int dmm_trc_compress_file(const char *path, int level, size_t *before, size_t *after,
                          dmm_err_t *err);
/* Write t as a .trc to an open stream; name is used in messages only. */
int dmm_write_trc_stream(const dmm_trace_t *t, FILE *out, const char *name, int compress,
                         dmm_err_t *err);
/* The same in a given version of the format. */
int dmm_write_trc_stream_version(const dmm_trace_t *t, FILE *out, const char *name,
                                 int compress, unsigned version, dmm_err_t *err);

#endif
