/* fitness.h - the paper's fitness, eq. 1, and the references it is taken
 * against.
 *
 *   F = 0.5 * T/T_KNG + 0.5 * M/M_LEA
 *
 * T is the counted cost and M the peak footprint of a DMM simulated on the
 * trace's operation stream (allocators/sim); T_KNG is the cost of the kng
 * preset and M_LEA the footprint of the lea preset on the same stream.  The
 * search (ge.c) scores every candidate this way; dmm evolve also reports the
 * five presets against the same references. */
#ifndef DMM_SEARCH_FITNESS_H
#define DMM_SEARCH_FITNESS_H

#include <stddef.h>
#include <stdint.h>

#include "tracer/format/opstream.h"

/* Eq. 1 (dmm_sim_weighted: the simulator's bounds use the same expression). */
double dmm_ge_fitness(uint64_t T, size_t M, uint64_t T_KNG, size_t M_LEA);

/* A preset simulated on the trace. */
typedef struct dmm_ge_ref {
    const char *name;       /* the preset's name (set by the caller) */
    uint64_t    T;
    size_t      M;
    uint64_t    W;          /* its costliest single operation */
    uint64_t    P;          /* its 99.9th percentile of single operations */
    uint64_t    failed;     /* requests it could not serve */
    size_t      peak_live;  /* the peak of live requested bytes it served */
} dmm_ge_ref_t;

/* Simulate refs[0..n) (their names set) on s.  0, or -1 with err
 * "reference NAME: why". */
int dmm_ge_references(const dmm_opstream_t *s, dmm_ge_ref_t *refs, int n, dmm_err_t *err);

#endif
