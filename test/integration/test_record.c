/* test_record.c - `dmm record`: a program and its process tree traced into
 * one directory, the program's exit status passed on, a SIGTERM passed on
 * to it, nothing lost when it is killed, a summary of each
 * process (one line each), forks and execs followed or not, an orphaned grandchild waited
 * for, bad input refused with exit status 2 and nothing left behind; and
 * the directory read by the commands that take a trace. */
#include <criterion/criterion.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test/lib/progrun.h"
#include "tracer/format/load.h"
#include "tracer/record/record.h"
#include "tracer/stats/stats.h"

#define DMM    DMM_BUILD_DIR "/dmm"
#define TRACEE DMM_BUILD_DIR "/test/progs/tracee"

static char out_path[300], err_path[300];

/* dmm record with args (NULL-terminated) in the scratch directory: its
 * exit status, or -1 when it did not exit. */
static int record(const char *const *args)
{
    char *argv[32] = { DMM, "record" };
    int k = 2;
    for (int i = 0; args[i]; i++)
        argv[k++] = (char *)args[i];
    argv[k] = NULL;
    snprintf(out_path, sizeof out_path, "%s/out", tmpdir);
    snprintf(err_path, sizeof err_path, "%s/err", tmpdir);
    int st = run_limited(argv, NULL, tmpdir, NULL, out_path, err_path, 60, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *slurp_text(const char *path)
{
    uint8_t *buf;
    size_t len;
    dmm_err_t err;
    cr_assert_eq(dmm_read_file(path, &buf, &len, &err), 0, "%s", err.msg);
    char *s = realloc(buf, len + 1);
    s[len] = 0;
    return s;
}

static void expect_err(const char *want)
{
    char *s = slurp_text(err_path);
    cr_assert(strstr(s, want) != NULL, "stderr lacks '%s':\n%s", want, s);
    free(s);
}

/* The .trc files of DIR (in the scratch directory), each read whole;
 * ops, when not NULL, counts each op's records of all of them. */
static int traces_counted(const char *dir, size_t ops[DMM_TRC_OP_MAX])
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", tmpdir, dir);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".trc"))
            continue;
        char f[900];
        snprintf(f, sizeof f, "%s/%s", path, e->d_name);
        dmm_trace_t t;
        dmm_err_t err;
        cr_assert_eq(dmm_trace_load(f, &t, &err), 0, "%s", err.msg);
        cr_assert_not(t.truncated, "%s: %s", f, t.note);
        for (size_t i = 0; ops && i < t.nrecs; i++)
            if (t.recs[i].op < DMM_TRC_OP_MAX)
                ops[t.recs[i].op]++;
        dmm_trace_free(&t);
        n++;
    }
    closedir(d);
    return n;
}

static int traces(const char *dir)
{
    return traces_counted(dir, NULL);
}

Test(record, traces_every_process_and_says_which_allocated_most)
{
    make_tmpdir();
    const char *a[] = { "-o", "rec", "--", TRACEE, "fork", "5", NULL };
    cr_assert_eq(record(a), 0);
    cr_assert_eq(traces("rec"), 2, "the parent and its child");
    expect_err("2 processes traced, in rec/");
    expect_err("<- allocated most");
    expect_err("traces compressed now that the program has ended (zstd 3)");
    char *out = slurp_text(out_path);
    cr_assert(strstr(out, "tracee checksum") != NULL, "the program's stdout is its own: %s", out);
    free(out);
    /* --pick and the commands that read a trace agree on the parent (the
     * pattern 10 times, against the child's 5) */
    const char *p[] = { "--pick", "rec", NULL };
    cr_assert_eq(record(p), 0);
    out = slurp_text(out_path);
    cr_assert(strstr(out, "rec/tracee.") != NULL, "%s", out);
    free(out);
    char *argv[] = { DMM, "stats", "--json", "rec", NULL };
    int st = run(argv, NULL, tmpdir, NULL, out_path, err_path);
    cr_assert_eq(WEXITSTATUS(st), 0);
    expect_err("holds 2 traces; reading tracee.");
    out = slurp_text(out_path);
    cr_assert(strstr(out, "\"reallocs\": 10") || strstr(out, "\"reallocs\":10"),
              "the parent's 10 reallocs: %.400s", out);
    free(out);
    remove_tmpdir();
}

