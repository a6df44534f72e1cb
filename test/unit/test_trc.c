/* test_trc.c - the binary .trc reader and writer: round trips of every field
 * (plain and zstd), files cut short at every byte, corrupt bytes, and each
 * kind of bad input giving a clear error; the text dump; safe output. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <inttypes.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tracer/format/trace.h"
#include "tracer/format/trc_write.h"
#include "test/lib/trc_sample.h"
#include "tracer/base/file.h"
#include "tracer/format/crc32.h"
#include "test/lib/scancheck.h"
#include "tracer/stats/stats.h"
#include "tracer/format/dump.h"
#include "tracer/format/convert.h"
#include "tracer/format/load.h"
#include "tracer/format/trc_read.h"
#include "tracer/format/trcenc.h"

static char dir[] = "/tmp/dmm_test_trc.XXXXXX";
/* The version the tests write: the current one, unless a test asks for
 * the previous one (whose reader stays). */
static unsigned g_ver;

static void setup(void)
{
    cr_assert_not_null(mkdtemp(dir));
    g_ver = DMM_TRC_VERSION;
}

static int write_v(const dmm_trace_t *t, const char *path, int zstd, dmm_err_t *err)
{
    return dmm_write_trc_version(t, path, zstd, g_ver, err);
}

static void teardown(void)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char p[512];
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

TestSuite(trc, .init = setup, .fini = teardown);

static char *tmp_path(const char *name)
{
    static char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

static uint8_t *slurp(const char *path, size_t *len)
{
    uint8_t *buf;
    dmm_err_t err;
    cr_assert_eq(dmm_read_file(path, &buf, len, &err), 0, "%s", err.msg);
    return buf;
}

static void spill(const char *path, const void *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(buf, 1, len, f), len);
    cr_assert_eq(fclose(f), 0);
}

static uint32_t ld32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void st32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Offset of the first block: header, command line, padding to 8. */
static size_t first_block(const uint8_t *buf)
{
    size_t off = (size_t)(buf[10] | buf[11] << 8) + ld32(buf + 48);
    return (off + 7) & ~(size_t)7;
}

static void roundtrip(size_t nextra, int zstd)
{
    dmm_trace_t a, b;
    dmm_err_t err;
    sample_trace(&a, nextra);
    const char *p = tmp_path(zstd ? "rt.z.trc" : "rt.trc");
    cr_assert_eq(write_v(&a, p, zstd, &err), 0, "%s", err.msg);
    cr_assert_eq(dmm_trace_load(p, &b, &err), 0, "%s", err.msg);
    cr_assert_eq(b.format, DMM_FMT_TRC);
    cr_assert_eq(b.flags, a.flags);
    cr_assert_str_eq(b.path, p);
    sample_compare(&a, &b);
    dmm_trace_free(&a);
    dmm_trace_free(&b);
}

Test(trc, roundtrip_small_plain) { roundtrip(0, 0); }
Test(trc, roundtrip_small_zstd) { roundtrip(0, 1); }
Test(trc, roundtrip_many_blocks_plain) { roundtrip(20000, 0); }
Test(trc, roundtrip_many_blocks_zstd) { roundtrip(20000, 1); }
Test(trc, roundtrip_v1_small_plain) { g_ver = 1; roundtrip(0, 0); }
Test(trc, roundtrip_v1_many_blocks_zstd) { g_ver = 1; roundtrip(20000, 1); }
Test(trc, roundtrip_v2_small_plain) { g_ver = 2; roundtrip(0, 0); }
Test(trc, roundtrip_v2_many_blocks_zstd) { g_ver = 2; roundtrip(20000, 1); }

/* The sample, then a stream of usual records as the recorder writes them:
 * 32 + 8 * nusual mallocs and frees of two threads in turns of 300, each
 * turn's seqs following one another, the clock read every 16th record,
 * sizes of every length (0 too) and address steps of every length (some
 * of 2^57, which the long form takes). */
static void usual_trace(dmm_trace_t *t, size_t nusual)
{
    sample_trace(t, 0);
    uint64_t seq = 5000, time = 900000, rnd = 88172645463325252ull, a = 0x7f0000000000ull;
    for (size_t i = 0; i < 32 + 8 * nusual; i++) {
        rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
        dmm_rec_t *r = dmm_trace_push(t);
        cr_assert_not_null(r);
        memset(r, 0, sizeof *r);
        r->tid = 4300 + (uint32_t)(i / 300 % 2);
        r->seq = seq++;
        if (i % 16 == 0)
            time += 1 + rnd % 5000;
        r->time = time;
        if (i % 97 == 5)
            a ^= 1ull << 57;
        else
            a += (rnd % 4096) * 16 - 20000;
        if (i % 2 == 0) {
            r->op = DMM_TRC_MALLOC;
            r->size = i % 50 == 0 ? 0 : (rnd >> 1) >> (rnd % 64);
            r->ptr_out = a;
        } else {
            r->op = DMM_TRC_FREE;
            r->ptr_in = a;
        }
    }
}

static int count_calls(void *ctx, const dmm_rec_t *r)
{
    (void)r;
    ++*(size_t *)ctx;
    return 0;
}

/* Two threads' blocks interleaved in the file: the scan (dmm_scan_trc,
 * one block per thread held) meets the calls in the loader's order, and so
 * do the stream and the statistics made from it.  A file where one
 * thread's calls are out of seq order is said so (1), and the stream and
 * statistics then come from the file loaded whole, still the loader's. */
Test(trc, a_scan_gives_the_loaders_order_or_says_it_cannot)
{
    dmm_trace_t t;
    dmm_err_t err;
    memset(&t, 0, sizeof t);
    usual_trace(&t, 2000);
    const char *p = tmp_path("scan.trc");
    cr_assert_eq(dmm_write_trc_ex(&t, p, 0, 1, &err), 0, "%s", err.msg);
    cr_expect_eq(assert_scan_matches_load(p), t.nrecs);
    /* a thread's two calls swapped (their seqs too) */
    for (size_t i = 3000, n = 0; i < t.nrecs && n < 1; i++)
        if (t.recs[i].tid == t.recs[i + 1].tid) {
            uint64_t sq = t.recs[i].seq;
            t.recs[i].seq = t.recs[i + 1].seq;
            t.recs[i + 1].seq = sq;
            n++;
        }
    const char *q = tmp_path("scan_bad.trc");
    cr_assert_eq(dmm_write_trc_ex(&t, q, 0, 1, &err), 0, "%s", err.msg);
    dmm_trace_free(&t);
    size_t len;
    uint8_t *buf = slurp(q, &len);
    dmm_trace_t h, whole;
    memset(&h, 0, sizeof h);
    size_t calls = 0;
    cr_expect_eq(dmm_scan_trc("bad", buf, len, &h, count_calls, &calls, &err), 1, "%s",
                 err.msg);
    dmm_trace_free(&h);
    cr_assert_eq(dmm_trace_parse("bad", buf, len, DMM_FMT_TRC, &whole, &err), 0, "%s", err.msg);
    cr_expect_eq(calls, whole.nrecs);
    dmm_opstream_t a, b;
    char note[64];
    cr_assert_eq(dmm_opstream_build(&whole, &a, &err), 0, "%s", err.msg);
    cr_assert_eq(dmm_opstream_build_trc("bad", buf, len, &b, note, sizeof note, &err), 0, "%s",
                 err.msg);
    cr_expect(a.nops == b.nops && memcmp(a.ops, b.ops, a.nops * sizeof *a.ops) == 0,
              "the stream is the loader's");
    dmm_opstream_free(&a);
    dmm_opstream_free(&b);
    dmm_stats_t x, y;
    memset(&h, 0, sizeof h);
    cr_assert_eq(dmm_stats_compute(&whole, &x, &err), 0, "%s", err.msg);
    cr_assert_eq(dmm_stats_scan_trc("bad", buf, len, &h, &y, &err), 0, "%s", err.msg);
    cr_expect_eq(x.max_in_use, y.max_in_use);
    cr_expect_eq(x.records, y.records);
    cr_expect_eq(x.objects, y.objects);
    dmm_stats_free(&x);
    dmm_stats_free(&y);
    dmm_trace_free(&h);
    dmm_trace_free(&whole);
    free(buf);
}

/* A trace whose clock is not the TSC keeps its clock syncs among the calls
 * (the loader sorts them by seq), which a scan gives apart: dmm convert
 * reads such a file whole for the record formats, and streams the others. */
