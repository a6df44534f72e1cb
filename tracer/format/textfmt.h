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

#endif
