/* trc_read.c - the reader of dmm's binary trace files (.trc).
 *
 * Turns a whole file held in memory into a dmm_trace_t (dmm_read_trc), or
 * hands its calls one at a time, in order, to a reader that does not keep
 * them (dmm_scan_trc, below).  The layout is the one
 * in trcfmt.h: a header, then self-delimiting blocks.  A file that ends inside
 * a block is what a killed process leaves behind, so it reads up to its last
 * whole block and says so in t->note; a block whose header is all there but
 * wrong is corruption, and an error naming its byte offset.
 *
 * Every length in the file is checked against what is left of the file (or,
 * for zstd blocks, against DMM_TRC_MAX_BLOCK) before anything is allocated
 * for it, so a hostile file cannot make the reader allocate without bound.
 */
#include "tracer/format/trace.h"
#include "tracer/base/hash.h"
#include "tracer/format/crc32.h"
#include "tracer/format/trcenc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

/* Stack ids come from the writer's counter; more than this is corruption. */
#define MAX_STACK_ID (16u << 20)

typedef unsigned long long ull;

/* Little-endian loads from unaligned bytes: the buffer has any alignment. */
static uint16_t ld16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t ld32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t ld64(const uint8_t *p) { return ld32(p) | (uint64_t)ld32(p + 4) << 32; }

/* A record slot decoded from its 64 bytes. */
static void ld_rec(const uint8_t *p, dmm_trc_rec_t *r)
{
    r->op = p[0];
    r->flags = p[1];
    r->reserved = ld16(p + 2);
    r->stack = ld32(p + 4);
    r->seq = ld64(p + 8);
    r->time = ld64(p + 16);
    r->size = ld64(p + 24);
    r->arg = ld64(p + 32);
    r->ptr_in = ld64(p + 40);
    r->ptr_out = ld64(p + 48);
    r->errnum = ld64(p + 56);
}

/* What the reader is doing, shared by the helpers below. */
typedef struct rd {
    const char  *name;
    dmm_trace_t *t;
    dmm_err_t   *err;
    size_t       len;          /* file length */
    uint32_t     max_stack;    /* the largest stack id the file may use */
    size_t       capstacks, capframes, capmodules;
    uint8_t     *zbuf;         /* decompression buffer, reused across blocks */
    size_t       zcap;
    unsigned     version;      /* of the file */
    dmm_u64map_t threads;      /* v2: tid -> index in states */
    dmm_trc2_state_t *states;  /* v2: each thread's stream after its last block */
    size_t       nstates, capstates;
    struct recbuf *into;       /* scanning: calls go here, not into t, */
    int (*sync_fn)(void *, const dmm_rec_t *);   /* and clock syncs here at once */
    void        *sync_ctx;
} rd_t;

/* A block's calls, decoded, as a scan holds them until their turn. */
typedef struct recbuf {
    dmm_rec_t *v;
    size_t     n, cap, at;     /* at: the next one to hand out */
} recbuf_t;

/* Grow an array to hold at least want elements; 0 or -1 (out of memory). */
static int grow(void **arr, size_t *cap, size_t want, size_t elem)
{
    if (want <= *cap)
        return 0;
    size_t n = *cap ? *cap : 16;
    while (n < want)
        n *= 2;
    if (n > SIZE_MAX / elem)
        return -1;
    void *p = realloc(*arr, n * elem);
    if (!p)
        return -1;
    /* zero the new part: stacks never defined read as empty stacks */
    memset((uint8_t *)p + *cap * elem, 0, (n - *cap) * elem);
    *arr = p;
    *cap = n;
    return 0;
}

/* Make stacks[0 .. id] exist (undefined ones empty). */
static int need_stack(rd_t *r, uint32_t id)
{
    dmm_trace_t *t = r->t;
    if ((size_t)id < t->nstacks)
        return 0;
    if (grow((void **)&t->stacks, &r->capstacks, (size_t)id + 1, sizeof *t->stacks))
        return -1;
    t->nstacks = (size_t)id + 1;
    return 0;
}

/* Where a fault inside a block's payload is: a file offset when the payload
 * is stored as is, else the block's offset and the offset in its raw data. */
