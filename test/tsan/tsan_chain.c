/* tsan_chain.c - the allocators of libdmm.so and libdmm_evolved.so under
 * ThreadSanitizer.
 *
 *   tsan_chain [FILE.dmm ...]        the chain API, every preset and chain
 *   tsan_libdmm, tsan_evolved         the same work through the malloc family
 *                                     of preload/shim/shim.c with libdmm.so's
 *                                     back end (DMM_CONFIG, DMM_CHECK as set)
 *                                     or libdmm_evolved.so's
 *
 * Criterion does not start under TSan, and a TSan runtime cannot sit under
 * an LD_PRELOAD'd malloc, so these are plain programs built with
 * -fsanitize=thread together with the code they drive (make check-tsan).
 * tsan_chain calls the chain (allocators/chain.h) directly, for the presets
 * kng lea fib s10 exa (and tlsf), two multi-class chains with gaps, and every .dmm file
 * named, each in a new process so that each starts single-threaded.  The
 * shim builds (TSAN_SHIM) link the shim's objects, made one (ld -r), with
 * its exported names prefixed tsan_shim_ (objcopy), so its malloc does not
 * replace TSan's; the chain is then the shim's, started by its constructor,
 * and fork runs the shim's own atfork handlers.  The work, in each process:
 *
 *   1. the main thread allocates blocks of every range, the fallback path
 *      and aligned blocks while the process is single-threaded (the chain
 *      skips its locks), and checks that every lock is left free;
 *   2. four threads start (the process turns multi-threaded), each frees a
 *      share of those blocks, then runs a random mix of malloc, calloc,
 *      realloc, the aligned calls, usable-size queries and frees, handing
 *      every eighth block to another thread to free; thread 0 runs the
 *      chain's check while the others work and, half-way, forks with the
 *      chain's locks held across the fork (as the shim does); the child
 *      allocates, checks and frees on the inherited chain alone;
 *   3. the main thread joins, frees what is left and checks the chain.
 *
 * Every block is filled with its own tag and checked before it is freed or
 * after it moved; calloc must give zeros, the aligned calls their alignment,
 * usable size at least the request, the shim glibc's errno rules.  Any wrong
 * result makes the exit status non-zero; a data race makes TSan stop the
 * run (halt_on_error=1). */
#include "allocators/chain/chain.h"
#include "allocators/chain/desc.h"

#include <errno.h>
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
extern char __libc_single_threaded;

enum { THREADS = 4, SLOTS = 128, OPS = 3000, EARLY = 96, MAIL_TAG = 0xA5 };

static const char *g_name;
static int g_failures;           /* atomic */
static void *g_early[EARLY];     /* blocks of phase 1 */
static size_t g_early_len[EARLY];
static void *g_mailbox[SLOTS];   /* blocks handed between threads (atomic) */

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    char msg[512];
    if (__atomic_fetch_add(&g_failures, 1, __ATOMIC_RELAXED) >= 20)
        return;   /* the first few say what went wrong */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "tsan: %s: %s\n", g_name, msg);
}

/* ---- the allocator under test ----------------------------------------- */

#ifdef TSAN_SHIM
/* The malloc family of preload/shim/shim.c, renamed (see the Makefile);
 * TSAN_SHIM names the library ("libdmm.so" or "libdmm_evolved.so"). */
void  *tsan_shim_malloc(size_t n);
void  *tsan_shim_calloc(size_t nmemb, size_t size);
void  *tsan_shim_realloc(void *p, size_t n);
void  *tsan_shim_reallocarray(void *p, size_t nmemb, size_t size);
void  *tsan_shim_memalign(size_t align, size_t n);
void  *tsan_shim_aligned_alloc(size_t align, size_t n);
int    tsan_shim_posix_memalign(void **out, size_t align, size_t n);
void  *tsan_shim_valloc(size_t n);
void  *tsan_shim_pvalloc(size_t n);
size_t tsan_shim_malloc_usable_size(void *p);
void   tsan_shim_free(void *p);

