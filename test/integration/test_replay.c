/* test_replay.c - dmm replay: the real binary on small traces written here,
 * plainly and under libdmm.so; its JSON parses and holds the known numbers;
 * the mdriver table; --no-write; --write-all against a block written as far
 * as its trace says it was resident; --csv; --plot; --check against an
 * allocator planted to overlap two blocks; bad input.  The histogram and the
 * mdriver points directly.  No timing assertions. */
#include <criterion/criterion.h>

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tracer/replay/replay.h"
#include "test/lib/progrun.h"
#include "test/lib/libs.h"

/* progrun.h's helper this file does not need */
static void (*const unused_helper)(const char *, int) __attribute__((unused)) = write_input_file;

#define DMM    DMM_BUILD_DIR "/dmm"

/* ASan's runtime must come first in the library list: the sanitized dmm
 * cannot run under another allocator's LD_PRELOAD. */

/* ------------------------------------------------------------------ */
/* a small JSON syntax check                                          */

static const char *js_ws(const char *p)
{
    while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
        p++;
    return p;
}

static const char *js_value(const char *p, int depth);

static const char *js_string(const char *p)
{
    if (*p != '"')
        return NULL;
    for (p++; *p && *p != '"'; p++) {
        if ((unsigned char)*p < 0x20)
            return NULL;
        if (*p == '\\') {
            p++;
            if (*p == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!isxdigit((unsigned char)p[i]))
                        return NULL;
                p += 4;
            } else if (!strchr("\"\\/bfnrt", *p) || !*p) {
                return NULL;
            }
        }
    }
    return *p == '"' ? p + 1 : NULL;
}

static const char *js_number(const char *p)
{
    const char *s = p;
    if (*p == '-')
        p++;
    if (!isdigit((unsigned char)*p))
        return NULL;
    while (isdigit((unsigned char)*p))
        p++;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return NULL;
        while (isdigit((unsigned char)*p))
            p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!isdigit((unsigned char)*p))
            return NULL;
        while (isdigit((unsigned char)*p))
            p++;
    }
    return p > s ? p : NULL;
}

static const char *js_value(const char *p, int depth)
{
    if (depth > 32)
        return NULL;
    p = js_ws(p);
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        int obj = *p == '{';
        p = js_ws(p + 1);
        if (*p == close)
            return p + 1;
        for (;;) {
            if (obj) {
                p = js_string(js_ws(p));
                if (!p)
                    return NULL;
                p = js_ws(p);
                if (*p++ != ':')
                    return NULL;
            }
            p = js_value(p, depth + 1);
            if (!p)
                return NULL;
            p = js_ws(p);
            if (*p == ',') {
                p++;
                continue;
            }
            return *p == close ? p + 1 : NULL;
        }
    }
    if (*p == '"')
        return js_string(p);
    if (!strncmp(p, "true", 4))
        return p + 4;
    if (!strncmp(p, "false", 5))
        return p + 5;
    if (!strncmp(p, "null", 4))
        return p + 4;
    return js_number(p);
}

static int json_ok(const char *s)
{
    const char *e = js_value(s, 0);
    return e && *js_ws(e) == 0;
}

/* The number after the first "key": in s (or, with `within`, after the
 * first occurrence of "within":); NAN if absent. */
static double jnum(const char *s, const char *within, const char *key)
{
    char k[128];
    if (within) {
        snprintf(k, sizeof k, "\"%s\":", within);
        s = strstr(s, k);
        if (!s)
            return NAN;
    }
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(s, k);
    if (!p)
        return NAN;
    char *end;
    double v = strtod(p + strlen(k), &end);
    return end == p + strlen(k) ? NAN : v;
}

static int jhas(const char *s, const char *text)
{
    return strstr(s, text) != NULL;
}

/* ------------------------------------------------------------------ */
/* running dmm replay                                                 */

