/* test_grammar.c - grammars, GE mapping and phenotypes (codegen/grammar/grammar.h):
 * the paper's worked example (Figure 3 grammar, Figure 4 genome -> Table 1),
 * wrapping and invalid individuals, an error with line and column for each
 * kind of bad grammar, the grammar of a trace, phenotypes as descriptions,
 * and the `dmm grammar` command. */
#include <criterion/criterion.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codegen/cli/cli.h"
#include "codegen/grammar/grammar.h"
#include "tracer/format/trc_write.h"

/* ---- the paper's grammar ---- */

static const uint32_t figure4[] = { 401, 213, 8,   151, 77,  2,   34, 60,  300,
                                    114, 205, 7,   2,   122, 183, 197, 49, 136 };

/* The paper decodes its 16th gene as "AllocationMechanism (197 mod 3 = 0):
 * FIRST", but 197 mod 3 = 2: EXACT.  Figure 4 as printed therefore decodes
 * to Table 1 with the second allocator's fit=exact; Figure 4 with that gene
 * read as the paper reads it (195, 195 mod 3 = 0) decodes to Table 1
 * exactly.  Every other gene decodes as the paper says. */
static const uint32_t figure4_as_read[] = { 401, 213, 8,   151, 77,  2,   34, 60,  300,
                                            114, 205, 7,   2,   122, 183, 195, 49, 136 };

static const char *const figure4_phenotype =
    "BuddySystemBinary false false 8 DLL FIRST FIFO "
    "SegregatedFreeList false true 7832240 SLL EXACT LIFO";

static const char *const table1_phenotype =
    "BuddySystemBinary false false 8 DLL FIRST FIFO "
    "SegregatedFreeList false true 7832240 SLL FIRST LIFO";

static const char *const table1_dmm =
    "# dmm 1\n"
    "buddy-binary  range=(0,8]            split=no  coalesce=no  list=dll   fit=first order=fifo\n"
    "segregated    range=(8,7832240]      split=no  coalesce=yes list=sll   fit=first order=lifo\n";

static const char *const table1_dmm_exact =
    "# dmm 1\n"
    "buddy-binary  range=(0,8]            split=no  coalesce=no  list=dll   fit=first order=fifo\n"
    "segregated    range=(8,7832240]      split=no  coalesce=yes list=sll   fit=exact order=lifo\n";

/* 419 distinct ascending sizes, the first three 4 7 8 (as the paper's). */
static uint64_t paper_size(int i)
{
    static const uint64_t first[] = { 4, 7, 8 };
    return i < 3 ? first[i] : 8 + 4 * (uint64_t)(i - 2);
}

/* The paper's Figure 3, written by hand: <AllocatorSize> and
 * <AllocatorMaxSize> inlined into <Allocators>, the MaxSize one first. */
static char *paper_grammar_text(void)
{
    size_t cap = 64 * 1024, len = 0;
    char *s = malloc(cap);
    cr_assert_not_null(s);
    len += (size_t)snprintf(s + len, cap - len,
        "# the paper's Figure 3 (DealII)\n"
        "<DynamicMemoryManager> ::= <Allocators>\n"
        "<Allocators> ::= <AllocatorClass> <AllowSplitting> <AllowCoalescing> <MaxSize>\n"
        "                 <DataStructure> <AllocationMechanism> <AllocationPolicy>\n"
        "               | <AllocatorClass> <AllowSplitting> <AllowCoalescing> <Size>\n"
        "                 <DataStructure> <AllocationMechanism> <AllocationPolicy> <Allocators>\n"
        "<AllocatorClass> ::= SegregatedFreeList\n"
        "                   | SimpleSegregatedStorage\n"
        "                   | ExactSegregatedFit\n"
        "                   | BuddySystemBinary\n"
        "                   | BuddySystemFibonacci\n"
        "<Size> ::= ");
    for (int i = 0; i < 419; i++)
        len += (size_t)snprintf(s + len, cap - len, "%s%llu%s", i ? "|" : "",
                                (unsigned long long)paper_size(i), i % 20 == 19 ? "\n  " : "");
    len += (size_t)snprintf(s + len, cap - len,
        "\n<MaxSize> ::= 7832240\n"
        "<AllowSplitting> ::= true|false\n"
        "<AllowCoalescing> ::= true|false\n"
        "<DataStructure> ::= SLL|DLL|BTREE\n"
        "<AllocationMechanism> ::= FIRST|BEST|EXACT\n"
        "<AllocationPolicy> ::= FIFO|LIFO\n");
    cr_assert_lt(len, cap - 1);
    return s;
}

static dmm_grammar_t *parse_ok(const char *text)
{
    dmm_err_t err = { { 0 } };
    dmm_grammar_t *g = dmm_grammar_parse("g.bnf", text, strlen(text), &err);
    cr_assert_not_null(g, "%s", err.msg);
    return g;
}

/* Table 1; fit2 is the second allocator's fit (see figure4_as_read). */
static void expect_table1(const char *phenotype, int fit2)
{
    dmm_desc_t d;
    dmm_err_t err;
    char out[2048];
    cr_assert_eq(dmm_phenotype_to_desc(phenotype, &d, &err), 0, "%s", err.msg);
    cr_assert_eq(d.n, 2);
    cr_expect_eq(d.a[0].cls, DMM_CLASS_BUDDY_BINARY);
    cr_expect_eq(d.a[0].lo, 0);
    cr_expect_eq(d.a[0].hi, 8);
    cr_expect_eq(d.a[0].split, 0);
    cr_expect_eq(d.a[0].coalesce, 0);
    cr_expect_eq(d.a[0].list, DMM_LIST_DLL);
    cr_expect_eq(d.a[0].fit, DMM_FIT_FIRST);
    cr_expect_eq(d.a[0].order, DMM_ORDER_FIFO);
    cr_expect_eq(d.a[0].lists, 0);
    cr_expect_eq(d.a[1].cls, DMM_CLASS_SEGREGATED);
    cr_expect_eq(d.a[1].lo, 8);
    cr_expect_eq(d.a[1].hi, 7832240);
    cr_expect_eq(d.a[1].split, 0);
    cr_expect_eq(d.a[1].coalesce, 1);
    cr_expect_eq(d.a[1].list, DMM_LIST_SLL);
    cr_expect_eq(d.a[1].fit, fit2);
    cr_expect_eq(d.a[1].order, DMM_ORDER_LIFO);
    cr_expect_eq(d.a[1].lists, 0);
    cr_expect_str_empty(d.title);
    dmm_desc_print(&d, out, sizeof out);
    if (fit2 == DMM_FIT_FIRST)
        cr_expect_str_eq(out, table1_dmm);
    else
        cr_expect_str_eq(out, table1_dmm_exact);
}

