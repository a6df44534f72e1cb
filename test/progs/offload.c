/* offload.c - workouts for DMM_OFFLOAD=1 (test_offload.c): frees that a
 * helper thread does while the program goes on, across threads, forks and
 * exit.
 *
 * Every block carries a pattern made from its id over all of its bytes,
 * checked before the block is freed and after realloc; a block the
 * allocator handed out twice, or freed while live, shows as a wrong
 * pattern.
 *
 *   offload mt T N       T threads, N operations each (malloc, calloc,
 *                        realloc, free, 8 B to 64 KiB and now and then
 *                        300 KiB, the fallback path); a quarter of the
 *                        frees are of blocks another thread allocated,
 *                        handed over through a shared exchange
 *   offload fork N       a thread allocates and frees without pause while
 *                        main frees a batch and forks, 4 times: each child
 *                        checks what it inherited, allocates and frees N
 *                        times (enough to start a helper of its own), forks
 *                        a grandchild that does the same, and exits; the
 *                        parent goes on allocating meanwhile
 *   offload exit N       frees N blocks and calls exit at once (frees still
 *                        queued), while a thread allocates and frees; a
 *                        destructor and an exit handler free and allocate
 *   offload _exit N      the same, ending with _exit
 *   offload burst N      allocates N blocks and frees them in one loop
 *                        (more than the queue holds), twice, then checks
 *                        blocks that stayed live meanwhile; during the
 *                        first 21504 frees of the second loop the helper
 *                        thread (found by its name, dmm-offload) runs as
 *                        SCHED_IDLE on a CPU kept busy by a spinning
 *                        thread, so that the queue surely fills
 *   offload lastthread N main starts a thread and calls pthread_exit; the
 *                        thread allocates and frees N times and returns:
 *                        the process must end
 *
 * Each mode prints one line that does not depend on scheduling, exits 0
 * when every check passed, 1 otherwise (the first failures on stderr). */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;

static void fail(const char *what, uint64_t id)
{
    if (__atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED) < 10)
        fprintf(stderr, "offload: %s (block %llu)\n", what, (unsigned long long)id);
}

typedef struct blk {
    uint64_t *p;
    size_t    n;    /* bytes */
    uint64_t  id;
} blk_t;

static void fill(blk_t *b)
{
    size_t w = b->n / 8;
    for (size_t i = 0; i < w; i++)
        b->p[i] = b->id * 0x9e3779b97f4a7c15ull + i;
    unsigned char *c = (unsigned char *)b->p;
    for (size_t i = w * 8; i < b->n; i++)
        c[i] = (unsigned char)(b->id + i);
}

