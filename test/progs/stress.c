/* stress.c - allocation workouts for the robustness tests (test_robust.c),
 * run plainly and under every preload library.
 *
 * Every block carries a pattern made from its id and written over all of its
 * bytes; the pattern is checked before the block is freed and after every
 * realloc (the kept part), calloc's zeros are checked, and so are the
 * alignments asked for.  An allocator that hands out a live block twice,
 * loses part of a realloc, or lets two threads share memory is caught here.
 *
 *   stress mix T N [tids]  T threads (0: 2 x online CPUs, at least 4), N
 *                          operations each: malloc, calloc, posix_memalign,
 *                          aligned_alloc, realloc(NULL) of 8 B to 256 KiB,
 *                          realloc that grows and shrinks, free; some blocks
 *                          are handed through a queue to whichever thread
 *                          takes them next and freed there; main frees what
 *                          is left in the queue.  With "tids", one line per
 *                          thread follows: its kernel tid and its calls
 *   stress mix solo N      the same workout in main alone: the process keeps
 *                          one thread (libdmm_evolved.so's one-thread paths)
 *   stress held T N R      R rounds: T threads each allocate N blocks and
 *                          exit without freeing them (pthread_exit or
 *                          return); main checks them and frees half, the next
 *                          round's threads free the other half
 *   stress forkmt T F      T threads allocate and free without pause while
 *                          main forks F times; each child checks the blocks
 *                          it inherited, frees and reallocs some, allocates
 *                          in every way, starts a thread that allocates too,
 *                          and exits (exit or _exit in turn)
 *   stress execmt K N      two threads allocate without pause while main
 *                          makes N x malloc(555) + free, then execs
 *                          "stress execmt K-1 N", the last one "stress after N"
 *   stress after N         N x malloc(777) + free
 *   stress poolfork K      a block of K KiB written, then fork: the parent
 *                          calls dmm_populate() when the allocator has it
 *                          and writes the block again while the child still
 *                          shares its pages, then the child makes a malloc
 *                          and a free and writes the block; prints the
 *                          minor page faults of each ("poolfork pages=P
 *                          parent=F child=G calls=C": under a pooled dmm
 *                          library, F and G are few)
 *   stress grow M [end]    a heap grown to M MiB in blocks of 60 KiB, each
 *                          written; then fork: the child grows its own by M/2
 *                          MiB, checks what it inherited and exits; the
 *                          parent frees every other block, grows again by as
 *                          much and checks them all.  Prints whether glibc
 *                          still sees one thread (__libc_single_threaded) and
 *                          the most tasks the process had while its heap
 *                          grew (/proc/self/task: a helper thread of the
 *                          allocator's shows there); with
 *                          "end" = pthread_exit, main ends that way (the
 *                          process must still end, with status 0)
 *   stress signal HOW N    main makes N allocation operations while signals
 *                          arrive: HOW is alarm-alloc, alarm-quiet (SIGALRM
 *                          every 50 us from setitimer) or kill-alloc,
 *                          kill-quiet (a second thread sends SIGUSR1 to main
 *                          without pause); an -alloc handler mallocs and
 *                          frees blocks of sizes main never asks for (see
 *                          on_signal), a -quiet one only counts.  Main goes
 *                          on past N until 200 signals came (10 s at most);
 *                          the number handled goes to stderr
 *   stress oom same|any    allocates until the address space runs out (run
 *                          it under a small RLIMIT_AS): every kind of call
 *                          must fail with NULL + ENOMEM (posix_memalign:
 *                          ENOMEM) and leave what it had alone; once 3/4 of
 *                          it was freed, the size freed (1 MiB) must be
 *                          served again, and with "any" also other sizes,
 *                          alignments and a new thread's stack (which an
 *                          allocator that keeps freed memory in per-size
 *                          lists, as Kingsley's does, cannot promise)
 *
 * Each mode prints one line (mix with "tids": more) that does not depend on
 * scheduling, so that a test can compare it with a plain run; exit status 0
 * when every check passed, 1 otherwise (the first failures on stderr). */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/single_threaded.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int bad;   /* checks that failed (atomic) */

/* The first few failures go to stderr (write: no malloc). */
static void fail(const char *what, unsigned long a, unsigned long b)
{
    if (__atomic_fetch_add(&bad, 1, __ATOMIC_RELAXED) < 5) {
        char msg[200];
        int n = snprintf(msg, sizeof msg, "stress: %s (%lu, %lu)\n", what, a, b);
        if (n > 0 && write(2, msg, (size_t)n) < 0)
            bad++;
    }
}

static uint64_t rnd(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545f4914f6cdd1dull;
}

/* 8 B to 256 KiB, mostly small, as programs ask. */
static size_t pick_size(uint64_t *r)
{
    unsigned k = (unsigned)(rnd(r) % 100);
    if (k < 2)
        return k ? 8 : 262144;
    if (k < 60)
        return 8 + rnd(r) % 249;
    if (k < 85)
        return 257 + rnd(r) % (4096 - 257);
    if (k < 97)
        return 4096 + rnd(r) % (65536 - 4096);
    return 65536 + rnd(r) % (262144 - 65536 + 1);
}

