/* fuzz_opcache.c - libFuzzer harness for the operation-stream cache's
 * reader (tracer/format/opcache.c): any TRACE.ops beside a small trace
 * either is taken, giving a well-formed stream, or is ignored, giving the
 * stream parsed from the trace; the load never fails and never crashes.
 *
 * A fuzzer cannot guess the trace's size, time, device and inode, nor the
 * two CRC-32C checksums, so the harness writes the trace's identity into
 * the header and recomputes both checksums wherever the lengths let it: the
 * checks behind them (lengths, counts, every operation) are what is fuzzed
 * (test_opcache.c shows that a damaged byte fails a checksum).  The offsets
 * are those of opcache.c's ops_header_t. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tracer/base/file.h"
#include "tracer/format/crc32.h"
#include "tracer/format/opcache.h"

enum { HDR = 120, OFF_SRC = 16, OFF_NOPS = 56, OFF_NOTE_LEN = 68, OFF_NRESIDENT = 104,
       OFF_OPS_CRC = 112, OFF_HDR_CRC = 116 };

static char trace[128], cache[160];
static struct stat st;
static dmm_opstream_t ref;

static void setup(void)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/dmm-fuzz-opcache-%d", (int)getpid());
    mkdir(dir, 0700);
    snprintf(trace, sizeof trace, "%s/t.rep", dir);
    snprintf(cache, sizeof cache, "%s/t.rep.ops", dir);
    const char *rep = "100000\n3\n6\n1\na 0 16\na 1 100\nr 0 200\nf 1\na 2 7\nf 0\n";
    dmm_err_t err;
    dmm_opload_t info;
    if (dmm_write_file(trace, rep, strlen(rep), &err) != 0 || stat(trace, &st) != 0 ||
        dmm_opstream_load(trace, 0, &ref, &info, &err) != 0)
        abort();
}

static void put64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!ref.ops)
        setup();
    uint8_t *buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    if (size >= HDR) {
        put64(buf + OFF_SRC, (uint64_t)st.st_size);
        put64(buf + OFF_SRC + 8, (uint64_t)st.st_mtim.tv_sec);
        put64(buf + OFF_SRC + 16, (uint64_t)st.st_mtim.tv_nsec);
        put64(buf + OFF_SRC + 24, (uint64_t)st.st_dev);
        put64(buf + OFF_SRC + 32, (uint64_t)st.st_ino);
        {
            uint64_t nops, nres;
            uint32_t note_len;
            memcpy(&nops, buf + OFF_NOPS, 8);
            memcpy(&nres, buf + OFF_NRESIDENT, 8);
            memcpy(&note_len, buf + OFF_NOTE_LEN, 4);
            /* the operations and the resident entries after them, 16 bytes each */
            if (note_len <= size - HDR && nops <= (size - HDR - note_len) / 16 &&
                nres <= (size - HDR - note_len) / 16 - nops) {
                uint32_t c = dmm_crc32(0, buf + HDR + note_len, (size_t)(nops + nres) * 16);
                memcpy(buf + OFF_OPS_CRC, &c, 4);
                c = dmm_crc32(dmm_crc32(0, buf, OFF_HDR_CRC), buf + HDR, note_len);
                memcpy(buf + OFF_HDR_CRC, &c, 4);
            }
        }
    }
    dmm_err_t err;
    if (dmm_write_file(cache, buf, size, &err) != 0)
        abort();
    free(buf);
    dmm_opstream_t s;
    dmm_opload_t info;
    if (dmm_opstream_load(trace, 1, &s, &info, &err) != 0)
        abort();   /* a cache never makes a load fail */
    if (strlen(info.note) >= sizeof info.note)
        abort();
    for (size_t i = 0; i < s.nops; i++)
        if (s.ops[i].kind < DMM_OP_ALLOC || s.ops[i].kind > DMM_OP_FREE || s.ops[i].id >= s.nids)
            abort();
    if (!info.from_cache &&
        (s.nops != ref.nops || memcmp(s.ops, ref.ops, s.nops * sizeof *s.ops) != 0))
        abort();
    dmm_opstream_free(&s);
    /* the stat identity stays: the cache rewritten by the load must not
     * have changed the trace */
    return 0;
}
