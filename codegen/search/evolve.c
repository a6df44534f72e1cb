/* evolve.c - the steps of `dmm evolve` (see evolve.h): a trace and a grammar
 * in, the search's results in DIR out. */
#include "codegen/search/evolve.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codegen/search/pareto.h"
#include "tracer/base/file.h"
#include "tracer/base/json.h"
#include "tracer/format/load.h"

void dmm_evolve_init(dmm_evolve_t *ev, const char *trace, const char *out)
{
    memset(ev, 0, sizeof *ev);
    dmm_ge_config_default(&ev->cfg);
    ev->trace = trace;
    ev->out = out;
}

void dmm_evolve_free(dmm_evolve_t *ev)
{
    dmm_ge_result_free(&ev->r);
    dmm_opstream_free(&ev->s);
    for (int i = 0; i < ev->nmore; i++)
        dmm_opstream_free(&ev->more[i].s);
    ev->nmore = 0;
    dmm_grammar_free(ev->g);
    free(ev->gtext);
    ev->g = NULL;
    ev->gtext = NULL;
}

/* ---- load ------------------------------------------------------------------- */

/* The trace's file name, fit for a one-line title. */
static void trace_name(const char *path, char *buf, size_t cap)
{
    const char *b = strrchr(path, '/');
    b = b && b[1] ? b + 1 : path;
    snprintf(buf, cap, "%s", b);
    for (char *p = buf; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == '#')
            *p = '_';
}

/* DIR exists (or is made) and takes a file. */
static int check_dir(const char *dir, dmm_err_t *err)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        dmm_err_set(err, "%s: cannot create: %s", dir, strerror(errno));
        return -1;
    }
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        dmm_err_set(err, "%s: not a directory", dir);
        return -1;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s/.evolve.XXXXXX", dir);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        dmm_err_set(err, "%s: cannot write: %s", dir, strerror(errno));
        return -1;
    }
    close(fd);
    unlink(tmp);
    return 0;
}

int dmm_evolve_add_trace(dmm_evolve_t *ev, const char *path, int holdout, dmm_err_t *err)
{
    if (ev->nmore == DMM_EVOLVE_TRACES_MAX)
        return dmm_err_set(err, "%s: more than %d traces besides the first", path,
                           DMM_EVOLVE_TRACES_MAX);
    dmm_evolve_trace_t *t = &ev->more[ev->nmore++];
    memset(t, 0, sizeof *t);
    t->path = path;
    t->holdout = holdout;
    return 0;
}

/* The more traces' streams; then, of those the search sees, the first
 * trace's stream and theirs into seen[] (their number). */
static int load_more(dmm_evolve_t *ev, const dmm_opstream_t **seen, dmm_err_t *err)
{
    int n = 0;
    seen[n++] = &ev->s;
    for (int i = 0; i < ev->nmore; i++) {
        dmm_evolve_trace_t *t = &ev->more[i];
        if (dmm_opstream_load(t->path, !ev->no_cache, &t->s, &t->load, err) != 0)
            return -1;
        if (t->s.nops == 0)
            return dmm_err_set(err, "%s: no allocation operations to replay", t->path);
        trace_name(t->path, t->name, sizeof t->name);
        if (!t->holdout)
            seen[n++] = &t->s;
    }
    return n;
}

int dmm_evolve_load(dmm_evolve_t *ev, dmm_err_t *err)
{
    if (dmm_opstream_load(ev->trace, !ev->no_cache, &ev->s, &ev->load, err) != 0)
        return -1;
    if (ev->load.note[0])
        snprintf(ev->warning, sizeof ev->warning, "%s", ev->load.note);
    trace_name(ev->trace, ev->name, sizeof ev->name);
    const dmm_opstream_t *seen[DMM_EVOLVE_TRACES_MAX + 1];
    int nseen = load_more(ev, seen, err);
    if (nseen < 0)
        return -1;
    if (ev->grammar_path) {
        ev->g = dmm_grammar_load(ev->grammar_path, err);
    } else {
        ev->gtext = dmm_grammar_for_streams(seen, nseen, 0, ev->name, err);
        ev->g = ev->gtext ? dmm_grammar_parse("grammar.bnf", ev->gtext, strlen(ev->gtext), err)
                          : NULL;
    }
    if (!ev->g)
        return -1;
    if (ev->s.nops == 0) {
        dmm_err_set(err, "%s: no allocation operations to replay", ev->trace);
        return -1;
    }
    return check_dir(ev->out, err);
}

