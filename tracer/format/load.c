/* load.c - a trace from a file or a buffer, whatever its format (see
 * load.h): the format detected from the content, the reader of that format,
 * then the records put in causal order and their times in nanoseconds. */
#include "tracer/format/load.h"

#include <stdlib.h>
#include <string.h>

#include "tracer/base/file.h"
#include "tracer/format/textfmt.h"
#include "tracer/format/trc_read.h"

/* Helpers for the text sniffers: the first non-blank, non-comment line. */
static size_t next_line(const uint8_t *b, size_t len, size_t pos, size_t *start, size_t *end)
{
    while (pos < len) {
        size_t s = pos;
        while (pos < len && b[pos] != '\n')
            pos++;
        size_t e = pos;
        if (pos < len)
            pos++;
        while (s < e && (b[s] == ' ' || b[s] == '\t' || b[s] == '\r'))
            s++;
        while (e > s && (b[e - 1] == ' ' || b[e - 1] == '\t' || b[e - 1] == '\r'))
            e--;
        if (s < e && b[s] != '#') {
            *start = s;
            *end = e;
            return pos;
        }
    }
    *start = *end = len;
    return len;
}

static int starts(const uint8_t *b, size_t s, size_t e, const char *p)
{
    size_t n = strlen(p);
    return e - s >= n && memcmp(b + s, p, n) == 0;
}

dmm_format_t dmm_format_detect(const uint8_t *buf, size_t len)
{
    if (len >= 8 && memcmp(buf, DMM_TRC_MAGIC, 8) == 0)
        return DMM_FMT_TRC;
    size_t pos = 0, s, e;
    int numeric_lines = 0;
    for (int n = 0; n < 8 && pos < len; n++) {
        pos = next_line(buf, len, pos, &s, &e);
        if (s >= e)
            break;
        if (starts(buf, s, e, "Alloc(") || starts(buf, s, e, "Free("))
            return DMM_FMT_WEE;
        if (starts(buf, s, e, "= Start") || starts(buf, s, e, "@ ") ||
            starts(buf, s, e, "+ 0x") || starts(buf, s, e, "- 0x"))
            return DMM_FMT_MTRACE;
        /* "<tid>: <op> ..." */
        size_t i = s;
        while (i < e && buf[i] >= '0' && buf[i] <= '9')
            i++;
        if (i > s && i < e && buf[i] == ':')
            return DMM_FMT_ANDROID;
        if (i == e || (i > s && (buf[i] == ' ' || buf[i] == '\t'))) {
            /* a line of numbers: part of an mdriver header */
            numeric_lines++;
            continue;
        }
        if ((buf[s] == 'a' || buf[s] == 'r' || buf[s] == 'f') && s + 1 < e &&
            (buf[s + 1] == ' ' || buf[s + 1] == '\t'))
            return DMM_FMT_REP;
        break;
    }
    if (numeric_lines >= 1 && pos >= len)
        return DMM_FMT_REP;   /* a header and no operations: an empty .rep */
    return DMM_FMT_UNKNOWN;
}

/* A trace recorded with DMM_TRC_CLOCK_TSC has record times in ticks:
 * convert them to nanoseconds through the line between the first and the
 * last CLOCKSYNC, and drop the CLOCKSYNC records.  Without two syncs far
 * enough apart there is no rate, and the trace says it has no times. */
double dmm_tsc_rate(const dmm_rec_t *lo, const dmm_rec_t *hi)
{
    double rate = 0;   /* ns per tick */
    if (lo && hi && hi->arg > lo->arg && hi->time > lo->time)
        rate = (double)(hi->time - lo->time) / (double)(hi->arg - lo->arg);
    if (!(rate > 1e-4 && rate < 1e4))   /* a TSC runs between 100 kHz and 10 THz */
        rate = 0;
    return rate;
}

uint64_t dmm_tsc_to_ns(double rate, const dmm_rec_t *lo, uint64_t ticks)
{
    double ns = (double)lo->time + ((double)ticks - (double)lo->arg) * rate;
    return ns > 0 ? (uint64_t)ns : 0;
}

