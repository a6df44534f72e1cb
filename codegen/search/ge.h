/* ge.h - the grammatical-evolution search over simulated DMMs (paper
 * sections 5, 6.2 and 6.3).
 *
 * Genome: a fixed number of integer codons (cfg.length, default 50), each
 * drawn uniformly in [0, cfg.codon_bound) (default 2^31).  The paper bounds a
 * codon by the largest number of alternatives of any rule; with generated
 * grammars that is the number of distinct request sizes, which can exceed any
 * small constant, so dmm draws from a range so wide that the modulo bias of
 * `c mod n` is below 2^-20 for every rule of fewer than 2^11 alternatives,
 * and every alternative of every rule is reachable.  The length is fixed (as
 * in JECO, the paper's library): one allocator takes about ten codons, and
 * 50 codons with three wraps give room for a chain of up to ~20.
 *
 * Mapping: dmm_ge_map (grammar.h), wrapping up to cfg.wraps times; an
 * individual whose mapping runs out of wraps, whose phenotype is not a DMM
 * description, whose simulation fails, or whose simulation fails more
 * requests than KNG and LEA do, is invalid and gets DMM_GE_WORST.
 *
 * Fitness: eq. 1 (fitness.h).
 *
 * One generation, as in the paper: the cfg.elite best individuals pass
 * unchanged; the rest of the new population are children of parents chosen
 * by tournament (cfg.tournament, with replacement), paired by one-point
 * crossover at the same point in both parents (probability cfg.pcross, else
 * copies), each codon then replaced by a fresh random one with probability
 * cfg.pmut.  Replacement is generational.
 *
 * Bounded evaluation: most of a search's time would go into hopeless
 * candidates (a free list of 100 k blocks walked on every call) simulated to
 * the end.  So a candidate is ranked by min(F, cap), cap = cfg.hopeless x
 * the worse of F_KNG and F_LEA (by default 1: a DMM worse than both of the
 * paper's references is of no use): all candidates at or above cap are
 * equally hopeless, ties broken by index as always.  T and M only grow
 * during a replay, and every allocation still to come costs at least one
 * call, so the simulation can stop as soon as eq. 1 on what it measured so
 * far plus those calls (with M at least the trace's peak of live bytes)
 * reaches cap: the candidate's rank is then known, and the
 * same as if it had been simulated to the end.  Whether a replay is cut or
 * finished (cfg.finish_hopeless) therefore never changes a rank, a
 * selection, or the result.  A candidate that fails more requests than the
 * references is invalid unless it reached the cap first (the first of the
 * two decides, in both modes).  If the best of the whole run is hopeless
 * (nothing came within cap), it is simulated to the end once so that its
 * F, T and M are real.
 *
 * Stopping: a time budget (cfg.time_budget) or a stop request ends the
 * simulations under way within milliseconds (sim.h); the generation
 * is then partial and its evaluated individuals count.
 *
 * Reproducibility: every random number comes from one generator seeded by
 * cfg.seed, drawn in a fixed order by the calling thread; the simulations of
 * a generation run on cfg.jobs threads into fixed slots; so the result
 * depends on the seed and the inputs only, never on cfg.jobs nor on
 * cfg.finish_hopeless.  Ties are broken by the lower population index.  Only
 * a time budget or a stop request (which end the search early) make a run
 * depend on the clock.
 *
 * Several objectives (cfg.objectives, two or three of T, M, W, the
 * costliest single operation, and P, the 99.9th percentile of single
 * operations): NSGA-II (pareto.h) in place of eq. 1's
 * ranking.  The initial population is evaluated as ever; then each
 * generation's parents are the best cfg.pop of the previous parents and
 * their children together, by non-dominated front and, within a front,
 * crowding distance (objectives T/T_KNG, M/M_LEA, W/W_KNG, P/P_KNG); children
 * come from binary tournaments on that order, crossover and mutation as
 * above (no elite: the parents survive by rank).  Every candidate is
 * simulated to the end (no cap: a bound on F says nothing of a front).  The
 * result's front is the non-dominated set of every design evaluated in the
 * run; each generation logs its hypervolume (normalised objectives, up to
 * DMM_GE_HV_REF in each).  eq. 1's F is still computed for every design
 * and r->best is still its best: the weighted-sum winner, to place on the
 * front.
 *
 * Several traces (cfg.nextra > 0: the stream given to dmm_ge_run and the
 * cfg.extra ones): a design is simulated on each, and each trace's eq. 1
 * uses that trace's own references (its KNG's T, its LEA's M); its F is
 * the mean of those (cfg.worst_case: the largest), its T and M the sums
 * over the traces, and the objectives (above) the means of each trace's
 * T/T_KNG, M/M_LEA and W/W_KNG.  A design that is invalid on one trace is
 * invalid.  No candidate is cut short (the caps are per trace), and the
 * evaluations all run in this process (cfg.remote must be NULL).
 *
 * Climb (cfg.climb > 0; eq. 1 or a custom fitness, not with objectives):
 * after the generations, a hill climb from the run's best genome through
 * its neighbours (climb.h: one decision of the mapping taken differently,
 * every other codon kept), in an order drawn from the run's generator,
 * DMM_GE_CLIMB_BATCH at a time (simulated like a generation's new
 * phenotypes, on cfg.jobs threads): the best of a batch that is better than
 * the climb's genome replaces it, and its neighbours are tried next; a
 * genome none of whose neighbours is better ends the climb, or with a time
 * budget starts one more from the next best distinct design of the last
 * population.  With a time budget the generations stop when 1 - cfg.climb
 * of it is spent and the climb has the rest; if every climb ends before
 * the budget, the generations go on from where they stopped, the climb's
 * best in place of the population's worst, for 1 - cfg.climb of what is
 * left, and climb again.  Without one, the climb goes on once, from the
 * best, to a genome no neighbour improves.  A few hundred
 * simulations (what a large trace affords) are too few for GE to tune its
 * best design's size boundaries and classes by chance; the climb does that
 * one decision at a time.  Its simulations are capped at the cfg.top-th
 * best F simulated to the end so far (or the run's cap, if lower): a
 * neighbour that cannot be better than that can neither improve the climb
 * nor enter r->top, so ranking it at that bound (a lower bound on its F,
 * never a made-up value) changes no decision (r->lean, as ever, is chosen
 * among the designs simulated to the end).  Not when the run's best is
 * hopeless.  r->climb says what it did.
 *
 * Phenotype cache: the canonical .dmm text of a phenotype (dmm_desc_print,
 * empty title) keys its T, M and F; an individual whose phenotype is there,
 * or is being simulated for an earlier individual of the same generation, is
 * not simulated again (a cache hit).  Which individuals hit is decided in
 * index order before the simulations start, so the counts are reproducible
 * as well. */
