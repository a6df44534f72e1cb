/* record.c - `dmm record` (record.h): run a program and its process tree
 * under libdmmtrace.so, then read what each process recorded. */
#include "tracer/record/record.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tracer/format/trcfmt.h"
#include "tracer/stats/stats.h"

/* argv0 as execvp would find it, into buf: 0, or -1 (errno set). */
static int find_program(const char *argv0, char *buf, size_t len)
{
    if (strchr(argv0, '/')) {
        if (access(argv0, X_OK) != 0)
            return -1;
        snprintf(buf, len, "%s", argv0);
        return 0;
    }
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    int why = ENOENT;
    for (const char *p = path;; p++) {
        const char *end = strchr(p, ':');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        snprintf(buf, len, "%.*s%s%s", (int)n, p, n ? "/" : "", argv0);
        struct stat st;
        if (stat(buf, &st) == 0 && S_ISREG(st.st_mode)) {
            if (access(buf, X_OK) == 0)
                return 0;
            why = EACCES;
        }
        if (!end)
            break;
        p = end;
    }
    errno = why;
    return -1;
}

/* Whether dir holds a .trc file already. */
static int holds_traces(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *e;
    int found = 0;
    while (!found && (e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        found = n > 4 && !strcmp(e->d_name + n - 4, ".trc");
    }
    closedir(d);
    return found;
}

/* The directory, ready to take traces: *made when this call created it. */
static int prepare_dir(const char *dir, int *made, dmm_err_t *err)
{
    struct stat st;
    *made = 0;
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            return dmm_err_set(err, "%s: exists and is not a directory", dir);
        if (access(dir, W_OK | X_OK) != 0)
            return dmm_err_set(err, "%s: cannot write there: %s", dir, strerror(errno));
        if (holds_traces(dir))
            return dmm_err_set(err, "%s: holds traces already; name another directory (-o)",
                               dir);
        return 0;
    }
    if (mkdir(dir, 0755) != 0)
        return dmm_err_set(err, "%s: cannot create the directory: %s", dir, strerror(errno));
    *made = 1;
    return 0;
}

/* In the child: the tracer's environment, then the program.  Reports
 * errno on fd if exec fails. */
static void child(const dmm_record_opts_t *o, const char *prog, const char *absdir, int fd,
                  const sigset_t *mask)
{
    char v[PATH_MAX + 64];
    const char *old = getenv("LD_PRELOAD");
    snprintf(v, sizeof v, "%s%s%s", o->tracer, old && *old ? ":" : "", old ? old : "");
    setenv("LD_PRELOAD", v, 1);
    snprintf(v, sizeof v, "%s/%%e.%%p.trc", absdir);
    setenv("DMM_TRACE_FILE", v, 1);
    snprintf(v, sizeof v, "%u", o->stacks);
    setenv("DMM_TRACE_STACK", v, 1);
    setenv("DMM_TRACE_COMPRESS", o->zstd ? "zstd" : "none", 1);
    /* the writer process, unless the user chose: a program stopped with
     * Ctrl-C, or killed, then loses none of what its buffers held (without
     * it, a thread's last buffer: 41 k calls of a malloc loop; all of
     * python3's records when stopped at startup).  It starts with each
     * program a process runs, which costs that 0.2-0.35 ms on the 2-core VM
     * dmm is developed on: a pyenv tree of 79 processes 0.078 s against
     * 0.076 s with the writer started at the first full buffer, 20 runs of
     * /bin/true from sh 0.065 s against 0.058 s */
    setenv("DMM_TRACE_WRITER", "yes", 0);
    if (!o->follow_exec)
        setenv("DMM_TRACE_FOLLOW_EXEC", "0", 1);
    if (!o->follow_fork)
        setenv("DMM_TRACE_FOLLOW_FORK", "0", 1);
    signal(SIGINT, SIG_DFL);
    signal(SIGQUIT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);   /* then a SIGTERM held back since the fork ends it */
    sigprocmask(SIG_SETMASK, mask, NULL);
    execv(prog, o->argv);
    int e = errno;
    ssize_t w = write(fd, &e, sizeof e);
    (void)w;
    _exit(127);
}

/* The first process, while dmm record waits for the tree: a SIGTERM sent
 * to dmm record alone (kill, a job runner stopping it) goes on to it, as
 * perf record passes it on, and dmm record waits, summarises and exits
 * with the program's status as at any end; sent to the whole process group,
 * the program gets it twice. */
