/* offload.c - DMM_OFFLOAD=1: a program's frees handed to a helper thread
 * (libdmm.so and libdmm_evolved.so; offload.h).
 *
 * Groups.  A thread does not hand over each block: it collects the
 * pointers it frees in a small array of its own (initial-exec TLS) and
 * hands over the whole group every OFL_GROUP frees.  So a free costs the
 * thread a page-map look-up and one store; the shared ring, and the cache
 * lines it moves between cores, are touched once a group, and the freed
 * block itself is not touched at all (a first version linked the blocks
 * through their first word: a cache miss on every cold block).  A group is
 * handed over when it is full and when its thread ends (a pthread key's
 * destructor; keys below 32 need no malloc), and freed by the thread
 * itself when offloading stops; a thread that stops freeing keeps fewer
 * than OFL_GROUP blocks back.  Blocks of the fallback path (chunks of
 * their own, possibly large) go in groups of one, and only while the
 * queued ones hold under OFL_LARGE_MAX bytes.
 *
 * The queue.  One bounded ring of OFL_SLOTS groups (two cache lines each:
 * a sequence number, a count, the pointers), mapped from the OS, many
 * producers (every thread that frees), one consumer (the helper).  A
 * producer claims position pos when the slot's number says pos (a
 * compare-and-swap on the head), copies its group in, and publishes it by
 * setting the number to pos + 1; the consumer takes position t when the
 * number reads t + 1 and gives the slot back for the next lap
 * (t + OFL_SLOTS).  A slot still holding the previous lap's group means
 * the ring is full: the caller then frees its group itself.  So at most
 * OFL_SLOTS x OFL_GROUP blocks wait in the ring, and fewer than OFL_GROUP
 * in each thread's array.  One ring rather than one per thread: no
 * per-thread ring to find, drain or give back when a thread ends.
 *
 * The helper frees what it takes under the same per-allocator locks as
 * any thread (dmm_backend_free's, or the same lock words held across a run
 * of blocks of one allocator, with the block headers prefetched first): the
 * program's own calls and the helper's never touch an allocator's
 * structures at once.  The locks are skipped while __libc_single_threaded
 * is set; pthread_create clears it before the helper runs, and the helper
 * is started from a call that holds no lock of the chain, so no skipped
 * lock is ever held across the start.
 * (glibc 2.36 does not set it again in a fork child: there the locks stay
 * on, which is correct, only slower.)
 *
 * Waking.  A producer never waits.  The helper drains the ring
 * OFL_BATCH groups at a time, polls a while when it is empty, then sleeps on
 * a futex with a timeout that doubles from OFL_NAP_MIN_NS up to
 * OFL_NAP_MAX_NS while nothing comes.  A producer wakes it only at every
 * OFL_WAKE_EVERY-th position or when the ring is full, so a system call
 * comes at most once in OFL_WAKE_EVERY x OFL_GROUP frees (a missed wake-up
 * only delays frees until the timeout: the protocol needs no fence on the
 * producer's side).
 *
 * Starting the helper.  pthread_create allocates (the new thread's DTV with
 * calloc) and takes glibc's stack-cache lock, under which glibc itself
 * calls free when it reaps a thread's stack: a helper started from free
 * could deadlock.  glibc never calls malloc under that lock, so: the first
 * OFL_START_AFTER frees after the start (or a fork) are synchronous, the
 * last of them sets the shim's state to DMM_SHIM_HELPER, which sends the
 * next malloc to its slow path, and that malloc starts the helper, after the library's
 * constructor ran (libc is set up) and never from inside the chain's own
 * start.  Frees that arrive while pthread_create runs (state "starting")
 * are synchronous, so nothing recurses.  The helper has every signal
 * blocked (a program's handlers never run on it), a small stack of its own
 * size (which also keeps pthread_create away from glibc's default-attribute
 * lock) and is detached.
 *
 * Exit.  An exit handler (registered when the chain starts, so it runs
 * after the program's own exit handlers and destructors) stops offloading:
 * frees after it are synchronous; it waits for the helper's batch in
 * progress (OFL_BATCH groups at most, and never more than OFL_STOP_TRIES
 * yields), after which the helper frees nothing more and parks until the
 * process ends.  Nothing joins it, so exit never waits for more than that
 * batch, and frees still queued are simply not done.  A helper never
 * keeps a process alive: when it has been idle for OFL_NAP_MAX_NS it looks
 * in /proc/self/task for another live thread (main may have called
 * pthread_exit), the page source's helper (prefault.h) aside; if there is
 * none it returns, and glibc ends the process
 * as it would have without it (exit(0) when the last thread ends).
 *
 * Signals.  A handler that frees while its thread is inside the group code
 * frees at once (t_ofl_busy), so the group is never corrupted; as without
 * offload, a handler must not take an allocator lock that the code it
 * interrupted holds.
 *
 * Fork.  The prepare handler takes the consumer lock, which the helper holds
 * for each batch, so at fork the helper is between batches, then the
 * chain's locks.  The child has no helper: its handler frees every
 * published group still queued and the forking thread's own one, marks the
 * slots of producers caught between claim and publish (threads that do not
 * exist in the child) as taken (those blocks, and the groups of the other
 * threads, are lost to the child, as they would be to any allocator whose
 * free was interrupted), and offloading starts again after OFL_START_AFTER
 * frees in the child.
 *
 * DMM_CHECK wins over DMM_OFFLOAD: its checks and its quarantine run in the
 * freeing thread, where a fault must stop the program, and the quarantine
 * already delays the allocator's frees; both set gives a notice and no
 * offload.
 *
 * Cost when off: nothing here runs.  free's fast path tests its own state
 * word (set to DMM_SHIM_ON only when frees are neither checked nor
 * offloaded), as cheap as the one it replaced.  malloc's is unchanged. */
