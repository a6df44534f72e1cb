/* report.c - dmm report DIR: one Markdown report, with pictures, of what
 * make bench (DIR = build/bench) or make evolve (DIR = build/evolve/NAME)
 * measured.
 *
 * The report is written by scripts/report.py (Python, gnuplot for the
 * pictures); this subcommand finds it beside the dmm binary (installed:
 * PREFIX/share/dmm/report.py next to PREFIX/bin/dmm; in the source tree:
 * scripts/report.py above build/ or build/sanitize/) and runs it with
 * python3, telling it where this dmm is (a plain `dmm evolve --out DIR`'s
 * report needs dmm stats and dmm sim). */
#include "codegen/cli/cli.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *const where[] = {
    "/../share/dmm/report.py",
    "/../scripts/report.py",
    "/../../scripts/report.py",
};

int dmm_report_main(int argc, char **argv)
{
    if (argc != 2 || argv[1][0] == '-') {
        int help = argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"));
        fprintf(help ? stdout : stderr,
                "usage: dmm report DIR\n\n"
                "  DIR  build/bench (after make bench), build/evolve/NAME (after make evolve)\n"
                "       or the DIR of dmm evolve --out DIR: writes DIR/report.md, every table\n"
                "       and picture (gnuplot: PNG and SVG in DIR/plots/), what was run and on\n"
                "       what machine\n");
        return help ? 0 : 1;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        fprintf(stderr, "dmm report: cannot read /proc/self/exe: %s\n", strerror(errno));
        return 2;
    }
    exe[n] = '\0';
    char self[PATH_MAX];
    snprintf(self, sizeof self, "%s", exe);
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    char script[PATH_MAX + 64];
    for (size_t i = 0; i < sizeof where / sizeof where[0]; i++) {
        snprintf(script, sizeof script, "%s%s", exe, where[i]);
        if (access(script, R_OK) != 0)
            continue;
        fflush(NULL);
        char *args[] = { "python3", script, "--dmm", self, argv[1], NULL };
        execvp("python3", args);
        fprintf(stderr, "dmm report: cannot run python3 %s: %s\n", script, strerror(errno));
        return 2;
    }
    fprintf(stderr, "dmm report: report.py is not installed beside %s/dmm (looked in", exe);
    for (size_t i = 0; i < sizeof where / sizeof where[0]; i++)
        fprintf(stderr, " %s%s", exe, where[i]);
    fprintf(stderr, ")\n");
    return 2;
}
