/* test_tracer.c - integration tests of libdmmtrace.so: real processes run
 * under the tracer, their traces are read back with the project's reader,
 * and what was recorded is checked against what the program is known to do,
 * against a plain run's output, and against glibc's own mtrace as an
 * independent oracle. */
#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tracer/format/opstream.h"
#include "test/lib/progrun.h"
#include "tracer/format/trace.h"
#include "tracer/format/load.h"
#include "tracer/format/trc_read.h"
#include "tracer/base/file.h"
#include "tracer/stats/symbolize.h"
#include "test/lib/libs.h"
#include "test/lib/scancheck.h"

#define TRACEE   DMM_BUILD_DIR "/test/progs/tracee"
#define MTRACEON DMM_BUILD_DIR "/test/progs/libmtrace_on.so"
#define MALLOC_DEBUG "/usr/lib/x86_64-linux-gnu/libc_malloc_debug.so.0"

/* The trace files in tmpdir, sorted by name; returns how many. */
static int trace_files(char names[][600], int max)
{
    DIR *d = opendir(tmpdir);
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        size_t l = strlen(e->d_name);
        if (l > 4 && !strcmp(e->d_name + l - 4, ".trc"))
            snprintf(names[n++], 600, "%s/%s", tmpdir, e->d_name);
    }
    closedir(d);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (strcmp(names[j], names[i]) < 0) {
                char t[600];
                strcpy(t, names[i]);
                strcpy(names[i], names[j]);
                strcpy(names[j], t);
            }
    return n;
}

typedef struct counts {
    uint64_t op[DMM_TRC_OP_MAX];
    uint64_t free_nonnull;
    uint32_t tids[64];
    int ntids;
} counts_t;

static void count(const dmm_trace_t *t, counts_t *c)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < t->nrecs; i++) {
        const dmm_rec_t *r = &t->recs[i];
        if (r->op < DMM_TRC_OP_MAX)
            c->op[r->op]++;
        if (r->op == DMM_TRC_FREE && r->ptr_in)
            c->free_nonnull++;
        int seen = 0;
        for (int k = 0; k < c->ntids; k++)
            seen |= c->tids[k] == r->tid;
        if (!seen && c->ntids < 64)
            c->tids[c->ntids++] = r->tid;
    }
}

/* path loaded into t; and scanned (dmm_scan_trc, what dmm record's summary
 * reads: a call at a time, one block per thread held), which must meet the
 * same calls in the same order, whatever the threads, forks, exits and
 * blocks of the test that recorded it. */
static void load(const char *path, dmm_trace_t *t)
{
    dmm_err_t err;
    int rc = dmm_trace_load(path, t, &err);
    cr_assert_eq(rc, 0, "%s", err.msg);
    cr_assert_not(t->truncated, "%s", t->note);
    assert_scan_matches_load(path);
}

/* path loaded into t (load()) and counted into c. */
static void load_counted(const char *path, dmm_trace_t *t, counts_t *c)
{
    load(path, t);
    count(t, c);
}

/* The one trace file of tmpdir, loaded into t and counted into c (when
 * not NULL). */
static void load_the_trace(dmm_trace_t *t, counts_t *c)
{
    char names[4][600];
    cr_assert_eq(trace_files(names, 4), 1);
    load(names[0], t);
    if (c)
        count(t, c);
}

/* The op stream is consistent: every free found its block, no address was
 * handed out twice while live (the order respects causality); and within
 * each thread seqs rise and time never goes back (the clock is read every
 * few records, the others carry the last reading). */
static void assert_consistent(const dmm_trace_t *t)
{
    struct { uint32_t tid; uint64_t time, seq; } last[64];
    size_t nl = 0;
    for (size_t i = 0; i < t->nrecs; i++) {
        size_t k = 0;
        while (k < nl && last[k].tid != t->recs[i].tid)
            k++;
        if (k == nl && nl < 64)
            last[nl++] = (typeof(last[0])){ t->recs[i].tid, 0, 0 };
        else if (k < nl)
            cr_assert_gt(t->recs[i].seq, last[k].seq, "%s: record %zu of thread %u has the seq "
                         "of one before it", t->path, i, t->recs[i].tid);
        if (k < nl) {
            cr_expect_geq(t->recs[i].time, last[k].time, "%s: record %zu of thread %u goes back "
                          "in time", t->path, i, t->recs[i].tid);
            last[k].time = t->recs[i].time;
            last[k].seq = t->recs[i].seq;
        }
    }
    dmm_opstream_t s;
    dmm_err_t err;
    cr_assert_eq(dmm_opstream_build(t, &s, &err), 0, "%s", err.msg);
    cr_expect_eq(s.unknown_free, 0, "%s: %llu frees of unknown blocks", t->path,
                 (unsigned long long)s.unknown_free);
    cr_expect_eq(s.reused_live, 0, "%s: %llu live addresses handed out again", t->path,
                 (unsigned long long)s.reused_live);
    dmm_opstream_free(&s);
}

/* Run the tracee under the tracer in a fresh tmpdir, its stdout into
 * tmpdir/out and its stderr into err (NULL: nowhere); returns wait status. */
static int run_tracee_err(const char *mode, const char *n, const char *const more_env[],
                          const char *err)
{
    char file[300];
    snprintf(file, sizeof file, "DMM_TRACE_FILE=%s/t.%%p.trc", tmpdir);
    const char *env[16] = { "LD_PRELOAD=" TRACER, file };
    int k = 2;
    for (int i = 0; more_env && more_env[i]; i++)
        env[k++] = more_env[i];
    env[k] = NULL;
    char out[300];
    snprintf(out, sizeof out, "%s/out", tmpdir);
    char *argv[] = { TRACEE, (char *)mode, (char *)n, NULL };
    return run(argv, env, tmpdir, NULL, out, err);
}

static int run_tracee(const char *mode, const char *n, const char *const more_env[])
{
    return run_tracee_err(mode, n, more_env, NULL);
}

/* The pattern() of the tracee: n reallocs and n callocs exactly. */
static void check_pattern_env(const char *mode, int n, const char *const env[])
{
    make_tmpdir();
    char ns[16];
    snprintf(ns, sizeof ns, "%d", n);
    int st = run_tracee(mode, ns, env);
    if (!strcmp(mode, "abort"))
        cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
    else if (!strcmp(mode, "segv"))
        cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
    else if (!strcmp(mode, "sigpipe"))
        cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGPIPE, "status %d", st);
    else
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
    dmm_trace_t t;
    counts_t c;
    load_the_trace(&t, &c);
    cr_expect_eq(c.op[DMM_TRC_REALLOC], (uint64_t)n);
    cr_expect_eq(c.op[DMM_TRC_CALLOC], (uint64_t)n);
    cr_expect_geq(c.op[DMM_TRC_MALLOC], (uint64_t)n);
    cr_expect_geq(c.free_nonnull, (uint64_t)(2 * n));
    if (WIFSIGNALED(st)) {
        /* the handler's flush ends the trace with a clock sync, as exit
         * does: times, and the peak RSS */
        cr_expect_eq(t.flags & DMM_TRC_F_NOTIME, 0, "%s: no times", mode);
        cr_expect_gt(t.peak_rss, 0, "%s", mode);
    }
    assert_consistent(&t);
    dmm_trace_free(&t);
    remove_tmpdir();
}

static void check_pattern(const char *mode, int n) { check_pattern_env(mode, n, NULL); }

/* Version 2's records: a few bytes a call; the clock read every
 * DMM_TRACE_TIME_STRIDE records of a thread (the header says how often),
 * times never going back within a thread. */
static void stride_run(const char *stride, uint32_t want, size_t *bytes, size_t *recs,
                       size_t *distinct)
{
    make_tmpdir();
    char env[64];
    snprintf(env, sizeof env, "DMM_TRACE_TIME_STRIDE=%s", stride);
    const char *more[] = { env, NULL };
    cr_assert_eq(run_tracee("main", "2000", more), 0);
    char names[4][600];
    cr_assert_eq(trace_files(names, 4), 1);
    struct stat st;
    cr_assert_eq(stat(names[0], &st), 0);
    *bytes = (size_t)st.st_size;
    dmm_trace_t t;
    load(names[0], &t);
    cr_assert_eq(t.time_stride, want);
    *recs = t.nrecs;
    *distinct = 0;
    for (size_t i = 1; i < t.nrecs; i++) {
        cr_assert_geq(t.recs[i].time, t.recs[i - 1].time, "record %zu goes back in time", i);
        *distinct += t.recs[i].time != t.recs[i - 1].time;
    }
    dmm_trace_free(&t);
    remove_tmpdir();
}

Test(tracer, records_are_compact_and_the_clock_is_read_every_stride)
{
    size_t bytes, recs, distinct;
    stride_run("16", 16, &bytes, &recs, &distinct);
    cr_assert_geq(recs, 10000);
    cr_assert_lt(bytes, recs * 12, "%zu bytes for %zu records", bytes, recs);
    cr_assert_leq(distinct, recs / 16 + 20, "%zu times for %zu records", distinct, recs);
    size_t bytes1, recs1, distinct1;
    stride_run("1", 1, &bytes1, &recs1, &distinct1);
    cr_assert_gt(distinct1, recs1 / 4, "every record reads the clock: %zu times for %zu records",
                 distinct1, recs1);
}

/* A thread's blocks: its first buffer's, 64 KiB at most (its pages are
 * faulted in as they fill, which a thread that records little pays for
 * few), then, once it has filled that, buffers of 256 KiB, the format's
 * largest block (mapped at once: fewer writes, fewer clock syncs), written
 * by the thread or handed to the writer process; nothing lost either way. */
