/* crc32.c - CRC-32 (IEEE 802.3, reflected; the same values as zlib's crc32).
 * Used by the trace writer in the traced process, so it allocates nothing. */
#include "trace.h"

/* Table-driven CRC-32, polynomial 0xEDB88320, built on first use. */
static uint32_t crc_table[256];
static int crc_ready;

uint32_t dmm_crc32(uint32_t crc, const void *buf, size_t len)
{
    if (!__atomic_load_n(&crc_ready, __ATOMIC_ACQUIRE)) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++)
                c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            crc_table[i] = c;
        }
        __atomic_store_n(&crc_ready, 1, __ATOMIC_RELEASE);
    }
    const uint8_t *p = buf;
    crc = ~crc;
    while (len--)
        crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}
