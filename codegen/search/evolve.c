/* evolve.c - `dmm evolve`: the GE search (ge.h) on one trace, and its
 * outputs.
 *
 *   dmm evolve [options] --out DIR TRACE
 *
 * DIR/best.dmm         the best DMM, canonical .dmm text, title
 *                      "dmm 1  trace=NAME seed=S fitness=F T=T M=M"
 * DIR/log.csv          one row per generation
 * DIR/references.csv   kng, lea, fib, s10, exa: T, M and F on the trace
 * DIR/search.json      parameters, references, result, counts, time
 * DIR/grammar.bnf      the grammar generated from the trace (no --grammar)
 *
 * Every file is written to a temporary name and renamed; best.dmm comes
 * last, so its presence means a complete run.  Bad input (a trace that
 * cannot be read or has no operation, a malformed grammar, a DIR that cannot
 * be written) exits 2 before the search, with DIR untouched; a search in
 * which no individual was valid writes the other files, removes any old
 * best.dmm and exits 2. */
#include "codegen/search/ge.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "allocators/sim/sim.h"
#include "tracer/stats/stats.h"
#include "tracer/base/json.h"
#include "tracer/format/load.h"

static void usage(FILE *f)
{
    fprintf(f,
        "usage: dmm evolve [options] --out DIR TRACE\n"
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
        "  --time SECONDS    stop after the generation that crosses this budget\n"
        "  -q, --quiet       no progress on stderr\n"
        "\n"
        "Ctrl-C stops after the current generation and keeps the best so far.\n"
        "Exit status: 0 done, 1 usage error, 2 bad input or no valid individual.\n");
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

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* ---- output files ------------------------------------------------------------ */

/* Write len bytes to DIR/name through a temporary file and rename.  0, or
 * -1 with a message printed. */
static int write_file(const char *dir, const char *name, const char *text, size_t len)
{
    char tmp[4096], path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s/.%s.XXXXXX", dir, name);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        fprintf(stderr, "dmm evolve: %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    int err = off < len ? errno : 0;
    if (fchmod(fd, 0644) != 0 && !err)
        err = errno;
    if (close(fd) != 0 && !err)
        err = errno;
    if (!err && rename(tmp, path) != 0)
        err = errno;
    if (err) {
        fprintf(stderr, "dmm evolve: %s: %s\n", path, strerror(err ? err : EIO));
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* DIR exists (or is made) and takes a file. */
static int check_dir(const char *dir)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "dmm evolve: %s: cannot create: %s\n", dir, strerror(errno));
        return -1;
    }
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "dmm evolve: %s: not a directory\n", dir);
        return -1;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s/.evolve.XXXXXX", dir);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        fprintf(stderr, "dmm evolve: %s: cannot write: %s\n", dir, strerror(errno));
        return -1;
    }
    close(fd);
    unlink(tmp);
    return 0;
}

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

typedef struct ref {
    const char *name;
    uint64_t    T;
    size_t      M;
    uint64_t    failed;
} ref_t;

/* ---- the command ------------------------------------------------------------- */

static int parse_int(const char *opt, const char *s, long lo, long hi, long *v)
{
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (errno || end == s || *end || x < lo || x > hi) {
        fprintf(stderr, "dmm evolve: %s needs an integer in %ld..%ld, not '%s'\n", opt, lo, hi, s);
        return -1;
    }
    *v = x;
    return 0;
}

static int parse_real(const char *opt, const char *s, double lo, double hi, double *v)
{
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (errno || end == s || *end || !(x >= lo && x <= hi)) {
        fprintf(stderr, "dmm evolve: %s needs a number in [%g, %g], not '%s'\n", opt, lo, hi, s);
        return -1;
    }
    *v = x;
    return 0;
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
};

