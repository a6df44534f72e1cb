/* test_tune.c - dmm tune-glibc (codegen/tune/, codegen/cli/tune_glibc.c):
 * the grammar of glibc malloc tunables and its decoding, the settings' text
 * forms, the search made reproducible by a deterministic fitness, what
 * glibc makes of the two forms of the environment (--probe), a small real
 * run whose pasted lines parse back, --verify on a real program, and bad
 * input. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "codegen/grammar/grammar.h"
#include "codegen/tune/compare.h"
#include "codegen/tune/search.h"
#include "codegen/tune/tunables.h"
#include "tracer/base/jsonread.h"

#include "test/lib/progrun.h"
#include "test/lib/rundmm.h"

/* A sanitized dmm runs on ASan's allocator, not glibc's: glibc's tunables
 * have nothing to act on there. */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

static dmm_grammar_t *builtin(void)
{
    dmm_err_t err = { { 0 } };
    const char *text = dmm_tune_grammar_text();
    dmm_grammar_t *g = dmm_grammar_parse("tune.bnf", text, strlen(text), &err);
    cr_assert_not_null(g, "%s", err.msg);
    return g;
}

static int is_pow2(long long v)
{
    return v > 0 && (v & (v - 1)) == 0;
}

/* ---- the grammar and the settings ----------------------------------------- */

Test(tune, every_alternative_of_the_grammar_decodes_to_valid_settings)
{
    dmm_err_t te;   /* what the tunables' parsers say */
    dmm_grammar_t *g = builtin();
    /* One codon per non-terminal, the start rule first: codon k picks the
     * k-th alternative of each tunable's rule. */
    static const int nalt[DMM_TUNE_N] = { 17, 17, 19, 9 };
    for (int i = 0; i < DMM_TUNE_N; i++) {
        long long prev = -2;
        for (int k = 0; k < nalt[i]; k++) {
            uint32_t genome[5] = { 0, 0, 0, 0, 0 };
            genome[1 + i] = (uint32_t)k;
            char ph[512];
            cr_assert_geq(dmm_ge_map(g, genome, 5, 0, ph, sizeof ph), 0);
            dmm_tunables_t t;
            cr_assert_eq(dmm_tunables_parse(ph, &t, &te), 0, "%s: %s", ph, te.msg);
            for (int j = 0; j < DMM_TUNE_N; j++)
                if (j != i)
                    cr_expect_eq(t.v[j], DMM_TUNE_DEFAULT, "%s", ph);
            long long v = t.v[i];
            if (k == 0) {
                cr_expect_eq(v, DMM_TUNE_DEFAULT, "%s", ph);
            } else {
                cr_expect(v >= dmm_tunables_info[i].lo && v <= dmm_tunables_info[i].hi, "%s", ph);
                cr_expect_gt(v, prev, "%s: the values ascend", ph);
                if (i == DMM_TUNE_ARENA_MAX)
                    cr_expect_eq(v, k, "%s", ph);
                else
                    cr_expect(v == 0 || is_pow2(v), "%s", ph);
            }
            prev = v;
        }
        /* the last alternatives: 64 MiB pads, a 32 MiB mmap threshold, 8 arenas */
        static const long long last[DMM_TUNE_N] = { 64LL << 20, 64LL << 20, 32LL << 20, 8 };
        cr_expect_eq(prev, last[i], "%s: last value %lld", dmm_tunables_info[i].name, prev);
    }
    /* any genome decodes to settings */
    uint64_t x = 99;
    for (int n = 0; n < 2000; n++) {
        uint32_t genome[8];
        for (int k = 0; k < 8; k++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            genome[k] = (uint32_t)(x >> 33);
        }
        char ph[512];
        cr_assert_geq(dmm_ge_map(g, genome, 8, 2, ph, sizeof ph), 0);
        dmm_tunables_t t;
        cr_assert_eq(dmm_tunables_parse(ph, &t, &te), 0, "%s: %s", ph, te.msg);
    }
    dmm_grammar_free(g);
}

