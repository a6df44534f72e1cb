/* shim.c - the malloc family of libdmm.so and libdmm_evolved.so: any
 * program on any DMM.
 *
 *   LD_PRELOAD=build/libdmm.so DMM_CONFIG=lea|kng|fib|s10|exa|file.dmm ./app
 *   LD_PRELOAD=build/libdmm_evolved.so ./app
 *
 * Both libraries link this file; what differs between them is their back
 * end (backend.h): which chain, and how malloc and free reach it.
 *
 * The chain is built on the first call (which may come from the dynamic
 * loader, before any constructor): its description is parsed without
 * malloc, its memory comes from the page source.  A block the chain does
 * not own (a bad DMM_CONFIG leaves the program on glibc's malloc) goes to
 * glibc, so nothing allocated is ever handed to the wrong allocator.
 *
 * errno and results follow glibc 2.36: malloc(0) is a unique pointer;
 * calloc and reallocarray overflow give NULL + ENOMEM; realloc(p, 0) frees
 * p and returns NULL; memalign and aligned_alloc round a non-power-of-two
 * alignment up; posix_memalign returns EINVAL for an alignment that is not
 * a power of two multiple of sizeof(void *) and leaves errno alone;
 * valloc is page-aligned and pvalloc page-rounded.
 *
 * DMM_CHECK=1 checks every free, realloc and malloc_usable_size for double
 * frees, foreign and interior pointers and overwritten headers and guards,
 * and aborts naming the fault (check.c).  It is decided in init(), before
 * the chain returns any block, and costs nothing when off: it is a state
 * of its own (DMM_SHIM_CHECKED), and the fast path's one test (DMM_SHIM_ON)
 * is unchanged.
 *
 * DMM_OFFLOAD=1 hands frees to a helper thread through a bounded lock-free
 * queue (offload.c); free's fast path then sends every free to its slow
 * path, which queues it (or frees it itself when the queue is full).
 * DMM_CHECK=1 turns it off. */
#include "preload/shim/shim.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "allocators/chain/chain.h"
#include "allocators/chain/desc.h"
#include "preload/common/options.h"
#include "preload/shim/backend.h"
#include "preload/shim/check.h"
#include "preload/shim/offload.h"
#include "tracer/base/spinlock.h"

dmm_chain_t *dmm_shim_chain;
dmm_shim_state_t dmm_shim_state;
__thread int dmm_shim_starting __attribute__((tls_model("initial-exec")));
/* DMM_SHIM_ON when free's fast path may free at once: the chain is on, and
 * frees are neither checked (DMM_CHECK) nor offloaded (DMM_OFFLOAD);
 * DMM_SHIM_NEW otherwise.  dmm_shim_free_newest follows it (shim.h). */
static dmm_shim_state_t g_free_state;
static dmm_arena_t g_no_arena;   /* base 0, used 0: holds no pointer */
static dmm_arena_t *const g_no_arena_p = &g_no_arena;
dmm_arena_t *const *dmm_shim_free_newest = &g_no_arena_p;
static int g_stats;
static int g_check;

/* The glibc blocks of the start, recorded for DMM_CHECK (check.h). */
static void *glibc_note(void *p)
{
    if (p && dmm_shim_starting)
        dmm_check_glibc_set(NULL, p);
    return p;
}

static void glibc_forget(void *p)
{
    if (dmm_shim_starting)
        dmm_check_glibc_set(p, NULL);
}

void dmm_shim_say(const char *a, const char *b)
{
    char msg[1200];
    int n = snprintf(msg, sizeof msg, "dmm: %s%s\n", a, b);
    if (n > 0) {
        ssize_t r = write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
        (void)r;
    }
}

/* Fork: the helper between batches (it takes the chain's locks inside its
 * consumer lock, so that comes first), then DMM_CHECK's lock, then the
 * chain's. */
static void atfork_prepare(void)
{
    dmm_offload_prepare();
    if (g_check)
        dmm_check_lock_fork();
    if (dmm_shim_chain)
        dmm_chain_lock_all(dmm_shim_chain);
}

static void atfork_parent(void)
{
    if (dmm_shim_chain)
        dmm_chain_unlock_all(dmm_shim_chain);
    if (g_check)
        dmm_check_unlock_fork();
    dmm_offload_parent();
}

static void atfork_child(void)
{
    if (dmm_shim_chain) {
        dmm_chain_unlock_all(dmm_shim_chain);
        /* the pool's pages are the parent's now, copied on the first write:
         * the child takes its own at once, so that its calls fault no more
         * than the parent's (the parent's pages fault once each on their
         * first write after fork, as under any allocator: taking them back
         * there too would copy the whole pool at every fork, 0.14 s more a
         * fork for 78 MB on this project's VM; dmm_populate() does it when
         * asked) */
        dmm_chain_populate(dmm_shim_chain);
    }
    if (g_check)
        dmm_check_unlock_fork();
    if (dmm_shim_chain)
        dmm_offload_child(dmm_shim_chain);
}

