/* cli.h - the subcommands of the dmm tool.  Each lives in its module; the
 * dispatcher (dmm_main.c) only picks one.  argv[0] is the subcommand name.
 * Exit status: 0 success, 1 usage error, 2 bad input (a message naming the
 * file and the offset or line has been printed on stderr). */
#ifndef DMM_CLI_H
#define DMM_CLI_H

int dmm_stats_main(int argc, char **argv);    /* tracer/stats/stats.c */
int dmm_convert_main(int argc, char **argv);  /* codegen/cli/convert.c */
int dmm_sim_main(int argc, char **argv);      /* allocators/sim.c */
int dmm_grammar_main(int argc, char **argv);  /* codegen/cli/grammar.c */
int dmm_evolve_main(int argc, char **argv);   /* codegen/search/evolve.c */
int dmm_codegen_main(int argc, char **argv);  /* codegen/emit/emit.c */
int dmm_replay_main(int argc, char **argv);   /* tracer/replay/replay.c */
int dmm_report_main(int argc, char **argv);   /* codegen/cli/report.c */
int dmm_tune_glibc_main(int argc, char **argv);   /* codegen/tune/tune_glibc.c */

#endif
