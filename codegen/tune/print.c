/* print.c - dmm tune-glibc's output, text and JSON (see print.h). */
#include "codegen/tune/print.h"

#include <gnu/libc-version.h>
#include <inttypes.h>
#include <string.h>

#include "tracer/base/json.h"

/* ---- text helpers ------------------------------------------------------- */

static void human_bytes(char *buf, size_t cap, double b)
{
    if (b >= 1048576.0)
        snprintf(buf, cap, "%.2f MiB", b / 1048576.0);
    else if (b >= 1024.0)
        snprintf(buf, cap, "%.1f KiB", b / 1024.0);
    else
        snprintf(buf, cap, "%.0f B", b);
}

static void human_value(char *buf, size_t cap, int i, long long v)
{
    if (v == DMM_TUNE_DEFAULT)
        snprintf(buf, cap, "default");
    else if (i == DMM_TUNE_ARENA_MAX || v < 1024 || v % 1024)
        snprintf(buf, cap, "%lld", v);
    else if (v % 1048576 == 0)
        snprintf(buf, cap, "%lld (%lld MiB)", v, v / 1048576);
    else
        snprintf(buf, cap, "%lld (%lld KiB)", v, v / 1024);
}

/* The final run's change in words: "faster (p=0.012)". */
static void final_words(char *buf, size_t cap, const dmm_tune_cmp_t *c, const char *less,
                        const char *more)
{
    if (c->measurable)
        snprintf(buf, cap, "%s (p=%.3f)", c->measurable < 0 ? less : more, c->p);
    else if (c->p < 0.05)
        snprintf(buf, cap, "negligible (p=%.3f)", c->p);
    else
        snprintf(buf, cap, "no significant change (p=%.2f)", c->p);
}

/* --verify's change in words: "faster by 3.1 % (p=0.012)". */
static void verify_words(char *buf, size_t cap, const dmm_tune_cmp_t *c, const char *less,
                         const char *more)
{
    if (c->measurable)
        snprintf(buf, cap, "%s by %.1f %% (p=%.3f)", c->measurable < 0 ? less : more,
                 c->change_pct < 0 ? -c->change_pct : c->change_pct, c->p);
    else if (c->p < 0.05)
        snprintf(buf, cap, "negligible (%+.2f %%, p=%.3f)", c->change_pct, c->p);
    else
        snprintf(buf, cap, "no significant change (p=%.2f)", c->p);
}

/* One row of a table of both sides: median (min-max) of each, the change,
 * the words. */
static void table_row(FILE *f, const char *what, const dmm_tune_cmp_t *c, int bytes,
                      const char *words)
{
    char cell[2][128];
    for (int s = 0; s < 2; s++) {
        dmm_tune_stat3_t x = s ? c->tun : c->def;
        if (bytes) {
            char a[32], b[32], m[32];
            human_bytes(m, sizeof m, x.med);
            human_bytes(a, sizeof a, x.min);
            human_bytes(b, sizeof b, x.max);
            snprintf(cell[s], sizeof cell[s], "%s (%s-%s)", m, a, b);
        } else {
            snprintf(cell[s], sizeof cell[s], "%.2f ms (%.2f-%.2f)", x.med * 1e3, x.min * 1e3,
                     x.max * 1e3);
        }
    }
    fprintf(f, "%-10s %-34s %-34s %+6.1f %%  %s\n", what, cell[0], cell[1], c->change_pct, words);
}

/* ---- the search, as text -------------------------------------------------- */

