/* test_codegen.c - `dmm codegen` and libdmm_evolved.so: the generated source
 * carries the Table 1 map and the literal range bounds and compiles with
 * -Wall -Wextra -Werror; a bad .dmm exits 2 with the parser's message; the
 * library built by `make` runs real programs with a plain run's output, the
 * tracee's modes (errno, threads, fork, aligned calls), ignores DMM_CONFIG
 * with a notice, and holds the footprint dmm sim predicts for its chain;
 * and on the bundled workload's trace the search cut short gives the same
 * best.dmm and log as the search that finishes every candidate.  `dmm
 * build` compiles a .dmm into a library that runs a program on that design,
 * and a failed build leaves the older library as it was. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "allocators/chain/desc.h"
#include "tracer/format/opstream.h"
#include "test/lib/progrun.h"
#include "allocators/sim/sim.h"
#include "tracer/format/trace.h"
#include "tracer/format/load.h"
#include "test/lib/libs.h"

#define DMM      DMM_BUILD_DIR "/dmm"
#define TRACEE   DMM_BUILD_DIR "/test/progs/tracee"
#define MEDIA    DMM_BUILD_DIR "/bench/work_media"
#define STRESS   DMM_BUILD_DIR "/test/progs/stress"
/* The .dmm the library was generated from (the Makefile copies it there). */
#define SOURCE_DMM DMM_BUILD_DIR "/evolved/source.dmm"

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

