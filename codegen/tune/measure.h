/* measure.h - dmm tune-glibc's measurements: the trace replayed under
 * glibc with a candidate's settings (`dmm replay --json` in a child
 * process, its JSON read back), the fitness of a candidate, and the final
 * run of the defaults against the winner.
 *
 * Fitness, the project's weighted form: F = 0.5 * t/t_def + 0.5 * M/M_def,
 * the defaults (no tunable set) measured the same way at the start.
 *
 *  - t is the replay's wall time (`wall_s`), not its time in the calls
 *    (`op_s`): the tunables act through system calls (brk, mmap, munmap,
 *    trimming) and page faults, and the faults of fresh or given-back memory
 *    mostly land on the first write of a block, after malloc returned.  A
 *    small trim or mmap threshold looks free to op_s while the program pays
 *    for it; wall_s sees it.  The replay's own constant work (payload
 *    writes, the timer) stands in for the program's work around its calls.
 *  - M is the replay's peak held memory (anonymous RSS over its level
 *    before the replay: what the allocator made resident) plus a constant
 *    baseline, the defaults' smallest RSS before the replay (the dmm process
 *    and its tables: the part of a process the tunables do not touch).  The
 *    sum is the peak RSS the process would have, on the same scale, so the
 *    memory half of F is not inflated for a small heap; but peak_rss_bytes
 *    itself moves from run to run with the baseline (address space layout,
 *    the kernel's high-water mark), while peak held is the same to the page
 *    on every run of the same settings: a constant baseline keeps the
 *    resolution and drops the noise.
 *
 * Noise: each candidate gets `reps` replays and keeps the smallest time
 * and the smallest held (min: interference on a shared machine only ever
 * adds time); a phenotype is measured once (the engine's cache).  The
 * winner of many noisy measurements is flattered by its own luck, so the
 * result is measured again in one final run: defaults and tuned alternating
 * (ABBA), medians, ranges and Mann-Whitney p-values (compare.h); the
 * settings are recommended only when that run measures a gain and no cost.
 *
 * arena_max: dmm replay runs every thread of the trace on one thread, and
 * glibc only creates arenas for threads that contend, so no replay can see
 * arena_max: the grammar offers it, but the search folds it to default
 * (search.h) so that noise does not pick a value. */
#ifndef DMM_TUNE_MEASURE_H
#define DMM_TUNE_MEASURE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "codegen/tune/compare.h"
#include "codegen/tune/env.h"
#include "codegen/tune/tunables.h"
#include "tracer/base/err.h"

/* One replay's numbers, or the smallest of several. */
typedef struct dmm_tune_meas {
    double   wall, op;            /* seconds */
    uint64_t rss, base, held;     /* peak RSS, RSS before the replay, peak held */
    uint64_t failed, ops;
} dmm_tune_meas_t;

/* A candidate the search had measured. */
typedef struct dmm_tune_cand {
    dmm_tunables_t  t;
    int             valid;
    dmm_tune_meas_t m;            /* min over the reps */
    double          F;
} dmm_tune_cand_t;

typedef struct dmm_tuner {
    const char     *trace;
    char            exe[PATH_MAX];
    dmm_tune_env_t  env;
    int             outfd, errfd;
    int             reps;
    /* the defaults, the fitness's reference */
    dmm_tune_meas_t ref;
    double          t_def, M_def;
    uint64_t        baseline;
    double          noise;        /* the defaults' (max - min) / min replay time */
    /* every candidate measured */
    dmm_tune_cand_t *cand;
    size_t          ncand, capcand;
    uint64_t        replays, failures;
    char            last_err[512];
} dmm_tuner_t;

/* Ready to replay trace, reps replays per candidate: this very program
 * (/proc/self/exe, even if its file is replaced meanwhile) runs the
 * replays, with the environment of env.h (notes to notes, NULL: none).
 * 0, or -1 with err.  Close with dmm_tuner_close, whatever it returned. */
int dmm_tuner_open(dmm_tuner_t *tu, const char *trace, int reps, FILE *notes, dmm_err_t *err);
void dmm_tuner_close(dmm_tuner_t *tu);

/* One replay under t.  0 with m filled; else the exit status of dmm replay
 * (or 1) with tu->last_err set. */
int dmm_tuner_replay(dmm_tuner_t *tu, const dmm_tunables_t *t, dmm_tune_meas_t *m);

/* The defaults: a warm-up replay (which also says whether the trace reads),
 * then reps replays, the reference of the fitness.  0, or the exit status
 * of the command (1, or 2 for bad input) with err. */
int dmm_tuner_reference(dmm_tuner_t *tu, dmm_err_t *err);

/* The fitness of measure.h's comment, for dmm_tune_search (arg: the
 * tuner); every call appends to tu->cand. */
double dmm_tuner_fitness(const dmm_tunables_t *t, uint64_t *T, size_t *M, void *arg);

/* The final run's measures. */
enum { DMM_TUNE_Q_WALL, DMM_TUNE_Q_OP, DMM_TUNE_Q_RSS, DMM_TUNE_Q_HELD, DMM_TUNE_NQ };

typedef struct dmm_tune_final {
    int              n;           /* replays of each side */
    dmm_tune_meas_t *def, *tun;
    dmm_tune_cmp_t   q[DMM_TUNE_NQ];
    double           F;           /* the fitness of the tuned medians */
    int              recommended; /* F below 1, a measurable gain, no cost */
} dmm_tune_final_t;

/* The final run: defaults and t alternating (ABBA), n replays each, and
 * its comparison.  0, or -1 (tu->last_err set, unless out of memory).
 * Free fr with dmm_tune_final_free. */
int dmm_tuner_final(dmm_tuner_t *tu, const dmm_tunables_t *t, int n, dmm_tune_final_t *fr);
void dmm_tune_final_free(dmm_tune_final_t *fr);

#endif
