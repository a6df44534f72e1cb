/* climb.h - the neighbours of a genome for the search's climb (ge.h,
 * "Climb"): every genome that makes one decision of the mapping differently
 * and leaves every other codon as it is.
 *
 * A decision is a codon the mapper reads to choose among the n > 1
 * alternatives of a rule (dmm_ge_map_alts); alternative c mod n was taken.
 * A move writes, at that codon's position, the codon of the same stride
 * that takes another alternative v: codon - (codon mod n) + v (or v itself
 * where that would reach the codon bound).  A rule of up to
 * DMM_CLIMB_ALL alternatives (a class, a list kind, yes or no) gives every
 * other one; a longer one (the trace's request sizes, in ascending order in
 * the generated grammar) gives the alternatives 1, 2, 4, 8 ... places either
 * side of the one taken: a size boundary moved a little or a lot, about
 * 2 log2 n moves instead of n.  A decision whose rule's alternatives all
 * consist of terminals changes only its own word of the phenotype; one that
 * picks a different shape (another allocator to follow, or none) re-reads
 * the codons after it, as GE's mutation of that codon would.
 * A position read twice (after a wrap) is moved once, at its first read. */
#ifndef DMM_SEARCH_CLIMB_H
#define DMM_SEARCH_CLIMB_H

#include <stddef.h>
#include <stdint.h>

#include "codegen/grammar/grammar.h"

#define DMM_CLIMB_ALL 16

typedef struct dmm_climb_move {
    int      pos;      /* the codon's position in the genome */
    uint32_t codon;    /* its new value */
} dmm_climb_move_t;

/* The moves of genome (length codons, mapped with up to wraps wraps; codons
 * below bound), in the order of the mapping's reads, into *moves (malloc'd;
 * the caller frees).  Returns how many (0: the genome maps to nothing, or
 * decides nothing), or -1 out of memory. */
long dmm_climb_moves(const dmm_grammar_t *g, const uint32_t *genome, int length, int wraps,
                     uint32_t bound, dmm_climb_move_t **moves);

#endif
