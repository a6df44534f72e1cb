/* test_check.c - DMM_CHECK=1 on libdmm.so (every preset) and
 * libdmm_evolved.so: each misuse of test/progs/misuse dies of SIGABRT with
 * a message that names the fault; legal work, and real programs, run as
 * they do without checking and print nothing; DMM_CHECK=0 and a chain that
 * failed to start check nothing. */
#include <criterion/criterion.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test/lib/progrun.h"
#include "test/lib/libs.h"

#define MISUSE  DMM_BUILD_DIR "/test/progs/misuse"

static void need_builds(void)
{
    cr_assert_eq(access(MISUSE, X_OK), 0, "%s missing: make builds it", MISUSE);
    cr_assert_eq(access(LIBDMM, R_OK), 0, "%s missing", LIBDMM);
    cr_assert_eq(access(EVOLVED, R_OK), 0, "%s missing", EVOLVED);
}

/* Run misuse MODE on target t with `check` ("DMM_CHECK=..." or NULL) and
 * `more` (another variable or NULL); *err gets its stderr (free it). */
static int run_misuse(const struct target *t, const char *mode, const char *check,
                      const char *more, char **err)
{
    char path[300];
    snprintf(path, sizeof path, "%s/err", tmpdir);
    const char *env[5] = { t->preload, NULL, NULL, NULL, NULL };
    int k = 1;
    if (t->config)
        env[k++] = t->config;
    if (check)
        env[k++] = check;
    if (more)
        env[k++] = more;
    char *argv[] = { MISUSE, (char *)mode, NULL };
    int st = run(argv, env, tmpdir, NULL, NULL, path);
    *err = slurp(path, NULL);
    cr_assert_not_null(*err);
    return st;
}

/* misuse MODE with DMM_CHECK=1 dies of SIGABRT on every target, and its
 * stderr is one DMM_CHECK line holding each of `words`. */
static void expect_caught(const char *mode, const char *const words[])
{
    need_builds();
    make_tmpdir();
    for (size_t i = 0; i < NTARGETS; i++) {
        char *e;
        int st = run_misuse(&targets[i], mode, "DMM_CHECK=1", NULL, &e);
        cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT,
                  "%s on %s: not stopped by SIGABRT (status %#x); stderr: %.300s", mode,
                  targets[i].name, st, e);
        cr_expect_eq(strncmp(e, "dmm: DMM_CHECK: ", 16), 0, "%s on %s: stderr: %.300s", mode,
                     targets[i].name, e);
        char *nl = strchr(e, '\n');
        cr_expect(nl && nl[1] == 0, "%s on %s: not one line: %.300s", mode, targets[i].name, e);
        for (size_t w = 0; words[w]; w++)
            cr_expect_not_null(strstr(e, words[w]), "%s on %s: no '%s' in: %.300s", mode,
                               targets[i].name, words[w], e);
        free(e);
    }
    remove_tmpdir();
}

Test(check, double_free_is_named)
{
    const char *w[] = { "double free of 0x", "(free)", NULL };
    expect_caught("double-free", w);
}

Test(check, realloc_of_a_freed_block_is_named)
{
    const char *w[] = { "use after free: realloc of 0x", "a block already freed", NULL };
    expect_caught("realloc-after-free", w);
}

Test(check, usable_size_of_a_freed_block_is_named)
{
    const char *w[] = { "use after free: malloc_usable_size of 0x", "already freed", NULL };
    expect_caught("usable-after-free", w);
}

Test(check, free_of_a_stack_pointer_is_named)
{
    const char *w[] = { "free of 0x7", "a pointer libdmm", "never returned", NULL };
    expect_caught("foreign-free", w);
}

Test(check, free_of_a_private_mmap_pointer_is_named)
{
    const char *w[] = { "free of 0x", "never returned", NULL };
    expect_caught("mmap-free", w);
}

Test(check, usable_size_of_a_stack_pointer_is_named)
{
    const char *w[] = { "malloc_usable_size of 0x", "never returned", NULL };
    expect_caught("usable-foreign", w);
}

Test(check, free_of_an_interior_pointer_is_named)
{
    const char *w[] = { "free of 0x", "never returned", "it is 8 bytes into the 64-byte block",
                        NULL };
    expect_caught("interior-free", w);
}

Test(check, one_byte_past_the_end_is_caught_when_the_block_is_freed)
{
    const char *w[] = { "heap overflow: the guard after the 24-byte block at 0x",
                        "was overwritten", "byte 0 past its end", "found by free", NULL };
    expect_caught("overflow", w);
}

Test(check, an_overflow_onto_the_next_header_is_caught_when_that_block_is_freed)
{
    const char *w[] = { "heap overflow: the header of the block at 0x", "was overwritten",
                        "the 24-byte block at 0x", "ran past its end", NULL };
    expect_caught("overflow-neighbour", w);
}

