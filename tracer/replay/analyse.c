/* analyse.c - the figures of a replay, computed after the clock stopped
 * (see analyse.h). */
#include "tracer/replay/analyse.h"

#include "tracer/replay/clock.h"
#include "tracer/replay/mem.h"

#include <sys/resource.h>

/* Histograms per kind, the sum of cycles, the best and the worst op and
 * how many took over 100x the best. */
static void latencies(dmm_replay_t *r)
{
    for (int k = 0; k < 4; k++)
        dmm_hist_init(&r->hist[k]);
    r->best = UINT64_MAX;
    for (size_t i = 0; i < r->ops_done; i++) {
        unsigned k = r->L.ops[i].kind;
        if (k < DMM_OP_ALLOC || k > DMM_OP_FREE)
            continue;
        uint64_t c = r->lat[i];
        dmm_hist_add(&r->hist[k], c);
        dmm_hist_add(&r->hist[0], c);
        r->sum_cycles += c;
        if (c < r->best) {
            r->best = c;
            r->best_i = i;
        }
        if (c > r->worst || i == 0) {
            r->worst = c;
            r->worst_i = i;
        }
    }
    if (r->best == UINT64_MAX)
        r->best = 0;
    uint64_t lim = r->best * 100;
    for (size_t i = 0; i < r->ops_done; i++) {
        unsigned k = r->L.ops[i].kind;
        if (k >= DMM_OP_ALLOC && k <= DMM_OP_FREE && r->lat[i] > lim)
            r->over100++;
    }
}

static void memory(dmm_replay_t *r)
{
    struct rusage ru;
    r->ru_maxrss = getrusage(RUSAGE_SELF, &ru) == 0 ? (uint64_t)ru.ru_maxrss * 1024u : 0;
    r->hwm = dmm_mem_hwm();
    r->peak_rss = r->peak_rss_sampled;
    /* The high-water mark covers the moments between samples; without the
     * reset it also covers what came before the replay, which in this
     * process (the trace was read in a child) is the baseline itself. */
    if (r->hwm > r->peak_rss)
        r->peak_rss = r->hwm;
    if (r->peak_rss < r->baseline_rss)
        r->peak_rss = r->baseline_rss;
    /* Held memory is anonymous memory: the allocator's code pages, faulted
     * in by its first calls, and the driver's shared mapping of the stream
     * are not what it holds for data.  The high-water mark less the
     * file-backed pages at the end bounds the anonymous peak from below
     * (file-backed pages only grow over the run), as the samples do. */
    uint64_t rss_end, anon_end;
    dmm_mem_statm(r->statm_fd, &rss_end, &anon_end);
    r->shared_end = rss_end - anon_end;
    r->peak_anon = r->peak_anon_sampled;
    if (r->hwm > r->shared_end && r->hwm - r->shared_end > r->peak_anon)
        r->peak_anon = r->hwm - r->shared_end;
    if (r->peak_anon < r->baseline_anon)
        r->peak_anon = r->baseline_anon;
    r->peak_held = (int64_t)(r->peak_anon - r->baseline_anon);
}

void dmm_replay_analyse(dmm_replay_t *r)
{
    r->ghz = dmm_clock_ghz(r->t0_ns, r->t0_ticks, r->t1_ns, r->t1_ticks);
    latencies(r);
    memory(r);
    double secs = (double)r->sum_cycles / r->ghz / 1e9;   /* in the allocator's calls */
    r->mdriver = dmm_mdriver_score(r->peak_requested, r->peak_held, secs, r->ops_done,
                                   !r->failed && !r->corrupt);
}