Test(tune, settings_print_and_parse_back_in_every_form)
{
    dmm_err_t te;   /* what the tunables' parsers say */
    dmm_tunables_t t, u;
    char text[512], gl[512];
    cr_assert_eq(dmm_tunables_parse("mmap_threshold=64k top_pad=1m arena_max=2", &t, &te), 0,
                 "%s", te.msg);
    cr_expect_eq(t.v[DMM_TUNE_TOP_PAD], 1 << 20);
    cr_expect_eq(t.v[DMM_TUNE_TRIM_THRESHOLD], DMM_TUNE_DEFAULT);
    cr_expect_eq(t.v[DMM_TUNE_MMAP_THRESHOLD], 65536);
    cr_expect_eq(t.v[DMM_TUNE_ARENA_MAX], 2);
    dmm_tunables_format(&t, text, sizeof text);
    cr_expect_str_eq(text, "top_pad=1048576 trim_threshold=default mmap_threshold=65536 "
                           "arena_max=2");
    cr_assert_eq(dmm_tunables_parse(text, &u, &te), 0, "%s", te.msg);
    cr_expect_eq(memcmp(&t, &u, sizeof t), 0);
    dmm_tunables_glibc(&t, gl, sizeof gl);
    cr_expect_str_eq(gl, "glibc.malloc.top_pad=1048576:glibc.malloc.mmap_threshold=65536:"
                         "glibc.malloc.arena_max=2");
    cr_assert_eq(dmm_tunables_from_glibc(gl, &u, &te), 0, "%s", te.msg);
    cr_expect_eq(memcmp(&t, &u, sizeof t), 0);
    /* other entries of GLIBC_TUNABLES are left alone */
    cr_assert_eq(dmm_tunables_from_glibc("glibc.malloc.tcache_count=0:glibc.malloc.top_pad=0",
                                         &u, &te), 0, "%s", te.msg);
    cr_expect_eq(u.v[DMM_TUNE_TOP_PAD], 0);
    cr_expect_eq(u.v[DMM_TUNE_MMAP_THRESHOLD], DMM_TUNE_DEFAULT);
    /* glibc reads "1m" as 1: so must a check of what is pasted */
    cr_expect_neq(dmm_tunables_from_glibc("glibc.malloc.top_pad=1m", &u, &te), 0);
    dmm_tunables_default(&t);
    cr_expect(dmm_tunables_all_default(&t));
    cr_expect_not(dmm_tunables_static_threshold(&t));
    dmm_tunables_glibc(&t, gl, sizeof gl);
    cr_expect_str_eq(gl, "");
    t.v[DMM_TUNE_ARENA_MAX] = 1;
    cr_expect_not(dmm_tunables_static_threshold(&t), "arena_max keeps the dynamic threshold");
    t.v[DMM_TUNE_TOP_PAD] = 131072;
    cr_expect(dmm_tunables_static_threshold(&t));

    static const char *const bad[] = {
        "top_pad=1 top_pad=2",          /* twice */
        "mmap_threshold=64m",           /* above glibc's 32 MiB limit */
        "arena_max=0",                  /* arena_max >= 1 */
        "trim_threshold=-1",
        "top_pad=12q",
        "heap=4",                       /* not a tunable */
        "top_pad",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        te.msg[0] = 0;
        cr_expect_neq(dmm_tunables_parse(bad[i], &u, &te), 0, "%s parsed", bad[i]);
        cr_expect_neq(te.msg[0], 0, "%s: no message", bad[i]);
    }
}

/* ---- the search with a deterministic fitness -------------------------------- */

typedef struct target {
    dmm_tunables_t want;
    int calls, saw_arena;
} target_t;

static double steps(long long a, long long b)
{
    double x = a < 0 ? -2 : a == 0 ? -1 : log2((double)a);
    double y = b < 0 ? -2 : b == 0 ? -1 : log2((double)b);
    return fabs(x - y);
}

/* F: 1 + the distance, in doublings, from the target (0 only at it). */
static double distance(const dmm_tunables_t *t, uint64_t *T, size_t *M, void *arg)
{
    target_t *tg = arg;
    tg->calls++;
    if (t->v[DMM_TUNE_ARENA_MAX] != DMM_TUNE_DEFAULT)
        tg->saw_arena = 1;
    double d = 0;
    for (int i = 0; i < DMM_TUNE_ARENA_MAX; i++)
        d += steps(t->v[i], tg->want.v[i]);
    *T = (uint64_t)(d * 1000);
    *M = 0;
    return d;
}

static void search(const dmm_ge_config_t *cfg, dmm_grammar_t *g, int fold, target_t *tg,
                   dmm_tune_result_t *r)
{
    dmm_err_t err = { { 0 } };
    cr_assert_eq(dmm_tune_search(cfg, g, fold, distance, tg, r, &err), 0, "%s", err.msg);
    cr_assert(r->found);
}