/* ---- references and search ------------------------------------------------ */

int dmm_evolve_references(dmm_evolve_t *ev, dmm_err_t *err)
{
    for (int i = 0; i < DMM_DESC_NPRESETS; i++)
        ev->refs[i] = (dmm_ge_ref_t){ .name = dmm_desc_preset_name(i) };
    if (dmm_ge_references(&ev->s, ev->refs, DMM_DESC_NPRESETS, err) != 0)
        return -1;
    const dmm_ge_ref_t *kng = &ev->refs[0], *lea = &ev->refs[1];
    if (!kng->T || !lea->M) {
        dmm_err_set(err, "%s: KNG costs nothing or LEA holds no memory on this trace",
                 ev->trace);
        return -1;
    }
    ev->cfg.kng = *kng;
    ev->cfg.lea = *lea;
    /* the other traces: the presets on each; those the search sees are its
     * cfg.extra */
    ev->cfg.nextra = 0;
    for (int k = 0; k < ev->nmore; k++) {
        dmm_evolve_trace_t *t = &ev->more[k];
        for (int i = 0; i < DMM_DESC_NPRESETS; i++)
            t->refs[i] = (dmm_ge_ref_t){ .name = dmm_desc_preset_name(i) };
        if (dmm_ge_references(&t->s, t->refs, DMM_DESC_NPRESETS, err) != 0)
            return -1;
        if (!t->refs[0].T || !t->refs[1].M)
            return dmm_err_set(err, "%s: KNG costs nothing or LEA holds no memory on this trace",
                               t->path);
        if (!t->holdout)
            ev->extra[ev->cfg.nextra++] = (dmm_ge_trace_t){ &t->s, t->refs[0], t->refs[1] };
    }
    ev->cfg.extra = ev->cfg.nextra ? ev->extra : NULL;
    return 0;
}

int dmm_evolve_search(dmm_evolve_t *ev, dmm_err_t *err)
{
    if (dmm_ge_run(&ev->cfg, ev->g, &ev->s, &ev->r, err) != 0)
        return -1;
    ev->jobs = ev->cfg.jobs;
    if (ev->jobs <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        ev->jobs = n > 0 ? (int)n : 1;
    }
    return 0;
}

/* ---- outputs ---------------------------------------------------------------- */

/* DIR/name, written by put() through a file that appears only when whole. */
static int output(const dmm_evolve_t *ev, const char *name,
                  void (*put)(FILE *f, const dmm_evolve_t *ev), dmm_err_t *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", ev->out, name);
    dmm_outfile_t o;
    if (dmm_out_open(&o, path, 1, err) != 0)
        return -1;
    put(o.fp, ev);
    return dmm_out_commit(&o, err);
}

static void put_grammar(FILE *f, const dmm_evolve_t *ev)
{
    fputs(ev->gtext, f);
}

static void put_references(FILE *f, const dmm_evolve_t *ev)
{
    fprintf(f, "name,T,M,F\n");
    for (int i = 0; i < DMM_DESC_NPRESETS; i++) {
        const dmm_ge_ref_t *x = &ev->refs[i];
        fprintf(f, "%s,%llu,%zu,%.9f\n", x->name, (unsigned long long)x->T, x->M,
                dmm_ge_fitness(x->T, x->M, ev->r.T_KNG, ev->r.M_LEA));
    }
}