Test(paper, figure4_genome_maps_to_table1)
{
    char *text = paper_grammar_text();
    dmm_grammar_t *g = parse_ok(text);
    char out[4096];
    long used = dmm_ge_map(g, figure4_as_read, 18, 0, out, sizeof out);
    cr_expect_eq(used, 17, "the paper: complete after the 17th gene (got %ld)", used);
    cr_assert_str_eq(out, table1_phenotype);
    expect_table1(out, DMM_FIT_FIRST);
    /* as printed: the same but for 197 mod 3 = 2 */
    used = dmm_ge_map(g, figure4, 18, 0, out, sizeof out);
    cr_expect_eq(used, 17);
    cr_assert_str_eq(out, figure4_phenotype);
    expect_table1(out, DMM_FIT_EXACT);
    dmm_grammar_free(g);
    free(text);
}

/* ---- traces in memory ---- */

static uint64_t next_addr;

static void push_malloc(dmm_trace_t *t, uint64_t size)
{
    dmm_rec_t *r = dmm_trace_push(t);
    cr_assert_not_null(r);
    r->op = DMM_TRC_MALLOC;
    r->size = size;
    next_addr += 0x10000;
    r->ptr_out = next_addr;
}

Test(paper, the_grammar_of_a_trace_maps_figure4_to_table1_too)
{
    dmm_trace_t t;
    memset(&t, 0, sizeof t);
    next_addr = 0;
    for (int i = 418; i >= 0; i--)   /* any order: the grammar sorts */
        push_malloc(&t, paper_size(i));
    push_malloc(&t, 7832240);
    push_malloc(&t, 4);
    dmm_err_t err = { { 0 } };
    char *text = dmm_grammar_for_trace(&t, 1, "dealii.trc", &err);
    cr_assert_not_null(text, "%s", err.msg);
    dmm_grammar_t *g = parse_ok(text);
    char out[4096];
    cr_expect_eq(dmm_ge_map(g, figure4_as_read, 18, 0, out, sizeof out), 17);
    cr_assert_str_eq(out, table1_phenotype);
    expect_table1(out, DMM_FIT_FIRST);
    cr_expect_eq(dmm_ge_map(g, figure4, 18, 0, out, sizeof out), 17);
    cr_assert_str_eq(out, figure4_phenotype);
    dmm_grammar_free(g);
    free(text);
    dmm_trace_free(&t);
}

/* ---- mapping ---- */

Test(map, a_short_genome_wraps_as_if_repeated)
{
    char *text = paper_grammar_text();
    dmm_grammar_t *g = parse_ok(text);
    const uint32_t shortg[] = { 401, 213, 8, 151, 77 };
    uint32_t longg[55];
    for (int i = 0; i < 55; i++)
        longg[i] = shortg[i % 5];
    char a[4096], b[4096];
    long na = dmm_ge_map(g, shortg, 5, 10, a, sizeof a);
    long nb = dmm_ge_map(g, longg, 55, 0, b, sizeof b);
    cr_expect_eq(na, 25, "three allocators: 1 + 3 * 8 codons, four wraps (got %ld)", na);
    cr_expect_eq(na, nb);
    cr_expect_str_eq(a, b);
    /* one wrap fewer is not enough */
    cr_expect_eq(dmm_ge_map(g, shortg, 5, (int)((na - 1) / 5) - 1, a, sizeof a), -1);
    cr_expect_str_empty(a);
    /* and as many as needed is */
    cr_expect_eq(dmm_ge_map(g, shortg, 5, (int)((na - 1) / 5), a, sizeof a), na);
    cr_expect_str_eq(a, b);
    dmm_grammar_free(g);
    free(text);
}

Test(map, always_recursive_is_invalid_after_max_wraps)
{
    dmm_grammar_t *g = parse_ok("<S> ::= a <S> | b\n");
    const uint32_t rec[] = { 0, 2, 4 }, end[] = { 1 }, some[] = { 0, 0, 1 };
    char out[256];
    for (int w = 0; w < 6; w++)
        cr_expect_eq(dmm_ge_map(g, rec, 3, w, out, sizeof out), -1);
    cr_expect_eq(dmm_ge_map(g, end, 1, 0, out, sizeof out), 1);
    cr_expect_str_eq(out, "b");
    cr_expect_eq(dmm_ge_map(g, some, 3, 0, out, sizeof out), 3);
    cr_expect_str_eq(out, "a a b");
    /* a huge wrap limit still ends: the expansion bound */
    cr_expect_eq(dmm_ge_map(g, rec, 3, 1 << 30, out, sizeof out), -1);
    /* no genome, or no room */
    cr_expect_eq(dmm_ge_map(g, end, 0, 5, out, sizeof out), -1);
    cr_expect_eq(dmm_ge_map(g, some, 3, 0, out, 5), -1);
    cr_expect_eq(dmm_ge_map(g, some, 3, 0, out, 6), 3);
    cr_expect_str_eq(out, "a a b");
    dmm_grammar_free(g);
}

Test(map, left_recursion_and_single_alternatives_read_codons)
{
    dmm_grammar_t *g = parse_ok("<S> ::= <L>\n<L> ::= <L> x | y\n");
    const uint32_t gen[] = { 7, 0, 0, 1 };
    char out[256];
    cr_expect_eq(dmm_ge_map(g, gen, 4, 0, out, sizeof out), 4);
    cr_expect_str_eq(out, "y x x");
    dmm_grammar_free(g);
}