/* ---- blocks and their patterns ------------------------------------------ */

typedef struct blk {
    unsigned char *p;
    size_t n;
    uint32_t id;
} blk_t;

static inline unsigned char pat(uint32_t id, size_t i)
{
    return (unsigned char)(id * 131u + (uint32_t)i * 7u + (uint32_t)(i >> 8));
}

static void fill(const blk_t *b, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        b->p[i] = pat(b->id, i);
}

static void check(const blk_t *b, size_t from, size_t to, const char *what)
{
    for (size_t i = from; i < to; i++)
        if (b->p[i] != pat(b->id, i)) {
            fail(what, b->id, i);
            return;
        }
}

typedef struct calls {
    unsigned long malloc, calloc, realloc, posix_memalign, aligned_alloc, free;
} calls_t;

static void add_calls(calls_t *to, const calls_t *c)
{
    to->malloc += c->malloc;
    to->calloc += c->calloc;
    to->realloc += c->realloc;
    to->posix_memalign += c->posix_memalign;
    to->aligned_alloc += c->aligned_alloc;
    to->free += c->free;
}

/* A new block of n bytes by one of the allocating calls (chosen by r),
 * checked and filled. */
static void make_block(blk_t *b, size_t n, uint32_t id, uint64_t *r, calls_t *c)
{
    unsigned k = (unsigned)(rnd(r) % 100);
    size_t align = 0;
    b->n = n;
    b->id = id;
    if (k < 65) {
        b->p = malloc(n);
        c->malloc++;
    } else if (k < 80) {
        b->p = calloc(1, n);
        c->calloc++;
        for (size_t i = 0; b->p && i < n; i++)
            if (b->p[i]) {
                fail("calloc gave a block that is not zero", n, i);
                break;
            }
    } else if (k < 90) {
        void *q = NULL;
        align = (size_t)16 << (rnd(r) % 9);   /* 16 .. 4096 */
        int e = posix_memalign(&q, align, n);
        c->posix_memalign++;
        if (e)
            fail("posix_memalign failed", n, (unsigned long)e);
        b->p = q;
    } else if (k < 95) {
        align = (size_t)32 << (rnd(r) % 6);   /* 32 .. 1024 */
        n = (n + align - 1) / align * align;  /* C11: a multiple */
        b->n = n;
        b->p = aligned_alloc(align, n);
        c->aligned_alloc++;
    } else {
        void *volatile none = NULL;   /* or the compiler makes it a malloc */
        b->p = realloc(none, n);
        c->realloc++;
    }
    if (!b->p) {
        fail("an allocation failed", n, k);
        return;
    }
    if ((uintptr_t)b->p % 16 || (align && (uintptr_t)b->p % align))
        fail("misaligned block", (unsigned long)(uintptr_t)b->p, align);
    if (malloc_usable_size(b->p) < n)
        fail("malloc_usable_size below the size asked", malloc_usable_size(b->p), n);
    fill(b, 0, n);
}

static void drop_block(blk_t *b, calls_t *c, const char *what)
{
    if (!b->p)
        return;
    check(b, 0, b->n, what);
    free(b->p);
    c->free++;
    b->p = NULL;
}

static void resize_block(blk_t *b, size_t n, calls_t *c)
{
    unsigned char *q = realloc(b->p, n);
    c->realloc++;
    if (!q) {
        fail("realloc failed", b->n, n);
        return;
    }
    b->p = q;
    size_t keep = b->n < n ? b->n : n;
    check(b, 0, keep, "realloc lost the contents of a block");
    b->n = n;
    fill(b, keep, n);
}

static pid_t gettid_(void)
{
    return (pid_t)syscall(SYS_gettid);
}

static int default_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN) * 2;
    return n < 4 ? 4 : n > 64 ? 64 : (int)n;
}

/* ---- mix: threads, realloc, blocks handed between threads ---------------- */

#define QCAP 1024
static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static blk_t q_ring[QCAP];
static unsigned q_head, q_len;

static int q_pop_locked(blk_t *b)
{
    if (!q_len)
        return 0;
    *b = q_ring[q_head];
    q_head = (q_head + 1) % QCAP;
    q_len--;
    return 1;
}

static int q_pop(blk_t *b)
{
    pthread_mutex_lock(&q_lock);
    int ok = q_pop_locked(b);
    pthread_mutex_unlock(&q_lock);
    return ok;
}

/* Hand b to whichever thread pops it; when the queue is full, the oldest
 * block is taken out and freed here. */
static void q_push(const blk_t *b, calls_t *c)
{
    blk_t old;
    int full = 0;
    pthread_mutex_lock(&q_lock);
    if (q_len == QCAP)
        full = q_pop_locked(&old);
    q_ring[(q_head + q_len) % QCAP] = *b;
    q_len++;
    pthread_mutex_unlock(&q_lock);
    if (full)
        drop_block(&old, c, "a block handed between threads was changed");
}

typedef struct worker {
    pthread_t th;
    int index;
    long ops;
    pid_t tid;
    calls_t calls;
    unsigned long handed;
    unsigned long rounds;   /* busy_worker's loops so far (atomic) */
} worker_t;

