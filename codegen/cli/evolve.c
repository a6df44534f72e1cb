/* evolve.c - `dmm evolve`: the GE search on one trace and its outputs
 * (codegen/search/evolve.h has the steps and what each file holds).
 *
 *   dmm evolve [options] --out DIR TRACE
 *
 * Bad input (a trace that cannot be read or has no operation, a malformed
 * grammar, a DIR that cannot be written) exits 2 before the search, with
 * DIR untouched; a search in which no individual was valid writes the other
 * files, removes any old best.dmm and exits 2. */
#include "codegen/cli/cli.h"

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/cli/util.h"
#include "codegen/search/evolve.h"
#include "codegen/search/mpi.h"

static void usage(FILE *f)
{
    fprintf(f,
        "usage: dmm evolve [options] --out DIR TRACE [TRACE...]\n"
        "\n"
        "Search for the DMM that minimises F = 0.5*T/T_KNG + 0.5*M/M_LEA on TRACE by\n"
        "grammatical evolution (T: simulated cost, M: peak footprint, both from dmm sim).\n"
        "\n"
        "  --out DIR         where the results go (created if missing)\n"
        "  --grammar FILE    a .bnf grammar (default: generated from the trace and\n"
        "                    written to DIR/grammar.bnf)\n"
        "  --pop N           population size (100)\n"
        "  --gens N          generations after the initial population (250)\n"
        "  --elite N         best individuals kept unchanged (10)\n"
        "  --tournament N    tournament size (2)\n"
        "  --pcross P        one-point crossover probability (0.8)\n"
        "  --pmut P          per-codon mutation probability (0.02)\n"
        "  --wraps N         maximum number of wraps of the genome (3)\n"
        "  --length N        codons per genome (50)\n"
        "  --seed N          random seed (1); the result depends on it and the inputs only\n"
        "  --jobs N          simulation threads (online CPUs); does not change the result\n"
        "  --time SECONDS    stop when this budget is spent, keeping the best so far\n"
        "  --hopeless X      a candidate X times worse than the worse of KNG and LEA\n"
        "                    is hopeless: ranked there, and its simulation stops as\n"
        "                    soon as it gets there (1: worse than both references;\n"
        "                    0 = rank by the exact F and simulate every candidate\n"
        "                    to the end)\n"
        "  --finish-hopeless simulate hopeless candidates to the end all the same\n"
        "                    (same result, slower: shows what the cuts save)\n"
        "  TRACE...          several traces: every design is scored on each, against\n"
        "                    that trace's own KNG and LEA, and ranked by the mean F\n"
        "                    (the grammar holds the sizes of all of them)\n"
        "  --aggregate HOW   several traces: rank by the mean F (mean) or the worst\n"
        "                    trace's F (worst)\n"
        "  --holdout FILE    a trace the search never sees, on which the best is scored\n"
        "                    afterwards (repeatable); traces.csv: seen against unseen\n"
        "  --objectives LIST two or three of time, memory, worst, p999: a Pareto search\n"
        "                    (NSGA-II) over T, M, the costliest single operation and\n"
        "                    the 99.9th percentile of single operations, in\n"
        "                    place of eq. 1's one number; writes the front as\n"
        "                    DIR/front-1.dmm .. front-N.dmm, front.csv (with the\n"
        "                    presets and eq. 1's winner, best.dmm) and front.gp\n"
        "  --pooled          simulate each design with a pool of its own address span\n"
        "                    (every chunk in pages held and populated from the start),\n"
        "                    as a latency-minded program runs it: with --objectives\n"
        "                    ...,worst, the costliest call of the pooled design\n"
        "  --top K           write the K best distinct designs as DIR/top-1.dmm ..\n"
        "                    top-K.dmm (5; at most 50): make evolve measures them\n"
        "  --lean LIST       for each weight w of LIST (0.25,0.1,0.03; none: no\n"
        "                    lean designs), the design that minimises\n"
        "                    w*T/T_KNG + (1-w)*M/M_LEA (eq. 1: w = 0.5) unless it is a\n"
        "                    top one: DIR/lean-1.dmm ..; make evolve measures them\n"
        "                    too: a program whose heap is most of its RSS and whose\n"
        "                    calls are little of its time gains more from them (not\n"
        "                    with --objectives, whose front has them all)\n"
        "  --climb SHARE     after the generations, climb from the best design: its\n"
        "                    neighbours (one decision of its genome taken\n"
        "                    differently: a class, a size boundary, an option)\n"
        "                    tried a few at a time, the best better one taken,\n"
        "                    until none is better; SHARE of --time goes to it\n"
        "                    (0.25; 0: none, the paper's search; at most 0.9)\n"
        "  --no-cache        parse TRACE even when TRACE.ops holds its operations, and\n"
        "                    write no TRACE.ops (by default it is kept beside the trace)\n"
        "  --mpi             under mpirun: rank 0 searches, every other rank evaluates\n"
        "                    candidates (same result as one process); --jobs is then\n"
        "                    per rank (1)\n"
        "  -q, --quiet       no progress on stderr\n"
        "\n"
        "Ctrl-C stops the search within a moment and keeps the best so far.\n"
        "Exit status: 0 done, 1 usage error, 2 bad input or no valid individual,\n"
        "3 (--mpi) a rank died or mpirun ended the job: the best so far was written.\n");
}

