/* verify.c - the real program under the defaults and under the settings,
 * alternating (see verify.h). */
#include "codegen/tune/verify.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "codegen/tune/env.h"

/* One run's standard output. */
typedef struct output {
    char  *buf;
    size_t len, cap;
} output_t;

/* What one run did. */
typedef struct ran {
    dmm_tune_run_t r;
    int            status;        /* exit status */
    output_t       out;
} ran_t;

/* Fill err; returns rc (1: this process failed, 2: the program did). */
static int fail(int rc, dmm_err_t *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(int rc, dmm_err_t *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return rc;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Read fd to its end into o.  0, or -1 out of memory or on a read error. */
static int read_to_end(int fd, output_t *o)
{
    o->len = 0;
    for (;;) {
        if (o->cap - o->len < 4096) {
            size_t nc = o->cap ? o->cap * 2 : 65536;
            char *b = realloc(o->buf, nc);
            if (!b)
                return -1;
            o->buf = b;
            o->cap = nc;
        }
        ssize_t n = read(fd, o->buf + o->len, o->cap - o->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            return 0;
        o->len += (size_t)n;
    }
}

/* The child's side: standard streams set up, then the program; on failure
 * errno goes down the exec pipe. */
static void exec_child(char *const argv[], char **env, int outfd, int execfd)
{
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0 && dup2(null, 0) >= 0 && dup2(outfd, 1) >= 0 && dup2(null, 2) >= 0)
        execvpe(argv[0], argv, env);
    int e = errno;
    ssize_t w = write(execfd, &e, sizeof e);
    (void)w;
    _exit(127);
}

/* Wait for pid; its status and rusage into x.  0, 1 or 2 with err. */
static int reap(pid_t pid, ran_t *x, const char *what, const char *prog, dmm_err_t *err)
{
    int st;
    struct rusage ru;
    while (wait4(pid, &st, 0, &ru) < 0)
        if (errno != EINTR)
            return fail(1, err, "wait4: %s", strerror(errno));
    if (WIFSIGNALED(st))
        return fail(2, err, "%s: %s: killed by signal %d (%s)", prog, what, WTERMSIG(st),
                    strsignal(WTERMSIG(st)));
    x->status = WEXITSTATUS(st);
    x->r.cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
               (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
    x->r.maxrss = (uint64_t)ru.ru_maxrss * 1024;
    return 0;
}

/* One run of argv under env.  0, 1 (this process failed) or 2 (the
 * program did), with err. */
static int run_once(char *const argv[], char **env, ran_t *x, const char *what,
                    dmm_err_t *err)
{
    int outp[2], execp[2];
    if (pipe2(outp, O_CLOEXEC) != 0)
        return fail(1, err, "pipe: %s", strerror(errno));
    if (pipe2(execp, O_CLOEXEC) != 0) {
        close(outp[0]);
        close(outp[1]);
        return fail(1, err, "pipe: %s", strerror(errno));
    }
    fflush(NULL);
    double t0 = now_s();
    pid_t pid = fork();
    if (pid == 0)
        exec_child(argv, env, outp[1], execp[1]);
    int fork_errno = errno;
    close(outp[1]);
    close(execp[1]);
    if (pid < 0) {
        close(outp[0]);
        close(execp[0]);
        return fail(1, err, "fork: %s", strerror(fork_errno));
    }
    int rd = read_to_end(outp[0], &x->out), rd_errno = errno;
    close(outp[0]);
    int e = 0;
    ssize_t n;
    while ((n = read(execp[0], &e, sizeof e)) < 0 && errno == EINTR)
        ;
    close(execp[0]);
    int rc = reap(pid, x, what, argv[0], err);
    x->r.wall = now_s() - t0;
    if (n == (ssize_t)sizeof e)
        return fail(2, err, "cannot run %s: %s", argv[0], strerror(e));
    if (rc != 0)
        return rc;
    if (rd != 0)
        return fail(1, err, "%s: %s: reading its output: %s", argv[0], what, strerror(rd_errno));
    return 0;
}

/* A run (what names it) against the warm-up's status and output.  0, or 2
 * with err. */
static int same_as_warmup(const ran_t *w, const ran_t *x, const char *prog, const char *what,
                          dmm_err_t *err)
{
    if (x->status != w->status)
        return fail(2, err, "%s: %s: exit status %d, the warm-up's %d", prog, what, x->status,
                    w->status);
    if (x->out.len != w->out.len || memcmp(x->out.buf, w->out.buf, w->out.len))
        return fail(2, err, "%s: %s: its output differs from the warm-up's (%zu bytes against "
                            "%zu): a program compared must do the same on every run",
                    prog, what, x->out.len, w->out.len);
    return 0;
}

/* The runs after the warm-up: ABBA, v->reps each. */
static int alternate(dmm_tune_verify_t *v, dmm_tune_env_t *e, const char *tunables,
                     const ran_t *w, dmm_err_t *err)
{
    ran_t x;
    memset(&x, 0, sizeof x);
    int rc = 0;
    for (int k = 0; k < v->reps && !rc; k++) {
        for (int s = 0; s < 2 && !rc; s++) {
            int tuned = s != k % 2;   /* defaults first in even rounds */
            char what[64];
            snprintf(what, sizeof what, "run %d of %d (%s)", 2 * k + s + 1, 2 * v->reps,
                     tuned ? "tuned" : "defaults");
            char **env = dmm_tune_env_with(e, tuned ? tunables : "");
            if (!env)
                rc = fail(1, err, "out of memory");
            else
                rc = run_once(v->argv, env, &x, what, err);
            if (!rc)
                rc = same_as_warmup(w, &x, v->argv[0], what, err);
            if (!rc)
                (tuned ? v->tun : v->def)[k] = x.r;
        }
    }
    free(x.out.buf);
    return rc;
}

/* 0, or -1 out of memory. */
static int compare_runs(dmm_tune_verify_t *v)
{
    int n = v->reps;
    double *x = malloc((size_t)n * 2 * sizeof *x);
    if (!x)
        return -1;
    for (int q = 0; q < DMM_TUNE_NV; q++) {
        for (int i = 0; i < n; i++) {
            const dmm_tune_run_t *d = &v->def[i], *t = &v->tun[i];
            x[i] = q == DMM_TUNE_V_WALL ? d->wall : q == DMM_TUNE_V_CPU ? d->cpu
                                                                        : (double)d->maxrss;
            x[n + i] = q == DMM_TUNE_V_WALL ? t->wall : q == DMM_TUNE_V_CPU ? t->cpu
                                                                            : (double)t->maxrss;
        }
        v->q[q] = dmm_tune_compare(x, x + n, n);
    }
    free(x);
    return 0;
}

/* The GLIBC_TUNABLES of the environment env (NULL: unset), copied. */
static char *tunables_of(char **env)
{
    for (char **p = env; *p; p++)
        if (!strncmp(*p, "GLIBC_TUNABLES=", 15))
            return strdup(*p + 15);
    return NULL;
}

int dmm_tune_verify(dmm_tune_verify_t *v, char *const argv[], const char *tunables, int reps,
                    FILE *notes, dmm_err_t *err)
{
    memset(v, 0, sizeof *v);
    v->argv = argv;
    v->reps = reps;
    dmm_tune_env_t e;
    ran_t w;
    memset(&w, 0, sizeof w);
    v->def = calloc((size_t)reps, sizeof *v->def);
    v->tun = calloc((size_t)reps, sizeof *v->tun);
    if (!v->def || !v->tun ||
        dmm_tune_env_init(&e, notes, "--verify sets it", "the runs use glibc's malloc") != 0)
        return fail(1, err, "out of memory");
    int rc = 1;
    char **env = dmm_tune_env_with(&e, tunables);
    v->gt_tun = env ? tunables_of(env) : NULL;
    env = v->gt_tun ? dmm_tune_env_with(&e, "") : NULL;
    if (!env) {
        fail(1, err, "out of memory");
        goto done;
    }
    v->gt_def = tunables_of(env);
    if (notes)
        fprintf(notes, "dmm tune-glibc: --verify: %s once, then defaults and tuned alternating, "
                       "%d runs each\n", argv[0], reps);
    double t0 = now_s();
    rc = run_once(argv, env, &w, "warm-up", err);
    if (!rc)
        rc = alternate(v, &e, tunables, &w, err);
    v->seconds = now_s() - t0;
    if (!rc) {
        v->status = w.status;
        v->output_bytes = w.out.len;
        if (compare_runs(v) != 0)
            rc = fail(1, err, "out of memory");
    }
done:
    free(w.out.buf);
    dmm_tune_env_free(&e);
    return rc;
}

void dmm_tune_verify_free(dmm_tune_verify_t *v)
{
    free(v->def);
    free(v->tun);
    free(v->gt_def);
    free(v->gt_tun);
    memset(v, 0, sizeof *v);
}
