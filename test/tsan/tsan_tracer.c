/* tsan_tracer.c - the recording code of libdmmtrace.so under ThreadSanitizer.
 *
 *   DMM_TRACE_FILE=DIR/t.%p.trc tsan_tracer          run and check
 *   tsan_tracer --record EXPECT                       the recording process
 *
 * The tracer's writer (preload/recorder/recorder.c, with preload/common/options.c and
 * tracer/crc32.c) is built with -fsanitize=thread into a shared library of
 * its own, as in libdmmtrace.so but without the malloc shim: TSan brings its
 * own malloc, so the driver calls the writer's API (preload/recorder/recorder.h) the way
 * preload/recorder/trace_shim.c does, with made-up addresses.
 *
 * The recording process, a new program started by the checking one:
 *   - the main thread records while the process is single-threaded (the
 *     sequence number is a plain add then; after, each thread's clock);
 *   - four workers record malloc and free pairs through call paths of
 *     different depths (so that several threads define the same call stack
 *     at once in the call-site table), hand every fourth address to another
 *     thread to free (causal order across threads), and exit with records
 *     still in their buffers (the thread-exit flush); a pthread key of ours,
 *     created after the tracer's, frees one more block after the tracer's
 *     exit handler ran (the write-through buffer of an exiting thread);
 *   - worker 0 forks half-way while the others record; the child records
 *     FORK_RECS calls and exits (a file of its own);
 *   - worker 1 flushes every thread's buffer now and then while they fill
 *     them (what exec and _exit do);
 *   - a straggler thread records until the process is gone: main reads how
 *     many of its records were complete, returns from main, and every one
 *     of those must be in the file (the flush at exit);
 *   - EXPECT receives the child's pid and the straggler's count.
 * The checking process then reads both traces with the trace reader
 * (tracer/format/load.c, trc_read.c) and checks that every record is there
 * exactly once, with its thread, in an order consistent with causality,
 * and that every call stack is defined once.  Any fault makes the exit
 * status non-zero; a data race makes TSan stop the run. */
#include "tracer/format/trace.h"
#include "preload/recorder/recorder.h"
#include "tracer/format/trcfmt.h"
#include "tracer/format/load.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;
extern char __libc_single_threaded;

enum {
    WORKERS = 4,
    RECS = 6000,        /* per worker: more than one buffer (4096 slots) */
    MAIN_RECS = 100,    /* by the main thread, before and after the workers */
    FORK_RECS = 300,    /* by the forked child */
    MAIL = 64,          /* mailbox slots for addresses freed by another thread */
    DEPTHS = 5,         /* distinct call paths */
};

/* Who recorded a malloc, and its index, in its size and in its made-up
 * address.  Recorders: 0..WORKERS-1 workers, then these. */
enum { R_MAIN = 16, R_MAIN_LATE, R_STRAGGLER, R_CHILD, R_KEY };
#define SIZE_OF(who, i) (((uint64_t)(who) << 32) | (uint64_t)(i))
#define ADDR_MARK       (1ull << 60)
#define ADDR_OF(who, i) (ADDR_MARK | (uint64_t)(who) << 40 | (uint64_t)(i) << 4)
#define ADDR_WHO(a)     (((a) >> 40) & 0xff)
#define ADDR_INDEX(a)   (((a) >> 4) & 0xfffffffffull)

static int g_failures;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    /* the first few say what went wrong; the count says how much */
    if (__atomic_fetch_add(&g_failures, 1, __ATOMIC_RELAXED) >= 20)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tsan_tracer: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

/* ---- recording -------------------------------------------------------- */

/* As trace_shim.c records: seq after a call that obtains an address,
 * before one that gives it up. */
static void rec_malloc(int who, uint32_t i)
{
    if (!dmm_tw_enter()) {
        fail("dmm_tw_enter() refused a record (recorder %d)", who);
        return;
    }
    void *p = (void *)(uintptr_t)ADDR_OF(who, i);
    dmm_tw_record(DMM_TRC_MALLOC, dmm_tw_seq_at(p), SIZE_OF(who, i), 0, NULL, p, 0);
    dmm_tw_leave();
}

static void rec_free(uint64_t addr)
{
    if (!dmm_tw_enter()) {
        fail("dmm_tw_enter() refused a free");
        return;
    }
    void *p = (void *)(uintptr_t)addr;
    dmm_tw_record(DMM_TRC_FREE, dmm_tw_seq_at(p), 0, 0, p, NULL, 0);
    dmm_tw_leave();
}

/* Record from `depth` frames further down: each depth is its own call
 * stack, which all workers meet. */
