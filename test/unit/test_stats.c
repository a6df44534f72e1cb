/* test_stats.c - `dmm stats`: every Table 2 number and the detail behind
 * it, computed from traces built in memory, and the JSON and command-line
 * faces of the same numbers. */
#include <criterion/criterion.h>

#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/cli/cli.h"
#include "tracer/stats/stats.h"
#include "tracer/format/trc_write.h"

/* ---- building traces ---- */

static uint64_t clock_ns;

static dmm_rec_t *rec(dmm_trace_t *t, unsigned op, uint32_t tid, uint64_t size,
                      uint64_t in, uint64_t out)
{
    dmm_rec_t *r = dmm_trace_push(t);
    cr_assert_not_null(r);
    r->op = (uint8_t)op;
    r->tid = tid;
    r->size = size;
    r->ptr_in = in;
    r->ptr_out = out;
    r->time = clock_ns;
    clock_ns += 1000;
    return r;
}

/* A realloc that moved: the writer's RELEASE of the old address, then the
 * REALLOC itself (see opstream.c). */
static void realloc_moved(dmm_trace_t *t, uint32_t tid, uint64_t old, uint64_t new_, uint64_t size)
{
    rec(t, DMM_TRC_RELEASE, tid, 0, old, 0);
    rec(t, DMM_TRC_REALLOC, tid, size, old, new_);
}

/* The trace most tests use; its numbers are worked out by hand below. */
static void build_sample(dmm_trace_t *t)
{
    memset(t, 0, sizeof *t);
    clock_ns = 5000;
    rec(t, DMM_TRC_MALLOC, 7, 100, 0, 0x1000);            /* A: in use 100 */
    rec(t, DMM_TRC_MALLOC, 7, 200, 0, 0x2000);            /* B: 300 */
    realloc_moved(t, 7, 0x1000, 0x3000, 300);             /* A -> 300: 500 */
    rec(t, DMM_TRC_FREE, 7, 0, 0, 0);                     /* free(NULL) */
    rec(t, DMM_TRC_FREE, 7, 0, 0x9999, 0);                /* unknown */
    rec(t, DMM_TRC_MALLOC, 7, 50, 0, 0)->flags = DMM_TRC_RF_FAILED;
    dmm_rec_t *c = rec(t, DMM_TRC_CALLOC, 8, 16, 0, 0x4000); /* C: 516 = peak */
    c->arg = 2;
    rec(t, DMM_TRC_REALLOC, 7, 50, 0x2000, 0x2000);       /* B shrinks in place: 366 */
    rec(t, DMM_TRC_FREE, 7, 0, 0x3000, 0);                /* A freed: 66 */
    rec(t, DMM_TRC_MEMALIGN, 8, 32, 0, 0x5000)->arg = 64; /* D: 98 */
}

static void compute(const dmm_trace_t *t, dmm_stats_t *st)
{
    dmm_err_t err = { { 0 } };
    cr_assert_eq(dmm_stats_compute(t, st, &err), 0, "%s", err.msg);
}

Test(stats, table2_numbers)
{
    dmm_trace_t t;
    dmm_stats_t st;
    build_sample(&t);
    compute(&t, &st);
    cr_expect_eq(st.objects, 4);
    cr_expect_eq(st.total_bytes, 100 + 200 + 300 + 16 + 50 + 32);
    cr_expect_eq(st.max_in_use, 516);
    /* in 16-byte blocks: A 112, B 208, A -> 304 (512), C 16 (528), B -> 64 */
    cr_expect_eq(st.max_in_use_16, 528);
    cr_expect_eq(st.alloc_calls, 6);
    cr_expect_float_eq(st.avg_size, 698.0 / 6.0, 1e-9);
    cr_expect_eq(st.memory_ops, 7);
    cr_expect_eq(st.ops_alloc, 4);
    cr_expect_eq(st.ops_realloc, 2);
    cr_expect_eq(st.ops_free, 1);
    dmm_stats_free(&st);
    dmm_trace_free(&t);
}

