/* test_opcache.c - the operation stream's cache beside its trace
 * (tracer/format/opcache.c): written on the first load, read on the next
 * with the very same stream, never trusted when the trace changed or the
 * cache was damaged (any byte of it), a cut-short trace's note kept, and
 * no cache for standard input or when asked for none; each op's thread,
 * numbered in the order threads come, through the cache too; the blocks'
 * resident bytes, kept and checked. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "tracer/base/file.h"
#include "tracer/format/crc32.h"
#include "tracer/format/opcache.h"
#include "tracer/format/trc_write.h"
#include "test/lib/trc_sample.h"

static char dir[64], rep[128], ops[160];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/dmm-opcache-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(rep, sizeof rep, "%s/t.rep", dir);
    snprintf(ops, sizeof ops, "%s/t.rep.ops", dir);
    /* 40 blocks: allocations, a realloc, frees, a free of NULL's like */
    FILE *f = fopen(rep, "w");
    cr_assert_not_null(f);
    fprintf(f, "100000\n40\n81\n1\n");
    for (int i = 0; i < 40; i++)
        fprintf(f, "a %d %d\n", i, 16 + 24 * i);
    fprintf(f, "r 3 5000\n");
    for (int i = 0; i < 40; i++)
        fprintf(f, "f %d\n", i);
    fclose(f);
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
}

TestSuite(opcache, .init = setup, .fini = teardown);

static void load(const char *path, int use, dmm_opstream_t *s, dmm_opload_t *info)
{
    dmm_err_t err = { { 0 } };
    cr_assert_eq(dmm_opstream_load(path, use, s, info, &err), 0, "%s", err.msg);
}

static void expect_same(const dmm_opstream_t *a, const dmm_opstream_t *b)
{
    cr_assert_eq(a->nops, b->nops);
    cr_expect_eq(a->nids, b->nids);
    cr_expect_eq(memcmp(a->ops, b->ops, a->nops * sizeof *a->ops), 0);
    cr_expect_eq(a->free_null, b->free_null);
    cr_expect_eq(a->unknown_free, b->unknown_free);
    cr_expect_eq(a->failed, b->failed);
    cr_expect_eq(a->reused_live, b->reused_live);
    cr_expect_eq(a->nthreads, b->nthreads);
}

static int exists(const char *p)
{
    return access(p, F_OK) == 0;
}

Test(opcache, written_on_the_first_load_and_read_on_the_next)
{
    dmm_opstream_t parsed, cached, plain;
    dmm_opload_t i1, i2, i3;
    load(rep, 1, &parsed, &i1);
    cr_expect_not(i1.from_cache);
    cr_expect(i1.cache_written);
    cr_expect(exists(ops));
    cr_expect_eq(parsed.nops, 81);
    load(rep, 1, &cached, &i2);
    cr_expect(i2.from_cache);
    cr_expect_not(i2.cache_written);
    expect_same(&parsed, &cached);
    load(rep, 0, &plain, &i3);
    cr_expect_not(i3.from_cache, "use_cache 0 parses");
    expect_same(&parsed, &plain);
    dmm_opstream_free(&parsed);
    dmm_opstream_free(&cached);
    dmm_opstream_free(&plain);
}

Test(opcache, none_without_use_cache_nor_for_standard_input)
{
    dmm_opstream_t s;
    dmm_opload_t info;
    load(rep, 0, &s, &info);
    cr_expect_not(info.cache_written);
    cr_expect_not(exists(ops));
    dmm_opstream_free(&s);
    cr_assert_not_null(freopen(rep, "r", stdin));
    cr_assert_eq(chdir(dir), 0);
    load("-", 1, &s, &info);
    cr_expect_eq(s.nops, 81);
    cr_expect_not(info.cache_written);
    cr_expect_not(exists("-.ops"));
    dmm_opstream_free(&s);
}

