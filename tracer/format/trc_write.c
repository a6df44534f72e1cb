/* trc_write.c - writes a dmm_trace_t as a binary .trc.
 *
 * The .trc writer is the offline one (dmm convert): it has the whole trace in
 * memory, so it groups each thread's records into blocks of at most
 * DMM_TRC_WRITE_BLOCK_RECS, keeping every record's seq, and puts the stack
 * and module tables in blocks of their own ahead of the records.  The
 * recording writer in the traced process is preload/recorder/recorder.c.
 */
#include "tracer/format/trc_write.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "tracer/base/file.h"
#include "tracer/base/hash.h"
#include "tracer/format/crc32.h"
#include "tracer/format/trcenc.h"
#include "tracer/format/trc_read.h"

typedef unsigned long long ull;

/* Little-endian stores: the file format is little-endian on any host. */
static void st16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void st32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void st64(uint8_t *p, uint64_t v)
{
    st32(p, (uint32_t)v);
    st32(p + 4, (uint32_t)(v >> 32));
}

static void st_rec(uint8_t *p, const dmm_trc_rec_t *r)
{
    p[0] = r->op;
    p[1] = r->flags;
    st16(p + 2, r->reserved);
    st32(p + 4, r->stack);
    st64(p + 8, r->seq);
    st64(p + 16, r->time);
    st64(p + 24, r->size);
    st64(p + 32, r->arg);
    st64(p + 40, r->ptr_in);
    st64(p + 48, r->ptr_out);
    st64(p + 56, r->errnum);
}

/* The state of one .trc being written. */
typedef struct wr {
    FILE       *out;
    const char *name;
    dmm_err_t  *err;
    int         compress;
    unsigned    version;    /* 1 to 4 (trcfmt.h) */
    ZSTD_CCtx  *cctx;
    uint8_t    *raw;        /* the block being filled */
    size_t      used;       /* bytes of it used */
    uint32_t    tid;        /* its thread */
    dmm_trc2_state_t st;    /* v2: where its records stand */
    uint8_t    *z;          /* compressed payload */
    size_t      zcap;
} wr_t;

/* A block's room: BLOCK_RECS v1 slots (records plus continuation slots),
 * and as many bytes for v2. */
#define BLOCK_BYTES ((size_t)DMM_TRC_WRITE_BLOCK_RECS * sizeof(dmm_trc_rec_t))

static int wr_io(wr_t *w)
{
    return dmm_err_set(w->err, "%s: write error: %s", w->name, strerror(errno ? errno : EIO));
}

/* Write out the block being filled, if it holds anything. */
static int flush_block(wr_t *w)
{
    if (w->used == 0)
        return 0;
    size_t rawlen = w->used;
    const uint8_t *payload = w->raw;
    size_t stored = rawlen;
    uint32_t comp = DMM_TRC_COMP_NONE;
    if (w->compress) {
        size_t bound = ZSTD_compressBound(rawlen);
        if (bound > w->zcap) {
            uint8_t *z = realloc(w->z, bound);
            if (!z)
                return dmm_err_set(w->err, "%s: out of memory", w->name);
            w->z = z;
            w->zcap = bound;
        }
        if (!w->cctx && !(w->cctx = ZSTD_createCCtx()))
            return dmm_err_set(w->err, "%s: out of memory", w->name);
        size_t n = ZSTD_compressCCtx(w->cctx, w->z, w->zcap, w->raw, rawlen, 3);
        if (ZSTD_isError(n))
            return dmm_err_set(w->err, "%s: zstd: %s", w->name, ZSTD_getErrorName(n));
        payload = w->z;
        stored = n;
        comp = DMM_TRC_COMP_ZSTD;
    }
    uint8_t h[sizeof(dmm_trc_block_t)] = {0};
    st32(h, DMM_TRC_BLOCK_MAGIC);
    st32(h + 4, w->tid);
    st32(h + 8, (uint32_t)stored);
    st32(h + 12, (uint32_t)rawlen);
    st32(h + 16, comp);
    st32(h + 20, dmm_crc32(0, payload, stored));
    uint32_t hcrc = dmm_crc32(0, h, 24);   /* flags (offset 28) 0: every block starts afresh */
    st32(h + 24, w->version >= 2 ? dmm_crc32(hcrc, h + 28, 4) : hcrc);
    errno = 0;
    if (fwrite(h, sizeof h, 1, w->out) != 1 || fwrite(payload, 1, stored, w->out) != stored)
        return wr_io(w);
    w->used = 0;
    memset(&w->st, 0, sizeof w->st);
    return 0;
}