Test(stats, detail_numbers)
{
    dmm_trace_t t;
    dmm_stats_t st;
    build_sample(&t);
    compute(&t, &st);
    cr_expect_eq(st.distinct_sizes, 6);
    cr_expect_eq(st.nsizes, 6);
    cr_expect_eq(st.min_size, 16);
    cr_expect_eq(st.max_size, 300);
    cr_expect_eq(st.op_count[DMM_TRC_MALLOC], 3);   /* the failed one too */
    cr_expect_eq(st.op_count[DMM_TRC_CALLOC], 1);
    cr_expect_eq(st.op_count[DMM_TRC_REALLOC], 2);
    cr_expect_eq(st.op_count[DMM_TRC_FREE], 3);
    cr_expect_eq(st.op_count[DMM_TRC_MEMALIGN], 1);
    cr_expect_eq(st.op_count[DMM_TRC_POSIX_MEMALIGN], 0);
    cr_expect_eq(st.free_null, 1);
    cr_expect_eq(st.unknown_free, 1);
    cr_expect_eq(st.failed, 1);
    cr_expect_eq(st.reused_live, 0);
    cr_expect_eq(st.live_blocks, 3);
    cr_expect_eq(st.live_bytes, 50 + 16 + 32);
    cr_expect_eq(st.threads, 2);
    cr_expect_eq(st.has_time, 1);
    cr_expect_eq(st.duration_ns, (t.nrecs - 1) * 1000);
    cr_expect_eq(st.records, 11);
    cr_expect_eq(st.nsites, 0);
    /* buckets: 16 -> 1; 32 -> 2; 50 -> 3; 100 -> 4; 200, 300 -> 5 (.. 256], 6 */
    cr_expect_eq(st.hist[1], 1);
    cr_expect_eq(st.hist[2], 1);
    cr_expect_eq(st.hist[3], 1);
    cr_expect_eq(st.hist[4], 1);
    cr_expect_eq(st.hist[5], 1);
    cr_expect_eq(st.hist[6], 1);
    dmm_stats_free(&st);
    dmm_trace_free(&t);
}

Test(stats, peak_follows_realloc_growth_and_shrink)
{
    dmm_trace_t t = { 0 };
    dmm_stats_t st;
    rec(&t, DMM_TRC_MALLOC, 1, 10, 0, 0x100);
    rec(&t, DMM_TRC_REALLOC, 1, 1000, 0x100, 0x100);       /* grow in place: 1000 */
    rec(&t, DMM_TRC_REALLOC, 1, 5, 0x100, 0x100);          /* shrink: 5 */
    rec(&t, DMM_TRC_MALLOC, 1, 500, 0, 0x200);             /* 505 */
    compute(&t, &st);
    cr_expect_eq(st.max_in_use, 1000);
    cr_expect_eq(st.objects, 2);
    dmm_stats_free(&st);

    realloc_moved(&t, 1, 0x100, 0x300, 2000);              /* grow, moving: 2500 */
    rec(&t, DMM_TRC_FREE, 1, 0, 0x200, 0);                 /* 2000 */
    rec(&t, DMM_TRC_REALLOC, 1, 0, 0x300, 0);              /* realloc(p, 0) frees: 0 */
    rec(&t, DMM_TRC_MALLOC, 1, 2400, 0, 0x400);            /* 2400 < peak */
    compute(&t, &st);
    cr_expect_eq(st.max_in_use, 2500);
    /* 16-byte blocks: 1008 at the first peak, then 2000 + 512 */
    cr_expect_eq(st.max_in_use_16, 2512);
    cr_expect_eq(st.objects, 3);
    cr_expect_eq(st.total_bytes, 10 + 1000 + 5 + 500 + 2000 + 2400);
    cr_expect_eq(st.memory_ops, 8);   /* 3 allocs, 3 reallocs, 2 frees */
    cr_expect_eq(st.live_blocks, 1);
    cr_expect_eq(st.live_bytes, 2400);
    dmm_stats_free(&st);
    dmm_trace_free(&t);
}

/* The bytes in use follow each block's size as the op stream's builder
 * keeps it: sizes of 4 GiB and more (kept beside its table), a realloc in
 * place and one that moved, allocations at addresses still live (their
 * blocks closed), and a resident record of a block of 7 GiB. */