/* make evolve TRACE=DIR reads the process that allocated most, and its
 * report runs the command dmm record ran, whose processes all get the
 * library: `dmm record --root DIR` prints that command as shell words (the
 * first process whose parent was not traced), here a shell that started the
 * program that allocated most, and scripts/evolve_report.py --recorded
 * writes it into record.json. */
Test(record, make_evolve_runs_the_command_that_was_recorded)
{
    make_tmpdir();
    char script[200];
    snprintf(script, sizeof script, "%s fork 200; exit 0", TRACEE);
    const char *a[] = { "-o", "rec", "--", "sh", "-c", script, NULL };
    cr_assert_eq(record(a), 0);
    cr_assert_geq(traces("rec"), 3, "the shell, the program and its child");
    const char *p[] = { "--pick", "rec", NULL };
    cr_assert_eq(record(p), 0);
    char *out = slurp_text(out_path);
    cr_assert(strstr(out, "rec/tracee.") != NULL, "the program, not the shell: %s", out);
    free(out);
    const char *r[] = { "--root", "rec", NULL };
    cr_assert_eq(record(r), 0);
    out = slurp_text(out_path);
    char want[400];
    snprintf(want, sizeof want, "sh -c '%s'\n", script);
    cr_expect_str_eq(out, want, "the shell's command, as shell words");
    free(out);
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && %s record --root rec | python3 %s/scripts/evolve_report.py --recorded rec "
             "> '%s'", tmpdir, DMM, DMM_SRC_DIR, out_path);
    cr_assert_eq(system(cmd), 0);
    out = slurp_text(out_path);
    snprintf(want, sizeof want, "{\"dir\": \"rec\", \"command\": \"sh -c '%s'\"}\n", script);
    cr_expect_str_eq(out, want);
    free(out);
    /* without the shell's trace, the program is the first process */
    snprintf(cmd, sizeof cmd, "cd '%s' && rm rec/sh.*.trc", tmpdir);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(record(r), 0);
    out = slurp_text(out_path);
    snprintf(want, sizeof want, "%s fork 200\n", TRACEE);
    cr_expect_str_eq(out, want);
    free(out);
    /* nothing on its standard input: no record.json (exit 1) */
    snprintf(cmd, sizeof cmd,
             "python3 %s/scripts/evolve_report.py --recorded x </dev/null >/dev/null",
             DMM_SRC_DIR);
    int st = system(cmd);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 1, "status %d", st);
    remove_tmpdir();
}

/* A process that execs leaves a trace per image, under one pid (tracee's
 * own: tracee.PID.trc, then tracee.PID.1.trc, which sorts first): the
 * command recorded is the first image's, the one that started first. */
Test(record, the_root_of_a_process_that_execs_is_its_first_image)
{
    make_tmpdir();
    const char *a[] = { "-o", "rec", "--", TRACEE, "exec", "5", NULL };
    cr_assert_eq(record(a), 0);
    cr_assert_eq(traces("rec"), 2, "the image before exec and the one after");
    const char *r[] = { "--root", "rec", NULL };
    cr_assert_eq(record(r), 0);
    char *out = slurp_text(out_path);
    char want[400];
    snprintf(want, sizeof want, "%s exec 5\n", TRACEE);
    cr_expect_str_eq(out, want);
    free(out);
    remove_tmpdir();
}

/* A command that no one line of shell words runs as it ran (a newline in an
 * argument): `dmm record --root` says so and exits 1, rather than print a
 * line that would run something else. */
Test(record, a_command_no_line_runs_is_not_given_as_one)
{
    make_tmpdir();
    char script[200];
    snprintf(script, sizeof script, "%s fork 2\nexit 0", TRACEE);
    const char *a[] = { "-o", "rec", "--", "sh", "-c", script, NULL };
    cr_assert_eq(record(a), 0);
    const char *r[] = { "--root", "rec", NULL };
    cr_assert_eq(record(r), 1);
    expect_err("is not one a shell would run as it ran");
    expect_err("fork 2?exit 0");
    char *out = slurp_text(out_path);
    cr_expect_str_eq(out, "");
    free(out);
    const char *n[] = { "--root", "nowhere", NULL };
    cr_assert_eq(record(n), 2);
    expect_err("nowhere");
    remove_tmpdir();
}