static void put(const char *name, const char *text, char *path, size_t len)
{
    snprintf(path, len, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

typedef struct result {
    int status;   /* exit status, or -1 if killed */
    char *out, *err;
} result_t;

/* dmm replay ARGS... (NULL-terminated), with the extra environment. */
static result_t replay_run(const char *const env[], const char *a0, ...)
{
    char *argv[32];
    int n = 0;
    argv[n++] = (char *)DMM;
    argv[n++] = (char *)"replay";
    va_list ap;
    va_start(ap, a0);
    for (const char *a = a0; a && n < 31; a = va_arg(ap, const char *))
        argv[n++] = (char *)a;
    va_end(ap);
    argv[n] = NULL;
    char out[300], err[300];
    snprintf(out, sizeof out, "%s/stdout", tmpdir);
    snprintf(err, sizeof err, "%s/stderr", tmpdir);
    int st = run(argv, env, tmpdir, NULL, out, err);
    result_t r = { .status = WIFEXITED(st) ? WEXITSTATUS(st) : -1 };
    r.out = slurp(out, NULL);
    r.err = slurp(err, NULL);
    cr_assert(r.out && r.err);
    return r;
}

static void result_free(result_t *r)
{
    free(r->out);
    free(r->err);
}

static const char *const plain_env[] = { NULL };
static const char *const kng_env[] = { "LD_PRELOAD=" LIBDMM, "DMM_CONFIG=kng", NULL };

/* a .rep with 7 operations, 3 blocks and a peak of 5000 live bytes */
static const char rep_text[] =
    "20000\n3\n7\n1\n"
    "a 0 1000\n"
    "a 1 2000\n"
    "r 0 3000\n"     /* 5000 live: the peak */
    "f 1\n"
    "a 2 500\n"
    "f 0\n"
    "f 2\n";

/* a wee_alloc trace: 6 operations, peak 300 */
static const char wee_text[] =
    "Alloc(100),\nAlloc(200),\nFree(0),\nAlloc(50),\nFree(1),\nFree(2),\n";

TestSuite(replay, .init = make_tmpdir, .fini = remove_tmpdir, .timeout = 120);

static void check_json(const char *json, double ops, double peak, const char *what)
{
    cr_assert(json_ok(json), "%s: not JSON: %.600s", what, json);
    cr_expect_eq(jnum(json, NULL, "ops"), ops, "%s: ops %g", what, jnum(json, NULL, "ops"));
    cr_expect_eq(jnum(json, NULL, "peak_requested_bytes"), peak, "%s: peak %g", what,
                 jnum(json, NULL, "peak_requested_bytes"));
    cr_expect(jhas(json, "\"check\":\"ok\""), "%s: check not ok", what);
    cr_expect_eq(jnum(json, NULL, "failed"), 0, "%s", what);
    cr_expect_gt(jnum(json, NULL, "tsc_ghz"), 0, "%s", what);
    cr_expect_geq(jnum(json, NULL, "wall_s"), 0, "%s", what);
    cr_expect_gt(jnum(json, NULL, "cycles_per_op"), 0, "%s", what);
    cr_expect_gt(jnum(json, NULL, "peak_rss_bytes"), 0, "%s", what);
    cr_expect_gt(jnum(json, NULL, "baseline_rss_bytes"), 0, "%s", what);
    cr_expect_geq(jnum(json, NULL, "peak_rss_bytes"), jnum(json, NULL, "baseline_rss_bytes"),
                  "%s", what);
    cr_expect(!isnan(jnum(json, NULL, "wastage_bytes")), "%s", what);
    cr_expect_leq(jnum(json, NULL, "best_ns"), jnum(json, NULL, "worst_ns"), "%s", what);
    cr_expect_leq(jnum(json, NULL, "over_100x_best"), ops, "%s", what);
    double n = 0;
    static const char *const kinds[] = { "alloc", "realloc", "free" };
    for (int k = 0; k < 3; k++) {
        double c = jnum(json, kinds[k], "count");
        cr_expect(!isnan(c), "%s: no latency.%s", what, kinds[k]);
        n += c;
        if (c > 0) {
            cr_expect_leq(jnum(json, kinds[k], "p50_ns"), jnum(json, kinds[k], "max_ns"), "%s", what);
            cr_expect_leq(jnum(json, kinds[k], "p99_ns"), jnum(json, kinds[k], "max_ns"), "%s", what);
            cr_expect(!isnan(jnum(json, kinds[k], "p999_ns")), "%s", what);
            cr_expect(!isnan(jnum(json, kinds[k], "mean_ns")), "%s", what);
        }
    }
    cr_expect_eq(n, ops, "%s: latency counts add to %g, not %g", what, n, ops);
}

static void json_run(const char *const env[], const char *envname)
{
    char rep[300], wee[300], what[128];
    put("small.rep", rep_text, rep, sizeof rep);
    put("small.trace", wee_text, wee, sizeof wee);

    result_t r = replay_run(env, "--json", "--check", rep, NULL);
    snprintf(what, sizeof what, ".rep %s", envname);
    cr_assert_eq(r.status, 0, "%s: status %d: %s", what, r.status, r.err);
    check_json(r.out, 7, 5000, what);
    cr_expect_eq(jnum(r.out, "alloc", "count"), 3);
    cr_expect_eq(jnum(r.out, "realloc", "count"), 1);
    cr_expect_eq(jnum(r.out, "free", "count"), 3);
    cr_expect(jhas(r.out, "\"mdriver\":{"), "%s: no mdriver object", what);
    cr_expect(jhas(r.out, "\"valid\":true"), "%s", what);
    cr_expect_eq(jnum(r.out, "mdriver", "ops"), 7);
    double u = jnum(r.out, "mdriver", "util");
    cr_expect(u > 0 && u <= 1, "%s: util %g", what, u);
    double pi = jnum(r.out, "mdriver", "perf_index");
    cr_expect(pi >= 0 && pi <= 100, "%s: perf index %g", what, pi);
    result_free(&r);

    r = replay_run(env, "--json", "--check", wee, NULL);
    snprintf(what, sizeof what, "wee %s", envname);
    cr_assert_eq(r.status, 0, "%s: status %d: %s", what, r.status, r.err);
    check_json(r.out, 6, 300, what);
    cr_expect(!jhas(r.out, "\"mdriver\""), "%s: mdriver table for a wee trace", what);
    result_free(&r);
}

Test(replay, json_plain)
{
    json_run(plain_env, "plainly");
}

/* --runs N: N runs from the same start, each operation timed by its
 * fastest; everything else as one run's.  A count out of range is refused. */
Test(replay, runs_time_each_operation_by_its_fastest_run)
{
    char rep[300];
    put("small.rep", rep_text, rep, sizeof rep);
    result_t r = replay_run(plain_env, "--json", "--check", "--runs", "4", rep, NULL);
    cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.err);
    check_json(r.out, 7, 5000, "--runs 4");
    cr_expect_eq(jnum(r.out, NULL, "runs"), 4);
    result_free(&r);
    r = replay_run(plain_env, "--runs", "3", rep, NULL);
    cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.err);
    cr_expect_not_null(strstr(r.out, "3 from the same start"), "%s", r.out);
    result_free(&r);
    r = replay_run(plain_env, "--json", rep, NULL);
    cr_expect_eq(jnum(r.out, NULL, "runs"), 1);
    result_free(&r);
    static const char *const bad[] = { "0", "1001", "-2", "x" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r = replay_run(plain_env, "--runs", bad[i], rep, NULL);
        cr_expect_eq(r.status, 1, "--runs %s: status %d", bad[i], r.status);
        cr_expect_not_null(strstr(r.err, "--runs needs a count"), "%s", r.err);
        result_free(&r);
    }
}

Test(replay, json_under_libdmm_kng)
{
    if (SANITIZED)
        cr_skip_test("a sanitized dmm cannot run under another allocator");
    json_run(kng_env, "under libdmm.so kng");
}

