/* trc_write.c - writes a dmm_trace_t as a binary .trc or as a readable text
 * dump, and the dmm_outfile_t helper that makes an output appear only once
 * it is complete.
 *
 * The .trc writer is the offline one (dmm convert): it has the whole trace in
 * memory, so it groups each thread's records into blocks of at most
 * DMM_TRC_WRITE_BLOCK_RECS, keeping every record's seq, and puts the stack
 * and module tables in blocks of their own ahead of the records.  The
 * recording writer in the traced process is tracer/trace_writer.c.
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
    ZSTD_CCtx  *cctx;
    uint8_t    *raw;        /* the block being filled */
    size_t      nslots;     /* slots used in raw */
    uint32_t    tid;        /* its thread */
    uint8_t    *z;          /* compressed payload */
    size_t      zcap;
} wr_t;

/* Room for this many slots in a block: records plus continuation slots. */
#define BLOCK_SLOTS DMM_TRC_WRITE_BLOCK_RECS

static int wr_io(wr_t *w)
{
    return dmm_err_set(w->err, "%s: write error: %s", w->name, strerror(errno ? errno : EIO));
}

/* Write out the block being filled, if it holds anything. */
static int flush_block(wr_t *w)
{
    if (w->nslots == 0)
        return 0;
    size_t rawlen = w->nslots * sizeof(dmm_trc_rec_t);
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
    st32(h + 24, dmm_crc32(0, h, 24));
    errno = 0;
    if (fwrite(h, sizeof h, 1, w->out) != 1 || fwrite(payload, 1, stored, w->out) != stored)
        return wr_io(w);
    w->nslots = 0;
    return 0;
}

/* Make room for n slots of thread tid's data, starting a new block when the
 * current one is full or belongs to another thread. */
static int need_slots(wr_t *w, uint32_t tid, size_t n)
{
    if (w->nslots && (w->tid != tid || w->nslots + n > BLOCK_SLOTS))
        if (flush_block(w))
            return -1;
    w->tid = tid;
    return 0;
}

static int put_rec(wr_t *w, const dmm_trc_rec_t *r)
{
    st_rec(w->raw + w->nslots * sizeof(dmm_trc_rec_t), r);
    w->nslots++;
    return 0;
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
        size_t cont = (s->nframes + 7) / 8;
        if (need_slots(w, t->pid, 1 + cont))
            return -1;
        dmm_trc_rec_t r = { .op = DMM_TRC_STACKDEF, .stack = (uint32_t)id, .size = s->nframes };
        put_rec(w, &r);
        uint8_t *f = w->raw + w->nslots * sizeof(dmm_trc_rec_t);
        memset(f, 0, cont * sizeof(dmm_trc_rec_t));
        for (uint32_t k = 0; k < s->nframes; k++)
            st64(f + 8 * (size_t)k, t->frames[s->first + k]);
        w->nslots += cont;
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
        size_t cont = (plen + 63) / 64;
        if (need_slots(w, t->pid, 1 + cont))
            return -1;
        dmm_trc_rec_t r = { .op = DMM_TRC_MODULE, .size = plen, .ptr_in = m->start,
                            .ptr_out = m->end, .arg = m->offset };
        put_rec(w, &r);
        uint8_t *f = w->raw + w->nslots * sizeof(dmm_trc_rec_t);
        memset(f, 0, cont * sizeof(dmm_trc_rec_t));
        memcpy(f, path, plen);
        w->nslots += cont;
    }
    return 0;
}

/* The records grouped by thread (threads in order of first appearance),
 * each thread's in their order, so by seq: a counting sort on a small hash
 * of the thread ids, O(n) however many records and threads there are. */
