/* check.c - DMM_CHECK=1: heap misuse detection for libdmm.so and
 * libdmm_evolved.so (check.h), over the chain of either library's back
 * end (backend.h).
 *
 * A checked block, inside the chain block b that the allocator returned:
 *
 *   b           u - 16       u                  u + n        u + n + 8
 *   |  (pad)    | tag | size | n bytes payload  | guard       | rest of b
 *
 * - The prefix (16 bytes, so that u keeps the chain's 16-byte alignment)
 *   holds the requested size n and a tag: a hash of (secret, u, n) xored
 *   with the block's state (live or freed) and log2(u - b) (16, or the
 *   alignment of memalign and friends, whose blocks put u at b + align).
 *   A tag that does not decode means that u is not the start of a block or
 *   that its prefix was overwritten; the hash binds n, so an overwritten
 *   size is caught too.
 * - The guard: 8 bytes after the payload, derived from the tag, none of
 *   them 0 or 0xff (an off-by-one NUL or memset(-1) always shows), checked
 *   on free, realloc and malloc_usable_size.  malloc_usable_size returns n:
 *   the bytes a program may use end where the guard starts.
 * - A freed block is marked freed and kept in a quarantine (the last
 *   CK_QSLOTS frees, CK_QBYTES at most; always the latest one) before the
 *   chain gets it back.  The allocators write their free-list links where
 *   the prefix is, and may hand the block out again at once: without the
 *   quarantine a double free would read as a foreign pointer or free
 *   another owner's block.  So a double free is named as such while the
 *   block is in the quarantine; later it is still caught as a pointer that
 *   is not a block, unless the address was handed out again.  Leaving the
 *   quarantine a block's tag is checked again (a write after free) and
 *   wiped, so that only live and quarantined blocks have a tag that decodes.
 * - A pointer is first looked up in the page map: one the chain does not
 *   own is foreign, unless it is one of the few glibc blocks handed out
 *   while the chain was being built (the shim records them: glibc_note()).
 * - When a tag does not decode, the diagnosis walks back (CK_SCAN bytes at
 *   most, over pages the page source holds) to the nearest tag that does:
 *   a pointer inside that block is an interior pointer; a block that ends
 *   before the pointer with its guard overwritten ran over its header.
 *
 * Why in the shim and not in the allocator classes: one layer checks every
 * chain, preset, .dmm file and evolved allocator alike, and the classes and
 * the simulator stay as they are (dmm sim's numbers do not change).  What
 * it costs when on: 24 bytes a block (an aligned block: its alignment + 8),
 * a hash and a page-map look-up a call, a lock a free, and the delayed
 * reuse of the quarantine (bench/work_media: 1.4x the instructions, about
 * 1.5x the time, 4 MiB more resident).  When off, nothing here runs: it is a
 * state of the shim of its own (DMM_SHIM_CHECKED), which the fast path's
 * existing test for "the chain is on" (DMM_SHIM_ON) already sends to the
 * slow path.
 *
 * Faults are written with write(2) and end in abort(); nothing here calls
 * malloc, nor stdio but for DMM_STATS's line at exit. */
#include "preload/shim/check.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "preload/common/options.h"
#include "preload/shim/backend.h"
#include "tracer/base/spinlock.h"

enum {
    CK_PREFIX = 16,                 /* bytes before the payload */
    CK_GUARD = 8,                   /* bytes after it */
    CK_OVER = CK_PREFIX + CK_GUARD, /* what a 16-aligned block adds */
    CK_QSLOTS = 4096,               /* quarantine: blocks ... */
    CK_SCAN = 64 << 10,             /* diagnosis: how far back to look */
};
#define CK_QBYTES ((size_t)4 << 20) /* ... and bytes */

/* The state byte of a tag, and its shift byte's bounds. */
enum { CK_LIVE = 0x4c, CK_FREED = 0xf4, CK_SHIFT_MIN = 4, CK_SHIFT_MAX = 62 };

typedef struct ck_prefix {
    uint64_t tag;    /* ck_key(u, size) ^ (state | shift << 8) */
    uint64_t size;   /* requested bytes */
} ck_prefix_t;
_Static_assert(sizeof(ck_prefix_t) == CK_PREFIX, "the prefix keeps 16-byte alignment");
_Static_assert((CK_QSLOTS & (CK_QSLOTS - 1)) == 0, "the quarantine ring wraps by masking");

