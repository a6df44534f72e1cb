/* tracegram.c - the paper's grammar (Figure 3) for a trace: <Size> holds
 * every distinct request size of the trace, <MaxSize> the largest
 * (dmm_grammar_for_trace, grammar.h). */
#include "codegen/grammar/grammar.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/grammar/bnf.h"
#include "tracer/base/hash.h"
#include "tracer/format/opstream.h"

typedef struct sbuf {
    char  *s;
    size_t len, cap;
    int    oom;
} sbuf_t;

static void sb_printf(sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(sbuf_t *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            return;
        }
        if (b->s && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t c = b->cap ? b->cap : 4096;
        while (c <= b->len + (size_t)n)
            c *= 2;
        char *s = realloc(b->s, c);
        if (!s) {
            b->oom = 1;
            return;
        }
        b->s = s;
        b->cap = c;
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

char *dmm_grammar_for_trace(const dmm_trace_t *t, int paper, const char *trace_name,
                            dmm_err_t *err)
{
    const char *tn = trace_name ? trace_name : (t && t->path ? t->path : "trace");
    if (err)
        err->msg[0] = 0;
    if (!t) {
        dmm_err_set(err, "%s: no trace", tn);
        return NULL;
    }
    dmm_opstream_t os;
    dmm_err_t e = { { 0 } };
    memset(&os, 0, sizeof os);
    if (dmm_opstream_build(t, &os, &e) != 0) {
        dmm_err_set(err, "%s", e.msg[0] ? e.msg : "cannot build the operation stream");
        return NULL;
    }
    char *text = dmm_grammar_for_ops(&os, paper, tn, err);
    dmm_opstream_free(&os);
    return text;
}

/* The rules, after the header comment: the paper's Figure 3 with the
 * trace's sizes, and (not --paper) the block cache, the release policy,
 * growth by pages, the page source's retained bytes and huge pages. */
static void put_rules(sbuf_t *bp, const uint64_t *sz, size_t nsz, int paper)
{
    /* not --paper: every choice of the options, alternative k holding
     * option j when bit j of k is set (so that adding an option kept the
     * earlier alternatives' numbers) */
    static const char *const opts[] = { "<BlockCache> ", "<Release> ", "<Growth> ",
                                        "<Retain> ", "<HugePages> " };
    sb_printf(bp, "<DynamicMemoryManager> ::= <Allocators>\n");
    for (unsigned k = 1; !paper && k < 1u << 5; k++) {
        sb_printf(bp, "                         | ");
        for (unsigned j = 0; j < 5; j++)
            if (k & 1u << j)
                sb_printf(bp, "%s", opts[j]);
        sb_printf(bp, "<Allocators>\n");
    }
    sb_printf(bp, "\n");
    sb_printf(bp,
              "<Allocators> ::= <AllocatorClass> <AllowSplitting> <AllowCoalescing> <MaxSize>"
              " <DataStructure> <AllocationMechanism> <AllocationPolicy>\n"
              "               | <AllocatorClass> <AllowSplitting> <AllowCoalescing> <Size>"
              " <DataStructure> <AllocationMechanism> <AllocationPolicy> <Allocators>\n"
              "\n"
              "<AllocatorClass> ::= SegregatedFreeList | SimpleSegregatedStorage"
              " | ExactSegregatedFit\n"
              "                   | BuddySystemBinary | BuddySystemFibonacci%s\n"
              "\n",
              paper ? "" : "\n                   | Kingsley | Lea | TLSF");
    sb_printf(bp, "<Size> ::=");
    for (size_t i = 0; i < nsz; i++) {
        if (i == 0)
            sb_printf(bp, " %llu", (unsigned long long)sz[i]);
        else if (i % 10 == 0)
            sb_printf(bp, "\n         | %llu", (unsigned long long)sz[i]);
        else
            sb_printf(bp, " | %llu", (unsigned long long)sz[i]);
    }
    sb_printf(bp,
              "\n\n"
              "<MaxSize> ::= %llu\n"
              "\n"
              "<AllowSplitting> ::= true | false\n"
              "<AllowCoalescing> ::= true | false\n"
              "<DataStructure> ::= SLL | DLL | BTREE\n"
              "<AllocationMechanism> ::= FIRST | BEST | EXACT\n"
              "<AllocationPolicy> ::= FIFO | LIFO\n",
              (unsigned long long)sz[nsz - 1]);
    if (!paper)
        sb_printf(bp,
                  "\n"
                  "# Not the paper's: a block cache in front of the chain (the .dmm line\n"
                  "# `cache max=M count=K`): up to K freed blocks per 8-byte size up to M bytes,\n"
                  "# per thread, served again without calling their allocator.\n"
                  "<BlockCache> ::= BlockCache <CacheMax> <CacheCount>\n"
                  "<CacheMax> ::= 64 | 128 | 256 | 512 | 1024\n"
                  "<CacheCount> ::= 8 | 32 | 128\n"
                  "\n"
                  "# Not the paper's: empty areas given back to the OS (the .dmm line\n"
                  "# `release keep=B delay=N`): beyond B bytes of empty areas, or after N calls\n"
                  "# of their allocator; keep 0 gives back at once; inf inf never to the OS,\n"
                  "# but empty areas still serve other sizes.\n"
                  "<Release> ::= Release <ReleaseKeep> <ReleaseDelay>\n"
                  "<ReleaseKeep> ::= 0 | 262144 | 1048576 | 4194304 | inf\n"
                  "<ReleaseDelay> ::= 1000 | 100000 | inf\n"
                  "\n"
                  "# Not the paper's: growth by pages (the .dmm line `grow by=pages`): while\n"
                  "# a Lea, segregated, exact or TLSF allocator holds less than 256 KiB, it\n"
                  "# takes whole pages, at least a quarter of what it holds, not 64 KiB granules.\n"
                  "<Growth> ::= GrowByPages\n"
                  "\n"
                  "# Not the paper's: the page source's budget for large chunks given back\n"
                  "# (the .dmm line `retain bytes=B`): up to B bytes of chunks of 64 KiB and\n"
                  "# more kept, pages and all, for the next request of their length, instead\n"
                  "# of 1 MiB; 0 gives each back to the OS at once.\n"
                  "<Retain> ::= Retain <RetainBytes>\n"
                  "<RetainBytes> ::= 0 | 262144 | 4194304 | 67108864\n"
                  "\n"
                  "# Not the paper's: memory held in 2 MiB extents of transparent huge pages\n"
                  "# (the .dmm line `pages huge=yes`): one page fault per extent instead of\n"
                  "# 512, each extent held whole while any chunk lies in it.\n"
                  "<HugePages> ::= HugePages\n");
}

char *dmm_grammar_for_ops(const dmm_opstream_t *os, int paper, const char *trace_name,
                          dmm_err_t *err)
{
    return dmm_grammar_for_streams(&os, 1, paper, trace_name, err);
}

char *dmm_grammar_for_streams(const dmm_opstream_t *const *streams, int nstreams, int paper,
                              const char *trace_name, dmm_err_t *err)
{
    const char *tn = trace_name ? trace_name : "trace";
    if (err)
        err->msg[0] = 0;
    /* the distinct sizes, in a set: a big trace has millions of requests
     * and a few thousand sizes */
    dmm_u64map_t set = DMM_U64MAP_INIT;
    size_t nalloc = 0;
    for (int k = 0; k < nstreams; k++) {
        const dmm_opstream_t *os = streams[k];
        for (size_t i = 0; i < os->nops; i++) {
            const dmm_op_t *o = &os->ops[i];
            if (o->kind != DMM_OP_ALLOC && o->kind != DMM_OP_REALLOC)
                continue;
            nalloc++;
            /* 0 asks for no bytes, and SIZE_MAX means "unbounded" in a range */
            if (o->size == 0 || o->size >= (uint64_t)SIZE_MAX)
                continue;
            if (dmm_u64map_put(&set, o->size, 1) != 0) {
                dmm_u64map_free(&set);
                dmm_err_set(err, "%s: out of memory", tn);
                return NULL;
            }
        }
    }
    size_t nsz = dmm_u64map_count(&set);
    uint64_t *sz = malloc((nsz ? nsz : 1) * sizeof *sz);
    if (!sz) {
        dmm_u64map_free(&set);
        dmm_err_set(err, "%s: out of memory", tn);
        return NULL;
    }
    size_t pos = 0, k = 0;
    uint64_t key, val;
    while (k < nsz && dmm_u64map_next(&set, &pos, &key, &val))
        sz[k++] = key;
    dmm_u64map_free(&set);
    if (nalloc == 0 || nsz == 0) {
        free(sz);
        if (nalloc == 0)
            dmm_err_set(err, "%s: no allocation operations: nothing to build a grammar from",
                    tn);
        else
            dmm_err_set(err,
                    "%s: every allocation asks for 0 bytes: nothing to build a grammar from", tn);
        return NULL;
    }
    qsort(sz, nsz, sizeof *sz, cmp_u64);
    size_t u = 0;
    for (size_t i = 0; i < nsz; i++)
        if (u == 0 || sz[i] != sz[u - 1])
            sz[u++] = sz[i];
    nsz = u;

    sbuf_t b = { 0 };
    sb_printf(&b,
              "# dmm grammar: the designs of a dynamic memory manager, as the BNF of\n"
              "# Risco-Martin et al. (grammatical evolution of DMMs, Figure 3).\n"
              "# trace: %s\n"
              "# <Size>: the %zu distinct request sizes of the trace (%llu .. %llu bytes);\n"
              "# <MaxSize>: the largest.  Classes: %s%s.\n"
              "#\n"
              "# A DMM is a chain of allocators; each serves the sizes from the previous\n"
              "# allocator's size (exclusive; 0 for the first) up to its own.\n"
              "#\n"
              "# <Allocators> holds the paper's <AllocatorSize> and <AllocatorMaxSize>\n"
              "# (its rules III and IV) inlined as its two alternatives, the MaxSize one\n"
              "# FIRST.  The mapper reads a codon for every non-terminal it expands, single-\n"
              "# alternative ones included; inlined, the paper's worked example decodes as\n"
              "# printed: its Figure 4 genome reads 17 codons (213 mod 2 = 1 picks an\n"
              "# allocator with a <Size> and more to follow, 114 mod 2 = 0 the last one,\n"
              "# with <MaxSize>) and gives its Table 1 (but for the paper's slip\n"
              "# \"197 mod 3 = 0\": it is 2, EXACT).  Edit freely: the GE engine reads any\n"
              "# grammar in this notation.\n"
              "\n",
              tn, nsz, (unsigned long long)sz[0], (unsigned long long)sz[nsz - 1],
              paper ? "the paper's five" : "the paper's five, Kingsley, Lea and TLSF",
              paper ? "" : "; a block cache, a release policy, growth by pages, a retain budget, "
                              "huge pages");
    put_rules(&b, sz, nsz, paper);
    free(sz);
    if (b.oom) {
        free(b.s);
        dmm_err_set(err, "%s: out of memory", tn);
        return NULL;
    }
    return b.s;
}
