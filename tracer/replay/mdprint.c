/* mdprint.c - `dmm replay --mdriver`'s report: mdriver's table, totals and
 * perf index, or the same as JSON (see mdrun.h). */
#include "tracer/replay/mdrun.h"

#include <stdlib.h>

#include "tracer/base/json.h"
#include "tracer/replay/mdriver.h"

typedef struct totals {
    uint64_t ops;
    double   secs, util, kops;
    int      n, valid;
} totals_t;

static totals_t totals(const dmm_mdrun_t *m, int n)
{
    totals_t t = { 0 };
    t.valid = 1;
    for (int i = 0; i < n; i++) {
        if (m[i].status)
            continue;
        t.n++;
        t.valid &= m[i].valid;
        t.ops += m[i].ops;
        t.secs += m[i].secs;
        t.util += m[i].util;
    }
    t.util = t.n ? t.util / t.n : 0;
    t.kops = t.secs > 0 ? (double)t.ops / t.secs / 1000.0 : 0;
    return t;
}

static const char *allocator_name(char *buf, size_t cap)
{
    const char *pre = getenv("LD_PRELOAD"), *cfg = getenv("DMM_CONFIG");
    if (!pre || !*pre)
        snprintf(buf, cap, "glibc malloc");
    else if (cfg && *cfg)
        snprintf(buf, cap, "%s (DMM_CONFIG=%s)", pre, cfg);
    else
        snprintf(buf, cap, "%s", pre);
    return buf;
}

void dmm_mdrun_print(FILE *f, const dmm_mdrun_t *m, int n, const dmm_mdrun_opts_t *o)
{
    char name[600];
    totals_t t = totals(m, n);
    fprintf(f, "Results for %s:\n", allocator_name(name, sizeof name));
    fprintf(f, "trace  valid  util     ops      secs   Kops\n");
    int fp = 0, rss = 0;
    for (int i = 0; i < n; i++) {
        if (m[i].status) {
            fprintf(f, "%2d        -     -        -         -      -  %s (not read)\n", i,
                    m[i].name);
            continue;
        }
        fp |= m[i].heap_footprint;
        rss |= !m[i].heap_footprint;
        if (!m[i].valid) {
            fprintf(f, "%2d       no     -  %6llu         -      -  %s\n", i,
                    (unsigned long long)m[i].ops, m[i].name);
            continue;
        }
        fprintf(f, "%2d      yes  %3.0f%%  %6llu  %8.6f %6.0f  %s\n", i, 100 * m[i].util,
                (unsigned long long)m[i].ops, m[i].secs, m[i].kops, m[i].name);
    }
    if (t.valid && t.n) {
        fprintf(f, "Total        %3.0f%%  %6llu  %8.6f %6.0f\n\n", 100 * t.util,
                (unsigned long long)t.ops, t.secs, t.kops);
        double u = dmm_mdriver_util_points(t.util), th = dmm_mdriver_thru_points(t.kops);
        fprintf(f, "Perf index = %.0f/40 (util) + %.0f/60 (thru) = %.0f/100\n", u, th, u + th);
    } else {
        int errors = 0;
        for (int i = 0; i < n; i++)
            errors += m[i].status || !m[i].valid;
        fprintf(f, "Terminated with %d errors\n", errors);
    }
    for (int i = 0; i < n; i++)
        if (!m[i].status && !m[i].valid)
            fprintf(f, "ERROR [trace %d, %s]: %s\n", i, m[i].name, m[i].why);
    fprintf(f, "(util: the peak payload over %s; secs: the fastest of up to %d runs, once the "
               "%d fastest agree within %g%%)\n",
            fp && rss ? "the library's footprint or the RSS"
            : fp      ? "the library's footprint"
                      : "the peak anonymous RSS over its level before the trace",
            o->maxsamples, o->k, 100 * o->eps);
}

void dmm_mdrun_json(FILE *f, const dmm_mdrun_t *m, int n, const dmm_mdrun_opts_t *o)
{
    char name[600];
    totals_t t = totals(m, n);
    fprintf(f, "{\"allocator\": ");
    dmm_json_str(f, allocator_name(name, sizeof name));
    fprintf(f, ", \"k\": %d, \"eps\": %g, \"maxsamples\": %d, \"traces\": [", o->k, o->eps,
            o->maxsamples);
    for (int i = 0; i < n; i++) {
        fprintf(f, "%s{\"trace\": ", i ? ", " : "");
        dmm_json_str(f, m[i].name);
        fprintf(f, ", \"read\": %s, \"valid\": %s, \"why\": ", m[i].status ? "false" : "true",
                m[i].valid ? "true" : "false");
        dmm_json_str(f, m[i].why);
        fprintf(f, ", \"ops\": %llu, \"util\": %.6f, \"peak_payload\": %llu, \"heap\": %llu, "
                   "\"heap_from\": \"%s\", \"secs\": %.9f, \"kops\": %.1f, \"runs\": %d}",
                (unsigned long long)m[i].ops, m[i].util, (unsigned long long)m[i].peak_payload,
                (unsigned long long)m[i].heap, m[i].heap_footprint ? "footprint" : "rss",
                m[i].secs, m[i].kops, m[i].runs);
    }
    double u = dmm_mdriver_util_points(t.util), th = dmm_mdriver_thru_points(t.kops);
    fprintf(f, "], \"total\": {\"valid\": %s, \"util\": %.6f, \"ops\": %llu, \"secs\": %.9f, "
               "\"kops\": %.1f}, \"perf\": {\"util\": %.3f, \"thru\": %.3f, \"index\": %.3f, "
               "\"target_kops\": %.0f}}\n",
            t.valid && t.n ? "true" : "false", t.util, (unsigned long long)t.ops, t.secs, t.kops,
            u, th, u + th, DMM_MDRIVER_TARGET_KOPS);
}
