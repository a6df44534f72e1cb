/* test_cgcount.c - bench/cgcount.py, which reads an allocator's share of
 * a run from callgrind's output file for make bench (fastpath.py,
 * bounds.py): a library's own instructions, and with calls=True what its
 * code called in other objects, inclusive, once; calls inside the library
 * are not counted twice, and other objects' code and calls into the library
 * not at all.  A file written here in callgrind's format (names compressed
 * to ids, a call's object given or left to the caller's), so that the test
 * needs no valgrind. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

#include "test/lib/progrun.h"

static const char cg_file[] =
    "# callgrind format\n"
    "version: 1\n"
    "creator: callgrind-3.19.0\n"
    "positions: line\n"
    "events: Ir\n"
    "summary: 1000\n"
    "\n"
    "ob=(1) /lib/liba.so\n"
    "fl=(1) a.c\n"
    "fn=(1) malloc\n"
    "10 5\n"
    "+1 2\n"
    "cob=(2) /lib/libc.so.6\n"
    "cfi=(2) ???\n"
    "cfn=(2) memcpy\n"
    "calls=1 0\n"
    "12 100\n"
    "cfn=(3) helper\n"   /* no cob=: the caller's object */
    "calls=2 0\n"
    "13 7\n"
    "fn=(3)\n"
    "20 3\n"
    "\n"
    "ob=(2)\n"
    "fl=(2)\n"
    "fn=(2)\n"
    "0 100\n"
    "\n"
    "ob=(3) /bin/prog\n"
    "fl=(3) p.c\n"
    "fn=(4) main\n"
    "1 50\n"
    "cob=(1)\n"
    "cfi=(1)\n"
    "cfn=(1)\n"
    "calls=1 0\n"
    "2 117\n"
    "3 40\n"
    "\n"
    "totals: 1000\n";

/* text written to tmpdir/callgrind.out, then python3 running `code` (a
 * statement, F naming that file) with bench/ on its path: the exit status,
 * its output (stderr joined) in out. */
static int cgcount_on(const char *text, const char *code, char *out, size_t cap)
{
    char path[400], stmts[2400];
    make_tmpdir();
    snprintf(path, sizeof path, "%s/callgrind.out", tmpdir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    snprintf(stmts, sizeof stmts, "import cgcount; F = \"%s\"; %s", path, code);
    int rc = run_python("", "bench", stmts, out, cap);
    remove_tmpdir();
    return rc;
}

Test(cgcount, an_allocators_instructions_from_a_callgrind_file)
{
    char out[4096];
    int rc = cgcount_on(cg_file,
                        "print(*cgcount.object_instructions(F, \"/lib/liba.so\"), "
                        "*cgcount.object_instructions(F, \"/lib/liba.so\", calls=True), "
                        "*cgcount.object_instructions(F, \"/bin/prog\", calls=True))",
                        out, sizeof out);
    cr_assert_eq(rc, 0, "python3 exited %d:\n%s", rc, out);
    /* liba's own: malloc's 5 + 2 and helper's 3; with its calls, memcpy's
     * 100 (helper's 7 are its own 3 again); prog: 50 + 40 own, and its call
     * into liba, 117 */
    cr_expect(strcmp(out, "10 1000 110 1000 207 1000\n") == 0, "got: %s", out);
}

Test(cgcount, a_file_without_totals_is_an_error)
{
    char out[4096];
    int rc = cgcount_on("# callgrind format\nevents: Ir\nob=(1) /lib/liba.so\nfn=(1) malloc\n10 5\n",
                        "cgcount.object_instructions(F, \"/lib/liba.so\")", out, sizeof out);
    cr_expect_neq(rc, 0);
    cr_expect_not_null(strstr(out, "callgrind gave no total"), "got: %s", out);
}
