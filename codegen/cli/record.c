/* record.c - `dmm record`: one command to trace a program and every process
 * it starts (tracer/record/).
 *
 *   dmm record [-o DIR] [--stacks N] [--compress after|zstd|none] [--follow-exec=no]
 *              [--follow-fork=no] -- PROGRAM [ARGS]
 *   dmm record --pick DIR        the trace of DIR that dmm stats would read
 *   dmm record --list DIR        what each process of DIR did
 *   dmm record --root DIR        the command that was recorded into DIR
 */
#include "codegen/cli/cli.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen/cli/util.h"
#include "tracer/format/trc_write.h"
#include "tracer/record/record.h"

/* The rows a summary shows at most; past that, the processes that
 * allocated most (a wrapper script starts dozens of processes that
 * allocate little: a pyenv shim, 79), and one line for the rest. */
#define SUMMARY_ROWS 12
#define SUMMARY_SHOWN 10

static void usage(FILE *f)
{
    fprintf(f, "usage: dmm record [OPTIONS] -- PROGRAM [ARGS...]\n"
               "  Run PROGRAM under libdmmtrace.so and wait for every process it starts;\n"
               "  each process's trace goes to DIR/<program>.<pid>.trc.  Prints what each\n"
               "  process did, and exits with PROGRAM's own status.\n"
               "  -o DIR            where the traces go (default dmm-record.<program>.<pid>;\n"
               "                    made if missing, and must hold no trace yet)\n"
               "  --stacks N        record N frames of call stack per call (0-64; default 0)\n"
               "  --compress WHEN   after (default): zstd-compress the traces once the program\n"
               "                    has ended, which costs the recording nothing; zstd: in the\n"
               "                    traced processes, as they record; none: keep them raw\n"
               "  --follow-exec=no  do not trace a program the first one execs\n"
               "  --follow-fork=no  do not trace the first process's children\n"
               "  Each process's buffers go to the tracer's writer process, so that a\n"
               "  program stopped with Ctrl-C or killed loses no record (DMM_TRACE_WRITER\n"
               "  in the environment chooses otherwise).  A SIGTERM sent to dmm record\n"
               "  goes on to PROGRAM, and dmm record still waits for the tree.  Once PROGRAM\n"
               "  has ended, Ctrl-C or SIGTERM stops the waiting for what it left running\n"
               "  (a background server, a daemon), whose traces are then still written.\n"
               "  --pick DIR        print the trace of DIR that `dmm stats DIR` and\n"
               "                    `make evolve TRACE=DIR` read: the process that allocated most\n"
               "  --list DIR        what each process of DIR did: its summary with every\n"
               "                    process (after a recording, the summary shows the %d that\n"
               "                    allocated most when there are more than %d)\n"
               "  --root DIR        print the command recorded into DIR (the first process\n"
               "                    whose parent was not traced) as a line a shell runs;\n"
               "                    exit 1 when DIR has none or it does not fit on a line\n"
               "  Exit status: PROGRAM's (128 + N when a signal N ended it); 1 for a usage\n"
               "  error, 2 when no PROGRAM is given, it could not be run or DIR not written.\n",
               SUMMARY_SHOWN, SUMMARY_ROWS);
}

/* libdmmtrace.so beside this dmm (the build tree) or in ../lib (installed). */
static int find_tracer(char *buf, size_t len)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return -1;
    exe[n] = 0;
    const char *dir = dirname(exe);
    snprintf(buf, len, "%s/libdmmtrace.so", dir);
    if (access(buf, R_OK) == 0)
        return 0;
    snprintf(buf, len, "%s/../lib/libdmmtrace.so", dir);
    if (access(buf, R_OK) == 0) {
        char real[PATH_MAX];
        if (realpath(buf, real))
            snprintf(buf, len, "%s", real);
        return 0;
    }
    snprintf(buf, len, "%s/libdmmtrace.so", dir);
    return -1;
}

static int yes_no(const char *a, const char *opt, int *v)
{
    size_t n = strlen(opt);
    if (strncmp(a, opt, n) || a[n] != '=')
        return 0;
    if (!strcmp(a + n + 1, "yes"))
        *v = 1;
    else if (!strcmp(a + n + 1, "no"))
        *v = 0;
    else
        return -1;
    return 1;
}