/* Make room for a record and n bytes after it (v1: n in whole slots) of
 * thread tid, starting a new block when the current one is full or
 * belongs to another thread. */
static int need_room(wr_t *w, uint32_t tid, size_t n)
{
    size_t rec = w->version >= 2 ? DMM_TRC2_MAX_REC : sizeof(dmm_trc_rec_t);
    if (w->used && (w->tid != tid || w->used + rec + n > BLOCK_BYTES))
        if (flush_block(w))
            return -1;
    w->tid = tid;
    return 0;
}

static void put_rec(wr_t *w, const dmm_trc_rec_t *r)
{
    if (r->op == DMM_TRC_RESIDENT && w->version < 4)
        return;   /* an older version cannot say it */
    if (w->version >= 4) {
        w->used += dmm_trc4_encode(w->raw + w->used, &w->st, r);
        return;
    }
    if (w->version == 3) {
        w->used += dmm_trc3_encode(w->raw + w->used, &w->st, r);
        return;
    }
    if (w->version == 2) {
        w->used += dmm_trc2_encode(w->raw + w->used, &w->st, r);
        return;
    }
    st_rec(w->raw + w->used, r);
    w->used += sizeof(dmm_trc_rec_t);
}

/* The bytes that follow a STACKDEF or MODULE record: v1 pads them to
 * whole slots. */
static uint8_t *put_tail(wr_t *w, size_t n)
{
    uint8_t *f = w->raw + w->used;
    if (w->version == 1)
        n = (n + sizeof(dmm_trc_rec_t) - 1) / sizeof(dmm_trc_rec_t) * sizeof(dmm_trc_rec_t);
    memset(f, 0, n);
    w->used += n;
    return f;
}

static int write_stacks(wr_t *w, const dmm_trace_t *t)
{
    for (size_t id = 1; id < t->nstacks; id++) {
        const dmm_stack_t *s = &t->stacks[id];
        if (id > UINT32_MAX || s->nframes > DMM_TRC_MAX_FRAMES)
            return dmm_err_set(w->err, "%s: stack %zu has %u frames, more than a .trc holds (%u)",
                               w->name, id, s->nframes, DMM_TRC_MAX_FRAMES);
        if (s->nframes && (s->first > t->nframes || t->nframes - s->first < s->nframes))
            return dmm_err_set(w->err, "%s: stack %zu names frames outside the frame table",
                               w->name, id);
        size_t tail = (size_t)s->nframes * 8;
        if (need_room(w, t->pid, tail + sizeof(dmm_trc_rec_t)))
            return -1;
        dmm_trc_rec_t r = { .op = DMM_TRC_STACKDEF, .stack = (uint32_t)id, .size = s->nframes };
        put_rec(w, &r);
        uint8_t *f = put_tail(w, tail);
        for (uint32_t k = 0; k < s->nframes; k++)
            st64(f + 8 * (size_t)k, t->frames[s->first + k]);
    }
    return 0;
}

static int write_modules(wr_t *w, const dmm_trace_t *t)
{
    for (size_t i = 0; i < t->nmodules; i++) {
        const dmm_module_t *m = &t->modules[i];
        const char *path = m->path ? m->path : "";
        size_t plen = strlen(path);
        if (plen > DMM_TRC_MAX_PATH)
            return dmm_err_set(w->err, "%s: module %zu has a path longer than %u bytes",
                               w->name, i, DMM_TRC_MAX_PATH);
        if (need_room(w, t->pid, plen + sizeof(dmm_trc_rec_t)))
            return -1;
        dmm_trc_rec_t r = { .op = DMM_TRC_MODULE, .size = plen, .ptr_in = m->start,
                            .ptr_out = m->end, .arg = m->offset };
        put_rec(w, &r);
        memcpy(put_tail(w, plen), path, plen);
    }
    return 0;
}

