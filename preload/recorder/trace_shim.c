/* trace_shim.c - the malloc family of libdmmtrace.so.
 *
 * Each entry point forwards to glibc through its __libc_* names (no dlsym,
 * so a malloc from the dynamic loader or before any constructor works) and
 * records the call through recorder.h.  Calls that give up an address
 * take their sequence number before glibc runs, calls that obtain one take
 * it after, so that a trace's order respects causality between threads:
 * the free of an address always precedes its reuse.
 *
 * Also here: exec (flush first), _exit (flush first).  C++ new and delete
 * reach malloc and free and need nothing of their own. */
#include "preload/common/options.h"
#include "preload/recorder/recorder.h"
#include "preload/recorder/resident.h"
#include "tracer/format/trcfmt.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>


/* malloc and free once inside the recorder, inline in both ways in. */
static inline __attribute__((always_inline)) void *malloc_inside(size_t n, void *p)
{
    if (__builtin_expect(dmm_resident_may_be_mapped(n), 0))
        return dmm_tw_malloc_large(n, p);
    return dmm_tw_malloc_done(n, p);
}

static inline __attribute__((always_inline)) void free_inside(void *p)
{
    /* free(NULL) is recorded too.  glibc's free keeps errno, and so does
     * the tracer.  A block that glibc mapped on its own says in its record
     * how much of it the program had written (resident.h). */
    if (p && __builtin_expect(dmm_resident_mapped(p), 0)) {
        dmm_tw_free_large(p);
        return;
    }
    dmm_tw_free_done(p);
}

/* The ways in through dmm_tw_enter_slow(): out of line, so that the usual
 * calls need no stack frame of their own for it. */
static __attribute__((noinline)) void *malloc_slow(size_t n, void *p)
{
    if (!dmm_tw_enter_slow())
        return p;
    return malloc_inside(n, p);
}

static __attribute__((noinline)) void free_slow(void *p)
{
    if (!dmm_tw_enter_slow()) {
        __libc_free(p);
        return;
    }
    free_inside(p);
}

/* malloc enters the recorder once glibc's malloc has returned, as free
 * leaves it before glibc's free runs: the gate guards the recorder's
 * state, which glibc's call does not touch, and one entry, after the call,
 * finds the gate and the buffer's state at one thread-local address.  A
 * signal handler that allocates while glibc's malloc runs is recorded
 * (before this call), as one that does while glibc's free runs always was. */
EXPORT void *malloc(size_t n)
{
    void *p = __libc_malloc(n);
#if defined(__x86_64__)
    /* p stays in the return register: the compiler otherwise moves it out
     * for the tail calls' second argument and back (two instructions) */
    __asm__("" : "+a"(p));
#endif
    if (!dmm_tw_enter_quick())
        return malloc_slow(n, p);
    return malloc_inside(n, p);
}

EXPORT void free(void *p)
{
    if (!dmm_tw_enter_quick()) {
        free_slow(p);
        return;
    }
    free_inside(p);
}

EXPORT void *calloc(size_t n, size_t size)
{
    if (!dmm_tw_enter())
        return __libc_calloc(n, size);
    size_t total;
    if (__builtin_mul_overflow(n, size, &total))
        total = 0;
    void *p = __libc_calloc(n, size);
    /* errno is read only when the call failed: the tracer leaves it alone */
    dmm_tw_record(DMM_TRC_CALLOC, dmm_tw_seq_at(p), total, n, NULL, p, p ? 0 : errno);
    dmm_tw_leave();
    return p;
}

/* realloc and reallocarray: the old block may be given up inside glibc, so a
 * sequence number is taken before the call; if the block moved (or was
 * freed by realloc(p, 0)) a RELEASE record carries that number and the
 * REALLOC record takes a fresh one. */