/* "W[,W...]" (each in (0,1), at most DMM_GE_LEAN_MAX) into w, or "none";
 * their number, or -1 (said on stderr). */
static int parse_lean(const char *v, double *w)
{
    if (!strcmp(v, "none"))
        return 0;
    int n = 0;
    const char *p = v;
    for (;;) {
        char *end;
        errno = 0;
        double x = strtod(p, &end);
        if (end == p || errno || !(x > 0 && x < 1) || (*end && *end != ',')) {
            fprintf(stderr, "dmm evolve: --lean %s: weights of time in (0,1), comma-separated "
                            "(e.g. 0.25,0.1,0.03), or none\n", v);
            return -1;
        }
        if (n == DMM_GE_LEAN_MAX) {
            fprintf(stderr, "dmm evolve: --lean %s: at most %d weights\n", v, DMM_GE_LEAN_MAX);
            return -1;
        }
        w[n++] = x;
        if (!*end)
            return n;
        p = end + 1;
    }
}

/* ---- progress -------------------------------------------------------------- */

typedef struct progress {
    int tty, quiet;
} progress_t;

static void fmt_secs(double s, char *buf, size_t cap)
{
    if (s < 0) {
        snprintf(buf, cap, "?");
        return;
    }
    unsigned long t = (unsigned long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, cap, "%lu:%02lu:%02lu", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, cap, "%lu:%02lu", t / 60, t % 60);
}

static void fmt_F(double F, char *buf, size_t cap)
{
    if (F >= DMM_GE_WORST)
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, "%.6f", F);
}

static void on_generation(const dmm_ge_gen_t *row, const dmm_ge_config_t *cfg, void *arg)
{
    progress_t *p = arg;
    if (p->quiet)
        return;
    char best[32], mean[32], left[32];
    fmt_F(row->best_F, best, sizeof best);
    fmt_F(row->mean_F, mean, sizeof mean);
    fmt_secs(row->eta, left, sizeof left);
    if (p->tty) {
        char line[256];
        int n = snprintf(line, sizeof line,
                         "gen %d/%d  best %s  mean %s  %.0f eval/s  hits %llu  left %s",
                         row->gen, cfg->gens, best, mean, row->eval_per_s,
                         (unsigned long long)row->cache_hits, left);
        fprintf(stderr, "\r%s%*s", line, n < 79 ? 79 - n : 0, "");
    } else {
        fprintf(stderr,
                "dmm evolve: gen %d/%d best_F=%s mean_F=%s valid=%d eval/s=%.1f "
                "cache_hits=%llu left=%s\n",
                row->gen, cfg->gens, best, mean, row->nvalid, row->eval_per_s,
                (unsigned long long)row->cache_hits, left);
    }
    fflush(stderr);
}

