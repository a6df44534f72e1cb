/* stats.c - `dmm stats`: the paper's Table 2 for a trace, and the detail
 * behind it.
 *
 *   dmm stats [--json] [--top N] TRACE      (TRACE "-" = standard input)
 *
 * The Table 2 numbers are taken over the operation stream (opstream.h), so
 * that they describe exactly what `dmm sim` will replay: Objects = block
 * lifetimes (ids); Total memory = the sizes of all allocating ops (allocs
 * and the new sizes of reallocs); Max in use = the peak of live requested
 * bytes, a realloc changing its block's size; Average size = Total memory /
 * allocating ops; Memory ops = allocs + reallocs + frees.  Calls by kind are
 * counted over the records as recorded, failed calls included.
 *
 * Text and JSON come from the same calls into one emitter (em_*), and the
 * scalar sections are tables of fields, so the two outputs cannot drift.
 * JSON keys (stable; add, never rename):
 *
 *   trace       { path, format, pid, ppid, command, records, threads,
 *                 duration_s (null without a clock), truncated, note }
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
 *
 * Sizes, threads and sites are counted in hash tables or arrays indexed by
 * id, so a trace of n records costs O(n) plus sorting the distinct values.
 */
#include "tracer/stats/stats.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/cli/cli.h"
#include "tracer/format/opstream.h"
#include "tracer/stats/symbolize.h"

#define DEFAULT_TOP   10
#define SITE_FRAMES   4     /* frames shown per allocation site */
#define BAR_WIDTH     40

/* ---- counting table: uint64 key -> count (count 0 = empty slot) ---- */

typedef struct ctab {
    dmm_stats_size_t *s;    /* .size is the key */
    size_t cap, used;
} ctab_t;

static size_t mix64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return (size_t)k;
}

static int ctab_grow(ctab_t *c)
{
    size_t ncap = c->cap ? c->cap * 2 : 256;
    dmm_stats_size_t *ns = calloc(ncap, sizeof *ns);
    if (!ns)
        return -1;
    for (size_t i = 0; i < c->cap; i++) {
        if (!c->s[i].count)
            continue;
        size_t j = mix64(c->s[i].size) & (ncap - 1);
        while (ns[j].count)
            j = (j + 1) & (ncap - 1);
        ns[j] = c->s[i];
    }
    free(c->s);
    c->s = ns;
    c->cap = ncap;
    return 0;
}

static int ctab_add(ctab_t *c, uint64_t key)
{
    if ((c->used + 1) * 2 > c->cap && ctab_grow(c) != 0)
        return -1;
    size_t j = mix64(key) & (c->cap - 1);
    while (c->s[j].count && c->s[j].size != key)
        j = (j + 1) & (c->cap - 1);
    if (!c->s[j].count) {
        c->s[j].size = key;
        c->used++;
    }
    c->s[j].count++;
    return 0;
}

/* ---- computation ---- */

unsigned dmm_stats_bucket(uint64_t size)
{
    if (size == 0)
        return 0;
    if (size <= 16)
        return 1;
    unsigned lg = 64 - (unsigned)__builtin_clzll(size - 1);   /* ceil(log2 size) */
    return lg - 3;
}

void dmm_stats_bucket_range(unsigned b, uint64_t *lo, uint64_t *hi)
{
    if (b == 0) {
        *lo = *hi = 0;
    } else if (b == 1) {
        *lo = 1;
        *hi = 16;
    } else {
        *lo = (1ull << (b + 2)) + 1;
        *hi = b + 3 >= 64 ? UINT64_MAX : 1ull << (b + 3);
    }
}

static int cmp_size_by_count(const void *a, const void *b)
{
    const dmm_stats_size_t *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return x->size < y->size ? -1 : x->size > y->size;
}

