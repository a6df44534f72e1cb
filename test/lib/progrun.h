/* progrun.h - what the integration tests share: a scratch directory, and
 * running a program with a chosen environment and files for its standard
 * streams.  Header-only; each test binary includes it once. */
#ifndef DMM_TEST_PROGRUN_H
#define DMM_TEST_PROGRUN_H

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tracer/format/trace.h"
#include "tracer/base/file.h"

extern char **environ;

static char tmpdir[256];

static inline void make_tmpdir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/dmm-test-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
}

static inline void remove_tmpdir(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
}

/* What run_limited() returns when it had to kill the program. */
#define RUN_TIMED_OUT (-1)

/* Run argv with the parent's environment minus LD_PRELOAD, DMM_* and
 * MALLOC_TRACE, plus `extra` (NULL-terminated "NAME=value" strings), in
 * directory `cwd`, stdin from `in` (or /dev/null), stdout to `out`, stderr to
 * `err` (either may be NULL for /dev/null).  Two limits: after `timeout_s`
 * seconds (0: none) the program and everything it started (its own process
 * group) are killed with SIGKILL and RUN_TIMED_OUT is returned, so that a
 * deadlock fails a test instead of hanging it; `as_limit` bytes (0: none)
 * are the program's RLIMIT_AS.  Otherwise returns the wait status. */
static inline int run_limited(char *const argv[], const char *const extra[], const char *cwd,
                       const char *in, const char *out, const char *err, int timeout_s,
                       unsigned long long as_limit)
{
    const char *env[512];
    size_t n = 0;
    for (char **e = environ; *e && n < 400; e++)
        if (strncmp(*e, "LD_PRELOAD=", 11) && strncmp(*e, "DMM_", 4) &&
            strncmp(*e, "MALLOC_TRACE=", 13))
            env[n++] = *e;
    for (size_t i = 0; extra && extra[i] && n < 510; i++)
        env[n++] = extra[i];
    env[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        if (timeout_s > 0)
            setpgid(0, 0);
        if (as_limit) {
            struct rlimit rl = { (rlim_t)as_limit, (rlim_t)as_limit };
            if (setrlimit(RLIMIT_AS, &rl) != 0)
                _exit(125);
        }
        if (cwd && chdir(cwd) != 0)
            _exit(126);
        int fd = open(in ? in : "/dev/null", O_RDONLY);
        dup2(fd, 0);
        fd = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 1);
        fd = open(err ? err : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 2);
        execve(argv[0], argv, (char *const *)env);
        _exit(127);
    }
    int st;
    if (timeout_s <= 0) {
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        return st;
    }
    setpgid(pid, pid);   /* also here: the child may not have run yet */
    struct timespec t0, now, nap = { 0, 2000000 };
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            return st;
        if (w < 0 && errno != EINTR)
            return st;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec >= timeout_s) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
            return RUN_TIMED_OUT;
        }
        nanosleep(&nap, NULL);
    }
}

/* run_limited() without limits: returns the wait status. */
static inline int run(char *const argv[], const char *const extra[], const char *cwd,
               const char *in, const char *out, const char *err)
{
    return run_limited(argv, extra, cwd, in, out, err, 0, 0);
}

static inline char *slurp(const char *path, size_t *len)
{
    uint8_t *buf;
    size_t l;
    dmm_err_t err;
    if (len)
        *len = 0;
    if (dmm_read_file(path, &buf, &l, &err) != 0)
        return NULL;
    char *s = realloc(buf, l + 1);
    s[l] = 0;
    if (len)
        *len = l;
    return s;
}

/* A text file of `lines` pseudo-random lines, the same on every run. */
__attribute__((unused))
static inline void write_input_file(const char *path, int lines)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    unsigned x = 12345;
    for (int i = 0; i < lines; i++) {
        x = x * 1103515245u + 12345u;
        fprintf(f, "%u line %d %x\n", x % 100000, i, x);
    }
    fclose(f);
}

/* Run argv plainly in tmpdir (stdin from `in`): its exit status in *st, and
 * its output (tmpdir/plain), *len bytes, to free; the test fails when it
 * printed nothing (a comparison with nothing would prove nothing). */
__attribute__((unused))
static inline char *plain_output(char *const argv[], const char *in, int *st, size_t *len)
{
    char plain[300];
    snprintf(plain, sizeof plain, "%s/plain", tmpdir);
    *st = run(argv, NULL, tmpdir, in, plain, NULL);
    char *want = slurp(plain, len);
    cr_assert_not_null(want, "%s: no output file", argv[0]);
    cr_assert_gt(*len, 0, "%s printed nothing", argv[0]);
    return want;
}

/* Run argv (stdin from `in`) with `env` added, in tmpdir, and expect what a
 * plain run gave (exit status st, output want of lp bytes) and nothing from
 * dmm on stderr.  `what` names the run in messages. */
__attribute__((unused))
static inline void expect_same_as_plain(char *const argv[], const char *in, int st, const char *want,
                                 size_t lp, const char *const env[], const char *what)
{
    char out[300], err[300];
    snprintf(out, sizeof out, "%s/out", tmpdir);
    snprintf(err, sizeof err, "%s/err", tmpdir);
    int st2 = run(argv, env, tmpdir, in, out, err);
    size_t lo;
    char *got = slurp(out, &lo);
    char *e = slurp(err, NULL);
    cr_expect_eq(st2, st, "%s %s under %s: status %d, plain %d; stderr: %.300s", argv[0],
                 argv[1] ? argv[1] : "", what, st2, st, e);
    cr_expect(lo == lp && memcmp(got, want, lp) == 0, "%s: output differs under %s", argv[0],
              what);
    cr_expect_null(strstr(e, "dmm:"), "%s under %s: %.300s", argv[0], what, e);
    free(got);
    free(e);
}

/* sh -c CMD (its environment this process's), stderr joined to stdout,
 * into out (cap bytes, NUL-terminated): the exit status; a death by signal
 * fails the test. */
static inline int run_sh(const char *cmd, char *out, size_t cap)
{
    char full[8192];
    snprintf(full, sizeof full, "( %s ) 2>&1", cmd);
    FILE *p = popen(full, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    while (fgetc(p) != EOF)
        ;
    int st = pclose(p);
    cr_assert(WIFEXITED(st), "%s: died", cmd);
    return WEXITSTATUS(st);
}

/* python3 running `code` (statements, in single quotes of sh: none of its
 * own) with the project's folder `dir` (bench, scripts) first on its path,
 * `env` (NAME=value words, or "") in its environment: the exit status, its
 * output (stderr joined) in out. */
static inline int run_python(const char *env, const char *dir, const char *code, char *out,
                             size_t cap)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "%s /usr/bin/python3 -c 'import sys; sys.path.insert(0, \"%s/%s\"); %s'", env,
             DMM_SRC_DIR, dir, code);
    return run_sh(cmd, out, cap);
}

/* Does the kernel give transparent huge pages to a mapping advised
 * MADV_HUGEPAGE (its setting there, not "never")? */
static inline int thp_enabled(void)
{
    char mode[200];
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f)
        return 0;
    int on = fgets(mode, sizeof mode, f) && !strstr(mode, "[never]");
    fclose(f);
    return on;
}

#endif