void dmm_tsc_syncs_add(dmm_tsc_syncs_t *s, const dmm_rec_t *r)
{
    if (!s->have || r->arg < s->lo.arg || (r->arg == s->lo.arg && r->seq < s->lo.seq))
        s->lo = *r;
    if (!s->have || r->arg > s->hi.arg || (r->arg == s->hi.arg && r->seq < s->hi.seq))
        s->hi = *r;
    s->have = 1;
}

double dmm_tsc_syncs_rate(const dmm_tsc_syncs_t *s)
{
    return s->have ? dmm_tsc_rate(&s->lo, &s->hi) : 0;
}

static void clock_to_ns(dmm_trace_t *t)
{
    if (t->clock_id != DMM_TRC_CLOCK_TSC)
        return;
    const dmm_rec_t *lo = NULL, *hi = NULL;
    for (size_t i = 0; i < t->nrecs; i++) {
        const dmm_rec_t *r = &t->recs[i];
        if (r->op != DMM_TRC_CLOCKSYNC)
            continue;
        if (!lo || r->arg < lo->arg)
            lo = r;
        if (!hi || r->arg > hi->arg)
            hi = r;
    }
    double rate = dmm_tsc_rate(lo, hi);
    dmm_rec_t base = lo ? *lo : (dmm_rec_t){ 0 };   /* lo's slot is overwritten below */
    size_t k = 0;
    for (size_t i = 0; i < t->nrecs; i++) {
        dmm_rec_t r = t->recs[i];
        if (r.op == DMM_TRC_CLOCKSYNC)
            continue;
        r.time = rate ? dmm_tsc_to_ns(rate, &base, r.time) : 0;
        t->recs[k++] = r;
    }
    t->nrecs = k;
    t->clock_id = 1;   /* CLOCK_MONOTONIC */
    if (!rate)
        t->flags |= DMM_TRC_F_NOTIME;
}

int dmm_trace_parse(const char *name, const uint8_t *buf, size_t len,
                    dmm_format_t fmt, dmm_trace_t *t, dmm_err_t *err)
{
    memset(t, 0, sizeof *t);
    if (len == 0)
        return dmm_err_set(err, "%s: offset 0: empty file, not a trace", name);
    if (fmt == DMM_FMT_UNKNOWN)
        fmt = dmm_format_detect(buf, len);
    int rc;
    switch (fmt) {
    case DMM_FMT_TRC:     rc = dmm_read_trc(name, buf, len, t, err); break;
    case DMM_FMT_REP:     rc = dmm_read_rep(name, buf, len, t, err); break;
    case DMM_FMT_MTRACE:  rc = dmm_read_mtrace(name, buf, len, t, err); break;
    case DMM_FMT_ANDROID: rc = dmm_read_android(name, buf, len, t, err); break;
    case DMM_FMT_WEE:     rc = dmm_read_wee(name, buf, len, t, err); break;
    default:
        if (len >= 4 && memcmp(buf, "PK\3\4", 4) == 0)
            return dmm_err_set(err, "%s: offset 0: a zip archive, not a trace; "
                               "unpack it first, e.g. unzip -p FILE | dmm stats -", name);
        if (len >= 4 && memcmp(buf, "\x28\xb5\x2f\xfd", 4) == 0)
            return dmm_err_set(err, "%s: offset 0: a zstd-compressed file; "
                               "decompress it first, e.g. zstdcat FILE | dmm stats -", name);
        if (len >= 8 && memcmp(buf, "DMMTRAC", 7) == 0)
            return dmm_err_set(err, "%s: offset 0: bad magic, not a dmm trace", name);
        return dmm_err_set(err, "%s: offset 0: not a trace in any format dmm reads "
                           "(trc, rep, mtrace, android, wee)", name);
    }
    if (rc != 0) {
        dmm_trace_free(t);
        return -1;
    }
    t->format = fmt;
    t->path = strdup(name);
    dmm_trace_sort(t);
    clock_to_ns(t);
    return 0;
}

int dmm_trace_load(const char *path, dmm_trace_t *t, dmm_err_t *err)
{
    uint8_t *buf;
    size_t len;
    memset(t, 0, sizeof *t);
    if (dmm_read_file(path, &buf, &len, err) != 0)
        return -1;
    int rc = dmm_trace_parse(path, buf, len, DMM_FMT_UNKNOWN, t, err);
    free(buf);
    return rc;
}
