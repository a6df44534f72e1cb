/* test_robust.c - the preload libraries under threads, fork, exec, signals,
 * an exhausted address space and secure execution (issue 6).
 *
 * The workouts are test/progs/stress.c's modes: each checks every block it
 * owns (a pattern over all its bytes) and prints a line that does not depend
 * on scheduling.  Each runs plainly and then under libdmm.so with every
 * preset, libdmm_evolved.so and libdmmtrace.so, with a time limit: a
 * deadlock fails the test instead of hanging it.  Under the tracer the trace
 * files are read back: whole, consistent (no free of an unknown block, no
 * live address handed out twice) and readable by `dmm stats`; where the
 * program says what it called, the trace must hold exactly that. */
#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tracer/format/opstream.h"
#include "test/lib/progrun.h"
#include "test/lib/rundmm.h"
#include "tracer/format/trace.h"
#include "test/lib/traces.h"
#include "test/lib/libs.h"

#define STRESS   DMM_BUILD_DIR "/test/progs/stress"
#define TRACEE_C DMM_SRC_DIR "/test/progs/tracee.c"

#define LIMIT_S  30   /* seconds before a run counts as a deadlock */

/* The workouts are unsanitized programs: the sanitizer pass, which only
 * rebuilds this file, runs the cheap tests and skips the long ones. */
#define LONG_TEST()                                                                  \
    do {                                                                             \
        if (SANITIZED)                                                               \
            cr_skip_test("sanitizer pass: the workout is the same unsanitized program " \
                         "as in the plain pass");                                    \
    } while (0)

/* The libraries every workout runs under: libdmm.so with each preset,
 * libdmm_evolved.so, libdmmtrace.so (the last, TRACED). */
enum { KNG = 0, EXA = 4, NPRESETS = 5, EVOLVED_LIB = 5, TRACED = 6, NLIBS = 7 };
static const char *const lib_name[NLIBS] = {
    "libdmm.so kng", "libdmm.so lea", "libdmm.so fib", "libdmm.so s10", "libdmm.so exa",
    "libdmm_evolved.so", "libdmmtrace.so",
};
static const char *const preset_env[NPRESETS] = {
    "DMM_CONFIG=kng", "DMM_CONFIG=lea", "DMM_CONFIG=fib", "DMM_CONFIG=s10", "DMM_CONFIG=exa",
};

static char trcdir[300];   /* where the tracer writes, inside tmpdir */
static char trcfile[340];  /* DMM_TRACE_FILE=... */

static void setup(void)
{
    make_tmpdir();
    snprintf(trcdir, sizeof trcdir, "%s/trc", tmpdir);
    cr_assert_eq(mkdir(trcdir, 0700), 0);
    snprintf(trcfile, sizeof trcfile, "DMM_TRACE_FILE=%s/t.%%p.trc", trcdir);
}

static void lib_env(int lib, const char *env[4])
{
    if (lib < NPRESETS) {
        env[0] = "LD_PRELOAD=" LIBDMM;
        env[1] = preset_env[lib];
    } else if (lib == EVOLVED_LIB) {
        env[0] = "LD_PRELOAD=" EVOLVED;
        env[1] = NULL;
    } else {
        env[0] = "LD_PRELOAD=" TRACER;
        env[1] = trcfile;
    }
    env[2] = NULL;
}

/* Run argv under lib (-1: plainly) in tmpdir, stdout to tmpdir/out and
 * stderr to tmpdir/err; a run that does not end in LIMIT_S fails the test.
 * Returns the wait status; *out and *err get the two files' text. */
static int run_under(char *const argv[], int lib, unsigned long long as_limit, char **out,
                     char **err)
{
    const char *env[4] = { NULL };
    if (lib >= 0)
        lib_env(lib, env);
    char fo[300], fe[300];
    snprintf(fo, sizeof fo, "%s/out", tmpdir);
    snprintf(fe, sizeof fe, "%s/err", tmpdir);
    int st = run_limited(argv, env, tmpdir, NULL, fo, fe, LIMIT_S, as_limit);
    *out = slurp(fo, NULL);
    *err = slurp(fe, NULL);
    cr_assert_neq(st, RUN_TIMED_OUT, "%s %s %s under %s: still running after %d s: deadlock",
                  argv[0], argv[1], argv[2] ? argv[2] : "", lib >= 0 ? lib_name[lib] : "glibc",
                  LIMIT_S);
    return st;
}

