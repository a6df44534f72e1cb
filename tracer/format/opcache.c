/* opcache.c - the operation stream's cache beside its trace (see
 * opcache.h). */
#include "tracer/format/opcache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tracer/base/file.h"
#include "tracer/base/io.h"
#include "tracer/format/crc32.h"
#include "tracer/format/load.h"

#define OPS_MAGIC   "DMMOPS\r\n"
#define OPS_VERSION 3u   /* 3: the blocks' resident bytes follow the ops;
                            2: each op says its thread (1's ops all said 0) */

typedef struct ops_header {
    char     magic[8];
    uint32_t version;
    uint32_t header_size;   /* sizeof(ops_header_t) */
    uint64_t src_size;      /* the trace when the cache was made */
    int64_t  src_mtime_s;
    int64_t  src_mtime_ns;
    uint64_t src_dev, src_ino;
    uint64_t nops;
    uint32_t nids;
    uint32_t note_len;      /* bytes of note after the header */
    uint64_t free_null, unknown_free, failed, reused_live;
    uint64_t nresident;     /* dmm_resident_t entries after the ops */
    uint32_t ops_crc;       /* CRC-32C of the operations and the entries */
    uint32_t header_crc;    /* ... of the header up to here, and the note */
} ops_header_t;
_Static_assert(sizeof(ops_header_t) == 120, "the cache header is 120 bytes");

int dmm_opcache_path(const char *path, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "%s.ops", path);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

static uint32_t header_crc(const ops_header_t *h, const char *note)
{
    uint32_t c = dmm_crc32(0, h, offsetof(ops_header_t, header_crc));
    return dmm_crc32(c, note, h->note_len);
}

static int same_source(const ops_header_t *h, const struct stat *st)
{
    return h->src_size == (uint64_t)st->st_size && h->src_mtime_s == st->st_mtim.tv_sec &&
           h->src_mtime_ns == st->st_mtim.tv_nsec && h->src_dev == (uint64_t)st->st_dev &&
           h->src_ino == (uint64_t)st->st_ino;
}

/* The stream from cache when it is valid for the trace st describes: 1,
 * else 0 (s untouched). */
static int read_cache(const char *cache, const struct stat *st, dmm_opstream_t *s,
                      dmm_opload_t *info)
{
    int fd = open(cache, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ops_header_t h;
    char note[sizeof info->note];
    struct stat cs;
    dmm_op_t *ops = NULL;
    dmm_resident_t *res = NULL;
    if (fstat(fd, &cs) != 0 || dmm_read_all(fd, &h, sizeof h) != 0 ||
        memcmp(h.magic, OPS_MAGIC, 8) != 0 || h.version != OPS_VERSION ||
        h.header_size != sizeof h || !same_source(&h, st) || h.note_len >= sizeof note ||
        h.nops > ((uint64_t)1 << 40) || h.nops == 0 || h.nresident > h.nops ||
        (uint64_t)cs.st_size != sizeof h + h.note_len + h.nops * sizeof(dmm_op_t) +
                                    h.nresident * sizeof(dmm_resident_t) ||
        dmm_read_all(fd, note, h.note_len) != 0 || header_crc(&h, note) != h.header_crc)
        goto bad;
    ops = malloc((size_t)h.nops * sizeof *ops);
    res = malloc((size_t)h.nresident * sizeof *res + 1);
    if (!ops || !res || dmm_read_all(fd, ops, (size_t)h.nops * sizeof *ops) != 0 ||
        dmm_read_all(fd, res, (size_t)h.nresident * sizeof *res) != 0 ||
        dmm_crc32(dmm_crc32(0, ops, (size_t)h.nops * sizeof *ops), res,
                  (size_t)h.nresident * sizeof *res) != h.ops_crc)
        goto bad;
    unsigned nthreads = 0;
    for (uint64_t i = 0; i < h.nops; i++) {
        if (ops[i].kind < DMM_OP_ALLOC || ops[i].kind > DMM_OP_FREE || ops[i].id >= h.nids)
            goto bad;
        if (ops[i].thread >= nthreads)
            nthreads = ops[i].thread + 1u;
    }
    for (uint64_t i = 0; i < h.nresident; i++)
        if (res[i].id >= h.nids || res[i].reserved)
            goto bad;
    close(fd);
    memset(s, 0, sizeof *s);
    s->nthreads = nthreads;
    s->ops = ops;
    s->nops = (size_t)h.nops;
    s->resident = res;
    s->nresident = (size_t)h.nresident;
    s->nids = h.nids;
    s->free_null = h.free_null;
    s->unknown_free = h.unknown_free;
    s->failed = h.failed;
    s->reused_live = h.reused_live;
    memcpy(info->note, note, h.note_len);
    info->note[h.note_len] = 0;
    info->from_cache = 1;
    return 1;
bad:
    free(ops);
    free(res);
    close(fd);
    return 0;
}

/* Write the cache of the trace st describes; 0, or -1 (nothing left). */
static int write_cache(const char *cache, const struct stat *st, const dmm_opstream_t *s,
                       const char *note)
{
    ops_header_t h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, OPS_MAGIC, 8);
    h.version = OPS_VERSION;
    h.header_size = sizeof h;
    h.src_size = (uint64_t)st->st_size;
    h.src_mtime_s = st->st_mtim.tv_sec;
    h.src_mtime_ns = st->st_mtim.tv_nsec;
    h.src_dev = (uint64_t)st->st_dev;
    h.src_ino = (uint64_t)st->st_ino;
    h.nops = s->nops;
    h.nids = s->nids;
    h.note_len = (uint32_t)strlen(note);
    h.free_null = s->free_null;
    h.unknown_free = s->unknown_free;
    h.failed = s->failed;
    h.reused_live = s->reused_live;
    h.nresident = s->nresident;
    h.ops_crc = dmm_crc32(dmm_crc32(0, s->ops, s->nops * sizeof *s->ops), s->resident,
                          s->nresident * sizeof *s->resident);
    h.header_crc = header_crc(&h, note);
    dmm_outfile_t o;
    dmm_err_t e;
    if (dmm_out_open(&o, cache, 1, &e) != 0)
        return -1;
    if (fwrite(&h, sizeof h, 1, o.fp) != 1 || fwrite(note, 1, h.note_len, o.fp) != h.note_len ||
        fwrite(s->ops, sizeof *s->ops, s->nops, o.fp) != s->nops ||
        (s->nresident &&
         fwrite(s->resident, sizeof *s->resident, s->nresident, o.fp) != s->nresident)) {
        dmm_out_abort(&o);
        return -1;
    }
    return dmm_out_commit(&o, &e);
}

/* The stream of the trace at path: a .trc built as it is scanned (no
 * record held), any other format loaded whole then reduced. */
static int build(const char *path, dmm_opstream_t *s, dmm_opload_t *info, dmm_err_t *err)
{
    uint8_t *buf;
    size_t len;
    if (dmm_read_file(path, &buf, &len, err) != 0)
        return -1;
    int rc;
    if (len && dmm_format_detect(buf, len) == DMM_FMT_TRC) {
        rc = dmm_opstream_build_trc(path, buf, len, s, info->note, sizeof info->note, err);
        free(buf);
        return rc;
    }
    dmm_trace_t t;
    rc = dmm_trace_parse(path, buf, len, DMM_FMT_UNKNOWN, &t, err);
    free(buf);
    if (rc != 0)
        return -1;
    if (t.truncated)
        snprintf(info->note, sizeof info->note, "%s", t.note);
    rc = dmm_opstream_build(&t, s, err);
    dmm_trace_free(&t);
    return rc;
}

int dmm_opstream_load(const char *path, int use_cache, dmm_opstream_t *s, dmm_opload_t *info,
                      dmm_err_t *err)
{
    memset(info, 0, sizeof *info);
    char cache[4200];
    struct stat st;
    /* only a regular file has a size and a time to check a cache against */
    if (use_cache && (strcmp(path, "-") == 0 || stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
                      dmm_opcache_path(path, cache, sizeof cache) != 0))
        use_cache = 0;
    if (use_cache && read_cache(cache, &st, s, info))
        return 0;
    if (build(path, s, info, err) != 0)
        return -1;
    /* the trace may have changed while it was read: then no cache */
    struct stat now;
    if (use_cache && s->nops && stat(path, &now) == 0 && now.st_size == st.st_size &&
        now.st_mtim.tv_sec == st.st_mtim.tv_sec && now.st_mtim.tv_nsec == st.st_mtim.tv_nsec)
        info->cache_written = write_cache(cache, &st, s, info->note) == 0;
    return 0;
}
