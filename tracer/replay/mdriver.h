/* mdriver.h - mdriver's perf index for one replayed trace, as the CS:APP
 * malloc lab's driver scores it (its paper: util weight 40, throughput
 * weight 60 against a target of 54,500 Kops, capped), so that a .rep
 * trace's replay reads like mdriver's own table. */
#ifndef DMM_REPLAY_MDRIVER_H
#define DMM_REPLAY_MDRIVER_H

#include <stddef.h>
#include <stdint.h>

#define DMM_MDRIVER_TARGET_KOPS 54500.0

double dmm_mdriver_util_points(double util);
double dmm_mdriver_thru_points(double kops);

typedef struct dmm_mdriver {
    double util, secs, kops, util_pts, thru_pts, perf;
    int valid;    /* no failed allocation, no corruption */
    int capped;   /* held was not above requested: util counted as 100% */
} dmm_mdriver_t;

/* mdriver's row for a run of ops operations that took secs in the
 * allocator's calls: util = peak requested / peak held. */
dmm_mdriver_t dmm_mdriver_score(uint64_t peak_requested, int64_t held, double secs,
                                size_t ops, int valid);

#endif