Test(parse, comments_continuations_and_glued_symbols)
{
    dmm_grammar_t *g = parse_ok(
        "   # a comment\n"
        "\n"
        "<S> ::= a<T>|b   # comment after a rule\n"
        "      | c\n"
        "        d\n"
        "<T>::=t1 |t2\n");
    const uint32_t g0[] = { 0, 1 }, g2[] = { 2 }, g1[] = { 1 };
    char out[64];
    cr_expect_eq(dmm_ge_map(g, g0, 2, 0, out, sizeof out), 2);
    cr_expect_str_eq(out, "a t2");
    cr_expect_eq(dmm_ge_map(g, g2, 1, 0, out, sizeof out), 1);
    cr_expect_str_eq(out, "c d");
    cr_expect_eq(dmm_ge_map(g, g1, 1, 0, out, sizeof out), 1);
    cr_expect_str_eq(out, "b");
    dmm_grammar_free(g);
}

/* ---- grammar errors ---- */

static void expect_error(const char *text, size_t len, const char *want)
{
    dmm_err_t err = { { 0 } };
    dmm_grammar_t *g = dmm_grammar_parse("g.bnf", text, len, &err);
    cr_expect_null(g, "parsed: %s", text);
    dmm_grammar_free(g);
    cr_expect(strncmp(err.msg, want, strlen(want)) == 0, "want '%s...', got '%s'", want, err.msg);
}

#define EXPECT_ERROR(text, want) expect_error(text, strlen(text), want)

Test(parse, an_error_names_line_and_column)
{
    EXPECT_ERROR("# c\n\n<A>   <B>\n", "g.bnf: line 3, column 7: expected '::='");
    EXPECT_ERROR("# c\n\n<A>\n<A> ::= x\n", "g.bnf: line 3, column 4: expected '::='");
    EXPECT_ERROR("", "g.bnf: line 1, column 1: no rule");
    EXPECT_ERROR("# nothing but comments\n\n", "g.bnf: line 1, column 1: no rule");
    EXPECT_ERROR("  word <S> ::= x\n", "g.bnf: line 1, column 3: expected a rule");
    EXPECT_ERROR("<S> ::= a <X>\n", "g.bnf: line 1, column 11: <X> is used but never defined");
    EXPECT_ERROR("<S> ::= a\n<S> ::= b\n",
                 "g.bnf: line 2, column 1: <S> defined twice (first at line 1)");
    EXPECT_ERROR("<S> ::= a\n\n  <U> ::= b\n",
                 "g.bnf: line 3, column 3: <U> (line 3) is unreachable from the start symbol <S>");
    EXPECT_ERROR("<S> ::= <A> | x\n<A> ::= a <A>\n",
                 "g.bnf: line 2, column 1: <A> can never derive a string of terminals");
    EXPECT_ERROR("<S> ::= <A>\n<A> ::= <B> | <A> a\n<B> ::= b <A>\n",
                 "g.bnf: line 1, column 1: <S> can never derive");
    EXPECT_ERROR("<S> ::= a | | b\n", "g.bnf: line 1, column 11: empty alternative after '|'");
    EXPECT_ERROR("<S> ::= a |\n", "g.bnf: line 1, column 11: empty alternative after '|'");
    EXPECT_ERROR("<S> ::=\n<T> ::= x\n", "g.bnf: line 1, column 5: empty alternative after '::='");
    EXPECT_ERROR("<S> ::= <A b\n", "g.bnf: line 1, column 9: expected '>'");
    EXPECT_ERROR("<S> ::= <>\n", "g.bnf: line 1, column 9: empty non-terminal");
    EXPECT_ERROR("<S> ::= a > b\n", "g.bnf: line 1, column 11: unexpected '>'");
    EXPECT_ERROR("<S> ::= a ::= b\n", "g.bnf: line 1, column 11: unexpected '::='");
    EXPECT_ERROR("<S> ::= a\x01\n", "g.bnf: line 1, column 10: unexpected byte 0x01");
    expect_error("<S> ::= a\0b\n", 12, "g.bnf: line 1, column 10: unexpected byte 0x00");
}

Test(parse, sizes_are_bounded)
{
    /* a name of 2000 bytes */
    char *s = malloc(4096);
    cr_assert_not_null(s);
    strcpy(s, "<S> ::= ");
    memset(s + 8, 'x', 2000);
    strcpy(s + 2008, "\n");
    EXPECT_ERROR(s, "g.bnf: line 1, column 9: terminal longer than");
    free(s);
    /* more than 100000 alternatives in a rule */
    size_t cap = 8 + 2 * 100001 + 2;
    s = malloc(cap);
    cr_assert_not_null(s);
    strcpy(s, "<S> ::= a");
    size_t n = strlen(s);
    for (int i = 0; i < 100000; i++) {
        s[n++] = '|';
        s[n++] = 'a';
    }
    s[n] = 0;
    cr_assert_lt(n, cap);
    expect_error(s, n, "g.bnf: line 1, column ");
    dmm_err_t err = { { 0 } };
    cr_expect_null(dmm_grammar_parse("g.bnf", s, n, &err));
    cr_expect_not_null(strstr(err.msg, "more than 100000 alternatives"), "%s", err.msg);
    /* 100000 are fine */
    dmm_grammar_t *g = dmm_grammar_parse("g.bnf", s, n - 2, &err);
    cr_expect_not_null(g, "%s", err.msg);
    dmm_grammar_free(g);
    free(s);
}

Test(parse, load_from_a_file)
{
    char path[] = "/tmp/dmm-grammar-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    const char *text = "<S> ::= x\n<S> ::= y\n";
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    dmm_err_t err;
    char want[600];
    cr_expect_null(dmm_grammar_load(path, &err));
    snprintf(want, sizeof want, "%s: line 2, column 1: <S> defined twice", path);
    cr_expect(strncmp(err.msg, want, strlen(want)) == 0, "%s", err.msg);
    unlink(path);
    cr_expect_null(dmm_grammar_load(path, &err));
    cr_expect_not_null(strstr(err.msg, path), "%s", err.msg);
}

