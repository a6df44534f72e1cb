/* print.c - dmm replay's text, JSON and CSV outputs (see print.h). */
#include "tracer/replay/print.h"

#include "tracer/base/json.h"
#include "tracer/format/trace.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>   /* GNU basename: no libgen.h, the argument is never modified */

static const char *const kind_name[4] = { "all", "alloc", "realloc", "free" };

const char *dmm_replay_kind_name(unsigned kind)
{
    return kind_name[kind & 3];
}

static double ns_of(const dmm_replay_t *r, double cycles)
{
    return cycles / r->ghz;
}

/* Seconds spent in the allocator's calls. */
static double op_secs(const dmm_replay_t *r)
{
    return ns_of(r, (double)r->sum_cycles) / 1e9;
}

static const char *check_word(const dmm_replay_t *r)
{
    return !r->o->check ? "off" : r->corrupt ? "corrupt" : "ok";
}

/* ------------------------------------------------------------------ */
/* JSON                                                               */

static void json_run(dmm_json_t *j, const dmm_replay_t *r)
{
    dmm_json_string(j, "trace", r->o->trace);
    dmm_json_string(j, "format", dmm_format_name(r->L.h->format));
    dmm_json_string(j, "preload", getenv("LD_PRELOAD"));
    dmm_json_string(j, "dmm_config", getenv("DMM_CONFIG"));
    dmm_json_bool(j, "write", r->o->write);
    dmm_json_string(j, "check", check_word(r));
    dmm_json_u64(j, "ops", r->ops_done);
    dmm_json_u64(j, "ops_in_trace", r->nops);
    dmm_json_u64(j, "ids", r->nids);
    dmm_json_num(j, "wall_s", "%.6f", (double)(r->t1_ns - r->t0_ns) / 1e9);
    dmm_json_num(j, "op_s", "%.6f", op_secs(r));
    dmm_json_num(j, "cycles_per_op", "%.2f",
                 r->ops_done ? (double)r->sum_cycles / (double)r->ops_done : 0.0);
    dmm_json_num(j, "ns_per_op", "%.2f",
                 r->ops_done ? ns_of(r, (double)r->sum_cycles) / (double)r->ops_done : 0.0);
    dmm_json_num(j, "tsc_ghz", "%.4f", r->ghz);
    dmm_json_u64(j, "timer_overhead_cycles", r->timer_overhead);
    dmm_json_u64(j, "runs", r->o->runs ? r->o->runs : 1);
    dmm_json_u64(j, "threads", r->nthreads);
    dmm_json_num(j, "handoff_s", "%.6f", ns_of(r, (double)r->handoff_ticks) / 1e9);
}

/* Per kind (alloc, realloc, free, then all): the summary, then the
 * histograms themselves, for plots: [low ns, count] of every non-empty
 * bucket (16 per power of two of cycles). */
static void json_latency(dmm_json_t *j, const dmm_replay_t *r)
{
    dmm_json_obj(j, "latency");
    for (int k = 1; k <= 4; k++) {
        const dmm_hist_t *h = &r->hist[k % 4];
        double mean = h->count ? (double)h->sum / (double)h->count : 0;
        uint64_t p50 = dmm_hist_quantile(h, 0.5), p99 = dmm_hist_quantile(h, 0.99),
                 p999 = dmm_hist_quantile(h, 0.999);
        dmm_json_obj(j, kind_name[k % 4]);
        dmm_json_u64(j, "count", h->count);
        dmm_json_num(j, "mean_ns", "%.2f", ns_of(r, mean));
        dmm_json_num(j, "p50_ns", "%.2f", ns_of(r, (double)p50));
        dmm_json_num(j, "p99_ns", "%.2f", ns_of(r, (double)p99));
        dmm_json_num(j, "p999_ns", "%.2f", ns_of(r, (double)p999));
        dmm_json_num(j, "max_ns", "%.2f", ns_of(r, (double)h->max));
        dmm_json_num(j, "mean_cycles", "%.2f", mean);
        dmm_json_u64(j, "p50_cycles", p50);
        dmm_json_u64(j, "p99_cycles", p99);
        dmm_json_u64(j, "p999_cycles", p999);
        dmm_json_u64(j, "max_cycles", h->count ? h->max : 0);
        dmm_json_close_obj(j);
    }
    dmm_json_close_obj(j);
    dmm_json_obj(j, "latency_histogram");
    for (int k = 1; k <= 4; k++) {
        const dmm_hist_t *h = &r->hist[k % 4];
        dmm_json_arr(j, kind_name[k % 4]);
        for (size_t i = 0; i < DMM_HIST_BUCKETS; i++) {
            if (!h->b[i])
                continue;
            dmm_json_arr(j, NULL);
            dmm_json_num(j, NULL, "%.2f", ns_of(r, (double)dmm_hist_low(i)));
            dmm_json_u64(j, NULL, h->b[i]);
            dmm_json_close_arr(j);
        }
        dmm_json_close_arr(j);
    }
    dmm_json_close_obj(j);
}