/* Are the first n bytes (n <= b->n) what fill() wrote? */
static int intact(const blk_t *b, size_t n)
{
    size_t w = b->n / 8, whole = n / 8 < w ? n / 8 : w;
    for (size_t i = 0; i < whole; i++)
        if (b->p[i] != b->id * 0x9e3779b97f4a7c15ull + i)
            return 0;
    const unsigned char *c = (const unsigned char *)b->p;
    for (size_t i = whole * 8; i < n; i++) {
        unsigned char want = (unsigned char)(b->id + i);
        if (i < w * 8) {
            uint64_t v = b->id * 0x9e3779b97f4a7c15ull + i / 8;
            memcpy(&want, (unsigned char *)&v + i % 8, 1);
        }
        if (c[i] != want)
            return 0;
    }
    return 1;
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static size_t pick_size(uint64_t *s)
{
    uint64_t r = rnd(s);
    if (r % 500 == 0)
        return 300 << 10;
    if (r % 10 == 0)
        return 1 + (r >> 8) % 65536;
    return 1 + (r >> 8) % 512;
}

static int make(blk_t *b, uint64_t id, size_t n, int how)
{
    b->id = id;
    b->n = n;
    b->p = how ? calloc(1, n) : malloc(n);
    if (!b->p) {
        fail("allocation failed", id);
        return 0;
    }
    if (how && ((unsigned char *)b->p)[n - 1] != 0)
        fail("calloc gave non-zero memory", id);
    fill(b);
    return 1;
}

static void drop(blk_t *b)
{
    if (!b->p)
        return;
    if (!intact(b, b->n))
        fail("payload changed while the block was live", b->id);
    free(b->p);
    b->p = NULL;
}

/* ---- mt --------------------------------------------------------------- */

#define XSLOTS 256
static blk_t xchg[XSLOTS];
static pthread_mutex_t xlock = PTHREAD_MUTEX_INITIALIZER;

typedef struct worker {
    int      idx;
    long     n;
    uint64_t seed;
} worker_t;

static void *mt_worker(void *arg)
{
    worker_t *w = arg;
    enum { LIVE = 512 };
    blk_t *live = calloc(LIVE, sizeof *live);
    uint64_t s = w->seed, next = (uint64_t)w->idx << 40;
    for (long i = 0; i < w->n; i++) {
        uint64_t r = rnd(&s);
        blk_t *b = &live[r % LIVE];
        if (!b->p) {
            make(b, ++next, pick_size(&s), (r >> 20) % 4 == 0);
        } else if ((r >> 20) % 8 == 0) {
            /* realloc: the kept part keeps its pattern */
            size_t n = pick_size(&s), keep = n < b->n ? n : b->n;
            uint64_t *q = realloc(b->p, n);
            if (!q) {
                fail("realloc failed", b->id);
                continue;
            }
            b->p = q;
            if (!intact(b, keep))
                fail("realloc lost the payload", b->id);
            b->n = n;
            fill(b);
        } else if ((r >> 20) % 4 == 1) {
            /* hand the block to whichever thread comes next */
            size_t k = (r >> 32) % XSLOTS;
            pthread_mutex_lock(&xlock);
            blk_t old = xchg[k];
            xchg[k] = *b;
            pthread_mutex_unlock(&xlock);
            b->p = NULL;
            drop(&old);
        } else {
            drop(b);
        }
    }
    for (int i = 0; i < LIVE; i++)
        drop(&live[i]);
    free(live);
    return NULL;
}

static int mode_mt(int t, long n)
{
    pthread_t th[64];
    worker_t w[64];
    if (t < 1 || t > 64)
        t = 4;
    for (int i = 0; i < t; i++) {
        w[i] = (worker_t){ i + 1, n, 0x1234567ull * (uint64_t)(i + 1) + 99 };
        if (pthread_create(&th[i], NULL, mt_worker, &w[i]) != 0) {
            fail("pthread_create failed", (uint64_t)i);
            return 1;
        }
    }
    for (int i = 0; i < t; i++)
        pthread_join(th[i], NULL);
    for (int k = 0; k < XSLOTS; k++)
        drop(&xchg[k]);
    printf("mt %d threads x %ld operations\n", t, n);
    return failures != 0;
}

/* ---- churn: what children and background threads do ---------------- */

static void churn(long n, uint64_t seed)
{
    enum { LIVE = 128 };
    blk_t live[LIVE] = { 0 };
    uint64_t s = seed, next = seed << 20;
    for (long i = 0; i < n; i++) {
        blk_t *b = &live[rnd(&s) % LIVE];
        if (b->p)
            drop(b);
        else
            make(b, ++next, pick_size(&s), 0);
    }
    for (int i = 0; i < LIVE; i++)
        drop(&live[i]);
}

static volatile int stop_bg;

static void *bg_churn(void *arg)
{
    uint64_t seed = (uint64_t)(uintptr_t)arg;
    while (!__atomic_load_n(&stop_bg, __ATOMIC_RELAXED))
        churn(1000, seed++);
    return NULL;
}

/* ---- fork ------------------------------------------------------------- */

static int child_work(blk_t *held, int nheld, long n, int depth)
{
    for (int i = 0; i < nheld; i++)
        if (held[i].p && !intact(&held[i], held[i].n))
            fail("a block inherited at fork changed", held[i].id);
    for (int i = 0; i < nheld; i += 2)
        drop(&held[i]);
    churn(n, 77 + (uint64_t)depth);
    if (depth == 0) {
        pid_t g = fork();
        if (g == 0)
            _exit(child_work(held, nheld, n, 1));
        int st;
        if (g < 0 || waitpid(g, &st, 0) != g || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            fail("grandchild failed", (uint64_t)g);
    }
    for (int i = 1; i < nheld; i += 2)
        drop(&held[i]);
    return failures != 0;
}

static int mode_fork(long n)
{
    pthread_t bg;
    if (pthread_create(&bg, NULL, bg_churn, (void *)(uintptr_t)5) != 0)
        return 1;
    enum { HELD = 64, BATCH = 3000 };
    blk_t held[HELD];
    uint64_t s = 42;
    for (int i = 0; i < HELD; i++)
        make(&held[i], 1000 + (uint64_t)i, pick_size(&s), 0);
    static blk_t batch[BATCH];
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < BATCH; i++)
            make(&batch[i], 100000 + (uint64_t)i, 16 + (size_t)i % 200, 0);
        for (int i = 0; i < BATCH; i++)
            drop(&batch[i]);     /* many still queued when fork comes */
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            int r = child_work(held, HELD, n, 0);
            if (round % 2)
                _exit(r);
            exit(r);
        }
        churn(n, 1234 + (uint64_t)round);
        int st;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            fail("child failed", (uint64_t)round);
    }
    __atomic_store_n(&stop_bg, 1, __ATOMIC_RELAXED);
    pthread_join(bg, NULL);
    for (int i = 0; i < HELD; i++)
        drop(&held[i]);
    printf("fork 4 children, 4 grandchildren, %ld operations each\n", n);
    return failures != 0;
}