static void *a_malloc(size_t n) { return tsan_shim_malloc(n); }
static void *a_calloc(size_t m, size_t n) { return tsan_shim_calloc(m, n); }
static void *a_realloc(void *p, size_t n) { return tsan_shim_realloc(p, n); }
static void *a_memalign(size_t a, size_t n) { return tsan_shim_memalign(a, n); }
static size_t a_usable(void *p) { return tsan_shim_malloc_usable_size(p); }
static void a_free(void *p)
{
    /* free keeps errno */
    errno = 4242;
    tsan_shim_free(p);
    if (errno != 4242)
        fail("free(%p) changed errno to %d", p, errno);
}
static int a_owns(void *p) { (void)p; return 1; }   /* the shim's chain is its own */
static size_t a_check(void) { return 0; }
#else
static dmm_chain_t *g_chain;
static void *a_malloc(size_t n) { return dmm_chain_malloc(g_chain, n); }
static void *a_calloc(size_t m, size_t n) { return dmm_chain_calloc(g_chain, m, n); }
static void *a_realloc(void *p, size_t n) { return dmm_chain_realloc(g_chain, p, n); }
static void *a_memalign(size_t a, size_t n) { return dmm_chain_memalign(g_chain, a, n); }
static size_t a_usable(void *p) { return dmm_chain_usable(g_chain, p); }
static void a_free(void *p) { dmm_chain_free(g_chain, p); }
static int a_owns(void *p) { return dmm_chain_owns(g_chain, p); }
static size_t a_check(void) { return dmm_chain_check(g_chain); }
#endif

/* ---- blocks ------------------------------------------------------------ */

static uint64_t next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Sizes from every part of a chain: mostly small, some medium, a few in
 * the page source's retained range and above. */
static size_t pick_size(uint64_t r)
{
    unsigned k = (unsigned)(r % 100);
    r >>= 8;
    if (k < 70)
        return r % 512;
    if (k < 90)
        return 512 + r % 16384;
    if (k < 98)
        return 16384 + r % 300000;
    return 300000 + r % 1800000;
}

static unsigned char tag_of(int thread, int slot)
{
    return (unsigned char)(thread * 37 + slot * 5 + 1);
}

/* The first, last and some bytes between hold tag. */
static int intact(const void *p, size_t n, unsigned char tag)
{
    const unsigned char *b = p;
    if (n == 0)
        return 1;
    for (size_t k = 0; k < n; k += 1 + n / 32)
        if (b[k] != tag)
            return 0;
    return b[n - 1] == tag;
}

/* A new block from the call `how` picks, checked and filled with tag. */
static void *get_block(uint64_t how, size_t n, unsigned char tag)
{
    void *p = NULL;
    size_t align = DMM_ALIGN;
    const char *what = "malloc";
#ifdef TSAN_SHIM
    switch (how % 8) {
    case 5: {
        align = (size_t)32 << (how >> 8) % 6;
        what = "posix_memalign";
        int rc = tsan_shim_posix_memalign(&p, align, n);
        if (rc != 0)
            fail("posix_memalign(%zu, %zu) = %d", align, n, rc);
        break;
    }
    case 6:
        align = (size_t)64 << (how >> 8) % 4;
        what = "aligned_alloc";
        p = tsan_shim_aligned_alloc(align, n);
        break;
    case 7:
        align = (size_t)sysconf(_SC_PAGESIZE);
        what = (how >> 8) & 1 ? "valloc" : "pvalloc";
        p = (how >> 8) & 1 ? tsan_shim_valloc(n) : tsan_shim_pvalloc(n);
        break;
    }
#endif
    switch (how % 8) {
    case 0:
    case 1:
        what = "calloc";
        p = a_calloc(1, n);
        for (size_t k = 0; p && k < n; k += 1 + n / 64)
            if (((unsigned char *)p)[k]) {
                fail("calloc(1, %zu): byte %zu is not zero", n, k);
                break;
            }
        break;
    case 2:
        align = (size_t)32 << (how >> 8) % 8;   /* 32 .. 4096 */
        what = "memalign";
        p = a_memalign(align, n);
        break;
    case 3:
    case 4:
        p = a_malloc(n);
        break;
    }
#ifndef TSAN_SHIM
    if (how % 8 >= 5)
        p = a_malloc(n);
#endif
    if (!p) {
        fail("%s(%zu) failed: %s", what, n, strerror(errno));
        return NULL;
    }
    if ((uintptr_t)p % align)
        fail("%s(%zu) = %p is not %zu-byte aligned", what, n, p, align);
    if (!a_owns(p))
        fail("%s(%zu) = %p is not a block of the chain", what, n, p);
    if (a_usable(p) < n)
        fail("%s(%zu) = %p has %zu usable bytes", what, n, p, a_usable(p));
    memset(p, tag, n);
    return p;
}

