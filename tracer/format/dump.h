/* dump.h - a trace as readable text (dmm convert --to text): the header
 * and the stack table as # comments, then one record per line with every
 * field named.  For people and for diffs; no reader reads it back. */
#ifndef DMM_FORMAT_DUMP_H
#define DMM_FORMAT_DUMP_H

#include <stdio.h>

#include "tracer/format/trace.h"

/* 0, or -1 on a write error. */
int dmm_write_text(const dmm_trace_t *t, FILE *out);

/* The same a record at a time (convert.h streams a .trc so): the header
 * from t (t->nrecs: how many records will come; its own records are not
 * read), each record in order, then the stack table and the flush (0, or
 * -1 on a write error). */
void dmm_dump_begin(const dmm_trace_t *t, FILE *out);
void dmm_dump_rec(const dmm_rec_t *r, FILE *out);
int  dmm_dump_end(const dmm_trace_t *t, FILE *out);

#endif
