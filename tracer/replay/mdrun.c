/* mdrun.c - mdriver's method: correctness, utilisation and K-best
 * throughput of one trace in a child process (see mdrun.h). */
#include "tracer/replay/mdrun.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tracer/replay/clock.h"
#include "tracer/replay/mem.h"
#include "tracer/replay/payload.h"
#include "tracer/replay/replay.h"

/* mdriver's ALIGNMENT: jemalloc and mimalloc give small blocks 8 (dmm's
 * libraries and glibc 16, which test_chain checks) */
#define ALIGN 8u

void dmm_mdrun_opts_default(dmm_mdrun_opts_t *o)
{
    o->k = 3;
    o->eps = 0.01;
    o->maxsamples = 20;
    o->no_cache = 0;
}

/* ---- the live blocks by address: a treap over ids -------------------------
 * Each id has at most one live block; its node is the id.  key[id] is the
 * block's address when it was inserted, end[id] one past its last byte. */

typedef struct treap {
    int32_t  *l, *r;
    uint32_t *prio;
    uint64_t *key, *end;
    int32_t   root;
    uint32_t  seed;
} treap_t;

static uint32_t tr_rand(treap_t *t)
{
    t->seed ^= t->seed << 13;
    t->seed ^= t->seed >> 17;
    t->seed ^= t->seed << 5;
    return t->seed;
}

/* Split n into keys < k (*a) and >= k (*b). */
static void tr_split(treap_t *t, int32_t n, uint64_t k, int32_t *a, int32_t *b)
{
    if (n < 0) {
        *a = *b = -1;
    } else if (t->key[n] < k) {
        tr_split(t, t->r[n], k, &t->r[n], b);
        *a = n;
    } else {
        tr_split(t, t->l[n], k, a, &t->l[n]);
        *b = n;
    }
}

static int32_t tr_merge(treap_t *t, int32_t a, int32_t b)
{
    if (a < 0)
        return b;
    if (b < 0)
        return a;
    if (t->prio[a] > t->prio[b]) {
        t->r[a] = tr_merge(t, t->r[a], b);
        return a;
    }
    t->l[b] = tr_merge(t, a, t->l[b]);
    return b;
}

static void tr_insert(treap_t *t, uint32_t id, uint64_t start, uint64_t end)
{
    t->key[id] = start;
    t->end[id] = end;
    t->l[id] = t->r[id] = -1;
    t->prio[id] = tr_rand(t);
    int32_t a, b;
    tr_split(t, t->root, start, &a, &b);
    t->root = tr_merge(t, tr_merge(t, a, (int32_t)id), b);
}

/* Remove node id (its key as inserted; equal keys: found by id). */
static void tr_remove(treap_t *t, uint32_t id)
{
    int32_t *link = &t->root;
    while (*link >= 0 && *link != (int32_t)id)
        link = t->key[id] < t->key[*link] ? &t->l[*link] : &t->r[*link];
    if (*link == (int32_t)id)
        *link = tr_merge(t, t->l[id], t->r[id]);
}

/* A live block that overlaps [s, e), or -1: the one starting last at or
 * below s, and the one starting first above it. */
static int32_t tr_overlap(const treap_t *t, uint64_t s, uint64_t e)
{
    int32_t pred = -1, succ = -1;
    for (int32_t n = t->root; n >= 0;) {
        if (t->key[n] <= s) {
            pred = n;
            n = t->r[n];
        } else {
            succ = n;
            n = t->l[n];
        }
    }
    if (pred >= 0 && t->end[pred] > s)
        return pred;
    if (succ >= 0 && t->key[succ] < e)
        return succ;
    return -1;
}

/* ---- the heap: the library's footprint, or RSS ----------------------------- */

typedef int (*footprint_fn)(size_t *now, size_t *peak, int reset_peak);

typedef struct heapmeter {
    footprint_fn fp;
    size_t       fp0;
    int          statm_fd;
    uint64_t     anon0, anon_peak;
} heapmeter_t;