static void print_stats(void)
{
    dmm_chain_t *c = dmm_shim_chain;
    if (!c || !g_stats)
        return;
    char buf[4096];
    int n = dmm_backend_stats(c, buf, sizeof buf);
    if (g_check && n > 0 && (size_t)n < sizeof buf)
        n += dmm_check_print(buf + n, sizeof buf - (size_t)n);
    if (n > 0 && (size_t)n < sizeof buf)
        n += dmm_offload_print(buf + n, sizeof buf - (size_t)n);
    for (int i = 0; i < c->n && n > 0 && (size_t)n < sizeof buf - 300; i++) {
        char line[256];
        dmm_desc_print_line(&c->desc.a[i], line, sizeof line);
        n += snprintf(buf + n, sizeof buf - (size_t)n, "dmm: %12llu served by %s\n",
                      (unsigned long long)c->alloc[i].served, line);
    }
    if (n > 0) {
        ssize_t r = write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf);
        (void)r;
    }
}

static void init(void)
{
    const char *st = environ ? secure_getenv("DMM_STATS") : NULL;
    const char *ck = environ ? secure_getenv("DMM_CHECK") : NULL;
    const char *of = environ ? secure_getenv("DMM_OFFLOAD") : NULL;
    g_stats = st && *st && strcmp(st, "0") != 0;
    int check = ck && *ck && strcmp(ck, "0") != 0;
    int offload = of && strcmp(of, "1") == 0;
    const char *pf = environ ? secure_getenv("DMM_PREFAULT") : NULL;
    int prefault = !pf || strcmp(pf, "0") != 0;
    if (of && *of && strcmp(of, "0") != 0 && !offload)
        dmm_shim_say("DMM_OFFLOAD is 0 or 1; not offloading: DMM_OFFLOAD=", of);
    dmm_options_report_unknown();
    const dmm_desc_t *d = dmm_backend_desc(check);
    if (!d) {
        __atomic_store_n(&dmm_shim_state, DMM_SHIM_GLIBC, __ATOMIC_RELEASE);
        return;
    }
    dmm_err_t err;
    dmm_chain_t *c = dmm_chain_new(d, DMM_PS_REAL, &err);
    if (!c) {
        dmm_shim_say(err.msg, "; using glibc malloc");
        __atomic_store_n(&dmm_shim_state, DMM_SHIM_GLIBC, __ATOMIC_RELEASE);
        return;
    }
    dmm_shim_chain = c;
    dmm_pagesrc_prefault(&c->ps, prefault);   /* with huge pages only */
    if (check) {
        dmm_check_init();
        g_check = 1;
        if (offload)
            dmm_shim_say("DMM_OFFLOAD ignored: ",
                         "DMM_CHECK checks each free in the thread that makes it");
        offload = 0;
    }
    if (offload && dmm_offload_setup() != 0) {
        dmm_shim_say("DMM_OFFLOAD: no memory for the queue; not offloading", "");
        offload = 0;
    }
    /* Per-thread caches only while malloc's and free's fast paths serve
     * every call: checked or offloaded, the chain keeps one cache, which
     * the thread caches' fast paths never see (backend.h). */
    if (c->desc.cache_max && !check && !offload)
        dmm_chain_cache_per_thread(c);   /* the process's one chain: it cannot fail */
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    if (g_stats)
        atexit(print_stats);
    if (offload)
        atexit(dmm_offload_stop);   /* runs before print_stats: the last numbers */
    __atomic_store_n(&g_free_state, check || offload ? DMM_SHIM_NEW : DMM_SHIM_ON,
                     __ATOMIC_RELEASE);
    if (!check && !offload)
        __atomic_store_n(&dmm_shim_free_newest, (dmm_arena_t *const *)&c->ps.newest,
                         __ATOMIC_RELEASE);
    __atomic_store_n(&dmm_shim_state, check ? DMM_SHIM_CHECKED : DMM_SHIM_ON, __ATOMIC_RELEASE);
}

/* The chain when it is on and unchecked, else NULL: the fast path's one
 * test.  Each entry point below tests it and tail-calls a noinline slow
 * path for everything else (starting the chain, DMM_CHECK, glibc), so
 * that the fast path sets up no stack frame. */
static inline dmm_chain_t *on(void)
{
    return __builtin_expect(__atomic_load_n(&dmm_shim_state, __ATOMIC_ACQUIRE) == DMM_SHIM_ON, 1)
               ? dmm_shim_chain
               : NULL;
}

/* Whether free's fast path may free at once (then dmm_shim_chain is set:
 * init() stores it before the state). */
