/* trace.c - what every trace reader shares: errors, the record array, format
 * detection, file loading, operation names and CRC-32. */
#include "tracer/format/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int dmm_err_set(dmm_err_t *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static const char *const op_names[DMM_TRC_OP_MAX] = {
    [DMM_TRC_MALLOC] = "malloc",
    [DMM_TRC_CALLOC] = "calloc",
    [DMM_TRC_REALLOC] = "realloc",
    [DMM_TRC_REALLOCARRAY] = "reallocarray",
    [DMM_TRC_FREE] = "free",
    [DMM_TRC_MEMALIGN] = "memalign",
    [DMM_TRC_POSIX_MEMALIGN] = "posix_memalign",
    [DMM_TRC_ALIGNED_ALLOC] = "aligned_alloc",
    [DMM_TRC_VALLOC] = "valloc",
    [DMM_TRC_PVALLOC] = "pvalloc",
    [DMM_TRC_RELEASE] = "release",
    [DMM_TRC_STACKDEF] = "stackdef",
    [DMM_TRC_THREAD_EXIT] = "thread_exit",
    [DMM_TRC_FORK] = "fork",
    [DMM_TRC_EXEC] = "exec",
    [DMM_TRC_MODULE] = "module",
    [DMM_TRC_CLOCKSYNC] = "clocksync",
};

const char *dmm_op_name(unsigned op)
{
    if (op < DMM_TRC_OP_MAX && op_names[op])
        return op_names[op];
    return "?";
}

int dmm_op_is_alloc(unsigned op)
{
    switch (op) {
    case DMM_TRC_MALLOC: case DMM_TRC_CALLOC: case DMM_TRC_MEMALIGN:
    case DMM_TRC_POSIX_MEMALIGN: case DMM_TRC_ALIGNED_ALLOC:
    case DMM_TRC_VALLOC: case DMM_TRC_PVALLOC:
        return 1;
    default:
        return 0;
    }
}

dmm_rec_t *dmm_trace_push(dmm_trace_t *t)
{
    if (t->nrecs == t->caprecs) {
        size_t cap = t->caprecs ? t->caprecs * 2 : 4096;
        if (cap > SIZE_MAX / sizeof *t->recs)
            return NULL;
        dmm_rec_t *r = realloc(t->recs, cap * sizeof *r);
        if (!r)
            return NULL;
        t->recs = r;
        t->caprecs = cap;
    }
    dmm_rec_t *r = &t->recs[t->nrecs];
    memset(r, 0, sizeof *r);
    r->seq = t->nrecs++;
    return r;
}

/* Records of one thread are already in seq order, and a single-threaded
 * trace is entirely so, so check before sorting.  A merge sort keeps it
 * stable and O(n log n) on any input. */
static void merge_sort(dmm_rec_t *a, dmm_rec_t *tmp, size_t n)
{
    if (n < 2)
        return;
    size_t h = n / 2;
    merge_sort(a, tmp, h);
    merge_sort(a + h, tmp, n - h);
    if (a[h - 1].seq <= a[h].seq)
        return;
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n)
        tmp[k++] = a[j].seq < a[i].seq ? a[j++] : a[i++];
    while (i < h)
        tmp[k++] = a[i++];
    memcpy(a, tmp, k * sizeof *a);
}

void dmm_trace_sort(dmm_trace_t *t)
{
    size_t i;
    for (i = 1; i < t->nrecs; i++)
        if (t->recs[i].seq < t->recs[i - 1].seq)
            break;
    if (i >= t->nrecs)
        return;
    dmm_rec_t *tmp = malloc(t->nrecs * sizeof *tmp);
    if (tmp) {
        merge_sort(t->recs, tmp, t->nrecs);
        free(tmp);
    } else {   /* no memory for the merge: insertion sort, slow but sure */
        for (i = 1; i < t->nrecs; i++) {
            dmm_rec_t r = t->recs[i];
            size_t j = i;
            while (j > 0 && t->recs[j - 1].seq > r.seq) {
                t->recs[j] = t->recs[j - 1];
                j--;
            }
            t->recs[j] = r;
        }
    }
}