Test(trc, a_kept_clock_sync_is_converted_from_the_loaded_trace)
{
    dmm_trace_t t;
    dmm_err_t err;
    memset(&t, 0, sizeof t);
    usual_trace(&t, 100);
    t.clock_id = 1;   /* CLOCK_MONOTONIC */
    dmm_rec_t *r = dmm_trace_push(&t);
    cr_assert_not_null(r);
    memset(r, 0, sizeof *r);
    r->op = DMM_TRC_CLOCKSYNC;
    r->tid = 4300;
    r->seq = 5001;
    r->time = 900001;
    r->arg = 123456;
    dmm_trace_sort(&t);
    const char *p = tmp_path("kept_sync.trc");
    cr_assert_eq(dmm_write_trc_ex(&t, p, 0, 1, &err), 0, "%s", err.msg);
    dmm_trace_free(&t);
    size_t len;
    uint8_t *buf = slurp(p, &len);
    dmm_trace_t whole;
    cr_assert_eq(dmm_trace_parse(p, buf, len, DMM_FMT_TRC, &whole, &err), 0, "%s", err.msg);
    size_t syncs = 0;
    for (size_t i = 0; i < whole.nrecs; i++)
        syncs += whole.recs[i].op == DMM_TRC_CLOCKSYNC;
    cr_assert_eq(syncs, 1, "the loader keeps it");
    dmm_convert_t cv;
    cr_expect_eq(dmm_convert_begin(&cv, p, buf, len, DMM_FMT_TEXT, &err), 1);
    dmm_convert_free(&cv);
    cr_expect_eq(dmm_convert_begin(&cv, p, buf, len, DMM_FMT_REP, &err), 0, "%s", err.msg);
    dmm_convert_free(&cv);
    dmm_trace_free(&whole);
    free(buf);
}

/* The recorder samples the process's peak RSS in each clock sync (size):
 * loading, scanning and the statistics take the greatest, and a trace whose
 * syncs carry none (every one recorded before they did) says it does not
 * know (0; null in the JSON). */
static void peak_rss_of(const dmm_trace_t *t, const char *path, uint64_t want)
{
    dmm_err_t err;
    cr_assert_eq(dmm_write_trc_ex(t, path, 0, 1, &err), 0, "%s", err.msg);
    dmm_trace_t whole, head;
    cr_assert_eq(dmm_trace_load(path, &whole, &err), 0, "%s", err.msg);
    cr_expect_eq(whole.peak_rss, want, "loaded: %" PRIu64, whole.peak_rss);
    size_t len, calls = 0;
    uint8_t *buf = slurp(path, &len);
    memset(&head, 0, sizeof head);
    cr_assert_eq(dmm_scan_trc(path, buf, len, &head, count_calls, &calls, &err), 0, "%s",
                 err.msg);
    cr_expect_eq(head.peak_rss, want, "scanned: %" PRIu64, head.peak_rss);
    dmm_stats_t st;
    cr_assert_eq(dmm_stats_compute(&whole, &st, &err), 0, "%s", err.msg);
    char *s = NULL, key[64];
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    dmm_stats_print(f, &whole, &st, 1, 5);
    fclose(f);
    if (want)
        snprintf(key, sizeof key, "\"peak_rss_bytes\": %" PRIu64 ",", want);
    else
        snprintf(key, sizeof key, "\"peak_rss_bytes\": null,");
    cr_expect(strstr(s, key) != NULL, "%s not in %.600s", key, s);
    free(s);
    dmm_stats_free(&st);
    dmm_trace_free(&head);
    dmm_trace_free(&whole);
    free(buf);
}

/* A clock sync of thread 4300 appended to t: its seq, ns, ticks and peak RSS. */
static void push_sync(dmm_trace_t *t, uint64_t seq, uint64_t ns, uint64_t ticks, uint64_t rss)
{
    dmm_rec_t *r = dmm_trace_push(t);
    cr_assert_not_null(r);
    memset(r, 0, sizeof *r);
    r->op = DMM_TRC_CLOCKSYNC;
    r->tid = 4300;
    r->seq = seq;
    r->time = ns;
    r->arg = ticks;
    r->size = rss;
}

Test(trc, the_peak_rss_is_the_greatest_clock_sync_sample)
{
    dmm_trace_t t;
    memset(&t, 0, sizeof t);
    usual_trace(&t, 100);
    t.clock_id = DMM_TRC_CLOCK_TSC;
    static const uint64_t sample[] = { 5u << 20, 9u << 20, 0, 7u << 20 };
    for (size_t i = 0; i < 4; i++)
        push_sync(&t, 5000 + 100 * i, 1000000 * (i + 1), 3000000 * (i + 1), sample[i]);
    dmm_trace_sort(&t);
    peak_rss_of(&t, tmp_path("peak.trc"), 9u << 20);
    for (size_t i = 0; i < t.nrecs; i++)
        if (t.recs[i].op == DMM_TRC_CLOCKSYNC)
            t.recs[i].size = 0;
    peak_rss_of(&t, tmp_path("nopeak.trc"), 0);
    dmm_trace_free(&t);
}

/* The statistics' duration, loaded and scanned, of t written to path. */
static void durations_of(const dmm_trace_t *t, const char *path, uint64_t *loaded,
                         uint64_t *scanned, uint64_t *first_call)
{
    dmm_err_t err;
    cr_assert_eq(dmm_write_trc_ex(t, path, 0, 1, &err), 0, "%s", err.msg);
    dmm_trace_t whole, head;
    dmm_stats_t st;
    cr_assert_eq(dmm_trace_load(path, &whole, &err), 0, "%s", err.msg);
    *first_call = UINT64_MAX;
    for (size_t i = 0; i < whole.nrecs; i++)
        if (whole.recs[i].time < *first_call)
            *first_call = whole.recs[i].time;
    cr_assert_eq(dmm_stats_compute(&whole, &st, &err), 0, "%s", err.msg);
    *loaded = st.duration_ns;
    dmm_stats_free(&st);
    size_t len;
    uint8_t *buf = slurp(path, &len);
    memset(&head, 0, sizeof head);
    cr_assert_eq(dmm_stats_scan_trc(path, buf, len, &head, &st, &err), 0, "%s", err.msg);
    *scanned = st.duration_ns;
    dmm_stats_free(&st);
    dmm_trace_free(&head);
    dmm_trace_free(&whole);
    free(buf);
}

/* A program that allocates at its start and exits without freeing (xz)
 * makes its last call long before its end: the duration runs to the
 * latest clock sync, the exit's sample, loaded and scanned alike; one
 * inside the calls' span changes nothing. */
Test(trc, the_duration_runs_to_the_last_clock_sync)
{
    dmm_trace_t t;
    memset(&t, 0, sizeof t);
    usual_trace(&t, 100);
    t.clock_id = DMM_TRC_CLOCK_TSC;
    uint64_t last_tick = 0;
    for (size_t i = 0; i < t.nrecs; i++)
        if (t.recs[i].time > last_tick)
            last_tick = t.recs[i].time;
    /* two syncs: 3 ticks a ns, the first at the calls' start, the second
     * just after their last */
    const uint64_t sync_tick[2] = { 900000, last_tick + 3 };
    for (size_t i = 0; i < 2; i++)
        push_sync(&t, i ? 99999 : 4999, 1000000 + (sync_tick[i] - sync_tick[0]) / 3,
                  sync_tick[i], 1u << 20);
    dmm_trace_sort(&t);
    uint64_t loaded, scanned, first;
    durations_of(&t, tmp_path("dur_calls.trc"), &loaded, &scanned, &first);
    uint64_t calls_end = 1000000 + (last_tick - sync_tick[0]) / 3;
    cr_expect(loaded + first >= calls_end - 2 && loaded + first <= calls_end + 2,
              "the calls' span: %" PRIu64 " from %" PRIu64 ", want to %" PRIu64, loaded, first,
              calls_end);
    cr_expect_eq(scanned, loaded);
    /* the exit's sample, 60 s after the last call */
    for (size_t i = 0; i < t.nrecs; i++)
        if (t.recs[i].op == DMM_TRC_CLOCKSYNC && t.recs[i].seq == 99999) {
            t.recs[i].time += 60000000000ull;
            t.recs[i].arg += 180000000000ull;
        }
    durations_of(&t, tmp_path("dur_exit.trc"), &loaded, &scanned, &first);
    cr_expect(loaded > 60000000000ull, "to the exit: %" PRIu64, loaded);
    uint64_t want = 1000000 + (last_tick + 3 - sync_tick[0]) / 3 + 60000000000ull - first;
    cr_expect_eq(loaded, want, "%" PRIu64 " want %" PRIu64, loaded, want);
    cr_expect_eq(scanned, loaded);
    dmm_trace_free(&t);
}

/* Version 3's short forms read back as written, in every block layout,
 * and make the usual records smaller than version 2 does. */
Test(trc, v3_usual_records_read_back_and_take_less_than_v2)
{
    for (int zstd = 0; zstd < 2; zstd++) {
        dmm_trace_t a, b;
        dmm_err_t err;
        usual_trace(&a, 5000);
        off_t size[4];
        for (unsigned v = 2; v <= 3; v++) {
            g_ver = v;
            const char *p = tmp_path(v == 2 ? "u2.trc" : "u3.trc");
            unlink(p);
            cr_assert_eq(write_v(&a, p, zstd, &err), 0, "%s", err.msg);
            cr_assert_eq(dmm_trace_load(p, &b, &err), 0, "%s", err.msg);
            sample_compare(&a, &b);
            dmm_trace_free(&b);
            struct stat st;
            stat(p, &st);
            size[v] = st.st_size;
        }
        if (!zstd)
            cr_assert_lt(size[3] * 100, size[2] * 85, "v3 %lld bytes, v2 %lld",
                         (long long)size[3], (long long)size[2]);
        dmm_trace_free(&a);
    }
}

