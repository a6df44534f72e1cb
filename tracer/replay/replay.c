/* replay.c - dmm replay: a trace's operation stream through whatever malloc
 * this process has (run dmm under LD_PRELOAD= of any allocator), in real
 * time.
 *
 * What the allocator under test sees is the replay and nothing else:
 *  - the trace is read and reduced to its operation stream in a child
 *    process, which hands the stream over in a memfd; so the reader's own
 *    mallocs and frees never touch this process's heap (glibc would, for
 *    one, raise its mmap threshold after freeing the reader's big arrays);
 *  - every table of the driver (the stream, id -> pointer and size, per-op
 *    latencies, RSS samples, histograms) is mmap'd and populated before the
 *    clock starts, so the allocator neither serves nor is charged for it;
 *  - inside the timed window there is the call alone; payload writes,
 *    checks and RSS samples happen between windows.
 *
 * Timing: lfence; rdtsc; lfence on both sides of each call (cycles), the
 * TSC calibrated against CLOCK_MONOTONIC over the run for nanoseconds.
 * Percentiles come from an HDR-like histogram (replay.h).  Memory: RSS from
 * /proc/self/statm every nops/samples operations and the kernel's high-water
 * mark (VmHWM, reset through /proc/self/clear_refs when the kernel allows)
 * against the RSS just before the replay. */
#include "tracer/replay/replay.h"

#include "codegen/cli/cli.h"
#include "tracer/format/opstream.h"
#include "tracer/stats/stats.h"
#include "tracer/format/trace.h"
#include "tracer/base/json.h"
#include "tracer/format/load.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* histogram                                                          */

void dmm_hist_init(dmm_hist_t *h)
{
    memset(h, 0, sizeof *h);
    h->min = UINT64_MAX;
}

size_t dmm_hist_index(uint64_t v)
{
    if (v < DMM_HIST_SUB)
        return (size_t)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v);   /* >= DMM_HIST_SUB_BITS */
    unsigned sub = (unsigned)(v >> (e - DMM_HIST_SUB_BITS)) - DMM_HIST_SUB;
    return DMM_HIST_SUB + (size_t)(e - DMM_HIST_SUB_BITS) * DMM_HIST_SUB + sub;
}

uint64_t dmm_hist_low(size_t idx)
{
    if (idx < DMM_HIST_SUB)
        return idx;
    unsigned e = (unsigned)((idx - DMM_HIST_SUB) / DMM_HIST_SUB) + DMM_HIST_SUB_BITS;
    uint64_t sub = (idx - DMM_HIST_SUB) % DMM_HIST_SUB;
    return (DMM_HIST_SUB + sub) << (e - DMM_HIST_SUB_BITS);
}

uint64_t dmm_hist_high(size_t idx)
{
    if (idx < DMM_HIST_SUB)
        return idx;
    unsigned e = (unsigned)((idx - DMM_HIST_SUB) / DMM_HIST_SUB) + DMM_HIST_SUB_BITS;
    return dmm_hist_low(idx) + ((1ull << (e - DMM_HIST_SUB_BITS)) - 1);
}

void dmm_hist_add(dmm_hist_t *h, uint64_t v)
{
    h->b[dmm_hist_index(v)]++;
    h->count++;
    h->sum += v;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
}

uint64_t dmm_hist_quantile(const dmm_hist_t *h, double q)
{
    if (!h->count)
        return 0;
    if (q <= 0)
        return h->min;
    double r = ceil(q * (double)h->count);
    uint64_t rank = r < 1 ? 1 : r > (double)h->count ? h->count : (uint64_t)r;
    if (rank == h->count)
        return h->max;   /* the largest value is known exactly */
    uint64_t seen = 0;
    for (size_t i = 0; i < DMM_HIST_BUCKETS; i++) {
        seen += h->b[i];
        if (seen >= rank) {
            uint64_t lo = dmm_hist_low(i), hi = dmm_hist_high(i);
            uint64_t mid = lo + (hi - lo) / 2;
            if (mid < h->min)
                mid = h->min;
            if (mid > h->max)
                mid = h->max;
            return mid;
        }
    }
    return h->max;
}

double dmm_mdriver_util_points(double util)
{
    if (util < 0)
        util = 0;
    if (util > 1)
        util = 1;
    return 40.0 * util;
}

double dmm_mdriver_thru_points(double kops)
{
    if (kops >= DMM_MDRIVER_TARGET_KOPS)
        return 60.0;
    return kops > 0 ? 60.0 * kops / DMM_MDRIVER_TARGET_KOPS : 0.0;
}

/* ------------------------------------------------------------------ */
/* clock                                                              */