/* The records grouped by thread (threads in order of first appearance),
 * each thread's in their order, so by seq: a counting sort on the groups
 * found in a hash table of thread ids, O(n) however many records and
 * threads there are. */
static size_t *group_by_tid(const dmm_trace_t *t)
{
    size_t n = t->nrecs, ngroups = 0;
    size_t *idx = malloc(n * sizeof *idx);
    uint32_t *group = malloc(n * sizeof *group);   /* each record's thread group */
    size_t *start = NULL;
    dmm_u64map_t groups = DMM_U64MAP_INIT;          /* tid -> group */
    if (!idx || !group)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        int added;
        uint64_t *g = dmm_u64map_slot(&groups, t->recs[i].tid, &added);
        if (!g)
            goto fail;
        if (added)
            *g = ngroups++;
        group[i] = (uint32_t)*g;
    }
    start = calloc(ngroups + 1, sizeof *start);
    if (!start)
        goto fail;
    for (size_t i = 0; i < n; i++)
        start[group[i] + 1]++;
    for (size_t g = 0; g < ngroups; g++)
        start[g + 1] += start[g];
    for (size_t i = 0; i < n; i++)
        idx[start[group[i]]++] = i;
    free(start);
    free(group);
    dmm_u64map_free(&groups);
    return idx;
fail:
    free(idx);
    free(group);
    dmm_u64map_free(&groups);
    return NULL;
}

static int write_recs(wr_t *w, const dmm_trace_t *t)
{
    for (size_t i = 0; i < t->nrecs; i++) {
        unsigned op = t->recs[i].op;
        if (!dmm_trc_op_valid(op, DMM_TRC_VERSION) || op == DMM_TRC_STACKDEF ||
            op == DMM_TRC_MODULE)
            return dmm_err_set(w->err, "%s: record %zu (seq %llu) has op %u, which is not a "
                               "call a .trc record can hold", w->name, i,
                               (ull)t->recs[i].seq, op);
    }
    if (t->nrecs == 0)
        return 0;
    size_t *idx = t->nrecs < SIZE_MAX / sizeof(size_t) ? group_by_tid(t) : NULL;
    if (!idx)
        return dmm_err_set(w->err, "%s: out of memory", w->name);
    int rc = 0;
    for (size_t k = 0; k < t->nrecs && rc == 0; k++) {
        const dmm_rec_t *s = &t->recs[idx[k]];
        if ((rc = need_room(w, s->tid, 0)) != 0)
            break;
        dmm_trc_rec_t r = {
            .op = s->op, .flags = s->flags, .reserved = s->reserved, .stack = s->stack,
            .seq = s->seq, .time = s->time, .size = s->size, .arg = s->arg,
            .ptr_in = s->ptr_in, .ptr_out = s->ptr_out,
            .errnum = (uint64_t)(int64_t)s->errnum,
        };
        put_rec(w, &r);
    }
    free(idx);
    return rc;
}

int dmm_write_trc_stream(const dmm_trace_t *t, FILE *out, const char *name, int compress,
                         dmm_err_t *err)
{
    return dmm_write_trc_stream_version(t, out, name, compress, DMM_TRC_VERSION, err);
}

