/* emit.c - a .dmm description as the C source of libdmm_evolved.so (see
 * emit.h). */
#include "codegen/emit/emit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "allocators/core/alloc.h"
#include "allocators/classes/registry.h"

/* How the generated C names each class: its dmm_class_t constant and the
 * ops struct of allocators/classes/<class>.c. */
typedef struct class_names {
    const char *id;
    const char *ops;
    const char *usable;   /* its usable() by name (registry.h, segfit.h) */
    const char *malloc, *free, *resize;   /* by name, where the class has
                                           * them (registry.h); else through
                                           * ops */
} class_names_t;

static const class_names_t classes[DMM_CLASS_COUNT] = {
    [DMM_CLASS_BUDDY_BINARY] = { .id = "DMM_CLASS_BUDDY_BINARY", .ops = "dmm_class_buddy_binary",
                                 .usable = "dmm_buddy_usable" },
    [DMM_CLASS_BUDDY_FIB] = { .id = "DMM_CLASS_BUDDY_FIB", .ops = "dmm_class_buddy_fib",
                              .usable = "dmm_buddy_usable" },
    [DMM_CLASS_SEGREGATED] = { .id = "DMM_CLASS_SEGREGATED", .ops = "dmm_class_segregated",
                               .usable = "dmm_seg_usable" },
    [DMM_CLASS_SSS] = { .id = "DMM_CLASS_SSS", .ops = "dmm_class_sss", .usable = "dmm_sss_usable",
                        .malloc = "dmm_sss_malloc", .free = "dmm_sss_free",
                        .resize = "dmm_sss_resize" },
    [DMM_CLASS_EXACT] = { .id = "DMM_CLASS_EXACT", .ops = "dmm_class_exact",
                          .usable = "dmm_seg_usable" },
    [DMM_CLASS_KINGSLEY] = { .id = "DMM_CLASS_KINGSLEY", .ops = "dmm_class_kingsley",
                             .usable = "dmm_kingsley_usable" },
    [DMM_CLASS_LEA] = { .id = "DMM_CLASS_LEA", .ops = "dmm_class_lea", .usable = "dmm_lea_usable" },
    [DMM_CLASS_TLSF] = { .id = "DMM_CLASS_TLSF", .ops = "dmm_class_tlsf",
                         .usable = "dmm_seg_usable" },
};

static const char *const list_names[] = { "SLL", "DLL", "BTREE" };
static const char *const fit_names[] = { "FIRST", "BEST", "EXACT" };
static const char *const order_names[] = { "FIFO", "LIFO" };
static const char *const list_ids[] = { "DMM_LIST_SLL", "DMM_LIST_DLL", "DMM_LIST_BTREE" };
static const char *const fit_ids[] = { "DMM_FIT_FIRST", "DMM_FIT_BEST", "DMM_FIT_EXACT" };
static const char *const order_ids[] = { "DMM_ORDER_FIFO", "DMM_ORDER_LIFO" };

/* The paper's class name, for the map. */
static const char *paper_class(dmm_class_t c)
{
    const char *p = dmm_class_paper_name(c);
    return p ? p : "?";
}

/* Text for inside a comment: no "*" followed by "/", printable ASCII only. */
static void put_comment_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '*' && s[1] == '/')
            fputs("* ", f);
        else
            fputc(ch >= 0x20 && ch < 0x7f ? ch : '?', f);
    }
}

static void put_c_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch >= 0x20 && ch < 0x7f && !(ch == '?' && s[1] == '?'))
            fputc(ch, f);
        else
            fprintf(f, "\\%03o", ch);
    }
    fputc('"', f);
}

static void put_size(FILE *f, size_t n)
{
    if (n == DMM_SIZE_INF)
        fputs("inf", f);
    else
        fprintf(f, "%zu", n);
}

/* The paper's Table 1: a line per allocator class, then its data structure,
 * mechanism(policy) and range. */
static void put_map(FILE *f, const dmm_desc_t *d, const char *indent)
{
    for (int i = 0; i < d->n; i++) {
        const dmm_alloc_desc_t *a = &d->a[i];
        fprintf(f, "%s%s, split=%s, coalesce=%s", indent, paper_class(a->cls),
                a->split ? "true" : "false", a->coalesce ? "true" : "false");
        if (a->cls == DMM_CLASS_SEGREGATED && a->lists)
            fprintf(f, ", lists=%u", (unsigned)a->lists);
        fprintf(f, "\n%s  %-16s%-20s%s\n", indent, "Data Structure", "Mechanism(Policy)",
                "Range (bytes)");
        char mech[32];
        snprintf(mech, sizeof mech, "%s(%s)", fit_names[a->fit], order_names[a->order]);
        fprintf(f, "%s  %-16s%-20s(%zu, ", indent, list_names[a->list], mech, a->lo);
        put_size(f, a->hi);
        fputs("]\n", f);
    }
}