static void *realloc_common(unsigned op, void *p, size_t n, size_t nmemb, int overflow)
{
    int saved = errno;
    uint64_t before = p ? dmm_tw_seq_at(p) : 0;
    void *q = NULL;
    int e = ENOMEM;
    if (!overflow) {
        q = __libc_realloc(p, n);
        e = errno;
    }
    /* realloc(p, 0) frees p and returns NULL: that is no failure */
    int failed = q == NULL && (overflow || n != 0 || p == NULL);
    if (p && !failed && q != p) {
        dmm_tw_record(DMM_TRC_RELEASE, before, 0, 0, p, NULL, 0);
        dmm_tw_record(op, dmm_tw_seq_at(q), n, nmemb, p, q, 0);
    } else {
        dmm_tw_record(op, p ? before : dmm_tw_seq_at(q), n, nmemb, p, q, failed ? e : 0);
    }
    errno = failed ? e : saved;
    return q;
}

EXPORT void *realloc(void *p, size_t n)
{
    if (!dmm_tw_enter())
        return __libc_realloc(p, n);
    void *q = realloc_common(DMM_TRC_REALLOC, p, n, 0, 0);
    dmm_tw_leave();
    return q;
}

EXPORT void *reallocarray(void *p, size_t nmemb, size_t size)
{
    size_t n;
    int overflow = __builtin_mul_overflow(nmemb, size, &n);
    if (!dmm_tw_enter()) {
        if (overflow) {
            errno = ENOMEM;
            return NULL;
        }
        return __libc_realloc(p, n);
    }
    void *q = realloc_common(DMM_TRC_REALLOCARRAY, p, overflow ? 0 : n, nmemb, overflow);
    dmm_tw_leave();
    return q;
}

static int valid_posix_alignment(size_t a)
{
    return a != 0 && (a & (a - 1)) == 0 && a % sizeof(void *) == 0;
}

EXPORT void *memalign(size_t align, size_t n)
{
    if (!dmm_tw_enter())
        return __libc_memalign(align, n);
    void *p = __libc_memalign(align, n);
    /* errno is read only when the call failed: the tracer leaves it alone */
    dmm_tw_record(DMM_TRC_MEMALIGN, dmm_tw_seq_at(p), n, align, NULL, p, p ? 0 : errno);
    dmm_tw_leave();
    return p;
}

/* glibc 2.36 makes aligned_alloc an alias of memalign; so do we, recording
 * the call under its own name. */
EXPORT void *aligned_alloc(size_t align, size_t n)
{
    if (!dmm_tw_enter())
        return __libc_memalign(align, n);
    void *p = __libc_memalign(align, n);
    /* errno is read only when the call failed: the tracer leaves it alone */
    dmm_tw_record(DMM_TRC_ALIGNED_ALLOC, dmm_tw_seq_at(p), n, align, NULL, p, p ? 0 : errno);
    dmm_tw_leave();
    return p;
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    int traced = dmm_tw_enter();
    int saved = errno;
    void *p = NULL;
    int rc;
    if (!valid_posix_alignment(align)) {
        rc = EINVAL;
    } else {
        p = __libc_memalign(align, n);
        rc = p ? 0 : ENOMEM;
    }
    if (traced) {
        dmm_tw_record(DMM_TRC_POSIX_MEMALIGN, dmm_tw_seq_at(p), n, align, NULL, p, rc);
        dmm_tw_leave();
    }
    if (rc == 0)
        *out = p;
    errno = saved;   /* posix_memalign reports through its result */
    return rc;
}

EXPORT void *valloc(size_t n)
{
    if (!dmm_tw_enter())
        return __libc_valloc(n);
    void *p = __libc_valloc(n);
    /* errno is read only when the call failed: the tracer leaves it alone */
    dmm_tw_record(DMM_TRC_VALLOC, dmm_tw_seq_at(p), n, (uint64_t)sysconf(_SC_PAGESIZE), NULL, p, p ? 0 : errno);
    dmm_tw_leave();
    return p;
}