Test(tune, same_seed_same_winner_and_the_search_finds_a_known_optimum)
{
    dmm_grammar_t *g = builtin();
    target_t tg;
    memset(&tg, 0, sizeof tg);
    dmm_tunables_default(&tg.want);
    tg.want.v[DMM_TUNE_TOP_PAD] = 1 << 20;
    tg.want.v[DMM_TUNE_MMAP_THRESHOLD] = 65536;

    dmm_ge_config_t cfg;
    dmm_tune_config_default(&cfg);
    cr_expect_eq(cfg.jobs, 1, "candidates are timed one at a time");
    cfg.seed = 7;
    dmm_tune_result_t a, b, c;
    search(&cfg, g, 1, &tg, &a);
    search(&cfg, g, 1, &tg, &b);
    cr_expect_eq(memcmp(&a.best, &b.best, sizeof a.best), 0, "same seed, another winner");
    cr_expect_eq(a.F, b.F);
    cr_assert_eq(a.ge.nlog, b.ge.nlog);
    for (int i = 0; i < a.ge.nlog; i++)
        cr_expect_eq(a.ge.log[i].best_F, b.ge.log[i].best_F, "generation %d", i);
    cr_expect_eq(a.ge.cache_hits, b.ge.cache_hits);
    cr_expect_gt(a.ge.cache_hits, 0, "the phenotype cache answered nothing");
    /* each phenotype measured once */
    cr_expect_eq((uint64_t)tg.calls, a.ge.simulations + b.ge.simulations);
    cr_expect_not(tg.saw_arena, "arena_max reached the fitness though folded");
    char ka[256];
    dmm_tunables_format(&a.best, ka, sizeof ka);
    cr_expect_str_eq(ka, a.ge.best_key);

    /* a longer search reaches the target exactly */
    cfg.pop = 30;
    cfg.gens = 40;
    cfg.elite = 3;
    search(&cfg, g, 1, &tg, &c);
    dmm_tunables_format(&c.best, ka, sizeof ka);
    cr_expect_eq(c.F, 0, "best %s at F %g", ka, c.F);
    cr_expect_str_eq(ka, "top_pad=1048576 trim_threshold=default mmap_threshold=65536 "
                         "arena_max=default");
    dmm_tune_result_free(&a);
    dmm_tune_result_free(&b);
    dmm_tune_result_free(&c);

    /* unfolded, arena_max values do reach the fitness */
    memset(&tg.calls, 0, sizeof tg.calls);
    cfg.pop = 12;
    cfg.gens = 4;
    cfg.elite = 2;
    search(&cfg, g, 0, &tg, &a);
    cr_expect(tg.saw_arena);
    dmm_tune_result_free(&a);
    dmm_grammar_free(g);
}

/* Only top_pad matters: 1 MiB is best, default worst. */
static double top_pad_only(const dmm_tunables_t *t, uint64_t *T, size_t *M, void *arg)
{
    (void)arg;
    *T = 0;
    *M = 0;
    return 1 + steps(t->v[DMM_TUNE_TOP_PAD], 1 << 20);
}

Test(tune, pruning_puts_back_to_default_what_does_not_pay)
{
    dmm_err_t te;   /* what the tunables' parsers say */
    dmm_tunables_t t;
    char text[256];
    cr_assert_eq(dmm_tunables_parse("top_pad=1m trim_threshold=4k mmap_threshold=512", &t, &te),
                 0, "%s", te.msg);
    int mask = dmm_tune_prune(&t, 0.0, top_pad_only, NULL);
    dmm_tunables_format(&t, text, sizeof text);
    cr_expect_str_eq(text, "top_pad=1048576 trim_threshold=default mmap_threshold=default "
                           "arena_max=default");
    cr_expect_eq(mask, (1 << DMM_TUNE_TRIM_THRESHOLD) | (1 << DMM_TUNE_MMAP_THRESHOLD));
    /* a tolerance as large as top_pad's own effect prunes it too */
    cr_assert_eq(dmm_tunables_parse("top_pad=512k", &t, &te), 0, "%s", te.msg);
    cr_expect_eq(dmm_tune_prune(&t, 0.5, top_pad_only, NULL), 0, "one doubling away: kept");
    cr_expect_eq(dmm_tune_prune(&t, 100, top_pad_only, NULL), 1 << DMM_TUNE_TOP_PAD);
    cr_expect(dmm_tunables_all_default(&t));
}