static void heap_start(heapmeter_t *h)
{
    h->fp = (footprint_fn)dlsym(RTLD_DEFAULT, "dmm_footprint");
    size_t peak;
    if (h->fp && h->fp(&h->fp0, &peak, 1) != 0)
        h->fp = NULL;   /* the library is not serving (glibc fallback) */
    h->statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    uint64_t rss;
    dmm_mem_statm(h->statm_fd, &rss, &h->anon0);
    h->anon_peak = h->anon0;
}

static void heap_sample(heapmeter_t *h)
{
    if (h->fp)
        return;
    uint64_t rss, anon;
    dmm_mem_statm(h->statm_fd, &rss, &anon);
    if (anon > h->anon_peak)
        h->anon_peak = anon;
}

/* The heap's peak since heap_start: the library's footprint at its peak
 * (all it holds, as DMM_STATS and the simulator count it: what the driver
 * itself allocated before is a few bytes of it), or the peak anonymous RSS
 * over its level at heap_start; *from_fp says which. */
static uint64_t heap_peak(heapmeter_t *h, int *from_fp)
{
    *from_fp = h->fp != NULL;
    if (h->fp) {
        size_t now, peak;
        h->fp(&now, &peak, 0);
        return peak;
    }
    heap_sample(h);
    if (h->statm_fd >= 0)
        close(h->statm_fd);
    return h->anon_peak - h->anon0;
}

/* ---- the correctness run ---------------------------------------------------- */

typedef struct run {
    dmm_replay_t r;
    treap_t      t;
    void        *tmap;
    size_t       tlen;
    dmm_mdrun_t *m;
    uint64_t     live;
} run_t;

static int bad(run_t *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(run_t *x, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->m->why, sizeof x->m->why, fmt, ap);
    va_end(ap);
    x->m->valid = 0;
    return -1;
}

/* Block p of size n for op i, id: aligned, overlapping nothing live, then
 * listed and its payload written. */
static int place(run_t *x, size_t i, uint32_t id, unsigned char *p, uint64_t n, size_t align)
{
    if ((uintptr_t)p % align)
        return bad(x, "op %zu: block %u at %p is not %zu-byte aligned", i, id, (void *)p, align);
    uint64_t s = (uintptr_t)p, e = s + (n ? n : 1);
    int32_t o = tr_overlap(&x->t, s, e);
    if (o >= 0)
        return bad(x, "op %zu: block %u [%p, +%llu) overlaps live block %d [%p, +%llu)", i, id,
                   (void *)p, (unsigned long long)n, o, (void *)(uintptr_t)x->t.key[o],
                   (unsigned long long)(x->t.end[o] - x->t.key[o]));
    tr_insert(&x->t, id, s, e);
    return 0;
}

static int check_payload(run_t *x, size_t i, uint32_t id, uint64_t upto, const char *what)
{
    int64_t off = dmm_payload_check(x->r.ptr[id], 0, upto, dmm_payload_word(id));
    if (off >= 0)
        return bad(x, "op %zu: block %u: byte %lld of %llu %s", i, id, (long long)off,
                   (unsigned long long)upto, what);
    return 0;
}

