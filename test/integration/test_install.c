/* test_install.c - dmm as an installed tool: --version, the manual and the
 * completion level with the code (scripts/dist/check_docs.py, and that the
 * check fails when something is left out), and make install / make
 * uninstall (scripts/dist/install.sh) into a staging DESTDIR, with the
 * installed dmm and libraries run on real programs (sort, perl:
 * scripts/dist/try_installed.sh). */
#include <criterion/criterion.h>

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/lib/progrun.h"

#define DMM DMM_BUILD_DIR "/dmm"
#define DIST DMM_SRC_DIR "/scripts/dist"

static int matches(const char *text, const char *re)
{
    regex_t r;
    cr_assert_eq(regcomp(&r, re, REG_EXTENDED | REG_NEWLINE), 0);
    int ok = regexec(&r, text, 0, NULL, 0) == 0;
    regfree(&r);
    return ok;
}

static char out[1 << 16], out2[1 << 16];

Test(install, version_says_the_release_and_the_features)
{
    cr_assert_eq(run_sh(DMM " --version", out, sizeof out), 0, "%s", out);
    cr_assert(matches(out, "^dmm [0-9]+\\.[0-9]+\\.[0-9]+( \\(git [0-9a-f]+(-dirty)?\\))?$"),
              "%s", out);
    cr_assert(matches(out, "^built with: "), "%s", out);
    cr_assert(matches(out, "^  \\+zstd +[0-9.]+ "), "%s", out);
    cr_assert(matches(out, "^  \\+libunwind +[0-9.]+: "), "%s", out);
    cr_assert(matches(out, "^  [+-]mpi "), "%s", out);
    /* the same from -V and from every subcommand */
    const char *also[] = { " -V", " sim --version", " stats -V", " evolve --pop 3 --version",
                           " record --version", " tune-glibc --version" };
    for (size_t i = 0; i < sizeof also / sizeof also[0]; i++) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "%s%s", DMM, also[i]);
        cr_assert_eq(run_sh(cmd, out2, sizeof out2), 0, "%s: %s", cmd, out2);
        cr_assert_str_eq(out2, out, "%s", cmd);
    }
    /* dmm help COMMAND is dmm COMMAND --help */
    cr_assert_eq(run_sh(DMM " help evolve", out2, sizeof out2), 0, "%s", out2);
    static char help[1 << 16];
    cr_assert_eq(run_sh(DMM " evolve --help", help, sizeof help), 0, "%s", help);
    cr_assert_str_eq(out2, help);
    /* dmm record PROGRAM --version: the program's --version, recorded */
    make_tmpdir();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "cd %s && %s record -o rec /bin/echo --version", tmpdir, DMM);
    cr_assert_eq(run_sh(cmd, out2, sizeof out2), 0, "%s", out2);
    cr_assert(strstr(out2, "coreutils") && !strstr(out2, "built with"), "%s", out2);
    remove_tmpdir();
}

Test(install, manual_and_completion_cover_every_command_option_and_variable)
{
    int rc = run_sh("python3 " DIST "/check_docs.py --dmm " DMM, out, sizeof out);
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "11 subcommands"), "%s", out);
}

/* The check is not vacuous: a manual without an option or a variable, and a
 * completion without an option, are each named. */
Test(install, the_docs_check_names_what_is_left_out)
{
    make_tmpdir();
    char cmd[2000];
    snprintf(cmd, sizeof cmd,
             "cd %s && cp -r " DIST "/man man && cp " DIST "/completion/dmm comp && "
             "sed -i 's/--hopeless/--HOPE/; s/\\\\-\\\\-hopeless/--HOPE/g' man/dmm.1 && "
             "sed -i '/DMM_OFFLOAD/d' man/libdmm.7 && "
             "sed -i 's/ --mdriver / /' comp && "
             "python3 " DIST "/check_docs.py --dmm " DMM " --man man --completion comp",
             tmpdir);
    cr_assert_eq(run_sh(cmd, out, sizeof out), 1, "%s", out);
    cr_assert(strstr(out, "dmm.1: section `dmm evolve` does not describe --hopeless"), "%s", out);
    cr_assert(strstr(out, "describes DMM_OFFLOAD"), "%s", out);
    cr_assert(strstr(out, "completion: `dmm replay -<Tab>` does not offer --mdriver"), "%s", out);
    remove_tmpdir();
}

