/* load.h - a trace from a file or a buffer, whatever format it is in.
 *
 * The format is detected from the content (magic numbers, the shape of the
 * first lines), never from the file name; the reader of that format fills a
 * dmm_trace_t, whose records are then sorted into causal order (seq) and,
 * for traces timed in TSC ticks, converted to nanoseconds.  Errors name the
 * file, the byte offset or line, and the fault; a file that is not a trace
 * (a zip, a zstd frame, a near-miss of the .trc magic) is told as such. */
#ifndef DMM_FORMAT_LOAD_H
#define DMM_FORMAT_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "tracer/format/trace.h"

/* What is in buf?  Looks at magic numbers and the first lines. */
dmm_format_t dmm_format_detect(const uint8_t *buf, size_t len);

/* Load any supported trace ("-" = standard input), format auto-detected. */
int dmm_trace_load(const char *path, dmm_trace_t *t, dmm_err_t *err);
/* Parse buf (named name in messages) as fmt (DMM_FMT_UNKNOWN = detect). */
int dmm_trace_parse(const char *name, const uint8_t *buf, size_t len,
                    dmm_format_t fmt, dmm_trace_t *t, dmm_err_t *err);

/* A TSC-timed trace's clock: ns per tick from its CLOCKSYNC records with
 * the least (lo) and greatest (hi) tick count (arg; time = ns then), or 0
 * when they give no believable rate; and a tick count in ns through it. */
double   dmm_tsc_rate(const dmm_rec_t *lo, const dmm_rec_t *hi);
uint64_t dmm_tsc_to_ns(double rate, const dmm_rec_t *lo, uint64_t ticks);

/* Those two syncs gathered as a scan meets them (dmm_scan_trc gives the
 * CLOCKSYNC records outside the calls' order): the least and greatest tick
 * count, the lower seq among equals, as the loader finds them in the
 * sorted trace.  Zeroed to start; rate() is 0 without any. */
typedef struct dmm_tsc_syncs {
    dmm_rec_t lo, hi;
    int       have;
} dmm_tsc_syncs_t;
void   dmm_tsc_syncs_add(dmm_tsc_syncs_t *s, const dmm_rec_t *r);
double dmm_tsc_syncs_rate(const dmm_tsc_syncs_t *s);

#endif