static int exit_code(int st)
{
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* dmm codegen ARGS... into tmpdir/out.c; its exit code; stderr in *err. */
static int codegen(char *const extra[], const char *dmm_path, char **err)
{
    char out[300], errf[300];
    snprintf(out, sizeof out, "%s/out.c", tmpdir);
    snprintf(errf, sizeof errf, "%s/err", tmpdir);
    char *argv[16] = { DMM, "codegen", "-o", out };
    int n = 4;
    for (int i = 0; extra && extra[i] && n < 14; i++)
        argv[n++] = extra[i];
    argv[n++] = (char *)dmm_path;
    argv[n] = NULL;
    int st = run(argv, NULL, tmpdir, NULL, NULL, errf);
    if (err)
        *err = slurp(errf, NULL);
    return exit_code(st);
}

static int syntax_check(const char *c_file, char **err)
{
    char cmd[1200], errf[300];
    snprintf(errf, sizeof errf, "%s/cc.err", tmpdir);
    snprintf(cmd, sizeof cmd,
             "gcc -std=gnu11 -Wall -Wextra -Werror -fsyntax-only -D_GNU_SOURCE "
             "-I'%s' '%s'",
             DMM_SRC_DIR, c_file);
    char *argv[] = { "/bin/sh", "-c", cmd, NULL };
    int st = run(argv, NULL, tmpdir, NULL, NULL, errf);
    *err = slurp(errf, NULL);
    return exit_code(st);
}

static const char two[] =
    "# dmm 1  trace=app.trc seed=7 fitness=0.6123\n"
    "sss           range=(0,1024]         split=no  coalesce=no  list=dll   fit=first order=lifo\n"
    "segregated    range=(1024,7832240]   split=no  coalesce=yes list=sll   fit=first order=lifo lists=6\n";

/* design through dmm codegen: the source holds each of want[0..n) and
 * compiles. */
static void expect_source(const char *design, const char *const want[], size_t n)
{
    make_tmpdir();
    char in[300], out[300];
    snprintf(in, sizeof in, "%s/best.dmm", tmpdir);
    snprintf(out, sizeof out, "%s/out.c", tmpdir);
    write_text(in, design);
    char *err;
    cr_assert_eq(codegen(NULL, in, &err), 0, "%s", err);
    free(err);
    char *src = slurp(out, NULL);
    cr_assert_not_null(src);
    for (size_t i = 0; i < n; i++)
        cr_expect_not_null(strstr(src, want[i]), "missing: %s\n--- source:\n%s", want[i], src);
    cr_assert_eq(syntax_check(out, &err), 0, "gcc: %s", err);
    free(err);
    free(src);
    remove_tmpdir();
}

Test(codegen, two_allocators_compile_with_the_map_and_literal_bounds)
{
    const char *want[] = {
        /* Table 1 */
        "SimpleSegregatedStorage, split=false, coalesce=false",
        "SegregatedFreeList, split=false, coalesce=true, lists=6",
        "Data Structure  Mechanism(Policy)   Range (bytes)",
        "DLL             FIRST(LIFO)         (0, 1024]",
        "SLL             FIRST(LIFO)         (1024, 7832240]",
        /* where it came from */
        "trace    app.trc", "seed     7", "fitness  0.6123",
        /* the chain as constants and the dispatch with literal bounds */
        "static const dmm_desc_t dmm_evolved_desc = {",
        ".cls = DMM_CLASS_SEGREGATED, .lo = 1024, .hi = 7832240",
        ".lists = 6",
        "static inline int dmm_evolved_which(size_t n)",
        "    if (n <= 1024)\n        return 0;\n    if (n <= 7832240)\n        return 1;\n    return -1;\n",
        "return dmm_sss_malloc(&c->alloc[0], n);",   /* by name: inline */
        "dmm_class_segregated.free(&c->alloc[1], p);",
        /* sss's common case alone for its DLL (dll 1, no release policy,
         * LIFO); segregated has none */
        "inline int dmm_evolved_has_fast(void)\n{\n    return 1;\n}",
        "    case 0:\n        return dmm_sss_malloc_fast_known(&c->alloc[0], n, 1, 0, 1);\n"
        "    case 1:\n        return NULL;\n",
        "    case 0:\n        return dmm_sss_free_fast_known(&c->alloc[0], p, 1, 0, 1);\n"
        "    case 1:\n        return 0;\n",
    };
    expect_source(two, want, sizeof want / sizeof want[0]);
}

/* A gap below the first range and between ranges, an unbounded last one,
 * every class, and options that override the title's words. */
Test(codegen, gaps_every_class_and_options)
{
    make_tmpdir();
    char in[300], out[300];
    snprintf(in, sizeof in, "%s/x.dmm", tmpdir);
    snprintf(out, sizeof out, "%s/out.c", tmpdir);
    write_text(in, "# dmm 1  trace=a\"b*/c.trc seed=1\n"
                   "release keep=65536 delay=1000\n"
                   "grow by=pages\n"
                   "retain bytes=0\n"
                   "pages huge=yes\n"
                   "buddy-binary range=(16,64] list=btree fit=exact order=fifo\n"
                   "buddy-fib range=(64,128] split=yes coalesce=yes\n"
                   "exact range=(128,256]\n"
                   "kingsley range=(300,4096]\n"
                   "segregated range=(4096,8192]\n"
                   "sss range=(8192,9000]\n"
                   "lea range=(9000,20000]\n"
                   "tlsf range=(20000,inf]\n");
    char *opt[] = { "--seed", "42", "--fitness", "0.5", NULL };
    char *err;
    cr_assert_eq(codegen(opt, in, &err), 0, "%s", err);
    free(err);
    char *src = slurp(out, NULL);
    cr_expect_not_null(strstr(src, "    if (n <= 16)\n        return -1;\n    if (n <= 64)\n        return 0;\n"), "%s", src);
    cr_expect_not_null(strstr(src, "    if (n <= 300)\n        return -1;\n    if (n <= 4096)\n        return 3;\n"), "%s", src);
    cr_expect_not_null(strstr(src, "    return 7;\n}"), "%s", src);
    cr_expect_not_null(strstr(src, "seed     42"));
    cr_expect_not_null(strstr(src, "fitness  0.5"));
    cr_expect_not_null(strstr(src, "BuddySystemFibonacci, split=true, coalesce=true"));
    cr_expect_not_null(strstr(src, "BTREE           EXACT(FIFO)         (16, 64]"));
    cr_expect_not_null(strstr(src, "Lea, split=false, coalesce=false"));
    cr_expect_not_null(strstr(src, "(9000, 20000]"));
    cr_expect_not_null(strstr(src, "{ .cls = DMM_CLASS_TLSF, .lo = 20000, .hi = DMM_SIZE_INF"),
                       "%s", src);
    cr_expect_not_null(strstr(src, "(20000, inf]"));
    cr_expect_not_null(strstr(src, "    .release = { .on = 1, .keep = 65536, .delay = 1000ull },\n"),
                       "%s", src);
    cr_expect_not_null(strstr(src, "given back to the page source: release       keep=65536 "
                                   "delay=1000\n"), "%s", src);
    cr_expect_not_null(strstr(src, "    .grow = DMM_GROW_PAGES,\n"), "%s", src);
    /* a release policy: sss's common case alone is the one that keeps it
     * (an SLL, LIFO: sss's default list and order) */
    cr_expect_null(strstr(src, "dmm_sss_malloc_fast_sll"), "%s", src);
    cr_expect_not_null(strstr(src, "return dmm_sss_malloc_fast_known(&c->alloc[5], n, 0, 1, 1);"),
                       "%s", src);
    cr_expect_not_null(strstr(src, "return dmm_sss_free_fast_known(&c->alloc[5], p, 0, 1, 1);"),
                       "%s", src);
    cr_expect_not_null(strstr(src, " *   Growth by pages: "), "%s", src);
    cr_expect_not_null(strstr(src, "    .retain_set = 1, .retain = 0,\n"), "%s", src);
    cr_expect_not_null(strstr(src, " *   The page source keeps up to 0 bytes of large chunks "),
                       "%s", src);
    cr_expect_not_null(strstr(src, "    .huge = 1,\n"), "%s", src);
    cr_expect_not_null(strstr(src, " *   Memory held in 2 MiB extents of transparent huge pages"),
                       "%s", src);
    char *end = strstr(src, "*/");
    cr_expect(end && !strncmp(end, "*/\n#ifndef DMM_EVOLVED_C", 24),
              "a title must not close the header comment:\n%s", src);
    cr_assert_eq(syntax_check(out, &err), 0, "gcc: %s", err);
    free(err);
    free(src);
    remove_tmpdir();
}

/* sss's common case alone, for a process with one thread, where its list is
 * an SLL (no release policy on: the _sll call) or a DLL, in its order (LIFO
 * 1, FIFO 0); none for a BTREE. */
Test(codegen, sss_common_case_alone_for_an_sll_or_a_dll)
{
    const char *want[] = {
        "inline int dmm_evolved_has_fast(void)\n{\n    return 1;\n}",
        "    case 0:\n        return dmm_sss_malloc_fast_sll(&c->alloc[0], n, 1);\n"
        "    case 1:\n        return dmm_sss_malloc_fast_sll(&c->alloc[1], n, 0);\n"
        "    case 2:\n        return dmm_sss_malloc_fast_known(&c->alloc[2], n, 1, 0, 1);\n"
        "    case 3:\n        return NULL;\n    case 4:\n        return NULL;\n",
        "    case 0:\n        return dmm_sss_free_fast_sll(&c->alloc[0], p, 1);\n"
        "    case 1:\n        return dmm_sss_free_fast_sll(&c->alloc[1], p, 0);\n"
        "    case 2:\n        return dmm_sss_free_fast_known(&c->alloc[2], p, 1, 0, 1);\n"
        "    case 3:\n        return 0;\n    case 4:\n        return 0;\n",
        /* each sss range within its classes: the largest block, which free
         * need not compare with the cache's max=, and usable() without the
         * one-block area's test */
        "inline size_t dmm_evolved_usable_max(int i)\n{\n    switch (i) {\n"
        "    case 0:\n        return 64;\n    case 1:\n        return 128;\n"
        "    case 2:\n        return 256;\n    case 3:\n        return 512;\n"
        "    case 4:\n        return (size_t)-1;\n",
        "    case 0:\n        return dmm_sss_usable_classed(&c->alloc[0], p);\n",
        "    case 3:\n        return dmm_sss_usable_classed(&c->alloc[3], p);\n"
        "    case 4:\n        return dmm_lea_usable(&c->alloc[4], p);\n",
    };
    expect_source("sss range=(0,64] list=sll order=lifo\n"
                  "sss range=(64,128] list=sll order=fifo\n"
                  "sss range=(128,256] list=dll order=lifo\n"
                  "sss range=(256,512] list=btree order=lifo\n"
                  "lea range=(512,inf]\n",
                  want, sizeof want / sizeof want[0]);
}

/* The cache bins a design's blocks can lie in (dmm_evolved_cache_parity),
 * from the allocators whose range starts below max=: lea's (and the
 * segregated family's) blocks of 16k - 8 bytes, odd bins; sss's of 16k,
 * even; both, or a buddy's, either; no cache, either. */
Test(codegen, the_cache_bins_the_blocks_can_lie_in)
{
    static const struct {
        const char *design;
        int parity;
    } d[] = {
        { "cache max=512 count=16\nlea range=(0,inf]\n", 1 },
        { "cache max=512 count=16\nlea range=(0,100]\ntlsf range=(100,inf]\n", 1 },
        { "cache max=256 count=16\nsss range=(0,256]\nlea range=(256,inf]\n", 2 },
        { "cache max=512 count=16\nsss range=(0,64]\nlea range=(64,inf]\n", 0 },
        { "cache max=512 count=16\nlea range=(0,64]\nbuddy-binary range=(64,inf]\n", 0 },
        { "lea range=(0,inf]\n", 0 },
    };
    for (size_t k = 0; k < sizeof d / sizeof d[0]; k++) {
        char want[120];
        snprintf(want, sizeof want, "inline int dmm_evolved_cache_parity(void)\n{\n"
                 "    return %d;\n}", d[k].parity);
        const char *w[] = { want };
        expect_source(d[k].design, w, 1);
    }
}

/* Under a release policy the call names the policy's form
 * (dmm_sss_release_form): one that gives empty areas back at once (2), or
 * never (3), lets the common case leave the allocator's clock alone; any
 * other is read at run time (1). */
Test(codegen, sss_common_case_knows_the_release_policys_form)
{
    static const struct {
        const char *line;
        int form;
    } pol[] = {
        { "release keep=0 delay=inf\n", 2 }, { "release keep=inf delay=0\n", 2 },
        { "release keep=inf delay=inf\n", 3 }, { "release keep=inf delay=4294967295\n", 3 },
        { "release keep=inf delay=1000\n", 1 }, { "release keep=65536 delay=inf\n", 1 },
    };
    for (size_t k = 0; k < sizeof pol / sizeof pol[0]; k++) {
        char design[256], m[128], f[128];
        snprintf(design, sizeof design, "%ssss range=(0,64] list=sll order=fifo\n"
                 "sss range=(64,256] list=dll order=lifo\nlea range=(256,inf]\n", pol[k].line);
        snprintf(m, sizeof m, "return dmm_sss_malloc_fast_known(&c->alloc[0], n, 0, %d, 0);",
                 pol[k].form);
        snprintf(f, sizeof f, "return dmm_sss_free_fast_known(&c->alloc[1], p, 1, %d, 1);",
                 pol[k].form);
        const char *want[] = { m, f };
        expect_source(design, want, 2);
    }
}

Test(codegen, bad_input_exits_2_with_the_parsers_message)
{
    make_tmpdir();
    char in[300], out[300];
    snprintf(in, sizeof in, "%s/bad.dmm", tmpdir);
    snprintf(out, sizeof out, "%s/out.c", tmpdir);
    write_text(in, "# dmm 1\nsss range=(0,64]\nlea range=(32,inf]\n");
    char *err;
    cr_expect_eq(codegen(NULL, in, &err), 2);
    cr_expect_not_null(strstr(err, "bad.dmm: line 3: field 'range'"), "%s", err);
    free(err);
    cr_expect_neq(access(out, F_OK), 0, "no output for a bad .dmm");
    write_text(in, "sss range=(0,64] fit=worst\n");
    cr_expect_eq(codegen(NULL, in, &err), 2);
    cr_expect_not_null(strstr(err, "field 'fit'"), "%s", err);
    free(err);
    cr_expect_eq(codegen(NULL, "/nonexistent/best.dmm", &err), 2);
    cr_expect_not_null(strstr(err, "/nonexistent/best.dmm"), "%s", err);
    free(err);
    char *argv[] = { DMM, "codegen", NULL };
    cr_expect_eq(exit_code(run(argv, NULL, tmpdir, NULL, NULL, NULL)), 1);
    char *argv2[] = { DMM, "codegen", "--bogus", in, NULL };
    cr_expect_eq(exit_code(run(argv2, NULL, tmpdir, NULL, NULL, NULL)), 1);
    remove_tmpdir();
}

/* The library's own source (the default winner, or the last make evolve's)
 * compiles standalone as well. */
Test(codegen, the_built_source_compiles_standalone)
{
    make_tmpdir();
    char *err;
    cr_assert_eq(syntax_check(DMM_BUILD_DIR "/evolved/dmm_evolved.c", &err), 0, "%s", err);
    free(err);
    remove_tmpdir();
}

/* Run argv plainly and on libdmm_evolved.so: same status and output,
 * nothing from dmm on stderr. */
static void same_on_evolved(char *const argv[], const char *in)
{
    cr_assert_eq(access(EVOLVED, R_OK), 0, "%s missing: make builds it", EVOLVED);
    make_tmpdir();
    int st;
    size_t lp;
    char *want = plain_output(argv, in, &st, &lp);
    const char *env[] = { "LD_PRELOAD=" EVOLVED, NULL };
    expect_same_as_plain(argv, in, st, want, lp, env, "libdmm_evolved.so");
    free(want);
    remove_tmpdir();
}

Test(evolved, tracee_modes_run_the_same)
{
    if (access(TRACEE, X_OK) != 0)
        cr_skip_test("no tracee (make unit builds it)");
    const char *modes[][2] = { { "errno", "0" }, { "threads", "0" }, { "fork", "300" },
                               { "aligned", "100" }, { "exit", "500" } };
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        char *argv[] = { TRACEE, (char *)modes[m][0], (char *)modes[m][1], NULL };
        same_on_evolved(argv, NULL);
    }
}