static int rec_err(rd_t *r, uint64_t boff, int zstd, size_t roff, const char *what, ull val)
{
    if (zstd)
        return dmm_err_set(r->err, "%s: offset %llu: zstd block, raw offset %zu: %s %llu",
                           r->name, (ull)boff, roff, what, val);
    return dmm_err_set(r->err, "%s: offset %llu: %s %llu", r->name,
                       (ull)(boff + sizeof(dmm_trc_block_t) + roff), what, val);
}

/* Stack id's frames (nf of them, 8 bytes each at f): the first
 * definition wins (a writer may repeat one, after a fork say, and keeping
 * one bounds the frames to the file).  0, or -1 out of memory. */
static int def_stack(rd_t *r, uint32_t id, uint32_t nf, const uint8_t *f)
{
    dmm_trace_t *t = r->t;
    if (need_stack(r, id))
        return -1;
    if (t->stacks[id].nframes == 0 && nf > 0) {
        if (grow((void **)&t->frames, &r->capframes, t->nframes + nf, sizeof *t->frames))
            return -1;
        t->stacks[id].first = t->nframes;
        t->stacks[id].nframes = nf;
        for (uint32_t k = 0; k < nf; k++)
            t->frames[t->nframes++] = ld64(f + 8 * (size_t)k);
    }
    return 0;
}

/* A module: rec's range and offset, its path the plen bytes at path. */
static int def_module(rd_t *r, const dmm_trc_rec_t *rec, const uint8_t *path, size_t plen)
{
    dmm_trace_t *t = r->t;
    if (grow((void **)&t->modules, &r->capmodules, t->nmodules + 1, sizeof *t->modules))
        return -1;
    char *s = malloc(plen + 1);
    if (!s)
        return -1;
    memcpy(s, path, plen);
    s[plen] = '\0';
    dmm_module_t *m = &t->modules[t->nmodules++];
    m->start = rec->ptr_in;
    m->end = rec->ptr_out;
    m->offset = rec->arg;
    m->path = s;
    return 0;
}

/* A call record of thread tid into the trace: 0, 1 for an absurd stack id,
 * -1 out of memory. */
static int put_call(rd_t *r, const dmm_trc_rec_t *rec, uint32_t tid)
{
    dmm_trace_t *t = r->t;
    if (rec->stack > r->max_stack)
        return 1;
    /* Keep stacks[] covering every id a record names, even when the
     * definition was lost with the end of a cut-short file. */
    if (rec->stack && need_stack(r, rec->stack))
        return -1;
    if (rec->op == DMM_TRC_CLOCKSYNC && rec->size > t->peak_rss)
        t->peak_rss = rec->size;
    if (rec->op == DMM_TRC_CLOCKSYNC && rec->ptr_in > t->cpu_ns)
        t->cpu_ns = rec->ptr_in;
    if (rec->op == DMM_TRC_CLOCKSYNC && rec->time > t->last_sync_ns)
        t->last_sync_ns = rec->time;   /* ns, also where the calls' clock is the TSC */
    dmm_rec_t *d, sync;
    if (r->into && rec->op == DMM_TRC_CLOCKSYNC) {
        /* not a call, and numbered when its block was begun, perhaps after
         * the call that follows it took its seq: it would stand out of the
         * thread's order, so it goes to the scan's reader as it is met */
        d = &sync;
    } else if (r->into) {
        recbuf_t *b = r->into;
        if (grow((void **)&b->v, &b->cap, b->n + 1, sizeof *b->v))
            return -1;
        d = &b->v[b->n++];
    } else if (!(d = dmm_trace_push(t))) {
        return -1;
    }
    d->op = rec->op;
    d->flags = rec->flags;
    d->reserved = rec->reserved;
    d->tid = tid;
    d->stack = rec->stack;
    d->errnum = (int32_t)rec->errnum;
    d->seq = rec->seq;
    d->time = rec->time;
    d->size = rec->size;
    d->arg = rec->arg;
    d->ptr_in = rec->ptr_in;
    d->ptr_out = rec->ptr_out;
    if (d == &sync)
        r->sync_fn(r->sync_ctx, d);   /* its return is not asked for */
    return 0;
}

