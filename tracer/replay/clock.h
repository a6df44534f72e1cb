/* clock.h - the clocks of dmm replay: TSC ticks around each allocator
 * call, CLOCK_MONOTONIC around the run, and the TSC's frequency from the
 * two.
 *
 * dmm_clock_ticks is inline here, not in clock.c, because it runs inside
 * the timed window on both sides of every call: a function call there
 * would be charged to the allocator.  lfence on both sides keeps the call
 * from being reordered across the reads.  Without a TSC (not x86) ticks
 * are nanoseconds. */
#ifndef DMM_REPLAY_CLOCK_H
#define DMM_REPLAY_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t dmm_clock_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    uint32_t lo, hi;
    __asm__ volatile("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi) : : "memory");
    return ((uint64_t)hi << 32) | lo;
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#endif
}

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t dmm_clock_ns(void);

/* The smallest difference between two back-to-back reads of the ticks:
 * what every timed call includes. */
uint64_t dmm_clock_overhead(void);

/* Ticks per nanosecond over a run that began at (t0_ns, t0_ticks) and
 * ended at (t1_ns, t1_ticks).  A run shorter than 50 ms is too short a
 * window for the frequency: the clocks are then read on until 50 ms after
 * its start.  1.0 when nothing sensible comes out. */
double dmm_clock_ghz(uint64_t t0_ns, uint64_t t0_ticks, uint64_t t1_ns, uint64_t t1_ticks);

#endif
