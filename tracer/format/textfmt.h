/* textfmt.h - the four text trace formats that dmm reads and writes: the
 * CS:APP mdriver .rep (rep.c), glibc mtrace() output (mtrace.c), AOSP
 * memory_replay text (android.c) and wee_alloc's Alloc(n),/Free(i), lists
 * (wee.c).
 *
 * Readers: t must be zeroed; they set t->format; 0, or -1 with err naming
 * the file, the line and the fault.  Callers normally go through
 * dmm_trace_load (load.h), which detects the format.
 *
 * Writers: the .rep and wee writers work from the operation stream (block
 * ids, no addresses); the mtrace and Android writers print the records
 * themselves, addresses included (pseudo-addresses for traces read from
 * .rep or wee).  Each returns 0, or -1 with err naming the trace and the
 * fault (an output error, or out of memory building the operation
 * stream). */
#ifndef DMM_FORMAT_TEXTFMT_H
#define DMM_FORMAT_TEXTFMT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tracer/base/hash.h"
#include "tracer/format/opstream.h"
#include "tracer/format/trace.h"

int dmm_read_rep(const char *name, const uint8_t *buf, size_t len, dmm_trace_t *t, dmm_err_t *err);
int dmm_read_mtrace(const char *name, const uint8_t *buf, size_t len, dmm_trace_t *t,
                    dmm_err_t *err);
int dmm_read_android(const char *name, const uint8_t *buf, size_t len, dmm_trace_t *t,
                     dmm_err_t *err);
int dmm_read_wee(const char *name, const uint8_t *buf, size_t len, dmm_trace_t *t, dmm_err_t *err);

int dmm_write_rep(const dmm_trace_t *t, FILE *out, dmm_err_t *err);
int dmm_write_mtrace(const dmm_trace_t *t, FILE *out, dmm_err_t *err);
int dmm_write_android(const dmm_trace_t *t, FILE *out, dmm_err_t *err);
int dmm_write_wee(const dmm_trace_t *t, FILE *out, dmm_err_t *err);

/* The same without the trace in memory (convert.h streams a .trc so).  The
 * .rep and wee writers from the operation stream (name: the trace's, for
 * messages).  The mtrace and Android writers a record at a time, in the
 * trace's order: mtrace's start line, each record, its end line; pending
 * (DMM_U64MAP_INIT, the caller's to free) holds each thread's released
 * address until the realloc it belongs to; timed: the trace has times
 * (no DMM_TRC_F_NOTIME).  The record writers return 0, or -1 out of
 * memory; the output's errors are the caller's to check. */
int dmm_write_rep_ops(const char *name, const dmm_opstream_t *s, FILE *out, dmm_err_t *err);
int dmm_write_wee_ops(const char *name, const dmm_opstream_t *s, FILE *out, dmm_err_t *err);
#define DMM_MTRACE_START "= Start\n"
#define DMM_MTRACE_END   "= End\n"
int dmm_mtrace_rec(const dmm_rec_t *r, FILE *out, dmm_u64map_t *pending);
int dmm_android_rec(const dmm_rec_t *r, FILE *out, dmm_u64map_t *pending, int timed);

#endif