static void blocks_grow(const char *const env[])
{
    make_tmpdir();
    int n = 40000;
    cr_assert_eq(run_tracee("main", "40000", env), 0);
    char names[4][600];
    cr_assert_eq(trace_files(names, 4), 1);
    size_t len;
    uint8_t *buf = (uint8_t *)slurp(names[0], &len);
    dmm_trc_header_t h;
    cr_assert_geq(len, sizeof h);
    memcpy(&h, buf, sizeof h);
    size_t off = h.header_size + ((h.cmdline_len + 7u) & ~(size_t)7), nblocks = 0, big = 0;
    uint32_t first = 0, largest = 0;
    while (off + sizeof(dmm_trc_block_t) <= len) {
        dmm_trc_block_t b;
        memcpy(&b, buf + off, sizeof b);
        cr_assert_eq(b.magic, DMM_TRC_BLOCK_MAGIC, "block %zu at %zu", nblocks, off);
        if (nblocks++ == 0)
            first = b.raw_len;
        largest = b.raw_len > largest ? b.raw_len : largest;
        big += b.raw_len > (64u << 10);
        off += sizeof b + b.stored_len;
    }
    cr_assert_eq(off, len, "blocks end at %zu of %zu bytes", off, len);
    free(buf);
    cr_expect_leq(first, 64u << 10, "the first block: %u bytes", first);
    cr_expect_geq(big, 2, "%zu blocks of more than 64 KiB in %zu", big, nblocks);
    cr_expect_leq(largest, 256u << 10, "the largest block: %u bytes", largest);
    dmm_trace_t t;
    counts_t c;
    load_the_trace(&t, &c);
    cr_expect_eq(c.op[DMM_TRC_REALLOC], (uint64_t)n);
    cr_expect_eq(c.op[DMM_TRC_CALLOC], (uint64_t)n);
    assert_consistent(&t);
    dmm_trace_free(&t);
    remove_tmpdir();
}

static const char *const writer_on[] = { "DMM_TRACE_WRITER=yes", NULL };

Test(tracer, a_busy_threads_blocks_grow_from_64_to_256_kib)
{
    blocks_grow(NULL);
    blocks_grow(writer_on);
}

Test(tracer, loses_nothing_on_return_from_main) { check_pattern("main", 300); }
Test(tracer, loses_nothing_on_exit) { check_pattern("exit", 300); }
Test(tracer, loses_nothing_on__exit) { check_pattern("_exit", 300); }
Test(tracer, flushes_on_abort) { check_pattern("abort", 300); }
Test(tracer, flushes_on_segv) { check_pattern("segv", 300); }

/* "| head": the program dies of SIGPIPE at its default disposition, which
 * the tracee inherits from here. */
Test(tracer, flushes_on_sigpipe)
{
    signal(SIGPIPE, SIG_DFL);
    check_pattern("sigpipe", 300);
}

/* The one trace of the scratch directory, into t: the clock syncs that
 * carry the peak RSS and CPU time are TSC ones, so a trace recorded with
 * another clock (its header says, as recorded: the reader converts a TSC
 * trace's times) skips the test. */
static void skip_unless_tsc(const char *name)
{
    size_t len;
    uint8_t *head = (uint8_t *)slurp(name, &len);
    cr_assert_geq(len, 64u);
    uint32_t clock = head[24] | head[25] << 8 | head[26] << 16 | (uint32_t)head[27] << 24;
    free(head);
    if (clock != DMM_TRC_CLOCK_TSC) {
        remove_tmpdir();
        cr_skip_test("recorded with clock %u: no TSC clock syncs to carry the samples", clock);
    }
}

static void load_sampled(dmm_trace_t *t)
{
    char names[2][600];
    cr_assert_eq(trace_files(names, 2), 1);
    skip_unless_tsc(names[0]);
    load(names[0], t);
}

/* The number the tracee printed after "key " in tmpdir/out. */
static long long printed_value(const char *key)
{
    char out[300], pat[64];
    snprintf(out, sizeof out, "%s/out", tmpdir);
    snprintf(pat, sizeof pat, "%s ", key);
    char *o = slurp(out, NULL);
    long long v = 0;
    const char *at = strstr(o, pat);
    cr_assert(at && sscanf(at + strlen(pat), "%lld", &v) == 1, "no %s in: %s", key, o);
    free(o);
    return v;
}

/* The trace says the process's peak RSS and CPU time (its clock syncs
 * sample them, the last at exit): no less than what the program itself
 * read after writing 300000 small blocks (some 40 MiB), and not far above
 * it.  The samples ride on the TSC clock syncs, which a machine without an
 * invariant TSC does not write. */
Test(tracer, the_trace_says_the_process_peak_rss)
{
    make_tmpdir();
    cr_assert_eq(run_tracee("smallaligned", "300000", NULL), 0);
    long long kib = printed_value("maxrss"), cpu_us = printed_value("cpu_us");
    cr_assert(kib > 32 * 1024, "maxrss %lld", kib);
    cr_assert(cpu_us > 0);
    dmm_trace_t t;
    load_sampled(&t);
    uint64_t printed = (uint64_t)kib * 1024;
    cr_expect_geq(t.peak_rss, printed, "trace %" PRIu64 ", program %" PRIu64, t.peak_rss,
                  printed);
    cr_expect_leq(t.peak_rss, printed + (8u << 20), "trace %" PRIu64 ", program %" PRIu64,
                  t.peak_rss, printed);
    /* exit's sample comes after the program's own reading, and the process
     * had little left to do (its trace's last block, on a loaded machine) */
    uint64_t cpu = (uint64_t)cpu_us * 1000;
    cr_expect_geq(t.cpu_ns, cpu, "trace %" PRIu64 " ns, program %" PRIu64, t.cpu_ns, cpu);
    cr_expect_leq(t.cpu_ns, cpu + 500000000u, "trace %" PRIu64 " ns, program %" PRIu64,
                  t.cpu_ns, cpu);
    dmm_trace_free(&t);
    remove_tmpdir();
}

/* The CPU time samples of a trace's clock syncs: how many, the greatest. */
typedef struct cpu_samples {
    size_t   n;
    uint64_t max;
} cpu_samples_t;

static int cpu_sample(void *ctx, const dmm_rec_t *r)
{
    cpu_samples_t *cs = ctx;
    if (r->op == DMM_TRC_CLOCKSYNC && r->ptr_in) {
        cs->n++;
        cs->max = r->ptr_in > cs->max ? r->ptr_in : cs->max;
    }
    return 0;
}

/* The CPU time a trace says: at the end the whole process's, that of a
 * thread that does not allocate while it works included; in the middle
 * the recording threads', each read by the thread itself (reading the
 * process's there made the scheduler preempt the program inside its
 * malloc and free), so that no sample exceeds the last; and a forked
 * child's is its own, not what its parent's threads had used. */
Test(tracer, the_cpu_time_is_every_threads_at_the_end_and_a_childs_its_own)
{
    make_tmpdir();
    cr_assert_eq(run_tracee("cpu", "300", NULL), 0);
    long long cpu_us = printed_value("cpu_us");
    cr_assert(cpu_us >= 600000, "cpu_us %lld", cpu_us);
    char names[4][600];
    cr_assert_eq(trace_files(names, 4), 2);
    skip_unless_tsc(names[0]);
    dmm_trace_t a, b;
    load(names[0], &a);
    load(names[1], &b);
    dmm_trace_t *parent = a.ppid == b.pid ? &b : &a, *child = parent == &a ? &b : &a;
    cr_assert_eq(child->ppid, parent->pid);
    uint64_t cpu = (uint64_t)cpu_us * 1000;
    cr_expect_geq(parent->cpu_ns, cpu, "trace %" PRIu64 " ns, program %" PRIu64,
                  parent->cpu_ns, cpu);
    cr_expect_leq(parent->cpu_ns, cpu + 500000000u, "trace %" PRIu64 " ns, program %" PRIu64,
                  parent->cpu_ns, cpu);
    cpu_samples_t cs = { 0 };
    const char *pname = parent == &a ? names[0] : names[1];
    size_t len;
    uint8_t *buf = (uint8_t *)slurp(pname, &len);
    dmm_trace_t h = { 0 };
    dmm_err_t err = { { 0 } };
    cr_assert_geq(dmm_scan_trc(pname, buf, len, &h, cpu_sample, &cs, &err), 0, "%s", err.msg);
    dmm_trace_free(&h);
    free(buf);
    cr_expect_gt(cs.n, 3, "%zu samples", cs.n);   /* 2 threads' first, one's exit, the end */
    cr_expect_eq(cs.max, parent->cpu_ns);
    cr_expect_gt(child->cpu_ns, 0);
    cr_expect_lt(child->cpu_ns, 150000000u, "the child's %" PRIu64 " ns", child->cpu_ns);
    dmm_trace_free(&a);
    dmm_trace_free(&b);
    remove_tmpdir();
}

/* A program started by a large process: its trace's peak RSS is its own.
 * The process that runs it here first holds 160 MiB, which the child
 * counts until it execs, so that getrusage's ru_maxrss, which the program
 * prints, keeps them (as it kept a Python harness's 280 MB for cc1plus);
 * the trace says the peak of the program's own address space (VmHWM),
 * a few MiB. */
