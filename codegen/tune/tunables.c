/* tunables.c - glibc malloc's four tunables (see tunables.h): the table,
 * the phenotype and GLIBC_TUNABLES text forms, and the built-in grammar. */
#include "codegen/tune/tunables.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* mmap_threshold: glibc refuses values above HEAP_MAX_SIZE / 2, 32 MiB on
 * 64-bit (4 * 1024 * 1024 * sizeof(long)); a larger one would be ignored. */
const dmm_tunable_info_t dmm_tunables_info[DMM_TUNE_N] = {
    { "top_pad", "glibc.malloc.top_pad", "MALLOC_TOP_PAD_", 0, 1LL << 40 },
    { "trim_threshold", "glibc.malloc.trim_threshold", "MALLOC_TRIM_THRESHOLD_", 0, 1LL << 40 },
    { "mmap_threshold", "glibc.malloc.mmap_threshold", "MALLOC_MMAP_THRESHOLD_", 0,
      4LL * 1024 * 1024 * (long long)sizeof(long) },
    { "arena_max", "glibc.malloc.arena_max", "MALLOC_ARENA_MAX", 1, 4096 },
};

void dmm_tunables_default(dmm_tunables_t *t)
{
    for (int i = 0; i < DMM_TUNE_N; i++)
        t->v[i] = DMM_TUNE_DEFAULT;
}

int dmm_tunables_all_default(const dmm_tunables_t *t)
{
    for (int i = 0; i < DMM_TUNE_N; i++)
        if (t->v[i] != DMM_TUNE_DEFAULT)
            return 0;
    return 1;
}

int dmm_tunables_static_threshold(const dmm_tunables_t *t)
{
    return t->v[DMM_TUNE_TOP_PAD] != DMM_TUNE_DEFAULT ||
           t->v[DMM_TUNE_TRIM_THRESHOLD] != DMM_TUNE_DEFAULT ||
           t->v[DMM_TUNE_MMAP_THRESHOLD] != DMM_TUNE_DEFAULT;
}

static int tunable_index(const char *name, size_t len)
{
    for (int i = 0; i < DMM_TUNE_N; i++)
        if (strlen(dmm_tunables_info[i].name) == len && !memcmp(dmm_tunables_info[i].name, name, len))
            return i;
    return -1;
}

/* "default", or decimal digits with an optional k/m/g suffix (only when
 * suffix is set: glibc's own parser reads "1m" as 1), within the tunable's
 * range.  0, or -1. */
static int parse_value(int i, const char *s, size_t len, int suffix, long long *v)
{
    if (len == 7 && !memcmp(s, "default", 7)) {
        *v = DMM_TUNE_DEFAULT;
        return 0;
    }
    unsigned long long x = 0;
    size_t k = 0;
    for (; k < len && s[k] >= '0' && s[k] <= '9'; k++) {
        if (x > (ULLONG_MAX - 9) / 10)
            return -1;
        x = x * 10 + (unsigned)(s[k] - '0');
    }
    if (k == 0)
        return -1;
    if (k < len) {
        if (!suffix)
            return -1;
        int shift;
        switch (s[k]) {
        case 'k': case 'K': shift = 10; break;
        case 'm': case 'M': shift = 20; break;
        case 'g': case 'G': shift = 30; break;
        default: return -1;
        }
        if (k + 1 != len || x > (ULLONG_MAX >> shift))
            return -1;
        x <<= shift;
    }
    if (x < (unsigned long long)dmm_tunables_info[i].lo ||
        x > (unsigned long long)dmm_tunables_info[i].hi)
        return -1;
    *v = (long long)x;
    return 0;
}

int dmm_tunables_parse(const char *ph, dmm_tunables_t *t, dmm_err_t *err)
{
    dmm_tunables_default(t);
    int seen[DMM_TUNE_N] = { 0 };
    const char *p = ph;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n')
            p++;
        if (!*p)
            return 0;
        const char *w = p;
        while (*p && *p != ' ' && *p != '\t' && *p != '\n')
            p++;
        size_t wl = (size_t)(p - w);
        const char *eq = memchr(w, '=', wl);
        int i = eq ? tunable_index(w, (size_t)(eq - w)) : -1;
        if (i < 0) {
            dmm_err_set(err, "'%.*s' is not top_pad=, trim_threshold=, mmap_threshold= or "
                                  "arena_max=VALUE", (int)(wl > 80 ? 80 : wl), w);
            return -1;
        }
        if (seen[i]++) {
            dmm_err_set(err, "%s is given twice", dmm_tunables_info[i].name);
            return -1;
        }
        if (parse_value(i, eq + 1, wl - (size_t)(eq + 1 - w), 1, &t->v[i]) != 0) {
            dmm_err_set(err, "'%.*s': %s takes \"default\" or a number in %lld..%lld "
                                  "(k, m, g: binary multiples)", (int)(wl > 80 ? 80 : wl), w,
                     dmm_tunables_info[i].name, dmm_tunables_info[i].lo, dmm_tunables_info[i].hi);
            return -1;
        }
    }
}

