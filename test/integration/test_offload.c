/* test_offload.c - DMM_OFFLOAD=1 on libdmm.so (every preset) and
 * libdmm_evolved.so: real programs give the output of a plain run; threads
 * that free each other's blocks keep every payload; fork, exit with frees
 * still queued, _exit, and a main thread that calls pthread_exit all end
 * well; DMM_STATS shows that frees were offloaded and that a burst larger
 * than the queue fell back to synchronous frees; DMM_CHECK turns offload
 * off with a notice.  Every run has a time limit, so a deadlock fails. */
#include <criterion/criterion.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test/lib/progrun.h"
#include "test/lib/libs.h"

#define OFFLOAD DMM_BUILD_DIR "/test/progs/offload"
#define TRACEE  DMM_BUILD_DIR "/test/progs/tracee"
#define PYTHON  "/usr/bin/python3"
#define LIMIT_S 20

static void need(const char *path)
{
    cr_assert_eq(access(path, R_OK), 0, "%s missing: make builds it", path);
}

/* What one run gave. */
typedef struct result {
    int   status;   /* wait status, or RUN_TIMED_OUT */
    char *out, *err;
    size_t lout;
} result_t;

static void result_free(result_t *r)
{
    free(r->out);
    free(r->err);
}

/* Run argv on target t with DMM_OFFLOAD=1 and `more` (NULL-terminated
 * extra variables, or NULL), stdin from `in`, within LIMIT_S seconds. */
static result_t run_on(const struct target *t, char *const argv[], const char *const more[],
                       const char *in)
{
    const char *env[16];
    size_t k = 0;
    env[k++] = t->preload;
    if (t->config)
        env[k++] = t->config;
    env[k++] = "DMM_OFFLOAD=1";
    for (size_t i = 0; more && more[i] && k < 15; i++)
        env[k++] = more[i];
    env[k] = NULL;
    char out[300], err[300];
    snprintf(out, sizeof out, "%s/out", tmpdir);
    snprintf(err, sizeof err, "%s/err", tmpdir);
    result_t r;
    r.status = run_limited(argv, env, tmpdir, in, out, err, LIMIT_S, 0);
    r.out = slurp(out, &r.lout);
    r.err = slurp(err, NULL);
    cr_assert(r.out && r.err);
    return r;
}

static const char *how(int st)
{
    static char buf[64];
    if (st == RUN_TIMED_OUT)
        return "timed out (a deadlock?)";
    if (WIFSIGNALED(st))
        snprintf(buf, sizeof buf, "killed by signal %d", WTERMSIG(st));
    else
        snprintf(buf, sizeof buf, "exit status %d", WEXITSTATUS(st));
    return buf;
}

static int exited_0(int st)
{
    return st != RUN_TIMED_OUT && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* DMM_STATS's offload line: frees offloaded, freed synchronously with the
 * queue full, still queued.  0 when there is no such line. */
static int offload_stats(const char *err, unsigned long long *offloaded,
                         unsigned long long *full, unsigned long long *queued)
{
    const char *l = strstr(err, "dmm: DMM_OFFLOAD on: ");
    if (!l)
        return 0;
    *offloaded = strtoull(l + 21, NULL, 10);
    const char *f = strstr(l, "with no helper, ");
    const char *q = strstr(l, "full); ");   /* then "N still queued" */
    if (!f || !q)
        return 0;
    *full = strtoull(f + 16, NULL, 10);
    *queued = strtoull(q + 7, NULL, 10);
    return 1;
}

/* Run argv plainly, then with DMM_OFFLOAD=1 on every target: the same
 * status and output, nothing from dmm on stderr. */
static void same_as_plain_everywhere(char *const argv[], const char *in, const char *const more[])
{
    char plain[300];
    snprintf(plain, sizeof plain, "%s/plain", tmpdir);
    int st = run_limited(argv, more, tmpdir, in, plain, NULL, LIMIT_S, 0);
    cr_assert_neq(st, RUN_TIMED_OUT, "%s timed out on its own", argv[0]);
    size_t lp;
    char *want = slurp(plain, &lp);
    cr_assert_gt(lp, 0, "%s printed nothing", argv[0]);
    for (size_t i = 0; i < NTARGETS; i++) {
        result_t r = run_on(&targets[i], argv, more, in);
        cr_expect_eq(r.status, st, "%s %s on %s: %s, plain %d; stderr: %.300s", argv[0],
                     argv[1] ? argv[1] : "", targets[i].name, how(r.status), st, r.err);
        cr_expect(r.lout == lp && memcmp(r.out, want, lp) == 0, "%s %s: output differs on %s",
                  argv[0], argv[1] ? argv[1] : "", targets[i].name);
        cr_expect_null(strstr(r.err, "dmm:"), "%s on %s: %.300s", argv[0], targets[i].name,
                       r.err);
        result_free(&r);
    }
    free(want);
}

Test(offload, sort_runs_the_same_on_every_target)
{
    need(LIBDMM);
    need(EVOLVED);
    make_tmpdir();
    char in[300];
    snprintf(in, sizeof in, "%s/in.txt", tmpdir);
    write_input_file(in, 40000);
    char *argv[] = { "/usr/bin/sort", in, NULL };
    same_as_plain_everywhere(argv, NULL, NULL);
    remove_tmpdir();
}

Test(offload, python3_runs_the_same_on_every_target)
{
    if (access(PYTHON, X_OK) != 0)
        cr_skip_test("no " PYTHON);
    need(LIBDMM);
    need(EVOLVED);
    make_tmpdir();
    /* PYTHONMALLOC=malloc: every object through the allocator under test */
    char *argv[] = { PYTHON, "-c",
                     "d = {}\n"
                     "for i in range(60000):\n"
                     "    d[str(i) * (i % 5 + 1)] = [i] * (i % 9)\n"
                     "for k in list(d)[::3]:\n"
                     "    del d[k]\n"
                     "l = sorted(d.items(), key=lambda kv: (len(kv[1]), kv[0]))\n"
                     "print(len(d), l[0][0], l[-1][0], sum(map(len, d.values())))\n",
                     NULL };
    const char *more[] = { "PYTHONMALLOC=malloc", NULL };
    same_as_plain_everywhere(argv, NULL, more);
    remove_tmpdir();
}

/* The tracee's threaded and forking modes (test_libdmm runs them without
 * offload). */
Test(offload, tracee_threads_and_forks_run_the_same)
{
    need(TRACEE);
    make_tmpdir();
    const char *modes[][2] = { { "threads", "0" }, { "forkmt", "30" }, { "threxit", "3000" } };
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        char *argv[] = { TRACEE, (char *)modes[m][0], (char *)modes[m][1], NULL };
        same_as_plain_everywhere(argv, NULL, NULL);
    }
    remove_tmpdir();
}