/* A moved or resized block: the contents it had must have come along. */
static void *resize_block(void *p, size_t old, size_t n, unsigned char tag, int byarray)
{
    void *q;
#ifdef TSAN_SHIM
    q = byarray ? tsan_shim_reallocarray(p, 1, n) : a_realloc(p, n);
#else
    (void)byarray;
    q = a_realloc(p, n);
#endif
    if (!q) {
        fail("realloc(%p, %zu) failed: %s", p, n, strerror(errno));
        return p;
    }
    if (!intact(q, old < n ? old : n, tag))
        fail("realloc from %zu to %zu bytes lost the contents", old, n);
    if (a_usable(q) < n)
        fail("realloc(%zu): %zu usable bytes", n, a_usable(q));
    memset(q, tag, n);
    return q;
}

/* What the shim must refuse, and how (glibc's results and errno). */
static void misuse(void)
{
#ifdef TSAN_SHIM
    void *p = (void *)1;
    errno = 0;
    if (tsan_shim_posix_memalign(&p, 24, 10) != EINVAL || p != (void *)1 || errno)
        fail("posix_memalign with alignment 24: not EINVAL, or it changed *out or errno");
    errno = 0;
    if (tsan_shim_calloc(SIZE_MAX / 2, 4) || errno != ENOMEM)
        fail("calloc overflow: not NULL + ENOMEM");
    errno = 0;
    if (tsan_shim_reallocarray(NULL, SIZE_MAX / 2, 4) || errno != ENOMEM)
        fail("reallocarray overflow: not NULL + ENOMEM");
#endif
}

/* Blocks handed between threads carry their length, then the mail tag. */
static void check_mail(const void *p)
{
    size_t n;
    memcpy(&n, p, sizeof n);
    if (n < 16 || n > 4u << 20 || !intact((const char *)p + 8, n - 8, MAIL_TAG))
        fail("a block handed over between threads was changed on the way");
}

/* ---- fork ------------------------------------------------------------- */

#ifndef TSAN_SHIM
/* The chain's locks are held across fork, as in preload/shim/shim.c. */
static void atfork_prepare(void)
{
    dmm_chain_lock_all(g_chain);
}

static void atfork_release(void)
{
    dmm_chain_unlock_all(g_chain);
}
#endif

/* In the forked child: only this thread exists; the chain must work. */
static int child_after_fork(void *const *mine, const size_t *len, int thread)
{
    int bad = 0;
    for (int s = 0; s < SLOTS; s++)
        if (mine[s] && !intact(mine[s], len[s], tag_of(thread, s)))
            bad++;
    void *p[64];
    size_t n[64];
    for (int i = 0; i < 64; i++) {
        n[i] = pick_size(0x9e3779b97f4a7c15ull * (uint64_t)(i + 1));
        p[i] = get_block((uint64_t)i, n[i], (unsigned char)i);
        if (!p[i])
            bad++;
    }
    for (int i = 0; i < 64; i++) {
        if (p[i] && !intact(p[i], n[i], (unsigned char)i))
            bad++;
        a_free(p[i]);
    }
    for (int s = 0; s < SLOTS; s++)
        a_free(mine[s]);
    if (a_check() != 0)
        bad++;
    return bad || __atomic_load_n(&g_failures, __ATOMIC_RELAXED);
}

