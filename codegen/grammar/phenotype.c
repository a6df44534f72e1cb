/* phenotype.c - a phenotype (the terminals a mapping produced) read as a
 * DMM description (dmm_phenotype_to_desc, grammar.h): seven words per
 * allocator, in the paper's order, after "BlockCache MAX COUNT" when the
 * grammar gave the chain a block cache, "Release KEEP DELAY" when it gave
 * it a release policy, "GrowByPages" when it gave it growth by pages and
 * "Retain BYTES" when it gave the page source a retain budget and
 * "HugePages" when it gave it huge pages (in that order). */
#include "codegen/grammar/grammar.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "codegen/grammar/bnf.h"

typedef struct word {
    const char *s;
    size_t      n;
} word_t;

static int word_eq(word_t w, const char *s)
{
    size_t n = strlen(s);
    return w.n == n && strncasecmp(w.s, s, n) == 0;
}

static int word_index(word_t w, const char *const *names, int count)
{
    for (int i = 0; i < count; i++)
        if (word_eq(w, names[i]))
            return i;
    return -1;
}

static const struct {
    const char *name;
    dmm_class_t cls;
} paper_classes[] = {
    { "SegregatedFreeList", DMM_CLASS_SEGREGATED },
    { "SimpleSegregatedStorage", DMM_CLASS_SSS },
    { "ExactSegregatedFit", DMM_CLASS_EXACT },
    { "BuddySystemBinary", DMM_CLASS_BUDDY_BINARY },
    { "BuddySystemFibonacci", DMM_CLASS_BUDDY_FIB },
    { "Kingsley", DMM_CLASS_KINGSLEY },
    { "Lea", DMM_CLASS_LEA },
    { "TLSF", DMM_CLASS_TLSF },
};

static dmm_class_t class_of(word_t w)
{
    for (size_t i = 0; i < sizeof paper_classes / sizeof paper_classes[0]; i++)
        if (word_eq(w, paper_classes[i].name))
            return paper_classes[i].cls;
    for (int c = 1; c < DMM_CLASS_COUNT; c++) {
        const char *n = dmm_class_name((dmm_class_t)c);
        if (n && word_eq(w, n))
            return (dmm_class_t)c;
    }
    return DMM_CLASS_NONE;
}

static int bool_of(word_t w)
{
    static const char *const yes[] = { "true", "yes" }, *const no[] = { "false", "no" };
    if (word_index(w, yes, 2) >= 0)
        return 1;
    if (word_index(w, no, 2) >= 0)
        return 0;
    return -1;
}