static inline uint64_t ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    uint32_t lo, hi;
    __asm__ volatile("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi) : : "memory");
    return ((uint64_t)hi << 32) | lo;
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#endif
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------ */
/* payload pattern: an 8-byte word per id, repeated from the block's start */

static inline uint64_t pattern_of(uint32_t id)
{
    uint64_t z = (uint64_t)id + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Write bytes [from, to) of block p: byte o is byte o%8 of the word.  The
 * first 64 bytes one by one, then doubling copies of what is written
 * (source and destination offsets agree mod 8). */
static void pattern_fill(unsigned char *p, uint64_t from, uint64_t to, uint64_t w)
{
    const unsigned char *wb = (const unsigned char *)&w;
    uint64_t n0 = to - from < 64 ? to - from : 64, o = from;
    for (; o < from + n0; o++)
        p[o] = wb[o & 7];
    while (o < to) {
        uint64_t n = o - from;
        if (n > to - o)
            n = to - o;
        memcpy(p + o, p + from, n);
        o += n;
    }
}

/* The first offset in [from, to) that does not hold the pattern, or -1. */
static int64_t pattern_check(const unsigned char *p, uint64_t from, uint64_t to, uint64_t w)
{
    const unsigned char *wb = (const unsigned char *)&w;
    uint64_t n0 = to - from < 64 ? to - from : 64, o = from;
    for (; o < from + n0; o++)
        if (p[o] != wb[o & 7])
            return (int64_t)o;
    while (o < to) {
        uint64_t n = o - from;
        if (n > to - o)
            n = to - o;
        if (memcmp(p + o, p + from, n) != 0) {
            for (uint64_t k = o; k < o + n; k++)
                if (p[k] != wb[k & 7])
                    return (int64_t)k;
        }
        o += n;
    }
    return -1;
}

static int64_t zero_check(const unsigned char *p, uint64_t n)
{
    for (uint64_t o = 0; o < n; o++)
        if (p[o])
            return (int64_t)o;
    return -1;
}

/* ------------------------------------------------------------------ */
/* loading, in a child process                                        */

#define OPS_MAGIC 0x73706f2d6d6d64ull   /* "dmm-ops" */

typedef struct ops_header {
    uint64_t magic, nops;
    uint32_t nids, format;
    uint64_t free_null, unknown_free, failed, reused_live;
    uint64_t pad[1];
} ops_header_t;
_Static_assert(sizeof(ops_header_t) == 64, "the stream starts 64 bytes in");

static int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The child: trace -> op stream -> fd.  Returns the exit status. */
static int load_child(const char *path, int fd)
{
    dmm_trace_t t;
    dmm_err_t err;
    if (dmm_trace_load(path, &t, &err) != 0) {
        fprintf(stderr, "dmm replay: %s\n", err.msg);
        return 2;
    }
    if (t.truncated)
        fprintf(stderr, "dmm replay: warning: %s\n", t.note);
    dmm_opstream_t s;
    if (dmm_opstream_build(&t, &s, &err) != 0) {
        fprintf(stderr, "dmm replay: %s\n", err.msg);
        dmm_trace_free(&t);
        return 2;
    }
    unsigned format = t.format;
    dmm_trace_free(&t);
    if (!s.nops) {
        fprintf(stderr, "dmm replay: %s: the trace has no operations to replay\n", path);
        dmm_opstream_free(&s);
        return 2;
    }
    ops_header_t h = { .magic = OPS_MAGIC, .nops = s.nops, .nids = s.nids, .format = format,
                       .free_null = s.free_null, .unknown_free = s.unknown_free,
                       .failed = s.failed, .reused_live = s.reused_live };
    int rc = write_all(fd, &h, sizeof h) || write_all(fd, s.ops, s.nops * sizeof *s.ops);
    dmm_opstream_free(&s);
    if (rc) {
        fprintf(stderr, "dmm replay: cannot hand over the operation stream: %s\n",
                strerror(errno));
        return 1;
    }
    return 0;
}

typedef struct loaded {
    const ops_header_t *h;
    const dmm_op_t     *ops;
    size_t              maplen;
} loaded_t;

static int load_ops(const char *path, loaded_t *L)
{
    int fd = memfd_create("dmm-replay-ops", MFD_CLOEXEC);
    if (fd < 0)
        fd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "dmm replay: no memfd or temporary file for the operation stream: %s\n",
                strerror(errno));
        return 1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "dmm replay: fork: %s\n", strerror(errno));
        close(fd);
        return 1;
    }
    if (pid == 0) {
        int rc = load_child(path, fd);
        fflush(NULL);
        _exit(rc);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) {
            fprintf(stderr, "dmm replay: waitpid: %s\n", strerror(errno));
            close(fd);
            return 1;
        }
    if (WIFSIGNALED(st)) {
        fprintf(stderr, "dmm replay: %s: the trace reader died of signal %d\n", path,
                WTERMSIG(st));
        close(fd);
        return 2;
    }
    if (WEXITSTATUS(st) != 0) {
        close(fd);
        return WEXITSTATUS(st);
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0 || (size_t)sb.st_size < sizeof(ops_header_t)) {
        fprintf(stderr, "dmm replay: the operation stream did not arrive\n");
        close(fd);
        return 1;
    }
    void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        fprintf(stderr, "dmm replay: mmap of the operation stream: %s\n", strerror(errno));
        return 1;
    }
    L->h = m;
    L->ops = (const dmm_op_t *)((const char *)m + sizeof(ops_header_t));
    L->maplen = (size_t)sb.st_size;
    if (L->h->magic != OPS_MAGIC ||
        L->h->nops != (L->maplen - sizeof(ops_header_t)) / sizeof(dmm_op_t)) {
        fprintf(stderr, "dmm replay: the operation stream arrived damaged\n");
        munmap(m, L->maplen);
        return 1;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* memory                                                             */

static long page_size;

/* Resident bytes, all of them and the anonymous ones (resident minus
 * file-backed and shared: statm's second field minus its third). */
static void statm_read(int fd, uint64_t *rss, uint64_t *anon)
{
    char buf[128];
    *rss = *anon = 0;
    ssize_t n = fd >= 0 ? pread(fd, buf, sizeof buf - 1, 0) : -1;
    if (n <= 0)
        return;
    buf[n] = 0;
    char *p = buf, *e;
    strtoull(p, &e, 10);
    uint64_t res = strtoull(e, &e, 10), shared = strtoull(e, NULL, 10);
    *rss = res * (uint64_t)page_size;
    *anon = (res > shared ? res - shared : 0) * (uint64_t)page_size;
}

/* VmHWM from /proc/self/status, in bytes; 0 if unknown. */
static uint64_t vm_hwm(void)
{
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    char *p = strstr(buf, "VmHWM:");
    return p ? strtoull(p + 6, NULL, 10) * 1024u : 0;
}

/* Reset the kernel's RSS high-water mark (Linux >= 4.0); 1 on success. */
static int reset_hwm(void)
{
    int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int ok = write(fd, "5", 1) == 1;
    close(fd);
    return ok;
}

/* ------------------------------------------------------------------ */
/* the run                                                            */

typedef struct sample {
    uint64_t op, requested, rss, anon;
} sample_t;

typedef struct opts {
    int write, check, json;
    const char *csv, *plot, *trace;
    uint64_t samples;
} opts_t;

typedef struct kind_stats {
    dmm_hist_t h;
} kind_stats_t;

typedef struct run {
    const opts_t *o;
    loaded_t L;
    size_t nops;
    uint32_t nids;

    /* the driver's tables, one mmap */
    void     *arena;
    size_t    arena_len;
    void    **ptr;      /* id -> block */
    uint64_t *size;     /* id -> requested size */
    uint64_t *lat;      /* op -> cycles */
    sample_t *samp;
    size_t    nsamp, nsamp_done;
    dmm_hist_t *hist;   /* [0] all, [DMM_OP_ALLOC..DMM_OP_FREE] */

    int statm_fd;
    int hwm_reset;
    uint64_t timer_overhead;

    /* results */
    size_t   ops_done;
    uint64_t failed;
    uint64_t live, peak_requested;
    uint64_t baseline_rss, peak_rss_sampled, peak_rss, hwm, ru_maxrss;
    uint64_t baseline_anon, peak_anon_sampled, peak_anon, shared_end;
    uint64_t t0_ticks, t1_ticks, t0_ns, t1_ns;
    double   ghz;
    uint64_t best, worst;
    size_t   best_i, worst_i;
    uint64_t over100;
    uint64_t sum_cycles;
    /* corruption */
    int      corrupt;
    size_t   bad_op;
    uint32_t bad_id;
    int64_t  bad_off;
    uint64_t bad_size;
    const char *bad_what;
} run_t;

static int setup(run_t *r)
{
    page_size = sysconf(_SC_PAGESIZE);
    if (page_size <= 0)
        page_size = 4096;
    r->nsamp = r->o->samples < r->nops ? (size_t)r->o->samples : r->nops;
    if (r->nids == 0)
        r->nids = 1;
    size_t a = 0;
    size_t off_ptr = a;   a += (size_t)r->nids * sizeof(void *);
    size_t off_size = a;  a += (size_t)r->nids * sizeof(uint64_t);
    size_t off_lat = a;   a += r->nops * sizeof(uint64_t);
    size_t off_samp = a;  a += r->nsamp * sizeof(sample_t);
    size_t off_hist = a;  a += 4 * sizeof(dmm_hist_t);
    r->arena_len = (a + (size_t)page_size - 1) & ~((size_t)page_size - 1);
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
    r->samp = (sample_t *)(b + off_samp);
    r->hist = (dmm_hist_t *)(b + off_hist);
    /* MAP_POPULATE may be refused quietly: touch every page now. */
    for (size_t i = 0; i < r->arena_len; i += (size_t)page_size)
        b[i] = 0;
    r->statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (r->statm_fd < 0)
        fprintf(stderr, "dmm replay: warning: no /proc/self/statm: RSS from the high-water mark only\n");
    /* the cost of the timer itself, for the reader */
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 2000; i++) {
        uint64_t t0 = ticks();
        uint64_t t1 = ticks();
        if (t1 - t0 < best)
            best = t1 - t0;
    }
    r->timer_overhead = best;
    return 0;
}

