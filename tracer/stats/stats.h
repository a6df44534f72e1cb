/* stats.h - what a program asks of its allocator: the numbers of the paper's
 * Table 2 (objects, total memory, max in use, average size, memory ops) and
 * the detail behind them (sizes, operations by kind, threads, call sites).
 *
 * dmm_stats_compute() (stats.c) is the reusable part (the grammar generator
 * and the report want the same numbers); dmm_stats_print() (stats_print.c)
 * writes them for `dmm stats`.
 */
#ifndef DMM_STATS_STATS_H
#define DMM_STATS_STATS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tracer/format/trace.h"

/* One request size and how many allocating calls asked for it. */
typedef struct dmm_stats_size {
    uint64_t size;
    uint64_t count;
} dmm_stats_size_t;

/* One call stack and what the allocating calls made from it asked for. */
typedef struct dmm_stats_site {
    uint32_t stack;     /* index into dmm_trace_t.stacks */
    uint64_t count;
    uint64_t bytes;
} dmm_stats_site_t;

/* Power-of-two size buckets: 0 holds size 0, 1 holds 1..16, and bucket
 * k >= 2 holds (2^(k+2), 2^(k+3)]; the last one reaches UINT64_MAX. */
#define DMM_STATS_NBUCKETS 62

typedef struct dmm_stats {
    /* The paper's Table 2, over the operation stream. */
    uint64_t objects;        /* block lifetimes (op-stream ids) */
    uint64_t total_bytes;    /* sum of sizes of allocating ops (alloc + realloc) */
    uint64_t max_in_use;     /* peak of live requested bytes */
    uint64_t max_in_use_16;  /* the same with each block rounded up to 16
                                bytes (at least 16): the least a heap whose
                                every block is 16-byte aligned holds */
    double   avg_size;       /* total_bytes / alloc_calls, 0 when none */
    uint64_t memory_ops;     /* alloc + realloc + free ops */

    uint64_t alloc_calls;    /* allocating ops: ops_alloc + ops_realloc */
    uint64_t ops_alloc, ops_realloc, ops_free;

    /* Request sizes of the allocating ops. */
    uint64_t distinct_sizes;
    uint64_t min_size, max_size;     /* 0 when there are no allocating ops */
    dmm_stats_size_t *sizes;         /* every distinct size, most requested
                                        first (ties: smaller size first) */
    size_t   nsizes;
    uint64_t hist[DMM_STATS_NBUCKETS];

    /* Calls by kind, as recorded (failed ones included), and anomalies. */
    uint64_t records;
    uint64_t op_count[DMM_TRC_OP_MAX];
    uint64_t free_null, failed, unknown_free, reused_live;
    uint64_t live_blocks, live_bytes;   /* still allocated at the end */
    /* The blocks whose trace says how much of them was resident (format 4:
     * those glibc mapped on their own, at their free or at the end): how
     * many, their bytes, and their resident bytes (each at most its size). */
    uint64_t resident_blocks, resident_size, resident_bytes;

    uint64_t threads;        /* distinct thread ids */
    int      has_time;       /* 0 when the trace carries no clock */
    uint64_t duration_ns;    /* the earliest call's time to the latest
                                call's or clock sync's, whichever is later
                                (dmm_trace_t.last_sync_ns: a program that
                                allocates at its start and exits without
                                freeing ran to its exit's sample) */

    /* Call sites (only when the trace has stacks), most bytes first. */
    dmm_stats_site_t *sites;
    size_t   nsites;
} dmm_stats_t;

/* Compute everything above; st is overwritten.  Returns 0, or -1 with err
 * set (out of memory).  Free with dmm_stats_free(). */
int  dmm_stats_compute(const dmm_trace_t *t, dmm_stats_t *st, dmm_err_t *err);
/* The same for the .trc held in buf, as dmm_scan_trc reads it: the records
 * are never all held (memory: the live blocks, the distinct sizes, threads
 * and stacks, one block per thread; a file whose threads' calls are not in
 * seq order is loaded whole instead, see dmm_scan_trc).  t (zeroed) gets the
 * header, stacks and modules, for dmm_stats_print; st equals what
 * dmm_stats_compute gives for the loaded trace.  0, or -1 with err set (st
 * then empty; dmm_trace_free(t) either way). */
int  dmm_stats_scan_trc(const char *name, const uint8_t *buf, size_t len, dmm_trace_t *t,
                        dmm_stats_t *st, dmm_err_t *err);
void dmm_stats_free(dmm_stats_t *st);

/* Bucket of a size and its bounds, for the histogram above. */
unsigned dmm_stats_bucket(uint64_t size);
void     dmm_stats_bucket_range(unsigned b, uint64_t *lo, uint64_t *hi);

/* Write the statistics of t to out: text, or one JSON object when json is
 * set; top limits the lists of sizes and call sites. */
void dmm_stats_print(FILE *out, const dmm_trace_t *t, const dmm_stats_t *st,
                     int json, size_t top);

#endif