#define SLOTS 48

static void *mix_worker(void *arg)
{
    worker_t *w = arg;
    w->tid = gettid_();
    uint64_t r = 0x9e3779b97f4a7c15ull * (uint64_t)(w->index + 1);
    uint32_t next_id = (uint32_t)w->index << 24;
    blk_t own[SLOTS];
    memset(own, 0, sizeof own);
    for (long i = 0; i < w->ops; i++) {
        blk_t *b = &own[rnd(&r) % SLOTS];
        unsigned k = (unsigned)(rnd(&r) % 100);
        if (!b->p) {
            make_block(b, pick_size(&r), next_id++, &r, &w->calls);
        } else if (k < 25) {
            resize_block(b, pick_size(&r), &w->calls);
        } else if (k < 40) {
            q_push(b, &w->calls);
            w->handed++;
            b->p = NULL;
        } else {
            drop_block(b, &w->calls, "a block was changed while it was live");
        }
        blk_t got;
        if (i % 3 == 0 && q_pop(&got))
            drop_block(&got, &w->calls, "a block handed between threads was changed");
    }
    for (int s = 0; s < SLOTS; s++)
        drop_block(&own[s], &w->calls, "a block was changed while it was live");
    return NULL;
}

static int mode_mix(int nthreads, long ops, int tids, int solo)
{
    worker_t *w = calloc((size_t)nthreads, sizeof *w);
    for (int t = 0; t < nthreads; t++) {
        w[t].index = t;
        w[t].ops = ops;
        if (solo)
            mix_worker(&w[t]);
        else if (pthread_create(&w[t].th, NULL, mix_worker, &w[t]) != 0)
            fail("pthread_create", (unsigned long)t, 0);
    }
    calls_t total = { 0 }, mainc = { 0 };
    unsigned long handed = 0;
    for (int t = 0; t < nthreads; t++) {
        if (!solo)
            pthread_join(w[t].th, NULL);
        add_calls(&total, &w[t].calls);
        handed += w[t].handed;
    }
    blk_t b;
    while (q_pop(&b))
        drop_block(&b, &mainc, "a block handed between threads was changed");
    add_calls(&total, &mainc);
    printf("stress mix threads=%d ops=%ld malloc=%lu calloc=%lu realloc=%lu posix_memalign=%lu "
           "aligned_alloc=%lu free=%lu handed=%lu bad=%d\n",
           nthreads, ops, total.malloc, total.calloc, total.realloc, total.posix_memalign,
           total.aligned_alloc, total.free, handed, bad);
    if (tids) {
        for (int t = 0; t < nthreads; t++)
            printf("tid %d malloc=%lu calloc=%lu realloc=%lu posix_memalign=%lu "
                   "aligned_alloc=%lu free=%lu\n",
                   (int)w[t].tid, w[t].calls.malloc, w[t].calls.calloc, w[t].calls.realloc,
                   w[t].calls.posix_memalign, w[t].calls.aligned_alloc, w[t].calls.free);
        printf("main %d free=%lu\n", (int)gettid_(), mainc.free);
    }
    free(w);
    return bad ? 1 : 0;
}

/* ---- held: threads exit holding blocks ------------------------------------ */

typedef struct holder {
    pthread_t th;
    int index, round, n;
    blk_t *mine;        /* this round's blocks, left allocated */
    blk_t *previous;    /* last round's blocks of the same index */
    calls_t calls;
} holder_t;

static void *held_worker(void *arg)
{
    holder_t *h = arg;
    uint64_t r = 0x51ed270b27e5a3c1ull * (uint64_t)(h->index * 97 + h->round + 1);
    for (int i = 0; i < h->n; i++) {
        size_t n = rnd(&r) % 8 ? 8 + rnd(&r) % 2000 : 4096 + rnd(&r) % 60000;
        make_block(&h->mine[i], n, (uint32_t)(h->round << 20 | h->index << 12 | i), &r,
                   &h->calls);
    }
    /* the half of last round's blocks that main left: their threads are gone */
    for (int i = 1; h->previous && i < h->n; i += 2)
        drop_block(&h->previous[i], &h->calls, "a block of an exited thread was changed");
    if (h->index % 2)
        pthread_exit(NULL);
    return NULL;
}