static void text_search(const dmm_tune_outcome_t *o, FILE *f)
{
    const dmm_tuner_t *tu = &o->tu;
    const dmm_tune_result_t *r = &o->r;
    const char *base = strrchr(o->trace, '/');
    char b1[64];
    fprintf(f, "dmm tune-glibc: %s, %" PRIu64 " operations, glibc %s\n",
            base && base[1] ? base + 1 : o->trace, tu->ref.ops, gnu_get_libc_version());
    human_bytes(b1, sizeof b1, (double)tu->baseline);
    fprintf(f, "fitness F = 0.5*t/t_default + 0.5*M/M_default; t: replay wall time, M: peak held "
               "+ %s baseline (min of %d replays each)\n", b1, tu->reps);
    fprintf(f, "defaults: t %.2f ms (spread over %d replays %.1f %%), M %.2f MiB\n",
            tu->t_def * 1e3, tu->reps, 100 * tu->noise, tu->M_def / 1048576.0);
    fprintf(f, "search: %d generations of %d, %zu candidates measured, %llu cache hits, %llu "
               "replays, %.1f s%s\n", r->ge.nlog - 1, o->cfg.pop, tu->ncand,
            (unsigned long long)r->ge.cache_hits, (unsigned long long)tu->replays, o->t_search,
            r->ge.stopped == DMM_GE_DONE ? "" : r->ge.stopped == DMM_GE_TIME ? " (time budget)"
                                                                           : " (interrupted)");
    fprintf(f, "\nbest of the search (F %.4f; the defaults: 1; the best of many noisy "
               "measurements flatters itself:\nthe final run below is the fair comparison):\n",
            r->F);
    for (int i = 0; i < DMM_TUNE_N; i++) {
        char v[64];
        human_value(v, sizeof v, i, r->best.v[i]);
        fprintf(f, "  %-15s %s%s\n", dmm_tunables_info[i].name, v,
                i == DMM_TUNE_ARENA_MAX ? "  (a one-thread replay cannot measure it)"
                : o->pruned & (1 << i)  ? "  -> default: F without it is no worse (pruned)"
                                        : "");
    }
}

static void text_final(const dmm_tune_outcome_t *o, FILE *f)
{
    const dmm_tune_final_t *fr = &o->fr;
    static const struct { const char *what; int bytes; const char *less, *more; } rows[] = {
        { "wall time", 0, "faster", "slower" },
        { "in calls", 0, "faster", "slower" },
        { "peak RSS", 1, "smaller", "larger" },
        { "peak held", 1, "smaller", "larger" },
    };
    fprintf(f, "\nfinal run: defaults and tuned alternating, %d replays each (median, min-max)\n",
            fr->n);
    fprintf(f, "%-10s %-34s %-34s %s\n", "", "defaults", "tuned", "change");
    for (int q = 0; q < DMM_TUNE_NQ; q++) {
        char words[64];
        final_words(words, sizeof words, &fr->q[q], rows[q].less, rows[q].more);
        table_row(f, rows[q].what, &fr->q[q], rows[q].bytes, words);
    }
    fprintf(f, "%-10s %-34s %-34.4f %+6.1f %%\n", "F", "1.0000", fr->F, dmm_tune_pct(fr->F, 1.0));
    int w = fr->q[DMM_TUNE_Q_WALL].measurable, h = fr->q[DMM_TUNE_Q_HELD].measurable;
    if (fr->recommended)
        fprintf(f, "verdict: worth setting (the final run measured a gain and no cost)\n");
    else
        fprintf(f, "verdict: keep glibc's defaults: the final run measured %s\n",
                fr->F >= 1.0 ? "no gain over them"
                : w > 0 || h > 0 ? "a cost as well as a gain"
                                 : "no significant gain");
}

void dmm_tune_print_text(const dmm_tune_outcome_t *o, FILE *f)
{
    text_search(o, f);
    if (!o->tuned) {
        fprintf(f, "\nglibc's defaults won: nothing to set for this trace.\n");
        fprintf(f, "total %.1f s\n", o->t_total);
        return;
    }
    fprintf(f, "\nto use them, paste into the shell that starts the program:\n");
    fprintf(f, "export GLIBC_TUNABLES=%s\n", o->full);
    fprintf(f, "# or the same with the older variables (GLIBC_TUNABLES wins where both are "
               "set):\n");
    fprintf(f, "export");
    for (int i = 0; i < DMM_TUNE_N; i++)
        if (o->best.v[i] != DMM_TUNE_DEFAULT)
            fprintf(f, " %s=%lld", dmm_tunables_info[i].env, o->best.v[i]);
    fprintf(f, "\n");
    if (dmm_tunables_static_threshold(&o->best))
        fprintf(f, "# note: setting these turns glibc's dynamic mmap threshold off\n");
    if (o->fr.n)
        text_final(o, f);
    fprintf(f, "total %.1f s\n", o->t_total);
}

/* ---- the search, as JSON -------------------------------------------------- */

static const char *stopped_name(int s)
{
    return s == DMM_GE_DONE ? "completed" : s == DMM_GE_TIME ? "time budget" : "interrupted";
}

