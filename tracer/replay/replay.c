/* replay.c - the replay itself: the driver's tables set up before the
 * clock, the timed loop over the operation stream, and the tear-down (see
 * replay.h). */
#include "tracer/replay/replay.h"

#include "tracer/replay/clock.h"
#include "tracer/replay/mem.h"
#include "tracer/replay/payload.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* The driver's tables in one mapping, every page touched now so that
 * neither the allocator nor the clock sees them fault in later. */
static int map_tables(dmm_replay_t *r)
{
    size_t page = (size_t)dmm_mem_page_size();
    size_t a = 0;
    size_t off_ptr = a;   a += (size_t)r->nids * sizeof(void *);
    size_t off_size = a;  a += (size_t)r->nids * sizeof(uint64_t);
    size_t off_lat = a;   a += r->nops * sizeof(uint64_t);
    size_t off_next = a;  a += r->nthreads > 1 ? r->nops * sizeof(uint32_t) : 0;
    a = (a + 7) & ~(size_t)7;
    size_t off_samp = a;  a += r->nsamp * sizeof(dmm_replay_sample_t);
    size_t off_hist = a;  a += 4 * sizeof(dmm_hist_t);
    r->arena_len = (a + page - 1) & ~(page - 1);
    r->arena = mmap(NULL, r->arena_len, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (r->arena == MAP_FAILED) {
        fprintf(stderr, "dmm replay: cannot map %zu bytes for the driver's tables: %s\n",
                r->arena_len, strerror(errno));
        return -1;
    }
    char *b = r->arena;
    r->ptr = (void **)(b + off_ptr);
    r->size = (uint64_t *)(b + off_size);
    r->lat = (uint64_t *)(b + off_lat);
    r->next_own = r->nthreads > 1 ? (uint32_t *)(b + off_next) : NULL;
    r->samp = (dmm_replay_sample_t *)(b + off_samp);
    r->hist = (dmm_hist_t *)(b + off_hist);
    /* MAP_POPULATE may be refused quietly: touch every page now. */
    for (size_t i = 0; i < r->arena_len; i += page)
        b[i] = 0;
    return 0;
}

/* --threads: which of the replay's threads runs op i (a trace thread for
 * which none could be started: the first). */
static inline unsigned owner(const dmm_replay_t *r, size_t i)
{
    unsigned t = r->L.ops[i].thread;
    return t < r->nthreads ? t : 0;
}

/* --threads: each thread's ops chained in the stream's order. */
static void chain_threads(dmm_replay_t *r)
{
    uint32_t last[DMM_OP_THREADS];
    for (unsigned t = 0; t < DMM_OP_THREADS; t++)
        r->first_own[t] = last[t] = (uint32_t)r->nops;
    for (size_t i = 0; i < r->nops; i++) {
        unsigned t = owner(r, i);
        if (last[t] == r->nops)
            r->first_own[t] = (uint32_t)i;
        else
            r->next_own[last[t]] = (uint32_t)i;
        last[t] = (uint32_t)i;
        r->next_own[i] = (uint32_t)r->nops;
    }
}

int dmm_replay_open(dmm_replay_t *r, const dmm_replay_opts_t *o)
{
    memset(r, 0, sizeof *r);
    r->o = o;
    r->statm_fd = -1;
    int rc = dmm_replay_load(o->trace, !o->no_cache, &r->L);
    if (rc)
        return rc;
    r->nops = r->L.h->nops;
    r->nids = r->L.h->nids;
    r->nsamp = o->samples < r->nops ? (size_t)o->samples : r->nops;
    if (r->nids == 0)
        r->nids = 1;
    r->nthreads = 1;
    if (o->threads) {
        for (size_t i = 0; i < r->nops; i++)
            if (r->L.ops[i].thread >= r->nthreads)
                r->nthreads = r->L.ops[i].thread + 1u;
        if (r->nthreads > 1 && r->nops >= UINT32_MAX) {
            fprintf(stderr, "dmm replay: warning: --threads takes up to %u operations; "
                            "replaying on one thread\n", UINT32_MAX - 1);
            r->nthreads = 1;
        }
    }
    if (map_tables(r) != 0) {
        dmm_replay_unload(&r->L);
        return 1;
    }
    if (r->nthreads > 1)
        chain_threads(r);
    r->statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (r->statm_fd < 0)
        fprintf(stderr, "dmm replay: warning: no /proc/self/statm: RSS from the high-water mark only\n");
    r->timer_overhead = dmm_clock_overhead();   /* for the reader */
    return 0;
}

static void corruption(dmm_replay_t *r, size_t i, uint32_t id, int64_t off, uint64_t size,
                       const char *what)
{
    r->corrupt = 1;
    r->bad_op = i;
    r->bad_id = id;
    r->bad_off = off;
    r->bad_size = size;
    r->bad_what = what;
}

static void take_sample(dmm_replay_t *r, size_t i)
{
    uint64_t rss, anon;
    dmm_mem_statm(r->statm_fd, &rss, &anon);
    r->samp[r->nsamp_done++] = (dmm_replay_sample_t){ .op = i, .requested = r->live,
                                                      .rss = rss, .anon = anon };
    if (rss > r->peak_rss_sampled)
        r->peak_rss_sampled = rss;
    if (anon > r->peak_anon_sampled)
        r->peak_anon_sampled = anon;
}

/* The operations, op i of the stream on block id.  Each returns -1 after a
 * corruption, 0 otherwise; only the allocator's call is between the two
 * reads of the clock. */

/* The bytes of block id's first n that the replay writes (and checks):
 * all, unless the trace says how much of the block the program had written
 * (load.h: what was resident at its free; only blocks that glibc mapped on
 * their own say it, DMM_TRC_RESIDENT_MIN bytes or more unless the program
 * lowered glibc's threshold: blocks under a page are not looked up). */
static uint64_t written(const dmm_replay_t *r, uint32_t id, uint64_t n)
{
    if (n < 4096 || r->o->write_all || !r->L.h->nresident)
        return n;
    uint64_t res = dmm_replay_resident(&r->L, id);
    return res < n ? res : n;
}

static int replay_alloc(dmm_replay_t *r, size_t i, dmm_op_t op, uint32_t id)
{
    void **ptr = r->ptr;
    uint64_t *size = r->size;
    uint64_t t0, t1;
    void *p;
    if (ptr[id]) {
        /* the stream reuses a live id only after freeing it; be safe */
        free(ptr[id]);
        r->live -= size[id];
    }
    if (op.flags & DMM_OPF_ZERO) {
        t0 = dmm_clock_ticks();
        p = calloc(1, op.size);
        t1 = dmm_clock_ticks();
    } else if (op.align_log2 > 4) {
        size_t al = op.align_log2 < 63 ? (size_t)1 << op.align_log2 : (size_t)1 << 62;
        t0 = dmm_clock_ticks();
        if (posix_memalign(&p, al, op.size) != 0)
            p = NULL;
        t1 = dmm_clock_ticks();
    } else {
        t0 = dmm_clock_ticks();
        p = malloc(op.size);
        t1 = dmm_clock_ticks();
    }
    r->lat[i] = t1 - t0;
    ptr[id] = p;
    if (!p && op.size) {
        r->failed++;
        size[id] = 0;
        return 0;
    }
    size[id] = op.size;
    r->live += op.size;
    if (p && r->o->check && (op.flags & DMM_OPF_ZERO)) {
        int64_t bad = dmm_payload_check_zero(p, op.size);
        if (bad >= 0) {
            corruption(r, i, id, bad, op.size, "calloc block not zeroed");
            return -1;
        }
    }
    if (p && r->o->write)
        dmm_payload_fill(p, 0, written(r, id, op.size), dmm_payload_word(id));
    return 0;
}

static int replay_realloc(dmm_replay_t *r, size_t i, dmm_op_t op, uint32_t id)
{
    uint64_t old = r->size[id];
    void *q = r->ptr[id];
    uint64_t t0 = dmm_clock_ticks();
    void *p = realloc(q, op.size);
    uint64_t t1 = dmm_clock_ticks();
    r->lat[i] = t1 - t0;
    if (!p) {
        if (op.size) {
            r->failed++;       /* the old block stays */
            return 0;
        }
        r->ptr[id] = NULL;    /* realloc(p, 0) freed p */
        r->size[id] = 0;
        r->live -= old;
        return 0;
    }
    r->ptr[id] = p;
    r->size[id] = op.size;
    r->live = r->live - old + op.size;
    uint64_t had = written(r, id, old), now = written(r, id, op.size);
    if (r->o->check) {
        uint64_t keep = had < now ? had : now;
        int64_t bad = dmm_payload_check(p, 0, keep, dmm_payload_word(id));
        if (bad >= 0) {
            corruption(r, i, id, bad, op.size, "realloc lost the block's contents");
            return -1;
        }
    }
    if (r->o->write && now > had)
        dmm_payload_fill(p, had, now, dmm_payload_word(id));
    return 0;
}

static int replay_free(dmm_replay_t *r, size_t i, uint32_t id)
{
    void *p = r->ptr[id];
    if (r->o->check && p) {
        int64_t bad = dmm_payload_check(p, 0, written(r, id, r->size[id]), dmm_payload_word(id));
        if (bad >= 0) {
            corruption(r, i, id, bad, r->size[id], "block overwritten before its free");
            return -1;
        }
    }
    uint64_t t0 = dmm_clock_ticks();
    free(p);
    uint64_t t1 = dmm_clock_ticks();
    r->lat[i] = t1 - t0;
    r->ptr[id] = NULL;
    r->live -= r->size[id];
    r->size[id] = 0;
    return 0;
}

/* Op i of the stream; -1 after a corruption. */
static int replay_op(dmm_replay_t *r, size_t i)
{
    const dmm_op_t op = r->L.ops[i];
    uint32_t id = op.id;
    if (id >= r->nids)
        id = 0;   /* cannot happen: the stream's ids are below nids */
    switch (op.kind) {
    case DMM_OP_ALLOC:
        return replay_alloc(r, i, op, id);
    case DMM_OP_REALLOC:
        return replay_realloc(r, i, op, id);
    case DMM_OP_FREE:
        return replay_free(r, i, id);
    default:
        r->lat[i] = 0;
        return 0;
    }
}

/* The stack that the run and the analysis will use (a 4 KiB buffer for
 * /proc among them) and the allocator's calls below them, touched before
 * the baseline: a page of stack first touched inside the window would
 * count as memory the allocator holds. */
#define STACK_TOUCH (16u << 10)

static __attribute__((noinline)) void touch_stack(void)
{
    volatile char pad[STACK_TOUCH];
    for (size_t i = 0; i < sizeof pad; i += 256)
        pad[i] = 0;
}

/* The RSS sample due after op i (sample j after op (j+1)*nops/nsamp - 1,
 * the last after the last op), from r->samp_j on. */
static size_t sample_after(const dmm_replay_t *r)
{
    size_t j = r->samp_j;
    return j < r->nsamp ? (size_t)(((unsigned __int128)(j + 1) * r->nops) / r->nsamp) - 1
                        : SIZE_MAX;
}

/* Op i and what follows it: the peak, the sample due.  -1 after a
 * corruption. */
static int step(dmm_replay_t *r, size_t i)
{
    if (replay_op(r, i) != 0)
        return -1;
    if (r->live > r->peak_requested)
        r->peak_requested = r->live;
    if (i == r->samp_next) {
        take_sample(r, i);
        r->samp_j++;
        r->samp_next = sample_after(r);
    }
    return 0;
}

/* ---- --threads --------------------------------------------------------- */

/* A thread waits for its turn spinning while the op it waits for is at
 * most TURN_NEAR ops away (up to TURN_SPINS pauses: a hand-over to a
 * running thread then takes well under a microsecond), else asleep on its
 * bell, which the thread that hands it the turn rings.  On one CPU it never
 * spins: it would hold up the thread whose turn it is. */
#define TURN_NEAR  64u
#define TURN_SPINS 2000

static void wait_turn(dmm_replay_t *r, unsigned t, uint32_t i)
{
    for (int k = 0; k < r->turn_spins; k++) {
        uint32_t v = __atomic_load_n(&r->turn, __ATOMIC_ACQUIRE);
        if (v >= i)
            return;
        if (i - v > TURN_NEAR)
            break;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
    for (;;) {
        uint32_t b = __atomic_load_n(&r->bell[t], __ATOMIC_ACQUIRE);
        if (__atomic_load_n(&r->turn, __ATOMIC_ACQUIRE) >= i)
            return;
        syscall(SYS_futex, &r->bell[t], FUTEX_WAIT_PRIVATE, b, NULL, NULL, 0);
    }
}

/* The turn to op next, which thread to runs: its bell rung when it is not
 * the giver (all: to -1). */
static void give_turn(dmm_replay_t *r, uint32_t next, int to, unsigned from)
{
    if (to >= 0 && (unsigned)to == from) {
        __atomic_store_n(&r->turn, next, __ATOMIC_RELEASE);
        return;
    }
    r->given_at = dmm_clock_ticks();
    __atomic_store_n(&r->turn, next, __ATOMIC_RELEASE);
    for (unsigned t = to < 0 ? 0 : (unsigned)to; t < r->nthreads; t++) {
        __atomic_add_fetch(&r->bell[t], 1, __ATOMIC_RELEASE);
        syscall(SYS_futex, &r->bell[t], FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
        if (to >= 0)
            break;
    }
}

/* Thread t's ops, each in its turn; the one that runs the last op (or
 * finds a corruption) stops the clock and ends every thread's wait. */
static void run_own(dmm_replay_t *r, unsigned t)
{
    uint32_t n = (uint32_t)r->nops;
    for (uint32_t i = r->first_own[t]; i < n; i = r->next_own[i]) {
        wait_turn(r, t, i);
        if (__atomic_load_n(&r->turn, __ATOMIC_ACQUIRE) != i)
            return;   /* the run ended: a corruption */
        if (i && owner(r, i - 1) != t)
            r->handoff_ticks += dmm_clock_ticks() - r->given_at;
        if (step(r, i) != 0 || i + 1 == n) {
            r->ops_done = r->corrupt ? i : n;
            r->t1_ticks = dmm_clock_ticks();
            r->t1_ns = dmm_clock_ns();
            give_turn(r, n + 1, -1, t);
            return;
        }
        give_turn(r, i + 1, (int)owner(r, i + 1), t);
    }
}

typedef struct replay_thread {
    dmm_replay_t *r;
    unsigned      t;
    pthread_t     th;
    int           started;
} replay_thread_t;

static void *thread_main(void *arg)
{
    replay_thread_t *w = arg;
    touch_stack();   /* before the baseline, as the first thread's */
    __atomic_store_n(&w->started, 1, __ATOMIC_RELEASE);
    run_own(w->r, w->t);
    return NULL;
}

/* The replay's threads for trace threads 1.. (0 is this one's), each with
 * its stack touched, before the clock.  How many were started. */
static unsigned start_threads(dmm_replay_t *r, replay_thread_t *w)
{
    unsigned n = 0;
    for (unsigned t = 1; t < r->nthreads; t++) {
        w[n] = (replay_thread_t){ .r = r, .t = t };
        int e = pthread_create(&w[n].th, NULL, thread_main, &w[n]);
        if (e) {
            fprintf(stderr, "dmm replay: --threads: cannot start thread %u of %u: %s; its "
                            "operations run on the first\n", t + 1, r->nthreads, strerror(e));
            break;
        }
        n++;
    }
    for (unsigned k = 0; k < n; k++)
        while (!__atomic_load_n(&w[k].started, __ATOMIC_ACQUIRE))
            sched_yield();
    return n;
}

static void run_threads(dmm_replay_t *r)
{
    static replay_thread_t w[DMM_OP_THREADS];
    r->turn = 0;
    r->handoff_ticks = 0;
    cpu_set_t cpus;
    r->turn_spins = sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) < 2
                    ? 0 : TURN_SPINS;
    memset(r->bell, 0, sizeof r->bell);
    unsigned n = start_threads(r, w);
    if (n + 1 < r->nthreads) {
        /* fewer threads than asked: the missing ones' ops on this one */
        r->nthreads = n + 1;
        chain_threads(r);
    }
    touch_stack();
    r->hwm_reset = dmm_mem_reset_hwm();
    dmm_mem_statm(r->statm_fd, &r->baseline_rss, &r->baseline_anon);
    r->t0_ns = dmm_clock_ns();
    r->t0_ticks = dmm_clock_ticks();
    run_own(r, 0);
    for (unsigned k = 0; k < n; k++)
        pthread_join(w[k].th, NULL);
}

void dmm_replay_run(dmm_replay_t *r)
{
    r->samp_j = 0;
    r->samp_next = r->nsamp ? sample_after(r) : SIZE_MAX;
    if (r->nthreads > 1) {
        run_threads(r);
    } else {
        touch_stack();
        r->hwm_reset = dmm_mem_reset_hwm();
        dmm_mem_statm(r->statm_fd, &r->baseline_rss, &r->baseline_anon);
        r->t0_ns = dmm_clock_ns();
        r->t0_ticks = dmm_clock_ticks();
        size_t i;
        for (i = 0; i < r->nops; i++)
            if (step(r, i) != 0)
                break;
        r->t1_ticks = dmm_clock_ticks();
        r->t1_ns = dmm_clock_ns();
        r->ops_done = i;   /* a corrupt op is not counted */
    }
    if (r->nsamp_done == 0 || r->samp[r->nsamp_done - 1].op + 1 < r->ops_done) {
        if (r->nsamp_done < r->nsamp)
            take_sample(r, r->ops_done - 1);
    }
}

/* One run in a child of its own, its cycles folded into best[]: 0, 3 (it
 * found a corruption) or 1. */
static int child_run(dmm_replay_t *r, uint64_t *best, unsigned k, unsigned n)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "dmm replay: run %u of %u: fork: %s\n", k, n, strerror(errno));
        return 1;
    }
    if (pid == 0) {
        dmm_replay_run(r);
        if (r->corrupt)
            _exit(3);
        for (size_t i = 0; i < r->ops_done; i++)
            if (r->lat[i] < best[i])
                best[i] = r->lat[i];
        _exit(0);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) {
            fprintf(stderr, "dmm replay: run %u of %u: waitpid: %s\n", k, n, strerror(errno));
            return 1;
        }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 3) {
        fprintf(stderr, "dmm replay: run %u of %u found a corruption; the last run is reported\n",
                k, n);
        return 3;
    }
    if (WIFEXITED(st))
        fprintf(stderr, "dmm replay: run %u of %u ended with status %d\n", k, n, WEXITSTATUS(st));
    else
        fprintf(stderr, "dmm replay: run %u of %u killed by signal %d\n", k, n, WTERMSIG(st));
    return 1;
}

