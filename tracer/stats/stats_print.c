/* stats_print.c - the statistics of a trace as text for people or as one
 * JSON object for programs (dmm_stats_print, see stats.h).
 *
 * Text and JSON come from the same calls into one emitter (em_*), and the
 * scalar sections are tables of fields, so the two outputs cannot drift.
 * JSON keys (stable; add, never rename):
 *
 *   trace       { path, format, pid, ppid, command, records, threads,
 *                 duration_s (the first call to the last call or clock
 *                 sample, the exit's; null without a clock), peak_rss_bytes (the
 *                 process's, tracer included; null where the trace does not
 *                 say), cpu_s (its CPU time, user + system, every thread's;
 *                 null where the trace does not say), truncated, note }
 *   table2      { objects, total_memory, max_in_use, average_size, memory_ops }
 *   op_stream   { allocs, reallocs, frees, allocating_ops }
 *   sizes       { distinct, min, max }
 *   calls       { malloc, calloc, realloc, reallocarray, free, memalign,
 *                 posix_memalign, aligned_alloc, valloc, pvalloc,
 *                 free_null, failed, unknown_free, reused_live }
 *   live_at_end { blocks, bytes }
 *   top_sizes   [ { size, count, share_pct } ]       most requested first
 *   histogram   [ { lo, hi, count } ]                first to last non-empty
 *                                                    power-of-two bucket
 *   top_sites   [ { stack, count, bytes, frames: [ "fn+0x1f (mod)", ... ] } ]
 *                                                    most bytes first; empty
 *                                                    without call stacks
 */
#include "tracer/stats/stats.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/base/json.h"
#include "tracer/stats/symbolize.h"

#define SITE_FRAMES   4     /* frames shown per allocation site */
#define BAR_WIDTH     40

/* ---- the emitter: one set of calls, text or JSON ---- */

typedef struct em {
    FILE *out;
    int   json;
    dmm_json_t j;     /* JSON: the writer */
    int   row;        /* text: inside a list row (fields are columns) */
    int   row_open;   /* text: the row's line is not ended yet */
    int   started;    /* text: a section was printed (blank line before the next) */
} em_t;

static void em_begin(em_t *e, FILE *out, int json)
{
    *e = (em_t){ .out = out, .json = json };
    if (json)
        dmm_json_begin(&e->j, out, 1);
}

static void em_end(em_t *e)
{
    if (e->json)
        dmm_json_end(&e->j);
}

static void em_section(em_t *e, const char *key, const char *title)
{
    if (e->json) {
        dmm_json_obj(&e->j, key);
    } else {
        fprintf(e->out, "%s%s\n", e->started ? "\n" : "", title);
        e->started = 1;
    }
}

static void em_section_end(em_t *e)
{
    if (e->json)
        dmm_json_close_obj(&e->j);
}

static void em_list(em_t *e, const char *key, const char *title, const char *header)
{
    if (e->json) {
        dmm_json_arr(&e->j, key);
        return;
    }
    if (e->row_open) {
        fputc('\n', e->out);
        e->row_open = 0;
    }
    if (title)
        fprintf(e->out, "\n%s\n", title);
    if (header)
        fprintf(e->out, "  %s\n", header);
}

static void em_list_end(em_t *e)
{
    if (e->json)
        dmm_json_close_arr(&e->j);
}

static void em_row(em_t *e)
{
    if (e->json) {
        dmm_json_obj(&e->j, NULL);
    } else {
        e->row = e->row_open = 1;
        fputs("  ", e->out);
    }
}

static void em_row_end(em_t *e)
{
    if (e->json) {
        dmm_json_close_obj(&e->j);
    } else {
        if (e->row_open)
            fputc('\n', e->out);
        e->row = e->row_open = 0;
    }
}

/* A scalar whose text form is txt and whose JSON form is js.  In text, a
 * row field is a column of the given width (negative = left-aligned)
 * followed by sep; an array item (key NULL) is a line of its own; any other
 * field is "label  value". */
