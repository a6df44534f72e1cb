/* recorder.c - per-thread record buffers and the trace file of
 * libdmmtrace.so.
 *
 * Hot path: a record is a compact version-3 record (tracer/format/trcenc.h,
 * a few bytes: differences from the thread's previous record) appended to
 * the calling thread's buffer (thread-local, no lock), stamped with a
 * sequence number (a plain add while the process is single-threaded, a
 * clock of the thread's own after: seq_mt() below) and the TSC, read every DMM_TRACE_TIME_STRIDE
 * records of the thread (default 128: a read costs more than the rest of a
 * record); the records between carry the last reading.  malloc and free
 * write theirs the lean way (below; with one thread inline in the shim:
 * ~45 instructions a call on the bundled workload, the shim's included),
 * every other record through record().  A full buffer becomes one block (block.h), written with one
 * writev(2) to a file opened O_APPEND, so blocks of different threads never
 * interleave: by the thread itself, or by the writer process (writer.h: by
 * default where blocks are compressed) while the thread records into its
 * spare buffer.  A block starts the
 * thread's differences afresh when it starts at the buffer's beginning,
 * and goes on from the previous block (DMM_TRC_BF_CONT) when another thread
 * wrote the start of the buffer (exit, signals).
 *
 * Off the hot path, every thread's state sits in a registry so that exit,
 * exec, _exit and fatal signals can write what other threads still hold.  A
 * thread's buffer is guarded by a flush lock that only flushes take; the
 * owner appends at `pos` and publishes it with a release store, the flusher
 * writes [flushed, pos) and advances `flushed`.
 *
 * Ends of life:
 *   thread exit   a pthread key destructor flushes and switches the thread
 *                 to its small in-TLS buffer, written after every record
 *                 (later destructors and libc's thread cleanup still free);
 *   exit          the library destructor flushes everything and switches the
 *                 process to write-through mode;
 *   _exit, exec   the shim calls dmm_tw_flush_last() first, which stops the
 *                 other threads' writes (the write gate, below);
 *   fork          the child drops its copy of the parent's buffers and opens
 *                 a file of its own; the parent writes its own records;
 *   fatal signal  a handler (installed only where the disposition was the
 *                 default) flushes with try-locks, then re-raises.
 */
#include "preload/recorder/recorder.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <link.h>
#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

#include "preload/common/options.h"
#include "preload/recorder/block.h"
#include "preload/recorder/fds.h"
#include "preload/recorder/optlib.h"
#include "preload/recorder/resident.h"
#include "preload/recorder/writer.h"
#include "tracer/base/io.h"
#include "tracer/base/spinlock.h"
#include "tracer/base/sys.h"
#include "tracer/format/trace.h"   /* DMM_FMT_TRC, the header's source format */
#include "tracer/format/trcenc.h"
#include "tracer/format/trcfmt.h"

extern char **environ;

/* A thread's buffers, and so its blocks.  Each is a mapping of BUF_BYTES,
 * the format's largest block, of which a thread first uses BUF_FIRST bytes
 * (some 15 000 records), their pages faulted in as they fill: a page fault
 * each (10 us apiece on the 2-CPU VM dmm is developed on), so that a thread
 * that records little faults in few of them.  A thread that fills them
 * records on in all of its buffer, the rest faulted in at once
 * (MADV_POPULATE_WRITE: one call, 0.8 us a page here), and its spare, for
 * the writer process, is mapped whole the same way (MAP_POPULATE).  Every
 * mapping being BUF_BYTES, a fork's child unmaps the other threads'
 * buffers whatever they were doing.  The larger blocks take fewer writev
 * calls (writing 64 MiB into the page cache: 0.15 ns a byte in 256 KiB
 * writes, 0.19 in 64 KiB) and clock syncs: work_media -f 3000, 81
 * interleaved rounds on one CPU, traced/plain 1.143 with 64 KiB buffers,
 * 1.129 with 256 KiB ones mapped at once (earlier, with every buffer of
 * 256 KiB and faulted page by page, a run of -f 300 took 1.147 against
 * 1.111 with 64 KiB). */
#define BUF_FIRST    (64u << 10)
#define CHILD_EARLY  4096u   /* a fork's child's writer starts here: child_early() */
#define BUF_BYTES    DMM_BLOCK_MAX
#define TIME_STRIDE  128u         /* records per clock read, by default */
#define MAX_DEPTH    64u         /* DMM_TRACE_STACK is capped here */
#define STACK_TABLE  (1u << 20)  /* distinct call stacks we can name */

enum { ST_UNINIT, ST_INITIALIZING, ST_ON, ST_OFF };

typedef struct stack_slot {
    uint64_t hash;     /* 0 = free */
    uint32_t id;       /* 0 until the winner names it */
    uint32_t pad;
} stack_slot_t;
__thread tstate_t dmm_tw_ts __attribute__((tls_model("initial-exec")));

static int       g_state = ST_UNINIT;
static int       g_fd = -1;
static uint32_t  g_pid;
uint64_t         dmm_tw_next_seq;
static uint64_t  g_clock0;
static int       g_tsc;                 /* record times are TSC ticks */
static uint64_t  g_tsc0;
static int       g_unbuffered;          /* after exit: write every record */
static int       g_lean;                /* malloc and free may take the lean way
                                           (no stacks, the TSC as clock) */
static int       g_registry_lock;
static int       g_gate_closed;         /* exec or _exit under way */
static int       g_writers;             /* threads inside the write gate */
static tstate_t *g_registry;
static pthread_key_t g_key;
static int       g_key_ok;
static unsigned  g_depth;               /* DMM_TRACE_STACK */
static int       g_zlevel;              /* 0 = no compression */
static int       g_writer_opt = -1;     /* DMM_TRACE_WRITER: 0 no, 1 yes, -1 auto */
static int       g_writer;              /* full buffers go to the writer process */
static uint32_t  g_stride = TIME_STRIDE; /* DMM_TRACE_TIME_STRIDE */
static int       g_follow_exec = 1;     /* DMM_TRACE_FOLLOW_EXEC */
static int       g_follow_fork = 1;     /* DMM_TRACE_FOLLOW_FORK */
static char      g_path_tmpl[1024];     /* DMM_TRACE_FILE, or empty */
static char      g_path[1100];          /* the file being written */
static char      g_fd_path[4200];       /* the same, absolute: trace_fd() opens it again */
static dmm_fd_id_t g_fd_id;             /* what g_fd names */
static int       g_fd_lock;             /* trace_fd() opening it again */
static struct {                        /* the file's header, as written */
    dmm_trc_header_t h;
    char             cmdline[16384 + 8];   /* the command line, padded */
} g_head;
_Static_assert(offsetof(__typeof__(g_head), cmdline) == sizeof(dmm_trc_header_t),
               "the command line follows the header");
static size_t    g_cmdline_len;
static char    **g_argv;                /* the constructor's */
static int       g_argc;

/* ---- small helpers that allocate nothing ------------------------------ */

static void say(const char *a, const char *b, const char *c)
{
    char msg[1400];
    size_t n = 0;
    const char *parts[4] = { "dmm: ", a, b, c };
    for (int i = 0; i < 4; i++)
        for (const char *p = parts[i]; p && *p && n < sizeof msg - 2; p++)
            msg[n++] = *p;
    msg[n++] = '\n';
    ssize_t r = write(2, msg, n);
    (void)r;
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* An invariant TSC (CPUID 0x80000007 EDX bit 8) ticks at a constant rate
 * on every core, so its ticks order and time records across threads. */
static int tsc_usable(void)
{
#if defined(__x86_64__)
    /* two CPUIDs (__get_cpuid makes two a leaf), each a trap to the
     * hypervisor on a virtual machine: 3 us apiece on the one dmm is
     * developed on */
    unsigned a, b, c, d;
    __cpuid(0x80000000u, a, b, c, d);
    if (a < 0x80000007u)
        return 0;
    __cpuid(0x80000007u, a, b, c, d);
    return (d >> 8) & 1;
#else
    return 0;
#endif
}

/* The time field of a record: TSC ticks or ns since start. */
static inline uint64_t stamp(void)
{
#if defined(__x86_64__)
    if (__builtin_expect(g_tsc, 1))
        return __rdtsc() - g_tsc0;
#endif
    return now_ns() - g_clock0;
}

/* A clock reading: the thread's last, and the least seq of its next
 * record once it has threads (seq_mt: the numbers follow the clock). */
static inline void set_now(tstate_t *s, uint64_t t)
{
    s->tnow = t;
    if (s->lclock < t)
        s->lclock = t;
}

static void *map_pages(size_t len, int populate)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | (populate ? MAP_POPULATE : 0), -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static size_t u64_to_dec(uint64_t v, char *out)
{
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return n;
}

/* ---- options ---------------------------------------------------------- */

static void read_options(void)
{
    const char *v;
    if ((v = secure_getenv("DMM_TRACE_FILE")) && *v) {
        size_t n = strlen(v);
        if (n >= sizeof g_path_tmpl) {
            say("DMM_TRACE_FILE is too long, using the default name", "", "");
        } else {
            memcpy(g_path_tmpl, v, n + 1);
        }
    }
    if ((v = secure_getenv("DMM_TRACE_STACK")) && *v) {
        char *end;
        unsigned long d = strtoul(v, &end, 10);
        if (*end || d > MAX_DEPTH)
            say("DMM_TRACE_STACK=", v, ": expected a depth from 0 to 64; stacks off");
        else
            g_depth = (unsigned)d;
    }
    if ((v = secure_getenv("DMM_TRACE_TIME_STRIDE")) && *v) {
        char *end;
        unsigned long n = strtoul(v, &end, 10);
        if (*end || n < 1 || n > 65536)
            say("DMM_TRACE_TIME_STRIDE=", v, ": expected 1 to 65536 records per clock read; "
                "using 128");
        else
            g_stride = (uint32_t)n;
    }
    static const char *const follow[2] = { "DMM_TRACE_FOLLOW_EXEC", "DMM_TRACE_FOLLOW_FORK" };
    int *fv[2] = { &g_follow_exec, &g_follow_fork };
    for (int i = 0; i < 2; i++) {
        if (!(v = secure_getenv(follow[i])) || !*v)
            continue;
        if (!strcmp(v, "0") || !strcmp(v, "no"))
            *fv[i] = 0;
        else if (strcmp(v, "1") && strcmp(v, "yes"))
            say(follow[i], "=", v[0] ? ": expected yes or no (1 or 0); following" : "");
    }
    if ((v = secure_getenv("DMM_TRACE_COMPRESS")) && *v) {
        if (!strcmp(v, "none") || !strcmp(v, "0") || !strcmp(v, "off"))
            g_zlevel = 0;
        else if (!strcmp(v, "zstd") || !strcmp(v, "1") || !strcmp(v, "on"))
            g_zlevel = 1;
        else if (!strncmp(v, "zstd:", 5) && v[5] >= '1' && v[5] <= '9' && !v[6])
            g_zlevel = v[5] - '0';
        else
            say("DMM_TRACE_COMPRESS=", v, ": expected none, zstd or zstd:1..9; not compressing");
    }
    if ((v = secure_getenv("DMM_TRACE_WRITER")) && *v) {
        if (!strcmp(v, "0") || !strcmp(v, "no"))
            g_writer_opt = 0;
        else if (!strcmp(v, "1") || !strcmp(v, "yes"))
            g_writer_opt = 1;
        else if (strcmp(v, "auto"))
            say("DMM_TRACE_WRITER=", v, ": expected auto, yes or no; auto");
    }
    dmm_options_report_unknown();
}

/* libunwind and libzstd, for the options that need them (optlib.h).  One
 * that cannot be opened turns its option off, said once: the program is
 * recorded all the same. */
static void open_optional_libs(void)
{
    const char *why = "";
    if (g_depth && !dmm_optlib_unwind(&why)) {
        say("DMM_TRACE_STACK: call stacks need libunwind (", why, "); recording without them");
        g_depth = 0;
    }
    if (g_zlevel && !dmm_optlib_zstd(&why)) {
        say("DMM_TRACE_COMPRESS: compression needs libzstd (", why, "); not compressing");
        g_zlevel = 0;
    }
}

/* The writer process pays for compressed blocks on two CPUs or more: zstd
 * costs the thread more than anything else it does (work_media, 2 vCPUs:
 * 1.83x the plain run's time compressing on the thread, 1.31x with the
 * writer).  Uncompressed, the thread's own writev copies a buffer that is
 * still in its cache, and another CPU reading it costs as much as the copy
 * (1.19x either way), so by default it writes its blocks itself; on one
 * CPU the writer would only take turns with the program. */
static int writer_wanted(void)
{
    if (!dmm_writer_supported() || g_writer_opt == 0)
        return 0;
    if (g_writer_opt == 1)
        return 1;
    if (!g_zlevel)
        return 0;
    cpu_set_t set;
    return sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) >= 2;
}

