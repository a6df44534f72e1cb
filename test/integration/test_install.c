/* test_install.c - dmm as an installed tool: --version, the manual and the
 * completion level with the code (scripts/dist/check_docs.py, and that the
 * check fails when something is left out), and make install / make
 * uninstall (scripts/dist/install.sh) into a staging DESTDIR, with the
 * installed dmm and libraries run on a real program (sort). */
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

/* What a user does after make install, against the staged copy. */
static const char *const installed_use =
    "set -e; r=$1; u=$r/usr/local; cd $2\n"
    "seq 1 30000 | sed 's/$/ line/' | sort -R --random-source=/dev/zero >in.txt\n"
    "sort in.txt >plain.txt\n"
    "$u/bin/dmm --version | grep -q '^dmm '\n"
    "$u/bin/dmm record -o rec -- sort in.txt >rec.txt 2>rec.err; cmp plain.txt rec.txt\n"
    "$u/bin/dmm stats rec >stats.txt\n"
    "$u/bin/dmm sim --all rec >sim.txt\n"
    "$u/bin/dmm evolve --pop 8 --elite 2 --gens 2 --time 5 -q --out ev rec\n"
    "$u/bin/dmm codegen -o ev.c ev/best.dmm; grep -q dmm_evolved ev.c\n"
    "$u/bin/dmm build ev/best.dmm >built.txt; test \"$(cat built.txt)\" = ev/libdmm_evolved.so\n"
    "LD_PRELOAD=$PWD/ev/libdmm_evolved.so sort in.txt | cmp plain.txt -\n"
    "DMM_STATS=1 LD_PRELOAD=$PWD/ev/libdmm_evolved.so perl -e 1 2>&1 | grep -q 'trace=sort'\n"
    "$u/bin/dmm report ev >/dev/null; grep -q 'DMM_CONFIG=' ev/report.md\n"
    "LD_PRELOAD=$u/lib/libdmm.so sort in.txt | cmp plain.txt -\n"
    "LD_PRELOAD=$u/lib/libdmm_evolved.so sort in.txt | cmp plain.txt -\n"
    "DMM_CONFIG=$PWD/ev/best.dmm LD_PRELOAD=$u/lib/libdmm.so sort in.txt | cmp plain.txt -\n"
    /* loaded indeed: ld.so ignores a library it cannot find, but then no
     * DMM_STATS line (sort closes its stderr before: perl does not) */
    "for l in libdmm.so libdmm_evolved.so; do\n"
    "  DMM_STATS=1 LD_PRELOAD=$u/lib/$l perl -e 'print 6*7, qq(\\n)' >perl.out 2>perl.err\n"
    "  test \"$(cat perl.out)\" = 42; grep -q '^dmm: .*footprint' perl.err\n"
    "done\n"
    "test -s $u/share/man/man1/dmm.1 && test -s $u/share/man/man7/libdmm.7\n"
    "MANPATH=$u/share/man man -w libdmm_evolved >/dev/null 2>&1 || ! command -v man >/dev/null\n"
    "bash -c \". $u/share/bash-completion/completions/dmm; COMP_WORDS=(dmm rep); COMP_CWORD=1;"
    " _dmm; test \\\"\\${COMPREPLY[*]}\\\" = 'replay report'\"\n"
    "echo used\n";

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
    char script[6000];
    snprintf(script, sizeof script, "cd %s && cat > use.sh <<'EOF'\n%sEOF\n"
             "sh use.sh %s/root %s/use", tmpdir, installed_use, tmpdir, tmpdir);
    snprintf(cmd, sizeof cmd, "mkdir -p %s/use && echo mine > %s/root/usr/local/bin/mine",
             tmpdir, tmpdir);
    cr_assert_eq(run_sh(cmd, out, sizeof out), 0, "%s", out);
    cr_assert_eq(run_sh(script, out, sizeof out), 0, "the installed dmm:\n%s", out);
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
