/* fuzz_bnf.c - libFuzzer harness for grammars (codegen/grammar/grammar.h): any
 * input parses or fails with a message naming the line and column; what
 * parses maps fixed and input-derived genomes without crashing, the same way
 * twice, a wrapped genome as the genome repeated, and every phenotype that
 * converts is a description with sorted, disjoint, non-empty ranges that
 * prints and parses back to itself. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocators/chain/desc.h"
#include "codegen/grammar/grammar.h"

static char out[16384], out2[16384];

static void check_phenotype(const char *ph)
{
    dmm_desc_t d, d2;
    dmm_err_t err;
    if (dmm_phenotype_to_desc(ph, &d, &err) != 0) {
        if (strncmp(err.msg, "phenotype: ", 11) != 0 || d.n != 0)
            abort();
        return;
    }
    if (d.n < 1 || d.n > DMM_DESC_MAX || d.title[0])
        abort();
    size_t prev = 0;
    for (int i = 0; i < d.n; i++) {
        if (d.a[i].lo != prev || d.a[i].hi <= d.a[i].lo || d.a[i].cls == DMM_CLASS_NONE ||
            d.a[i].cls >= DMM_CLASS_COUNT || d.a[i].list > DMM_LIST_BTREE ||
            d.a[i].fit > DMM_FIT_EXACT || d.a[i].order > DMM_ORDER_LIFO || d.a[i].split > 1 ||
            d.a[i].coalesce > 1 || d.a[i].lists != 0)
            abort();
        prev = d.a[i].hi;
    }
    static char text[65536];
    size_t n = dmm_desc_print(&d, text, sizeof text);
    if (n >= sizeof text)
        abort();
    if (dmm_desc_parse("pheno.dmm", text, n, &d2, &err) != 0)
        abort();
    if (d2.n != d.n || memcmp(d2.a, d.a, sizeof d.a[0] * (size_t)d.n) != 0)
        abort();
}

static void map_and_check(const dmm_grammar_t *g, const uint32_t *gen, size_t n, int wraps)
{
    long r = dmm_ge_map(g, gen, n, wraps, out, sizeof out);
    if (r < 0) {
        if (out[0])
            abort();
        return;
    }
    if (r == 0 || (size_t)r > n * (size_t)(wraps + 1) || strlen(out) >= sizeof out)
        abort();
    /* deterministic */
    long r2 = dmm_ge_map(g, gen, n, wraps, out2, sizeof out2);
    if (r2 != r || strcmp(out, out2) != 0)
        abort();
    /* wrapping reads the genome again: the same as the genome repeated */
    if (wraps > 0 && (size_t)r > n && n * (size_t)(wraps + 1) <= 256) {
        uint32_t rep[256];
        for (size_t i = 0; i < n * (size_t)(wraps + 1); i++)
            rep[i] = gen[i % n];
        r2 = dmm_ge_map(g, rep, n * (size_t)(wraps + 1), 0, out2, sizeof out2);
        if (r2 != r || strcmp(out, out2) != 0)
            abort();
    }
    /* a buffer one byte too small fails */
    size_t len = strlen(out);
    if (dmm_ge_map(g, gen, n, wraps, out2, len) != -1)
        abort();
    check_phenotype(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dmm_err_t err;
    dmm_grammar_t *g = dmm_grammar_parse("fuzz.bnf", (const char *)data, size, &err);
    if (!g) {
        if (strncmp(err.msg, "fuzz.bnf: line ", 15) != 0 || !strstr(err.msg, ", column "))
            abort();
        return 0;
    }
    static const uint32_t figure4[] = { 401, 213, 8,   151, 77,  2,   34, 60,  300,
                                        114, 205, 7,   2,   122, 183, 197, 49, 136 };
    static const uint32_t zeros[4] = { 0 }, ones[3] = { 1, 1, 1 };
    static const uint32_t big[3] = { UINT32_MAX, 2147483648u, 12345 };
    map_and_check(g, figure4, 18, 0);
    map_and_check(g, figure4, 18, 3);
    map_and_check(g, zeros, 4, 2);
    map_and_check(g, ones, 3, 5);
    map_and_check(g, big, 3, 4);
    /* genomes from the input's bytes */
    uint32_t gen[64];
    size_t n = 0;
    for (size_t i = 0; i < size && n < 64; i += 3)
        gen[n++] = (uint32_t)data[i] | (uint32_t)(i + 1 < size ? data[i + 1] : 0) << 8;
    if (n) {
        map_and_check(g, gen, n, 0);
        map_and_check(g, gen, n > 8 ? 8 : n, 2);
        map_and_check(g, gen, 1, 7);
    }
    dmm_grammar_free(g);
    /* the input as a phenotype, too */
    if (size < sizeof out) {
        memcpy(out, data, size);
        out[size] = 0;
        check_phenotype(out);
    }
    return 0;
}