Test(tracer, the_peak_rss_is_the_programs_own_not_its_parents)
{
    make_tmpdir();
    size_t big = (size_t)160 << 20;
    char *hold = malloc(big);
    cr_assert(hold);
    memset(hold, 1, big);
    int st = run_tracee("smallaligned", "1000", NULL);
    cr_assert_eq(hold[big - 1], 1);
    free(hold);
    cr_assert_eq(st, 0);
    long long kib = printed_value("maxrss");
    dmm_trace_t t;
    load_sampled(&t);
    cr_expect_geq((uint64_t)kib * 1024, (uint64_t)big, "ru_maxrss kept the parent's pages");
    cr_expect_gt(t.peak_rss, 0);
    cr_expect_lt(t.peak_rss, (uint64_t)64 << 20, "trace %" PRIu64, t.peak_rss);
    dmm_trace_free(&t);
    remove_tmpdir();
}

Test(tracer, records_every_aligned_call)
{
    make_tmpdir();
    cr_assert_eq(run_tracee("aligned", "50", NULL), 0);
    dmm_trace_t t;
    load_the_trace(&t, NULL);
    counts_t c;
    count(&t, &c);
    cr_expect_eq(c.op[DMM_TRC_MEMALIGN], 50);
    cr_expect_eq(c.op[DMM_TRC_POSIX_MEMALIGN], 50);
    cr_expect_eq(c.op[DMM_TRC_ALIGNED_ALLOC], 50);
    cr_expect_eq(c.op[DMM_TRC_VALLOC], 50);
    cr_expect_eq(c.op[DMM_TRC_PVALLOC], 50);
    for (size_t i = 0; i < t.nrecs; i++)
        if (t.recs[i].op == DMM_TRC_ALIGNED_ALLOC) {
            cr_expect_eq(t.recs[i].arg, 256);
            cr_expect_eq(t.recs[i].size, 512);
            cr_expect_eq(t.recs[i].ptr_out % 256, 0);
        }
    assert_consistent(&t);
    dmm_trace_free(&t);
    remove_tmpdir();
}

/* The free of a block of 128 KiB or more says how much of it was resident
 * (DMM_TRC_RF_RESIDENT): of the sparse mode's 4 MiB block with 3 pages
 * written, those pages (and the one its unaligned start shares, when glibc
 * put it in the heap), of its 1 MiB block written whole, all of it; a
 * small block's free says nothing.  Each free's block is known by the
 * malloc that returned its address. */
Test(tracer, large_frees_say_how_much_of_the_block_was_resident)
{
    make_tmpdir();
    cr_assert_eq(run_tracee("sparse", "3", NULL), 0);
    dmm_trace_t t;
    counts_t c;
    load_the_trace(&t, &c);
    struct { uint64_t ptr, size; } live[256];
    size_t nl = 0;
    int big = 0, mid = 0, small = 0;
    for (size_t i = 0; i < t.nrecs; i++) {
        const dmm_rec_t *r = &t.recs[i];
        if (r->op == DMM_TRC_MALLOC && r->ptr_out) {
            cr_assert_lt(nl, 256);
            live[nl].ptr = r->ptr_out;
            live[nl++].size = r->size;
        }
        if (r->op != DMM_TRC_FREE || !r->ptr_in)
            continue;
        size_t k = 0;
        while (k < nl && live[k].ptr != r->ptr_in)
            k++;
        if (k == nl)
            continue;
        uint64_t size = live[k].size, arg = r->arg;
        live[k] = live[--nl];
        int res = (r->flags & DMM_TRC_RF_RESIDENT) != 0;
        if (size == 4u << 20) {
            big += res;
            cr_expect(!res || (arg >= 12288 && arg <= 20480), "free of the 4 MiB block (record "
                      "%zu): resident %llu", i, (unsigned long long)arg);
        } else if (size == 1u << 20) {
            mid += res;
            cr_expect(!res || arg >= 1u << 20, "free of the 1 MiB block (record %zu): "
                      "resident %llu", i, (unsigned long long)arg);
        } else if (size < (64u << 10)) {
            small += size == 64;
            cr_expect(!res && arg == 0, "free of a %llu-byte block (record %zu): flags %#x, "
                      "arg %llu", (unsigned long long)size, i, r->flags, (unsigned long long)arg);
        }
    }
    /* the first round's, which glibc mapped (its first free raises its
     * mmap threshold, and the later rounds' come from its heap) */
    cr_expect_eq(big, 1);
    cr_expect_eq(mid, 1);
    cr_expect_geq(small, 3);   /* the tracee's, and any of libc's */
    assert_consistent(&t);
    dmm_trace_free(&t);
    remove_tmpdir();
}

/* The large blocks still live at the end (exit, or _exit) say how much of
 * them is resident in a record of their own, one each, after every call:
 * the 8 MiB calloc of which two pages were written, and the block that a
 * realloc grew to 16 MiB, of which one page was (both mapped by glibc). */
Test(tracer, large_blocks_live_at_the_end_say_how_much_is_resident)
{
    const char *modes[] = { "sparselive", "sparselive_exit" };
    for (int m = 0; m < 2; m++) {
        make_tmpdir();
        cr_assert_eq(run_tracee(modes[m], "2", NULL), 0, "%s", modes[m]);
        dmm_trace_t t;
        counts_t c;
        load_the_trace(&t, &c);
        uint64_t cal = 0, grown = 0;
        int said_cal = 0, said_grown = 0;
        size_t last_call = 0;
        for (size_t i = 0; i < t.nrecs; i++) {
            const dmm_rec_t *r = &t.recs[i];
            if (r->op == DMM_TRC_CALLOC && r->size == 8u << 20)
                cal = r->ptr_out;
            if (r->op == DMM_TRC_REALLOC && r->size == 16u << 20)
                grown = r->ptr_out;
            if (r->op != DMM_TRC_RESIDENT) {
                if (r->op != DMM_TRC_CLOCKSYNC && r->op != DMM_TRC_MODULE &&
                    r->op != DMM_TRC_THREAD_EXIT)
                    last_call = i;
                continue;
            }
            cr_expect(r->ptr_in == cal || r->ptr_in == grown, "%s: a resident record of "
                      "0x%llx, no large block live", modes[m], (unsigned long long)r->ptr_in);
            if (r->ptr_in == cal) {
                said_cal++;
                cr_expect(r->arg >= 8192 && r->arg <= 16384, "%s: calloc: %llu resident",
                          modes[m], (unsigned long long)r->arg);
            } else if (r->ptr_in == grown) {
                said_grown++;
                cr_expect(r->arg >= 4096 && r->arg < (256u << 10), "%s: realloc: %llu resident",
                          modes[m], (unsigned long long)r->arg);
            }
            cr_expect(i > last_call, "%s: a resident record before the end", modes[m]);
        }
        cr_expect(cal && grown, "%s: the two blocks were not recorded", modes[m]);
        cr_expect_eq(said_cal, 1, "%s", modes[m]);
        cr_expect_eq(said_grown, 1, "%s", modes[m]);
        dmm_trace_free(&t);
        remove_tmpdir();
    }
}

Test(tracer, errno_is_kept_and_failures_are_recorded)
{
    make_tmpdir();
    char *argv[] = { TRACEE, "errno", "0", NULL };
    cr_assert_eq(run(argv, NULL, tmpdir, NULL, NULL, NULL), 0, "plain run");
    cr_assert_eq(run_tracee("errno", "0", NULL), 0, "errno differs under the tracer");
    dmm_trace_t t;
    load_the_trace(&t, NULL);
    int failed_malloc = 0, failed_calloc = 0, failed_posix = 0;
    for (size_t i = 0; i < t.nrecs; i++) {
        const dmm_rec_t *r = &t.recs[i];
        if (!(r->flags & DMM_TRC_RF_FAILED))
            continue;
        failed_malloc += r->op == DMM_TRC_MALLOC && r->errnum == ENOMEM && r->ptr_out == 0;
        failed_calloc += r->op == DMM_TRC_CALLOC && r->errnum == ENOMEM && r->arg == SIZE_MAX / 2;
        failed_posix += r->op == DMM_TRC_POSIX_MEMALIGN && r->errnum == EINVAL && r->arg == 24;
    }
    cr_expect_eq(failed_malloc, 1);
    cr_expect_eq(failed_calloc, 1);
    cr_expect_eq(failed_posix, 1);
    dmm_trace_free(&t);
    remove_tmpdir();
}

Test(tracer, threads_and_cross_thread_frees_in_causal_order)
{
    make_tmpdir();
    cr_assert_eq(run_tracee("threads", "0", NULL), 0);
    dmm_trace_t t;
    load_the_trace(&t, NULL);
    counts_t c;
    count(&t, &c);
    cr_expect_geq(c.op[DMM_TRC_MALLOC], 4 * 1024);
    cr_expect_geq(c.free_nonnull, 4 * 1024);
    cr_expect_eq(c.op[DMM_TRC_THREAD_EXIT], 4);
    cr_expect_geq(c.ntids, 5);
    /* times are nanoseconds (TSC ticks converted by the reader), never
     * running backwards within a thread, and within the run's length */
    cr_expect_eq(t.flags & DMM_TRC_F_NOTIME, 0);
    for (size_t i = 0; i < t.nrecs; i++) {
        cr_assert_lt(t.recs[i].time, 60ull * 1000000000ull);
        for (size_t j = i + 1; j < t.nrecs && j < i + 64; j++)
            if (t.recs[j].tid == t.recs[i].tid) {
                cr_assert_leq(t.recs[i].time, t.recs[j].time + 1000);
                break;
            }
    }
    assert_consistent(&t);
    dmm_trace_free(&t);
    remove_tmpdir();
}