static uint64_t ck_secret;
static int      ck_lockword;        /* quarantine and glibc table */
static uintptr_t ck_quar[CK_QSLOTS];
static size_t   ck_qhead, ck_qcount, ck_qbytes;
static uint64_t ck_nfrees;          /* frees checked (DMM_STATS) */

/* ---- the glibc blocks of the start --------------------------------- */

/* Blocks glibc handed out while this thread built the chain
 * (dmm_shim_starting: pthread_atfork's and atexit's lists).  A handful;
 * past the table's size foreign pointers are no longer told from glibc's
 * (ck_glibc_lost). */
enum { CK_GLIBC_SLOTS = 64 };
static void *ck_glibc[CK_GLIBC_SLOTS];
static int   ck_glibc_lost;

void dmm_check_glibc_set(void *old, void *p)
{
    for (int i = 0; i < CK_GLIBC_SLOTS; i++)
        if (ck_glibc[i] == old) {
            ck_glibc[i] = p;
            return;
        }
    if (!old)
        ck_glibc_lost = 1;   /* full: no slot was NULL */
}

static int ck_glibc_has(const void *p)
{
    if (ck_glibc_lost)
        return 1;
    for (int i = 0; i < CK_GLIBC_SLOTS; i++)
        if (ck_glibc[i] == p)
            return 1;
    return 0;
}

/* fork: the lock is held across it (taken before the chain's locks: the
 * order of ck_retire, which frees into the chain while holding it). */
void dmm_check_lock_fork(void)
{
    dmm_spin_lock(&ck_lockword);
}

void dmm_check_unlock_fork(void)
{
    dmm_spin_unlock(&ck_lockword);
}

/* ---- tags and guards ------------------------------------------------ */

/* splitmix64's finaliser: every input bit moves every output bit. */
static inline uint64_t ck_mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static inline uint64_t ck_key(uintptr_t u, uint64_t n)
{
    return ck_mix(ck_secret ^ u ^ (n * 0x9e3779b97f4a7c15ull));
}

static inline uint64_t ck_guard_of(uint64_t key)
{
    /* every byte odd and below 0x80: never 0, never 0xff */
    return ((key >> 7) & 0x7e7e7e7e7e7e7e7eull) | 0x0101010101010101ull;
}

static inline ck_prefix_t *ck_prefix(uintptr_t u)
{
    return (ck_prefix_t *)(u - CK_PREFIX);
}

static inline size_t ck_held(size_t n, unsigned shift)
{
    return n + ((size_t)1 << shift) + CK_GUARD;
}

/* Write u's prefix and guard: a live block of n bytes, u - b = 1 << shift. */
static inline void ck_arm(uintptr_t u, size_t n, unsigned shift)
{
    uint64_t k = ck_key(u, n);
    ck_prefix_t *h = ck_prefix(u);
    h->size = n;
    h->tag = k ^ (CK_LIVE | (uint64_t)shift << 8);
    uint64_t g = ck_guard_of(k);
    memcpy((char *)u + n, &g, CK_GUARD);
}

/* 1 if u's prefix decodes (its prefix must be readable). */
static inline int ck_decode(uintptr_t u, size_t *n, unsigned *state, unsigned *shift)
{
    const ck_prefix_t *h = ck_prefix(u);
    uint64_t size = h->size;
    uint64_t m = h->tag ^ ck_key(u, size);
    unsigned st = (unsigned)(m & 0xff), sh = (unsigned)(m >> 8 & 0xff);
    if ((m >> 16) || (st != CK_LIVE && st != CK_FREED) || sh < CK_SHIFT_MIN ||
        sh > CK_SHIFT_MAX || size > UINTPTR_MAX - u - CK_GUARD)
        return 0;
    *n = size;
    *state = st;
    *shift = sh;
    return 1;
}

/* The first guard byte of u (n bytes) that was overwritten, or -1. */
static inline int ck_guard_bad(uintptr_t u, size_t n)
{
    uint64_t g = ck_guard_of(ck_key(u, n));
    const unsigned char *want = (const unsigned char *)&g, *got = (const unsigned char *)u + n;
    if (memcmp(want, got, CK_GUARD) == 0)
        return -1;
    int i = 0;
    while (want[i] == got[i])
        i++;
    return i;
}