Test(evolved, dmm_config_is_ignored_with_a_notice)
{
    make_tmpdir();
    char out[300], err[300];
    snprintf(out, sizeof out, "%s/out", tmpdir);
    snprintf(err, sizeof err, "%s/err", tmpdir);
    const char *env[] = { "LD_PRELOAD=" EVOLVED, "DMM_CONFIG=/nonexistent.dmm", NULL };
    char *argv[] = { MEDIA, "-f", "20", NULL };
    cr_assert_eq(run(argv, env, tmpdir, NULL, out, err), 0);
    char *e = slurp(err, NULL);
    cr_expect_not_null(strstr(e, "dmm: DMM_CONFIG ignored"), "%s", e);
    cr_expect_eq(strchr(e, '\n'), e + strlen(e) - 1, "one line: %s", e);
    free(e);
    remove_tmpdir();
}

/* The bundled workload's footprint on libdmm_evolved.so equals dmm sim's M
 * for the library's .dmm on the trace of the same run. */
Test(evolved, footprint_equals_simulated_M)
{
    make_tmpdir();
    char tfile[320], err[300], path[330];
    snprintf(tfile, sizeof tfile, "DMM_TRACE_FILE=%s/media.trc", tmpdir);
    snprintf(err, sizeof err, "%s/err", tmpdir);
    snprintf(path, sizeof path, "%s/media.trc", tmpdir);
    char *argv[] = { MEDIA, "-f", "300", NULL };
    const char *tenv[] = { "LD_PRELOAD=" TRACER, tfile, NULL };
    cr_assert_eq(run(argv, tenv, tmpdir, NULL, NULL, NULL), 0);
    dmm_trace_t t;
    dmm_err_t terr;
    cr_assert_eq(dmm_trace_load(path, &t, &terr), 0, "%s", terr.msg);
    dmm_opstream_t s;
    cr_assert_eq(dmm_opstream_build(&t, &s, &terr), 0);
    dmm_desc_t d;
    dmm_err_t e = { { 0 } };
    cr_assert_eq(dmm_desc_load(SOURCE_DMM, &d, &e), 0, "%s", e.msg);
    dmm_sim_result_t r;
    cr_assert_eq(dmm_sim_run(&s, &d, "evolved", 0, &r, &e), 0, "%s", e.msg);
    const char *env[] = { "LD_PRELOAD=" EVOLVED, "DMM_STATS=1", NULL };
    cr_assert_eq(run(argv, env, tmpdir, NULL, NULL, err), 0);
    char *txt = slurp(err, NULL);
    char *at = strstr(txt, "bytes now, ");
    cr_assert_not_null(at, "no DMM_STATS line: %s", txt);
    unsigned long long peak = strtoull(at + 11, NULL, 10);
    double diff = (double)peak - (double)r.M;
    if (diff < 0)
        diff = -diff;
    cr_expect_leq(diff, (double)r.M * 0.01, "real peak %llu, simulated M %zu", peak, r.M);
    free(txt);
    dmm_opstream_free(&s);
    dmm_trace_free(&t);
    remove_tmpdir();
}

