/* verify.h - `dmm tune-glibc --verify`: settings tried on the real
 * program rather than on a replay of its trace.
 *
 * The program runs once to warm up (page cache, dynamic loader), then
 * alternately (ABBA: defaults, tuned, tuned, defaults, ...) under glibc's
 * defaults and under GLIBC_TUNABLES set to the settings, reps times each,
 * in the environment of env.h, standard input and error on /dev/null.
 * Each run's wall time (fork to wait4), CPU time (user + system, from
 * wait4's rusage, the program's waited-for children included) and peak RSS
 * (ru_maxrss) are kept; the settings may not change what the program does,
 * so every run's exit status and standard output must equal the
 * warm-up's.  Then each measure is compared (compare.h).
 *
 * A child's ru_maxrss counts from the fork, so it starts from the RSS it
 * inherits from dmm, which has allocated little by then: only a program
 * smaller than that floor shows the floor, on both sides alike. */
#ifndef DMM_TUNE_VERIFY_H
#define DMM_TUNE_VERIFY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "codegen/tune/compare.h"
#include "tracer/base/err.h"

enum { DMM_TUNE_V_WALL, DMM_TUNE_V_CPU, DMM_TUNE_V_RSS, DMM_TUNE_NV };

typedef struct dmm_tune_run {
    double   wall, cpu;           /* seconds */
    uint64_t maxrss;              /* bytes */
} dmm_tune_run_t;

typedef struct dmm_tune_verify {
    char *const    *argv;         /* the program and its arguments */
    int             reps;         /* runs of each side */
    char           *gt_def;       /* GLIBC_TUNABLES of the defaults' runs (NULL: unset) */
    char           *gt_tun;       /* and of the tuned runs */
    int             status;       /* the exit status of every run */
    size_t          output_bytes; /* the standard output of every run */
    dmm_tune_run_t *def, *tun;    /* reps each, in the order run */
    dmm_tune_cmp_t  q[DMM_TUNE_NV];
    double          seconds;      /* all the runs, the warm-up included */
} dmm_tune_verify_t;

/* Run argv (found on PATH when it has no slash) as above, the tuned side
 * under tunables (a GLIBC_TUNABLES value), progress to notes (NULL: none).
 * 0 with v filled; 2 with err when the program could not run, died of a
 * signal, or one run's exit status or output differed from the warm-up's
 * (err names the run); 1 with err when this process could not start it
 * (fork, pipes, memory).  Free v with dmm_tune_verify_free, whatever this
 * returned. */
int dmm_tune_verify(dmm_tune_verify_t *v, char *const argv[], const char *tunables, int reps,
                    FILE *notes, dmm_err_t *err);
void dmm_tune_verify_free(dmm_tune_verify_t *v);

#endif