static int ck_readable(dmm_chain_t *c, uintptr_t a)
{
    /* pages the page source holds are mapped; reserved ones may not be */
    return dmm_pagesrc_owner(&c->ps, (const void *)a) != DMM_OWNER_NONE;
}

/* ---- reporting ------------------------------------------------------ */

typedef struct ck_msg {
    char   b[400];
    size_t n;
} ck_msg_t;

static void m_str(ck_msg_t *m, const char *s)
{
    while (*s && m->n < sizeof m->b - 1)
        m->b[m->n++] = *s++;
}

static void m_num(ck_msg_t *m, uint64_t v, unsigned base)
{
    char d[24];
    int k = 0;
    do {
        d[k++] = "0123456789abcdef"[v % base];
        v /= base;
    } while (v);
    if (base == 16)
        m_str(m, "0x");
    while (k > 0 && m->n < sizeof m->b - 1)
        m->b[m->n++] = d[--k];
}

static void m_ptr(ck_msg_t *m, uintptr_t p)
{
    m_num(m, p, 16);
}

static void m_dec(ck_msg_t *m, uint64_t v)
{
    m_num(m, v, 10);
}

static ck_msg_t ck_begin(void)
{
    ck_msg_t m = { .n = 0 };
    m_str(&m, "dmm: DMM_CHECK: ");
    return m;
}

__attribute__((noreturn, cold, noinline)) static void ck_die(ck_msg_t *m)
{
    m->b[m->n++] = '\n';
    for (size_t off = 0; off < m->n;) {
        ssize_t r = write(2, m->b + off, m->n - off);
        if (r <= 0 && errno != EINTR)
            break;
        if (r > 0)
            off += (size_t)r;
    }
    abort();
}

/* "OP of P, a pointer LIB never returned" */
static void m_foreign(ck_msg_t *m, const char *op, uintptr_t p)
{
    m_str(m, op);
    m_str(m, " of ");
    m_ptr(m, p);
    m_str(m, ", a pointer ");
    m_str(m, dmm_backend_lib);
    m_str(m, " never returned");
}

__attribute__((noreturn, cold, noinline)) static void ck_foreign(const char *op, uintptr_t p)
{
    ck_msg_t m = ck_begin();
    m_foreign(&m, op, p);
    ck_die(&m);
}

__attribute__((noreturn, cold, noinline)) static void ck_freed(const char *op, uintptr_t p)
{
    ck_msg_t m = ck_begin();
    if (!strcmp(op, "free")) {
        m_str(&m, "double free of ");
        m_ptr(&m, p);
        m_str(&m, " (free)");
    } else {
        m_str(&m, "use after free: ");
        m_str(&m, op);
        m_str(&m, " of ");
        m_ptr(&m, p);
        m_str(&m, ", a block already freed");
    }
    ck_die(&m);
}

__attribute__((noreturn, cold, noinline))
static void ck_overflow(const char *op, uintptr_t u, size_t n, int byte)
{
    ck_msg_t m = ck_begin();
    m_str(&m, "heap overflow: the guard after the ");
    m_dec(&m, n);
    m_str(&m, "-byte block at ");
    m_ptr(&m, u);
    m_str(&m, " was overwritten (byte ");
    m_dec(&m, (uint64_t)byte);
    m_str(&m, " past its end; found by ");
    m_str(&m, op);
    m_str(&m, ")");
    ck_die(&m);
}

/* p is in the chain's pages but has no prefix that decodes: say what it
 * most likely is, from the nearest block before it that has one. */
