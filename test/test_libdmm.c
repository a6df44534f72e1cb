/* test_libdmm.c - libdmm.so under real programs, with every preset: output
 * identical to a plain run; glibc's errno semantics; threads, fork and exit
 * paths of the tracee; the footprint of a real run against dmm sim's M for
 * the trace of the same run. */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "desc.h"
#include "opstream.h"
#include "progrun.h"
#include "sim.h"
#include "trace.h"

#define LIBDMM   DMM_BUILD_DIR "/libdmm.so"
#define TRACER   DMM_BUILD_DIR "/libdmmtrace.so"
#define TRACEE   DMM_BUILD_DIR "/test/progs/tracee"
#define MEDIA    DMM_BUILD_DIR "/bench/work_media"

static const char *const presets[] = { "kng", "lea", "fib", "s10", "exa" };
#define NPRESETS (sizeof presets / sizeof presets[0])

static int have(const char *path)
{
    return access(path, X_OK) == 0;
}

/* Run argv plainly and under libdmm.so with every preset: same status, same
 * output, nothing on stderr from dmm. */
static void same_under_every_preset(char *const argv[], const char *in)
{
    make_tmpdir();
    char plain[300];
    snprintf(plain, sizeof plain, "%s/plain", tmpdir);
    int st = run(argv, NULL, tmpdir, in, plain, NULL);
    size_t lp;
    char *want = slurp(plain, &lp);
    cr_assert_gt(lp, 0, "%s printed nothing", argv[0]);
    for (size_t i = 0; i < NPRESETS; i++) {
        char cfg[64];
        snprintf(cfg, sizeof cfg, "DMM_CONFIG=%s", presets[i]);
        const char *env[] = { "LD_PRELOAD=" LIBDMM, cfg, NULL };
        expect_same_as_plain(argv, in, st, want, lp, env, presets[i]);
    }
    free(want);
    remove_tmpdir();
}

Test(libdmm, sort_runs_the_same_on_every_preset)
{
    write_input_file("/tmp/dmm-libdmm-sort", 30000);
    char *argv[] = { "/usr/bin/sort", "/tmp/dmm-libdmm-sort", NULL };
    same_under_every_preset(argv, NULL);
    char *argv2[] = { "/usr/bin/sort", "--parallel=2", "-S", "1M", "/tmp/dmm-libdmm-sort", NULL };
    same_under_every_preset(argv2, NULL);
}

Test(libdmm, python3_runs_the_same_on_every_preset)
{
    if (!have("/usr/bin/python3"))
        cr_skip_test("no python3");
    char *argv[] = { "/usr/bin/python3", "-c",
                     "import json, threading\n"
                     "d = {str(i): [i] * (i % 9) for i in range(20000)}\n"
                     "out = []\n"
                     "def work(k):\n"
                     "    out.append(sum(len(v) for v in json.loads(json.dumps(d)).values()) + k)\n"
                     "ts = [threading.Thread(target=work, args=(k,)) for k in range(3)]\n"
                     "[t.start() for t in ts]; [t.join() for t in ts]\n"
                     "print(sorted(out))\n",
                     NULL };
    same_under_every_preset(argv, NULL);
}

Test(libdmm, perl_runs_the_same_on_every_preset)
{
    if (!have("/usr/bin/perl"))
        cr_skip_test("no perl");
    char *argv[] = { "/usr/bin/perl", "-e",
                     "my %h; $h{$_ % 977} .= 'y' x ($_ % 40) for 1 .. 30000;"
                     "print join(',', map { length $h{$_} } sort { $a <=> $b } keys %h), \"\\n\";",
                     NULL };
    same_under_every_preset(argv, NULL);
}

Test(libdmm, sqlite3_runs_the_same_on_every_preset)
{
    if (!have("/usr/bin/sqlite3"))
        cr_skip_test("no sqlite3");
    char *argv[] = { "/usr/bin/sqlite3", ":memory:",
                     "create table t(a integer, b text);"
                     "with recursive c(x) as (select 1 union all select x + 1 from c where x < 20000)"
                     " insert into t select x, 'v' || (x * 7919 % 20011) from c;"
                     "create index i on t(b);"
                     "select count(*), sum(a), min(b), max(b) from t where a % 3 = 1;",
                     NULL };
    same_under_every_preset(argv, NULL);
}

Test(libdmm, git_runs_the_same_on_every_preset)
{
    if (!have("/usr/bin/git"))
        cr_skip_test("no git");
    write_input_file("/tmp/dmm-libdmm-git", 3000);
    char *argv[] = { "/usr/bin/git", "hash-object", "--stdin", NULL };
    same_under_every_preset(argv, "/tmp/dmm-libdmm-git");
}