/* Blocks handed from thread to thread: every free is of a block another
 * thread allocated, and glibc gives the addresses one thread freed to the
 * other's mallocs.  Nothing but the trace's numbering orders such a reuse
 * after its free (a multi-threaded process has no count that every call
 * takes: recorder.c's seq_mt), and the trace must still have it so. */
static void check_handoff(const char *mode, const char *n, uint64_t mallocs)
{
    make_tmpdir();
    cr_assert_eq(run_tracee(mode, n, NULL), 0);
    dmm_trace_t t;
    counts_t c;
    load_the_trace(&t, &c);
    cr_expect_geq(c.op[DMM_TRC_MALLOC], mallocs);
    cr_expect_geq(c.free_nonnull, mallocs);
    /* by address: the thread that last obtained it and the one that last
     * gave it up (open addressing; the tracee's live blocks are few) */
    enum { SLOTS = 1 << 20 };
    struct { uint64_t addr; uint32_t got, gave; } *m = calloc(SLOTS, sizeof *m);
    cr_assert_not_null(m);
    uint64_t cross_frees = 0, cross_reuses = 0;
    for (size_t i = 0; i < t.nrecs; i++) {
        const dmm_rec_t *r = &t.recs[i];
        int got = r->op == DMM_TRC_MALLOC && r->size == 48;
        uint64_t a = got ? r->ptr_out : r->op == DMM_TRC_FREE ? r->ptr_in : 0;
        if (!a)
            continue;
        size_t k = (size_t)((a >> 4) * 0x9e3779b97f4a7c15ull >> 44);
        while (m[k].addr && m[k].addr != a)
            k = (k + 1) % SLOTS;
        m[k].addr = a;
        if (got) {
            cross_reuses += m[k].gave && m[k].gave != r->tid;
            m[k].got = r->tid;
        } else {
            cross_frees += m[k].got && m[k].got != r->tid;
            m[k].gave = r->tid;
        }
    }
    free(m);
    cr_expect_geq(cross_frees, mallocs);
    cr_expect_geq(cross_reuses, mallocs / 20, "only %llu addresses freed by one thread were "
                  "reused by another: the test orders too few",
                  (unsigned long long)cross_reuses);
    assert_consistent(&t);
    dmm_trace_free(&t);
    remove_tmpdir();
}

Test(tracer, blocks_handed_between_threads_are_reused_in_causal_order)
{
    check_handoff("handoff", "100000", 200000);
}

/* Twelve threads at once, more than the recorder has order tables for (the
 * rest share one), and a second wave of twelve that takes the tables of the
 * first. */
Test(tracer, blocks_handed_around_many_threads_are_reused_in_causal_order)
{
    check_handoff("handoff12", "10000", 240000);
}

Test(tracer, loses_nothing_when_a_thread_exits)
{
    make_tmpdir();
    cr_assert_eq(run_tracee("threxit", "5000", NULL), 0);
    dmm_trace_t t;
    load_the_trace(&t, NULL);
    /* the thread: 1 + 5000 mallocs, 5001 frees, then its exit record */
    uint32_t tid = 0;
    for (size_t i = 0; i < t.nrecs; i++)
        if (t.recs[i].op == DMM_TRC_MALLOC && t.recs[i].size == 8)
            tid = t.recs[i].tid;
    cr_assert_neq(tid, 0);
    uint64_t m = 0, f = 0, ex = 0;
    for (size_t i = 0; i < t.nrecs; i++)
        if (t.recs[i].tid == tid) {
            m += t.recs[i].op == DMM_TRC_MALLOC && t.recs[i].size == 8;
            f += t.recs[i].op == DMM_TRC_FREE;
            ex += t.recs[i].op == DMM_TRC_THREAD_EXIT;
        }
    cr_expect_geq(m, 5000);
    cr_expect_geq(f, 5001);
    cr_expect_eq(ex, 1);
    assert_consistent(&t);
    dmm_trace_free(&t);
    remove_tmpdir();
}

static void check_fork(int n, const char *const env[])
{
    make_tmpdir();
    char ns[16];
    snprintf(ns, sizeof ns, "%d", n);
    cr_assert_eq(run_tracee("fork", ns, env), 0);
    char names[8][600];
    cr_assert_eq(trace_files(names, 8), 2);
    dmm_trace_t a, b;
    load(names[0], &a);
    load(names[1], &b);
    dmm_trace_t *parent = (a.flags & DMM_TRC_F_FORKED) ? &b : &a;
    dmm_trace_t *child = parent == &a ? &b : &a;
    cr_assert(child->flags & DMM_TRC_F_FORKED);
    cr_expect_eq(child->ppid, parent->pid);
    counts_t cp, cc;
    count(parent, &cp);
    count(child, &cc);
    cr_expect_eq(cp.op[DMM_TRC_REALLOC], 2 * (uint64_t)n);
    cr_expect_eq(cc.op[DMM_TRC_REALLOC], (uint64_t)n);
    cr_expect_eq(cp.op[DMM_TRC_FORK], 1);
    assert_consistent(parent);
    assert_consistent(child);
    dmm_trace_free(&a);
    dmm_trace_free(&b);
    remove_tmpdir();
}

Test(tracer, fork_gives_each_process_its_own_file) { check_fork(200, NULL); }

static void check_forkmt(const char *const env[])
{
    make_tmpdir();
    cr_assert_eq(run_tracee("forkmt", "20", env), 0);
    char names[32][600];
    int n = trace_files(names, 32);
    cr_assert_eq(n, 21, "the parent and 20 children: %d files", n);
    for (int i = 0; i < n; i++) {
        dmm_trace_t t;
        load(names[i], &t);
        if (t.flags & DMM_TRC_F_FORKED) {
            counts_t c;
            count(&t, &c);
            /* the child's 100 mallocs; none of the parent's buffered records */
            cr_expect_eq(c.op[DMM_TRC_MALLOC], 100, "%s", names[i]);
            cr_expect_eq(c.ntids, 1);
        }
        assert_consistent(&t);
        dmm_trace_free(&t);
    }
    remove_tmpdir();
}

Test(tracer, fork_while_another_thread_allocates) { check_forkmt(NULL); }

/* Blocks of a v2 trace file whose flags say they go on from their thread's
 * previous block. */
static int cont_blocks(const char *path)
{
    uint8_t *b;
    size_t len;
    dmm_err_t err;
    cr_assert_eq(dmm_read_file(path, &b, &len, &err), 0, "%s", err.msg);
    cr_assert_geq(len, 64);
    cr_assert_eq(b[8], DMM_TRC_VERSION);
    uint32_t hs = (uint32_t)(b[10] | b[11] << 8), cl;
    memcpy(&cl, b + 48, 4);
    size_t off = (hs + cl + 7) & ~(size_t)7;
    int n = 0;
    while (off + 32 <= len) {
        uint32_t stored, flags;
        memcpy(&stored, b + off + 8, 4);
        memcpy(&flags, b + off + 28, 4);
        n += (flags & DMM_TRC_BF_CONT) != 0;
        off += 32 + (size_t)stored;
    }
    free(b);
    return n;
}

/* A failed exec: the recorder wrote every thread's pending records first,
 * and the busy thread goes on from the middle of its buffer, in a block
 * flagged DMM_TRC_BF_CONT whose differences read right. */
static void check_execfail(int n, const char *const env[])
{
    make_tmpdir();
    char ns[16];
    snprintf(ns, sizeof ns, "%d", n);
    cr_assert_eq(run_tracee("execfail", ns, env), 0);
    char names[4][600];
    cr_assert_eq(trace_files(names, 4), 1);
    dmm_trace_t t;
    load(names[0], &t);
    counts_t c;
    count(&t, &c);
    cr_expect_eq(c.op[DMM_TRC_REALLOC], (uint64_t)n);
    cr_expect_eq(c.ntids, 2);
    cr_expect_eq(c.op[DMM_TRC_EXEC], 1);
    assert_consistent(&t);
    dmm_trace_free(&t);
    cr_assert_gt(cont_blocks(names[0]), 0, "no block went on from an earlier one");
    remove_tmpdir();
}

Test(tracer, a_thread_cut_by_a_failed_exec_continues_its_block) { check_execfail(300, NULL); }

static void check_exec(int n, const char *const env[])
{
    make_tmpdir();
    char ns[16];
    snprintf(ns, sizeof ns, "%d", n);
    cr_assert_eq(run_tracee("exec", ns, env), 0);
    char names[8][600];
    cr_assert_eq(trace_files(names, 8), 2, "a file before and one after the exec");
    dmm_trace_t a, b;
    load(names[0], &a);
    load(names[1], &b);
    counts_t ca, cb;
    count(&a, &ca);
    count(&b, &cb);
    if (cb.op[DMM_TRC_EXEC]) {   /* a is the file of the program after exec */
        counts_t tmp = ca;
        ca = cb;
        cb = tmp;
    }
    cr_expect_eq(a.pid, b.pid);
    cr_expect_eq(ca.op[DMM_TRC_EXEC], 1);
    cr_expect_eq(ca.op[DMM_TRC_REALLOC], (uint64_t)n);
    cr_expect_eq(cb.op[DMM_TRC_REALLOC], (uint64_t)n);
    cr_expect_eq(cb.op[DMM_TRC_EXEC], 0);
    dmm_trace_free(&a);
    dmm_trace_free(&b);
    remove_tmpdir();
}

Test(tracer, exec_flushes_and_the_new_program_writes_its_own_file) { check_exec(150, NULL); }