/* log.csv without the columns of the clock and of the cuts (seconds, cut,
 * saved_seconds): what the search did, generation by generation. */
static char *log_without_clock(const char *path)
{
    char *txt = slurp(path, NULL);
    cr_assert_not_null(txt, "%s", path);
    size_t n = strlen(txt);
    char *out = malloc(n + 1), *o = out;
    int col = 0;
    for (const char *p = txt; *p; p++) {
        if (*p == '\n')
            col = 0;
        else if (*p == ',')
            col++;
        /* columns 7, 13 and 14, counted from 0 */
        if ((col == 7 || col == 13 || col == 14) && *p != ',')
            continue;
        *o++ = *p;
    }
    *o = 0;
    free(txt);
    return out;
}

/* On the bundled workload's trace, cutting hopeless candidates short
 * changes nothing the search does: the same best.dmm and the same log as
 * simulating every one of them to the end (--finish-hopeless). */
Test(evolved, cutting_hopeless_candidates_changes_nothing_on_the_bundled_workload)
{
    make_tmpdir();
    char tfile[320], trc[330], out[2][340], file[720];
    snprintf(tfile, sizeof tfile, "DMM_TRACE_FILE=%s/media.trc", tmpdir);
    snprintf(trc, sizeof trc, "%s/media.trc", tmpdir);
    char *media[] = { MEDIA, "-f", "200", NULL };
    const char *tenv[] = { "LD_PRELOAD=" TRACER, tfile, NULL };
    cr_assert_eq(run(media, tenv, tmpdir, NULL, NULL, NULL), 0);
    char *text[2], *log[2];
    for (int k = 0; k < 2; k++) {
        snprintf(out[k], sizeof out[k], "%s/%s", tmpdir, k ? "finished" : "cut");
        char *argv[] = { DMM, "evolve", "-q", "--pop", "30", "--gens", "6", "--seed", "4",
                         "--jobs", "2", "--out", out[k], trc, NULL, NULL };
        if (k) {   /* every candidate simulated to the end */
            argv[13] = "--finish-hopeless";
            argv[14] = trc;
        }
        cr_assert_eq(run(argv, NULL, tmpdir, NULL, NULL, NULL), 0);
        snprintf(file, sizeof file, "%s/best.dmm", out[k]);
        text[k] = slurp(file, NULL);
        cr_assert_not_null(text[k]);
        snprintf(file, sizeof file, "%s/log.csv", out[k]);
        log[k] = log_without_clock(file);
    }
    cr_expect_str_eq(text[0], text[1]);
    cr_expect_str_eq(log[0], log[1]);
    /* and there was something to cut */
    snprintf(file, sizeof file, "%s/search.json", out[0]);
    char *js = slurp(file, NULL);
    cr_assert_not_null(js);
    char *cut = strstr(js, "\"cut\"");
    cr_assert_not_null(cut, "%s", js);
    cr_expect_gt(strtol(cut + 6 + strspn(cut + 6, ": "), NULL, 10), 0, "%s", js);
    free(js);
    for (int k = 0; k < 2; k++) {
        free(text[k]);
        free(log[k]);
    }
    remove_tmpdir();
}

/* work_media -f 40 recorded into tmpdir/media.trc (trc) and a short search
 * over it into tmpdir/ev (ev), keeping its top best designs: what the
 * measured step's tests start from. */