static void json_extremes(dmm_json_t *j, const dmm_replay_t *r)
{
    dmm_json_num(j, "best_ns", "%.2f", ns_of(r, (double)r->best));
    dmm_json_u64(j, "best_cycles", r->best);
    dmm_json_num(j, "worst_ns", "%.2f", ns_of(r, (double)r->worst));
    dmm_json_u64(j, "worst_cycles", r->worst);
    dmm_json_u64(j, "worst_op", r->worst_i);
    dmm_json_string(j, "worst_kind", dmm_replay_kind_name(r->L.ops[r->worst_i].kind));
    dmm_json_u64(j, "over_100x_best", r->over100);
}

static void json_memory(dmm_json_t *j, const dmm_replay_t *r)
{
    dmm_json_u64(j, "peak_rss_bytes", r->peak_rss);
    dmm_json_u64(j, "baseline_rss_bytes", r->baseline_rss);
    dmm_json_i64(j, "peak_held_bytes", r->peak_held);
    dmm_json_u64(j, "peak_requested_bytes", r->peak_requested);
    dmm_json_i64(j, "wastage_bytes", r->peak_held - (int64_t)r->peak_requested);
    dmm_json_u64(j, "ru_maxrss_bytes", r->ru_maxrss);
    dmm_json_bool(j, "hwm_reset", r->hwm_reset);
    dmm_json_u64(j, "samples", r->nsamp_done);
    dmm_json_u64(j, "peak_anon_bytes", r->peak_anon);
    dmm_json_u64(j, "baseline_anon_bytes", r->baseline_anon);
    dmm_json_u64(j, "failed", r->failed);
    /* blocks written as far as the trace says they were resident */
    dmm_json_u64(j, "resident_blocks", r->o->write && !r->o->write_all ? r->L.h->nresident : 0);
    dmm_json_u64(j, "trace_failed_calls", r->L.h->failed);
    dmm_json_u64(j, "trace_unknown_frees", r->L.h->unknown_free);
    dmm_json_u64(j, "trace_free_null", r->L.h->free_null);
}

static void json_corruption(dmm_json_t *j, const dmm_replay_t *r)
{
    dmm_json_obj(j, "corruption");
    dmm_json_u64(j, "op", r->bad_op);
    dmm_json_u64(j, "id", r->bad_id);
    dmm_json_i64(j, "offset", r->bad_off);
    dmm_json_u64(j, "size", r->bad_size);
    dmm_json_string(j, "what", r->bad_what);
    dmm_json_close_obj(j);
}

static void json_mdriver(dmm_json_t *j, const dmm_replay_t *r)
{
    const dmm_mdriver_t *m = &r->mdriver;
    dmm_json_obj(j, "mdriver");
    dmm_json_string(j, "trace", basename(r->o->trace));
    dmm_json_bool(j, "valid", m->valid);
    dmm_json_num(j, "util", "%.4f", m->util);
    dmm_json_bool(j, "util_capped", m->capped);
    dmm_json_u64(j, "ops", r->ops_done);
    dmm_json_num(j, "secs", "%.6f", m->secs);
    dmm_json_num(j, "kops", "%.0f", m->kops);
    dmm_json_num(j, "util_points", "%.2f", m->util_pts);
    dmm_json_num(j, "thru_points", "%.2f", m->thru_pts);
    dmm_json_num(j, "perf_index", "%.2f", m->perf);
    dmm_json_num(j, "target_kops", "%.0f", DMM_MDRIVER_TARGET_KOPS);
    dmm_json_close_obj(j);
}