__attribute__((noreturn, cold, noinline))
static void ck_diagnose(dmm_chain_t *c, const char *op, uintptr_t p)
{
    ck_msg_t m = ck_begin();
    uintptr_t page = 0;
    for (uintptr_t u = (p - 1) & ~(uintptr_t)15; u > CK_PREFIX && p - u <= CK_SCAN; u -= 16) {
        uintptr_t hp = (u - CK_PREFIX) & ~(uintptr_t)(DMM_PAGE - 1);
        if (hp != page) {
            if (!ck_readable(c, hp))
                break;
            page = hp;
        }
        size_t n;
        unsigned st, sh;
        if (!ck_decode(u, &n, &st, &sh))
            continue;
        if (p < u + n) {
            m_foreign(&m, op, p);
            m_str(&m, ": it is ");
            m_dec(&m, p - u);
            m_str(&m, st == CK_FREED ? " bytes into the freed " : " bytes into the ");
            m_dec(&m, n);
            m_str(&m, "-byte block at ");
            m_ptr(&m, u);
            ck_die(&m);
        }
        if (ck_guard_bad(u, n) >= 0) {
            m_str(&m, "heap overflow: the header of the block at ");
            m_ptr(&m, p);
            m_str(&m, " was overwritten: the ");
            m_dec(&m, n);
            m_str(&m, "-byte block at ");
            m_ptr(&m, u);
            m_str(&m, " before it ran past its end (found by ");
            m_str(&m, op);
            m_str(&m, ")");
            ck_die(&m);
        }
        break;
    }
    m_str(&m, op);
    m_str(&m, " of ");
    m_ptr(&m, p);
    m_str(&m, ": not the start of a block, or its header was overwritten");
    ck_die(&m);
}

/* ---- the checked malloc family -------------------------------------- */

void dmm_check_init(void)
{
    uint64_t s = 0;
    if (getrandom(&s, sizeof s, GRND_NONBLOCK) != (ssize_t)sizeof s) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        s = (uint64_t)(uintptr_t)&s ^ (uint64_t)ts.tv_nsec << 20 ^ (uint64_t)getpid();
    }
    ck_secret = ck_mix(s ^ 0x444d4d434845434bull);
}

/* p must be a live block of the chain, or a glibc block of the start (0);
 * anything else is reported and aborts.  A live block's size and shift in
 * *n and *shift, its guard checked. */
static int ck_live(dmm_chain_t *c, void *p, const char *op, size_t *n, unsigned *shift)
{
    uintptr_t u = (uintptr_t)p;
    if (__builtin_expect(!dmm_chain_owns(c, p), 0)) {
        dmm_spin_lock_mt(&ck_lockword);
        int g = ck_glibc_has(p);
        dmm_spin_unlock_mt(&ck_lockword);
        if (g)
            return 0;
        ck_foreign(op, u);
    }
    if ((u & 15) || ((u & (DMM_PAGE - 1)) == 0 && !ck_readable(c, u - CK_PREFIX)))
        ck_diagnose(c, op, u);
    unsigned st;
    if (!ck_decode(u, n, &st, shift))
        ck_diagnose(c, op, u);
    if (st == CK_FREED)
        ck_freed(op, u);
    int b = ck_guard_bad(u, *n);
    if (b >= 0)
        ck_overflow(op, u, *n, b);
    return 1;
}

/* The oldest quarantined block back to the chain; the lock is held. */
static void ck_evict(dmm_chain_t *c)
{
    uintptr_t u = ck_quar[ck_qhead];
    ck_qhead = (ck_qhead + 1) & (CK_QSLOTS - 1);
    ck_qcount--;
    size_t n;
    unsigned st, sh;
    if (!ck_decode(u, &n, &st, &sh) || st != CK_FREED) {
        dmm_spin_unlock_mt(&ck_lockword);
        ck_msg_t m = ck_begin();
        m_str(&m, "write after free: the header of the freed block at ");
        m_ptr(&m, u);
        m_str(&m, " was overwritten after it was freed");
        ck_die(&m);
    }
    ck_qbytes -= ck_held(n, sh);
    ck_prefix(u)->tag = 0;
    dmm_backend_free(c, (void *)(u - ((uintptr_t)1 << sh)));
}

/* Mark live block u freed and quarantine it. */
static void ck_retire(dmm_chain_t *c, uintptr_t u, size_t n, unsigned shift, const char *op)
{
    ck_prefix_t *h = ck_prefix(u);
    uint64_t k = ck_key(u, n);
    dmm_spin_lock_mt(&ck_lockword);
    if (h->tag != (k ^ (CK_LIVE | (uint64_t)shift << 8))) {
        dmm_spin_unlock_mt(&ck_lockword);   /* freed by another thread since ck_live() */
        ck_freed(op, u);
    }
    h->tag = k ^ (CK_FREED | (uint64_t)shift << 8);
    ck_quar[(ck_qhead + ck_qcount) & (CK_QSLOTS - 1)] = u;
    ck_qcount++;
    ck_qbytes += ck_held(n, shift);
    ck_nfrees++;
    while (ck_qcount == CK_QSLOTS || (ck_qbytes > CK_QBYTES && ck_qcount > 1))
        ck_evict(c);
    dmm_spin_unlock_mt(&ck_lockword);
}