/* Decode the raw_len bytes of one version-1 block's records. */
static int read_payload(rd_t *r, uint64_t boff, uint32_t tid, const uint8_t *p,
                        size_t n, int zstd)
{
    size_t nslots = n / sizeof(dmm_trc_rec_t);
    for (size_t i = 0; i < nslots; i++) {
        size_t roff = i * sizeof(dmm_trc_rec_t);
        dmm_trc_rec_t rec;
        ld_rec(p + roff, &rec);
        if (!dmm_trc_op_valid(rec.op, 1))
            return rec_err(r, boff, zstd, roff, "unknown record op", rec.op);
        if (rec.op == DMM_TRC_STACKDEF) {
            uint32_t id = rec.stack;
            if (id == 0 || id > r->max_stack)
                return rec_err(r, boff, zstd, roff, "absurd stack id", id);
            if (rec.size > DMM_TRC_MAX_FRAMES)
                return rec_err(r, boff, zstd, roff, "stack with too many frames:", rec.size);
            uint32_t nf = (uint32_t)rec.size;
            size_t cont = (nf + 7) / 8;
            if (cont > nslots - 1 - i)
                return rec_err(r, boff, zstd, roff, "stack frames run past the end of the block, frames",
                               nf);
            if (def_stack(r, id, nf, p + roff + sizeof(dmm_trc_rec_t)))
                goto oom;
            i += cont;
            continue;
        }
        if (rec.op == DMM_TRC_MODULE) {
            if (rec.size > DMM_TRC_MAX_PATH)
                return rec_err(r, boff, zstd, roff, "module path too long:", rec.size);
            size_t plen = (size_t)rec.size;
            size_t cont = (plen + 63) / 64;
            if (cont > nslots - 1 - i)
                return rec_err(r, boff, zstd, roff, "module path runs past the end of the block, length",
                               plen);
            if (def_module(r, &rec, p + roff + sizeof(dmm_trc_rec_t), plen))
                goto oom;
            i += cont;
            continue;
        }
        int rc = put_call(r, &rec, tid);
        if (rc > 0)
            return rec_err(r, boff, zstd, roff, "absurd stack id", rec.stack);
        if (rc < 0)
            goto oom;
    }
    return 0;
oom:
    return dmm_err_set(r->err, "%s: offset %llu: out of memory", r->name, (ull)boff);
}

/* Where thread tid's records stand at the end of its last block read; NULL
 * out of memory.  *fresh: the thread had no block yet. */
static dmm_trc2_state_t *thread_state(rd_t *r, uint32_t tid, int *fresh)
{
    uint64_t *slot = dmm_u64map_slot(&r->threads, tid, fresh);
    if (!slot)
        return NULL;
    if (*fresh) {
        if (grow((void **)&r->states, &r->capstates, r->nstates + 1, sizeof *r->states))
            return NULL;
        *slot = r->nstates++;
    }
    return &r->states[*slot];
}

/* Decode the raw_len bytes of one version-2 or -3 block's records (trcenc.h);
 * cont: the block goes on from its thread's previous one. */
