/* test_hugewarm.c - scripts/hugewarm.py, which faults and frees huge pages
 * before each timed run of make bench, make compare and make evolve's
 * measured step, so that a run that uses huge pages finds them backed by
 * the host: where the kernel has transparent huge pages, warm() makes the
 * kernel hand some out (its thp_fault_alloc count rises) and says how
 * much it warmed; DMM_BENCH_WARM=no turns it off; and how much it warms
 * follows the program's peak RSS within its caps. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

#include "test/lib/progrun.h"

/* python3 running `code` with scripts/ on its path and `env` (NAME=value
 * words, or "") in its environment: the exit status, its output (stderr
 * joined) in out. */
static int hugewarm(const char *env, const char *code, char *out, size_t cap)
{
    char stmts[2400];
    snprintf(stmts, sizeof stmts, "import hugewarm; %s", code);
    return run_python(env, "scripts", stmts, out, cap);
}

/* /proc/vmstat's thp_fault_alloc, or -1 */
static long long thp_faults(void)
{
    FILE *f = fopen("/proc/vmstat", "r");
    if (!f)
        return -1;
    char line[256];
    long long n = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "thp_fault_alloc %lld", &n) == 1)
            break;
    fclose(f);
    return n;
}

Test(hugewarm, huge_pages_faulted_and_freed)
{
    char out[4096];
    if (!thp_enabled() || thp_faults() < 0) {
        int rc = hugewarm("", "print(hugewarm.warm(16 << 20))", out, sizeof out);
        cr_assert_eq(rc, 0, "python3 exited %d:\n%s", rc, out);
        cr_expect(strcmp(out, "0\n") == 0, "no huge pages here, yet warm() said %s", out);
        cr_skip_test("the kernel has no transparent huge pages, or has them off");
    }
    long long before = thp_faults();
    /* 15 MiB rounds up to 8 huge pages */
    int rc = hugewarm("DMM_BENCH_WARM=yes", "print(hugewarm.warm(15 << 20))", out, sizeof out);
    long long after = thp_faults();
    cr_assert_eq(rc, 0, "python3 exited %d:\n%s", rc, out);
    cr_expect(strcmp(out, "16777216\n") == 0, "got: %s", out);
    cr_expect_gt(after, before, "no huge page handed out (thp_fault_alloc %lld, then %lld)",
                 before, after);

    rc = hugewarm("DMM_BENCH_WARM=no", "print(hugewarm.warm(16 << 20))", out, sizeof out);
    cr_assert_eq(rc, 0, "python3 exited %d:\n%s", rc, out);
    cr_expect(strcmp(out, "0\n") == 0, "DMM_BENCH_WARM=no, yet warm() said %s", out);
}

/* 256 MiB until a peak is known; a quarter more than a larger peak; at most
 * 2 GiB and a quarter of the memory available. */
Test(hugewarm, as_much_as_the_program_held)
{
    char out[4096];
    int rc = hugewarm("",
                      "G = 1 << 30; "
                      "print(hugewarm.size_for(None, 64 * G) >> 20, "
                      "hugewarm.size_for(100 << 10, 64 * G) >> 20, "
                      "hugewarm.size_for(400 << 10, 64 * G) >> 20, "
                      "hugewarm.size_for(4 << 20, 64 * G) >> 20, "
                      "hugewarm.size_for(4 << 20, G) >> 20, "
                      "hugewarm.size_for(None, None) >> 20)",
                      out, sizeof out);
    cr_assert_eq(rc, 0, "python3 exited %d:\n%s", rc, out);
    cr_expect(strcmp(out, "256 256 500 2048 256 256\n") == 0, "got: %s", out);
}