/* The run ended well: status 0, output `want` (when given), nothing from
 * dmm on stderr. */
static void expect_clean(char *const argv[], int lib, int st, const char *out, const char *err,
                         const char *want)
{
    const char *who = lib >= 0 ? lib_name[lib] : "glibc";
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0,
              "stress %s under %s: %s %d; stderr: %.400s", argv[1], who,
              WIFSIGNALED(st) ? "killed by signal" : "exit status",
              WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), err);
    if (want)
        cr_expect_str_eq(out, want, "stress %s under %s", argv[1], who);
    cr_expect_null(strstr(err, "dmm:"), "stress %s under %s: %.400s", argv[1], who, err);
    cr_expect_null(strstr(err, "ld.so"), "stress %s: %s not loaded: %.400s", argv[1], who, err);
}

/* ---- traces --------------------------------------------------------------- */

static int check_all_traces(void)
{
    return check_traces_in(trcdir, 0, tmpdir);
}

/* A workout plainly, then under every library: the same line each time;
 * the tracer writes `traces` files. */
static void same_everywhere(char *const argv[], int traces)
{
    char *want, *err;
    int st = run_under(argv, -1, 0, &want, &err);
    expect_clean(argv, -1, st, want, err, NULL);
    cr_assert_gt(strlen(want), 0);
    free(err);
    for (int lib = 0; lib < NLIBS; lib++) {
        char *out;
        st = run_under(argv, lib, 0, &out, &err);
        expect_clean(argv, lib, st, out, err, want);
        if (lib == TRACED) {
            int n = check_all_traces();
            cr_expect_eq(n, traces, "stress %s: %d trace files", argv[1], n);
        }
        free(out);
        free(err);
    }
    free(want);
}

/* ---- threads -------------------------------------------------------------- */

/* 2 x cores threads (at least 4) mixing sizes from 8 B to 256 KiB, realloc
 * and cross-thread frees through a queue. */
Test(robust, threads_mix_sizes_realloc_and_cross_thread_frees)
{
    LONG_TEST();
    setup();
    char *argv[] = { STRESS, "mix", "0", "4000", NULL };
    same_everywhere(argv, 1);
    remove_tmpdir();
}

/* Under the tracer, each worker thread's calls are in the trace exactly as
 * the program counted them, and main's frees at least: no record lost. */
Test(robust, the_trace_holds_every_call_of_every_thread)
{
    setup();
    char *argv[] = { STRESS, "mix", "0", "4000", "tids", NULL };
    char *out, *err;
    int st = run_under(argv, TRACED, 0, &out, &err);
    expect_clean(argv, TRACED, st, out, err, NULL);
    char **names;
    cr_assert_eq(trace_names(trcdir, &names), 1);
    dmm_trace_t t;
    load_checked(names[0], &t, 0, tmpdir);
    free_names(names, 1);
    int threads = 0;
    uint64_t total_malloc = 0;
    for (char *line = strstr(out, "\ntid "); line; line = strstr(line + 1, "\ntid ")) {
        int tid;
        unsigned long m, c, r, pm, aa, f;
        cr_assert_eq(sscanf(line, "\ntid %d malloc=%lu calloc=%lu realloc=%lu posix_memalign=%lu "
                                  "aligned_alloc=%lu free=%lu",
                            &tid, &m, &c, &r, &pm, &aa, &f),
                     7);
        uint32_t u = (uint32_t)tid;
        const struct {
            unsigned op;
            unsigned long n;
            const char *name;
        } want[] = { { DMM_TRC_MALLOC, m, "malloc" },
                     { DMM_TRC_CALLOC, c, "calloc" },
                     { DMM_TRC_REALLOC, r, "realloc" },
                     { DMM_TRC_POSIX_MEMALIGN, pm, "posix_memalign" },
                     { DMM_TRC_ALIGNED_ALLOC, aa, "aligned_alloc" },
                     { DMM_TRC_FREE, f, "free" },
                     { DMM_TRC_THREAD_EXIT, 1, "thread exit" } };
        for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
            uint64_t got = count_op(&t, want[k].op, u);
            cr_expect_eq(got, want[k].n, "thread %d: %llu %s records, %lu calls", tid,
                         (unsigned long long)got, want[k].name, want[k].n);
        }
        total_malloc += m;
        threads++;
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    cr_expect_eq(threads, cpus * 2 < 4 ? 4 : cpus * 2 > 64 ? 64 : cpus * 2);
    char *mainline = strstr(out, "\nmain ");
    cr_assert_not_null(mainline, "%s", out);
    int mtid;
    unsigned long mfree;
    cr_assert_eq(sscanf(mainline, "\nmain %d free=%lu", &mtid, &mfree), 2);
    cr_expect_geq(count_op(&t, DMM_TRC_FREE, (uint32_t)mtid), mfree);
    /* dmm stats counts the same calls */
    char so[300];
    snprintf(so, sizeof so, "%s/stdout", tmpdir);
    char *json = slurp(so, NULL);
    char *at = strstr(json, "\"malloc\": ");
    cr_assert_not_null(at, "%.300s", json);
    cr_expect_eq(strtoull(at + 10, NULL, 10), count_op(&t, DMM_TRC_MALLOC, 0));
    cr_expect_geq(strtoull(at + 10, NULL, 10), total_malloc);
    free(json);
    dmm_trace_free(&t);
    free(out);
    free(err);
    remove_tmpdir();
}

