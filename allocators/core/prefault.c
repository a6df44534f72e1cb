/* prefault.c - the helper thread that faults memory in ahead (prefault.h).
 *
 * Requests wait in a ring of RING ranges: the callers (under g_lock, and
 * the page source calls with its own lock held, which the preload
 * libraries take across fork) add at the head, the helper takes from the
 * tail.  After adding, a caller bumps g_seq and wakes the helper's futex
 * (one system call per request: a request is an extent, 2 MiB of heap
 * growth); the helper reads g_seq before it looks at the ring and sleeps
 * only while g_seq still holds what it read, so no request is missed.  A
 * full ring refuses: the memory then faults in where it is used.
 *
 * A helper ends after IDLE_NS without a request, clearing g_tid when the
 * ring is empty (helper_quits); the next request starts another, once the
 * kernel has cleared g_ctid (CLONE_CHILD_CLEARTID: the last one has left
 * the stack they share).  A request that finds the last one still exiting
 * is refused.
 *
 * After a fork the child has no helper: g_pid (the process whose helper
 * the state describes) differs from the caller's, and the first request in
 * the child empties the ring and starts one. */
#include "allocators/core/prefault.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/single_threaded.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>

#include "tracer/base/spinlock.h"
#include "tracer/base/sys.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23   /* Linux 5.14 */
#endif

#define RING 64u
/* Whether to ask at all: faulting in ahead pays where a fault is slow (the
 * kernel or the host backs fresh memory slowly: 2.8 ms for 2 MiB measured
 * on this project's VM, against 0.13 ms when the memory is still backed),
 * and costs, at the heap's peak, the resident extent faulted in ahead and
 * never used.  So a request is taken when the helper's last one took more
 * than SLOW_NS for each 2 MiB, and otherwise only one in PROBE (which tells
 * whether faults have become slow). */
#define SLOW_NS 500000u
#define PROBE   16u
/* A helper with nothing to do for IDLE_NS ends (the next request starts
 * another): a thread exists only while the heap grows, so that a program
 * that later changes its credentials or unshares its user namespace (which
 * a second thread forbids) has no helper left over from before. */
#define IDLE_NS 100000000L

typedef struct range {
    void  *p;
    size_t len;
} range_t;

static int      g_lock;
static pid_t    g_pid;               /* the process the state below is of */
static long     g_tid;               /* its helper's thread id, or 0 */
static int      g_ctid;              /* the kernel's: a helper's id until it has exited */
static int      g_cannot;            /* no helper can start here (clone refused) */
static range_t  g_ring[RING];
static unsigned g_head, g_tail;      /* added by callers / taken by the helper */
static unsigned g_seq;               /* the helper's futex */
static unsigned long g_done;
static int      g_slow;              /* the helper's last request was slow */
static unsigned g_asked;             /* requests seen in this process */

/* Sanitizers keep per-thread state that their instrumented code (and their
 * hooks in every function) reach through the thread pointer, which the
 * helper does not have: in their builds (the tests') it never starts. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NO_HELPER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define NO_HELPER 1
#endif
#endif

#if DMM_SYS_RAW && !defined(NO_HELPER)

/* The helper's stack, and the block its thread pointer points into (it
 * reads nothing there: a guard against code that would, such as a stack
 * protector's canary, which then reads a constant).  One helper at a time
 * uses them: a new one starts only once the kernel has cleared g_ctid, at
 * the end of the last one's exit. */
static char g_stack[16384] __attribute__((aligned(64)));
static char g_tls[4096] __attribute__((aligned(64)));

#if defined(__has_attribute)
#if __has_attribute(no_stack_protector)
#define NO_SSP __attribute__((no_stack_protector))
#endif
#endif
#ifndef NO_SSP
#define NO_SSP
#endif

/* The helper's end, after IDLE_NS without a request: 1 when the ring is
 * still empty, g_tid then 0 (the next request starts another).  Without
 * g_lock (a fork while the helper held it would leave it held in the
 * child): a request added just before g_tid reads 0 waits in the ring for
 * the next helper, or is never done, which only means its memory faults
 * in where it is used. */
static NO_SSP int helper_quits(void)
{
    if (__atomic_load_n(&g_tail, __ATOMIC_RELAXED) != __atomic_load_n(&g_head, __ATOMIC_ACQUIRE))
        return 0;
    __atomic_store_n(&g_tid, 0, __ATOMIC_SEQ_CST);
    return 1;
}

/* The helper: fault in each range asked for, sleep while none is, end
 * after IDLE_NS without one. */