static int mode_held(int nthreads, int n, int rounds)
{
    holder_t *h = calloc((size_t)nthreads, sizeof *h);
    blk_t *blocks[2];
    blocks[0] = calloc((size_t)nthreads * (size_t)n, sizeof(blk_t));
    blocks[1] = calloc((size_t)nthreads * (size_t)n, sizeof(blk_t));
    calls_t total = { 0 };
    for (int round = 0; round < rounds; round++) {
        blk_t *cur = blocks[round % 2], *prev = round ? blocks[(round + 1) % 2] : NULL;
        for (int t = 0; t < nthreads; t++) {
            memset(&h[t].calls, 0, sizeof h[t].calls);
            h[t].index = t;
            h[t].round = round;
            h[t].n = n;
            h[t].mine = cur + (size_t)t * (size_t)n;
            h[t].previous = prev ? prev + (size_t)t * (size_t)n : NULL;
            if (pthread_create(&h[t].th, NULL, held_worker, &h[t]) != 0)
                fail("pthread_create", (unsigned long)t, 0);
        }
        for (int t = 0; t < nthreads; t++) {
            pthread_join(h[t].th, NULL);
            add_calls(&total, &h[t].calls);
        }
        /* every block of the threads just gone is intact; free half */
        for (size_t i = 0; i < (size_t)nthreads * (size_t)n; i++) {
            check(&cur[i], 0, cur[i].n, "a block of an exited thread was changed");
            if (i % 2 == 0)
                drop_block(&cur[i], &total, "unreachable");
        }
    }
    blk_t *last = blocks[(rounds - 1) % 2];
    for (size_t i = 0; i < (size_t)nthreads * (size_t)n; i++)
        drop_block(&last[i], &total, "a block of an exited thread was changed");
    printf("stress held threads=%d n=%d rounds=%d malloc=%lu calloc=%lu realloc=%lu "
           "posix_memalign=%lu aligned_alloc=%lu free=%lu bad=%d\n",
           nthreads, n, rounds, total.malloc, total.calloc, total.realloc, total.posix_memalign,
           total.aligned_alloc, total.free, bad);
    free(blocks[0]);
    free(blocks[1]);
    free(h);
    return bad ? 1 : 0;
}

/* ---- forkmt: fork while other threads allocate ---------------------------- */

static int stop;

static void *busy_worker(void *arg)
{
    worker_t *w = arg;
    uint64_t r = 0x2545f4914f6cdd1dull * (uint64_t)(w->index + 7);
    uint32_t next_id = (uint32_t)(w->index + 100) << 24;
    blk_t own[SLOTS];
    memset(own, 0, sizeof own);
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        __atomic_fetch_add(&w->rounds, 1, __ATOMIC_RELAXED);
        blk_t *b = &own[rnd(&r) % SLOTS];
        unsigned k = (unsigned)(rnd(&r) % 100);
        if (!b->p)
            make_block(b, pick_size(&r) % 20000 + 8, next_id++, &r, &w->calls);
        else if (k < 30)
            resize_block(b, pick_size(&r) % 20000 + 8, &w->calls);
        else
            drop_block(b, &w->calls, "a block was changed while it was live");
    }
    for (int s = 0; s < SLOTS; s++)
        drop_block(&own[s], &w->calls, "a block was changed while it was live");
    return NULL;
}

/* A thread of the child: allocates, reallocs and frees on its own. */
static void *child_worker(void *arg)
{
    uint64_t r = (uint64_t)(uintptr_t)arg | 1;
    calls_t c = { 0 };
    blk_t own[16];
    memset(own, 0, sizeof own);
    for (int i = 0; i < 300; i++) {
        blk_t *b = &own[rnd(&r) % 16];
        if (!b->p)
            make_block(b, pick_size(&r), (uint32_t)(0x70000000 + i), &r, &c);
        else if (i % 3)
            resize_block(b, pick_size(&r), &c);
        else
            drop_block(b, &c, "a block of a child's thread was changed");
    }
    for (int s = 0; s < 16; s++)
        drop_block(&own[s], &c, "a block of a child's thread was changed");
    return NULL;
}

/* In the child: only this thread exists, and the allocator must work. */
static void forked_child(blk_t *inherited, int ninh, int f)
{
    uint64_t r = 0x1234567ull + (uint64_t)f;
    calls_t c = { 0 };
    for (int i = 0; i < ninh; i++)
        check(&inherited[i], 0, inherited[i].n, "a block inherited across fork was changed");
    /* blocks of the parent, freed and resized in the child */
    for (int i = 0; i < ninh; i += 2)
        drop_block(&inherited[i], &c, "a block inherited across fork was changed");
    for (int i = 1; i < ninh; i += 4)
        resize_block(&inherited[i], inherited[i].n * 3 + 100, &c);
    blk_t own[64];
    memset(own, 0, sizeof own);
    for (int i = 0; i < 400; i++) {
        blk_t *b = &own[rnd(&r) % 64];
        if (!b->p)
            make_block(b, pick_size(&r), (uint32_t)(0x60000000 + i), &r, &c);
        else if (i % 4 == 0)
            resize_block(b, pick_size(&r), &c);
        else
            drop_block(b, &c, "a block of the child was changed");
    }
    pthread_t th;
    if (pthread_create(&th, NULL, child_worker, (void *)(uintptr_t)(f + 1)) != 0)
        fail("pthread_create in a forked child", (unsigned long)f, 0);
    else
        pthread_join(th, NULL);
    for (int i = 0; i < 64; i++)
        drop_block(&own[i], &c, "a block of the child was changed");
    for (int i = 1; i < ninh; i += 2)
        drop_block(&inherited[i], &c, "a block inherited across fork was changed");
    /* exit runs the libraries' destructors (statistics, trace flush) */
    if (f % 2)
        _exit(bad ? 1 : 0);
    exit(bad ? 1 : 0);
}