Test(tune, mann_whitney_p_values)
{
    const double lo[] = { 1, 2, 3, 4, 5 }, hi[] = { 6, 7, 8, 9, 10 };
    /* full separation of 5 and 5: 2 of the C(10,5) = 252 orderings */
    cr_expect_float_eq(dmm_tune_mann_whitney(lo, 5, hi, 5), 2.0 / 252, 1e-12);
    cr_expect_float_eq(dmm_tune_mann_whitney(hi, 5, lo, 5), 2.0 / 252, 1e-12);
    const double mix[] = { 1, 10, 3, 8, 5 }, mix2[] = { 2, 9, 4, 7, 6 };
    cr_expect_gt(dmm_tune_mann_whitney(mix, 5, mix2, 5), 0.5);
    const double same[] = { 4, 4, 4 };
    cr_expect_float_eq(dmm_tune_mann_whitney(same, 3, same, 3), 1.0, 1e-12);
    /* ties: the normal approximation, still small for a clear shift */
    const double t1[] = { 1, 1, 2, 2, 3, 3, 1, 2 }, t2[] = { 7, 7, 8, 8, 9, 9, 7, 8 };
    cr_expect_lt(dmm_tune_mann_whitney(t1, 8, t2, 8), 0.01);
}

/* ---- the command ------------------------------------------------------------ */

/* dmm tune-glibc --probe under one extra environment variable (or none). */
static char *probe(const char *var)
{
    char out[300], errf[300];
    snprintf(out, sizeof out, "%s/probe.out", tmpdir);
    snprintf(errf, sizeof errf, "%s/probe.err", tmpdir);
    char *argv[] = { DMM, "tune-glibc", "--probe", NULL };
    const char *env[] = { var, NULL };
    int st = run(argv, var ? env : NULL, tmpdir, NULL, out, errf);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "--probe under %s: status %d", var, st);
    return slurp(out, NULL);
}

static long long probe_num(const char *json, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(json, pat);
    cr_assert_not_null(p, "%s lacks %s", json, key);
    return strtoll(p + strlen(pat), NULL, 10);
}

static int probe_true(const char *json, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":true", key);
    return strstr(json, pat) != NULL;
}

Test(tune, glibc_honours_both_forms_and_any_setting_stops_the_dynamic_threshold,
     .init = make_tmpdir, .fini = remove_tmpdir)
{
    if (SANITIZED)
        cr_skip_test("a sanitized dmm does not run on glibc's malloc");
    char *d = probe(NULL);
    cr_expect_geq(probe_num(d, "first_extension_bytes"), 128 * 1024, "%s", d);
    cr_expect(probe_true(d, "dynamic_mmap_threshold"), "%s", d);
    static const char *const zero_pad[] = { "GLIBC_TUNABLES=glibc.malloc.top_pad=0",
                                            "MALLOC_TOP_PAD_=0" };
    for (int i = 0; i < 2; i++) {
        char *p = probe(zero_pad[i]);
        cr_expect_leq(probe_num(p, "first_extension_bytes"), 8192, "%s: %s", zero_pad[i], p);
        cr_expect_not(probe_true(p, "dynamic_mmap_threshold"), "%s: %s", zero_pad[i], p);
        free(p);
    }
    /* glibc's own default value, set explicitly: the same pad, no dynamic threshold */
    char *p = probe("GLIBC_TUNABLES=glibc.malloc.top_pad=131072");
    cr_expect_eq(probe_num(p, "first_extension_bytes"), probe_num(d, "first_extension_bytes"));
    cr_expect_not(probe_true(p, "dynamic_mmap_threshold"), "%s", p);
    free(p);
    free(d);
}

/* Record the bundled workload's first 20 frames into tmpdir/wm.trc. */
static void record(char *path, size_t cap)
{
    snprintf(path, cap, "%s/wm.trc", tmpdir);
    char pre[300], file[320];
    snprintf(pre, sizeof pre, "LD_PRELOAD=%s/libdmmtrace.so", DMM_BUILD_DIR);
    snprintf(file, sizeof file, "DMM_TRACE_FILE=%s", path);
    const char *env[] = { pre, file, NULL };
    char *argv[] = { DMM_BUILD_DIR "/bench/work_media", "-f", "20", NULL };
    int st = run(argv, env, tmpdir, NULL, NULL, NULL);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "work_media: status %d", st);
}