static __attribute__((noinline)) void rec_at_depth(int depth, int who, uint32_t i)
{
    if (depth > 0) {
        rec_at_depth(depth - 1, who, i);
        __asm__ volatile("" ::: "memory");   /* no tail call: keep the frame */
        return;
    }
    rec_malloc(who, i);
}

static uint64_t g_mail[MAIL];      /* addresses to free, exchanged atomically */
static pthread_key_t g_key;
static char g_expect[1024];

/* Our key was created after the tracer's, so this runs after the tracer's
 * thread-exit flush: the record goes through the exiting thread's small
 * buffer. */
static void key_destructor(void *arg)
{
    uint32_t who = (uint32_t)(uintptr_t)arg - 1;
    rec_malloc(R_KEY, who);
    rec_free(ADDR_OF(R_KEY, who));
}

static void record_child(void)
{
    for (uint32_t i = 0; i < FORK_RECS; i++)
        rec_malloc(R_CHILD, i);
}

static pid_t g_child;

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    pthread_setspecific(g_key, (void *)(uintptr_t)(id + 1));
    uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 3);
    for (uint32_t i = 0; i < RECS; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        rec_at_depth((int)(x % DEPTHS), id, i);
        uint64_t a = ADDR_OF(id, i);
        if (i % 4 == 0)   /* someone else frees it */
            a = __atomic_exchange_n(&g_mail[(x >> 8) % MAIL], a, __ATOMIC_ACQ_REL);
        if (a)
            rec_free(a);
        if (id == 0 && i == RECS / 2) {
            fflush(NULL);
            pid_t pid = fork();
            if (pid < 0) {
                fail("fork: %s", strerror(errno));
            } else if (pid == 0) {
                record_child();
                exit(0);   /* the library destructor writes the child's file */
            } else {
                int st = 0;
                if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
                    fail("the forked child failed (status %#x)", st);
                g_child = pid;
            }
        }
        if (id == 1 && i % 700 == 0)
            dmm_tw_flush_all(0);
    }
    return NULL;
}

static uint32_t g_straggled;   /* records the straggler completed (atomic) */
static int g_exiting;          /* main is about to return (atomic) */

/* Records at a steady pace until main returns, then AFTER_EXIT more,
 * slowly, while exit runs the tracer's final flush; then waits for the end.
 * (TSan's exit handler, which runs after the library destructors, waits
 * for live threads, so the process ends with no record half-written.) */
enum { AFTER_EXIT = 200, STRAGGLER_MAX = 1u << 22 };

static void *straggler(void *arg)
{
    (void)arg;
    const struct timespec tick = { 0, 1000000 }, step = { 0, 50000 };
    uint32_t after = 0;
    for (uint32_t i = 0; i < STRAGGLER_MAX && after < AFTER_EXIT; i++) {
        rec_malloc(R_STRAGGLER, i);
        __atomic_store_n(&g_straggled, i + 1, __ATOMIC_RELEASE);
        if (__atomic_load_n(&g_exiting, __ATOMIC_ACQUIRE)) {
            after++;
            nanosleep(&step, NULL);
        } else if (i % 16 == 15) {
            nanosleep(&tick, NULL);
        }
    }
    for (;;)
        pause();
    return NULL;
}

static int record(void)
{
    if (!__libc_single_threaded)
        fail("the recording process is not single-threaded at the start");
    for (uint32_t i = 0; i < MAIN_RECS; i++)
        rec_malloc(R_MAIN, i);
    if (pthread_key_create(&g_key, key_destructor) != 0)
        fail("pthread_key_create failed");
    pthread_t th[WORKERS], st;
    for (int i = 0; i < WORKERS; i++)
        pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    pthread_create(&st, NULL, straggler, NULL);
    for (int i = 0; i < WORKERS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < MAIL; i++)
        if (g_mail[i])
            rec_free(g_mail[i]);
    for (uint32_t i = 0; i < MAIN_RECS; i++)
        rec_malloc(R_MAIN_LATE, i);
    while (__atomic_load_n(&g_straggled, __ATOMIC_ACQUIRE) < 1000)
        sched_yield();
    /* every straggler record up to here must reach the file */
    uint32_t done = __atomic_load_n(&g_straggled, __ATOMIC_ACQUIRE);
    char line[64];
    int n = snprintf(line, sizeof line, "%d %u\n", (int)g_child, done);
    int fd = open(g_expect, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || write(fd, line, (size_t)n) != n)
        fail("cannot write %s", g_expect);
    close(fd);
    __atomic_store_n(&g_exiting, 1, __ATOMIC_RELEASE);
    return __atomic_load_n(&g_failures, __ATOMIC_RELAXED) ? 1 : 0;
}

/* ---- checking --------------------------------------------------------- */