Test(stats, sizes_of_4_gib_and_more_and_reused_addresses)
{
    const uint64_t G = 1ull << 30;
    dmm_trace_t t = { 0 };
    dmm_stats_t st;
    rec(&t, DMM_TRC_MALLOC, 1, 5 * G, 0, 0x1000);          /* 5G */
    rec(&t, DMM_TRC_MALLOC, 1, 100, 0, 0x2000);            /* 5G + 100 */
    rec(&t, DMM_TRC_REALLOC, 1, 6 * G, 0x1000, 0x1000);    /* in place: 6G + 100 */
    rec(&t, DMM_TRC_MALLOC, 1, 64, 0, 0x2000);             /* 100 closed: 6G + 64 */
    realloc_moved(&t, 1, 0x1000, 0x3000, 7 * G);           /* 7G + 64 */
    rec(&t, DMM_TRC_MALLOC, 1, 10, 0, 0x4000);             /* 7G + 74: the peak */
    realloc_moved(&t, 1, 0x2000, 0x4000, 20);              /* 10 closed, 64 -> 20: 7G + 20 */
    rec(&t, DMM_TRC_RESIDENT, 1, 0, 0x3000, 0)->arg = 4096;
    rec(&t, DMM_TRC_FREE, 1, 0, 0x3000, 0);                /* 20 */
    rec(&t, DMM_TRC_MALLOC, 1, 3, 0, 0x3000);              /* 23 */
    compute(&t, &st);
    cr_expect_eq(st.max_in_use, 7 * G + 74);
    cr_expect_eq(st.objects, 5);
    cr_expect_eq(st.reused_live, 2);
    cr_expect_eq(st.ops_free, 3);   /* 100 and 10 closed, 7G freed */
    cr_expect_eq(st.live_blocks, 2);
    cr_expect_eq(st.live_bytes, 23);
    cr_expect_eq(st.resident_blocks, 1);
    cr_expect_eq(st.resident_size, 7 * G);
    cr_expect_eq(st.resident_bytes, 4096);
    cr_expect_eq(st.max_size, 7 * G);
    dmm_stats_free(&st);
    dmm_trace_free(&t);
}

/* Blocks glibc mapped on its own, as format 4 records them: a free that
 * says how much of the block was resident, one that says more than the
 * block (a page it shares counts: capped at its size), and a block live at
 * the end with a resident record; a block without either counts nothing. */
static void build_resident(dmm_trace_t *t)
{
    build_sample(t);
    rec(t, DMM_TRC_MALLOC, 7, 1 << 20, 0, 0x7f0000000010);
    rec(t, DMM_TRC_MALLOC, 7, 300000, 0, 0x7f0000200010);
    rec(t, DMM_TRC_CALLOC, 7, 4 << 20, 0, 0x7f0000400010)->arg = 1;
    rec(t, DMM_TRC_MALLOC, 7, 500000, 0, 0x7f0000900010);
    dmm_rec_t *r = rec(t, DMM_TRC_FREE, 7, 0, 0x7f0000000010, 0);
    r->flags = DMM_TRC_RF_RESIDENT;
    r->arg = 12288;
    r = rec(t, DMM_TRC_FREE, 7, 0, 0x7f0000200010, 0);
    r->flags = DMM_TRC_RF_RESIDENT;
    r->arg = 303104;
    rec(t, DMM_TRC_FREE, 7, 0, 0x7f0000900010, 0);
    rec(t, DMM_TRC_RESIDENT, 7, 0, 0x7f0000400010, 0)->arg = 8192;
}

Test(stats, resident_blocks)
{
    dmm_trace_t t;
    dmm_stats_t st;
    build_resident(&t);
    compute(&t, &st);
    cr_expect_eq(st.resident_blocks, 3);
    cr_expect_eq(st.resident_size, (1 << 20) + 300000 + (4 << 20));
    cr_expect_eq(st.resident_bytes, 12288 + 300000 + 8192);
    cr_expect_eq(st.ops_free, 4);   /* the resident record frees nothing */
    dmm_stats_free(&st);
    dmm_trace_free(&t);
    build_sample(&t);
    compute(&t, &st);
    cr_expect_eq(st.resident_blocks, 0);
    cr_expect_eq(st.resident_size, 0);
    cr_expect_eq(st.resident_bytes, 0);
    dmm_stats_free(&st);
    dmm_trace_free(&t);
}

