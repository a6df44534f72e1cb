/* writer.c - the trace writer process (see writer.h). */
#include "preload/recorder/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "preload/recorder/block.h"
#include "preload/recorder/fds.h"
#include "tracer/base/sys.h"
#include "tracer/base/spinlock.h"

#if defined(__SANITIZE_THREAD__)
#define NO_WRITER 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NO_WRITER 1
#endif
#endif
#if !defined(NO_WRITER) && !DMM_SYS_RAW
#define NO_WRITER 1
#endif

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

#define STACK_BYTES (256u << 10)
#define PAGE        4096u
#define POLL_NS     100000000L   /* the writer looks for its program this often */

enum { W_NONE, W_RUNNING, W_STOPPING, W_OFF };

static struct {
    dmm_wjob_t *head;       /* jobs pushed by the threads, taken all at once */
    int         work;       /* futex word the writer sleeps on */
    int         sleeping;   /* the writer is about to sleep or sleeps */
    int         quit;       /* finish the jobs and end */
    int         tid;        /* the writer's, 0 once it has exited (CLEARTID) */
    int         state;      /* W_*: under lock */
    int         lock;
    int         fd, zlevel; /* what it writes to, how */
    int         hup;        /* its end of a pipe whose other end the program holds */
    int         hold;       /* the program's end: closed by exit, exec or death */
    dmm_fd_id_t hold_id;    /* what hold names (the program may close it: fds.h) */
    pid_t       pid;
    pid_t       parent;     /* the program's */
    int         orphaned;   /* the program died without stopping it */
    void      (*orphan_hook)(int fd, dmm_block_z_t *z);
    void       *stack;
} g_w;

/* op: FUTEX_WAIT_PRIVATE, or FUTEX_WAIT for the word the kernel clears
 * when the writer exits (its wake is a shared one) */
static void futex_wait_op(int *w, int op, int val, long ns)
{
    struct timespec t = { ns / 1000000000L, ns % 1000000000L };
    dmm_sys6(SYS_futex, (long)w, op, val, (long)&t, 0, 0);
}

static void futex_wait(int *w, int val, long ns)
{
    futex_wait_op(w, FUTEX_WAIT_PRIVATE, val, ns);
}

static void futex_wake(int *w)
{
    DMM_SYS(SYS_futex, w, FUTEX_WAKE_PRIVATE, INT_MAX);
}

/* ---- the writer's side ------------------------------------------------ */

#ifndef NO_WRITER

/* The program has died: this process is someone else's child now. */
static int program_dead(void)
{
    return (pid_t)DMM_SYS(SYS_getppid, 0, 0, 0) != g_w.parent;
}

/* The program has gone: every copy of its end of the pipe is closed and it
 * died.  A closed pipe with the program alive is the program closing a
 * descriptor it did not open (closefrom: fds.h), or an exec the recorder
 * did not see; the writer goes on then, and looks for its death alone
 * (after such an exec, that of the program the exec started: the buffers
 * of the one before are still the writer's to write). */
static int program_gone(void)
{
    if (g_w.hup >= 0) {
        struct pollfd p = { .fd = g_w.hup, .events = POLLIN };
        if (DMM_SYS(SYS_poll, &p, 1, 0) <= 0 || !(p.revents & (POLLHUP | POLLERR | POLLNVAL)))
            return 0;
        DMM_SYS(SYS_close, g_w.hup, 0, 0);
        g_w.hup = -1;
    }
    return program_dead();
}

static void keep_only(int a, int b)
{
    unsigned lo = (unsigned)(a < b ? a : b), hi = (unsigned)(a < b ? b : a);
    long r = 0;
    if (lo > 0)
        r = DMM_SYS(SYS_close_range, 0, lo - 1, 0);
    if (r != -ENOSYS && hi > lo + 1)
        r = DMM_SYS(SYS_close_range, lo + 1, hi - 1, 0);
    if (r != -ENOSYS)
        r = DMM_SYS(SYS_close_range, hi + 1, ~0u, 0);
    if (r == -ENOSYS)   /* before Linux 5.9 */
        for (int fd = 0; fd < 65536; fd++)
            if (fd != a && fd != b)
                DMM_SYS(SYS_close, fd, 0, 0);
}

/* Take the buffer's lines out of this CPU's caches.  The thread writes the
 * buffer again soon; lines the writer read would each cost it a
 * cross-CPU invalidation, which cost more than missing to memory: on
 * work_media with zstd (2 vCPUs), 1.39x the plain run's time without this,
 * 1.31x with it. */
static void evict(const void *p, uint32_t len)
{
#if defined(__x86_64__)
    for (uint32_t o = 0; o < len; o += 64)
        __builtin_ia32_clflush((const char *)p + o);
#else
    (void)p;
    (void)len;
#endif
}