static void fork_and_wait(void *const *mine, const size_t *len, int thread)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fail("fork: %s", strerror(errno));
        return;
    }
    if (pid == 0)
        _exit(child_after_fork(mine, len, thread) ? 1 : 0);
    int st = 0;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail("the child forked from a worker thread failed (status %#x)", st);
}

/* ---- the worker threads ---------------------------------------------- */

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 7);
    void *mine[SLOTS] = { 0 };
    size_t len[SLOTS] = { 0 };

    /* blocks of the single-threaded phase, freed by another thread */
    for (int i = id; i < EARLY; i += THREADS) {
        if (!intact(g_early[i], g_early_len[i], tag_of(THREADS, i)))
            fail("early block %d corrupted", i);
        a_free(g_early[i]);
    }

    for (int op = 0; op < OPS; op++) {
        uint64_t r = next(&x);
        int s = (int)(r % SLOTS);
        unsigned char tag = tag_of(id, s);
        r >>= 7;
        if (id == 0 && op % 500 == 250 && a_check() != 0)
            fail("check found violations while other threads ran");
        if (op % 500 == 100)
            misuse();
        if (id == 0 && op == OPS / 2)
            fork_and_wait(mine, len, id);
        if (!mine[s]) {
            size_t n = pick_size(r);
            mine[s] = get_block(r >> 40, n, tag);
            len[s] = n;
            continue;
        }
        if (!intact(mine[s], len[s], tag)) {
            fail("thread %d: block %p of %zu bytes corrupted", id, mine[s], len[s]);
            return NULL;
        }
        if ((r >> 40) % 3 == 0) {
            size_t n = pick_size(r >> 8) + 1;
            mine[s] = resize_block(mine[s], len[s], n, tag, (r >> 50) & 1);
            len[s] = n;
            continue;
        }
        void *give = mine[s];
        /* every eighth block goes to whichever thread takes this slot next,
         * which finds it as it was left: its length, then the mail tag */
        if ((r >> 44) % 8 == 0 && len[s] >= 16) {
            memcpy(give, &len[s], sizeof len[s]);
            memset((char *)give + 8, MAIL_TAG, len[s] - 8);
            give = __atomic_exchange_n(&g_mailbox[s], give, __ATOMIC_ACQ_REL);
            if (give)
                check_mail(give);
        }
        a_free(give);
        mine[s] = NULL;
    }
    for (int s = 0; s < SLOTS; s++)
        a_free(mine[s]);
    return NULL;
}

/* ---- one process ------------------------------------------------------ */

static int run(void)
{
    if (!__libc_single_threaded)
        fail("the process is not single-threaded at the start");
#ifndef TSAN_SHIM
    pthread_atfork(atfork_prepare, atfork_release, atfork_release);
#endif

    /* phase 1: single-threaded, locks skipped */
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < EARLY; i++) {
        size_t n = i % 8 == 7 ? 0 : pick_size(next(&x));
        unsigned char tag = tag_of(THREADS, i);
        g_early[i] = get_block(x >> 20, n, tag);
        g_early_len[i] = n;
        if (!g_early[i])
            return 1;
        if (i % 5 == 0) {   /* a realloc before any thread exists */
            size_t m = pick_size(next(&x)) + 1;
            g_early[i] = resize_block(g_early[i], n, m, tag, i & 1);
            g_early_len[i] = m;
        }
    }
    misuse();
#ifndef TSAN_SHIM
    for (int i = 0; i < g_chain->n; i++)
        if (__atomic_load_n(&g_chain->locks[i], __ATOMIC_RELAXED))
            fail("lock %d still held after the single-threaded phase", i);