static int mode_forkmt(int nthreads, int forks)
{
    worker_t *w = calloc((size_t)nthreads, sizeof *w);
    enum { NINH = 40 };
    blk_t inh[NINH];
    uint64_t r = 99;
    calls_t c = { 0 };
    for (int i = 0; i < NINH; i++)
        make_block(&inh[i], pick_size(&r), (uint32_t)(0x50000000 + i), &r, &c);
    for (int t = 0; t < nthreads; t++) {
        w[t].index = t;
        if (pthread_create(&w[t].th, NULL, busy_worker, &w[t]) != 0)
            fail("pthread_create", (unsigned long)t, 0);
    }
    int failed = 0;
    for (int f = 0; f < forks; f++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0) {
            fail("fork", (unsigned long)f, (unsigned long)errno);
            break;
        }
        if (pid == 0)
            forked_child(inh, NINH, f);
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            failed++;
            fail(WIFSIGNALED(st) ? "a forked child died of a signal" : "a forked child failed",
                 (unsigned long)f, (unsigned long)(WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st)));
        }
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (int t = 0; t < nthreads; t++)
        pthread_join(w[t].th, NULL);
    for (int i = 0; i < NINH; i++)
        drop_block(&inh[i], &c, "a block of the parent was changed by a fork");
    printf("stress forkmt threads=%d forks=%d failed=%d bad=%d\n", nthreads, forks, failed, bad);
    free(w);
    return bad ? 1 : 0;
}

/* ---- execmt: exec while other threads allocate ----------------------------- */

static int mode_execmt(char *self, int k, int n)
{
    worker_t w[2];
    memset(w, 0, sizeof w);
    for (int t = 0; t < 2; t++) {
        w[t].index = t;
        if (pthread_create(&w[t].th, NULL, busy_worker, &w[t]) != 0)
            fail("pthread_create", (unsigned long)t, 0);
    }
    for (int i = 0; i < n; i++) {
        void *volatile p = malloc(555);
        free(p);
    }
    /* the exec must meet both threads busy, however loaded the machine */
    struct timespec nap = { 0, 100000 };
    while (__atomic_load_n(&w[0].rounds, __ATOMIC_RELAXED) < 500 ||
           __atomic_load_n(&w[1].rounds, __ATOMIC_RELAXED) < 500)
        nanosleep(&nap, NULL);
    printf("stress execmt %d\n", k);
    fflush(stdout);
    char num[16], cnt[16];
    snprintf(num, sizeof num, "%d", k - 1);
    snprintf(cnt, sizeof cnt, "%d", n);
    if (k > 1)
        execl("/proc/self/exe", self, "execmt", num, cnt, (char *)NULL);
    else
        execl("/proc/self/exe", self, "after", cnt, (char *)NULL);
    fail("exec", (unsigned long)errno, 0);
    return 1;
}

static int mode_after(int n)
{
    for (int i = 0; i < n; i++) {
        void *volatile p = malloc(777);
        free(p);
    }
    printf("stress after %d\n", n);
    return 0;
}

/* ---- signal: handlers that interrupt allocation ---------------------------- */

#define SIGNALS_MIN 200

static int handler_allocates;
static unsigned long handled;
static pthread_t main_thread;

/* The handler's sizes are ones main never asks for: glibc, whose malloc is
 * not reentrant, then serves them from its per-thread cache (tcache) alone,
 * without the arena that main may hold, and survives it.  Whatever runs on
 * top of glibc must survive it too. */
static const size_t handler_sizes[] = { 24, 200, 1000 };

static void on_signal(int sig)
{
    (void)sig;
    int e = errno;
    __atomic_fetch_add(&handled, 1, __ATOMIC_RELAXED);
    if (handler_allocates) {
        /* not async-signal-safe by POSIX, but programs do it */
        unsigned char *p[3];
        for (int i = 0; i < 3; i++) {
            p[i] = malloc(handler_sizes[i]);
            if (!p[i])
                fail("an allocation in a signal handler failed", handler_sizes[i], 0);
            else
                memset(p[i], 0x5a + i, handler_sizes[i]);
        }
        for (int i = 0; i < 3; i++) {
            if (p[i] && (p[i][0] != 0x5a + i || p[i][handler_sizes[i] - 1] != 0x5a + i))
                fail("a handler's block was changed", handler_sizes[i], 0);
            free(p[i]);
        }
    }
    errno = e;
}

static void *signaller(void *arg)
{
    (void)arg;
    struct timespec nap = { 0, 20000 };
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        pthread_kill(main_thread, SIGUSR1);
        nanosleep(&nap, NULL);
    }
    return NULL;
}