static void put_header(FILE *f, const dmm_desc_t *d, const dmm_emit_info_t *in)
{
    fputs("/* dmm_evolved.c - a dynamic memory manager made for one program, written by\n"
          " * `dmm codegen`", f);
    if (in->source) {
        fputs(" from ", f);
        put_comment_text(f, in->source);
    }
    fputs(".  Regenerate it rather than edit it.\n *\n", f);
    const struct { const char *k, *v; } facts[] = {
        { "trace", in->trace }, { "seed", in->seed }, { "fitness", in->fitness },
    };
    for (size_t i = 0; i < sizeof facts / sizeof facts[0]; i++) {
        fprintf(f, " *   %-9s", facts[i].k);
        put_comment_text(f, facts[i].v ? facts[i].v : "(not given)");
        fputc('\n', f);
    }
    if (d->title[0]) {
        fprintf(f, " *   %-9s", "title");
        put_comment_text(f, d->title);
        fputc('\n', f);
    }
    fputs(" *\n * The DMM map (the paper's Table 1 layout), in chain order:\n *\n", f);
    put_map(f, d, " *   ");
    if (d->cache_max)
        fprintf(f, " *   Block cache, per thread: up to %u freed blocks per 8-byte size, up to\n"
                   " *   %u bytes, served again without calling their allocator.\n",
                (unsigned)d->cache_count, (unsigned)d->cache_max);
    if (d->release.on) {
        char line[96];
        dmm_desc_print_release(d, line, sizeof line);
        fprintf(f, " *   Empty areas given back to the page source: %s\n"
                   " *   (the oldest first, beyond keep= bytes or after delay= calls).\n", line);
    }
    if (d->grow == DMM_GROW_PAGES)
        fputs(" *   Growth by pages: while an allocator that reads it holds less than\n"
              " *   256 KiB, it takes whole pages, at least a quarter of what it holds.\n", f);
    if (d->huge)
        fputs(" *   Memory held in 2 MiB extents of transparent huge pages: one page fault\n"
              " *   per extent, each extent held whole while any chunk lies in it.\n", f);
    if (d->pool)
        fprintf(f, " *   A pool of %zu bytes held from the start, its pages populated: the\n"
                   " *   calls that take chunks inside it make no system call and no page fault.\n",
                d->pool);
    if (d->retain_set)
        fprintf(f, " *   The page source keeps up to %zu bytes of large chunks given back, for\n"
                   " *   the next request of their length (without a retain line: %u).\n",
                d->retain, (unsigned)DMM_RETAIN_BYTES);
    fputs(" *\n * Requests in no range above, and alignments above 16 bytes, take the\n"
          " * chain's fallback path (a page-granular chunk of their own).\n *\n"
          " * libdmm_evolved.so links this file with preload/shim/backend_evolved.c,\n"
          " * which calls it by the names of preload/shim/dmm_evolved.h: dmm_evolved_desc\n"
          " * builds the chain, dmm_evolved_which() picks an allocator with the range\n"
          " * bounds as constants, and the class calls below name each allocator's ops,\n"
          " * which link-time optimisation turns into direct calls. */\n", f);
}