/* ---- the grammar of a trace ---- */

Test(trace_grammar, sizes_of_a_small_trace)
{
    dmm_trace_t t;
    memset(&t, 0, sizeof t);
    next_addr = 0;
    push_malloc(&t, 24);
    push_malloc(&t, 8);
    push_malloc(&t, 100);
    push_malloc(&t, 8);
    dmm_err_t err = { { 0 } };
    char *text = dmm_grammar_for_trace(&t, 0, "small.trc", &err);
    cr_assert_not_null(text, "%s", err.msg);
    cr_expect_not_null(strstr(text, "small.trc"), "%s", text);
    cr_expect_not_null(strstr(text, "\n<Size> ::= 8 | 24 | 100\n"), "%s", text);
    cr_expect_not_null(strstr(text, "\n<MaxSize> ::= 100\n"), "%s", text);
    cr_expect_not_null(strstr(text, "| Kingsley | Lea"), "%s", text);
    cr_expect_not_null(strstr(text, "3 distinct"), "%s", text);
    /* the rules in the paper's order */
    const char *rules[] = { "<DynamicMemoryManager> ::=", "<Allocators> ::=",
                            "<AllocatorClass> ::=", "<Size> ::=", "<MaxSize> ::=",
                            "<AllowSplitting> ::=", "<AllowCoalescing> ::=",
                            "<DataStructure> ::=", "<AllocationMechanism> ::=",
                            "<AllocationPolicy> ::=" };
    const char *at = text;
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        const char *r = strstr(at, rules[i]);
        cr_expect_not_null(r, "%s missing or out of order", rules[i]);
        if (r)
            at = r;
    }
    dmm_grammar_t *g = parse_ok(text);
    /* an allocator with a <Size> (codon 1), then the last (codon 0) */
    const uint32_t gen[] = { 0, 1, 5, 0, 1, 1, 2, 1, 1, 0, 6, 1, 0, 0, 0, 2, 0 };
    char out[512];
    cr_expect_eq(dmm_ge_map(g, gen, 17, 0, out, sizeof out), 17);
    cr_expect_str_eq(out, "Kingsley true false 24 BTREE BEST LIFO Lea false true 100 SLL EXACT FIFO");
    dmm_desc_t d;
    cr_expect_eq(dmm_phenotype_to_desc(out, &d, &err), 0, "%s", err.msg);
    cr_expect_eq(d.n, 2);
    cr_expect_eq(d.a[0].cls, DMM_CLASS_KINGSLEY);
    cr_expect_eq(d.a[1].cls, DMM_CLASS_LEA);
    cr_expect_eq(d.a[1].lo, 24);
    cr_expect_eq(d.a[1].hi, 100);

    /* codon 7 picks the eighth class, TLSF (not the paper's) */
    const uint32_t tgen[] = { 0, 1, 7, 0, 1, 1, 2, 1, 1, 0, 6, 1, 0, 0, 0, 2, 0 };
    cr_expect_eq(dmm_ge_map(g, tgen, 17, 0, out, sizeof out), 17);
    cr_expect_str_eq(out, "TLSF true false 24 BTREE BEST LIFO Lea false true 100 SLL EXACT FIFO");
    cr_expect_eq(dmm_phenotype_to_desc(out, &d, &err), 0, "%s", err.msg);
    cr_expect_eq(d.a[0].cls, DMM_CLASS_TLSF);

    /* the same with a block cache: codon 1 picks <BlockCache> <Allocators>,
     * then <BlockCache> (one alternative), 256 (2 mod 5), 32 (1 mod 3) */
    const uint32_t cgen[] = { 1, 0, 2, 1, 1, 5, 0, 1, 1, 2, 1, 1, 0, 6, 1, 0, 0, 0, 2, 0 };
    cr_expect_eq(dmm_ge_map(g, cgen, 20, 0, out, sizeof out), 20);
    cr_expect_str_eq(out, "BlockCache 256 32 Kingsley true false 24 BTREE BEST LIFO "
                          "Lea false true 100 SLL EXACT FIFO");
    cr_expect_eq(dmm_phenotype_to_desc(out, &d, &err), 0, "%s", err.msg);
    cr_expect_eq(d.n, 2);
    cr_expect_eq(d.cache_max, 256);
    cr_expect_eq(d.cache_count, 32);
    cr_expect_eq(d.a[1].lo, 24);

    /* codon 3 (3 mod 4): <BlockCache> <Release> <Allocators>; the release
     * policy's keep 262144 (1 mod 5), delay inf (2 mod 3) */
    const uint32_t rgen[] = { 3, 0, 2, 1, 0, 1, 2, 1, 5, 0, 1, 1, 2, 1, 1, 0, 6, 1, 0, 0, 0, 2, 0 };
    cr_expect_eq(dmm_ge_map(g, rgen, 23, 0, out, sizeof out), 23);
    cr_expect_str_eq(out, "BlockCache 256 32 Release 262144 inf Kingsley true false 24 BTREE "
                          "BEST LIFO Lea false true 100 SLL EXACT FIFO");
    cr_expect_eq(dmm_phenotype_to_desc(out, &d, &err), 0, "%s", err.msg);
    cr_expect_eq(d.n, 2);
    cr_expect_eq(d.cache_max, 256);
    cr_expect(d.release.on && d.release.keep == 262144 && d.release.delay == UINT64_MAX);
    /* codon 2: <Release> <Allocators>, keep inf (4), delay 1000 (0) */
    const uint32_t r2gen[] = { 2, 0, 4, 0, 1, 5, 0, 1, 1, 2, 1, 1, 0, 6, 1, 0, 0, 0, 2, 0 };
    cr_expect_eq(dmm_ge_map(g, r2gen, 20, 0, out, sizeof out), 20);
    cr_expect_eq(strncmp(out, "Release inf 1000 Kingsley ", 26), 0, "%s", out);
    cr_expect_eq(dmm_phenotype_to_desc(out, &d, &err), 0, "%s", err.msg);
    cr_expect_eq(d.cache_max, 0);
    cr_expect(d.release.on && d.release.keep == SIZE_MAX && d.release.delay == 1000);
    cr_expect_eq(d.grow, DMM_GROW_64K);
    /* codon 7 (7 mod 8): <BlockCache> <Release> <Growth> <Allocators>;
     * <Growth> (one alternative) is GrowByPages */
    const uint32_t ggen[] = { 7, 0, 2, 1, 0, 1, 2, 0, 1, 5, 0, 1, 1, 2, 1, 1,
                              0, 6, 1, 0, 0, 0, 2, 0 };
    cr_expect_eq(dmm_ge_map(g, ggen, 24, 0, out, sizeof out), 24);
    cr_expect_str_eq(out, "BlockCache 256 32 Release 262144 inf GrowByPages Kingsley true false "
                          "24 BTREE BEST LIFO Lea false true 100 SLL EXACT FIFO");
    cr_expect_eq(dmm_phenotype_to_desc(out, &d, &err), 0, "%s", err.msg);
    cr_expect_eq(d.n, 2);
    cr_expect(d.cache_max == 256 && d.release.on && d.grow == DMM_GROW_PAGES);
    /* codon 4: <Growth> <Allocators> alone */
    const uint32_t g2gen[] = { 4, 0, 1, 5, 0, 1, 1, 2, 1, 1, 0, 6, 1, 0, 0, 0, 2, 0 };
    cr_expect_eq(dmm_ge_map(g, g2gen, 18, 0, out, sizeof out), 18);
    cr_expect_eq(strncmp(out, "GrowByPages Kingsley ", 21), 0, "%s", out);
    cr_expect_eq(dmm_phenotype_to_desc(out, &d, &err), 0, "%s", err.msg);
    cr_expect(!d.cache_max && !d.release.on && d.grow == DMM_GROW_PAGES);
    cr_expect(!d.retain_set && dmm_desc_retain(&d) == DMM_RETAIN_BYTES, "no retain budget");
    /* codon 8: <Retain> <Allocators>; <Retain> (one alternative), 0 bytes
     * (0 mod 4): the earlier alternatives kept their numbers */
    uint32_t kgen[] = { 8, 0, 0, 1, 5, 0, 1, 1, 2, 1, 1, 0, 6, 1, 0, 0, 0, 2, 0 };
    cr_expect_eq(dmm_ge_map(g, kgen, 19, 0, out, sizeof out), 19);
    cr_expect_eq(strncmp(out, "Retain 0 Kingsley ", 18), 0, "%s", out);
    cr_expect_eq(dmm_phenotype_to_desc(out, &d, &err), 0, "%s", err.msg);
    cr_expect(!d.cache_max && !d.release.on && d.grow == DMM_GROW_64K);
    cr_expect(d.retain_set && d.retain == 0 && dmm_desc_retain(&d) == 0);
    cr_expect_eq(d.n, 2);
    kgen[2] = 3;   /* 64 MiB (3 mod 4) */
    cr_expect_eq(dmm_ge_map(g, kgen, 19, 0, out, sizeof out), 19);
    cr_expect_eq(strncmp(out, "Retain 67108864 Kingsley ", 25), 0, "%s", out);
    cr_expect_eq(dmm_phenotype_to_desc(out, &d, &err), 0, "%s", err.msg);
    cr_expect(d.retain_set && d.retain == 67108864);
    /* codon 15: all four, the budget 4194304 (2 mod 4) */
    const uint32_t agen[] = { 15, 0, 2, 1, 0, 1, 2, 0, 0, 2, 1, 5, 0, 1, 1, 2, 1, 1,
                              0, 6, 1, 0, 0, 0, 2, 0 };
    cr_expect_eq(dmm_ge_map(g, agen, 26, 0, out, sizeof out), 26);
    cr_expect_str_eq(out, "BlockCache 256 32 Release 262144 inf GrowByPages Retain 4194304 "
                          "Kingsley true false 24 BTREE BEST LIFO Lea false true 100 SLL EXACT "
                          "FIFO");
    cr_expect_eq(dmm_phenotype_to_desc(out, &d, &err), 0, "%s", err.msg);
    cr_expect(d.cache_max == 256 && d.release.on && d.grow == DMM_GROW_PAGES);
    cr_expect(d.retain_set && d.retain == 4194304);
    cr_expect_eq(d.huge, 0);
    /* codon 16 (16 mod 32): <HugePages> <Allocators>; <HugePages> (one
     * alternative) is HugePages: the earlier alternatives kept their numbers */
    const uint32_t hgen[] = { 16, 0, 1, 5, 0, 1, 1, 2, 1, 1, 0, 6, 1, 0, 0, 0, 2, 0 };
    cr_expect_eq(dmm_ge_map(g, hgen, 18, 0, out, sizeof out), 18);
    cr_expect_eq(strncmp(out, "HugePages Kingsley ", 19), 0, "%s", out);
    cr_expect_eq(dmm_phenotype_to_desc(out, &d, &err), 0, "%s", err.msg);
    cr_expect(d.huge && !d.cache_max && !d.release.on && !d.retain_set);
    cr_expect_eq(d.n, 2);
    dmm_grammar_free(g);
    free(text);

    /* the paper's five classes only: codon 5 is SegregatedFreeList again,
     * and no block cache */
    text = dmm_grammar_for_trace(&t, 1, "small.trc", &err);
    cr_assert_not_null(text, "%s", err.msg);
    cr_expect_null(strstr(text, "| Kingsley"), "%s", text);
    cr_expect_null(strstr(text, "BlockCache"), "%s", text);
    cr_expect_null(strstr(text, "Release"), "%s", text);
    cr_expect_null(strstr(text, "Grow"), "%s", text);
    cr_expect_null(strstr(text, "Retain"), "%s", text);
    cr_expect_null(strstr(text, "HugePages"), "%s", text);
    g = parse_ok(text);
    cr_expect_eq(dmm_ge_map(g, gen, 17, 0, out, sizeof out), 17);
    cr_expect_str_eq(out,
        "SegregatedFreeList true false 24 BTREE BEST LIFO SimpleSegregatedStorage false true 100 SLL EXACT FIFO");
    dmm_grammar_free(g);
    free(text);
    dmm_trace_free(&t);
}

