/* tracee.c - a program with a known allocation pattern, for the tracer's
 * integration tests.  Every mode makes exactly the calls it documents, so a
 * test can count records.  Usage: tracee MODE N
 *
 *   main N     N x (malloc, realloc, calloc, free x2), return from main
 *   exit N     the same, then exit(0) from a nested function
 *   _exit N    the same, then _exit(0)
 *   threads N  4 threads, each N x (malloc, free), half the blocks freed by
 *              another thread than the one that allocated them
 *   handoff N  two threads, each N x malloc of 48 bytes handed to the other
 *              through a ring, which frees it while the first goes on: the
 *              addresses one thread frees come back to the other (glibc
 *              moves them between its arenas), so their reuse is ordered
 *              only by the trace's numbering across threads
 *   handoff12 N  the same with 12 threads in a ring (each hands to the next),
 *              in two waves (the second starts when the first has exited):
 *              more threads at once than the recorder has order tables
 *              for, and tables taken again by later threads
 *   threxit N  a thread allocates N blocks, frees them and exits, while main
 *              waits (pthread_join) and then returns
 *   fork N     N x main-pattern, fork; child does N more and exits, parent
 *              does N more and waits
 *   exec N     N x main-pattern, then execs itself as "tracee main N"
 *   abort N    N x main-pattern, then abort()
 *   segv N     N x main-pattern, then a write through NULL
 *   sigpipe N  N x main-pattern, then a write into a pipe nobody reads:
 *              SIGPIPE ends it (status 1 if it was not at its default)
 *   aligned N  N x each aligned call (memalign, posix_memalign,
 *              aligned_alloc, valloc, pvalloc), freed
 *   forkmt N   a thread allocates without pause while main forks N times;
 *              each child allocates and frees, checks its blocks, exits
 *   errno N    errno survives successful calls; failed calls set it as
 *              glibc documents (N ignored); exit status 1 on a mismatch
 *   execfail N a thread allocates without pause while main does N x
 *              main-pattern, then an exec that fails (the tracer writes the
 *              thread's pending records, then lets it go on), waits for
 *              1000 more of the thread's calls, stops it and returns
 *   writers N  N x main-pattern, then prints its children named dmm-writer
 *              (their pids), and fails (status 3) unless wait(2) says it
 *              has no child
 *   forkkilled N  forks a child that does N x main-pattern and SIGKILLs
 *              itself; waits for it and returns
 *   vfork N    a thread allocates (resting 1 ms every 1000 rounds) while
 *              main does 5 x (N x main-pattern, a vfork whose child execs
 *              /bin/true), then a vfork whose child's exec fails and which
 *              _exits; waits for the thread to make 100 000 more calls
 *              (status 5 if it stalls for 10 s), does N x main-pattern,
 *              stops it, prints its dmm-writer children and returns
 *   forktermed N  forks a child that does N x main-pattern, says so through
 *              a pipe and waits; sends it SIGTERM (at its default action)
 *              and waits for it; prints whether SIGTERM ended it
 *   killed N   N x main-pattern, prints its dmm-writer children (looking
 *              again for up to 2 s while it sees none), then SIGKILLs itself
 *   bigcalloc N  calloc of N MiB, one byte of each MiB checked zero and
 *              written, then the same again after freeing it; prints the
 *              process's peak RSS in KiB (ru_maxrss)
 *   smallaligned N  N blocks of 48 to 147 bytes, 64-byte aligned
 *              (posix_memalign), each written, all held, then freed; prints
 *              the peak RSS in KiB and the CPU time so far in µs
 *   sparse N   N x: malloc of 4 MiB with one byte written in each of its
 *              first 3 pages, malloc of 1 MiB written whole, malloc of 64
 *              bytes; the three freed (the recorder says how much of the
 *              two large ones was resident where glibc mapped them: in the
 *              first round; its first free raises glibc's mmap threshold)
 *   sparselive N  sparse N, then two large blocks left live to the end: a
 *              calloc of 8 MiB with a byte written at 0 and at 4 MiB, and a
 *              64-byte block realloc'd to 16 MiB with its first page
 *              written (the recorder says at the end how much of each is
 *              resident); sparselive_exit N the same, ended by _exit(0)
 *   cpu N      two threads, each N ms of its own CPU time: one allocating
 *              and freeing now and then, one only counting; then prints
 *              the process's CPU time in µs, forks a child that makes the
 *              main pattern 10 times and exits, and waits for it
 *   deep N     12 calls deep (deep_rec), deep_leaf makes N x each call
 *              the shim has (malloc, calloc, realloc moved, reallocarray,
 *              the aligned ones, a 1 MiB malloc, a failed malloc, free,
 *              free(NULL)): 20 calls a round, first in main's thread, then
 *              in a second thread while main waits
 *   fdtaken N  N/2 x main-pattern; then a file of its own, "mine" in the
 *              working directory, put with dup2 on every descriptor above 2
 *              that it did not open (as a shell's `exec 3>file` does on
 *              one), "mine" written through the highest of them; a fork's
 *              child makes the pattern 100 times, writes "child" through
 *              that number and _exits; then N - N/2 more, and "end"
 *   fdclosed N N/2 x main-pattern; then every descriptor above 2 closed
 *              (close_range, as a daemon's closefrom does); N - N/2 more
 *   fdclosedkilled N  fdclosed N, then as killed does after its pattern
 *   fdlost N   fdclosed N, the trace file (the descriptor whose name ends in
 *              ".trc") renamed to NAME.moved before the descriptors close
 *   secure N   prints whether the process runs in secure-execution mode
 *              (AT_SECURE: setuid, setgid or capabilities), then the
 *              main pattern
 *
 * It prints one line with a checksum of what it did, so that tests can
 * compare output under the tracer with a plain run. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static unsigned long checksum;

static void pattern(int n)
{
    for (int i = 0; i < n; i++) {
        char *a = malloc(16 + (size_t)i % 100);
        a[0] = (char)i;
        a = realloc(a, 200 + (size_t)i % 300);
        int *b = calloc(4, sizeof *b);
        checksum += (unsigned char)a[0] + (unsigned)b[3];
        free(a);
        free(b);
    }
}

#define THREADS 4
static void *shared[THREADS][1024];
static pthread_barrier_t barrier;

static void *thread_body(void *arg)
{
    int t = (int)(intptr_t)arg;
    int n = 1024;
    for (int i = 0; i < n; i++)
        shared[t][i] = malloc(32 + (size_t)(i % 7) * 16);
    pthread_barrier_wait(&barrier);
    /* free the odd blocks of the next thread, the even ones of our own */
    int other = (t + 1) % THREADS;
    for (int i = 1; i < n; i += 2)
        free(shared[other][i]);
    for (int i = 0; i < n; i += 2)
        free(shared[t][i]);
    return NULL;
}