static void put_log(FILE *f, const dmm_evolve_t *ev)
{
    fprintf(f, "generation,evaluations,cache_hits,best_F,mean_F,best_T,best_M,seconds,"
               "best_phenotype_dmm_line_count,valid,simulations,invalid,hopeless,cut,"
               "saved_seconds,partial,hypervolume,front\n");
    for (int i = 0; i < ev->r.nlog; i++) {
        const dmm_ge_gen_t *row = &ev->r.log[i];
        fprintf(f, "%d,%llu,%llu,", row->gen, (unsigned long long)row->evaluations,
                (unsigned long long)row->cache_hits);
        if (row->nvalid)
            fprintf(f, "%.9f,%.9f,%llu,%zu,", row->best_F, row->mean_F,
                    (unsigned long long)row->best_T, row->best_M);
        else
            fprintf(f, ",,,,");
        fprintf(f, "%.3f,%d,%d,%llu,%llu,%llu,%llu,%.3f,%d,", row->seconds, row->best_lines,
                row->nvalid, (unsigned long long)row->simulations,
                (unsigned long long)row->invalid, (unsigned long long)row->hopeless,
                (unsigned long long)row->cut, row->saved_s, row->partial);
        if (ev->cfg.objectives)
            fprintf(f, "%.9f,%d\n", row->hypervolume, row->front);
        else
            fprintf(f, ",\n");
    }
}

/* The rank-th best distinct design (0-based), or lean design, as .dmm text
 * with its title; its length, or 0 when it does not fit or does not parse. */
static size_t top_text(const dmm_evolve_t *ev, int lean, int rank, char *buf, size_t cap)
{
    const dmm_ge_top_t *t = lean ? &ev->r.lean[rank] : &ev->r.top[rank];
    dmm_desc_t d;
    dmm_err_t e;
    if (dmm_desc_parse("top", t->key, strlen(t->key), &d, &e) != 0)
        return 0;
    char what[64];
    if (lean)
        snprintf(what, sizeof what, "lean=%d weight=%g", rank + 1, t->weight);
    else
        snprintf(what, sizeof what, "rank=%d", rank + 1);
    snprintf(d.title, sizeof d.title, "dmm 1  trace=%.100s seed=%llu %s fitness=%.6f T=%llu M=%zu",
             ev->name, (unsigned long long)ev->cfg.seed, what, t->F, (unsigned long long)t->T,
             t->M);
    size_t n = dmm_desc_print(&d, buf, cap);
    return n < cap ? n : 0;
}

static void put_parameters(dmm_json_t *j, const dmm_evolve_t *ev)
{
    const dmm_ge_config_t *c = &ev->cfg;
    dmm_json_obj(j, "parameters");
    dmm_json_i64(j, "population", c->pop);
    dmm_json_i64(j, "elite", c->elite);
    dmm_json_i64(j, "generations", c->gens);
    dmm_json_i64(j, "tournament", c->tournament);
    dmm_json_num(j, "pcross", "%g", c->pcross);
    dmm_json_num(j, "pmut", "%g", c->pmut);
    dmm_json_i64(j, "wraps", c->wraps);
    dmm_json_i64(j, "length", c->length);
    dmm_json_u64(j, "codon_bound", c->codon_bound);
    dmm_json_i64(j, "jobs", ev->jobs);
    dmm_json_num(j, "time_budget", "%g", c->time_budget);
    dmm_json_num(j, "hopeless", "%g", c->hopeless);
    dmm_json_bool(j, "finish_hopeless", c->finish_hopeless);
    dmm_json_i64(j, "traces_seen", c->nextra + 1);
    dmm_json_string(j, "aggregate", c->worst_case ? "worst" : "mean");
    dmm_json_arr_flat(j, "lean");
    for (int i = 0; i < c->nlean; i++)
        dmm_json_num(j, NULL, "%g", c->lean[i]);
    dmm_json_close_arr(j);
    dmm_json_num(j, "climb", "%g", c->climb);
    dmm_json_close_obj(j);
}