/* Threads allocate and exit without freeing (pthread_exit or return); main
 * checks and frees half of their blocks, the next round's threads the rest. */
Test(robust, threads_exit_holding_blocks)
{
    LONG_TEST();
    setup();
    char *argv[] = { STRESS, "held", "0", "300", "4", NULL };
    same_everywhere(argv, 1);
    remove_tmpdir();
}

/* ---- fork and exec -------------------------------------------------------- */

/* Fork while 2 x cores threads allocate; the child checks, frees and
 * reallocs inherited blocks, allocates every way, starts a thread. */
Test(robust, fork_from_threads_then_allocate_in_the_child)
{
    LONG_TEST();
    setup();
    char *argv[] = { STRESS, "forkmt", "0", "8", NULL };
    char *want, *err;
    int st = run_under(argv, -1, 0, &want, &err);
    expect_clean(argv, -1, st, want, err, NULL);
    free(err);
    for (int lib = 0; lib < NLIBS; lib++) {
        char *out;
        st = run_under(argv, lib, 0, &out, &err);
        expect_clean(argv, lib, st, out, err, want);
        free(out);
        free(err);
    }
    /* the tracer: one file per process; a child's file starts at its fork,
     * so its frees of the 40 inherited blocks are of blocks it never saw */
    char **names;
    int n = trace_names(trcdir, &names);
    cr_expect_eq(n, 9, "the parent and 8 children: %d files", n);
    int children = 0;
    for (int i = 0; i < n; i++) {
        dmm_trace_t t;
        load_checked(names[i], &t, 40, tmpdir);
        if (t.flags & DMM_TRC_F_FORKED) {
            children++;
            cr_expect_eq(count_op(&t, DMM_TRC_THREAD_EXIT, 0), 1, "%s: the child's thread",
                         names[i]);
            cr_expect_gt(count_op(&t, DMM_TRC_FREE, 0), 200, "%s", names[i]);
        } else {
            cr_expect_eq(count_op(&t, DMM_TRC_FORK, 0), 8, "%s", names[i]);
        }
        dmm_trace_free(&t);
    }
    cr_expect_eq(children, 8);
    free_names(names, n);
    free(want);
    remove_tmpdir();
}

/* Exec while two threads allocate, four times over: under the tracer every
 * program's trace is whole, the last program's too. */
