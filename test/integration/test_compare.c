/* test_compare.c - make compare (bench/compare.py): a real program under
 * glibc and an evolved library side by side, with its output compared; the
 * library found by the program's name among make evolve's results; the
 * peers with huge pages turned on (--huge-peers); a program whose output
 * depends on the allocator is named, one whose output varies from run to
 * run is not compared, and bad input (no program, a
 * program that does not exist, no library evolved for it) is refused with
 * exit 2 and a message naming what is missing.  Timings are never
 * checked: only that they were measured. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test/lib/progrun.h"
#include "test/lib/libs.h"

#define COMPARE "/usr/bin/python3 " DMM_SRC_DIR "/bench/compare.py"

static char out[16384];

/* compare.py with ARGS (shell words), its build directory in tmpdir: the
 * exit status, its output (stderr joined) in out. */
static int compare(const char *args)
{
    char cmd[3072];
    snprintf(cmd, sizeof cmd, "cd %s && " COMPARE " --build %s/build %s", tmpdir, tmpdir, args);
    return run_sh(cmd, out, sizeof out);
}

static void expect_in(const char *what)
{
    cr_expect_not_null(strstr(out, what), "no \"%s\" in:\n%s", what, out);
}

/* A test that runs programs under the libraries: skipped in the sanitizer
 * pass; a fresh tmpdir with an input of `lines` lines for sort, its path in
 * in[cap]. */
static void start_with_input(char *in, size_t cap, int lines)
{
    if (SANITIZED)
        cr_skip_test("sanitizer pass: the programs compared are unsanitized, run in the plain pass");
    make_tmpdir();
    snprintf(in, cap, "%s/in.txt", tmpdir);
    write_input_file(in, lines);
}

Test(compare, a_program_under_glibc_and_its_library_side_by_side)
{
    char in[400], args[1200];
    start_with_input(in, sizeof in, 20000);
    snprintf(args, sizeof args, "--reps 2 --no-peers --evolved %s -- sort %s", EVOLVED, in);
    int rc = compare(args);
    cr_assert_eq(rc, 0, "compare.py exited %d:\n%s", rc, out);
    expect_in("| sort | glibc |");
    expect_in("| sort | evolved |");
    expect_in("| **1.000** | same |");   /* glibc against itself */
    expect_in("2 rounds");
    expect_in("- evolved: time ");
    cr_expect_null(strstr(out, "DIFFERENT"), "%s", out);
    char md[400];
    snprintf(md, sizeof md, "%s/build/bench/compare.md", tmpdir);
    char *text = slurp(md, NULL);
    cr_assert_not_null(text, "%s not written", md);
    cr_expect_not_null(strstr(text, "| sort | evolved |"));
    free(text);
    snprintf(md, sizeof md, "%s/build/bench/compare.json", tmpdir);
    cr_expect_eq(access(md, R_OK), 0, "%s not written", md);
    remove_tmpdir();
}

/* --presets: the paper's five reference managers too, each in libdmm.so. */
Test(compare, the_five_presets_beside_them)
{
    char in[400], args[1500];
    start_with_input(in, sizeof in, 2000);
    snprintf(args, sizeof args, "--reps 1 --no-peers --presets --evolved %s -- sort %s",
             EVOLVED, in);
    cr_expect_eq(compare(args), 2, "%s", out);   /* no libdmm.so in that build yet */
    expect_in("libdmm.so: no such library");
    char ln[1000];
    snprintf(ln, sizeof ln, "mkdir -p %s/build && ln -s %s %s/build/libdmm.so", tmpdir, LIBDMM,
             tmpdir);
    cr_assert_eq(run_sh(ln, out, sizeof out), 0, "%s", out);
    int rc = compare(args);
    cr_assert_eq(rc, 0, "compare.py exited %d:\n%s", rc, out);
    static const char *const rows[] = { "| sort | kng |", "| sort | lea |", "| sort | fib |",
                                        "| sort | s10 |", "| sort | exa |", "| sort | evolved |" };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        expect_in(rows[i]);
    cr_expect_null(strstr(out, "DIFFERENT"), "%s", out);
    remove_tmpdir();
}

/* Without --evolved: the newest library make evolve built from a trace of a
 * program of that name (its stats.json says which), and none for another. */