size_t dmm_tunables_format(const dmm_tunables_t *t, char *buf, size_t cap)
{
    size_t n = 0;
    for (int i = 0; i < DMM_TUNE_N; i++) {
        char v[32];
        if (t->v[i] == DMM_TUNE_DEFAULT)
            snprintf(v, sizeof v, "default");
        else
            snprintf(v, sizeof v, "%lld", t->v[i]);
        int w = snprintf(buf + (n < cap ? n : cap), n < cap ? cap - n : 0, "%s%s=%s",
                         i ? " " : "", dmm_tunables_info[i].name, v);
        n += (size_t)(w > 0 ? w : 0);
    }
    if (cap && n >= cap)
        buf[cap - 1] = 0;
    return n;
}

size_t dmm_tunables_glibc(const dmm_tunables_t *t, char *buf, size_t cap)
{
    size_t n = 0;
    if (cap)
        buf[0] = 0;
    for (int i = 0; i < DMM_TUNE_N; i++) {
        if (t->v[i] == DMM_TUNE_DEFAULT)
            continue;
        int w = snprintf(buf + (n < cap ? n : cap), n < cap ? cap - n : 0, "%s%s=%lld",
                         n ? ":" : "", dmm_tunables_info[i].tunable, t->v[i]);
        n += (size_t)(w > 0 ? w : 0);
    }
    if (cap && n >= cap)
        buf[cap - 1] = 0;
    return n;
}

int dmm_tunables_from_glibc(const char *value, dmm_tunables_t *t, dmm_err_t *err)
{
    dmm_tunables_default(t);
    const char *p = value;
    while (*p) {
        const char *e = strchr(p, ':');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (eq) {
            for (int i = 0; i < DMM_TUNE_N; i++) {
                const char *name = dmm_tunables_info[i].tunable;
                if (strlen(name) == (size_t)(eq - p) && !memcmp(name, p, (size_t)(eq - p))) {
                    long long v;
                    size_t vl = len - (size_t)(eq + 1 - p);
                    if (parse_value(i, eq + 1, vl, 0, &v) != 0 || v == DMM_TUNE_DEFAULT) {
                        dmm_err_set(err, "GLIBC_TUNABLES: bad value '%.*s' for %s",
                                 (int)(vl > 40 ? 40 : vl), eq + 1, name);
                        return -1;
                    }
                    t->v[i] = v;
                }
            }
        }
        if (!e)
            break;
        p = e + 1;
    }
    return 0;
}

int dmm_tunables_is_ours(const char *p, size_t len)
{
    for (int i = 0; i < DMM_TUNE_N; i++) {
        size_t tl = strlen(dmm_tunables_info[i].tunable);
        if (len > tl && !memcmp(p, dmm_tunables_info[i].tunable, tl) && p[tl] == '=')
            return 1;
    }
    return 0;
}

/* ---- the grammar ------------------------------------------------------------ */

static void alternatives(FILE *f, const char *rule, const char *name, const long long *vals, int n)
{
    fprintf(f, "<%s> ::= %s=default", rule, name);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%s=%lld", (i + 1) % 6 == 0 ? "\n    | " : " | ", name, vals[i]);
    fputc('\n', f);
}

static char grammar_text[8192];

static void build_grammar(void)
{
    FILE *f = fmemopen(grammar_text, sizeof grammar_text, "w");
    if (!f)
        return;
    fprintf(f,
        "# dmm tune-glibc: glibc malloc's tunables, one value of each (bytes;\n"
        "# \"default\": not set, glibc's own behaviour).  Setting any of top_pad,\n"
        "# trim_threshold or mmap_threshold turns glibc's dynamic mmap threshold off.\n"
        "# mmap_threshold stops at 32 MiB: glibc ignores larger values on 64-bit.\n"
        "# arena_max only matters to threads contending for arenas: a replay runs on\n"
        "# one thread, so dmm tune-glibc measures every candidate with it at default.\n"
        "# Values may be written 64k, 1m, 2g (binary multiples).\n"
        "<Tunables> ::= <TopPad> <TrimThreshold> <MmapThreshold> <ArenaMax>\n");
    long long pad[16], mm[18], ar[8];
    pad[0] = 0;
    for (int i = 0; i < 15; i++)
        pad[i + 1] = 4096LL << i;        /* 4 KiB .. 64 MiB */
    for (int i = 0; i < 18; i++)
        mm[i] = 256LL << i;              /* 256 B .. 32 MiB */
    for (int i = 0; i < 8; i++)
        ar[i] = i + 1;
    alternatives(f, "TopPad", "top_pad", pad, 16);
    alternatives(f, "TrimThreshold", "trim_threshold", pad, 16);
    alternatives(f, "MmapThreshold", "mmap_threshold", mm, 18);
    alternatives(f, "ArenaMax", "arena_max", ar, 8);
    fclose(f);
    grammar_text[sizeof grammar_text - 1] = 0;
}

const char *dmm_tune_grammar_text(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, build_grammar);
    return grammar_text;
}