Test(stats, empty_trace)
{
    dmm_trace_t t = { 0 };
    dmm_stats_t st;
    t.flags = DMM_TRC_F_NOTIME;
    compute(&t, &st);
    cr_expect_eq(st.objects, 0);
    cr_expect_eq(st.total_bytes, 0);
    cr_expect_eq(st.avg_size, 0.0);
    cr_expect_eq(st.min_size, 0);
    cr_expect_eq(st.has_time, 0);
    cr_expect_eq(st.nsizes, 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    dmm_stats_print(f, &t, &st, 0, 10);
    fclose(f);
    cr_expect_not_null(strstr(buf, "n/a"), "%s", buf);
    free(buf);
    dmm_stats_free(&st);
}

Test(stats, top_sizes_ordered_by_count)
{
    dmm_trace_t t = { 0 };
    dmm_stats_t st;
    uint64_t a = 0x10000;
    for (int i = 0; i < 5; i++, a += 0x100)
        rec(&t, DMM_TRC_MALLOC, 1, 64, 0, a);
    for (int i = 0; i < 3; i++, a += 0x100)
        rec(&t, DMM_TRC_MALLOC, 1, 8, 0, a);
    for (int i = 0; i < 3; i++, a += 0x100)
        rec(&t, DMM_TRC_MALLOC, 1, 4, 0, a);
    rec(&t, DMM_TRC_MALLOC, 1, 0, 0, a);
    compute(&t, &st);
    cr_assert_eq(st.nsizes, 4);
    cr_expect_eq(st.sizes[0].size, 64);
    cr_expect_eq(st.sizes[0].count, 5);
    cr_expect_eq(st.sizes[1].size, 4);   /* ties: the smaller size first */
    cr_expect_eq(st.sizes[2].size, 8);
    cr_expect_eq(st.sizes[3].size, 0);
    cr_expect_eq(st.hist[0], 1);
    cr_expect_eq(st.hist[1], 6);
    cr_expect_eq(st.hist[3], 5);
    dmm_stats_free(&st);
    dmm_trace_free(&t);
}

Test(stats, many_distinct_sizes)
{
    dmm_trace_t t = { 0 };
    dmm_stats_t st;
    for (uint64_t i = 0; i < 100000; i++)
        rec(&t, DMM_TRC_MALLOC, (uint32_t)(i % 3), i % 20000 + 1, 0, 0x1000 + i * 16);
    compute(&t, &st);
    cr_expect_eq(st.distinct_sizes, 20000);
    cr_expect_eq(st.threads, 3);
    cr_expect_eq(st.sizes[0].count, 5);
    cr_expect_eq(st.sizes[0].size, 1);
    dmm_stats_free(&st);
    dmm_trace_free(&t);
}

Test(stats, buckets)
{
    cr_expect_eq(dmm_stats_bucket(0), 0);
    cr_expect_eq(dmm_stats_bucket(1), 1);
    cr_expect_eq(dmm_stats_bucket(16), 1);
    cr_expect_eq(dmm_stats_bucket(17), 2);
    cr_expect_eq(dmm_stats_bucket(32), 2);
    cr_expect_eq(dmm_stats_bucket(33), 3);
    cr_expect_eq(dmm_stats_bucket(4096), 9);
    cr_expect_eq(dmm_stats_bucket(4097), 10);
    cr_expect_eq(dmm_stats_bucket(UINT64_MAX), DMM_STATS_NBUCKETS - 1);
    for (unsigned b = 0; b < DMM_STATS_NBUCKETS; b++) {
        uint64_t lo, hi;
        dmm_stats_bucket_range(b, &lo, &hi);
        cr_expect_eq(dmm_stats_bucket(lo), b, "bucket %u lo %lu", b, (unsigned long)lo);
        cr_expect_eq(dmm_stats_bucket(hi), b, "bucket %u hi %lu", b, (unsigned long)hi);
    }
}

/* Three call stacks; site 2 allocates most bytes, site 1 most often. */
static void build_stacks(dmm_trace_t *t)
{
    memset(t, 0, sizeof *t);
    static const uint64_t fr[] = { 0x1111, 0x2222, 0x3333, 0x4444, 0x5555, 0x6666, 0x7777 };
    t->frames = malloc(sizeof fr);
    memcpy(t->frames, fr, sizeof fr);
    t->nframes = 7;
    t->stacks = calloc(4, sizeof *t->stacks);
    t->nstacks = 4;
    t->stacks[1] = (dmm_stack_t){ .nframes = 1, .first = 0 };
    t->stacks[2] = (dmm_stack_t){ .nframes = 6, .first = 1 };
    t->stacks[3] = (dmm_stack_t){ .nframes = 2, .first = 6 };   /* runs past the table */
    uint64_t a = 0x10000;
    for (int i = 0; i < 4; i++, a += 0x100)
        rec(t, DMM_TRC_MALLOC, 1, 10, 0, a)->stack = 1;
    rec(t, DMM_TRC_MALLOC, 1, 5000, 0, a)->stack = 2;
    rec(t, DMM_TRC_REALLOC, 1, 6000, a, a)->stack = 2;
    rec(t, DMM_TRC_MALLOC, 1, 7, 0, a + 0x100)->stack = 3;
    dmm_rec_t *f = rec(t, DMM_TRC_MALLOC, 1, 99999, 0, 0);   /* failed: not a site's bytes */
    f->flags = DMM_TRC_RF_FAILED;
    f->stack = 1;
    rec(t, DMM_TRC_MALLOC, 1, 1, 0, a + 0x200)->stack = 77; /* no such stack */
}

Test(stats, allocation_sites)
{
    dmm_trace_t t;
    dmm_stats_t st;
    build_stacks(&t);
    compute(&t, &st);
    cr_assert_eq(st.nsites, 3);
    cr_expect_eq(st.sites[0].stack, 2);
    cr_expect_eq(st.sites[0].count, 2);
    cr_expect_eq(st.sites[0].bytes, 11000);
    cr_expect_eq(st.sites[1].stack, 1);
    cr_expect_eq(st.sites[1].count, 4);
    cr_expect_eq(st.sites[1].bytes, 40);
    cr_expect_eq(st.sites[2].stack, 3);

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    dmm_stats_print(f, &t, &st, 0, 2);
    fclose(f);
    cr_expect_not_null(strstr(buf, "Top allocation sites"), "%s", buf);
    cr_expect_not_null(strstr(buf, "0x2222"), "%s", buf);
    cr_expect_not_null(strstr(buf, "0x5555"), "%s", buf);
    cr_expect_null(strstr(buf, "0x6666"), "only 4 frames per site:\n%s", buf);
    cr_expect_null(strstr(buf, "0x7777"), "top 2 only:\n%s", buf);
    free(buf);
    dmm_stats_free(&st);
    dmm_trace_free(&t);
}

/* ---- a small JSON reader: validates the whole document and returns the
 * text of the value at a dotted path ("table2.objects", "top_sizes.0.size"). */

typedef struct jr {
    const char *p;
    const char *want;
    const char *found;      /* start of the wanted value */
    size_t      found_len;
    int         ok;
} jr_t;

static void jws(jr_t *r)
{
    while (*r->p == ' ' || *r->p == '\n' || *r->p == '\t' || *r->p == '\r')
        r->p++;
}

static void jvalue(jr_t *r, const char *path);

static void jstring(jr_t *r, char *out, size_t outlen)
{
    size_t n = 0;
    if (*r->p != '"') {
        r->ok = 0;
        return;
    }
    r->p++;
    while (*r->p && *r->p != '"') {
        char c = *r->p++;
        if ((unsigned char)c < 0x20) {
            r->ok = 0;
            return;
        }
        if (c == '\\') {
            c = *r->p++;
            if (c == 'u') {
                for (int i = 0; i < 4; i++)
                    if (!isxdigit((unsigned char)*r->p++))
                        r->ok = 0;
                c = '?';
            } else if (!strchr("\"\\/bfnrt", c)) {
                r->ok = 0;
            }
        }
        if (out && n + 1 < outlen)
            out[n++] = c;
    }
    if (*r->p != '"')
        r->ok = 0;
    else
        r->p++;
    if (out)
        out[n] = 0;
}

static void jvalue(jr_t *r, const char *path)
{
    jws(r);
    const char *start = r->p;
    char sub[256];
    if (*r->p == '{' || *r->p == '[') {
        int obj = *r->p == '{';
        r->p++;
        jws(r);
        if (*r->p == (obj ? '}' : ']')) {
            r->p++;
        } else {
            for (int i = 0; r->ok; i++) {
                jws(r);
                if (obj) {
                    char key[128];
                    jstring(r, key, sizeof key);
                    jws(r);
                    if (*r->p++ != ':')
                        r->ok = 0;
                    snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", key);
                } else {
                    snprintf(sub, sizeof sub, "%s%s%d", path, *path ? "." : "", i);
                }
                jvalue(r, sub);
                jws(r);
                if (*r->p == ',') {
                    r->p++;
                    continue;
                }
                if (*r->p++ != (obj ? '}' : ']'))
                    r->ok = 0;
                break;
            }
        }
    } else if (*r->p == '"') {
        jstring(r, NULL, 0);
    } else if (!strncmp(r->p, "true", 4) || !strncmp(r->p, "null", 4)) {
        r->p += 4;
    } else if (!strncmp(r->p, "false", 5)) {
        r->p += 5;
    } else {
        char *end;
        strtod(r->p, &end);
        if (end == r->p || !(isdigit((unsigned char)*r->p) || *r->p == '-'))
            r->ok = 0;
        r->p = end;
    }
    if (r->ok && strcmp(path, r->want) == 0) {
        r->found = start;
        r->found_len = (size_t)(r->p - start);
    }
}

/* The value at path as text ("" when absent); fails the test on bad JSON. */
static const char *json_get(const char *doc, const char *path)
{
    static char out[512];
    jr_t r = { .p = doc, .want = path, .ok = 1 };
    jvalue(&r, "");
    jws(&r);
    cr_assert(r.ok && *r.p == 0, "not one valid JSON value (at offset %ld):\n%s",
              (long)(r.p - doc), doc);
    out[0] = 0;
    if (r.found)
        snprintf(out, sizeof out, "%.*s", (int)r.found_len, r.found);
    return out;
}

static char *print_json(const dmm_trace_t *t, const dmm_stats_t *st, size_t top)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    dmm_stats_print(f, t, st, 1, top);
    fclose(f);
    return buf;
}

