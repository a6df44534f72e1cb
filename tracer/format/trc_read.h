/* trc_read.h - the reader of dmm's binary trace files (trcfmt.h).
 *
 * Every block's header and payload checksums are verified; a file cut
 * short reads up to its last whole block, and the trace says where and why
 * (dmm_trace_t.truncated, .note).  Stack and module tables are rebuilt from
 * their records.  Lengths and counts are bounded (trcfmt.h's limits), so a
 * corrupt file can neither crash the reader nor make it allocate without
 * bound. */
#ifndef DMM_FORMAT_TRC_READ_H
#define DMM_FORMAT_TRC_READ_H

#include <stddef.h>
#include <stdint.h>

#include "tracer/format/trace.h"

/* t must be zeroed; 0, or -1 with err naming the file, offset and fault. */
int dmm_read_trc(const char *name, const uint8_t *buf, size_t len, dmm_trace_t *t,
                 dmm_err_t *err);

/* The calls of the same file, in the order the loader sorts them to
 * (dmm_trace_load: by seq, file order among equals), handed one at a time
 * to fn (nonzero: stop; the scan returns -1 and fn sets err), without
 * holding them all: one decoded block per thread.  t (zeroed) gets the
 * header (before fn sees any record), stacks, modules and any cut-short
 * note, never records.  Times are as recorded (TSC ticks where the clock is
 * the TSC: dmm_tsc_rate, load.h); the CLOCKSYNC records that convert them
 * (which the loader then drops) come to fn as their block is decoded,
 * outside the calls' order, and fn's return for them is not asked for.
 * 0; 1 when every call was given but some thread's calls were not in seq
 * order in the file (never so as libdmmtrace.so writes them: a damaged or
 * hand-made file), so that the order given is not the loader's and a
 * caller that needs it reads the file whole instead; or -1 with err set.
 * dmm_trace_free(t) in every case. */
int dmm_scan_trc(const char *name, const uint8_t *buf, size_t len, dmm_trace_t *t,
                 int (*fn)(void *ctx, const dmm_rec_t *rec), void *ctx, dmm_err_t *err);

#endif