/* deep: every way into the shim, from a known place 12 calls deep.  Not
 * inlined, cloned or tail-called, so that each level is a frame of its
 * own under its own name. */
static int deep_n;

__attribute__((noinline, noclone)) static void deep_leaf(int n)
{
    volatile size_t huge = SIZE_MAX - 4096;
    void *volatile nil = NULL;   /* a free(NULL) the compiler keeps */
    for (int i = 0; i < n; i++) {
        char *a = malloc(24);
        char *b = calloc(3, 8);
        a = realloc(a, 100000);             /* moved: RELEASE and REALLOC */
        b = reallocarray(b, 5, 8);
        void *c = memalign(64, 100), *d = NULL;
        if (posix_memalign(&d, 64, 100))
            d = NULL;
        void *e = aligned_alloc(64, 128), *f = valloc(100), *g = pvalloc(100);
        char *big = malloc(1u << 20);       /* the large blocks' way */
        big[0] = (char)i;
        void *h = malloc(huge);             /* fails */
        checksum += (unsigned char)big[0] + (h == NULL);
        free(a);
        free(b);
        free(c);
        free(d);
        free(e);
        free(f);
        free(g);
        free(big);
        free(nil);
    }
}

__attribute__((noinline, noclone)) static void deep_rec(int level, int n)
{
    if (level == 0)
        deep_leaf(n);
    else
        deep_rec(level - 1, n);
    __asm__ volatile("" ::: "memory");   /* no tail call */
}