#ifndef DMM_SEARCH_GE_H
#define DMM_SEARCH_GE_H

#include <float.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "allocators/chain/desc.h"
#include "allocators/sim/sim.h"
#include "codegen/grammar/grammar.h"
#include "codegen/search/fitness.h"
#include "tracer/format/opstream.h"

#define DMM_GE_WORST DBL_MAX    /* the fitness of an invalid individual */

/* cfg.objectives: bits of these (0: eq. 1, the paper's search). */
enum { DMM_GE_OBJ_TIME = 1, DMM_GE_OBJ_MEMORY = 2, DMM_GE_OBJ_WORST = 4, DMM_GE_OBJ_P999 = 8 };
/* The hypervolume's reference point, in each normalised objective: twice
 * the reference allocator's value. */
#define DMM_GE_HV_REF 2.0
#define DMM_GE_LEAN_MAX 8       /* the most cfg.lean weights */
#define DMM_GE_CLIMB_BATCH 8    /* neighbours simulated together in the climb */

typedef struct dmm_ge_gen dmm_ge_gen_t;

/* One more trace of a search over several (cfg.extra). */
typedef struct dmm_ge_trace {
    const dmm_opstream_t *s;
    dmm_ge_ref_t          kng, lea;   /* kng.T or lea.M 0: simulated at the start */
} dmm_ge_trace_t;

