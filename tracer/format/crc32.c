/* crc32.c - the block checksum of .trc files: CRC-32C (Castagnoli,
 * reflected polynomial 0x82F63B78, as in iSCSI and ext4).  The traced
 * process checksums every block it writes, so the SSE4.2 crc32 instruction
 * is used where the CPU has it (8 bytes per instruction), on three parts of
 * a long buffer at once (the instruction's latency is three times its
 * throughput), whose CRCs are then joined; the table-driven loop gives the
 * same values elsewhere.  Allocates nothing. */
#include "tracer/format/crc32.h"

#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

static uint32_t crc_table[256];
static int crc_ready;   /* 1 = table built, 2 = table built and SSE4.2 */

/* The three parts are SEG bytes each.  shift_tab[k][v] is what SEG zero
 * bytes make of a CRC register holding v in its byte k (the register's
 * update is linear: the CRC of X then Y is shift(CRC of X) ^ (CRC of Y from
 * 0), shift being the update by |Y| zero bytes). */
#define SEG 2048u
static uint32_t shift_tab[4][256];

/* One zero bit through the register: a multiplication by x, modulo the
 * polynomial. */
static inline uint32_t step(uint32_t c)
{
    return (c & 1) ? 0x82F63B78u ^ (c >> 1) : c >> 1;
}

/* tab[v] for every byte v, from tab[1 << b] (b = 0..7): both tables are
 * linear, so each entry is that of v without its lowest bit, XOR that
 * bit's. */
static void fill_by_bits(uint32_t tab[256], const uint32_t bit[8])
{
    tab[0] = 0;
    for (unsigned v = 1; v < 256; v++)
        tab[v] = tab[v & (v - 1)] ^ bit[__builtin_ctz(v)];
}

#if defined(__x86_64__)
/* shift_tab, for crc_hw alone: the shift of the register's top bit (SEG
 * zero bytes through the crc32 instruction); each lower bit's is that one
 * step further (1 << j is x times 1 << (j + 1), and the shift commutes with
 * the step: both multiply); then each byte value's is the sum of its bits'.
 * Every traced process builds it once, in a few microseconds. */
__attribute__((target("sse4.2"))) static void shift_init(void)
{
    uint32_t bit[32];
    uint64_t c = 1u << 31;
    for (unsigned i = 0; i < SEG; i += 8)
        c = __builtin_ia32_crc32di(c, 0);
    bit[31] = (uint32_t)c;
    for (int j = 30; j >= 0; j--)
        bit[j] = step(bit[j + 1]);
    for (int k = 0; k < 4; k++)
        fill_by_bits(shift_tab[k], bit + 8 * k);
}
#endif

static void crc_init(void)
{
    uint32_t bit[8];
    for (int b = 0; b < 8; b++) {
        uint32_t c = 1u << b;
        for (int k = 0; k < 8; k++)
            c = step(c);
        bit[b] = c;
    }
    fill_by_bits(crc_table, bit);
    int hw = 0;
#if defined(__x86_64__)
    /* one CPUID leaf, read here: __builtin_cpu_supports would link libgcc's
     * CPU model constructor into every traced process, some twenty CPUIDs
     * at its start, each a trap to the hypervisor on a virtual machine
     * (about 3 us apiece on the one dmm is developed on) */
    unsigned a, b, c, d;
    __cpuid(1, a, b, c, d);   /* every x86-64 CPU has leaf 1: no __get_cpuid's second CPUID */
    hw = (c & bit_SSE4_2) != 0;
    if (hw)
        shift_init();
#endif
    __atomic_store_n(&crc_ready, hw ? 2 : 1, __ATOMIC_RELEASE);
}

static inline uint32_t shift_seg(uint32_t c)
{
    return shift_tab[0][c & 0xff] ^ shift_tab[1][(c >> 8) & 0xff] ^
           shift_tab[2][(c >> 16) & 0xff] ^ shift_tab[3][c >> 24];
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t len)
{
    uint64_t c = crc;
    while (len >= 3 * SEG) {
        uint64_t c1 = 0, c2 = 0;
        for (unsigned i = 0; i < SEG; i += 8) {
            uint64_t v0, v1, v2;
            memcpy(&v0, p + i, 8);
            memcpy(&v1, p + SEG + i, 8);
            memcpy(&v2, p + 2 * SEG + i, 8);
            c = __builtin_ia32_crc32di(c, v0);
            c1 = __builtin_ia32_crc32di(c1, v1);
            c2 = __builtin_ia32_crc32di(c2, v2);
        }
        c = shift_seg(shift_seg((uint32_t)c) ^ (uint32_t)c1) ^ (uint32_t)c2;
        p += 3 * SEG;
        len -= 3 * SEG;
    }
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
