/* block.c - one block of a trace file, as libdmmtrace.so writes it (see
 * block.h). */
#include "preload/recorder/block.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include "preload/recorder/optlib.h"
#include "tracer/base/sys.h"
#include "tracer/format/crc32.h"
#include "tracer/format/trcfmt.h"

static void *map(size_t len)
{
    long p = dmm_sys6(SYS_mmap, 0, (long)len, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p < 0 && p > -4096 ? NULL : (void *)p;
}

static void unmap(void *p, size_t len)
{
    if (p)
        DMM_SYS(SYS_munmap, p, len, 0);
}

static void make_cctx(dmm_block_z_t *z, int zlevel)
{
    size_t wsz = dmm_zstd.estimateCCtxSize(zlevel), zcap = dmm_zstd.compressBound(DMM_BLOCK_MAX);
    void *w = map(wsz), *b = map(zcap);
    if (!w || !b) {
        unmap(w, wsz);
        unmap(b, zcap);
        return;
    }
    z->cctx = dmm_zstd.initStaticCCtx(w, wsz);
    if (!z->cctx) {
        unmap(w, wsz);
        unmap(b, zcap);
        return;
    }
    z->work = w;
    z->worklen = wsz;
    z->zbuf = b;
    z->zcap = zcap;
}

void dmm_block_z_free(dmm_block_z_t *z)
{
    unmap(z->work, z->worklen);
    unmap(z->zbuf, z->zcap);
    memset(z, 0, sizeof *z);
}

void dmm_block_write(int fd, dmm_block_z_t *z, int zlevel, uint32_t tid, const void *payload,
                     size_t raw, int cont)
{
    if (!raw || fd < 0)
        return;
    size_t stored = raw;
    dmm_trc_block_t b;
    memset(&b, 0, sizeof b);
    b.compression = DMM_TRC_COMP_NONE;
    if (zlevel && raw >= 1024 && dmm_zstd.compressCCtx) {
        if (!z->cctx)
            make_cctx(z, zlevel);
        if (z->cctx) {
            size_t n = dmm_zstd.compressCCtx(z->cctx, z->zbuf, z->zcap, payload, raw, zlevel);
            if (!dmm_zstd.isError(n) && n < raw) {
                payload = z->zbuf;
                stored = n;
                b.compression = DMM_TRC_COMP_ZSTD;
            }
        }
    }
    b.magic = DMM_TRC_BLOCK_MAGIC;
    b.tid = tid;
    b.stored_len = (uint32_t)stored;
    b.raw_len = (uint32_t)raw;
    b.flags = cont ? DMM_TRC_BF_CONT : 0;
    b.crc32 = dmm_crc32(0, payload, stored);
    b.header_crc32 = dmm_crc32(dmm_crc32(0, &b, 24), &b.flags, 4);
    struct iovec iov[2] = { { &b, sizeof b }, { (void *)payload, stored } };
    size_t total = sizeof b + stored, done = 0;
    int iovi = 0;
    while (done < total) {
        long w = DMM_SYS(SYS_writev, fd, iov + iovi, 2 - iovi);
        if (w == -EINTR)
            continue;
        if (w <= 0)
            break;   /* disk full: the reader will report the cut */
        done += (size_t)w;
        while (iovi < 2 && (size_t)w >= iov[iovi].iov_len) {
            w -= (long)iov[iovi].iov_len;
            iovi++;
        }
        if (iovi < 2) {
            iov[iovi].iov_base = (char *)iov[iovi].iov_base + w;
            iov[iovi].iov_len -= (size_t)w;
        }
    }
}