Test(tracer, call_stacks_and_modules_are_recorded)
{
    make_tmpdir();
    const char *env[] = { "DMM_TRACE_STACK=6", NULL };
    cr_assert_eq(run_tracee("main", "100", env), 0);
    dmm_trace_t t;
    load_the_trace(&t, NULL);
    cr_expect_eq(t.stack_depth, 6);
    cr_assert_gt(t.nstacks, 3, "distinct stacks: %zu", t.nstacks);
    cr_assert_gt(t.nmodules, 1);
    int tracee_module = 0;
    for (size_t i = 0; i < t.nmodules; i++)
        tracee_module |= strstr(t.modules[i].path, "tracee") != NULL;
    cr_expect(tracee_module);
    /* every realloc has a stack whose first frame lies in the tracee */
    size_t with_stack = 0;
    for (size_t i = 0; i < t.nrecs; i++) {
        const dmm_rec_t *r = &t.recs[i];
        if (r->op != DMM_TRC_REALLOC)
            continue;
        cr_assert(r->stack > 0 && r->stack < t.nstacks);
        const dmm_stack_t *s = &t.stacks[r->stack];
        cr_assert_gt(s->nframes, 0);
        cr_assert_leq(s->nframes, 6);
        uint64_t ip = t.frames[s->first];
        int inside = 0;
        for (size_t m = 0; m < t.nmodules; m++)
            if (ip >= t.modules[m].start && ip < t.modules[m].end &&
                strstr(t.modules[m].path, "tracee"))
                inside = 1;
        cr_expect(inside, "frame 0x%llx of a realloc is not in the tracee",
                  (unsigned long long)ip);
        with_stack++;
    }
    cr_expect_eq(with_stack, 100);
    dmm_trace_free(&t);
    remove_tmpdir();
}

/* The stack of every way into the shim starts at the program's call and
 * holds every frame asked for: none of the recorder's own, none of the
 * program's skipped (tracee deep: deep_leaf, under deep_rec 12 times). */
Test(tracer, every_way_in_records_the_programs_whole_stack)
{
    make_tmpdir();
    const char *env[] = { "DMM_TRACE_STACK=8", NULL };
    cr_assert_eq(run_tracee("deep", "20", env), 0);
    dmm_trace_t t;
    load_the_trace(&t, NULL);
    size_t per_op[DMM_TRC_OP_END] = { 0 };
    char name[512];
    for (size_t i = 0; i < t.nrecs; i++) {
        const dmm_rec_t *r = &t.recs[i];
        if (!r->stack)
            continue;
        const dmm_stack_t *s = &t.stacks[r->stack];
        dmm_symbolize(&t, t.frames[s->first], name, sizeof name);
        if (strncmp(name, "deep_leaf+", 10))
            continue;
        cr_assert_eq(s->nframes, 8, "a record of op %u has %u frames", r->op, s->nframes);
        for (uint32_t k = 1; k < 8; k++) {
            dmm_symbolize(&t, t.frames[s->first + k], name, sizeof name);
            cr_assert(!strncmp(name, "deep_rec+", 9), "frame %u of op %u's stack: %s", k,
                      r->op, name);
        }
        per_op[r->op]++;
    }
    /* 20 rounds in each of two threads */
    cr_expect_eq(per_op[DMM_TRC_MALLOC], 3 * 40);
    cr_expect_eq(per_op[DMM_TRC_FREE], 9 * 40, "%zu frees", per_op[DMM_TRC_FREE]);
    static const unsigned once[] = { DMM_TRC_CALLOC, DMM_TRC_REALLOC, DMM_TRC_REALLOCARRAY,
                                     DMM_TRC_MEMALIGN, DMM_TRC_POSIX_MEMALIGN,
                                     DMM_TRC_ALIGNED_ALLOC, DMM_TRC_VALLOC, DMM_TRC_PVALLOC };
    for (size_t k = 0; k < sizeof once / sizeof once[0]; k++)
        cr_expect_eq(per_op[once[k]], 40, "op %u: %zu records", once[k], per_op[once[k]]);
    cr_expect_geq(per_op[DMM_TRC_RELEASE], 40);
    dmm_symbolize_reset();
    dmm_trace_free(&t);
    remove_tmpdir();
}

Test(tracer, zstd_blocks_read_back_the_same)
{
    make_tmpdir();
    const char *env[] = { "DMM_TRACE_COMPRESS=zstd", NULL };
    cr_assert_eq(run_tracee("main", "20000", env), 0);
    char names[8][600];
    cr_assert_eq(trace_files(names, 8), 1);
    dmm_trace_t t;
    load(names[0], &t);
    counts_t c;
    count(&t, &c);
    cr_expect_eq(c.op[DMM_TRC_REALLOC], 20000);
    struct stat st;
    stat(names[0], &st);
    cr_expect_lt((uint64_t)st.st_size, t.nrecs * sizeof(dmm_trc_rec_t) / 3,
                 "compressed %lld bytes for %zu records", (long long)st.st_size, t.nrecs);
    assert_consistent(&t);
    dmm_trace_free(&t);
    remove_tmpdir();
}

/* What `cat /proc/self/maps` under the tracer with env (NULL-ended) shows
 * mapped: bit 0 libunwind, bit 1 libzstd. */
static int libs_mapped(const char *const more_env[])
{
    char file[300], out[300];
    snprintf(file, sizeof file, "DMM_TRACE_FILE=%s/t.%%p.trc", tmpdir);
    snprintf(out, sizeof out, "%s/maps", tmpdir);
    const char *env[8] = { "LD_PRELOAD=" TRACER, file };
    for (int i = 0; more_env[i]; i++)
        env[2 + i] = more_env[i];
    char *argv[] = { "/bin/cat", "/proc/self/maps", NULL };
    cr_assert_eq(run(argv, env, tmpdir, NULL, out, NULL), 0);
    char *m = slurp(out, NULL);
    cr_assert_not_null(strstr(m, "libdmmtrace.so"), "%s", m);
    int got = (strstr(m, "/libunwind.so") != NULL) | (strstr(m, "/libzstd.so") != NULL) << 1;
    free(m);
    return got;
}

/* libunwind and libzstd are opened by the recordings that use them
 * (preload/recorder/optlib.h): every other traced process starts without
 * them, and those that ask still get stacks and compressed blocks (the two
 * tests above). */
Test(tracer, opens_libunwind_and_libzstd_only_when_asked)
{
    make_tmpdir();
    const char *none[] = { "DMM_TRACE_STACK=0", "DMM_TRACE_COMPRESS=none", NULL };
    const char *stacks[] = { "DMM_TRACE_STACK=4", "DMM_TRACE_COMPRESS=none", NULL };
    const char *zstd[] = { "DMM_TRACE_STACK=0", "DMM_TRACE_COMPRESS=zstd", NULL };
    const char *both[] = { "DMM_TRACE_STACK=4", "DMM_TRACE_COMPRESS=zstd:3", NULL };
    cr_expect_eq(libs_mapped(none), 0);
    cr_expect_eq(libs_mapped(stacks), 1);
    cr_expect_eq(libs_mapped(zstd), 2);
    cr_expect_eq(libs_mapped(both), 3);
    remove_tmpdir();
}

/* ---- the writer process (DMM_TRACE_WRITER, preload/recorder/writer.h) --
 * 30 000 rounds of the tracee's pattern are 150 000 records, several of a
 * thread's 64 KiB buffers: each full one goes to the writer. */
#define WRITER_N 30000

/* The tracee's "tracee writers K PID..." line: K, and the first PID. */
static int writers_in(const char *out, int *pid)
{
    char path[320], line[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, out);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    int k = -1;
    *pid = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "tracee writers %d %d", &k, pid) >= 1)
            break;
    fclose(f);
    return k;
}

Test(tracer, the_writer_process_loses_nothing_on_any_end)
{
    static const char *const modes[] = { "main", "exit", "_exit", "abort", "segv" };
    static const char *const zstd[] = { "DMM_TRACE_COMPRESS=zstd", NULL };
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        check_pattern_env(modes[i], WRITER_N, writer_on);
        check_pattern_env(modes[i], WRITER_N, zstd);   /* the writer where 2 CPUs are */
    }
}

Test(tracer, the_writer_process_keeps_threads_forks_and_execs_apart)
{
    check_fork(WRITER_N, writer_on);
    check_forkmt(writer_on);
    check_execfail(WRITER_N, writer_on);
    check_exec(WRITER_N, writer_on);
}

/* Started with the program, named, not a child that wait(2) reports (the tracee
 * fails unless wait says ECHILD), and gone with the program. */
Test(tracer, the_writer_process_is_not_a_child_the_program_waits_for)
{
    static const struct { const char *env; int writers; } cases[] = {
        { "DMM_TRACE_WRITER=yes", 1 },
        { "DMM_TRACE_WRITER=no", 0 },
        { "DMM_TRACE_WRITER=auto", 0 },   /* uncompressed: the thread writes */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        make_tmpdir();
        const char *env[] = { cases[i].env, NULL };
        int st = run_tracee("writers", "30000", env);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status %d", cases[i].env, st);
        int pid;
        cr_expect_eq(writers_in("out", &pid), cases[i].writers, "%s", cases[i].env);
        dmm_trace_t t;
        counts_t c;
        load_the_trace(&t, &c);
        cr_expect_eq(c.op[DMM_TRC_REALLOC], 30000);
        dmm_trace_free(&t);
        remove_tmpdir();
    }
}

/* A program killed (SIGKILL: nothing of it runs again) leaves a trace of
 * every record it made: the writer, which shares its memory, writes the
 * blocks it was handed, then what the buffers still hold and a last clock
 * sync; and ends.
 * n rounds of the pattern: 30 000 fill several buffers, 20 none (the
 * writer runs from the start, not from the first full buffer). */