static void put_search(FILE *f, const dmm_evolve_t *ev)
{
    static const char *const why[] = { "completed", "time budget", "interrupted",
                                       "a worker failed" };
    const dmm_ge_result_t *r = &ev->r;
    dmm_json_t j;
    dmm_json_begin(&j, f, 1);
    dmm_json_string(&j, "trace", ev->trace);
    dmm_json_string(&j, "grammar", ev->grammar_path ? ev->grammar_path
                                                    : "grammar.bnf (generated)");
    dmm_json_u64(&j, "operations", ev->s.nops);
    put_parameters(&j, ev);
    dmm_json_u64(&j, "seed", ev->cfg.seed);
    dmm_json_u64(&j, "T_KNG", r->T_KNG);
    dmm_json_u64(&j, "M_LEA", r->M_LEA);
    dmm_json_arr(&j, "references");
    for (int i = 0; i < DMM_DESC_NPRESETS; i++) {
        const dmm_ge_ref_t *x = &ev->refs[i];
        dmm_json_obj(&j, NULL);
        dmm_json_string(&j, "name", x->name);
        dmm_json_num(&j, "F", "%.9f", dmm_ge_fitness(x->T, x->M, r->T_KNG, r->M_LEA));
        dmm_json_u64(&j, "T", x->T);
        dmm_json_u64(&j, "M", x->M);
        dmm_json_string(&j, "dmm", dmm_desc_preset(x->name));
        dmm_json_close_obj(&j);
    }
    dmm_json_close_arr(&j);
    for (int lean = 0; lean < 2; lean++) {
        dmm_json_arr(&j, lean ? "lean" : "top");
        for (int i = 0; i < (lean ? r->nlean : r->ntop); i++) {
            const dmm_ge_top_t *t = lean ? &r->lean[i] : &r->top[i];
            char text[DMM_DESC_MAX * 160 + 400];
            dmm_json_obj(&j, NULL);
            dmm_json_i64(&j, "rank", i + 1);
            if (lean)
                dmm_json_num(&j, "weight", "%g", t->weight);
            dmm_json_num(&j, "F", "%.9f", t->F);
            dmm_json_u64(&j, "T", t->T);
            dmm_json_u64(&j, "M", t->M);
            dmm_json_string(&j, "dmm", top_text(ev, lean, i, text, sizeof text) ? text : "");
            dmm_json_close_obj(&j);
        }
        dmm_json_close_arr(&j);
    }
    if (ev->nscore > 1) {
        dmm_json_arr(&j, "traces");   /* the best on each (traces.csv) */
        for (int i = 0; i < ev->nscore; i++) {
            const dmm_evolve_score_t *sc = &ev->score[i];
            dmm_json_obj(&j, NULL);
            dmm_json_string(&j, "trace", sc->name);
            dmm_json_bool(&j, "holdout", sc->holdout);
            dmm_json_u64(&j, "operations", sc->ops);
            dmm_json_num(&j, "F", "%.9f", sc->F);
            dmm_json_u64(&j, "T", sc->T);
            dmm_json_u64(&j, "M", sc->M);
            dmm_json_string(&j, "best_preset", sc->preset ? sc->preset : "");
            dmm_json_num(&j, "F_best_preset", "%.9f", sc->F_preset);
            dmm_json_close_obj(&j);
        }
        dmm_json_close_arr(&j);
    }
    if (r->found) {
        dmm_json_obj(&j, "best");
        dmm_json_num(&j, "F", "%.9f", r->F);
        dmm_json_num(&j, "F_mean", "%.9f", r->F_mean);
        dmm_json_num(&j, "F_worst", "%.9f", r->F_worst);
        dmm_json_u64(&j, "T", r->T);
        dmm_json_u64(&j, "M", r->M);
        dmm_json_i64(&j, "allocators", r->best.n);
        dmm_json_close_obj(&j);
    } else {
        dmm_json_null(&j, "best");
    }
    dmm_json_i64(&j, "generations_run", r->nlog - 1);
    dmm_json_string(&j, "stopped", why[r->stopped]);
    dmm_json_u64(&j, "evaluations", r->evaluations);
    dmm_json_u64(&j, "cache_hits", r->cache_hits);
    dmm_json_u64(&j, "simulations", r->simulations);
    dmm_json_u64(&j, "invalid", r->invalid);
    dmm_json_obj(&j, "hopeless");
    if (r->cap < DMM_GE_WORST)
        dmm_json_num(&j, "cap", "%.9f", r->cap);
    else
        dmm_json_null(&j, "cap");
    dmm_json_u64(&j, "simulations", r->hopeless);
    dmm_json_u64(&j, "cut", r->cut);
    dmm_json_num(&j, "seconds_saved", "%.3f", r->saved_s);
    dmm_json_close_obj(&j);
    if (r->climb.ran) {
        dmm_json_obj(&j, "climb");
        dmm_json_num(&j, "F_start", "%.9f", r->climb.F_start);
        dmm_json_num(&j, "F", "%.9f", r->F);
        dmm_json_i64(&j, "steps", r->climb.steps);
        dmm_json_i64(&j, "starts", r->climb.starts);
        dmm_json_u64(&j, "neighbours", r->climb.neighbours);
        dmm_json_u64(&j, "simulations", r->climb.simulations);
        dmm_json_bool(&j, "optimum", r->climb.optimum);
        dmm_json_num(&j, "seconds", "%.3f", r->climb.seconds);
        dmm_json_close_obj(&j);
    } else {
        dmm_json_null(&j, "climb");
    }
    dmm_json_num(&j, "seconds", "%.3f", r->seconds);
    dmm_json_end(&j);
}

