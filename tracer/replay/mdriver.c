/* mdriver.c - mdriver's perf index (see mdriver.h). */
#include "tracer/replay/mdriver.h"

double dmm_mdriver_util_points(double util)
{
    if (util < 0)
        util = 0;
    if (util > 1)
        util = 1;
    return 40.0 * util;
}

double dmm_mdriver_thru_points(double kops)
{
    if (kops >= DMM_MDRIVER_TARGET_KOPS)
        return 60.0;
    return kops > 0 ? 60.0 * kops / DMM_MDRIVER_TARGET_KOPS : 0.0;
}

dmm_mdriver_t dmm_mdriver_score(uint64_t peak_requested, int64_t held, double secs,
                                size_t ops, int valid)
{
    dmm_mdriver_t m = { 0 };
    m.valid = valid;
    if (held > 0 && (uint64_t)held >= peak_requested) {
        m.util = (double)peak_requested / (double)held;
    } else {
        m.util = 1.0;
        m.capped = 1;
    }
    m.secs = secs;
    m.kops = m.secs > 0 ? (double)ops / m.secs / 1000.0 : 0;
    m.util_pts = dmm_mdriver_util_points(m.util);
    m.thru_pts = dmm_mdriver_thru_points(m.kops);
    m.perf = m.util_pts + m.thru_pts;
    return m;
}