static void *deep_thread(void *arg)
{
    (void)arg;
    deep_rec(11, deep_n);
    return NULL;
}

/* handoff: each thread mallocs into its outgoing ring and frees what the
 * other put into its incoming one. */
#define RING 256
#define HANDOFF_MAX 12
typedef struct {
    pthread_mutex_t lock;
    void *slot[RING];
    unsigned head, tail;
} ring_t;
static ring_t rings[HANDOFF_MAX];
static int handoff_n, handoff_threads;

static int ring_put(ring_t *r, void *p)
{
    pthread_mutex_lock(&r->lock);
    int ok = r->tail - r->head < RING;
    if (ok)
        r->slot[r->tail++ % RING] = p;
    pthread_mutex_unlock(&r->lock);
    return ok;
}

static void *ring_get(ring_t *r)
{
    pthread_mutex_lock(&r->lock);
    void *p = r->head != r->tail ? r->slot[r->head++ % RING] : NULL;
    pthread_mutex_unlock(&r->lock);
    return p;
}

static void *handoff_body(void *arg)
{
    int t = (int)(intptr_t)arg;
    ring_t *out = &rings[t], *in = &rings[(t + handoff_threads - 1) % handoff_threads];
    int made = 0, freed = 0;
    while (made < handoff_n || freed < handoff_n) {
        void *p;
        while ((p = ring_get(in)) != NULL) {
            free(p);
            freed++;
        }
        if (made < handoff_n) {
            char *q = malloc(48);
            q[0] = (char)made;
            while (!ring_put(out, q)) {
                while ((p = ring_get(in)) != NULL) {
                    free(p);
                    freed++;
                }
                sched_yield();
            }
            made++;
        } else {
            sched_yield();
        }
    }
    return NULL;
}

static void *exiting_thread(void *arg)
{
    int n = (int)(intptr_t)arg;
    void **v = malloc((size_t)n * sizeof *v);
    for (int i = 0; i < n; i++)
        v[i] = malloc(8);
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
    pthread_exit(NULL);
}

static volatile int spinning = 1;
static unsigned busy_rounds;   /* the busy thread's calls so far, by 2 */
static int busy_nap;           /* 1: it sleeps 1 ms every 1000 rounds */

static void *busy_thread(void *arg)
{
    (void)arg;
    void *held[64] = { 0 };
    unsigned i = 0;
    while (__atomic_load_n(&spinning, __ATOMIC_RELAXED)) {
        unsigned k = i++ % 64;
        free(held[k]);
        held[k] = malloc(16 + (i * 7) % 4000);
        memset(held[k], 1, 16);
        __atomic_store_n(&busy_rounds, i, __ATOMIC_RELAXED);
        if (busy_nap && i % 1000 == 0)
            usleep(1000);
    }
    for (int k = 0; k < 64; k++)
        free(held[k]);
    return NULL;
}

/* Print "tracee writers K PID..." for this process's children named
 * dmm-writer (the tracer's writer process). */
/* cpu mode: the calling thread's CPU time in ms */
static long thread_cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *cpu_thread(void *arg)
{
    long ms = (long)(intptr_t)arg;
    int allocate = ms > 0;
    ms = allocate ? ms : -ms;
    volatile unsigned long sum = 0;
    while (thread_cpu_ms() < ms)
        for (int i = 0; i < 4000; i++) {
            if (allocate && i == 0) {
                char *p = malloc(16 + (size_t)(i & 63));
                p[0] = (char)i;
                sum += (unsigned long)p[0];
                free(p);
            } else {
                sum += (unsigned long)i;
            }
        }
    return NULL;
}

/* wait_ms: look again for that long while none is seen (a writer just
 * started names itself once it first runs) */