Test(trace_grammar, sizes_wrap_ten_to_a_line_and_reallocs_count)
{
    dmm_trace_t t;
    memset(&t, 0, sizeof t);
    next_addr = 0;
    for (int i = 1; i <= 24; i++)
        push_malloc(&t, (uint64_t)i * 16);
    push_malloc(&t, 0);   /* asks for nothing: not a size */
    /* a realloc of the first block to 1000 bytes, in place */
    dmm_rec_t *r = dmm_trace_push(&t);
    cr_assert_not_null(r);
    r->op = DMM_TRC_REALLOC;
    r->ptr_in = 0x10000;
    r->ptr_out = 0x10000;
    r->size = 1000;
    dmm_err_t err = { { 0 } };
    char *text = dmm_grammar_for_trace(&t, 1, "x", &err);
    cr_assert_not_null(text, "%s", err.msg);
    cr_expect_not_null(strstr(text,
        "<Size> ::= 16 | 32 | 48 | 64 | 80 | 96 | 112 | 128 | 144 | 160\n"
        "         | 176 | 192 | 208 | 224 | 240 | 256 | 272 | 288 | 304 | 320\n"
        "         | 336 | 352 | 368 | 384 | 1000\n"), "%s", text);
    cr_expect_not_null(strstr(text, "<MaxSize> ::= 1000\n"), "%s", text);
    dmm_grammar_t *g = parse_ok(text);
    dmm_grammar_free(g);
    free(text);
    dmm_trace_free(&t);
}