static int cmp_site_by_bytes(const void *a, const void *b)
{
    const dmm_stats_site_t *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

/* Table 2 and the size tables, from the operation stream. */
static int walk_ops(const dmm_opstream_t *s, dmm_stats_t *st, ctab_t *sizes)
{
    uint64_t *bsize = calloc(s->nids ? s->nids : 1, sizeof *bsize);
    uint8_t *live = calloc(s->nids / 8 + 1, 1);
    if (!bsize || !live) {
        free(bsize);
        free(live);
        return -1;
    }
    uint64_t in_use = 0, nlive = 0;
    int rc = 0;
    for (size_t i = 0; i < s->nops && rc == 0; i++) {
        const dmm_op_t *op = &s->ops[i];
        if (op->id >= s->nids)
            continue;   /* the op stream never does this; be safe anyway */
        uint8_t bit = (uint8_t)(1u << (op->id & 7));
        uint8_t *lb = &live[op->id / 8];
        switch (op->kind) {
        case DMM_OP_ALLOC:
        case DMM_OP_REALLOC:
            if (op->kind == DMM_OP_ALLOC)
                st->ops_alloc++;
            else
                st->ops_realloc++;
            if (*lb & bit) {
                in_use -= bsize[op->id];
            } else {
                *lb |= bit;
                nlive++;
            }
            bsize[op->id] = op->size;
            in_use += op->size;
            st->total_bytes += op->size;
            if (st->alloc_calls == 0 || op->size < st->min_size)
                st->min_size = op->size;
            if (op->size > st->max_size)
                st->max_size = op->size;
            st->alloc_calls++;
            st->hist[dmm_stats_bucket(op->size)]++;
            rc = ctab_add(sizes, op->size);
            break;
        case DMM_OP_FREE:
            st->ops_free++;
            if (*lb & bit) {
                *lb &= (uint8_t)~bit;
                in_use -= bsize[op->id];
                nlive--;
            }
            break;
        default:
            break;
        }
        if (in_use > st->max_in_use)
            st->max_in_use = in_use;
    }
    st->live_blocks = nlive;
    st->live_bytes = in_use;
    free(bsize);
    free(live);
    return rc;
}

/* Calls by kind, threads, duration and allocation sites, from the records. */
static int walk_records(const dmm_trace_t *t, dmm_stats_t *st)
{
    ctab_t tids = { 0 };
    dmm_stats_site_t *sites = NULL;
    int rc = 0;
    if (t->nstacks > 1 && t->stacks) {
        sites = calloc(t->nstacks, sizeof *sites);
        if (!sites)
            return -1;
    }
    uint64_t tmin = UINT64_MAX, tmax = 0;
    uint32_t last_tid = 0;
    int have_tid = 0;
    for (size_t i = 0; i < t->nrecs && rc == 0; i++) {
        const dmm_rec_t *r = &t->recs[i];
        if (r->op >= DMM_TRC_OP_MAX)
            continue;
        st->op_count[r->op]++;
        if (r->op == DMM_TRC_STACKDEF || r->op == DMM_TRC_MODULE)
            continue;   /* bookkeeping, not calls of the program */
        if (!have_tid || r->tid != last_tid) {   /* runs of one thread are common */
            rc = ctab_add(&tids, r->tid);
            last_tid = r->tid;
            have_tid = 1;
        }
        if (r->time < tmin)
            tmin = r->time;
        if (r->time > tmax)
            tmax = r->time;
        int allocating = (dmm_op_is_alloc(r->op) || r->op == DMM_TRC_REALLOC ||
                          r->op == DMM_TRC_REALLOCARRAY) &&
                         !(r->flags & DMM_TRC_RF_FAILED) && r->ptr_out != 0;
        if (sites && allocating && r->stack != 0 && r->stack < t->nstacks) {
            sites[r->stack].count++;
            sites[r->stack].bytes += r->size;
        }
    }
    /* Distinct tids: count the keys (re-adding a run's tid only bumps its
     * count). */
    st->threads = tids.used;
    free(tids.s);
    st->has_time = !(t->flags & DMM_TRC_F_NOTIME);
    st->duration_ns = tmin <= tmax ? tmax - tmin : 0;
    if (sites && rc == 0) {
        size_t n = 0;
        for (size_t k = 1; k < t->nstacks; k++)
            if (sites[k].count) {
                sites[n] = sites[k];
                sites[n].stack = (uint32_t)k;
                n++;
            }
        qsort(sites, n, sizeof *sites, cmp_site_by_bytes);
        st->sites = sites;
        st->nsites = n;
    } else {
        free(sites);
    }
    return rc;
}

int dmm_stats_compute(const dmm_trace_t *t, dmm_stats_t *st, dmm_err_t *err)
{
    memset(st, 0, sizeof *st);
    const char *name = t->path ? t->path : "trace";
    dmm_opstream_t s;
    if (dmm_opstream_build(t, &s, err) != 0)
        return -1;
    st->objects = s.nids;
    st->memory_ops = s.nops;
    st->free_null = s.free_null;
    st->unknown_free = s.unknown_free;
    st->failed = s.failed;
    st->reused_live = s.reused_live;
    st->records = t->nrecs;

    ctab_t sizes = { 0 };
    int rc = walk_ops(&s, st, &sizes);
    dmm_opstream_free(&s);
    if (rc == 0)
        rc = walk_records(t, st);
    if (rc != 0) {
        free(sizes.s);
        dmm_stats_free(st);
        return dmm_err_set(err, "%s: out of memory computing statistics", name);
    }
    st->avg_size = st->alloc_calls ? (double)st->total_bytes / (double)st->alloc_calls : 0.0;

    /* Compact the size table in place and order it by popularity. */
    size_t n = 0;
    for (size_t i = 0; i < sizes.cap; i++)
        if (sizes.s[i].count)
            sizes.s[n++] = sizes.s[i];
    if (n)   /* sizes.s is NULL for a trace without allocations */
        qsort(sizes.s, n, sizeof *sizes.s, cmp_size_by_count);
    st->sizes = sizes.s;
    st->nsizes = n;
    st->distinct_sizes = n;
    return 0;
}

void dmm_stats_free(dmm_stats_t *st)
{
    if (!st)
        return;
    free(st->sizes);
    free(st->sites);
    memset(st, 0, sizeof *st);
}

/* ---- the emitter: one set of calls, text or JSON ---- */

typedef struct em {
    FILE *out;
    int   json;
    int   depth;      /* JSON: open containers */
    int   first;      /* JSON: nothing written yet in the innermost one */
    int   row;        /* text: inside a list row (fields are columns) */
    int   row_open;   /* text: the row's line is not ended yet */
    int   started;    /* text: a section was printed (blank line before the next) */
} em_t;

static void j_newline(em_t *e)
{
    fputc('\n', e->out);
    for (int i = 0; i < e->depth; i++)
        fputs("  ", e->out);
}

static void j_string_n(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c == '\t')
            fputs("\\t", f);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);   /* UTF-8 passes through; invalid bytes too */
    }
    fputc('"', f);
}

