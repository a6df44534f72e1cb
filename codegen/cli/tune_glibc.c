/* tune_glibc.c - `dmm tune-glibc`: glibc malloc's tunables searched for a
 * trace and scored by real replays, or tried on the real program
 * (--verify); the steps live in codegen/tune/.
 *
 *   dmm tune-glibc [options] TRACE
 *   dmm tune-glibc --verify TUNABLES [--reps N] [--json] [-q] -- PROGRAM [ARGS...]
 *   dmm tune-glibc --print-grammar | --probe
 */
#include "codegen/cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "codegen/grammar/grammar.h"
#include "codegen/cli/util.h"
#include "codegen/tune/measure.h"
#include "codegen/tune/print.h"
#include "codegen/tune/probe.h"
#include "codegen/tune/search.h"
#include "codegen/tune/tunables.h"
#include "codegen/tune/verify.h"

#define SEARCH_REPS 3    /* replays per candidate */
#define VERIFY_REPS 15   /* runs of each side with --verify */

/* One run of the command: its options and the outcome. */
typedef struct cmd {
    dmm_tune_outcome_t o;
    int          reps;          /* -1: not given */
    int          final_reps, json, quiet, tty;
    double       budget;
    const char  *search_opt;    /* the first option of the search given */
    const char  *verify;        /* --verify's TUNABLES; NULL: a search */
    char       **prog;          /* after --: the program and its arguments */
} cmd_t;

static void usage(FILE *f)
{
    fprintf(f,
        "usage: dmm tune-glibc [options] TRACE\n"
        "       dmm tune-glibc --verify TUNABLES [--reps N] [--json] [-q] -- PROGRAM [ARGS...]\n"
        "       dmm tune-glibc --print-grammar | --probe\n"
        "\n"
        "Search glibc malloc's tunables top_pad, trim_threshold, mmap_threshold and\n"
        "arena_max for TRACE by grammatical evolution, each candidate scored by replaying\n"
        "TRACE under glibc with it set (dmm replay --json in a child process):\n"
        "F = 0.5*t/t_default + 0.5*M/M_default, t the replay's wall time, M its peak held\n"
        "memory plus the defaults' RSS before the replay (min over --reps replays each).\n"
        "Prints the winner as lines to paste (GLIBC_TUNABLES and MALLOC_*), then a final\n"
        "run of defaults and tuned settings, alternating, with the change in percent.\n"
        "\n"
        "  --pop N           population size (12)\n"
        "  --gens N          generations after the initial population (8)\n"
        "  --elite N         best individuals kept unchanged (2)\n"
        "  --seed N          random seed (1)\n"
        "  --reps N          replays per candidate, the fastest kept (3)\n"
        "  --final-reps N    replays of each side in the final run (5; 0: none)\n"
        "  --time SECONDS    stop the search after the generation that crosses this\n"
        "  --prune TOL       after the search, put each setting back to default when F\n"
        "                    without it is at most TOL above F with it, both measured\n"
        "                    again side by side (0.02); --no-prune: keep them all\n"
        "  --grammar FILE    a grammar of settings (default: --print-grammar's)\n"
        "  --json            one JSON object on standard output instead of the text\n"
        "  -q, --quiet       no progress or notes on standard error\n"
        "  --print-grammar   print the built-in grammar and exit\n"
        "  --probe           print, as JSON, what this process's glibc made of the\n"
        "                    settings in its environment (top pad of the first heap\n"
        "                    extension, dynamic mmap threshold on or off) and exit\n"
        "\n"
        "  --verify TUNABLES run PROGRAM for real instead: once to warm up, then under\n"
        "                    glibc's defaults and under GLIBC_TUNABLES=TUNABLES,\n"
        "                    alternating, --reps times each (15); wall time, CPU time\n"
        "                    and peak RSS of each run, their medians, ranges, change\n"
        "                    and Mann-Whitney p-values, and a verdict.  Every run must\n"
        "                    exit as the warm-up did, with the same standard output\n"
        "\n"
        "Exit status: 0 done, 1 usage error, 2 bad input (TRACE or grammar; with\n"
        "--verify: PROGRAM did not run, or a run's status or output differed).\n");
}

/* An option without a value: 1 taken, 0 not one of them. */
static int parse_flag(cmd_t *c, const char *a)
{
    if (!strcmp(a, "-q") || !strcmp(a, "--quiet"))
        c->quiet = 1;
    else if (!strcmp(a, "--json"))
        c->json = 1;
    else if (!strcmp(a, "--no-prune"))
        c->o.prune_tol = -1;
    else
        return 0;
    if (!strcmp(a, "--no-prune") && !c->search_opt)
        c->search_opt = a;
    return 1;
}

