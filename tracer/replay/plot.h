/* plot.h - dmm replay's picture: requested bytes against held bytes over
 * the run, from the RSS samples, as a PNG drawn by gnuplot (when it is
 * installed: without it a note is printed and nothing is drawn). */
#ifndef DMM_REPLAY_PLOT_H
#define DMM_REPLAY_PLOT_H

#include "tracer/replay/replay.h"

/* Draw png; 0 when drawn or gnuplot is missing, -1 with a message on
 * stderr when it failed. */
int dmm_replay_plot(const dmm_replay_t *r, const char *png);

#endif