static void j_string(em_t *e, const char *s, size_t n)
{
    j_string_n(e->out, s, n);
}

void dmm_json_str(FILE *f, const char *s)
{
    if (s)
        j_string_n(f, s, strlen(s));
    else
        fputs("null", f);
}

/* JSON: the comma, the indentation and the key (none for array items). */
static void j_key(em_t *e, const char *key)
{
    if (!e->first)
        fputc(',', e->out);
    e->first = 0;
    j_newline(e);
    if (key) {
        j_string(e, key, strlen(key));
        fputs(": ", e->out);
    }
}

static void j_open(em_t *e, const char *key, char c)
{
    j_key(e, key);
    fputc(c, e->out);
    e->depth++;
    e->first = 1;
}

static void j_close(em_t *e, char c)
{
    e->depth--;
    if (!e->first)
        j_newline(e);
    fputc(c, e->out);
    e->first = 0;
}

static void em_begin(em_t *e, FILE *out, int json)
{
    *e = (em_t){ .out = out, .json = json, .first = 1 };
    if (json) {
        fputc('{', out);
        e->depth = 1;
    }
}

static void em_end(em_t *e)
{
    if (e->json) {
        e->depth = 0;
        fputs("\n}\n", e->out);
    }
}

static void em_section(em_t *e, const char *key, const char *title)
{
    if (e->json) {
        j_open(e, key, '{');
    } else {
        fprintf(e->out, "%s%s\n", e->started ? "\n" : "", title);
        e->started = 1;
    }
}

static void em_section_end(em_t *e)
{
    if (e->json)
        j_close(e, '}');
}