static void media_searched(char trc[330], char ev[340], char *top)
{
    char tfile[320];
    snprintf(tfile, sizeof tfile, "DMM_TRACE_FILE=%s/media.trc", tmpdir);
    snprintf(trc, 330, "%s/media.trc", tmpdir);
    char *media[] = { MEDIA, "-f", "40", NULL };
    const char *tenv[] = { "LD_PRELOAD=" TRACER, tfile, NULL };
    cr_assert_eq(run(media, tenv, tmpdir, NULL, NULL, NULL), 0);
    snprintf(ev, 340, "%s/ev", tmpdir);
    char *argv[] = { DMM, "evolve", "-q", "--pop", "12", "--gens", "2", "--top", top,
                     "--out", ev, trc, NULL };
    cr_assert_eq(run(argv, NULL, tmpdir, NULL, NULL, NULL), 0);
}

/* make evolve's last step (scripts/measure_candidates.py): the search's best
 * designs and the presets (two of them here, for time) are compiled, the
 * trace is replayed under each and glibc, and chosen.dmm is one of them. */
Test(evolved, the_candidates_are_compiled_and_measured_and_one_is_chosen, .timeout = 300)
{
    if (SANITIZED)
        cr_skip_test("sanitizer pass: the candidates are preload libraries, built unsanitized");
    make_tmpdir();
    char tfile[320], trc[330], ev[340], file[720], cmd[2400];
    media_searched(trc, ev, "2");
    snprintf(cmd, sizeof cmd,
             "python3 %s/scripts/measure_candidates.py --dir '%s' --trace '%s' --build %s "
             "--reps 2 --presets kng,lea > '%s/measure.out' 2>&1", DMM_SRC_DIR, ev, trc,
             DMM_BUILD_DIR, tmpdir);
    int st = system(cmd);
    snprintf(file, sizeof file, "%s/measure.out", tmpdir);
    char *out = slurp(file, NULL);
    cr_assert_eq(st, 0, "%s", out ? out : "");
    /* every candidate measured: the search's (one or two: designs that
     * replay alike count once), its lean ones (as many as search.json
     * lists) and the presets asked for */
    int lines = 0;
    for (char *p = out; (p = strstr(p, " predicted #")); p++)
        lines++;
    int ntop = strstr(out, "top-2 ") ? 2 : 1;
    snprintf(file, sizeof file, "%s/search.json", ev);
    char *search = slurp(file, NULL);
    cr_assert_not_null(search);
    int nlean = 0;
    for (char *p = search; (p = strstr(p, "\"weight\": ")); p++) {
        char name[32];
        snprintf(name, sizeof name, "measure: lean-%d ", ++nlean);
        cr_expect_not_null(strstr(out, name), "%s missing: %s", name, out);
    }
    free(search);
    /* and top-1's twin in the other kind of pages, unless a candidate is
     * that design already */
    int ntwin = strstr(out, "top-1-huge ") || strstr(out, "top-1-nohuge ") ? 1 : 0;
    cr_expect_eq(lines, 2 + ntop + nlean + ntwin, "%s", out);
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json,sys; sys.path.insert(0, sys.argv[2]); "
             "import measure_candidates as m; d=json.load(open(sys.argv[1])); "
             "c={x[\"name\"]: x[\"dmm\"] for x in d[\"candidates\"]}; "
             "t=sorted(m.design_lines(m.huge_twin(c[\"top-1\"]))); "
             "h=[n for n in c if n!=\"top-1\" and sorted(m.design_lines(c[n]))==t]; "
             "sys.exit(0 if h and m.is_huge(c[\"top-1\"])!=m.is_huge(c[h[0]]) else 1)' "
             "'%s/measured.json' '%s/scripts'", ev, DMM_SRC_DIR);
    cr_expect_eq(system(cmd), 0, "top-1's twin in the other pages was not measured: %s", out);
    cr_expect_not_null(strstr(out, "<- chosen"), "%s", out);
    const char *names[] = { "top-1 ", "kng ", "lea " };
    for (size_t i = 0; i < 3; i++)
        cr_expect_not_null(strstr(out, names[i]), "%s missing: %s", names[i], out);
    cr_expect_null(strstr(out, "fib "), "%s", out);
    snprintf(file, sizeof file, "%s/chosen.dmm", ev);
    dmm_desc_t d;
    dmm_err_t err;
    cr_assert_eq(dmm_desc_load(file, &d, &err), 0, "%s", err.msg);
    char buf[64];
    const char *who = dmm_desc_title_value(&d, "chosen", buf, sizeof buf);
    cr_assert_not_null(who, "%s", d.title);
    /* the line marked chosen names it */
    char *mark = strstr(out, "<- chosen");
    cr_assert_not_null(mark);
    char *start = mark;
    while (start > out && start[-1] != '\n')
        start--;
    char want[80];
    snprintf(want, sizeof want, "measure: %s ", who);
    cr_expect_eq(strncmp(start, want, strlen(want)), 0, "%s: %s", want, out);
    snprintf(file, sizeof file, "%s/measured.csv", ev);
    char *csv = slurp(file, NULL);
    cr_assert_not_null(csv);
    cr_expect_eq(strncmp(csv, "name,predicted_F,predicted_rank,", 32), 0, "%s", csv);
    free(csv);
    /* the time measured is the replay's window, the payload writes after
     * each call included (where a fresh page's first touch is taken), not
     * the calls' time alone */
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
             "r=d[\"candidates\"]+[d[\"glibc\"]]; "
             "sys.exit(0 if r and all(x[\"seconds\"]>x[\"call_seconds\"]>0 for x in r) else 1)' "
             "'%s/measured.json'", ev);
    cr_expect_eq(system(cmd), 0, "measured.json: seconds not above call_seconds");
    /* every heap is measured from one floor, glibc's RSS at its window's
     * start, and no library's heap is below what its replay asked for */
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
             "r=d[\"candidates\"]+[d[\"glibc\"]]; "
             "sys.exit(0 if d[\"glibc\"][\"baseline_rss_bytes\"]>0 and "
             "all(x[\"heap_bytes\"]>100000 for x in r) else 1)' '%s/measured.json'", ev);
    cr_expect_eq(system(cmd), 0, "measured.json: no floor, or a heap below the replay's");
    /* each round ran glibc and every candidate once, in its own order
     * (shuffled by the round: rounds 0 and 1 differ for 4 or 5 names) */
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
             "o=d[\"orders\"]; n=sorted([\"glibc\"]+[x[\"name\"] for x in d[\"candidates\"]]); "
             "sys.exit(0 if len(o)==2 and all(sorted(x)==n for x in o) and o[0]!=o[1] else 1)' "
             "'%s/measured.json'", ev);
    cr_expect_eq(system(cmd), 0, "measured.json: each round's order is not a permutation");
    /* how the chosen design stands against glibc (F_meas 1): ahead below 1
     * less the margin, behind above 1 plus it, else level; said last in
     * the output and in report.md, which tells the user to expect no gain
     * from a design that is not ahead */
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json,sys; sys.path.insert(0, sys.argv[2]); "
             "import measure_candidates as m, evolve_report as r; "
             "d=json.load(open(sys.argv[1])); mg=d[\"glibc_margin\"]; "
             "f={x[\"name\"]: x[\"F_meas\"] for x in d[\"candidates\"]}[d[\"chosen\"]]; "
             "s=d[\"against_glibc\"]; "
             "ok=0<mg<=0.02 and s==(\"ahead\" if f<1-mg else \"behind\" if f>1+mg else \"level\"); "
             "ok=ok and (\"expect no gain\" in d[\"verdict\"])==(s==\"behind\") and "
             "(\"little or no gain\" in d[\"verdict\"])==(s==\"level\"); "
             "ok=ok and [m.against_glibc(x, 0.02) for x in (0.97, 0.99, 1.0, 1.01, 1.03)]=="
             "[\"ahead\",\"level\",\"level\",\"level\",\"behind\"]; "
             "t=[]; r.measured_section(sys.argv[3], t.append); "
             "ok=ok and \"**Against glibc: %%s.** \" %% s in \"\\n\".join(t); "
             "sys.exit(0 if ok else 1)' '%s/measured.json' '%s/scripts' '%s'",
             ev, DMM_SRC_DIR, ev);
    cr_expect_eq(system(cmd), 0, "measured.json or report.md: the standing against glibc: %s",
                 out);
    cr_expect(strstr(out, "measure: the chosen design (") ||
                  strstr(out, "measure: glibc measured better than "),
              "no verdict against glibc: %s", out);
    /* no stats.json beside the search: nothing says how long the program
     * ran or what it holds outside the heap, and F_meas is the replay's own
     * F_real */
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
             "p=d[\"program\"]; c=d[\"candidates\"]; "
             "sys.exit(0 if p[\"D_s\"]==d[\"glibc\"][\"seconds\"] and "
             "p[\"outside_heap_bytes\"]==0 and d[\"replay_share\"]==1 and d[\"threads\"]==1 and "
             "all(abs(x[\"F_meas\"]-x[\"F_replay\"])<1e-12 for x in c) else 1)' "
             "'%s/measured.json'", ev);
    cr_expect_eq(system(cmd), 0, "without stats.json F_meas is not F_replay");
    /* a program that ran 50 s and held 4 GB beside its heap: what the
     * replays measure is scaled down to the share it has of that run (its
     * wall time: one thread, whatever its CPU time says) */
    snprintf(file, sizeof file, "%s/stats.json", ev);
    FILE *f = fopen(file, "w");
    cr_assert_not_null(f);
    fputs("{\"trace\": {\"duration_s\": 50.0, \"cpu_s\": 80.0, \"peak_rss_bytes\": 4000000000}}\n",
          f);
    cr_assert_eq(fclose(f), 0);
    snprintf(cmd, sizeof cmd,
             "python3 %s/scripts/measure_candidates.py --dir '%s' --trace '%s' --build %s "
             "--reps 1 --presets kng,lea > '%s/measure.out' 2>&1", DMM_SRC_DIR, ev, trc,
             DMM_BUILD_DIR, tmpdir);
    cr_assert_eq(system(cmd), 0);
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
             "p=d[\"program\"]; g=d[\"glibc\"]; R=4e9-g[\"heap_bytes\"]; "
             "ok=p[\"D_s\"]==50 and not p[\"D_is_cpu\"] and p[\"outside_heap_bytes\"]==R and "
             "d[\"replay_share\"]<0.01; "
             "ok=ok and all(abs(x[\"F_meas\"]-0.5*(1+(x[\"seconds\"]-g[\"seconds\"])/50)"
             "-0.5*(R+x[\"heap_bytes\"])/(R+g[\"heap_bytes\"]))<1e-9 and "
             "abs(x[\"F_meas\"]-1)<0.01 for x in d[\"candidates\"]); "
             "sys.exit(0 if ok else 1)' '%s/measured.json'", ev);
    cr_expect_eq(system(cmd), 0, "F_meas is not scaled to the program's run and memory");
    /* a trace of three threads (work_media's main and two workers), as
     * stats.json says: replayed on three threads, one call at a time, so
     * that what the replays measure is the program's CPU time, scaled to
     * its CPU time where that is longer than its run */
    snprintf(tfile, sizeof tfile, "DMM_TRACE_FILE=%s/media2.trc", tmpdir);
    snprintf(trc, sizeof trc, "%s/media2.trc", tmpdir);
    const char *tenv[] = { "LD_PRELOAD=" TRACER, tfile, NULL };
    char *media2[] = { MEDIA, "-f", "40", "-t", "2", NULL };
    cr_assert_eq(run(media2, tenv, tmpdir, NULL, NULL, NULL), 0);
    f = fopen(file, "w");
    cr_assert_not_null(f);
    fputs("{\"trace\": {\"threads\": 3, \"duration_s\": 0.05, \"cpu_s\": 0.09, "
          "\"peak_rss_bytes\": 9000000}}\n", f);
    cr_assert_eq(fclose(f), 0);
    snprintf(cmd, sizeof cmd,
             "python3 %s/scripts/measure_candidates.py --dir '%s' --trace '%s' --build %s "
             "--reps 1 --presets kng > '%s/measure.out' 2>&1", DMM_SRC_DIR, ev, trc,
             DMM_BUILD_DIR, tmpdir);
    cr_assert_eq(system(cmd), 0);
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
             "p=d[\"program\"]; g=d[\"glibc\"][\"seconds\"]; "
             "sys.exit(0 if d[\"threads\"]==3 and d[\"candidates\"] and "
             "p[\"D_s\"]==max(0.09,g) and p[\"D_is_cpu\"]==(0.09>max(0.05,g)) else 1)' "
             "'%s/measured.json'", ev);
    cr_expect_eq(system(cmd), 0, "a trace of three threads was not replayed on three, or not "
                                 "scaled to the program's CPU time");
    free(out);
    remove_tmpdir();
}