static void em_scalar(em_t *e, const char *key, const char *label, int width,
                      const char *sep, const char *txt, const char *js)
{
    if (e->json) {
        dmm_json_key(&e->j, key);
        fputs(js, e->out);
    } else if (e->row && e->row_open) {
        fprintf(e->out, "%*s%s", width, txt, sep ? sep : " ");
    } else if (!key) {
        fprintf(e->out, "      %s\n", txt);
    } else {
        fprintf(e->out, "  %-30s %s\n", label, txt);
    }
}

static void em_u64(em_t *e, const char *key, const char *label, int width,
                   const char *sep, uint64_t v)
{
    char b[32];
    snprintf(b, sizeof b, "%" PRIu64, v);
    em_scalar(e, key, label, width, sep, b, b);
}

static void em_f64(em_t *e, const char *key, const char *label, int width,
                   const char *sep, int prec, double v)
{
    char b[64];
    snprintf(b, sizeof b, "%.*f", prec, v);
    em_scalar(e, key, label, width, sep, b, b);
}

static void em_null(em_t *e, const char *key, const char *label)
{
    em_scalar(e, key, label, 0, NULL, "n/a", "null");
}

static void em_bool(em_t *e, const char *key, const char *label, int v)
{
    em_scalar(e, key, label, 0, NULL, v ? "yes" : "no", v ? "true" : "false");
}

/* A string of n bytes; in text, bytes that would garble the terminal are
 * shown as '?'. */
static void em_str(em_t *e, const char *key, const char *label, const char *s, size_t n)
{
    if (e->json) {
        dmm_json_string_n(&e->j, key, s, n);
        return;
    }
    if (e->row && e->row_open)
        fputs("  ", e->out);
    else if (!key)
        fputs("      ", e->out);
    else
        fprintf(e->out, "  %-30s ", label);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        fputc(c < 0x20 || c == 0x7f ? '?' : c, e->out);
    }
    if (!(e->row && e->row_open))
        fputc('\n', e->out);
}

/* Text only: a bar of count relative to max. */
static void em_bar(em_t *e, uint64_t count, uint64_t max)
{
    if (e->json || !max)
        return;
    size_t n = (size_t)((double)count / (double)max * BAR_WIDTH + 0.5);
    if (n == 0 && count)
        n = 1;
    for (size_t i = 0; i < n; i++)
        fputc('#', e->out);
}

/* ---- the field tables ---- */

typedef enum { F_U64, F_F64 } ftype_t;

typedef struct field {
    const char *key, *label;
    ftype_t     type;
    size_t      off;        /* into dmm_stats_t */
    int         prec;       /* F_F64 */
} field_t;

#define U64(k, l, m) { k, l, F_U64, offsetof(dmm_stats_t, m), 0 }
#define F64(k, l, m, p) { k, l, F_F64, offsetof(dmm_stats_t, m), p }

static const field_t table2_fields[] = {
    U64("objects", "Objects", objects),
    U64("total_memory", "Total memory (bytes)", total_bytes),
    U64("max_in_use", "Max in use (bytes)", max_in_use),
    F64("average_size", "Average size (bytes)", avg_size, 2),
    U64("memory_ops", "Memory ops", memory_ops),
};

static const field_t opstream_fields[] = {
    U64("allocs", "allocs", ops_alloc),
    U64("reallocs", "reallocs", ops_realloc),
    U64("frees", "frees", ops_free),
    U64("allocating_ops", "allocating ops", alloc_calls),
};

static const field_t size_fields[] = {
    U64("distinct", "distinct sizes", distinct_sizes),
    U64("min", "smallest (bytes)", min_size),
    U64("max", "largest (bytes)", max_size),
    U64("max_in_use_16", "Max in use, 16-byte blocks", max_in_use_16),
};

/* The calls of the malloc API, in the order the table shows them. */
static const unsigned call_ops[] = {
    DMM_TRC_MALLOC, DMM_TRC_CALLOC, DMM_TRC_REALLOC, DMM_TRC_REALLOCARRAY,
    DMM_TRC_FREE, DMM_TRC_MEMALIGN, DMM_TRC_POSIX_MEMALIGN,
    DMM_TRC_ALIGNED_ALLOC, DMM_TRC_VALLOC, DMM_TRC_PVALLOC,
};