/* Version 2's compact records take a fraction of version 1's slots. */
static void (*g_build)(dmm_trace_t *t, size_t n) = sample_trace;
Test(trc, v2_is_smaller)
{
    dmm_trace_t a;
    dmm_err_t err;
    sample_trace(&a, 20000);
    g_ver = 1;
    cr_assert_eq(write_v(&a, tmp_path("v1.trc"), 0, &err), 0, "%s", err.msg);
    g_ver = 2;
    cr_assert_eq(write_v(&a, tmp_path("v2.trc"), 0, &err), 0, "%s", err.msg);
    struct stat s1, s2;
    stat(tmp_path("v1.trc"), &s1);
    stat(tmp_path("v2.trc"), &s2);
    cr_assert_lt(s2.st_size * 4, s1.st_size, "v2 %lld bytes, v1 %lld", (long long)s2.st_size,
                 (long long)s1.st_size);
    dmm_trace_free(&a);
}

Test(trc, zstd_is_smaller)
{
    dmm_trace_t a;
    dmm_err_t err;
    sample_trace(&a, 20000);
    cr_assert_eq(write_v(&a, tmp_path("p.trc"), 0, &err), 0, "%s", err.msg);
    cr_assert_eq(write_v(&a, tmp_path("z.trc"), 1, &err), 0, "%s", err.msg);
    struct stat sp, sz;
    stat(tmp_path("p.trc"), &sp);
    stat(tmp_path("z.trc"), &sz);
    cr_assert_lt(sz.st_size * 4, sp.st_size);
    dmm_trace_free(&a);
}

Test(trc, converted_flags)
{
    dmm_trace_t a, b;
    dmm_err_t err;
    sample_trace(&a, 5);
    a.format = DMM_FMT_REP;
    a.flags = 0;
    cr_assert_eq(write_v(&a, tmp_path("c.trc"), 0, &err), 0, "%s", err.msg);
    cr_assert_eq(dmm_trace_load(tmp_path("c.trc"), &b, &err), 0, "%s", err.msg);
    cr_assert_eq(b.flags, DMM_TRC_F_CONVERTED | DMM_TRC_F_NOTIME);
    uint8_t *buf;
    size_t len;
    buf = slurp(tmp_path("c.trc"), &len);
    cr_assert_eq(ld32(buf + 56), DMM_FMT_REP, "source_format");
    free(buf);
    sample_compare(&a, &b);
    dmm_trace_free(&a);
    dmm_trace_free(&b);
}

Test(trc, empty_trace)
{
    dmm_trace_t a, b;
    dmm_err_t err;
    memset(&a, 0, sizeof a);
    a.format = DMM_FMT_TRC;
    cr_assert_eq(write_v(&a, tmp_path("e.trc"), 1, &err), 0, "%s", err.msg);
    cr_assert_eq(dmm_trace_load(tmp_path("e.trc"), &b, &err), 0, "%s", err.msg);
    cr_assert_eq(b.nrecs, 0);
    cr_assert_eq(b.nstacks, 1, "stacks[0] is always there");
    cr_assert_eq(b.cmdline_len, 0);
    cr_assert_str_eq(b.cmdline, "");
    dmm_trace_free(&b);
}

/* Cut a file at every length: inside the header a clear error, inside a
 * block the whole blocks before it with truncated set, at a block boundary
 * a clean read. */
static void cut_everywhere(int zstd)
{
    dmm_trace_t a;
    dmm_err_t err;
    g_build(&a, 10);
    const char *p = tmp_path("cut.trc");
    cr_assert_eq(write_v(&a, p, zstd, &err), 0, "%s", err.msg);
    size_t len;
    uint8_t *file = slurp(p, &len);
    size_t hdr = first_block(file);

    /* block boundaries and the records they hold */
    size_t bounds[64], recs_before[64], nb = 0, off = hdr, nrecs = 0;
    while (off < len) {
        cr_assert_lt(nb, 63);
        bounds[nb] = off;
        recs_before[nb++] = nrecs;
        size_t n = off;
        off += 32 + ld32(file + off + 8);
        /* count what the block adds by reading the file up to its end */
        uint8_t *pre = malloc(off);
        memcpy(pre, file, off);
        dmm_trace_t t;
        cr_assert_eq(dmm_trace_parse("x", pre, off, DMM_FMT_TRC, &t, &err), 0, "%s", err.msg);
        nrecs = t.nrecs;
        dmm_trace_free(&t);
        free(pre);
        (void)n;
    }
    cr_assert_eq(off, len);
    cr_assert_geq(nb, 3, "stacks, modules and records blocks");
    bounds[nb] = len;
    recs_before[nb] = a.nrecs;
    cr_assert_eq(nrecs, a.nrecs);

    for (size_t cut = 0; cut <= len; cut++) {
        uint8_t *pre = malloc(cut ? cut : 1);   /* exact size, for ASan */
        memcpy(pre, file, cut);
        dmm_trace_t t;
        int rc = dmm_trace_parse("cut.trc", pre, cut, DMM_FMT_TRC, &t, &err);
        if (cut < hdr) {
            cr_assert_eq(rc, -1, "cut at %zu inside the header must fail", cut);
            cr_assert(strstr(err.msg, "cut.trc: offset ") == err.msg, "cut %zu: %s", cut, err.msg);
        } else {
            cr_assert_eq(rc, 0, "cut at %zu: %s", cut, err.msg);
            size_t k = 0;
            while (k < nb && bounds[k + 1] <= cut)
                k++;
            int at_bound = cut == bounds[k] || cut == len;
            cr_assert_eq(t.truncated, !at_bound, "cut at %zu", cut);
            if (!at_bound) {
                cr_assert(strstr(t.note, "cut short at offset") != NULL, "%s", t.note);
                char want[64];
                snprintf(want, sizeof want, "inside block at offset %zu", bounds[k]);
                cr_assert(strstr(t.note, want) != NULL, "cut %zu: %s", cut, t.note);
            }
            size_t expect = cut == len ? a.nrecs : recs_before[k];
            cr_assert_eq(t.nrecs, expect, "cut at %zu: %zu records, expected %zu", cut,
                         t.nrecs, expect);
            dmm_trace_free(&t);
        }
        free(pre);
    }
    free(file);
    dmm_trace_free(&a);
}

Test(trc, cut_at_every_byte_plain) { cut_everywhere(0); }
Test(trc, cut_at_every_byte_zstd) { cut_everywhere(1); }
Test(trc, cut_at_every_byte_v1) { g_ver = 1; cut_everywhere(0); }
Test(trc, cut_at_every_byte_v2) { g_ver = 2; cut_everywhere(0); }
Test(trc, cut_at_every_byte_usual) { g_build = usual_trace; cut_everywhere(0); }

/* Flip every byte in turn: the reader may accept (bytes no checksum covers)
 * or refuse, but never crash, and a refusal names an offset. */
static void flip_everywhere(int zstd)
{
    dmm_trace_t a;
    dmm_err_t err;
    g_build(&a, 4);
    cr_assert_eq(write_v(&a, tmp_path("flip.trc"), zstd, &err), 0, "%s", err.msg);
    size_t len;
    uint8_t *file = slurp(tmp_path("flip.trc"), &len);
    size_t hdr = first_block(file);
    for (size_t i = 0; i < len; i++) {
        uint8_t *c = malloc(len);
        memcpy(c, file, len);
        c[i] ^= 0x5a;
        dmm_trace_t t;
        int rc = dmm_trace_parse("flip.trc", c, len, DMM_FMT_TRC, &t, &err);
        if (rc == 0)
            dmm_trace_free(&t);
        else
            cr_assert(strstr(err.msg, "offset") != NULL, "byte %zu: %s", i, err.msg);
        /* every block byte is checked but, in v1, the header's reserved word */
        if (i >= hdr) {
            size_t off = hdr;
            while (off + 32 + ld32(file + off + 8) <= i)
                off += 32 + ld32(file + off + 8);
            if (g_ver >= 2 || i - off < 28 || i - off >= 32)
                cr_assert_eq(rc, -1, "byte %zu flipped was accepted", i);
        }
        free(c);
    }
    free(file);
    dmm_trace_free(&a);
}

Test(trc, flip_every_byte_plain) { flip_everywhere(0); }
Test(trc, flip_every_byte_zstd) { flip_everywhere(1); }
Test(trc, flip_every_byte_v1) { g_ver = 1; flip_everywhere(0); }
Test(trc, flip_every_byte_v2) { g_ver = 2; flip_everywhere(0); }
Test(trc, flip_every_byte_usual) { g_build = usual_trace; flip_everywhere(0); }

/* Write the sample, let edit change the bytes, load, expect an error
 * containing want. */