static void json_tunables(dmm_json_t *j, const char *key, const dmm_tunables_t *t)
{
    dmm_json_obj(j, key);
    for (int i = 0; i < DMM_TUNE_N; i++) {
        if (t->v[i] == DMM_TUNE_DEFAULT)
            dmm_json_string(j, dmm_tunables_info[i].name, "default");
        else
            dmm_json_i64(j, dmm_tunables_info[i].name, t->v[i]);
    }
    dmm_json_close_obj(j);
}

static void json_fitness(dmm_json_t *j, const dmm_tuner_t *tu)
{
    dmm_json_obj(j, "fitness");
    dmm_json_string(j, "formula", "0.5*t/t_default+0.5*M/M_default");
    dmm_json_string(j, "t", "wall_s, min of reps");
    dmm_json_string(j, "M", "peak_held_bytes + baseline_bytes, min of reps");
    dmm_json_u64(j, "baseline_bytes", tu->baseline);
    dmm_json_num(j, "t_default_s", "%.6f", tu->t_def);
    dmm_json_num(j, "M_default_bytes", "%.0f", tu->M_def);
    dmm_json_num(j, "default_time_spread", "%.4f", tu->noise);
    dmm_json_close_obj(j);
}

/* The engine's log, a row a generation, and every candidate measured. */
static void json_log(dmm_json_t *j, const dmm_tune_outcome_t *o)
{
    const dmm_ge_result_t *ge = &o->r.ge;
    dmm_json_arr(j, "log");
    for (int i = 0; i < ge->nlog; i++) {
        const dmm_ge_gen_t *row = &ge->log[i];
        dmm_json_obj(j, NULL);
        dmm_json_i64(j, "gen", row->gen);
        dmm_json_i64(j, "valid", row->nvalid);
        if (row->nvalid) {
            dmm_json_num(j, "best_F", "%.6f", row->best_F);
            dmm_json_num(j, "mean_F", "%.6f", row->mean_F);
        } else {
            dmm_json_null(j, "best_F");
            dmm_json_null(j, "mean_F");
        }
        dmm_json_num(j, "seconds", "%.3f", row->seconds);
        dmm_json_close_obj(j);
    }
    dmm_json_close_arr(j);
    dmm_json_arr(j, "candidates");
    for (size_t i = 0; i < o->tu.ncand; i++) {
        const dmm_tune_cand_t *k = &o->tu.cand[i];
        dmm_json_obj(j, NULL);
        json_tunables(j, "settings", &k->t);
        if (k->valid) {
            dmm_json_num(j, "F", "%.6f", k->F);
            dmm_json_num(j, "wall_s", "%.6f", k->m.wall);
            dmm_json_num(j, "op_s", "%.6f", k->m.op);
            dmm_json_u64(j, "peak_held_bytes", k->m.held);
            dmm_json_u64(j, "peak_rss_bytes", k->m.rss);
        } else {
            dmm_json_null(j, "F");
        }
        dmm_json_close_obj(j);
    }
    dmm_json_close_arr(j);
}

static void json_search(dmm_json_t *j, const dmm_tune_outcome_t *o)
{
    const dmm_tuner_t *tu = &o->tu;
    const dmm_ge_result_t *ge = &o->r.ge;
    dmm_json_obj(j, "search");
    dmm_json_i64(j, "population", o->cfg.pop);
    dmm_json_i64(j, "elite", o->cfg.elite);
    dmm_json_i64(j, "generations", o->cfg.gens);
    dmm_json_i64(j, "generations_run", ge->nlog - 1);
    dmm_json_u64(j, "seed", o->cfg.seed);
    dmm_json_i64(j, "reps", tu->reps);
    dmm_json_num(j, "pmut", "%g", o->cfg.pmut);
    dmm_json_num(j, "pcross", "%g", o->cfg.pcross);
    dmm_json_i64(j, "length", o->cfg.length);
    dmm_json_string(j, "stopped", stopped_name(ge->stopped));
    dmm_json_u64(j, "evaluations", ge->evaluations);
    dmm_json_u64(j, "cache_hits", ge->cache_hits);
    dmm_json_u64(j, "candidates_measured", tu->ncand);
    dmm_json_u64(j, "replays", tu->replays);
    dmm_json_u64(j, "failed_replays", tu->failures);
    dmm_json_num(j, "seconds", "%.3f", o->t_search);
    json_log(j, o);
    dmm_json_close_obj(j);
}