/* The line of text that starts with prefix, copied into buf. */
static int line_of(const char *text, const char *prefix, char *buf, size_t cap)
{
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (!strncmp(p, prefix, strlen(prefix))) {
            const char *e = strchr(p, '\n');
            size_t n = e ? (size_t)(e - p) : strlen(p);
            snprintf(buf, cap, "%.*s", (int)n, p);
            return 1;
        }
    }
    return 0;
}

/* The MALLOC_* line's settings. */
static void parse_malloc_line(const char *line, dmm_tunables_t *t)
{
    dmm_tunables_default(t);
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", line + strlen("export"));
    for (char *w = strtok(copy, " "); w; w = strtok(NULL, " ")) {
        char *eq = strchr(w, '=');
        cr_assert_not_null(eq, "%s", line);
        int found = 0;
        for (int i = 0; i < DMM_TUNE_N; i++)
            if ((size_t)(eq - w) == strlen(dmm_tunables_info[i].env) &&
                !strncmp(w, dmm_tunables_info[i].env, (size_t)(eq - w))) {
                char *end;
                t->v[i] = strtoll(eq + 1, &end, 10);
                cr_expect_eq(*end, 0, "%s", w);
                found = 1;
            }
        cr_expect(found, "unknown variable in '%s'", line);
    }
}

Test(tune, a_small_real_run_prints_lines_that_parse_back_and_valid_json,
     .init = make_tmpdir, .fini = remove_tmpdir, .timeout = 60)
{
    dmm_err_t te;   /* what the tunables' parsers say */
    char trace[300], err[2048];
    record(trace, sizeof trace);
    char *args[] = { DMM, "tune-glibc", "-q", "--pop", "4", "--gens", "1", "--reps", "1",
                     "--final-reps", "2", trace, NULL };
    cr_assert_eq(run_dmm(tmpdir, args, err, sizeof err), 0, "%s", err);
    char path[320];
    snprintf(path, sizeof path, "%s/stdout", tmpdir);
    char *out = slurp(path, NULL);
    cr_expect(strstr(out, "wm.trc") && strstr(out, "operations"), "%s", out);
    char gl[1024], env[1024];
    if (line_of(out, "export GLIBC_TUNABLES=", gl, sizeof gl)) {
        dmm_tunables_t a, b;
        cr_assert_eq(dmm_tunables_from_glibc(gl + strlen("export GLIBC_TUNABLES="), &a, &te), 0,
                     "%s", te.msg);
        cr_expect_not(dmm_tunables_all_default(&a), "%s", gl);
        cr_assert(line_of(out, "export MALLOC_", env, sizeof env), "%s", out);
        parse_malloc_line(env, &b);
        cr_expect_eq(memcmp(&a, &b, sizeof a), 0, "'%s' and '%s' differ", gl, env);
        cr_expect(strstr(out, "final run:") && strstr(out, "wall time") &&
                  strstr(out, "peak RSS"), "%s", out);
    } else {
        cr_expect(strstr(out, "defaults won"), "neither settings nor a verdict: %s", out);
    }
    free(out);

    /* --json: one valid object (python3's parser judges), whose settings
     * parse back */
    char *jargs[] = { DMM, "tune-glibc", "-q", "--json", "--pop", "4", "--gens", "1", "--reps",
                      "1", "--final-reps", "2", trace, NULL };
    cr_assert_eq(run_dmm(tmpdir, jargs, err, sizeof err), 0, "%s", err);
    char check[300];
    snprintf(check, sizeof check, "%s/check.py", tmpdir);
    FILE *f = fopen(check, "w");
    cr_assert_not_null(f);
    fprintf(f, "import json, sys\n"
               "d = json.load(open(sys.argv[1]))\n"
               "assert d['ops'] > 1000, d['ops']\n"
               "assert d['search']['candidates_measured'] >= 1\n"
               "assert set(d['best']) == {'top_pad', 'trim_threshold', 'mmap_threshold', "
               "'arena_max'}\n"
               "assert (d['final'] is None) == (not d['tuned'])\n"
               "assert d['recommended'] in (True, False)\n"
               "assert not d['recommended'] or d['final']['F'] < 1\n"
               "print(d['GLIBC_TUNABLES'])\n");
    fclose(f);
    char jout[320], pout[320], perr[320];
    snprintf(jout, sizeof jout, "%s/stdout", tmpdir);
    snprintf(pout, sizeof pout, "%s/py.out", tmpdir);
    snprintf(perr, sizeof perr, "%s/py.err", tmpdir);
    char *py[] = { "/usr/bin/python3", check, jout, NULL };
    int st = run(py, NULL, tmpdir, NULL, pout, perr);
    char *pe = slurp(perr, NULL);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "JSON check failed: %s", pe);
    free(pe);
    char *line = slurp(pout, NULL);
    char *nl = strchr(line, '\n');
    if (nl)
        *nl = 0;
    dmm_tunables_t t;
    cr_expect_eq(dmm_tunables_from_glibc(line, &t, &te), 0, "%s: %s", line, te.msg);
    free(line);
}