int dmm_replay_run_fastest(dmm_replay_t *r)
{
    unsigned n = r->o->runs ? r->o->runs : 1;
    uint64_t *best = NULL;
    size_t len = 0;
    int rc = 0;
    if (n > 1 && r->nops) {
        size_t page = (size_t)dmm_mem_page_size();
        len = (r->nops * sizeof *best + page - 1) & ~(page - 1);
        best = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (best == MAP_FAILED) {
            fprintf(stderr, "dmm replay: cannot map %zu bytes for --runs: %s\n", len,
                    strerror(errno));
            return 1;
        }
        memset(best, 0xff, len);   /* every page touched before any run */
        for (unsigned k = 1; k < n && rc == 0; k++)
            rc = child_run(r, best, k, n);
        if (rc == 1) {
            munmap(best, len);
            return 1;
        }
    }
    /* fork write-protected this process's pages (the loader's, the runs'):
     * a pooled dmm library takes its own back at once, as a latency-minded
     * program would (libdmm(7) dmm_populate); other allocators have none */
    int (*populate)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "dmm_populate");
    if (populate)
        populate();
    dmm_replay_run(r);
    if (best) {
        for (size_t i = 0; i < r->ops_done; i++)
            if (best[i] < r->lat[i])
                r->lat[i] = best[i];
        munmap(best, len);
    }
    return rc;
}

void dmm_replay_close(dmm_replay_t *r)
{
    /* The blocks the program never freed, freed now that everything is
     * measured and reported: the process ends with an empty heap, and a
     * leak checker (LSan in make check-sanitize) sees no leak of ours. */
    if (!r->corrupt)
        for (uint32_t id = 0; id < r->nids; id++)
            if (r->ptr[id]) {
                free(r->ptr[id]);
                r->ptr[id] = NULL;
            }
    if (r->statm_fd >= 0)
        close(r->statm_fd);
    r->statm_fd = -1;
    munmap(r->arena, r->arena_len);
    r->arena = NULL;
    dmm_replay_unload(&r->L);
}