static int mode_signal(const char *how, long n)
{
    int kill_mode = !strncmp(how, "kill-", 5);
    if (strcmp(how, "alarm-alloc") && strcmp(how, "alarm-quiet") && strcmp(how, "kill-alloc") &&
        strcmp(how, "kill-quiet")) {
        fprintf(stderr, "stress: signal: HOW is alarm-alloc, alarm-quiet, kill-alloc or kill-quiet\n");
        return 2;
    }
    handler_allocates = strstr(how, "-alloc") != NULL;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(kill_mode ? SIGUSR1 : SIGALRM, &sa, NULL);
    main_thread = pthread_self();
    for (int i = 0; i < 3; i++) {   /* glibc: into the thread's cache */
        void *volatile p = malloc(handler_sizes[i]);
        free(p);
    }
    pthread_t th;
    if (kill_mode) {
        if (pthread_create(&th, NULL, signaller, NULL) != 0)
            fail("pthread_create", 0, 0);
    } else {
        struct itimerval it = { { 0, 50 }, { 0, 50 } };
        setitimer(ITIMER_REAL, &it, NULL);
    }
    uint64_t r = 4242;
    calls_t c = { 0 }, first = { 0 };
    blk_t own[SLOTS];
    memset(own, 0, sizeof own);
    /* N operations, and on until SIGNALS_MIN signals came (a loaded machine
     * may starve the signalling thread); the line printed counts the first
     * N, so it is the same on every run */
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0;; i++) {
        if (i == n)
            first = c;
        if (i >= n && (i % 256 == 0)) {
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (__atomic_load_n(&handled, __ATOMIC_RELAXED) >= SIGNALS_MIN ||
                now.tv_sec - t0.tv_sec > 10)
                break;
        }
        blk_t *b = &own[rnd(&r) % SLOTS];
        if (!b->p)
            make_block(b, 1100 + pick_size(&r) % 30000, (uint32_t)i, &r, &c);
        else if (i % 4 == 0)
            resize_block(b, 1100 + pick_size(&r) % 30000, &c);
        else
            drop_block(b, &c, "a block was changed while it was live");
    }
    if (kill_mode) {
        __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
        pthread_join(th, NULL);
    } else {
        struct itimerval off = { { 0, 0 }, { 0, 0 } };
        setitimer(ITIMER_REAL, &off, NULL);
    }
    for (int s = 0; s < SLOTS; s++)
        drop_block(&own[s], &c, "a block was changed while it was live");
    fprintf(stderr, "signals handled: %lu\n", __atomic_load_n(&handled, __ATOMIC_RELAXED));
    printf("stress signal %s n=%ld malloc=%lu realloc=%lu free=%lu bad=%d\n", how, n,
           first.malloc, first.realloc, first.free, bad);
    return bad ? 1 : 0;
}

/* ---- poolfork: the pages of a block after fork ------------------------- */

static long minflt(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

static int mode_poolfork(long kib)
{
    size_t n = (size_t)kib << 10, page = (size_t)sysconf(_SC_PAGESIZE);
    blk_t b = { malloc(n), n, 9 };
    if (!b.p) {
        fail("malloc for poolfork", n, 0);
        return 1;
    }
    fill(&b, 0, n);
    int go[2], back[2];
    if (pipe(go) != 0 || pipe(back) != 0) {
        fail("pipe", 0, (unsigned long)errno);
        return 1;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        fail("fork", 0, (unsigned long)errno);
        return 1;
    }
    if (pid == 0) {
        char c;
        if (read(go[0], &c, 1) != 1)
            _exit(1);
        /* a malloc and a free first: the allocator's own state after fork */
        long f[2], f0 = minflt();
        void *volatile q = malloc(100);
        free(q);
        f[1] = minflt() - f0;
        f0 = minflt();
        for (size_t i = 0; i < n; i += page)
            ((volatile char *)b.p)[i] ^= 0;
        f[0] = minflt() - f0;
        check(&b, 0, n, "a block inherited across fork was changed");
        _exit(write(back[1], f, sizeof f) == sizeof f && !bad ? 0 : 1);
    }
    /* the parent's pages are write-protected too: dmm's libraries take a
     * pool's back when asked (dmm_populate), others have nothing to ask */
    int (*populate)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "dmm_populate");
    if (populate)
        populate();
    long f0 = minflt();
    for (size_t i = 0; i < n; i += page)
        ((volatile char *)b.p)[i] ^= 0;
    long fp = minflt() - f0, fc[2] = { -1, -1 };
    if (write(go[1], "g", 1) != 1 || read(back[0], fc, sizeof fc) != sizeof fc)
        fail("the child did not report", 0, 0);
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail("the child failed", 0, (unsigned long)st);
    check(&b, 0, n, "a block was changed across fork");
    free(b.p);
    printf("poolfork pages=%zu parent=%ld child=%ld calls=%ld bad=%d\n", n / page, fp, fc[0],
           fc[1], bad);
    return bad ? 1 : 0;
}

/* ---- oom: the address space runs out ------------------------------------- */

#define MIB (1u << 20)
#define MAXBIG 8192

static void expect_enomem(const void *p, const char *what)
{
    if (p)
        fail(what, 1, 0);
    else if (errno != ENOMEM)
        fail(what, 0, (unsigned long)errno);
}

static void *oom_thread(void *arg)
{
    (void)arg;
    uint64_t r = 5;
    calls_t c = { 0 };
    blk_t b[32];
    memset(b, 0, sizeof b);
    for (int i = 0; i < 32; i++)
        make_block(&b[i], pick_size(&r), (uint32_t)i, &r, &c);
    for (int i = 0; i < 32; i++)
        drop_block(&b[i], &c, "a block of a thread after the failures was changed");
    return NULL;
}

