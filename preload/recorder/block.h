/* block.h - one block of a trace file (tracer/format/trcfmt.h) written by
 * libdmmtrace.so: a thread's records, compressed where that pays, checked
 * by CRC-32C, in one writev(2).
 *
 * Raw system calls only (sys.h): the recording threads call it, and so does
 * the writer process (writer.h), which must leave their errno alone. */
#ifndef DMM_RECORDER_BLOCK_H
#define DMM_RECORDER_BLOCK_H

#include <stddef.h>
#include <stdint.h>

/* A zstd context and its output buffer, made on first use (zero: none). */
typedef struct dmm_block_z {
    void  *cctx;
    void  *work;    /* the context's memory */
    size_t worklen;
    void  *zbuf;
    size_t zcap;
} dmm_block_z_t;

/* The largest payload a block takes (a thread's buffer). */
#define DMM_BLOCK_MAX (256u << 10)

/* Append [payload, payload + raw) to fd as one block of thread tid: it goes
 * on from that thread's previous block when cont is set.  Compressed with
 * zstd at zlevel (0: not; nor before optlib.h opened libzstd) when that
 * makes it smaller, through z.  A write
 * the disk refuses is left cut short: the reader reports the cut. */
void dmm_block_write(int fd, dmm_block_z_t *z, int zlevel, uint32_t tid, const void *payload,
                     size_t raw, int cont);

/* Give back z's memory. */
void dmm_block_z_free(dmm_block_z_t *z);

#endif
