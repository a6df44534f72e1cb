/* load.c - trace -> operation stream in a child -> memfd -> a mapping
 * here (see load.h). */
#include "tracer/replay/load.h"
#include "tracer/base/io.h"

#include "tracer/format/load.h"
#include "tracer/format/opcache.h"
#include "tracer/format/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define OPS_MAGIC 0x73706f2d6d6d64ull   /* "dmm-ops" */

/* The trace's format, from its first bytes (DMM_FMT_UNKNOWN when it cannot
 * be read: the loader then says why). */
static unsigned format_of(const char *path)
{
    uint8_t head[4096];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return DMM_FMT_UNKNOWN;
    ssize_t n = read(fd, head, sizeof head);
    close(fd);
    return n > 0 ? (unsigned)dmm_format_detect(head, (size_t)n) : DMM_FMT_UNKNOWN;
}

static int by_id(const void *a, const void *b)
{
    uint32_t x = ((const dmm_resident_t *)a)->id, y = ((const dmm_resident_t *)b)->id;
    return (x > y) - (x < y);
}

/* The child: trace (or its TRACE.ops, when use_cache and valid) -> op
 * stream -> fd.  Returns the exit status. */
static int load_child(const char *path, int use_cache, int fd)
{
    dmm_opstream_t s;
    dmm_opload_t info;
    dmm_err_t err;
    if (dmm_opstream_load(path, use_cache, &s, &info, &err) != 0) {
        fprintf(stderr, "dmm replay: %s\n", err.msg);
        return 2;
    }
    if (info.note[0])
        fprintf(stderr, "dmm replay: warning: %s\n", info.note);
    unsigned format = format_of(path);
    if (!s.nops) {
        fprintf(stderr, "dmm replay: %s: the trace has no operations to replay\n", path);
        dmm_opstream_free(&s);
        return 2;
    }
    dmm_replay_ops_header_t h = {
        .magic = OPS_MAGIC, .nops = s.nops, .nids = s.nids, .format = format,
        .free_null = s.free_null, .unknown_free = s.unknown_free,
        .failed = s.failed, .reused_live = s.reused_live, .nresident = s.nresident
    };
    if (s.nresident)
        qsort(s.resident, s.nresident, sizeof *s.resident, by_id);
    int rc = dmm_write_all(fd, &h, sizeof h) || dmm_write_all(fd, s.ops, s.nops * sizeof *s.ops) ||
             dmm_write_all(fd, s.resident, s.nresident * sizeof *s.resident);
    dmm_opstream_free(&s);
    if (rc) {
        fprintf(stderr, "dmm replay: cannot hand over the operation stream: %s\n",
                strerror(errno));
        return 1;
    }
    return 0;
}

/* Run the child on fd and wait for it; its exit status, or 1 or 2 when
 * it could not be started or died. */
static int run_child(const char *path, int use_cache, int fd)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "dmm replay: fork: %s\n", strerror(errno));
        return 1;
    }
    if (pid == 0) {
        int rc = load_child(path, use_cache, fd);
        fflush(NULL);
        _exit(rc);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) {
            fprintf(stderr, "dmm replay: waitpid: %s\n", strerror(errno));
            return 1;
        }
    if (WIFSIGNALED(st)) {
        fprintf(stderr, "dmm replay: %s: the trace reader died of signal %d\n", path,
                WTERMSIG(st));
        return 2;
    }
    return WEXITSTATUS(st);
}

/* Map the stream the child left in fd (and close fd). */
static int map_stream(int fd, dmm_replay_ops_t *L)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0 || (size_t)sb.st_size < sizeof(dmm_replay_ops_header_t)) {
        fprintf(stderr, "dmm replay: the operation stream did not arrive\n");
        close(fd);
        return 1;
    }
    void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        fprintf(stderr, "dmm replay: mmap of the operation stream: %s\n", strerror(errno));
        return 1;
    }
    L->h = m;
    L->ops = (const dmm_op_t *)((const char *)m + sizeof(dmm_replay_ops_header_t));
    L->maplen = (size_t)sb.st_size;
    L->resident = (const dmm_resident_t *)(L->ops + L->h->nops);
    size_t body = L->maplen - sizeof(dmm_replay_ops_header_t);
    if (L->h->magic != OPS_MAGIC || L->h->nops > body / sizeof(dmm_op_t) ||
        L->h->nresident > body / sizeof(dmm_resident_t) ||
        body != L->h->nops * sizeof(dmm_op_t) + L->h->nresident * sizeof(dmm_resident_t)) {
        fprintf(stderr, "dmm replay: the operation stream arrived damaged\n");
        munmap(m, L->maplen);
        return 1;
    }
    return 0;
}

int dmm_replay_load(const char *path, int use_cache, dmm_replay_ops_t *L)
{
    int fd = memfd_create("dmm-replay-ops", MFD_CLOEXEC);
    if (fd < 0)
        fd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "dmm replay: no memfd or temporary file for the operation stream: %s\n",
                strerror(errno));
        return 1;
    }
    int rc = run_child(path, use_cache, fd);
    if (rc) {
        close(fd);
        return rc;
    }
    return map_stream(fd, L);
}

void dmm_replay_unload(dmm_replay_ops_t *L)
{
    munmap((void *)L->h, L->maplen);
    L->h = NULL;
    L->ops = NULL;
    L->resident = NULL;
    L->maplen = 0;
}

uint64_t dmm_replay_resident(const dmm_replay_ops_t *L, uint32_t id)
{
    size_t lo = 0, hi = L->h->nresident;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (L->resident[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* a block said twice (still live at the end, freed after): the most */
    uint64_t most = UINT64_MAX;
    for (; lo < L->h->nresident && L->resident[lo].id == id; lo++)
        if (most == UINT64_MAX || L->resident[lo].bytes > most)
            most = L->resident[lo].bytes;
    return most;
}