static int correct_op(run_t *x, size_t i)
{
    dmm_replay_t *r = &x->r;
    const dmm_op_t op = r->L.ops[i];
    uint32_t id = op.id < r->nids ? op.id : 0;
    unsigned char *p = r->ptr[id];
    if (op.kind == DMM_OP_ALLOC) {
        if (p) {   /* the stream reuses a live id only after freeing it */
            tr_remove(&x->t, id);
            free(p);
            x->live -= r->size[id];
        }
        size_t align = ALIGN;
        if (op.flags & DMM_OPF_ZERO) {
            p = calloc(1, op.size);
        } else if (op.align_log2 > 4) {
            align = op.align_log2 < 40 ? (size_t)1 << op.align_log2 : (size_t)1 << 40;
            void *q;
            p = posix_memalign(&q, align, op.size) == 0 ? q : NULL;
        } else {
            p = malloc(op.size);
        }
        r->ptr[id] = p;
        r->size[id] = p ? op.size : 0;
        if (!p)
            return op.size ? bad(x, "op %zu: block %u: malloc(%llu) failed", i, id,
                                 (unsigned long long)op.size)
                           : 0;
        if ((op.flags & DMM_OPF_ZERO) && dmm_payload_check_zero(p, op.size) >= 0)
            return bad(x, "op %zu: block %u: calloc(%llu) not zeroed", i, id,
                       (unsigned long long)op.size);
        if (place(x, i, id, p, op.size, align) != 0)
            return -1;
        dmm_payload_fill(p, 0, op.size, dmm_payload_word(id));
        x->live += op.size;
    } else if (op.kind == DMM_OP_REALLOC) {
        uint64_t old = r->size[id];
        if (p)
            tr_remove(&x->t, id);
        unsigned char *q = realloc(p, op.size);
        if (!q) {
            if (op.size)
                return bad(x, "op %zu: block %u: realloc to %llu failed", i, id,
                           (unsigned long long)op.size);
            r->ptr[id] = NULL;
            r->size[id] = 0;
            x->live -= old;
            return 0;
        }
        r->ptr[id] = q;
        r->size[id] = op.size;
        if (check_payload(x, i, id, old < op.size ? old : op.size, "lost by the realloc") != 0)
            return -1;
        if (place(x, i, id, q, op.size, ALIGN) != 0)
            return -1;
        if (op.size > old)
            dmm_payload_fill(q, old, op.size, dmm_payload_word(id));
        x->live = x->live - old + op.size;
    } else if (op.kind == DMM_OP_FREE && p) {
        if (check_payload(x, i, id, r->size[id], "overwritten while the block was live") != 0)
            return -1;
        tr_remove(&x->t, id);
        free(p);
        r->ptr[id] = NULL;
        x->live -= r->size[id];
        r->size[id] = 0;
    }
    if (x->live > x->m->peak_payload)
        x->m->peak_payload = x->live;
    return 0;
}

/* Every block still out back to the allocator; the table cleared. */
static void free_all(dmm_replay_t *r)
{
    for (uint32_t id = 0; id < r->nids; id++) {
        if (!r->ptr[id])
            continue;
        free(r->ptr[id]);
        r->ptr[id] = NULL;
        r->size[id] = 0;
    }
}

static int correctness(run_t *x)
{
    heapmeter_t h;
    heap_start(&h);
    int rc = 0;
    for (size_t i = 0; i < x->r.nops && rc == 0; i++) {
        rc = correct_op(x, i);
        if ((i & 63) == 0)
            heap_sample(&h);
    }
    x->m->heap = heap_peak(&h, &x->m->heap_footprint);
    if (rc == 0) {
        for (uint32_t id = 0; id < x->r.nids; id++)
            if (x->r.ptr[id])
                tr_remove(&x->t, id);
        free_all(&x->r);
    }
    return rc;
}

/* ---- the timed runs ---------------------------------------------------------- */

static uint64_t timed_run(dmm_replay_t *r)
{
    void **ptr = r->ptr;
    uint64_t t0 = dmm_clock_ns();
    for (size_t i = 0; i < r->nops; i++) {
        const dmm_op_t op = r->L.ops[i];
        uint32_t id = op.id < r->nids ? op.id : 0;
        if (op.kind == DMM_OP_ALLOC) {
            if (ptr[id])
                free(ptr[id]);
            if (op.flags & DMM_OPF_ZERO) {
                ptr[id] = calloc(1, op.size);
            } else if (op.align_log2 > 4) {
                size_t al = op.align_log2 < 40 ? (size_t)1 << op.align_log2 : (size_t)1 << 40;
                if (posix_memalign(&ptr[id], al, op.size) != 0)
                    ptr[id] = NULL;
            } else {
                ptr[id] = malloc(op.size);
            }
        } else if (op.kind == DMM_OP_REALLOC) {
            void *q = realloc(ptr[id], op.size);
            if (q || !op.size)
                ptr[id] = q;
        } else if (op.kind == DMM_OP_FREE) {
            free(ptr[id]);
            ptr[id] = NULL;
        }
    }
    uint64_t t1 = dmm_clock_ns();
    free_all(r);
    return t1 - t0;
}