static void corruption(run_t *r, size_t i, uint32_t id, int64_t off, uint64_t size,
                       const char *what)
{
    r->corrupt = 1;
    r->bad_op = i;
    r->bad_id = id;
    r->bad_off = off;
    r->bad_size = size;
    r->bad_what = what;
}

static void take_sample(run_t *r, size_t i)
{
    uint64_t rss, anon;
    statm_read(r->statm_fd, &rss, &anon);
    r->samp[r->nsamp_done++] = (sample_t){ .op = i, .requested = r->live, .rss = rss,
                                           .anon = anon };
    if (rss > r->peak_rss_sampled)
        r->peak_rss_sampled = rss;
    if (anon > r->peak_anon_sampled)
        r->peak_anon_sampled = anon;
}

/* The timed loop.  Everything but the allocator call is outside the
 * ticks() window. */
static void replay(run_t *r)
{
    const dmm_op_t *ops = r->L.ops;
    const int wr = r->o->write, ck = r->o->check;
    void **ptr = r->ptr;
    uint64_t *size = r->size, *lat = r->lat;
    size_t nsamp = r->nsamp, j = 0;
    size_t next = nsamp ? (size_t)(((unsigned __int128)1 * r->nops) / nsamp) - 1 : SIZE_MAX;

    r->hwm_reset = reset_hwm();
    statm_read(r->statm_fd, &r->baseline_rss, &r->baseline_anon);
    r->t0_ns = mono_ns();
    r->t0_ticks = ticks();
    size_t i;
    for (i = 0; i < r->nops; i++) {
        const dmm_op_t op = ops[i];
        uint32_t id = op.id;
        uint64_t t0, t1;
        if (id >= r->nids)
            id = 0;   /* cannot happen: the stream's ids are below nids */
        switch (op.kind) {
        case DMM_OP_ALLOC: {
            void *p;
            if (ptr[id]) {
                /* the stream reuses a live id only after freeing it; be safe */
                free(ptr[id]);
                r->live -= size[id];
            }
            if (op.flags & DMM_OPF_ZERO) {
                t0 = ticks();
                p = calloc(1, op.size);
                t1 = ticks();
            } else if (op.align_log2 > 4) {
                size_t al = op.align_log2 < 63 ? (size_t)1 << op.align_log2 : (size_t)1 << 62;
                t0 = ticks();
                if (posix_memalign(&p, al, op.size) != 0)
                    p = NULL;
                t1 = ticks();
            } else {
                t0 = ticks();
                p = malloc(op.size);
                t1 = ticks();
            }
            lat[i] = t1 - t0;
            ptr[id] = p;
            if (!p && op.size) {
                r->failed++;
                size[id] = 0;
                break;
            }
            size[id] = op.size;
            r->live += op.size;
            if (p && ck && (op.flags & DMM_OPF_ZERO)) {
                int64_t bad = zero_check(p, op.size);
                if (bad >= 0) {
                    corruption(r, i, id, bad, op.size, "calloc block not zeroed");
                    goto out;
                }
            }
            if (p && wr)
                pattern_fill(p, 0, op.size, pattern_of(id));
            break;
        }
        case DMM_OP_REALLOC: {
            uint64_t old = size[id];
            void *q = ptr[id];
            t0 = ticks();
            void *p = realloc(q, op.size);
            t1 = ticks();
            lat[i] = t1 - t0;
            if (!p) {
                if (op.size) {
                    r->failed++;   /* the old block stays */
                    break;
                }
                ptr[id] = NULL;    /* realloc(p, 0) freed p */
                size[id] = 0;
                r->live -= old;
                break;
            }
            ptr[id] = p;
            size[id] = op.size;
            r->live = r->live - old + op.size;
            if (ck) {
                uint64_t keep = old < op.size ? old : op.size;
                int64_t bad = pattern_check(p, 0, keep, pattern_of(id));
                if (bad >= 0) {
                    corruption(r, i, id, bad, op.size, "realloc lost the block's contents");
                    goto out;
                }
            }
            if (wr && op.size > old)
                pattern_fill(p, old, op.size, pattern_of(id));
            break;
        }
        case DMM_OP_FREE: {
            void *p = ptr[id];
            if (ck && p) {
                int64_t bad = pattern_check(p, 0, size[id], pattern_of(id));
                if (bad >= 0) {
                    corruption(r, i, id, bad, size[id], "block overwritten before its free");
                    goto out;
                }
            }
            t0 = ticks();
            free(p);
            t1 = ticks();
            lat[i] = t1 - t0;
            ptr[id] = NULL;
            r->live -= size[id];
            size[id] = 0;
            break;
        }
        default:
            lat[i] = 0;
            break;
        }
        if (r->live > r->peak_requested)
            r->peak_requested = r->live;
        if (i == next) {
            take_sample(r, i);
            j++;
            next = j < nsamp ? (size_t)(((unsigned __int128)(j + 1) * r->nops) / nsamp) - 1
                             : SIZE_MAX;
        }
    }
out:
    r->t1_ticks = ticks();
    r->t1_ns = mono_ns();
    r->ops_done = i;   /* a corrupt op is not counted */
    if (r->nsamp_done == 0 || r->samp[r->nsamp_done - 1].op + 1 < r->ops_done) {
        if (r->nsamp_done < r->nsamp)
            take_sample(r, r->ops_done - 1);
    }
}