static int mode_oom(int any)
{
    static blk_t big[MAXBIG];
    int nbig = 0;
    /* 1 MiB blocks until the address space is gone */
    for (;;) {
        if (nbig == MAXBIG) {
            fail("8 GiB allocated and nothing failed: no RLIMIT_AS?", 0, 0);
            return 1;
        }
        errno = 0;
        void *p = malloc(MIB);
        if (!p) {
            if (errno != ENOMEM)
                fail("malloc failed without ENOMEM", MIB, (unsigned long)errno);
            break;
        }
        big[nbig] = (blk_t){ p, MIB, (uint32_t)nbig };
        big[nbig].p[0] = pat((uint32_t)nbig, 0);
        big[nbig].p[MIB - 1] = pat((uint32_t)nbig, MIB - 1);
        nbig++;
    }
    if (nbig < 2) {
        fail("fewer than two 1 MiB blocks before the first failure", (unsigned long)nbig, 0);
        return 1;
    }
    /* every other way to ask fails the same way */
    errno = 0;
    expect_enomem(malloc(64 * MIB), "malloc(64 MiB) did not fail with ENOMEM");
    errno = 0;
    expect_enomem(calloc(1, 4 * MIB), "calloc did not fail with ENOMEM");
    errno = 0;
    expect_enomem(calloc(4096, 1024), "calloc(4096, 1024) did not fail with ENOMEM");
    errno = 0;
    expect_enomem(memalign(4096, 4 * MIB), "memalign did not fail with ENOMEM");
    errno = 0;
    expect_enomem(aligned_alloc(4096, 4 * MIB), "aligned_alloc did not fail with ENOMEM");
    errno = 0;
    expect_enomem(valloc(4 * MIB), "valloc did not fail with ENOMEM");
    void *q = (void *)&big;
    errno = 0;
    int e = posix_memalign(&q, 4096, 4 * MIB);
    if (e != ENOMEM || q != (void *)&big)
        fail("posix_memalign did not return ENOMEM and leave its pointer alone", (unsigned long)e, 0);
    errno = 0;
    void *grown = realloc(big[0].p, 64 * MIB);
    expect_enomem(grown, "realloc to 64 MiB did not fail with ENOMEM");
    if (grown) {
        big[0].p = grown;
        big[0].n = 64 * MIB;
    } else if (big[0].p[0] != pat(0, 0) || big[0].p[MIB - 1] != pat(0, MIB - 1)) {
        fail("a failed realloc changed its block", 0, 0);
    }
    /* small blocks until they fail too, chained through their first word */
    void *chain = NULL;
    unsigned long nsmall = 0;
    for (;;) {
        if (nsmall == 8u * MIB) {
            fail("8 M small blocks and nothing failed", nsmall, 0);
            break;
        }
        errno = 0;
        void **s = malloc(48);
        if (!s) {
            if (errno != ENOMEM)
                fail("a small malloc failed without ENOMEM", nsmall, (unsigned long)errno);
            break;
        }
        *s = chain;
        chain = s;
        nsmall++;
    }
    while (chain) {
        void *next = *(void **)chain;
        free(chain);
        chain = next;
    }
    /* give back all but every fourth big block: allocation works again */
    for (int i = 0; i < nbig; i++) {
        if (big[i].p[0] != pat((uint32_t)i, 0) || big[i].p[MIB - 1] != pat((uint32_t)i, MIB - 1))
            fail("a 1 MiB block was changed", (unsigned long)i, 0);
        if (i % 4) {
            free(big[i].p);
            big[i].p = NULL;
        }
    }
    /* the size given back is served again */
    int again = 0;
    for (int i = 0; i < nbig / 2; i++) {
        void *p = malloc(MIB);
        if (!p) {
            fail("malloc(1 MiB) failed after 3/4 of the memory was given back", (unsigned long)i, 0);
            break;
        }
        memset(p, 1, MIB);
        free(p);
        again++;
    }
    unsigned char *z = calloc(1, MIB);
    if (!z)
        fail("calloc(1 MiB) failed after memory was given back", 0, 0);
    else if (z[0] || z[MIB - 1] || z[MIB / 2])
        fail("calloc after the failures gave a block that is not zero", 0, 0);
    free(z);
    if (any) {
        /* and so are other sizes and alignments, and a new thread */
        z = calloc(1, 2 * MIB);
        if (!z)
            fail("calloc(2 MiB) failed after memory was given back", 0, 0);
        else if (z[0] || z[2 * MIB - 1] || z[MIB])
            fail("calloc after the failures gave a block that is not zero", 0, 0);
        free(z);
        void *a = NULL;
        if (posix_memalign(&a, 4096, MIB) != 0 || (uintptr_t)a % 4096)
            fail("posix_memalign failed after memory was given back", 0, 0);
        free(a);
        blk_t g = { malloc(1000), 1000, 77 };
        if (!g.p) {
            fail("malloc(1000) failed after memory was given back", 0, 0);
        } else {
            fill(&g, 0, g.n);
            resize_block(&g, 3 * MIB, &(calls_t){ 0 });
            free(g.p);
        }
        pthread_t th;
        if (pthread_create(&th, NULL, oom_thread, NULL) != 0)
            fail("pthread_create after memory was given back", 0, 0);
        else
            pthread_join(th, NULL);
    }
    for (int i = 0; i < nbig; i++)
        free(big[i].p);
    fprintf(stderr, "stress oom: %d MiB in 1 MiB blocks, %lu small blocks before failing\n", nbig,
            nsmall);
    printf("stress oom %s bad=%d\n", any ? "any" : "same", bad);
    return bad ? 1 : 0;
}