/* DIR/top-N.dmm for each of the best distinct designs and DIR/lean-N.dmm
 * for each lean one; older ones past them removed. */
static int write_top(const dmm_evolve_t *ev, dmm_err_t *err)
{
    char path[4096], text[DMM_DESC_MAX * 160 + 400];
    for (int lean = 0; lean < 2; lean++) {
        int n = lean ? ev->r.nlean : ev->r.ntop;
        for (int i = 0; i < (lean ? DMM_GE_LEAN_MAX : DMM_EVOLVE_TOP_MAX); i++) {
            snprintf(path, sizeof path, "%s/%s-%d.dmm", ev->out, lean ? "lean" : "top", i + 1);
            if (i >= n) {
                unlink(path);
                continue;
            }
            size_t tl = top_text(ev, lean, i, text, sizeof text);
            if (!tl)
                return dmm_err_set(err, "%s: the description does not fit in %zu bytes", path,
                                   sizeof text);
            if (dmm_write_file(path, text, tl, err) != 0)
                return -1;
        }
    }
    return 0;
}

/* ---- the front (cfg.objectives) -------------------------------------------- */

int dmm_evolve_knee(const dmm_evolve_t *ev)
{
    const dmm_ge_result_t *r = &ev->r;
    int k = 0, b = ev->cfg.objectives;
    double *o = malloc((size_t)(r->nfront > 0 ? r->nfront : 1) * 3 * sizeof *o);
    if (!o || !r->nfront) {
        free(o);
        return -1;
    }
    /* the objectives as the search compared them */
    for (int i = 0; i < r->nfront; i++) {
        const dmm_ge_top_t *t = &r->front[i];
        k = dmm_ge_objective_values(b, t->t, t->m, t->w, t->p,
                                    o + (size_t)i * (size_t)__builtin_popcount((unsigned)b));
    }
    int knee = dmm_pareto_knee(o, r->nfront, k);
    free(o);
    return knee;
}

static double per(uint64_t x, uint64_t ref)
{
    return (double)x / (double)(ref ? ref : 1);
}

/* A row of front.csv: the normalised objectives n (time, memory, worst,
 * p999) as given. */
static void put_front_row(FILE *f, const dmm_evolve_t *ev, const char *kind, const char *name,
                          uint64_t T, size_t M, uint64_t W, uint64_t P, const double *n)
{
    const dmm_ge_result_t *r = &ev->r;
    fprintf(f, "%s,%s,%llu,%zu,%llu,%llu,%.9f,%.9f,%.9f,%.9f,%.9f\n", kind, name,
            (unsigned long long)T, M, (unsigned long long)W, (unsigned long long)P, n[0], n[1],
            n[2], n[3], dmm_ge_fitness(T, M, r->T_KNG, r->M_LEA));
}

