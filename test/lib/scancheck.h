/* scancheck.h - what the tests of dmm_scan_trc share: a trace file read
 * both ways, whole (dmm_trace_load: every record, sorted) and scanned
 * (dmm_scan_trc: a call at a time, one block per thread held), must give
 * the same calls in the same order, the same operation stream
 * (dmm_opstream_build against dmm_opstream_build_trc) and the same
 * statistics (dmm_stats_compute against dmm_stats_scan_trc), and the same
 * bytes in every text format (the whole-trace writers against convert.h,
 * which streams).  Header-only: the test file that includes it has
 * Criterion and the core library. */
#ifndef DMM_TEST_SCANCHECK_H
#define DMM_TEST_SCANCHECK_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/base/file.h"
#include "tracer/format/convert.h"
#include "tracer/format/dump.h"
#include "tracer/format/load.h"
#include "tracer/format/textfmt.h"
#include "tracer/format/opstream.h"
#include "tracer/format/trc_read.h"
#include "tracer/stats/stats.h"

typedef struct scan_cmp {
    const dmm_trace_t *whole;
    size_t at;          /* the next of whole's records to meet */
    size_t clocks;      /* CLOCKSYNC records met */
    int    bad;         /* the first mismatch is reported once */
} scan_cmp_t;

static int scan_cmp_call(void *ctx, const dmm_rec_t *r)
{
    scan_cmp_t *c = ctx;
    if (r->op == DMM_TRC_CLOCKSYNC) {
        c->clocks++;   /* the loader converts times through them, then drops them */
        return 0;
    }
    if (c->bad)
        return 0;
    if (c->at >= c->whole->nrecs) {
        cr_expect_fail("the scan gives more calls than the %zu loaded", c->whole->nrecs);
        c->bad = 1;
        return 0;
    }
    const dmm_rec_t *w = &c->whole->recs[c->at];
    if (w->op != r->op || w->tid != r->tid || w->seq != r->seq || w->size != r->size ||
        w->arg != r->arg || w->ptr_in != r->ptr_in || w->ptr_out != r->ptr_out ||
        w->stack != r->stack || w->flags != r->flags) {
        cr_expect_fail("call %zu: the scan gives op %u tid %u seq %llu out %#llx, the loader "
                       "op %u tid %u seq %llu out %#llx", c->at, r->op, r->tid,
                       (unsigned long long)r->seq, (unsigned long long)r->ptr_out, w->op,
                       w->tid, (unsigned long long)w->seq, (unsigned long long)w->ptr_out);
        c->bad = 1;
    }
    c->at++;
    return 0;
}

/* The statistics of the loaded trace and of the scanned bytes: equal,
 * field by field and list by list. */
static void assert_same_stats(const char *path, const dmm_trace_t *whole, const uint8_t *buf,
                              size_t len)
{
    dmm_stats_t a, b;
    dmm_trace_t head;
    dmm_err_t err;
    memset(&head, 0, sizeof head);
    cr_assert_eq(dmm_stats_compute(whole, &a, &err), 0, "%s", err.msg);
    cr_assert_eq(dmm_stats_scan_trc(path, buf, len, &head, &b, &err), 0, "%s", err.msg);
    cr_expect_eq(a.records, b.records, "%s: records %llu against %llu", path,
                 (unsigned long long)a.records, (unsigned long long)b.records);
    cr_expect_eq(a.max_in_use, b.max_in_use, "%s", path);
    cr_expect_eq(a.duration_ns, b.duration_ns, "%s: duration %llu against %llu ns", path,
                 (unsigned long long)a.duration_ns, (unsigned long long)b.duration_ns);
    cr_expect_eq(a.nsizes, b.nsizes);
    cr_expect_eq(a.nsites, b.nsites);
    cr_expect(a.nsizes == b.nsizes &&
              (!a.nsizes || memcmp(a.sizes, b.sizes, a.nsizes * sizeof *a.sizes) == 0),
              "%s: the sizes differ", path);
    cr_expect(a.nsites == b.nsites &&
              (!a.nsites || memcmp(a.sites, b.sites, a.nsites * sizeof *a.sites) == 0),
              "%s: the sites differ", path);
    dmm_stats_t x = a, y = b;   /* every other field, padding zeroed by both */
    x.sizes = y.sizes = NULL;
    x.sites = y.sites = NULL;
    cr_expect(memcmp(&x, &y, sizeof x) == 0, "%s: the statistics differ", path);
    dmm_stats_free(&a);
    dmm_stats_free(&b);
    dmm_trace_free(&head);
}

/* The loaded trace in each text format, and the file streamed into it
 * (dmm convert's two ways): the same bytes. */