Test(install, install_runs_and_uninstall_removes_exactly_what_it_wrote, .timeout = 300)
{
    make_tmpdir();
    char cmd[4000];
    /* nothing installed: uninstall refuses */
    snprintf(cmd, sizeof cmd, DIST "/install.sh uninstall --prefix /usr/local --destdir %s/root",
             tmpdir);
    cr_assert_eq(run_sh(cmd, out, sizeof out), 1, "%s", out);
    cr_assert(strstr(out, "no dmm is installed"), "%s", out);

    /* installed twice (the second adds nothing), then used */
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd,
                 DIST "/install.sh install --build " DMM_BUILD_DIR
                      " --prefix /usr/local --destdir %s/root", tmpdir);
        cr_assert_eq(run_sh(cmd, out, sizeof out), 0, "%s", out);
    }
    snprintf(cmd, sizeof cmd, "cd %s/root && find . -type f | sort", tmpdir);
    run_sh(cmd, out, sizeof out);
    const char *want[] = {
        "./usr/local/bin/dmm", "./usr/local/lib/libdmmtrace.so", "./usr/local/lib/libdmm.so",
        "./usr/local/lib/libdmm_evolved.so", "./usr/local/share/dmm/report.py",
        "./usr/local/share/dmm/evolve_report.py", "./usr/local/share/dmm/plots.py",
        "./usr/local/share/dmm/installed.txt", "./usr/local/share/man/man1/dmm.1",
        "./usr/local/share/man/man5/dmm-format.5", "./usr/local/share/man/man7/libdmm.7",
        "./usr/local/share/man/man7/libdmmtrace.7", "./usr/local/share/man/man7/libdmm_evolved.7",
        "./usr/local/share/bash-completion/completions/dmm",
        "./usr/local/share/dmm/src/dmm-build.txt", "./usr/local/share/dmm/src/allocators/classes/lea.c",
        "./usr/local/share/dmm/src/preload/shim/dmm_evolved.h",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_assert(strstr(out, want[i]), "%s not installed:\n%s", want[i], out);
    snprintf(cmd, sizeof cmd, "grep -c '^file ' %s/root/usr/local/share/dmm/installed.txt",
             tmpdir);
    run_sh(cmd, out2, sizeof out2);
    snprintf(cmd, sizeof cmd, "cd %s/root && find . -type f ! -name installed.txt | wc -l",
             tmpdir);
    run_sh(cmd, out, sizeof out);
    cr_assert_eq(atoi(out2), atoi(out), "listed %s, installed %s", out2, out);

    /* a file of the user's beside ours stays, and so does its folder */
    snprintf(cmd, sizeof cmd, "mkdir -p %s/use && echo mine > %s/root/usr/local/bin/mine",
             tmpdir, tmpdir);
    cr_assert_eq(run_sh(cmd, out, sizeof out), 0, "%s", out);
    /* what a user does with it (scripts/dist/try_installed.sh, which make
     * deb-check runs in its chroot too) */
    snprintf(cmd, sizeof cmd, DIST "/try_installed.sh %s/root/usr/local %s/root/usr/local/lib/ %s/use",
             tmpdir, tmpdir, tmpdir);
    cr_assert_eq(run_sh(cmd, out, sizeof out), 0, "the installed dmm:\n%s", out);
    cr_assert(strstr(out, "used"), "%s", out);

    snprintf(cmd, sizeof cmd, DIST "/install.sh uninstall --prefix /usr/local --destdir %s/root",
             tmpdir);
    cr_assert_eq(run_sh(cmd, out, sizeof out), 0, "%s", out);
    snprintf(cmd, sizeof cmd, "cd %s/root && find . | sort", tmpdir);
    run_sh(cmd, out, sizeof out);
    cr_assert_str_eq(out, ".\n./usr\n./usr/local\n./usr/local/bin\n./usr/local/bin/mine\n",
                     "left after uninstall:\n%s", out);
    /* and without the user's file, nothing at all */
    snprintf(cmd, sizeof cmd,
             "cd %s && rm root/usr/local/bin/mine && rmdir -p root/usr/local/bin && "
             DIST "/install.sh install --build " DMM_BUILD_DIR
                  " --prefix /usr/local --destdir %s/root >/dev/null && "
             DIST "/install.sh uninstall --prefix /usr/local --destdir %s/root >/dev/null && "
             "find root | wc -l", tmpdir, tmpdir, tmpdir);
    cr_assert_eq(run_sh(cmd, out, sizeof out), 0, "%s", out);
    cr_assert_eq(atoi(out), 1, "left: %s", out);
    remove_tmpdir();
}