Test(trace_grammar, no_allocation_no_grammar)
{
    dmm_trace_t t;
    memset(&t, 0, sizeof t);
    dmm_err_t err = { { 0 } };
    cr_expect_null(dmm_grammar_for_trace(&t, 0, "empty.trc", &err));
    cr_expect_str_eq(err.msg, "empty.trc: no allocation operations: nothing to build a grammar from");
    next_addr = 0;
    push_malloc(&t, 0);
    cr_expect_null(dmm_grammar_for_trace(&t, 0, "zero.trc", &err));
    cr_expect(strncmp(err.msg, "zero.trc: ", 10) == 0, "%s", err.msg);
    dmm_trace_free(&t);
}

/* ---- phenotypes ---- */

static void expect_pheno_error(const char *ph, const char *want)
{
    dmm_desc_t d;
    dmm_err_t err = { { 0 } };
    cr_expect_eq(dmm_phenotype_to_desc(ph, &d, &err), -1, "accepted: %s", ph);
    cr_expect_not_null(strstr(err.msg, want), "want '%s' in '%s'", want, err.msg);
    cr_expect_eq(d.n, 0);
}

Test(phenotype, errors)
{
    expect_pheno_error("", "0 terminals");
    expect_pheno_error("BuddySystemBinary false false 8 DLL FIRST", "6 terminals");
    expect_pheno_error("Buddy false false 8 DLL FIRST FIFO", "terminal 1: 'Buddy' is not a class");
    expect_pheno_error("Lea maybe false 8 DLL FIRST FIFO", "terminal 2: 'maybe' is not a splitting");
    expect_pheno_error("Lea true 1 8 DLL FIRST FIFO", "terminal 3: '1' is not a coalescing");
    expect_pheno_error("Lea true true 8k DLL FIRST FIFO", "terminal 4: '8k' is not a size");
    expect_pheno_error("Lea true true 99999999999999999999999 DLL FIRST FIFO", "is not a size");
    expect_pheno_error("Lea true true 18446744073709551615 DLL FIRST FIFO", "is not a size");
    expect_pheno_error("Lea true true -8 DLL FIRST FIFO", "is not a size");
    expect_pheno_error("Lea true true 8 LIST FIRST FIFO", "terminal 5: 'LIST' is not a data structure");
    expect_pheno_error("Lea true true 8 SLL WORST FIFO", "terminal 6: 'WORST' is not a mechanism");
    expect_pheno_error("Lea true true 8 SLL BEST LILO", "terminal 7: 'LILO' is not a policy");
    expect_pheno_error("Lea true true 8 SLL BEST LIFO Lea true true 16 SLL BEST LIFOX",
                       "allocator 2, terminal 14");
    expect_pheno_error("Lea true true 0 SLL BEST LIFO", "no allocator");
    expect_pheno_error("BlockCache 256 Lea true true 8 SLL BEST LIFO", "terminal 3: 'Lea' is not a cache count");
    expect_pheno_error("BlockCache 2048 8 Lea true true 8 SLL BEST LIFO", "terminal 2: '2048' is not a cache size");
    expect_pheno_error("BlockCache 256 0 Lea true true 8 SLL BEST LIFO", "is not a cache count");
    expect_pheno_error("BlockCache", "terminal 2: '' is not a cache size");
    expect_pheno_error("BlockCache 256 8", "0 terminals after the block cache's 3");
    expect_pheno_error("BlockCache 256 8 Lea true true 8 SLL BEST LIFO Lea",
                       "8 terminals after the block cache's 3");
    expect_pheno_error("BlockCache 256 8 Lea true true 8 SLL BEST LIFOX", "terminal 10: 'LIFOX'");
    expect_pheno_error("Release 1k inf Lea true true 8 SLL BEST LIFO",
                       "terminal 2: '1k' is not a release keep");
    expect_pheno_error("BlockCache 256 8 Release 0 Lea true true 8 SLL BEST LIFO",
                       "terminal 6: 'Lea' is not a release delay");
    expect_pheno_error("Release 0 inf", "0 terminals after the release policy's 3");
    expect_pheno_error("BlockCache 256 8 Release 0 0 Lea",
                       "1 terminals after the block cache's 3 and the release policy's 3");
    expect_pheno_error("Release 0 inf BlockCache 256 8 Lea true true 8 SLL BEST LIFO",
                       "10 terminals after the release policy's 3");
    expect_pheno_error("GrowByPages", "0 terminals after the growth's 1");
    expect_pheno_error("BlockCache 256 8 GrowByPages Lea true",
                       "2 terminals after the block cache's 3 and the growth's 1");
    expect_pheno_error("Release 0 inf GrowByPages GrowByPages Lea true true 8 SLL BEST LIFO",
                       "8 terminals after the release policy's 3 and the growth's 1");
    expect_pheno_error("Retain 1M Lea true true 8 SLL BEST LIFO",
                       "terminal 2: '1M' is not a retain budget");
    expect_pheno_error("BlockCache 256 8 Retain", "terminal 5: '' is not a retain budget");
    expect_pheno_error("Retain 0", "0 terminals after the retain budget's 2");
    expect_pheno_error("Release 0 inf GrowByPages Retain 0 Lea true",
                       "2 terminals after the release policy's 3 and the growth's 1 and the "
                       "retain budget's 2");
    expect_pheno_error("Retain 0 GrowByPages Lea true true 8 SLL BEST LIFO",
                       "8 terminals after the retain budget's 2");
    expect_pheno_error("HugePages", "0 terminals after the huge pages' 1");
    expect_pheno_error("Retain 0 HugePages Lea true",
                       "2 terminals after the retain budget's 2 and the huge pages' 1");
    char big[40 * 64] = "";
    for (int i = 1; i <= DMM_DESC_MAX + 1; i++) {
        char one[64];
        snprintf(one, sizeof one, "%sLea true true %d SLL BEST LIFO", i > 1 ? " " : "", i * 16);
        strcat(big, one);
    }
    expect_pheno_error(big, "more than 32 allocators");
    dmm_desc_t d;
    dmm_err_t err = { { 0 } };
    cr_expect_eq(dmm_phenotype_to_desc(NULL, &d, &err), -1);
}