Test(compare, the_library_evolved_for_the_program_by_default)
{
    char d[400], cmd[2000], in[400];
    start_with_input(in, sizeof in, 2000);
    snprintf(d, sizeof d, "%s/build/evolve/sort.42", tmpdir);
    snprintf(cmd, sizeof cmd, "mkdir -p %s && cp %s %s/ && "
             "printf '{\"trace\": {\"command\": \"sort -n data\"}}' > %s/stats.json",
             d, EVOLVED, d, d);
    cr_assert_eq(run_sh(cmd, out, sizeof out), 0, "%s", out);
    snprintf(cmd, sizeof cmd, "--reps 1 --no-peers -- sort %s", in);
    int rc = compare(cmd);
    cr_assert_eq(rc, 0, "compare.py exited %d:\n%s", rc, out);
    expect_in("the newest library evolved for sort");
    expect_in("build/evolve/sort.42/libdmm_evolved.so");
    expect_in("1 round,");

    rc = compare("--reps 1 --no-peers -- cat /dev/null");
    cr_expect_eq(rc, 2, "%s", out);
    expect_in("no library evolved for cat");
    expect_in("--evolved");
    remove_tmpdir();
}

/* An output that depends on the allocator is named; one that varies from
 * run to run under glibc itself is not compared. */
Test(compare, outputs_compared_with_glibcs)
{
    if (SANITIZED)
        cr_skip_test("sanitizer pass: the programs compared are unsanitized, run in the plain pass");
    make_tmpdir();
    char args[1200];
    snprintf(args, sizeof args, "--reps 1 --no-peers --evolved %s -- "
             "sh -c 'echo $LD_PRELOAD; test -z \"$LD_PRELOAD\" || exit 7'", EVOLVED);
    int rc = compare(args);
    cr_expect_eq(rc, 3, "compare.py exited %d:\n%s", rc, out);
    expect_in("| sh | evolved |");
    expect_in("| DIFFERENT |");
    expect_in("DIFFERENT output or exit status from glibc's (exit 0) under: evolved (exit 7).");

    snprintf(args, sizeof args, "--reps 2 --no-peers --evolved %s -- sh -c 'echo $$'", EVOLVED);
    rc = compare(args);
    cr_expect_eq(rc, 0, "compare.py exited %d:\n%s", rc, out);
    expect_in("| not compared |");
    expect_in("varies from run to run under glibc itself");
    remove_tmpdir();
}

/* --huge-peers: glibc once more with its huge-page tunable in the
 * environment (with --no-peers, the one peer left to turn them on for),
 * where the kernel has transparent huge pages; a skip line naming why where
 * it has them off.  Each run's page faults are counted. */
Test(compare, the_peers_with_huge_pages_on)
{
    if (SANITIZED)
        cr_skip_test("sanitizer pass: the programs compared are unsanitized, run in the plain pass");
    make_tmpdir();
    int thp = thp_enabled();
    char args[1200];
    /* the tunable shows in the program's environment: glibc+thp's output
     * differs from glibc's, and the evolved library's (whose environment
     * the measuring clears of it) does not */
    snprintf(args, sizeof args, "--reps 1 --no-peers --huge-peers --evolved %s -- "
             "sh -c 'echo \"[$GLIBC_TUNABLES]\"'", EVOLVED);
    int rc = compare(args);
    if (thp) {
        cr_expect_eq(rc, 3, "compare.py exited %d:\n%s", rc, out);
        expect_in("| sh | glibc+thp |");
        expect_in("DIFFERENT output or exit status from glibc's (exit 0) under: glibc+thp (exit 0).");
    } else {
        cr_expect_eq(rc, 0, "compare.py exited %d:\n%s", rc, out);
        expect_in("- huge-page peers skipped: ");
    }
    expect_in("| faults k | huge pages |");
    char js[400];
    snprintf(js, sizeof js, "%s/build/bench/compare.json", tmpdir);
    char *text = slurp(js, NULL);
    cr_assert_not_null(text, "%s not written", js);
    cr_expect_not_null(strstr(text, "\"faults\": ["), "no faults counted in %s", js);
    cr_expect_null(strstr(text, "\"faults\": [null"), "faults not counted in %s", js);
    free(text);
    remove_tmpdir();
}

Test(compare, bad_input_is_refused_with_a_message)
{
    make_tmpdir();
    cr_expect_eq(compare(""), 2, "%s", out);
    expect_in("compare: no program to run");
    cr_expect_eq(compare("--evolved /nonexistent/lib.so -- sort /dev/null"), 2, "%s", out);
    expect_in("/nonexistent/lib.so: no such library");
    char args[600];
    snprintf(args, sizeof args, "--evolved %s -- no-such-program-dmm", EVOLVED);
    cr_expect_eq(compare(args), 2, "%s", out);
    expect_in("no-such-program-dmm: no such program on PATH");
    snprintf(args, sizeof args, "--evolved %s --reps 0 -- sort /dev/null", EVOLVED);
    cr_expect_eq(compare(args), 2, "%s", out);
    expect_in("--reps must be at least 1");
    remove_tmpdir();
}