/* A number of the search's configuration: 0, 1 (said), or -2 (not one). */
static int parse_int_opt(cmd_t *c, const char *a, const char *v)
{
    typedef struct int_opt { const char *name; long lo, hi; int *dst; } int_opt_t;
    const int_opt_t int_opts[] = {
        { "--pop", 2, 100000, &c->o.cfg.pop },
        { "--gens", 0, 1000000, &c->o.cfg.gens },
        { "--elite", 0, 100000, &c->o.cfg.elite },
        { "--reps", 1, 1000, &c->reps },
        { "--final-reps", 0, 10000, &c->final_reps },
    };
    for (size_t k = 0; k < sizeof int_opts / sizeof int_opts[0]; k++) {
        if (strcmp(a, int_opts[k].name))
            continue;
        long n;
        if (dmm_cli_long("tune-glibc", a, v, int_opts[k].lo, int_opts[k].hi, &n))
            return 1;
        *int_opts[k].dst = (int)n;
        return 0;
    }
    return -2;
}

/* An option with its value v: 0, 1 (a usage error, said), or -2 (unknown). */
static int parse_valued(cmd_t *c, const char *a, const char *v)
{
    char *end;
    int rc = parse_int_opt(c, a, v);
    if (rc != -2)
        return rc;
    if (!strcmp(a, "--seed")) {
        if (dmm_cli_seed("tune-glibc", v, &c->o.cfg.seed))
            return 1;
    } else if (!strcmp(a, "--time")) {
        errno = 0;
        c->budget = strtod(v, &end);
        if (errno || end == v || *end || !(c->budget >= 0 && c->budget <= 1e9)) {
            fprintf(stderr, "dmm tune-glibc: --time needs seconds >= 0, not '%s'\n", v);
            return 1;
        }
    } else if (!strcmp(a, "--prune")) {
        errno = 0;
        c->o.prune_tol = strtod(v, &end);
        if (errno || end == v || *end || !(c->o.prune_tol >= 0 && c->o.prune_tol <= 1)) {
            fprintf(stderr, "dmm tune-glibc: --prune needs a tolerance in [0, 1], not '%s'\n", v);
            return 1;
        }
    } else if (!strcmp(a, "--grammar")) {
        c->o.grammar_path = v;
    } else if (!strcmp(a, "--verify")) {
        c->verify = v;
    } else {
        return -2;
    }
    return 0;
}

/* --verify's own checks, after the options: 0, or 1 (said). */
static int check_verify(cmd_t *c)
{
    if (!c->verify) {
        if (c->prog) {
            fprintf(stderr, "dmm tune-glibc: a program after -- needs --verify\n");
            return 1;
        }
        return 0;
    }
    if (c->o.trace) {
        fprintf(stderr, "dmm tune-glibc: --verify runs a program, not a trace ('%s'): give it "
                        "after --\n", c->o.trace);
        return 1;
    }
    if (!c->prog || !c->prog[0]) {
        fprintf(stderr, "dmm tune-glibc: --verify needs a program after --\n");
        return 1;
    }
    if (c->search_opt) {
        fprintf(stderr, "dmm tune-glibc: %s is an option of the search, not of --verify\n",
                c->search_opt);
        return 1;
    }
    dmm_tunables_t t;
    dmm_err_t err;
    if (!c->verify[0]) {
        fprintf(stderr, "dmm tune-glibc: --verify needs settings (a GLIBC_TUNABLES value such "
                        "as glibc.malloc.top_pad=8388608)\n");
        return 1;
    }
    if (dmm_tunables_from_glibc(c->verify, &t, &err) != 0) {
        fprintf(stderr, "dmm tune-glibc: --verify: %s\n", err.msg);
        return 1;
    }
    return 0;
}

/* The checks after the options: 0, or 1 (said). */
static int check_options(cmd_t *c)
{
    static char picked[4096];   /* the search keeps the name */
    if (c->o.trace && !(c->o.trace = dmm_cli_trace("tune-glibc", c->o.trace, picked,
                                                   sizeof picked)))
        return 2;
    if (check_verify(c) != 0)
        return 1;
    if (c->verify) {
        if (c->reps < 0)
            c->reps = VERIFY_REPS;
        return 0;
    }
    if (c->reps < 0)
        c->reps = SEARCH_REPS;
    if (!c->o.trace) {
        usage(stderr);
        return 1;
    }
    if (!strcmp(c->o.trace, "-")) {
        fprintf(stderr, "dmm tune-glibc: the trace is replayed many times: give a file, not "
                        "standard input\n");
        return 1;
    }
    if (c->o.cfg.elite >= c->o.cfg.pop) {
        fprintf(stderr, "dmm tune-glibc: --elite must be below --pop\n");
        return 1;
    }
    if (c->o.cfg.tournament > c->o.cfg.pop)
        c->o.cfg.tournament = c->o.cfg.pop;
    c->o.cfg.time_budget = c->budget;
    return 0;
}