#include "preload/shim/offload.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "allocators/core/prefault.h"
#include "preload/shim/backend.h"
#include "preload/shim/shim.h"
#include "tracer/base/spinlock.h"

/* Tunables. */
enum {
    OFL_GROUP = 14,          /* frees a thread hands over at once */
    OFL_SLOTS = 512,         /* groups the ring holds */
    OFL_BATCH = 4,           /* groups per hold of the consumer lock */
    OFL_WAKE_EVERY = 16,     /* a producer wakes a sleeping helper this often */
    OFL_START_AFTER = 64,    /* synchronous frees before the helper starts */
    OFL_SPIN = 200,          /* empty polls (pause) before the helper sleeps */
    OFL_LOCK_SPIN = 1024,    /* pauses (about 27 us here) on a busy lock before yielding */
    OFL_STOP_TRIES = 10000,  /* yields exit waits for the helper's batch at most */
    OFL_STACK = 256 << 10,   /* the helper's stack */
};
#define OFL_LARGE_MAX  ((size_t)64 << 20)  /* fallback-path bytes queued at most */
#define OFL_NAP_MIN_NS 50000L              /* 50 us */
#define OFL_NAP_MAX_NS 200000000L          /* 200 ms */

_Static_assert((OFL_SLOTS & (OFL_SLOTS - 1)) == 0, "OFL_SLOTS is a power of two");
_Static_assert((OFL_WAKE_EVERY & (OFL_WAKE_EVERY - 1)) == 0 && OFL_WAKE_EVERY <= OFL_SLOTS,
               "OFL_WAKE_EVERY is a power of two within the ring");
_Static_assert(OFL_BATCH <= OFL_SLOTS && OFL_GROUP >= 1, "sizes that fit");

/* The helper's life (g_ofl). */
enum {
    OFL_OFF = 0,        /* DMM_OFFLOAD not set (or DMM_CHECK on) */
    OFL_NONE = 1,       /* on, no helper: frees are synchronous, counted */
    OFL_STARTING = 2,   /* pthread_create is running */
    OFL_RUNNING = 3,    /* frees go to the ring */
    OFL_STOPPED = 4,    /* the process is exiting: synchronous for good */
    OFL_FAILED = 5,     /* no thread could be made: synchronous for good */
};

typedef struct ofl_slot {
    size_t seq;
    size_t n;
    void  *p[OFL_GROUP];
} ofl_slot_t;
_Static_assert(sizeof(ofl_slot_t) == 128, "a slot is two cache lines");