static int read_payload2(rd_t *r, uint64_t boff, uint32_t tid, const uint8_t *p, size_t n,
                         int zstd, int cont)
{
    int fresh;
    dmm_trc2_state_t *saved = thread_state(r, tid, &fresh);
    if (!saved)
        goto oom;
    if (cont && fresh)
        return dmm_err_set(r->err, "%s: offset %llu: block goes on from an earlier block of "
                           "thread %u, but the file has none", r->name, (ull)boff, tid);
    dmm_trc2_state_t st = { 0, 0, 0 };
    if (cont)
        st = *saved;
    for (size_t at = 0; at < n;) {
        dmm_trc_rec_t rec;
        const char *why = NULL;
        size_t len = r->version >= 3
                         ? dmm_trc34_decode(p + at, n - at, &st, &rec, &why, r->version)
                         : dmm_trc2_decode(p + at, n - at, &st, &rec, &why);
        if (!len) {
            char what[96];
            snprintf(what, sizeof what, "%s%s", why,
                     strcmp(why, "unknown record op") ? ", op" : "");
            return rec_err(r, boff, zstd, at, what, p[at] & DMM_TRC2_OP_MASK);
        }
        size_t roff = at;
        at += len;
        if (rec.op == DMM_TRC_STACKDEF) {
            if (rec.stack == 0 || rec.stack > r->max_stack)
                return rec_err(r, boff, zstd, roff, "absurd stack id", rec.stack);
            if (rec.size > DMM_TRC_MAX_FRAMES)
                return rec_err(r, boff, zstd, roff, "stack with too many frames:", rec.size);
            if (rec.size * 8 > n - at)
                return rec_err(r, boff, zstd, roff, "stack frames run past the end of the block, frames",
                               rec.size);
            if (def_stack(r, rec.stack, (uint32_t)rec.size, p + at))
                goto oom;
            at += rec.size * 8;
            continue;
        }
        if (rec.op == DMM_TRC_MODULE) {
            if (rec.size > DMM_TRC_MAX_PATH)
                return rec_err(r, boff, zstd, roff, "module path too long:", rec.size);
            if (rec.size > n - at)
                return rec_err(r, boff, zstd, roff, "module path runs past the end of the block, length",
                               rec.size);
            if (def_module(r, &rec, p + at, (size_t)rec.size))
                goto oom;
            at += rec.size;
            continue;
        }
        int rc = put_call(r, &rec, tid);
        if (rc > 0)
            return rec_err(r, boff, zstd, roff, "absurd stack id", rec.stack);
        if (rc < 0)
            goto oom;
    }
    *saved = st;
    return 0;
oom:
    return dmm_err_set(r->err, "%s: offset %llu: out of memory", r->name, (ull)boff);
}

/* A block's header, checked, and where its payload is. */
typedef struct blk {
    uint64_t off;
    uint32_t tid, stored, raw, comp, flags;
} blk_t;

/* The block at offset off, its header and payload checksums verified, into
 * *b.  Returns 1 when the file ends inside it, 0 when it is whole (its end
 * at b->off + its header + b->stored), -1 on error. */
static int check_block(rd_t *r, const uint8_t *buf, uint64_t off, blk_t *b)
{
    const size_t bh = sizeof(dmm_trc_block_t);
    if (r->len - off < bh)
        return 1;
    const uint8_t *h = buf + off;
    uint32_t magic = ld32(h), tid = ld32(h + 4), stored = ld32(h + 8), raw = ld32(h + 12);
    uint32_t comp = ld32(h + 16), crc = ld32(h + 20), hcrc = ld32(h + 24);
    uint32_t bflags = r->version >= 2 ? ld32(h + 28) : 0;
    if (magic != DMM_TRC_BLOCK_MAGIC)
        return dmm_err_set(r->err, "%s: offset %llu: bad block magic 0x%08x (expected 0x%08x)",
                           r->name, (ull)off, magic, DMM_TRC_BLOCK_MAGIC);
    uint32_t want = dmm_crc32(0, h, 24);
    if (r->version >= 2)
        want = dmm_crc32(want, h + 28, 4);
    if (want != hcrc)
        return dmm_err_set(r->err, "%s: offset %llu: block header checksum mismatch",
                           r->name, (ull)(off + 24));
    if (bflags & ~DMM_TRC_BF_CONT)
        return dmm_err_set(r->err, "%s: offset %llu: unknown block flags 0x%x", r->name,
                           (ull)(off + 28), bflags);
    if (stored > DMM_TRC_MAX_BLOCK)
        return dmm_err_set(r->err, "%s: offset %llu: absurd block length %u (at most %u)",
                           r->name, (ull)(off + 8), stored, DMM_TRC_MAX_BLOCK);
    if (raw > DMM_TRC_MAX_BLOCK)
        return dmm_err_set(r->err, "%s: offset %llu: absurd raw block length %u (at most %u)",
                           r->name, (ull)(off + 12), raw, DMM_TRC_MAX_BLOCK);
    if (r->version == 1 && raw % sizeof(dmm_trc_rec_t))
        return dmm_err_set(r->err, "%s: offset %llu: raw block length %u is not a whole number "
                           "of 64-byte records", r->name, (ull)(off + 12), raw);
    if (comp != DMM_TRC_COMP_NONE && comp != DMM_TRC_COMP_ZSTD)
        return dmm_err_set(r->err, "%s: offset %llu: unknown block compression %u",
                           r->name, (ull)(off + 16), comp);
    if (comp == DMM_TRC_COMP_NONE && stored != raw)
        return dmm_err_set(r->err, "%s: offset %llu: uncompressed block with stored length %u "
                           "but raw length %u", r->name, (ull)(off + 8), stored, raw);
    if (r->len - off - bh < stored)
        return 1;   /* the payload is cut short */
    const uint8_t *p = h + bh;
    if (dmm_crc32(0, p, stored) != crc)
        return dmm_err_set(r->err, "%s: offset %llu: block payload checksum mismatch "
                           "(block of %u bytes at offset %llu)", r->name, (ull)(off + bh),
                           stored, (ull)off);
    *b = (blk_t){ .off = off, .tid = tid, .stored = stored, .raw = raw, .comp = comp,
                  .flags = bflags };
    return 0;
}

