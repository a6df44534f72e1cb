/* test_layout.c - scripts/check_layout.py, the check behind `make
 * check-layout`: on small trees planted here it accepts one whose includes
 * all point down and refuses, naming the file and line, an include that
 * points upward, one that does not name a file from the root, a file in no
 * layer, and a function too long. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "test/lib/progrun.h"

/* A tree of two layers, low/ below high/. */
static void plant(const char *path, const char *text)
{
    char p[512], dir[512];
    snprintf(p, sizeof p, "%s/%s", tmpdir, path);
    snprintf(dir, sizeof dir, "%s", p);
    for (char *s = dir + strlen(tmpdir) + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            mkdir(dir, 0755);
            *s = '/';
        }
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f, "%s", p);
    fputs(text, f);
    fclose(f);
}

static void clean_tree(void)
{
    make_tmpdir();
    plant("scripts/layers.txt", "# bottom first\nlow   # the base\nhigh\n");
    plant("low/a.h", "int a(void);\n");
    plant("low/a.c", "#include \"low/a.h\"\nint a(void)\n{\n    return 1;\n}\n");
    plant("high/b.c", "#include \"low/a.h\"\n#include \"high/b.h\"\nint b(void) { return a(); }\n");
    plant("high/b.h", "int b(void);\n");
}

/* Run the checker on tmpdir: its exit status, and its output in *out. */
static int check(char **out)
{
    char *argv[] = { "/usr/bin/python3", DMM_SRC_DIR "/scripts/check_layout.py", "--root", tmpdir,
                     NULL };
    char o[300];
    snprintf(o, sizeof o, "%s/out", tmpdir);
    int st = run(argv, NULL, tmpdir, NULL, o, o);
    *out = slurp(o, NULL);
    cr_assert_not_null(*out);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(layout, a_tree_whose_includes_point_down_passes)
{
    clean_tree();
    char *out;
    cr_expect_eq(check(&out), 0, "%s", out);
    cr_expect_not_null(strstr(out, "every include points down"), "%s", out);
    free(out);
    remove_tmpdir();
}

Test(layout, an_upward_include_fails_naming_the_file_and_line)
{
    clean_tree();
    plant("low/c.c", "#include \"low/a.h\"\n#include \"high/b.h\"\n");
    char *out;
    cr_expect_eq(check(&out), 1, "%s", out);
    cr_expect_not_null(strstr(out, "low/c.c:2: #include \"high/b.h\" points upward: high is above low"),
                       "%s", out);
    free(out);
    remove_tmpdir();
}

Test(layout, an_include_not_named_from_the_root_fails)
{
    clean_tree();
    plant("high/d.c", "#include \"b.h\"\n");
    char *out;
    cr_expect_eq(check(&out), 1, "%s", out);
    cr_expect_not_null(strstr(out, "high/d.c:1: #include \"b.h\" does not name a file from the root"),
                       "%s", out);
    free(out);
    remove_tmpdir();
}

Test(layout, a_file_in_no_layer_fails)
{
    clean_tree();
    plant("elsewhere/e.c", "int e;\n");
    char *out;
    cr_expect_eq(check(&out), 1, "%s", out);
    cr_expect_not_null(strstr(out, "elsewhere/e.c: in no layer"), "%s", out);
    free(out);
    remove_tmpdir();
}

Test(layout, a_function_over_120_lines_fails_outside_the_tests)
{
    clean_tree();
    char body[8192] = "int f(int x)\n{\n";
    for (int i = 0; i < 125; i++)
        strcat(body, "    x++;\n");
    strcat(body, "    return x;\n}\n");
    plant("high/long.c", body);
    plant("scripts/layers.txt", "low\nhigh\ntest\n");
    plant("test/long_test.c", body);   /* tests may be long */
    char *out;
    cr_expect_eq(check(&out), 1, "%s", out);
    cr_expect_not_null(strstr(out, "high/long.c:1: f() is 129 lines long (at most 120)"), "%s", out);
    cr_expect_null(strstr(out, "test/long_test.c"), "%s", out);
    free(out);
    remove_tmpdir();
}