/* mdriver's K-best: the fastest run, once the K fastest agree within eps. */
static void timing(run_t *x, const dmm_mdrun_opts_t *o)
{
    uint64_t best[64];
    int k = o->k < 1 ? 1 : o->k > 64 ? 64 : o->k, have = 0;
    for (int n = 0; n < o->maxsamples; n++) {
        uint64_t t = timed_run(&x->r);
        x->m->runs++;
        int j = -1;
        if (have < k)
            j = have++;
        else if (t < best[k - 1])
            j = k - 1;
        if (j >= 0) {   /* t among the K fastest: in order */
            while (j > 0 && best[j - 1] > t) {
                best[j] = best[j - 1];
                j--;
            }
            best[j] = t;
        }
        if (have == k && (double)best[k - 1] <= (1.0 + o->eps) * (double)best[0])
            break;
    }
    x->m->secs = have ? (double)best[0] / 1e9 : 0;
}

/* ---- one trace, in a child --------------------------------------------------- */

static int map_treap(run_t *x)
{
    size_t n = x->r.nids ? x->r.nids : 1;
    x->tlen = n * (2 * sizeof(int32_t) + sizeof(uint32_t) + 2 * sizeof(uint64_t));
    x->tmap = mmap(NULL, x->tlen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (x->tmap == MAP_FAILED)
        return -1;
    char *b = x->tmap;
    x->t.key = (uint64_t *)b;
    x->t.end = x->t.key + n;
    x->t.l = (int32_t *)(x->t.end + n);
    x->t.r = x->t.l + n;
    x->t.prio = (uint32_t *)(x->t.r + n);
    x->t.root = -1;
    x->t.seed = 2463534242u;
    return 0;
}

static int child(const char *path, const dmm_mdrun_opts_t *o, dmm_mdrun_t *m)
{
    run_t x;
    memset(&x, 0, sizeof x);
    x.m = m;
    dmm_replay_opts_t ro = { .trace = path, .write = 1, .check = 1, .samples = 0,
                             .no_cache = o->no_cache };
    int rc = dmm_replay_open(&x.r, &ro);
    if (rc)
        return rc;
    if (map_treap(&x) != 0) {
        fprintf(stderr, "dmm replay: %s: no memory for the block map: %s\n", path,
                strerror(errno));
        dmm_replay_close(&x.r);
        return 1;
    }
    m->ops = x.r.nops;
    m->valid = 1;
    if (correctness(&x) == 0) {
        m->util = m->heap >= m->peak_payload && m->heap ? (double)m->peak_payload / (double)m->heap
                                                        : 1.0;
        timing(&x, o);
        m->kops = m->secs > 0 ? (double)m->ops / m->secs / 1000.0 : 0;
    } else {
        x.r.corrupt = 1;   /* close leaves the blocks alone */
    }
    munmap(x.tmap, x.tlen);
    dmm_replay_close(&x.r);
    return 0;
}

int dmm_mdrun(const char *path, const dmm_mdrun_opts_t *o, dmm_mdrun_t *m)
{
    memset(m, 0, sizeof *m);
    const char *b = strrchr(path, '/');
    snprintf(m->name, sizeof m->name, "%s", b && b[1] ? b + 1 : path);
    dmm_mdrun_t *shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE,
                               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) {
        fprintf(stderr, "dmm replay: %s\n", strerror(errno));
        return m->status = 1;
    }
    *shared = *m;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "dmm replay: fork: %s\n", strerror(errno));
        munmap(shared, sizeof *shared);
        return m->status = 1;
    }
    if (pid == 0)
        _exit(child(path, o, shared));
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    *m = *shared;
    munmap(shared, sizeof *shared);
    if (WIFSIGNALED(st)) {
        m->valid = 0;
        snprintf(m->why, sizeof m->why, "the replay died of signal %d (%s)", WTERMSIG(st),
                 strsignal(WTERMSIG(st)));
        return m->status = 0;
    }
    return m->status = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
