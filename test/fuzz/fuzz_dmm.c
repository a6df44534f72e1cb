/* fuzz_dmm.c - libFuzzer harness for the .dmm description parser: any
 * input parses or fails with a message naming the line; what parses prints
 * canonically and parses back to the same description. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocators/chain/desc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dmm_desc_t d, d2;
    dmm_err_t err;
    if (dmm_desc_parse("fuzz.dmm", (const char *)data, size, &d, &err) != 0) {
        if (strncmp(err.msg, "fuzz.dmm: line ", 15) != 0)
            abort();
        return 0;
    }
    static char out[65536];
    size_t n = dmm_desc_print(&d, out, sizeof out);
    if (n >= sizeof out)
        abort();
    if (dmm_desc_parse("fuzz.dmm", out, n, &d2, &err) != 0)
        abort();
    if (d2.n != d.n || memcmp(d2.a, d.a, sizeof d.a[0] * (size_t)d.n) != 0)
        abort();
    if (d2.cache_max != d.cache_max || d2.cache_count != d.cache_count ||
        d2.release.on != d.release.on || d2.release.keep != d.release.keep ||
        d2.release.delay != d.release.delay || d2.huge != d.huge || d2.pool != d.pool ||
        d2.grow != d.grow || d2.retain_set != d.retain_set || d2.retain != d.retain)
        abort();
    static char out2[65536];
    size_t n2 = dmm_desc_print(&d2, out2, sizeof out2);
    if (n2 != n || memcmp(out, out2, n) != 0)
        abort();
    return 0;
}
