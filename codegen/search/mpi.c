/* mpi.c - rank 0's remote evaluator and the workers' loop, over the
 * libdmm_mpi.so plugin (see mpi.h).  Messages are plain structs (every rank
 * runs the same dmm binary) followed, for a job, by the .dmm text. */
#include "codegen/search/mpi.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "allocators/chain/desc.h"
#include "allocators/sim/sim.h"
#include "tracer/format/crc32.h"

enum { TAG_HELLO = 1, TAG_JOB, TAG_RESULT, TAG_STOP };

typedef struct hello {
    int64_t  pid;
    char     host[64];
    uint64_t nops;
    uint32_t nids;
    uint32_t crc;
} hello_t;

typedef struct job {
    int32_t         item;
    int32_t         pad;
    double          seconds_left;   /* <= 0: no limit */
    dmm_sim_bound_t bound;          /* stop and deadline are the worker's */
    /* the .dmm text follows, NUL-terminated */
} job_t;

typedef struct result {
    int32_t  item;
    int32_t  interrupted, complete, pad;
    uint64_t T, ops, failed, capped_at, over_fail_at;
    uint64_t M, max_op_cost, p999_op_cost;
    double   seconds;
} result_t;

#define MSG_CAP (sizeof(job_t) + DMM_DESC_MAX * 160 + 400)

int dmm_mpi_under_mpirun(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") != NULL;
}

int dmm_mpi_plugin_path(char *path, size_t len)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0 || len == 0)
        return -1;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = 0;
    const char *tries[] = { "%s/libdmm_mpi.so", "%s/../lib/dmm/libdmm_mpi.so" };
    for (size_t i = 0; i < sizeof tries / sizeof tries[0]; i++) {
        snprintf(path, len, tries[i], exe);
        if (access(path, F_OK) == 0)
            return 1;
    }
    snprintf(path, len, tries[0], exe);
    return 0;
}