/* The numeric options: name, range, field of the configuration. */
typedef struct int_opt { const char *name; long lo, hi; size_t off; } int_opt_t;
typedef struct real_opt { const char *name; double lo, hi; size_t off; } real_opt_t;

static const int_opt_t int_opts[] = {
    { "--pop", 2, 1000000, offsetof(dmm_ge_config_t, pop) },
    { "--gens", 0, 100000000, offsetof(dmm_ge_config_t, gens) },
    { "--elite", 0, 1000000, offsetof(dmm_ge_config_t, elite) },
    { "--tournament", 1, 1000000, offsetof(dmm_ge_config_t, tournament) },
    { "--wraps", 0, 1000, offsetof(dmm_ge_config_t, wraps) },
    { "--length", 1, 100000, offsetof(dmm_ge_config_t, length) },
    { "--jobs", 1, 256, offsetof(dmm_ge_config_t, jobs) },
    { "--top", 0, DMM_EVOLVE_TOP_MAX, offsetof(dmm_ge_config_t, top) },
};

static const real_opt_t real_opts[] = {
    { "--pcross", 0, 1, offsetof(dmm_ge_config_t, pcross) },
    { "--pmut", 0, 1, offsetof(dmm_ge_config_t, pmut) },
    { "--time", 0, 1e9, offsetof(dmm_ge_config_t, time_budget) },
    { "--hopeless", 0, 1e9, offsetof(dmm_ge_config_t, hopeless) },
    { "--climb", 0, 0.9, offsetof(dmm_ge_config_t, climb) },
};

static const int_opt_t *int_option(const char *a)
{
    for (size_t i = 0; i < sizeof int_opts / sizeof int_opts[0]; i++)
        if (!strcmp(a, int_opts[i].name))
            return &int_opts[i];
    return NULL;
}

static const real_opt_t *real_option(const char *a)
{
    for (size_t i = 0; i < sizeof real_opts / sizeof real_opts[0]; i++)
        if (!strcmp(a, real_opts[i].name))
            return &real_opts[i];
    return NULL;
}

/* "time,memory[,worst|p999]" as DMM_GE_OBJ_* bits; -1 (said on stderr) for a
 * word that is none of them, one given twice, or fewer than two. */
static int parse_objectives(const char *v)
{
    int bits = 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", v);
    for (char *save = NULL, *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        int b = !strcmp(w, "time") ? DMM_GE_OBJ_TIME
                : !strcmp(w, "memory") ? DMM_GE_OBJ_MEMORY
                : !strcmp(w, "worst") ? DMM_GE_OBJ_WORST
                : !strcmp(w, "p999") ? DMM_GE_OBJ_P999 : 0;
        if (!b || (bits & b)) {
            fprintf(stderr, "dmm evolve: --objectives %s: %s '%s' (the objectives are time, "
                            "memory, worst and p999)\n", v, b ? "twice" : "unknown objective", w);
            return -1;
        }
        bits |= b;
    }
    if (__builtin_popcount((unsigned)bits) < 2 || __builtin_popcount((unsigned)bits) > 3) {
        fprintf(stderr, "dmm evolve: --objectives %s: name two or three of time, memory, "
                        "worst and p999\n", v);
        return -1;
    }
    return bits;
}

/* What the options say together: 0, or 1 (said on stderr). */
static int check_options(const dmm_ge_config_t *cfg)
{
    const char *bad = cfg->elite >= cfg->pop ? "--elite must be below --pop"
                      : cfg->hopeless > 0 && cfg->hopeless < 1
                          ? "--hopeless must be 0 (off) or at least 1"
                      : cfg->tournament > cfg->pop ? "--tournament must not exceed --pop"
                                                   : NULL;
    if (bad)
        fprintf(stderr, "dmm evolve: %s\n", bad);
    return bad != NULL;
}