static void print_writers(int wait_ms)
{
    int pids[16], k = 0;
    char path[300], list[4096] = "";
again:;
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/children", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t n = fread(list, 1, sizeof list - 1, f);
        list[n] = 0;
        fclose(f);
        for (char *p = list, *end; k < 16; p = end) {
            long pid = strtol(p, &end, 10);
            if (end == p)
                break;
            char comm[64] = "";
            snprintf(path, sizeof path, "/proc/%ld/comm", pid);
            FILE *c = fopen(path, "r");
            if (c) {
                if (!fgets(comm, sizeof comm, c))
                    comm[0] = 0;
                fclose(c);
            }
            if (!strcmp(comm, "dmm-writer\n"))
                pids[k++] = (int)pid;
        }
    }
    if (d)
        closedir(d);
    if (k == 0 && wait_ms > 0) {
        usleep(10000);
        wait_ms -= 10;
        goto again;
    }
    printf("tracee writers %d", k);
    for (int i = 0; i < k; i++)
        printf(" %d", pids[i]);
    printf("\n");
    fflush(stdout);
}

/* The descriptors above 2, highest first; how many. */
static int fds_above_2(int *fds, int max)
{
    int k = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) && k < max) {
        int fd = atoi(e->d_name);
        if (e->d_name[0] != '.' && fd > 2 && fd != dirfd(d))
            fds[k++] = fd;
    }
    closedir(d);
    for (int i = 0; i < k; i++)
        for (int j = i + 1; j < k; j++)
            if (fds[j] > fds[i]) {
                int t = fds[i];
                fds[i] = fds[j];
                fds[j] = t;
            }
    return k;
}

/* The file of the descriptor whose name ends in ".trc", renamed to
 * NAME.moved: 0, or -1 where there is none. */
static int move_trace(void)
{
    int fds[64], k = fds_above_2(fds, 64);
    for (int i = 0; i < k; i++) {
        char link[64], name[4096], to[4200];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fds[i]);
        ssize_t l = readlink(link, name, sizeof name - 1);
        if (l < 5)
            continue;
        name[l] = 0;
        if (strcmp(name + l - 4, ".trc"))
            continue;
        snprintf(to, sizeof to, "%s.moved", name);
        return rename(name, to);
    }
    return -1;
}

static void say_through(int fd, const char *s)
{
    if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
        _exit(4);
}

/* path run in a vfork's child: its exit status (127: the exec failed, and
 * the child _exited). */
static __attribute__((noinline)) int vfork_exec(const char *path)
{
    fflush(stdout);
    pid_t pid = vfork();
    if (pid == 0) {
        execl(path, "true", (char *)NULL);
        _exit(127);
    }
    int st;
    waitpid(pid, &st, 0);
    return WEXITSTATUS(st);
}