Test(opcache, a_changed_trace_is_parsed_again)
{
    dmm_opstream_t s;
    dmm_opload_t info;
    load(rep, 1, &s, &info);
    dmm_opstream_free(&s);
    /* one more allocation, same size of file (a digit changed), new time */
    FILE *f = fopen(rep, "r+");
    cr_assert_not_null(f);
    cr_assert_eq(fseek(f, 0, SEEK_END), 0);
    fprintf(f, "a 40 7\n");
    fclose(f);
    f = fopen(rep, "r+");
    cr_assert_not_null(f);
    fprintf(f, "100000\n41\n82\n1\n");
    fclose(f);
    struct timeval tv[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
    cr_assert_eq(utimes(rep, tv), 0);
    load(rep, 1, &s, &info);
    cr_expect_not(info.from_cache);
    cr_expect(info.cache_written, "the cache follows the trace");
    cr_expect_eq(s.nops, 82);
    dmm_opstream_free(&s);
    load(rep, 1, &s, &info);
    cr_expect(info.from_cache);
    cr_expect_eq(s.nops, 82);
    dmm_opstream_free(&s);
}

Test(opcache, any_damaged_byte_is_noticed)
{
    dmm_opstream_t ref, s;
    dmm_opload_t info;
    load(rep, 1, &ref, &info);
    uint8_t *good;
    size_t len;
    dmm_err_t err;
    cr_assert_eq(dmm_read_file(ops, &good, &len, &err), 0, "%s", err.msg);
    cr_assert_gt(len, 112 + 81 * 16 - 1);
    uint8_t *bad = malloc(len);
    cr_assert_not_null(bad);
    int used = 0;
    for (size_t k = 0; k < len; k++) {
        memcpy(bad, good, len);
        bad[k] ^= (uint8_t)(1u << (k % 8));
        cr_assert_eq(dmm_write_file(ops, bad, len, &err), 0, "%s", err.msg);
        load(rep, 1, &s, &info);
        used += info.from_cache;
        expect_same(&ref, &s);
        cr_expect(info.cache_written, "byte %zu: the cache is made again", k);
        dmm_opstream_free(&s);
    }
    cr_expect_eq(used, 0, "a damaged cache was used %d times", used);
    /* cut short, and nothing but garbage */
    cr_assert_eq(dmm_write_file(ops, good, len - 16, &err), 0);
    load(rep, 1, &s, &info);
    cr_expect_not(info.from_cache);
    expect_same(&ref, &s);
    dmm_opstream_free(&s);
    cr_assert_eq(dmm_write_file(ops, "garbage", 7, &err), 0);
    load(rep, 1, &s, &info);
    cr_expect_not(info.from_cache);
    expect_same(&ref, &s);
    dmm_opstream_free(&s);
    free(bad);
    free(good);
    dmm_opstream_free(&ref);
}

Test(opcache, a_cut_short_traces_note_is_kept)
{
    dmm_trace_t t;
    sample_trace(&t, 3000);
    char trc[160];
    snprintf(trc, sizeof trc, "%s/cut.trc", dir);
    dmm_err_t err;
    cr_assert_eq(dmm_write_trc(&t, trc, 0, &err), 0, "%s", err.msg);
    dmm_trace_free(&t);
    struct stat st;
    cr_assert_eq(stat(trc, &st), 0);
    cr_assert_eq(truncate(trc, st.st_size - 100), 0);
    dmm_opstream_t a, b;
    dmm_opload_t ia, ib;
    load(trc, 1, &a, &ia);
    cr_expect_not_null(strstr(ia.note, "cut short"), "%s", ia.note);
    load(trc, 1, &b, &ib);
    cr_expect(ib.from_cache);
    cr_expect_str_eq(ib.note, ia.note);
    expect_same(&a, &b);
    dmm_opstream_free(&a);
    dmm_opstream_free(&b);
}

/* Each op carries its thread: 0 for the first that made an op, then 1,
 * 2, ... as they come (records that make no op number none), and from the
 * 256th thread on they share 255; the cache keeps them. */
Test(opcache, ops_carry_their_thread_numbered_as_threads_come)
{
    char path[160];
    snprintf(path, sizeof path, "%s/t.android", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f, "70: free 0x0\n"             /* free(NULL): no op, no number */
               "50: malloc 0x1000 16\n"
               "60: malloc 0x2000 32\n"
               "50: free 0x2000\n"
               "40: calloc 0x3000 4 8\n"
               "60: realloc 0x4000 0x1000 64\n");
    for (int t = 0; t < 300; t++)
        fprintf(f, "%d: malloc 0x%x 16\n", 1000 + t, 0x100000 + 0x100 * t);
    fclose(f);
    dmm_opstream_t parsed, cached;
    dmm_opload_t i1, i2;
    load(path, 1, &parsed, &i1);
    cr_assert(i1.cache_written);
    cr_assert_eq(parsed.nops, 5 + 300);
    static const unsigned want[] = { 0, 1, 0, 2, 1 };   /* 50, 60, 50, 40, 60 */
    for (int i = 0; i < 5; i++)
        cr_expect_eq(parsed.ops[i].thread, want[i], "op %d: thread %u", i, parsed.ops[i].thread);
    for (int t = 0; t < 300; t++) {
        unsigned w = 3 + t < 255 ? 3 + t : 255;
        cr_expect_eq(parsed.ops[5 + t].thread, w, "thread %d's op: %u", 1000 + t,
                     parsed.ops[5 + t].thread);
    }
    cr_expect_eq(parsed.nthreads, 256);
    load(path, 1, &cached, &i2);
    cr_assert(i2.from_cache);
    expect_same(&parsed, &cached);
    dmm_opstream_free(&parsed);
    dmm_opstream_free(&cached);
}

/* The stream's one resident entry: A's id (the second block) and 8192. */
static void expect_resident(const dmm_opstream_t *s, const char *what)
{
    cr_assert_eq(s->nids, 3, "%s", what);
    cr_assert_eq(s->nresident, 1, "%s: %zu resident entries", what, s->nresident);
    cr_expect_eq(s->resident[0].id, 1, "%s: id %u", what, s->resident[0].id);
    cr_expect_eq(s->resident[0].reserved, 0, "%s", what);
    cr_expect_eq(s->resident[0].bytes, 8192, "%s: %llu bytes", what,
                 (unsigned long long)s->resident[0].bytes);
}

/* A free that says its block's resident bytes (DMM_TRC_RF_RESIDENT) gives
 * the stream an entry {the block's id, the bytes}, a plain free none; the
 * cache keeps the entries, and one whose id is no block's (or whose
 * reserved word is not 0) makes it invalid, checksums right or not. */
Test(opcache, resident_bytes_of_frees_are_kept_and_checked)
{
    dmm_trace_t t;
    memset(&t, 0, sizeof t);
    t.format = DMM_FMT_TRC;
    sample_rec(&t, 7, DMM_TRC_MALLOC, 100, 0, 0, 0x1000, 0);          /* C: id 0 */
    sample_rec(&t, 7, DMM_TRC_MALLOC, 1u << 20, 0, 0, 0x100000, 0);   /* A: id 1 */
    sample_rec(&t, 7, DMM_TRC_MALLOC, 1u << 20, 0, 0, 0x300000, 0);   /* B: id 2 */
    sample_rec(&t, 7, DMM_TRC_FREE, 0, 8192, 0x100000, 0, 0);
    t.recs[t.nrecs - 1].flags = DMM_TRC_RF_RESIDENT;
    sample_rec(&t, 7, DMM_TRC_FREE, 0, 0, 0x300000, 0, 0);
    dmm_opstream_t built, parsed, cached, s;
    dmm_opload_t i1, i2, info;
    dmm_err_t err;
    cr_assert_eq(dmm_opstream_build(&t, &built, &err), 0, "%s", err.msg);
    expect_resident(&built, "built");
    char trc[160], cache[200];
    snprintf(trc, sizeof trc, "%s/res.trc", dir);
    snprintf(cache, sizeof cache, "%s.ops", trc);
    cr_assert_eq(dmm_write_trc(&t, trc, 0, &err), 0, "%s", err.msg);
    dmm_trace_free(&t);
    load(trc, 1, &parsed, &i1);
    cr_expect_not(i1.from_cache);
    cr_expect(i1.cache_written);
    expect_same(&built, &parsed);
    expect_resident(&parsed, "parsed");
    load(trc, 1, &cached, &i2);
    cr_expect(i2.from_cache);
    expect_same(&built, &cached);
    expect_resident(&cached, "cached");

    uint8_t *good;
    size_t len;
    cr_assert_eq(dmm_read_file(cache, &good, &len, &err), 0, "%s", err.msg);
    cr_assert_eq(len, 120 + built.nops * 16 + 16, "the entry is the cache's last 16 bytes");
    uint8_t *bad = malloc(len);
    cr_assert_not_null(bad);
    for (int k = 0; k < 4; k++) {
        memcpy(bad, good, len);
        uint32_t v = k / 2 ? 1 : built.nids;   /* reserved = 1, or id = nids */
        memcpy(bad + len - 16 + (k / 2 ? 4 : 0), &v, 4);
        if (k % 2) {   /* the checksums made right again: only the entry is wrong */
            uint32_t ops_crc = dmm_crc32(0, bad + 120, len - 120);
            memcpy(bad + 112, &ops_crc, 4);
            uint32_t header_crc = dmm_crc32(0, bad, 116);
            memcpy(bad + 116, &header_crc, 4);
        }
        cr_assert_eq(dmm_write_file(cache, bad, len, &err), 0, "%s", err.msg);
        load(trc, 1, &s, &info);
        cr_expect_not(info.from_cache, "patch %d: a bad entry was used", k);
        expect_same(&built, &s);
        expect_resident(&s, "parsed again");
        dmm_opstream_free(&s);
    }
    /* the right checksums are the ones the test computes: a good cache
     * with them made again is used */
    memcpy(bad, good, len);
    uint32_t ops_crc = dmm_crc32(0, bad + 120, len - 120), header_crc = dmm_crc32(0, bad, 116);
    cr_expect(!memcmp(bad + 112, &ops_crc, 4) && !memcmp(bad + 116, &header_crc, 4));
    free(bad);
    free(good);
    dmm_opstream_free(&built);
    dmm_opstream_free(&parsed);
    dmm_opstream_free(&cached);
}

/* A block still live at the end says its resident bytes in a record of its
 * own (DMM_TRC_RESIDENT, no call): its id gets the entry, the stream gains
 * no op, an address that no live block has is ignored, and the record
 * goes through a version-4 file and the cache as it is. */
Test(opcache, resident_bytes_of_blocks_live_at_the_end)
{
    dmm_trace_t t;
    memset(&t, 0, sizeof t);
    t.format = DMM_FMT_TRC;
    sample_rec(&t, 7, DMM_TRC_MALLOC, 100, 0, 0, 0x1000, 0);          /* id 0 */
    sample_rec(&t, 7, DMM_TRC_CALLOC, 2u << 20, 1, 0, 0x200000, 0);   /* id 1, live */
    sample_rec(&t, 7, DMM_TRC_FREE, 0, 0, 0x1000, 0, 0);
    sample_rec(&t, 7, DMM_TRC_RESIDENT, 0, 12288, 0x200000, 0, 0);
    sample_rec(&t, 7, DMM_TRC_RESIDENT, 0, 4096, 0x1000, 0, 0);      /* freed: none */
    dmm_opstream_t built, cached;
    dmm_opload_t i1, i2;
    dmm_err_t err;
    cr_assert_eq(dmm_opstream_build(&t, &built, &err), 0, "%s", err.msg);
    cr_assert_eq(built.nops, 3, "alloc, alloc, free: %zu ops", built.nops);
    cr_assert_eq(built.nresident, 1);
    cr_expect_eq(built.resident[0].id, 1);
    cr_expect_eq(built.resident[0].bytes, 12288);
    char trc[160];
    snprintf(trc, sizeof trc, "%s/live.trc", dir);
    cr_assert_eq(dmm_write_trc(&t, trc, 0, &err), 0, "%s", err.msg);
    dmm_trace_free(&t);
    load(trc, 1, &cached, &i1);
    dmm_opstream_free(&cached);
    load(trc, 1, &cached, &i2);
    cr_expect(i2.from_cache);
    expect_same(&built, &cached);
    cr_assert_eq(cached.nresident, 1);
    cr_expect(cached.resident[0].id == 1 && cached.resident[0].bytes == 12288);
    dmm_opstream_free(&built);
    dmm_opstream_free(&cached);
}
