/* dmm.c - the dmm command: picks a subcommand, nothing more. */
#include "codegen/cli/cli.h"

#include <stdio.h>
#include <string.h>

typedef struct command {
    const char *name;
    int (*main)(int, char **);
    const char *summary;
} command_t;

static const command_t commands[] = {
    { "record",  dmm_record_main,  "run a program and every process it starts under libdmmtrace.so" },
    { "stats",   dmm_stats_main,   "what a trace asks of the allocator (the paper's Table 2 and more)" },
    { "convert", dmm_convert_main, "convert between trc, rep, mtrace, android, wee and a text dump" },
    { "sim",     dmm_sim_main,     "replay a trace through simulated DMMs: cost T, footprint M, and more" },
    { "grammar", dmm_grammar_main, "the paper's BNF of DMM designs, with a trace's request sizes" },
    { "evolve",  dmm_evolve_main,  "search a DMM for a trace by grammatical evolution (best.dmm)" },
    { "codegen", dmm_codegen_main, "a .dmm description as the C source of libdmm_evolved.so" },
    { "build",   dmm_build_main,   "a .dmm description compiled into its own libdmm_evolved.so" },
    { "replay",  dmm_replay_main,  "replay a trace through this process's malloc (LD_PRELOAD=any): time, latency, RSS" },
    { "report",  dmm_report_main,  "one Markdown report with pictures of make bench or make evolve results" },
    { "tune-glibc", dmm_tune_glibc_main, "glibc malloc's tunables searched for a trace, scored by real replays" },
};

static void usage(FILE *f)
{
    fprintf(f, "usage: dmm COMMAND [OPTIONS] ...\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nTraces are read in any format dmm knows, detected from their content:\n"
               "dmm's .trc (LD_PRELOAD=libdmmtrace.so), mdriver .rep, glibc mtrace output,\n"
               "Android memory_replay text and wee_alloc traces; \"-\" reads standard input;\n"
               "a directory (dmm record's) reads the trace of the process that allocated most.\n"
               "'dmm COMMAND --help' (or 'dmm help COMMAND') describes a command;\n"
               "'dmm --version' says which dmm this is and what it was built with;\n"
               "'man dmm' has it all.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 1;
    }
    if (!strcmp(argv[1], "help") && argc == 3) {
        /* dmm help COMMAND: that command's --help */
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
            if (!strcmp(argv[2], commands[i].name)) {
                char *args[] = { argv[2], "--help", NULL };
                return commands[i].main(2, args);
            }
        fprintf(stderr, "dmm help: unknown command '%s'\n\n", argv[2]);
        usage(stderr);
        return 1;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
        dmm_version_print(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(argv[1], commands[i].name) != 0)
            continue;
        /* dmm COMMAND --version (-V): among the options, before a "--" (and for
         * record, before the program it runs) */
        int runs = !strcmp(argv[1], "record");
        for (int a = 2; a < argc && strcmp(argv[a], "--") != 0; a++) {
            if (runs && argv[a][0] != '-')
                break;
            if (!strcmp(argv[a], "--version") || !strcmp(argv[a], "-V")) {
                dmm_version_print(stdout);
                return 0;
            }
        }
        return commands[i].main(argc - 1, argv + 1);
    }
    fprintf(stderr, "dmm: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 1;
}