int dmm_write_trc_stream_version(const dmm_trace_t *t, FILE *out, const char *name,
                                 int compress, unsigned version, dmm_err_t *err)
{
    if (version < DMM_TRC_VERSION_MIN || version > DMM_TRC_VERSION)
        return dmm_err_set(err, "%s: no .trc version %u (dmm writes %u to %u)", name, version,
                           DMM_TRC_VERSION_MIN, DMM_TRC_VERSION);
    if (t->cmdline_len > DMM_TRC_MAX_CMDLINE)
        return dmm_err_set(err, "%s: command line of %zu bytes is longer than a .trc holds",
                           name, t->cmdline_len);
    uint32_t flags = t->flags;
    uint32_t source = DMM_FMT_TRC;
    if (t->format != DMM_FMT_TRC) {
        flags |= DMM_TRC_F_CONVERTED | DMM_TRC_F_NOTIME;
        source = (uint32_t)t->format;
    } else if (flags & DMM_TRC_F_CONVERTED) {
        source = DMM_FMT_UNKNOWN;   /* the original source was not kept */
    }
    uint8_t h[sizeof(dmm_trc_header_t)] = {0};
    memcpy(h, DMM_TRC_MAGIC, 8);
    st16(h + 8, (uint16_t)version);
    st16(h + 10, sizeof h);
    st32(h + 12, flags);
    st32(h + 16, t->pid);
    st32(h + 20, t->ppid);
    st32(h + 24, t->clock_id);
    st32(h + 28, t->clock_res_ns);
    st64(h + 32, t->start_realtime_ns);
    st64(h + 40, 0);            /* record times are already relative */
    st32(h + 48, (uint32_t)t->cmdline_len);
    st32(h + 52, t->stack_depth);
    st32(h + 56, source);
    if (version >= 2)
        st32(h + 60, t->time_stride);
    static const uint8_t zeros[8];
    size_t pad = (8 - (sizeof h + t->cmdline_len) % 8) % 8;
    errno = 0;
    if (fwrite(h, sizeof h, 1, out) != 1 ||
        (t->cmdline_len && fwrite(t->cmdline, 1, t->cmdline_len, out) != t->cmdline_len) ||
        fwrite(zeros, 1, pad, out) != pad)
        return dmm_err_set(err, "%s: write error: %s", name, strerror(errno ? errno : EIO));

    wr_t w = { .out = out, .name = name, .err = err, .compress = compress, .version = version };
    /* v2's encoder writes up to 8 bytes past a record's end */
    w.raw = malloc(BLOCK_BYTES + 8);
    if (!w.raw)
        return dmm_err_set(err, "%s: out of memory", name);
    int rc = write_stacks(&w, t);
    if (rc == 0)
        rc = write_modules(&w, t);
    if (rc == 0)
        rc = write_recs(&w, t);
    if (rc == 0)
        rc = flush_block(&w);
    errno = 0;
    if (rc == 0 && fflush(out) != 0)
        rc = wr_io(&w);
    free(w.raw);
    free(w.z);
    ZSTD_freeCCtx(w.cctx);
    return rc;
}

static int write_file(const dmm_trace_t *t, const char *path, int compress, int force,
                      unsigned version, dmm_err_t *err)
{
    dmm_outfile_t o;
    if (dmm_out_open(&o, path, force, err))
        return -1;
    if (dmm_write_trc_stream_version(t, o.fp, path, compress, version, err)) {
        dmm_out_abort(&o);
        return -1;
    }
    return dmm_out_commit(&o, err);
}

int dmm_write_trc_ex(const dmm_trace_t *t, const char *path, int compress, int force,
                     dmm_err_t *err)
{
    return write_file(t, path, compress, force, DMM_TRC_VERSION, err);
}

int dmm_write_trc_version(const dmm_trace_t *t, const char *path, int compress,
                          unsigned version, dmm_err_t *err)
{
    return write_file(t, path, compress, 0, version, err);
}

int dmm_write_trc(const dmm_trace_t *t, const char *path, int compress, dmm_err_t *err)
{
    return dmm_write_trc_ex(t, path, compress, 0, err);
}

