/* payload.c - the payload pattern (see payload.h).  Fills and checks go
 * 64 bytes one by one, then double what is done with memcpy/memcmp against
 * the block's own start: source and destination offsets agree mod 8. */
#include "tracer/replay/payload.h"

#include <string.h>

uint64_t dmm_payload_word(uint32_t id)
{
    uint64_t z = (uint64_t)id + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void dmm_payload_fill(unsigned char *p, uint64_t from, uint64_t to, uint64_t w)
{
    const unsigned char *wb = (const unsigned char *)&w;
    uint64_t n0 = to - from < 64 ? to - from : 64, o = from;
    for (; o < from + n0; o++)
        p[o] = wb[o & 7];
    while (o < to) {
        uint64_t n = o - from;
        if (n > to - o)
            n = to - o;
        memcpy(p + o, p + from, n);
        o += n;
    }
}

int64_t dmm_payload_check(const unsigned char *p, uint64_t from, uint64_t to, uint64_t w)
{
    const unsigned char *wb = (const unsigned char *)&w;
    uint64_t n0 = to - from < 64 ? to - from : 64, o = from;
    for (; o < from + n0; o++)
        if (p[o] != wb[o & 7])
            return (int64_t)o;
    while (o < to) {
        uint64_t n = o - from;
        if (n > to - o)
            n = to - o;
        if (memcmp(p + o, p + from, n) != 0) {
            for (uint64_t k = o; k < o + n; k++)
                if (p[k] != wb[k & 7])
                    return (int64_t)k;
        }
        o += n;
    }
    return -1;
}

int64_t dmm_payload_check_zero(const unsigned char *p, uint64_t n)
{
    for (uint64_t o = 0; o < n; o++)
        if (p[o])
            return (int64_t)o;
    return -1;
}
