/* test_report.c - dmm report: the bench report and the evolve report are
 * written with every picture (PNG and SVG, non-empty, real images), from
 * real outputs of dmm replay, dmm stats and dmm evolve on a recorded trace;
 * a directory with no results is refused with a message naming it. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test/lib/progrun.h"
#include "test/lib/rundmm.h"
#include "test/lib/libs.h"

#define MEDIA  DMM_BUILD_DIR "/bench/work_media"


static char trc[400];

/* A small trace of the bundled workload, recorded by the tracer. */
static void record(void)
{
    char env[450];
    snprintf(trc, sizeof trc, "%s/wm.trc", tmpdir);
    snprintf(env, sizeof env, "DMM_TRACE_FILE=%s", trc);
    const char *extra[] = { "LD_PRELOAD=" TRACER, env, NULL };
    char *argv[] = { MEDIA, "-f", "20", NULL };
    int st = run(argv, extra, tmpdir, NULL, NULL, NULL);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "work_media under the tracer failed");
    cr_assert_eq(access(trc, R_OK), 0, "no trace written");
}

/* Run dmm with stdout into the file `out` (NULL: discarded); the status. */
static int dmm_to(const char *out, char *const args[])
{
    const char *extra[] = { NULL };
    return run(args, extra, tmpdir, NULL, out, NULL);
}

/* The picture NAME exists as a PNG and an SVG, each a real, non-empty image. */
static void expect_picture(const char *dir, const char *name)
{
    char p[600];
    size_t n;
    snprintf(p, sizeof p, "%s/%s.png", dir, name);
    char *png = slurp(p, &n);
    cr_assert_not_null(png, "%s was not drawn", p);
    cr_expect_gt(n, 1000, "%s is only %zu bytes", p, n);
    cr_expect(n >= 8 && !memcmp(png, "\x89PNG\r\n\x1a\n", 8), "%s is not a PNG", p);
    free(png);
    snprintf(p, sizeof p, "%s/%s.svg", dir, name);
    char *svg = slurp(p, &n);
    cr_assert_not_null(svg, "%s was not drawn", p);
    cr_expect_gt(n, 1000, "%s is only %zu bytes", p, n);
    cr_expect_not_null(strstr(svg, "<svg"), "%s is not an SVG", p);
    cr_expect_not_null(strstr(svg, "<path"), "%s has no lines", p);
    free(svg);
}

static void expect_in(const char *text, const char *what)
{
    cr_expect_not_null(strstr(text, what), "the report lacks \"%s\"", what);
}

/* One replay's JSON (a line of dmm replay --json), also writing its series. */
static char *replay_json(const char *name, const char *const extra[], const char *csv)
{
    char out[400];
    snprintf(out, sizeof out, "%s/%s.json", tmpdir, name);
    char *argv[] = { DMM, "replay", "--json", "--csv", (char *)csv, trc, NULL };
    int st = run(argv, extra, tmpdir, NULL, out, NULL);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "dmm replay under %s failed", name);
    size_t n;
    char *j = slurp(out, &n);
    cr_assert(j && n > 10);
    while (n && (j[n - 1] == '\n'))
        j[--n] = 0;
    return j;
}