static void leave(int how)
{
    printf("tracee checksum %lu\n", checksum);
    fflush(stdout);
    if (how == 1)
        exit(0);
    if (how == 2)
        _exit(0);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: tracee MODE N\n");
        return 2;
    }
    const char *mode = argv[1];
    int n = atoi(argv[2]);
    if (!strcmp(mode, "main")) {
        pattern(n);
    } else if (!strcmp(mode, "exit")) {
        pattern(n);
        leave(1);
    } else if (!strcmp(mode, "_exit")) {
        pattern(n);
        leave(2);
    } else if (!strcmp(mode, "threads")) {
        pthread_t th[THREADS];
        pthread_barrier_init(&barrier, NULL, THREADS);
        for (int t = 0; t < THREADS; t++)
            pthread_create(&th[t], NULL, thread_body, (void *)(intptr_t)t);
        for (int t = 0; t < THREADS; t++)
            pthread_join(th[t], NULL);
        checksum = THREADS * 1024;
    } else if (!strcmp(mode, "handoff") || !strcmp(mode, "handoff12")) {
        pthread_t th[HANDOFF_MAX];
        int many = !strcmp(mode, "handoff12");
        int waves = many ? 2 : 1;
        handoff_n = n;
        handoff_threads = many ? HANDOFF_MAX : 2;
        for (int w = 0; w < waves; w++) {
            for (int t = 0; t < handoff_threads; t++) {
                pthread_mutex_init(&rings[t].lock, NULL);
                rings[t].head = rings[t].tail = 0;
            }
            for (int t = 0; t < handoff_threads; t++)
                pthread_create(&th[t], NULL, handoff_body, (void *)(intptr_t)t);
            for (int t = 0; t < handoff_threads; t++)
                pthread_join(th[t], NULL);
        }
        checksum = (unsigned long)(waves * handoff_threads) * (unsigned long)n;
    } else if (!strcmp(mode, "execfail")) {
        pthread_t th;
        pthread_create(&th, NULL, busy_thread, NULL);
        while (__atomic_load_n(&busy_rounds, __ATOMIC_RELAXED) < 1000)
            sched_yield();   /* under way before the exec */
        pattern(n);
        execl("/nonexistent/dmm-tracee", "tracee", (char *)NULL);
        unsigned after = __atomic_load_n(&busy_rounds, __ATOMIC_RELAXED) + 1000;
        while (__atomic_load_n(&busy_rounds, __ATOMIC_RELAXED) < after)
            sched_yield();
        spinning = 0;
        pthread_join(th, NULL);
    } else if (!strcmp(mode, "threxit")) {
        pthread_t th;
        pthread_create(&th, NULL, exiting_thread, (void *)(intptr_t)n);
        pthread_join(th, NULL);
        checksum = (unsigned long)n;
    } else if (!strcmp(mode, "fork")) {
        pattern(n);
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            pattern(n);
            leave(1);
        }
        pattern(n);
        int st;
        waitpid(pid, &st, 0);
        checksum += (unsigned long)WEXITSTATUS(st);
    } else if (!strcmp(mode, "forkkilled")) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            pattern(n);
            raise(SIGKILL);
        }
        int st;
        waitpid(pid, &st, 0);
        checksum += (unsigned long)(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    } else if (!strcmp(mode, "fdtaken")) {
        pattern(n / 2);
        int fds[64], k = fds_above_2(fds, 64);
        int mine = open("mine", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (mine < 0)
            return 3;
        if (k == 0)   /* run plain: nothing to take */
            fds[k++] = mine;
        for (int i = 0; i < k; i++)
            if (fds[i] != mine && dup2(mine, fds[i]) != fds[i])
                return 3;
        if (fds[0] != mine)
            close(mine);
        say_through(fds[0], "mine\n");
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            pattern(100);
            say_through(fds[0], "child\n");
            _exit(0);
        }
        int st;
        waitpid(pid, &st, 0);
        checksum += (unsigned long)WEXITSTATUS(st);
        pattern(n - n / 2);
        say_through(fds[0], "end\n");
    } else if (!strcmp(mode, "fdclosed") || !strcmp(mode, "fdclosedkilled") ||
               !strcmp(mode, "fdlost")) {
        pattern(n / 2);
        if (!strcmp(mode, "fdlost") && move_trace() != 0)
            return 3;
        if (syscall(SYS_close_range, 3u, ~0u, 0) != 0) {
            int fds[64], k = fds_above_2(fds, 64);
            for (int i = 0; i < k; i++)
                close(fds[i]);
        }
        pattern(n - n / 2);
        if (!strcmp(mode, "fdclosedkilled")) {
            print_writers(2000);
            raise(SIGKILL);
        }
    } else if (!strcmp(mode, "vfork")) {
        pthread_t th;
        busy_nap = 1;   /* a trace the test reads in a moment */
        pthread_create(&th, NULL, busy_thread, NULL);
        for (int r = 0; r < 6; r++) {
            if (r < 5)
                pattern(n);
            checksum += (unsigned long)vfork_exec(r < 5 ? "/bin/true" : "/nonexistent/tracee");
        }
        unsigned from = __atomic_load_n(&busy_rounds, __ATOMIC_RELAXED);
        for (int i = 0; __atomic_load_n(&busy_rounds, __ATOMIC_RELAXED) - from < 50000; i++) {
            if (i == 10000)
                return 5;   /* the thread has stalled */
            usleep(1000);
        }
        pattern(n);
        __atomic_store_n(&spinning, 0, __ATOMIC_RELAXED);
        pthread_join(th, NULL);
        print_writers(0);
    } else if (!strcmp(mode, "forktermed")) {
        int p[2];
        if (pipe(p) != 0)
            return 3;
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            pattern(n);
            if (write(p[1], "x", 1) != 1)
                _exit(3);
            for (;;)
                pause();
        }
        char c;
        if (read(p[0], &c, 1) != 1)
            return 3;
        kill(pid, SIGTERM);
        int st;
        waitpid(pid, &st, 0);
        printf("tracee child ended by SIGTERM: %d\n", WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
    } else if (!strcmp(mode, "exec")) {
        pattern(n);
        fflush(stdout);
        execl("/proc/self/exe", argv[0], "main", argv[2], (char *)NULL);
        perror("execl");
        return 1;
    } else if (!strcmp(mode, "abort")) {
        pattern(n);
        leave(0);
        abort();
    } else if (!strcmp(mode, "segv")) {
        pattern(n);
        leave(0);
        volatile int *null = (volatile int *)(uintptr_t)(argc - 3);
        *null = 1;
    } else if (!strcmp(mode, "sigpipe")) {
        pattern(n);
        leave(0);
        int p[2];
        if (pipe(p) != 0)
            return 1;
        close(p[0]);
        ssize_t w = write(p[1], "x", 1);
        printf("tracee write %zd: SIGPIPE is not at its default\n", w);
        return 1;
    } else if (!strcmp(mode, "aligned")) {
        /* volatile: the compiler may drop an unused malloc/free pair */
        void *volatile p;
        for (int i = 0; i < n; i++) {
            p = memalign(64, 100);
            free(p);
            void *q;
            if (posix_memalign(&q, 128, 100) == 0) {
                p = q;
                free(p);
            }
            p = aligned_alloc(256, 512);
            free(p);
            p = valloc(100);
            free(p);
            p = pvalloc(100);
            free(p);
        }
        checksum = (unsigned long)n;
    } else if (!strcmp(mode, "forkmt")) {
        pthread_t th;
        pthread_create(&th, NULL, busy_thread, NULL);
        int bad = 0;
        for (int f = 0; f < n; f++) {
            fflush(stdout);
            pid_t pid = fork();
            if (pid == 0) {
                /* only this thread exists here: the allocator must not be
                 * left locked by the one that was busy in the parent */
                char *v[100];
                for (int i = 0; i < 100; i++) {
                    v[i] = malloc(32 + (size_t)i * 40);
                    memset(v[i], i, 32);
                }
                int ok = 1;
                for (int i = 0; i < 100; i++) {
                    ok &= v[i][31] == (char)i;
                    free(v[i]);
                }
                _exit(ok ? 0 : 1);
            }
            int st;
            waitpid(pid, &st, 0);
            bad += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
        }
        __atomic_store_n(&spinning, 0, __ATOMIC_RELAXED);
        pthread_join(th, NULL);
        checksum = (unsigned long)bad;
        leave(0);
        return bad ? 1 : 0;
    } else if (!strcmp(mode, "writers")) {
        pattern(n);
        print_writers(0);
        errno = 0;
        if (wait(NULL) != -1 || errno != ECHILD) {
            leave(0);
            return 3;
        }
    } else if (!strcmp(mode, "killed")) {
        pattern(n);
        print_writers(2000);
        raise(SIGKILL);
    } else if (!strcmp(mode, "bigcalloc")) {
        size_t mib = (size_t)n << 20;
        int bad = 0;
        for (int round = 0; round < 2; round++) {
            unsigned char *p = calloc(mib, 1);
            if (!p)
                return 1;
            for (size_t off = 0; off < mib; off += (1u << 20) - 4096 * (size_t)round) {
                bad |= p[off] != 0;
                p[off] = 1;
            }
            free(p);
        }
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        printf("tracee bigcalloc maxrss %ld bad %d\n", ru.ru_maxrss, bad);
        return bad;
    } else if (!strcmp(mode, "smallaligned")) {
        void **v = malloc((size_t)n * sizeof *v);
        int bad = !v;
        for (int i = 0; !bad && i < n; i++) {
            bad |= posix_memalign(&v[i], 64, 48 + (size_t)(i % 100)) != 0;
            bad |= !bad && (uintptr_t)v[i] % 64 != 0;
            if (!bad)
                memset(v[i], i & 0xff, 48);
        }
        for (int i = 0; !bad && i < n; i++) {
            bad |= ((unsigned char *)v[i])[47] != (i & 0xff);
            free(v[i]);
        }
        free(v);
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        printf("tracee smallaligned maxrss %ld bad %d cpu_us %lld\n", ru.ru_maxrss, bad,
               (long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
                   ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
        return bad;
    } else if (!strcmp(mode, "sparse") || !strcmp(mode, "sparselive") ||
               !strcmp(mode, "sparselive_exit")) {
        for (int i = 0; i < n; i++) {
            /* through volatiles: -O2 may drop a malloc and free it sees whole */
            char *volatile a = malloc(4u << 20), *volatile b = malloc(1u << 20);
            char *volatile c = malloc(64);
            if (!a || !b || !c)
                return 1;
            for (int k = 0; k < 3; k++)
                a[k * 4096] = (char)(k + 1);
            memset(b, 2, 1u << 20);
            c[0] = 3;
            checksum += (unsigned char)a[8192] + (unsigned char)b[(1u << 20) - 1] +
                        (unsigned char)c[0];
            free(a);
            free(b);
            free(c);
        }
        if (strcmp(mode, "sparse")) {
            static char *volatile keep[2];
            keep[0] = calloc(1, 8u << 20);   /* above the mmap threshold that sparse raised */
            char *volatile r = malloc(64);
            keep[1] = r ? realloc(r, 16u << 20) : NULL;   /* mapped: above the threshold too */
            if (!keep[0] || !keep[1])
                return 1;
            keep[0][0] = 1;
            keep[0][4u << 20] = 1;
            memset(keep[1], 4, 4096);
            checksum += (unsigned char)keep[0][4u << 20] + (unsigned char)keep[1][100];
            if (!strcmp(mode, "sparselive_exit")) {
                printf("tracee checksum %lu\n", checksum);
                fflush(stdout);
                _exit(0);
            }
        }
    } else if (!strcmp(mode, "cpu")) {
        pthread_t a, b;
        pthread_create(&a, NULL, cpu_thread, (void *)(intptr_t)n);
        pthread_create(&b, NULL, cpu_thread, (void *)(intptr_t)-n);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        printf("tracee cpu cpu_us %lld\n",
               (long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
                   ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            pattern(10);
            _exit(0);
        }
        int st;
        return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    } else if (!strcmp(mode, "deep")) {
        deep_n = n;
        deep_rec(11, n);
        pthread_t t;
        pthread_create(&t, NULL, deep_thread, NULL);
        pthread_join(t, NULL);
    } else if (!strcmp(mode, "secure")) {
        printf("tracee secure %lu\n", getauxval(AT_SECURE));
        pattern(n);
    } else if (!strcmp(mode, "errno")) {
        int bad = 0;
        void *volatile p;
        /* sizes the compiler cannot see, so that it lets them be asked for */
        volatile size_t huge = SIZE_MAX - 4096, half = SIZE_MAX / 2;
        errno = EILSEQ;
        p = malloc(10);
        bad |= errno != EILSEQ;
        p = realloc(p, 100000);
        bad |= errno != EILSEQ;
        free(p);
        bad |= errno != EILSEQ;
        p = calloc(3, 7);
        free(p);
        bad |= (errno != EILSEQ) << 1;
        p = malloc(huge);
        bad |= (p != NULL || errno != ENOMEM) << 2;
        errno = 0;
        p = calloc(half, 4);
        bad |= (p != NULL || errno != ENOMEM) << 3;
        errno = 0;
        p = reallocarray(NULL, half, 4);
        bad |= (p != NULL || errno != ENOMEM) << 4;
        void *q = (void *)1;
        errno = EILSEQ;
        bad |= (posix_memalign(&q, 24, 10) != EINVAL || q != (void *)1 || errno != EILSEQ) << 5;
        free(NULL);
        bad |= (errno != EILSEQ) << 6;
        checksum = (unsigned long)bad;
        leave(0);
        return bad ? 1 : 0;
    } else {
        fprintf(stderr, "tracee: unknown mode %s\n", mode);
        return 2;
    }
    leave(0);
    return 0;
}