/* ---- exit ------------------------------------------------------------- */

static blk_t at_exit_blocks[2000];

static void free_at_exit(void)
{
    for (int i = 0; i < 2000; i++)
        drop(&at_exit_blocks[i]);
    churn(2000, 9);
}

static blk_t dtor_blocks[2000];

__attribute__((destructor)) static void free_in_destructor(void)
{
    for (int i = 0; i < 2000; i++)
        drop(&dtor_blocks[i]);
    churn(2000, 11);
    if (failures)
        _exit(1);
}

static int mode_exit(long n, int quick)
{
    uint64_t s = 3;
    for (int i = 0; i < 2000; i++) {
        make(&at_exit_blocks[i], 500000 + (uint64_t)i, pick_size(&s), 0);
        make(&dtor_blocks[i], 600000 + (uint64_t)i, pick_size(&s), 0);
    }
    atexit(free_at_exit);
    pthread_t bg;
    if (pthread_create(&bg, NULL, bg_churn, (void *)(uintptr_t)8) != 0)
        return 1;
    churn(n / 2, 4);
    blk_t *many = malloc((size_t)n * sizeof *many);
    for (long i = 0; i < n; i++)
        make(&many[i], 700000 + (uint64_t)i, 16 + (size_t)i % 100, 0);
    for (long i = 0; i < n; i++)
        drop(&many[i]);
    free(many);
    printf("%s with frees queued\n", quick ? "_exit" : "exit");
    fflush(stdout);
    if (quick)
        _exit(failures != 0);
    exit(failures != 0);
}

/* ---- burst ------------------------------------------------------------ */

static volatile int spinning;

static void *spinner(void *arg)
{
    (void)arg;
    while (__atomic_load_n(&spinning, __ATOMIC_RELAXED))
        ;
    return NULL;
}

/* The tid of the thread named dmm-offload, or 0. */
static pid_t helper_tid(void)
{
    DIR *d = opendir("/proc/self/task");
    pid_t tid = 0;
    struct dirent *e;
    while (d && !tid && (e = readdir(d))) {
        char path[300], name[64] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(name, sizeof name, f) && !strncmp(name, "dmm-offload", 11))
            tid = (pid_t)atoi(e->d_name);
        fclose(f);
    }
    if (d)
        closedir(d);
    return tid;
}

/* Starve the helper (if there is one): SCHED_IDLE, on CPU 0 beside a
 * spinning thread, main on another CPU.  Returns the spinner to stop. */