Test(report, bench_report_has_every_table_and_picture)
{
    make_tmpdir();
    record();
    char bench[400], series[450], p[600];
    snprintf(bench, sizeof bench, "%s/bench", tmpdir);
    snprintf(series, sizeof series, "%s/series", tmpdir);
    cr_assert_eq(mkdir(bench, 0755), 0);
    cr_assert_eq(mkdir(series, 0755), 0);

    /* what bench/peers.py gathers for one trace, from the real tools */
    snprintf(p, sizeof p, "%s/glibc.csv", series);
    const char *none[] = { NULL };
    char *jg = replay_json("glibc", none, p);
    snprintf(p, sizeof p, "%s/dmm-kng.csv", series);
    const char *kng[] = { "LD_PRELOAD=" LIBDMM, "DMM_CONFIG=kng", NULL };
    char *jk = replay_json("kng", SANITIZED ? none : kng, p);
    char stats[450], evo[450];
    snprintf(stats, sizeof stats, "%s/stats.json", tmpdir);
    char *sargs[] = { DMM, "stats", "--json", trc, NULL };
    cr_assert_eq(dmm_to(stats, sargs), 0);
    snprintf(evo, sizeof evo, "%s/evo", tmpdir);
    char *eargs[] = { DMM, "evolve", "-q", "--pop", "12", "--elite", "2", "--gens", "4", "--out", evo, trc, NULL };
    cr_assert_eq(dmm_to(NULL, eargs), 0, "dmm evolve failed");

    snprintf(p, sizeof p, "%s/peers.json", bench);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f);
    fprintf(f, "{\"started\": \"2026-11-30T00:00:00\", \"machine\": \"test\", \"reps\": 1, "
               "\"evolve_time_s\": 1, \"failures\": [],\n"
               "\"summary\": {\"glibc\": {\"f_real\": 1, \"time_ratio\": 1, \"rss_ratio\": 1}, "
               "\"dmm-kng\": {\"f_real\": 1.1, \"time_ratio\": 1.05, \"rss_ratio\": 1.15}},\n"
               "\"traces\": {\"wm\": {\"allocators\": [\"glibc\", \"dmm-kng\"],\n"
               "\"runs\": {\"glibc\": [%s],\n\"dmm-kng\": [%s]},\n"
               "\"f_real\": {\"glibc\": {\"time_ratio\": 1, \"rss_ratio\": 1, \"f_real\": 1}, "
               "\"dmm-kng\": {\"time_ratio\": 1.05, \"rss_ratio\": 1.15, \"f_real\": 1.1}},\n"
               "\"series_dir\": \"%s\", \"stats_json\": \"%s\", \"evolve\": {\"log\": \"%s/log.csv\"}}}}\n",
            jg, jk, series, stats, evo);
    fclose(f);
    free(jg);
    free(jk);
    snprintf(p, sizeof p, "%s/sim_speed.md", bench);
    f = fopen(p, "w");
    cr_assert_not_null(f);
    fprintf(f, "# dmm sim speed\n\n| preset | median M ops/s |\n|---|---:|\n| kng | 20.0 |\n");
    fclose(f);

    char err[2000];
    char *args[] = { DMM, "report", bench, NULL };
    int rc = run_dmm(tmpdir, args, err, sizeof err);
    cr_assert_eq(rc, 0, "dmm report failed (%d): %s", rc, err);

    snprintf(p, sizeof p, "%s/report.md", bench);
    size_t n;
    char *md = slurp(p, &n);
    cr_assert_not_null(md, "no report.md");
    expect_in(md, "## What was run, and on what");
    expect_in(md, "- CPU: ");
    expect_in(md, "## Side by side across traces");
    expect_in(md, "### wm");
    expect_in(md, "#### Real-time view");
    expect_in(md, "| dmm-kng |");
    expect_in(md, "## Simulator speed");
    expect_in(md, "| kng | 20.0 |");
    cr_expect_null(strstr(md, "not drawn"), "a picture was not drawn");
    const char *pics[] = { "plane_all", "mem_wm", "lat_wm", "plane_wm", "sizes_wm", "ge_wm" };
    char plots[450];
    snprintf(plots, sizeof plots, "%s/plots", bench);
    for (size_t i = 0; i < sizeof pics / sizeof pics[0]; i++) {
        char ref[100];
        snprintf(ref, sizeof ref, "](plots/%s.svg)", pics[i]);
        expect_in(md, ref);
        expect_picture(plots, pics[i]);
    }
    /* both allocators' memory over time are in the one chart */
    snprintf(p, sizeof p, "%s/mem_wm.gp", plots);
    char *gp = slurp(p, &n);
    cr_assert_not_null(gp);
    expect_in(gp, "title \"glibc\"");
    expect_in(gp, "title \"dmm-kng\"");
    expect_in(gp, "requested");
    free(gp);
    free(md);
    remove_tmpdir();
}

Test(report, evolve_report_has_its_pictures_and_is_written_again_by_dmm_report)
{
    make_tmpdir();
    record();
    char d[400], p[600];
    snprintf(d, sizeof d, "%s/evo", tmpdir);
    char *eargs[] = { DMM, "evolve", "-q", "--pop", "12", "--elite", "2", "--gens", "4", "--out", d, trc, NULL };
    cr_assert_eq(dmm_to(NULL, eargs), 0, "dmm evolve failed");
    snprintf(p, sizeof p, "%s/stats.json", d);
    char *sargs[] = { DMM, "stats", "--json", trc, NULL };
    cr_assert_eq(dmm_to(p, sargs), 0);
    char best[450];
    snprintf(best, sizeof best, "%s/best.dmm", d);
    snprintf(p, sizeof p, "%s/sim.json", d);
    char *margs[] = { DMM, "sim", "--json", "--dmm", best, trc, NULL };
    cr_assert_eq(dmm_to(p, margs), 0);

    char *py[] = { "/usr/bin/python3", DMM_SRC_DIR "/scripts/evolve_report.py", "--dir", d,
                   "--trace", trc, "--name", "wm", "--bench-report", "/nonexistent/report.md",
                   NULL };
    int st = run(py, NULL, tmpdir, NULL, NULL, NULL);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "evolve_report.py failed");
    char plots[450];
    snprintf(plots, sizeof plots, "%s/plots", d);
    expect_picture(plots, "convergence");
    expect_picture(plots, "sizes");
    snprintf(p, sizeof p, "%s/report.md", d);
    size_t n;
    char *md = slurp(p, &n);
    cr_assert_not_null(md);
    expect_in(md, "](plots/convergence.svg)");
    expect_in(md, "](plots/sizes.svg)");
    expect_in(md, "## Measured side by side");
    expect_in(md, "make compare EVOLVED=");
    expect_in(md, "bench/report.md");
    free(md);

    /* dmm report writes it again from what the search saved */
    snprintf(p, sizeof p, "%s/report.md", d);
    cr_assert_eq(unlink(p), 0);
    snprintf(p, sizeof p, "%s/plots/convergence.png", d);
    cr_assert_eq(unlink(p), 0);
    char err[2000];
    char *args[] = { DMM, "report", d, NULL };
    int rc = run_dmm(tmpdir, args, err, sizeof err);
    cr_assert_eq(rc, 0, "dmm report failed (%d): %s", rc, err);
    snprintf(p, sizeof p, "%s/report.md", d);
    cr_expect_eq(access(p, R_OK), 0, "report.md not written again");
    expect_picture(plots, "convergence");
    remove_tmpdir();
}