Test(phenotype, dropped_allocators_and_dmm_names)
{
    dmm_desc_t d;
    dmm_err_t err = { { 0 } };
    cr_assert_eq(dmm_phenotype_to_desc(
                     "  buddy-fib true true 64 BTREE BEST LIFO\n"
                     "Kingsley false false 32 SLL FIRST FIFO "      /* not above 64: dropped */
                     "sss no yes 64 DLL EXACT FIFO "                /* equal: dropped */
                     "ExactSegregatedFit true false 4096 SLL EXACT LIFO",
                     &d, &err), 0, "%s", err.msg);
    cr_assert_eq(d.n, 2);
    cr_expect_eq(d.a[0].cls, DMM_CLASS_BUDDY_FIB);
    cr_expect_eq(d.a[0].lo, 0);
    cr_expect_eq(d.a[0].hi, 64);
    cr_expect_eq(d.a[0].list, DMM_LIST_BTREE);
    cr_expect_eq(d.a[0].fit, DMM_FIT_BEST);
    cr_expect_eq(d.a[0].order, DMM_ORDER_LIFO);
    cr_expect_eq(d.a[1].cls, DMM_CLASS_EXACT);
    cr_expect_eq(d.a[1].lo, 64);
    cr_expect_eq(d.a[1].hi, 4096);
    cr_expect_eq(d.a[1].split, 1);
    cr_expect_eq(d.a[1].coalesce, 0);
    cr_expect_eq(d.a[1].fit, DMM_FIT_EXACT);
    /* every class by both names */
    const char *names[][2] = { { "SegregatedFreeList", "segregated" },
                               { "SimpleSegregatedStorage", "sss" },
                               { "ExactSegregatedFit", "exact" },
                               { "BuddySystemBinary", "buddy-binary" },
                               { "BuddySystemFibonacci", "buddy-fib" },
                               { "Kingsley", "kingsley" },
                               { "Lea", "lea" } };
    for (size_t i = 0; i < 7; i++) {
        char ph[256];
        dmm_desc_t d2;
        snprintf(ph, sizeof ph, "%s true true 8 SLL FIRST FIFO", names[i][0]);
        cr_assert_eq(dmm_phenotype_to_desc(ph, &d, &err), 0, "%s", err.msg);
        snprintf(ph, sizeof ph, "%s true true 8 SLL FIRST FIFO", names[i][1]);
        cr_assert_eq(dmm_phenotype_to_desc(ph, &d2, &err), 0, "%s", err.msg);
        cr_expect_eq(d.a[0].cls, d2.a[0].cls);
        cr_expect_str_eq(dmm_class_name(d.a[0].cls), names[i][1]);
    }
}

/* ---- dmm grammar ---- */

