/* text.h - what the readers and writers of the four text trace formats
 * share (rep.c, mtrace.c, android.c, wee.c; their interface is textfmt.h).
 * Private to tracer/format.
 *
 * The readers share one line scanner that works on raw bytes: no NUL
 * terminator is assumed and any byte may appear, blank lines and '#'
 * comments are skipped, "\r\n" ends a line like "\n", and lines are numbered
 * from 1 for messages.  Numbers are parsed by hand with overflow checks, so a
 * 100-digit field is an error rather than a silent wrap-around.  Every reader
 * makes one pass and keeps O(records) state, so no input makes it slow or
 * makes it allocate more than a constant times the input size.
 *
 * How records are shaped for opstream.c: a realloc that moved its block is a
 * DMM_TRC_RELEASE of the old address followed by a DMM_TRC_REALLOC; an
 * in-place realloc is a REALLOC alone with ptr_in == ptr_out; realloc(NULL)
 * has ptr_in 0; realloc(p, 0) that freed p has ptr_out 0.  Formats without
 * addresses (.rep, wee) name block k by DMM_PSEUDO_ADDR(k). */
#ifndef DMM_FORMAT_TEXT_H
#define DMM_FORMAT_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tracer/base/err.h"
#include "tracer/base/hash.h"
#include "tracer/format/trace.h"

#define DMM_TEXT_MAX_SIZE ((uint64_t)INT64_MAX)        /* sizes must fit in 63 bits */
#define DMM_TEXT_MAX_ID   ((uint64_t)UINT32_MAX - 1)   /* op-stream ids are uint32 */
#define DMM_TEXT_NO_TIME  UINT64_MAX                   /* while reading: line had no time */

/* ---- reading ---- */

typedef struct dmm_text_tok {
    const uint8_t *p;
    size_t         n;
} dmm_text_tok_t;

typedef struct dmm_text_lines {
    const char    *name;
    const uint8_t *buf;
    size_t         len, pos;
    uint64_t       lineno;      /* of the current line, from 1 */
    const uint8_t *s, *e;       /* the current line, blanks trimmed */
    dmm_err_t     *err;
} dmm_text_lines_t;

void dmm_text_init(dmm_text_lines_t *L, const char *name, const uint8_t *buf, size_t len,
                   dmm_err_t *err);
int  dmm_text_is_blank(uint8_t c);
/* Moves to the next line that is neither blank nor a '#' comment; 0 at the
 * end of the input. */
int  dmm_text_next_line(dmm_text_lines_t *L);
/* Splits [s, e) at blanks into at most max tokens.  Returns the count, or
 * max + 1 when there are more (the caller reports too many fields without
 * us walking an enormous line into an unbounded array). */
size_t dmm_text_split(const uint8_t *s, const uint8_t *e, dmm_text_tok_t *tok, size_t max);
int  dmm_text_tok_is(dmm_text_tok_t t, const char *word);
/* A token as a message may show it: quoted, cut at 40 bytes, any byte that
 * is not printable ASCII escaped, so that garbage input gives a readable
 * one-line error.  buf holds DMM_TEXT_QUOTE bytes. */
#define DMM_TEXT_QUOTE 176
const char *dmm_text_quote(dmm_text_tok_t t, char *buf);
/* "NAME: line N: fault"; returns -1. */
int  dmm_text_err(dmm_text_lines_t *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* How a number field is written: decimal; 0x-hex or decimal; as AUTO or
 * "(nil)" for 0. */
enum { DMM_TEXT_DEC, DMM_TEXT_AUTO, DMM_TEXT_PTR };
/* Parses t as a number no larger than max; on failure the error names the
 * line, what the field is (what) and the token. */
int  dmm_text_num(dmm_text_lines_t *L, dmm_text_tok_t t, int mode, uint64_t max,
                  const char *what, uint64_t *out);

/* Records appended to t, out of memory reported against the line. */
dmm_rec_t *dmm_text_push(dmm_text_lines_t *L, dmm_trace_t *t, unsigned op, uint32_t tid,
                         uint64_t time);
/* A realloc seen as old -> new: moved blocks get a RELEASE first (see
 * above); new == 0 with size > 0 is a failed call, with size 0 it freed
 * old. */
int  dmm_text_push_realloc(dmm_text_lines_t *L, dmm_trace_t *t, uint32_t tid, uint64_t time,
                           uint64_t old, uint64_t new, uint64_t size);
int  dmm_text_push_alloc(dmm_text_lines_t *L, dmm_trace_t *t, unsigned op, uint32_t tid,
                         uint64_t time, uint64_t ptr, uint64_t size, uint64_t arg);
int  dmm_text_push_free(dmm_text_lines_t *L, dmm_trace_t *t, uint32_t tid, uint64_t time,
                        uint64_t ptr);

/* ---- writing ---- */

/* The trace's name in messages. */
const char *dmm_text_trace_name(const dmm_trace_t *t);
/* Flush out: 0, or -1 with err naming the trace and the write error. */
int  dmm_text_finish(const dmm_trace_t *t, FILE *out, dmm_err_t *err);
int  dmm_text_is_realloc(unsigned op);
/* The text formats print a realloc as one event, so the RELEASE before a
 * moved realloc is held per thread and printed with its REALLOC; this
 * returns the old address a REALLOC record stands for, as opstream.c reads
 * it.  pending holds tid + 1 -> released address. */
uint64_t dmm_text_realloc_old(dmm_u64map_t *pending, const dmm_rec_t *r);

#endif