Test(tune, bad_input_exits_2_naming_the_file, .init = make_tmpdir, .fini = remove_tmpdir)
{
    char err[2048], path[320], bnf[320];
    char missing[] = "/nonexistent/dir/app.trc";
    char *a1[] = { DMM, "tune-glibc", missing, NULL };
    cr_expect_eq(run_dmm(tmpdir, a1, err, sizeof err), 2);
    cr_expect(strstr(err, missing), "%s", err);

    snprintf(path, sizeof path, "%s/notatrace.trc", tmpdir);
    FILE *f = fopen(path, "w");
    fputs("this is not an allocation trace\n", f);
    fclose(f);
    char *a2[] = { DMM, "tune-glibc", "-q", path, NULL };
    cr_expect_eq(run_dmm(tmpdir, a2, err, sizeof err), 2);
    cr_expect(strstr(err, path), "%s", err);

    char *a3[] = { DMM, "tune-glibc", tmpdir, NULL };
    cr_expect_eq(run_dmm(tmpdir, a3, err, sizeof err), 2, "a directory");
    cr_expect(strstr(err, tmpdir), "%s", err);

    snprintf(bnf, sizeof bnf, "%s/bad.bnf", tmpdir);
    f = fopen(bnf, "w");
    fputs("<A> ::= <B>\n", f);
    fclose(f);
    char *a4[] = { DMM, "tune-glibc", "--grammar", bnf, path, NULL };
    cr_expect_eq(run_dmm(tmpdir, a4, err, sizeof err), 2);
    cr_expect(strstr(err, "bad.bnf"), "%s", err);

    /* usage errors: 1, with a message */
    char *u1[] = { DMM, "tune-glibc", "--pop", "1", path, NULL };
    cr_expect_eq(run_dmm(tmpdir, u1, err, sizeof err), 1);
    cr_expect(strstr(err, "--pop"), "%s", err);
    char *u2[] = { DMM, "tune-glibc", "--reps", "x", path, NULL };
    cr_expect_eq(run_dmm(tmpdir, u2, err, sizeof err), 1);
    char *u3[] = { DMM, "tune-glibc", "--bogus", "1", path, NULL };
    cr_expect_eq(run_dmm(tmpdir, u3, err, sizeof err), 1);
    char *u4[] = { DMM, "tune-glibc", "-", NULL };
    cr_expect_eq(run_dmm(tmpdir, u4, err, sizeof err), 1);
    char *u5[] = { DMM, "tune-glibc", NULL };
    cr_expect_eq(run_dmm(tmpdir, u5, err, sizeof err), 1);
}

/* ---- --verify: the settings on the real program ------------------------------ */

/* dmm's JSON on tmpdir/stdout, parsed. */
static void read_stdout_json(dmm_jsonread_t *d, char **text)
{
    char path[320];
    size_t len;
    snprintf(path, sizeof path, "%s/stdout", tmpdir);
    *text = slurp(path, &len);
    cr_assert_not_null(*text);
    dmm_err_t err;
    cr_assert_eq(dmm_jsonread_parse(d, *text, len, &err), 0, "%s: %s", err.msg, *text);
}

static double jnum(const dmm_jsonread_t *d, const char *path)
{
    double v = NAN;
    cr_assert_eq(dmm_jsonread_num(d, path, &v), 0, "no number at %s", path);
    return v;
}

