/* hist.h - the latency histogram of dmm replay.
 *
 * HDR-like: exact below 16, then 16 sub-buckets per power of two (relative
 * error under 1/32), so that percentiles never need all samples sorted and
 * the table is a fixed size that can be mapped before the clock starts. */
#ifndef DMM_REPLAY_HIST_H
#define DMM_REPLAY_HIST_H

#include <stddef.h>
#include <stdint.h>

#define DMM_HIST_SUB_BITS 4
#define DMM_HIST_SUB      (1u << DMM_HIST_SUB_BITS)
/* values 0..15 exact, then exponents 4..63 with 16 sub-buckets each */
#define DMM_HIST_BUCKETS  (DMM_HIST_SUB + (64 - DMM_HIST_SUB_BITS) * DMM_HIST_SUB)

typedef struct dmm_hist {
    uint64_t count, sum, min, max;
    uint64_t b[DMM_HIST_BUCKETS];
} dmm_hist_t;

void     dmm_hist_init(dmm_hist_t *h);
void     dmm_hist_add(dmm_hist_t *h, uint64_t v);
size_t   dmm_hist_index(uint64_t v);
uint64_t dmm_hist_low(size_t idx);    /* smallest value of bucket idx */
uint64_t dmm_hist_high(size_t idx);   /* largest value of bucket idx */
/* The q-quantile (0 < q <= 1): the smallest bucket holding the
 * ceil(q*count)-th smallest value, as that bucket's midpoint clamped to
 * [min, max] (the max itself for the last rank); 0 for an empty histogram. */
uint64_t dmm_hist_quantile(const dmm_hist_t *h, double q);

#endif