/* A row for a design scored on the first trace alone (a preset, eq. 1's
 * winner with one trace): its objectives normalised by that trace's KNG
 * and LEA. */
static void put_front_row1(FILE *f, const dmm_evolve_t *ev, const char *kind, const char *name,
                           uint64_t T, size_t M, uint64_t W, uint64_t P)
{
    const dmm_ge_result_t *r = &ev->r;
    double n[4] = { per(T, r->T_KNG), per(M, r->M_LEA), per(W, r->W_KNG), per(P, r->P_KNG) };
    put_front_row(f, ev, kind, name, T, M, W, P, n);
}

/* front.csv: the front's designs (front-N.dmm, the knee marked), the five
 * presets and the weighted-sum winner, each with T, M, W and P and those
 * normalised as the search saw them (T/T_KNG, M/M_LEA, W/W_KNG, P/P_KNG;
 * several traces: the means over them for the front's designs, the first
 * trace alone for the presets). */
static void put_front(FILE *f, const dmm_evolve_t *ev)
{
    const dmm_ge_result_t *r = &ev->r;
    int knee = dmm_evolve_knee(ev);
    fprintf(f, "kind,name,T,M,W,P,time,memory,worst,p999,F\n");
    for (int i = 0; i < r->nfront; i++) {
        char name[64];
        snprintf(name, sizeof name, "front-%d.dmm", i + 1);
        const dmm_ge_top_t *t = &r->front[i];
        double n[4] = { t->t, t->m, t->w, t->p };
        put_front_row(f, ev, i == knee ? "knee" : "front", name, t->T, t->M, t->W, t->P, n);
    }
    for (int i = 0; i < DMM_DESC_NPRESETS; i++)
        put_front_row1(f, ev, "preset", ev->refs[i].name, ev->refs[i].T, ev->refs[i].M,
                       ev->refs[i].W, ev->refs[i].P);
    if (r->found && !ev->cfg.nextra)
        put_front_row1(f, ev, "weighted-sum", "best.dmm", r->T, r->M, r->W, r->P);
}

/* front.gp: gnuplot draws front.png from front.csv (time against memory;
 * with worst as a third objective, its value labels each design). */
static void put_front_gp(FILE *f, const dmm_evolve_t *ev)
{
    int b = ev->cfg.objectives;
    /* a third objective labels each design of the front: worst (column 9)
     * or p999 (10) */
    int third = b & DMM_GE_OBJ_WORST ? 9 : b & DMM_GE_OBJ_P999 ? 10 : 0;
    fprintf(f,
            "# gnuplot front.gp (in this directory): front.png from front.csv\n"
            "set datafile separator ','\n"
            "set terminal pngcairo size 900,650\n"
            "set output 'front.png'\n"
            "set title 'Pareto front of %s (%d designs): T/T_KNG against M/M_LEA' noenhanced\n"
            "set xlabel 'time (T / T_{KNG})'\n"
            "set ylabel 'memory (M / M_{LEA})'\n"
            "set key outside right\n"
            "set grid\n"
            "f(k, want, v) = k eq want ? v : NaN\n"
            "plot 'front.csv' skip 1 using 7:(f(strcol(1), 'front', $8)) with points pt 7 "
            "title 'front', \\\n"
            "     '' skip 1 using 7:(f(strcol(1), 'knee', $8)) with points pt 5 ps 2 "
            "title 'knee (PICK default)', \\\n"
            "     '' skip 1 using 7:(f(strcol(1), 'preset', $8)):2 with labels point pt 2 "
            "offset 1,1 title 'presets', \\\n"
            "     '' skip 1 using 7:(f(strcol(1), 'weighted-sum', $8)) with points pt 9 ps 2 "
            "title 'weighted sum (eq. 1)'",
            ev->name, ev->r.nfront);
    if (third)
        fprintf(f, ", \\\n     '' skip 1 using 7:(f(strcol(1), 'front', $8)):(sprintf('%%.2f', "
                   "$%d)) with labels offset 0,-1 font ',7' notitle", third);
    fputc('\n', f);
}