/* Threads free each other's blocks; every payload is checked before its
 * free and after realloc; DMM_STATS proves frees went to the helper. */
Test(offload, threads_with_cross_thread_frees_keep_payloads)
{
    need(OFFLOAD);
    make_tmpdir();
    char *argv[] = { OFFLOAD, "mt", "4", "30000", NULL };
    const char *more[] = { "DMM_STATS=1", NULL };
    for (size_t i = 0; i < NTARGETS; i++) {
        result_t r = run_on(&targets[i], argv, more, NULL);
        cr_expect(exited_0(r.status), "mt on %s: %s; stderr: %.400s", targets[i].name,
                  how(r.status), r.err);
        cr_expect_not_null(strstr(r.out, "mt 4 threads x 30000 operations"), "on %s: %s",
                           targets[i].name, r.out);
        unsigned long long off = 0, full = 0, queued = 0;
        cr_expect(offload_stats(r.err, &off, &full, &queued), "on %s: no offload line: %.600s",
                  targets[i].name, r.err);
        cr_expect_gt(off, 1000, "on %s: only %llu frees offloaded", targets[i].name, off);
        result_free(&r);
    }
    remove_tmpdir();
}

/* Fork while frees are queued and another thread frees: children and
 * grandchildren check what they inherited, allocate and free (starting
 * helpers of their own), exit and _exit. */
/* The offload program's MODE (5000 operations) on every target: exit 0 and
 * `expect` in its output. */
static void mode_on_every_target(const char *mode, const char *expect)
{
    need(OFFLOAD);
    make_tmpdir();
    char *argv[] = { OFFLOAD, (char *)mode, "5000", NULL };
    for (size_t i = 0; i < NTARGETS; i++) {
        result_t r = run_on(&targets[i], argv, NULL, NULL);
        cr_expect(exited_0(r.status), "%s on %s: %s; stderr: %.400s", mode, targets[i].name,
                  how(r.status), r.err);
        cr_expect_not_null(strstr(r.out, expect), "%s on %s: %s", mode, targets[i].name, r.out);
        result_free(&r);
    }
    remove_tmpdir();
}

Test(offload, fork_then_allocate_in_child_and_parent)
{
    mode_on_every_target("fork", "fork 4 children");
}

/* exit and _exit with frees still queued, a thread still freeing, an exit
 * handler and a destructor that free and allocate. */
Test(offload, exit_with_frees_queued_does_not_crash)
{
    need(OFFLOAD);
    make_tmpdir();
    const char *modes[] = { "exit", "_exit" };
    for (size_t m = 0; m < 2; m++) {
        char *argv[] = { OFFLOAD, (char *)modes[m], "20000", NULL };
        const char *more[] = { "DMM_STATS=1", NULL };
        for (size_t i = 0; i < NTARGETS; i++) {
            result_t r = run_on(&targets[i], argv, m == 0 ? more : NULL, NULL);
            cr_expect(exited_0(r.status), "%s on %s: %s; stderr: %.400s", modes[m],
                      targets[i].name, how(r.status), r.err);
            cr_expect_not_null(strstr(r.out, "with frees queued"), "%s on %s: %s", modes[m],
                               targets[i].name, r.out);
            result_free(&r);
        }
    }
    remove_tmpdir();
}