/* The summary's rows in text: lines that start with a pid (spaces, then a
 * digit). */
static int rows(const char *text)
{
    int n = 0;
    for (const char *l = text; *l;) {
        const char *d = l + strspn(l, " ");
        n += d > l && *d >= '0' && *d <= '9';
        const char *end = strchr(l, '\n');
        if (!end)
            break;
        l = end + 1;
    }
    return n;
}

/* A program that starts many processes (a wrapper script's way): the
 * summary shows the 10 that allocated most and one line for the rest, the
 * one that allocated most among them; --list shows every one. */
Test(record, a_long_summary_shows_the_processes_that_allocated_most)
{
    make_tmpdir();
    char script[900];
    snprintf(script, sizeof script,
             "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14; do %s main 2 >/dev/null; done; "
             "%s bigcalloc 16 >/dev/null; true", TRACEE, TRACEE);
    const char *a[] = { "-o", "rec", "--", "/bin/sh", "-c", script, NULL };
    cr_assert_eq(record(a), 0);
    int n = traces("rec");
    cr_assert_geq(n, 15, "the shell and 15 tracees: %d", n);
    char *e = slurp_text(err_path);
    cr_expect_eq(rows(e), 10, "%s", e);
    char more[64];
    snprintf(more, sizeof more, "... and %d more processes (", n - 10);
    cr_expect(strstr(e, more) != NULL, "'%s' in:\n%s", more, e);
    cr_expect(strstr(e, "dmm record --list rec shows every one") != NULL, "%s", e);
    cr_expect(strstr(e, "bigcalloc 16   <- allocated most") != NULL, "%s", e);
    free(e);
    const char *l[] = { "--list", "rec", NULL };
    cr_assert_eq(record(l), 0);
    char *o = slurp_text(out_path);
    cr_expect_eq(rows(o), n, "%s", o);
    cr_expect_null(strstr(o, "more process"), "%s", o);
    free(o);
    const char *bad[] = { "--list", "nowhere", NULL };
    cr_expect_eq(record(bad), 2);
    expect_err("nowhere");
    remove_tmpdir();
}

/* "Allocated most" is bytes, then calls: a process that asks for 32 MiB in
 * a few callocs is the one picked over one that makes 1500 small calls
 * (a wrapper's shell against the Python it starts, in small). */
Test(record, the_process_that_allocated_most_is_the_one_that_asked_for_most_bytes)
{
    make_tmpdir();
    char script[900];
    snprintf(script, sizeof script, "%s bigcalloc 16 >/dev/null; %s main 300 >/dev/null; true",
             TRACEE, TRACEE);
    const char *a[] = { "-o", "rec", "--", "/bin/sh", "-c", script, NULL };
    cr_assert_eq(record(a), 0);
    char dir[600];
    snprintf(dir, sizeof dir, "%s/rec", tmpdir);
    dmm_record_proc_t *v;
    size_t n;
    long most;
    dmm_err_t err;
    cr_assert_eq(dmm_record_scan(dir, &v, &n, &most, &err), 0, "%s", err.msg);
    cr_assert_geq(n, 3, "the shell and both tracees");
    cr_assert_geq(most, 0);
    cr_expect(strstr(v[most].command, "bigcalloc") != NULL, "picked: %s", v[most].command);
    cr_expect_geq(v[most].alloc_bytes, (uint64_t)32 << 20);
    for (size_t i = 0; i < n; i++) {
        if (strstr(v[i].command, "main 300"))
            cr_expect_gt(v[i].alloc_calls, v[most].alloc_calls, "more calls, fewer bytes");
        /* each process's peak RSS, where its trace's clock syncs carry it
         * (the TSC's): at least the 16 pages bigcalloc writes */
        char f[900];
        snprintf(f, sizeof f, "%s/%s", dir, v[i].file);
        uint8_t *h;
        size_t len;
        cr_assert_eq(dmm_read_file(f, &h, &len, &err), 0, "%s", err.msg);
        uint32_t clock = len >= 28 ? (uint32_t)h[24] | (uint32_t)h[25] << 8 |
                                         (uint32_t)h[26] << 16 | (uint32_t)h[27] << 24 : 0;
        free(h);
        if (clock == DMM_TRC_CLOCK_TSC)
            cr_expect_gt(v[i].peak_rss, (uint64_t)16 << 12, "%s: peak RSS %llu", v[i].command,
                         (unsigned long long)v[i].peak_rss);
    }
    expect_err("peak RSS");
    char picked[300];
    snprintf(picked, sizeof picked, "rec/%s", v[most].file);
    free(v);
    /* --pick (what dmm stats DIR and make evolve TRACE=DIR read) names that one */
    const char *p[] = { "--pick", "rec", NULL };
    cr_assert_eq(record(p), 0);
    char *out = slurp_text(out_path);
    cr_expect(strstr(out, "rec/tracee.") != NULL, "%s", out);
    cr_expect(strstr(out, picked) != NULL, "%s, not %s", out, picked);
    free(out);
    remove_tmpdir();
}

