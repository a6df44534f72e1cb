/* replay.h - dmm replay: a trace's operation stream through whatever
 * malloc this process has (run dmm under LD_PRELOAD= of any allocator), in
 * real time, one operation at a time (README "Replaying").
 *
 * What the allocator under test sees is the replay and nothing else: the
 * trace is read in a child (load.h); every table of the driver (id ->
 * pointer and size, per-op latencies, RSS samples, histograms) is mmap'd
 * and populated before the clock starts, so the allocator neither serves
 * nor is charged for it; inside the timed window there is the call alone
 * (clock.h), while payload writes and checks (payload.h) and RSS samples
 * (mem.h) happen between windows.
 *
 * The steps, in order: dmm_replay_open (load and set up), dmm_replay_run
 * (the timed loop), dmm_replay_analyse (analyse.h: after the clock), the
 * outputs (print.h, plot.h), dmm_replay_close. */
#ifndef DMM_REPLAY_H
#define DMM_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "tracer/replay/hist.h"
#include "tracer/replay/load.h"
#include "tracer/replay/mdriver.h"

typedef struct dmm_replay_opts {
    const char *trace;
    int         write;     /* write the blocks: every byte, except where the trace
                              says how much of a block was resident (that much) */
    int         write_all; /* ... every byte even then */
    int         check;     /* check the payloads before frees and after reallocs */
    uint64_t    samples;   /* RSS samples over the run */
    int         no_cache;  /* parse the trace even when TRACE.ops is valid; write none */
    unsigned    runs;      /* runs from the same start; each op's fastest is kept (0: 1) */
    int         threads;   /* each op on a thread of its own trace thread's (see below) */
} dmm_replay_opts_t;

typedef struct dmm_replay_sample {
    uint64_t op, requested, rss, anon;
} dmm_replay_sample_t;

typedef struct dmm_replay {
    const dmm_replay_opts_t *o;
    dmm_replay_ops_t L;
    size_t   nops;
    uint32_t nids;

    /* the driver's tables, one mmap */
    void     *arena;
    size_t    arena_len;
    void    **ptr;      /* id -> block */
    uint64_t *size;     /* id -> requested size */
    uint64_t *lat;      /* op -> cycles */
    uint32_t *next_own; /* --threads: op -> the next op of its thread (nops: none) */
    dmm_replay_sample_t *samp;
    size_t    nsamp, nsamp_done;
    dmm_hist_t *hist;   /* [0] all, [DMM_OP_ALLOC..DMM_OP_FREE] */

    int statm_fd;
    int hwm_reset;
    uint64_t timer_overhead;

    /* --threads: the replay's threads (1: the replay runs on this one) */
    unsigned nthreads;
    uint32_t first_own[DMM_OP_THREADS];   /* each thread's first op */

    /* the run */
    size_t   samp_next, samp_j;   /* the op after which the next RSS sample is taken */
    uint32_t turn;                /* --threads: the op whose turn it is */
    uint32_t bell[DMM_OP_THREADS];   /* ... each thread's futex word, rung with its turn */
    uint64_t given_at;            /* ... when the last turn went to another thread */
    uint64_t handoff_ticks;       /* ... the time turns took from one thread to another */
    int      turn_spins;          /* ... how long a waiting thread spins before it sleeps */
    size_t   ops_done;
    uint64_t failed;
    uint64_t live, peak_requested;
    uint64_t baseline_rss, peak_rss_sampled, baseline_anon, peak_anon_sampled;
    uint64_t t0_ticks, t1_ticks, t0_ns, t1_ns;
    /* the first corruption, which ends the run */
    int      corrupt;
    size_t   bad_op;
    uint32_t bad_id;
    int64_t  bad_off;
    uint64_t bad_size;
    const char *bad_what;

    /* the analysis */
    double   ghz;
    uint64_t best, worst;
    size_t   best_i, worst_i;
    uint64_t over100;   /* operations over 100x the best */
    uint64_t sum_cycles;
    uint64_t peak_rss, hwm, ru_maxrss, peak_anon, shared_end;
    int64_t  peak_held;   /* peak anonymous RSS over its level before the replay */
    dmm_mdriver_t mdriver;
} dmm_replay_t;

/* Load o->trace's operation stream and set up the driver's tables.
 * Returns an exit status: 0, 1 (the system refused) or 2 (a bad trace);
 * the message has been printed on stderr.  r keeps a pointer to o. */
int dmm_replay_open(dmm_replay_t *r, const dmm_replay_opts_t *o);

/* The timed replay; it stops at the first corruption (r->corrupt).
 *
 * With o->threads and a trace whose calls came from several threads, each
 * trace thread's ops run on a thread of the replay's own (the first trace
 * thread's on this one, the others' on threads started before the clock),
 * still one at a time in the stream's order: an op waits for its turn
 * (spinning a little, then on a futex) and hands it on.  So an allocator
 * that serves each thread from memory of its own (glibc's arenas, thread
 * caches) holds what it would hold in the program, where one thread would
 * have everything served from one heap; the time includes the hand-overs
 * (the same for every allocator: the calls alone are in the latencies). */
void dmm_replay_run(dmm_replay_t *r);

/* --runs N: the replay N times from the same start, the first N - 1 in
 * children forked now (the tables set up, the heap as it is), the last in
 * this process (whose blocks, memory figures and wall time are the ones
 * reported); each operation's cycles become its fastest of the N runs: what
 * the call costs when nothing else (an interrupt, another process, the
 * hypervisor) ran while it did, whereas what the allocator itself does in
 * the call (a system call, a page fault, a long walk) recurs in every run.
 * Returns 0; 3 when a child's run found a corruption (no more runs are
 * made; this process's run is made and reported all the same); 1 after a
 * run that could not be made or did not end (said on stderr). */
int dmm_replay_run_fastest(dmm_replay_t *r);

/* Free the blocks the trace never freed (not after a corruption: the
 * allocator's state is not to be trusted then) and unmap everything. */
void dmm_replay_close(dmm_replay_t *r);

#endif
