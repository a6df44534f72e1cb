/* libspend.c - a preload library for bench/tracer_overhead.py: an
 * interposer that records nothing and only spends time.
 *
 * Every call of the malloc family goes to glibc as it came; around it the
 * calling thread busy-waits SPEND_NS nanoseconds, where libdmmtrace.so
 * records (after malloc, calloc and the aligned calls return, before free
 * and realloc give a block up).  It touches no memory but its stack and
 * takes no lock: what it does to a program is what time alone spent in
 * its malloc and free does.  With SPEND_NS set to what the recorder costs
 * a call, a workload whose memory moves with that time (glibc's trims in
 * the two-thread work_media) shows how much of the recorder's cost there
 * any interposer that costs as much would pay.
 *
 *   SPEND_NS=N      nanoseconds a call (default 0: a bare pass-through)
 *   SPEND_SHOW=1    print the calibration to stderr
 *
 * The loop turns that make SPEND_NS are measured once, at load, on malloc
 * and free calls (under a millisecond), against CLOCK_MONOTONIC.  Calls
 * made before the constructor ran spend nothing. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

extern void *__libc_malloc(size_t n);
extern void  __libc_free(void *p);
extern void *__libc_calloc(size_t a, size_t b);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);
extern void *__libc_valloc(size_t n);
extern void *__libc_pvalloc(size_t n);

static uint64_t g_turns;           /* loop turns a call */

static inline __attribute__((always_inline)) void spin(uint64_t turns)
{
    for (uint64_t i = 0; i < turns; i++)
        __asm__ volatile("" ::: "memory");
}

static inline __attribute__((always_inline)) void spend(void)
{
    spin(g_turns);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Seconds that n malloc/free pairs take with g_turns turns a call, the
 * least of a few tries (a preemption's time is not the loop's). */
static double pairs_s(uint64_t turns, int n)
{
    g_turns = turns;
    double best = 1e9;
    for (int k = 0; k < 3; k++) {
        double t0 = now_s();
        for (int i = 0; i < n; i++) {
            void *volatile p = malloc(16);
            free(p);
        }
        double t = now_s() - t0;
        if (t < best)
            best = t;
    }
    return best;
}

/* Turns a call that spend SPEND_NS nanoseconds, measured as the program
 * will spend them: on malloc/free pairs, whose time with t turns against
 * none gives a line (the loop's start and end cost some of their own), then
 * read at the wanted time. */
__attribute__((constructor)) static void spend_init(void)
{
    const char *ns = getenv("SPEND_NS");
    double want = ns ? strtod(ns, NULL) : 0.0;
    if (want > 0.0) {
        const int n = 5000;
        uint64_t t1 = (uint64_t)(want + 1.0), t2 = 4 * t1;
        double c0 = pairs_s(0, n), c1 = pairs_s(t1, n), c2 = pairs_s(t2, n);
        double per_turn = (c2 - c1) / (double)(t2 - t1) / (2.0 * n);
        double fixed = (c1 - c0) / (2.0 * n) - per_turn * (double)t1;
        double turns = per_turn > 0 ? (want * 1e-9 - fixed) / per_turn : 0.0;
        g_turns = turns > 0 ? (uint64_t)(turns + 0.5) : 0;
        if (getenv("SPEND_SHOW"))
            fprintf(stderr, "libspend: %.1f ns a call: %llu turns (%.3f ns a turn, %.2f ns "
                    "fixed)\n", want, (unsigned long long)g_turns, per_turn * 1e9, fixed * 1e9);
    }
}

void *malloc(size_t n)
{
    void *p = __libc_malloc(n);
    spend();
    return p;
}

void free(void *p)
{
    spend();
    __libc_free(p);
}

void *calloc(size_t a, size_t b)
{
    void *p = __libc_calloc(a, b);
    spend();
    return p;
}

void *realloc(void *p, size_t n)
{
    spend();
    return __libc_realloc(p, n);
}

void *reallocarray(void *p, size_t a, size_t b)
{
    size_t n;
    if (__builtin_mul_overflow(a, b, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, n);
}

void *memalign(size_t align, size_t n)
{
    void *p = __libc_memalign(align, n);
    spend();
    return p;
}

void *aligned_alloc(size_t align, size_t n)
{
    return memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    /* glibc's checks, and its ENOMEM (errno left as its memalign left it) */
    if (align < sizeof(void *) || (align & (align - 1)))
        return EINVAL;
    void *p = memalign(align, n);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

void *valloc(size_t n)
{
    void *p = __libc_valloc(n);
    spend();
    return p;
}

void *pvalloc(size_t n)
{
    void *p = __libc_pvalloc(n);
    spend();
    return p;
}