Test(libdmm, gcc_compiles_the_same_on_every_preset)
{
    if (!have("/usr/bin/gcc"))
        cr_skip_test("no gcc");
    FILE *f = fopen("/tmp/dmm-libdmm-x.c", "w");
    fputs("#include <stdio.h>\nstruct p { int x, y; };\n"
          "static int f(struct p *v, int n) { int s = 0; for (int i = 0; i < n; i++) s += v[i].x * v[i].y; return s; }\n"
          "int main(void) { struct p v[3] = {{1,2},{3,4},{5,6}}; printf(\"%d\\n\", f(v, 3)); return 0; }\n", f);
    fclose(f);
    char *argv[] = { "/usr/bin/gcc", "-O2", "-S", "-o", "-", "/tmp/dmm-libdmm-x.c", NULL };
    same_under_every_preset(argv, NULL);
}

/* The tracee's modes: errno rules, threads with cross-thread frees, a
 * thread exiting, fork, aligned calls. */
Test(libdmm, tracee_modes_on_every_preset)
{
    const char *modes[][2] = { { "errno", "0" }, { "threads", "0" }, { "threxit", "3000" },
                               { "fork", "300" }, { "forkmt", "30" }, { "aligned", "100" },
                               { "exit", "500" } };
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        char *argv[] = { TRACEE, (char *)modes[m][0], (char *)modes[m][1], NULL };
        same_under_every_preset(argv, NULL);
    }
}

Test(libdmm, a_bad_config_says_so_and_runs_on_glibc)
{
    make_tmpdir();
    char out[300], err[300];
    snprintf(out, sizeof out, "%s/out", tmpdir);
    snprintf(err, sizeof err, "%s/err", tmpdir);
    const char *env[] = { "LD_PRELOAD=" LIBDMM, "DMM_CONFIG=/nonexistent.dmm", NULL };
    char *argv[] = { TRACEE, "main", "100", NULL };
    cr_assert_eq(run(argv, env, tmpdir, NULL, out, err), 0);
    char *e = slurp(err, NULL);
    cr_expect_not_null(strstr(e, "/nonexistent.dmm"), "%s", e);
    cr_expect_not_null(strstr(e, "glibc"), "%s", e);
    free(e);
    remove_tmpdir();
}

/* A program's footprint on libdmm.so equals dmm sim's M for the trace of
 * the same run (the page source counts both alike). */
Test(libdmm, real_footprint_equals_simulated_M)
{
    make_tmpdir();
    char tfile[320], err[300];
    snprintf(tfile, sizeof tfile, "DMM_TRACE_FILE=%s/media.trc", tmpdir);
    snprintf(err, sizeof err, "%s/err", tmpdir);
    char *argv[] = { MEDIA, "-f", "300", NULL };
    const char *tenv[] = { "LD_PRELOAD=" TRACER, tfile, NULL };
    cr_assert_eq(run(argv, tenv, tmpdir, NULL, NULL, NULL), 0);
    char path[330];
    snprintf(path, sizeof path, "%s/media.trc", tmpdir);
    dmm_trace_t t;
    dmm_err_t terr;
    cr_assert_eq(dmm_trace_load(path, &t, &terr), 0, "%s", terr.msg);
    dmm_opstream_t s;
    cr_assert_eq(dmm_opstream_build(&t, &s, &terr), 0);
    for (size_t i = 0; i < NPRESETS; i++) {
        dmm_desc_t d;
        char e[512];
        cr_assert_eq(dmm_desc_load(presets[i], &d, e, sizeof e), 0);
        dmm_sim_result_t r;
        cr_assert_eq(dmm_sim_run(&s, &d, presets[i], 0, &r, e, sizeof e), 0, "%s", e);
        char cfg[64];
        snprintf(cfg, sizeof cfg, "DMM_CONFIG=%s", presets[i]);
        const char *env[] = { "LD_PRELOAD=" LIBDMM, cfg, "DMM_STATS=1", NULL };
        cr_assert_eq(run(argv, env, tmpdir, NULL, NULL, err), 0);
        char *txt = slurp(err, NULL);
        char *at = strstr(txt, "bytes now, ");
        cr_assert_not_null(at, "%s: no DMM_STATS line: %s", presets[i], txt);
        unsigned long long peak = strtoull(at + 11, NULL, 10);
        double diff = (double)peak - (double)r.M;
        if (diff < 0)
            diff = -diff;
        cr_expect_leq(diff, (double)r.M * 0.01, "%s: real peak %llu, simulated M %zu",
                      presets[i], peak, r.M);
        free(txt);
    }
    dmm_opstream_free(&s);
    dmm_trace_free(&t);
    remove_tmpdir();
}
