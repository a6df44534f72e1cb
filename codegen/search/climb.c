/* climb.c - the neighbours of a genome (climb.h). */
#include "codegen/search/climb.h"

#include <stdlib.h>

/* Append the move that takes alternative v at pos (current codon c, of n
 * alternatives), unless its codon would not be below bound. */
static void add(dmm_climb_move_t *m, long *k, int pos, uint32_t c, uint32_t n, uint32_t v,
                uint32_t bound)
{
    uint64_t codon = (uint64_t)c - c % n + v;
    if (codon >= bound)
        codon = v;
    if (codon >= bound)
        return;
    m[*k].pos = pos;
    m[*k].codon = (uint32_t)codon;
    (*k)++;
}

long dmm_climb_moves(const dmm_grammar_t *g, const uint32_t *genome, int length, int wraps,
                     uint32_t bound, dmm_climb_move_t **moves)
{
    *moves = NULL;
    size_t reads = (size_t)length * ((size_t)wraps + 1);
    uint32_t *nalts = malloc(reads * sizeof *nalts);
    unsigned char *seen = calloc((size_t)length, 1);
    size_t pcap = 1u << 20;
    char *pheno = malloc(pcap);
    long n = -1;
    if (!nalts || !seen || !pheno)
        goto out;
    long used = dmm_ge_map_alts(g, genome, (size_t)length, wraps, pheno, pcap, nalts, reads);
    n = 0;
    if (used <= 0)
        goto out;
    /* at most max(DMM_CLIMB_ALL - 1, 2 x 32) moves a read */
    dmm_climb_move_t *m = malloc((size_t)used * 64 * sizeof *m);
    if (!m) {
        n = -1;
        goto out;
    }
    for (long r = 0; r < used; r++) {
        int pos = (int)(r % length);
        uint32_t na = nalts[r], c = genome[pos], cur = c % (na ? na : 1);
        if (seen[pos] || na < 2)
            continue;
        seen[pos] = 1;
        if (na <= DMM_CLIMB_ALL) {
            for (uint32_t v = 0; v < na; v++)
                if (v != cur)
                    add(m, &n, pos, c, na, v, bound);
            continue;
        }
        for (uint64_t d = 1; d < na; d *= 2) {
            if (cur >= d)
                add(m, &n, pos, c, na, (uint32_t)(cur - d), bound);
            if (cur + d < na)
                add(m, &n, pos, c, na, (uint32_t)(cur + d), bound);
        }
    }
    *moves = m;
out:
    free(nalts);
    free(seen);
    free(pheno);
    return n;
}
