/* mapper.c - grammatical evolution's genotype-to-phenotype mapping
 * (dmm_ge_map, grammar.h): a leftmost derivation, one codon per expanded
 * non-terminal, wrapping over the genome.  An explicit stack and an
 * expansion limit make sure no grammar can make it recurse or loop. */
#include "codegen/grammar/bnf.h"

#include <stdlib.h>
#include <string.h>

#define GE_MAX_EXPAND 1000000u  /* non-terminals one mapping may expand */
#define GE_MAX_STACK  1000000u  /* pending symbols of one mapping */

long dmm_ge_map_alts(const dmm_grammar_t *g, const uint32_t *genome, size_t n, int max_wraps,
                     char *out, size_t cap, uint32_t *nalts, size_t nalts_cap)
{
    if (!g || !out || cap == 0)
        return -1;
    out[0] = 0;
    if (!genome || n == 0 || max_wraps < 0)
        return -1;
    int32_t small[256];
    int32_t *stack = small;
    size_t sp = 0, scap = sizeof small / sizeof small[0];
    size_t used = 0, pos = 0;
    long read = 0;
    int wraps = 0;
    uint32_t expanded = 0;
    long rc = -1;

    stack[sp++] = (int32_t)g->start;
    while (sp) {
        int32_t y = stack[--sp];
        if (y < 0) {
            uint32_t t = (uint32_t)(-1 - y);
            size_t tl = g->terms.len[t];
            if (used + (used ? 1 : 0) + tl + 1 > cap)
                goto done;
            if (used)
                out[used++] = ' ';
            memcpy(out + used, g->terms.pool + g->terms.off[t], tl);
            used += tl;
            out[used] = 0;
            continue;
        }
        if (++expanded > GE_MAX_EXPAND)
            goto done;
        if (pos == n) {
            if (wraps >= max_wraps)
                goto done;
            wraps++;
            pos = 0;
        }
        uint32_t codon = genome[pos++];
        const rule_t *r = &g->rules[y];
        if (nalts && (size_t)read < nalts_cap)
            nalts[read] = r->nalts;
        read++;
        uint32_t a = r->alt0 + codon % r->nalts;
        uint32_t b = g->alts[a], e = g->alts[a + 1];
        size_t need = sp + (e - b);
        if (need > GE_MAX_STACK)
            goto done;
        if (need > scap) {
            size_t c = scap * 2;
            while (c < need)
                c *= 2;
            int32_t *ns = stack == small ? malloc(c * sizeof *ns)
                                         : realloc(stack, c * sizeof *ns);
            if (!ns)
                goto done;
            if (stack == small)
                memcpy(ns, small, sp * sizeof *ns);
            stack = ns;
            scap = c;
        }
        for (uint32_t s = e; s > b; s--)
            stack[sp++] = g->syms[s - 1];
    }
    rc = read;
done:
    if (stack != small)
        free(stack);
    if (rc < 0)
        out[0] = 0;
    return rc;
}

long dmm_ge_map(const dmm_grammar_t *g, const uint32_t *genome, size_t n, int max_wraps,
                char *out, size_t cap)
{
    return dmm_ge_map_alts(g, genome, n, max_wraps, out, cap, NULL, 0);
}