Test(robust, exec_from_threads_while_tracing)
{
    setup();
    char *argv[] = { STRESS, "execmt", "4", "200", NULL };
    const char *want = "stress execmt 4\nstress execmt 3\nstress execmt 2\nstress execmt 1\n"
                       "stress after 200\n";
    for (int lib = -1; lib < NLIBS; lib++) {
        char *out, *err;
        int st = run_under(argv, lib, 0, &out, &err);
        expect_clean(argv, lib, st, out, err, want);
        free(out);
        free(err);
    }
    char **names;
    int n = trace_names(trcdir, &names);
    cr_assert_eq(n, 5, "four programs that exec and the last one: %d files", n);
    int before = 0, after = 0;
    for (int i = 0; i < n; i++) {
        dmm_trace_t t;
        load_checked(names[i], &t, 0, tmpdir);
        uint64_t m555 = 0, m777 = 0;
        /* main's own calls: a busy thread draws sizes at random, 555 among
         * them now and then */
        for (size_t k = 0; k < t.nrecs; k++) {
            int main_thread = t.recs[k].tid == t.pid;
            m555 += t.recs[k].op == DMM_TRC_MALLOC && t.recs[k].size == 555 && main_thread;
            m777 += t.recs[k].op == DMM_TRC_MALLOC && t.recs[k].size == 777 && main_thread;
        }
        if (count_op(&t, DMM_TRC_EXEC, 0)) {
            before++;
            cr_expect_eq(count_op(&t, DMM_TRC_EXEC, 0), 1, "%s", names[i]);
            cr_expect_eq(m555, 200, "%s: main's calls before its exec", names[i]);
            /* the two busy threads were recorded too */
            uint32_t other = 0;
            for (size_t k = 0; k < t.nrecs && !other; k++)
                if (t.recs[k].tid != t.pid && t.recs[k].op == DMM_TRC_MALLOC)
                    other = t.recs[k].tid;
            cr_expect_neq(other, 0, "%s: nothing from the busy threads", names[i]);
        } else {
            after++;
            cr_expect_eq(m777, 200, "%s: the last program's calls", names[i]);
        }
        dmm_trace_free(&t);
    }
    cr_expect_eq(before, 4);
    cr_expect_eq(after, 1);
    free_names(names, n);
    remove_tmpdir();
}

/* ---- signals -------------------------------------------------------------- */

static unsigned long signals_handled(const char *err)
{
    const char *at = strstr(err, "signals handled: ");
    return at ? strtoul(at + 17, NULL, 10) : 0;
}

/* Handlers that malloc and free while main allocates heavily: from a
 * 20 kHz SIGALRM on a single thread, and from a second thread's
 * pthread_kill.  The tracer must not deadlock (its recursion guard sends a
 * handler's calls made inside the tracer straight to glibc), and its trace
 * must read back whole.  (The handler's sizes are ones glibc serves from its
 * per-thread cache: glibc's own malloc is not reentrant either.) */
Test(robust, the_tracer_survives_handlers_that_allocate)
{
    LONG_TEST();
    setup();
    const char *hows[] = { "alarm-alloc", "kill-alloc" };
    for (int h = 0; h < 2; h++) {
        char *argv[] = { STRESS, "signal", (char *)hows[h], "20000", NULL };
        char *want, *out, *err;
        int st = run_under(argv, -1, 0, &want, &err);
        expect_clean(argv, -1, st, want, err, NULL);
        free(err);
        st = run_under(argv, TRACED, 0, &out, &err);
        expect_clean(argv, TRACED, st, out, err, want);
        cr_expect_geq(signals_handled(err), 200, "%s: %s", hows[h], err);
        cr_expect_eq(check_all_traces(), 1);
        free(want);
        free(out);
        free(err);
    }
    remove_tmpdir();
}

/* Handlers that do not allocate interrupt allocation on every library. */
Test(robust, handlers_interrupt_allocation_on_every_library)
{
    LONG_TEST();
    setup();
    const char *hows[] = { "alarm-quiet", "kill-quiet" };
    for (int h = 0; h < 2; h++) {
        char *argv[] = { STRESS, "signal", (char *)hows[h], "12000", NULL };
        char *want, *err;
        int st = run_under(argv, -1, 0, &want, &err);
        expect_clean(argv, -1, st, want, err, NULL);
        free(err);
        for (int lib = 0; lib < NLIBS; lib++) {
            char *out;
            st = run_under(argv, lib, 0, &out, &err);
            expect_clean(argv, lib, st, out, err, want);
            cr_expect_geq(signals_handled(err), 200, "%s under %s: %s", hows[h], lib_name[lib],
                          err);
            if (lib == TRACED)
                cr_expect_eq(check_all_traces(), 1);
            free(out);
            free(err);
        }
        free(want);
    }
    remove_tmpdir();
}