static void check_killed(const char *mode, int n)
{
    make_tmpdir();
    char ns[16];
    snprintf(ns, sizeof ns, "%d", n);
    int st = run_tracee(mode, ns, writer_on);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %d", st);
    int pid;
    cr_assert_eq(writers_in("out", &pid), 1);
    cr_assert_gt(pid, 0);
    int gone = 0;
    for (int i = 0; i < 300 && !gone; i++) {   /* it looks every 100 ms */
        gone = kill(pid, 0) != 0 && errno == ESRCH;
        if (!gone)
            usleep(10000);
    }
    cr_expect(gone, "the writer %d is still there 3 s after its program died", pid);
    char names[4][600];
    cr_assert_eq(trace_files(names, 4), 1);
    dmm_trace_t t;
    dmm_err_t err;
    cr_assert_eq(dmm_trace_load(names[0], &t, &err), 0, "%s", err.msg);
    counts_t c;
    count(&t, &c);
    cr_expect_eq(c.op[DMM_TRC_REALLOC], (uint64_t)n, "%d rounds", n);
    cr_expect_eq(c.op[DMM_TRC_CALLOC], (uint64_t)n, "%d rounds", n);
    /* the writer's clock sync in place of exit's: times, and a peak RSS */
    cr_expect_eq(t.flags & DMM_TRC_F_NOTIME, 0, "%d rounds: no times", n);
    cr_expect_gt(t.peak_rss, 0, "%d rounds", n);
    cr_expect_not(t.truncated, "%s", t.note);
    assert_consistent(&t);
    dmm_trace_free(&t);
    remove_tmpdir();
}

Test(tracer, the_writer_process_writes_what_it_has_when_the_program_is_killed)
{
    check_killed("killed", 30000);
    check_killed("killed", 20);
}

/* A fork's child starts its writer once it has recorded a little (a child
 * that execs at once pays for none): killed after 2000 rounds (10 k
 * records, in its first buffer), it loses none of them.  Its writer sees it
 * gone within 0.1 s of its death and writes them, then a clock sync (the
 * trace has times from then on): the trace is read again until then. */
Test(tracer, a_killed_fork_child_loses_no_record)
{
    make_tmpdir();
    cr_assert_eq(run_tracee("forkkilled", "2000", writer_on), 0);
    char names[4][600], *child = NULL;
    int done = 0;
    for (int tries = 0; tries < 300 && !done; tries++) {
        if (tries)
            usleep(10000);
        cr_assert_eq(trace_files(names, 4), 2);
        for (int i = 0; i < 2; i++) {
            dmm_trace_t t;
            dmm_err_t err;
            /* not load(): its checks read the file twice, and it may grow
             * in between */
            cr_assert_eq(dmm_trace_load(names[i], &t, &err), 0, "%s", err.msg);
            if (t.flags & DMM_TRC_F_FORKED) {
                child = names[i];
                done = !(t.flags & DMM_TRC_F_NOTIME);
            }
            dmm_trace_free(&t);
        }
    }
    cr_assert(done && child, "the killed child's writer wrote no clock sync in 3 s");
    dmm_trace_t t;
    counts_t c;
    load_counted(child, &t, &c);
    cr_expect_eq(c.op[DMM_TRC_REALLOC], 2000);
    cr_expect_eq(c.op[DMM_TRC_CALLOC], 2000);
    assert_consistent(&t);
    dmm_trace_free(&t);
    remove_tmpdir();
}

/* A vfork's child runs on its parent's memory, the recorder's state
 * included, until it execs or _exits: neither is the end of the parent's
 * recording.  Before, the child's exec closed the parent's write gate (and
 * left its other threads waiting at it for ever), stopped its writer and
 * recorded an exec in its trace. */
static void check_vfork(const char *const env[])
{
    make_tmpdir();
    int n = 3000;
    cr_assert_eq(run_tracee("vfork", "3000", env), 0, "the busy thread stalled or the tracee "
                                                       "failed");
    char names[16][600];
    int k = trace_files(names, 16);
    cr_assert_eq(k, 6, "the tracee and 5 of /bin/true: %d traces", k);
    int found = 0;
    for (int i = 0; i < k; i++) {
        dmm_trace_t t;
        load(names[i], &t);
        counts_t c;
        count(&t, &c);
        if (c.op[DMM_TRC_REALLOC] > 0) {
            found++;
            cr_expect_eq(c.op[DMM_TRC_REALLOC], 6 * (uint64_t)n);
            /* and pthread_create's own */
            cr_expect_geq(c.op[DMM_TRC_CALLOC], 6 * (uint64_t)n);
            cr_expect_leq(c.op[DMM_TRC_CALLOC], 6 * (uint64_t)n + 4);
            cr_expect_eq(c.op[DMM_TRC_EXEC], 0, "the parent's trace says it exec'd");
            cr_expect_eq(c.ntids, 2);
            assert_consistent(&t);
        }
        dmm_trace_free(&t);
    }
    cr_expect_eq(found, 1);
    int pid;
    if (env)   /* the writer runs on */
        cr_expect_eq(writers_in("out", &pid), 1);
    remove_tmpdir();
}

Test(tracer, a_vfork_childs_exec_and__exit_leave_the_parents_recording_alone)
{
    check_vfork(NULL);
    check_vfork(writer_on);
}

/* A fork's child ended by a SIGTERM (at its default action) before it
 * has recorded the 4 KiB that start its writer (a multiprocessing pool's
 * workers, ended so when the pool closes, make some 40 calls each): its
 * records are written first, with its end (times, peak RSS), and it still
 * dies of the SIGTERM. */
Test(tracer, a_fork_child_ended_by_sigterm_early_loses_no_record)
{
    make_tmpdir();
    cr_assert_eq(run_tracee("forktermed", "20", writer_on), 0);
    char path[600];
    snprintf(path, sizeof path, "%s/out", tmpdir);
    char *out = slurp(path, NULL);
    cr_assert_not_null(out);
    cr_expect_not_null(strstr(out, "tracee child ended by SIGTERM: 1\n"), "%s", out);
    free(out);
    char names[4][600];
    cr_assert_eq(trace_files(names, 4), 2);
    int children = 0;
    for (int i = 0; i < 2; i++) {
        dmm_trace_t t;
        load(names[i], &t);
        if (t.flags & DMM_TRC_F_FORKED) {
            children++;
            counts_t c;
            count(&t, &c);
            cr_expect_eq(c.op[DMM_TRC_REALLOC], 20);
            cr_expect_eq(c.op[DMM_TRC_CALLOC], 20);
            cr_expect_eq(t.flags & DMM_TRC_F_NOTIME, 0, "no times");
            cr_expect_gt(t.peak_rss, 0);
            assert_consistent(&t);
        }
        dmm_trace_free(&t);
    }
    cr_expect_eq(children, 1);
    remove_tmpdir();
}

/* A program may put a file of its own on the trace file's descriptor (a
 * shell's `exec 3>file`, any dup2) or close it (a daemon's closefrom): the
 * recorder keeps its descriptors at the top of the range, out of open()'s
 * way, checks before each block that the number still names the trace
 * file, and opens the file again by its path where it does not.  The
 * program's file holds what the program wrote and nothing else, and the
 * trace every record, with the writer process too (whose pipe the program
 * takes over as well), in the parent and in a child forked after. */
static void check_fd_taken(const char *const env[])
{
    make_tmpdir();
    int n = 30000;   /* some 150 k records: blocks before and after */
    cr_assert_eq(run_tracee("fdtaken", "30000", env), 0);
    char path[600];
    snprintf(path, sizeof path, "%s/mine", tmpdir);
    size_t len;
    char *mine = slurp(path, &len);
    cr_assert_not_null(mine);
    cr_expect(len == 15 && !memcmp(mine, "mine\nchild\nend\n", 15),
              "the program's own file holds %zu bytes, from \"%.20s\"", len, mine);
    free(mine);
    char names[4][600];
    cr_assert_eq(trace_files(names, 4), 2);
    for (int i = 0; i < 2; i++) {
        dmm_trace_t t;
        load(names[i], &t);
        counts_t c;
        count(&t, &c);
        uint64_t want = (t.flags & DMM_TRC_F_FORKED) ? 100 : (uint64_t)n;
        cr_expect_eq(c.op[DMM_TRC_REALLOC], want, "%s", names[i]);
        cr_expect_eq(c.op[DMM_TRC_CALLOC], want, "%s", names[i]);
        assert_consistent(&t);
        dmm_trace_free(&t);
    }
    remove_tmpdir();
}

Test(tracer, a_program_that_takes_the_trace_files_descriptor_keeps_its_file)
{
    check_fd_taken(NULL);
    check_fd_taken(writer_on);
}

Test(tracer, a_program_that_closes_every_descriptor_loses_no_record)
{
    check_pattern_env("fdclosed", 30000, NULL);
    check_pattern_env("fdclosed", 30000, writer_on);
}

/* Its trace file moved away too, the file does not open again: the
 * recorder says so once, on stderr, and creates nothing in its place; the
 * moved file reads, whole, up to the block written before. */