/* 0, 1 (usage error, said), or -1 (--help or --print-grammar done). */
static int parse_options(cmd_t *c, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return -1;
        }
        if (!strcmp(a, "--print-grammar")) {
            fputs(dmm_tune_grammar_text(), stdout);
            return -1;
        }
        if (!strcmp(a, "--")) {
            c->prog = argv + i + 1;
            break;
        }
        if (parse_flag(c, a))
            continue;
        if (a[0] != '-' || !a[1]) {
            if (c->o.trace) {
                fprintf(stderr, "dmm tune-glibc: one trace only ('%s', then '%s')\n", c->o.trace,
                        a);
                return 1;
            }
            c->o.trace = a;
            continue;
        }
        if (!v) {
            fprintf(stderr, "dmm tune-glibc: %s needs a value\n", a);
            return 1;
        }
        i++;
        int rc = parse_valued(c, a, v);
        if (rc == -2) {
            fprintf(stderr, "dmm tune-glibc: unknown option %s\n", a);
            usage(stderr);
            return 1;
        }
        if (rc)
            return rc;
        if (strcmp(a, "--reps") && strcmp(a, "--verify") && !c->search_opt)
            c->search_opt = a;
    }
    return check_options(c);
}

/* ---- the search's steps ------------------------------------------------- */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void on_generation(const dmm_ge_gen_t *row, const dmm_ge_config_t *cfg, void *arg)
{
    const cmd_t *c = arg;
    if (c->quiet)
        return;
    char best[32], mean[32];
    snprintf(best, sizeof best, row->best_F >= DMM_GE_WORST ? "-" : "%.4f", row->best_F);
    snprintf(mean, sizeof mean, row->mean_F >= DMM_GE_WORST ? "-" : "%.4f", row->mean_F);
    unsigned long left = row->eta >= 0 ? (unsigned long)(row->eta + 0.5) : 0;
    if (c->tty)
        fprintf(stderr, "\rgen %d/%d  best F %s  mean %s  measured %zu  cache hits %llu  "
                        "left %lu:%02lu   ", row->gen, cfg->gens, best, mean, c->o.tu.ncand,
                (unsigned long long)row->cache_hits, left / 60, left % 60);
    else
        fprintf(stderr, "dmm tune-glibc: gen %d/%d best_F=%s mean_F=%s measured=%zu "
                        "cache_hits=%llu left=%lu:%02lu\n", row->gen, cfg->gens, best, mean,
                c->o.tu.ncand, (unsigned long long)row->cache_hits, left / 60, left % 60);
    fflush(stderr);
}

/* The trace (a readable regular file?) and the grammar.  0, or 2 (said). */
static int load_inputs(cmd_t *c, dmm_grammar_t **g)
{
    struct stat sb;
    int fd = open(c->o.trace, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fprintf(stderr, "dmm tune-glibc: %s: %s\n", c->o.trace,
                fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0)
            close(fd);
        return 2;
    }
    close(fd);
    dmm_err_t err;
    const char *gt = dmm_tune_grammar_text();
    *g = c->o.grammar_path ? dmm_grammar_load(c->o.grammar_path, &err)
                           : dmm_grammar_parse("tune-glibc.bnf", gt, strlen(gt), &err);
    if (!*g) {
        fprintf(stderr, "dmm tune-glibc: %s\n", err.msg);
        return 2;
    }
    return 0;
}

/* The search; Ctrl-C ends it after the current generation.  0, or the exit
 * status (said). */
static int search(cmd_t *c, const dmm_grammar_t *g, double t_start)
{
    dmm_tune_outcome_t *o = &c->o;
    dmm_err_t err;
    o->cfg.progress = on_generation;
    o->cfg.progress_arg = c;
    o->cfg.stop = &dmm_cli_interrupted;
    struct sigaction old;
    dmm_cli_catch_sigint(&old);
    int grc = dmm_tune_search(&o->cfg, g, 1, dmm_tuner_fitness, &o->tu, &o->r, &err);
    dmm_cli_release_sigint(&old);
    if (c->tty && !c->quiet)
        fputc('\n', stderr);
    if (grc != 0) {
        fprintf(stderr, "dmm tune-glibc: %s\n", err.msg);
        return 1;
    }
    o->t_search = now_s() - t_start;
    if (!c->quiet && o->r.ge.stopped == DMM_GE_STOPPED)
        fprintf(stderr, "dmm tune-glibc: interrupted after generation %d; keeping the best so "
                        "far\n", o->r.ge.nlog - 1);
    else if (!c->quiet && o->r.ge.stopped == DMM_GE_TIME)
        fprintf(stderr, "dmm tune-glibc: time budget of %g s reached after generation %d\n",
                c->budget, o->r.ge.nlog - 1);
    if (!o->r.found) {
        fprintf(stderr, "dmm tune-glibc: no candidate could be measured (%llu replays failed; "
                        "last: %s)\n", (unsigned long long)o->tu.failures,
                o->tu.last_err[0] ? o->tu.last_err : "every genome was invalid for the grammar");
        return 2;
    }
    return 0;
}