/* The traces after the first, and the held-out ones, into ev (a directory:
 * its process that allocated most).  0, or the exit status. */
static int add_traces(dmm_evolve_t *ev, const char *const *more, const int *holdout, int n)
{
    static char picks[DMM_EVOLVE_TRACES_MAX][4096];
    for (int i = 0; i < n; i++) {
        const char *t = dmm_cli_trace("evolve", more[i], picks[i], sizeof picks[i]);
        dmm_err_t e;
        if (!t)
            return 2;
        if (dmm_evolve_add_trace(ev, t, holdout[i], &e) != 0) {
            fprintf(stderr, "dmm evolve: %s\n", e.msg);
            return 1;
        }
    }
    return 0;
}

/* The options into ev (its trace and DIR too) and *quiet.  *done says the
 * command ends here (--help: 0, a usage error: 1), with the status
 * returned. */
static int parse_options(int argc, char **argv, dmm_evolve_t *ev, int *quiet, int *mpi,
                         int *done)
{
    dmm_ge_config_t cfg;
    dmm_ge_config_default(&cfg);
    cfg.climb = 0.25;
    const char *out = NULL, *grammar_path = NULL, *trace = NULL;
    static const char *more[DMM_EVOLVE_TRACES_MAX];
    static int holdout[DMM_EVOLVE_TRACES_MAX];
    int nmore = 0, no_cache = 0;
    *done = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n;
        double x;
        const int_opt_t *io;
        const real_opt_t *ro;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            *quiet = 1;
            continue;
        } else if (!strcmp(a, "--finish-hopeless")) {
            cfg.finish_hopeless = 1;
            continue;
        } else if (!strcmp(a, "--no-cache")) {
            no_cache = 1;
            continue;
        } else if (!strcmp(a, "--mpi")) {
            *mpi = 1;
            continue;
        } else if (!strcmp(a, "--pooled")) {
            cfg.pooled = 1;
            continue;
        } else if (a[0] == '-' && a[1]) {
            if (!v) {
                fprintf(stderr, "dmm evolve: %s needs a value\n", a);
                return 1;
            }
            i++;
            if (!strcmp(a, "--out"))
                out = v;
            else if (!strcmp(a, "--grammar"))
                grammar_path = v;
            else if (!strcmp(a, "--holdout") || !strcmp(a, "--aggregate")) {
                if (!strcmp(a, "--aggregate")) {
                    if (strcmp(v, "mean") && strcmp(v, "worst")) {
                        fprintf(stderr, "dmm evolve: --aggregate %s: mean or worst\n", v);
                        return 1;
                    }
                    cfg.worst_case = !strcmp(v, "worst");
                } else if (nmore == DMM_EVOLVE_TRACES_MAX) {
                    fprintf(stderr, "dmm evolve: more than %d traces\n", DMM_EVOLVE_TRACES_MAX);
                    return 1;
                } else {
                    holdout[nmore] = 1;
                    more[nmore++] = v;
                }
            } else if (!strcmp(a, "--objectives")) {
                if ((cfg.objectives = parse_objectives(v)) < 0)
                    return 1;
            } else if (!strcmp(a, "--lean")) {
                if ((cfg.nlean = parse_lean(v, cfg.lean)) < 0)
                    return 1;
            }
            else if ((io = int_option(a))) {
                if (dmm_cli_long("evolve", a, v, io->lo, io->hi, &n))
                    return 1;
                *(int *)((char *)&cfg + io->off) = (int)n;
            } else if (!strcmp(a, "--seed")) {
                if (dmm_cli_seed("evolve", v, &cfg.seed))
                    return 1;
            } else if ((ro = real_option(a))) {
                if (dmm_cli_real("evolve", a, v, ro->lo, ro->hi, &x))
                    return 1;
                *(double *)((char *)&cfg + ro->off) = x;
            } else {
                fprintf(stderr, "dmm evolve: unknown option %s\n", a);
                usage(stderr);
                return 1;
            }
        } else if (!trace) {
            trace = a;
        } else if (nmore == DMM_EVOLVE_TRACES_MAX) {
            fprintf(stderr, "dmm evolve: more than %d traces\n", DMM_EVOLVE_TRACES_MAX);
            return 1;
        } else {
            holdout[nmore] = 0;
            more[nmore++] = a;
        }
    }
    if (!trace || !out) {
        usage(stderr);
        return 1;
    }
    if (cfg.pooled && *mpi) {
        fprintf(stderr, "dmm evolve: --pooled is not for --mpi (its ranks simulate unpooled)\n");
        return 1;
    }
    static char picked[4096];   /* the search keeps the name */
    if (!(trace = dmm_cli_trace("evolve", trace, picked, sizeof picked)))
        return 2;
    if (check_options(&cfg))
        return 1;
    dmm_evolve_init(ev, trace, out);
    int rc = add_traces(ev, more, holdout, nmore);
    if (rc)
        return rc;
    ev->grammar_path = grammar_path;
    ev->no_cache = no_cache;
    ev->cfg = cfg;
    *done = 0;
    return 0;
}