/* One side of the final run: every replay, then the medians. */
static void json_final_side(dmm_json_t *j, const dmm_tune_final_t *fr, int tuned)
{
    const dmm_tune_meas_t *m = tuned ? fr->tun : fr->def;
    dmm_json_obj(j, tuned ? "tuned" : "defaults");
    dmm_json_arr(j, "wall_s");
    for (int i = 0; i < fr->n; i++)
        dmm_json_num(j, NULL, "%.6f", m[i].wall);
    dmm_json_close_arr(j);
    dmm_json_arr(j, "op_s");
    for (int i = 0; i < fr->n; i++)
        dmm_json_num(j, NULL, "%.6f", m[i].op);
    dmm_json_close_arr(j);
    dmm_json_arr(j, "peak_rss_bytes");
    for (int i = 0; i < fr->n; i++)
        dmm_json_u64(j, NULL, m[i].rss);
    dmm_json_close_arr(j);
    dmm_json_arr(j, "peak_held_bytes");
    for (int i = 0; i < fr->n; i++)
        dmm_json_u64(j, NULL, m[i].held);
    dmm_json_close_arr(j);
    static const char *const name[DMM_TUNE_NQ] = { "wall_s", "op_s", "peak_rss_bytes",
                                                   "peak_held_bytes" };
    for (int q = 0; q < DMM_TUNE_NQ; q++) {
        const dmm_tune_stat3_t *s = tuned ? &fr->q[q].tun : &fr->q[q].def;
        const char *fmt = q <= DMM_TUNE_Q_OP ? "%.6f" : "%.0f";
        char key[64];
        snprintf(key, sizeof key, "median_%s", name[q]);
        dmm_json_num(j, key, fmt, s->med);
        snprintf(key, sizeof key, "min_%s", name[q]);
        dmm_json_num(j, key, fmt, s->min);
        snprintf(key, sizeof key, "max_%s", name[q]);
        dmm_json_num(j, key, fmt, s->max);
    }
    dmm_json_close_obj(j);
}

static void json_final(dmm_json_t *j, const dmm_tune_final_t *fr)
{
    static const char *const names[DMM_TUNE_NQ] = { "wall_s", "op_s", "peak_rss_bytes",
                                                    "peak_held_bytes" };
    if (!fr->n) {
        dmm_json_null(j, "final");
        return;
    }
    dmm_json_obj(j, "final");
    dmm_json_i64(j, "reps", fr->n);
    json_final_side(j, fr, 0);
    json_final_side(j, fr, 1);
    dmm_json_obj(j, "change_pct");
    for (int q = 0; q < DMM_TUNE_NQ; q++)
        dmm_json_num(j, names[q], "%.2f", fr->q[q].change_pct);
    dmm_json_close_obj(j);
    dmm_json_obj(j, "p_value");
    for (int q = 0; q < DMM_TUNE_NQ; q++)
        dmm_json_num(j, names[q], "%.4f", fr->q[q].p);
    dmm_json_close_obj(j);
    dmm_json_num(j, "F", "%.6f", fr->F);
    dmm_json_close_obj(j);
}

/* The winner: what was pruned, the settings, and the lines to paste. */
static void json_winner(dmm_json_t *j, const dmm_tune_outcome_t *o)
{
    dmm_json_arr(j, "pruned");
    for (int i = 0; i < DMM_TUNE_N; i++)
        if (o->pruned & (1 << i))
            dmm_json_string(j, NULL, dmm_tunables_info[i].name);
    dmm_json_close_arr(j);
    json_tunables(j, "best", &o->best);
    dmm_json_bool(j, "tuned", o->tuned);
    dmm_json_bool(j, "recommended", o->fr.recommended);
    dmm_json_bool(j, "dynamic_mmap_threshold", !dmm_tunables_static_threshold(&o->best));
    dmm_json_string(j, "GLIBC_TUNABLES", o->full);
    dmm_json_obj(j, "env");
    for (int i = 0; i < DMM_TUNE_N; i++) {
        if (o->best.v[i] == DMM_TUNE_DEFAULT)
            continue;
        char v[32];
        snprintf(v, sizeof v, "%lld", o->best.v[i]);
        dmm_json_string(j, dmm_tunables_info[i].env, v);
    }
    dmm_json_close_obj(j);
}