Test(tracer, a_trace_file_that_does_not_open_again_is_said_and_never_made_anew)
{
    make_tmpdir();
    char path[600];
    snprintf(path, sizeof path, "%s/err", tmpdir);
    cr_assert_eq(run_tracee_err("fdlost", "30000", NULL, path), 0);
    char names[4][600];
    cr_expect_eq(trace_files(names, 4), 0, "a trace file made anew");
    char *out = slurp(path, NULL);
    cr_assert_not_null(out);
    char want[700];
    snprintf(want, sizeof want,
             "dmm: the program closed or took over the trace file's descriptor, and %s/t.", tmpdir);
    cr_expect_not_null(strstr(out, want), "stderr: %s", out);
    cr_expect_not_null(strstr(out, ".trc does not open again: the records from here on are "
                                   "lost\n"), "%s", out);
    const char *said = strstr(out, "dmm: ");
    cr_expect(said && !strstr(said + 1, "dmm: "), "said more than once: %s", out);
    free(out);
    DIR *d = opendir(tmpdir);
    cr_assert_not_null(d);
    struct dirent *e;
    char moved[600] = "";
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".trc.moved"))
            snprintf(moved, sizeof moved, "%s/%s", tmpdir, e->d_name);
    closedir(d);
    cr_assert(moved[0], "no moved trace");
    dmm_trace_t t;
    counts_t c;
    load_counted(moved, &t, &c);
    cr_expect_gt(c.op[DMM_TRC_REALLOC], 0);
    cr_expect_leq(c.op[DMM_TRC_REALLOC], 15000);
    dmm_trace_free(&t);
    remove_tmpdir();
}

/* The program's end of the writer's pipe closed with the rest, the writer
 * goes on, and looks for the program's death alone: killed later, the
 * program loses no record either. */
Test(tracer, a_program_that_closes_every_descriptor_and_is_killed_loses_no_record)
{
    check_killed("fdclosedkilled", 30000);
}

Test(tracer, never_overwrites_and_never_follows_symlinks)
{
    make_tmpdir();
    char path[300], env_file[320], link[300], target[300];
    snprintf(path, sizeof path, "%s/fixed.trc", tmpdir);
    snprintf(env_file, sizeof env_file, "DMM_TRACE_FILE=%s", path);
    FILE *f = fopen(path, "w");
    fputs("precious", f);
    fclose(f);
    const char *env[] = { "LD_PRELOAD=" TRACER, env_file, NULL };
    char *argv[] = { TRACEE, "main", "10", NULL };
    char errf[300];
    snprintf(errf, sizeof errf, "%s/stderr", tmpdir);
    cr_assert_eq(run(argv, env, tmpdir, NULL, NULL, errf), 0);
    char *s = slurp(path, NULL);
    cr_expect_str_eq(s, "precious");
    free(s);
    char alt[300];
    snprintf(alt, sizeof alt, "%s/fixed.1.trc", tmpdir);
    struct stat st;
    cr_assert_eq(stat(alt, &st), 0, "the trace went to fixed.1.trc");
    cr_expect_eq(st.st_mode & 0777, 0600);

    /* a symlink where the trace would go is not followed */
    snprintf(target, sizeof target, "%s/target", tmpdir);
    snprintf(link, sizeof link, "%s/link.trc", tmpdir);
    f = fopen(target, "w");
    fputs("untouched", f);
    fclose(f);
    cr_assert_eq(symlink(target, link), 0);
    snprintf(env_file, sizeof env_file, "DMM_TRACE_FILE=%s", link);
    cr_assert_eq(run(argv, env, tmpdir, NULL, NULL, errf), 0);
    s = slurp(target, NULL);
    cr_expect_str_eq(s, "untouched");
    free(s);
    remove_tmpdir();
}

Test(tracer, unknown_dmm_options_are_reported_once)
{
    make_tmpdir();
    char file[300], errf[300];
    snprintf(file, sizeof file, "DMM_TRACE_FILE=%s/t.%%p.trc", tmpdir);
    snprintf(errf, sizeof errf, "%s/stderr", tmpdir);
    const char *env[] = { "LD_PRELOAD=" TRACER, file, "DMM_TRACE_STAKC=4", NULL };
    char *argv[] = { TRACEE, "threads", "0", NULL };
    cr_assert_eq(run(argv, env, tmpdir, NULL, NULL, errf), 0);
    char *s = slurp(errf, NULL);
    cr_assert_not_null(strstr(s, "DMM_TRACE_STAKC"));
    cr_expect_null(strstr(strstr(s, "DMM_TRACE_STAKC") + 1, "DMM_TRACE_STAKC"),
                   "reported once: %s", s);
    free(s);
    remove_tmpdir();
}

/* ---- real programs, against a plain run and against glibc's mtrace ---- */

typedef struct call {
    char kind;          /* '+' new block, '-' free, 'r' realloc of a block */
    uint64_t size;
} call_t;

/* The calls of a .trc between the two markers of mtrace_on.c, in the form
 * mtrace writes them: realloc(NULL, n) is '+', free(NULL) is not written. */
static size_t trc_window(const dmm_trace_t *t, call_t *out, size_t max)
{
    size_t n = 0;
    int in = 0;
    for (size_t i = 0; i < t->nrecs; i++) {
        const dmm_rec_t *r = &t->recs[i];
        call_t c = { 0, 0 };
        if (dmm_op_is_alloc(r->op)) {
            c = (call_t){ '+', r->size };
        } else if (r->op == DMM_TRC_FREE) {
            if (r->ptr_in)
                c = (call_t){ '-', 0 };
        } else if (r->op == DMM_TRC_REALLOC || r->op == DMM_TRC_REALLOCARRAY) {
            if (!r->ptr_in)
                c = (call_t){ '+', r->size };
            else if (!r->ptr_out && r->size == 0)
                c = (call_t){ '-', 0 };
            else
                c = (call_t){ 'r', r->size };
        }
        if (!c.kind)
            continue;
        if (c.kind == '+' && c.size == 1234567) {
            in = 1;
            continue;
        }
        if (c.kind == '+' && c.size == 1234568)
            break;
        if (in && n < max)
            out[n++] = c;
    }
    return n;
}

/* The same window of an mtrace file.  glibc's end-of-process cleanup
 * (__libc_freeres, which only an mtrace run does) ends the window early:
 * its frees come from libc's __libc_freeres_fn section [fr_lo, fr_hi). */
static size_t mtrace_window(const char *path, uint64_t fr_lo, uint64_t fr_hi,
                            call_t *out, size_t max)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "no mtrace output %s", path);
    char line[4096];
    size_t n = 0;
    int in = 0;
    while (fgets(line, sizeof line, f)) {
        char *op = NULL;
        for (char *p = line; *p; p++)
            if ((*p == '+' || *p == '-' || *p == '>' || *p == '<' || *p == '!') &&
                p > line && p[-1] == ' ' && p[1] == ' ') {
                op = p;
                break;
            }
        if (!op || *op == '<' || *op == '!')
            continue;
        char *lib = strstr(line, "libc.so.6:");
        if (lib && lib < op) {
            char *br = strchr(lib, '[');
            uint64_t off = br ? strtoull(br + 1, NULL, 16) : 0;
            if ((off >= fr_lo && off < fr_hi) || strstr(line, "__libc_freeres"))
                break;
        }
        call_t c;
        char *a = op + 2;
        char *end;
        strtoull(a, &end, 16);
        uint64_t size = strtoull(end, NULL, 16);
        if (*op == '+')
            c = (call_t){ '+', size };
        else if (*op == '-')
            c = (call_t){ '-', 0 };
        else
            c = (call_t){ 'r', size };
        if (c.kind == '+' && c.size == 1234567) {
            in = 1;
            continue;
        }
        if (c.kind == '+' && c.size == 1234568)
            break;
        if (in && n < max)
            out[n++] = c;
    }
    fclose(f);
    return n;
}

static void freeres_section(uint64_t *lo, uint64_t *hi)
{
    *lo = *hi = 0;
    FILE *p = popen("objdump -h /lib/x86_64-linux-gnu/libc.so.6", "r");
    cr_assert_not_null(p);
    char line[512];
    while (fgets(line, sizeof line, p)) {
        char name[128];
        unsigned long long size, vma;
        if (sscanf(line, " %*d %127s %llx %llx", name, &size, &vma) == 3 &&
            !strcmp(name, "__libc_freeres_fn")) {
            *lo = vma;
            *hi = vma + size;
        }
    }
    pclose(p);
    cr_assert_gt(*hi, 0, "objdump found no __libc_freeres_fn section in libc");
}

/* Run argv plainly, under the tracer and under mtrace (each with the marker
 * library); outputs must be equal, and so must the calls seen between the
 * markers: in order when `ordered`, as counts per kind otherwise (threads). */
