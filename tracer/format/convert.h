/* convert.h - a .trc written in another format without holding its
 * records (dmm convert).  The readable text dump, mtrace and Android are
 * written a record at a time from two scans of the file (dmm_scan_trc):
 * the first counts the calls and finds the clock syncs that their times
 * convert through, the second writes; .rep and wee from the operation
 * stream, built as the file is scanned.  The output is the one the
 * whole-trace writers give for the loaded trace, byte for byte. */
#ifndef DMM_FORMAT_CONVERT_H
#define DMM_FORMAT_CONVERT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tracer/format/load.h"
#include "tracer/format/opstream.h"
#include "tracer/format/trace.h"

typedef struct dmm_convert {
    dmm_format_t    fmt;
    const char     *name;
    const uint8_t  *buf;
    size_t          len;
    dmm_trace_t     h;       /* the loader's header, stacks, modules; nrecs: the calls */
    dmm_tsc_syncs_t syncs;
    int             tsc;     /* the file's times are TSC ticks */
    int             kept_syncs;  /* clock syncs the loader keeps as records */
    dmm_opstream_t  ops;     /* .rep and wee */
    char            note[512];   /* the cut-short note, "" when the file is whole */
} dmm_convert_t;

/* Read buf, the whole .trc named name, for writing as fmt: every error in
 * the input shows here, before anything is written.  0: ready (buf must
 * live until dmm_convert_write); 1: not this way, the caller loads the
 * trace and writes it whole (fmt is trc; or a thread's calls are not in
 * seq order in the file, which the loader sorts; or the clock is not the
 * TSC and the file holds clock syncs, which the loader keeps among the
 * calls); -1: err says why.
 * dmm_convert_free(c) in every case. */
int  dmm_convert_begin(dmm_convert_t *c, const char *name, const uint8_t *buf, size_t len,
                       dmm_format_t fmt, dmm_err_t *err);
/* Write it to out: 0, or -1 with err naming outname (a write error, out of
 * memory). */
int  dmm_convert_write(dmm_convert_t *c, FILE *out, const char *outname, dmm_err_t *err);
void dmm_convert_free(dmm_convert_t *c);

#endif