static void em_list(em_t *e, const char *key, const char *title, const char *header)
{
    if (e->json) {
        j_open(e, key, '[');
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
        j_close(e, ']');
}

static void em_row(em_t *e)
{
    if (e->json) {
        j_open(e, NULL, '{');
    } else {
        e->row = e->row_open = 1;
        fputs("  ", e->out);
    }
}

static void em_row_end(em_t *e)
{
    if (e->json) {
        j_close(e, '}');
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
        j_key(e, key);
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
        j_key(e, key);
        j_string(e, s, n);
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
    /* The arguments are NUL-separated: show them space-separated, without
     * the terminating NULs. */
    size_t n = t->cmdline ? t->cmdline_len : 0;
    while (n > 0 && t->cmdline[n - 1] == '\0')
        n--;
    char *cmd = malloc(n + 1);
    if (cmd) {
        for (size_t i = 0; i < n; i++)
            cmd[i] = t->cmdline[i] ? t->cmdline[i] : ' ';
        cmd[n] = 0;
    }
    em_str(e, "command", "command", cmd ? cmd : "", cmd ? n : 0);
    free(cmd);
    em_u64(e, "records", "records", 0, NULL, st->records);
    em_u64(e, "threads", "threads", 0, NULL, st->threads);
    if (st->has_time)
        em_f64(e, "duration_s", "duration (s)", 0, NULL, 9, (double)st->duration_ns / 1e9);
    else
        em_null(e, "duration_s", "duration (s)");
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

    print_top_sizes(&e, st, top);
    print_histogram(&e, st);
    print_sites(&e, t, st, top);
    em_end(&e);
}

/* ---- the subcommand ---- */

static void usage(FILE *f)
{
    fputs("usage: dmm stats [--json] [--top N] TRACE\n"
          "  Print the paper's Table 2 statistics of TRACE (any format dmm reads;\n"
          "  \"-\" reads standard input) and the detail behind them.\n"
          "  --json    one JSON object instead of text\n"
          "  --top N   list the N most requested sizes and call sites (default 10)\n",
          f);
}

static int parse_top(const char *s, size_t *top)
{
    char *end;
    if (!s || !*s || *s == '-')
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || v > 1000000)
        return -1;
    *top = (size_t)v;
    return 0;
}

int dmm_stats_main(int argc, char **argv)
{
    int json = 0;
    size_t top = DEFAULT_TOP;
    const char *path = NULL;
    int opts_done = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!opts_done && strcmp(a, "--") == 0) {
            opts_done = 1;
        } else if (!opts_done && strcmp(a, "--json") == 0) {
            json = 1;
        } else if (!opts_done && strcmp(a, "--top") == 0) {
            if (parse_top(i + 1 < argc ? argv[++i] : NULL, &top) != 0) {
                fprintf(stderr, "dmm stats: --top needs a count from 0 to 1000000\n");
                usage(stderr);
                return 1;
            }
        } else if (!opts_done && strncmp(a, "--top=", 6) == 0) {
            if (parse_top(a + 6, &top) != 0) {
                fprintf(stderr, "dmm stats: --top needs a count from 0 to 1000000\n");
                usage(stderr);
                return 1;
            }
        } else if (!opts_done && (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)) {
            usage(stdout);
            return 0;
        } else if (!opts_done && a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "dmm stats: unknown option %s\n", a);
            usage(stderr);
            return 1;
        } else if (path) {
            fprintf(stderr, "dmm stats: one trace at a time\n");
            usage(stderr);
            return 1;
        } else {
            path = a;
        }
    }
    if (!path) {
        usage(stderr);
        return 1;
    }

    dmm_trace_t t;
    dmm_err_t err = { { 0 } };
    if (dmm_trace_load(path, &t, &err) != 0) {
        fprintf(stderr, "dmm stats: %s\n", err.msg);
        return 2;
    }
    dmm_stats_t st;
    if (dmm_stats_compute(&t, &st, &err) != 0) {
        fprintf(stderr, "dmm stats: %s\n", err.msg);
        dmm_trace_free(&t);
        return 2;
    }
    if (!json && t.truncated)
        fprintf(stderr, "dmm stats: warning: %s\n", t.note[0] ? t.note : "trace is truncated");
    dmm_stats_print(stdout, &t, &st, json, top);
    dmm_stats_free(&st);
    dmm_trace_free(&t);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "dmm stats: error writing the output\n");
        return 2;
    }
    return 0;
}
