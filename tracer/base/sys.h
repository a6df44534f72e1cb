/* sys.h - system calls made raw, by code that runs without a thread of
 * glibc's of its own and so must not touch errno (nor call anything of
 * glibc that locks or allocates): the trace writer process, which shares
 * the traced program's memory and runs on the thread-local storage of the
 * thread that started it (preload/recorder/writer.c), and the page source's
 * prefault helper (allocators/core/prefault.c).  Each returns what the
 * kernel returned: a result, or -errno.
 *
 * Only x86-64 has them here (DMM_SYS_RAW): elsewhere the recorder writes
 * its blocks on the recording threads, as it does wherever no writer runs,
 * and no prefault helper starts. */
#ifndef DMM_BASE_SYS_H
#define DMM_BASE_SYS_H

#include <stddef.h>
#include <sys/syscall.h>

#if defined(__x86_64__) && defined(__linux__)
#define DMM_SYS_RAW 1

static inline long dmm_sys6(long n, long a, long b, long c, long d, long e, long f)
{
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    long ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}
#else
#define DMM_SYS_RAW 0
#include <errno.h>
#include <unistd.h>

static inline long dmm_sys6(long n, long a, long b, long c, long d, long e, long f)
{
    int saved = errno;
    long r = syscall(n, a, b, c, d, e, f);
    if (r == -1) {
        r = -errno;
        errno = saved;
    }
    return r;
}
#endif

#define DMM_SYS(n, a, b, c) dmm_sys6((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)

#endif