/* 2 x 200000 frees in a row, the second time with the helper starved
 * (SCHED_IDLE beside a spinning thread: see progs/offload.c): more than
 * the queue holds.  The callers free what does not fit, nothing is lost or
 * changed, and at most the queue's 512 groups of 14 blocks are ever
 * waiting. */
Test(offload, a_burst_larger_than_the_queue_falls_back_to_synchronous_frees)
{
    need(OFFLOAD);
    make_tmpdir();
    char *argv[] = { OFFLOAD, "burst", "200000", NULL };
    const char *more[] = { "DMM_STATS=1", NULL };
    for (size_t i = 0; i < NTARGETS; i++) {
        /* Starving a thread is up to the scheduler: now and then (1 run in
         * 30 on a loaded machine) the helper still kept up; the queue must
         * fill in one of 3 runs. */
        unsigned long long full = 0;
        char line[400] = "";
        for (int attempt = 0; attempt < 3 && full == 0; attempt++) {
            result_t r = run_on(&targets[i], argv, more, NULL);
            cr_expect(exited_0(r.status), "burst on %s: %s; stderr: %.400s", targets[i].name,
                      how(r.status), r.err);
            unsigned long long off = 0, queued = 0;
            cr_expect(offload_stats(r.err, &off, &full, &queued),
                      "on %s: no offload line: %.600s", targets[i].name, r.err);
            cr_expect_gt(off, 0, "on %s: nothing offloaded", targets[i].name);
            cr_expect_leq(queued, 512 * 14, "on %s: %llu queued", targets[i].name, queued);
            const char *l = strstr(r.err, "DMM_OFFLOAD on:");
            snprintf(line, sizeof line, "%s", l ? l : r.err);
            result_free(&r);
        }
        cr_expect_gt(full, 0, "on %s: the queue never filled in 3 runs: %s", targets[i].name,
                     line);
    }
    remove_tmpdir();
}

/* main calls pthread_exit; its thread allocates, frees and returns: the
 * helper must not keep the process alive. */
Test(offload, the_helper_does_not_keep_the_process_alive)
{
    mode_on_every_target("lastthread", "lastthread done");
}

/* DMM_CHECK checks each free where it is made: with both, a notice and no
 * offload; the checks still run. */
Test(offload, dmm_check_turns_offload_off_with_a_notice)
{
    need(OFFLOAD);
    make_tmpdir();
    char *argv[] = { OFFLOAD, "mt", "2", "5000", NULL };
    const char *more[] = { "DMM_CHECK=1", "DMM_STATS=1", NULL };
    for (size_t i = 0; i < NTARGETS; i++) {
        result_t r = run_on(&targets[i], argv, more, NULL);
        cr_expect(exited_0(r.status), "on %s: %s; stderr: %.400s", targets[i].name,
                  how(r.status), r.err);
        cr_expect_not_null(strstr(r.err, "dmm: DMM_OFFLOAD ignored"), "on %s: %.400s",
                           targets[i].name, r.err);
        cr_expect_not_null(strstr(r.err, "DMM_CHECK on:"), "on %s: %.400s", targets[i].name,
                           r.err);
        cr_expect_null(strstr(r.err, "DMM_OFFLOAD on:"), "on %s: %.400s", targets[i].name,
                       r.err);
        result_free(&r);
    }
    remove_tmpdir();
}

/* Off unless DMM_OFFLOAD=1; another value says so once. */
Test(offload, only_dmm_offload_1_turns_it_on)
{
    need(OFFLOAD);
    need(LIBDMM);
    make_tmpdir();
    char out[300], err[300];
    snprintf(out, sizeof out, "%s/out", tmpdir);
    snprintf(err, sizeof err, "%s/err", tmpdir);
    char *argv[] = { OFFLOAD, "mt", "2", "5000", NULL };
    const char *vals[] = { NULL, "DMM_OFFLOAD=0", "DMM_OFFLOAD=yes" };
    for (size_t v = 0; v < 3; v++) {
        const char *env[] = { "LD_PRELOAD=" LIBDMM, "DMM_STATS=1", vals[v], NULL };
        int st = run_limited(argv, env, tmpdir, NULL, out, err, LIMIT_S, 0);
        char *e = slurp(err, NULL);
        cr_expect(exited_0(st), "%s: %s", vals[v] ? vals[v] : "unset", how(st));
        cr_expect_null(strstr(e, "DMM_OFFLOAD on:"), "%s: %.400s", vals[v] ? vals[v] : "unset",
                       e);
        cr_expect_eq(strstr(e, "DMM_OFFLOAD is 0 or 1") != NULL, v == 2, "%s: %.400s",
                     vals[v] ? vals[v] : "unset", e);
        free(e);
    }
    remove_tmpdir();
}