static const field_t anomaly_fields[] = {
    U64("free_null", "free(NULL)", free_null),
    U64("failed", "failed calls", failed),
    U64("unknown_free", "frees of unknown pointers", unknown_free),
    U64("reused_live", "allocations at a live address", reused_live),
};

static const field_t live_fields[] = {
    U64("blocks", "blocks", live_blocks),
    U64("bytes", "bytes", live_bytes),
};

static const field_t resident_fields[] = {
    U64("blocks", "blocks", resident_blocks),
    U64("bytes", "bytes", resident_size),
    U64("resident_bytes", "resident (bytes)", resident_bytes),
};

#define NF(a) (sizeof(a) / sizeof((a)[0]))

static void em_fields(em_t *e, const dmm_stats_t *st, const field_t *f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *p = (const char *)st + f[i].off;
        if (f[i].type == F_U64) {
            uint64_t v;
            memcpy(&v, p, sizeof v);
            em_u64(e, f[i].key, f[i].label, 0, NULL, v);
        } else {
            double v;
            memcpy(&v, p, sizeof v);
            em_f64(e, f[i].key, f[i].label, 0, NULL, f[i].prec, v);
        }
    }
}

/* ---- printing ---- */

static void print_trace_section(em_t *e, const dmm_trace_t *t, const dmm_stats_t *st)
{
    em_section(e, "trace", "Trace");
    const char *path = t->path ? t->path : "";
    em_str(e, "path", "file", path, strlen(path));
    const char *fmt = dmm_format_name(t->format);
    em_str(e, "format", "format", fmt, strlen(fmt));
    em_u64(e, "pid", "pid", 0, NULL, t->pid);
    em_u64(e, "ppid", "ppid", 0, NULL, t->ppid);
    /* The arguments as shell words: a line that runs the program again */
    size_t n = t->cmdline ? t->cmdline_len : 0;
    char *cmd = malloc(8 * n + 4);
    if (cmd)
        dmm_cmdline_shell(t->cmdline, n, cmd, 8 * n + 4);
    em_str(e, "command", "command", cmd ? cmd : "", cmd ? strlen(cmd) : 0);
    free(cmd);
    em_u64(e, "records", "records", 0, NULL, st->records);
    em_u64(e, "threads", "threads", 0, NULL, st->threads);
    if (st->has_time)
        em_f64(e, "duration_s", "duration (s)", 0, NULL, 9, (double)st->duration_ns / 1e9);
    else
        em_null(e, "duration_s", "duration (s)");
    if (t->peak_rss)
        em_u64(e, "peak_rss_bytes", "process peak RSS (bytes)", 0, NULL, t->peak_rss);
    else
        em_null(e, "peak_rss_bytes", "process peak RSS (bytes)");
    if (t->cpu_ns)
        em_f64(e, "cpu_s", "process CPU time (s)", 0, NULL, 3, (double)t->cpu_ns / 1e9);
    else
        em_null(e, "cpu_s", "process CPU time (s)");
    /* Text shows these two only when they say something. */
    if (e->json || t->truncated) {
        em_bool(e, "truncated", "WARNING: truncated", t->truncated);
        const char *note = t->truncated ? t->note : "";
        em_str(e, "note", "why", note, strnlen(note, sizeof t->note));
    }
    em_section_end(e);
}

static void print_top_sizes(em_t *e, const dmm_stats_t *st, size_t top)
{
    size_t n = st->nsizes < top ? st->nsizes : top;
    char title[64];
    snprintf(title, sizeof title, "Most requested sizes (top %zu)", n);
    em_list(e, "top_sizes", title, "        size          count   share %");
    for (size_t i = 0; i < n; i++) {
        em_row(e);
        em_u64(e, "size", NULL, 12, " ", st->sizes[i].size);
        em_u64(e, "count", NULL, 14, " ", st->sizes[i].count);
        em_f64(e, "share_pct", NULL, 9, "", 2,
               st->alloc_calls ? 100.0 * (double)st->sizes[i].count / (double)st->alloc_calls : 0);
        em_row_end(e);
    }
    em_list_end(e);
}