/* ---- out of memory -------------------------------------------------------- */

/* Under a 256 MiB RLIMIT_AS: malloc, calloc, realloc, memalign,
 * aligned_alloc, valloc fail with NULL + ENOMEM and posix_memalign with
 * ENOMEM, nothing crashes, and once memory is freed the size freed is
 * served again.  Other sizes, alignments and a thread's stack too, except
 * on kng and exa: Kingsley's power-of-two lists and exact's per-size lists
 * keep what was freed for their own size, by design. */
Test(robust, out_of_memory_gives_enomem_and_recovers)
{
    setup();
    const unsigned long long limit = 256ull << 20;
    char *any[] = { STRESS, "oom", "any", NULL };
    char *same[] = { STRESS, "oom", "same", NULL };
    for (int lib = -1; lib < NLIBS; lib++) {
        char **argv = lib == KNG || lib == EXA ? same : any;
        char *out, *err;
        int st = run_under(argv, lib, limit, &out, &err);
        char want[64];
        snprintf(want, sizeof want, "stress oom %s bad=0\n", argv[2]);
        expect_clean(argv, lib, st, out, err, want);
        free(out);
        free(err);
    }
    cr_expect_eq(check_all_traces(), 1);
    remove_tmpdir();
}

/* ---- secure execution ----------------------------------------------------- */

/* Build the tracee linked to `lib`, found at run time through an absolute
 * RUNPATH (the library's SONAME is its file name): in a setgid program the
 * dynamic loader ignores LD_PRELOAD paths with a slash, but it loads a
 * DT_NEEDED library from an absolute RUNPATH. */
static void build_linked(const char *lib, const char *exe)
{
    char rpath[400];
    snprintf(rpath, sizeof rpath, "-Wl,-rpath,%.*s", (int)(strrchr(lib, '/') - lib), lib);
    char *argv[] = { "/usr/bin/gcc", "-O1", "-o", (char *)exe, TRACEE_C, (char *)lib, rpath,
                     "-lpthread", NULL };
    char fe[300];
    snprintf(fe, sizeof fe, "%s/gcc.err", tmpdir);
    int st = run(argv, NULL, tmpdir, NULL, NULL, fe);
    char *e = slurp(fe, NULL);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "gcc: %s", e);
    free(e);
}

/* A copy of exe that is setgid to group nogroup: a root that runs it keeps
 * its uid but the kernel sets AT_SECURE, as for any setuid program. */