Test(stats, json_has_the_numbers)
{
    dmm_trace_t t;
    dmm_stats_t st;
    build_sample(&t);
    t.pid = 4242;
    t.cmdline = malloc(16);
    memcpy(t.cmdline, "./app\0-x\0\"q\"\0", 13);
    t.cmdline_len = 13;
    compute(&t, &st);
    char *doc = print_json(&t, &st, 3);
    cr_expect_str_eq(json_get(doc, "table2.objects"), "4");
    cr_expect_str_eq(json_get(doc, "table2.total_memory"), "698");
    cr_expect_str_eq(json_get(doc, "table2.max_in_use"), "516");
    cr_expect_str_eq(json_get(doc, "table2.average_size"), "116.33");
    cr_expect_str_eq(json_get(doc, "table2.memory_ops"), "7");
    cr_expect_str_eq(json_get(doc, "op_stream.reallocs"), "2");
    cr_expect_str_eq(json_get(doc, "sizes.distinct"), "6");
    cr_expect_str_eq(json_get(doc, "sizes.max_in_use_16"), "528");
    cr_expect_str_eq(json_get(doc, "sizes.min"), "16");
    cr_expect_str_eq(json_get(doc, "sizes.max"), "300");
    cr_expect_str_eq(json_get(doc, "calls.malloc"), "3");
    cr_expect_str_eq(json_get(doc, "calls.free"), "3");
    cr_expect_str_eq(json_get(doc, "calls.posix_memalign"), "0");
    cr_expect_str_eq(json_get(doc, "calls.free_null"), "1");
    cr_expect_str_eq(json_get(doc, "calls.failed"), "1");
    cr_expect_str_eq(json_get(doc, "calls.unknown_free"), "1");
    cr_expect_str_eq(json_get(doc, "live_at_end.blocks"), "3");
    cr_expect_str_eq(json_get(doc, "live_at_end.bytes"), "98");
    cr_expect_str_eq(json_get(doc, "trace.pid"), "4242");
    /* shell words: the quoted argument in single quotes */
    cr_expect_str_eq(json_get(doc, "trace.command"), "\"./app -x '\\\"q\\\"'\"");
    cr_expect_str_eq(json_get(doc, "trace.threads"), "2");
    cr_expect_str_eq(json_get(doc, "trace.duration_s"), "0.000010000");
    cr_expect_str_eq(json_get(doc, "trace.truncated"), "false");
    cr_expect_str_eq(json_get(doc, "top_sizes.0.count"), "1");
    cr_expect_str_eq(json_get(doc, "top_sizes.0.size"), "16");
    cr_expect_str_eq(json_get(doc, "top_sizes.0.share_pct"), "16.67");
    cr_expect_str_eq(json_get(doc, "top_sizes.3"), "");   /* --top 3 */
    cr_expect_str_eq(json_get(doc, "histogram.0.lo"), "1");
    cr_expect_str_eq(json_get(doc, "histogram.0.hi"), "16");
    cr_expect_str_eq(json_get(doc, "histogram.5.lo"), "257");
    cr_expect_str_eq(json_get(doc, "histogram.5.count"), "1");
    cr_expect_str_eq(json_get(doc, "histogram.6"), "");
    cr_expect_str_eq(json_get(doc, "top_sites"), "[]");
    free(doc);
    dmm_stats_free(&st);
    dmm_trace_free(&t);
}