static void expect_error(void (*edit)(uint8_t *buf, size_t *len), const char *want)
{
    dmm_trace_t a, t;
    dmm_err_t err;
    sample_trace(&a, 3);
    const char *p = tmp_path("bad.trc");
    unlink(p);
    cr_assert_eq(write_v(&a, p, 0, &err), 0, "%s", err.msg);
    size_t len;
    uint8_t *file = slurp(p, &len);
    uint8_t *buf = calloc(1, len + 64);   /* room to append */
    memcpy(buf, file, len);
    free(file);
    edit(buf, &len);
    unlink(p);
    spill(p, buf, len);
    free(buf);
    err.msg[0] = '\0';
    cr_assert_eq(dmm_trace_load(p, &t, &err), -1, "accepted, wanted: %s", want);
    cr_assert(strstr(err.msg, want) != NULL, "got '%s', wanted '%s'", err.msg, want);
    cr_assert(strstr(err.msg, p) == err.msg, "message names the file: %s", err.msg);
    dmm_trace_free(&a);
}

static void payload_byte(uint8_t *b, size_t *len)
{
    size_t off = first_block(b);
    b[off + 32 + 5] ^= 1;
    (void)len;
}
Test(trc, corrupt_payload)
{
    char want[64];
    expect_error(payload_byte, "checksum mismatch");
    /* the message names the payload's offset */
    snprintf(want, sizeof want, "offset %zu:", (size_t)(64 + 16 + 32));
    expect_error(payload_byte, want);
}

/* "DMMTRACX": close enough that detection calls it a bad trc magic */
static void bad_magic(uint8_t *b, size_t *len) { b[7] = 'X'; (void)len; }
Test(trc, wrong_magic)
{
    expect_error(bad_magic, "offset 0: bad magic");
    /* and straight to the reader, with any other first bytes */
    dmm_trace_t t;
    dmm_err_t err;
    memset(&t, 0, sizeof t);
    static const uint8_t junk[80] = "MZ not a trace";
    cr_assert_eq(dmm_read_trc("j", junk, sizeof junk, &t, &err), -1);
    cr_assert_str_eq(err.msg, "j: offset 0: bad magic, not a dmm trace");
    dmm_trace_free(&t);
}

static void future_version(uint8_t *b, size_t *len) { b[8] = 5; (void)len; }
Test(trc, future_version)
{
    expect_error(future_version, "offset 8: unsupported trace version 5 (this dmm reads 1 to 4)");
}

static void zero_version(uint8_t *b, size_t *len) { b[8] = 0; (void)len; }
Test(trc, zero_version) { expect_error(zero_version, "bad trace version 0"); }

static void small_header(uint8_t *b, size_t *len) { b[10] = 32; (void)len; }
Test(trc, header_size_too_small) { expect_error(small_header, "header size 32"); }

static void huge_cmdline(uint8_t *b, size_t *len) { st32(b + 48, 0x7fffffff); (void)len; }
Test(trc, absurd_cmdline) { expect_error(huge_cmdline, "absurd command line length"); }

static void long_cmdline(uint8_t *b, size_t *len) { st32(b + 48, (uint32_t)*len); }
Test(trc, cmdline_past_end) { expect_error(long_cmdline, "file ends inside the trace header"); }

static void header_cut(uint8_t *b, size_t *len) { (void)b; *len = 40; }
Test(trc, header_cut_short) { expect_error(header_cut, "offset 40: file ends inside"); }

/* Set a block header field and fix the header checksum, so that the check
 * of the field itself is what fires. */
static uint32_t header_crc(const uint8_t *blk)
{
    uint32_t c = dmm_crc32(0, blk, 24);
    return g_ver >= 2 ? dmm_crc32(c, blk + 28, 4) : c;
}
static void set_block_field(uint8_t *b, size_t at, uint32_t v)
{
    size_t off = first_block(b);
    st32(b + off + at, v);
    st32(b + off + 24, header_crc(b + off));
}
/* After editing a block's payload: both checksums right again. */
static void fix_crcs(uint8_t *blk)
{
    st32(blk + 20, dmm_crc32(0, blk + 32, ld32(blk + 8)));
    st32(blk + 24, header_crc(blk));
}

static void absurd_stored(uint8_t *b, size_t *len) { set_block_field(b, 8, 0x7fffffc0); (void)len; }
Test(trc, absurd_stored_len) { expect_error(absurd_stored, "absurd block length"); }

static void absurd_raw(uint8_t *b, size_t *len) { set_block_field(b, 12, 0xffffffc0); (void)len; }
Test(trc, absurd_raw_len) { expect_error(absurd_raw, "absurd raw block length"); }

static void odd_raw(uint8_t *b, size_t *len) { set_block_field(b, 12, 100); (void)len; }
Test(trc, raw_len_not_records_v1) { g_ver = 1; expect_error(odd_raw, "not a whole number"); }

static void bad_comp(uint8_t *b, size_t *len) { set_block_field(b, 16, 7); (void)len; }
Test(trc, unknown_compression) { expect_error(bad_comp, "unknown block compression 7"); }

static void bad_flags(uint8_t *b, size_t *len) { set_block_field(b, 28, 6); (void)len; }
Test(trc, unknown_block_flags) { expect_error(bad_flags, "unknown block flags 0x6"); }

/* v2 counts the flags into the header checksum: a flipped CONT bit is
 * caught, not decoded from the wrong place. */
static void flip_cont(uint8_t *b, size_t *len) { b[first_block(b) + 28] ^= 1; (void)len; }
Test(trc, block_flags_are_checked) { expect_error(flip_cont, "block header checksum mismatch"); }

static void bad_block_magic(uint8_t *b, size_t *len) { set_block_field(b, 0, 0x12345678); (void)len; }
Test(trc, bad_block_magic)
{
    char want[64];
    snprintf(want, sizeof want, "offset %d: bad block magic", 64 + 16);
    expect_error(bad_block_magic, want);
}

static void bad_hcrc(uint8_t *b, size_t *len) { b[first_block(b) + 4] ^= 1; (void)len; }
Test(trc, bad_header_crc) { expect_error(bad_hcrc, "block header checksum mismatch"); }

static void trailing_garbage(uint8_t *b, size_t *len)
{
    /* a whole block header's worth of junk after the last block */
    memset(b + *len, 'j', 32);
    *len += 32;
}
Test(trc, junk_block) { expect_error(trailing_garbage, "bad block magic"); }

/* A record with an op outside the format, in a block with valid checksums. */
static void bad_op(uint8_t *b, size_t *len)
{
    size_t off = first_block(b);
    b[off + 32] = 99;
    fix_crcs(b + off);
    (void)len;
}
Test(trc, unknown_op_v1) { g_ver = 1; expect_error(bad_op, "unknown record op 99"); }

static void many_frames(uint8_t *b, size_t *len)
{
    /* the first block is the stack table; its first record a STACKDEF */
    size_t off = first_block(b);
    cr_assert_eq(b[off + 32], DMM_TRC_STACKDEF);
    st32(b + off + 32 + 24, 100000);
    fix_crcs(b + off);
    (void)len;
}
Test(trc, stack_too_deep_v1) { g_ver = 1; expect_error(many_frames, "too many frames"); }

static void frames_past_end(uint8_t *b, size_t *len)
{
    size_t off = first_block(b);
    st32(b + off + 32 + 24, 250);
    fix_crcs(b + off);
    (void)len;
}
Test(trc, stack_past_block_v1) { g_ver = 1; expect_error(frames_past_end, "run past the end of the block"); }

static void huge_stack_id(uint8_t *b, size_t *len)
{
    size_t off = first_block(b);
    st32(b + off + 32 + 4, 0xfffffff0);
    fix_crcs(b + off);
    (void)len;
}
Test(trc, absurd_stack_id_v1) { g_ver = 1; expect_error(huge_stack_id, "absurd stack id"); }

/* ---- version 2 records, built by hand (trcenc.h) ---- */

typedef struct v2buf {
    uint8_t b[4096];
    size_t n;
} v2buf_t;

/* The header of an empty v2 trace, then nothing. */
static void v2_start(v2buf_t *f)
{
    dmm_trace_t a;
    dmm_err_t err;
    memset(&a, 0, sizeof a);
    a.format = DMM_FMT_TRC;
    const char *p = tmp_path("hdr.trc");
    unlink(p);
    cr_assert_eq(dmm_write_trc_version(&a, p, 0, 2, &err), 0, "%s", err.msg);
    uint8_t *h = slurp(p, &f->n);
    memcpy(f->b, h, f->n);
    free(h);
}

static void v2_block(v2buf_t *f, uint32_t tid, uint32_t flags, const uint8_t *pl, size_t n)
{
    uint8_t *blk = f->b + f->n;
    memset(blk, 0, 32);
    st32(blk, DMM_TRC_BLOCK_MAGIC);
    st32(blk + 4, tid);
    st32(blk + 8, (uint32_t)n);
    st32(blk + 12, (uint32_t)n);
    st32(blk + 28, flags);
    memcpy(blk + 32, pl, n);
    fix_crcs(blk);
    f->n += 32 + n;
}