static NO_SSP __attribute__((noinline)) int helper(void *arg)
{
    (void)arg;
    for (;;) {
        unsigned seq = __atomic_load_n(&g_seq, __ATOMIC_ACQUIRE);
        unsigned t = __atomic_load_n(&g_tail, __ATOMIC_RELAXED);
        if (t == __atomic_load_n(&g_head, __ATOMIC_ACQUIRE)) {
            struct timespec idle = { 0, IDLE_NS };
            long r = dmm_sys6(SYS_futex, (long)&g_seq, FUTEX_WAIT_PRIVATE, seq, (long)&idle, 0, 0);
            if (r == -ETIMEDOUT && helper_quits())
                dmm_sys6(SYS_exit, 0, 0, 0, 0, 0, 0);
            continue;
        }
        range_t r = g_ring[t % RING];
        struct timespec t0, t1;
        dmm_sys6(SYS_clock_gettime, CLOCK_MONOTONIC, (long)&t0, 0, 0, 0, 0);
        dmm_sys6(SYS_madvise, (long)r.p, (long)r.len, MADV_POPULATE_WRITE, 0, 0, 0);
        dmm_sys6(SYS_clock_gettime, CLOCK_MONOTONIC, (long)&t1, 0, 0, 0, 0);
        long ns = (t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec);
        __atomic_store_n(&g_slow, ns > 0 && (uint64_t)ns > (uint64_t)SLOW_NS * (r.len >> 12) / 512,
                         __ATOMIC_RELAXED);
        __atomic_store_n(&g_tail, t + 1, __ATOMIC_RELEASE);
        __atomic_add_fetch(&g_done, 1, __ATOMIC_RELEASE);
    }
    return 0;
}

/* Start a helper: its thread id, or 0.  Every signal blocked around the
 * clone (raw: glibc's sigprocmask keeps its own two open), so that the
 * helper has them all blocked and no handler ever runs on it.  The kernel
 * sets g_ctid to its id and clears it when it has exited. */
static long start(void)
{
    uint64_t all = ~(uint64_t)0, old = 0;
    dmm_sys6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, (long)&old, sizeof all, 0, 0);
    void **tp = (void **)(g_tls + sizeof g_tls / 2);
    tp[0] = tp;   /* x86-64: the thread pointer's self-pointer */
    int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                CLONE_SYSVSEM | CLONE_SETTLS | CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID;
    int tid = clone(helper, g_stack + sizeof g_stack, flags, NULL, NULL, (void *)tp, &g_ctid);
    dmm_sys6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, sizeof old, 0, 0);
    return tid > 0 ? tid : 0;
}
#else
static long start(void)
{
    return 0;
}
#endif

int dmm_prefault_has_core(void)
{
    cpu_set_t set;
    return __libc_single_threaded && sched_getaffinity(0, sizeof set, &set) == 0 &&
           CPU_COUNT(&set) >= 2;
}

int dmm_prefault(void *p, size_t len)
{
    int err = errno, rc = -1;
    pid_t pid = getpid();
    dmm_spin_lock(&g_lock);
    if (g_pid != pid) {   /* the first request here: this process's state */
        g_pid = pid;
        g_head = g_tail = 0;
        g_slow = 0;
        g_asked = 0;
        g_tid = 0;
        g_ctid = 0;       /* a fork child: its parent's helper is not its own */
        g_cannot = 0;
    }
    int want = __atomic_load_n(&g_slow, __ATOMIC_RELAXED) || g_asked++ % PROBE == 0;
    if (want && !__atomic_load_n(&g_tid, __ATOMIC_SEQ_CST) && !g_cannot &&
        !__atomic_load_n(&g_ctid, __ATOMIC_ACQUIRE)) {
        long tid = start();
        __atomic_store_n(&g_tid, tid, __ATOMIC_RELEASE);
        g_cannot = !tid;
    }
    if (want && __atomic_load_n(&g_tid, __ATOMIC_SEQ_CST) &&
        g_head - __atomic_load_n(&g_tail, __ATOMIC_ACQUIRE) < RING) {
        g_ring[g_head % RING] = (range_t){ p, len };
        __atomic_store_n(&g_head, g_head + 1, __ATOMIC_RELEASE);
        __atomic_add_fetch(&g_seq, 1, __ATOMIC_RELEASE);
        syscall(SYS_futex, &g_seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
        rc = 0;
    }
    dmm_spin_unlock(&g_lock);
    errno = err;
    return rc;
}

long dmm_prefault_tid(void)
{
    return __atomic_load_n(&g_pid, __ATOMIC_ACQUIRE) == getpid()
               ? __atomic_load_n(&g_tid, __ATOMIC_ACQUIRE) : 0;
}

unsigned long dmm_prefault_done(void)
{
    return __atomic_load_n(&g_done, __ATOMIC_ACQUIRE);
}