/* A fitness of the caller's own, for a search that is not over DMMs (dmm
 * tune-glibc: glibc's malloc tunables, scored by real replays).  With
 * cfg.custom set, a phenotype (the mapped terminals) is not read as a DMM
 * description: canon() writes the text that keys the phenotype cache and
 * returns 0, or -1 for an invalid phenotype; fitness() scores one such text,
 * lower better, DMM_GE_WORST for invalid, and may fill T and M for the log.
 * No reference is simulated and the operation stream may be NULL.
 * fitness() runs on cfg.jobs threads; with jobs = 1 only on the calling
 * thread, one phenotype at a time, in population order. */
typedef struct dmm_ge_custom {
    int    (*canon)(const char *phenotype, char *key, size_t cap, void *arg);
    double (*fitness)(const char *key, uint64_t *T, size_t *M, void *arg);
    void    *arg;
} dmm_ge_custom_t;

/* Evaluations on other processes (codegen/search/mpi.c: Open MPI ranks).
 * A DMM's evaluation is a pure function of the operation stream, its
 * description and the bound, so a remote one ranks the same as a local
 * one.  start() hands worker w (0 .. nworkers-1) the canonical .dmm text of
 * population index item, to replay under bound b with at most seconds_left
 * of time (<= 0: no limit); finish() waits up to timeout_s for a result:
 * 1 with *w, *item and r (the replay's T, M, ops, seconds, failed,
 * capped_at, over_fail_at, interrupted, complete; r->M 0 and not complete
 * when the description did not build), 0 when none came, -1 when a
 * worker failed (*w says which).  The calling thread hands out the work
 * while cfg.jobs local threads simulate as well; both take the next
 * individual in index order. */
typedef struct dmm_ge_remote {
    int    nworkers;
    int  (*start)(void *arg, int w, int item, const char *text, const dmm_sim_bound_t *b,
                  double seconds_left);
    int  (*finish)(void *arg, int *w, int *item, dmm_sim_result_t *r, double timeout_s);
    void  *arg;
} dmm_ge_remote_t;

