/* test_libdmm.c - libdmm.so with every preset: glibc's errno semantics;
 * threads, fork and exit paths of the tracee, with output identical to a
 * plain run; a bad DMM_CONFIG; the footprint of a real run against dmm sim's
 * M for the trace of the same run.  Real programs (sort, python3, perl,
 * sqlite3, git, gcc, ...) on every preset are test_programs.c's. */
#include <criterion/criterion.h>

#include <errno.h>
#include <sched.h>
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

#define TRACEE   DMM_BUILD_DIR "/test/progs/tracee"
#define MEDIA    DMM_BUILD_DIR "/bench/work_media"
#define STRESS   DMM_BUILD_DIR "/test/progs/stress"

static const char *const presets[] = { "kng", "lea", "fib", "s10", "exa" };
#define NPRESETS (sizeof presets / sizeof presets[0])

/* Run argv plainly and under libdmm.so with every preset: same status, same
 * output, nothing on stderr from dmm. */
static void same_under_every_preset(char *const argv[], const char *in)
{
    make_tmpdir();
    int st;
    size_t lp;
    char *want = plain_output(argv, in, &st, &lp);
    for (size_t i = 0; i < NPRESETS; i++) {
        char cfg[64];
        snprintf(cfg, sizeof cfg, "DMM_CONFIG=%s", presets[i]);
        const char *env[] = { "LD_PRELOAD=" LIBDMM, cfg, NULL };
        expect_same_as_plain(argv, in, st, want, lp, env, presets[i]);
    }
    free(want);
    remove_tmpdir();
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

/* A forked child populates its copy of a pool, and of the chain's own
 * pages, at once: fork leaves them shared with the parent and
 * write-protected, so its calls would fault each in.  The parent's pages
 * fault once each on their first write after fork, as with any allocator
 * (populating them at every fork would copy the pool each time), unless it
 * asks for them with dmm_populate().  A plain run (glibc: the block is
 * mmap'd, no dmm_populate) shows the faults the test would otherwise see. */
Test(libdmm, a_forked_child_populates_its_pool_and_chain_at_once)
{
    make_tmpdir();
    char cfg[300], out[300], envcfg[320];
    snprintf(cfg, sizeof cfg, "%s/pool.dmm", tmpdir);
    snprintf(out, sizeof out, "%s/out", tmpdir);
    FILE *f = fopen(cfg, "w");
    cr_assert_not_null(f);
    fputs("tlsf range=(0,inf] split=yes coalesce=yes list=dll fit=first order=lifo\n"
          "pool bytes=8388608\n", f);
    fclose(f);
    snprintf(envcfg, sizeof envcfg, "DMM_CONFIG=%s", cfg);
    char *argv[] = { STRESS, "poolfork", "4096", NULL };
    for (int pooled = 0; pooled < 2; pooled++) {
        const char *env[] = { "LD_PRELOAD=" LIBDMM, envcfg, NULL };
        cr_assert_eq(run(argv, pooled ? env : NULL, tmpdir, NULL, out, NULL), 0);
        char *o = slurp(out, NULL);
        long pages = 0, parent = -1, child = -1, calls = -1;
        cr_assert_eq(sscanf(o, "poolfork pages=%ld parent=%ld child=%ld calls=%ld", &pages,
                            &parent, &child, &calls), 4, "%s", o);
        cr_expect_eq(pages, 1024);
        /* (the child's malloc and free, calls, fault on its stack's and
         * the libraries' pages whatever the allocator: not asserted) */
        if (pooled) {   /* a sanitizer's or the kernel's own few aside */
            cr_expect_lt(child, 64, "child: %ld faults on 1024 pooled pages", child);
            cr_expect_lt(parent, 64, "parent, after dmm_populate(): %ld faults", parent);
        } else {
            cr_expect_geq(child, 512, "plain: %ld faults: the test would not see them", child);
            cr_expect_geq(parent, 512, "plain parent: %ld faults", parent);
        }
        cr_expect_geq(calls, 0, "%s", o);
        free(o);
    }
    remove_tmpdir();
}

/* Faulting in ahead (on by default with huge pages; DMM_PREFAULT=0 turns
 * it off): a heap grown past 64 MiB gets the allocator's helper thread
 * (a second task; none when pinned to one CPU), which glibc does not count (the process stays
 * single-threaded to it, and keeps its one-thread paths), which a fork
 * child starts again for itself, and which does not keep a process alive
 * whose main thread ended with pthread_exit.  The blocks' bytes are checked
 * throughout (stress.c). */
Test(libdmm, faulting_in_ahead_keeps_the_process_single_threaded_and_ends_with_it)
{
    make_tmpdir();
    char cfg[300], out[300], envcfg[320];
    snprintf(cfg, sizeof cfg, "%s/huge.dmm", tmpdir);
    snprintf(out, sizeof out, "%s/out", tmpdir);
    FILE *f = fopen(cfg, "w");
    cr_assert_not_null(f);
    fputs("lea range=(0,inf] split=yes coalesce=yes list=dll fit=best order=lifo\n"
          "pages huge=yes\n", f);
    fclose(f);
    snprintf(envcfg, sizeof envcfg, "DMM_CONFIG=%s", cfg);
    char *argv[] = { STRESS, "grow", "80", "pthread_exit", NULL };
    const char *plain[] = { NULL };
    const char *ahead[] = { "LD_PRELOAD=" LIBDMM, envcfg, NULL };
    const char *off[] = { "LD_PRELOAD=" LIBDMM, envcfg, "DMM_PREFAULT=0", NULL };
    /* with DMM_OFFLOAD's helper too (a pthread: then not single-threaded),
     * which must not take this one for a thread that keeps the process */
    const char *both[] = { "LD_PRELOAD=" LIBDMM, envcfg, "DMM_OFFLOAD=1", NULL };
    /* and pinned to one CPU, where a helper would only take the program's
     * turns: none */
    const char *const *envs[] = { plain, ahead, off, both, ahead };
    cpu_set_t mine, one;
    cr_assert_eq(sched_getaffinity(0, sizeof mine, &mine), 0);
    int cores = CPU_COUNT(&mine) >= 2;   /* else no helper anywhere */
    const int want_tasks[] = { 1, 1 + cores, 1, 1 + cores, 1 };   /* (DMM_OFFLOAD's starts later) */
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &mine)) {
            CPU_SET(c, &one);
            break;
        }
    for (int k = 0; k < 5; k++) {
        if (k == 4)
            cr_assert_eq(sched_setaffinity(0, sizeof one, &one), 0);
        int st = run_limited(argv, envs[k], tmpdir, NULL, out, NULL, 120, 0);
        if (k == 4)
            cr_assert_eq(sched_setaffinity(0, sizeof mine, &mine), 0);
        cr_assert_neq(st, RUN_TIMED_OUT, "run %d: the process did not end", k);
        cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "run %d: status %d", k, st);
        char *o = slurp(out, NULL);
        char want[100];
        snprintf(want, sizeof want, "grow mib=80 single=%d tasks=%d bad=0\n", k != 3,
                 want_tasks[k]);
        cr_expect_str_eq(o, want, "run %d: printed %s", k, o);
        free(o);
    }
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
        dmm_err_t e = { { 0 } };
        cr_assert_eq(dmm_desc_load(presets[i], &d, &e), 0);
        dmm_sim_result_t r;
        cr_assert_eq(dmm_sim_run(&s, &d, presets[i], 0, &r, &e), 0, "%s", e.msg);
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