/* mpirun's SIGTERM (it is ending the job): stop as on Ctrl-C, and note at
 * once which worker died, before the others leave too. */
static volatile sig_atomic_t terminated, dead_rank = -1;
static dmm_mpi_t *the_job;

static void on_sigterm(int sig)
{
    (void)sig;
    if (!terminated && the_job)
        dead_rank = dmm_mpi_dead_worker(the_job);
    terminated = 1;
    dmm_cli_interrupted = 1;
}

/* The search with its progress line; Ctrl-C ends it within a moment (a
 * second one kills).  With m (rank 0 of an MPI job) the other ranks
 * evaluate too, and SIGTERM stops it as Ctrl-C does. */
static int search(dmm_evolve_t *ev, int quiet, dmm_mpi_t *m, dmm_err_t *err)
{
    progress_t prog = { isatty(2), quiet };
    ev->cfg.progress = on_generation;
    ev->cfg.progress_arg = &prog;
    ev->cfg.stop = &dmm_cli_interrupted;
    dmm_ge_remote_t rm;
    if (m) {
        dmm_mpi_remote(m, &rm);
        ev->cfg.remote = &rm;
        if (!ev->cfg.jobs)
            ev->cfg.jobs = 1;
    }
    struct sigaction old;
    dmm_cli_catch_sigint(&old);
    if (terminated)
        dmm_cli_interrupted = 1;
    int rc = dmm_evolve_search(ev, err);
    ev->cfg.remote = NULL;   /* rm lives on this stack */
    dmm_cli_release_sigint(&old);
    if (prog.tty && !quiet)
        fputc('\n', stderr);
    if (rc != 0)
        return -1;
    const dmm_ge_gen_t *last = ev->r.nlog ? &ev->r.log[ev->r.nlog - 1] : NULL;
    const char *when = last && last->partial ? "during" : "after";
    if (ev->r.stopped == DMM_GE_STOPPED && terminated) {
        int dead = dead_rank;
        if (dead > 0)
            fprintf(stderr, "dmm evolve: rank %d (pid %lld on %s) died %s generation %d; "
                            "mpirun is ending the job; keeping the best so far\n", dead,
                    (long long)m->peers[dead].pid, m->peers[dead].host, when, ev->r.nlog - 1);
        else
            fprintf(stderr, "dmm evolve: mpirun ended the job %s generation %d (a rank on "
                            "another host died, or the job was interrupted: see mpirun's "
                            "message); keeping the best so far\n", when, ev->r.nlog - 1);
    } else if (ev->r.stopped == DMM_GE_WORKER_FAILED) {
        int k = ev->r.failed_worker + 1;
        fprintf(stderr, "dmm evolve: rank %d (pid %lld on %s) failed %s generation %d; "
                        "keeping the best so far\n", k, (long long)m->peers[k].pid,
                m->peers[k].host, when, ev->r.nlog - 1);
    } else if (ev->r.stopped == DMM_GE_STOPPED)
        fprintf(stderr, "dmm evolve: interrupted %s generation %d; keeping the best so far\n",
                when, ev->r.nlog - 1);
    else if (ev->r.stopped == DMM_GE_TIME)
        fprintf(stderr, "dmm evolve: time budget of %g s reached %s generation %d\n",
                ev->cfg.time_budget, when, ev->r.nlog - 1);
    return 0;
}

