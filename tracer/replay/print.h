/* print.h - the outputs of dmm replay: the text report, one JSON object
 * with every number (one line: programs read it), and the RSS samples as
 * CSV.  Latencies are measured in TSC cycles and printed in nanoseconds at
 * the frequency the analysis found. */
#ifndef DMM_REPLAY_PRINT_H
#define DMM_REPLAY_PRINT_H

#include <stdio.h>

#include "tracer/replay/replay.h"

/* "alloc", "realloc", "free" for the DMM_OP_* kinds; "all" for 0, the
 * histogram of every kind. */
const char *dmm_replay_kind_name(unsigned kind);

void dmm_replay_print_text(FILE *f, const dmm_replay_t *r);
void dmm_replay_print_json(FILE *f, const dmm_replay_t *r);

/* op, requested bytes, RSS bytes, held bytes at each sample, into path;
 * -1 with a message on stderr if it cannot be written. */
int dmm_replay_write_csv(const dmm_replay_t *r, const char *path);

#endif