typedef struct dmm_ge_config {
    int      pop;           /* population size (100) */
    int      elite;         /* best individuals kept unchanged (10) */
    int      gens;          /* generations after the initial one (250) */
    int      tournament;    /* tournament size (2) */
    double   pcross;        /* one-point crossover probability (0.8) */
    double   pmut;          /* per-codon mutation probability (0.02) */
    int      wraps;         /* maximum number of wraps (3) */
    int      length;        /* codons per genome (50) */
    uint32_t codon_bound;   /* codons are drawn in [0, codon_bound) (2^31) */
    uint64_t seed;          /* (1) */
    int      jobs;          /* simulation threads; 0 = online CPUs */
    double   time_budget;   /* seconds; > 0: stop when it is spent */
    /* Set (e.g. by a signal handler) to stop the search: the simulations
     * under way end within milliseconds. */
    volatile sig_atomic_t *stop;
    /* The references, kng and lea simulated on the stream (fitness.h);
     * kng.T or lea.M 0 = simulate them at the start. */
    dmm_ge_ref_t kng, lea;
    /* Hopeless candidates (see "Bounded evaluation" above): cap = hopeless
     * x the worse of F_KNG and F_LEA (1); 0 = no cap, every candidate
     * ranked by its exact F and simulated to the end. */
    double   hopeless;
    /* Simulate hopeless candidates to the end all the same (their rank
     * does not change: a check of the cuts, and the time they save). */
    int      finish_hopeless;
    /* Called after every generation (the initial one included), from the
     * calling thread. */
    void   (*progress)(const dmm_ge_gen_t *row, const struct dmm_ge_config *cfg, void *arg);
    void    *progress_arg;
    /* NULL: DMMs scored by eq. 1 on the simulator (the paper's search). */
    const dmm_ge_custom_t *custom;
    /* NULL: every evaluation in this process. */
    const dmm_ge_remote_t *remote;
    /* More traces to evaluate every design on (above), and whether the
     * worst trace's F ranks a design instead of the mean. */
    const dmm_ge_trace_t *extra;
    int      nextra;
    int      worst_case;
    /* DMM_GE_OBJ_* bits, two or three of them: a Pareto search (above);
     * 0: eq. 1. */
    int      objectives;
    /* Each design simulated with a pool of its own address span
     * (dmm_sim_bound_t.pooled): T, M, W and P as it runs pooled, where no
     * call takes a fresh page (the costliest call's search for a pooled
     * deployment).  Not with remote evaluation. */
    int      pooled;
    /* How many of the best distinct phenotypes the result lists (r->top):
     * the candidates that `make evolve` measures for real (5). */
    int      top;
    /* Designs for programs that weigh memory more than eq. 1 does
     * (r->lean): for each weight w here, the design simulated to the end
     * that minimises w*T/T_KNG + (1-w)*M/M_LEA (eq. 1 is w = 0.5), where
     * it is not one of r->top's or an earlier weight's.  `make evolve`
     * measures them with r->top: a program whose heap is most of its RSS
     * and whose calls are little of its time gains more from the leaner
     * design than from eq. 1's (0.25, 0.1, 0.03; nlean 0: none).  Not with
     * objectives or a custom fitness. */
    double   lean[DMM_GE_LEAN_MAX];
    int      nlean;
    /* The climb (above): the share of cfg.time_budget it has, in [0, 0.9]
     * (0: no climb, the paper's search; dmm evolve: 0.25). */
    double   climb;
} dmm_ge_config_t;

/* What the climb did (dmm_ge_result_t.climb). */
typedef struct dmm_ge_climb {
    int      ran;           /* it started */
    double   F_start;       /* the run's best F when it started */
    uint64_t neighbours;    /* neighbours given a fitness */
    uint64_t simulations;   /* ... of which simulated (the rest: cache hits, invalid) */
    int      steps;         /* times a neighbour replaced the climb's genome */
    int      starts;        /* genomes climbed from */
    int      optimum;       /* the last one reached a genome no neighbour improves */
    double   seconds;
} dmm_ge_climb_t;

/* One of the best distinct phenotypes of a run (dmm_ge_result_t.top): its
 * canonical text (the phenotype cache's key), exact F, T and M. */
typedef struct dmm_ge_top {
    char    *key;
    double   F;
    uint64_t T;
    size_t   M;
    uint64_t W;        /* its costliest single operation */
    uint64_t P;        /* its 99.9th percentile of single operations */
    double   t, m, w, p; /* T/T_KNG, M/M_LEA, W/W_KNG, P/P_KNG (several
                            traces: the means of each trace's) */
    double   F_worst;  /* the worst trace's F (one trace: F) */
    double   weight;   /* r->lean: the w it minimises w*t + (1-w)*m for */
} dmm_ge_top_t;