/* The records of block b (check_block()'s), into the trace or r->into. */
static int decode_block(rd_t *r, const uint8_t *buf, const blk_t *b)
{
    const size_t bh = sizeof(dmm_trc_block_t);
    const uint8_t *p = buf + b->off + bh;
    uint64_t off = b->off;
    uint32_t tid = b->tid, stored = b->stored, raw = b->raw, bflags = b->flags;
    if (b->comp == DMM_TRC_COMP_NONE)
        return r->version == 1 ? read_payload(r, off, tid, p, raw, 0)
                               : read_payload2(r, off, tid, p, raw, 0, bflags & DMM_TRC_BF_CONT);

    /* zstd: exactly one frame filling the payload, that says it holds raw
     * bytes (or does not say), and that gives exactly raw bytes. */
    size_t fsz = ZSTD_findFrameCompressedSize(p, stored);
    if (ZSTD_isError(fsz) || fsz != stored)
        return dmm_err_set(r->err, "%s: offset %llu: zstd block payload is not one whole frame",
                           r->name, (ull)(off + bh));
    unsigned long long csz = ZSTD_getFrameContentSize(p, stored);
    if (csz == ZSTD_CONTENTSIZE_ERROR || (csz != ZSTD_CONTENTSIZE_UNKNOWN && csz != raw))
        return dmm_err_set(r->err, "%s: offset %llu: zstd frame content size does not match "
                           "the block's raw length %u", r->name, (ull)(off + bh), raw);
    if (raw == 0)
        return r->version == 1 ? 0 : read_payload2(r, off, tid, p, 0, 1, bflags & DMM_TRC_BF_CONT);
    if (raw > r->zcap) {
        uint8_t *z = realloc(r->zbuf, raw);
        if (!z)
            return dmm_err_set(r->err, "%s: offset %llu: out of memory", r->name, (ull)off);
        r->zbuf = z;
        r->zcap = raw;
    }
    size_t got = ZSTD_decompress(r->zbuf, raw, p, stored);
    if (ZSTD_isError(got))
        return dmm_err_set(r->err, "%s: offset %llu: zstd block does not decompress: %s",
                           r->name, (ull)(off + bh), ZSTD_getErrorName(got));
    if (got != raw)
        return dmm_err_set(r->err, "%s: offset %llu: zstd block gave %zu bytes, not its raw "
                           "length %u", r->name, (ull)(off + bh), got, raw);
    return r->version == 1 ? read_payload(r, off, tid, r->zbuf, raw, 1)
                           : read_payload2(r, off, tid, r->zbuf, raw, 1, bflags & DMM_TRC_BF_CONT);
}

/* One block at offset off.  Returns 1 when the file ends inside it, 0 when
 * it was read (and *next set past it), -1 on error. */
static int read_block(rd_t *r, const uint8_t *buf, uint64_t off, uint64_t *next)
{
    blk_t b;
    int rc = check_block(r, buf, off, &b);
    if (rc != 0)
        return rc;
    *next = off + sizeof(dmm_trc_block_t) + b.stored;
    return decode_block(r, buf, &b);
}