static void print_histogram(em_t *e, const dmm_stats_t *st)
{
    unsigned lo = DMM_STATS_NBUCKETS, hi = 0;
    uint64_t max = 0;
    for (unsigned b = 0; b < DMM_STATS_NBUCKETS; b++)
        if (st->hist[b]) {
            if (lo == DMM_STATS_NBUCKETS)
                lo = b;
            hi = b;
            if (st->hist[b] > max)
                max = st->hist[b];
        }
    em_list(e, "histogram", "Size histogram (bytes)", "       from-to                  count");
    for (unsigned b = lo; b <= hi && lo < DMM_STATS_NBUCKETS; b++) {
        uint64_t blo, bhi;
        dmm_stats_bucket_range(b, &blo, &bhi);
        em_row(e);
        em_u64(e, "lo", NULL, 11, "-", blo);
        em_u64(e, "hi", NULL, -11, "", bhi);
        em_u64(e, "count", NULL, 14, "  ", st->hist[b]);
        em_bar(e, st->hist[b], max);
        em_row_end(e);
    }
    em_list_end(e);
}

static void print_sites(em_t *e, const dmm_trace_t *t, const dmm_stats_t *st, size_t top)
{
    size_t n = st->nsites < top ? st->nsites : top;
    if (!e->json && n == 0)
        return;
    em_list(e, "top_sites", "Top allocation sites (by bytes)",
            "     stack          count          bytes");
    for (size_t i = 0; i < n; i++) {
        const dmm_stats_site_t *s = &st->sites[i];
        em_row(e);
        em_u64(e, "stack", NULL, 10, " ", s->stack);
        em_u64(e, "count", NULL, 14, " ", s->count);
        em_u64(e, "bytes", NULL, 14, "", s->bytes);
        em_list(e, "frames", NULL, NULL);
        const dmm_stack_t *k = &t->stacks[s->stack];
        for (uint32_t f = 0; f < k->nframes && f < SITE_FRAMES; f++) {
            if (k->first > t->nframes || f >= t->nframes - k->first)
                break;   /* a stack pointing past the frame table */
            char name[512];
            dmm_symbolize(t, t->frames[k->first + f], name, sizeof name);
            em_str(e, NULL, NULL, name, strlen(name));
        }
        em_list_end(e);
        em_row_end(e);
    }
    em_list_end(e);
}

void dmm_stats_print(FILE *out, const dmm_trace_t *t, const dmm_stats_t *st,
                     int json, size_t top)
{
    em_t e;
    em_begin(&e, out, json);
    print_trace_section(&e, t, st);

    em_section(&e, "table2", "Table 2 (paper section 6.1)");
    em_fields(&e, st, table2_fields, NF(table2_fields));
    em_section_end(&e);

    em_section(&e, "op_stream", "Operation stream");
    em_fields(&e, st, opstream_fields, NF(opstream_fields));
    em_section_end(&e);

    em_section(&e, "sizes", "Request sizes");
    em_fields(&e, st, size_fields, NF(size_fields));
    em_section_end(&e);

    em_section(&e, "calls", "Calls by kind (as recorded)");
    for (size_t i = 0; i < NF(call_ops); i++)
        em_u64(&e, dmm_op_name(call_ops[i]), dmm_op_name(call_ops[i]), 0, NULL,
               st->op_count[call_ops[i]]);
    em_fields(&e, st, anomaly_fields, NF(anomaly_fields));
    em_section_end(&e);

    em_section(&e, "live_at_end", "Live at end");
    em_fields(&e, st, live_fields, NF(live_fields));
    em_section_end(&e);

    /* a trace of format 4 says it for the blocks glibc mapped on their own;
     * in text, only where it said it for any */
    if (json || st->resident_blocks) {
        em_section(&e, "resident", "Resident (blocks glibc mapped on their own)");
        em_fields(&e, st, resident_fields, NF(resident_fields));
        uint64_t of = st->resident_size ? st->resident_size : 1;
        em_f64(&e, "resident_share", "resident share %", 0, NULL, 1,
               100.0 * (double)st->resident_bytes / (double)of);
        em_section_end(&e);
    }

    print_top_sizes(&e, st, top);
    print_histogram(&e, st);
    print_sites(&e, t, st, top);
    em_end(&e);
}

/* ---- the subcommand ---- */
