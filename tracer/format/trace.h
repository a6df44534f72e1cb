/* trace.h - a trace in memory, whatever file it came from.
 *
 * Every reader (binary .trc in trc_read.c; mdriver .rep, glibc mtrace,
 * Android memory_replay and wee_alloc in textfmt.h) turns its input into the
 * same dmm_trace_t (load.h picks the reader): a
 * header and an array of records in a total order consistent with causality
 * (sorted by seq).  Formats that name blocks by id rather than by address
 * (.rep, wee_alloc) get pseudo-addresses, DMM_PSEUDO_ADDR(id), so that every
 * later stage (op stream, stats, convert) works on addresses alone.
 *
 * Errors: every function that can fail returns 0 on success and -1 on
 * failure, and fills a dmm_err_t with one line that names the file, the byte
 * offset or line, and the fault.  No input, however malformed, may crash a
 * reader or make it loop or allocate without bound.
 */
#ifndef DMM_FORMAT_TRACE_H
#define DMM_FORMAT_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tracer/base/err.h"
#include "tracer/format/trcfmt.h"

typedef enum dmm_format {
    DMM_FMT_UNKNOWN = 0,
    DMM_FMT_TRC,        /* dmm binary trace */
    DMM_FMT_REP,        /* CS:APP mdriver .rep */
    DMM_FMT_MTRACE,     /* glibc mtrace() output */
    DMM_FMT_ANDROID,    /* AOSP memory_replay text */
    DMM_FMT_WEE,        /* wee_alloc Alloc(n), / Free(i), */
    DMM_FMT_TEXT,       /* dmm's readable dump (write only) */
} dmm_format_t;

/* One allocation call, as recorded.  Same fields as dmm_trc_rec_t plus the
 * thread, which the file keeps per block. */
typedef struct dmm_rec {
    uint8_t  op;        /* DMM_TRC_* */
    uint8_t  flags;     /* DMM_TRC_RF_* */
    uint16_t reserved;
    uint32_t tid;
    uint32_t stack;     /* call-site id (index into dmm_trace_t.stacks), 0 none */
    int32_t  errnum;
    uint64_t seq;
    uint64_t time;      /* ns since the trace started */
    uint64_t size;
    uint64_t arg;       /* alignment or nmemb */
    uint64_t ptr_in;
    uint64_t ptr_out;
} dmm_rec_t;

/* A call stack: nframes return addresses, innermost first. */
typedef struct dmm_stack {
    uint32_t nframes;
    uint64_t first;     /* index of its first frame in dmm_trace_t.frames */
} dmm_stack_t;

/* An executable mapping of the traced process, for offline symbols. */
typedef struct dmm_module {
    uint64_t start, end, offset;
    char    *path;
} dmm_module_t;

typedef struct dmm_trace {
    char        *path;          /* as given; "-" for standard input */
    dmm_format_t format;
    uint32_t     flags;         /* DMM_TRC_F_* */
    uint32_t     pid, ppid;
    uint32_t     clock_id, clock_res_ns;
    uint32_t     stack_depth;
    uint32_t     time_stride;   /* records per clock read, 0 or 1: every one (trcfmt.h) */
    uint64_t     start_realtime_ns;
    char        *cmdline;       /* arguments separated by NUL */
    size_t       cmdline_len;

    dmm_rec_t   *recs;          /* sorted by seq; STACKDEF records become stacks[] */
    size_t       nrecs, caprecs;

    dmm_stack_t *stacks;        /* stacks[0] is the empty stack */
    size_t       nstacks;
    uint64_t    *frames;
    size_t       nframes;

    dmm_module_t *modules;
    size_t        nmodules;

    uint64_t     peak_rss;      /* the recorded process's peak RSS in bytes,
                                   the greatest its clock syncs sampled
                                   (trcfmt.h); 0 = not known */
    uint64_t     cpu_ns;        /* its CPU time (user + system, all its
                                   threads) at its last sample, in ns; 0 =
                                   not known */
    uint64_t     last_sync_ns;  /* the time of its latest clock sync, in ns
                                   on the records' clock: its last sample,
                                   taken at exit when it ended normally (a
                                   program may make its last call long
                                   before); 0 = none */
    int          truncated;     /* the file ended inside a block */
    char         note[512];     /* why it was truncated, for the user */
} dmm_trace_t;

/* Pseudo-address of block id for formats without addresses. */
#define DMM_PSEUDO_ADDR(id) (((uint64_t)(id) + 1u) << 4)

const char  *dmm_format_name(dmm_format_t f);
/* "trc", "rep", "mtrace", "android", "wee", "text"; DMM_FMT_UNKNOWN if none. */
dmm_format_t dmm_format_from_name(const char *name);
/* The format a file name suggests by its extension, or DMM_FMT_UNKNOWN. */
dmm_format_t dmm_format_from_path(const char *path);

void dmm_trace_free(dmm_trace_t *t);

/* Append a zeroed record (seq = its index); NULL on out of memory. */
dmm_rec_t *dmm_trace_push(dmm_trace_t *t);
/* Sort records by seq (stable); a no-op when already sorted. */
void dmm_trace_sort(dmm_trace_t *t);

const char *dmm_op_name(unsigned op);  /* "malloc", "free", ... */
/* 1 for calls that return a new block (malloc, calloc, aligned family). */
int dmm_op_is_alloc(unsigned op);

/* A command line (cmdline: arguments each ended by NUL, len bytes) as one
 * line of shell words, into out (cap bytes; 8*len + 4 always holds it): an
 * argument that the shell would split, expand or drop goes in single
 * quotes, a quote in it as '"'"'.  0 when a shell runs exactly that command
 * from the line; 1 when it cannot: an argument holds a control byte (shown
 * as '?') or out is too small (the line cut, ending in "..."). */
int dmm_cmdline_shell(const char *cmdline, size_t len, char *out, size_t cap);

#endif