/* Load f: 0 and the trace, or -1 with the error, which must contain want
 * and name the file and an offset. */
static int v2_load(v2buf_t *f, dmm_trace_t *t, const char *want)
{
    const char *p = tmp_path("v2.trc");
    unlink(p);
    spill(p, f->b, f->n);
    dmm_err_t err;
    err.msg[0] = 0;
    int rc = dmm_trace_load(p, t, &err);
    if (want) {
        cr_assert_eq(rc, -1, "accepted, wanted: %s", want);
        cr_assert(strstr(err.msg, want) != NULL, "got '%s', wanted '%s'", err.msg, want);
        cr_assert(strstr(err.msg, p) == err.msg && strstr(err.msg, "offset "), "%s", err.msg);
    } else {
        cr_assert_eq(rc, 0, "%s", err.msg);
    }
    return rc;
}

static size_t v2_rec(uint8_t *p, dmm_trc2_state_t *st, unsigned op, uint64_t seq, uint64_t size,
                     uint64_t out, uint32_t stack)
{
    dmm_trc_rec_t r = { .op = (uint8_t)op, .seq = seq, .time = 100 * seq, .size = size,
                        .ptr_out = out, .stack = stack };
    return dmm_trc2_encode(p, st, &r);
}

static void v2_expect(const uint8_t *pl, size_t n, uint32_t flags, const char *want)
{
    v2buf_t f;
    v2_start(&f);
    v2_block(&f, 7, flags, pl, n);
    dmm_trace_t t;
    v2_load(&f, &t, want);
}

Test(trc, v2_bad_records)
{
    uint8_t pl[256 + DMM_TRC2_MAX_REC];
    dmm_trc2_state_t st = { 0, 0, 0 };
    size_t n = v2_rec(pl, &st, DMM_TRC_MALLOC, 5, 100, 0x5000, 0);
    pl[0] = (uint8_t)((pl[0] & ~DMM_TRC2_OP_MASK) | 31);
    v2_expect(pl, n, 0, "unknown record op 31");

    memset(&st, 0, sizeof st);
    n = v2_rec(pl, &st, DMM_TRC_MALLOC, 5, 100, 0x5000, 0);
    v2_expect(pl, n - 1, 0, "record runs past the end of the block");
    pl[1] = 0x9;   /* the seq field (or time): 9 bytes long */
    v2_expect(pl, n, 0, "field length over 8 bytes");

    memset(&st, 0, sizeof st);
    n = v2_rec(pl, &st, DMM_TRC_MALLOC, 5, 100, 0x5000, 0xfffffff0u);
    v2_expect(pl, n, 0, "absurd stack id");

    memset(&st, 0, sizeof st);
    n = v2_rec(pl, &st, DMM_TRC_STACKDEF, 5, 100000, 0, 1);
    v2_expect(pl, n, 0, "too many frames");
    memset(&st, 0, sizeof st);
    n = v2_rec(pl, &st, DMM_TRC_STACKDEF, 5, 250, 0, 1);
    memset(pl + n, 0, 16);
    v2_expect(pl, n + 16, 0, "stack frames run past the end of the block");
    memset(&st, 0, sizeof st);
    n = v2_rec(pl, &st, DMM_TRC_MODULE, 5, 100, 0, 0);
    v2_expect(pl, n + 20, 0, "module path runs past the end of the block");

    memset(&st, 0, sizeof st);
    n = v2_rec(pl, &st, DMM_TRC_MALLOC, 5, 100, 0x5000, 0);
    v2_expect(pl, n, DMM_TRC_BF_CONT, "goes on from an earlier block of thread 7");
}

/* A thread's records cut into two blocks: the second (flagged CONT) goes
 * on from where the first ended, and reads back the values written; read
 * as a block of its own it would not. */
Test(trc, v2_blocks_go_on_from_their_thread)
{
    uint8_t pl[4 * DMM_TRC2_MAX_REC];
    dmm_trc2_state_t st = { 0, 0, 0 };
    size_t cut = v2_rec(pl, &st, DMM_TRC_MALLOC, 1000, 48, 0x7f0000001000ull, 0);
    size_t n = cut + v2_rec(pl + cut, &st, DMM_TRC_MALLOC, 1001, 64, 0x7f0000001040ull, 0);
    dmm_trc_rec_t fr = { .op = DMM_TRC_FREE, .seq = 1010, .time = 101000,
                         .ptr_in = 0x7f0000001000ull };
    n += dmm_trc2_encode(pl + n, &st, &fr);
    for (int cont = 1; cont >= 0; cont--) {
        v2buf_t f;
        v2_start(&f);
        v2_block(&f, 7, 0, pl, cut);
        v2_block(&f, 9, 0, pl, cut);   /* another thread between: its own stream */
        v2_block(&f, 7, cont ? DMM_TRC_BF_CONT : 0, pl + cut, n - cut);
        dmm_trace_t t;
        v2_load(&f, &t, NULL);
        cr_assert_eq(t.nrecs, 4);
        int right = 0;
        for (size_t i = 0; i < t.nrecs; i++)
            if (t.recs[i].tid == 7 && t.recs[i].op == DMM_TRC_FREE)
                right = t.recs[i].seq == 1010 && t.recs[i].time == 101000 &&
                        t.recs[i].ptr_in == 0x7f0000001000ull;
        cr_assert_eq(right, cont, "CONT %d: the free read %s", cont, right ? "right" : "wrong");
        dmm_trace_free(&t);
    }
}

/* CRC-32C: the standard check value, and a long buffer (the crc32
 * instruction's three parts at once, joined) equal to the same bytes fed in
 * pieces too short for that, at every length around the parts' edges. */
Test(trc, crc32c_of_long_buffers_is_the_crc_of_their_pieces)
{
    cr_assert_eq(dmm_crc32(0, "123456789", 9), 0xE3069283u);
    static uint8_t buf[40000];
    uint64_t rnd = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < sizeof buf; i++) {
        rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
        buf[i] = (uint8_t)rnd;
    }
    static const size_t lens[] = { 0, 1, 6143, 6144, 6145, 6151, 6152, 12288, 12295, 20001,
                                   40000 };
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++)
        for (size_t off = 0; off < 3; off++) {
            size_t n = lens[k] - (lens[k] >= off ? off : 0);
            uint32_t whole = dmm_crc32(7, buf + off, n), pieces = 7;
            for (size_t at = 0; at < n; at += 1000)
                pieces = dmm_crc32(pieces, buf + off + at, n - at < 1000 ? n - at : 1000);
            cr_assert_eq(whole, pieces, "%zu bytes at offset %zu: %#x against %#x", n, off,
                         whole, pieces);
        }
}

/* The recorder's own encoders of its usual malloc and free (time and seq
 * following the previous record) write the generic (version 3) encoder's
 * bytes, short forms and long, which decode to the values, and leave its
 * state, for sizes and pointer steps of every length, 0 and the
 * extremes of their domain (sizes below 2^63, addresses below 2^57, as
 * user space has them) included, in a long chain of records. */