/* A size: decimal digits, below SIZE_MAX (which means "unbounded"). */
static int size_of(word_t w, size_t *out)
{
    if (w.n == 0 || w.n > 20)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < w.n; i++) {
        if (w.s[i] < '0' || w.s[i] > '9')
            return -1;
        unsigned d = (unsigned)(w.s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    if (v >= (uint64_t)SIZE_MAX)
        return -1;
    *out = (size_t)v;
    return 0;
}

static int next_word(const char **p, word_t *w)
{
    const char *s = *p;
    while (*s && isspace((unsigned char)*s))
        s++;
    if (!*s)
        return 0;
    const char *e = s;
    while (*e && !isspace((unsigned char)*e))
        e++;
    w->s = s;
    w->n = (size_t)(e - s);
    *p = e;
    return 1;
}

/* "BlockCache M K" (the word BlockCache read): M and K into d. */
static int cache_of(const char **p, dmm_desc_t *d, dmm_err_t *err)
{
    word_t w = { "", 0 };
    size_t v[2];
    static const char *const what[] = { "cache size (16 to 1024 bytes)",
                                        "cache count (1 to 4096 blocks)" };
    static const size_t lo[] = { 16, 1 }, hi[] = { DMM_DESC_CACHE_MAX, DMM_DESC_CACHE_COUNT };
    for (int i = 0; i < 2; i++) {
        if (!next_word(p, &w) || size_of(w, &v[i]) != 0 || v[i] < lo[i] || v[i] > hi[i]) {
            dmm_err_set(err, "phenotype: terminal %d: '%.*s' is not a %s", i + 2,
                        (int)(w.n > 64 ? 64 : w.n), w.s, what[i]);
            memset(d, 0, sizeof *d);
            return -1;
        }
    }
    d->cache_max = (uint32_t)v[0];
    d->cache_count = (uint32_t)v[1];
    return 0;
}

/* "Release KEEP DELAY" (the word Release read), each a number or inf. */
static int release_of(const char **p, dmm_desc_t *d, size_t at, dmm_err_t *err)
{
    word_t w = { "", 0 };
    size_t v[2];
    static const char *const what[] = { "release keep (bytes, or inf)",
                                        "release delay (calls, or inf)" };
    for (int i = 0; i < 2; i++) {
        if (!next_word(p, &w) || (!word_eq(w, "inf") && size_of(w, &v[i]) != 0)) {
            dmm_err_set(err, "phenotype: terminal %zu: '%.*s' is not a %s", at + (size_t)i + 2,
                        (int)(w.n > 64 ? 64 : w.n), w.s, what[i]);
            memset(d, 0, sizeof *d);
            return -1;
        }
        if (word_eq(w, "inf"))
            v[i] = SIZE_MAX;
    }
    d->release.on = 1;
    d->release.keep = v[0];
    d->release.delay = v[1] == SIZE_MAX ? UINT64_MAX : (uint64_t)v[1];
    return 0;
}

/* "Retain BYTES" (the word Retain read). */
static int retain_of(const char **p, dmm_desc_t *d, size_t at, dmm_err_t *err)
{
    word_t w = { "", 0 };
    size_t v;
    if (!next_word(p, &w) || size_of(w, &v) != 0) {
        dmm_err_set(err, "phenotype: terminal %zu: '%.*s' is not a retain budget (bytes)",
                    at + 2, (int)(w.n > 64 ? 64 : w.n), w.s);
        memset(d, 0, sizeof *d);
        return -1;
    }
    d->retain_set = 1;
    d->retain = v;
    return 0;
}

/* The options before the first allocator, in the grammar's order (block
 * cache, release policy, growth, retain budget, huge pages), read from *p into d;
 * *skip: the terminals they took.  0, or -1 with err set. */
static int options_of(const char **p, dmm_desc_t *d, size_t *skip, dmm_err_t *err)
{
    const char *q = *p;
    word_t w;
    *skip = 0;
    if (next_word(&q, &w) && word_eq(w, "BlockCache")) {
        if (cache_of(&q, d, err) != 0)
            return -1;
        *skip = 3;
        *p = q;
    }
    q = *p;
    if (next_word(&q, &w) && word_eq(w, "Release")) {
        if (release_of(&q, d, *skip, err) != 0)
            return -1;
        *skip += 3;
        *p = q;
    }
    q = *p;
    if (next_word(&q, &w) && word_eq(w, "GrowByPages")) {
        d->grow = DMM_GROW_PAGES;
        *skip += 1;
        *p = q;
    }
    q = *p;
    if (next_word(&q, &w) && word_eq(w, "Retain")) {
        if (retain_of(&q, d, *skip, err) != 0)
            return -1;
        *skip += 2;
        *p = q;
    }
    q = *p;
    if (next_word(&q, &w) && word_eq(w, "HugePages")) {
        d->huge = 1;
        *skip += 1;
        *p = q;
    }
    return 0;
}

/* " after the block cache's 3 and ..." for the options d holds, into buf
 * ("" for none). */
static void options_said(const dmm_desc_t *d, char *buf, size_t cap)
{
    const char *part[5];
    int np = 0;
    if (d->cache_max)
        part[np++] = "the block cache's 3";
    if (d->release.on)
        part[np++] = "the release policy's 3";
    if (d->grow)
        part[np++] = "the growth's 1";
    if (d->retain_set)
        part[np++] = "the retain budget's 2";
    if (d->huge)
        part[np++] = "the huge pages' 1";
    buf[0] = 0;
    size_t at = 0;
    for (int i = 0; i < np && at < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%s", i ? " and " : " after ", part[i]);
}

int dmm_phenotype_to_desc(const char *phenotype, dmm_desc_t *d, dmm_err_t *err)
{
    static const char *const lists[] = { "SLL", "DLL", "BTREE" };
    static const char *const fits[] = { "FIRST", "BEST", "EXACT" };
    static const char *const orders[] = { "FIFO", "LIFO" };
    static const char *const field[] = { "class", "splitting", "coalescing", "size",
                                         "data structure", "mechanism", "policy" };
    if (err)
        err->msg[0] = 0;
    if (!d) {
        dmm_err_set(err, "phenotype: no description to fill");
        return -1;
    }
    memset(d, 0, sizeof *d);
    if (!phenotype) {
        dmm_err_set(err, "phenotype: empty");
        return -1;
    }
    /* count first: the error for a wrong count names it */
    size_t nw = 0;
    word_t w;
    for (const char *p = phenotype; next_word(&p, &w);)
        nw++;
    if (nw == 0) {
        dmm_err_set(err, "phenotype: 0 terminals; an allocator is 7 (class, splitting, "
                    "coalescing, size, data structure, mechanism, policy)");
        return -1;
    }
    const char *p = phenotype;
    size_t skip;   /* terminals before the first allocator */
    if (options_of(&p, d, &skip, err) != 0)
        return -1;
    nw -= skip;
    if (nw == 0 || nw % 7 != 0) {
        char after[128];
        options_said(d, after, sizeof after);
        dmm_err_set(err,
                "phenotype: %zu terminals%s; an allocator is 7 (class, splitting, "
                "coalescing, size, data structure, mechanism, policy)", nw, after);
        memset(d, 0, sizeof *d);
        return -1;
    }
    size_t prev = 0;   /* the top of the ranges kept so far */
    for (size_t k = 0; k < nw / 7; k++) {
        dmm_alloc_desc_t a;
        memset(&a, 0, sizeof a);
        size_t size = 0;
        for (int f = 0; f < 7; f++) {
            next_word(&p, &w);
            int v = 0;
            switch (f) {
            case 0: a.cls = class_of(w); v = a.cls == DMM_CLASS_NONE ? -1 : 0; break;
            case 1: v = bool_of(w); a.split = (uint8_t)(v > 0); break;
            case 2: v = bool_of(w); a.coalesce = (uint8_t)(v > 0); break;
            case 3: v = size_of(w, &size); break;
            case 4: v = word_index(w, lists, 3); a.list = (uint8_t)(v > 0 ? v : 0); break;
            case 5: v = word_index(w, fits, 3); a.fit = (uint8_t)(v > 0 ? v : 0); break;
            default: v = word_index(w, orders, 2); a.order = (uint8_t)(v > 0 ? v : 0); break;
            }
            if (v < 0) {
                dmm_err_set(err, "phenotype: allocator %zu, terminal %zu: '%.*s' is not a %s",
                        k + 1, skip + k * 7 + (size_t)f + 1, (int)(w.n > 64 ? 64 : w.n), w.s,
                        f == 3 ? "size below 2^64 - 1" : field[f]);
                memset(d, 0, sizeof *d);
                return -1;
            }
        }
        /* (prev, size]; nothing to serve when size is not above prev */
        if (size <= prev)
            continue;
        if (d->n == DMM_DESC_MAX) {
            dmm_err_set(err, "phenotype: more than %d allocators with a range", DMM_DESC_MAX);
            memset(d, 0, sizeof *d);
            return -1;
        }
        a.lo = prev;
        a.hi = size;
        d->a[d->n++] = a;
        prev = size;
    }
    if (d->n == 0) {
        dmm_err_set(err, "phenotype: no allocator serves any size (every size is 0)");
        return -1;
    }
    return 0;
}