/* The tracee's mode (it prints "tracee MODE maxrss KIB bad B") with n,
 * under libdmm.so with DMM_CONFIG=cfg and under libdmm_evolved.so: no bad
 * byte, and a peak RSS under 64 MiB (what is asked for is far less; a page
 * for each block, or every page of a block, far more). */
static void peak_rss_is_small(const char *mode, const char *n, const char *cfg)
{
    char out[300], envcfg[320], fmt[96];
    snprintf(out, sizeof out, "%s/out", tmpdir);
    snprintf(envcfg, sizeof envcfg, "DMM_CONFIG=%s", cfg);
    snprintf(fmt, sizeof fmt, "tracee %s maxrss %%ld bad %%d", mode);
    const char *with_cfg[] = { "LD_PRELOAD=" LIBDMM, envcfg, NULL };
    const char *evolved[] = { "LD_PRELOAD=" EVOLVED, NULL };
    const char *const *envs[] = { with_cfg, evolved };
    for (size_t i = 0; i < 2; i++) {
        char *argv[] = { TRACEE, (char *)mode, (char *)n, NULL };
        cr_assert_eq(run(argv, envs[i], tmpdir, NULL, out, NULL), 0, "%s", envs[i][0]);
        char *o = slurp(out, NULL);
        long kib = -1;
        int bad = -1;
        cr_assert_eq(sscanf(o, fmt, &kib, &bad), 2, "%s", o);
        cr_expect_eq(bad, 0, "%s %s: a byte not as written (or as calloc leaves it)", mode,
                     envs[i][0]);
        cr_expect_lt(kib, 64 * 1024, "%s %s %s: peak RSS %ld KiB", mode, n, envs[i][0], kib);
        free(o);
    }
}

/* A large block callocked (past every class of the chain: the fallback
 * path) is not written by calloc: the program holds the pages it touches,
 * as under glibc, not the whole block.  1 GiB, a byte of each MiB touched,
 * twice over (freed between): the peak RSS stays near 2 x 256 pages. */
Test(libdmm, a_large_calloc_holds_only_the_pages_the_program_touches)
{
    make_tmpdir();
    char cfg[300];
    snprintf(cfg, sizeof cfg, "%s/small.dmm", tmpdir);
    FILE *f = fopen(cfg, "w");
    cr_assert_not_null(f);
    fputs("lea           range=(0,65536]       split=yes coalesce=yes list=dll   fit=best  order=fifo\n",
          f);
    fclose(f);
    peak_rss_is_small("bigcalloc", "1024", cfg);
    remove_tmpdir();
}

/* Small blocks aligned past 16 bytes share slabs instead of taking a page
 * each: 100 000 posix_memalign(64, 48..147) held at once peak near the
 * bytes asked for (glibc: 23 MB; a page each: 400 MB). */
Test(libdmm, small_aligned_blocks_do_not_take_a_page_each)
{
    make_tmpdir();
    peak_rss_is_small("smallaligned", "100000", "lea");
    remove_tmpdir();
}