/* The summary (dmm_record_scan: each trace read a call at a time, in the
 * loader's order, holding one block per thread) counts what dmm stats
 * counts, exactly: records, allocating calls, the bytes they asked for and
 * the peak of live bytes, on threads that free each other's blocks and on a fork. */
Test(record, the_summary_counts_what_dmm_stats_counts)
{
    make_tmpdir();
    const char *a[] = { "-o", "rec", "--", TRACEE, "handoff", "30000", NULL };
    cr_assert_eq(record(a), 0);
    const char *b[] = { "-o", "rec2", "--", TRACEE, "fork", "300", NULL };
    cr_assert_eq(record(b), 0);
    const char *dirs[] = { "rec", "rec2" };
    for (int d = 0; d < 2; d++) {
        char dir[600];
        snprintf(dir, sizeof dir, "%s/%s", tmpdir, dirs[d]);
        dmm_record_proc_t *v;
        size_t n;
        long most;
        dmm_err_t err;
        cr_assert_eq(dmm_record_scan(dir, &v, &n, &most, &err), 0, "%s", err.msg);
        cr_assert_eq(n, (size_t)(d + 1));
        for (size_t i = 0; i < n; i++) {
            char f[900];
            snprintf(f, sizeof f, "%s/%s", dir, v[i].file);
            dmm_trace_t t;
            dmm_stats_t st;
            cr_assert_not(v[i].unreadable, "%s", v[i].err);
            cr_assert_eq(dmm_trace_load(f, &t, &err), 0, "%s", err.msg);
            cr_assert_eq(dmm_stats_compute(&t, &st, &err), 0, "%s", err.msg);
            cr_expect_eq(v[i].pid, t.pid);
            cr_expect_eq(v[i].records, t.nrecs, "%s", f);
            cr_expect_eq(v[i].alloc_calls, st.alloc_calls, "%s", f);
            cr_expect_eq(v[i].alloc_bytes, st.total_bytes, "%s", f);
            cr_expect_geq(v[i].alloc_bytes, v[i].peak_live, "%s", f);
            cr_expect_eq(v[i].peak_live, st.max_in_use, "%s", f);
            cr_expect_gt(v[i].peak_live, 0);
            if (d == 0)
                cr_expect_geq(v[i].alloc_calls, 60000);
            dmm_stats_free(&st);
            dmm_trace_free(&t);
        }
        free(v);
    }
    remove_tmpdir();
}