Test(stats, json_notime_truncated_and_sites)
{
    dmm_trace_t t;
    dmm_stats_t st;
    build_stacks(&t);
    t.flags = DMM_TRC_F_NOTIME;
    t.truncated = 1;
    snprintf(t.note, sizeof t.note, "x.trc: offset 4096: block cut \"short\"");
    compute(&t, &st);
    char *doc = print_json(&t, &st, 10);
    cr_expect_str_eq(json_get(doc, "trace.duration_s"), "null");
    cr_expect_str_eq(json_get(doc, "trace.truncated"), "true");
    cr_expect_str_eq(json_get(doc, "trace.note"), "\"x.trc: offset 4096: block cut \\\"short\\\"\"");
    cr_expect_str_eq(json_get(doc, "top_sites.0.stack"), "2");
    cr_expect_str_eq(json_get(doc, "top_sites.0.bytes"), "11000");
    cr_expect_str_eq(json_get(doc, "top_sites.0.frames.0"), "\"0x2222\"");
    cr_expect_str_eq(json_get(doc, "top_sites.0.frames.3"), "\"0x5555\"");
    cr_expect_str_eq(json_get(doc, "top_sites.0.frames.4"), "");
    cr_expect_str_eq(json_get(doc, "top_sites.2.frames.0"), "\"0x7777\"");
    cr_expect_str_eq(json_get(doc, "top_sites.2.frames.1"), "");   /* past the table */
    free(doc);
    dmm_stats_free(&st);
    dmm_trace_free(&t);
}