/* Run dmm grammar with argv; stdout and stderr into *out and *errout. */
static int run_cli(int argc, char **argv, char **out, char **errout)
{
    char p1[] = "/tmp/dmm-grammar-out-XXXXXX", p2[] = "/tmp/dmm-grammar-err-XXXXXX";
    int fd1 = mkstemp(p1), fd2 = mkstemp(p2);
    cr_assert_geq(fd1, 0);
    cr_assert_geq(fd2, 0);
    fflush(stdout);
    fflush(stderr);
    int s1 = dup(1), s2 = dup(2);
    dup2(fd1, 1);
    dup2(fd2, 2);
    int rc = dmm_grammar_main(argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(s1, 1);
    dup2(s2, 2);
    close(s1);
    close(s2);
    int fds[2] = { fd1, fd2 };
    char **bufs[2] = { out, errout };
    for (int i = 0; i < 2; i++) {
        off_t len = lseek(fds[i], 0, SEEK_END);
        *bufs[i] = calloc(1, (size_t)len + 1);
        cr_assert_eq(pread(fds[i], *bufs[i], (size_t)len, 0), (ssize_t)len);
        close(fds[i]);
    }
    unlink(p1);
    unlink(p2);
    return rc;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *s = calloc(1, 1 << 20);
    size_t n = fread(s, 1, (1 << 20) - 1, f);
    s[n] = 0;
    fclose(f);
    return s;
}

Test(cli, writes_the_grammar_of_a_trace)
{
    char dir[] = "/tmp/dmm-grammar-cli-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char trc[128], empty[128], bnf[128], bad[128];
    snprintf(trc, sizeof trc, "%s/app.trc", dir);
    snprintf(empty, sizeof empty, "%s/empty.trc", dir);
    snprintf(bnf, sizeof bnf, "%s/app.bnf", dir);
    snprintf(bad, sizeof bad, "%s/bad.trc", dir);
    dmm_trace_t t;
    dmm_err_t e = { { 0 } };
    memset(&t, 0, sizeof t);
    next_addr = 0;
    push_malloc(&t, 24);
    push_malloc(&t, 8);
    push_malloc(&t, 100);
    cr_assert_eq(dmm_write_trc_ex(&t, trc, 0, 1, &e), 0, "%s", e.msg);
    dmm_trace_free(&t);
    memset(&t, 0, sizeof t);
    cr_assert_eq(dmm_write_trc_ex(&t, empty, 0, 1, &e), 0, "%s", e.msg);
    FILE *f = fopen(bad, "w");
    cr_assert_not_null(f);
    fputs("DMMTRACE garbage", f);
    fclose(f);

    char *out, *err;
    char ops[160];
    snprintf(ops, sizeof ops, "%s.ops", trc);
    /* --no-cache: no TRACE.ops written */
    char *a0[] = { "grammar", "--no-cache", "--paper", trc, NULL };
    cr_expect_eq(run_cli(4, a0, &out, &err), 0, "%s", err);
    cr_expect_neq(access(ops, F_OK), 0, "--no-cache wrote %s", ops);
    char *uncached = out;
    free(err);
    /* to standard output, from the operation stream, whose cache it
     * writes for dmm evolve; and the same again read from that cache */
    char *a1[] = { "grammar", "--paper", trc, NULL };
    for (int pass = 0; pass < 2; pass++) {
        cr_expect_eq(run_cli(3, a1, &out, &err), 0, "%s", err);
        cr_expect_eq(access(ops, F_OK), 0, "no %s", ops);
        cr_expect_str_eq(out, uncached);
        free(out);
        free(err);
    }
    free(uncached);
    cr_expect_eq(run_cli(3, a1, &out, &err), 0, "%s", err);
    cr_expect_not_null(strstr(out, "<Size> ::= 8 | 24 | 100\n"), "%s", out);
    cr_expect_null(strstr(out, "Kingsley"));
    dmm_err_t perr;
    dmm_grammar_t *g = dmm_grammar_parse("out", out, strlen(out), &perr);
    cr_expect_not_null(g, "%s", perr.msg);
    dmm_grammar_free(g);
    free(out);
    free(err);
    /* to a file, which is not replaced without --force */
    char *a2[] = { "grammar", "-o", bnf, trc, NULL };
    cr_expect_eq(run_cli(4, a2, &out, &err), 0, "%s", err);
    cr_expect_str_empty(out);
    free(out);
    free(err);
    char *text = slurp(bnf);
    cr_assert_not_null(text);
    cr_expect_not_null(strstr(text, "| Kingsley | Lea"), "%s", text);
    free(text);
    f = fopen(bnf, "w");
    fputs("mine\n", f);
    fclose(f);
    cr_expect_eq(run_cli(4, a2, &out, &err), 2);
    cr_expect_not_null(strstr(err, "exists"), "%s", err);
    free(out);
    free(err);
    text = slurp(bnf);
    cr_expect_str_eq(text, "mine\n");
    free(text);
    char *a3[] = { "grammar", "--force", "-o", bnf, trc, NULL };
    cr_expect_eq(run_cli(5, a3, &out, &err), 0, "%s", err);
    free(out);
    free(err);
    text = slurp(bnf);
    cr_expect_not_null(strstr(text, "<MaxSize> ::= 100\n"), "%s", text);
    free(text);
    /* bad input: 2 */
    char *a4[] = { "grammar", empty, NULL };
    cr_expect_eq(run_cli(2, a4, &out, &err), 2);
    char want[256];
    snprintf(want, sizeof want, "%s: no allocation operations: nothing to build a grammar from",
             empty);
    cr_expect_not_null(strstr(err, want), "%s", err);
    free(out);
    free(err);
    char *a5[] = { "grammar", bad, NULL };
    cr_expect_eq(run_cli(2, a5, &out, &err), 2);
    cr_expect_not_null(strstr(err, bad), "%s", err);
    free(out);
    free(err);
    char nofile[160];
    snprintf(nofile, sizeof nofile, "%s/none.trc", dir);
    char *a6[] = { "grammar", nofile, NULL };
    cr_expect_eq(run_cli(2, a6, &out, &err), 2);
    free(out);
    free(err);
    /* usage: 1 */
    char *u1[] = { "grammar", NULL };
    char *u2[] = { "grammar", "--bogus", trc, NULL };
    char *u3[] = { "grammar", trc, trc, NULL };
    char *u4[] = { "grammar", trc, "-o", NULL };
    cr_expect_eq(run_cli(1, u1, &out, &err), 1);
    free(out);
    free(err);
    cr_expect_eq(run_cli(3, u2, &out, &err), 1);
    free(out);
    free(err);
    cr_expect_eq(run_cli(3, u3, &out, &err), 1);
    free(out);
    free(err);
    cr_expect_eq(run_cli(3, u4, &out, &err), 1);
    free(out);
    free(err);
    char *h[] = { "grammar", "--help", NULL };
    cr_expect_eq(run_cli(2, h, &out, &err), 0);
    cr_expect_not_null(strstr(out, "usage: dmm grammar"));
    free(out);
    free(err);

    unlink(trc);
    unlink(ops);
    unlink(empty);
    unlink(bad);
    unlink(bnf);
    rmdir(dir);
}