Test(tune, verify_runs_the_program_both_ways_and_reports_every_number,
     .init = make_tmpdir, .fini = remove_tmpdir, .timeout = 60)
{
    char err[2048];
    char *args[] = { DMM, "tune-glibc", "-q", "--json", "--verify", "glibc.malloc.top_pad=0",
                     "--reps", "3", "--", "/bin/sh", "-c", "echo x", NULL };
    cr_assert_eq(run_dmm(tmpdir, args, err, sizeof err), 0, "%s", err);
    dmm_jsonread_t d;
    char *text, s[256];
    read_stdout_json(&d, &text);
    cr_expect_eq(jnum(&d, "reps"), 3, "%s", text);
    cr_expect_eq(jnum(&d, "exit_status"), 0);
    cr_expect_eq(jnum(&d, "output_bytes"), 2);
    cr_expect_eq(dmm_jsonread_count(&d, "program"), 3);
    dmm_jsonread_str(&d, "program.2", s, sizeof s);
    cr_expect_str_eq(s, "echo x");
    cr_assert_gt(dmm_jsonread_str(&d, "GLIBC_TUNABLES.tuned", s, sizeof s), 0, "%s", text);
    cr_expect(strstr(s, "glibc.malloc.top_pad=0"), "%s", s);
    static const char *const keys[] = { "wall_s", "cpu_s", "maxrss_bytes" };
    for (int k = 0; k < 3; k++) {
        char p[128];
        for (int side = 0; side < 2; side++) {
            const char *sn = side ? "tuned" : "defaults";
            snprintf(p, sizeof p, "runs.%s.%s", sn, keys[k]);
            cr_expect_eq(dmm_jsonread_count(&d, p), 3, "%s", p);
            for (int i = 0; i < 3; i++) {
                snprintf(p, sizeof p, "runs.%s.%s.%d", sn, keys[k], i);
                double v = jnum(&d, p);
                cr_expect(k == 1 ? v >= 0 : v > 0, "%s = %g", p, v);
            }
            char q[160];
            snprintf(p, sizeof p, "compare.%s.%s.", keys[k], sn);
            snprintf(q, sizeof q, "%smedian", p);
            double med = jnum(&d, q);
            snprintf(q, sizeof q, "%smin", p);
            double lo = jnum(&d, q);
            snprintf(q, sizeof q, "%smax", p);
            double hi = jnum(&d, q);
            cr_expect(lo <= med && med <= hi, "%s: %g %g %g", p, lo, med, hi);
        }
        snprintf(p, sizeof p, "compare.%s.p", keys[k]);
        double pv = jnum(&d, p);
        cr_expect(pv > 0 && pv <= 1, "%s = %g", p, pv);
        snprintf(p, sizeof p, "compare.%s.change_pct", keys[k]);
        cr_expect(isfinite(jnum(&d, p)), "%s", p);
        snprintf(p, sizeof p, "compare.%s.effect", keys[k]);
        cr_assert_gt(dmm_jsonread_str(&d, p, s, sizeof s), 0, "%s", p);
        cr_expect(!strcmp(s, "gain") || !strcmp(s, "cost") || !strcmp(s, "none"), "%s", s);
        snprintf(p, sizeof p, "compare.%s.verdict", keys[k]);
        cr_expect_gt(dmm_jsonread_str(&d, p, s, sizeof s), 0, "%s", p);
    }
    cr_expect_gt(dmm_jsonread_str(&d, "verdict", s, sizeof s), 0);
    dmm_jsonread_free(&d);
    free(text);

    /* the text: the table and the verdict */
    char *targs[] = { DMM, "tune-glibc", "-q", "--verify", "glibc.malloc.top_pad=0", "--reps",
                      "2", "--", "/bin/sh", "-c", "echo x", NULL };
    cr_assert_eq(run_dmm(tmpdir, targs, err, sizeof err), 0, "%s", err);
    char path[320];
    snprintf(path, sizeof path, "%s/stdout", tmpdir);
    char *out = slurp(path, NULL);
    cr_expect(strstr(out, "wall time") && strstr(out, "CPU time") && strstr(out, "peak RSS") &&
              strstr(out, "verdict: "), "%s", out);
    free(out);

    /* a status other than 0, the same every run, is the program's own */
    char *sargs[] = { DMM, "tune-glibc", "-q", "--json", "--verify", "glibc.malloc.top_pad=0",
                      "--reps", "1", "--", "/bin/sh", "-c", "echo y; exit 3", NULL };
    cr_assert_eq(run_dmm(tmpdir, sargs, err, sizeof err), 0, "%s", err);
    read_stdout_json(&d, &text);
    cr_expect_eq(jnum(&d, "exit_status"), 3);
    dmm_jsonread_free(&d);
    free(text);
}