void dmm_trace_free(dmm_trace_t *t)
{
    if (!t)
        return;
    free(t->path);
    free(t->cmdline);
    free(t->recs);
    free(t->stacks);
    free(t->frames);
    for (size_t i = 0; i < t->nmodules; i++)
        free(t->modules[i].path);
    free(t->modules);
    memset(t, 0, sizeof *t);
}

static const char *const fmt_names[] = {
    [DMM_FMT_UNKNOWN] = "unknown", [DMM_FMT_TRC] = "trc", [DMM_FMT_REP] = "rep",
    [DMM_FMT_MTRACE] = "mtrace", [DMM_FMT_ANDROID] = "android",
    [DMM_FMT_WEE] = "wee", [DMM_FMT_TEXT] = "text",
};

const char *dmm_format_name(dmm_format_t f)
{
    if ((unsigned)f < sizeof fmt_names / sizeof fmt_names[0])
        return fmt_names[f];
    return "unknown";
}

dmm_format_t dmm_format_from_name(const char *name)
{
    for (unsigned i = 1; i < sizeof fmt_names / sizeof fmt_names[0]; i++)
        if (strcmp(name, fmt_names[i]) == 0)
            return (dmm_format_t)i;
    return DMM_FMT_UNKNOWN;
}

dmm_format_t dmm_format_from_path(const char *path)
{
    const char *dot = strrchr(path, '.');
    if (!dot || strchr(dot, '/'))
        return DMM_FMT_UNKNOWN;
    dot++;
    if (!strcmp(dot, "trc")) return DMM_FMT_TRC;
    if (!strcmp(dot, "rep")) return DMM_FMT_REP;
    if (!strcmp(dot, "mtrace")) return DMM_FMT_MTRACE;
    if (!strcmp(dot, "trace")) return DMM_FMT_WEE;
    if (!strcmp(dot, "txt") || !strcmp(dot, "text")) return DMM_FMT_TEXT;
    return DMM_FMT_UNKNOWN;
}

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

int dmm_read_file(const char *path, uint8_t **bufp, size_t *lenp, dmm_err_t *err)
{
    int fd = strcmp(path, "-") == 0 ? 0 : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return dmm_err_set(err, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        return dmm_err_set(err, "%s: is a directory, not a trace", path);
    }
    size_t cap = (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
                     ? (size_t)st.st_size + 1 : 1 << 16;
    size_t len = 0;
    uint8_t *buf = malloc(cap);
    if (!buf) {
        if (fd) close(fd);
        return dmm_err_set(err, "%s: out of memory reading the file", path);
    }
    for (;;) {
        if (len == cap) {
            uint8_t *nb = cap < SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
            if (!nb) {
                free(buf);
                if (fd) close(fd);
                return dmm_err_set(err, "%s: out of memory reading the file", path);
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            free(buf);
            if (fd) close(fd);
            return dmm_err_set(err, "%s: offset %zu: read error: %s", path, len, strerror(e));
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    if (fd)
        close(fd);
    *bufp = buf;
    *lenp = len;
    return 0;
}

/* A trace recorded with DMM_TRC_CLOCK_TSC has record times in ticks:
 * convert them to nanoseconds through the line between the first and the
 * last CLOCKSYNC, and drop the CLOCKSYNC records.  Without two syncs far
 * enough apart there is no rate, and the trace says it has no times. */
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
    double rate = 0;   /* ns per tick */
    if (lo && hi && hi->arg > lo->arg && hi->time > lo->time)
        rate = (double)(hi->time - lo->time) / (double)(hi->arg - lo->arg);
    if (!(rate > 1e-4 && rate < 1e4))   /* a TSC runs between 100 kHz and 10 THz */
        rate = 0;
    size_t k = 0;
    for (size_t i = 0; i < t->nrecs; i++) {
        dmm_rec_t r = t->recs[i];
        if (r.op == DMM_TRC_CLOCKSYNC)
            continue;
        if (rate) {
            double ns = (double)lo->time + ((double)r.time - (double)lo->arg) * rate;
            r.time = ns > 0 ? (uint64_t)ns : 0;
        } else {
            r.time = 0;
        }
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