static inline int free_on(void)
{
    return __atomic_load_n(&g_free_state, __ATOMIC_ACQUIRE) == DMM_SHIM_ON;
}

static inline int serving(dmm_shim_state_t s)
{
    return s == DMM_SHIM_ON || s == DMM_SHIM_HELPER;
}

/* The chain, started here if need be; NULL when the program runs on glibc
 * or DMM_CHECK is on (then checked() gives the chain). */
static dmm_chain_t *chain(void)
{
    dmm_shim_state_t s = __atomic_load_n(&dmm_shim_state, __ATOMIC_ACQUIRE);
    if (serving(s))
        return dmm_shim_chain;
    if (s == DMM_SHIM_GLIBC || s == DMM_SHIM_CHECKED || dmm_shim_starting)
        return NULL;
    dmm_shim_state_t expect = DMM_SHIM_NEW;
    if (__atomic_compare_exchange_n(&dmm_shim_state, &expect, DMM_SHIM_STARTING, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        dmm_shim_starting = 1;
        init();
        dmm_shim_starting = 0;
    } else
        while (__atomic_load_n(&dmm_shim_state, __ATOMIC_ACQUIRE) == DMM_SHIM_STARTING)
            sched_yield();
    s = __atomic_load_n(&dmm_shim_state, __ATOMIC_ACQUIRE);
    return serving(s) ? dmm_shim_chain : NULL;
}

/* After chain() gave NULL: the chain if DMM_CHECK is on, NULL for glibc. */
static inline dmm_chain_t *checked(void)
{
    return __atomic_load_n(&dmm_shim_state, __ATOMIC_ACQUIRE) == DMM_SHIM_CHECKED ? dmm_shim_chain
                                                                                 : NULL;
}

/* glibc's malloc_usable_size: glibc has no __libc_ name for this query. */
static size_t glibc_usable(void *p)
{
    static size_t (*real)(void *);
    if (!real)
        real = (size_t (*)(void *))dlvsym(RTLD_NEXT, "malloc_usable_size", "GLIBC_2.2.5");
    return real ? real(p) : 0;
}

/* The chain's footprint now and at its peak (what DMM_STATS prints), the
 * peak first set to now when reset_peak: 0, or -1 when no chain serves.
 * `dmm replay --mdriver` finds it with dlsym to take utilisation from the
 * heap the library holds rather than from RSS. */
EXPORT int dmm_footprint(size_t *now, size_t *peak, int reset_peak)
{
    dmm_chain_t *c = dmm_shim_chain;
    if (!c || __atomic_load_n(&dmm_shim_state, __ATOMIC_ACQUIRE) != DMM_SHIM_ON)
        return -1;
    dmm_spin_lock(&c->ps.lock);
    if (reset_peak)
        c->ps.peak = c->ps.footprint;
    *now = c->ps.footprint;
    *peak = c->ps.peak;
    dmm_spin_unlock(&c->ps.lock);
    return 0;
}

/* A pooled chain's pages, the pool's and its own, taken back into this
 * process at once (dmm_chain_populate): what a forked child does by itself
 * and a parent does not (it would copy the pool at every fork), so that a
 * parent about to make calls whose latency matters calls it, while no other
 * thread allocates.  `dmm replay` finds it with dlsym and calls it before
 * its timed run.  0, or -1 when no pooled chain serves. */
EXPORT int dmm_populate(void)
{
    dmm_chain_t *c = dmm_shim_chain;
    if (!c || !c->desc.pool || __atomic_load_n(&dmm_shim_state, __ATOMIC_ACQUIRE) != DMM_SHIM_ON)
        return -1;
    dmm_chain_populate(c);
    return 0;
}

__attribute__((constructor)) static void start(void)
{
    chain();
    dmm_offload_ready();
}

#define SLOW __attribute__((noinline))

/* After the thread's cache had nothing for n (dmm_backend_malloc_fast). */
static SLOW void *malloc_slow(size_t n)
{
    dmm_chain_t *c = on();
    if (__builtin_expect(c != NULL, 1))
        return dmm_backend_malloc_miss(c, n);
    if (__atomic_load_n(&dmm_shim_state, __ATOMIC_RELAXED) == DMM_SHIM_HELPER)
        dmm_offload_start(dmm_shim_chain);
    if ((c = chain()))
        return dmm_backend_malloc(c, n);
    if ((c = checked()))
        return dmm_check_malloc(c, n);
    return glibc_note(__libc_malloc(n));
}

EXPORT __attribute__((flatten)) void *malloc(size_t n)
{
    void *p = dmm_backend_malloc_fast(n);
    if (__builtin_expect(p != NULL, 1))
        return p;
    return malloc_slow(n);
}

static SLOW void free_slow(void *p)
{
    if (!p)
        return;
    dmm_chain_t *c = chain();
    if (c && dmm_offload_on()) {   /* one page-map look-up for both tests */
        unsigned o = dmm_pagesrc_owner(&c->ps, p);
        if ((o >= 1 && o <= (unsigned)c->n) || o == DMM_OWNER_LARGE) {
            int e = errno;
            if (!dmm_offload_push(c, p, o))
                dmm_backend_free(c, p);
            errno = e;
            return;
        }
    } else if (c && dmm_chain_owns(c, p)) {
        int e = errno;
        dmm_backend_free(c, p);
        errno = e;
        return;
    }
    if (!c && (c = checked())) {
        int e = errno;
        dmm_check_free(c, p);
        errno = e;
        return;
    }
    glibc_forget(p);
    __libc_free(p);
}

void dmm_shim_free_other(void *p)
{
    free_slow(p);
}

dmm_chain_t *dmm_shim_free_chain(void)
{
    return free_on() ? dmm_shim_chain : NULL;
}

/* Every free takes the back end's slow way, which ends in free_slow, until
 * free may free at once (dmm_shim_free_newest); free(NULL) does too, in
 * libdmm.so (libdmm_evolved.so's returns at once). */
EXPORT __attribute__((flatten)) void free(void *p)
{
    dmm_backend_free_any(p);
}

static SLOW void *calloc_slow(size_t nmemb, size_t size)
{
    dmm_chain_t *c = chain();
    if (c)
        return dmm_backend_calloc(c, nmemb, size);
    if ((c = checked()))
        return dmm_check_calloc(c, nmemb, size);
    return glibc_note(__libc_calloc(nmemb, size));
}

EXPORT void *calloc(size_t nmemb, size_t size)
{
    dmm_chain_t *c = on();
    if (__builtin_expect(c != NULL, 1))
        return dmm_backend_calloc(c, nmemb, size);
    return calloc_slow(nmemb, size);
}

static SLOW void *realloc_slow(void *p, size_t n)
{
    dmm_chain_t *c = chain();
    if (!c) {
        if ((c = checked()))
            return dmm_check_realloc(c, p, n);
        void *q = __libc_realloc(p, n);
        if (q || !n)
            glibc_forget(p);
        return glibc_note(q);
    }
    if (p && !dmm_chain_owns(c, p)) {
        /* a block from glibc (allocated before a failed start): move it */
        if (n == 0) {
            __libc_free(p);
            return NULL;
        }
        return __libc_realloc(p, n);
    }
    return dmm_chain_realloc(c, p, n);
}

EXPORT void *realloc(void *p, size_t n)
{
    dmm_chain_t *c = on();
    if (__builtin_expect(c != NULL, 1) && (!p || dmm_chain_owns(c, p)))
        return dmm_backend_realloc(c, p, n);
    return realloc_slow(p, n);
}

EXPORT void *reallocarray(void *p, size_t nmemb, size_t size)
{
    size_t n;
    if (__builtin_mul_overflow(nmemb, size, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, n);
}

/* glibc: an alignment that is not a power of two is rounded up to one;
 * one above SIZE_MAX / 2 + 1 is EINVAL. */
static void *aligned(size_t align, size_t n)
{
    if (align > SIZE_MAX / 2 + 1) {
        errno = EINVAL;
        return NULL;
    }
    if (align & (align - 1)) {
        size_t a = 1;
        while (a < align)
            a <<= 1;
        align = a;
    }
    dmm_chain_t *c = chain();
    if (c)
        return dmm_chain_memalign(c, align, n);
    if ((c = checked()))
        return dmm_check_memalign(c, align, n);
    return glibc_note(__libc_memalign(align, n));
}

EXPORT void *memalign(size_t align, size_t n)
{
    return aligned(align, n);
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
    return aligned(align, n);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    if (align == 0 || (align & (align - 1)) || align % sizeof(void *))
        return EINVAL;
    int e = errno;
    void *p = aligned(align, n);
    if (!p) {
        int r = errno ? errno : ENOMEM;
        errno = e;
        return r == EINVAL ? EINVAL : ENOMEM;
    }
    errno = e;
    *out = p;
    return 0;
}

EXPORT void *valloc(size_t n)
{
    return aligned((size_t)sysconf(_SC_PAGESIZE), n);
}

EXPORT void *pvalloc(size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (n > SIZE_MAX - page) {
        errno = ENOMEM;
        return NULL;
    }
    return aligned(page, n ? (n + page - 1) & ~(page - 1) : page);
}

EXPORT size_t malloc_usable_size(void *p)
{
    if (!p)
        return 0;
    dmm_chain_t *c = chain();
    if (c && dmm_chain_owns(c, p))
        return dmm_chain_usable(c, p);
    size_t u;
    if (!c && (c = checked()) && dmm_check_usable(c, p, &u))
        return u;
    return glibc_usable(p);   /* a glibc block */
}