/* One generation: a row of log.csv. */
struct dmm_ge_gen {
    int      gen;           /* 0 = the initial population */
    uint64_t evaluations;   /* individuals given a fitness so far (elites
                               carried over are not evaluated again) */
    uint64_t cache_hits;    /* ... of which answered by the cache */
    uint64_t simulations;   /* dmm_sim_run calls so far */
    uint64_t invalid;       /* individuals found invalid so far */
    int      nvalid;        /* valid individuals in this population */
    double   best_F, mean_F;   /* this population; mean over valid ones;
                                  DMM_GE_WORST when none is valid */
    uint64_t best_T;
    size_t   best_M;
    int      best_lines;    /* allocator lines of the best's .dmm (0: none) */
    uint64_t hopeless;      /* simulated candidates ranked at the cap so far */
    uint64_t cut;           /* ... of which were stopped there */
    double   saved_s;       /* seconds of simulation the cuts saved so far
                               (estimated: the rest of each cut replay at its
                               own pace) */
    double   seconds;       /* since the run started */
    double   eval_per_s;    /* evaluations / seconds */
    double   eta;           /* estimated seconds left (< 0: unknown) */
    double   hypervolume;   /* cfg.objectives: of the run's front so far */
    int      front;         /* ... its designs */
    int      partial;       /* the search stopped during this generation:
                               only the individuals evaluated count */
};

enum { DMM_GE_DONE = 0, DMM_GE_TIME, DMM_GE_STOPPED, DMM_GE_WORKER_FAILED };

typedef struct dmm_ge_result {
    int          found;        /* a valid individual was seen */
    double       F;            /* the best over the whole run */
    uint64_t     T;
    size_t       M;
    uint64_t     W;            /* its costliest single operation */
    uint64_t     P;            /* its 99.9th percentile of single operations */
    double       F_mean, F_worst;  /* several traces: the mean and the worst
                                      trace's F of the best (one: F) */
    dmm_desc_t   best;         /* its description (title empty) */
    char        *best_key;     /* cfg.custom: its canonical text (malloc'd) */
    uint32_t    *genome;       /* its genome, cfg.length codons */
    int          length;
    uint64_t     T_KNG;
    size_t       M_LEA;
    double       cap;          /* the rank of a hopeless candidate (DMM_GE_WORST: none) */
    dmm_ge_gen_t *log;         /* one row per generation run */
    int          nlog;
    uint64_t     evaluations, cache_hits, simulations, invalid;
    uint64_t     hopeless, cut;
    double       saved_s;
    double       seconds;
    /* the cfg.top best distinct phenotypes simulated to the end, best first
     * (ties by their text), no two with the same T and M (designs that
     * replay the trace alike: the first stands for them) */
    dmm_ge_top_t *top;
    int          ntop;
    /* cfg.lean: for each weight, the design that minimises its weighted
     * sum, unless r->top or an earlier weight has it (same T and M) */
    dmm_ge_top_t *lean;
    int          nlean;
    /* cfg.objectives: the run's front, every design evaluated that no other
     * dominates (one for each point), in order of T, then M, then W */
    dmm_ge_top_t *front;
    int          nfront;
    uint64_t     W_KNG;        /* kng's costliest single operation */
    uint64_t     P_KNG;        /* and its 99.9th percentile */
    dmm_ge_climb_t climb;      /* cfg.climb */
    int          stopped;      /* DMM_GE_* */
    int          failed_worker; /* DMM_GE_WORKER_FAILED: which (remote's w) */
} dmm_ge_result_t;

/* The objectives that bits (DMM_GE_OBJ_*) name, in the order time, memory,
 * worst, p999, taken from the normalised t, m, w and p into o; their number. */
int dmm_ge_objective_values(int bits, double t, double m, double w, double p, double *o);

/* The paper's parameters (section 6.3), seed 1, jobs 0. */
void dmm_ge_config_default(dmm_ge_config_t *cfg);

/* Run the search.  0 (r filled; r->found = 0 when no individual was valid),
 * or -1 with err (bad configuration, references that cannot be simulated,
 * out of memory).  Free r with dmm_ge_result_free either way. */
int dmm_ge_run(const dmm_ge_config_t *cfg, const dmm_grammar_t *g, const dmm_opstream_t *s,
               dmm_ge_result_t *r, dmm_err_t *err);
void dmm_ge_result_free(dmm_ge_result_t *r);

#endif
