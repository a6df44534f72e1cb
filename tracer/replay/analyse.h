/* analyse.h - dmm replay after the clock: the TSC's frequency, the
 * latency histograms, the best and worst operations, the memory peaks and,
 * for every trace, mdriver's figures (printed for .rep traces). */
#ifndef DMM_REPLAY_ANALYSE_H
#define DMM_REPLAY_ANALYSE_H

#include "tracer/replay/replay.h"

/* Fill the analysis fields of r after dmm_replay_run. */
void dmm_replay_analyse(dmm_replay_t *r);

#endif
