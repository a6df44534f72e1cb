/* bnf.h - a grammar in memory, as the parser (bnf.c) builds it and the
 * mapper (mapper.c) reads it.  Private to codegen/grammar; grammar.h is the
 * module's interface.
 *
 * A grammar is held as flat arrays: every non-terminal is a rule (its id is
 * the order in which its name first appeared), a rule's alternatives are a
 * contiguous run of alts[], an alternative is a run of syms[] (>= 0: a
 * non-terminal id; < 0: terminal -1 - id).  Names and terminal words are
 * interned.  Every size is bounded, so that hostile text cannot make the
 * parser allocate without bound. */
#ifndef DMM_GRAMMAR_BNF_H
#define DMM_GRAMMAR_BNF_H

#include <stddef.h>
#include <stdint.h>

#include "codegen/grammar/grammar.h"

#define G_MAX_RULES   100000u   /* non-terminals */
#define G_MAX_ALTS    100000u   /* alternatives of one rule */
#define G_MAX_SYMS    1000000u  /* symbols in all alternatives together */
#define G_MAX_WORD    1024u     /* bytes of one name or terminal */

typedef struct intern {
    char     *pool;
    size_t    pool_len, pool_cap;
    uint32_t *off, *len;        /* of item i in pool */
    uint32_t  n, cap;
    uint32_t *bucket;           /* item + 1; 0 = empty */
    uint32_t  nbucket;          /* power of two */
} intern_t;

typedef struct rule {
    uint32_t alt0, nalts;       /* alts[alt0 .. alt0 + nalts) */
    uint32_t def_line, def_col; /* 0 = not defined */
    uint32_t use_line, use_col; /* first use on a right side; 0 = none */
} rule_t;

struct dmm_grammar {
    intern_t  names, terms;     /* non-terminal names (ids = rule ids), terminals */
    rule_t   *rules;            /* names.n of them */
    uint32_t  rules_cap;
    uint32_t *alts;             /* start of each alternative in syms; alts[nalts] = nsyms */
    uint32_t  nalts, alts_cap;
    int32_t  *syms;
    uint32_t  nsyms, syms_cap;
    uint32_t *order;            /* rule ids in the order they are defined */
    uint32_t  norder, order_cap;
    uint32_t  start;
};

#endif