/* make evolve RUN='...': the candidates measured on the program itself,
 * run under glibc and each, outputs compared, F_real deciding; leading
 * NAME=value words set the program's environment; a RUN that cannot run
 * is refused before anything else (exit 2, one line). */
Test(evolved, run_measures_the_candidates_on_the_program_itself, .timeout = 300)
{
    if (SANITIZED)
        cr_skip_test("sanitizer pass: the candidates are preload libraries, built unsanitized");
    make_tmpdir();
    char trc[330], ev[340], file[720], cmd[2400];
    media_searched(trc, ev, "1");
    snprintf(cmd, sizeof cmd,
             "python3 %s/scripts/measure_candidates.py --dir '%s' --trace '%s' --build %s "
             "--reps 2 --presets kng --run 'MEDIA_NOTE=1 %s -f 40' > '%s/measure.out' 2>&1",
             DMM_SRC_DIR, ev, trc, DMM_BUILD_DIR, MEDIA, tmpdir);
    int st = system(cmd);
    snprintf(file, sizeof file, "%s/measure.out", tmpdir);
    char *out = slurp(file, NULL);
    cr_assert_eq(st, 0, "%s", out ? out : "");
    cr_expect_not_null(strstr(out, "measure: the program itself, 2 rounds: "), "%s", out);
    cr_expect_not_null(strstr(out, "<- chosen"), "%s", out);
    cr_expect_not_null(strstr(out, "kng "), "%s", out);
    /* each candidate's F_meas is its F_real, from the program's own time and
     * peak RSS against glibc's; the command and its environment recorded */
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); g=d[\"glibc\"]; "
             "c=d[\"candidates\"]; "
             "ok=d[\"run\"]==[sys.argv[2],\"-f\",\"40\"] and d[\"run_env\"]=={\"MEDIA_NOTE\":\"1\"}"
             " and d[\"outputs_compared\"] and len(d[\"pinned\"])==2 and len(c)>=2 and "
             "g[\"seconds\"]>0 and g[\"heap_bytes\"]>1000000 and "
             "all(abs(x[\"F_meas\"]-0.5*x[\"seconds\"]/g[\"seconds\"]"
             "-0.5*x[\"heap_bytes\"]/g[\"heap_bytes\"])<1e-9 for x in c) and "
             "d[\"chosen\"] in [x[\"name\"] for x in c] and "
             "all(len(x[\"F_rounds\"])==2 for x in c); "
             "sys.exit(0 if ok else 1)' '%s/measured.json' %s",
             ev, MEDIA);
    cr_expect_eq(system(cmd), 0, "measured.json does not say the program's run: %s", out);
    /* another design replaces the search's best only when it won enough
     * rounds for a sign test at 5 %: never in 2 rounds, so top-1 stays;
     * 5 of 5 do, 4 of 5 do not */
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json,sys; sys.path.insert(0, sys.argv[2]); "
             "import measure_candidates as m; d=json.load(open(sys.argv[1])); "
             "ok=d[\"chosen\"]==\"top-1\" and m.beats_by_rounds([1]*5,[2]*5) and "
             "not m.beats_by_rounds([1,1,1,1,3],[2]*5) and m.beats_by_rounds([1]*8+[3],[2]*9); "
             "sys.exit(0 if ok else 1)' '%s/measured.json' '%s/scripts'", ev, DMM_SRC_DIR);
    cr_expect_eq(system(cmd), 0, "the sign test: %s", out);
    /* the report says so */
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json,sys; sys.path.insert(0, sys.argv[2]); "
             "import evolve_report as r; m=json.load(open(sys.argv[1])); t=[]; "
             "r.measured_section(sys.argv[3], t.append); s=\"\\n\".join(t); "
             "sys.exit(0 if \"the program itself run under glibc\" in s and \"RUN=MEDIA_NOTE=1 \" "
             "in s and \"| F_real |\" in s and \"**Against glibc: \" in s else 1)' "
             "'%s/measured.json' '%s/scripts' '%s'",
             ev, DMM_SRC_DIR, ev);
    cr_expect_eq(system(cmd), 0, "report.md's section does not say the program was run");
    free(out);
    /* RUN that cannot run: refused at once */
    const char *bad[][2] = {
        { "dmm-no-such-program-x --help", "dmm-no-such-program-x: not found on PATH" },
        { "A=1 B=2", "no program to run" },
        { "./nonexistent/prog", "./nonexistent/prog: not an executable file" },
        { "ls 'unclosed", "No closing quotation" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(cmd, sizeof cmd,
                 "python3 %s/scripts/measure_candidates.py --check-run --run \"%s\" "
                 "> '%s/check.out' 2>&1", DMM_SRC_DIR, bad[i][0], tmpdir);
        st = system(cmd);
        snprintf(file, sizeof file, "%s/check.out", tmpdir);
        char *o = slurp(file, NULL);
        cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 2, "%s: status %d: %s", bad[i][0], st, o);
        cr_expect_not_null(strstr(o, bad[i][1]), "%s: %s", bad[i][0], o);
        cr_expect_eq(strchr(o, '\n') - o + 1, (long)strlen(o), "one line: %s", o);
        free(o);
    }
    remove_tmpdir();
}