static void put_desc(FILE *f, const dmm_desc_t *d)
{
    fputs("static const dmm_desc_t dmm_evolved_desc = {\n", f);
    fprintf(f, "    .n = %d,\n    .a = {\n", d->n);
    for (int i = 0; i < d->n; i++) {
        const dmm_alloc_desc_t *a = &d->a[i];
        fprintf(f, "        { .cls = %s, .lo = %zu, .hi = ", classes[a->cls].id, a->lo);
        if (a->hi == DMM_SIZE_INF)
            fputs("DMM_SIZE_INF", f);
        else
            fprintf(f, "%zu", a->hi);
        fprintf(f, ",\n          .split = %u, .coalesce = %u, .list = %s, .fit = %s, .order = %s",
                a->split, a->coalesce, list_ids[a->list], fit_ids[a->fit], order_ids[a->order]);
        if (a->lists)
            fprintf(f, ", .lists = %u", (unsigned)a->lists);
        fputs(" },\n", f);
    }
    fputs("    },\n", f);
    if (d->cache_max)
        fprintf(f, "    .cache_max = %u, .cache_count = %u,\n", (unsigned)d->cache_max,
                (unsigned)d->cache_count);
    if (d->release.on) {
        fputs("    .release = { .on = 1, .keep = ", f);
        if (d->release.keep == DMM_SIZE_INF)
            fputs("DMM_SIZE_INF", f);
        else
            fprintf(f, "%zu", d->release.keep);
        if (d->release.delay == UINT64_MAX)
            fputs(", .delay = UINT64_MAX },\n", f);
        else
            fprintf(f, ", .delay = %lluull },\n", (unsigned long long)d->release.delay);
    }
    if (d->grow == DMM_GROW_PAGES)
        fputs("    .grow = DMM_GROW_PAGES,\n", f);
    if (d->huge)
        fputs("    .huge = 1,\n", f);
    if (d->pool)
        fprintf(f, "    .pool = %zu,\n", d->pool);
    if (d->retain_set)
        fprintf(f, "    .retain_set = 1, .retain = %zu,\n", d->retain);
    fputs("    .title = ", f);
    put_c_string(f, d->title);
    fputs(",\n};\n\n", f);
    fputs("const dmm_desc_t *dmm_evolved_description(void)\n{\n"
          "    return &dmm_evolved_desc;\n}\n\n", f);
}

static void put_which(FILE *f, const dmm_desc_t *d)
{
    fputs("/* The allocator that serves n bytes (n >= 1), or -1 for the fallback path. */\n"
          "static inline int dmm_evolved_which(size_t n)\n{\n"
          "    (void)n;   /* one allocator of (0,inf] needs no bound */\n", f);
    size_t prev_hi = 0;
    int open_end = 0;
    for (int i = 0; i < d->n; i++) {
        const dmm_alloc_desc_t *a = &d->a[i];
        if (a->lo > prev_hi)
            fprintf(f, "    if (n <= %zu)\n        return -1;\n", a->lo);
        if (a->hi == DMM_SIZE_INF) {
            fprintf(f, "    return %d;\n", i);
            open_end = 1;
            break;
        }
        fprintf(f, "    if (n <= %zu)\n        return %d;\n", a->hi, i);
        prev_hi = a->hi;
    }
    if (!open_end)
        fputs("    return -1;\n", f);
    fputs("}\n\n/* The same, by the name the library's back end calls. */\n"
          "int dmm_evolved_pick(size_t n)\n{\n    return dmm_evolved_which(n);\n}\n\n", f);
}

/* One function of the generated file: a switch on the allocator index i,
 * each case's statement written by body, deflt for any other i. */
typedef void (*case_fn)(FILE *f, const dmm_desc_t *d, int i);

static void put_switch_after(FILE *f, const dmm_desc_t *d, const char *head, const char *pre,
                             case_fn body, const char *deflt)
{
    fprintf(f, "%s\n{\n%s    switch (i) {\n", head, pre);
    for (int i = 0; i < d->n; i++) {
        fprintf(f, "    case %d:\n        ", i);
        body(f, d, i);
    }
    fprintf(f, "    default:\n        %s\n    }\n}\n\n", deflt);
}

static void put_switch(FILE *f, const dmm_desc_t *d, const char *head, case_fn body,
                       const char *deflt)
{
    put_switch_after(f, d, head, "", body, deflt);
}

static void case_malloc(FILE *f, const dmm_desc_t *d, int i)
{
    const dmm_alloc_desc_t *a = &d->a[i];
    const class_names_t *k = &classes[a->cls];
    if (k->malloc)
        fprintf(f, "return %s(&c->alloc[%d], n);\n", k->malloc, i);
    else
        fprintf(f, "return %s.malloc(&c->alloc[%d], n);\n", k->ops, i);
}

static void case_free(FILE *f, const dmm_desc_t *d, int i)
{
    const dmm_alloc_desc_t *a = &d->a[i];
    const class_names_t *k = &classes[a->cls];
    if (k->free)
        fprintf(f, "%s(&c->alloc[%d], p);\n        break;\n", k->free, i);
    else
        fprintf(f, "%s.free(&c->alloc[%d], p);\n        break;\n", k->ops, i);
}

static void case_resize(FILE *f, const dmm_desc_t *d, int i)
{
    const class_names_t *k = &classes[d->a[i].cls];
    if (k->resize)
        fprintf(f, "return %s(&c->alloc[%d], p, n);\n", k->resize, i);
    else
        fprintf(f, "return %s.resize(&c->alloc[%d], p, n);\n", k->ops, i);
}

/* Allocator i has a common case alone: sss keeping an SLL or a DLL, under a
 * release policy or none (an SLL under none: what its state's `fast` says
 * at run time, known here). */