/* After the clock: calibrate, histograms, peaks. */
static void analyse(run_t *r)
{
    /* a longer window for the TSC's frequency on short runs */
    uint64_t dns = r->t1_ns - r->t0_ns, dt = r->t1_ticks - r->t0_ticks;
    if (dns < 50000000ull) {
        uint64_t end = r->t0_ns + 50000000ull;
        while (mono_ns() < end)
            ;
        dt = ticks() - r->t0_ticks;
        uint64_t ns2 = mono_ns() - r->t0_ns;
        r->ghz = ns2 ? (double)dt / (double)ns2 : 1.0;
    } else {
        r->ghz = (double)dt / (double)dns;
    }
    if (!(r->ghz > 0))
        r->ghz = 1.0;

    for (int k = 0; k < 4; k++)
        dmm_hist_init(&r->hist[k]);
    r->best = UINT64_MAX;
    for (size_t i = 0; i < r->ops_done; i++) {
        unsigned k = r->L.ops[i].kind;
        if (k < DMM_OP_ALLOC || k > DMM_OP_FREE)
            continue;
        uint64_t c = r->lat[i];
        dmm_hist_add(&r->hist[k], c);
        dmm_hist_add(&r->hist[0], c);
        r->sum_cycles += c;
        if (c < r->best) {
            r->best = c;
            r->best_i = i;
        }
        if (c > r->worst || i == 0) {
            r->worst = c;
            r->worst_i = i;
        }
    }
    if (r->best == UINT64_MAX)
        r->best = 0;
    uint64_t lim = r->best * 100;
    for (size_t i = 0; i < r->ops_done; i++) {
        unsigned k = r->L.ops[i].kind;
        if (k >= DMM_OP_ALLOC && k <= DMM_OP_FREE && r->lat[i] > lim)
            r->over100++;
    }

    struct rusage ru;
    r->ru_maxrss = getrusage(RUSAGE_SELF, &ru) == 0 ? (uint64_t)ru.ru_maxrss * 1024u : 0;
    r->hwm = vm_hwm();
    r->peak_rss = r->peak_rss_sampled;
    /* The high-water mark covers the moments between samples; without the
     * reset it also covers what came before the replay, which in this
     * process (the trace was read in a child) is the baseline itself. */
    if (r->hwm > r->peak_rss)
        r->peak_rss = r->hwm;
    if (r->peak_rss < r->baseline_rss)
        r->peak_rss = r->baseline_rss;
    /* Held memory is anonymous memory: the allocator's code pages, faulted
     * in by its first calls, and the driver's shared mapping of the stream
     * are not what it holds for data.  The high-water mark less the
     * file-backed pages at the end bounds the anonymous peak from below
     * (file-backed pages only grow over the run), as the samples do. */
    uint64_t rss_end, anon_end;
    statm_read(r->statm_fd, &rss_end, &anon_end);
    r->shared_end = rss_end - anon_end;
    r->peak_anon = r->peak_anon_sampled;
    if (r->hwm > r->shared_end && r->hwm - r->shared_end > r->peak_anon)
        r->peak_anon = r->hwm - r->shared_end;
    if (r->peak_anon < r->baseline_anon)
        r->peak_anon = r->baseline_anon;
}