void dmm_replay_print_json(FILE *f, const dmm_replay_t *r)
{
    dmm_json_t j;
    dmm_json_begin(&j, f, 0);
    json_run(&j, r);
    json_latency(&j, r);
    json_extremes(&j, r);
    json_memory(&j, r);
    if (r->corrupt)
        json_corruption(&j, r);
    if (r->L.h->format == DMM_FMT_REP)
        json_mdriver(&j, r);
    dmm_json_end(&j);
}

/* ------------------------------------------------------------------ */
/* text                                                               */

static void human_bytes(char *buf, size_t len, double b)
{
    const char *neg = b < 0 ? "-" : "";
    if (b < 0)
        b = -b;
    if (b >= 1024.0 * 1024 * 1024)
        snprintf(buf, len, "%s%.2f GiB", neg, b / (1024.0 * 1024 * 1024));
    else if (b >= 1024.0 * 1024)
        snprintf(buf, len, "%s%.2f MiB", neg, b / (1024.0 * 1024));
    else if (b >= 1024.0)
        snprintf(buf, len, "%s%.1f KiB", neg, b / 1024.0);
    else
        snprintf(buf, len, "%s%.0f B", neg, b);
}

static void text_run(FILE *f, const dmm_replay_t *r)
{
    const char *pre = getenv("LD_PRELOAD"), *cfg = getenv("DMM_CONFIG");
    double wall = (double)(r->t1_ns - r->t0_ns) / 1e9;
    double op_s = op_secs(r);
    fprintf(f, "dmm replay %s (%s): %zu operations, %u blocks\n", r->o->trace,
            dmm_format_name(r->L.h->format), r->ops_done, r->nids);
    fprintf(f, "allocator   %s%s%s%s\n", pre ? "LD_PRELOAD=" : "the C library's malloc (no LD_PRELOAD)",
            pre ? pre : "", cfg ? "  DMM_CONFIG=" : "", cfg ? cfg : "");
    fprintf(f, "payloads    %s; integrity check %s\n",
            r->o->write ? "written (--no-write to skip)" : "not written (--no-write)",
            check_word(r));
    fprintf(f, "time        wall %.6f s, in the allocator's calls %.6f s; %.1f cycles/op, %.1f ns/op"
               " (TSC %.3f GHz; timer overhead %" PRIu64 " cycles, included)\n",
            wall, op_s, r->ops_done ? (double)r->sum_cycles / (double)r->ops_done : 0.0,
            r->ops_done ? op_s * 1e9 / (double)r->ops_done : 0.0, r->ghz, r->timer_overhead);
    if (r->o->runs > 1)
        fprintf(f, "runs        %u from the same start: each operation's time is its fastest run's"
                   " (the wall time the last run's)\n", r->o->runs);
    if (r->nthreads > 1)
        fprintf(f, "threads     %u, one per thread of the trace, taking turns in its order: %.6f s"
                   " of the wall time went in handing the turn over\n", r->nthreads,
                ns_of(r, (double)r->handoff_ticks) / 1e9);
}

static void text_latency(FILE *f, const dmm_replay_t *r)
{
    fprintf(f, "\nlatency (ns)      count       mean        p50        p99      p99.9        max\n");
    for (int k = 1; k <= 4; k++) {
        const dmm_hist_t *h = &r->hist[k % 4];
        double mean = h->count ? (double)h->sum / (double)h->count : 0;
        fprintf(f, "  %-8s %12" PRIu64 " %10.1f %10.1f %10.1f %10.1f %10.1f\n", kind_name[k % 4],
                h->count, ns_of(r, mean), ns_of(r, (double)dmm_hist_quantile(h, 0.5)),
                ns_of(r, (double)dmm_hist_quantile(h, 0.99)),
                ns_of(r, (double)dmm_hist_quantile(h, 0.999)),
                ns_of(r, (double)(h->count ? h->max : 0)));
    }
    fprintf(f, "  (percentiles from a log-linear histogram, 16 steps per power of two: within 3%%)\n");
    const dmm_op_t *w = &r->L.ops[r->worst_i];
    char what[96];
    if (w->kind == DMM_OP_FREE)
        snprintf(what, sizeof what, "free of block %u", w->id);
    else
        snprintf(what, sizeof what, "%s of %" PRIu64 " bytes", dmm_replay_kind_name(w->kind),
                 w->size);
    fprintf(f, "\nreal time   best %.1f ns (%" PRIu64 " cycles), worst %.1f ns (%" PRIu64
               " cycles, op %zu: %s, %.0fx the best)\n",
            ns_of(r, (double)r->best), r->best, ns_of(r, (double)r->worst), r->worst, r->worst_i,
            what, r->best ? (double)r->worst / (double)r->best : 0.0);
    fprintf(f, "            %" PRIu64 " operations over 100x the best (%.4f %%)\n", r->over100,
            r->ops_done ? 100.0 * (double)r->over100 / (double)r->ops_done : 0.0);
}

