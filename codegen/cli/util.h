/* util.h - what several commands of codegen/cli share: number options read
 * with range checks and one message for a bad value, and Ctrl-C turned into
 * a stop request for a search (a second Ctrl-C kills). */
#ifndef DMM_CLI_UTIL_H
#define DMM_CLI_UTIL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

/* s as an integer in lo..hi (option opt of `dmm cmd`): 0, or -1 after
 * "dmm CMD: OPT needs an integer in LO..HI, not 'S'" on stderr. */
int dmm_cli_long(const char *cmd, const char *opt, const char *s, long lo, long hi, long *v);
/* s as a number in [lo, hi]: 0, or -1 after "... needs a number in [LO, HI],
 * not 'S'". */
int dmm_cli_real(const char *cmd, const char *opt, const char *s, double lo, double hi,
                 double *v);
/* A command's trace argument: path itself, or for a directory (dmm
 * record's) the trace of the process that allocated most, into buf, after
 * a line that says so (tracer/record/record.h).  NULL after "dmm CMD:
 * message" on stderr. */
const char *dmm_cli_trace(const char *cmd, const char *path, char *buf, size_t len);
/* The .dmm description at path (a file or a preset) into d: 0, or -1 after
 * "dmm CMD: message" (the parser's, naming the line and field) on stderr. */
struct dmm_desc;
int dmm_cli_desc(const char *cmd, const char *path, struct dmm_desc *d);
/* --seed: a non-negative integer.  0, or -1 with the message said. */
int dmm_cli_seed(const char *cmd, const char *s, uint64_t *v);

/* Set by the first Ctrl-C after dmm_cli_catch_sigint: the search's stop
 * request (dmm_ge_config_t.stop). */
extern volatile sig_atomic_t dmm_cli_interrupted;
/* Catch Ctrl-C until dmm_cli_release_sigint(old). */
void dmm_cli_catch_sigint(struct sigaction *old);
void dmm_cli_release_sigint(const struct sigaction *old);

#endif