static volatile pid_t g_first;

static void pass_on(int sig)
{
    int e = errno;
    if (g_first > 0)
        kill(g_first, sig);
    errno = e;
}

/* Once the first process has ended, what it left running (a server a
 * script started in the background, which ignores Ctrl-C as a
 * non-interactive shell's background jobs do; a daemon in a session of its
 * own) is waited for, but a Ctrl-C or SIGTERM then stops the waiting, and
 * after a second dmm record says whom it waits for. */
static volatile sig_atomic_t g_stop, g_tick;

static void stop_waiting(int sig)
{
    (void)sig;
    g_stop = 1;
}

static void tick(int sig)
{
    (void)sig;
    g_tick = 1;
}

/* dmm record's children now (the tree's orphans are, as its subreaper),
 * "PID (COMM)" each, up to max of them into buf: how many there are. */
static int children(char *buf, size_t len, int max)
{
    char path[64], list[4096];
    snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
    FILE *f = fopen(path, "r");
    if (buf && len)
        buf[0] = 0;
    if (!f)
        return 0;
    size_t n = fread(list, 1, sizeof list - 1, f);
    fclose(f);
    list[n] = 0;
    int k = 0;
    size_t used = 0;
    for (char *p = list, *end;; p = end) {
        long pid = strtol(p, &end, 10);
        if (end == p)
            break;
        if (k++ >= max || !buf)
            continue;
        char comm[64] = "?";
        snprintf(path, sizeof path, "/proc/%ld/comm", pid);
        FILE *c = fopen(path, "r");
        if (c) {
            if (fgets(comm, sizeof comm, c))
                comm[strcspn(comm, "\n")] = 0;
            fclose(c);
        }
        int w = snprintf(buf + used, len - used, "%s%ld (%s)", k > 1 ? ", " : "", pid, comm);
        if (w > 0 && (size_t)w < len - used)
            used += (size_t)w;
    }
    if (buf && k > max && used + 8 < len)
        snprintf(buf + used, len - used, ", ...");
    return k;
}

/* Wait for every process of the tree, the first one's (pid's) wait status
 * into *st: 1 when it was seen, and *left the processes still running
 * where a Ctrl-C or SIGTERM stopped the waiting after it ended. */
static int wait_tree(pid_t pid, const char *prog, int *st, int *left)
{
    int got = 0;
    struct sigaction stop = { .sa_handler = stop_waiting }, al = { .sa_handler = tick }, oalrm;
    sigemptyset(&stop.sa_mask);
    sigemptyset(&al.sa_mask);
    sigaction(SIGALRM, &al, &oalrm);
    g_stop = g_tick = 0;
    *left = 0;
    for (;;) {
        int s;
        pid_t w = waitpid(-1, &s, 0);
        if (w < 0 && errno == EINTR) {
            char who[600];
            if (g_stop && got && (*left = children(who, sizeof who, 6)) > 0) {
                fprintf(stderr, "dmm record: stopped waiting; still running, their traces "
                                "written on as they go: %s\n", who);
                break;
            }
            if (g_tick && got && children(who, sizeof who, 6) > 0)
                fprintf(stderr, "dmm record: %s has ended; waiting for what it left running "
                                "(Ctrl-C stops waiting): %s\n", prog, who);
            g_stop = g_tick = 0;
            continue;
        }
        if (w < 0)
            break;
        if (w == pid) {
            *st = s;
            got = 1;
            sigaction(SIGINT, &stop, NULL);   /* no SA_RESTART: waitpid returns */
            sigaction(SIGTERM, &stop, NULL);
            alarm(1);
        }
    }
    alarm(0);
    sigaction(SIGALRM, &oalrm, NULL);
    return got;
}

