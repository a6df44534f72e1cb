/* trc_write.h - writing a dmm_trace_t back out: as a binary .trc (what dmm
 * convert produces from any input format), as a readable text dump, and the
 * safe-output helper both use so that a failed write never leaves a
 * half-written file where the result should be.
 */
#ifndef DMM_TRC_WRITE_H
#define DMM_TRC_WRITE_H

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
/* Write t as a .trc to an open stream; name is used in messages only. */
int dmm_write_trc_stream(const dmm_trace_t *t, FILE *out, const char *name, int compress,
                         dmm_err_t *err);

/* A readable dump, one record per line, header and stacks as # comments.
 * 0, or -1 on a write error. */
int dmm_write_text(const dmm_trace_t *t, FILE *out);

/* An output file that appears under its name only once it is complete: the
 * data goes to a temporary file in the same directory, renamed (or, without
 * force, linked so that an existing file is never replaced) on commit.  An
 * existing device or FIFO (/dev/null, a named pipe) is written directly. */
typedef struct dmm_outfile {
    FILE *fp;           /* write here */
    char *path;         /* the final name */
    char *tmp;          /* the temporary file's name; NULL when direct */
    int   force;
} dmm_outfile_t;

int dmm_out_open(dmm_outfile_t *o, const char *path, int force, dmm_err_t *err);
/* Flush and give the file its name; removes the temporary on failure. */
int dmm_out_commit(dmm_outfile_t *o, dmm_err_t *err);
/* Throw the output away. */
void dmm_out_abort(dmm_outfile_t *o);

#endif