/* front-1.dmm .. front-N.dmm, in front.csv's order; older ones beyond N
 * removed. */
static int write_front(const dmm_evolve_t *ev, dmm_err_t *err)
{
    char path[4096], text[DMM_DESC_MAX * 160 + 400];
    const dmm_ge_result_t *r = &ev->r;
    int knee = dmm_evolve_knee(ev);
    for (int i = 0;; i++) {
        snprintf(path, sizeof path, "%s/front-%d.dmm", ev->out, i + 1);
        if (i >= r->nfront) {
            if (unlink(path) != 0 && i >= DMM_EVOLVE_TOP_MAX)
                break;
            continue;
        }
        const dmm_ge_top_t *t = &r->front[i];
        dmm_desc_t d;
        dmm_err_t e;
        if (dmm_desc_parse("front", t->key, strlen(t->key), &d, &e) != 0)
            return dmm_err_set(err, "%s: %s", path, e.msg);
        snprintf(d.title, sizeof d.title,
                 "dmm 1  trace=%.100s seed=%llu front=%d/%d%s fitness=%.6f T=%llu M=%zu W=%llu "
                 "P=%llu", ev->name, (unsigned long long)ev->cfg.seed, i + 1, r->nfront,
                 i == knee ? " knee" : "", t->F, (unsigned long long)t->T, t->M,
                 (unsigned long long)t->W, (unsigned long long)t->P);
        size_t n = dmm_desc_print(&d, text, sizeof text);
        if (n >= sizeof text)
            return dmm_err_set(err, "%s: the description does not fit in %zu bytes", path,
                               sizeof text);
        if (dmm_write_file(path, text, n, err) != 0)
            return -1;
    }
    return 0;
}

size_t dmm_evolve_best_text(dmm_evolve_t *ev, char *buf, size_t cap)
{
    dmm_ge_result_t *r = &ev->r;
    snprintf(r->best.title, sizeof r->best.title,
             "dmm 1  trace=%.100s seed=%llu fitness=%.6f T=%llu M=%zu", ev->name,
             (unsigned long long)ev->cfg.seed, r->F, (unsigned long long)r->T, r->M);
    size_t n = dmm_desc_print(&r->best, buf, cap);
    return n < cap ? n : 0;
}

int dmm_evolve_write(dmm_evolve_t *ev, dmm_err_t *err)
{
    if ((ev->gtext && output(ev, "grammar.bnf", put_grammar, err) != 0) ||
        output(ev, "references.csv", put_references, err) != 0 ||
        output(ev, "log.csv", put_log, err) != 0 ||
        output(ev, "search.json", put_search, err) != 0 || write_top(ev, err) != 0)
        return -1;
    char tpath[4096];
    snprintf(tpath, sizeof tpath, "%s/traces.csv", ev->out);
    if (ev->nscore > 1) {
        if (output(ev, "traces.csv", dmm_evolve_put_traces, err) != 0)
            return -1;
    } else {
        unlink(tpath);   /* an older run's */
    }
    if (ev->cfg.objectives &&
        (write_front(ev, err) != 0 || output(ev, "front.csv", put_front, err) != 0 ||
         output(ev, "front.gp", put_front_gp, err) != 0))
        return -1;
    char path[4096];
    snprintf(path, sizeof path, "%s/best.dmm", ev->out);
    if (!ev->r.found) {
        unlink(path);   /* an older run's; it does not belong to this one */
        return 0;
    }
    char text[DMM_DESC_MAX * 160 + 400];
    size_t tl = dmm_evolve_best_text(ev, text, sizeof text);
    if (!tl)
        return dmm_err_set(err, "%s: the description does not fit in %zu bytes", path,
                           sizeof text);
    return dmm_write_file(path, text, tl, err);
}