/* The header and command line of a .trc into t: 0 with *offp where the
 * blocks start and *versionp the file's version, or -1 with err set. */
static int read_header(const char *name, const uint8_t *buf, size_t len, dmm_trace_t *t,
                       dmm_err_t *err, uint64_t *offp, unsigned *versionp)
{
    const size_t hs = sizeof(dmm_trc_header_t);
    t->format = DMM_FMT_TRC;
    if (len == 0)
        return dmm_err_set(err, "%s: offset 0: empty file, not a trace", name);
    if (len < 8 || memcmp(buf, DMM_TRC_MAGIC, 8) != 0)
        return dmm_err_set(err, "%s: offset 0: bad magic, not a dmm trace", name);
    if (len < hs)
        return dmm_err_set(err, "%s: offset %zu: file ends inside the %zu-byte trace header",
                           name, len, hs);
    uint16_t version = ld16(buf + 8), header_size = ld16(buf + 10);
    if (version > DMM_TRC_VERSION)
        return dmm_err_set(err, "%s: offset 8: unsupported trace version %u (this dmm reads "
                           "%u to %u)", name, version, DMM_TRC_VERSION_MIN, DMM_TRC_VERSION);
    if (version == 0)
        return dmm_err_set(err, "%s: offset 8: bad trace version 0", name);
    if (header_size < hs)
        return dmm_err_set(err, "%s: offset 10: header size %u is less than %zu",
                           name, header_size, hs);
    t->flags = ld32(buf + 12);
    t->pid = ld32(buf + 16);
    t->ppid = ld32(buf + 20);
    t->clock_id = ld32(buf + 24);
    t->clock_res_ns = ld32(buf + 28);
    t->start_realtime_ns = ld64(buf + 32);
    uint32_t cmdline_len = ld32(buf + 48);
    t->stack_depth = ld32(buf + 52);
    t->time_stride = version >= 2 ? ld32(buf + 60) : 0;
    if (cmdline_len > DMM_TRC_MAX_CMDLINE)
        return dmm_err_set(err, "%s: offset 48: absurd command line length %u (at most %u)",
                           name, cmdline_len, DMM_TRC_MAX_CMDLINE);
    uint64_t off = (uint64_t)header_size + cmdline_len;
    uint64_t padded = (off + 7) & ~(uint64_t)7;
    if (padded > len)
        return dmm_err_set(err, "%s: offset %zu: file ends inside the trace header "
                           "(header and command line take %llu bytes)", name, len, (ull)padded);
    t->cmdline = malloc((size_t)cmdline_len + 1);
    if (!t->cmdline)
        return dmm_err_set(err, "%s: offset 48: out of memory", name);
    memcpy(t->cmdline, buf + header_size, cmdline_len);
    t->cmdline[cmdline_len] = '\0';
    t->cmdline_len = cmdline_len;
    off = padded;
    *offp = off;
    *versionp = version;
    return 0;
}

/* A reader of the file, its stack id bound set (0, or -1 out of memory). */
static int start_reader(rd_t *r, const char *name, dmm_trace_t *t, dmm_err_t *err,
                        size_t len, unsigned version)
{
    *r = (rd_t){ .name = name, .t = t, .err = err, .len = len, .version = version };
    /* A real trace defines each stack once, in at least 64 bytes, so ids
     * far beyond what the file could hold are corruption; the slack keeps
     * small, cut-short files readable. */
    uint64_t lim = (uint64_t)len + 65536;
    r->max_stack = lim < MAX_STACK_ID ? (uint32_t)lim : MAX_STACK_ID;
    /* stacks[0] is the empty stack, there even when no stacks were recorded */
    return need_stack(r, 0) ? dmm_err_set(err, "%s: out of memory", name) : 0;
}

static void end_reader(rd_t *r)
{
    free(r->zbuf);
    free(r->states);
    dmm_u64map_free(&r->threads);
}

/* What a file cut short inside the block at off says, after n whole blocks. */
static void note_cut(dmm_trace_t *t, const char *name, size_t len, uint64_t off, size_t n)
{
    t->truncated = 1;
    snprintf(t->note, sizeof t->note,
             "%s: cut short at offset %zu (inside block at offset %llu); read %zu whole blocks",
             name, len, (ull)off, n);
}