Test(tune, verify_refuses_a_program_that_does_not_do_the_same_every_run,
     .init = make_tmpdir, .fini = remove_tmpdir, .timeout = 60)
{
    char err[2048];
    /* its process id in its output: another output every run */
    char *a1[] = { DMM, "tune-glibc", "-q", "--verify", "glibc.malloc.top_pad=0", "--reps", "2",
                   "--", "/bin/sh", "-c", "echo $$", NULL };
    cr_expect_eq(run_dmm(tmpdir, a1, err, sizeof err), 2);
    cr_expect(strstr(err, "run 1 of 4") && strstr(err, "output differs"), "%s", err);
    /* another exit status on the second run */
    char flag[320], script[700];
    snprintf(flag, sizeof flag, "%s/ran", tmpdir);
    snprintf(script, sizeof script, "if [ -e %s ]; then exit 1; fi; touch %s", flag, flag);
    char *a2[] = { DMM, "tune-glibc", "-q", "--verify", "glibc.malloc.top_pad=0", "--reps", "2",
                   "--", "/bin/sh", "-c", script, NULL };
    cr_expect_eq(run_dmm(tmpdir, a2, err, sizeof err), 2);
    cr_expect(strstr(err, "run 1 of 4") && strstr(err, "exit status 1"), "%s", err);
    /* killed */
    char *a3[] = { DMM, "tune-glibc", "-q", "--verify", "glibc.malloc.top_pad=0", "--", "/bin/sh",
                   "-c", "kill -9 $$", NULL };
    cr_expect_eq(run_dmm(tmpdir, a3, err, sizeof err), 2);
    cr_expect(strstr(err, "warm-up") && strstr(err, "signal 9"), "%s", err);
    /* not there */
    char *a4[] = { DMM, "tune-glibc", "-q", "--verify", "glibc.malloc.top_pad=0", "--",
                   "/nonexistent/program", NULL };
    cr_expect_eq(run_dmm(tmpdir, a4, err, sizeof err), 2);
    cr_expect(strstr(err, "/nonexistent/program"), "%s", err);
}

Test(tune, verify_usage_errors_exit_1_with_a_message, .init = make_tmpdir,
     .fini = remove_tmpdir)
{
    char err[2048];
    char *u1[] = { DMM, "tune-glibc", "--verify", "glibc.malloc.top_pad=0", NULL };
    cr_expect_eq(run_dmm(tmpdir, u1, err, sizeof err), 1);
    cr_expect(strstr(err, "needs a program"), "%s", err);
    char *u2[] = { DMM, "tune-glibc", "--verify", "glibc.malloc.top_pad=0", "app.trc", NULL };
    cr_expect_eq(run_dmm(tmpdir, u2, err, sizeof err), 1);
    cr_expect(strstr(err, "app.trc"), "%s", err);
    char *u3[] = { DMM, "tune-glibc", "--verify", "glibc.malloc.top_pad=1m", "--", "/bin/true",
                   NULL };
    cr_expect_eq(run_dmm(tmpdir, u3, err, sizeof err), 1);
    cr_expect(strstr(err, "1m"), "%s", err);
    char *u4[] = { DMM, "tune-glibc", "--verify", "", "--", "/bin/true", NULL };
    cr_expect_eq(run_dmm(tmpdir, u4, err, sizeof err), 1);
    cr_expect(strstr(err, "--verify"), "%s", err);
    char *u5[] = { DMM, "tune-glibc", "--verify", "glibc.malloc.top_pad=0", "--reps", "0", "--",
                   "/bin/true", NULL };
    cr_expect_eq(run_dmm(tmpdir, u5, err, sizeof err), 1);
    cr_expect(strstr(err, "--reps"), "%s", err);
    char *u6[] = { DMM, "tune-glibc", "--verify", "glibc.malloc.top_pad=0", "--pop", "4", "--",
                   "/bin/true", NULL };
    cr_expect_eq(run_dmm(tmpdir, u6, err, sizeof err), 1);
    cr_expect(strstr(err, "--pop"), "%s", err);
    char *u7[] = { DMM, "tune-glibc", "--", "/bin/true", NULL };
    cr_expect_eq(run_dmm(tmpdir, u7, err, sizeof err), 1);
    cr_expect(strstr(err, "--verify"), "%s", err);
    char *u8[] = { DMM, "tune-glibc", "--verify", NULL };
    cr_expect_eq(run_dmm(tmpdir, u8, err, sizeof err), 1);
    cr_expect(strstr(err, "needs a value"), "%s", err);
}