static int starve_helper(pthread_t *spin)
{
    pid_t h = 0;
    for (int tries = 0; !h && tries < 500; tries++) {   /* it names itself when it runs */
        h = helper_tid();
        if (!h)
            usleep(1000);
    }
    if (!h) {
        fprintf(stderr, "offload: no thread named dmm-offload to starve\n");
        return 0;
    }
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    struct sched_param sp = { 0 };
    if (sched_setaffinity(h, sizeof one, &one) != 0 || sched_setscheduler(h, SCHED_IDLE, &sp) != 0) {
        perror("offload: starving the helper");
        return 0;
    }
    __atomic_store_n(&spinning, 1, __ATOMIC_RELAXED);
    if (pthread_create(spin, NULL, spinner, NULL) != 0)
        return 0;
    pthread_setaffinity_np(*spin, sizeof one, &one);
    if (sysconf(_SC_NPROCESSORS_ONLN) > 1) {
        cpu_set_t other;
        CPU_ZERO(&other);
        CPU_SET(1, &other);
        sched_setaffinity(0, sizeof other, &other);
    }
    return 1;
}

static void release_helper(pthread_t spin)
{
    __atomic_store_n(&spinning, 0, __ATOMIC_RELAXED);
    pthread_join(spin, NULL);
    pid_t h = helper_tid();
    struct sched_param sp = { 0 };
    if (h)
        sched_setscheduler(h, SCHED_OTHER, &sp);
}

static int mode_burst(long n)
{
    enum { KEEP = 1000 };
    blk_t keep[KEEP];
    blk_t *many = malloc((size_t)n * sizeof *many);
    uint64_t s = 17;
    for (int round = 0; round < 2; round++) {
        for (long i = 0; i < n; i++) {
            make(&many[i], 1000000 + (uint64_t)i, 16 + (size_t)(rnd(&s) % 240), 0);
            if (round == 0 && i < KEEP)
                make(&keep[i], 2000000 + (uint64_t)i, 64, 0);
        }
        /* check every payload first, then free in a tight loop: frees
         * come faster than any helper takes them */
        for (long i = 0; i < n; i++)
            if (!intact(&many[i], many[i].n))
                fail("payload changed while the block was live", many[i].id);
        pthread_t spin;
        int starved = round == 1 && starve_helper(&spin);
        for (long i = 0; i < n; i++) {
            free(many[i].p);
            many[i].p = NULL;
            /* 3 x the queue's 7168 blocks: it is full long before (a
             * starved helper holding a lock also slows the program) */
            if (starved && i == 3 * 7168) {
                release_helper(spin);
                starved = 0;
            }
        }
        if (starved)
            release_helper(spin);
        for (int i = 0; i < KEEP; i++)
            if (!intact(&keep[i], keep[i].n))
                fail("a live block changed during a burst of frees", keep[i].id);
    }
    for (int i = 0; i < KEEP; i++)
        drop(&keep[i]);
    free(many);
    printf("burst 2 x %ld frees\n", n);
    return failures != 0;
}

/* ---- lastthread ------------------------------------------------------- */

static void *last_worker(void *arg)
{
    churn((long)(intptr_t)arg, 21);
    usleep(20000);
    churn((long)(intptr_t)arg, 22);
    printf("lastthread done\n");
    fflush(stdout);
    return NULL;
}

static int mode_lastthread(long n)
{
    churn(n, 20);
    pthread_t t;
    if (pthread_create(&t, NULL, last_worker, (void *)(intptr_t)n) != 0)
        return 1;
    pthread_exit(NULL);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: offload mt T N | fork N | exit N | _exit N | burst N | "
                        "lastthread N\n");
        return 2;
    }
    const char *m = argv[1];
    if (!strcmp(m, "mt") && argc >= 4)
        return mode_mt(atoi(argv[2]), atol(argv[3]));
    long n = atol(argv[2]);
    if (!strcmp(m, "fork"))
        return mode_fork(n);
    if (!strcmp(m, "exit") || !strcmp(m, "_exit"))
        return mode_exit(n, m[0] == '_');
    if (!strcmp(m, "burst"))
        return mode_burst(n);
    if (!strcmp(m, "lastthread"))
        return mode_lastthread(n);
    fprintf(stderr, "offload: unknown mode %s\n", m);
    return 2;
}