int dmm_read_trc(const char *name, const uint8_t *buf, size_t len, dmm_trace_t *t, dmm_err_t *err)
{
    uint64_t off;
    unsigned version;
    if (read_header(name, buf, len, t, err, &off, &version) != 0)
        return -1;
    rd_t r;
    int rc = start_reader(&r, name, t, err, len, version);
    size_t nblocks = 0;
    while (rc == 0 && off < len) {
        uint64_t next = off;
        rc = read_block(&r, buf, off, &next);
        if (rc == 1) {
            note_cut(t, name, len, off, nblocks);
            rc = 0;
            break;
        }
        nblocks++;
        off = next;   /* always advances: a block is at least its header */
    }
    end_reader(&r);
    return rc;
}

/* ---- a pass in order, without holding the trace ----------------------
 *
 * The loader reads every record, then sorts them by seq, stably: records
 * of one seq stay in the file's order.  A scan gives the same order block
 * by block: an index of the blocks first (headers and checksums), then a
 * cursor per thread that decodes that thread's blocks one at a time, in
 * the file's order (as the decoder's state needs), and a heap that hands
 * out the least (seq, block, place in the block) of the cursors' next
 * calls.  Each thread's calls come in seq order (the recorder numbers them
 * so), so that is the loader's order (a file where they do not, damaged or
 * made by hand, is said so: the caller reads it whole instead); memory is one decoded block per
 * thread with calls still to come.  CLOCKSYNC records (the loader's, to
 * turn TSC ticks into time) are handed over as their block is decoded,
 * outside that order. */
typedef struct cursor {
    size_t   bi;        /* the block whose calls recs holds */
    recbuf_t recs;
    uint64_t last;      /* the seq of the call it gave last */
    int      gave;
} cursor_t;

typedef struct scan {
    rd_t      r;
    const uint8_t *buf;
    blk_t    *blks;
    size_t    nblks;
    size_t   *next_same;  /* the next block of the same thread; nblks: none */
    cursor_t *cur;
    size_t    ncur;
    size_t   *heap;       /* cursor indices */
    size_t    nheap;
    int       unordered;  /* a thread's calls came out of seq order */
} scan_t;

static int cursor_less(const scan_t *s, size_t a, size_t b)
{
    const cursor_t *x = &s->cur[a], *y = &s->cur[b];
    uint64_t xs = x->recs.v[x->recs.at].seq, ys = y->recs.v[y->recs.at].seq;
    if (xs != ys)
        return xs < ys;
    if (x->bi != y->bi)
        return x->bi < y->bi;
    return x->recs.at < y->recs.at;
}

static void sift_down(scan_t *s, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < s->nheap && cursor_less(s, s->heap[l], s->heap[m]))
            m = l;
        if (l + 1 < s->nheap && cursor_less(s, s->heap[l + 1], s->heap[m]))
            m = l + 1;
        if (m == i)
            return;
        size_t t = s->heap[i];
        s->heap[i] = s->heap[m];
        s->heap[m] = t;
        i = m;
    }
}

/* Fill cursor c from block bi on, skipping blocks without calls: 1 when it
 * holds calls, 0 when its thread has none left, -1 on error. */
static int cursor_fill(scan_t *s, cursor_t *c, size_t bi)
{
    for (; bi < s->nblks; bi = s->next_same[bi]) {
        c->bi = bi;
        c->recs.n = c->recs.at = 0;
        s->r.into = &c->recs;
        int rc = decode_block(&s->r, s->buf, &s->blks[bi]);
        s->r.into = NULL;
        if (rc != 0)
            return -1;
        if (c->recs.n)
            return 1;
    }
    free(c->recs.v);
    c->recs = (recbuf_t){ 0 };
    return 0;
}