int dmm_record_run(const dmm_record_opts_t *o, int *status, int *left, dmm_err_t *err)
{
    *left = 0;
    if (!o->argv || !o->argv[0] || !o->argv[0][0])
        return dmm_err_set(err, "no command to run: dmm record [OPTIONS] -- PROGRAM [ARGS]");
    char prog[PATH_MAX];
    if (find_program(o->argv[0], prog, sizeof prog) != 0)
        return dmm_err_set(err, "%s: %s", o->argv[0],
                           errno == ENOENT && !strchr(o->argv[0], '/') ? "command not found"
                                                                       : strerror(errno));
    if (access(o->tracer, R_OK) != 0)
        return dmm_err_set(err, "%s: the tracer library: %s", o->tracer, strerror(errno));
    int made;
    if (prepare_dir(o->dir, &made, err))
        return -1;
    char absdir[PATH_MAX];
    int fds[2];
    if (!realpath(o->dir, absdir) || pipe2(fds, O_CLOEXEC) != 0) {
        dmm_err_set(err, "%s: %s", o->dir, strerror(errno));
        goto fail;
    }
    /* orphans of the tree become our children: waited for too */
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    struct sigaction ign = { .sa_handler = SIG_IGN }, fwd = { .sa_handler = pass_on,
                                                             .sa_flags = SA_RESTART };
    struct sigaction oint, oquit, oterm;
    sigemptyset(&fwd.sa_mask);
    sigaction(SIGINT, &ign, &oint);   /* Ctrl-C is the program's: we wait for it */
    sigaction(SIGQUIT, &ign, &oquit);
    sigset_t term, mask;   /* SIGTERM held back until g_first is set */
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigprocmask(SIG_BLOCK, &term, &mask);
    sigaction(SIGTERM, &fwd, &oterm);
    pid_t pid = fork();
    if (pid == 0)
        child(o, prog, absdir, fds[1], &mask);
    g_first = pid;
    sigprocmask(SIG_SETMASK, &mask, NULL);
    close(fds[1]);
    int e = 0;
    ssize_t r = pid > 0 ? read(fds[0], &e, sizeof e) : -1;
    close(fds[0]);
    int st = 0, got = pid > 0 ? wait_tree(pid, o->argv[0], &st, left) : 0;
    sigaction(SIGTERM, &oterm, NULL);
    g_first = 0;
    sigaction(SIGINT, &oint, NULL);
    sigaction(SIGQUIT, &oquit, NULL);
    prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
    if (pid < 0) {
        dmm_err_set(err, "cannot start %s: %s", prog, strerror(errno));
        goto fail;
    }
    if (r == (ssize_t)sizeof e) {
        dmm_err_set(err, "cannot run %s: %s", prog, strerror(e));
        goto fail;
    }
    if (!got) {
        dmm_err_set(err, "lost track of %s (pid %d)", prog, (int)pid);
        goto fail;
    }
    *status = st;
    return 0;
fail:
    if (made)
        rmdir(o->dir);   /* only if nothing was written in it */
    return -1;
}

/* ---- what the directory holds ---------------------------------------- */

int dmm_record_running(const char *dir, const char *file)
{
    char path[PATH_MAX + 300];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    dmm_trc_header_t h;
    ssize_t n = read(fd, &h, sizeof h);
    close(fd);
    if (n != (ssize_t)sizeof h || memcmp(h.magic, DMM_TRC_MAGIC, 8) || !h.pid)
        return 0;
    return kill((pid_t)h.pid, 0) == 0 || errno == EPERM;
}

static int by_pid(const void *a, const void *b)
{
    const dmm_record_proc_t *x = a, *y = b;
    return x->pid < y->pid ? -1 : x->pid > y->pid ? 1 : strcmp(x->file, y->file);
}

/* The statistics of the trace at path, mapped and counted as it is scanned
 * (dmm_stats_scan_trc: memory is its live blocks, not its records); t gets
 * its header.  0, or -1 with err set. */