Test(trc, usual_malloc_and_free_encode_as_any_record)
{
    static const uint64_t size_edge[] = { 0, 1, 15, 16, 127, 128, 255, 256, 65535, 65536,
                                          1ull << 32, (1ull << 47) - 16, 1ull << 56,
                                          (1ull << 62) + 5, (1ull << 63) - 1 };
    static const uint64_t ptr_edge[] = { 0, 16, 4096, 1ull << 32, (1ull << 47) - 16,
                                         1ull << 47, (1ull << 56) + 48, (1ull << 57) - 16 };
    const size_t ns = sizeof size_edge / sizeof size_edge[0];
    const size_t np = sizeof ptr_edge / sizeof ptr_edge[0];
    dmm_trc2_state_t a = { 41, 7000, 0x7f0000000000ull }, b = a, c = a;
    int shorts = 0;
    uint64_t rnd = 88172645463325252ull;
    for (int i = 0; i < 20000; i++) {
        rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
        uint64_t v = i < (int)(ns * np) ? size_edge[i % ns]
                                        : (rnd >> 1) >> (rnd % 64);   /* every length */
        uint64_t ptr = i < (int)(ns * np) ? ptr_edge[(size_t)i / ns]
                                          : (rnd * 16) >> (7 + rnd % 50);
        if (i % 5 == 0)
            ptr = a.ptr;   /* the same address again: a difference of 0 */
        uint8_t x[DMM_TRC2_MAX_REC], y[DMM_TRC2_MAX_REC];
        memset(x, 0xaa, sizeof x);
        memset(y, 0xaa, sizeof y);
        int is_free = i % 2;
        dmm_trc_rec_t r = { .op = is_free ? DMM_TRC_FREE : DMM_TRC_MALLOC, .seq = a.seq + 1,
                            .time = a.time };
        size_t nx, ny;
        if (is_free) {
            r.ptr_in = ptr;
            nx = dmm_trc3_encode(x, &a, &r);
            ny = dmm_trc3_encode_free_same(y, &b, ptr);
        } else {
            r.size = v;
            r.ptr_out = ptr;
            nx = dmm_trc3_encode(x, &a, &r);
            ny = dmm_trc3_encode_malloc_same(y, &b, v, ptr);
        }
        cr_assert_eq(nx, ny, "record %d: %zu bytes against %zu", i, ny, nx);
        shorts += (y[0] & DMM_TRC2_OP_MASK) >= DMM_TRC3_FREE;
        cr_assert(memcmp(x, y, nx) == 0, "record %d (%s of %#llx at %#llx): other bytes", i,
                  is_free ? "free" : "malloc", (unsigned long long)v, (unsigned long long)ptr);
        cr_assert(a.seq == b.seq && a.time == b.time && a.ptr == b.ptr, "record %d: state", i);
        dmm_trc_rec_t d;
        const char *why = NULL;
        cr_assert_eq(dmm_trc3_decode(y, ny, &c, &d, &why), ny, "record %d: %s", i, why);
        cr_assert(d.op == r.op && d.seq == r.seq && d.time == r.time && d.size == r.size &&
                      d.ptr_in == r.ptr_in && d.ptr_out == r.ptr_out && !d.stack && !d.flags,
                  "record %d decodes to other values", i);
        if (i % 7 == 0) {   /* a clock reading: the generic encoder's record, for both */
            dmm_trc_rec_t t = { .op = DMM_TRC_FREE, .seq = a.seq + 1,
                                .time = a.time + rnd % 1000, .ptr_in = ptr };
            dmm_trc3_encode(x, &a, &t);
            size_t nt = dmm_trc3_encode(y, &b, &t);
            dmm_trc_rec_t d;
            const char *why = NULL;
            cr_assert_eq(dmm_trc3_decode(y, nt, &c, &d, &why), nt, "record %d: %s", i, why);
        }
    }
    cr_assert_gt(shorts, 15000, "short forms: %d of 20000", shorts);
    cr_assert_lt(shorts, 20000, "and long ones (an address step of 8 bytes)");
}

/* Version 4's FREE that says how much of its block was resident: op value
 * DMM_TRC4_FREE_RESIDENT in the long form with ptr_in and arg, read back as
 * a FREE with the flag and the bytes (after the next seq at the same time,
 * and after a jump in both); version 3's reader knows no such op, and
 * versions 3 and 2 write the record as a plain free. */
Test(trc, v4_resident_free_round_trips_and_v3_and_v2_drop_it)
{
    static const dmm_trc_rec_t recs[] = {
        { .op = DMM_TRC_FREE, .flags = DMM_TRC_RF_RESIDENT, .seq = 42, .time = 7000,
          .ptr_in = 0x7f0000400010ull, .arg = 12288 },
        { .op = DMM_TRC_FREE, .flags = DMM_TRC_RF_RESIDENT, .seq = 90000, .time = 123456,
          .ptr_in = 0x7f0000000010ull, .arg = (1ull << 20) + 4096 },
        { .op = DMM_TRC_FREE, .flags = DMM_TRC_RF_RESIDENT, .seq = 90001, .time = 123456,
          .ptr_in = 0x7f0000000010ull, .arg = 0 },
    };
    dmm_trc2_state_t w4 = { 41, 7000, 0x7f0000000000ull }, r4 = w4, r3 = w4, w3 = w4, r33 = w4,
                     w2 = w4, r2 = w4;
    for (size_t i = 0; i < sizeof recs / sizeof recs[0]; i++) {
        const dmm_trc_rec_t *r = &recs[i];
        uint8_t x[DMM_TRC2_MAX_REC];
        size_t n = dmm_trc4_encode(x, &w4, r);
        cr_assert_eq(x[0] & DMM_TRC2_OP_MASK, DMM_TRC4_FREE_RESIDENT, "record %zu: op %u", i,
                     x[0] & DMM_TRC2_OP_MASK);
        dmm_trc_rec_t d;
        const char *why = NULL;
        cr_assert_eq(dmm_trc4_decode(x, n, &r4, &d, &why), n, "record %zu: %s", i, why);
        cr_assert(d.op == DMM_TRC_FREE && d.flags == DMM_TRC_RF_RESIDENT && d.arg == r->arg &&
                      d.ptr_in == r->ptr_in && d.seq == r->seq && d.time == r->time &&
                      !d.size && !d.ptr_out && !d.stack,
                  "record %zu decodes to op %u flags %#x arg %llu seq %llu time %llu", i, d.op,
                  d.flags, (unsigned long long)d.arg, (unsigned long long)d.seq,
                  (unsigned long long)d.time);
        cr_assert_eq(dmm_trc34_decode(x, n, &r33, &d, &why, 4), n, "record %zu: %s", i, why);
        cr_assert(d.flags == DMM_TRC_RF_RESIDENT && d.arg == r->arg, "record %zu", i);
        /* version 3: an unknown op; and written as a plain free */
        why = NULL;
        dmm_trc2_state_t c3 = r3;
        cr_assert_eq(dmm_trc3_decode(x, n, &c3, &d, &why), 0, "record %zu read by v3", i);
        cr_assert(why && strstr(why, "unknown record op"), "record %zu: %s", i, why);
        n = dmm_trc3_encode(x, &w3, r);
        cr_assert_eq(dmm_trc3_decode(x, n, &r3, &d, &why), n, "record %zu: %s", i, why);
        cr_assert(d.op == DMM_TRC_FREE && !d.flags && !d.arg && d.ptr_in == r->ptr_in &&
                      d.seq == r->seq && d.time == r->time,
                  "record %zu in v3: flags %#x arg %llu", i, d.flags, (unsigned long long)d.arg);
        n = dmm_trc2_encode(x, &w2, r);
        cr_assert_eq(dmm_trc2_decode(x, n, &r2, &d, &why), n, "record %zu: %s", i, why);
        cr_assert(d.op == DMM_TRC_FREE && !d.flags && !d.arg && d.ptr_in == r->ptr_in &&
                      d.seq == r->seq && d.time == r->time,
                  "record %zu in v2: flags %#x arg %llu", i, d.flags, (unsigned long long)d.arg);
    }
}

/* sample_trace(a, nextra) with two large blocks freed saying their resident
 * bytes, then a third live to the end saying them in a record of its own. */
static void resident_trace(dmm_trace_t *a, size_t nextra)
{
    sample_trace(a, nextra);
    sample_rec(a, 4242, DMM_TRC_MALLOC, 4u << 20, 0, 0, 0x7f0000000010ull, 0);
    sample_rec(a, 4243, DMM_TRC_MALLOC, 1u << 20, 0, 0, 0x7f0000500010ull, 0);
    sample_rec(a, 4242, DMM_TRC_CALLOC, 2u << 20, 1, 0, 0x7f0000700010ull, 0);
    sample_rec(a, 4242, DMM_TRC_FREE, 0, 12288, 0x7f0000000010ull, 0, 0);
    a->recs[a->nrecs - 1].flags = DMM_TRC_RF_RESIDENT;
    sample_rec(a, 4243, DMM_TRC_FREE, 0, 1u << 20, 0x7f0000500010ull, 0, 2);
    a->recs[a->nrecs - 1].flags = DMM_TRC_RF_RESIDENT;
    sample_rec(a, 4242, DMM_TRC_RESIDENT, 0, 8192, 0x7f0000700010ull, 0, 0);
}

/* A trace with resident frees (and a plain one, and a failed call) and a
 * resident record, written by the file writer: version 4 keeps them,
 * version 1 the frees' flag and bytes, version 3 reads them back as plain
 * frees; neither older version holds the resident record. */
Test(trc, resident_frees_are_kept_by_v4_and_v1_and_plain_in_v3)
{
    static const unsigned vers[] = { 4, 1, 3 };
    for (size_t k = 0; k < sizeof vers / sizeof vers[0]; k++) {
        dmm_trace_t a, b;
        dmm_err_t err;
        resident_trace(&a, 40);
        char name[32];
        snprintf(name, sizeof name, "resident_v%u.trc", vers[k]);
        const char *p = tmp_path(name);
        cr_assert_eq(dmm_write_trc_version(&a, p, 0, vers[k], &err), 0, "%s", err.msg);
        size_t len;
        uint8_t *buf = slurp(p, &len);
        cr_assert_eq(buf[8], vers[k]);
        cr_assert_eq(dmm_trace_parse(p, buf, len, DMM_FMT_TRC, &b, &err), 0, "v%u: %s",
                     vers[k], err.msg);
        free(buf);
        if (vers[k] < 4)
            a.nrecs--;   /* the resident record, the last */
        if (vers[k] == 3)
            for (size_t i = 0; i < a.nrecs; i++)
                if (a.recs[i].flags & DMM_TRC_RF_RESIDENT) {
                    a.recs[i].flags = 0;
                    a.recs[i].arg = 0;
                }
        sample_compare(&a, &b);   /* flags and arg of each record too */
        size_t resident = 0, records = 0;
        for (size_t i = 0; i < b.nrecs; i++) {
            resident += (b.recs[i].flags & DMM_TRC_RF_RESIDENT) != 0;
            records += b.recs[i].op == DMM_TRC_RESIDENT;
        }
        cr_assert_eq(resident, vers[k] == 3 ? 0 : 2, "v%u: %zu resident frees", vers[k],
                     resident);
        cr_assert_eq(records, vers[k] == 4, "v%u: %zu resident records", vers[k], records);
        dmm_trace_free(&a);
        dmm_trace_free(&b);
    }
}

