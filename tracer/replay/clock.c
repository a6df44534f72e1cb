/* clock.c - monotonic time, the timer's overhead and the TSC's frequency
 * (see clock.h). */
#include "tracer/replay/clock.h"

#define CALIBRATION_NS 50000000ull

uint64_t dmm_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t dmm_clock_overhead(void)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 2000; i++) {
        uint64_t t0 = dmm_clock_ticks();
        uint64_t t1 = dmm_clock_ticks();
        if (t1 - t0 < best)
            best = t1 - t0;
    }
    return best;
}

double dmm_clock_ghz(uint64_t t0_ns, uint64_t t0_ticks, uint64_t t1_ns, uint64_t t1_ticks)
{
    uint64_t dns = t1_ns - t0_ns, dt = t1_ticks - t0_ticks;
    double ghz;
    if (dns < CALIBRATION_NS) {
        uint64_t end = t0_ns + CALIBRATION_NS;
        while (dmm_clock_ns() < end)
            ;
        dt = dmm_clock_ticks() - t0_ticks;
        uint64_t ns2 = dmm_clock_ns() - t0_ns;
        ghz = ns2 ? (double)dt / (double)ns2 : 1.0;
    } else {
        ghz = (double)dt / (double)dns;
    }
    return ghz > 0 ? ghz : 1.0;
}