/* ---- dmm build -------------------------------------------------------------- */

static const char *const two_allocators =
    "# dmm 1  trace=built.trc seed=5 fitness=0.5\n"
    "sss           range=(0,256]       list=sll order=lifo\n"
    "lea           range=(256,inf]\n";

Test(build, a_design_becomes_a_library_that_runs_it, .timeout = 120)
{
    make_tmpdir();
    char path[300], cmd[2400];
    static char out[1 << 16];
    snprintf(path, sizeof path, "%s/d.dmm", tmpdir);
    write_text(path, two_allocators);
    snprintf(cmd, sizeof cmd, "cd %s && %s build d.dmm", tmpdir, DMM);
    cr_assert_eq(run_sh(cmd, out, sizeof out), 0, "%s", out);
    cr_assert(strstr(out, "./libdmm_evolved.so"), "%s", out);
    /* perl on it: the same output as a plain run, and DMM_STATS names the
     * design and its two allocators */
    snprintf(cmd, sizeof cmd,
             "cd %s && perl -e 'my %%h; $h{$_} = q(x) x ($_ %% 300) for 1..30000; "
             "print length(join q(), values %%h), qq(\\n)' >plain.txt && "
             "DMM_STATS=1 LD_PRELOAD=%s/libdmm_evolved.so perl -e 'my %%h; "
             "$h{$_} = q(x) x ($_ %% 300) for 1..30000; print length(join q(), values %%h), "
             "qq(\\n)' >built.txt 2>stats.txt && cmp plain.txt built.txt && cat stats.txt",
             tmpdir, tmpdir);
    cr_assert_eq(run_sh(cmd, out, sizeof out), 0, "%s", out);
    cr_assert(strstr(out, "trace=built.trc seed=5"), "%s", out);
    cr_assert(strstr(out, "served by sss") && strstr(out, "served by lea"), "%s", out);
    /* sss serves a one-thread process without its lock, from malloc's and
     * free's inline paths: a program that starts threads halfway (their
     * blocks freed across threads) and one under DMM_CHECK run as plainly */
    snprintf(cmd, sizeof cmd,
             "cd %s && cat >t.py <<'EOF'\n"
             "import threading\n"
             "keep = [str(i) * (i %% 40) for i in range(20000)]\n"
             "out = []\n"
             "def work(k):\n"
             "    d = {i: [i, str(i)] for i in range(20000)}\n"
             "    out.append(sum(len(v[1]) for v in d.values()) + k)\n"
             "    keep.extend(d)\n"
             "ts = [threading.Thread(target=work, args=(k,)) for k in range(3)]\n"
             "[t.start() for t in ts]\n"
             "[t.join() for t in ts]\n"
             "print(sorted(out), len(keep))\n"
             "EOF\n"
             "PYTHONMALLOC=malloc python3 t.py >plain.txt && "
             "PYTHONMALLOC=malloc LD_PRELOAD=%s/libdmm_evolved.so python3 t.py >built.txt && "
             "cmp plain.txt built.txt && "
             "DMM_CHECK=1 LD_PRELOAD=%s/libdmm_evolved.so python3 t.py >checked.txt && "
             "cmp plain.txt checked.txt",
             tmpdir, tmpdir, tmpdir);
    cr_assert_eq(run_sh(cmd, out, sizeof out), 0, "%s", out);
    /* the same program with sss's list FIFO (free appends at its tail),
     * memory in huge pages and a cache of 4 blocks a bin (a free that finds
     * its bin full goes to sss's inline path); and on both, a workout that
     * checks every byte of every block it keeps (realloc too) in a process
     * that never starts a thread */
    snprintf(path, sizeof path, "%s/f.dmm", tmpdir);
    write_text(path, "sss range=(0,256] list=sll order=fifo\nlea range=(256,inf]\n"
                     "pages huge=yes\ncache max=128 count=4\n");
    snprintf(cmd, sizeof cmd,
             "cd %s && %s build -o fifo.so f.dmm && "
             "PYTHONMALLOC=malloc LD_PRELOAD=%s/fifo.so python3 t.py >fifo.txt && "
             "cmp plain.txt fifo.txt && "
             "DMM_CHECK=1 PYTHONMALLOC=malloc LD_PRELOAD=%s/fifo.so python3 t.py >checked.txt && "
             "cmp plain.txt checked.txt && %s mix solo 30000 >solo.txt && "
             "LD_PRELOAD=%s/fifo.so %s mix solo 30000 >fifo.txt && cmp solo.txt fifo.txt && "
             "LD_PRELOAD=%s/libdmm_evolved.so %s mix solo 30000 >lifo.txt && "
             "cmp solo.txt lifo.txt && grep -q 'realloc=[1-9].* bad=0' solo.txt",
             tmpdir, DMM, tmpdir, tmpdir, STRESS, tmpdir, STRESS, tmpdir, STRESS);
    cr_assert_eq(run_sh(cmd, out, sizeof out), 0, "%s", out);
    remove_tmpdir();
}