static int load(const char *path, dmm_trace_t *t)
{
    dmm_err_t err;
    if (dmm_trace_load(path, t, &err) != 0) {
        fail("%s", err.msg);
        return -1;
    }
    if (t->truncated)
        fail("%s: cut short: %s", path, t->note);
    return 0;
}

/* The path the writer gave process pid, from the DMM_TRACE_FILE template. */
static void trace_path(char *out, size_t cap, pid_t pid)
{
    const char *tmpl = getenv("DMM_TRACE_FILE");
    const char *p = strstr(tmpl, "%p");
    snprintf(out, cap, "%.*s%d%s", (int)(p - tmpl), tmpl, (int)pid, p + 2);
}

typedef struct seen {
    uint64_t seq;      /* of its malloc, +1 (0 = not seen) */
    uint32_t tid;
    uint8_t  freed;
} seen_t;

static void check_main_trace(const char *path, uint32_t straggled)
{
    dmm_trace_t t;
    if (load(path, &t) != 0)
        return;
    static seen_t w[WORKERS][RECS];
    static seen_t other[R_KEY + 1][MAIN_RECS];
    static uint8_t strag[STRAGGLER_MAX];
    uint32_t wtid[WORKERS] = { 0 };
    size_t exits = 0, forks = 0, key_frees = 0;
    /* seqs rise within each thread; two threads' records may share one */
    struct { uint32_t tid; uint64_t seq; } last[64];
    size_t nlast = 0;
    for (size_t k = 0; k < t.nrecs; k++) {
        const dmm_rec_t *r = &t.recs[k];
        size_t l = 0;
        while (l < nlast && last[l].tid != r->tid)
            l++;
        if (l < nlast && r->seq <= last[l].seq)
            fail("record %zu of thread %u shares or reverses a sequence number (%llu)", k,
                 r->tid, (unsigned long long)r->seq);
        if (l == nlast && nlast < 64)
            last[nlast++].tid = r->tid;
        if (l < nlast)
            last[l].seq = r->seq;
        if (t.stack_depth && r->stack >= t.nstacks)
            fail("record %zu names stack %u of %zu", k, r->stack, t.nstacks);
        if (r->op == DMM_TRC_THREAD_EXIT) {
            exits++;
            continue;
        }
        if (r->op == DMM_TRC_FORK) {
            forks++;
            continue;
        }
        uint64_t addr = r->op == DMM_TRC_MALLOC ? r->ptr_out : r->ptr_in;
        uint64_t who = ADDR_WHO(addr), i = ADDR_INDEX(addr);
        if ((r->op != DMM_TRC_MALLOC && r->op != DMM_TRC_FREE) ||
            (addr & ~0xfffffffffff0ull) != ADDR_MARK) {
            fail("record %zu: unexpected %s of %#llx", k, dmm_op_name(r->op),
                 (unsigned long long)addr);
            continue;
        }
        seen_t *s = NULL;
        if (who < WORKERS && i < RECS) {
            s = &w[who][i];
        } else if (who == R_STRAGGLER && i < sizeof strag) {
            if (r->op == DMM_TRC_MALLOC && strag[i]++)
                fail("straggler record %llu twice", (unsigned long long)i);
            continue;
        } else if (who >= R_MAIN && who <= R_KEY && who != R_STRAGGLER && who != R_CHILD &&
                   i < MAIN_RECS) {
            s = &other[who][i];
        } else {
            fail("record %zu: address %#llx of no recorder", k, (unsigned long long)addr);
            continue;
        }
        if (r->op == DMM_TRC_MALLOC) {
            if (s->seq)
                fail("malloc %llu of recorder %llu recorded twice", (unsigned long long)i,
                     (unsigned long long)who);
            if (r->size != SIZE_OF(who, i))
                fail("malloc %llu of recorder %llu has size %#llx", (unsigned long long)i,
                     (unsigned long long)who, (unsigned long long)r->size);
            s->seq = r->seq + 1;
            s->tid = r->tid;
            if (who < WORKERS) {
                if (!wtid[who])
                    wtid[who] = r->tid;
                else if (wtid[who] != r->tid)
                    fail("worker %llu's records carry threads %u and %u",
                         (unsigned long long)who, wtid[who], r->tid);
                if (t.stack_depth && !r->stack)
                    fail("worker %llu's malloc %llu has no call stack",
                         (unsigned long long)who, (unsigned long long)i);
            }
        } else {
            if (!s->seq)
                fail("free of %#llx comes before its malloc", (unsigned long long)addr);
            if (s->freed++)
                fail("%#llx freed twice", (unsigned long long)addr);
            if (who == R_KEY)
                key_frees++;
        }
    }
    for (int a = 0; a < WORKERS; a++)
        for (int i = 0; i < RECS; i++)
            if (!w[a][i].seq || !w[a][i].freed)
                fail("worker %d's malloc %d %s", a, i,
                     !w[a][i].seq ? "is missing" : "was never freed");
    for (int i = 0; i < MAIN_RECS; i++) {
        if (!other[R_MAIN][i].seq || !other[R_MAIN_LATE][i].seq)
            fail("main thread's record %d is missing", i);
        if (i < WORKERS && (!other[R_KEY][i].seq || other[R_KEY][i].tid != wtid[i]))
            fail("the record made by worker %d after the tracer's thread exit is missing", i);
    }
    for (uint32_t i = 0; i < straggled; i++)
        if (!strag[i]) {
            fail("straggler record %u of %u completed before exit is missing", i, straggled);
            break;
        }
    for (int a = 0; a < WORKERS; a++)
        for (int b = a + 1; b < WORKERS; b++)
            if (wtid[a] == wtid[b])
                fail("workers %d and %d carry the same thread id", a, b);
    if (exits != WORKERS)
        fail("%zu thread exits recorded, expected %d", exits, WORKERS);
    if (forks != 1)
        fail("%zu forks recorded, expected 1", forks);
    if (key_frees != WORKERS)
        fail("%zu frees after thread exit, expected %d", key_frees, WORKERS);
    /* the call-site table names each call stack once */
    if (t.stack_depth) {
        if (t.nstacks < DEPTHS + 1)
            fail("%zu call stacks, expected at least %d", t.nstacks - 1, DEPTHS);
        for (size_t a = 1; a < t.nstacks; a++)
            for (size_t b = a + 1; b < t.nstacks; b++)
                if (t.stacks[a].nframes == t.stacks[b].nframes &&
                    !memcmp(t.frames + t.stacks[a].first, t.frames + t.stacks[b].first,
                            t.stacks[a].nframes * sizeof *t.frames))
                    fail("call stacks %zu and %zu are the same", a, b);
    }
    printf("tsan_tracer: %s: %zu records, %zu call stacks, %u straggler records before exit\n",
           path, t.nrecs, t.nstacks ? t.nstacks - 1 : 0, straggled);
    dmm_trace_free(&t);
}