/* Recordings of the earlier versions, committed (test/data/trc-v1/,
 * trc-v2/, trc-v3/): each reads to the text its own reader dumped then
 * (the dump's legend line since names resident=). */
Test(trc, previous_version_recordings_read_as_before)
{
    static const struct { unsigned ver; const char *name; } rec[] = {
        { 1, "stacks" }, { 1, "errno" }, { 1, "aligned" },
        { 2, "stacks" }, { 2, "errno" }, { 2, "aligned" }, { 2, "usual" },
        { 3, "stacks" }, { 3, "errno" }, { 3, "aligned" }, { 3, "usual" },
    };
    for (size_t i = 0; i < sizeof rec / sizeof rec[0]; i++) {
        char trc[512], txt[512];
        snprintf(trc, sizeof trc, DMM_SRC_DIR "/test/data/trc-v%u/%s.trc", rec[i].ver,
                 rec[i].name);
        snprintf(txt, sizeof txt, DMM_SRC_DIR "/test/data/trc-v%u/%s.txt", rec[i].ver,
                 rec[i].name);
        size_t len, tlen;
        uint8_t *buf = slurp(trc, &len);
        cr_assert_eq(buf[8], rec[i].ver, "%s is a version %u trace", trc, rec[i].ver);
        free(buf);
        dmm_trace_t t;
        dmm_err_t err;
        char name[64];
        snprintf(name, sizeof name, "%s.trc", rec[i].name);
        cr_assert_eq(dmm_trace_parse(name, (buf = slurp(trc, &len)), len, DMM_FMT_TRC, &t, &err),
                     0, "%s", err.msg);
        free(buf);
        char *s = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&s, &n);
        cr_assert_eq(dmm_write_text(&t, f), 0);
        fclose(f);
        uint8_t *want = slurp(txt, &tlen);
        cr_assert_eq(n, tlen, "%s: %zu bytes of text, %zu then", rec[i].name, n, tlen);
        cr_assert(memcmp(s, want, n) == 0, "%s: the text differs", rec[i].name);
        free(want);
        free(s);
        dmm_trace_free(&t);
        /* a pass in order without holding them meets the same calls */
        assert_scan_matches_load(trc);
    }
}

Test(trc, empty_file)
{
    dmm_trace_t t;
    dmm_err_t err;
    spill(tmp_path("empty.trc"), "", 0);
    cr_assert_eq(dmm_trace_load(tmp_path("empty.trc"), &t, &err), -1);
    cr_assert(strstr(err.msg, "offset 0: empty file") != NULL, "%s", err.msg);
    /* and straight to the reader */
    memset(&t, 0, sizeof t);
    cr_assert_eq(dmm_read_trc("e", (const uint8_t *)"", 0, &t, &err), -1);
    cr_assert(strstr(err.msg, "e: offset 0:") != NULL, "%s", err.msg);
    dmm_trace_free(&t);
}

Test(trc, a_directory)
{
    dmm_trace_t t;
    dmm_err_t err;
    cr_assert_eq(dmm_trace_load(dir, &t, &err), -1);
    cr_assert(strstr(err.msg, "is a directory") != NULL, "%s", err.msg);
}

Test(trc, nonexistent)
{
    dmm_trace_t t;
    dmm_err_t err;
    cr_assert_eq(dmm_trace_load(tmp_path("no-such.trc"), &t, &err), -1);
    cr_assert(strstr(err.msg, "cannot open") != NULL, "%s", err.msg);
    cr_assert(strstr(err.msg, "no-such.trc") != NULL, "%s", err.msg);
}

/* Stacks named by records but never defined (their block was lost) still
 * exist, empty, so that nobody indexes past stacks[]. */
Test(trc, undefined_stack_ids_are_empty)
{
    dmm_trace_t a, b;
    dmm_err_t err;
    sample_trace(&a, 0);
    a.recs[0].stack = 77;
    cr_assert_eq(write_v(&a, tmp_path("u.trc"), 0, &err), 0, "%s", err.msg);
    cr_assert_eq(dmm_trace_load(tmp_path("u.trc"), &b, &err), 0, "%s", err.msg);
    cr_assert_eq(b.nstacks, 78);
    cr_assert_eq(b.stacks[77].nframes, 0);
    cr_assert_eq(b.recs[0].stack, 77);
    dmm_trace_free(&a);
    dmm_trace_free(&b);
}

static int count_entries(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

Test(trc, refuses_to_overwrite)
{
    dmm_trace_t a, b;
    dmm_err_t err;
    sample_trace(&a, 0);
    const char *p = tmp_path("x.trc");
    spill(p, "keep", 4);
    cr_assert_eq(write_v(&a, p, 0, &err), -1);
    cr_assert(strstr(err.msg, "exists") != NULL, "%s", err.msg);
    size_t len;
    uint8_t *buf = slurp(p, &len);
    cr_assert_eq(len, 4);
    free(buf);
    cr_assert_eq(count_entries(), 1, "no temporary left behind");
    cr_assert_eq(dmm_write_trc_ex(&a, p, 1, 1, &err), 0, "%s", err.msg);
    cr_assert_eq(dmm_trace_load(p, &b, &err), 0, "%s", err.msg);
    sample_compare(&a, &b);
    cr_assert_eq(count_entries(), 1, "no temporary left behind");
    dmm_trace_free(&a);
    dmm_trace_free(&b);
}

Test(trc, unwritable_leaves_nothing)
{
    dmm_trace_t a;
    dmm_err_t err;
    sample_trace(&a, 0);
    cr_assert_eq(write_v(&a, tmp_path("nodir/x.trc"), 0, &err), -1);
    cr_assert(strstr(err.msg, "nodir/x.trc") != NULL, "%s", err.msg);
    /* a record no .trc can hold is refused, and nothing is left */
    a.recs[1].op = DMM_TRC_OP_MAX;
    cr_assert_eq(write_v(&a, tmp_path("y.trc"), 0, &err), -1);
    cr_assert(strstr(err.msg, "has op") != NULL, "%s", err.msg);
    cr_assert_eq(count_entries(), 0);
    dmm_trace_free(&a);
}

Test(trc, text_dump)
{
    dmm_trace_t a;
    sample_trace(&a, 0);
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    cr_assert_eq(dmm_write_text(&a, f), 0);
    fclose(f);
    cr_assert(strstr(s, "# pid: 4242 ppid: 4241\n") != NULL, "%s", s);
    cr_assert(strstr(s, "# cmdline: ./app --size 42\n") != NULL, "%s", s);
    cr_assert(strstr(s, "# records: 9\n") != NULL, "%s", s);
    cr_assert(strstr(s, "# stacks: 3\n") != NULL, "%s", s);
    cr_assert(strstr(s, "# module 0x400000-0x401000 offset 0x0 /usr/bin/app\n") != NULL, "%s", s);
    cr_assert(strstr(s, "\n10 1007 4242 malloc size=100 in=0x0 out=0x1000 stack=1\n") != NULL,
              "%s", s);
    cr_assert(strstr(s, " calloc size=40 nmemb=4 in=0x0 out=0x2000 stack=2\n") != NULL, "%s", s);
    cr_assert(strstr(s, " posix_memalign size=64 align=64 ") != NULL, "%s", s);
    cr_assert(strstr(s, " failed errno=12 stack=3\n") != NULL, "%s", s);
    cr_assert(strstr(s, "# stack 1: 0x400999 0x400aaa 0x400bbb\n") != NULL, "%s", s);
    cr_assert(strstr(s, "# stack 3:\n") != NULL, "%s", s);
    /* one line per record, each starting with its seq */
    size_t lines = 0;
    for (char *l = s; (l = strchr(l, '\n')) != NULL; l++)
        if (l[1] >= '0' && l[1] <= '9')
            lines++;
    cr_assert_eq(lines, a.nrecs);
    free(s);
    dmm_trace_free(&a);
}

/* The fuzzer's seeds, test/corpus/trc/: run with DMM_REGEN_CORPUS=1 to write
 * them again (after a format change); otherwise check they still read. */
Test(trc, regen_corpus)
{
    /* ver 0: the current version; usual: 1 usual_trace()'s short forms,
     * 2 resident_trace()'s resident frees and record */
    static const struct { const char *name; size_t nextra; int zstd, cut, fmt, ver, usual; } seeds[] = {
        { "small.trc", 0, 0, 0, DMM_FMT_TRC, 0, 0 },
        { "small_zstd.trc", 0, 1, 0, DMM_FMT_TRC, 0, 0 },
        { "threads.trc", 60, 0, 0, DMM_FMT_TRC, 0, 0 },
        { "threads_zstd.trc", 200, 1, 0, DMM_FMT_TRC, 0, 0 },
        { "converted.trc", 8, 0, 0, DMM_FMT_REP, 0, 0 },
        { "cut_short.trc", 20, 0, 1, DMM_FMT_TRC, 0, 0 },
        { "empty.trc", 0, 0, 0, DMM_FMT_UNKNOWN, 0, 0 },
        { "usual.trc", 40, 0, 0, DMM_FMT_TRC, 0, 1 },
        { "threads_v2.trc", 60, 0, 0, DMM_FMT_TRC, 2, 0 },
        { "usual_v2.trc", 40, 0, 0, DMM_FMT_TRC, 2, 1 },
        { "threads_v3.trc", 60, 0, 0, DMM_FMT_TRC, 3, 0 },
        { "usual_v3.trc", 40, 0, 0, DMM_FMT_TRC, 3, 1 },
        { "resident.trc", 20, 0, 0, DMM_FMT_TRC, 0, 2 },
    };
    int regen = getenv("DMM_REGEN_CORPUS") != NULL;
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, DMM_SRC_DIR "/test/corpus/trc/%s", seeds[i].name);
        dmm_err_t err;
        if (regen) {
            dmm_trace_t a;
            if (seeds[i].fmt == DMM_FMT_UNKNOWN) {   /* header only */
                memset(&a, 0, sizeof a);
                a.format = DMM_FMT_TRC;
            } else {
                (seeds[i].usual == 2   ? resident_trace
                 : seeds[i].usual == 1 ? usual_trace
                                       : sample_trace)(&a, seeds[i].nextra);
                a.format = (dmm_format_t)seeds[i].fmt;
            }
            const char *tmp = tmp_path("seed.trc");
            unlink(tmp);
            g_ver = seeds[i].ver ? (unsigned)seeds[i].ver : DMM_TRC_VERSION;
            cr_assert_eq(write_v(&a, tmp, seeds[i].zstd, &err), 0, "%s", err.msg);
            size_t len;
            uint8_t *buf = slurp(tmp, &len);
            if (seeds[i].cut)
                len -= 40;
            unlink(path);
            spill(path, buf, len);
            free(buf);
            dmm_trace_free(&a);
        }
        size_t len;
        uint8_t *buf = slurp(path, &len);
        cr_assert_lt(len, 8192, "%s: seeds stay small", seeds[i].name);
        if (seeds[i].fmt != DMM_FMT_UNKNOWN)
            cr_assert_eq(buf[8], seeds[i].ver ? seeds[i].ver : DMM_TRC_VERSION, "%s",
                         seeds[i].name);
        free(buf);
        dmm_trace_t t;
        cr_assert_eq(dmm_trace_load(path, &t, &err), 0, "%s", err.msg);
        cr_assert_eq(t.truncated, seeds[i].cut, "%s", seeds[i].name);
        dmm_trace_free(&t);
    }
}