static int scan_file(const char *path, dmm_trace_t *t, dmm_stats_t *st, dmm_err_t *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        dmm_err_set(err, "%s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    size_t len = (size_t)sb.st_size;
    static const uint8_t none[1];
    const uint8_t *buf = none;
    if (len && (buf = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED) {
        dmm_err_set(err, "%s: cannot map it: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    close(fd);
    if (len)
        madvise((void *)buf, len, MADV_SEQUENTIAL);
    int rc = dmm_stats_scan_trc(path, buf, len, t, st, err);
    if (len)
        munmap((void *)buf, len);
    return rc;
}

static void read_one(const char *dir, dmm_record_proc_t *p)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, p->file);
    dmm_trace_t t;
    memset(&t, 0, sizeof t);
    dmm_err_t err = { 0 };
    dmm_stats_t st;
    if (scan_file(path, &t, &st, &err) != 0) {
        p->unreadable = 1;
        snprintf(p->err, sizeof p->err, "%s", err.msg);
        dmm_trace_free(&t);
        return;
    }
    p->pid = t.pid;
    p->ppid = t.ppid;
    p->start_ns = t.start_realtime_ns;
    p->command_inexact = dmm_cmdline_shell(t.cmdline, t.cmdline_len, p->command,
                                           sizeof p->command);
    p->records = st.records;
    p->alloc_calls = st.alloc_calls;
    p->alloc_bytes = st.total_bytes;
    p->peak_live = st.max_in_use;
    p->peak_rss = t.peak_rss;
    dmm_stats_free(&st);
    dmm_trace_free(&t);
}

int dmm_record_list(const char *dir, dmm_record_proc_t **procs, size_t *n, dmm_err_t *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return dmm_err_set(err, "%s: cannot read the directory: %s", dir, strerror(errno));
    dmm_record_proc_t *v = NULL;
    size_t k = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len <= 4 || strcmp(e->d_name + len - 4, ".trc") || len >= sizeof v->file)
            continue;
        if (k == cap) {
            cap = cap ? 2 * cap : 16;
            dmm_record_proc_t *nv = realloc(v, cap * sizeof *v);
            if (!nv) {
                closedir(d);
                free(v);
                return dmm_err_set(err, "%s: out of memory", dir);
            }
            v = nv;
        }
        memset(&v[k], 0, sizeof v[k]);
        memcpy(v[k].file, e->d_name, len + 1);
        k++;
    }
    closedir(d);
    if (k == 0) {
        free(v);
        return dmm_err_set(err, "%s: holds no .trc file", dir);
    }
    *procs = v;
    *n = k;
    return 0;
}

/* Whether a allocated more than b: more bytes asked for in total (a wrapper
 * script's shell makes as many calls as the program it starts, a Python
 * whose small objects pymalloc serves makes few, but asks for far more
 * bytes), then more allocating calls. */
static int more(const dmm_record_proc_t *a, const dmm_record_proc_t *b)
{
    if (a->alloc_bytes != b->alloc_bytes)
        return a->alloc_bytes > b->alloc_bytes;
    return a->alloc_calls > b->alloc_calls;
}

int dmm_record_scan(const char *dir, dmm_record_proc_t **procs, size_t *n, long *most,
                    dmm_err_t *err)
{
    dmm_record_proc_t *v;
    size_t k;
    if (dmm_record_list(dir, &v, &k, err) != 0)
        return -1;
    for (size_t i = 0; i < k; i++)
        read_one(dir, &v[i]);
    qsort(v, k, sizeof *v, by_pid);
    *most = -1;
    for (size_t i = 0; i < k; i++)
        if (!v[i].unreadable && (*most < 0 || more(&v[i], &v[*most])))
            *most = (long)i;
    *procs = v;
    *n = k;
    return 0;
}

long dmm_record_root(const dmm_record_proc_t *procs, size_t n)
{
    long root = -1;
    for (size_t i = 0; i < n; i++) {
        if (procs[i].unreadable)
            continue;
        size_t j = 0;
        while (j < n && (procs[j].unreadable || procs[j].pid != procs[i].ppid))
            j++;
        if (j < n)
            continue;   /* its parent was traced */
        if (root < 0)
            root = (long)i;
        else if (procs[i].pid == procs[root].pid && procs[i].start_ns < procs[root].start_ns)
            root = (long)i;   /* an earlier image of the same process */
        else if (procs[i].pid != procs[root].pid)
            break;   /* sorted by pid: the first process's images are all seen */
    }
    return root;
}

const char *dmm_record_pick(const char *prefix, const char *path, char *buf, size_t len,
                            dmm_err_t *err)
{
    struct stat st;
    if (strcmp(path, "-") == 0 || stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return path;
    dmm_record_proc_t *v;
    size_t n;
    long most;
    if (dmm_record_scan(path, &v, &n, &most, err) != 0)
        return NULL;
    if (most < 0) {
        dmm_err_set(err, "%s: none of its %zu traces reads: %s", path, n, v[0].err);
        free(v);
        return NULL;
    }
    snprintf(buf, len, "%s/%s", path, v[most].file);
    if (n > 1)
        fprintf(stderr, "%s: %s holds %zu traces; reading %s, the process that allocated "
                        "most (%llu bytes in %llu calls: %s); name a file to read another\n",
                prefix, path, n, v[most].file, (unsigned long long)v[most].alloc_bytes,
                (unsigned long long)v[most].alloc_calls, v[most].command);
    free(v);
    return buf;
}
