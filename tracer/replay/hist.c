/* hist.c - the latency histogram (see hist.h). */
#include "tracer/replay/hist.h"

#include <math.h>
#include <string.h>

void dmm_hist_init(dmm_hist_t *h)
{
    memset(h, 0, sizeof *h);
    h->min = UINT64_MAX;
}

size_t dmm_hist_index(uint64_t v)
{
    if (v < DMM_HIST_SUB)
        return (size_t)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v);   /* >= DMM_HIST_SUB_BITS */
    unsigned sub = (unsigned)(v >> (e - DMM_HIST_SUB_BITS)) - DMM_HIST_SUB;
    return DMM_HIST_SUB + (size_t)(e - DMM_HIST_SUB_BITS) * DMM_HIST_SUB + sub;
}

uint64_t dmm_hist_low(size_t idx)
{
    if (idx < DMM_HIST_SUB)
        return idx;
    unsigned e = (unsigned)((idx - DMM_HIST_SUB) / DMM_HIST_SUB) + DMM_HIST_SUB_BITS;
    uint64_t sub = (idx - DMM_HIST_SUB) % DMM_HIST_SUB;
    return (DMM_HIST_SUB + sub) << (e - DMM_HIST_SUB_BITS);
}

uint64_t dmm_hist_high(size_t idx)
{
    if (idx < DMM_HIST_SUB)
        return idx;
    unsigned e = (unsigned)((idx - DMM_HIST_SUB) / DMM_HIST_SUB) + DMM_HIST_SUB_BITS;
    return dmm_hist_low(idx) + ((1ull << (e - DMM_HIST_SUB_BITS)) - 1);
}

void dmm_hist_add(dmm_hist_t *h, uint64_t v)
{
    h->b[dmm_hist_index(v)]++;
    h->count++;
    h->sum += v;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
}

uint64_t dmm_hist_quantile(const dmm_hist_t *h, double q)
{
    if (!h->count)
        return 0;
    if (q <= 0)
        return h->min;
    double r = ceil(q * (double)h->count);
    uint64_t rank = r < 1 ? 1 : r > (double)h->count ? h->count : (uint64_t)r;
    if (rank == h->count)
        return h->max;   /* the largest value is known exactly */
    uint64_t seen = 0;
    for (size_t i = 0; i < DMM_HIST_BUCKETS; i++) {
        seen += h->b[i];
        if (seen >= rank) {
            uint64_t lo = dmm_hist_low(i), hi = dmm_hist_high(i);
            uint64_t mid = lo + (hi - lo) / 2;
            if (mid < h->min)
                mid = h->min;
            if (mid > h->max)
                mid = h->max;
            return mid;
        }
    }
    return h->max;
}
