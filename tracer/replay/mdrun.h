/* mdrun.h - mdriver's method for any allocator: `dmm replay --mdriver`.
 *
 * The CS:APP malloc lab's driver scores an allocator on each trace by
 *   correctness  one run with every payload written and checked, every
 *                block aligned (8 bytes, mdriver's ALIGNMENT; an aligned
 *                request, to its alignment) and no
 *                block overlapping another live one; the first fault names
 *                the operation, the blocks and what was wrong;
 *   utilisation  the peak of the payload bytes live at once over the peak
 *                of the heap, taken in that run: here the library's own
 *                footprint when it reports one (dmm's libraries:
 *                dmm_footprint(), the figure DMM_STATS prints), else the
 *                peak anonymous RSS over its level before the run;
 *   throughput   the trace replayed again and again over a heap that the
 *                earlier runs touched, timed as a whole, keeping the
 *                fastest (its K-best scheme: runs until the K fastest are
 *                within a factor 1 + eps of each other, at most maxsamples
 *                runs); Kops = operations / best seconds / 1000.
 * Each trace runs in a child process of its own, as mdriver starts each
 * trace on a fresh heap (mm_init).  The totals are mdriver's: the mean
 * utilisation, and the throughput of all operations over all seconds; the
 * perf index scores them as mdriver.h says. */
#ifndef DMM_REPLAY_MDRUN_H
#define DMM_REPLAY_MDRUN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct dmm_mdrun_opts {
    int    k;            /* K of the K-best scheme (3) */
    double eps;          /* their spread (0.01) */
    int    maxsamples;   /* timed runs at most (20) */
    int    no_cache;     /* parse each trace, write no TRACE.ops */
} dmm_mdrun_opts_t;

typedef struct dmm_mdrun {
    char     name[256];     /* the trace's file name */
    int      status;        /* 0; 2 a bad trace; 1 the system refused */
    int      valid;         /* correct, and no allocation failed */
    char     why[400];      /* what was wrong (valid 0) */
    uint64_t ops;
    uint64_t peak_payload, heap;
    int      heap_footprint; /* heap: the library's footprint (else RSS) */
    double   util, secs, kops;
    int      runs;          /* timed runs made */
} dmm_mdrun_t;

/* mdriver's defaults. */
void dmm_mdrun_opts_default(dmm_mdrun_opts_t *o);

/* One trace, scored in a child process.  Returns m->status. */
int dmm_mdrun(const char *path, const dmm_mdrun_opts_t *o, dmm_mdrun_t *m);

/* mdriver's table for n traces (and which allocator, from LD_PRELOAD and
 * DMM_CONFIG), or the same as one JSON object. */
void dmm_mdrun_print(FILE *f, const dmm_mdrun_t *m, int n, const dmm_mdrun_opts_t *o);
void dmm_mdrun_json(FILE *f, const dmm_mdrun_t *m, int n, const dmm_mdrun_opts_t *o);

#endif