static const real_opt_t real_opts[] = {
    { "--pcross", 0, 1, offsetof(dmm_ge_config_t, pcross) },
    { "--pmut", 0, 1, offsetof(dmm_ge_config_t, pmut) },
    { "--time", 0, 1e9, offsetof(dmm_ge_config_t, time_budget) },
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

int dmm_evolve_main(int argc, char **argv)
{
    dmm_ge_config_t cfg;
    dmm_ge_config_default(&cfg);
    const char *out = NULL, *grammar_path = NULL, *trace = NULL;
    int quiet = 0;
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
            quiet = 1;
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
            else if ((io = int_option(a))) {
                if (parse_int(a, v, io->lo, io->hi, &n))
                    return 1;
                *(int *)((char *)&cfg + io->off) = (int)n;
            } else if (!strcmp(a, "--seed")) {
                char *end;
                errno = 0;
                unsigned long long s = strtoull(v, &end, 10);
                if (errno || end == v || *end || v[0] == '-') {
                    fprintf(stderr, "dmm evolve: --seed needs a non-negative integer, not '%s'\n", v);
                    return 1;
                }
                cfg.seed = s;
            } else if ((ro = real_option(a))) {
                if (parse_real(a, v, ro->lo, ro->hi, &x))
                    return 1;
                *(double *)((char *)&cfg + ro->off) = x;
            } else {
                fprintf(stderr, "dmm evolve: unknown option %s\n", a);
                usage(stderr);
                return 1;
            }
        } else if (!trace) {
            trace = a;
        } else {
            usage(stderr);
            return 1;
        }
    }
    if (!trace || !out) {
        usage(stderr);
        return 1;
    }
    if (cfg.elite >= cfg.pop) {
        fprintf(stderr, "dmm evolve: --elite must be below --pop\n");
        return 1;
    }
    if (cfg.tournament > cfg.pop) {
        fprintf(stderr, "dmm evolve: --tournament must not exceed --pop\n");
        return 1;
    }

    /* inputs: trace, grammar, operation stream, DIR */
    dmm_trace_t t;
    dmm_err_t terr;
    if (dmm_trace_load(trace, &t, &terr) != 0) {
        fprintf(stderr, "dmm evolve: %s\n", terr.msg);
        return 2;
    }
    if (t.truncated)
        fprintf(stderr, "dmm evolve: warning: %s\n", t.note);
    char name[128];
    trace_name(trace, name, sizeof name);
    char err[1024];
    char *gtext = NULL;
    dmm_grammar_t *g;
    if (grammar_path) {
        g = dmm_grammar_load(grammar_path, err, sizeof err);
    } else {
        gtext = dmm_grammar_for_trace(&t, 0, name, err, sizeof err);
        g = gtext ? dmm_grammar_parse("grammar.bnf", gtext, strlen(gtext), err, sizeof err) : NULL;
    }
    if (!g) {
        fprintf(stderr, "dmm evolve: %s\n", err);
        free(gtext);
        dmm_trace_free(&t);
        return 2;
    }
    dmm_opstream_t s;
    int rc = dmm_opstream_build(&t, &s, &terr);
    dmm_trace_free(&t);
    if (rc != 0) {
        fprintf(stderr, "dmm evolve: %s\n", terr.msg);
        free(gtext);
        dmm_grammar_free(g);
        return 2;
    }
    rc = 2;
    dmm_ge_result_t r;
    memset(&r, 0, sizeof r);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = NULL;
    if (s.nops == 0) {
        fprintf(stderr, "dmm evolve: %s: no allocation operations to replay\n", trace);
        goto done;
    }
    if (check_dir(out) != 0)
        goto done;

    /* the references, on the same operation stream */
    ref_t refs[5] = { { "kng", 0, 0, 0 }, { "lea", 0, 0, 0 }, { "fib", 0, 0, 0 },
                      { "s10", 0, 0, 0 }, { "exa", 0, 0, 0 } };
    dmm_sim_result_t *sr = malloc(sizeof *sr);
    if (!sr) {
        fprintf(stderr, "dmm evolve: out of memory\n");
        goto done;
    }
    for (int i = 0; i < 5; i++) {
        dmm_desc_t d;
        if (dmm_desc_load(refs[i].name, &d, err, sizeof err) != 0 ||
            dmm_sim_run(&s, &d, refs[i].name, 0, sr, err, sizeof err) != 0) {
            fprintf(stderr, "dmm evolve: reference %s: %s\n", refs[i].name, err);
            free(sr);
            goto done;
        }
        refs[i].T = sr->T;
        refs[i].M = sr->M;
        refs[i].failed = sr->failed;
    }
    free(sr);
    if (!refs[0].T || !refs[1].M) {
        fprintf(stderr, "dmm evolve: %s: KNG costs nothing or LEA holds no memory on this trace\n",
                trace);
        goto done;
    }
    cfg.T_KNG = refs[0].T;
    cfg.M_LEA = refs[1].M;
    cfg.fail_limit = refs[0].failed < refs[1].failed ? refs[0].failed : refs[1].failed;

    /* the search; Ctrl-C ends it after the current generation */
    progress_t prog = { isatty(2), quiet };
    cfg.progress = on_generation;
    cfg.progress_arg = &prog;
    cfg.stop = &interrupted;
    interrupted = 0;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sa.sa_flags = SA_RESETHAND;   /* a second Ctrl-C kills */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);
    int grc = dmm_ge_run(&cfg, g, &s, &r, err, sizeof err);
    sigaction(SIGINT, &old, NULL);
    if (prog.tty && !quiet)
        fputc('\n', stderr);
    if (grc != 0) {
        fprintf(stderr, "dmm evolve: %s\n", err);
        goto done;
    }
    if (r.stopped == DMM_GE_STOPPED)
        fprintf(stderr, "dmm evolve: interrupted after generation %d; keeping the best so far\n",
                r.nlog - 1);
    else if (r.stopped == DMM_GE_TIME)
        fprintf(stderr, "dmm evolve: time budget of %g s reached after generation %d\n",
                cfg.time_budget, r.nlog - 1);
    int jobs = cfg.jobs;
    if (jobs <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        jobs = n > 0 ? (int)n : 1;
    }

    /* outputs; best.dmm last */
    if (gtext && write_file(out, "grammar.bnf", gtext, strlen(gtext)) != 0)
        goto done;

    f = open_memstream(&buf, &len);
    if (!f)
        goto oom;
    fprintf(f, "name,T,M,F\n");
    for (int i = 0; i < 5; i++)
        fprintf(f, "%s,%llu,%zu,%.9f\n", refs[i].name, (unsigned long long)refs[i].T, refs[i].M,
                dmm_ge_fitness(refs[i].T, refs[i].M, r.T_KNG, r.M_LEA));
    if (fclose(f) != 0)
        goto oom;
    f = NULL;
    if (write_file(out, "references.csv", buf, len) != 0)
        goto done;
    free(buf);
    buf = NULL;

    f = open_memstream(&buf, &len);
    if (!f)
        goto oom;
    fprintf(f, "generation,evaluations,cache_hits,best_F,mean_F,best_T,best_M,seconds,"
               "best_phenotype_dmm_line_count,valid,simulations,invalid\n");
    for (int i = 0; i < r.nlog; i++) {
        const dmm_ge_gen_t *row = &r.log[i];
        fprintf(f, "%d,%llu,%llu,", row->gen, (unsigned long long)row->evaluations,
                (unsigned long long)row->cache_hits);
        if (row->nvalid)
            fprintf(f, "%.9f,%.9f,%llu,%zu,", row->best_F, row->mean_F,
                    (unsigned long long)row->best_T, row->best_M);
        else
            fprintf(f, ",,,,");
        fprintf(f, "%.3f,%d,%d,%llu,%llu\n", row->seconds, row->best_lines, row->nvalid,
                (unsigned long long)row->simulations, (unsigned long long)row->invalid);
    }
    if (fclose(f) != 0)
        goto oom;
    f = NULL;
    if (write_file(out, "log.csv", buf, len) != 0)
        goto done;
    free(buf);
    buf = NULL;

    f = open_memstream(&buf, &len);
    if (!f)
        goto oom;
    static const char *const why[] = { "completed", "time budget", "interrupted" };
    fprintf(f, "{\n  \"trace\": ");
    dmm_json_str(f, trace);
    fprintf(f, ",\n  \"grammar\": ");
    if (grammar_path)
        dmm_json_str(f, grammar_path);
    else
        fprintf(f, "\"grammar.bnf (generated)\"");
    fprintf(f, ",\n  \"operations\": %zu,\n", s.nops);
    fprintf(f, "  \"parameters\": {\"population\": %d, \"elite\": %d, \"generations\": %d, "
               "\"tournament\": %d, \"pcross\": %g, \"pmut\": %g, \"wraps\": %d, "
               "\"length\": %d, \"codon_bound\": %u, \"jobs\": %d, \"time_budget\": %g},\n",
            cfg.pop, cfg.elite, cfg.gens, cfg.tournament, cfg.pcross, cfg.pmut, cfg.wraps,
            cfg.length, cfg.codon_bound, jobs, cfg.time_budget);
    fprintf(f, "  \"seed\": %llu,\n", (unsigned long long)cfg.seed);
    fprintf(f, "  \"T_KNG\": %llu,\n  \"M_LEA\": %zu,\n", (unsigned long long)r.T_KNG, r.M_LEA);
    if (r.found)
        fprintf(f, "  \"best\": {\"F\": %.9f, \"T\": %llu, \"M\": %zu, \"allocators\": %d},\n",
                r.F, (unsigned long long)r.T, r.M, r.best.n);
    else
        fprintf(f, "  \"best\": null,\n");
    fprintf(f, "  \"generations_run\": %d,\n  \"stopped\": \"%s\",\n", r.nlog - 1, why[r.stopped]);
    fprintf(f, "  \"evaluations\": %llu,\n  \"cache_hits\": %llu,\n  \"simulations\": %llu,\n"
               "  \"invalid\": %llu,\n",
            (unsigned long long)r.evaluations, (unsigned long long)r.cache_hits,
            (unsigned long long)r.simulations, (unsigned long long)r.invalid);
    fprintf(f, "  \"seconds\": %.3f\n}\n", r.seconds);
    if (fclose(f) != 0)
        goto oom;
    f = NULL;
    if (write_file(out, "search.json", buf, len) != 0)
        goto done;
    free(buf);
    buf = NULL;

    double rate = r.seconds > 0 ? (double)r.evaluations / r.seconds : 0;
    if (!r.found) {
        char path[4096];
        snprintf(path, sizeof path, "%s/best.dmm", out);
        unlink(path);   /* an older run's; it does not belong to this one */
        fprintf(stderr, "dmm evolve: no valid individual in %llu evaluations: every genome "
                        "ran out of wraps or gave no usable DMM (grammar %s, %d wraps, %d codons); "
                        "no best.dmm written\n",
                (unsigned long long)r.evaluations, grammar_path ? grammar_path : "generated",
                cfg.wraps, cfg.length);
        printf("evaluations: %llu (cache hits %llu), %.1f eval/s\n",
               (unsigned long long)r.evaluations, (unsigned long long)r.cache_hits, rate);
        goto done;
    }
    snprintf(r.best.title, sizeof r.best.title, "dmm 1  trace=%.100s seed=%llu fitness=%.6f T=%llu M=%zu",
             name, (unsigned long long)cfg.seed, r.F, (unsigned long long)r.T, r.M);
    char text[DMM_DESC_MAX * 160 + 400];
    size_t tl = dmm_desc_print(&r.best, text, sizeof text);
    if (tl >= sizeof text || write_file(out, "best.dmm", text, tl) != 0)
        goto done;

    printf("best: F=%.6f T=%llu M=%zu (KNG: F=%.6f, LEA: F=%.6f) in %d generations\n", r.F,
           (unsigned long long)r.T, r.M, dmm_ge_fitness(refs[0].T, refs[0].M, r.T_KNG, r.M_LEA),
           dmm_ge_fitness(refs[1].T, refs[1].M, r.T_KNG, r.M_LEA), r.nlog - 1);
    fputs(strchr(text, '\n') ? strchr(text, '\n') + 1 : text, stdout);
    printf("written: %s/best.dmm\n", out);
    printf("evaluations: %llu (cache hits %llu), %.1f eval/s\n",
           (unsigned long long)r.evaluations, (unsigned long long)r.cache_hits, rate);
    rc = 0;
    goto done;
oom:
    fprintf(stderr, "dmm evolve: out of memory\n");
done:
    if (f)
        fclose(f);
    free(buf);
    dmm_ge_result_free(&r);
    dmm_opstream_free(&s);
    dmm_grammar_free(g);
    free(gtext);
    return rc;
}