Test(replay, rep_prints_the_mdriver_table)
{
    char rep[300];
    put("small.rep", rep_text, rep, sizeof rep);
    result_t r = replay_run(plain_env, rep, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    const char *t = strstr(r.out, "trace                 valid  util       ops       secs     Kops");
    cr_assert_not_null(t, "no mdriver header: %s", r.out);
    cr_expect_not_null(strstr(t, "small.rep"), "%s", r.out);
    cr_expect_not_null(strstr(t, " yes "), "%s", r.out);
    cr_expect_not_null(strstr(t, "Total"), "%s", r.out);
    cr_expect_not_null(strstr(t, "Perf index = "), "%s", r.out);
    cr_expect_not_null(strstr(t, "/40 (util) + "), "%s", r.out);
    cr_expect_not_null(strstr(t, "/60 (thru) = "), "%s", r.out);
    cr_expect_not_null(strstr(t, "54,500 Kops"), "%s", r.out);
    /* and the rest of the report */
    cr_expect_not_null(strstr(r.out, "p99.9"), "%s", r.out);
    cr_expect_not_null(strstr(r.out, "over 100x the best"), "%s", r.out);
    cr_expect_not_null(strstr(r.out, "wastage"), "%s", r.out);
    result_free(&r);

    /* no table for other formats */
    char wee[300];
    put("small.trace", wee_text, wee, sizeof wee);
    r = replay_run(plain_env, wee, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect_null(strstr(r.out, "Perf index"), "%s", r.out);
    result_free(&r);
}

/* 50 blocks of 1 MiB, all live at once, then freed. */
static void big_rep(char *path, size_t len)
{
    char *text = malloc(4096);
    size_t n = (size_t)sprintf(text, "0\n50\n100\n1\n");
    for (int i = 0; i < 50; i++)
        n += (size_t)sprintf(text + n, "a %d 1048576\n", i);
    for (int i = 0; i < 50; i++)
        n += (size_t)sprintf(text + n, "f %d\n", i);
    put("big.rep", text, path, len);
    free(text);
}

static void no_write_saves(const char *const env[], const char *what)
{
    char big[300];
    big_rep(big, sizeof big);
    result_t w = replay_run(env, "--json", big, NULL);
    result_t nw = replay_run(env, "--json", "--no-write", big, NULL);
    cr_assert_eq(w.status, 0, "%s: %s", what, w.err);
    cr_assert_eq(nw.status, 0, "%s: %s", what, nw.err);
    cr_assert(json_ok(w.out) && json_ok(nw.out));
    cr_expect_eq(jnum(w.out, NULL, "peak_requested_bytes"), 50.0 * 1048576);
    cr_expect_eq(jnum(nw.out, NULL, "peak_requested_bytes"), 50.0 * 1048576);
    cr_expect(jhas(nw.out, "\"write\":false"));
    double rw = jnum(w.out, NULL, "peak_rss_bytes"), rn = jnum(nw.out, NULL, "peak_rss_bytes");
    cr_expect_gt(rw - rn, 20e6, "%s: peak RSS written %.0f, not written %.0f", what, rw, rn);
    double hw = jnum(w.out, NULL, "peak_held_bytes");
    cr_expect_geq(hw, 50.0 * 1048576 * 0.99, "%s: held %.0f with every byte written", what, hw);
    result_free(&w);
    result_free(&nw);
}

Test(replay, no_write_reduces_peak_rss)
{
    no_write_saves(plain_env, "plainly");
}

Test(replay, no_write_reduces_peak_rss_under_libdmm)
{
    if (SANITIZED)
        cr_skip_test("a sanitized dmm cannot run under another allocator");
    no_write_saves(kng_env, "under libdmm.so kng");
}

#define TRACEE DMM_BUILD_DIR "/test/progs/tracee"

/* The tracee's sparse mode recorded under the tracer into path: 3 rounds of
 * a 4 MiB block with 3 pages written, a 1 MiB block written whole and a
 * 64-byte one, whose frees say how much of the large ones was resident. */
static void record_sparse(char *path, size_t len, const char *mode, const char *n)
{
    snprintf(path, len, "%s/%s.trc", tmpdir, mode);
    char file[340];
    snprintf(file, sizeof file, "DMM_TRACE_FILE=%s", path);
    const char *const env[] = { "LD_PRELOAD=" TRACER, file, NULL };
    char *argv[] = { (char *)TRACEE, (char *)mode, (char *)n, NULL };
    cr_assert_eq(run(argv, env, tmpdir, NULL, NULL, NULL), 0, "recording the sparse tracee");
}

/* By default a block is written as far as its free said it was resident
 * (the 4 MiB blocks: a few pages), with --write-all every byte: the peak
 * RSS differs by most of 4 MiB.  --check checks what was written;
 * --write-all with --no-write is a usage error. */
Test(replay, writes_as_much_of_a_block_as_was_resident)
{
    char trc[300];
    record_sparse(trc, sizeof trc, "sparse", "1");   /* one round: glibc maps its blocks */
    result_t d = replay_run(plain_env, "--json", trc, NULL);
    result_t a = replay_run(plain_env, "--json", "--write-all", trc, NULL);
    cr_assert_eq(d.status, 0, "%s", d.err);
    cr_assert_eq(a.status, 0, "%s", a.err);
    cr_assert(json_ok(d.out) && json_ok(a.out));
    double want = (5u << 20) + 64;
    cr_expect_eq(jnum(d.out, NULL, "peak_requested_bytes"), want);
    cr_expect_eq(jnum(a.out, NULL, "peak_requested_bytes"), want);
    double rd = jnum(d.out, NULL, "peak_rss_bytes"), ra = jnum(a.out, NULL, "peak_rss_bytes");
    cr_expect_geq(ra - rd, 2.0 * 1048576, "peak RSS %.0f as resident, %.0f written whole", rd,
                  ra);
    result_free(&d);
    result_free(&a);

    for (int all = 0; all < 2; all++) {
        result_t r = all ? replay_run(plain_env, "--json", "--check", "--write-all", trc, NULL)
                         : replay_run(plain_env, "--json", "--check", trc, NULL);
        cr_expect_eq(r.status, 0, "--check%s: status %d: %s", all ? " --write-all" : "",
                     r.status, r.err);
        cr_expect(jhas(r.out, "\"check\":\"ok\""), "%s", r.out);
        result_free(&r);
    }

    result_t u = replay_run(plain_env, "--write-all", "--no-write", trc, NULL);
    cr_expect_eq(u.status, 1, "status %d", u.status);
    cr_expect(strstr(u.err, "--write-all") && strstr(u.err, "--no-write"), "%s", u.err);
    result_free(&u);
}

/* Blocks still live at the end said how much of them was resident (the
 * 8 MiB calloc: two pages): they are written that far too. */
Test(replay, writes_as_much_of_a_live_block_as_was_resident_at_the_end)
{
    char trc[300];
    record_sparse(trc, sizeof trc, "sparselive", "3");
    result_t d = replay_run(plain_env, "--json", "--check", trc, NULL);
    result_t a = replay_run(plain_env, "--json", "--write-all", trc, NULL);
    cr_assert_eq(d.status, 0, "%s", d.err);
    cr_assert_eq(a.status, 0, "%s", a.err);
    double rd = jnum(d.out, NULL, "peak_rss_bytes"), ra = jnum(a.out, NULL, "peak_rss_bytes");
    cr_expect_geq(ra - rd, 6.0 * 1048576, "peak RSS %.0f as resident, %.0f written whole", rd,
                  ra);
    result_free(&d);
    result_free(&a);
}

static size_t count_lines(const char *path)
{
    char *s = slurp(path, NULL);
    cr_assert_not_null(s, "%s missing", path);
    size_t n = 0;
    for (char *p = s; *p; p++)
        n += *p == '\n';
    free(s);
    return n;
}

Test(replay, csv_has_one_row_per_sample)
{
    char big[300], csv[300];
    big_rep(big, sizeof big);   /* 100 operations */
    snprintf(csv, sizeof csv, "%s/series.csv", tmpdir);

    result_t r = replay_run(plain_env, "--no-write", "--samples", "40", "--csv", csv, "--json",
                            big, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect_eq(jnum(r.out, NULL, "samples"), 40);
    cr_expect_eq(count_lines(csv), 1 + 40);   /* a header and 40 rows */
    result_free(&r);

    /* more samples than operations: one per operation */
    r = replay_run(plain_env, "--no-write", "--csv", csv, big, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect_eq(count_lines(csv), 1 + 100);
    char *s = slurp(csv, NULL);
    cr_expect(!strncmp(s, "op,requested_bytes,rss_bytes,held_bytes\n", 40), "%.80s", s);
    /* the last row is the last operation, with nothing live */
    char *last = s + strlen(s) - 2;
    while (last > s && *last != '\n')
        last--;
    unsigned long long op, req;
    cr_expect_eq(sscanf(last + 1, "%llu,%llu,", &op, &req), 2);
    cr_expect_eq(op, 99);
    cr_expect_eq(req, 0);
    /* row 50 (after the 50th alloc) holds the peak */
    char *p = s;
    for (int i = 0; i < 50; i++)
        p = strchr(p, '\n') + 1;
    cr_expect_eq(sscanf(p, "%llu,%llu,", &op, &req), 2);
    cr_expect_eq(op, 49);
    cr_expect_eq(req, 50ull * 1048576);
    free(s);
    result_free(&r);
}

Test(replay, plot_is_drawn_when_gnuplot_is_there)
{
    char rep[300], png[300];
    put("small.rep", rep_text, rep, sizeof rep);
    snprintf(png, sizeof png, "%s/series.png", tmpdir);
    result_t r = replay_run(plain_env, "--plot", png, rep, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    struct stat st;
    if (access("/usr/bin/gnuplot", X_OK) != 0 && access("/usr/local/bin/gnuplot", X_OK) != 0) {
        cr_expect_not_null(strstr(r.err, "gnuplot is not installed"), "%s", r.err);
        cr_expect_neq(stat(png, &st), 0);
    } else {
        cr_assert_eq(stat(png, &st), 0, "no plot: %s", r.err);
        cr_expect_gt(st.st_size, 1000);
        char *s = slurp(png, NULL);
        cr_expect(!memcmp(s, "\x89PNG", 4));
        free(s);
    }
    result_free(&r);
}

Test(replay, bad_input_exits_2)
{
    char path[300];
    put("garbage.rep", "20000\n2\n2\n1\na 0 100\nx 7 8\n", path, sizeof path);
    result_t r = replay_run(plain_env, path, NULL);
    cr_expect_eq(r.status, 2, "status %d", r.status);
    cr_expect_not_null(strstr(r.err, "garbage.rep"), "%s", r.err);
    cr_expect_not_null(strstr(r.err, "line 6"), "%s", r.err);
    cr_expect_null(strstr(r.out, "latency"), "%s", r.out);
    result_free(&r);

    put("empty.rep", "20000\n0\n0\n1\n", path, sizeof path);
    r = replay_run(plain_env, path, NULL);
    cr_expect_eq(r.status, 2, "status %d", r.status);
    cr_expect_not_null(strstr(r.err, "no operations"), "%s", r.err);
    result_free(&r);

    put("nothing.bin", "\x01\x02\x03 not a trace at all", path, sizeof path);
    r = replay_run(plain_env, path, NULL);
    cr_expect_eq(r.status, 2, "status %d", r.status);
    cr_expect_not_null(strstr(r.err, "nothing.bin"), "%s", r.err);
    result_free(&r);

    r = replay_run(plain_env, "/nonexistent/trace.rep", NULL);
    cr_expect_eq(r.status, 2, "status %d", r.status);
    result_free(&r);

    /* usage errors: 1 */
    put("small.rep", rep_text, path, sizeof path);
    r = replay_run(plain_env, "--check", "--no-write", path, NULL);
    cr_expect_eq(r.status, 1);
    result_free(&r);
    r = replay_run(plain_env, "--samples", "0", path, NULL);
    cr_expect_eq(r.status, 1);
    result_free(&r);
    r = replay_run(plain_env, "--frobnicate", path, NULL);
    cr_expect_eq(r.status, 1);
    result_free(&r);
}

/* An allocator planted to overlap blocks: a bump allocator whose second
 * request of exactly 100 bytes gets the first one's address.  --check must
 * find it (exit 3); without --check the replay runs to its end. */
static const char overlap_src[] =
    "#include <stddef.h>\n"
    "#include <string.h>\n"
    "#include <errno.h>\n"
    "static _Alignas(64) char heap[256 << 20];\n"
    "static size_t top;\n"
    "static char *first100;\n"
    "static int n100;\n"
    "static void *bump(size_t n, size_t al) {\n"
    "  size_t p = (top + 16 + al - 1) & ~(al - 1);\n"
    "  if (n > sizeof heap || p + n > sizeof heap) return NULL;\n"
    "  ((size_t *)(heap + p))[-1] = n; top = p + n; return heap + p; }\n"
    "void *malloc(size_t n) {\n"
    "  if (n == 100 && ++n100 == 2) return first100;\n"
    "  char *p = bump(n, 16); if (n == 100 && n100 == 1) first100 = p; return p; }\n"
    "void free(void *p) { (void)p; }\n"
    "void *calloc(size_t a, size_t b) { size_t n = a * b;\n"
    "  if (b && n / b != a) return NULL; void *p = malloc(n); if (p) memset(p, 0, n); return p; }\n"
    "void *realloc(void *o, size_t n) { void *p = malloc(n); if (!p || !o) return p;\n"
    "  size_t m = ((size_t *)o)[-1]; memcpy(p, o, m < n ? m : n); return p; }\n"
    "int posix_memalign(void **r, size_t al, size_t n) { if (al < 16) al = 16;\n"
    "  void *p = bump(n, al); if (!p) return ENOMEM; *r = p; return 0; }\n"
    "void *aligned_alloc(size_t al, size_t n) { void *p; return posix_memalign(&p, al, n) ? NULL : p; }\n"
    "void *memalign(size_t al, size_t n) { return aligned_alloc(al, n); }\n"
    "size_t malloc_usable_size(void *p) { return p ? ((size_t *)p)[-1] : 0; }\n";

Test(replay, check_catches_an_overlapping_allocator)
{
    if (SANITIZED)
        cr_skip_test("a sanitized dmm cannot run under another allocator");
    if (access("/usr/bin/cc", X_OK) != 0)
        cr_skip_test("no C compiler to build the planted allocator");
    char src[300], so[300], rep[300];
    put("overlap.c", overlap_src, src, sizeof src);
    snprintf(so, sizeof so, "%s/liboverlap.so", tmpdir);
    char *cc[] = { "/usr/bin/cc", "-O1", "-shared", "-fPIC", "-o", so, src, NULL };
    int st = run(cc, NULL, tmpdir, NULL, NULL, NULL);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "could not build the planted allocator");
    /* blocks 0 and 1 (100 bytes each) share an address; block 0's free
     * finds block 1's pattern */
    put("overlap.rep", "0\n3\n6\n1\na 0 100\na 1 100\na 2 64\nf 0\nf 1\nf 2\n", rep, sizeof rep);
    char pre[400];
    snprintf(pre, sizeof pre, "LD_PRELOAD=%s", so);
    const char *env[] = { pre, NULL };

    result_t r = replay_run(env, "--check", "--json", rep, NULL);
    cr_expect_eq(r.status, 3, "status %d; %s", r.status, r.err);
    cr_expect_not_null(strstr(r.err, "corruption at op 3"), "%s", r.err);
    cr_expect(json_ok(r.out), "%s", r.out);
    cr_expect(jhas(r.out, "\"check\":\"corrupt\""), "%s", r.out);
    cr_expect(jhas(r.out, "\"valid\":false"), "%s", r.out);
    result_free(&r);

    /* --runs: the first run, in a child, finds it and says so */
    r = replay_run(env, "--check", "--runs", "2", rep, NULL);
    cr_expect_eq(r.status, 3, "status %d; %s", r.status, r.err);
    cr_expect_not_null(strstr(r.err, "run 1 of 2 found a corruption"), "%s", r.err);
    result_free(&r);

    r = replay_run(env, "--json", rep, NULL);
    cr_expect_eq(r.status, 0, "status %d; %s", r.status, r.err);
    cr_expect(jhas(r.out, "\"check\":\"off\""), "%s", r.out);
    cr_expect_eq(jnum(r.out, NULL, "ops"), 6);
    result_free(&r);

    /* a correct allocator passes the same trace */
    r = replay_run(plain_env, "--check", rep, NULL);
    cr_expect_eq(r.status, 0, "%s", r.err);
    result_free(&r);
}

/* ------------------------------------------------------------------ */
/* the histogram and the points, directly                             */

Test(replay_hist, buckets_tile_the_values)
{
    cr_expect_eq(dmm_hist_index(0), 0);
    cr_expect_eq(dmm_hist_index(15), 15);
    cr_expect_eq(dmm_hist_index(16), 16);
    cr_expect_eq(dmm_hist_index(UINT64_MAX), DMM_HIST_BUCKETS - 1);
    for (size_t i = 0; i < DMM_HIST_BUCKETS; i++) {
        uint64_t lo = dmm_hist_low(i), hi = dmm_hist_high(i);
        cr_assert_leq(lo, hi);
        cr_assert_eq(dmm_hist_index(lo), i, "bucket %zu low %llu", i, (unsigned long long)lo);
        cr_assert_eq(dmm_hist_index(hi), i, "bucket %zu high %llu", i, (unsigned long long)hi);
        if (i + 1 < DMM_HIST_BUCKETS)
            cr_assert_eq(dmm_hist_low(i + 1), hi + 1, "gap after bucket %zu", i);
        /* 16 sub-buckets per power of two: width at most 1/16 of the low end */
        if (lo >= 16)
            cr_assert_leq((hi - lo + 1) * 16, lo);
    }
}

Test(replay_hist, quantiles_are_close)
{
    dmm_hist_t *h = malloc(sizeof *h);
    dmm_hist_init(h);
    cr_expect_eq(dmm_hist_quantile(h, 0.5), 0);
    for (uint64_t v = 1; v <= 100000; v++)
        dmm_hist_add(h, v);
    cr_expect_eq(h->count, 100000);
    cr_expect_eq(h->min, 1);
    cr_expect_eq(h->max, 100000);
    const double qs[] = { 0.5, 0.9, 0.99, 0.999 };
    for (int i = 0; i < 4; i++) {
        double want = qs[i] * 100000, got = (double)dmm_hist_quantile(h, qs[i]);
        cr_expect(fabs(got - want) <= want / 32 + 1, "q%g: %g, want %g", qs[i], got, want);
    }
    cr_expect_eq(dmm_hist_quantile(h, 1.0), 100000);
    /* exact below 16 */
    dmm_hist_init(h);
    for (int i = 0; i < 10; i++)
        dmm_hist_add(h, 7);
    dmm_hist_add(h, 1000000);
    cr_expect_eq(dmm_hist_quantile(h, 0.5), 7);
    cr_expect_eq(dmm_hist_quantile(h, 0.9), 7);
    double top = (double)dmm_hist_quantile(h, 0.999);
    cr_expect(fabs(top - 1e6) <= 1e6 / 32, "%g", top);
    cr_expect_eq(dmm_hist_quantile(h, 1.0), 1000000);   /* clamped to the max */
    free(h);
}

Test(replay_hist, mdriver_points)
{
    /* the mdriver paper's example: 73% util is 29.2 points of 40; 143 Kops
     * against 54,500 is 0.157 of 60 */
    cr_expect(fabs(dmm_mdriver_util_points(0.73) - 29.2) < 1e-9);
    cr_expect(fabs(dmm_mdriver_thru_points(143) - 0.157) < 0.001);
    cr_expect_eq(dmm_mdriver_thru_points(1e6), 60.0);
    cr_expect_eq(dmm_mdriver_util_points(1.5), 40.0);
    cr_expect_eq(dmm_mdriver_thru_points(0), 0.0);
}

/* The operation stream is kept as TRACE.ops and read from there the next
 * time (the .rep's mdriver table too: the format comes from the trace's
 * first bytes); --no-cache neither reads nor writes it. */
Test(replay, the_operation_stream_is_kept_beside_the_trace)
{
    char rep[300], ops[320];
    put("cached.rep", rep_text, rep, sizeof rep);
    snprintf(ops, sizeof ops, "%s.ops", rep);
    result_t r = replay_run(plain_env, "--no-cache", "--json", rep, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect_neq(access(ops, F_OK), 0, "--no-cache wrote %s", ops);
    double n0 = jnum(r.out, NULL, "ops");
    result_free(&r);
    r = replay_run(plain_env, "--json", rep, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect_eq(access(ops, F_OK), 0, "no %s", ops);
    cr_expect_eq(jnum(r.out, NULL, "ops"), n0);
    result_free(&r);
    struct stat a, b;
    cr_assert_eq(stat(ops, &a), 0);
    r = replay_run(plain_env, rep, NULL);   /* from the cache */
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_eq(stat(ops, &b), 0);
    cr_expect_eq(a.st_mtim.tv_nsec, b.st_mtim.tv_nsec, "the cache was read, not written again");
    cr_expect_eq(a.st_mtim.tv_sec, b.st_mtim.tv_sec);
    cr_expect_not_null(strstr(r.out, "Perf index = "), "%s", r.out);
    result_free(&r);
    /* a damaged cache is not used (and is replaced) */
    FILE *f = fopen(ops, "r+");
    cr_assert_not_null(f);
    fseek(f, -1, SEEK_END);
    fputc('x', f);
    fclose(f);
    r = replay_run(plain_env, "--json", rep, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect_eq(jnum(r.out, NULL, "ops"), n0);
    result_free(&r);
}

/* ------------------------------------------------------------------ */
/* dmm replay --mdriver                                               */

/* A churning .rep: 300 blocks of 16 to 4 KiB live at once, each freed and
 * allocated again, some reallocated; its peak payload is known. */
static void churn_rep(char *path, size_t len)
{
    char *text = malloc(1 << 16);
    size_t n = (size_t)sprintf(text, "0\n600\n1500\n1\n");
    for (int i = 0; i < 300; i++)
        n += (size_t)sprintf(text + n, "a %d %d\n", i, 16 + (i * 97) % 4080);
    for (int i = 0; i < 300; i++) {
        n += (size_t)sprintf(text + n, "f %d\n", i);
        n += (size_t)sprintf(text + n, "a %d %d\n", 300 + i, 16 + (i * 31) % 2000);
        if (i % 3 == 0)
            n += (size_t)sprintf(text + n, "r %d %d\n", 300 + i, 40 + (i * 13) % 5000);
    }
    for (int i = 0; i < 300; i++)
        n += (size_t)sprintf(text + n, "f %d\n", 300 + i);
    put("churn.rep", text, path, len);
    free(text);
}

/* Under dmm's libraries the heap is the footprint the library holds, so
 * the utilisation is exactly peak payload / the simulator's M; and the
 * timed runs follow mdriver's K-best. */
Test(replay, mdriver_utilisation_is_the_footprint_the_simulator_predicts)
{
    char path[300];
    churn_rep(path, sizeof path);
    const char *presets[] = { "kng", "lea", "tlsf" };
    /* a sanitized dmm cannot run under another allocator: glibc only */
    size_t npresets = SANITIZED ? 0 : sizeof presets / sizeof presets[0];
    for (size_t i = 0; i < npresets; i++) {
        char cfg[64];
        snprintf(cfg, sizeof cfg, "DMM_CONFIG=%s", presets[i]);
        const char *env[] = { "LD_PRELOAD=" LIBDMM, cfg, NULL };
        result_t r = replay_run(env, "--mdriver", "--json", path, NULL);
        cr_assert_eq(r.status, 0, "%s: %s", presets[i], r.err);
        cr_assert(json_ok(r.out), "%s", r.out);
        char *argv[] = { (char *)DMM, "sim", "--json", "--dmm", (char *)presets[i], path, NULL };
        char out[300];
        snprintf(out, sizeof out, "%s/sim.json", tmpdir);
        int st = run(argv, plain_env, tmpdir, NULL, out, NULL);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        char *sim = slurp(out, NULL);
        double M = jnum(sim, NULL, "m"), peak = jnum(sim, NULL, "peak_live_requested");
        cr_expect_eq(jnum(r.out, NULL, "heap"), M, "%s: heap = the simulated M", presets[i]);
        cr_expect_eq(jnum(r.out, NULL, "peak_payload"), peak, "%s", presets[i]);
        cr_expect_float_eq(jnum(r.out, NULL, "util"), peak / M, 1e-6, "%s", presets[i]);
        cr_expect(jhas(r.out, "\"heap_from\": \"footprint\""), "%s", r.out);
        cr_expect(jhas(r.out, "\"valid\": true"), "%s", r.out);
        double runs = jnum(r.out, NULL, "runs");
        cr_expect(runs >= 3 && runs <= 20, "K-best: 3 to 20 runs, not %g", runs);
        cr_expect_gt(jnum(r.out, "total", "kops"), 0);
        free(sim);
        result_free(&r);
    }
    /* glibc: the heap from RSS, said so; the table as mdriver prints it */
    result_t g = replay_run(plain_env, "--mdriver", path, NULL);
    cr_assert_eq(g.status, 0, "%s", g.err);
    cr_expect(jhas(g.out, "Results for glibc malloc:\ntrace  valid  util     ops      secs   Kops\n"),
              "%s", g.out);
    cr_expect(jhas(g.out, "      yes  "), "%s", g.out);
    cr_expect(jhas(g.out, "\nTotal  "), "%s", g.out);
    cr_expect(jhas(g.out, "Perf index = "), "%s", g.out);
    cr_expect(jhas(g.out, "anonymous RSS"), "%s", g.out);
    result_free(&g);
}

/* dmm sim --json --fit-pool of design (a .dmm file) on rep: its M,
 * page-map bytes and the pool that keeps M (fit may be NULL). */
static void sim_m_fit(const char *design, const char *rep, double *m, double *map, double *fit)
{
    char *argv[] = { (char *)DMM, "sim", "--json", "--fit-pool", "--dmm", (char *)design,
                     (char *)rep, NULL };
    if (!fit)
        memmove(&argv[3], &argv[4], 4 * sizeof argv[0]);
    char out[300];
    snprintf(out, sizeof out, "%s/sim.json", tmpdir);
    int st = run(argv, plain_env, tmpdir, NULL, out, NULL);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "dmm sim %s", design);
    char *sim = slurp(out, NULL);
    *m = jnum(sim, NULL, "m");
    *map = jnum(sim, NULL, "page_map_bytes");
    if (fit)
        *fit = jnum(sim, NULL, "pool_keeping_m");
    else
        cr_expect(!jhas(sim, "pool_keeping_m"), "only with --fit-pool: %s", sim);
    free(sim);
}

/* One number of dmm sim --json's output for design on rep. */
static double sim_num(const char *design, const char *rep, const char *key)
{
    char *argv[] = { (char *)DMM, "sim", "--json", "--dmm", (char *)design, (char *)rep, NULL };
    char out[300];
    snprintf(out, sizeof out, "%s/sim.json", tmpdir);
    int st = run(argv, plain_env, tmpdir, NULL, out, NULL);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "dmm sim %s", design);
    char *sim = slurp(out, NULL);
    double v = jnum(sim, NULL, key);
    free(sim);
    return v;
}

static void sim_m(const char *design, const char *rep, double *m, double *map)
{
    sim_m_fit(design, rep, m, map, NULL);
}

/* M of design with the line `pool bytes=pool` added. */
static double sim_m_pooled(const char *design_text, const char *rep, double pool)
{
    char body[512], path[300];
    snprintf(body, sizeof body, "%spool bytes=%.0f\n", design_text, pool);
    put("pooled.dmm", body, path, sizeof path);
    double m, map;
    sim_m(path, rep, &m, &map);
    return m;
}

/* make evolve POOL=auto: the footprint counts the page map's pages beside
 * the pool, so a pool of M less them (dmm sim's page_map_bytes) holds a run
 * whose chunks leave no hole below its peak at M, in the simulator and in
 * libdmm.so alike; a pool of M itself holds a page-map page more. */
Test(replay, a_pool_of_m_less_the_page_map_keeps_the_peak_at_m)
{
    /* 3 MB: past the 2 MiB whose map is the page source's map0 */
    static char text[1 << 16];
    char rep[300], d[300];
    size_t n = (size_t)sprintf(text, "0\n2000\n4000\n1\n");
    for (int i = 0; i < 2000; i++)
        n += (size_t)sprintf(text + n, "a %d %d\n", i, 64 + (i * 37) % 3000);
    for (int i = 0; i < 2000; i++)
        n += (size_t)sprintf(text + n, "f %d\n", i);
    put("grow.rep", text, rep, sizeof rep);
    const char *design = "lea range=(0,inf] split=yes coalesce=yes list=dll fit=best order=fifo\n";
    put("d.dmm", design, d, sizeof d);
    double m, map, m1, map1, fit;
    sim_m_fit(d, rep, &m, &map, &fit);
    cr_assert_gt(map, 0, "the page map's first page is part of M");
    cr_expect_eq(fit, m - map, "no hole below the peak: --fit-pool gives M - map, not %g", fit);
    char pooled[300], body[512];
    snprintf(body, sizeof body, "%spool bytes=%.0f\n", design, m - map);
    put("p.dmm", body, pooled, sizeof pooled);
    sim_m(pooled, rep, &m1, &map1);
    cr_expect_eq(m1, m, "pool of M - map: M %g, not %g", m1, m);
    snprintf(body, sizeof body, "%spool bytes=%.0f\n", design, m);
    char whole[300];
    put("w.dmm", body, whole, sizeof whole);
    sim_m(whole, rep, &m1, &map1);
    cr_expect_eq(m1, m + map, "pool of M: the map beside it");
    if (SANITIZED)
        return;   /* a sanitized dmm cannot run under another allocator */
    char cfg[400];
    snprintf(cfg, sizeof cfg, "DMM_CONFIG=%s", pooled);
    const char *env[] = { "LD_PRELOAD=" LIBDMM, cfg, NULL };
    result_t r = replay_run(env, "--mdriver", "--json", rep, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect_eq(jnum(r.out, NULL, "heap"), m, "libdmm.so with the pool: heap = M");
    result_free(&r);
}

/* The retain line: large chunks given back stay held (1 MiB of them by
 * default) or go back to the OS at once (bytes=0), in the simulator and in
 * libdmm.so alike.  A program that frees two large blocks ten times, then
 * grows its small ones: the kept chunks serve the next rounds without a
 * system call, and go back before they would raise the peak, so the
 * default budget peaks no higher than none. */
/* libdmm.so's mdriver heap replaying rep under each of n designs is the
 * simulated M of that design, m[i]. */
static void expect_libdmm_heap_is_m(const char *rep, const char *const *designs, const double *m,
                                    int n)
{
    for (int i = 0; i < n; i++) {
        char cfg[400];
        snprintf(cfg, sizeof cfg, "DMM_CONFIG=%s", designs[i]);
        const char *env[] = { "LD_PRELOAD=" LIBDMM, cfg, NULL };
        result_t r = replay_run(env, "--mdriver", "--json", rep, NULL);
        cr_assert_eq(r.status, 0, "%s", r.err);
        cr_expect_eq(jnum(r.out, NULL, "heap"), m[i], "%s: libdmm.so's heap = M", designs[i]);
        result_free(&r);
    }
}

Test(replay, kept_chunks_save_calls_and_never_raise_m_in_the_simulator_and_the_library)
{
    static char text[1 << 16];
    int n = 0, id = 0, ops = 0;
    for (; id < 10; id++, ops++)
        n += sprintf(text + n, "a %d 100\n", id);
    for (int r = 0; r < 10; r++, id += 2, ops += 4)
        n += sprintf(text + n, "a %d 300000\na %d 200000\nf %d\nf %d\n", id, id + 1, id,
                     id + 1);
    for (int i = 0; i < 3000; i++, id++, ops++)
        n += sprintf(text + n, "a %d 200\n", id);
    char head[64], rep[300], kept[300], none[300];
    int h = sprintf(head, "0\n%d\n%d\n1\n", id, ops);
    memmove(text + h, text, (size_t)n + 1);
    memcpy(text, head, (size_t)h);
    put("retain.rep", text, rep, sizeof rep);
    const char *lea = "lea range=(0,inf] split=yes coalesce=yes list=dll fit=best order=fifo\n";
    char body[256];
    put("kept.dmm", lea, kept, sizeof kept);
    snprintf(body, sizeof body, "%sretain bytes=0\n", lea);
    put("none.dmm", body, none, sizeof none);
    double m[2], map, fit;
    sim_m(kept, rep, &m[0], &map);
    double calls_kept = sim_num(kept, rep, "page_source_system_calls");
    sim_m_fit(none, rep, &m[1], &map, &fit);
    double calls_none = sim_num(none, rep, "page_source_system_calls");
    cr_expect_eq(m[0], m[1], "M %g with the default budget, %g with none", m[0], m[1]);
    cr_expect_leq(calls_kept + 2 * 9, calls_none,
                  "rounds 2-10 take kept chunks back: %g system calls, %g without", calls_kept,
                  calls_none);
    /* the chunks given back leave holes below the peak's top: a pool of M
     * less the map would hold them; --fit-pool's keeps M, a page more not */
    cr_expect(fit > 0 && fit < m[1] - map, "fit %g, M %g, map %g", fit, m[1], map);
    cr_expect_eq((long long)fit % 4096, 0);
    cr_expect_eq(sim_m_pooled(body, rep, fit), m[1], "a pool of %g keeps M", fit);
    cr_expect_gt(sim_m_pooled(body, rep, fit + 4096), m[1], "a page more raises it");
    cr_expect_gt(sim_m_pooled(body, rep, m[1] - map), m[1], "M - map raises it");
    if (SANITIZED)
        return;   /* a sanitized dmm cannot run under another allocator */
    const char *cfgs[] = { kept, none };
    expect_libdmm_heap_is_m(rep, cfgs, m, 2);
}

/* Huge pages: the simulated M is whole 2 MiB extents (and the extent
 * counts' page, with the page map's), a fresh extent faults once instead
 * of 512 times, and libdmm.so's heap under the same design is that M. */
Test(replay, huge_pages_hold_whole_extents_in_the_simulator_and_the_library)
{
    static char text[1 << 20];
    int n = 0, id = 0, ops = 0;
    for (; id < 20000; id++, ops++)
        n += sprintf(text + n, "a %d %d\n", id, 16 + id % 300);
    for (int i = 0; i < 20000; i += 2, ops++)
        n += sprintf(text + n, "f %d\n", i);
    for (int r = 0; r < 5; r++, id++, ops += 2)
        n += sprintf(text + n, "a %d 3000000\nf %d\n", id, id);
    char head[64], rep[300], huge[300], plain[300];
    int h = sprintf(head, "0\n%d\n%d\n1\n", id, ops);
    memmove(text + h, text, (size_t)n + 1);
    memcpy(text, head, (size_t)h);
    put("huge.rep", text, rep, sizeof rep);
    const char *lea = "lea range=(0,inf] split=yes coalesce=yes list=dll fit=best order=fifo\n";
    char body[256];
    put("plain.dmm", lea, plain, sizeof plain);
    snprintf(body, sizeof body, "pages huge=yes\n%s", lea);
    put("huge.dmm", body, huge, sizeof huge);
    double m[2], map[2];
    sim_m(plain, rep, &m[0], &map[0]);
    sim_m(huge, rep, &m[1], &map[1]);
    cr_expect_eq((long long)(m[1] - map[1]) % (2 << 20), 0, "M %g, map %g: whole extents", m[1],
                 map[1]);
    cr_expect_geq(m[1], m[0]);
    cr_expect_lt(m[1], m[0] + 2 * (2 << 20), "M %g against %g: at most an extent more a part",
                 m[1], m[0]);
    double pages[2] = { sim_num(plain, rep, "fresh_pages"), sim_num(huge, rep, "fresh_pages") };
    cr_expect_lt(pages[1] * 10, pages[0], "fresh pages %g with huge pages, %g without", pages[1],
                 pages[0]);
    if (SANITIZED)
        return;   /* a sanitized dmm cannot run under another allocator */
    const char *cfgs[] = { plain, huge };
    expect_libdmm_heap_is_m(rep, cfgs, m, 2);
}

/* A directory: its .rep files, in name order, one row each. */
Test(replay, mdriver_reads_a_directory_of_traces)
{
    char a[300], b[300];
    put("b.rep", rep_text, b, sizeof b);
    churn_rep(a, sizeof a);
    result_t r = replay_run(plain_env, "--mdriver", tmpdir, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    const char *x = strstr(r.out, " 0      yes"), *y = strstr(r.out, " 1      yes");
    cr_expect(x && y && x < y, "%s", r.out);
    cr_expect(jhas(r.out, "b.rep\n") && jhas(r.out, "churn.rep\n"), "%s", r.out);
    cr_expect(strstr(r.out, "b.rep") < strstr(r.out, "churn.rep"), "by name: %s", r.out);
    result_free(&r);
}

/* An allocator that hands out a block inside a live one: the trace is
 * invalid, the fault is named with both blocks, and the exit status is 3. */
Test(replay, mdriver_names_an_overlapping_allocator)
{
    if (SANITIZED)
        cr_skip_test("a sanitized dmm cannot run under another allocator");
    char path[300];
    put("overlap.rep", "0\n3\n6\n1\na 0 100\na 1 64\na 2 4321\nf 2\nf 1\nf 0\n", path,
        sizeof path);
    const char *env[] = { "LD_PRELOAD=" DMM_BUILD_DIR "/test/progs/liboverlap.so", NULL };
    result_t r = replay_run(env, "--mdriver", path, NULL);
    cr_expect_eq(r.status, 3, "%s%s", r.out, r.err);
    cr_expect(jhas(r.out, " 0       no"), "%s", r.out);
    cr_expect(jhas(r.out, "ERROR [trace 0, overlap.rep]: op 2: block 2"), "%s", r.out);
    cr_expect(jhas(r.out, "overlaps live block 1"), "%s", r.out);
    cr_expect(jhas(r.out, "Terminated with 1 errors"), "%s", r.out);
    result_free(&r);
}

/* --threads: each trace thread's operations run on a thread of the
 * replay's own, in the trace's order.  libtidnote.so says which thread
 * asked for each of the trace's three blocks: the two of thread 100 on one
 * thread, thread 200's on another; without --threads all on one.  The
 * frees cross threads (200 frees 100's block and 100 frees 200's), and
 * --check finds every block whole. */
static const char threads_text[] =
    "100: malloc 0x1000 777701\n"
    "200: malloc 0x2000 777702\n"
    "100: malloc 0x3000 777703\n"
    "200: free 0x1000\n"
    "100: free 0x2000\n"
    "100: free 0x3000\n";

/* The thread libtidnote.so noted for a request of size bytes, or -1. */
static long noted_tid(const char *err, long size)
{
    char key[48];
    snprintf(key, sizeof key, "tidnote %ld ", size);
    const char *p = strstr(err, key);
    return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

Test(replay, threads_run_each_trace_threads_operations_on_a_thread_of_its_own)
{
    char path[300];
    put("threads.txt", threads_text, path, sizeof path);

    /* plainly (and under the sanitizers): every op done, every block whole */
    result_t r = replay_run(plain_env, "--threads", "--check", "--json", path, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    check_json(r.out, 6, 3 * 777702.0, "--threads");
    cr_expect_eq(jnum(r.out, NULL, "threads"), 2, "%s", r.out);
    cr_expect_geq(jnum(r.out, NULL, "handoff_s"), 0, "%s", r.out);
    result_free(&r);
    r = replay_run(plain_env, "--threads", "--runs", "2", path, NULL);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(jhas(r.out, "threads     2, one per thread of the trace"), "%s", r.out);
    result_free(&r);
    r = replay_run(plain_env, "--check", "--json", path, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect_eq(jnum(r.out, NULL, "threads"), 1, "%s", r.out);
    cr_expect_eq(jnum(r.out, NULL, "handoff_s"), 0, "%s", r.out);
    result_free(&r);

    if (SANITIZED)
        cr_skip_test("a sanitized dmm cannot run under another allocator");
    const char *env[] = { "LD_PRELOAD=" DMM_BUILD_DIR "/test/progs/libtidnote.so", NULL };
    r = replay_run(env, "--threads", "--check", path, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    long a = noted_tid(r.err, 777701), b = noted_tid(r.err, 777702), c = noted_tid(r.err, 777703);
    cr_expect(a > 0 && b > 0 && c > 0, "%s", r.err);
    cr_expect_eq(a, c, "thread 100's blocks on threads %ld and %ld", a, c);
    cr_expect_neq(a, b, "threads 100 and 200 both on thread %ld", a);
    result_free(&r);

    r = replay_run(env, "--check", path, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    a = noted_tid(r.err, 777701), b = noted_tid(r.err, 777702), c = noted_tid(r.err, 777703);
    cr_expect(a > 0 && a == b && b == c, "without --threads: %ld %ld %ld", a, b, c);
    result_free(&r);
}
