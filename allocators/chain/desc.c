/* desc.c - parse and print .dmm descriptions (see desc.h).  No malloc:
 * libdmm.so parses DMM_CONFIG before it has a heap. */
#include "allocators/chain/desc.h"
#include "allocators/classes/registry.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

/* The paper's five reference managers (section 7). */
static const struct { const char *name, *text; } presets[] = {
    { "kng", "# dmm 1 preset=kng  Kingsley: power-of-two classes, no split or coalesce\n"
             "kingsley      range=(0,inf]          split=no  coalesce=no  list=sll   fit=exact order=lifo\n" },
    { "lea", "# dmm 1 preset=lea  Lea: exact small bins, sorted large bins, best fit, coalescing\n"
             "lea           range=(0,inf]          split=yes coalesce=yes list=dll   fit=best  order=fifo\n" },
    { "fib", "# dmm 1 preset=fib  Fibonacci buddy system\n"
             "buddy-fib     range=(0,inf]          split=yes coalesce=yes list=dll   fit=first order=lifo\n" },
    { "s10", "# dmm 1 preset=s10  ten segregated free lists\n"
             "segregated    range=(0,inf]          split=yes coalesce=yes list=dll   fit=first order=lifo lists=10\n" },
    { "exa", "# dmm 1 preset=exa  exact segregated fit: one list per request size\n"
             "exact         range=(0,inf]          split=no  coalesce=no  list=sll   fit=exact order=lifo\n" },
};

_Static_assert(sizeof presets / sizeof presets[0] == DMM_DESC_NPRESETS,
               "desc.h counts the presets");

/* Named like the presets, but not one of the paper's references. */
static const struct { const char *name, *text; } others[] = {
    { "tlsf", "# dmm 1 preset=tlsf  two-level segregated fit: O(1) malloc and free\n"
              "tlsf          range=(0,inf]          split=yes coalesce=yes list=dll   fit=first order=lifo\n" },
};

const char *dmm_desc_preset(const char *name)
{
    for (size_t i = 0; i < DMM_DESC_NPRESETS; i++)
        if (!strcmp(name, presets[i].name))
            return presets[i].text;
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        if (!strcmp(name, others[i].name))
            return others[i].text;
    return NULL;
}

const char *dmm_desc_preset_name(int i)
{
    return i >= 0 && i < DMM_DESC_NPRESETS ? presets[i].name : NULL;
}

static const char *const lists[] = { "sll", "dll", "btree" };
static const char *const fits[] = { "first", "best", "exact" };
static const char *const orders[] = { "fifo", "lifo" };

const char *dmm_desc_list_name(unsigned list)
{
    return list < 3 ? lists[list] : NULL;
}

const char *dmm_desc_fit_name(unsigned fit)
{
    return fit < 3 ? fits[fit] : NULL;
}

const char *dmm_desc_order_name(unsigned order)
{
    return order < 2 ? orders[order] : NULL;
}

