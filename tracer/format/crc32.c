/* crc32.c - the block checksum of .trc files: CRC-32C (Castagnoli,
 * reflected polynomial 0x82F63B78, as in iSCSI and ext4).  The traced
 * process checksums every block it writes, so the SSE4.2 crc32 instruction
 * is used where the CPU has it (8 bytes per instruction); the table-driven
 * loop gives the same values elsewhere.  Allocates nothing. */
#include "tracer/format/crc32.h"

#include <string.h>

static uint32_t crc_table[256];
static int crc_ready;   /* 1 = table built, 2 = table built and SSE4.2 */

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0x82F63B78u ^ (c >> 1) : c >> 1;
        crc_table[i] = c;
    }
    int hw = 0;
#if defined(__x86_64__)
    __builtin_cpu_init();
    hw = __builtin_cpu_supports("sse4.2");
#endif
    __atomic_store_n(&crc_ready, hw ? 2 : 1, __ATOMIC_RELEASE);
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t len)
{
    uint64_t c = crc;
    while (len >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = __builtin_ia32_crc32di(c, v);
        p += 8;
        len -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (len--)
        c32 = __builtin_ia32_crc32qi(c32, *p++);
    return c32;
}
#endif

uint32_t dmm_crc32(uint32_t crc, const void *buf, size_t len)
{
    int ready = __atomic_load_n(&crc_ready, __ATOMIC_ACQUIRE);
    if (!ready) {
        crc_init();
        ready = crc_ready;
    }
    const uint8_t *p = buf;
    crc = ~crc;
#if defined(__x86_64__)
    if (ready == 2)
        return ~crc_hw(crc, p, len);
#endif
    while (len--)
        crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}