#endif

    /* phase 2: threads */
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i) != 0) {
            fail("pthread_create failed");
            return 1;
        }
    if (__libc_single_threaded)
        fail("the process still counts as single-threaded");
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);

    /* phase 3 */
    for (int s = 0; s < SLOTS; s++)
        a_free(g_mailbox[s]);
    size_t v = a_check();
    if (v)
        fail("check found %zu violations at the end", v);
    return __atomic_load_n(&g_failures, __ATOMIC_RELAXED) ? 1 : 0;
}

#ifdef TSAN_SHIM
int main(void)
{
    const char *cfg = getenv("DMM_CONFIG"), *check = getenv("DMM_CHECK");
    static char name[256];
    snprintf(name, sizeof name, "%s%s%s%s", TSAN_SHIM,
             cfg && *cfg && strcmp(TSAN_SHIM, "libdmm.so") == 0 ? " DMM_CONFIG=" : "",
             cfg && *cfg && strcmp(TSAN_SHIM, "libdmm.so") == 0 ? cfg : "",
             check && *check && strcmp(check, "0") ? " DMM_CHECK=1" : "");
    g_name = name;
    int rc = run();
    printf("tsan: %s: %s\n", g_name, rc ? "FAILED" : "ok");
    return rc;
}
#else
/* Chains of several classes, with a gap (fallback path between ranges) and
 * an unbounded tail. */
static const char *const multi[] = {
    "sss           range=(0,256]          split=no  coalesce=no  list=sll   fit=first order=lifo\n"
    "segregated    range=(256,65536]      split=yes coalesce=yes list=btree fit=best  order=fifo lists=6\n"
    "buddy-binary  range=(65536,1048576]  split=yes coalesce=yes list=dll   fit=first order=lifo\n",
    "exact         range=(0,1024]         split=no  coalesce=no  list=sll   fit=exact order=lifo\n"
    "kingsley      range=(2048,inf]       split=no  coalesce=no  list=sll   fit=exact order=lifo\n",
};

/* NAME: a preset, "multi1".."multiN", or a .dmm file. */
static int one(const char *name)
{
    dmm_err_t err;
    dmm_desc_t d;
    size_t k = 0;
    g_name = name;
    if (sscanf(name, "multi%zu", &k) == 1 && k >= 1 && k <= sizeof multi / sizeof multi[0]) {
        if (dmm_desc_parse(name, multi[k - 1], strlen(multi[k - 1]), &d, &err) != 0) {
            fail("%s", err.msg);
            return 1;
        }
    } else if (dmm_desc_load(name, &d, &err) != 0) {
        fail("%s", err.msg);
        return 1;
    }
    g_chain = dmm_chain_new(&d, DMM_PS_REAL, &err);
    if (!g_chain) {
        fail("%s", err.msg);
        return 1;
    }
    int rc = run();
    dmm_chain_delete(g_chain);
    return rc;
}

/* "tsan_chain --one NAME" as a new program: under TSan a forked child
 * already has the runtime's background thread, a new program starts
 * single-threaded as any program does. */
static int in_new_process(const char *name)
{
    fflush(NULL);
    pid_t pid;
    char *const av[] = { "tsan_chain", "--one", (char *)name, NULL };
    int st = 0;
    if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, av, environ) != 0 ||
        waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "tsan: chain %s: FAILED (status %#x)\n", name, st);
        return 1;
    }
    printf("tsan: chain %s: ok\n", name);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--one"))
        return one(argv[2]);
    static const char *const presets[] = { "kng", "lea", "fib", "s10", "exa", "tlsf" };
    int failed = 0, runs = 0;
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++, runs++)
        failed += in_new_process(presets[i]);
    for (size_t i = 0; i < sizeof multi / sizeof multi[0]; i++, runs++) {
        char name[32];
        snprintf(name, sizeof name, "multi%zu", i + 1);
        failed += in_new_process(name);
    }
    for (int i = 1; i < argc; i++, runs++)
        failed += in_new_process(argv[i]);
    printf("tsan: %d chains, %d failed\n", runs, failed);
    return failed ? 1 : 0;
}
#endif