/* Fields apart by who writes them, each group on lines of its own. */
typedef struct ofl_queue {
    _Alignas(64) size_t head;      /* producers: the next position to claim */
    uint64_t handed;               /* blocks put in the ring (beside head: one line) */
    _Alignas(64) size_t tail;      /* the consumer: the next position to take */
    uint64_t done;                 /* blocks the consumer took out of the ring */
    int      consumer;             /* lock: held by the helper for a batch, by fork */
    _Alignas(64) int sleeping;     /* futex word: 1 while the helper sleeps */
    _Alignas(64) size_t large;     /* fallback-path bytes queued */
    uint64_t direct;               /* freed by the caller: no helper running */
    uint64_t direct_mark;          /* direct at the start or the last fork */
    uint64_t full;                 /* freed by the caller: the ring was full */
    uint64_t lost;                 /* slots of producers a fork left behind */
    uint64_t starts;               /* helpers started (a fork child starts its own) */
    uint64_t wakes;                /* futex wakes by producers */
    _Alignas(64) ofl_slot_t slot[OFL_SLOTS];
} ofl_queue_t;

static ofl_queue_t *ofl_q;
static int g_ofl;          /* OFL_* */
static int g_ctor_ran;     /* the library's constructor ran: libc is set up */

void dmm_offload_ready(void)
{
    __atomic_store_n(&g_ctor_ran, 1, __ATOMIC_RELEASE);
}

int dmm_offload_on(void)
{
    return ofl_q != NULL;
}
static pthread_key_t ofl_key;
static int ofl_key_ok;

/* This thread's group: blocks freed and not handed over yet. */
static __thread void *t_ofl_buf[OFL_GROUP] __attribute__((tls_model("initial-exec")));
static __thread unsigned t_ofl_n __attribute__((tls_model("initial-exec")));
/* 0: the key's destructor is not armed for this thread; 1: it is; 2: the
 * thread is ending (its destructor ran): blocks go one by one. */
static __thread unsigned char t_ofl_state __attribute__((tls_model("initial-exec")));
/* Set while this thread is inside dmm_offload_push: a free from a signal
 * handler that interrupted it is done at once instead of touching the
 * group. */
static __thread unsigned char t_ofl_busy __attribute__((tls_model("initial-exec")));

static inline void ofl_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static inline uint64_t ofl_add(uint64_t *v, uint64_t n)
{
    return __atomic_add_fetch(v, n, __ATOMIC_RELAXED);
}

static inline uint64_t ofl_get(const uint64_t *v)
{
    return __atomic_load_n(v, __ATOMIC_RELAXED);
}

static void ofl_futex_wait(int *w, int val, long ns)
{
    struct timespec ts = { ns / 1000000000L, ns % 1000000000L };
    syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, val, ns >= 0 ? &ts : NULL, NULL, 0);
}

