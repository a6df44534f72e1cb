/* trc_read.c - the reader of dmm's binary trace files (.trc).
 *
 * Turns a whole file held in memory into a dmm_trace_t.  The layout is the one
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
} rd_t;

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
    dmm_rec_t *d = dmm_trace_push(t);
    if (!d)
        return -1;
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
        if (rec.op == 0 || rec.op >= DMM_TRC_OP_MAX)
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
        size_t len = r->version >= 3 ? dmm_trc3_decode(p + at, n - at, &st, &rec, &why)
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

/* One block at offset off.  Returns 1 when the file ends inside it, 0 when
 * it was read (and *next set past it), -1 on error. */
static int read_block(rd_t *r, const uint8_t *buf, uint64_t off, uint64_t *next)
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
    *next = off + bh + stored;
    if (comp == DMM_TRC_COMP_NONE)
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

int dmm_read_trc(const char *name, const uint8_t *buf, size_t len, dmm_trace_t *t, dmm_err_t *err)
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

    rd_t r = { .name = name, .t = t, .err = err, .len = len, .version = version };
    /* A real trace defines each stack once, in at least 64 bytes, so ids
     * far beyond what the file could hold are corruption; the slack keeps
     * small, cut-short files readable. */
    uint64_t lim = (uint64_t)len + 65536;
    r.max_stack = lim < MAX_STACK_ID ? (uint32_t)lim : MAX_STACK_ID;
    /* stacks[0] is the empty stack, there even when no stacks were recorded */
    int rc = need_stack(&r, 0) ? dmm_err_set(err, "%s: out of memory", name) : 0;
    size_t nblocks = 0;
    while (rc == 0 && off < len) {
        uint64_t next = off;
        rc = read_block(&r, buf, off, &next);
        if (rc == 1) {
            t->truncated = 1;
            snprintf(t->note, sizeof t->note,
                     "%s: cut short at offset %zu (inside block at offset %llu); "
                     "read %zu whole blocks", name, len, (ull)off, nblocks);
            rc = 0;
            break;
        }
        nblocks++;
        off = next;   /* always advances: a block is at least its header */
    }
    free(r.zbuf);
    free(r.states);
    dmm_u64map_free(&r.threads);
    return rc;
}