static void check_child_trace(const char *path)
{
    dmm_trace_t t;
    if (load(path, &t) != 0)
        return;
    if (!(t.flags & DMM_TRC_F_FORKED))
        fail("%s: not marked as the trace of a forked child", path);
    size_t n = 0;
    for (size_t k = 0; k < t.nrecs; k++) {
        const dmm_rec_t *r = &t.recs[k];
        if (r->op != DMM_TRC_MALLOC || r->size != SIZE_OF(R_CHILD, n)) {
            fail("%s: record %zu: %s of size %#llx, expected malloc %zu", path, k,
                 dmm_op_name(r->op), (unsigned long long)r->size, n);
            break;
        }
        n++;
    }
    if (n != FORK_RECS)
        fail("%s: %zu records, expected %d", path, n, FORK_RECS);
    dmm_trace_free(&t);
}

static int run_and_check(void)
{
    const char *tmpl = getenv("DMM_TRACE_FILE");
    if (!tmpl || !strstr(tmpl, "%p")) {
        fprintf(stderr, "tsan_tracer: set DMM_TRACE_FILE to a path with %%p\n");
        return 2;
    }
    char expect[1024];
    trace_path(expect, sizeof expect, getpid());
    strncat(expect, ".expect", sizeof expect - strlen(expect) - 1);
    /* a new program: single-threaded at its start, with a trace of its own
     * (posix_spawn runs no fork handlers, so this process's writer opens no
     * file for a child) */
    fflush(NULL);
    pid_t pid;
    char *const av[] = { "tsan_tracer", "--record", expect, NULL };
    int st = 0;
    if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, av, environ) != 0 ||
        waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
        fprintf(stderr, "tsan_tracer: the recording process failed (status %#x)\n", st);
        return 1;
    }
    FILE *f = fopen(expect, "r");
    int child = 0;
    unsigned straggled = 0;
    if (!f || fscanf(f, "%d %u", &child, &straggled) != 2) {
        fprintf(stderr, "tsan_tracer: no %s\n", expect);
        return 1;
    }
    fclose(f);
    char path[1100];
    trace_path(path, sizeof path, pid);
    check_main_trace(path, straggled);
    trace_path(path, sizeof path, child);
    check_child_trace(path);
    int failed = __atomic_load_n(&g_failures, __ATOMIC_RELAXED);
    if (failed)
        printf("tsan_tracer: FAILED: %d faults\n", failed);
    else
        printf("tsan_tracer: ok\n");
    return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--record")) {
        snprintf(g_expect, sizeof g_expect, "%s", argv[2]);
        return record();
    }
    return run_and_check();
}