/* Many threads: each gets its own blocks, and every record keeps its thread
 * and its place. */
Test(trc, many_threads)
{
    dmm_trace_t a, b;
    dmm_err_t err;
    sample_trace(&a, 0);
    for (size_t i = 0; i < 30000; i++) {
        uint32_t tid = (uint32_t)((i * 7919) % 1500) * 65537u;
        sample_rec(&a, tid, DMM_TRC_MALLOC, i, 0, 0, 0x10 * (i + 1), 0);
    }
    cr_assert_eq(write_v(&a, tmp_path("mt.trc"), 1, &err), 0, "%s", err.msg);
    cr_assert_eq(dmm_trace_load(tmp_path("mt.trc"), &b, &err), 0, "%s", err.msg);
    sample_compare(&a, &b);
    dmm_trace_free(&a);
    dmm_trace_free(&b);
}

/* dmm_trc_compress_file: the blocks compressed, every record kept, in
 * either version; a cut-short file stays cut where it was; a file that is
 * not a trace is refused and left alone. */
Test(trc, compress_file_keeps_every_record)
{
    for (unsigned v = 1; v <= 2; v++) {
        g_ver = v;
        dmm_trace_t a, b;
        dmm_err_t err;
        sample_trace(&a, 20000);
        const char *p = tmp_path("c.trc");
        unlink(p);
        cr_assert_eq(write_v(&a, p, 0, &err), 0, "%s", err.msg);
        size_t before, after;
        cr_assert_eq(dmm_trc_compress_file(p, 3, &before, &after, &err), 0, "%s", err.msg);
        struct stat st;
        stat(p, &st);
        cr_assert_eq((size_t)st.st_size, after);
        cr_assert_lt(after * 3, before, "v%u: %zu -> %zu bytes", v, before, after);
        cr_assert_eq(dmm_trace_load(p, &b, &err), 0, "%s", err.msg);
        sample_compare(&a, &b);
        dmm_trace_free(&b);
        /* cut short: the whole blocks compressed, the tail kept */
        unlink(p);
        cr_assert_eq(write_v(&a, p, 0, &err), 0, "%s", err.msg);
        size_t len;
        uint8_t *buf = slurp(p, &len);
        unlink(p);
        spill(p, buf, len - 40);
        dmm_trace_t c1, c2;
        cr_assert_eq(dmm_trace_load(p, &c1, &err), 0, "%s", err.msg);
        cr_assert_eq(dmm_trc_compress_file(p, 3, NULL, NULL, &err), 0, "%s", err.msg);
        cr_assert_eq(dmm_trace_load(p, &c2, &err), 0, "%s", err.msg);
        cr_assert(c1.truncated && c2.truncated);
        cr_assert_eq(c1.nrecs, c2.nrecs);
        dmm_trace_free(&c1);
        dmm_trace_free(&c2);
        free(buf);
        dmm_trace_free(&a);
    }
    const char *junk = tmp_path("junk.trc");
    spill(junk, "DMMTRACE but no header", 22);
    dmm_err_t err;
    cr_assert_eq(dmm_trc_compress_file(junk, 3, NULL, NULL, &err), -1);
    cr_assert(strstr(err.msg, "junk.trc: offset") != NULL, "%s", err.msg);
    size_t len;
    uint8_t *buf = slurp(junk, &len);
    cr_assert_eq(len, 22, "left as it was");
    free(buf);
}

/* A trace's command line shown as shell words: what `dmm record --root`
 * prints and a report's "run it" line runs, so a shell must split it back
 * into the same arguments (sh -c echo, compared with the words). */
static void shell_round_trip(const char *cmdline, size_t len, const char *want)
{
    char out[512];
    cr_assert_eq(dmm_cmdline_shell(cmdline, len, out, sizeof out), 0, "%s", out);
    cr_assert_str_eq(out, want);
    char sh[1024];
    snprintf(sh, sizeof sh, "printf '%%s\\0' %s", out);
    FILE *p = popen(sh, "r");
    cr_assert(p);
    char back[512];
    size_t n = fread(back, 1, sizeof back, p);
    pclose(p);
    while (len && !cmdline[len - 1])
        len--;
    cr_assert_eq(n, len + 1, "%s: %zu bytes back", out, n);
    cr_assert_eq(memcmp(back, cmdline, len), 0, "%s", out);
}

Test(trc, a_command_line_is_shown_as_shell_words_that_run_it)
{
    static const char a[] = "sh\0-c\0prog fork 200; exit 0\0";
    shell_round_trip(a, sizeof a - 1, "sh -c 'prog fork 200; exit 0'");
    static const char b[] = "python3\0-c\0print('x')\0\0a=b,c:d/e.f@g%h+i_-\0$HOME *\0";
    shell_round_trip(b, sizeof b - 1,
                     "python3 -c 'print('\"'\"'x'\"'\"')' '' a=b,c:d/e.f@g%h+i_- '$HOME *'");
    shell_round_trip("ls\0", 3, "ls");
    char out[64];
    cr_assert_eq(dmm_cmdline_shell("", 0, out, sizeof out), 0);
    cr_assert_str_eq(out, "");
    /* a newline in an argument: shown as '?', and said to be inexact */
    cr_assert_eq(dmm_cmdline_shell("sh\0-c\0a\nb\0", 10, out, sizeof out), 1);
    cr_assert_str_eq(out, "sh -c 'a?b'");
    /* too long for out: cut, ending in "...", inexact */
    cr_assert_eq(dmm_cmdline_shell("abcdefghij\0klm\0", 15, out, 10), 1);
    cr_assert_str_eq(out, "abcdef...");
    cr_assert_eq(dmm_cmdline_shell("ab\0", 3, out, 3), 0);
    cr_assert_str_eq(out, "ab");
    cr_assert_eq(dmm_cmdline_shell("abc\0", 4, out, 3), 1);
    cr_assert_str_eq(out, "..");
}