/* Legal work (every call of the family, aligned ones, realloc both ways,
 * writing up to malloc_usable_size, threads) passes the checks silently. */
Test(check, legal_work_passes_silently_on_every_chain)
{
    need_builds();
    make_tmpdir();
    for (size_t i = 0; i < NTARGETS; i++) {
        char *e;
        int st = run_misuse(&targets[i], "clean", "DMM_CHECK=1", NULL, &e);
        cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "clean on %s: status %#x; stderr: %.300s",
                  targets[i].name, st, e);
        cr_expect_str_empty(e, "clean on %s: %.300s", targets[i].name, e);
        free(e);
    }
    remove_tmpdir();
}

/* DMM_CHECK=0, or unset, checks nothing: a misuse the check would stop
 * (malloc_usable_size of a freed block: harmless to the chain) runs on. */
Test(check, off_when_zero_or_unset)
{
    need_builds();
    make_tmpdir();
    const char *modes[] = { "DMM_CHECK=0", NULL };
    for (size_t i = 0; i < NTARGETS; i++)
        for (int m = 0; m < 2; m++) {
            char *e;
            int st = run_misuse(&targets[i], "usable-after-free", modes[m], NULL, &e);
            cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 2, "%s, %s: status %#x; stderr: %.300s",
                      targets[i].name, modes[m] ? modes[m] : "unset", st, e);
            cr_expect_null(strstr(e, "dmm:"), "%s: %.300s", targets[i].name, e);
            free(e);
        }
    remove_tmpdir();
}

/* DMM_STATS says that checking was on and what it did. */
Test(check, stats_count_the_checked_frees)
{
    need_builds();
    make_tmpdir();
    for (size_t i = 0; i < NTARGETS; i++) {
        char *e;
        int st = run_misuse(&targets[i], "clean", "DMM_CHECK=1", "DMM_STATS=1", &e);
        cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status %#x", targets[i].name, st);
        cr_expect_null(strstr(e, "dmm: DMM_CHECK: "), "%s: a fault reported: %.500s",
                       targets[i].name, e);
        char *at = strstr(e, "dmm: DMM_CHECK on: ");
        cr_expect_not_null(at, "%s: no DMM_CHECK line in: %.500s", targets[i].name, e);
        if (at)
            cr_expect_gt(strtoull(at + 19, NULL, 10), 1000, "%s: %.200s", targets[i].name, at);
        free(e);
    }
    remove_tmpdir();
}

/* A DMM_CONFIG that does not parse leaves the program on glibc's malloc,
 * which DMM_CHECK does not check: it says so, and the program runs. */
Test(check, a_bad_config_runs_on_glibc_unchecked)
{
    need_builds();
    make_tmpdir();
    const struct target bad = { "LD_PRELOAD=" LIBDMM, "DMM_CONFIG=/nonexistent.dmm", "bad" };
    char *e;
    int st = run_misuse(&bad, "clean", "DMM_CHECK=1", NULL, &e);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x; stderr: %.300s", st, e);
    cr_expect_not_null(strstr(e, "DMM_CHECK ignored"), "%.300s", e);
    cr_expect_not_null(strstr(e, "glibc"), "%.300s", e);
    free(e);
    remove_tmpdir();
}

/* Real programs give the same output and status with DMM_CHECK=1 as
 * plainly, and nothing from dmm on stderr. */
static void same_with_checking(char *const argv[], const char *in)
{
    int st;
    size_t lp;
    char *want = plain_output(argv, in, &st, &lp);
    for (size_t i = 0; i < NTARGETS; i++) {
        const char *env[] = { targets[i].preload, "DMM_CHECK=1", targets[i].config, NULL };
        expect_same_as_plain(argv, in, st, want, lp, env, targets[i].name);
    }
    free(want);
}

Test(check, sort_runs_the_same_with_checking)
{
    need_builds();
    make_tmpdir();
    char in[300];
    snprintf(in, sizeof in, "%s/lines", tmpdir);
    write_input_file(in, 5000);
    char *argv[] = { "/usr/bin/sort", in, NULL };
    same_with_checking(argv, NULL);
    remove_tmpdir();
}

Test(check, python3_runs_the_same_with_checking)
{
    need_builds();
    if (access("/usr/bin/python3", X_OK) != 0)
        cr_skip_test("no python3");
    make_tmpdir();
    char *argv[] = { "/usr/bin/python3", "-c",
                     "d = {str(i): [i] * (i % 7) for i in range(5000)}\n"
                     "l = sorted(d.items(), key=lambda kv: (len(kv[1]), kv[0]))\n"
                     "s = ''.join(k for k, v in l[:2000])\n"
                     "b = bytearray()\n"
                     "for i in range(3000): b += bytes([i % 256]) * (i % 50)\n"
                     "print(len(d), l[0][0], l[-1][0], len(s), sum(b) % 9973)\n",
                     NULL };
    same_with_checking(argv, NULL);
    remove_tmpdir();
}