Test(record, passes_the_program_status_on)
{
    make_tmpdir();
    const char *a[] = { "-o", "r1", "--", "/bin/sh", "-c", "exit 3", NULL };
    cr_assert_eq(record(a), 3);
    const char *b[] = { "-o", "r2", "--", "/bin/sh", "-c", "kill -TERM $$", NULL };
    cr_assert_eq(record(b), 128 + SIGTERM);
    expect_err("killed by signal 15");
    /* a script of several lines is one line of the summary, its newline
     * shown as '?' */
    const char *c[] = { "-o", "r3", "--", "/bin/sh", "-c", "true\nexit 4", NULL };
    cr_assert_eq(record(c), 4);
    expect_err("/bin/sh -c 'true?exit 4'");
    remove_tmpdir();
}

/* dmm record -o rec -- /bin/sh -c script, started in the scratch
 * directory and left running (its stdout and stderr in out_path and
 * err_path), once the script has made the file `made` there: its pid. */
static pid_t start_record(const char *script, const char *made)
{
    snprintf(out_path, sizeof out_path, "%s/out", tmpdir);
    snprintf(err_path, sizeof err_path, "%s/err", tmpdir);
    char path[320];
    snprintf(path, sizeof path, "%s/%s", tmpdir, made);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        if (chdir(tmpdir) != 0 || !freopen(out_path, "w", stdout) ||
            !freopen(err_path, "w", stderr))
            _exit(126);
        execl(DMM, DMM, "record", "-o", "rec", "--", "/bin/sh", "-c", script, (char *)NULL);
        _exit(127);
    }
    struct stat sb;
    for (int i = 0; i < 1000 && stat(path, &sb) != 0; i++)
        usleep(10000);
    cr_assert_eq(stat(path, &sb), 0, "the program did not start in 10 s");
    return pid;
}

/* A SIGTERM sent to dmm record alone (kill PID, a job runner stopping it)
 * goes on to the program, and dmm record still waits for it, summarises
 * and exits with its status. */
Test(record, passes_a_sigterm_on_to_the_program)
{
    make_tmpdir();
    pid_t pid = start_record("echo > started; exec sleep 30", "started");
    cr_assert_eq(kill(pid, SIGTERM), 0);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 128 + SIGTERM,
              "dmm record: status %#x, not an exit with 143", st);
    expect_err("killed by signal 15");
    expect_err(" traced, in rec/");   /* the summary */
    remove_tmpdir();
}

/* What the program left running when it ended (a background job, which
 * ignores SIGINT as a non-interactive shell's do; a server a script
 * started) is waited for: a second on, dmm record says for whom, and a
 * Ctrl-C (SIGINT to dmm record) then stops the waiting.  The summary marks
 * the job still running, its trace is left as it grows (not compressed
 * under it), and dmm record exits with the program's status. */
Test(record, a_ctrl_c_stops_waiting_for_what_the_program_left_running)
{
    make_tmpdir();
    pid_t pid = start_record("sleep 30 & echo $! > bg.new; mv bg.new bg; exit 3", "bg");
    char bg[320];
    snprintf(bg, sizeof bg, "%s/bg", tmpdir);
    char *s = slurp_text(bg);
    pid_t job = (pid_t)atoi(s);
    free(s);
    cr_assert_gt(job, 0);
    int said = 0;
    for (int i = 0; i < 1000 && !said; i++) {
        usleep(10000);
        s = slurp_text(err_path);
        said = strstr(s, "dmm record: /bin/sh has ended; waiting for what it left running "
                         "(Ctrl-C stops waiting): ") != NULL;
        free(s);
    }
    cr_assert(said, "no word of what dmm record waits for in 10 s");
    cr_assert_eq(kill(pid, SIGINT), 0);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    int alive = kill(job, 0) == 0;
    kill(job, SIGKILL);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 3, "dmm record: status %#x, not 3", st);
    cr_expect(alive, "the job did not outlive dmm record");
    char want[80];
    snprintf(want, sizeof want, "still running, their traces written on as they go: %d (sleep)",
             (int)job);
    expect_err(want);
    expect_err("sleep 30   <- still running");
    expect_err(" traced, in rec/");   /* the summary */
    remove_tmpdir();
}

/* A program killed (as Ctrl-C or kill(1) would) runs nothing more of its
 * own: what its buffers held is written by the tracer's writer process,
 * which dmm record starts by default, with the program: 20 rounds fill no
 * buffer (Python stopped at startup), 30 000 several. */
