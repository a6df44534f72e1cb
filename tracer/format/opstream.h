/* opstream.h - the operation stream: a trace reduced to what an allocator
 * sees, in the mdriver model: alloc id size [align], realloc id size, free id.
 *
 * Ids name block lifetimes: each successful allocation gets the next id
 * (0, 1, 2, ...); a realloc keeps its block's id even when the block moves.
 * Each op also says which of the trace's threads made it (thread: 0 for the
 * first thread that made one, 1 for the next, ...; from the 256th on they
 * share 255), for a replay on as many threads (dmm replay --threads).
 * Anomalies of real traces (frees of blocks allocated before tracing began,
 * as in a forked child; free(NULL); failed calls) are counted, not errors.
 */
#ifndef DMM_OPSTREAM_H
#define DMM_OPSTREAM_H

#include <stdint.h>
#include <stddef.h>

#include "tracer/base/hash.h"
#include "tracer/format/trace.h"

enum { DMM_OP_ALLOC = 1, DMM_OP_REALLOC, DMM_OP_FREE };

#define DMM_OPF_ZERO 0x1u   /* calloc: the block must read as zeros */
#define DMM_OP_THREADS 256u /* thread ordinals an op can carry */

typedef struct dmm_op {
    uint8_t  kind;        /* DMM_OP_* */
    uint8_t  flags;       /* DMM_OPF_* */
    uint8_t  align_log2;  /* 0 = default (16-byte) alignment */
    uint8_t  thread;      /* the trace's thread that made it, by order of first op */
    uint32_t id;
    uint64_t size;
} dmm_op_t;
_Static_assert(sizeof(dmm_op_t) == 16, "op is 16 bytes");

/* A block whose free said how much of it was resident (a .trc's FREE with
 * DMM_TRC_RF_RESIDENT), or that said it at the end of the process, still
 * live (DMM_TRC_RESIDENT): a replay writes that much of it, not all. */
typedef struct dmm_resident {
    uint32_t id;
    uint32_t reserved;   /* 0 */
    uint64_t bytes;
} dmm_resident_t;
_Static_assert(sizeof(dmm_resident_t) == 16, "resident entry is 16 bytes");

typedef struct dmm_opstream {
    dmm_op_t *ops;
    size_t    nops;
    dmm_resident_t *resident;   /* in the trace's order (an id at most once) */
    size_t    nresident;
    uint32_t  nids;           /* ids are 0 .. nids-1 */
    uint32_t  nthreads;       /* ops' threads are 0 .. nthreads-1 (at most 256) */
    /* anomalies, counted */
    uint64_t  free_null;      /* free(NULL) */
    uint64_t  unknown_free;   /* free of a pointer never seen allocated */
    uint64_t  failed;         /* calls that returned NULL / an error */
    uint64_t  reused_live;    /* an allocation returned a still-live address */
} dmm_opstream_t;

int  dmm_opstream_build(const dmm_trace_t *t, dmm_opstream_t *s, dmm_err_t *err);

/* The same, a record at a time, for a pass that does not hold the trace
 * (dmm_scan_trc): each op goes to emit(ctx, op) (nonzero: stop, and put
 * returns -1); s gets the counts (nids, anomalies) and the resident
 * entries, never ops (dmm_opstream_free frees it).
 *
 * The builder knows each live block's size, so a pass that needs it (dmm
 * stats' bytes in use) keeps no table of its own: while a FREE or REALLOC
 * op is emitted, size_before is the size its block had until then, and
 * resident_size[i] is the size s->resident[i]'s block had when that entry
 * was made (it was live then). */
typedef struct dmm_opbuild {
    dmm_opstream_t *s;
    int (*emit)(void *ctx, const dmm_op_t *op);
    void *ctx;
    dmm_u64map_t live;       /* address -> id and size (packed, opstream.c) */
    dmm_u64map_t pending;    /* tid + 1 -> the same, of a block between RELEASE and REALLOC */
    dmm_u64map_t big;        /* id -> size, of live blocks of 4 GiB - 1 and more */
    dmm_u64map_t threads;    /* tid + 1 -> the ordinal its ops carry */
    uint32_t     tid;        /* the thread of the record being put */
    uint64_t     thread_key; /* tid + 1 of the last op's thread (0: none yet) */
    uint8_t      thread;     /* ... and its ordinal */
    uint64_t     size_before;
    uint64_t    *resident_size;
} dmm_opbuild_t;
void dmm_opbuild_init(dmm_opbuild_t *b, dmm_opstream_t *s,
                      int (*emit)(void *ctx, const dmm_op_t *op), void *ctx);
/* Record r (the idx-th, for messages) in the stream's order: 0, or -1 with
 * err set where it is known (out of memory, too many blocks). */
int  dmm_opbuild_put(dmm_opbuild_t *b, const dmm_rec_t *r, size_t idx, dmm_err_t *err);
void dmm_opbuild_free(dmm_opbuild_t *b);

/* The stream of a .trc held in buf (len bytes), built as dmm_scan_trc
 * reads it: the same stream as dmm_trace_parse then dmm_opstream_build
 * give, without ever holding the records (~56 bytes each, against the 16 of
 * an op; a file whose threads' calls are not in seq order is loaded whole
 * instead, see dmm_scan_trc).  note (notecap bytes) gets the cut-short note,
 * or "".  0, or -1 with err set. */
int dmm_opstream_build_trc(const char *name, const uint8_t *buf, size_t len, dmm_opstream_t *s,
                           char *note, size_t notecap, dmm_err_t *err);
void dmm_opstream_free(dmm_opstream_t *s);

#endif