/* ---- the command line ---- */

/* Run dmm stats with args, its stdout into a file; returns the exit status
 * and the output (malloc'ed) in *out. */
static int run_stats(int argc, char **argv, char **out)
{
    char path[] = "/tmp/dmm-stats-out-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    fflush(stdout);
    int saved = dup(1);
    dup2(fd, 1);
    int rc = dmm_stats_main(argc, argv);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    off_t len = lseek(fd, 0, SEEK_END);
    *out = calloc(1, (size_t)len + 1);
    ssize_t got = pread(fd, *out, (size_t)len, 0);
    cr_assert_eq(got, (ssize_t)len);
    close(fd);
    unlink(path);
    return rc;
}

static char trc_path[64];

/* The trace that build() makes, written to a fresh trc_path. */
static void write_trc(void (*build)(dmm_trace_t *))
{
    dmm_trace_t t;
    dmm_err_t err = { { 0 } };
    build(&t);
    t.pid = 99;
    strcpy(trc_path, "/tmp/dmm-stats-XXXXXX");
    int fd = mkstemp(trc_path);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(dmm_write_trc_ex(&t, trc_path, 0, 1, &err), 0, "%s", err.msg);
    dmm_trace_free(&t);
}

static void write_sample_trc(void)
{
    write_trc(build_sample);
}