/* ------------------------------------------------------------------ */
/* output                                                             */

static const char *kind_name[4] = { "all", "alloc", "realloc", "free" };

static double ns_of(const run_t *r, double cycles)
{
    return cycles / r->ghz;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

typedef struct mdr {
    double util, secs, kops, util_pts, thru_pts, perf;
    int valid, capped;
} mdr_t;

static mdr_t mdriver_of(const run_t *r, int64_t held)
{
    mdr_t m = { 0 };
    m.valid = !r->failed && !r->corrupt;
    if (held > 0 && (uint64_t)held >= r->peak_requested) {
        m.util = (double)r->peak_requested / (double)held;
    } else {
        m.util = 1.0;
        m.capped = 1;
    }
    m.secs = ns_of(r, (double)r->sum_cycles) / 1e9;
    m.kops = m.secs > 0 ? (double)r->ops_done / m.secs / 1000.0 : 0;
    m.util_pts = dmm_mdriver_util_points(m.util);
    m.thru_pts = dmm_mdriver_thru_points(m.kops);
    m.perf = m.util_pts + m.thru_pts;
    return m;
}

static const char *check_word(const run_t *r)
{
    return !r->o->check ? "off" : r->corrupt ? "corrupt" : "ok";
}

static void print_json(FILE *f, const run_t *r)
{
    const char *pre = getenv("LD_PRELOAD"), *cfg = getenv("DMM_CONFIG");
    int64_t held = (int64_t)(r->peak_anon - r->baseline_anon);
    double wall = (double)(r->t1_ns - r->t0_ns) / 1e9;
    fprintf(f, "{\"trace\":");
    dmm_json_str(f, r->o->trace);
    fprintf(f, ",\"format\":\"%s\",\"preload\":", dmm_format_name(r->L.h->format));
    dmm_json_str(f, pre);
    fprintf(f, ",\"dmm_config\":");
    dmm_json_str(f, cfg);
    fprintf(f, ",\"write\":%s,\"check\":\"%s\"", r->o->write ? "true" : "false", check_word(r));
    fprintf(f, ",\"ops\":%zu,\"ops_in_trace\":%zu,\"ids\":%u", r->ops_done, r->nops, r->nids);
    fprintf(f, ",\"wall_s\":%.6f,\"op_s\":%.6f", wall, ns_of(r, (double)r->sum_cycles) / 1e9);
    fprintf(f, ",\"cycles_per_op\":%.2f,\"ns_per_op\":%.2f,\"tsc_ghz\":%.4f,"
               "\"timer_overhead_cycles\":%" PRIu64,
            r->ops_done ? (double)r->sum_cycles / (double)r->ops_done : 0.0,
            r->ops_done ? ns_of(r, (double)r->sum_cycles) / (double)r->ops_done : 0.0, r->ghz,
            r->timer_overhead);
    fprintf(f, ",\"latency\":{");
    for (int k = 1; k <= 4; k++) {
        const dmm_hist_t *h = &r->hist[k % 4];
        double mean = h->count ? (double)h->sum / (double)h->count : 0;
        fprintf(f, "%s\"%s\":{\"count\":%" PRIu64 ",\"mean_ns\":%.2f,\"p50_ns\":%.2f,"
                   "\"p99_ns\":%.2f,\"p999_ns\":%.2f,\"max_ns\":%.2f,\"mean_cycles\":%.2f,"
                   "\"p50_cycles\":%" PRIu64 ",\"p99_cycles\":%" PRIu64 ",\"p999_cycles\":%" PRIu64
                   ",\"max_cycles\":%" PRIu64 "}",
                k > 1 ? "," : "", kind_name[k % 4], h->count, ns_of(r, mean),
                ns_of(r, (double)dmm_hist_quantile(h, 0.5)),
                ns_of(r, (double)dmm_hist_quantile(h, 0.99)),
                ns_of(r, (double)dmm_hist_quantile(h, 0.999)), ns_of(r, (double)h->max), mean,
                dmm_hist_quantile(h, 0.5), dmm_hist_quantile(h, 0.99),
                dmm_hist_quantile(h, 0.999), h->count ? h->max : 0);
    }
    fprintf(f, "}");
    /* the histograms themselves, for plots: [low ns, count] of every
     * non-empty bucket (16 per power of two of cycles) */
    fprintf(f, ",\"latency_histogram\":{");
    for (int k = 1; k <= 4; k++) {
        const dmm_hist_t *h = &r->hist[k % 4];
        fprintf(f, "%s\"%s\":[", k > 1 ? "," : "", kind_name[k % 4]);
        int first = 1;
        for (size_t i = 0; i < DMM_HIST_BUCKETS; i++) {
            if (!h->b[i])
                continue;
            fprintf(f, "%s[%.2f,%" PRIu64 "]", first ? "" : ",",
                    ns_of(r, (double)dmm_hist_low(i)), h->b[i]);
            first = 0;
        }
        fprintf(f, "]");
    }
    fprintf(f, "}");
    fprintf(f, ",\"best_ns\":%.2f,\"best_cycles\":%" PRIu64 ",\"worst_ns\":%.2f,"
               "\"worst_cycles\":%" PRIu64 ",\"worst_op\":%zu,\"worst_kind\":\"%s\","
               "\"over_100x_best\":%" PRIu64,
            ns_of(r, (double)r->best), r->best, ns_of(r, (double)r->worst), r->worst, r->worst_i,
            kind_name[r->L.ops[r->worst_i].kind & 3], r->over100);
    fprintf(f, ",\"peak_rss_bytes\":%" PRIu64 ",\"baseline_rss_bytes\":%" PRIu64
               ",\"peak_held_bytes\":%" PRId64 ",\"peak_requested_bytes\":%" PRIu64
               ",\"wastage_bytes\":%" PRId64 ",\"ru_maxrss_bytes\":%" PRIu64
               ",\"hwm_reset\":%s,\"samples\":%zu,\"peak_anon_bytes\":%" PRIu64
               ",\"baseline_anon_bytes\":%" PRIu64,
            r->peak_rss, r->baseline_rss, held, r->peak_requested,
            held - (int64_t)r->peak_requested, r->ru_maxrss, r->hwm_reset ? "true" : "false",
            r->nsamp_done, r->peak_anon, r->baseline_anon);
    fprintf(f, ",\"failed\":%" PRIu64 ",\"trace_failed_calls\":%" PRIu64
               ",\"trace_unknown_frees\":%" PRIu64 ",\"trace_free_null\":%" PRIu64,
            r->failed, r->L.h->failed, r->L.h->unknown_free, r->L.h->free_null);
    if (r->corrupt) {
        fprintf(f, ",\"corruption\":{\"op\":%zu,\"id\":%u,\"offset\":%" PRId64
                   ",\"size\":%" PRIu64 ",\"what\":\"%s\"}",
                r->bad_op, r->bad_id, r->bad_off, r->bad_size, r->bad_what);
    }
    if (r->L.h->format == DMM_FMT_REP) {
        mdr_t m = mdriver_of(r, held);
        fprintf(f, ",\"mdriver\":{\"trace\":");
        dmm_json_str(f, base_name(r->o->trace));
        fprintf(f, ",\"valid\":%s,\"util\":%.4f,\"util_capped\":%s,\"ops\":%zu,\"secs\":%.6f,"
                   "\"kops\":%.0f,\"util_points\":%.2f,\"thru_points\":%.2f,"
                   "\"perf_index\":%.2f,\"target_kops\":%.0f}",
                m.valid ? "true" : "false", m.util, m.capped ? "true" : "false", r->ops_done,
                m.secs, m.kops, m.util_pts, m.thru_pts, m.perf, DMM_MDRIVER_TARGET_KOPS);
    }
    fprintf(f, "}\n");
}

static void human_bytes(char *buf, size_t len, double b)
{
    const char *neg = b < 0 ? "-" : "";
    if (b < 0)
        b = -b;
    if (b >= 1024.0 * 1024 * 1024)
        snprintf(buf, len, "%s%.2f GiB", neg, b / (1024.0 * 1024 * 1024));
    else if (b >= 1024.0 * 1024)
        snprintf(buf, len, "%s%.2f MiB", neg, b / (1024.0 * 1024));
    else if (b >= 1024.0)
        snprintf(buf, len, "%s%.1f KiB", neg, b / 1024.0);
    else
        snprintf(buf, len, "%s%.0f B", neg, b);
}

static void print_text(FILE *f, const run_t *r)
{
    const char *pre = getenv("LD_PRELOAD"), *cfg = getenv("DMM_CONFIG");
    int64_t held = (int64_t)(r->peak_anon - r->baseline_anon);
    double wall = (double)(r->t1_ns - r->t0_ns) / 1e9;
    double op_s = ns_of(r, (double)r->sum_cycles) / 1e9;
    fprintf(f, "dmm replay %s (%s): %zu operations, %u blocks\n", r->o->trace,
            dmm_format_name(r->L.h->format), r->ops_done, r->nids);
    fprintf(f, "allocator   %s%s%s%s\n", pre ? "LD_PRELOAD=" : "the C library's malloc (no LD_PRELOAD)",
            pre ? pre : "", cfg ? "  DMM_CONFIG=" : "", cfg ? cfg : "");
    fprintf(f, "payloads    %s; integrity check %s\n",
            r->o->write ? "written (--no-write to skip)" : "not written (--no-write)",
            check_word(r));
    fprintf(f, "time        wall %.6f s, in the allocator's calls %.6f s; %.1f cycles/op, %.1f ns/op"
               " (TSC %.3f GHz; timer overhead %" PRIu64 " cycles, included)\n",
            wall, op_s, r->ops_done ? (double)r->sum_cycles / (double)r->ops_done : 0.0,
            r->ops_done ? op_s * 1e9 / (double)r->ops_done : 0.0, r->ghz, r->timer_overhead);
    fprintf(f, "\nlatency (ns)      count       mean        p50        p99      p99.9        max\n");
    for (int k = 1; k <= 4; k++) {
        const dmm_hist_t *h = &r->hist[k % 4];
        double mean = h->count ? (double)h->sum / (double)h->count : 0;
        fprintf(f, "  %-8s %12" PRIu64 " %10.1f %10.1f %10.1f %10.1f %10.1f\n", kind_name[k % 4],
                h->count, ns_of(r, mean), ns_of(r, (double)dmm_hist_quantile(h, 0.5)),
                ns_of(r, (double)dmm_hist_quantile(h, 0.99)),
                ns_of(r, (double)dmm_hist_quantile(h, 0.999)),
                ns_of(r, (double)(h->count ? h->max : 0)));
    }
    fprintf(f, "  (percentiles from a log-linear histogram, 16 steps per power of two: within 3%%)\n");
    const dmm_op_t *w = &r->L.ops[r->worst_i];
    char what[96];
    if (w->kind == DMM_OP_FREE)
        snprintf(what, sizeof what, "free of block %u", w->id);
    else
        snprintf(what, sizeof what, "%s of %" PRIu64 " bytes", kind_name[w->kind & 3], w->size);
    fprintf(f, "\nreal time   best %.1f ns (%" PRIu64 " cycles), worst %.1f ns (%" PRIu64
               " cycles, op %zu: %s, %.0fx the best)\n",
            ns_of(r, (double)r->best), r->best, ns_of(r, (double)r->worst), r->worst, r->worst_i,
            what, r->best ? (double)r->worst / (double)r->best : 0.0);
    fprintf(f, "            %" PRIu64 " operations over 100x the best (%.4f %%)\n", r->over100,
            r->ops_done ? 100.0 * (double)r->over100 / (double)r->ops_done : 0.0);
    char a[32], b[32], c[32], d[32], e[32];
    human_bytes(a, sizeof a, (double)r->peak_rss);
    human_bytes(b, sizeof b, (double)r->baseline_rss);
    human_bytes(c, sizeof c, (double)held);
    human_bytes(d, sizeof d, (double)r->peak_requested);
    human_bytes(e, sizeof e, (double)(held - (int64_t)r->peak_requested));
    fprintf(f, "memory      peak RSS %s (before the replay %s); peak held %s"
               " (anonymous RSS over its level before the replay)\n", a, b, c);
    fprintf(f, "            peak requested %s; wastage (peak held - peak requested) %s", d, e);
    if (r->peak_requested)
        fprintf(f, " (%.1f %% of requested)", 100.0 * (double)(held - (int64_t)r->peak_requested) /
                                                   (double)r->peak_requested);
    fprintf(f, "\n");
    if (!r->o->write)
        fprintf(f, "            (payloads not written: pages never touched are not resident)\n");
    if (r->failed)
        fprintf(f, "failed      %" PRIu64 " allocations returned NULL\n", r->failed);
    if (r->L.h->failed || r->L.h->unknown_free)
        fprintf(f, "trace       %" PRIu64 " failed calls and %" PRIu64
                   " frees of unknown blocks in the trace, not replayed\n",
                r->L.h->failed, r->L.h->unknown_free);
    if (r->corrupt)
        fprintf(f, "CORRUPTION  op %zu, block %u of %" PRIu64 " bytes, offset %" PRId64 ": %s\n",
                r->bad_op, r->bad_id, r->bad_size, r->bad_off, r->bad_what);

    if (r->L.h->format == DMM_FMT_REP) {
        mdr_t m = mdriver_of(r, held);
        const char *name = base_name(r->o->trace);
        fprintf(f, "\nmdriver (util = peak requested / peak held; secs = time in the allocator's calls)\n");
        fprintf(f, "trace                 valid  util       ops       secs     Kops\n");
        fprintf(f, "%-20.20s %6s %4.0f%% %9zu %10.6f %8.0f\n", name, m.valid ? "yes" : "no",
                100 * m.util, r->ops_done, m.secs, m.kops);
        fprintf(f, "Total                       %4.0f%% %9zu %10.6f %8.0f\n", 100 * m.util,
                r->ops_done, m.secs, m.kops);
        fprintf(f, "\nPerf index = %.0f/40 (util) + %.0f/60 (thru) = %.0f/100\n", m.util_pts,
                m.thru_pts, m.perf);
        fprintf(f, "(mdriver's perf index: util weight 40, throughput weight 60 against the target"
                   " of 54,500 Kops%s)\n",
                m.capped ? "; held below requested, util counted as 100%" : "");
    }
}

static int write_csv(const run_t *r, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "dmm replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    fprintf(f, "op,requested_bytes,rss_bytes,held_bytes\n");
    for (size_t i = 0; i < r->nsamp_done; i++)
        fprintf(f, "%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRId64 "\n", r->samp[i].op,
                r->samp[i].requested, r->samp[i].rss,
                (int64_t)(r->samp[i].anon - r->baseline_anon));
    if (fclose(f) != 0) {
        fprintf(stderr, "dmm replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

static int have_program(const char *name)
{
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/bin:/bin";
    char buf[4096];
    while (*path) {
        const char *c = strchr(path, ':');
        size_t n = c ? (size_t)(c - path) : strlen(path);
        if (n && n + strlen(name) + 2 < sizeof buf) {
            memcpy(buf, path, n);
            buf[n] = '/';
            strcpy(buf + n + 1, name);
            if (access(buf, X_OK) == 0)
                return 1;
        }
        path += n;
        if (*path == ':')
            path++;
    }
    return 0;
}

static void gp_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        if ((unsigned char)*s >= 0x20)
            fputc(*s, f);
    }
    fputc('"', f);
}

static int draw_plot(const run_t *r, const char *png)
{
    if (!have_program("gnuplot")) {
        fprintf(stderr, "dmm replay: gnuplot is not installed; no plot drawn "
                        "(apt-get install gnuplot-nox)\n");
        return 0;
    }
    char data[] = "/tmp/dmm-replay-XXXXXX";
    int fd = mkstemp(data);
    if (fd < 0) {
        fprintf(stderr, "dmm replay: no temporary file for the plot: %s\n", strerror(errno));
        return -1;
    }
    FILE *d = fdopen(fd, "w");
    for (size_t i = 0; i < r->nsamp_done; i++)
        fprintf(d, "%" PRIu64 " %.6f %.6f\n", r->samp[i].op,
                (double)r->samp[i].requested / 1048576.0,
                ((double)r->samp[i].anon - (double)r->baseline_anon) / 1048576.0);
    fclose(d);
    char script[] = "/tmp/dmm-replay-gp-XXXXXX";
    int sfd = mkstemp(script);
    if (sfd < 0) {
        unlink(data);
        fprintf(stderr, "dmm replay: no temporary file for the plot: %s\n", strerror(errno));
        return -1;
    }
    FILE *g = fdopen(sfd, "w");
    const char *pre = getenv("LD_PRELOAD"), *cfg = getenv("DMM_CONFIG");
    char title[1024];
    snprintf(title, sizeof title, "%s under %s%s%s", base_name(r->o->trace),
             pre ? base_name(pre) : "glibc malloc", cfg ? " DMM_CONFIG=" : "", cfg ? cfg : "");
    fprintf(g, "set terminal pngcairo size 1000,600 noenhanced\nset output ");
    gp_str(g, png);
    fprintf(g, "\nset title ");
    gp_str(g, title);
    fprintf(g, "\nset xlabel \"operations\"\nset ylabel \"MiB\"\nset key bottom right\nset grid\n"
               "set yrange [0:*]\n");
    fprintf(g, "plot ");
    gp_str(g, data);
    fprintf(g, " using 1:2 with lines lw 2 title \"requested (live bytes)\", ");
    gp_str(g, data);
    fprintf(g, " using 1:3 with lines lw 2 title \"held (anonymous RSS over its level before the replay)\"\n");
    fclose(g);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int nul = open("/dev/null", O_WRONLY);
        if (nul >= 0)
            dup2(nul, 1);
        execlp("gnuplot", "gnuplot", script, (char *)NULL);
        _exit(127);
    }
    int st = -1;
    if (pid > 0)
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
    unlink(data);
    unlink(script);
    if (pid < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "dmm replay: gnuplot failed; no plot in %s\n", png);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: dmm replay [--no-write] [--check] [--json] [--csv FILE] [--plot FILE.png]\n"
            "                  [--samples N] TRACE\n"
            "\n"
            "Replays TRACE's operation stream (alloc, realloc, free) through this process's\n"
            "malloc: run dmm under LD_PRELOAD= of the allocator to measure (none: glibc).\n"
            "Reports time per operation (TSC cycles and ns; mean, p50, p99, p99.9, max per\n"
            "kind), the best and worst operation and how many took over 100x the best, peak\n"
            "RSS, peak requested bytes and the wastage (peak held - peak requested), and for\n"
            "mdriver .rep traces mdriver's table and perf index.\n"
            "\n"
            "  --no-write    do not write the payloads (by default every byte is written, so\n"
            "                that resident memory is honest)\n"
            "  --check       verify every block's contents before its free and after realloc;\n"
            "                the first corruption is reported, exit status 3\n"
            "  --json        one JSON object with every number\n"
            "  --csv FILE    op, requested bytes, RSS bytes, held bytes at each sample\n"
            "  --plot FILE   requested vs held over the run, a PNG drawn by gnuplot\n"
            "  --samples N   RSS samples over the run (default 1000)\n");
}