/* The summary on stdout; 0, or 2 when no individual was valid. */
static int report(dmm_evolve_t *ev)
{
    const dmm_ge_result_t *r = &ev->r;
    double rate = r->seconds > 0 ? (double)r->evaluations / r->seconds : 0;
    if (!r->found) {
        fprintf(stderr, "dmm evolve: no valid individual in %llu evaluations: every genome "
                        "ran out of wraps or gave no usable DMM (grammar %s, %d wraps, %d codons); "
                        "no best.dmm written\n",
                (unsigned long long)r->evaluations,
                ev->grammar_path ? ev->grammar_path : "generated", ev->cfg.wraps, ev->cfg.length);
        printf("evaluations: %llu (cache hits %llu), %.1f eval/s\n",
               (unsigned long long)r->evaluations, (unsigned long long)r->cache_hits, rate);
        return 2;
    }
    char text[DMM_DESC_MAX * 160 + 400];
    dmm_evolve_best_text(ev, text, sizeof text);
    const dmm_ge_ref_t *kng = &ev->refs[0], *lea = &ev->refs[1];
    printf("best: F=%.6f T=%llu M=%zu (KNG: F=%.6f, LEA: F=%.6f) in %d generations\n", r->F,
           (unsigned long long)r->T, r->M, dmm_ge_fitness(kng->T, kng->M, r->T_KNG, r->M_LEA),
           dmm_ge_fitness(lea->T, lea->M, r->T_KNG, r->M_LEA), r->nlog - 1);
    fputs(strchr(text, '\n') ? strchr(text, '\n') + 1 : text, stdout);
    printf("written: %s/best.dmm\n", ev->out);
    if (ev->nscore > 1) {
        printf("on each trace (F against that trace's KNG and LEA; written: %s/traces.csv):\n",
               ev->out);
        for (int i = 0; i < ev->nscore; i++) {
            const dmm_evolve_score_t *sc = &ev->score[i];
            printf("  %-8s F=%.4f  best preset %s F=%.4f  %s\n",
                   sc->holdout ? "unseen" : "seen", sc->F, sc->preset, sc->F_preset, sc->name);
        }
        if (ev->cfg.nextra)
            printf("seen: mean F=%.4f, worst F=%.4f (ranked by the %s)\n", r->F_mean, r->F_worst,
                   ev->cfg.worst_case ? "worst" : "mean");
    }
    if (ev->cfg.objectives && r->nfront) {
        int knee = dmm_evolve_knee(ev);
        const dmm_ge_gen_t *last = &r->log[r->nlog - 1];
        printf("front: %d designs, hypervolume %.4f; knee: front-%d.dmm (T=%llu M=%zu W=%llu "
               "P=%llu); written: %s/front-1.dmm .. front-%d.dmm, front.csv, front.gp\n",
               r->nfront, last->hypervolume, knee + 1, (unsigned long long)r->front[knee].T,
               r->front[knee].M, (unsigned long long)r->front[knee].W,
               (unsigned long long)r->front[knee].P, ev->out, r->nfront);
    }
    printf("evaluations: %llu (cache hits %llu), %.1f eval/s\n",
           (unsigned long long)r->evaluations, (unsigned long long)r->cache_hits, rate);
    if (r->climb.ran)
        printf("climb: F %.6f -> %.6f in %d steps from %d start%s, %llu neighbours "
               "(%llu simulated), %.1f s%s\n", r->climb.F_start, r->F, r->climb.steps,
               r->climb.starts, r->climb.starts == 1 ? "" : "s",
               (unsigned long long)r->climb.neighbours, (unsigned long long)r->climb.simulations,
               r->climb.seconds, r->climb.optimum ? "; no neighbour of the last is better" : "");
    if (r->cap < DMM_GE_WORST)
        printf("hopeless (F >= %.3f): %llu of %llu simulations, %llu of them cut short, "
               "saving about %.1f s\n", r->cap, (unsigned long long)r->hopeless,
               (unsigned long long)r->simulations, (unsigned long long)r->cut, r->saved_s);
    return 0;
}

