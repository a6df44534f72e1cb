/* textfmt.h - writers of the four text trace formats that dmm reads: the
 * CS:APP mdriver .rep, glibc mtrace() output, AOSP memory_replay text and
 * wee_alloc's Alloc(n),/Free(i), lists.  The readers are declared in
 * trace.h (dmm_read_rep, dmm_read_mtrace, dmm_read_android, dmm_read_wee);
 * both sides live in textfmt.c.
 *
 * The .rep and wee writers work from the operation stream (block ids, no
 * addresses); the mtrace and Android writers print the records themselves,
 * addresses included (pseudo-addresses for traces read from .rep or wee).
 * Each returns 0, or -1 with err naming the trace and the fault (an output
 * error, or out of memory building the operation stream). */
#ifndef DMM_TEXTFMT_H
#define DMM_TEXTFMT_H

#include <stdio.h>

#include "tracer/format/trace.h"

int dmm_write_rep(const dmm_trace_t *t, FILE *out, dmm_err_t *err);
int dmm_write_mtrace(const dmm_trace_t *t, FILE *out, dmm_err_t *err);
int dmm_write_android(const dmm_trace_t *t, FILE *out, dmm_err_t *err);
int dmm_write_wee(const dmm_trace_t *t, FILE *out, dmm_err_t *err);

#endif