EXPORT void *pvalloc(size_t n)
{
    if (!dmm_tw_enter())
        return __libc_pvalloc(n);
    void *p = __libc_pvalloc(n);
    /* errno is read only when the call failed: the tracer leaves it alone */
    dmm_tw_record(DMM_TRC_PVALLOC, dmm_tw_seq_at(p), n, (uint64_t)sysconf(_SC_PAGESIZE), NULL, p, p ? 0 : errno);
    dmm_tw_leave();
    return p;
}

/* malloc_usable_size is a query, not an allocation: not recorded.  glibc has
 * no __libc_ name for it, so it is looked up once, outside any malloc. */
EXPORT size_t malloc_usable_size(void *p)
{
    static size_t (*real)(void *);
    if (!p)
        return 0;
    if (!real)
        real = (size_t (*)(void *))dlvsym(RTLD_NEXT, "malloc_usable_size", "GLIBC_2.2.5");
    return real ? real(p) : 0;
}

/* ---- exec and _exit: nothing recorded so far may be lost --------------- */

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execvpe_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);

static void before_exec(void)
{
    if (dmm_tw_vfork_child())
        return;   /* the parent goes on: nothing of its recording ends */
    if (dmm_tw_enter()) {
        dmm_tw_record(DMM_TRC_EXEC, dmm_tw_seq(), 0, 0, NULL, NULL, 0);
        dmm_tw_leave();
    }
    dmm_tw_flush_last(0);
}

static void *next_sym(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    static execve_fn real;
    if (!real)
        real = (execve_fn)next_sym("execve");
    before_exec();
    int r = real ? real(path, argv, envp) : (int)syscall(SYS_execve, path, argv, envp);
    dmm_tw_reopen();
    return r;
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    static execvpe_fn real;
    if (!real)
        real = (execvpe_fn)next_sym("execvpe");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    before_exec();
    int r = real(file, argv, envp);
    dmm_tw_reopen();
    return r;
}

EXPORT int execv(const char *path, char *const argv[])
{
    return execve(path, argv, environ);
}

EXPORT int execvp(const char *file, char *const argv[])
{
    return execvpe(file, argv, environ);
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    static fexecve_fn real;
    if (!real)
        real = (fexecve_fn)next_sym("fexecve");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    before_exec();
    int r = real(fd, argv, envp);
    dmm_tw_reopen();
    return r;
}

EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
    static execveat_fn real;
    if (!real)
        real = (execveat_fn)next_sym("execveat");
    before_exec();
    int r = real ? real(dirfd, path, argv, envp, flags)
                 : (int)syscall(SYS_execveat, dirfd, path, argv, envp, flags);
    dmm_tw_reopen();
    return r;
}

/* The execl family: gather the arguments on the stack, then as above. */
#define GATHER_ARGS(first, ap, argv)                                 \
    size_t argc_ = 1;                                                \
    va_start(ap, first);                                             \
    while (va_arg(ap, const char *))                                 \
        argc_++;                                                     \
    va_end(ap);                                                      \
    const char *argv[argc_ + 1];                                     \
    argv[0] = first;                                                 \
    va_start(ap, first);                                             \
    for (size_t i_ = 1; i_ <= argc_; i_++)                           \
        argv[i_] = va_arg(ap, const char *);

EXPORT int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    GATHER_ARGS(arg, ap, argv);
    va_end(ap);
    return execve(path, (char *const *)argv, environ);
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    GATHER_ARGS(arg, ap, argv);
    va_end(ap);
    return execvpe(file, (char *const *)argv, environ);
}

EXPORT int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    GATHER_ARGS(arg, ap, argv);
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return execve(path, (char *const *)argv, envp);
}

EXPORT void _exit(int status)
{
    dmm_tw_flush_last(1);
    for (;;)
        syscall(SYS_exit_group, status);
}

EXPORT void _Exit(int status)
{
    _exit(status);
}