static int writer_main(void *arg)
{
    (void)arg;
    keep_only(g_w.fd, g_w.hup);
    DMM_SYS(SYS_prctl, PR_SET_NAME, "dmm-writer", 0);
    dmm_block_z_t z;
    memset(&z, 0, sizeof z);
    for (;;) {
        dmm_wjob_t *list = __atomic_exchange_n(&g_w.head, NULL, __ATOMIC_SEQ_CST);
        if (!list) {
            /* quit is set after the last job was pushed: look once more */
            if (__atomic_load_n(&g_w.quit, __ATOMIC_SEQ_CST) &&
                !__atomic_load_n(&g_w.head, __ATOMIC_SEQ_CST))
                break;
            int seen = __atomic_load_n(&g_w.work, __ATOMIC_SEQ_CST);
            __atomic_store_n(&g_w.sleeping, 1, __ATOMIC_SEQ_CST);
            if (!__atomic_load_n(&g_w.head, __ATOMIC_SEQ_CST) &&
                !__atomic_load_n(&g_w.quit, __ATOMIC_SEQ_CST))
                futex_wait(&g_w.work, seen, POLL_NS);
            __atomic_store_n(&g_w.sleeping, 0, __ATOMIC_SEQ_CST);
            if (program_gone()) {
                g_w.orphaned = 1;
                __atomic_store_n(&g_w.quit, 1, __ATOMIC_SEQ_CST);
            }
            continue;
        }
        dmm_wjob_t *fifo = NULL;   /* pushed last first: the order they came */
        while (list) {
            dmm_wjob_t *next = list->next;
            list->next = fifo;
            fifo = list;
            list = next;
        }
        while (fifo) {
            dmm_wjob_t *j = fifo, *next = j->next;
            __atomic_fetch_or(&j->state, DMM_WJOB_TAKEN, __ATOMIC_ACQ_REL);
            dmm_block_write(g_w.fd, &z, g_w.zlevel, j->tid, j->payload, j->len, j->cont);
            evict(j->payload, j->len);
            if (__atomic_exchange_n(&j->state, 0, __ATOMIC_ACQ_REL) & DMM_WJOB_WAITER)
                futex_wake(&j->state);   /* j may be reused from here on */
            fifo = next;
        }
    }
    void (*hook)(int, dmm_block_z_t *) = __atomic_load_n(&g_w.orphan_hook, __ATOMIC_ACQUIRE);
    if (g_w.orphaned && hook)
        hook(g_w.fd, &z);
    dmm_block_z_free(&z);
    for (;;)
        DMM_SYS(SYS_exit, 0, 0, 0);
    return 0;
}

#endif /* NO_WRITER */

/* ---- the program's side ----------------------------------------------- */

int dmm_writer_supported(void)
{
#ifdef NO_WRITER
    return 0;
#else
    return 1;
#endif
}

/* Start the writer: under g_w.lock, state W_NONE. */
static int start(int fd, int zlevel)
{
#ifdef NO_WRITER
    (void)fd;
    (void)zlevel;
    return -1;
#else
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        return -1;
    char *stack = mmap(NULL, STACK_BYTES + PAGE, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED) {
        close(p[0]);
        close(p[1]);
        return -1;
    }
    mprotect(stack, PAGE, PROT_NONE);   /* an overflow faults, not corrupts */
    g_w.head = NULL;
    g_w.quit = g_w.sleeping = g_w.orphaned = 0;
    g_w.parent = getpid();
    g_w.fd = fd;
    g_w.zlevel = zlevel;
    g_w.hup = p[0];
    g_w.hold = dmm_fd_move_high(p[1]);   /* out of the program's way */
    dmm_fd_id(g_w.hold, &g_w.hold_id);
    g_w.stack = stack;
    /* the writer starts with every signal blocked: none ends it half-way */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t pid = clone(writer_main, stack + STACK_BYTES + PAGE,
                      CLONE_VM | CLONE_PARENT_SETTID | CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID,
                      NULL, &g_w.tid, NULL, &g_w.tid);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pid < 0) {
        munmap(stack, STACK_BYTES + PAGE);
        close(p[0]);
        close(p[1]);
        return -1;
    }
    g_w.pid = pid;
    close(p[0]);   /* the writer's copy stays open in its own descriptor table */
    return 0;
#endif
}

/* Start the writer if none was: under g_w.lock. */
static void start_once(int fd, int zlevel)
{
    if (g_w.state == W_NONE) {
        int saved = errno;
        g_w.state = start(fd, zlevel) == 0 ? W_RUNNING : W_OFF;
        errno = saved;
    }
}

int dmm_writer_start(int fd, int zlevel)
{
    dmm_spin_lock(&g_w.lock);
    start_once(fd, zlevel);
    int ok = g_w.state == W_RUNNING;
    dmm_spin_unlock(&g_w.lock);
    return ok;
}