static size_t *group_by_tid(const dmm_trace_t *t)
{
    size_t n = t->nrecs, cap = 64, ngroups = 0;
    size_t *idx = malloc(n * sizeof *idx);
    uint32_t *group = malloc(n * sizeof *group);   /* each record's thread group */
    uint32_t *keys = NULL, *vals = NULL;            /* tid -> group, open addressing */
    size_t *start = NULL;
    if (!idx || !group)
        goto fail;
    for (;;) {   /* size the table for the threads found, growing when half full */
        free(keys);
        free(vals);
        keys = malloc(cap * sizeof *keys);
        vals = malloc(cap * sizeof *vals);
        if (!keys || !vals)
            goto fail;
        memset(vals, 0xff, cap * sizeof *vals);
        ngroups = 0;
        size_t i;
        for (i = 0; i < n; i++) {
            uint32_t tid = t->recs[i].tid;
            size_t h = (tid * 2654435761u) & (cap - 1);
            while (vals[h] != UINT32_MAX && keys[h] != tid)
                h = (h + 1) & (cap - 1);
            if (vals[h] == UINT32_MAX) {
                if (2 * (ngroups + 1) > cap)
                    break;
                keys[h] = tid;
                vals[h] = (uint32_t)ngroups++;
            }
            group[i] = vals[h];
        }
        if (i == n)
            break;
        cap *= 2;
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
    free(keys);
    free(vals);
    free(group);
    return idx;
fail:
    free(idx);
    free(group);
    free(keys);
    free(vals);
    return NULL;
}

static int write_recs(wr_t *w, const dmm_trace_t *t)
{
    for (size_t i = 0; i < t->nrecs; i++) {
        unsigned op = t->recs[i].op;
        if (op == 0 || op >= DMM_TRC_OP_MAX || op == DMM_TRC_STACKDEF || op == DMM_TRC_MODULE)
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
        if ((rc = need_slots(w, s->tid, 1)) != 0)
            break;
        dmm_trc_rec_t r = {
            .op = s->op, .flags = s->flags, .reserved = s->reserved, .stack = s->stack,
            .seq = s->seq, .time = s->time, .size = s->size, .arg = s->arg,
            .ptr_in = s->ptr_in, .ptr_out = s->ptr_out,
            .errnum = (uint64_t)(int64_t)s->errnum,
        };
        rc = put_rec(w, &r);
    }
    free(idx);
    return rc;
}

int dmm_write_trc_stream(const dmm_trace_t *t, FILE *out, const char *name, int compress,
                         dmm_err_t *err)
{
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
    st16(h + 8, DMM_TRC_VERSION);
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
    static const uint8_t zeros[8];
    size_t pad = (8 - (sizeof h + t->cmdline_len) % 8) % 8;
    errno = 0;
    if (fwrite(h, sizeof h, 1, out) != 1 ||
        (t->cmdline_len && fwrite(t->cmdline, 1, t->cmdline_len, out) != t->cmdline_len) ||
        fwrite(zeros, 1, pad, out) != pad)
        return dmm_err_set(err, "%s: write error: %s", name, strerror(errno ? errno : EIO));

    wr_t w = { .out = out, .name = name, .err = err, .compress = compress };
    w.raw = malloc(BLOCK_SLOTS * sizeof(dmm_trc_rec_t));
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

int dmm_write_trc_ex(const dmm_trace_t *t, const char *path, int compress, int force,
                     dmm_err_t *err)
{
    dmm_outfile_t o;
    if (dmm_out_open(&o, path, force, err))
        return -1;
    if (dmm_write_trc_stream(t, o.fp, path, compress, err)) {
        dmm_out_abort(&o);
        return -1;
    }
    return dmm_out_commit(&o, err);
}

int dmm_write_trc(const dmm_trace_t *t, const char *path, int compress, dmm_err_t *err)
{
    return dmm_write_trc_ex(t, path, compress, 0, err);
}

/* ---- the readable dump ---- */

/* What the arg field means for an op, or NULL when it means nothing. */
static const char *arg_name(unsigned op)
{
    switch (op) {
    case DMM_TRC_CALLOC: case DMM_TRC_REALLOCARRAY:
        return "nmemb";
    case DMM_TRC_MEMALIGN: case DMM_TRC_POSIX_MEMALIGN: case DMM_TRC_ALIGNED_ALLOC:
    case DMM_TRC_VALLOC: case DMM_TRC_PVALLOC:
        return "align";
    default:
        return NULL;
    }
}

/* Print bytes as text: arguments separated by spaces, anything unprintable
 * as \xNN so that a hostile command line cannot break the dump's lines. */
static void put_escaped(FILE *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\0')
            fputc(i + 1 < n ? ' ' : '\n', out);
        else if (c < 0x20 || c >= 0x7f || c == '\\')
            fprintf(out, "\\x%02x", c);
        else
            fputc(c, out);
    }
    if (n == 0 || s[n - 1] != '\0')
        fputc('\n', out);
}

int dmm_write_text(const dmm_trace_t *t, FILE *out)
{
    fprintf(out, "# dmm trace dump\n");
    if (t->path) {
        fputs("# file: ", out);
        put_escaped(out, t->path, strlen(t->path));
    }
    fprintf(out, "# format: %s\n", dmm_format_name(t->format));
    fprintf(out, "# pid: %u ppid: %u\n", t->pid, t->ppid);
    fputs("# cmdline: ", out);
    put_escaped(out, t->cmdline ? t->cmdline : "", t->cmdline ? t->cmdline_len : 0);
    fprintf(out, "# flags:%s%s%s%s\n", t->flags & DMM_TRC_F_CONVERTED ? " converted" : "",
            t->flags & DMM_TRC_F_FORKED ? " forked" : "",
            t->flags & DMM_TRC_F_NOTIME ? " notime" : "", t->flags ? "" : " none");
    fprintf(out, "# clock: id %u resolution %u ns, started at %llu ns (realtime)\n",
            t->clock_id, t->clock_res_ns, (ull)t->start_realtime_ns);
    fprintf(out, "# stack depth: %u\n", t->stack_depth);
    fprintf(out, "# records: %zu\n", t->nrecs);
    fprintf(out, "# stacks: %zu\n", t->nstacks > 0 ? t->nstacks - 1 : 0);
    fprintf(out, "# modules: %zu\n", t->nmodules);
    if (t->truncated) {
        fputs("# truncated: ", out);
        put_escaped(out, t->note, strlen(t->note));
    }
    for (size_t i = 0; i < t->nmodules; i++) {
        const dmm_module_t *m = &t->modules[i];
        fprintf(out, "# module 0x%llx-0x%llx offset 0x%llx ", (ull)m->start, (ull)m->end,
                (ull)m->offset);
        put_escaped(out, m->path ? m->path : "", m->path ? strlen(m->path) : 0);
    }
    fprintf(out, "# seq time_ns tid op size= [nmemb=|align=] in= out= [failed errno=] [stack=]\n");
    for (size_t i = 0; i < t->nrecs; i++) {
        const dmm_rec_t *r = &t->recs[i];
        fprintf(out, "%llu %llu %u %s size=%llu", (ull)r->seq, (ull)r->time, r->tid,
                dmm_op_name(r->op), (ull)r->size);
        const char *an = arg_name(r->op);
        if (an)
            fprintf(out, " %s=%llu", an, (ull)r->arg);
        else if (r->arg)
            fprintf(out, " arg=%llu", (ull)r->arg);
        fprintf(out, " in=0x%llx out=0x%llx", (ull)r->ptr_in, (ull)r->ptr_out);
        if (r->flags & DMM_TRC_RF_FAILED)
            fprintf(out, " failed errno=%d", r->errnum);
        if (r->stack)
            fprintf(out, " stack=%u", r->stack);
        fputc('\n', out);
    }
    for (size_t id = 1; id < t->nstacks; id++) {
        const dmm_stack_t *s = &t->stacks[id];
        fprintf(out, "# stack %zu:", id);
        for (uint32_t k = 0; k < s->nframes && s->first + k < t->nframes; k++)
            fprintf(out, " 0x%llx", (ull)t->frames[s->first + k]);
        fputc('\n', out);
    }
    if (fflush(out) != 0 || ferror(out))
        return -1;
    return 0;
}

/* ---- outputs that appear only when complete ---- */

int dmm_out_open(dmm_outfile_t *o, const char *path, int force, dmm_err_t *err)
{
    memset(o, 0, sizeof *o);
    struct stat st;
    if (stat(path, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
        /* nothing to replace and nowhere to rename: write straight to it */
        o->path = strdup(path);
        o->fp = o->path ? fopen(path, "wb") : NULL;
        if (!o->fp) {
            int e = o->path ? errno : ENOMEM;
            free(o->path);
            o->path = NULL;
            return dmm_err_set(err, "%s: cannot open: %s", path, strerror(e));
        }
        return 0;
    }
    /* Say so before doing any work; the final link decides for sure. */
    if (!force && lstat(path, &st) == 0)
        return dmm_err_set(err, "%s: exists; not replacing it (use --force)", path);
    char *d = strdup(path), *b = strdup(path);
    if (!d || !b) {
        free(d);
        free(b);
        return dmm_err_set(err, "%s: out of memory", path);
    }
    const char *dir = dirname(d), *base = basename(b);
    size_t n = strlen(dir) + strlen(base) + 16;
    o->tmp = malloc(n);
    o->path = strdup(path);
    if (o->tmp)
        snprintf(o->tmp, n, "%s/.%s.XXXXXX", dir, base);
    free(d);
    free(b);
    if (!o->tmp || !o->path) {
        free(o->tmp);
        free(o->path);
        return dmm_err_set(err, "%s: out of memory", path);
    }
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        int e = errno;
        free(o->tmp);
        free(o->path);
        return dmm_err_set(err, "%s: cannot create a file next to it: %s", path, strerror(e));
    }
    o->fp = fdopen(fd, "wb");
    if (!o->fp) {
        int e = errno;
        close(fd);
        unlink(o->tmp);
        free(o->tmp);
        free(o->path);
        return dmm_err_set(err, "%s: %s", path, strerror(e));
    }
    o->force = force;
    return 0;
}

void dmm_out_abort(dmm_outfile_t *o)
{
    if (o->fp)
        fclose(o->fp);
    if (o->tmp)
        unlink(o->tmp);
    free(o->tmp);
    free(o->path);
    memset(o, 0, sizeof *o);
}

int dmm_out_commit(dmm_outfile_t *o, dmm_err_t *err)
{
    int e = 0;
    errno = 0;
    if (fflush(o->fp) != 0 || ferror(o->fp))
        e = errno ? errno : EIO;
    if (!o->tmp) {   /* a device or FIFO, written directly */
        if (fclose(o->fp) != 0 && !e)
            e = errno ? errno : EIO;
        o->fp = NULL;
        int rc = e ? dmm_err_set(err, "%s: write error: %s", o->path, strerror(e)) : 0;
        dmm_out_abort(o);
        return rc;
    }
    /* mkstemp made it 0600; give it the mode a new file would get */
    mode_t um = umask(0);
    umask(um);
    if (!e && fchmod(fileno(o->fp), 0666 & ~um) != 0)
        e = errno;
    if (fclose(o->fp) != 0 && !e)
        e = errno ? errno : EIO;
    o->fp = NULL;
    if (e) {
        dmm_err_set(err, "%s: write error: %s", o->path, strerror(e));
        dmm_out_abort(o);
        return -1;
    }
    int rc = 0;
    if (o->force) {
        if (rename(o->tmp, o->path) != 0)
            rc = dmm_err_set(err, "%s: cannot replace: %s", o->path, strerror(errno));
        else {
            free(o->tmp);   /* it has its final name now */
            o->tmp = NULL;
        }
    } else if (link(o->tmp, o->path) != 0) {
        /* link refuses to replace, atomically; file systems without hard
         * links get a check and a rename instead */
        int le = errno;
        struct stat st;
        if (le == EEXIST || lstat(o->path, &st) == 0)
            rc = dmm_err_set(err, "%s: exists; not replacing it (use --force)", o->path);
        else if (le != EPERM && le != ENOTSUP && le != EMLINK && le != ENOSYS)
            rc = dmm_err_set(err, "%s: cannot create: %s", o->path, strerror(le));
        else if (rename(o->tmp, o->path) != 0)
            rc = dmm_err_set(err, "%s: cannot create: %s", o->path, strerror(errno));
        else {
            free(o->tmp);
            o->tmp = NULL;
        }
    }
    dmm_out_abort(o);   /* removes the temporary name, if it still has one */
    return rc;
}