/* A worker rank of an MPI job: its own copy of the stream, then replays
 * until rank 0 says stop. */
static int mpi_worker(dmm_evolve_t *ev, dmm_mpi_t *m)
{
    dmm_err_t err;
    dmm_opload_t info;
    int rc = 0;
    if (dmm_opstream_load(ev->trace, !ev->no_cache, &ev->s, &info, &err) != 0 ||
        dmm_mpi_work(m, &ev->s, &err) != 0) {
        fprintf(stderr, "dmm evolve: rank %d: %s\n", m->rank, err.msg);
        rc = 2;
    }
    dmm_mpi_close(m, rc == 0);
    dmm_evolve_free(ev);
    return rc;
}

int dmm_evolve_main(int argc, char **argv)
{
    dmm_evolve_t ev;
    int quiet = 0, mpi = 0, done;
    int rc = parse_options(argc, argv, &ev, &quiet, &mpi, &done);
    if (done)
        return rc;
    dmm_err_t err;
    dmm_mpi_t m;
    if (mpi && ev.nmore) {
        fprintf(stderr, "dmm evolve: --mpi takes one trace (no more traces, no --holdout)\n");
        return 1;
    }
    if (mpi) {
        if (!dmm_mpi_under_mpirun()) {
            fprintf(stderr, "dmm evolve: --mpi: not started by mpirun (run: mpirun -np N "
                            "dmm evolve --mpi ...)\n");
            return 2;
        }
        if (dmm_mpi_open(&m, &argc, &argv, &err) != 0) {
            fprintf(stderr, "dmm evolve: %s\n", err.msg);
            return 2;
        }
        if (m.rank != 0)
            return mpi_worker(&ev, &m);
        signal(SIGTERM, on_sigterm);
        m.stop = &dmm_cli_interrupted;
        the_job = &m;
    }
    int loaded = dmm_evolve_load(&ev, &err) == 0;
    if (ev.warning[0])
        fprintf(stderr, "dmm evolve: warning: %s\n", ev.warning);
    if (loaded && mpi && dmm_mpi_gather(&m, &ev.s, &terminated, &err) != 0)
        loaded = 0;
    if (!loaded) {
        fprintf(stderr, "dmm evolve: %s\n", err.msg);
        rc = 2;
    } else if (dmm_evolve_references(&ev, &err) != 0 ||
               search(&ev, quiet, mpi ? &m : NULL, &err) != 0 ||
               dmm_evolve_score(&ev, &err) != 0 || dmm_evolve_write(&ev, &err) != 0) {
        fprintf(stderr, "dmm evolve: %s\n", err.msg);
        rc = 2;
    } else {
        rc = report(&ev);
    }
    if (mpi) {
        /* a job mpirun is tearing down: no goodbyes */
        int ending = terminated || ev.r.stopped == DMM_GE_WORKER_FAILED;
        if (!ending)
            dmm_mpi_stop_workers(&m);
        the_job = NULL;
        dmm_mpi_close(&m, !ending);
        if (ending && rc == 0)
            rc = 3;
    }
    dmm_evolve_free(&ev);
    return rc;
}