/* The header of a block at b (32 bytes there), its payload at b + 32. */
static int compress_block(FILE *out, const uint8_t *b, unsigned version, int level,
                          ZSTD_CCtx *cctx, uint8_t **z, size_t *zcap)
{
    uint32_t stored = (uint32_t)b[8] | (uint32_t)b[9] << 8 | (uint32_t)b[10] << 16 |
                      (uint32_t)b[11] << 24;
    uint32_t comp = b[16];
    if (comp != DMM_TRC_COMP_NONE || stored < 1024)
        return fwrite(b, 1, 32 + (size_t)stored, out) == 32 + (size_t)stored ? 0 : -1;
    size_t bound = ZSTD_compressBound(stored);
    if (bound > *zcap) {
        uint8_t *nz = realloc(*z, bound);
        if (!nz)
            return -1;
        *z = nz;
        *zcap = bound;
    }
    size_t n = ZSTD_compressCCtx(cctx, *z, *zcap, b + 32, stored, level);
    if (ZSTD_isError(n) || n >= stored)
        return fwrite(b, 1, 32 + (size_t)stored, out) == 32 + (size_t)stored ? 0 : -1;
    uint8_t h[32];
    memcpy(h, b, 32);
    st32(h + 8, (uint32_t)n);
    st32(h + 16, DMM_TRC_COMP_ZSTD);
    st32(h + 20, dmm_crc32(0, *z, n));
    uint32_t hcrc = dmm_crc32(0, h, 24);
    st32(h + 24, version >= 2 ? dmm_crc32(hcrc, h + 28, 4) : hcrc);
    return fwrite(h, 1, 32, out) == 32 && fwrite(*z, 1, n, out) == n ? 0 : -1;
}

static int ignore_call(void *ctx, const dmm_rec_t *r)
{
    (void)ctx;
    (void)r;
    return 0;
}

int dmm_trc_compress_file(const char *path, int level, size_t *before, size_t *after,
                          dmm_err_t *err)
{
    uint8_t *buf;
    size_t len;
    if (dmm_read_file(path, &buf, &len, err))
        return -1;
    /* it must read, whole or cut short, before anything is rewritten (a
     * scan decodes every block but holds one per thread, not the calls) */
    dmm_trace_t t;
    memset(&t, 0, sizeof t);
    if (dmm_scan_trc(path, buf, len, &t, ignore_call, NULL, err)) {
        dmm_trace_free(&t);
        free(buf);
        return -1;
    }
    dmm_trace_free(&t);
    unsigned version = (unsigned)(buf[8] | buf[9] << 8);
    size_t off = ((size_t)(buf[10] | buf[11] << 8) +
                  ((size_t)buf[48] | (size_t)buf[49] << 8 | (size_t)buf[50] << 16 |
                   (size_t)buf[51] << 24) + 7) & ~(size_t)7;
    dmm_outfile_t o;
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    uint8_t *z = NULL;
    size_t zcap = 0;
    int rc = -1;
    if (!cctx || dmm_out_open(&o, path, 1, err)) {
        if (!cctx)
            dmm_err_set(err, "%s: out of memory", path);
        goto done;
    }
    errno = 0;
    int bad = fwrite(buf, 1, off, o.fp) != off;
    while (!bad && off + 32 <= len) {
        size_t stored = (size_t)buf[off + 8] | (size_t)buf[off + 9] << 8 |
                        (size_t)buf[off + 10] << 16 | (size_t)buf[off + 11] << 24;
        if (len - off - 32 < stored)
            break;   /* the cut-short tail, copied below */
        bad = compress_block(o.fp, buf + off, version, level, cctx, &z, &zcap) != 0;
        off += 32 + stored;
    }
    if (!bad && off < len)
        bad = fwrite(buf + off, 1, len - off, o.fp) != len - off;
    if (bad) {
        dmm_err_set(err, "%s: write error: %s", path, strerror(errno ? errno : EIO));
        dmm_out_abort(&o);
        goto done;
    }
    long end = ftell(o.fp);
    struct stat was;
    int keep_mode = stat(path, &was) == 0;
    if (dmm_out_commit(&o, err))
        goto done;
    if (keep_mode)
        chmod(path, was.st_mode & 07777);   /* a recorder's 0600 stays 0600 */
    if (before)
        *before = len;
    if (after)
        *after = end > 0 ? (size_t)end : 0;
    rc = 0;
done:
    ZSTD_freeCCtx(cctx);
    free(z);
    free(buf);
    return rc;
}
