/* cli.h - the subcommands of the dmm tool, one file each in codegen/cli/.
 * A command parses its options, calls the steps of its layer below, and
 * prints; the dispatcher (dmm.c) only picks one.  argv[0] is the
 * subcommand name.  Exit status: 0 success, 1 usage error, 2 bad input (a
 * message naming the file and the offset or line has been printed on
 * stderr). */
#ifndef DMM_CLI_CLI_H
#define DMM_CLI_CLI_H

#include <stdio.h>

int dmm_stats_main(int argc, char **argv);        /* stats.c */
int dmm_convert_main(int argc, char **argv);      /* convert.c */
int dmm_sim_main(int argc, char **argv);          /* sim.c */
int dmm_grammar_main(int argc, char **argv);      /* grammar.c */
int dmm_evolve_main(int argc, char **argv);       /* evolve.c */
int dmm_codegen_main(int argc, char **argv);      /* codegen.c */
int dmm_build_main(int argc, char **argv);        /* build.c */
int dmm_replay_main(int argc, char **argv);       /* replay.c */
int dmm_report_main(int argc, char **argv);       /* report.c */
int dmm_tune_glibc_main(int argc, char **argv);   /* tune_glibc.c */
int dmm_record_main(int argc, char **argv);       /* record.c */

/* version.c: what `dmm --version` prints (the release, the git revision,
 * the compiler, the features compiled in). */
void dmm_version_print(FILE *f);

#endif