Test(stats_cli, json_from_a_file)
{
    write_sample_trc();
    char *out;
    char *argv[] = { "stats", "--json", "--top", "2", trc_path, NULL };
    cr_assert_eq(run_stats(5, argv, &out), 0);
    cr_expect_str_eq(json_get(out, "table2.objects"), "4");
    cr_expect_str_eq(json_get(out, "table2.max_in_use"), "516");
    cr_expect_str_eq(json_get(out, "trace.format"), "\"trc\"");
    cr_expect_str_eq(json_get(out, "trace.pid"), "99");
    cr_expect_str_eq(json_get(out, "top_sizes.1.size"), "32");
    cr_expect_str_eq(json_get(out, "top_sizes.2"), "");
    free(out);
    unlink(trc_path);
}

Test(stats_cli, text_from_a_file)
{
    write_sample_trc();
    char *out;
    char *argv[] = { "stats", trc_path, NULL };
    cr_assert_eq(run_stats(2, argv, &out), 0);
    cr_expect_not_null(strstr(out, "Max in use (bytes)"), "%s", out);
    cr_expect_not_null(strstr(out, "516"), "%s", out);
    cr_expect_not_null(strstr(out, "116.33"), "%s", out);
    cr_expect_not_null(strstr(out, "#"), "histogram bars:\n%s", out);
    free(out);
    unlink(trc_path);
}

/* Read from a file (the scanning path): the same numbers; the text shows
 * the section only for a trace that has resident blocks. */
Test(stats_cli, resident_from_a_file)
{
    write_trc(build_resident);
    char *out;
    char *argv[] = { "stats", "--json", trc_path, NULL };
    cr_assert_eq(run_stats(3, argv, &out), 0);
    cr_expect_str_eq(json_get(out, "resident.blocks"), "3");
    cr_expect_str_eq(json_get(out, "resident.bytes"), "5542880");
    cr_expect_str_eq(json_get(out, "resident.resident_bytes"), "320480");
    cr_expect_str_eq(json_get(out, "resident.resident_share"), "5.8");
    free(out);
    char *argv2[] = { "stats", trc_path, NULL };
    cr_assert_eq(run_stats(2, argv2, &out), 0);
    cr_expect_not_null(strstr(out, "Resident (blocks glibc mapped on their own)"), "%s", out);
    cr_expect_not_null(strstr(out, "320480"), "%s", out);
    free(out);
    unlink(trc_path);
    write_sample_trc();
    cr_assert_eq(run_stats(2, argv2, &out), 0);
    cr_expect_null(strstr(out, "Resident"), "%s", out);
    free(out);
    unlink(trc_path);
}

Test(stats_cli, bad_arguments_exit_1)
{
    char *out;
    char *a1[] = { "stats", NULL };
    cr_expect_eq(run_stats(1, a1, &out), 1);
    free(out);
    char *a2[] = { "stats", "--bogus", "x", NULL };
    cr_expect_eq(run_stats(3, a2, &out), 1);
    free(out);
    char *a3[] = { "stats", "--top", "many", "x", NULL };
    cr_expect_eq(run_stats(4, a3, &out), 1);
    free(out);
    char *a4[] = { "stats", "a", "b", NULL };
    cr_expect_eq(run_stats(3, a4, &out), 1);
    free(out);
    char *a5[] = { "stats", "--top", NULL };
    cr_expect_eq(run_stats(2, a5, &out), 1);
    free(out);
}

Test(stats_cli, bad_input_exit_2)
{
    char *out;
    char *a1[] = { "stats", "/nonexistent/dmm/trace.trc", NULL };
    cr_expect_eq(run_stats(2, a1, &out), 2);
    free(out);
    char path[] = "/tmp/dmm-stats-bad-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, "DMMTRACE garbage", 16), 16);
    close(fd);
    char *a2[] = { "stats", path, NULL };
    cr_expect_eq(run_stats(2, a2, &out), 2);
    free(out);
    unlink(path);
}