static void make_setgid(const char *exe, const char *copy, gid_t gid)
{
    char *argv[] = { "/bin/cp", (char *)exe, (char *)copy, NULL };
    cr_assert_eq(run(argv, NULL, tmpdir, NULL, NULL, NULL), 0);
    cr_assert_eq(chown(copy, 0, gid), 0, "chown: %s", strerror(errno));
    cr_assert_eq(chmod(copy, 02755), 0);
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* The options (DMM_TRACE_FILE, DMM_TRACE_STACK, DMM_CONFIG, DMM_STATS) are
 * read with secure_getenv: a setgid program runs with the defaults. */
Test(robust, options_are_ignored_in_secure_programs)
{
    if (geteuid() != 0)
        cr_skip_test("needs root, to make a setgid copy of a test program");
    if (access("/usr/bin/gcc", X_OK) != 0)
        cr_skip_test("needs gcc, to link the tracee to the libraries");
    struct group *g = getgrnam("nogroup");
    gid_t gid = g ? g->gr_gid : 65534;
    setup();
    char work[300], exe[320], sg[320], chosen[340], tf[360], out[320], err[320];
    snprintf(work, sizeof work, "%s/work", tmpdir);
    cr_assert_eq(mkdir(work, 0755), 0);
    snprintf(out, sizeof out, "%s/out", tmpdir);
    snprintf(err, sizeof err, "%s/err", tmpdir);

    /* the tracer: DMM_TRACE_FILE and DMM_TRACE_STACK are obeyed by the
     * program as built and ignored by its setgid copy, which writes the
     * default ./<program>.<pid>.trc, without call stacks */
    snprintf(exe, sizeof exe, "%s/traced", tmpdir);
    snprintf(sg, sizeof sg, "%s/traced-sg", tmpdir);
    build_linked(TRACER, exe);
    make_setgid(exe, sg, gid);
    snprintf(chosen, sizeof chosen, "%s/chosen.trc", tmpdir);
    snprintf(tf, sizeof tf, "DMM_TRACE_FILE=%s", chosen);
    const char *tenv[] = { tf, "DMM_TRACE_STACK=4", NULL };
    char *argv[] = { exe, "secure", "50", NULL };
    cr_assert_eq(run_limited(argv, tenv, work, NULL, out, err, LIMIT_S, 0), 0);
    char *o = slurp(out, NULL);
    cr_expect_not_null(strstr(o, "tracee secure 0"), "%s", o);
    free(o);
    cr_assert(file_exists(chosen), "the program as built ignored DMM_TRACE_FILE");
    dmm_trace_t t;
    load_checked(chosen, &t, 0, tmpdir);
    cr_expect_eq(t.stack_depth, 4);
    dmm_trace_free(&t);
    unlink(chosen);
    char *sargv[] = { sg, "secure", "50", NULL };
    cr_assert_eq(run_limited(sargv, tenv, work, NULL, out, err, LIMIT_S, 0), 0);
    o = slurp(out, NULL);
    cr_assert_not_null(strstr(o, "tracee secure 1"), "no AT_SECURE in the setgid copy: %s", o);
    free(o);
    cr_expect_not(file_exists(chosen), "a setgid program wrote where DMM_TRACE_FILE said");
    DIR *d = opendir(work);
    char found[600] = "";
    struct dirent *e;
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, "traced-sg.", 10) && strstr(e->d_name, ".trc"))
            snprintf(found, sizeof found, "%s/%s", work, e->d_name);
    closedir(d);
    cr_assert(found[0], "the setgid program wrote no trace under the default name");
    load_checked(found, &t, 0, tmpdir);
    cr_expect_eq(t.stack_depth, 0, "DMM_TRACE_STACK was obeyed in a setgid program");
    cr_expect_eq(count_op(&t, DMM_TRC_REALLOC, 0), 50);
    dmm_trace_free(&t);

    /* libdmm.so and libdmm_evolved.so: DMM_STATS and DMM_CONFIG ignored */
    const char *libs[] = { LIBDMM, EVOLVED };
    for (int l = 0; l < 2; l++) {
        snprintf(exe, sizeof exe, "%s/linked%d", tmpdir, l);
        snprintf(sg, sizeof sg, "%s/linked%d-sg", tmpdir, l);
        build_linked(libs[l], exe);
        make_setgid(exe, sg, gid);
        const char *env[] = { "DMM_STATS=1", "DMM_CONFIG=/nonexistent.dmm", NULL };
        char *a1[] = { exe, "secure", "50", NULL };
        cr_assert_eq(run_limited(a1, env, work, NULL, out, err, LIMIT_S, 0), 0);
        char *e1 = slurp(err, NULL);
        cr_expect_not_null(strstr(e1, "DMM_CONFIG"), "%s as built: %s", libs[l], e1);
        if (l == 0) {   /* a bad DMM_CONFIG leaves libdmm.so on glibc: no stats */
            const char *env2[] = { "DMM_STATS=1", NULL };
            cr_assert_eq(run_limited(a1, env2, work, NULL, out, err, LIMIT_S, 0), 0);
            free(e1);
            e1 = slurp(err, NULL);
        }
        cr_expect_not_null(strstr(e1, "footprint"), "%s as built: no statistics: %s", libs[l], e1);
        free(e1);
        char *a2[] = { sg, "secure", "50", NULL };
        cr_assert_eq(run_limited(a2, env, work, NULL, out, err, LIMIT_S, 0), 0);
        o = slurp(out, NULL);
        cr_assert_not_null(strstr(o, "tracee secure 1"), "%s", o);
        free(o);
        char *e2 = slurp(err, NULL);
        cr_expect_null(strstr(e2, "dmm:"), "%s in a setgid program obeyed DMM_*: %s", libs[l], e2);
        free(e2);
    }
    remove_tmpdir();
}