int dmm_writer_submit(dmm_wjob_t *j, int fd, int zlevel)
{
    dmm_spin_lock(&g_w.lock);
    start_once(fd, zlevel);
    int ok = g_w.state == W_RUNNING && fd == g_w.fd && zlevel == g_w.zlevel &&
             __atomic_load_n(&g_w.tid, __ATOMIC_ACQUIRE) != 0;
    if (ok) {
        j->state = DMM_WJOB_QUEUED;
        dmm_wjob_t *h = __atomic_load_n(&g_w.head, __ATOMIC_RELAXED);
        do
            j->next = h;
        while (!__atomic_compare_exchange_n(&g_w.head, &h, j, 1, __ATOMIC_SEQ_CST,
                                            __ATOMIC_RELAXED));
    }
    dmm_spin_unlock(&g_w.lock);
    if (ok && __atomic_load_n(&g_w.sleeping, __ATOMIC_SEQ_CST)) {
        __atomic_add_fetch(&g_w.work, 1, __ATOMIC_SEQ_CST);
        futex_wake(&g_w.work);
    }
    return ok;
}

int dmm_writer_wait(dmm_wjob_t *j)
{
    for (;;) {
        int st = __atomic_load_n(&j->state, __ATOMIC_ACQUIRE);
        if (!st)
            return 0;
        if (!__atomic_load_n(&g_w.tid, __ATOMIC_ACQUIRE)) {
            /* it died (a writer told to stop finishes its jobs first): no
             * writer again, and what it did not take is the caller's */
            dmm_spin_lock(&g_w.lock);
            g_w.state = W_OFF;
            __atomic_store_n(&g_w.head, NULL, __ATOMIC_RELAXED);
            dmm_spin_unlock(&g_w.lock);
            __atomic_store_n(&j->state, 0, __ATOMIC_RELEASE);
            return !(st & DMM_WJOB_TAKEN);
        }
        if (!(st & DMM_WJOB_WAITER)) {
            if (!__atomic_compare_exchange_n(&j->state, &st, st | DMM_WJOB_WAITER, 0,
                                             __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                continue;
            st |= DMM_WJOB_WAITER;
        }
        futex_wait(&j->state, st, POLL_NS / 10);
    }
}

/* Tell a running writer to end once its jobs are done (and, with no_orphan,
 * to write nothing of a program it then finds gone): 1, or 0 when none ran.
 * Keeps errno. */
static int tell_to_end(int no_orphan)
{
    dmm_spin_lock(&g_w.lock);
    if (g_w.state != W_RUNNING) {
        dmm_spin_unlock(&g_w.lock);
        return 0;
    }
    g_w.state = W_STOPPING;   /* no job is queued from here on */
    if (no_orphan)
        __atomic_store_n(&g_w.orphan_hook, NULL, __ATOMIC_RELEASE);
    __atomic_store_n(&g_w.quit, 1, __ATOMIC_SEQ_CST);
    dmm_spin_unlock(&g_w.lock);
    int saved = errno;
    __atomic_add_fetch(&g_w.work, 1, __ATOMIC_SEQ_CST);
    futex_wake(&g_w.work);
    errno = saved;
    return 1;
}

void dmm_writer_stop(void)
{
    if (!tell_to_end(0))
        return;
    int saved = errno;
    for (int t; (t = __atomic_load_n(&g_w.tid, __ATOMIC_ACQUIRE)) != 0;)
        futex_wait_op(&g_w.tid, FUTEX_WAIT, t, POLL_NS);
    while (waitpid(g_w.pid, NULL, __WCLONE) < 0 && errno == EINTR)
        ;
    munmap(g_w.stack, STACK_BYTES + PAGE);
    dmm_fd_close_if(g_w.hold, &g_w.hold_id);
    errno = saved;
    dmm_spin_lock(&g_w.lock);
    g_w.state = W_NONE;
    dmm_spin_unlock(&g_w.lock);
}

void dmm_writer_release(void)
{
    tell_to_end(1);   /* nothing of the program's is left for it */
}

void dmm_writer_on_orphan(void (*hook)(int fd, dmm_block_z_t *z))
{
    g_w.orphan_hook = hook;
}

void dmm_writer_forget(void)
{
    if (g_w.state == W_RUNNING || g_w.state == W_STOPPING) {
        munmap(g_w.stack, STACK_BYTES + PAGE);
        /* the parent's writer must see the parent go */
        dmm_fd_close_if(g_w.hold, &g_w.hold_id);
    }
    void (*hook)(int, dmm_block_z_t *) = g_w.orphan_hook;
    memset(&g_w, 0, sizeof g_w);
    g_w.orphan_hook = hook;
}