static void *open_plugin(dmm_err_t *err)
{
    char path[PATH_MAX + 64];
    int found = dmm_mpi_plugin_path(path, sizeof path);
    if (found < 0) {
        dmm_err_set(err, "cannot find the dmm binary: %s", strerror(errno));
        return NULL;
    }
    if (!found) {
        dmm_err_set(err, "--mpi: %s is missing (it is built where mpicc is: Debian's "
                         "libopenmpi-dev)", path);
        return NULL;
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    if (!h)
        dmm_err_set(err, "--mpi needs Open MPI (Debian: openmpi-bin libopenmpi-dev): %s",
                    dlerror());
    return h;
}

int dmm_mpi_open(dmm_mpi_t *m, int *argc, char ***argv, dmm_err_t *err)
{
    memset(m, 0, sizeof *m);
    m->handle = open_plugin(err);
    if (!m->handle)
        return -1;
    m->api = dlsym(m->handle, "dmm_mpi_api");
    if (!m->api || m->api->abi != DMM_MPI_ABI) {
        dmm_err_set(err, "--mpi: libdmm_mpi.so is not this dmm's plugin (rebuild it)");
        dlclose(m->handle);
        return -1;
    }
    char msg[256] = "";
    if (m->api->init(argc, argv, &m->rank, &m->size, msg, sizeof msg) != 0) {
        dmm_err_set(err, "--mpi: MPI_Init failed: %s", msg);
        dlclose(m->handle);
        return -1;
    }
    m->cap = MSG_CAP;
    m->buf = malloc(m->cap);
    m->peers = calloc((size_t)m->size, sizeof *m->peers);
    if (!m->buf || !m->peers) {
        dmm_err_set(err, "out of memory");
        return -1;
    }
    return 0;
}

void dmm_mpi_close(dmm_mpi_t *m, int finalize)
{
    if (m->api && finalize)
        m->api->finalize();
    free(m->buf);
    free(m->peers);
    m->buf = NULL;
    m->peers = NULL;
}

static void own_hello(hello_t *h, const dmm_opstream_t *s)
{
    memset(h, 0, sizeof *h);
    h->pid = getpid();
    gethostname(h->host, sizeof h->host - 1);
    h->nops = s->nops;
    h->nids = s->nids;
    h->crc = dmm_crc32(0, s->ops, s->nops * sizeof *s->ops);
}

int dmm_mpi_gather(dmm_mpi_t *m, const dmm_opstream_t *s, const volatile sig_atomic_t *stop,
                   dmm_err_t *err)
{
    hello_t mine, h;
    own_hello(&mine, s);
    m->peers[0].pid = mine.pid;
    memcpy(m->peers[0].host, mine.host, sizeof mine.host);
    for (int k = 1; k < m->size; k++) {
        int src, tag, got;
        size_t len;
        while ((got = m->api->recv(k, &src, &tag, &h, sizeof h, &len, 0.1)) == 0)
            if (stop && *stop)
                return dmm_err_set(err, "--mpi: stopped while waiting for rank %d", k);
        if (got != 1 || tag != TAG_HELLO || len != sizeof h)
            return dmm_err_set(err, "--mpi: no greeting from rank %d", k);
        h.host[sizeof h.host - 1] = 0;
        m->peers[k].pid = h.pid;
        memcpy(m->peers[k].host, h.host, sizeof h.host);
        if (!strcmp(h.host, mine.host) && h.pid > 0)   /* a rank on this host */
            snprintf(m->peers[k].stat_path, sizeof m->peers[k].stat_path, "/proc/%lld/stat",
                     (long long)h.pid);
        if (h.nops != mine.nops || h.nids != mine.nids || h.crc != mine.crc)
            return dmm_err_set(err, "--mpi: rank %d (pid %lld on %s) read another trace: %llu "
                                    "operations, CRC %08x; rank 0 has %llu, CRC %08x (give "
                                    "every host the same file)", k, (long long)h.pid, h.host,
                               (unsigned long long)h.nops, h.crc,
                               (unsigned long long)mine.nops, mine.crc);
    }
    return 0;
}

/* ---- rank 0: the remote evaluator ------------------------------------------ */

static int remote_start(void *arg, int w, int item, const char *text, const dmm_sim_bound_t *b,
                        double seconds_left)
{
    dmm_mpi_t *m = arg;
    size_t tl = strlen(text) + 1;
    if (sizeof(job_t) + tl > m->cap)
        return -1;
    job_t j;
    memset(&j, 0, sizeof j);
    j.item = item;
    j.seconds_left = seconds_left;
    j.bound = *b;
    j.bound.stop = NULL;
    j.bound.deadline = 0;
    memcpy(m->buf, &j, sizeof j);
    memcpy(m->buf + sizeof j, text, tl);
    return m->api->send(w + 1, TAG_JOB, m->buf, sizeof j + tl, m->stop);
}

static int remote_finish(void *arg, int *w, int *item, dmm_sim_result_t *r, double timeout_s)
{
    dmm_mpi_t *m = arg;
    result_t x;
    int src = -1, tag;
    size_t len;
    int got = m->api->recv(-1, &src, &tag, &x, sizeof x, &len, timeout_s);
    *w = src - 1;
    if (got <= 0)
        return got;
    if (tag != TAG_RESULT || len != sizeof x)
        return -1;
    memset(r, 0, sizeof *r);
    *item = x.item;
    r->interrupted = x.interrupted;
    r->complete = x.complete;
    r->T = x.T;
    r->M = (size_t)x.M;
    r->ops = x.ops;
    r->failed = x.failed;
    r->capped_at = x.capped_at;
    r->over_fail_at = x.over_fail_at;
    r->max_op_cost = x.max_op_cost;
    r->p999_op_cost = x.p999_op_cost;
    r->seconds = x.seconds;
    return 1;
}

void dmm_mpi_remote(dmm_mpi_t *m, dmm_ge_remote_t *rm)
{
    rm->nworkers = m->size - 1;
    rm->start = remote_start;
    rm->finish = remote_finish;
    rm->arg = m;
}

void dmm_mpi_stop_workers(dmm_mpi_t *m)
{
    for (int k = 1; k < m->size; k++)
        m->api->send(k, TAG_STOP, NULL, 0, m->stop);
}

/* Rank k's process is gone (or a zombie), by its /proc/PID/stat; only
 * async-signal-safe calls. */
static int gone(const dmm_mpi_peer_t *p)
{
    char st[512];
    int fd = open(p->stat_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 1;
    ssize_t n = read(fd, st, sizeof st - 1);
    close(fd);
    if (n <= 0)
        return 1;
    st[n] = 0;
    const char *end = NULL;   /* "pid (comm) S ...": the state after the last ')' */
    for (const char *c = st; *c; c++)
        if (*c == ')')
            end = c;
    return end && end[1] == ' ' && (end[2] == 'Z' || end[2] == 'X');
}

int dmm_mpi_dead_worker(const dmm_mpi_t *m)
{
    for (int k = 1; k < m->size; k++)
        if (m->peers[k].stat_path[0] && gone(&m->peers[k]))
            return k;
    return -1;
}

/* ---- a worker ---------------------------------------------------------------- */

static void replay(const dmm_opstream_t *s, const job_t *j, const char *text, result_t *x)
{
    memset(x, 0, sizeof *x);
    x->item = j->item;
    dmm_desc_t d;
    dmm_err_t e;
    dmm_sim_result_t *r = malloc(sizeof *r);
    if (!r || dmm_desc_parse("job", text, strlen(text), &d, &e) != 0) {
        free(r);
        return;   /* no M, not complete: invalid, as a chain that does not build */
    }
    dmm_sim_bound_t b = j->bound;
    b.stop = NULL;
    b.deadline = j->seconds_left > 0 ? dmm_sim_now() + j->seconds_left : 0;
    if (dmm_sim_run_bounded(s, &d, "job", 0, &b, r, &e) == 0) {
        x->interrupted = r->interrupted;
        x->complete = r->complete;
        x->T = r->T;
        x->M = r->M;
        x->ops = r->ops;
        x->failed = r->failed;
        x->capped_at = r->capped_at;
        x->over_fail_at = r->over_fail_at;
        x->max_op_cost = r->max_op_cost;
        x->p999_op_cost = r->p999_op_cost;
        x->seconds = r->seconds;
    }
    free(r);
}

static void linger(int sig)
{
    (void)sig;
    alarm(2);   /* SIGALRM's default action ends the process */
}

int dmm_mpi_work(dmm_mpi_t *m, const dmm_opstream_t *s, dmm_err_t *err)
{
    /* mpirun ends a job with SIGTERM to every rank: stay 2 s more, so that
     * rank 0 can tell a worker that died from one that was told to go */
    signal(SIGTERM, linger);
    signal(SIGINT, SIG_IGN);
    hello_t h;
    own_hello(&h, s);
    if (m->api->send(0, TAG_HELLO, &h, sizeof h, NULL) != 0)
        return dmm_err_set(err, "--mpi: rank %d cannot reach rank 0", m->rank);
    for (;;) {
        int src, tag;
        size_t len;
        int got = m->api->recv(0, &src, &tag, m->buf, m->cap - 1, &len, -1);
        if (got != 1)
            return dmm_err_set(err, "--mpi: rank %d lost rank 0", m->rank);
        if (tag == TAG_STOP)
            return 0;
        if (tag != TAG_JOB || len < sizeof(job_t) + 1)
            return dmm_err_set(err, "--mpi: rank %d got a malformed message", m->rank);
        m->buf[len] = 0;
        job_t j;
        memcpy(&j, m->buf, sizeof j);
        result_t x;
        replay(s, &j, m->buf + sizeof j, &x);
        if (m->api->send(0, TAG_RESULT, &x, sizeof x, NULL) != 0)
            return dmm_err_set(err, "--mpi: rank %d cannot reach rank 0", m->rank);
    }
}