Test(build, a_failed_build_leaves_the_older_library)
{
    make_tmpdir();
    char path[300], cmd[1200];
    static char out[1 << 16];
    snprintf(path, sizeof path, "%s/d.dmm", tmpdir);
    write_text(path, two_allocators);
    snprintf(path, sizeof path, "%s/old.so", tmpdir);
    write_text(path, "older\n");
    snprintf(cmd, sizeof cmd, "cd %s && %s build --cc false -o old.so d.dmm", tmpdir, DMM);
    cr_assert_eq(run_sh(cmd, out, sizeof out), 2, "%s", out);
    cr_assert(strstr(out, "dmm build: false failed (exit status 1)"), "%s", out);
    snprintf(cmd, sizeof cmd, "cd %s && %s build --cc no-such-compiler -o old.so d.dmm",
             tmpdir, DMM);
    cr_assert_eq(run_sh(cmd, out, sizeof out), 2, "%s", out);
    cr_assert(strstr(out, "could not be run"), "%s", out);
    snprintf(cmd, sizeof cmd, "cd %s && cat old.so && ls | sort", tmpdir);
    cr_assert_eq(run_sh(cmd, out, sizeof out), 0, "%s", out);
    cr_assert_str_eq(out, "older\nd.dmm\nold.so\n");
    /* a bad design: the parser's message, nothing compiled */
    write_text(path, "older\n");
    snprintf(path, sizeof path, "%s/bad.dmm", tmpdir);
    write_text(path, "sss range=(0,256] list=ring\n");
    snprintf(cmd, sizeof cmd, "cd %s && %s build -o old.so bad.dmm", tmpdir, DMM);
    cr_assert_eq(run_sh(cmd, out, sizeof out), 2, "%s", out);
    cr_assert(strstr(out, "line 1") && strstr(out, "list"), "%s", out);
    remove_tmpdir();
}