/* Index the whole blocks from off on (a cut one ends the file, noted). */
static int index_blocks(scan_t *s, uint64_t off)
{
    size_t cap = 0;
    rd_t *r = &s->r;
    while (off < r->len) {
        blk_t b;
        int rc = check_block(r, s->buf, off, &b);
        if (rc == 1) {
            note_cut(r->t, r->name, r->len, off, s->nblks);
            break;
        }
        if (rc != 0)
            return -1;
        if (grow((void **)&s->blks, &cap, s->nblks + 1, sizeof *s->blks))
            return dmm_err_set(r->err, "%s: out of memory", r->name);
        s->blks[s->nblks++] = b;
        off += sizeof(dmm_trc_block_t) + b.stored;
    }
    return 0;
}

/* next_same[], and a cursor per thread at its first block with calls. */
static int start_cursors(scan_t *s)
{
    rd_t *r = &s->r;
    dmm_u64map_t last = DMM_U64MAP_INIT;   /* tid -> its latest block + 1 */
    s->next_same = malloc((s->nblks + 1) * sizeof *s->next_same);
    size_t *first = malloc((s->nblks + 1) * sizeof *first);
    int rc = s->next_same && first ? 0 : -1;
    size_t nfirst = 0;
    for (size_t i = 0; rc == 0 && i < s->nblks; i++) {
        s->next_same[i] = s->nblks;
        int fresh;
        uint64_t *slot = dmm_u64map_slot(&last, s->blks[i].tid, &fresh);
        if (!slot) {
            rc = -1;
            break;
        }
        if (fresh)
            first[nfirst++] = i;
        else
            s->next_same[*slot - 1] = i;
        *slot = i + 1;
    }
    dmm_u64map_free(&last);
    if (rc == 0) {
        s->cur = calloc(nfirst + 1, sizeof *s->cur);
        s->heap = malloc((nfirst + 1) * sizeof *s->heap);
        rc = s->cur && s->heap ? 0 : -1;
    }
    if (rc != 0) {
        free(first);
        return dmm_err_set(r->err, "%s: out of memory", r->name);
    }
    for (size_t k = 0; k < nfirst; k++) {
        cursor_t *c = &s->cur[s->ncur++];
        int got = cursor_fill(s, c, first[k]);
        if (got < 0) {
            free(first);
            return -1;
        }
        if (got)
            s->heap[s->nheap++] = (size_t)(c - s->cur);
    }
    free(first);
    for (size_t i = s->nheap / 2; i-- > 0;)
        sift_down(s, i);
    return 0;
}

/* Hand every call to fn, least first. */
static int merge(scan_t *s, int (*fn)(void *ctx, const dmm_rec_t *rec), void *ctx)
{
    while (s->nheap) {
        cursor_t *c = &s->cur[s->heap[0]];
        const dmm_rec_t *rec = &c->recs.v[c->recs.at];
        if (c->gave && rec->seq < c->last)
            s->unordered = 1;
        c->last = rec->seq;
        c->gave = 1;
        if (fn(ctx, rec) != 0)
            return -1;
        if (++c->recs.at == c->recs.n) {
            int got = cursor_fill(s, c, s->next_same[c->bi]);
            if (got < 0)
                return -1;
            if (!got)
                s->heap[0] = s->heap[--s->nheap];
        }
        if (s->nheap)
            sift_down(s, 0);
    }
    return 0;
}

int dmm_scan_trc(const char *name, const uint8_t *buf, size_t len, dmm_trace_t *t,
                 int (*fn)(void *ctx, const dmm_rec_t *rec), void *ctx, dmm_err_t *err)
{
    uint64_t off;
    unsigned version;
    if (read_header(name, buf, len, t, err, &off, &version) != 0)
        return -1;
    scan_t s = { .buf = buf };
    int rc = start_reader(&s.r, name, t, err, len, version);
    s.r.sync_fn = fn;
    s.r.sync_ctx = ctx;
    if (rc == 0)
        rc = index_blocks(&s, off);
    if (rc == 0)
        rc = start_cursors(&s);
    if (rc == 0)
        rc = merge(&s, fn, ctx);
    if (rc == 0 && s.unordered)
        rc = 1;
    for (size_t i = 0; i < s.ncur; i++)
        free(s.cur[i].recs.v);
    free(s.cur);
    free(s.heap);
    free(s.next_same);
    free(s.blks);
    end_reader(&s.r);
    return rc;
}