/* The message into err, errno EINVAL; -1. */
static int fail(dmm_err_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(dmm_err_t *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    errno = EINVAL;
    return -1;
}

static int word_is(const char *s, size_t n, const char *w)
{
    return strlen(w) == n && memcmp(s, w, n) == 0;
}

static int pick(const char *v, size_t n, const char *const *names, int count)
{
    for (int i = 0; i < count; i++)
        if (word_is(v, n, names[i]))
            return i;
    return -1;
}

/* A decimal size; "inf" when allow_inf.  -1 on anything else. */
static int parse_size(const char *s, size_t n, int allow_inf, size_t *out)
{
    if (allow_inf && word_is(s, n, "inf")) {
        *out = DMM_SIZE_INF;
        return 0;
    }
    if (n == 0 || n > 20)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        if (v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v >= DMM_SIZE_INF)
        return -1;
    *out = (size_t)v;
    return 0;
}

/* Where the parser is, for messages: "NAME: line N: ...". */
typedef struct where {
    const char *name;
    int         line;
    dmm_err_t  *err;
    int         grows;   /* grow lines so far */
    int         pages;   /* pages lines so far */
} where_t;

#define CUT(n) ((int)((n) > 40 ? 40 : (n)))   /* how much of a bad word a message shows */

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* The first line's comment, from after its '#' to e, as the title. */
static void parse_title(const char *text, size_t ts, size_t e, dmm_desc_t *d)
{
    while (ts < e && text[ts] == ' ')
        ts++;
    size_t tl = e - ts;
    while (tl && (text[ts + tl - 1] == ' ' || text[ts + tl - 1] == '\r'))
        tl--;
    if (tl >= sizeof d->title)
        tl = sizeof d->title - 1;
    while (tl && (text[ts + tl - 1] == ' ' || text[ts + tl - 1] == '\r'))
        tl--;   /* again, after the cut: print then parse gives the same */
    memcpy(d->title, text + ts, tl);
    d->title[tl] = 0;
}

/* range=(lo,hi] */
static int parse_range(const where_t *w, const char *v, size_t vl, dmm_alloc_desc_t *a)
{
    const char *comma = memchr(v, ',', vl);
    if (vl < 5 || v[0] != '(' || v[vl - 1] != ']' || !comma)
        return fail(w->err, "%s: line %d: field 'range': expected (lo,hi], got '%.*s'",
                    w->name, w->line, CUT(vl), v);
    if (parse_size(v + 1, (size_t)(comma - v - 1), 0, &a->lo) != 0 ||
        parse_size(comma + 1, (size_t)(v + vl - 1 - comma - 1), 1, &a->hi) != 0)
        return fail(w->err, "%s: line %d: field 'range': bad number in '%.*s'",
                    w->name, w->line, CUT(vl), v);
    if (a->lo >= a->hi)
        return fail(w->err, "%s: line %d: field 'range': empty range (%zu,%.*s]",
                    w->name, w->line, a->lo, (int)(v + vl - 1 - comma - 1), comma + 1);
    return 0;
}

/* One key=value field of an allocator line. */
static int parse_field(const where_t *w, const char *key, size_t kl, const char *v, size_t vl,
                       dmm_alloc_desc_t *a)
{
    int k;
    if (word_is(key, kl, "range"))
        return parse_range(w, v, vl, a);
    if (word_is(key, kl, "split") || word_is(key, kl, "coalesce")) {
        int yes = word_is(v, vl, "yes"), no = word_is(v, vl, "no");
        if (!yes && !no)
            return fail(w->err,
                        "%s: line %d: field '%.*s': expected yes or no, got '%.*s'", w->name,
                        w->line, (int)kl, key, CUT(vl), v);
        if (key[0] == 's')
            a->split = (uint8_t)yes;
        else
            a->coalesce = (uint8_t)yes;
    } else if (word_is(key, kl, "list")) {
        if ((k = pick(v, vl, lists, 3)) < 0)
            return fail(w->err,
                        "%s: line %d: field 'list': expected sll, dll or btree, got '%.*s'",
                        w->name, w->line, CUT(vl), v);
        a->list = (uint8_t)k;
    } else if (word_is(key, kl, "fit")) {
        if ((k = pick(v, vl, fits, 3)) < 0)
            return fail(w->err,
                        "%s: line %d: field 'fit': expected first, best or exact, got '%.*s'",
                        w->name, w->line, CUT(vl), v);
        a->fit = (uint8_t)k;
    } else if (word_is(key, kl, "order")) {
        if ((k = pick(v, vl, orders, 2)) < 0)
            return fail(w->err,
                        "%s: line %d: field 'order': expected fifo or lifo, got '%.*s'",
                        w->name, w->line, CUT(vl), v);
        a->order = (uint8_t)k;
    } else if (word_is(key, kl, "lists")) {
        size_t nl;
        if (parse_size(v, vl, 0, &nl) != 0 || nl < 1 || nl > 64)
            return fail(w->err,
                        "%s: line %d: field 'lists': expected 1 to 64, got '%.*s'", w->name,
                        w->line, CUT(vl), v);
        a->lists = (uint32_t)nl;
    } else {
        return fail(w->err, "%s: line %d: field '%.*s': unknown field "
                    "(range, split, coalesce, list, fit, order, lists)",
                    w->name, w->line, CUT(kl), key);
    }
    return 0;
}

/* The fields of an allocator or cache line from text[i] to ce: calls
 * field(w, key, kl, value, vl, arg) for each key=value; 0 or -1. */
typedef int (*field_fn)(const where_t *w, const char *key, size_t kl, const char *v, size_t vl,
                        void *arg);

static int parse_fields(const where_t *w, const char *text, size_t i, size_t ce, field_fn fn,
                        void *arg)
{
    while (i < ce) {
        while (i < ce && is_blank(text[i]))
            i++;
        if (i == ce)
            break;
        size_t ks = i;
        while (i < ce && text[i] != '=' && text[i] != ' ' && text[i] != '\t')
            i++;
        const char *key = text + ks;
        size_t kl = i - ks;
        if (i == ce || text[i] != '=')
            return fail(w->err, "%s: line %d: field '%.*s': expected key=value",
                        w->name, w->line, CUT(kl), key);
        i++;
        size_t vs = i;
        while (i < ce && !is_blank(text[i]))
            i++;
        if (fn(w, key, kl, text + vs, i - vs, arg) != 0)
            return -1;
    }
    return 0;
}

/* One key=value of the cache line. */
static int cache_field(const where_t *w, const char *key, size_t kl, const char *v, size_t vl,
                       void *arg)
{
    dmm_desc_t *d = arg;
    size_t x;
    if (word_is(key, kl, "max")) {
        if (parse_size(v, vl, 0, &x) != 0 || x < 16 || x > DMM_DESC_CACHE_MAX)
            return fail(w->err, "%s: line %d: field 'max': expected 16 to %u bytes, got '%.*s'",
                        w->name, w->line, DMM_DESC_CACHE_MAX, CUT(vl), v);
        d->cache_max = (uint32_t)x;
    } else if (word_is(key, kl, "count")) {
        if (parse_size(v, vl, 0, &x) != 0 || x < 1 || x > DMM_DESC_CACHE_COUNT)
            return fail(w->err, "%s: line %d: field 'count': expected 1 to %u blocks, got '%.*s'",
                        w->name, w->line, DMM_DESC_CACHE_COUNT, CUT(vl), v);
        d->cache_count = (uint32_t)x;
    } else {
        return fail(w->err, "%s: line %d: field '%.*s': unknown field of the cache line "
                    "(max, count)", w->name, w->line, CUT(kl), key);
    }
    return 0;
}

/* The cache line: its fields from text[i] to ce. */
static int parse_cache(const where_t *w, const char *text, size_t i, size_t ce, dmm_desc_t *d)
{
    if (d->cache_max)
        return fail(w->err, "%s: line %d: a second cache line: a chain has one cache",
                    w->name, w->line);
    d->cache_count = 0;
    if (parse_fields(w, text, i, ce, cache_field, d) != 0)
        return -1;
    if (!d->cache_max || !d->cache_count) {
        const char *miss = d->cache_max ? "count" : "max";
        d->cache_max = 0;
        return fail(w->err, "%s: line %d: field '%s': missing", w->name, w->line, miss);
    }
    return 0;
}

/* One key=value of the release line: a number or inf. */
static int release_field(const where_t *w, const char *key, size_t kl, const char *v,
                         size_t vl, void *arg)
{
    dmm_desc_t *d = arg;
    size_t x;
    int keep = word_is(key, kl, "keep");
    if (!keep && !word_is(key, kl, "delay"))
        return fail(w->err, "%s: line %d: field '%.*s': unknown field of the release line "
                    "(keep, delay)", w->name, w->line, CUT(kl), key);
    if (parse_size(v, vl, 1, &x) != 0)
        return fail(w->err, "%s: line %d: field '%s': expected %s or inf, got '%.*s'",
                    w->name, w->line, keep ? "keep" : "delay",
                    keep ? "a number of bytes" : "a number of calls", CUT(vl), v);
    if (keep)
        d->release.keep = x;
    else
        d->release.delay = x == DMM_SIZE_INF ? UINT64_MAX : (uint64_t)x;
    return 0;
}

/* The release line: its fields from text[i] to ce; missing ones are 0. */
static int parse_release(const where_t *w, const char *text, size_t i, size_t ce,
                         dmm_desc_t *d)
{
    if (d->release.on)
        return fail(w->err, "%s: line %d: a second release line: a chain has one policy",
                    w->name, w->line);
    memset(&d->release, 0, sizeof d->release);
    if (parse_fields(w, text, i, ce, release_field, d) != 0)
        return -1;
    d->release.on = 1;
    return 0;
}

/* A line of one field whose value is one of two words: grow by=64k|pages,
 * pages huge=no|yes.  k: the word's index once read, -1 before. */
typedef struct choice_line {
    const char        *line, *key;
    const char        *one;      /* what a chain has one of */
    const char        *expect;   /* the words, as an error names them */
    const char *const *words;
    int                k;
} choice_line_t;

static int choice_field(const where_t *w, const char *key, size_t kl, const char *v, size_t vl,
                        void *arg)
{
    choice_line_t *c = arg;
    if (!word_is(key, kl, c->key))
        return fail(w->err, "%s: line %d: field '%.*s': unknown field of the %s line (%s)",
                    w->name, w->line, CUT(kl), key, c->line, c->key);
    if ((c->k = pick(v, vl, c->words, 2)) < 0)
        return fail(w->err, "%s: line %d: field '%s': expected %s, got '%.*s'", w->name,
                    w->line, c->key, c->expect, CUT(vl), v);
    return 0;
}

/* Such a line from text[i] to ce; *seen counts the lines of its kind so
 * far.  The word's index, or -1 with the error set. */
static int parse_choice(where_t *w, const char *text, size_t i, size_t ce, int *seen,
                        choice_line_t *c)
{
    if ((*seen)++)
        return fail(w->err, "%s: line %d: a second %s line: a chain has one %s", w->name,
                    w->line, c->line, c->one);
    c->k = -1;
    if (parse_fields(w, text, i, ce, choice_field, c) != 0)
        return -1;
    if (c->k < 0)
        return fail(w->err, "%s: line %d: field '%s': missing", w->name, w->line, c->key);
    return c->k;
}

/* The grow line: its by= field from text[i] to ce. */
static int parse_grow(where_t *w, const char *text, size_t i, size_t ce, dmm_desc_t *d)
{
    static const char *const by[] = { "64k", "pages" };
    choice_line_t c = { "grow", "by", "growth rule", "64k or pages", by, -1 };
    int k = parse_choice(w, text, i, ce, &w->grows, &c);
    if (k < 0)
        return -1;
    d->grow = (uint8_t)k;
    return 0;
}

/* The pages line: its huge= field from text[i] to ce. */
static int parse_pages(where_t *w, const char *text, size_t i, size_t ce, dmm_desc_t *d)
{
    static const char *const yn[] = { "no", "yes" };
    choice_line_t c = { "pages", "huge", "page source", "yes or no", yn, -1 };
    int k = parse_choice(w, text, i, ce, &w->pages, &c);
    if (k < 0)
        return -1;
    d->huge = (uint8_t)k;
    return 0;
}

/* The largest pool= (1 TiB). */
#define POOL_MAX ((size_t)1 << 40)

/* One key=value of the pool line. */
static int pool_field(const where_t *w, const char *key, size_t kl, const char *v, size_t vl,
                      void *arg)
{
    dmm_desc_t *d = arg;
    size_t x;
    if (!word_is(key, kl, "bytes"))
        return fail(w->err, "%s: line %d: field '%.*s': unknown field of the pool line (bytes)",
                    w->name, w->line, CUT(kl), key);
    if (parse_size(v, vl, 0, &x) != 0 || x < DMM_PAGE || x > POOL_MAX)
        return fail(w->err, "%s: line %d: field 'bytes': expected %u to %zu bytes, got '%.*s'",
                    w->name, w->line, DMM_PAGE, POOL_MAX, CUT(vl), v);
    d->pool = x;
    return 0;
}

/* The pool line: its fields from text[i] to ce. */
static int parse_pool(const where_t *w, const char *text, size_t i, size_t ce, dmm_desc_t *d)
{
    if (d->pool)
        return fail(w->err, "%s: line %d: a second pool line: a chain has one pool", w->name,
                    w->line);
    if (parse_fields(w, text, i, ce, pool_field, d) != 0)
        return -1;
    if (!d->pool)
        return fail(w->err, "%s: line %d: field 'bytes': missing", w->name, w->line);
    return 0;
}

/* The largest retain= (1 TiB, as a pool). */
#define RETAIN_MAX POOL_MAX

/* One key=value of the retain line. */
static int retain_field(const where_t *w, const char *key, size_t kl, const char *v, size_t vl,
                        void *arg)
{
    dmm_desc_t *d = arg;
    size_t x;
    if (!word_is(key, kl, "bytes"))
        return fail(w->err, "%s: line %d: field '%.*s': unknown field of the retain line "
                    "(bytes)", w->name, w->line, CUT(kl), key);
    if (parse_size(v, vl, 0, &x) != 0 || x > RETAIN_MAX)
        return fail(w->err, "%s: line %d: field 'bytes': expected 0 to %zu bytes, got '%.*s'",
                    w->name, w->line, RETAIN_MAX, CUT(vl), v);
    d->retain = x;
    d->retain_set = 1;
    return 0;
}

/* The retain line: its fields from text[i] to ce. */
static int parse_retain(const where_t *w, const char *text, size_t i, size_t ce, dmm_desc_t *d)
{
    if (d->retain_set)
        return fail(w->err, "%s: line %d: a second retain line: a chain has one budget",
                    w->name, w->line);
    if (parse_fields(w, text, i, ce, retain_field, d) != 0)
        return -1;
    if (!d->retain_set)
        return fail(w->err, "%s: line %d: field 'bytes': missing", w->name, w->line);
    return 0;
}

struct alloc_arg {
    dmm_alloc_desc_t *a;
    int have_range;
};

static int alloc_field(const where_t *w, const char *key, size_t kl, const char *v, size_t vl,
                       void *arg)
{
    struct alloc_arg *x = arg;
    x->have_range |= word_is(key, kl, "range");
    return parse_field(w, key, kl, v, vl, x->a);
}

/* An allocator line: its class word at text[i], fields up to ce; appended
 * to d. */
static int parse_alloc(where_t *w, const char *text, size_t i, size_t ce, dmm_desc_t *d)
{
    size_t ws = i;
    while (i < ce && !is_blank(text[i]))
        i++;
    const char *cls = text + ws;
    size_t cl = i - ws;
    if (word_is(cls, cl, "cache"))
        return parse_cache(w, text, i, ce, d);
    if (word_is(cls, cl, "release"))
        return parse_release(w, text, i, ce, d);
    if (word_is(cls, cl, "pool"))
        return parse_pool(w, text, i, ce, d);
    if (word_is(cls, cl, "grow"))
        return parse_grow(w, text, i, ce, d);
    if (word_is(cls, cl, "pages"))
        return parse_pages(w, text, i, ce, d);
    if (word_is(cls, cl, "retain"))
        return parse_retain(w, text, i, ce, d);
    if (d->n == DMM_DESC_MAX)
        return fail(w->err, "%s: line %d: more than %d allocators in one chain",
                    w->name, w->line, DMM_DESC_MAX);
    dmm_alloc_desc_t *a = &d->a[d->n];
    memset(a, 0, sizeof *a);
    a->fit = DMM_FIT_FIRST;
    a->order = DMM_ORDER_LIFO;
    for (int c = 1; c < DMM_CLASS_COUNT; c++)
        if (dmm_class_name((dmm_class_t)c) && word_is(cls, cl, dmm_class_name((dmm_class_t)c)))
            a->cls = (dmm_class_t)c;
    if (!a->cls)
        return fail(w->err, "%s: line %d: field 'class': unknown allocator class "
                    "'%.*s' (buddy-binary, buddy-fib, segregated, sss, exact, kingsley, lea, "
                    "tlsf; "
                    "or a cache, release, grow, pages, pool or retain line)",
                    w->name, w->line, CUT(cl), cls);
    struct alloc_arg x = { a, 0 };
    if (parse_fields(w, text, i, ce, alloc_field, &x) != 0)
        return -1;
    if (!x.have_range)
        return fail(w->err, "%s: line %d: field 'range': missing", w->name, w->line);
    if (d->n > 0 && a->lo < d->a[d->n - 1].hi)
        return fail(w->err, "%s: line %d: field 'range': (%zu,...] overlaps or "
                    "precedes the previous allocator's range, which ends at %zu: ranges must be "
                    "sorted and must not overlap", w->name, w->line, a->lo, d->a[d->n - 1].hi);
    d->n++;
    return 0;
}

int dmm_desc_parse(const char *name, const char *text, size_t len, dmm_desc_t *d,
                   dmm_err_t *err)
{
    memset(d, 0, sizeof *d);
    where_t w = { .name = name, .err = err };
    size_t pos = 0;
    while (pos < len) {
        w.line++;
        size_t s = pos;
        while (pos < len && text[pos] != '\n')
            pos++;
        size_t e = pos;
        if (pos < len)
            pos++;
        for (size_t i = s; i < e; i++)
            if (text[i] == '\0' || (unsigned char)text[i] >= 0x80)
                return fail(err, "%s: line %d: not text (byte 0x%02x)", name, w.line,
                            (unsigned char)text[i]);
        /* a comment: the first one is the title */
        const char *hash = memchr(text + s, '#', e - s);
        size_t ce = hash ? (size_t)(hash - text) : e;
        if (hash && w.line == 1 && !d->title[0])
            parse_title(text, (size_t)(hash - text) + 1, e, d);
        size_t i = s;
        while (i < ce && is_blank(text[i]))
            i++;
        if (i < ce && parse_alloc(&w, text, i, ce, d) != 0)
            return -1;
    }
    if (d->n == 0)
        return fail(err, "%s: line %d: no allocator: a chain needs at least one", name,
                    w.line ? w.line : 1);
    return 0;
}

int dmm_desc_load(const char *name_or_path, dmm_desc_t *d, dmm_err_t *err)
{
    const char *pre = dmm_desc_preset(name_or_path);
    if (pre)
        return dmm_desc_parse(name_or_path, pre, strlen(pre), d, err);
    char buf[16384];
    int fd = open(name_or_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fail(err, "%s: not a preset (kng, lea, fib, s10, exa, tlsf) and cannot open: %s",
                    name_or_path, strerror(errno));
    size_t len = 0;
    for (;;) {
        ssize_t r = read(fd, buf + len, sizeof buf - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            return fail(err, "%s: read error: %s", name_or_path, strerror(e));
        }
        if (r == 0)
            break;
        len += (size_t)r;
        if (len == sizeof buf) {
            close(fd);
            return fail(err, "%s: longer than %zu bytes: not a .dmm description",
                        name_or_path, sizeof buf);
        }
    }
    close(fd);
    return dmm_desc_parse(name_or_path, buf, len, d, err);
}

size_t dmm_desc_print_line(const dmm_alloc_desc_t *a, char *buf, size_t cap)
{
    char range[64];
    if (a->hi == DMM_SIZE_INF)
        snprintf(range, sizeof range, "range=(%zu,inf]", a->lo);
    else
        snprintf(range, sizeof range, "range=(%zu,%zu]", a->lo, a->hi);
    const char *cls = dmm_class_name(a->cls);
    char lists_field[32] = "";
    if (a->lists)
        snprintf(lists_field, sizeof lists_field, " lists=%u", a->lists);
    int n = snprintf(buf, cap, "%-13s %-22s split=%-3s coalesce=%-3s list=%-5s fit=%-5s order=%s%s",
                     cls ? cls : "?", range, a->split ? "yes" : "no", a->coalesce ? "yes" : "no",
                     lists[a->list % 3], fits[a->fit % 3], orders[a->order % 2], lists_field);
    return n < 0 ? 0 : (size_t)n;
}

size_t dmm_desc_print_cache(const dmm_desc_t *d, char *buf, size_t cap)
{
    int n = d->cache_max ? snprintf(buf, cap, "%-13s max=%u count=%u", "cache",
                                    (unsigned)d->cache_max, (unsigned)d->cache_count)
                         : snprintf(buf, cap, "%s", "");
    return n < 0 ? 0 : (size_t)n;
}

size_t dmm_desc_print_release(const dmm_desc_t *d, char *buf, size_t cap)
{
    char keep[32] = "inf", delay[32] = "inf";
    if (d->release.keep != DMM_SIZE_INF)
        snprintf(keep, sizeof keep, "%zu", d->release.keep);
    if (d->release.delay != UINT64_MAX)
        snprintf(delay, sizeof delay, "%llu", (unsigned long long)d->release.delay);
    int n = d->release.on ? snprintf(buf, cap, "%-13s keep=%s delay=%s", "release", keep, delay)
                          : snprintf(buf, cap, "%s", "");
    return n < 0 ? 0 : (size_t)n;
}

size_t dmm_desc_print_grow(const dmm_desc_t *d, char *buf, size_t cap)
{
    int n = d->grow == DMM_GROW_PAGES ? snprintf(buf, cap, "%-13s by=pages", "grow")
                                      : snprintf(buf, cap, "%s", "");
    return n < 0 ? 0 : (size_t)n;
}

size_t dmm_desc_print_pages(const dmm_desc_t *d, char *buf, size_t cap)
{
    int n = d->huge ? snprintf(buf, cap, "%-13s huge=yes", "pages") : snprintf(buf, cap, "%s", "");
    return n < 0 ? 0 : (size_t)n;
}

size_t dmm_desc_print_pool(const dmm_desc_t *d, char *buf, size_t cap)
{
    int n = d->pool ? snprintf(buf, cap, "%-13s bytes=%zu", "pool", d->pool)
                    : snprintf(buf, cap, "%s", "");
    return n < 0 ? 0 : (size_t)n;
}

size_t dmm_desc_print_retain(const dmm_desc_t *d, char *buf, size_t cap)
{
    int n = d->retain_set ? snprintf(buf, cap, "%-13s bytes=%zu", "retain", d->retain)
                          : snprintf(buf, cap, "%s", "");
    return n < 0 ? 0 : (size_t)n;
}

size_t dmm_desc_print(const dmm_desc_t *d, char *buf, size_t cap)
{
    size_t used = 0;
    char line[sizeof d->title + 16];
    int n = snprintf(line, sizeof line, "# %s\n", d->title[0] ? d->title : "dmm 1");
    if (n < 0 || (size_t)n >= sizeof line)
        n = 0;
    for (int i = -7; i < d->n; i++) {
        if ((i == -6 && !d->cache_max) || (i == -5 && !d->release.on) ||
            (i == -4 && d->grow != DMM_GROW_PAGES) || (i == -3 && !d->huge) ||
            (i == -2 && !d->pool) || (i == -1 && !d->retain_set))
            continue;
        if (i >= -6) {
            if (i == -6)
                dmm_desc_print_cache(d, line, sizeof line - 2);
            else if (i == -5)
                dmm_desc_print_release(d, line, sizeof line - 2);
            else if (i == -4)
                dmm_desc_print_grow(d, line, sizeof line - 2);
            else if (i == -3)
                dmm_desc_print_pages(d, line, sizeof line - 2);
            else if (i == -2)
                dmm_desc_print_pool(d, line, sizeof line - 2);
            else if (i == -1)
                dmm_desc_print_retain(d, line, sizeof line - 2);
            else
                dmm_desc_print_line(&d->a[i], line, sizeof line - 2);
            n = (int)strlen(line);
            line[n++] = '\n';
            line[n] = 0;
        }
        if (used + (size_t)n < cap)
            memcpy(buf + used, line, (size_t)n);
        used += (size_t)n;
    }
    if (cap)
        buf[used < cap ? used : cap - 1] = 0;
    return used;
}

const char *dmm_desc_title_value(const dmm_desc_t *d, const char *key, char *buf, size_t cap)
{
    const char *title = d->title;
    size_t k = strlen(key);
    for (const char *s = title; *s;) {
        while (*s == ' ' || *s == '\t')
            s++;
        size_t w = strcspn(s, " \t");
        if (w > k && !strncmp(s, key, k) && s[k] == '=') {
            size_t v = w - k - 1;
            if (v >= cap)
                v = cap - 1;
            memcpy(buf, s + k + 1, v);
            buf[v] = 0;
            return buf;
        }
        s += w;
    }
    return NULL;
}

void dmm_desc_effective(dmm_desc_t *d)
{
    /* a release policy that no line reads is none; one that gives back at
     * once is written keep=0 delay=0 (keep=inf delay=inf gives nothing to
     * the OS, but its empty areas still serve other sizes: not none); a
     * growth rule that no line reads is the classes' own */
    int reads_release = 0, reads_grow = 0;
    for (int i = 0; i < d->n; i++) {
        const dmm_class_ops_t *ops = dmm_class_ops(d->a[i].cls);
        reads_release |= ops && ops->reads_release;
        reads_grow |= ops && ops->reads_grow;
    }
    if (!reads_grow)
        d->grow = DMM_GROW_64K;
    if (d->retain_set && d->retain == DMM_RETAIN_BYTES)
        d->retain_set = 0;
    dmm_release_t *r = &d->release;
    if (!reads_release)
        memset(r, 0, sizeof *r);
    else if (r->keep == 0 || r->delay == 0)
        r->keep = 0, r->delay = 0;
    for (int i = 0; i < d->n; i++) {
        dmm_alloc_desc_t *a = &d->a[i];
        const dmm_class_ops_t *ops = dmm_class_ops(a->cls);
        unsigned reads = ops ? ops->options : DMM_OPT_ALL;
        if (!(reads & DMM_OPT_SPLIT))
            a->split = 0;
        if (!(reads & DMM_OPT_COALESCE))
            a->coalesce = 0;
        if (!(reads & DMM_OPT_LIST))
            a->list = DMM_LIST_SLL;
        if (!(reads & DMM_OPT_FIT))
            a->fit = DMM_FIT_FIRST;
        if (!(reads & DMM_OPT_ORDER))
            a->order = DMM_ORDER_LIFO;
        if (!(reads & DMM_OPT_LISTS))
            a->lists = 0;
    }
}