static int has_fast(const dmm_desc_t *d, int i)
{
    return d->a[i].cls == DMM_CLASS_SSS &&
           (d->a[i].list == DMM_LIST_SLL || d->a[i].list == DMM_LIST_DLL);
}

/* The call of sss's common case for allocator i (has_fast): op is "malloc"
 * or "free", arg its argument. */
static void put_fast_call(FILE *f, const dmm_desc_t *d, int i, const char *op, const char *arg)
{
    int lifo = d->a[i].order == DMM_ORDER_LIFO;
    if (d->a[i].list == DMM_LIST_SLL && !d->release.on)
        fprintf(f, "return dmm_sss_%s_fast_sll(&c->alloc[%d], %s, %d);\n", op, i, arg, lifo);
    else
        fprintf(f, "return dmm_sss_%s_fast_known(&c->alloc[%d], %s, %d, %d, %d);\n", op, i, arg,
                d->a[i].list == DMM_LIST_DLL, dmm_sss_release_form(&d->release), lifo);
}

static void case_malloc_fast(FILE *f, const dmm_desc_t *d, int i)
{
    if (has_fast(d, i))
        put_fast_call(f, d, i, "malloc", "n");
    else
        fputs("return NULL;\n", f);
}

static void case_free_fast(FILE *f, const dmm_desc_t *d, int i)
{
    if (has_fast(d, i))
        put_fast_call(f, d, i, "free", "p");
    else
        fputs("return 0;\n", f);
}

/* The most usable bytes a block of allocator i can have; SIZE_MAX where
 * no bound is known here (every class but sss). */
static size_t usable_max(const dmm_desc_t *d, int i)
{
    return d->a[i].cls == DMM_CLASS_SSS ? dmm_sss_usable_max(&d->a[i]) : SIZE_MAX;
}

static void case_usable(FILE *f, const dmm_desc_t *d, int i)
{
    const dmm_alloc_desc_t *a = &d->a[i];
    fprintf(f, "return %s(&c->alloc[%d], p);\n",
            usable_max(d, i) != SIZE_MAX ? "dmm_sss_usable_classed" : classes[a->cls].usable,
            i);
}

static void case_usable_max(FILE *f, const dmm_desc_t *d, int i)
{
    size_t m = usable_max(d, i);
    if (m == SIZE_MAX)
        fputs("return (size_t)-1;\n", f);
    else
        fprintf(f, "return %zu;\n", m);
}

static void case_nolock(FILE *f, const dmm_desc_t *d, int i)
{
    const dmm_class_ops_t *ops = dmm_class_ops(d->a[i].cls);
    fprintf(f, "return %d;\n", ops && ops->usable_nolock ? 1 : 0);
}

static void case_hdr(FILE *f, const dmm_desc_t *d, int i)
{
    const dmm_class_ops_t *ops = dmm_class_ops(d->a[i].cls);
    fprintf(f, "return %d;\n", ops && ops->hdr_usable ? 1 : 0);
}

/* Which cache bins the blocks that can enter the cache lie in (those of
 * every allocator whose range starts below max=): 1, odd bins alone (every
 * one of those classes sizes its blocks from the header word: 16k - 8
 * bytes); 2, even bins alone (sss: multiples of 16); 0, either, or no
 * cache. */
static int cache_parity(const dmm_desc_t *d)
{
    int odd = 0, even = 0;
    for (int i = 0; d->cache_max && i < d->n; i++) {
        if (d->a[i].lo >= d->cache_max)
            continue;   /* its blocks are larger than max= */
        const dmm_class_ops_t *ops = dmm_class_ops(d->a[i].cls);
        if (d->a[i].cls == DMM_CLASS_SSS)
            even = 1;
        else if (ops && ops->hdr_usable)
            odd = 1;
        else
            return 0;
    }
    return odd && !even ? 1 : even && !odd ? 2 : 0;
}