/* ---- grow: a large heap, fork, and the way main ends ------------------- */

static int tasks(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* Blocks [from, to) of b, each 60 KiB, allocated and written: the most
 * tasks the process had meanwhile, counted every 16 blocks and at the end
 * (an allocator's helper thread may end once idle, 100 ms for libdmm's: a
 * count taken only at the end would miss one that a slow spell of the
 * machine let end before it). */
static int grow_blocks(blk_t *b, size_t from, size_t to)
{
    int most = 0;
    for (size_t i = from; i < to; i++) {
        b[i] = (blk_t){ malloc(60 << 10), 60 << 10, (uint32_t)i };
        if (!b[i].p) {
            fail("malloc for grow", i, 0);
            continue;
        }
        fill(&b[i], 0, b[i].n);
        if (i % 16 == 15 || i + 1 == to) {
            int t = tasks();
            most = t > most ? t : most;
        }
    }
    return most;
}

static int mode_grow(long mib, int by_pthread_exit)
{
    size_t n = (size_t)mib * 1024 / 60;
    blk_t *b = calloc(2 * n, sizeof *b);
    if (!b || mib <= 0)
        return 1;
    int grown = grow_blocks(b, 0, n);   /* while the heap grew */
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        fail("fork", 0, (unsigned long)errno);
        return 1;
    }
    if (pid == 0) {
        grow_blocks(b, n, n + n / 2);
        for (size_t i = 0; i < n + n / 2; i++)
            if (b[i].p)
                check(&b[i], 0, b[i].n, "grow: the child's block changed");
        _exit(bad ? 1 : 0);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail("grow: the child failed", 0, (unsigned long)st);
    for (size_t i = 0; i < n; i += 2) {
        check(&b[i], 0, b[i].n, "grow: a block changed across fork");
        free(b[i].p);
        b[i].p = NULL;
    }
    grow_blocks(b, n, 2 * n);
    for (size_t i = 0; i < 2 * n; i++)
        if (b[i].p)
            check(&b[i], 0, b[i].n, "grow: a block changed");
    printf("grow mib=%ld single=%d tasks=%d bad=%d\n", mib, (int)__libc_single_threaded, grown,
           bad);
    fflush(stdout);
    if (by_pthread_exit && !bad)
        pthread_exit(NULL);   /* the process ends when its last thread does: status 0 */
    return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        goto usage;
    const char *mode = argv[1];
    int rc;
    if (!strcmp(mode, "mix") && argc >= 4) {
        int solo = !strcmp(argv[2], "solo"), t = solo ? 1 : atoi(argv[2]);
        rc = mode_mix(t > 0 ? t : default_threads(), atol(argv[3]),
                      argc > 4 && !strcmp(argv[4], "tids"), solo);
    } else if (!strcmp(mode, "held") && argc == 5) {
        int t = atoi(argv[2]);
        rc = mode_held(t > 0 ? t : default_threads(), atoi(argv[3]), atoi(argv[4]));
    } else if (!strcmp(mode, "forkmt") && argc == 4) {
        int t = atoi(argv[2]);
        rc = mode_forkmt(t > 0 ? t : default_threads(), atoi(argv[3]));
    } else if (!strcmp(mode, "execmt") && argc == 4) {
        rc = mode_execmt(argv[0], atoi(argv[2]), atoi(argv[3]));
    } else if (!strcmp(mode, "after") && argc == 3) {
        rc = mode_after(atoi(argv[2]));
    } else if (!strcmp(mode, "poolfork") && argc == 3) {
        rc = mode_poolfork(atol(argv[2]));
    } else if (!strcmp(mode, "grow") && (argc == 3 || (argc == 4 && !strcmp(argv[3], "pthread_exit")))) {
        rc = mode_grow(atol(argv[2]), argc == 4);
    } else if (!strcmp(mode, "signal") && argc == 4) {
        rc = mode_signal(argv[2], atol(argv[3]));
    } else if (!strcmp(mode, "oom") && argc == 3 &&
               (!strcmp(argv[2], "same") || !strcmp(argv[2], "any"))) {
        rc = mode_oom(!strcmp(argv[2], "any"));
    } else {
        goto usage;
    }
    return rc;
usage:
    fprintf(stderr, "usage: stress mix|held|forkmt|execmt|after|poolfork|grow|signal|oom ARGS (see stress.c)\n");
    return 2;
}