void *dmm_check_malloc(dmm_chain_t *c, size_t n)
{
    if (n > SIZE_MAX - CK_OVER) {
        errno = ENOMEM;
        return NULL;
    }
    char *b = dmm_backend_malloc(c, n + CK_OVER);
    if (!b)
        return NULL;
    ck_arm((uintptr_t)b + CK_PREFIX, n, CK_SHIFT_MIN);
    return b + CK_PREFIX;
}

void *dmm_check_calloc(dmm_chain_t *c, size_t nmemb, size_t size)
{
    size_t n;
    if (__builtin_mul_overflow(nmemb, size, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = dmm_check_malloc(c, n);
    if (p)
        memset(p, 0, n);
    return p;
}

/* align a power of two (or 0).  Above 16 the block is the chain's aligned
 * block b of n + align + guard bytes, and u = b + align. */
void *dmm_check_memalign(dmm_chain_t *c, size_t align, size_t n)
{
    if (align <= CK_PREFIX)
        return dmm_check_malloc(c, n);
    if (n > SIZE_MAX - align - CK_GUARD) {
        errno = ENOMEM;
        return NULL;
    }
    char *b = dmm_chain_memalign(c, align, n + align + CK_GUARD);
    if (!b)
        return NULL;
    ck_arm((uintptr_t)b + align, n, (unsigned)__builtin_ctzl(align));
    return b + align;
}

void dmm_check_free(dmm_chain_t *c, void *p)
{
    size_t n;
    unsigned sh;
    if (!ck_live(c, p, "free", &n, &sh)) {
        dmm_spin_lock_mt(&ck_lockword);
        dmm_check_glibc_set(p, NULL);
        dmm_spin_unlock_mt(&ck_lockword);
        __libc_free(p);
        return;
    }
    ck_retire(c, (uintptr_t)p, n, sh, "free");
}

void *dmm_check_realloc(dmm_chain_t *c, void *p, size_t n)
{
    if (!p)
        return dmm_check_malloc(c, n);
    size_t old;
    unsigned sh;
    if (!ck_live(c, p, "realloc", &old, &sh)) {
        /* a glibc block of the start stays with glibc */
        void *q = n ? __libc_realloc(p, n) : NULL;
        if (!n)
            __libc_free(p);
        if (q || !n) {
            dmm_spin_lock_mt(&ck_lockword);
            dmm_check_glibc_set(p, q);
            dmm_spin_unlock_mt(&ck_lockword);
        }
        return q;
    }
    uintptr_t u = (uintptr_t)p;
    if (n == 0) {
        ck_retire(c, u, old, sh, "realloc");
        return NULL;
    }
    /* in place while the chain block holds it and is not too big for it */
    if (sh == CK_SHIFT_MIN && n <= SIZE_MAX - CK_OVER) {
        size_t cap = dmm_chain_usable(c, (void *)(u - CK_PREFIX));
        if (n + CK_OVER <= cap && n + CK_OVER >= cap / 2) {
            ck_arm(u, n, CK_SHIFT_MIN);
            return p;
        }
    }
    void *q = dmm_check_malloc(c, n);
    if (!q)
        return NULL;
    memcpy(q, p, old < n ? old : n);
    ck_retire(c, u, old, sh, "realloc");
    return q;
}

/* 0 for a glibc block of the start: the caller asks glibc. */
int dmm_check_usable(dmm_chain_t *c, void *p, size_t *n)
{
    unsigned sh;
    return ck_live(c, p, "malloc_usable_size", n, &sh);
}

int dmm_check_print(char *buf, size_t len)
{
    return snprintf(buf, len,
                    "dmm: DMM_CHECK on: %llu frees checked; quarantine %zu blocks, %zu bytes\n",
                    (unsigned long long)ck_nfrees, ck_qcount, ck_qbytes);
}