static void ofl_wake(ofl_queue_t *q)
{
    if (__atomic_load_n(&q->sleeping, __ATOMIC_RELAXED) &&
        __atomic_exchange_n(&q->sleeping, 0, __ATOMIC_ACQ_REL)) {
        ofl_add(&q->wakes, 1);
        syscall(SYS_futex, &q->sleeping, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    }
}

/* Map and set up the ring (init(), before any free can reach it).  0, or
 * -1 when the OS gives no memory (offload then stays off). */
int dmm_offload_setup(void)
{
    void *m = mmap(NULL, sizeof(ofl_queue_t), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    ofl_queue_t *q = m;
    for (size_t i = 0; i < OFL_SLOTS; i++)
        q->slot[i].seq = i;
    ofl_q = q;
    __atomic_store_n(&g_ofl, OFL_NONE, __ATOMIC_RELEASE);
    return 0;
}

/* Free a group's n blocks now: the helper, a fork child, or a caller whose
 * group did not fit.  The headers are prefetched first (they were written
 * on another core); consecutive blocks of one allocator are freed under
 * one hold of its lock.  The chain's lock words are always taken here:
 * whoever runs this is not alone.  A busy one is waited for spinning (its
 * holder is in one malloc or free, well under a microsecond) before
 * yielding: a sched_yield per busy lock made it a system call for every
 * other block. */
static void ofl_free_group(dmm_chain_t *c, ofl_queue_t *q, void *const *p, size_t n)
{
    unsigned o[OFL_GROUP];
    for (size_t i = 0; i < n; i++) {
        __builtin_prefetch((const char *)p[i] - 16, 1);
        o[i] = dmm_pagesrc_owner(&c->ps, p[i]);
    }
    int held = -1;
    for (size_t i = 0; i < n; i++) {
        int a = (int)o[i] - 1;
        if (__builtin_expect(a >= 0 && a < c->n, 1)) {
            if (a != held) {
                if (held >= 0)
                    dmm_spin_unlock(&c->locks[held]);
                dmm_spin_lock_patient(&c->locks[a], OFL_LOCK_SPIN);
                held = a;
            }
            dmm_backend_class_free(c, a, p[i]);
            continue;
        }
        if (held >= 0)
            dmm_spin_unlock(&c->locks[held]);
        held = -1;
        size_t u = dmm_chain_usable(c, p[i]);   /* the fallback path */
        dmm_backend_free(c, p[i]);
        __atomic_sub_fetch(&q->large, u, __ATOMIC_RELAXED);
    }
    if (held >= 0)
        dmm_spin_unlock(&c->locks[held]);
}

/* Free up to max published groups from the tail; the caller holds the
 * consumer lock.  Returns how many groups. */
static size_t ofl_drain(dmm_chain_t *c, ofl_queue_t *q, size_t max)
{
    size_t t = q->tail, n = 0;
    void *g[OFL_GROUP];
    while (n < max) {
        ofl_slot_t *s = &q->slot[t & (OFL_SLOTS - 1)];
        if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != t + 1)
            break;
        size_t k = s->n;
        memcpy(g, s->p, k * sizeof g[0]);
        ofl_add(&q->done, k);   /* before the slot can be filled again */
        __atomic_store_n(&s->seq, t + OFL_SLOTS, __ATOMIC_RELEASE);
        t++;
        n++;
        ofl_free_group(c, q, g, k);
    }
    if (n)
        __atomic_store_n(&q->tail, t, __ATOMIC_RELEASE);
    return n;
}

static int ofl_queued(ofl_queue_t *q)
{
    return __atomic_load_n(&q->head, __ATOMIC_SEQ_CST) !=
           __atomic_load_n(&q->tail, __ATOMIC_RELAXED);
}

/* Is any thread of the process but this one alive (not a zombie)?  Reads
 * /proc/self/task with system calls only; 1 when that cannot be told. */
static int ofl_others_alive(void)
{
    int dfd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return 1;
    long self = syscall(SYS_gettid), pf = dmm_prefault_tid();
    int alive = 0;
    char buf[2048];
    long n;
    while (!alive && (n = syscall(SYS_getdents64, dfd, buf, sizeof buf)) > 0) {
        for (long off = 0; off < n && !alive;) {
            unsigned short reclen;
            memcpy(&reclen, buf + off + 16, sizeof reclen);
            const char *name = buf + off + 19;
            off += reclen;
            long tid = strtol(name, NULL, 10);
            if (name[0] < '0' || name[0] > '9' || tid == self || tid == pf)
                continue;   /* (the page source's helper ends with the process) */
            char path[64], st[512];
            snprintf(path, sizeof path, "%s/stat", name);
            int fd = openat(dfd, path, O_RDONLY | O_CLOEXEC);
            if (fd < 0)
                continue;   /* gone meanwhile */
            ssize_t k = read(fd, st, sizeof st - 1);
            close(fd);
            if (k <= 0)
                continue;
            st[k] = 0;
            char *r = strrchr(st, ')');
            alive = !r || (r[1] == ' ' && r[2] != 'Z' && r[2] != 'X');
        }
    }
    close(dfd);
    return n < 0 ? 1 : alive;
}

static void *ofl_main(void *arg)
{
    dmm_chain_t *c = arg;
    ofl_queue_t *q = ofl_q;
    prctl(PR_SET_NAME, "dmm-offload", 0, 0, 0);
    long nap = OFL_NAP_MIN_NS;
    int spins = 0;
    for (;;) {
        dmm_spin_lock(&q->consumer);
        if (__atomic_load_n(&g_ofl, __ATOMIC_ACQUIRE) == OFL_STOPPED) {
            dmm_spin_unlock(&q->consumer);
            for (;;)   /* until the process ends */
                ofl_futex_wait(&g_ofl, OFL_STOPPED, -1);
        }
        size_t n = ofl_drain(c, q, OFL_BATCH);
        dmm_spin_unlock(&q->consumer);
        if (n) {
            spins = 0;
            nap = OFL_NAP_MIN_NS;
            continue;
        }
        if (++spins < OFL_SPIN) {
            ofl_relax();
            continue;
        }
        spins = 0;
        __atomic_store_n(&q->sleeping, 1, __ATOMIC_SEQ_CST);
        if (!ofl_queued(q) && __atomic_load_n(&g_ofl, __ATOMIC_ACQUIRE) == OFL_RUNNING)
            ofl_futex_wait(&q->sleeping, 1, nap);
        __atomic_store_n(&q->sleeping, 0, __ATOMIC_RELAXED);
        if (ofl_queued(q)) {
            nap = OFL_NAP_MIN_NS;
        } else if (nap < OFL_NAP_MAX_NS) {
            nap = nap * 2 < OFL_NAP_MAX_NS ? nap * 2 : OFL_NAP_MAX_NS;
        } else if (!ofl_others_alive()) {
            /* every other thread ended (main called pthread_exit): the
             * process ends when this one does, as it would without it */
            return NULL;
        }
    }
}

/* A thread ends (the key's destructor; glibc clears the value first): hand
 * over its group, and from now on its frees one by one, so that later
 * destructors' frees are not left in a group nobody hands over. */
static int ofl_hand(ofl_queue_t *q, void *const *g, size_t n, size_t big);

static void ofl_thread_end(void *unused)
{
    (void)unused;
    t_ofl_state = 2;
    size_t n = t_ofl_n;
    t_ofl_n = 0;
    if (n && dmm_shim_chain && !ofl_hand(ofl_q, t_ofl_buf, n, 0)) {
        ofl_free_group(dmm_shim_chain, ofl_q, t_ofl_buf, n);
        ofl_add(&ofl_q->full, n);
    }
}

/* From malloc's slow path in DMM_SHIM_HELPER: start the helper.  Any error leaves
 * frees synchronous for good, with one notice. */
void dmm_offload_start(dmm_chain_t *c)
{
    dmm_shim_state_t helper = DMM_SHIM_HELPER;
    if (!__atomic_compare_exchange_n(&dmm_shim_state, &helper, DMM_SHIM_ON, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED))
        return;
    int none = OFL_NONE;
    if (dmm_shim_starting || !__atomic_compare_exchange_n(&g_ofl, &none, OFL_STARTING, 0,
                                                   __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        return;
    int e = errno;
    if (!ofl_key_ok && pthread_key_create(&ofl_key, ofl_thread_end) == 0)
        __atomic_store_n(&ofl_key_ok, 1, __ATOMIC_RELEASE);
    pthread_attr_t a;
    int r = pthread_attr_init(&a);
    if (r == 0) {
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&a, OFL_STACK);
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pthread_t t;
        r = pthread_create(&t, &a, ofl_main, c);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        pthread_attr_destroy(&a);
    }
    if (r == 0) {
        ofl_add(&ofl_q->starts, 1);
        int st = OFL_STARTING;   /* unless exit stopped it meanwhile */
        __atomic_compare_exchange_n(&g_ofl, &st, OFL_RUNNING, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_RELAXED);
    } else {
        __atomic_store_n(&g_ofl, OFL_FAILED, __ATOMIC_RELEASE);
        const char *why = strerrorname_np(r);   /* static text: no malloc */
        dmm_shim_say("DMM_OFFLOAD: no helper thread, frees stay synchronous: ",
                     why ? why : "error");
    }
    errno = e;
}

/* A free with no helper to take it: count it, and after OFL_START_AFTER
 * ask the next malloc to start one. */
static void ofl_no_helper(ofl_queue_t *q, int st)
{
    uint64_t d = ofl_add(&q->direct, 1);
    if (st == OFL_NONE && d - ofl_get(&q->direct_mark) >= OFL_START_AFTER &&
        __atomic_load_n(&g_ctor_ran, __ATOMIC_ACQUIRE) && !dmm_shim_starting) {
        dmm_shim_state_t on = DMM_SHIM_ON;
        __atomic_compare_exchange_n(&dmm_shim_state, &on, DMM_SHIM_HELPER, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_RELAXED);
    }
}

/* Put a group of n blocks (big bytes of them on the fallback path) in the
 * ring: 1, or 0 when the ring is full (the caller frees the group). */
static int ofl_hand(ofl_queue_t *q, void *const *g, size_t n, size_t big)
{
    size_t pos = __atomic_load_n(&q->head, __ATOMIC_RELAXED);
    ofl_slot_t *s;
    for (;;) {
        s = &q->slot[pos & (OFL_SLOTS - 1)];
        size_t seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
        intptr_t d = (intptr_t)(seq - pos);
        if (d == 0) {
            if (__atomic_compare_exchange_n(&q->head, &pos, pos + 1, 1, __ATOMIC_SEQ_CST,
                                            __ATOMIC_RELAXED))
                break;
        } else if (d < 0) {   /* the previous lap's group is still there */
            if (big)
                __atomic_sub_fetch(&q->large, big, __ATOMIC_RELAXED);
            ofl_wake(q);
            return 0;
        } else {
            pos = __atomic_load_n(&q->head, __ATOMIC_RELAXED);
        }
    }
    s->n = n;
    memcpy(s->p, g, n * sizeof g[0]);
    __atomic_store_n(&s->seq, pos + 1, __ATOMIC_RELEASE);
    ofl_add(&q->handed, n);   /* after: handed - done never exceeds the ring */
    if ((pos & (OFL_WAKE_EVERY - 1)) == 0)
        ofl_wake(q);
    return 1;
}

/* This thread's group, freed now (offloading stopped, or a fork child). */
static void ofl_drop_group(dmm_chain_t *c, ofl_queue_t *q)
{
    size_t n = t_ofl_n;
    t_ofl_n = 0;
    if (n) {
        ofl_free_group(c, q, t_ofl_buf, n);
        ofl_add(&q->direct, n);
    }
}

static int ofl_take(dmm_chain_t *c, void *p, unsigned o)
{
    ofl_queue_t *q = ofl_q;
    int st = __atomic_load_n(&g_ofl, __ATOMIC_ACQUIRE);
    if (__builtin_expect(st != OFL_RUNNING, 0)) {
        ofl_no_helper(q, st);
        if (t_ofl_n)
            ofl_drop_group(c, q);
        return 0;
    }
    if (__builtin_expect(o == DMM_OWNER_LARGE, 0)) {
        size_t big = dmm_chain_usable(c, p);
        if (__atomic_add_fetch(&q->large, big, __ATOMIC_RELAXED) > OFL_LARGE_MAX) {
            __atomic_sub_fetch(&q->large, big, __ATOMIC_RELAXED);
            ofl_add(&q->full, 1);
            return 0;
        }
        if (ofl_hand(q, &p, 1, big))
            return 1;
        ofl_add(&q->full, 1);
        return 0;
    }
    if (__builtin_expect(t_ofl_state != 1, 0)) {
        if (t_ofl_state == 2) {   /* the thread is ending: no group */
            if (ofl_hand(q, &p, 1, 0))
                return 1;
            ofl_add(&q->full, 1);
            return 0;
        }
        /* arm the key's destructor, which hands the group over when the
         * thread ends (a key below 32 needs no memory; a later one calls
         * calloc, which is safe here: no lock is held) */
        int armed = __atomic_load_n(&ofl_key_ok, __ATOMIC_ACQUIRE) &&
                    pthread_setspecific(ofl_key, (void *)1) == 0;
        t_ofl_state = armed ? 1 : 2;
        if (!armed)
            return ofl_take(c, p, o);
    }
    unsigned n = t_ofl_n;
    t_ofl_buf[n++] = p;
    if (n < OFL_GROUP) {
        t_ofl_n = n;
        return 1;
    }
    t_ofl_n = 0;
    if (!ofl_hand(q, t_ofl_buf, n, 0)) {
        ofl_free_group(c, q, t_ofl_buf, n);
        ofl_add(&q->full, n);
    }
    return 1;
}

/* Take block p of chain c, of owner o in the page map (the caller checked
 * that it is the chain's), for the helper.  1 when it is taken (in this
 * thread's group or in the ring), 0 when the caller must free it now. */
int dmm_offload_push(dmm_chain_t *c, void *p, unsigned o)
{
    if (__builtin_expect(t_ofl_busy, 0))
        return 0;   /* a signal handler's free, inside this thread's own */
    t_ofl_busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    int r = ofl_take(c, p, o);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    t_ofl_busy = 0;
    return r;
}

/* Exit: from now on every free is the caller's.  Taking the consumer lock
 * once waits for the helper's batch in progress; it sees the state under
 * that lock before each batch, so it frees nothing more and parks.  What
 * is still queued stays so.  After this the chain is the exiting threads'
 * alone (DMM_STATS reads it).  The wait is bounded: exit called from a
 * signal handler may have interrupted this thread holding a lock that the
 * helper's batch waits for; then exit goes on without it. */
void dmm_offload_stop(void)
{
    ofl_queue_t *q = ofl_q;
    if (!q)
        return;
    __atomic_store_n(&g_ofl, OFL_STOPPED, __ATOMIC_RELEASE);
    if (dmm_spin_trylock(&q->consumer, OFL_STOP_TRIES))
        dmm_spin_unlock(&q->consumer);
    ofl_wake(q);
}

/* Fork, prepare: the helper between two batches. */
void dmm_offload_prepare(void)
{
    if (ofl_q)
        dmm_spin_lock(&ofl_q->consumer);
}

void dmm_offload_parent(void)
{
    if (ofl_q)
        dmm_spin_unlock(&ofl_q->consumer);
}

/* Fork, child (one thread, the chain's locks released): free what was
 * queued and published and this thread's group, write off the slots of
 * producers that do not exist here, and start again without a helper. */
void dmm_offload_child(dmm_chain_t *c)
{
    ofl_queue_t *q = ofl_q;
    if (!q)
        return;
    size_t head = q->head;
    for (size_t t = q->tail; t != head; t++) {
        ofl_slot_t *s = &q->slot[t & (OFL_SLOTS - 1)];
        if (s->seq == t + 1) {
            ofl_free_group(c, q, s->p, s->n);
            q->done += s->n;
        } else {
            q->lost++;
        }
        s->seq = t + OFL_SLOTS;
    }
    q->tail = head;
    q->sleeping = 0;
    ofl_drop_group(c, q);
    q->direct_mark = q->direct;
    if (g_ofl == OFL_STARTING || g_ofl == OFL_RUNNING)
        g_ofl = OFL_NONE;
    if (dmm_shim_state == DMM_SHIM_HELPER)
        dmm_shim_state = DMM_SHIM_ON;
    dmm_spin_unlock(&q->consumer);
}

/* DMM_STATS's line, into buf; the number of bytes written. */
int dmm_offload_print(char *buf, size_t len)
{
    ofl_queue_t *q = ofl_q;
    if (!q)
        return 0;
    uint64_t handed = ofl_get(&q->handed), done = ofl_get(&q->done);
    uint64_t direct = ofl_get(&q->direct), full = ofl_get(&q->full);
    int n = snprintf(buf, len,
                     "dmm: DMM_OFFLOAD on: %llu frees offloaded, %llu synchronous "
                     "(%llu with no helper, %llu with the queue full); %llu still queued; "
                     "helper started %llu times, woken %llu times\n",
                     (unsigned long long)handed, (unsigned long long)(direct + full),
                     (unsigned long long)direct, (unsigned long long)full,
                     (unsigned long long)(handed > done ? handed - done : 0),
                     (unsigned long long)ofl_get(&q->starts),
                     (unsigned long long)ofl_get(&q->wakes));
    return n < 0 ? 0 : n;
}