int dmm_replay_main(int argc, char **argv)
{
    /* stdout's buffer is static: printing the report must not allocate
     * from the allocator under test (a kept chunk would enter its peak) */
    static char outbuf[1 << 16];
    setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
    opts_t o = { .write = 1, .samples = 1000 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--no-write")) {
            o.write = 0;
        } else if (!strcmp(a, "--check")) {
            o.check = 1;
        } else if (!strcmp(a, "--json")) {
            o.json = 1;
        } else if (!strcmp(a, "--csv") && i + 1 < argc) {
            o.csv = argv[++i];
        } else if (!strcmp(a, "--plot") && i + 1 < argc) {
            o.plot = argv[++i];
        } else if (!strcmp(a, "--samples") && i + 1 < argc) {
            char *end;
            errno = 0;
            unsigned long long n = strtoull(argv[++i], &end, 10);
            if (*end || errno || n == 0 || n > 100000000ull || argv[i][0] == '-') {
                fprintf(stderr, "dmm replay: --samples needs a count from 1 to 100000000\n");
                return 1;
            }
            o.samples = n;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "dmm replay: unknown option or missing value: %s\n", a);
            usage(stderr);
            return 1;
        } else if (!o.trace) {
            o.trace = a;
        } else {
            usage(stderr);
            return 1;
        }
    }
    if (!o.trace) {
        usage(stderr);
        return 1;
    }
    if (o.check && !o.write) {
        fprintf(stderr, "dmm replay: --check needs the payloads written; drop --no-write\n");
        return 1;
    }

    run_t r;
    memset(&r, 0, sizeof r);
    r.o = &o;
    r.statm_fd = -1;
    int rc = load_ops(o.trace, &r.L);
    if (rc)
        return rc;
    r.nops = r.L.h->nops;
    r.nids = r.L.h->nids;
    if (setup(&r) != 0) {
        munmap((void *)r.L.h, r.L.maplen);
        return 1;
    }

    replay(&r);

    analyse(&r);
    if (r.corrupt)
        fprintf(stderr, "dmm replay: %s: corruption at op %zu (%s of block %u, %" PRIu64
                        " bytes): offset %" PRId64 ": %s\n",
                o.trace, r.bad_op, kind_name[r.L.ops[r.bad_op].kind & 3], r.bad_id, r.bad_size,
                r.bad_off, r.bad_what);
    if (o.json)
        print_json(stdout, &r);
    else
        print_text(stdout, &r);
    fflush(stdout);
    rc = r.corrupt ? 3 : 0;
    if (o.csv && write_csv(&r, o.csv) != 0 && !rc)
        rc = 1;
    if (o.plot && draw_plot(&r, o.plot) != 0 && !rc)
        rc = 1;
    /* The blocks the program never freed, freed now that everything is
     * measured and reported: the process ends with an empty heap, and a
     * leak checker (LSan in make check-sanitize) sees no leak of ours.
     * Not after a corruption: the allocator's state is not to be trusted. */
    if (!r.corrupt)
        for (uint32_t id = 0; id < r.nids; id++)
            if (r.ptr[id]) {
                free(r.ptr[id]);
                r.ptr[id] = NULL;
            }
    if (r.statm_fd >= 0)
        close(r.statm_fd);
    munmap(r.arena, r.arena_len);
    munmap((void *)r.L.h, r.L.maplen);
    return rc;
}
