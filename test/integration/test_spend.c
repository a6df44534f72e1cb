/* test_spend.c - bench/libspend.c, the interposer that make bench's tracer
 * report runs beside libdmmtrace.so on the two-thread work_media: it must
 * pass every call of the malloc family to glibc as the program made it
 * (results, errno, EINVAL from posix_memalign), so that what it changes in
 * a program is time alone, and it must spend that time: loop turns that
 * grow with SPEND_NS. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/lib/libs.h"
#include "test/lib/progrun.h"

#define SPEND    DMM_BUILD_DIR "/bench/libspend.so"
#define TRACEE   DMM_BUILD_DIR "/test/progs/tracee"
#define WORK     DMM_BUILD_DIR "/bench/work_media"

TestSuite(spend, .init = make_tmpdir, .fini = remove_tmpdir, .timeout = 120);

/* argv's plain run, then the same under libspend.so at ns nanoseconds a
 * call: the same status and output. */
static void same_under_spend(char *const argv[], const char *ns)
{
    int st;
    size_t lp;
    char *want = plain_output(argv, NULL, &st, &lp);
    char spend_ns[64];
    snprintf(spend_ns, sizeof spend_ns, "SPEND_NS=%s", ns);
    const char *env[] = { "LD_PRELOAD=" SPEND, spend_ns, NULL };
    expect_same_as_plain(argv, NULL, st, want, lp, env, "libspend.so");
    free(want);
}

Test(spend, every_call_reaches_glibc_as_the_program_made_it)
{
    /* errno kept, ENOMEM from overflowing sizes, EINVAL from a bad
     * alignment: the tracee exits 1 when any of it does not hold */
    char *errno_argv[] = { TRACEE, "errno", "1", NULL };
    same_under_spend(errno_argv, "5");
    char *aligned_argv[] = { TRACEE, "aligned", "200", NULL };
    same_under_spend(aligned_argv, "5");
    char *threads_argv[] = { TRACEE, "handoff", "2000", NULL };
    same_under_spend(threads_argv, "5");
    char *work_argv[] = { WORK, "-f", "40", "-t", "2", NULL };
    same_under_spend(work_argv, "20");
}

/* The turns a call that libspend.so chose for SPEND_NS=ns (SPEND_SHOW's
 * line), -1 when it printed none. */
static long turns_for(const char *ns)
{
    char cmd[512], out[512];
    snprintf(cmd, sizeof cmd, "SPEND_SHOW=1 SPEND_NS=%s LD_PRELOAD=%s /bin/true", ns, SPEND);
    cr_assert_eq(run_sh(cmd, out, sizeof out), 0, "%s: %s", cmd, out);
    const char *at = strstr(out, "ns a call: ");
    if (!at)
        return -1;
    return strtol(at + strlen("ns a call: "), NULL, 10);
}

Test(spend, its_turns_a_call_follow_the_time_asked_for)
{
    /* a tenfold time: more turns whatever the CPU's speed at each start
     * (it moves by less than 2x here) */
    long few = turns_for("20"), many = turns_for("200");
    cr_assert_gt(few, 0, "SPEND_NS=20 gave %ld turns", few);
    cr_assert_gt(many, 3 * few, "SPEND_NS=200 gave %ld turns, SPEND_NS=20 %ld", many, few);
    cr_assert_eq(turns_for("0"), -1, "SPEND_NS=0 is a bare pass-through: no calibration");
}
