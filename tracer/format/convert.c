/* convert.c - a .trc written in another format without holding its
 * records (see convert.h). */
#include "tracer/format/convert.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/base/hash.h"
#include "tracer/format/dump.h"
#include "tracer/format/textfmt.h"
#include "tracer/format/trc_read.h"

/* The first scan: how many calls, and the clock syncs.  Where the clock
 * is not the TSC the loader keeps a sync (none that libdmmtrace.so writes)
 * among the calls, by seq, which the scan does not give: such a file is
 * read whole. */
static int count_rec(void *ctx, const dmm_rec_t *r)
{
    dmm_convert_t *c = ctx;
    if (r->op != DMM_TRC_CLOCKSYNC)
        c->h.nrecs++;
    else if (c->h.clock_id == DMM_TRC_CLOCK_TSC)   /* the header comes before any record */
        dmm_tsc_syncs_add(&c->syncs, r);
    else
        c->kept_syncs = 1;
    return 0;
}

int dmm_convert_begin(dmm_convert_t *c, const char *name, const uint8_t *buf, size_t len,
                      dmm_format_t fmt, dmm_err_t *err)
{
    memset(c, 0, sizeof *c);
    c->fmt = fmt;
    c->name = name;
    c->buf = buf;
    c->len = len;
    if (fmt == DMM_FMT_REP || fmt == DMM_FMT_WEE)
        return dmm_opstream_build_trc(name, buf, len, &c->ops, c->note, sizeof c->note, err);
    if (fmt != DMM_FMT_TEXT && fmt != DMM_FMT_MTRACE && fmt != DMM_FMT_ANDROID)
        return 1;
    int rc = dmm_scan_trc(name, buf, len, &c->h, count_rec, c, err);
    if (rc != 0 || c->kept_syncs)
        return rc < 0 ? -1 : 1;
    /* the header as the loader leaves it */
    c->h.format = DMM_FMT_TRC;
    if (c->h.clock_id == DMM_TRC_CLOCK_TSC) {
        c->tsc = 1;
        c->h.clock_id = 1;   /* CLOCK_MONOTONIC */
        if (!dmm_tsc_syncs_rate(&c->syncs))
            c->h.flags |= DMM_TRC_F_NOTIME;
    }
    if (!(c->h.path = strdup(name)))
        return dmm_err_set(err, "%s: out of memory", name);
    snprintf(c->note, sizeof c->note, "%s", c->h.truncated ? c->h.note : "");
    return 0;
}

/* The second scan: each call, its time converted as the loader converts
 * it, to the writer. */
typedef struct {
    const dmm_convert_t *c;
    FILE                *out;
    double               rate;      /* ns per tick; 0: no time */
    dmm_u64map_t         pending;
    int                  timed;
} write_t;

static int write_rec(void *ctx, const dmm_rec_t *rp)
{
    write_t *w = ctx;
    if (rp->op == DMM_TRC_CLOCKSYNC)
        return 0;
    dmm_rec_t r = *rp;
    if (w->c->tsc)
        r.time = w->rate ? dmm_tsc_to_ns(w->rate, &w->c->syncs.lo, r.time) : 0;
    switch (w->c->fmt) {
    case DMM_FMT_TEXT:   dmm_dump_rec(&r, w->out); return 0;
    case DMM_FMT_MTRACE: return dmm_mtrace_rec(&r, w->out, &w->pending);
    default:             return dmm_android_rec(&r, w->out, &w->pending, w->timed);
    }
}

int dmm_convert_write(dmm_convert_t *c, FILE *out, const char *outname, dmm_err_t *err)
{
    if (c->fmt == DMM_FMT_REP)
        return dmm_write_rep_ops(outname, &c->ops, out, err);
    if (c->fmt == DMM_FMT_WEE)
        return dmm_write_wee_ops(outname, &c->ops, out, err);
    write_t w = { .c = c, .out = out, .rate = dmm_tsc_syncs_rate(&c->syncs),
                  .pending = DMM_U64MAP_INIT, .timed = !(c->h.flags & DMM_TRC_F_NOTIME) };
    if (c->fmt == DMM_FMT_TEXT)
        dmm_dump_begin(&c->h, out);
    else if (c->fmt == DMM_FMT_MTRACE)
        fputs(DMM_MTRACE_START, out);
    /* the same bytes as the first scan read: only the writer can fail */
    dmm_trace_t again;
    memset(&again, 0, sizeof again);
    int rc = dmm_scan_trc(c->name, c->buf, c->len, &again, write_rec, &w, err);
    dmm_trace_free(&again);
    dmm_u64map_free(&w.pending);
    if (rc != 0)
        return dmm_err_set(err, "%s: out of memory writing %s", outname, dmm_format_name(c->fmt));
    if (c->fmt == DMM_FMT_TEXT)
        dmm_dump_end(&c->h, out);   /* the stack table; its flush is checked below */
    else if (c->fmt == DMM_FMT_MTRACE)
        fputs(DMM_MTRACE_END, out);
    if (fflush(out) != 0 || ferror(out))
        return dmm_err_set(err, "%s: write error: %s", outname, strerror(errno ? errno : EIO));
    return 0;
}

void dmm_convert_free(dmm_convert_t *c)
{
    dmm_trace_free(&c->h);
    dmm_opstream_free(&c->ops);
}