void dmm_tune_print_json(const dmm_tune_outcome_t *o, FILE *f)
{
    dmm_json_t j;
    dmm_json_begin(&j, f, 0);
    dmm_json_string(&j, "trace", o->trace);
    dmm_json_string(&j, "glibc", gnu_get_libc_version());
    dmm_json_u64(&j, "ops", o->tu.ref.ops);
    dmm_json_string(&j, "grammar", o->grammar_path ? o->grammar_path : "built-in");
    json_fitness(&j, &o->tu);
    json_search(&j, o);
    json_tunables(&j, "search_best", &o->r.best);
    char gl[1024];
    dmm_tunables_glibc(&o->r.best, gl, sizeof gl);
    dmm_json_string(&j, "search_best_glibc", gl);   /* GLIBC_TUNABLES of search_best alone */
    dmm_json_num(&j, "search_F", "%.6f", o->r.F);
    dmm_json_num(&j, "prune_tolerance", "%g", o->prune_tol);
    json_winner(&j, o);
    json_final(&j, &o->fr);
    dmm_json_num(&j, "seconds", "%.3f", o->t_total);
    dmm_json_end(&j);
}

/* ---- --verify ------------------------------------------------------------- */

static const struct {
    const char *key, *what, *less, *more;
    int bytes;
} vrows[DMM_TUNE_NV] = {
    { "wall_s", "wall time", "faster", "slower", 0 },
    { "cpu_s", "CPU time", "less", "more", 0 },
    { "maxrss_bytes", "peak RSS", "smaller", "larger", 1 },
};

/* The measurable changes of one sign (-1 gains, +1 costs) appended at
 * buf + *n, "wall time -3.1 % (p=0.012); ..."; returns how many. */
static int verify_list(char *buf, size_t cap, size_t *n, const dmm_tune_verify_t *v, int sign)
{
    int k = 0;
    for (int q = 0; q < DMM_TUNE_NV; q++) {
        if (v->q[q].measurable != sign)
            continue;
        int w = snprintf(buf + *n, *n < cap ? cap - *n : 0, "%s%s %+.1f %% (p=%.3f)",
                         k++ ? "; " : "", vrows[q].what, v->q[q].change_pct, v->q[q].p);
        *n += w > 0 ? (size_t)w : 0;
        if (*n >= cap)
            *n = cap - 1;
    }
    return k;
}

/* The verdict in words: "gains: wall time -3.1 % (p=0.012); costs: ...". */
static void verify_verdict(char *buf, size_t cap, const dmm_tune_verify_t *v)
{
    char gains[512], costs[512];
    size_t ng = 0, nc = 0;
    gains[0] = costs[0] = 0;
    int g = verify_list(gains, sizeof gains, &ng, v, -1);
    int c = verify_list(costs, sizeof costs, &nc, v, 1);
    if (g && c)
        snprintf(buf, cap, "gains: %s; costs: %s", gains, costs);
    else if (g)
        snprintf(buf, cap, "gains: %s", gains);
    else if (c)
        snprintf(buf, cap, "no measurable gain \u2014 costs: %s", costs);
    else
        snprintf(buf, cap, "no measurable gain, no measurable cost");
}

/* The program's command line, arguments with blanks quoted and long ones
 * elided. */
static void print_command(FILE *f, char *const argv[])
{
    for (int i = 0; argv[i]; i++) {
        const char *a = argv[i];
        if (strlen(a) > 40 || strchr(a, '\n'))
            fprintf(f, "%s'...'", i ? " " : "");
        else if (!a[0] || strpbrk(a, " \t'\"\\$`*?;&|<>()"))
            fprintf(f, "%s'%s'", i ? " " : "", a);
        else
            fprintf(f, "%s%s", i ? " " : "", a);
    }
}

void dmm_tune_print_verify_text(const dmm_tune_verify_t *v, FILE *f)
{
    char words[128], verdict[1200];
    fprintf(f, "dmm tune-glibc --verify: ");
    print_command(f, v->argv);
    fprintf(f, "\ntuned:    GLIBC_TUNABLES=%s\n", v->gt_tun ? v->gt_tun : "");
    if (v->gt_def)
        fprintf(f, "defaults: GLIBC_TUNABLES=%s (your other entries)\n", v->gt_def);
    else
        fprintf(f, "defaults: glibc's, GLIBC_TUNABLES unset\n");
    fprintf(f, "one warm-up, then defaults and tuned alternating, %d runs each (median, min-max);\n"
               "every run exited %d with the warm-up's %zu bytes of output\n",
            v->reps, v->status, v->output_bytes);
    fprintf(f, "%-10s %-34s %-34s %s\n", "", "defaults", "tuned", "change");
    for (int q = 0; q < DMM_TUNE_NV; q++) {
        verify_words(words, sizeof words, &v->q[q], vrows[q].less, vrows[q].more);
        table_row(f, vrows[q].what, &v->q[q], vrows[q].bytes, words);
    }
    verify_verdict(verdict, sizeof verdict, v);
    fprintf(f, "verdict: %s\n", verdict);
    fprintf(f, "total %.1f s\n", v->seconds);
}

