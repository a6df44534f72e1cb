/* grammar.h - BNF grammars of DMM designs and grammatical-evolution mapping
 * (paper sections 5 and 6): the parser (bnf.c), the paper's grammar for a
 * trace (tracegram.c), the mapper (mapper.c) and phenotypes read as .dmm
 * descriptions (phenotype.c).
 *
 * Notation (the paper's Figure 3, as a text file users may edit):
 *
 *   # comment
 *   <DynamicMemoryManager> ::= <Allocators>
 *   <Allocators> ::= <AllocatorClass> <AllowSplitting> ... <MaxSize> ...
 *                  | <AllocatorClass> ... <Size> ... <Allocators>
 *   <AllowSplitting> ::= true | false
 *
 * A rule is `<Name> ::= alternatives`, alternatives separated by `|`, each a
 * sequence of symbols: `<Name>` non-terminals and bare-word terminals; a rule
 * may continue on following lines that start with `|` (or any line that
 * does not start a new rule).  The first rule's left side is the start
 * symbol.
 *
 * Mapping (dmm_ge_map): a leftmost derivation; every non-terminal expanded,
 * single-alternative ones included, reads the next codon c and takes
 * alternative c mod (number of alternatives) — this is what reproduces the
 * paper's worked example (Figure 4 -> Table 1), but for one slip of the
 * paper's: its 16th gene, 197, gives 197 mod 3 = 2 (EXACT), where the paper
 * reads FIRST (test_grammar.c checks the genome as printed and with 195).
 * Reaching the end of the
 * genome wraps to its start, at most max_wraps times; past that the
 * individual is invalid.
 *
 * Phenotype (dmm_phenotype_to_desc): the terminals, in order, read as
 * allocators of seven tokens each: class, splitting, coalescing, size, data
 * structure, mechanism, policy — the paper's order.  Allocator i serves
 * (size of i-1, size of i] (the first from 0); an allocator whose size is not
 * above the previous one serves nothing and is dropped.  Class names are the
 * paper's (SegregatedFreeList, SimpleSegregatedStorage, ExactSegregatedFit,
 * BuddySystemBinary, BuddySystemFibonacci) plus Kingsley, Lea and TLSF, or dmm's
 * .dmm names.  "BlockCache MAX COUNT" before the first allocator (the
 * grammar's <BlockCache>, not the paper's) is the .dmm cache line. */
#ifndef DMM_GRAMMAR_GRAMMAR_H
#define DMM_GRAMMAR_GRAMMAR_H

#include <stddef.h>
#include <stdint.h>

#include "allocators/chain/desc.h"
#include "tracer/base/err.h"
#include "tracer/format/opstream.h"
#include "tracer/format/trace.h"

typedef struct dmm_grammar dmm_grammar_t;   /* opaque */

/* Parse text (named name in messages).  NULL with err = "NAME: line L,
 * column C: fault" for a malformed grammar, one with no rule, an undefined
 * or unreachable non-terminal, or a non-terminal that can never derive a
 * string of terminals. */
dmm_grammar_t *dmm_grammar_parse(const char *name, const char *text, size_t len,
                                 dmm_err_t *err);
dmm_grammar_t *dmm_grammar_load(const char *path, dmm_err_t *err);
void           dmm_grammar_free(dmm_grammar_t *g);

/* The grammar for a trace: the paper's Figure 3 with <Size> holding every
 * distinct request size of the trace (ascending) and <MaxSize> the largest;
 * paper = 0 adds Kingsley, Lea and TLSF to <AllocatorClass>.  Returns malloc'd
 * text, or NULL with err (e.g. a trace with no allocation). */
char *dmm_grammar_for_trace(const dmm_trace_t *t, int paper, const char *trace_name,
                            dmm_err_t *err);
/* The same from the trace's operation stream (the sizes of its allocations
 * and reallocations). */
char *dmm_grammar_for_ops(const dmm_opstream_t *os, int paper, const char *trace_name,
                          dmm_err_t *err);
/* The same for several traces: every size any of them asks for. */
char *dmm_grammar_for_streams(const dmm_opstream_t *const *streams, int nstreams, int paper,
                              const char *trace_name, dmm_err_t *err);

/* Map a genome.  On success returns the number of codons read (wraps
 * included) and writes the phenotype's terminals separated by single spaces
 * into out (NUL-terminated); -1 when invalid (wraps exhausted, or out too
 * small). */
long dmm_ge_map(const dmm_grammar_t *g, const uint32_t *genome, size_t n, int max_wraps,
                char *out, size_t cap);
/* The same, noting for each codon read (the k-th read is genome[k % n]),
 * while k < nalts_cap, the number of alternatives of the rule it chose
 * among: which codons decide the phenotype, and how many values each
 * can take (the search's climb, ge.h). */
long dmm_ge_map_alts(const dmm_grammar_t *g, const uint32_t *genome, size_t n, int max_wraps,
                     char *out, size_t cap, uint32_t *nalts, size_t nalts_cap);

/* A phenotype as a DMM description (title left empty).  0, or -1 with err
 * when the terminals do not form allocators (wrong count, unknown word,
 * no allocator with a non-empty range). */
int dmm_phenotype_to_desc(const char *phenotype, dmm_desc_t *d, dmm_err_t *err);

#endif