/* Take this library out of LD_PRELOAD in the environment, so that a program
 * exec'd from here on runs untraced (DMM_TRACE_FOLLOW_EXEC=no, and the
 * children of DMM_TRACE_FOLLOW_FORK=no).  No string is written in place
 * (one may be read-only): an entry left with other libraries points to a
 * static copy, an entry with none is taken out of the array. */
static void strip_preload(void)
{
    static char kept[2048];
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "LD_PRELOAD=", 11) != 0)
            continue;
        size_t n = 0;
        for (const char *p = *e + 11; *p;) {
            size_t len = strcspn(p, ": ");
            size_t base = len;
            while (base && p[base - 1] != '/')
                base--;
            int ours = len - base == 14 && !strncmp(p + base, "libdmmtrace.so", 14);
            if (len && !ours && n + len + 13 < sizeof kept) {
                if (n == 0) {
                    memcpy(kept, "LD_PRELOAD=", 11);
                    n = 11;
                } else {
                    kept[n++] = ':';
                }
                memcpy(kept + n, p, len);
                n += len;
            }
            p += len;
            while (*p == ':' || *p == ' ')
                p++;
        }
        kept[n] = 0;
        if (n) {
            *e = kept;
        } else {
            for (char **f = e; *f; f++)
                f[0] = f[1];
            e--;
        }
    }
}

/* ---- the file --------------------------------------------------------- */

#define CMDLINE_CAP (sizeof g_head.cmdline - 8)   /* the rest pads the header */

/* /proc/self/cmdline: where the tracer starts before its constructor (a
 * library's constructor that allocates). */