static void oracle(char *const argv[], const char *in, int ordered)
{
    make_tmpdir();
    char out_plain[300], out_trace[300], out_mtrace[300], tfile[330];
    snprintf(out_plain, sizeof out_plain, "%s/out.plain", tmpdir);
    snprintf(out_trace, sizeof out_trace, "%s/out.trace", tmpdir);
    snprintf(out_mtrace, sizeof out_mtrace, "%s/out.mtrace", tmpdir);
    snprintf(tfile, sizeof tfile, "DMM_TRACE_FILE=%s/run.%%p.trc", tmpdir);
    /* Programs copy their environment, so the two runs that are compared
     * get environments of the same sizes: same variables, preload paths of
     * the same length (symlinks in tmpdir). */
    char lt[330], lm[330], lk[330], pre_t[700], pre_m[700], pre_p[400], mf0[330], mf1[330];
    snprintf(lt, sizeof lt, "%s/t.so", tmpdir);
    snprintf(lm, sizeof lm, "%s/m.so", tmpdir);
    snprintf(lk, sizeof lk, "%s/o.so", tmpdir);
    cr_assert_eq(symlink(TRACER, lt), 0);
    cr_assert_eq(symlink(MALLOC_DEBUG, lm), 0);
    cr_assert_eq(symlink(MTRACEON, lk), 0);
    snprintf(pre_t, sizeof pre_t, "LD_PRELOAD=%s:%s", lt, lk);
    snprintf(pre_m, sizeof pre_m, "LD_PRELOAD=%s:%s", lm, lk);
    snprintf(pre_p, sizeof pre_p, "LD_PRELOAD=%s", lk);
    snprintf(mf0, sizeof mf0, "MALLOC_TRACE=%s/m0.mtrace", tmpdir);
    snprintf(mf1, sizeof mf1, "MALLOC_TRACE=%s/m1.mtrace", tmpdir);
    const char *plain_env[] = { pre_p, "PYTHONHASHSEED=0", "PERL_HASH_SEED=0", "PERL_PERTURB_KEYS=0", mf0, tfile, NULL };
    const char *trace_env[] = { pre_t, "PYTHONHASHSEED=0", "PERL_HASH_SEED=0", "PERL_PERTURB_KEYS=0", mf0, tfile, NULL };
    const char *mtrace_env[] = { pre_m, "PYTHONHASHSEED=0", "PERL_HASH_SEED=0", "PERL_PERTURB_KEYS=0", mf1, tfile, NULL };
    int a = run(argv, plain_env, tmpdir, in, out_plain, NULL);
    int b = run(argv, trace_env, tmpdir, in, out_trace, NULL);
    int c = run(argv, mtrace_env, tmpdir, in, out_mtrace, NULL);
    cr_assert_eq(a, b, "%s: exit status %d plain, %d traced", argv[0], a, b);
    cr_assert_eq(a, c);
    size_t la, lb;
    char *sa = slurp(out_plain, &la), *sb = slurp(out_trace, &lb);
    cr_assert_gt(la, 0, "%s printed nothing", argv[0]);
    cr_assert(la == lb && memcmp(sa, sb, la) == 0, "%s: output differs under the tracer", argv[0]);
    free(sa);
    free(sb);

    char names[8][600];
    cr_assert_eq(trace_files(names, 8), 1, "%s: one trace file", argv[0]);
    dmm_trace_t t;
    load(names[0], &t);
    assert_consistent(&t);
    size_t max = 4000000;
    call_t *ct = malloc(max * sizeof *ct), *cm = malloc(max * sizeof *cm);
    size_t nt = trc_window(&t, ct, max);
    uint64_t lo, hi;
    freeres_section(&lo, &hi);
    char mpath[330];
    snprintf(mpath, sizeof mpath, "%s/m1.mtrace", tmpdir);
    size_t nm = mtrace_window(mpath, lo, hi, cm, max);
    cr_assert_gt(nt, 10, "%s: only %zu calls seen", argv[0], nt);
    if (ordered) {
        cr_expect_eq(nt, nm, "%s: %zu calls traced, %zu in mtrace", argv[0], nt, nm);
        size_t k = 0;
        while (k < nt && k < nm && ct[k].kind == cm[k].kind && ct[k].size == cm[k].size)
            k++;
        cr_expect(k == nt && k == nm, "%s: call %zu differs: traced %c %llu, mtrace %c %llu",
                  argv[0], k, k < nt ? ct[k].kind : '?',
                  (unsigned long long)(k < nt ? ct[k].size : 0), k < nm ? cm[k].kind : '?',
                  (unsigned long long)(k < nm ? cm[k].size : 0));
    } else {
        size_t kt[3] = { 0 }, km[3] = { 0 };
        for (size_t i = 0; i < nt; i++)
            kt[ct[i].kind == '+' ? 0 : ct[i].kind == '-' ? 1 : 2]++;
        for (size_t i = 0; i < nm; i++)
            km[cm[i].kind == '+' ? 0 : cm[i].kind == '-' ? 1 : 2]++;
        cr_expect(kt[0] == km[0] && kt[1] == km[1] && kt[2] == km[2],
                  "%s: traced %zu/%zu/%zu, mtrace %zu/%zu/%zu (alloc/free/realloc)", argv[0],
                  kt[0], kt[1], kt[2], km[0], km[1], km[2]);
    }
    free(ct);
    free(cm);
    dmm_trace_free(&t);
    remove_tmpdir();
}

static int have(const char *path)
{
    return access(path, X_OK) == 0;
}

static void write_input(const char *name, int lines)
{
    char path[300];
    snprintf(path, sizeof path, "/tmp/dmm-test-input-%s", name);
    write_input_file(path, lines);
}

Test(tracer_programs, sort_matches_mtrace_call_for_call)
{
    write_input("sort", 20000);
    char *argv[] = { "/usr/bin/sort", "/tmp/dmm-test-input-sort", NULL };
    oracle(argv, NULL, 1);
}

Test(tracer_programs, sort_with_threads_matches_mtrace_counts)
{
    write_input("psort", 200000);
    char *argv[] = { "/usr/bin/sort", "--parallel=2", "-S", "2M", "/tmp/dmm-test-input-psort", NULL };
    oracle(argv, NULL, 0);
}

Test(tracer_programs, python3_matches_mtrace_call_for_call)
{
    if (!have("/usr/bin/python3"))
        cr_skip_test("no /usr/bin/python3");
    char *argv[] = { "/usr/bin/python3", "-S", "-c",
                     "import json\n"
                     "d = {str(i): [i] * (i % 7) for i in range(3000)}\n"
                     "s = json.dumps(d, sort_keys=True)\n"
                     "print(len(s), sum(len(v) for v in json.loads(s).values()))\n",
                     NULL };
    oracle(argv, NULL, 1);
}

Test(tracer_programs, perl_matches_mtrace_call_for_call)
{
    if (!have("/usr/bin/perl"))
        cr_skip_test("no perl");
    char *argv[] = { "/usr/bin/perl", "-e",
                     "my %h; $h{$_ * 7 % 1000} .= 'x' x ($_ % 50) for 1 .. 20000;"
                     "print join(',', map { length $h{$_} } sort { $a <=> $b } keys %h), \"\\n\";",
                     NULL };
    oracle(argv, NULL, 1);
}

Test(tracer_programs, sqlite3_matches_mtrace_call_for_call)
{
    if (!have("/usr/bin/sqlite3"))
        cr_skip_test("no sqlite3");
    char *argv[] = { "/usr/bin/sqlite3", ":memory:",
                     "create table t(a integer, b text);"
                     "with recursive c(x) as (select 1 union all select x + 1 from c where x < 20000)"
                     " insert into t select x, 'k' || x from c;"
                     "create index i on t(b);"
                     "select count(*), sum(a), max(b) from t where a % 3 = 0;",
                     NULL };
    oracle(argv, NULL, 1);
}

Test(tracer_programs, git_matches_mtrace_call_for_call)
{
    if (!have("/usr/bin/git"))
        cr_skip_test("no git");
    write_input("git", 5000);
    char *argv[] = { "/usr/bin/git", "hash-object", "--stdin", NULL };
    oracle(argv, "/tmp/dmm-test-input-git", 1);
}

/* python3's subprocess starts its children with vfork (3.10 on), whose
 * child calls execve through the tracer's shim: with a second thread
 * allocating the while, the old tracer left that thread waiting for ever
 * at its write gate (tracer::a_vfork_childs_exec_and__exit_leave_the_
 * parents_recording_alone has the mechanism) once it had filled a buffer
 * (its 1 ms rests keep the trace small).  Here, as a user runs it,
 * with and without the writer process: it ends, and its trace holds both
 * threads' records and no exec. */
static void python_thread_and_subprocess(const char *writer)
{
    make_tmpdir();
    char file[300], out[320];
    snprintf(file, sizeof file, "DMM_TRACE_FILE=%s/t.%%p.trc", tmpdir);
    snprintf(out, sizeof out, "%s/out", tmpdir);
    const char *env[] = { "LD_PRELOAD=" TRACER, file, writer, NULL };
    char *argv[] = { "/usr/bin/python3", "-S", "-c",
                     "import threading, subprocess, time\n"
                     "stop = False\n"
                     "def busy():\n"
                     "    while not stop:\n"
                     "        x = [bytes(1000) for _ in range(100)]\n"
                     "        time.sleep(0.001)\n"
                     "t = threading.Thread(target=busy)\n"
                     "t.start()\n"
                     "for i in range(5):\n"
                     "    subprocess.run(['/bin/true'])\n"
                     "time.sleep(0.3)\n"
                     "stop = True\n"
                     "t.join()\n"
                     "print('done')\n",
                     NULL };
    int st = run_limited(argv, env, tmpdir, NULL, out, NULL, 60, 0);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: python3 did not end (status %#x)",
              writer, st);
    char names[16][600];
    int k = trace_files(names, 16), best = -1;
    off_t most = 0;
    for (int i = 0; i < k; i++) {   /* python3's, the largest */
        struct stat sb;
        if (stat(names[i], &sb) == 0 && sb.st_size > most) {
            most = sb.st_size;
            best = i;
        }
    }
    cr_assert_geq(best, 0);
    dmm_trace_t t;
    load(names[best], &t);
    counts_t c;
    count(&t, &c);
    cr_expect_eq(c.op[DMM_TRC_EXEC], 0, "%s: python3's trace says it exec'd", writer);
    cr_expect_geq(c.ntids, 2, "%s", writer);
    dmm_trace_free(&t);
    remove_tmpdir();
}

Test(tracer_programs, python3_with_a_thread_and_subprocess_runs_to_its_end)
{
    if (!have("/usr/bin/python3"))
        cr_skip_test("no /usr/bin/python3");
    python_thread_and_subprocess("DMM_TRACE_WRITER=no");
    python_thread_and_subprocess("DMM_TRACE_WRITER=yes");
}