static void text_memory(FILE *f, const dmm_replay_t *r)
{
    int64_t held = r->peak_held;
    char a[32], b[32], c[32], d[32], e[32];
    human_bytes(a, sizeof a, (double)r->peak_rss);
    human_bytes(b, sizeof b, (double)r->baseline_rss);
    human_bytes(c, sizeof c, (double)held);
    human_bytes(d, sizeof d, (double)r->peak_requested);
    human_bytes(e, sizeof e, (double)(held - (int64_t)r->peak_requested));
    fprintf(f, "memory      peak RSS %s (before the replay %s); peak held %s"
               " (anonymous RSS over its level before the replay)\n", a, b, c);
    fprintf(f, "            peak requested %s; wastage (peak held - peak requested) %s", d, e);
    if (r->peak_requested)
        fprintf(f, " (%.1f %% of requested)", 100.0 * (double)(held - (int64_t)r->peak_requested) /
                                                   (double)r->peak_requested);
    fprintf(f, "\n");
    if (!r->o->write)
        fprintf(f, "            (payloads not written: pages never touched are not resident)\n");
    else if (r->L.h->nresident && !r->o->write_all)
        fprintf(f, "            (%" PRIu64 " large blocks written as far as the trace says they "
                   "were resident; --write-all: every byte)\n", r->L.h->nresident);
    if (r->failed)
        fprintf(f, "failed      %" PRIu64 " allocations returned NULL\n", r->failed);
    if (r->L.h->failed || r->L.h->unknown_free)
        fprintf(f, "trace       %" PRIu64 " failed calls and %" PRIu64
                   " frees of unknown blocks in the trace, not replayed\n",
                r->L.h->failed, r->L.h->unknown_free);
    if (r->corrupt)
        fprintf(f, "CORRUPTION  op %zu, block %u of %" PRIu64 " bytes, offset %" PRId64 ": %s\n",
                r->bad_op, r->bad_id, r->bad_size, r->bad_off, r->bad_what);
}

static void text_mdriver(FILE *f, const dmm_replay_t *r)
{
    const dmm_mdriver_t *m = &r->mdriver;
    fprintf(f, "\nmdriver (util = peak requested / peak held; secs = time in the allocator's calls)\n");
    fprintf(f, "trace                 valid  util       ops       secs     Kops\n");
    fprintf(f, "%-20.20s %6s %4.0f%% %9zu %10.6f %8.0f\n", basename(r->o->trace),
            m->valid ? "yes" : "no", 100 * m->util, r->ops_done, m->secs, m->kops);
    fprintf(f, "Total                       %4.0f%% %9zu %10.6f %8.0f\n", 100 * m->util,
            r->ops_done, m->secs, m->kops);
    fprintf(f, "\nPerf index = %.0f/40 (util) + %.0f/60 (thru) = %.0f/100\n", m->util_pts,
            m->thru_pts, m->perf);
    fprintf(f, "(mdriver's perf index: util weight 40, throughput weight 60 against the target"
               " of 54,500 Kops%s)\n",
            m->capped ? "; held below requested, util counted as 100%" : "");
}

void dmm_replay_print_text(FILE *f, const dmm_replay_t *r)
{
    text_run(f, r);
    text_latency(f, r);
    text_memory(f, r);
    if (r->L.h->format == DMM_FMT_REP)
        text_mdriver(f, r);
}

/* ------------------------------------------------------------------ */
/* CSV                                                                */

int dmm_replay_write_csv(const dmm_replay_t *r, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "dmm replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    fprintf(f, "op,requested_bytes,rss_bytes,held_bytes\n");
    for (size_t i = 0; i < r->nsamp_done; i++)
        fprintf(f, "%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRId64 "\n", r->samp[i].op,
                r->samp[i].requested, r->samp[i].rss,
                (int64_t)(r->samp[i].anon - r->baseline_anon));
    if (fclose(f) != 0) {
        fprintf(stderr, "dmm replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}