static void assert_same_conversions(const char *path, const dmm_trace_t *whole,
                                    const uint8_t *buf, size_t len)
{
    static const dmm_format_t fmts[] = { DMM_FMT_TEXT, DMM_FMT_MTRACE, DMM_FMT_ANDROID,
                                         DMM_FMT_REP, DMM_FMT_WEE };
    for (size_t k = 0; k < sizeof fmts / sizeof fmts[0]; k++) {
        char *a = NULL, *b = NULL;
        size_t na = 0, nb = 0;
        dmm_err_t err;
        FILE *fa = open_memstream(&a, &na), *fb = open_memstream(&b, &nb);
        cr_assert(fa && fb);
        int rc;
        switch (fmts[k]) {
        case DMM_FMT_TEXT:    rc = dmm_write_text(whole, fa); break;
        case DMM_FMT_MTRACE:  rc = dmm_write_mtrace(whole, fa, &err); break;
        case DMM_FMT_ANDROID: rc = dmm_write_android(whole, fa, &err); break;
        case DMM_FMT_REP:     rc = dmm_write_rep(whole, fa, &err); break;
        default:              rc = dmm_write_wee(whole, fa, &err); break;
        }
        cr_assert_eq(rc, 0);
        dmm_convert_t cv;
        const char *fname = dmm_format_name(fmts[k]);
        cr_assert_eq(dmm_convert_begin(&cv, path, buf, len, fmts[k], &err), 0, "%s to %s: %s",
                     path, fname, err.msg);
        cr_expect_str_eq(cv.note, whole->truncated ? whole->note : "");
        cr_assert_eq(dmm_convert_write(&cv, fb, "out", &err), 0, "%s", err.msg);
        dmm_convert_free(&cv);
        fclose(fa);
        fclose(fb);
        size_t at = 0;
        while (at < na && at < nb && a[at] == b[at])
            at++;
        cr_expect(na == nb && at == na, "%s to %s: %zu bytes whole, %zu streamed, first "
                  "difference at byte %zu", path, fname, na, nb, at);
        free(a);
        free(b);
    }
}

/* path read both ways; returns the number of calls (records the loader
 * keeps). */
static size_t assert_scan_matches_load(const char *path)
{
    dmm_trace_t whole, head;
    dmm_err_t err;
    cr_assert_eq(dmm_trace_load(path, &whole, &err), 0, "%s", err.msg);
    uint8_t *buf;
    size_t len;
    cr_assert_eq(dmm_read_file(path, &buf, &len, &err), 0, "%s", err.msg);
    memset(&head, 0, sizeof head);
    scan_cmp_t c = { .whole = &whole };
    /* 0: every thread's calls in seq order in the file, as the recorder
     * writes them (1 would say otherwise) */
    cr_assert_eq(dmm_scan_trc(path, buf, len, &head, scan_cmp_call, &c, &err), 0, "%s",
                 err.msg);
    cr_expect_eq(c.at, whole.nrecs, "%s: the scan gave %zu calls, the loader %zu", path, c.at,
                 whole.nrecs);
    cr_expect_eq(head.pid, whole.pid);
    cr_expect_eq(head.nstacks, whole.nstacks);
    cr_expect_eq(head.nmodules, whole.nmodules);
    cr_expect_eq(head.truncated, whole.truncated);
    dmm_opstream_t a, b;
    char note[512];
    cr_assert_eq(dmm_opstream_build(&whole, &a, &err), 0, "%s", err.msg);
    cr_assert_eq(dmm_opstream_build_trc(path, buf, len, &b, note, sizeof note, &err), 0, "%s",
                 err.msg);
    cr_expect_eq(a.nops, b.nops, "%s: %zu ops built from the records, %zu scanned", path,
                 a.nops, b.nops);
    cr_expect(a.nops == b.nops && (a.nops == 0 || memcmp(a.ops, b.ops, a.nops * sizeof *a.ops) == 0),
              "%s: the operation streams differ", path);
    cr_expect(a.nids == b.nids && a.free_null == b.free_null &&
              a.unknown_free == b.unknown_free && a.failed == b.failed &&
              a.reused_live == b.reused_live, "%s: the streams' counts differ", path);
    cr_expect_str_eq(note, whole.truncated ? whole.note : "");
    dmm_opstream_free(&a);
    dmm_opstream_free(&b);
    assert_same_stats(path, &whole, buf, len);
    assert_same_conversions(path, &whole, buf, len);
    size_t n = whole.nrecs;
    free(buf);
    dmm_trace_free(&head);
    dmm_trace_free(&whole);
    return n;
}

#endif