static void human(uint64_t b, char *out, size_t len)
{
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    double v = (double)b;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    snprintf(out, len, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
}

/* A row of the summary: most, the process that allocated most; running,
 * one still running (its trace still grows). */
static void row(FILE *f, const dmm_record_proc_t *p, int most, int running)
{
    if (p->unreadable) {
        fprintf(f, "  %s: %s\n", p->file, p->err);
        return;
    }
    char total[32], peak[32], rss[32] = "?";
    human(p->alloc_bytes, total, sizeof total);
    human(p->peak_live, peak, sizeof peak);
    if (p->peak_rss)   /* else the trace does not say */
        human(p->peak_rss, rss, sizeof rss);
    fprintf(f, "  %8u %8u %12llu %11s %11s %11s  %.70s%s%s%s\n", p->pid, p->ppid,
            (unsigned long long)p->records, total, peak, rss, p->command,
            most || running ? "   <- " : "", most ? "allocated most" : "",
            running ? (most ? ", still running" : "still running") : "");
}

/* Of procs, the SHOWN that allocated most bytes, and every unreadable one,
 * marked in keep (n bytes). */
static void pick_rows(const dmm_record_proc_t *v, size_t n, size_t shown, char *keep)
{
    memset(keep, 0, n);
    for (size_t k = 0; k < shown; k++) {
        long best = -1;
        for (size_t i = 0; i < n; i++)
            if (!keep[i] && !v[i].unreadable &&
                (best < 0 || v[i].alloc_bytes > v[best].alloc_bytes))
                best = (long)i;
        if (best < 0)
            break;
        keep[best] = 1;
    }
    for (size_t i = 0; i < n; i++)
        keep[i] |= (char)v[i].unreadable;
}

/* dmm_record_scan of dir, or -1 after a line on stderr that says why. */
static int scan(const char *dir, dmm_record_proc_t **v, size_t *n, long *most)
{
    dmm_err_t err;
    if (dmm_record_scan(dir, v, n, most, &err) == 0)
        return 0;
    fprintf(stderr, "dmm record: %s\n", err.msg);
    return -1;
}

/* Whether v[i] is the trace of a process still running: its last image
 * (an exec's earlier ones ended with the exec). */
static int running(const char *dir, const dmm_record_proc_t *v, size_t n, size_t i)
{
    for (size_t j = 0; j < n; j++)
        if (j != i && !v[j].unreadable && v[j].pid == v[i].pid && v[j].start_ns > v[i].start_ns)
            return 0;
    return dmm_record_running(dir, v[i].file);
}

/* What each process did, on f (stderr after a recording: the program's
 * stdout stays its own); every process when all, else at most
 * SUMMARY_ROWS rows; with left (processes dmm record stopped waiting for),
 * those still running marked.  0, or 2 when dir holds no trace it can
 * read. */
static int summary(FILE *f, const char *dir, int all, int left)
{
    dmm_record_proc_t *v;
    size_t n;
    long most;
    if (scan(dir, &v, &n, &most) != 0)
        return 2;
    char *keep = malloc(n ? n : 1);
    if (!keep) {
        free(v);
        fprintf(stderr, "dmm record: %s\n", strerror(ENOMEM));
        return 2;
    }
    if (all || n <= SUMMARY_ROWS)
        memset(keep, 1, n);
    else
        pick_rows(v, n, SUMMARY_SHOWN, keep);
    fprintf(f, "\ndmm record: %zu process%s traced, in %s/\n", n, n == 1 ? "" : "es", dir);
    fprintf(f, "  %8s %8s %12s %11s %11s %11s  %s\n", "pid", "ppid", "operations",
            "allocated", "peak live", "peak RSS", "command");
    size_t rest = 0;
    uint64_t rest_ops = 0, rest_bytes = 0;
    for (size_t i = 0; i < n; i++) {
        if (keep[i]) {
            row(f, &v[i], (long)i == most && n > 1, left && running(dir, v, n, i));
        } else {
            rest++;
            rest_ops += v[i].records;
            rest_bytes += v[i].alloc_bytes;
        }
    }
    if (rest) {
        char b[32];
        human(rest_bytes, b, sizeof b);
        fprintf(f, "  ... and %zu more process%s (%llu operations, %s allocated in all): "
                   "dmm record --list %s shows every one\n",
                rest, rest == 1 ? "" : "es", (unsigned long long)rest_ops, b, dir);
    }
    if (most >= 0)
        fprintf(f, "dmm record: dmm stats %s and make evolve TRACE=%s read %s%s\n", dir,
                dir, v[most].file, n > 1 ? " (the process that allocated most)" : "");
    free(keep);
    free(v);
    return 0;
}

/* The traces zstd-compressed now that nothing records any more; with
 * left, all but those of the processes still running (their traces still
 * grow). */
static void compress_after(const char *dir, int left)
{
    dmm_record_proc_t *v;
    size_t n, raw = 0, packed = 0, growing = 0;
    dmm_err_t err;
    if (dmm_record_list(dir, &v, &n, &err) != 0)
        return;   /* summary() says why */
    for (size_t i = 0; i < n; i++) {
        char path[PATH_MAX + 300];
        size_t b, a;
        snprintf(path, sizeof path, "%s/%s", dir, v[i].file);
        if (left && dmm_record_running(dir, v[i].file)) {
            growing++;
            continue;
        }
        if (dmm_trc_compress_file(path, 3, &b, &a, &err) != 0)
            continue;   /* left as it is: the summary names an unreadable one */
        raw += b;
        packed += a;
    }
    free(v);
    char x[32], y[32];
    human(raw, x, sizeof x);
    human(packed, y, sizeof y);
    fprintf(stderr, "dmm record: traces compressed now that the program has ended (zstd 3): "
                    "%s -> %s", x, y);
    if (growing)
        fprintf(stderr, ", not the %zu of processes still running", growing);
    fputc('\n', stderr);
}

/* The command recorded into dir, on stdout: 0, 1 when dir has none a shell
 * could run as it ran, 2 when dir holds no trace that reads. */
static int root_main(const char *dir)
{
    dmm_record_proc_t *v;
    size_t n;
    long most;
    if (scan(dir, &v, &n, &most) != 0)
        return 2;
    long r = dmm_record_root(v, n);
    int rc = 0;
    if (r < 0) {
        fprintf(stderr, "dmm record: %s: every process's parent was traced too: no command "
                        "started them\n", dir);
        rc = 1;
    } else if (v[r].command_inexact || !v[r].command[0]) {
        fprintf(stderr, "dmm record: %s: %s, pid %u: its command line (%s) is not one a "
                        "shell would run as it ran\n", dir, v[r].file, v[r].pid,
                v[r].command[0] ? v[r].command : "empty");
        rc = 1;
    } else {
        printf("%s\n", v[r].command);
    }
    free(v);
    return rc;
}

static int pick_main(const char *dir)
{
    char buf[PATH_MAX + 256];
    dmm_err_t err;
    const char *p = dmm_record_pick("dmm record", dir, buf, sizeof buf, &err);
    if (!p) {
        fprintf(stderr, "dmm record: %s\n", err.msg);
        return 2;
    }
    printf("%s\n", p);
    return 0;
}

int dmm_record_main(int argc, char **argv)
{
    dmm_record_opts_t o = { .follow_exec = 1, .follow_fork = 1 };
    int after = 1;   /* compress once the program has ended */
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        int r;
        long v;
        if (!strcmp(a, "--")) {
            i++;
            break;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--pick") && i + 1 < argc && i + 2 == argc) {
            return pick_main(argv[i + 1]);
        } else if (!strcmp(a, "--root") && i + 1 < argc && i + 2 == argc) {
            return root_main(argv[i + 1]);
        } else if (!strcmp(a, "--list") && i + 1 < argc && i + 2 == argc) {
            return summary(stdout, argv[i + 1], 1, 0);
        } else if (!strcmp(a, "-o") && i + 1 < argc) {
            o.dir = argv[++i];
        } else if (!strcmp(a, "--stacks") && i + 1 < argc) {
            if (dmm_cli_long("record", "--stacks", argv[++i], 0, 64, &v) != 0)
                return 1;
            o.stacks = (unsigned)v;
        } else if (!strcmp(a, "--compress") && i + 1 < argc) {
            i++;
            if (strcmp(argv[i], "after") && strcmp(argv[i], "zstd") && strcmp(argv[i], "none")) {
                fprintf(stderr, "dmm record: --compress is after, zstd or none, not '%s'\n",
                        argv[i]);
                return 1;
            }
            o.zstd = !strcmp(argv[i], "zstd");
            after = !strcmp(argv[i], "after");
        } else if ((r = yes_no(a, "--follow-exec", &o.follow_exec)) != 0 ||
                   (r = yes_no(a, "--follow-fork", &o.follow_fork)) != 0) {
            if (r < 0) {
                fprintf(stderr, "dmm record: %.*s is yes or no, not '%s'\n",
                        (int)(strchr(a, '=') - a), a, strchr(a, '=') + 1);
                return 1;
            }
        } else if (a[0] == '-') {
            fprintf(stderr, "dmm record: unknown option %s\n", a);
            usage(stderr);
            return 1;
        } else {
            break;   /* the program, without "--" */
        }
    }
    if (i >= argc) {
        fprintf(stderr, "dmm record: no command to run\n");
        usage(stderr);
        return 2;
    }
    o.argv = argv + i;
    char tracer[PATH_MAX], dir[PATH_MAX];
    if (find_tracer(tracer, sizeof tracer) != 0) {
        fprintf(stderr, "dmm record: %s: not found (build it with make, or install it beside "
                        "dmm's lib/)\n", tracer);
        return 2;
    }
    o.tracer = tracer;
    if (!o.dir) {
        char prog[PATH_MAX];
        snprintf(prog, sizeof prog, "%s", o.argv[0]);
        snprintf(dir, sizeof dir, "dmm-record.%s.%d", basename(prog), (int)getpid());
        o.dir = dir;
    }
    int status, left;
    dmm_err_t err;
    if (dmm_record_run(&o, &status, &left, &err) != 0) {
        fprintf(stderr, "dmm record: %s\n", err.msg);
        return 2;
    }
    if (after)
        compress_after(o.dir, left);
    summary(stderr, o.dir, 0, left);
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "dmm record: %s was killed by signal %d\n", o.argv[0], WTERMSIG(status));
        return 128 + WTERMSIG(status);
    }
    return WEXITSTATUS(status);
}