Test(record, a_killed_program_loses_no_record)
{
    static const char *const rounds[] = { "30000", "20" };
    for (size_t i = 0; i < sizeof rounds / sizeof rounds[0]; i++) {
        make_tmpdir();
        const char *a[] = { "-o", "rec", "--", TRACEE, "killed", rounds[i], NULL };
        cr_assert_eq(record(a), 128 + SIGKILL);
        expect_err("killed by signal 9");
        size_t ops[DMM_TRC_OP_MAX] = { 0 };
        cr_assert_eq(traces_counted("rec", ops), 1);
        cr_expect_eq(ops[DMM_TRC_REALLOC], (size_t)atoi(rounds[i]), "%s rounds", rounds[i]);
        cr_expect_eq(ops[DMM_TRC_CALLOC], (size_t)atoi(rounds[i]), "%s rounds", rounds[i]);
        remove_tmpdir();
    }
}

Test(record, follows_forks_and_execs_unless_told_not_to)
{
    make_tmpdir();
    const char *a[] = { "-o", "f1", "--follow-fork=no", "--", TRACEE, "fork", "5", NULL };
    cr_assert_eq(record(a), 0);
    cr_assert_eq(traces("f1"), 1, "the child is not traced");
    const char *b[] = { "-o", "e1", "--", TRACEE, "exec", "3", NULL };
    cr_assert_eq(record(b), 0);
    cr_assert_eq(traces("e1"), 2, "the program and what it execs");
    const char *c[] = { "-o", "e2", "--follow-exec=no", "--compress", "none", "--", TRACEE,
                        "exec", "3", NULL };
    cr_assert_eq(record(c), 0);
    cr_assert_eq(traces("e2"), 1, "what the program execs is not traced");
    char *e = slurp_text(err_path);
    cr_assert_null(strstr(e, "compressed"), "--compress none: %s", e);
    free(e);
    remove_tmpdir();
}

/* A grandchild whose parent has exited (a daemon's way) is waited for: its
 * trace is whole when dmm record returns. */
Test(record, waits_for_an_orphaned_grandchild)
{
    make_tmpdir();
    const char *a[] = { "-o", "g", "--", "/bin/sh", "-c",
                        "(sleep 0.3; exec " TRACEE " main 40 >/dev/null) & exit 0", NULL };
    cr_assert_eq(record(a), 0);
    char path[600];
    snprintf(path, sizeof path, "%s/g", tmpdir);
    DIR *d = opendir(path);
    cr_assert_not_null(d);
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        found |= !strncmp(e->d_name, "tracee.", 7);
    closedir(d);
    cr_assert(found, "the grandchild's trace is there");
    traces("g");   /* and every trace reads whole */
    remove_tmpdir();
}

Test(record, refuses_bad_input_and_leaves_nothing)
{
    make_tmpdir();
    const char *none[] = { NULL };
    cr_assert_eq(record(none), 2);
    expect_err("no command to run");
    const char *missing[] = { "-o", "m", "--", "no-such-program-dmm", NULL };
    cr_assert_eq(record(missing), 2);
    expect_err("no-such-program-dmm: command not found");
    struct stat st;
    char path[600];
    snprintf(path, sizeof path, "%s/m", tmpdir);
    cr_assert_neq(stat(path, &st), 0, "no directory left behind");
    const char *unwritable[] = { "-o", "/proc/dmm-no/dir", "--", TRACEE, "main", "1", NULL };
    cr_assert_eq(record(unwritable), 2);
    expect_err("/proc/dmm-no/dir: cannot create the directory");
    const char *ok[] = { "-o", "full", "--", TRACEE, "main", "1", NULL };
    cr_assert_eq(record(ok), 0);
    cr_assert_eq(record(ok), 2, "a directory that holds traces already");
    expect_err("holds traces already");
    cr_assert_eq(traces("full"), 1, "and it is left as it was");
    const char *bad[] = { "--follow-fork=maybe", "--", TRACEE, "main", "1", NULL };
    cr_assert_eq(record(bad), 1);
    remove_tmpdir();
}