/* The winner: the search's best, each setting that does not pay for itself
 * put back to default; the lines to paste. */
static void choose(cmd_t *c)
{
    dmm_tune_outcome_t *o = &c->o;
    /* The defaults are a candidate too, of F 1 by definition: a search
     * whose best is no better keeps them. */
    o->best = o->r.best;
    if (!(o->r.F < 1.0))
        dmm_tunables_default(&o->best);
    if (o->prune_tol >= 0 && !dmm_tunables_all_default(&o->best)) {
        if (!c->quiet)
            fprintf(stderr, "dmm tune-glibc: pruning: each setting measured with and without\n");
        o->pruned = dmm_tune_prune(&o->best, o->prune_tol, dmm_tuner_fitness, &o->tu);
    }
    o->tuned = !dmm_tunables_all_default(&o->best);
    char gl[1024];
    dmm_tunables_glibc(&o->best, gl, sizeof gl);
    snprintf(o->full, sizeof o->full, "%s%s%s", o->tu.env.user,
             o->tu.env.user[0] && gl[0] ? ":" : "", gl);
}

/* The final run, when there is a winner to compare.  0, or 1 (said). */
static int final_run(cmd_t *c)
{
    dmm_tune_outcome_t *o = &c->o;
    if (!o->tuned || c->final_reps <= 0)
        return 0;
    if (!c->quiet)
        fprintf(stderr, "dmm tune-glibc: final run, defaults and tuned alternating, %d "
                        "replays each\n", c->final_reps);
    if (dmm_tuner_final(&o->tu, &o->best, c->final_reps, &o->fr) != 0) {
        fprintf(stderr, "dmm tune-glibc: final run: %s\n",
                o->tu.last_err[0] ? o->tu.last_err : "out of memory");
        return 1;
    }
    return 0;
}

static int run_search(cmd_t *c)
{
    dmm_tune_outcome_t *o = &c->o;
    dmm_grammar_t *g = NULL;
    int rc = load_inputs(c, &g);
    if (rc)
        return rc;
    c->tty = isatty(2);
    dmm_err_t err;
    if (dmm_tuner_open(&o->tu, o->trace, c->reps, c->quiet ? NULL : stderr, &err) != 0) {
        fprintf(stderr, "dmm tune-glibc: %s\n", err.msg);
        rc = 1;
        goto done;
    }
    double t_start = now_s();
    rc = dmm_tuner_reference(&o->tu, &err);
    if (rc) {
        fprintf(stderr, "dmm tune-glibc: %s\n", err.msg);
        goto done;
    }
    rc = search(c, g, t_start);
    if (rc)
        goto done;
    choose(c);
    rc = final_run(c);
    if (rc)
        goto done;
    o->t_total = now_s() - t_start;
    if (c->json)
        dmm_tune_print_json(o, stdout);
    else
        dmm_tune_print_text(o, stdout);
done:
    dmm_tune_final_free(&o->fr);
    dmm_tuner_close(&o->tu);
    dmm_tune_result_free(&o->r);
    dmm_grammar_free(g);
    return rc;
}

/* ---- --verify ----------------------------------------------------------------- */

static int run_verify(cmd_t *c)
{
    dmm_tune_verify_t v;
    dmm_err_t err;
    int rc = dmm_tune_verify(&v, c->prog, c->verify, c->reps, c->quiet ? NULL : stderr, &err);
    if (rc)
        fprintf(stderr, "dmm tune-glibc: --verify: %s\n", err.msg);
    else if (c->json)
        dmm_tune_print_verify_json(&v, stdout);
    else
        dmm_tune_print_verify_text(&v, stdout);
    dmm_tune_verify_free(&v);
    return rc;
}

int dmm_tune_glibc_main(int argc, char **argv)
{
    /* --probe first: it must run before this process allocates anything */
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "--probe"))
            return dmm_tune_probe(stdout);

    static cmd_t cmd;
    cmd_t *c = &cmd;
    memset(c, 0, sizeof *c);
    dmm_tune_config_default(&c->o.cfg);
    c->reps = -1;
    c->final_reps = 5;
    c->o.prune_tol = 0.02;
    int prc = parse_options(c, argc, argv);
    if (prc)
        return prc < 0 ? 0 : prc;
    return c->verify ? run_verify(c) : run_search(c);
}
