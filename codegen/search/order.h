/* order.h - the order in which a generation's simulations start.
 *
 * A generation ends when its slowest simulation does, and with a handful of
 * new candidates per generation one slow replay (a long list walked) can
 * keep one thread busy while the others wait.  So the longest expected
 * replays start first (the LPT rule of scheduling).  What a replay is
 * expected to take comes from the replays before it: each allocator line
 * of the canonical text remembers the seconds of the last replay it was
 * part of, and a DMM is expected to take as long as its slowest line; a
 * line never seen is expected to be the slowest of all.
 *
 * Only the order of the work changes, never what is simulated or what it
 * gives: the search's result does not depend on it. */
#ifndef DMM_SEARCH_ORDER_H
#define DMM_SEARCH_ORDER_H

#include "tracer/base/hash.h"

typedef struct dmm_ge_times {
    dmm_u64map_t lines;    /* hash of a line's text -> microseconds */
} dmm_ge_times_t;

#define DMM_GE_TIMES_INIT { DMM_U64MAP_INIT }

/* The DMM whose canonical text is key took seconds to replay.  0, or -1
 * when out of memory (the notes are then incomplete, nothing else). */
int dmm_ge_times_note(dmm_ge_times_t *t, const char *key, double seconds);
/* Seconds key is expected to take (see above): the longest of its lines,
 * or HUGE_VAL when one of them was never seen. */
double dmm_ge_times_expect(const dmm_ge_times_t *t, const char *key);
/* Reorder work[0..n) and expect[0..n) alike (expect[k] is what work[k] is
 * expected to take): longest first, equal ones in their order. */
void dmm_ge_order(int *work, double *expect, int n);
void dmm_ge_times_free(dmm_ge_times_t *t);

#endif