/* A Pareto search's run (make evolve OBJECTIVES=... PICK=1): the report
 * shows the front, its picture, and which design was built. */
Test(report, evolve_report_shows_the_pareto_front_and_the_pick)
{
    make_tmpdir();
    record();
    char d[400], p[600];
    snprintf(d, sizeof d, "%s/evo", tmpdir);
    char *eargs[] = { DMM, "evolve", "-q", "--pop", "12", "--gens", "4", "--objectives",
                      "time,memory", "--out", d, trc, NULL };
    cr_assert_eq(dmm_to(NULL, eargs), 0, "dmm evolve --objectives failed");
    snprintf(p, sizeof p, "%s/stats.json", d);
    char *sargs[] = { DMM, "stats", "--json", trc, NULL };
    cr_assert_eq(dmm_to(p, sargs), 0);
    /* what scripts/evolve.sh does for PICK=1 */
    char front1[450], chosen[450];
    snprintf(front1, sizeof front1, "%s/front-1.dmm", d);
    snprintf(chosen, sizeof chosen, "%s/chosen.dmm", d);
    size_t n;
    char *text = slurp(front1, &n);
    cr_assert_not_null(text, "no front-1.dmm");
    FILE *f = fopen(chosen, "w");
    cr_assert_not_null(f);
    fwrite(text, 1, n, f);
    fclose(f);
    free(text);
    snprintf(p, sizeof p, "%s/picked.txt", d);
    f = fopen(p, "w");
    cr_assert_not_null(f);
    fputs("front-1.dmm\n", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/sim.json", d);
    char *margs[] = { DMM, "sim", "--json", "--dmm", chosen, trc, NULL };
    cr_assert_eq(dmm_to(p, margs), 0);

    char *py[] = { "/usr/bin/python3", DMM_SRC_DIR "/scripts/evolve_report.py", "--dir", d,
                   "--trace", trc, "--name", "wm", NULL };
    int st = run(py, NULL, tmpdir, NULL, NULL, NULL);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "evolve_report.py failed");
    char plots[450];
    snprintf(plots, sizeof plots, "%s/plots", d);
    expect_picture(plots, "front");
    snprintf(p, sizeof p, "%s/report.md", d);
    char *md = slurp(p, &n);
    cr_assert_not_null(md);
    expect_in(md, "## The Pareto front");
    expect_in(md, "Built: **front-1.dmm**");
    expect_in(md, "](plots/front.svg)");
    expect_in(md, "| KNG |");
    expect_in(md, "eq. 1's winner (best.dmm)");
    expect_in(md, "front=1/");
    free(md);
    remove_tmpdir();
}

Test(report, a_directory_without_results_is_refused_by_name)
{
    make_tmpdir();
    char err[2000];
    char *args[] = { DMM, "report", tmpdir, NULL };
    int rc = run_dmm(tmpdir, args, err, sizeof err);
    cr_expect_eq(rc, 2, "exit %d", rc);
    cr_expect_not_null(strstr(err, tmpdir), "the message does not name the directory: %s", err);
    cr_expect_not_null(strstr(err, "no results"), "the message does not say what is wrong: %s", err);
    char nodir[400];
    snprintf(nodir, sizeof nodir, "%s/missing", tmpdir);
    char *args2[] = { DMM, "report", nodir, NULL };
    rc = run_dmm(tmpdir, args2, err, sizeof err);
    cr_expect_eq(rc, 2);
    cr_expect_not_null(strstr(err, "not a directory"), "%s", err);
    remove_tmpdir();
}
