/* trace.c - a trace in memory: the record array, its order, operation and
 * format names (see trace.h). */
#include "tracer/format/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const op_names[DMM_TRC_OP_END] = {
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
    [DMM_TRC_RESIDENT] = "resident",
};

const char *dmm_op_name(unsigned op)
{
    if (op < DMM_TRC_OP_END && op_names[op])
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

/* A byte the shell takes as itself outside quotes (Python's shlex.quote's
 * set). */
static int shell_safe(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("@%+=:,./_-", c));
}

int dmm_cmdline_shell(const char *cmdline, size_t len, char *out, size_t cap)
{
    if (!cap)
        return 1;
    while (len && !cmdline[len - 1])
        len--;
    size_t k = 0;
    int inexact = 0;
#define PUT(str)                                      \
    do {                                              \
        for (const char *s_ = (str); *s_; s_++) {     \
            if (k + 1 >= cap)                         \
                goto cut;                             \
            out[k++] = *s_;                           \
        }                                             \
    } while (0)
    for (size_t i = 0; i < len;) {
        size_t end = i;
        while (end < len && cmdline[end])
            end++;
        int quote = end == i;
        for (size_t j = i; j < end; j++)
            quote |= !shell_safe((unsigned char)cmdline[j]);
        if (i)
            PUT(" ");
        if (quote)
            PUT("'");
        for (size_t j = i; j < end; j++) {
            unsigned char c = (unsigned char)cmdline[j];
            char one[2] = { (char)c, 0 };
            if (c < 0x20 || c == 0x7f) {
                inexact = 1;
                one[0] = '?';
            }
            if (c == '\'')
                PUT("'\"'\"'");
            else
                PUT(one);
        }
        if (quote)
            PUT("'");
        i = end + 1;
    }
#undef PUT
    out[k] = 0;
    return inexact;
cut:
    /* room for "..." at the end */
    k = cap > 4 ? cap - 4 : 0;
    memcpy(out + k, "...", cap - 1 - k);
    out[cap - 1] = 0;
    return 1;
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