static void json_stat3(dmm_json_t *j, const char *key, const dmm_tune_stat3_t *s,
                       const char *fmt)
{
    dmm_json_obj(j, key);
    dmm_json_num(j, "median", fmt, s->med);
    dmm_json_num(j, "min", fmt, s->min);
    dmm_json_num(j, "max", fmt, s->max);
    dmm_json_close_obj(j);
}

/* Every run of both sides. */
static void json_verify_runs(dmm_json_t *j, const dmm_tune_verify_t *v)
{
    dmm_json_obj(j, "runs");
    for (int s = 0; s < 2; s++) {
        const dmm_tune_run_t *r = s ? v->tun : v->def;
        dmm_json_obj(j, s ? "tuned" : "defaults");
        dmm_json_arr(j, "wall_s");
        for (int i = 0; i < v->reps; i++)
            dmm_json_num(j, NULL, "%.6f", r[i].wall);
        dmm_json_close_arr(j);
        dmm_json_arr(j, "cpu_s");
        for (int i = 0; i < v->reps; i++)
            dmm_json_num(j, NULL, "%.6f", r[i].cpu);
        dmm_json_close_arr(j);
        dmm_json_arr(j, "maxrss_bytes");
        for (int i = 0; i < v->reps; i++)
            dmm_json_u64(j, NULL, r[i].maxrss);
        dmm_json_close_arr(j);
        dmm_json_close_obj(j);
    }
    dmm_json_close_obj(j);
}

static void json_verify_compare(dmm_json_t *j, const dmm_tune_verify_t *v)
{
    dmm_json_obj(j, "compare");
    for (int q = 0; q < DMM_TUNE_NV; q++) {
        const dmm_tune_cmp_t *c = &v->q[q];
        const char *fmt = vrows[q].bytes ? "%.0f" : "%.6f";
        char words[128];
        verify_words(words, sizeof words, c, vrows[q].less, vrows[q].more);
        dmm_json_obj(j, vrows[q].key);
        json_stat3(j, "defaults", &c->def, fmt);
        json_stat3(j, "tuned", &c->tun, fmt);
        dmm_json_num(j, "change_pct", "%.4f", c->change_pct);
        dmm_json_num(j, "p", "%.6f", c->p);
        dmm_json_string(j, "effect", c->measurable < 0 ? "gain" : c->measurable > 0 ? "cost"
                                                                                    : "none");
        dmm_json_string(j, "verdict", words);
        dmm_json_close_obj(j);
    }
    dmm_json_close_obj(j);
}

void dmm_tune_print_verify_json(const dmm_tune_verify_t *v, FILE *f)
{
    char verdict[1200];
    dmm_json_t j;
    dmm_json_begin(&j, f, 0);
    dmm_json_arr(&j, "program");
    for (int i = 0; v->argv[i]; i++)
        dmm_json_string(&j, NULL, v->argv[i]);
    dmm_json_close_arr(&j);
    dmm_json_obj(&j, "GLIBC_TUNABLES");
    dmm_json_string(&j, "defaults", v->gt_def);
    dmm_json_string(&j, "tuned", v->gt_tun);
    dmm_json_close_obj(&j);
    dmm_json_string(&j, "glibc", gnu_get_libc_version());
    dmm_json_i64(&j, "reps", v->reps);
    dmm_json_i64(&j, "exit_status", v->status);
    dmm_json_u64(&j, "output_bytes", v->output_bytes);
    json_verify_runs(&j, v);
    json_verify_compare(&j, v);
    verify_verdict(verdict, sizeof verdict, v);
    dmm_json_string(&j, "verdict", verdict);
    dmm_json_num(&j, "seconds", "%.3f", v->seconds);
    dmm_json_end(&j);
}