static void put_calls(FILE *f, const dmm_desc_t *d)
{
    fputs("/* Allocator i of chain c, through its class's ops by name.  inline: a hint\n"
          " * that lets link-time optimisation put them into malloc and free. */\n", f);
    put_switch(f, d, "inline void *dmm_evolved_class_malloc(dmm_chain_t *c, int i, size_t n)",
               case_malloc, "return NULL;");
    put_switch(f, d, "inline void dmm_evolved_class_free(dmm_chain_t *c, int i, void *p)",
               case_free, "break;");
    put_switch(f, d,
               "inline size_t dmm_evolved_class_usable(dmm_chain_t *c, int i, const void *p)",
               case_usable, "return 0;");
    put_switch(f, d, "inline int dmm_evolved_class_resize(dmm_chain_t *c, int i, void *p, size_t n)",
               case_resize, "return -1;");
    int fast = 0;
    for (int i = 0; i < d->n; i++)
        fast |= has_fast(d, i);
    fputs("/* Allocator i's common case alone, calling nothing (sss): a block, or\n"
          " * NULL (free: 1, or 0) when the caller must take the locked way. */\n", f);
    fprintf(f, "inline int dmm_evolved_has_fast(void)\n{\n    return %d;\n}\n\n", fast);
    put_switch_after(f, d,
                     "inline void *dmm_evolved_class_malloc_fast(dmm_chain_t *c, int i, size_t n)",
                     "    (void)c;\n    (void)n;\n", case_malloc_fast, "return NULL;");
    put_switch_after(f, d, "inline int dmm_evolved_class_free_fast(dmm_chain_t *c, int i, void *p)",
                     "    (void)c;\n    (void)p;\n", case_free_fast, "return 0;");
    fputs("/* Allocator i's usable() needs no lock (its class's usable_nolock). */\n", f);
    put_switch(f, d, "inline int dmm_evolved_usable_nolock(int i)", case_nolock, "return 0;");
    fputs("/* dmm_hdr_usable() sizes allocator i's blocks (its class's hdr_usable). */\n", f);
    put_switch(f, d, "inline int dmm_evolved_hdr_usable(int i)", case_hdr, "return 0;");
    fputs("/* The most usable bytes a block of allocator i can have ((size_t)-1: not\n"
          " * known here). */\n", f);
    put_switch(f, d, "inline size_t dmm_evolved_usable_max(int i)", case_usable_max,
               "return (size_t)-1;");
    fprintf(f, "inline int dmm_evolved_count(void)\n{\n    return %d;\n}\n\n", d->n);
    fprintf(f, "/* The block cache (allocators/chain/cache.h): max= and count=, 0 for none. */\n"
               "inline unsigned dmm_evolved_cache_max(void)\n{\n    return %uu;\n}\n\n"
               "inline unsigned dmm_evolved_cache_count(void)\n{\n    return %uu;\n}\n",
            (unsigned)d->cache_max, (unsigned)d->cache_count);
    fprintf(f, "\n/* The cache bins its blocks can lie in: 1 odd alone, 2 even alone, 0 either. */\n"
               "inline int dmm_evolved_cache_parity(void)\n{\n    return %d;\n}\n",
            cache_parity(d));
}

void dmm_emit_info_from_title(const dmm_desc_t *d, dmm_emit_info_t *info, dmm_emit_title_t *t)
{
    if (!info->trace)
        info->trace = dmm_desc_title_value(d, "trace", t->trace, sizeof t->trace);
    if (!info->seed)
        info->seed = dmm_desc_title_value(d, "seed", t->seed, sizeof t->seed);
    if (!info->fitness)
        info->fitness = dmm_desc_title_value(d, "fitness", t->fitness, sizeof t->fitness);
}

int dmm_emit_c(FILE *f, const dmm_desc_t *d, const dmm_emit_info_t *info)
{
    dmm_emit_info_t none = { 0 };
    for (int i = 0; i < d->n; i++)
        if ((unsigned)d->a[i].cls >= DMM_CLASS_COUNT || !classes[d->a[i].cls].ops ||
            d->a[i].list > DMM_LIST_BTREE || d->a[i].fit > DMM_FIT_EXACT ||
            d->a[i].order > DMM_ORDER_LIFO) {
            errno = EINVAL;
            return -1;
        }
    if (d->cache_max > DMM_DESC_CACHE_MAX || d->cache_count > DMM_DESC_CACHE_COUNT ||
        !d->cache_max != !d->cache_count) {
        errno = EINVAL;
        return -1;
    }
    put_header(f, d, info ? info : &none);
    fputs("#ifndef DMM_EVOLVED_C\n#define DMM_EVOLVED_C\n\n"
          "#include \"preload/shim/dmm_evolved.h\"\n\n#include <stddef.h>\n\n"
          "#include \"allocators/core/alloc.h\"\n#include \"allocators/chain/chain.h\"\n"
          "#include \"allocators/chain/desc.h\"\n#include \"allocators/classes/registry.h\"\n"
          "#include \"allocators/classes/segfit.h\"\n\n", f);
    put_desc(f, d);
    put_which(f, d);
    put_calls(f, d);
    fputs("\n#endif\n", f);
    return ferror(f) ? -1 : 0;
}