static void read_proc_cmdline(void)
{
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    for (;;) {
        ssize_t n = read(fd, g_head.cmdline + g_cmdline_len, CMDLINE_CAP - g_cmdline_len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        g_cmdline_len += (size_t)n;
        if (g_cmdline_len == CMDLINE_CAP)
            break;
    }
    close(fd);
}

/* The command line into g_head.cmdline, as /proc/self/cmdline has it (each
 * argument ended by a NUL), less the NULs at its end. */
static void read_cmdline(void)
{
    g_cmdline_len = 0;
    if (g_argv) {
        /* the constructor's arguments, the same bytes without an open, a
         * read and a close of /proc (30 us of a traced process's start
         * on the VM dmm is developed on) */
        for (int i = 0; i < g_argc && g_argv[i] && g_cmdline_len < CMDLINE_CAP; i++) {
            size_t n = strlen(g_argv[i]) + 1;
            if (n > CMDLINE_CAP - g_cmdline_len)
                n = CMDLINE_CAP - g_cmdline_len;
            memcpy(g_head.cmdline + g_cmdline_len, g_argv[i], n);
            g_cmdline_len += n;
        }
    } else {
        read_proc_cmdline();
    }
    while (g_cmdline_len && g_head.cmdline[g_cmdline_len - 1] == 0)
        g_cmdline_len--;
}

/* The program's name, '/' made '_' (its file name, from the command line),
 * into out: the length. */
static size_t prog_name(char *out, size_t cap)
{
    const char *prog = g_cmdline_len ? g_head.cmdline : "program";
    const char *slash = strrchr(prog, '/');
    if (slash && slash[1])
        prog = slash + 1;
    size_t n = 0;
    for (const char *p = prog; *p && n + 1 < cap; p++)
        out[n++] = (*p == '/') ? '_' : *p;
    return n;
}

/* Expand the template (or the default "./<program>.<pid>.trc") into out:
 * %p the pid, %e the program's name, %% a %. */
static void make_path(char *out, size_t cap)
{
    size_t n = 0;
    char pid[24];
    size_t pl = u64_to_dec(g_pid, pid);
    if (g_path_tmpl[0]) {
        for (const char *p = g_path_tmpl; *p && n + 24 < cap; p++) {
            if (p[0] == '%' && p[1] == 'p') {
                memcpy(out + n, pid, pl);
                n += pl;
                p++;
            } else if (p[0] == '%' && p[1] == 'e') {
                n += prog_name(out + n, cap - n - 24 < 256 ? cap - n - 24 : 256);
                p++;
            } else if (p[0] == '%' && p[1] == '%') {
                out[n++] = '%';
                p++;
            } else {
                out[n++] = *p;
            }
        }
    } else {
        memcpy(out, "./", 2);
        n = 2;
        n += prog_name(out + n, cap - n - 32);
        out[n++] = '.';
        memcpy(out + n, pid, pl);
        n += pl;
        memcpy(out + n, ".trc", 4);
        n += 4;
    }
    out[n] = 0;
}

/* g_path as an absolute path into g_fd_path (empty where the working
 * directory does not read): what trace_fd() opens, wherever the program
 * has gone since. */
static void remember_path(void)
{
    g_fd_path[0] = 0;
    size_t n = 0, pl = strlen(g_path);
    if (g_path[0] != '/') {
        long r = DMM_SYS(SYS_getcwd, g_fd_path, sizeof g_fd_path - 1, 0);
        if (r <= 0 || g_fd_path[0] != '/') {
            g_fd_path[0] = 0;
            return;
        }
        n = strlen(g_fd_path);
        g_fd_path[n++] = '/';
    }
    if (n + pl >= sizeof g_fd_path) {
        g_fd_path[0] = 0;
        return;
    }
    memcpy(g_fd_path + n, g_path, pl + 1);
}

/* Create the trace file: O_EXCL and O_NOFOLLOW, mode 0600, never over an
 * existing file; if the name is taken, add .1, .2, ...  At a number high
 * up, out of the program's way (fds.h). */
static int open_trace(int forked)
{
    char base[sizeof g_path - 8];
    make_path(base, sizeof base);
    size_t bl = strlen(base);
    int fd = -1;
    for (unsigned k = 0; k < 1000; k++) {
        memcpy(g_path, base, bl + 1);
        if (k) {
            /* name.trc -> name.1.trc; other names get .1 at the end */
            size_t stem = bl >= 4 && !strcmp(base + bl - 4, ".trc") ? bl - 4 : bl;
            size_t n = stem;
            g_path[n++] = '.';
            n += u64_to_dec(k, g_path + n);
            memcpy(g_path + n, base + stem, bl - stem + 1);
        }
        fd = open(g_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC, 0600);
        if (fd >= 0 || errno != EEXIST)
            break;
    }
    if (fd < 0) {
        say("cannot create trace file ", g_path, ": tracing is off");
        return -1;
    }
    fd = dmm_fd_move_high(fd);   /* out of the program's way: fds.h */
    if (dmm_fd_id(fd, &g_fd_id) != 0) {
        close(fd);
        return -1;
    }
    remember_path();
    /* A taken name is normal for a fixed DMM_TRACE_FILE in a program that
     * forks or execs: each process quietly takes the next free number. */

    struct timespec rt, res = { 0, 0 };
    clock_gettime(CLOCK_REALTIME, &rt);
    if (!g_tsc)
        clock_getres(CLOCK_MONOTONIC, &res);
    dmm_trc_header_t *h = &g_head.h;
    memset(h, 0, sizeof *h);
    memcpy(h->magic, DMM_TRC_MAGIC, 8);
    h->version = DMM_TRC_VERSION;
    h->header_size = sizeof *h;
    h->flags = forked ? DMM_TRC_F_FORKED : 0;
    h->pid = g_pid;
    h->ppid = (uint32_t)getppid();
    h->clock_id = g_tsc ? DMM_TRC_CLOCK_TSC : CLOCK_MONOTONIC;
    h->clock_res_ns = g_tsc ? 1 : (uint32_t)res.tv_nsec;
    h->start_realtime_ns = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
    h->start_clock_ns = g_clock0;
    h->cmdline_len = (uint32_t)g_cmdline_len;
    h->stack_depth = g_depth;
    h->source_format = DMM_FMT_TRC;
    h->time_stride = g_stride;
    size_t pad = (8 - g_cmdline_len % 8) % 8;
    memset(g_head.cmdline + g_cmdline_len, 0, pad);
    /* the header, the command line and its padding in one write */
    if (dmm_write_all(fd, &g_head, sizeof *h + g_cmdline_len + pad)) {
        say("cannot write trace file ", g_path, ": tracing is off");
        close(fd);
        return -1;
    }
    return fd;
}

/* The trace file's descriptor, checked before the program's thread writes
 * through it: the program may have closed the number (closefrom) or put a
 * file of its own on it (dup2), and a block written there would land in
 * the program's file (fds.h).  Then the file is opened again by its path,
 * at a number high up; -1 where it cannot be (gone, renamed, or another
 * file in its place), and the program is told once that the records from
 * there on are lost.  One fstat a block. */
static __attribute__((noinline, cold)) int trace_fd_again(void)
{
    /* a fatal signal's flush must not wait for ever on the thread it
     * interrupted: a number that stays in doubt is not written */
    if (!dmm_spin_trylock(&g_fd_lock, 1000))
        return -1;
    int fd = __atomic_load_n(&g_fd, __ATOMIC_ACQUIRE);
    if (fd >= 0 && !dmm_fd_is(fd, &g_fd_id)) {
        fd = -1;
        long n = g_fd_path[0] ? DMM_SYS(SYS_open, g_fd_path,
                                         O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0)
                              : -ENOENT;
        if (n >= 0 && dmm_fd_is((int)n, &g_fd_id))
            fd = dmm_fd_move_high((int)n);
        else if (n >= 0)
            DMM_SYS(SYS_close, n, 0, 0);
        if (fd < 0)
            say("the program closed or took over the trace file's descriptor, and ",
                g_fd_path[0] ? g_fd_path : g_path,
                " does not open again: the records from here on are lost");
        __atomic_store_n(&g_fd, fd, __ATOMIC_RELEASE);
    }
    dmm_spin_unlock(&g_fd_lock);
    return fd;
}

static int trace_fd(void)
{
    int fd = __atomic_load_n(&g_fd, __ATOMIC_ACQUIRE);
    if (fd < 0 || dmm_fd_is(fd, &g_fd_id))
        return fd;
    return trace_fd_again();
}

/* ---- blocks ----------------------------------------------------------- */

/* Write bytes [from, to) of s's buffer as one block, on this thread: it
 * goes on from the thread's previous block unless it starts the buffer.
 * Caller holds s->lock. */
static void write_block(tstate_t *s, uint32_t from, uint32_t to)
{
    if (from < to)
        dmm_block_write(trace_fd(), &s->z, g_zlevel, s->tid, s->buf + from, to - from,
                        from != 0);
}

/* The spare buffer's block, when the writer died before it took it. */
static void write_job(tstate_t *s)
{
    dmm_block_write(trace_fd(), &s->z, g_zlevel, s->job.tid, s->job.payload, s->job.len,
                    s->job.cont);
}

/* Wait until s's block with the writer is in the file (writing it here if
 * the writer died before it took it): whatever s writes next comes after
 * it.  Caller holds s->lock. */
static void job_done(tstate_t *s)
{
    if (dmm_writer_wait(&s->job))
        write_job(s);
}

/* The owner's buffer is now b, of cap bytes, and its lean limit follows,
 * unless exit's flush has zeroed it (or it was 0: no lean way).  Caller
 * holds s->lock, with nothing in the buffer yet. */
static void set_buf(tstate_t *s, uint8_t *b, uint32_t cap)
{
    s->buf = b;
    s->cap = cap;
    uint32_t lim = __atomic_load_n(&s->lim, __ATOMIC_RELAXED);
    if (lim)
        __atomic_compare_exchange_n(&s->lim, &lim, cap - DMM_TRC2_MAX_REC + 1, 0,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23   /* Linux 5.14; an older kernel says EINVAL */
#endif

/* A thread that filled the first BUF_FIRST bytes of its buffer records on
 * in all of it (above).  Caller holds s->lock, with the buffer empty. */
static void grow(tstate_t *s)
{
    if (s->cap != BUF_FIRST || s->mode != TS_ACTIVE ||
        __atomic_load_n(&g_unbuffered, __ATOMIC_ACQUIRE))
        return;
    /* where the kernel cannot, the pages fault in as they fill */
    madvise(s->buf + BUF_FIRST, BUF_BYTES - BUF_FIRST, MADV_POPULATE_WRITE);
    set_buf(s, s->buf, BUF_BYTES);
}

/* Give bytes [from, to) of the owner's full buffer to the writer and take
 * the spare in its place: 1, or 0 when the caller must write them.  Caller
 * holds s->lock. */
static int hand_off(tstate_t *s, uint32_t from, uint32_t to)
{
    if (from >= to || !g_writer || s->mode != TS_ACTIVE || s->buf == s->small || g_fd < 0 ||
        __atomic_load_n(&g_unbuffered, __ATOMIC_ACQUIRE))
        return 0;
    if (!s->spare) {
        if (!(s->spare = map_pages(BUF_BYTES, 1)))
            return 0;
        s->spare_cap = BUF_BYTES;
    }
    job_done(s);   /* the spare's last block: long written, nearly always */
    s->job.payload = s->buf + from;
    s->job.len = to - from;
    s->job.tid = s->tid;
    s->job.cont = from != 0;
    int fd = trace_fd();
    if (fd < 0 || !dmm_writer_submit(&s->job, fd, g_zlevel))
        return 0;
    uint8_t *b = s->buf;
    uint32_t cap = s->cap;
    set_buf(s, s->spare, s->spare_cap);
    s->spare = b;
    s->spare_cap = cap;
    return 1;
}

static void append(tstate_t *s, const dmm_trc_rec_t *r);

/* The peak RSS of the program this process runs now, in bytes: VmHWM of
 * /proc/self/status, the high-water mark of its address space, which
 * starts anew at exec; 0 where that does not read.  getrusage's ru_maxrss
 * keeps the highest of every image the process ran, the one it was forked
 * from included, whose pages a child counts until it execs: cc1plus
 * started from a Python harness holding 280 MB read 297 MB that way, 156
 * MB this way and under GNU time.  Calls nothing that allocates; errno
 * kept (a sample rides on the program's malloc). */
static uint64_t image_peak_rss(void)
{
    char buf[1536];
    uint64_t kib = 0;
    /* raw: the writer reads it too, for a killed program (orphan_flush) */
    long fd = DMM_SYS(SYS_open, "/proc/self/status", O_RDONLY | O_CLOEXEC, 0);
    if (fd >= 0) {
        size_t n = 0;
        while (n < sizeof buf - 1) {
            long r = DMM_SYS(SYS_read, fd, buf + n, sizeof buf - 1 - n);
            if (r > 0)
                n += (size_t)r;
            else if (r != -EINTR)
                break;
        }
        DMM_SYS(SYS_close, fd, 0, 0);
        buf[n] = 0;
        const char *p = strstr(buf, "\nVmHWM:");
        if (p) {
            for (p += 7; *p == ' ' || *p == '\t'; p++)
                ;
            for (; *p >= '0' && *p <= '9'; p++)
                kib = kib * 10 + (uint64_t)(*p - '0');
        }
    }
    return kib * 1024u;
}

/* What a clock sync samples besides the clocks: nothing; the CPU time of
 * the threads that record alone (a thread's first block: the peak RSS would
 * say only what the process had before, and reading it, /proc/self/status,
 * took 9 us of the 0.6 ms a traced process's start and end cost on the VM
 * dmm is developed on); that and the peak RSS (every fourth block after
 * the first, a thread's exit); or the peak RSS and the whole process's CPU
 * time (the end: exit, exec, _exit, a fatal signal). */
enum { SAMPLE_NONE, SAMPLE_CPU, SAMPLE_THREAD, SAMPLE_PROCESS };

/* The CPU time, in ns, of the threads that record, as each had it at its
 * last SAMPLE_THREAD: each adds what it used since its sample before.  A
 * thread reads its own (getrusage's RUSAGE_THREAD), never the process's
 * in the middle of a run: RUSAGE_SELF brings every thread's run time up to
 * date, the caller's included, and the scheduler then preempts the caller
 * at once where its time slice is spent, inside the program's malloc and
 * free (on one CPU, work_media -t 2's threads hand frames over under a
 * lock, and glibc trimmed and faulted its arenas again 30 % more often:
 * 1.28x the plain run's time and 17.2 k faults against 13.5 k, 1.11x and
 * 13.8 k this way, 16 interleaved rounds).  The process's CPU time
 * (threads that never record included) is read once, at the end. */
static uint64_t g_cpu_ns;

/* The process's peak RSS so far in bytes (0 if the kernel will not say),
 * and the CPU time that what says (a SAMPLE_*) in ns, user and system,
 * into *cpu_ns: what `dmm stats` shows, and what make evolve's measured
 * step weighs a heap against (the program's memory outside the heap) and
 * a threaded trace's replay time against. */
static uint64_t peak_rss(tstate_t *s, int what, uint64_t *cpu_ns)
{
    struct rusage ru;
    *cpu_ns = 0;
    if (syscall(SYS_getrusage, what == SAMPLE_PROCESS ? RUSAGE_SELF : RUSAGE_THREAD, &ru) != 0)
        return 0;
    uint64_t t = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000u +
                 (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u;
    if (what == SAMPLE_PROCESS) {
        *cpu_ns = t;
    } else {
        uint64_t used = t > s->cpu_ns ? t - s->cpu_ns : 0;
        s->cpu_ns = t;
        *cpu_ns = __atomic_add_fetch(&g_cpu_ns, used, __ATOMIC_RELAXED);
    }
    if (what == SAMPLE_CPU)
        return 0;
    uint64_t hwm = image_peak_rss();
    /* ru_maxrss is the process's for RUSAGE_THREAD too (KiB) */
    return hwm ? hwm : ru.ru_maxrss > 0 ? (uint64_t)ru.ru_maxrss * 1024u : 0;
}

/* Pair the TSC with CLOCK_MONOTONIC (see DMM_TRC_CLOCK_TSC).  A clock sync
 * (each block of a thread starts with one, and exit writes a last one)
 * also samples the peak RSS and the CPU time where what says so (exit's,
 * a thread's exit's and every fourth block's: 1 MiB of its records apart
 * once its blocks are BUF_BYTES; a thread's first, the CPU time alone):
 * the greatest sample in a trace is the process's peak
 * (the kernel's high-water mark), and its CPU time, up to its last sample
 * even in a trace cut short (there: the recording threads').  The CPU
 * time rides in ptr_in, and ptr_out gives the stream its last address
 * back, so that the next record's address difference is what it would
 * have been (trcfmt.h). */
static void clock_sync(tstate_t *s, int what)
{
    if (!g_tsc)
        return;
    dmm_trc_rec_t r;
    memset(&r, 0, sizeof r);
    r.op = DMM_TRC_CLOCKSYNC;
    r.seq = dmm_tw_seq();
    r.time = now_ns() - g_clock0;
#if defined(__x86_64__)
    r.arg = __rdtsc() - g_tsc0;
#endif
    if (what != SAMPLE_NONE) {
        r.size = peak_rss(s, what, &r.ptr_in);
        r.ptr_out = s->st.ptr;
    }
    append(s, &r);
}

/* ---- the write gate ---------------------------------------------------
 *
 * exec and _exit end every other thread wherever it is, and the kernel stops
 * a write to a file at a page boundary when its thread is killed: a block
 * being written at that moment would be cut in the middle, and the trace
 * with it.  So before the process image ends, the thread that ends it closes
 * the gate: it waits for the writes under way to finish, and from then on
 * only it writes (every thread's pending records, then the syscall); the
 * others wait at the gate, holding no lock, until exec fails or they are
 * gone.  A thread counts itself in (g_writers) before it looks at the gate,
 * the closer closes before it counts: with sequential consistency one of
 * them sees the other. */

/* Returns 0 when the caller must not write: the gate is closed and the
 * caller may not wait (a signal handler). */
static int gate_enter(int may_wait)
{
    if (dmm_tw_ts.gatekeeper)
        return 1;
    for (;;) {
        __atomic_add_fetch(&g_writers, 1, __ATOMIC_SEQ_CST);
        if (!__atomic_load_n(&g_gate_closed, __ATOMIC_SEQ_CST))
            return 1;
        __atomic_sub_fetch(&g_writers, 1, __ATOMIC_SEQ_CST);
        if (!may_wait)
            return 0;
        while (__atomic_load_n(&g_gate_closed, __ATOMIC_ACQUIRE))
            sched_yield();
    }
}

static void gate_leave(void)
{
    if (!dmm_tw_ts.gatekeeper)
        __atomic_sub_fetch(&g_writers, 1, __ATOMIC_SEQ_CST);
}

/* Back to the buffer's start: the next block starts the differences
 * afresh.  The owner, or a thread that owns s alone (fork's child). */
static void rewind_buf(tstate_t *s)
{
    s->flushed = 0;
    memset(&s->st, 0, sizeof s->st);
    s->tleft = 1;   /* the next record reads the clock: see dmm_tw_malloc_done (recorder.h) */
    __atomic_store_n(&s->pos, 0, __ATOMIC_RELEASE);
}

/* Flush what s holds.  Owner-side: the owner may also rewind its buffer,
 * and where it flushes because the buffer is full, grow it. */
static void flush_own(tstate_t *s, int full)
{
    int saved = errno;
    gate_enter(1);
    dmm_spin_lock(&s->lock);
    uint32_t pos = __atomic_load_n(&s->pos, __ATOMIC_ACQUIRE);
    if (!hand_off(s, s->flushed, pos))
        write_block(s, s->flushed, pos);
    rewind_buf(s);
    if (full)
        grow(s);
    dmm_spin_unlock(&s->lock);
    gate_leave();
    /* each block of a thread starts with a clock sync: a trace cut short
     * still has two to convert its ticks with */
    if (s->mode == TS_ACTIVE && !__atomic_load_n(&g_unbuffered, __ATOMIC_RELAXED))
        clock_sync(s, (++s->blocks & 3) == 0 ? SAMPLE_THREAD : SAMPLE_NONE);
    errno = saved;
}

/* Flush another thread's pending records, leaving its buffer in place. */
static void flush_other(tstate_t *s, int in_signal)
{
    if (in_signal ? !dmm_spin_trylock(&s->lock, 100) : (dmm_spin_lock(&s->lock), 0))
        return;
    job_done(s);
    uint32_t pos = __atomic_load_n(&s->pos, __ATOMIC_ACQUIRE);
    if (pos > s->flushed) {
        write_block(s, s->flushed, pos);
        s->flushed = pos;
    }
    dmm_spin_unlock(&s->lock);
}

static void flush_all_impl(int final, int in_signal)
{
    if (__atomic_load_n(&g_state, __ATOMIC_ACQUIRE) != ST_ON)
        return;
    int saved = errno;
    if (final)
        __atomic_store_n(&g_unbuffered, 1, __ATOMIC_RELEASE);
    if (!gate_enter(!in_signal)) {
        errno = saved;
        return;
    }
    int locked = in_signal ? dmm_spin_trylock(&g_registry_lock, 1000)
                           : (dmm_spin_lock(&g_registry_lock), 1);
    if (locked) {
        for (tstate_t *s = g_registry; s; s = s->next) {
            if (final)   /* from here on every record is written through */
                __atomic_store_n(&s->lim, 0, __ATOMIC_RELAXED);
            flush_other(s, in_signal);
        }
        dmm_spin_unlock(&g_registry_lock);
    }
    if (dmm_tw_ts.mode != TS_NONE)   /* an exiting thread is no longer registered */
        flush_other(&dmm_tw_ts, in_signal);
    /* every job is done (flush_other waited for each thread's); after exit's
     * flush no thread hands one over (write-through), after exec's or
     * _exit's none gets through the gate: the writer can go */
    if (final && !dmm_tw_ts.gatekeeper && !in_signal)
        dmm_writer_release();   /* exit: records are written through from here on */
    else if ((final || dmm_tw_ts.gatekeeper) && !in_signal)
        dmm_writer_stop();   /* after a fatal signal it sees the process go */
    gate_leave();
    errno = saved;
}

void dmm_tw_flush_all(int final)
{
    /* Inside the tracer while holding flush locks: a signal handler that
     * allocates now goes straight to glibc instead of waiting on a lock
     * this thread holds. */
    dmm_tw_ts.gate += DMM_TW_INSIDE;
    if (dmm_tw_ts.mode == TS_ACTIVE && __atomic_load_n(&g_state, __ATOMIC_ACQUIRE) == ST_ON)
        clock_sync(&dmm_tw_ts, SAMPLE_PROCESS);
    flush_all_impl(final, 0);
    dmm_tw_ts.gate -= DMM_TW_INSIDE;
}

static void record_live_resident(void);
static int writer_early(void);
static void child_early(tstate_t *s);

/* Its pid is not the one the state is for (g_pid: init's, or a fork's
 * child's own, set by atfork_child, which a vfork's child does not run). */
int dmm_tw_vfork_child(void)
{
    uint32_t pid = __atomic_load_n(&g_pid, __ATOMIC_RELAXED);
    return pid && (uint32_t)DMM_SYS(SYS_getpid, 0, 0, 0) != pid;
}

void dmm_tw_flush_last(int final)
{
    if (dmm_tw_vfork_child())
        return;   /* the parent's buffers, gate and writer are the parent's */
    if (final)   /* _exit: the end, as exit's destructor has it */
        record_live_resident();
    if (!dmm_tw_ts.gatekeeper) {
        int open = 0;
        while (!__atomic_compare_exchange_n(&g_gate_closed, &open, 1, 0, __ATOMIC_SEQ_CST,
                                            __ATOMIC_SEQ_CST)) {
            open = 0;   /* another thread is ending the process: it wins */
            sched_yield();
        }
        dmm_tw_ts.gatekeeper = 1;
        while (__atomic_load_n(&g_writers, __ATOMIC_SEQ_CST))
            sched_yield();
    }
    dmm_tw_flush_all(final);
}

void dmm_tw_reopen(void)
{
    if (!dmm_tw_ts.gatekeeper)
        return;
    int saved = errno;
    dmm_tw_ts.gatekeeper = 0;
    __atomic_store_n(&g_gate_closed, 0, __ATOMIC_SEQ_CST);
    writer_early();   /* exec stopped it */
    errno = saved;
}

/* ---- threads ---------------------------------------------------------- */

static void registry_add(tstate_t *s)
{
    dmm_spin_lock(&g_registry_lock);
    s->next = g_registry;
    g_registry = s;
    dmm_spin_unlock(&g_registry_lock);
}

static void registry_remove(tstate_t *s)
{
    dmm_spin_lock(&g_registry_lock);
    for (tstate_t **p = &g_registry; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
    dmm_spin_unlock(&g_registry_lock);
}

static void order_table_give(tstate_t *s);
static void order_tables_forked(tstate_t *s);

static void thread_start(tstate_t *s)
{
    s->tid = (uint32_t)syscall(SYS_gettid);
    s->buf = map_pages(BUF_BYTES, 0);
    s->cap = BUF_FIRST;
    if (!s->buf) {
        s->buf = s->small;
        s->cap = DMM_TW_SMALL_BYTES;
    }
    rewind_buf(s);
    uint32_t lim = g_lean ? s->cap - DMM_TRC2_MAX_REC + 1 : 0;
    if (s->early && lim > CHILD_EARLY)
        lim = CHILD_EARLY;   /* a fork's child: child_early() */
    __atomic_store_n(&s->lim, lim, __ATOMIC_RELAXED);
    s->tleft = 1;
    dmm_tw_ts.gate |= DMM_TW_READY;
    s->mode = TS_ACTIVE;
    registry_add(s);
    /* exit's flush zeroes the lim of the threads it finds registered; a
     * thread it did not find sees what it set before (the registry lock) */
    if (__atomic_load_n(&g_unbuffered, __ATOMIC_ACQUIRE))
        __atomic_store_n(&s->lim, 0, __ATOMIC_RELAXED);
    if (g_key_ok)
        pthread_setspecific(g_key, s);
    clock_sync(s, SAMPLE_CPU);
}

/* pthread key destructor: the thread is exiting.  Flush, then keep tracing
 * what later destructors free through the small buffer, written through. */
static void thread_exit(void *arg)
{
    tstate_t *s = arg;
    if (s != &dmm_tw_ts || s->mode != TS_ACTIVE)
        return;
    dmm_tw_ts.gate += DMM_TW_INSIDE;
    clock_sync(s, SAMPLE_THREAD);   /* its CPU time to the end */
    dmm_trc_rec_t r;
    memset(&r, 0, sizeof r);
    r.op = DMM_TRC_THREAD_EXIT;
    r.seq = dmm_tw_seq();
    set_now(s, stamp());   /* later records carry this reading, not an older one */
    r.time = s->tnow;
    s->tleft = g_stride;
    append(s, &r);
    flush_own(s, 0);
    registry_remove(s);
    order_table_give(s);   /* what it records from here on raises the shared table */
    dmm_spin_lock(&s->lock);
    job_done(s);   /* the writer has a pointer to s until then */
    if (s->buf != s->small)
        munmap(s->buf, BUF_BYTES);
    if (s->spare)
        munmap(s->spare, BUF_BYTES);
    s->spare = NULL;
    dmm_block_z_free(&s->z);
    s->buf = s->small;
    s->cap = DMM_TW_SMALL_BYTES;
    __atomic_store_n(&s->lim, 0, __ATOMIC_RELAXED);   /* every record written at once */
    rewind_buf(s);
    s->mode = TS_EXITING;
    dmm_spin_unlock(&s->lock);
    dmm_tw_ts.gate -= DMM_TW_INSIDE;
}

/* ---- fork ------------------------------------------------------------- */

static void atfork_prepare(void)
{
    dmm_tw_ts.gate += DMM_TW_INSIDE;
    dmm_spin_lock(&g_registry_lock);
}

static void atfork_parent(void)
{
    dmm_spin_unlock(&g_registry_lock);
    dmm_tw_ts.gate -= DMM_TW_INSIDE;
    if (dmm_tw_enter()) {
        dmm_tw_record(DMM_TRC_FORK, dmm_tw_seq(), 0, 0, NULL, NULL, 0);
        dmm_tw_leave();
    }
}

static void atfork_child(void)
{
    /* Only this thread exists here.  The others' buffers, and what this
     * thread had not yet written, belong to the parent's file. */
    tstate_t *keep = NULL;
    for (tstate_t *s = g_registry; s;) {
        tstate_t *next = s->next;
        if (s == &dmm_tw_ts) {
            keep = s;
        } else {
            if (s->buf && s->buf != s->small)
                munmap(s->buf, BUF_BYTES);
            if (s->spare)
                munmap(s->spare, BUF_BYTES);
            dmm_block_z_free(&s->z);
        }
        s = next;
    }
    g_registry = keep;
    if (keep)
        keep->next = NULL;
    g_registry_lock = 0;
    dmm_resident_atfork_child();
    g_gate_closed = g_writers = 0;
    order_tables_forked(&dmm_tw_ts);
    g_cpu_ns = 0;   /* the child's thread starts with none */
    dmm_tw_ts.cpu_ns = 0;
    dmm_tw_ts.job.state = 0;   /* the spare's block, if any, is the parent's to write */
    /* should this glibc count the child as single-threaded, its count goes
     * on from this thread's clock */
    if (dmm_tw_next_seq < dmm_tw_ts.lclock)
        dmm_tw_next_seq = dmm_tw_ts.lclock;
    dmm_writer_forget();
    dmm_tw_ts.gatekeeper = 0;
    dmm_tw_ts.lock = 0;
    rewind_buf(&dmm_tw_ts);
    dmm_tw_ts.tleft = 1;   /* the clock starts again below: read it on the next record */
    if (g_fd >= 0)
        dmm_fd_close_if(g_fd, &g_fd_id);   /* not a number the program took over */
    g_fd_lock = 0;
    g_pid = (uint32_t)getpid();
    g_clock0 = now_ns();
#if defined(__x86_64__)
    g_tsc0 = __rdtsc();
#endif
    g_fd = -1;
    if (!g_follow_fork && __atomic_load_n(&g_state, __ATOMIC_ACQUIRE) == ST_ON) {
        /* not followed: no file, and nothing this child execs is traced */
        __atomic_store_n(&g_state, ST_OFF, __ATOMIC_RELEASE);
        dmm_tw_ts.gate &= ~DMM_TW_READY;
        strip_preload();
    }
    if (__atomic_load_n(&g_state, __ATOMIC_ACQUIRE) == ST_ON) {
        g_fd = open_trace(1);
        if (g_fd < 0) {
            __atomic_store_n(&g_state, ST_OFF, __ATOMIC_RELEASE);
            dmm_tw_ts.gate &= ~DMM_TW_READY;
        }
        else if (dmm_tw_ts.mode == TS_ACTIVE)
            clock_sync(&dmm_tw_ts, SAMPLE_THREAD);
        if (g_fd >= 0)
            child_early(&dmm_tw_ts);
    }
    dmm_tw_ts.gate -= DMM_TW_INSIDE;
}

/* ---- a program killed ------------------------------------------------- */

/* In the writer process, for a killed program: the clock sync its exit
 * would have written, as one block that goes on from s's records up to pos
 * (the rest of the way written): without a second sync a trace's ticks do
 * not convert, and it has no times, and without the end's sample no peak
 * RSS past its last full buffer's.  The peak RSS is the writer's own: it
 * has the dead program's memory (and its high-water mark); the CPU time is
 * what the threads sampled last; the time, when the writer saw the program
 * gone (within 0.1 s of its death, writer.c's poll: a trace's duration may run
 * that much past its last record).  1 when written. */
static int orphan_clock_sync(int fd, tstate_t *s, dmm_block_z_t *z, uint32_t pos)
{
    if (!g_tsc)
        return 0;
    struct timespec ts;
    if (DMM_SYS(SYS_clock_gettime, CLOCK_MONOTONIC, &ts, 0) != 0)
        return 0;
    dmm_trc_rec_t r;
    memset(&r, 0, sizeof r);
    r.op = DMM_TRC_CLOCKSYNC;
    r.seq = s->st.seq + 1;   /* dropped when read: its order does not matter */
    r.time = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec - g_clock0;
#if defined(__x86_64__)
    r.arg = __rdtsc() - g_tsc0;
#endif
    r.size = image_peak_rss();
    r.ptr_in = __atomic_load_n(&g_cpu_ns, __ATOMIC_RELAXED);
    r.ptr_out = s->st.ptr;
    uint8_t rec[DMM_TRC2_MAX_REC];
    dmm_trc2_state_t st = s->st;
    size_t n = dmm_trc3_encode(rec, &st, &r);
    dmm_block_write(fd, z, g_zlevel, s->tid, rec, (uint32_t)n, pos != 0);
    return 1;
}

/* In the writer process, after the program died without a word (SIGKILL,
 * a fatal signal it handles itself): what every registered thread had not
 * yet written, from the memory the writer shares with the dead program, to
 * fd, the writer's own copy of the trace file's descriptor.
 * No thread runs any more, but one may have died holding a lock: such a
 * thread, or the registry, is left alone.  Raw system calls only. */
static void orphan_flush(int fd, dmm_block_z_t *z)
{
    if (__atomic_load_n(&g_registry_lock, __ATOMIC_ACQUIRE))
        return;
    int synced = 0;
    for (tstate_t *s = g_registry; s; s = s->next) {
        if (__atomic_load_n(&s->lock, __ATOMIC_ACQUIRE) || s->job.state)
            continue;
        uint32_t pos = __atomic_load_n(&s->pos, __ATOMIC_ACQUIRE);
        if (pos > s->flushed)
            dmm_block_write(fd, z, g_zlevel, s->tid, s->buf + s->flushed, pos - s->flushed,
                            s->flushed != 0);
        /* not after exit's or a fatal signal's flush: the program wrote its
         * end itself, and the trace is whole when it dies */
        if (!synced && s->mode == TS_ACTIVE && !__atomic_load_n(&g_unbuffered, __ATOMIC_ACQUIRE))
            synced = orphan_clock_sync(fd, s, z, pos);
    }
}

/* ---- fatal signals ---------------------------------------------------- */

/* SIGPIPE too: a program writing into "| head" ends by it.  Not SIGINT or
 * SIGTERM: programs look at those dispositions to choose their own (Python
 * installs KeyboardInterrupt only over SIG_DFL). */
static const int fatal_signals[] = { SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGPIPE };

static void on_fatal(int sig)
{
    int was = dmm_tw_ts.gate;
    dmm_tw_ts.gate += DMM_TW_INSIDE;
    /* the end's clock sync, as exit writes one (without a second sync a
     * trace has no times, and without the end's sample no peak RSS past
     * its last full buffer's); not where the signal came while this thread
     * was recording: its buffer is half-way through a record */
    if (was == DMM_TW_READY && dmm_tw_ts.mode == TS_ACTIVE &&
        __atomic_load_n(&g_state, __ATOMIC_ACQUIRE) == ST_ON &&
        !__atomic_load_n(&g_unbuffered, __ATOMIC_ACQUIRE))
        clock_sync(&dmm_tw_ts, SAMPLE_PROCESS);
    flush_all_impl(1, 1);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigaction(sig, &sa, NULL);
    raise(sig);
}

static void install_fatal_handlers(void)
{
    for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++) {
        struct sigaction old, sa;
        if (sigaction(fatal_signals[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL ||
            (old.sa_flags & SA_SIGINFO))
            continue;   /* the program has its own: leave it alone */
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal;
        sa.sa_flags = SA_NODEFER | SA_RESETHAND | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        sigaction(fatal_signals[i], &sa, NULL);
    }
}

/* A fork's child before its writer starts (child_early): a SIGTERM, SIGINT
 * or SIGHUP at its default action, which would end the child with its
 * records still in its buffer (a multiprocessing pool's workers, ended
 * with SIGTERM when the pool closes, make some 40 calls each), first has
 * them written, as a fatal signal does.  Only there: a program's startup
 * may read these dispositions (Python takes Ctrl-C only where SIGINT's is
 * the default), and a fork's child has had its startup; and only until
 * its writer runs, which then writes what a killed child leaves.  An exec
 * puts them back to the default.  on: 1 to set them, 0 to put back those
 * still ours. */
static const int stop_signals[] = { SIGTERM, SIGINT, SIGHUP };

static void child_stop_handlers(int on)
{
    for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++) {
        struct sigaction old, sa;
        if (sigaction(stop_signals[i], NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) ||
            old.sa_handler != (on ? SIG_DFL : on_fatal))
            continue;   /* the program's own */
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on ? on_fatal : SIG_DFL;
        sa.sa_flags = on ? SA_NODEFER | SA_RESETHAND | SA_ONSTACK : 0;
        sigemptyset(&sa.sa_mask);
        sigaction(stop_signals[i], &sa, NULL);
    }
}

/* ---- start and end ---------------------------------------------------- */

/* The writer process, where one is wanted, from the moment the trace file
 * is open: it is also what writes a killed program's buffers (orphan_flush),
 * and a program stopped before its first buffer filled (python3 at Ctrl-C:
 * its startup's few thousand calls fill none) would lose every record if
 * the writer waited for a first job.  1 when a writer runs. */
static int writer_early(void)
{
    int fd;
    if (g_writer && (fd = trace_fd()) >= 0 && !__atomic_load_n(&g_unbuffered, __ATOMIC_ACQUIRE))
        return dmm_writer_start(fd, g_zlevel);
    return 0;
}

/* A fork's child starts its writer once its thread has recorded
 * CHILD_EARLY bytes (about a thousand calls): a child that execs at once (a
 * shell's) records less and pays for none, and one killed later loses at
 * most those.  Its lean limit waits there until then (thread_start() sets
 * it so too, for a thread that had not recorded before the fork), so that
 * the record that passes it goes the slow way, through record(), which
 * calls child_writer(): the writer, and the limit let go. */
static void child_early(tstate_t *s)
{
    if (!g_writer)
        return;
    if (!s->early)
        child_stop_handlers(1);
    s->early = 1;
    if (__atomic_load_n(&s->lim, __ATOMIC_RELAXED) > CHILD_EARLY)   /* 0: no lean way */
        __atomic_store_n(&s->lim, CHILD_EARLY, __ATOMIC_RELAXED);
}

static __attribute__((noinline, cold)) void child_writer(tstate_t *s)
{
    s->early = 0;
    if (writer_early())
        child_stop_handlers(0);   /* the writer writes what a kill leaves */
    uint32_t lim = __atomic_load_n(&s->lim, __ATOMIC_RELAXED);
    if (lim)   /* exit's flush may have zeroed it: then it stays 0 */
        __atomic_compare_exchange_n(&s->lim, &lim, s->cap - DMM_TRC2_MAX_REC + 1, 0,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

static void init(void)
{
    dmm_tw_ts.gate += DMM_TW_INSIDE;
    g_pid = (uint32_t)getpid();
    g_clock0 = now_ns();
    g_tsc = tsc_usable();
#if defined(__x86_64__)
    g_tsc0 = __rdtsc();
#endif
    read_options();
    open_optional_libs();
    read_cmdline();
    if (!g_follow_exec)
        strip_preload();
    g_fd = open_trace(0);
    if (g_fd < 0) {
        __atomic_store_n(&g_state, ST_OFF, __ATOMIC_RELEASE);
        dmm_tw_ts.gate -= DMM_TW_INSIDE;
        return;
    }
    g_key_ok = pthread_key_create(&g_key, thread_exit) == 0;
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    install_fatal_handlers();
    g_lean = g_depth == 0 && g_tsc;
    g_writer = writer_wanted();
    dmm_writer_on_orphan(orphan_flush);
    writer_early();
    __atomic_store_n(&g_state, ST_ON, __ATOMIC_RELEASE);
    dmm_tw_ts.gate -= DMM_TW_INSIDE;
}

/* Returns 1 when tracing is on. */
static int ensure_init(void)
{
    int st = __atomic_load_n(&g_state, __ATOMIC_ACQUIRE);
    if (__builtin_expect(st == ST_ON, 1))
        return 1;
    if (st == ST_OFF)
        return 0;
    int expect = ST_UNINIT;
    if (__atomic_compare_exchange_n(&g_state, &expect, ST_INITIALIZING, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        init();
    } else {
        while (__atomic_load_n(&g_state, __ATOMIC_ACQUIRE) == ST_INITIALIZING)
            sched_yield();
    }
    return __atomic_load_n(&g_state, __ATOMIC_ACQUIRE) == ST_ON;
}

/* glibc gives an ELF constructor the program's arguments. */
__attribute__((constructor)) static void dmm_tw_constructor(int argc, char **argv)
{
    g_argc = argc;
    g_argv = argv;
    /* Programs that never allocate still get a trace file. */
    if (dmm_tw_ts.gate < DMM_TW_INSIDE)
        ensure_init();
    g_argv = NULL;   /* the program may change them from now on */
}

static int emit_module(struct dl_phdr_info *info, size_t size, void *data);
static stack_slot_t *g_stacks;

__attribute__((destructor)) static void dmm_tw_destructor(void)
{
    if (dmm_tw_vfork_child())
        return;   /* exit in a vfork's child: the parent's recording goes on */
    /* Stacks name return addresses; list the modules again at the end so
     * that code loaded with dlopen after the first stack is covered too. */
    if (__atomic_load_n(&g_stacks, __ATOMIC_ACQUIRE) && dmm_tw_enter()) {
        dl_iterate_phdr(emit_module, &dmm_tw_ts);
        dmm_tw_leave();
    }
    record_live_resident();
    dmm_tw_flush_all(1);
}

/* ---- recording -------------------------------------------------------- */

int dmm_tw_enter_slow(void)
{
    if (dmm_tw_ts.gate >= DMM_TW_INSIDE)
        return 0;
    if (!ensure_init())
        return 0;
    dmm_tw_ts.gate += DMM_TW_INSIDE;
    if (dmm_tw_ts.mode == TS_NONE)
        thread_start(&dmm_tw_ts);
    return 1;
}

/* Make room for a record and n bytes after it in one block: a STACKDEF or
 * MODULE record and its frames or path are not split across two blocks
 * (n < cap - DMM_TRC2_MAX_REC: the callers bound it). */
static void reserve(tstate_t *s, uint32_t n)
{
    if (s->pos + DMM_TRC2_MAX_REC + n > s->cap)
        flush_own(s, 1);
}

/* After a record whose time is not the last clock reading (a clock sync's,
 * a module's), the next one reads the clock: see dmm_tw_malloc_done (recorder.h). */
static inline void time_kept(tstate_t *s, const dmm_trc_rec_t *r)
{
    if (r->time != s->tnow)
        s->tleft = 1;
}

static void append(tstate_t *s, const dmm_trc_rec_t *r)
{
    reserve(s, 0);
    uint32_t pos = s->pos;
    pos += (uint32_t)dmm_trc3_encode(s->buf + pos, &s->st, r);
    __atomic_store_n(&s->pos, pos, __ATOMIC_RELEASE);
    time_kept(s, r);
}

/* A record and the len bytes that follow it (a STACKDEF's frames, a
 * MODULE's path), in one block and published at once: a flush from another
 * thread (exit's, of a thread still recording) takes the buffer up to pos,
 * which never falls between the two (len < cap - DMM_TRC2_MAX_REC). */
static void append_with(tstate_t *s, const dmm_trc_rec_t *r, const void *data, uint32_t len)
{
    reserve(s, len);
    uint32_t pos = s->pos;
    pos += (uint32_t)dmm_trc3_encode(s->buf + pos, &s->st, r);
    memcpy(s->buf + pos, data, len);
    __atomic_store_n(&s->pos, pos + len, __ATOMIC_RELEASE);
    time_kept(s, r);
}

/* ---- call stacks ------------------------------------------------------ */

static stack_slot_t *g_stacks;
static uint32_t      g_next_stack = 1;
static uintptr_t     g_self_lo, g_self_hi;   /* our own code, skipped */

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    uintptr_t me = (uintptr_t)data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (me >= lo && me < hi) {
            g_self_lo = lo;
            g_self_hi = hi;
            return 1;
        }
    }
    return 0;
}

/* Write MODULE records for the executable mappings, for offline symbols. */
static int emit_module(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    tstate_t *s = data;
    const char *path = info->dlpi_name;
    char exe[512];
    if (!path || !*path) {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n <= 0)
            return 0;
        exe[n] = 0;
        path = exe;
    }
    size_t plen = strnlen(path, DMM_TRC_MAX_PATH - 1);
    if (plen > s->cap - 2 * DMM_TRC2_MAX_REC)
        plen = s->cap - 2 * DMM_TRC2_MAX_REC;   /* an exiting thread's small buffer */
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        dmm_trc_rec_t r;
        memset(&r, 0, sizeof r);
        r.op = DMM_TRC_MODULE;
        r.seq = dmm_tw_seq();
        r.ptr_in = info->dlpi_addr + ph->p_vaddr;
        r.ptr_out = r.ptr_in + ph->p_memsz;
        r.arg = ph->p_offset;
        r.size = plen;
        append_with(s, &r, path, (uint32_t)plen);
    }
    return 0;
}

static uint64_t hash_frames(void *const *f, int n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)n;
    for (int i = 0; i < n; i++) {
        h ^= (uint64_t)(uintptr_t)f[i];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return h ? h : 1;
}

/* The table of call stacks, made at the first one (with the MODULE records
 * and where our own code lies): 0 until it is there. */
static __attribute__((noinline, cold)) int stacks_init(tstate_t *s)
{
    static int once;
    if (__atomic_exchange_n(&once, 1, __ATOMIC_ACQ_REL) == 0) {
        stack_slot_t *t = map_pages(STACK_TABLE * sizeof *t, 0);
        dl_iterate_phdr(find_self, (void *)(uintptr_t)&find_self);
        dl_iterate_phdr(emit_module, s);
        __atomic_store_n(&g_stacks, t, __ATOMIC_RELEASE);
    }
    return __atomic_load_n(&g_stacks, __ATOMIC_ACQUIRE) != NULL;
}

/* The id of the call stack in raw[0..n) (libunwind's, from the function
 * nearest the shim that took it): our own frames skipped, at most g_depth
 * of the program's kept; 0 when there are none or the table is crowded.
 * A new stack's frames go into the trace first (STACKDEF). */
static __attribute__((noinline)) uint32_t stack_id(tstate_t *s, void *const *raw, int n)
{
    int skip = 0;
    while (skip < n && (uintptr_t)raw[skip] >= g_self_lo && (uintptr_t)raw[skip] < g_self_hi)
        skip++;
    void *const *f = raw + skip;
    n -= skip;
    if (n > (int)g_depth)
        n = (int)g_depth;
    if (n <= 0)
        return 0;
    uint64_t h = hash_frames(f, n);
    for (uint32_t i = (uint32_t)h & (STACK_TABLE - 1), probes = 0; probes < 64;
         i = (i + 1) & (STACK_TABLE - 1), probes++) {
        stack_slot_t *sl = &g_stacks[i];
        uint64_t cur = __atomic_load_n(&sl->hash, __ATOMIC_ACQUIRE);
        if (cur == 0) {
            uint64_t zero = 0;
            if (__atomic_compare_exchange_n(&sl->hash, &zero, h, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE)) {
                uint32_t id = __atomic_fetch_add(&g_next_stack, 1, __ATOMIC_RELAXED);
                dmm_trc_rec_t r;
                memset(&r, 0, sizeof r);
                r.op = DMM_TRC_STACKDEF;
                r.stack = id;
                r.size = (uint64_t)n;
                r.seq = dmm_tw_seq();
                uint64_t fr[MAX_DEPTH];
                for (int k = 0; k < n; k++)
                    fr[k] = (uint64_t)(uintptr_t)f[k];
                append_with(s, &r, fr, (uint32_t)n * 8);
                __atomic_store_n(&sl->id, id, __ATOMIC_RELEASE);
                return id;
            }
            cur = __atomic_load_n(&sl->hash, __ATOMIC_ACQUIRE);
        }
        if (cur == h) {
            uint32_t id;
            while ((id = __atomic_load_n(&sl->id, __ATOMIC_ACQUIRE)) == 0)
                sched_yield();
            return id;
        }
    }
    return 0;   /* table crowded: record without a stack */
}

/* The call stack's id for the call being recorded (0 with stacks off),
 * unwound from the function this is inlined in: the one nearest the shim
 * on each way in, so that libunwind steps through as few of our own frames
 * as it can (each step costs as much as one of the program's: malloc's
 * record took five of ours, and 16 steps with 8 frames asked, where the
 * program's stack had 8 or more).  own: the frames of ours that the way in
 * has, this function's included, asked for beyond g_depth; a way in with
 * more than that (the compiler chose other calls) asks again, for all.
 * work_media -f 300 with 8 frames, callgrind: 1364 instructions a call,
 * 1195 unwound this way (1061 with malloc_full's and free_full's constant
 * op); -f 3000, 3.59x the plain run's time before, 3.03x after. */
static inline __attribute__((always_inline)) uint32_t stack_here(tstate_t *s, int own)
{
    if (!g_depth)
        return 0;
    int saved = errno;   /* libunwind may set it; the caller's must survive */
    uint32_t id = 0;
    if (__builtin_expect(__atomic_load_n(&g_stacks, __ATOMIC_ACQUIRE) != NULL, 1) ||
        stacks_init(s)) {
        void *raw[MAX_DEPTH + 8];
        int want = (int)g_depth + own;
        int n = dmm_unw_backtrace(raw, want);
        if (n == want && (uintptr_t)raw[own] >= g_self_lo && (uintptr_t)raw[own] < g_self_hi)
            n = dmm_unw_backtrace(raw, (int)g_depth + 8);
        id = stack_id(s, raw, n);
    }
    errno = saved;
    return id;
}

/* The time of a record: the clock read every g_stride records of the
 * thread, the last reading in between. */
static inline uint64_t stamp_sampled(tstate_t *s)
{
    if (__builtin_expect(--s->tleft == 0, 0)) {
        s->tleft = g_stride;
        set_now(s, stamp());
    }
    return s->tnow;
}

/* A record of stack stk (stack_here(), taken nearer the shim). */
static inline __attribute__((always_inline)) void
record(uint32_t stk, unsigned op, uint64_t seq, uint64_t size, uint64_t arg, const void *in,
       const void *out, int err, unsigned rflags)
{
    tstate_t *s = &dmm_tw_ts;
    dmm_trc_rec_t r;
    r.stack = stk;
    if (__builtin_expect(s->early && s->pos >= CHILD_EARLY, 0))
        child_writer(s);
    if (__builtin_expect(s->pos + DMM_TRC2_MAX_REC > s->cap, 0))
        flush_own(s, 1);
    r.op = (uint8_t)op;
    r.flags = (uint8_t)((err ? DMM_TRC_RF_FAILED : 0) | rflags);
    r.seq = seq;
    r.time = stamp_sampled(s);
    r.size = size;
    r.arg = arg;
    r.ptr_in = (uint64_t)(uintptr_t)in;
    r.ptr_out = (uint64_t)(uintptr_t)out;
    r.errnum = (uint64_t)(unsigned)err;
    /* encoded in place: the bytes are ours until pos is published */
    uint32_t pos = s->pos + (uint32_t)dmm_trc4_encode(s->buf + s->pos, &s->st, &r);
    __atomic_store_n(&s->pos, pos, __ATOMIC_RELEASE);
    if (__builtin_expect(s->mode == TS_EXITING || __atomic_load_n(&g_unbuffered, __ATOMIC_RELAXED), 0))
        flush_own(s, 0);
}

/* dmm_tw_record of stack stk.  Out of line, so that the lean way (below)
 * keeps to a few registers. */
static __attribute__((noinline)) void record_call(uint32_t stk, unsigned op, uint64_t seq,
                                                  uint64_t size, uint64_t arg, const void *in,
                                                  const void *out, int err)
{
    /* the mapped blocks live (resident.h): malloc's are the shim's */
    if (op == DMM_TRC_RELEASE)
        dmm_resident_forget(in);
    else if (out && op != DMM_TRC_MALLOC && dmm_resident_may_be_mapped(size))
        dmm_resident_update(out);
    else if (out && in == out && dmm_resident_mapped(out))   /* a mapped block, in place */
        dmm_resident_update(out);
    record(stk, op, seq, size, arg, in, out, err, 0);
}

__attribute__((noinline)) void dmm_tw_record(unsigned op, uint64_t seq, uint64_t size,
                                             uint64_t arg, const void *in, const void *out,
                                             int err)
{
    /* this, the shim's function and realloc's realloc_common */
    record_call(stack_here(&dmm_tw_ts, 3), op, seq, size, arg, in, out, err);
}

__attribute__((noinline)) void *dmm_tw_malloc_large(size_t n, void *p)
{
    dmm_resident_update(p);
    return dmm_tw_malloc_done(n, p);
}

static void record_resident(const void *p, uint64_t bytes, void *ctx)
{
    (void)ctx;
    record(stack_here(&dmm_tw_ts, 3), DMM_TRC_RESIDENT, dmm_tw_seq(), 0, bytes, p, NULL, 0, 0);
}

/* At the end of the process: how much of each mapped block still live is
 * resident (DMM_TRC_RESIDENT). */
static void record_live_resident(void)
{
    if (dmm_tw_enter()) {
        dmm_resident_each(record_resident, NULL);
        dmm_tw_leave();
    }
}

__attribute__((noinline)) void dmm_tw_free_large(void *p)
{
    /* mincore before the seq: what the program wrote, not what glibc's
     * free leaves */
    uint32_t stk = stack_here(&dmm_tw_ts, 1);   /* free's tail call */
    uint64_t bytes = dmm_resident_bytes(p);
    dmm_resident_forget(p);
    record(stk, DMM_TRC_FREE, dmm_tw_seq_at(p), 0, bytes, p, NULL, 0, DMM_TRC_RF_RESIDENT);
    dmm_tw_leave();
    __libc_free(p);
}

/* ---- the order of records across threads -----------------------------
 *
 * A trace's order need only respect causality: each thread's program order,
 * and for each address the call that gave it up before the call that
 * obtains it again (and the call that obtained it before the one that gives
 * it up, in whatever thread).  One process-wide count, taken with an atomic
 * add by every call of every thread, gives that at the price of a line of
 * memory that all threads write (two threads that only allocate,
 * work_pairs -t 2 on two CPUs: 6.4x the plain run's time recorded that way).
 * So a multi-threaded process numbers its records with clocks (Lamport's,
 * made to follow the TSC): a thread's next seq is at least its previous + 1,
 * the last clock reading (so that threads' numbers stay close to each other
 * and to time: the trace's interleaving is the real one, to within the
 * records between two readings), the single-threaded count that went
 * before, and 1 + the highest seq yet given to a call on the same page.
 * A call that gives an address up notes its seq for its page before glibc
 * has the block back, one that obtains it after glibc handed it out and
 * before the program sees it, so glibc's own hand-over (or the program's,
 * for a block freed by another thread) carries the note from one to the
 * other.  Records of two threads may then share a seq: nothing orders them,
 * and the reader's stable sort keeps them in the file's order.
 *
 * The notes: each of the first ORDER_TABLES threads that record at once
 * has a column of its own in one table (taken at its first multi-threaded
 * record, given back when it exits), one row per page (hashed), which only
 * it writes, with a plain store: its seqs only grow, so its entries do too,
 * and the highest seq on a page is the largest entry of the page's row,
 * read every call (one load per column ever taken, all in the row's one
 * cache line).  A column outlives its thread's use of it: taken again by a
 * later thread, whose seqs exceed every entry (it reads the table only
 * once it has taken a column, after the last entries of the thread that
 * gave it back).  Threads beyond those raise one shared table with an
 * atomic compare-and-swap, which calls read once any thread has
 * (work_pairs -t 2: 2.1x with the shared table alone, 1.75x with columns
 * of their own). */
#define ORDER_SLOTS 4096u
#define ORDER_TABLES 8u
#define ORDER_TABLES_ALL ((1u << ORDER_TABLES) - 1)
#define ORDER_COLS   0xffu    /* in g_order_n: the columns ever taken */
#define ORDER_SHARED 0x100u   /* in g_order_n: the shared table has entries */
_Static_assert(ORDER_TABLES * sizeof(uint64_t) == 64, "a page's row is one cache line");
static uint64_t g_order[ORDER_SLOTS] __attribute__((aligned(64)));
static uint64_t g_order_t[ORDER_SLOTS][ORDER_TABLES] __attribute__((aligned(64)));
static unsigned g_order_free = ORDER_TABLES_ALL;   /* columns no thread has */
static unsigned g_order_n;   /* columns ever taken: read [0, n); | ORDER_SHARED */

/* Raise g_order_n's count of columns to at least cols and set flag in it
 * (it only ever grows), before the first entry that it announces is
 * written: a thread that sees the entry (through what orders the two
 * calls) sees it announced. */
static void order_announce(unsigned cols, unsigned flag)
{
    unsigned n = __atomic_load_n(&g_order_n, __ATOMIC_RELAXED);
    for (;;) {
        unsigned m = ((n & ORDER_COLS) < cols ? cols : (n & ORDER_COLS)) | (n & ~ORDER_COLS) | flag;
        if (m == n || __atomic_compare_exchange_n(&g_order_n, &n, m, 1, __ATOMIC_SEQ_CST,
                                                  __ATOMIC_RELAXED))
            return;
    }
}

/* A thread's first multi-threaded record takes a column, if one is free. */
static void order_table_take(tstate_t *s)
{
    unsigned f = __atomic_load_n(&g_order_free, __ATOMIC_RELAXED);
    s->tab1 = -1;
    s->col = NULL;
    while (f) {
        unsigned j = (unsigned)__builtin_ctz(f);
        /* the acquire: the entries of the thread that gave it back */
        if (__atomic_compare_exchange_n(&g_order_free, &f, f & ~(1u << j), 1, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
            order_announce(j + 1, 0);
            s->tab1 = (int)j + 1;
            s->col = &g_order_t[0][j];
            return;
        }
    }
}

static void order_table_give(tstate_t *s)
{
    s->col = NULL;
    if (s->tab1 <= 0) {
        s->tab1 = -1;   /* what an exiting thread records from here on */
        return;
    }
    unsigned j = (unsigned)s->tab1 - 1;
    s->tab1 = -1;
    __atomic_fetch_or(&g_order_free, 1u << j, __ATOMIC_RELEASE);
}

/* fork's child: the other threads' columns are free again; what they hold
 * stays (seqs given before the fork, which the child's exceed anyway) */
static void order_tables_forked(tstate_t *s)
{
    g_order_free = ORDER_TABLES_ALL & ~(s->tab1 > 0 ? 1u << (s->tab1 - 1) : 0u);
}

/* The highest seq noted for row k: the shared table's entry (once it has
 * any) and the n columns ever taken, unrolled: a loop's own instructions
 * cost more than its loads. */
static inline __attribute__((always_inline)) uint64_t order_row_max(size_t k)
{
    unsigned n = __atomic_load_n(&g_order_n, __ATOMIC_ACQUIRE);
    const uint64_t *row = g_order_t[k];
    uint64_t v = 0, w;
#define ORDER_COL(j)                                        \
    w = __atomic_load_n(&row[j], __ATOMIC_RELAXED);         \
    v = v < w ? w : v;                                      \
    __attribute__((fallthrough))
    switch (n & ORDER_COLS) {
    case 8: ORDER_COL(7);
    case 7: ORDER_COL(6);
    case 6: ORDER_COL(5);
    case 5: ORDER_COL(4);
    case 4: ORDER_COL(3);
    case 3: ORDER_COL(2);
    case 2: ORDER_COL(1);
    case 1: ORDER_COL(0);
    default: break;
    }
#undef ORDER_COL
    if (__builtin_expect(n & ORDER_SHARED, 0)) {
        w = __atomic_load_n(&g_order[k], __ATOMIC_RELAXED);
        v = v < w ? w : v;
    }
    return v;
}

static inline __attribute__((always_inline)) size_t order_row(uintptr_t addr)
{
    return ((addr >> 12) * 0x9e3779b97f4a7c15ull) >> 52;
}

/* seq_mt() for a thread without a column: its first multi-threaded record
 * (which takes one, if one is free), or one beyond ORDER_TABLES. */
static __attribute__((noinline)) uint64_t seq_mt_shared(tstate_t *s, uintptr_t addr,
                                                        uint64_t seq)
{
    /* taken before the table is read: a column given back by a thread that
     * exited is read after that thread's last entries (the release and
     * acquire on g_order_free), so that this thread's seqs, and its
     * entries, exceed them */
    if (s->tab1 == 0)
        order_table_take(s);
    size_t k = order_row(addr);
    uint64_t v = order_row_max(k);
    if (seq <= v)
        seq = v + 1;
    if (s->col) {
        __atomic_store_n(&s->col[k * ORDER_TABLES], seq, __ATOMIC_RELAXED);
    } else {
        /* raise the shared entry to seq; one raised higher meanwhile is a
         * call that nothing orders against this one */
        if (!(__atomic_load_n(&g_order_n, __ATOMIC_RELAXED) & ORDER_SHARED))
            order_announce(0, ORDER_SHARED);
        uint64_t *e = &g_order[k];
        uint64_t x = __atomic_load_n(e, __ATOMIC_RELAXED);
        while (x < seq &&
               !__atomic_compare_exchange_n(e, &x, seq, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            ;
    }
    s->lclock = seq + 1;
    return seq;
}

static inline __attribute__((always_inline)) uint64_t seq_mt(tstate_t *s, uintptr_t addr)
{
    uint64_t seq = s->lclock;   /* at least the last clock reading: set_now */
    uint64_t st = __atomic_load_n(&dmm_tw_next_seq, __ATOMIC_RELAXED);
    if (seq < st)
        seq = st;
    if (addr) {
        if (__builtin_expect(s->col == NULL, 0))
            return seq_mt_shared(s, addr, seq);
        size_t k = order_row(addr);
        uint64_t v = order_row_max(k);
        if (seq <= v)
            seq = v + 1;
        __atomic_store_n(&s->col[k * ORDER_TABLES], seq, __ATOMIC_RELAXED);
    }
    s->lclock = seq + 1;
    return seq;
}

uint64_t dmm_tw_seq_mt(const void *addr)
{
    return seq_mt(&dmm_tw_ts, (uintptr_t)addr);
}

/* The two calls most programs make most, the lean way: a result, room in
 * the buffer, and none of what s->lim rules out (a thread exiting, a
 * process writing through after exit, call stacks, a clock other than the
 * TSC: g_lean).  The record is encoded straight from the arguments, the
 * bytes record() would write: where its seq is the next of the thread's
 * stream and the clock stands, by trcenc.h's _same encoders, calling
 * nothing: inline in the shim while the process has one thread
 * (recorder.h, dmm_tw_malloc_done), in the functions below, which keep to
 * scratch registers, when it has more; a clock reading or another seq
 * (threads that take seqs in turn) goes to *_other, and anything else to
 * record(), as tail calls.  dmm_tw_lean() (recorder.h) is the test. */

/* A lean record's clock reading, as stamp_sampled() takes it. */
static inline __attribute__((always_inline)) void lean_clock(tstate_t *s)
{
    s->tleft = g_stride;
#if defined(__x86_64__)
    set_now(s, __rdtsc() - g_tsc0);   /* the lean way runs on the TSC alone */
#endif
}

/* A multi-threaded lean record's seq into *seq, the clock read first when
 * it is due: 1 when the record has a time or a seq of its own.  Its time
 * needs no comparing: it changes only with a reading, which this record
 * (or one with a time of its own before it, time_kept()) then carries. */
static inline __attribute__((always_inline)) int lean_other(tstate_t *s, uintptr_t addr,
                                                            uint64_t *seq)
{
    int clock = __builtin_expect(--s->tleft == 0, 0);
    if (clock)
        lean_clock(s);
    *seq = seq_mt(s, addr);   /* after the clock: seq_mt follows it */
    return clock | (*seq != s->st.seq + 1);
}

/* A lean record with a time or a seq of its own, and the rest of the way
 * out.  Encoded here rather than by append(), whose op is not a constant:
 * its encoding would cost twice as much. */
static __attribute__((noinline)) void *malloc_other(tstate_t *s, uint64_t seq, uint64_t t,
                                                    size_t n, void *p)
{
    dmm_trc_rec_t r = { .op = DMM_TRC_MALLOC, .seq = seq, .time = t, .size = n,
                        .ptr_out = (uintptr_t)p };
    uint32_t pos = s->pos + (uint32_t)dmm_trc3_encode(s->buf + s->pos, &s->st, &r);
    __atomic_store_n(&s->pos, pos, __ATOMIC_RELEASE);
    dmm_tw_leave();
    return p;
}

static __attribute__((noinline)) void *malloc_full(uint32_t stk, uint64_t seq, size_t n,
                                                   void *p)
{
    /* errno is read only when the call failed: the tracer leaves it alone.
     * record_call's list of mapped blocks is not malloc's (the shim's), and
     * a constant op makes record()'s encoding a third as long. */
    record(stk, DMM_TRC_MALLOC, seq, n, 0, NULL, p, p ? 0 : errno, 0);
    dmm_tw_leave();
    return p;
}

/* A multi-threaded lean record's seq, the common case inline: the thread
 * has a column, at most ORDER_QUICK columns were ever taken and the shared
 * table has no entry, no clock reading is due, and no entry of the page's
 * row reaches the thread's clock (nothing of another thread's on the page
 * since its last record): then the seq is that clock, as seq_mt() would
 * give it, and the column and clock are set as it sets them.  0 when any
 * of that does not hold, with nothing done: the caller goes the way of
 * lean_other().  Loads the row's first ORDER_QUICK entries whatever the
 * count (a column not taken holds 0; one taken since holds seqs that the
 * record may follow), so that no jump picks how many. */
#define ORDER_QUICK 4u
static inline __attribute__((always_inline)) int seq_mt_quick(tstate_t *s, uintptr_t addr,
                                                              uint64_t *out)
{
    if (__builtin_expect(s->tleft <= 1 || s->col == NULL ||
                         __atomic_load_n(&g_order_n, __ATOMIC_ACQUIRE) > ORDER_QUICK, 0))
        return 0;
    uint64_t seq = s->lclock;
    uint64_t st = __atomic_load_n(&dmm_tw_next_seq, __ATOMIC_RELAXED);
    seq = seq < st ? st : seq;
    size_t k = order_row(addr);
    const uint64_t *row = g_order_t[k];
    uint64_t a = __atomic_load_n(&row[0], __ATOMIC_RELAXED);
    uint64_t b = __atomic_load_n(&row[1], __ATOMIC_RELAXED);
    uint64_t c = __atomic_load_n(&row[2], __ATOMIC_RELAXED);
    uint64_t d = __atomic_load_n(&row[3], __ATOMIC_RELAXED);
    a = a < b ? b : a;
    c = c < d ? d : c;
    if (__builtin_expect((a < c ? c : a) >= seq, 0))
        return 0;
    s->tleft--;
    __atomic_store_n(&s->col[k * ORDER_TABLES], seq, __ATOMIC_RELAXED);
    s->lclock = seq + 1;
    *out = seq;
    return 1;
}

/* The process has threads, or the call is not one for the lean way. */
static __attribute__((noinline)) void *malloc_mt_slow(size_t n, void *p)
{
    tstate_t *s = &dmm_tw_ts;
    if (!__builtin_expect(p != NULL && dmm_tw_lean(s), 1)) {
        /* malloc's and dmm_tw_malloc_mt's calls here are tail calls: this
         * frame is the one next to malloc's caller */
        uint32_t stk = stack_here(s, 1);
        return malloc_full(stk, dmm_tw_seq_at(p), n, p);
    }
    uint64_t seq;
    if (lean_other(s, (uintptr_t)p, &seq))
        return malloc_other(s, seq, s->tnow, n, p);
    return dmm_tw_malloc_same(s, n, p);
}

static __attribute__((noinline)) void free_other(tstate_t *s, uint64_t seq, uint64_t t,
                                                 void *p)
{
    dmm_trc_rec_t r = { .op = DMM_TRC_FREE, .seq = seq, .time = t, .ptr_in = (uintptr_t)p };
    uint32_t pos = s->pos + (uint32_t)dmm_trc3_encode(s->buf + s->pos, &s->st, &r);
    __atomic_store_n(&s->pos, pos, __ATOMIC_RELEASE);
    dmm_tw_leave();
    __libc_free(p);
}

static __attribute__((noinline)) void free_full(uint32_t stk, uint64_t seq, void *p)
{
    record(stk, DMM_TRC_FREE, seq, 0, 0, p, NULL, 0, 0);   /* as malloc_full's */
    dmm_tw_leave();
    __libc_free(p);
}

static __attribute__((noinline)) void free_mt_slow(void *p)
{
    tstate_t *s = &dmm_tw_ts;
    if (!dmm_tw_lean(s)) {
        uint32_t stk = stack_here(s, 1);   /* as malloc_mt_slow's */
        free_full(stk, dmm_tw_seq_at(p), p);
        return;
    }
    uint64_t seq;
    if (lean_other(s, (uintptr_t)p, &seq)) {
        free_other(s, seq, s->tnow, p);
        return;
    }
    dmm_tw_free_same(s, p);
}

/* The process has threads (or the call is not one for the lean way): the
 * common case in scratch registers, as dmm_tw_malloc_done does it with one
 * thread, with the seq of seq_mt_quick(); anything else, and a seq that is
 * not the stream's next, the rest of the way (callgrind, work_media -t 2,
 * shim included: 118 instructions a malloc's record and 102 a free's the
 * *_slow way alone, 98 and 81 this way; 95 and 78 on -f 300 since the
 * gate is a field of the thread's state). */
__attribute__((noinline)) void *dmm_tw_malloc_mt(size_t n, void *p)
{
    tstate_t *s = &dmm_tw_ts;
    uint64_t seq;
    if (!__builtin_expect(p != NULL && dmm_tw_lean(s) && seq_mt_quick(s, (uintptr_t)p, &seq), 1))
        return malloc_mt_slow(n, p);
    if (__builtin_expect(seq != s->st.seq + 1, 0))
        return malloc_other(s, seq, s->tnow, n, p);
    return dmm_tw_malloc_same(s, n, p);
}

__attribute__((noinline)) void dmm_tw_free_mt(void *p)
{
    tstate_t *s = &dmm_tw_ts;
    uint64_t seq;
    if (!__builtin_expect(dmm_tw_lean(s) && seq_mt_quick(s, (uintptr_t)p, &seq), 1)) {
        free_mt_slow(p);
        return;
    }
    if (__builtin_expect(seq != s->st.seq + 1, 0)) {
        free_other(s, seq, s->tnow, p);
        return;
    }
    dmm_tw_free_same(s, p);
}

/* dmm_tw_malloc_done's and dmm_tw_free_done's record with one thread when
 * the clock is due (the caller counted it down): the process's next seq,
 * and a time of its own. */
__attribute__((noinline)) void *dmm_tw_malloc_clock(size_t n, void *p)
{
    tstate_t *s = &dmm_tw_ts;
    lean_clock(s);
    return malloc_other(s, dmm_tw_next_seq++, s->tnow, n, p);
}

__attribute__((noinline)) void dmm_tw_free_clock(void *p)
{
    tstate_t *s = &dmm_tw_ts;
    lean_clock(s);
    free_other(s, dmm_tw_next_seq++, s->tnow, p);
}
