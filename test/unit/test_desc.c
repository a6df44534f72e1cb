/* test_desc.c - .dmm descriptions: presets, canonical round trip, defaults,
 * and an error naming the line and the field for each kind of bad input. */
#include <criterion/criterion.h>

#include <string.h>
#include <unistd.h>

#include "allocators/chain/desc.h"

static const char *presets[] = { "kng", "lea", "fib", "s10", "exa" };

Test(desc, presets_parse_and_print_back_exactly)
{
    for (size_t i = 0; i < 5; i++) {
        const char *text = dmm_desc_preset(presets[i]);
        cr_assert_not_null(text);
        dmm_desc_t d;
        dmm_err_t err;
        char out[4096];
        cr_assert_eq(dmm_desc_parse(presets[i], text, strlen(text), &d, &err), 0, "%s", err.msg);
        cr_expect_eq(d.n, 1);
        dmm_desc_print(&d, out, sizeof out);
        cr_expect_str_eq(out, text);
    }
    cr_expect_null(dmm_desc_preset("nope"));
}

Test(desc, a_chain_round_trips)
{
    const char *text =
        "# dmm 1   trace=app.trc  fitness=0.913\n"
        "buddy-binary  range=(0,8192]         split=no  coalesce=no  list=sll   fit=exact order=lifo\n"
        "segregated    range=(8192,65536]     split=yes coalesce=yes list=btree fit=first order=lifo lists=6\n"
        "lea           range=(65536,inf]      split=yes coalesce=yes list=dll   fit=best  order=fifo\n";
    dmm_desc_t d;
    dmm_err_t err;
    char out[4096];
    cr_assert_eq(dmm_desc_parse("t", text, strlen(text), &d, &err), 0, "%s", err.msg);
    cr_assert_eq(d.n, 3);
    cr_expect_eq(d.a[0].cls, DMM_CLASS_BUDDY_BINARY);
    cr_expect_eq(d.a[0].hi, 8192);
    cr_expect_eq(d.a[1].list, DMM_LIST_BTREE);
    cr_expect_eq(d.a[1].lists, 6);
    cr_expect_eq(d.a[2].hi, DMM_SIZE_INF);
    cr_expect_eq(d.a[2].order, DMM_ORDER_FIFO);
    cr_expect_str_eq(d.title, "dmm 1   trace=app.trc  fitness=0.913");
    dmm_desc_print(&d, out, sizeof out);
    cr_expect_str_eq(out, text);
}

Test(desc, fields_in_any_order_with_defaults_and_comments)
{
    const char *text = "kingsley order=fifo range=(0,100]   # small ones\n\n  lea range=(100,inf] fit=best\n";
    dmm_desc_t d;
    dmm_err_t err = { { 0 } };
    cr_assert_eq(dmm_desc_parse("t", text, strlen(text), &d, &err), 0, "%s", err.msg);
    cr_assert_eq(d.n, 2);
    cr_expect_eq(d.a[0].order, DMM_ORDER_FIFO);
    cr_expect_eq(d.a[0].fit, DMM_FIT_FIRST);
    cr_expect_eq(d.a[0].split, 0);
    cr_expect_eq(d.a[1].fit, DMM_FIT_BEST);
    cr_expect_eq(d.a[1].order, DMM_ORDER_LIFO);
}

static void bad(const char *text, const char *want1, const char *want2)
{
    dmm_desc_t d;
    dmm_err_t err = { { 0 } };
    cr_assert_eq(dmm_desc_parse("x.dmm", text, strlen(text), &d, &err), -1,
                 "accepted: %s", text);
    cr_expect_not_null(strstr(err.msg, want1), "'%s' not in: %s", want1, err.msg);
    if (want2)
        cr_expect_not_null(strstr(err.msg, want2), "'%s' not in: %s", want2, err.msg);
    cr_expect_eq(strncmp(err.msg, "x.dmm: line ", 12), 0, "%s", err.msg);
}

Test(desc, bad_input_names_the_line_and_field)
{
    bad("", "line 1", "no allocator");
    bad("# only a comment\n", "no allocator", NULL);
    bad("kingsly range=(0,inf]\n", "line 1", "field 'class'");
    bad("kingsley range=(0,inf]\nlea range=(10,20]\n", "line 2", "overlaps");
    bad("lea range=(100,200]\nlea range=(0,50]\n", "line 2", "field 'range'");
    bad("lea range=(0,12x]\n", "field 'range'", "bad number");
    bad("lea range=(0,99999999999999999999999]\n", "field 'range'", NULL);
    bad("lea range=(5,5]\n", "empty range", NULL);
    bad("lea range=0,5\n", "field 'range'", "(lo,hi]");
    bad("lea split=maybe range=(0,5]\n", "field 'split'", "yes or no");
    bad("lea range=(0,5] list=tree\n", "field 'list'", NULL);
    bad("lea range=(0,5] fit=worst\n", "field 'fit'", NULL);
    bad("lea range=(0,5] order=random\n", "field 'order'", NULL);
    bad("lea range=(0,5] lists=0\n", "field 'lists'", NULL);
    bad("lea range=(0,5] colour=red\n", "field 'colour'", "unknown field");
    bad("lea range=(0,5] split\n", "field 'split'", "key=value");
    bad("lea split=yes\n", "field 'range'", "missing");
    bad("lea range=(0,5]\n\x01\x02garbage\n", "line 2", NULL);
    bad("lea range=(0,5]\xff\n", "not text", NULL);
}

Test(desc, a_cache_line_round_trips_and_is_printed_first)
{
    const char *text =
        "# dmm 1 cached\n"
        "sss           range=(0,144]          split=no  coalesce=no  list=sll   fit=first order=lifo\n"
        "  cache count=32 max=256   # per thread\n"
        "lea           range=(144,inf]        split=yes coalesce=yes list=dll   fit=best  order=fifo\n";
    const char *canon =
        "# dmm 1 cached\n"
        "cache         max=256 count=32\n"
        "sss           range=(0,144]          split=no  coalesce=no  list=sll   fit=first order=lifo\n"
        "lea           range=(144,inf]        split=yes coalesce=yes list=dll   fit=best  order=fifo\n";
    dmm_desc_t d, e;
    dmm_err_t err = { { 0 } };
    char out[4096], again[4096];
    cr_assert_eq(dmm_desc_parse("t", text, strlen(text), &d, &err), 0, "%s", err.msg);
    cr_expect_eq(d.n, 2);
    cr_expect_eq(d.cache_max, 256);
    cr_expect_eq(d.cache_count, 32);
    dmm_desc_print(&d, out, sizeof out);
    cr_expect_str_eq(out, canon);
    cr_assert_eq(dmm_desc_parse("t", out, strlen(out), &e, &err), 0, "%s", err.msg);
    dmm_desc_print(&e, again, sizeof again);
    cr_expect_str_eq(again, canon);
    /* the cache is no option of a class: the effective text keeps it */
    dmm_desc_effective(&e);
    cr_expect_eq(e.cache_max, 256);
    cr_expect_eq(e.cache_count, 32);
    /* without one, nothing is printed for it */
    cr_assert_eq(dmm_desc_parse("t", canon + 46, strlen(canon + 46), &d, &err), 0, "%s", err.msg);
    cr_expect_eq(d.cache_max, 0);
    dmm_desc_print(&d, out, sizeof out);
    cr_expect_null(strstr(out, "cache"), "%s", out);
}

Test(desc, bad_cache_lines_name_the_line_and_field)
{
    bad("lea range=(0,5]\ncache max=256\n", "line 2", "field 'count': missing");
    bad("cache count=4\nlea range=(0,5]\n", "line 1", "field 'max': missing");
    bad("cache max=8 count=4\nlea range=(0,5]\n", "field 'max'", "16 to 1024");
    bad("cache max=2048 count=4\nlea range=(0,5]\n", "field 'max'", NULL);
    bad("cache max=64 count=0\nlea range=(0,5]\n", "field 'count'", "1 to 4096");
    bad("cache max=64 count=5000\nlea range=(0,5]\n", "field 'count'", NULL);
    bad("cache max=64 count=x\nlea range=(0,5]\n", "field 'count'", NULL);
    bad("cache max=64 count=4 range=(0,5]\n", "field 'range'", "unknown field of the cache line");
    bad("cache max=64 count=4\ncache max=64 count=4\nlea range=(0,5]\n", "line 2",
        "second cache line");
    bad("cache max=64 count=4\n", "no allocator", NULL);
}

Test(desc, a_release_line_round_trips_after_the_cache_line)
{
    const char *text =
        "# dmm 1 released\n"
        "sss range=(0,144] list=dll\n"
        "release delay=inf keep=1048576  # the oldest beyond 1 MiB\n"
        "cache max=256 count=32\n";
    const char *canon =
        "# dmm 1 released\n"
        "cache         max=256 count=32\n"
        "release       keep=1048576 delay=inf\n"
        "sss           range=(0,144]          split=no  coalesce=no  list=dll   fit=first order=lifo\n";
    dmm_desc_t d, e;
    dmm_err_t err = { { 0 } };
    char out[4096];
    cr_assert_eq(dmm_desc_parse("t", text, strlen(text), &d, &err), 0, "%s", err.msg);
    cr_expect_eq(d.release.on, 1);
    cr_expect_eq(d.release.keep, 1048576);
    cr_expect_eq(d.release.delay, UINT64_MAX);
    dmm_desc_print(&d, out, sizeof out);
    cr_expect_str_eq(out, canon);
    cr_assert_eq(dmm_desc_parse("t", out, strlen(out), &e, &err), 0, "%s", err.msg);
    cr_expect_eq(memcmp(&e.release, &d.release, sizeof d.release), 0);
    /* a missing field is 0: `release` alone gives back at once */
    const char *bare = "release\nsss range=(0,64]\n";
    cr_assert_eq(dmm_desc_parse("t", bare, strlen(bare), &d, &err), 0, "%s", err.msg);
    cr_expect(d.release.on && d.release.keep == 0 && d.release.delay == 0);
    dmm_desc_print(&d, out, sizeof out);
    cr_expect_not_null(strstr(out, "release       keep=0 delay=0\n"), "%s", out);
}

Test(desc, the_effective_release_policy_is_written_one_way)
{
    static const struct {
        const char *text;
        int on;
        size_t keep;
        uint64_t delay;
    } c[] = {
        /* at once, however written */
        { "release keep=0 delay=5000\nsss range=(0,64]\n", 1, 0, 0 },
        { "release keep=inf delay=0\nsss range=(0,64]\n", 1, 0, 0 },
        /* never to the OS, yet empty areas serve other sizes: a policy */
        { "release keep=inf delay=inf\nsss range=(0,64]\n", 1, SIZE_MAX, UINT64_MAX },
        /* no class of the chain reads it: no policy */
        { "release keep=0 delay=0\nkingsley range=(0,64]\nbuddy-binary range=(64,inf]\n", 0, 0,
          0 },
        { "release keep=65536 delay=1000\nkingsley range=(0,64]\nsss range=(64,128]\n", 1,
          65536, 1000 },
        { "release keep=65536 delay=1000\nlea range=(0,inf]\n", 1, 65536, 1000 },
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        dmm_desc_t d;
        dmm_err_t err = { { 0 } };
        cr_assert_eq(dmm_desc_parse("t", c[i].text, strlen(c[i].text), &d, &err), 0, "%s",
                     err.msg);
        dmm_desc_effective(&d);
        cr_expect_eq(d.release.on, c[i].on, "%s", c[i].text);
        cr_expect_eq(d.release.keep, c[i].keep, "%s", c[i].text);
        cr_expect_eq(d.release.delay, c[i].delay, "%s", c[i].text);
    }
}

Test(desc, bad_release_lines_name_the_line_and_field)
{
    bad("lea range=(0,5]\nrelease keep=1k\n", "line 2", "field 'keep': expected a number of bytes");
    bad("release delay=-1\nlea range=(0,5]\n", "line 1", "field 'delay': expected a number of calls");
    bad("release keep=0 every=5\nlea range=(0,5]\n", "field 'every'",
        "unknown field of the release line");
    bad("release keep=0\nrelease delay=1\nlea range=(0,5]\n", "line 2", "second release line");
    bad("release keep=0 delay=0\n", "no allocator", NULL);
}

/* in parsed into d, printed as want, and that text parsed again into e. */
static void round_trip(const char *in, const char *want, dmm_desc_t *d, dmm_desc_t *e)
{
    dmm_err_t err = { { 0 } };
    cr_assert_eq(dmm_desc_parse("t", in, strlen(in), d, &err), 0, "%s", err.msg);
    char out[1024];
    dmm_desc_print(d, out, sizeof out);
    cr_expect_str_eq(out, want);
    cr_assert_eq(dmm_desc_parse("t", out, strlen(out), e, &err), 0, "%s", err.msg);
}

Test(desc, a_pool_line_round_trips_after_the_release_line)
{
    const char *in = "lea range=(0,inf]\npool bytes=1048576  # held from the start\n"
                     "cache max=64 count=8\n";
    const char *want = "# dmm 1\n"
                       "cache         max=64 count=8\n"
                       "pool          bytes=1048576\n"
                       "lea           range=(0,inf]          split=no  coalesce=no  list=sll   "
                       "fit=first order=lifo\n";
    dmm_desc_t d, e;
    round_trip(in, want, &d, &e);
    cr_expect_eq(d.pool, 1048576);
    cr_expect_eq(e.pool, d.pool);
    dmm_desc_effective(&e);
    cr_expect_eq(e.pool, d.pool, "a pool is read by the page source, whatever the classes");
}

Test(desc, bad_pool_lines_name_the_line_and_field)
{
    bad("lea range=(0,5]\npool bytes=100\n", "line 2", "field 'bytes': expected 4096 to");
    bad("pool bytes=inf\nlea range=(0,5]\n", "line 1", "field 'bytes'");
    bad("pool\nlea range=(0,5]\n", "line 1", "field 'bytes': missing");
    bad("pool size=8192\nlea range=(0,5]\n", "field 'size'", "unknown field of the pool line");
    bad("pool bytes=8192\npool bytes=8192\nlea range=(0,5]\n", "line 2", "second pool line");
    bad("pool bytes=8192\n", "no allocator", NULL);
}

Test(desc, a_grow_line_round_trips_between_release_and_pool)
{
    const char *in = "pool bytes=1048576\nlea range=(0,inf]\ngrow by=pages  # small heaps\n"
                     "release keep=0 delay=0\n";
    const char *want = "# dmm 1\n"
                       "release       keep=0 delay=0\n"
                       "grow          by=pages\n"
                       "pool          bytes=1048576\n"
                       "lea           range=(0,inf]          split=no  coalesce=no  list=sll   "
                       "fit=first order=lifo\n";
    dmm_desc_t d, e;
    round_trip(in, want, &d, &e);
    cr_expect_eq(d.grow, DMM_GROW_PAGES);
    cr_expect_eq(e.grow, DMM_GROW_PAGES);
    dmm_err_t err = { { 0 } };
    char out[1024];
    dmm_desc_effective(&e);
    cr_expect_eq(e.grow, DMM_GROW_PAGES, "lea reads it");
    /* by=64k is the classes' own rule: the same as no line, printed as none */
    const char *same = "grow by=64k\nlea range=(0,inf]\n";
    cr_assert_eq(dmm_desc_parse("t", same, strlen(same), &d, &err), 0, "%s", err.msg);
    cr_expect_eq(d.grow, DMM_GROW_64K);
    dmm_desc_print(&d, out, sizeof out);
    cr_expect_null(strstr(out, "grow"), "%s", out);
    /* a chain whose classes do not read it: no growth rule */
    const char *unread = "grow by=pages\nsss range=(0,1024]\nkingsley range=(1024,inf]\n";
    cr_assert_eq(dmm_desc_parse("t", unread, strlen(unread), &d, &err), 0, "%s", err.msg);
    dmm_desc_effective(&d);
    cr_expect_eq(d.grow, DMM_GROW_64K);
}

Test(desc, bad_grow_lines_name_the_line_and_field)
{
    bad("lea range=(0,5]\ngrow by=4k\n", "line 2", "field 'by': expected 64k or pages, got '4k'");
    bad("grow\nlea range=(0,5]\n", "line 1", "field 'by': missing");
    bad("grow step=pages\nlea range=(0,5]\n", "field 'step'", "unknown field of the grow line");
    bad("grow by=64k\ngrow by=pages\nlea range=(0,5]\n", "line 2", "second grow line");
    bad("grow by=pages\n", "no allocator", NULL);
}

Test(desc, a_pages_line_round_trips_between_grow_and_pool)
{
    const char *in = "pool bytes=4194304\nlea range=(0,inf]\npages huge=yes  # 2 MiB extents\n"
                     "grow by=pages\n";
    const char *want = "# dmm 1\n"
                       "grow          by=pages\n"
                       "pages         huge=yes\n"
                       "pool          bytes=4194304\n"
                       "lea           range=(0,inf]          split=no  coalesce=no  list=sll   "
                       "fit=first order=lifo\n";
    dmm_desc_t d, e;
    round_trip(in, want, &d, &e);
    cr_expect_eq(d.huge, 1);
    cr_expect_eq(e.huge, 1);
    dmm_desc_effective(&e);
    cr_expect_eq(e.huge, 1, "read by the page source, whatever the classes");
    /* huge=no is the same as no line, printed as none */
    dmm_err_t err = { { 0 } };
    char out[1024];
    const char *same = "pages huge=no\nsss range=(0,64]\n";
    cr_assert_eq(dmm_desc_parse("t", same, strlen(same), &d, &err), 0, "%s", err.msg);
    cr_expect_eq(d.huge, 0);
    dmm_desc_print(&d, out, sizeof out);
    cr_expect_null(strstr(out, "pages"), "%s", out);
}

Test(desc, bad_pages_lines_name_the_line_and_field)
{
    bad("lea range=(0,5]\npages huge=2m\n", "line 2", "field 'huge': expected yes or no, got '2m'");
    bad("pages\nlea range=(0,5]\n", "line 1", "field 'huge': missing");
    bad("pages size=2m\nlea range=(0,5]\n", "field 'size'", "unknown field of the pages line");
    bad("pages huge=yes\npages huge=no\nlea range=(0,5]\n", "line 2", "second pages line");
    bad("pages huge=yes\n", "no allocator", NULL);
}

Test(desc, a_retain_line_round_trips_last_of_the_chains_lines)
{
    const char *in = "lea range=(0,inf]\nretain bytes=0  # every chunk back at once\n"
                     "pool bytes=1048576\ngrow by=pages\n";
    const char *want = "# dmm 1\n"
                       "grow          by=pages\n"
                       "pool          bytes=1048576\n"
                       "retain        bytes=0\n"
                       "lea           range=(0,inf]          split=no  coalesce=no  list=sll   "
                       "fit=first order=lifo\n";
    dmm_desc_t d, e;
    round_trip(in, want, &d, &e);
    cr_expect(d.retain_set && d.retain == 0 && dmm_desc_retain(&d) == 0);
    dmm_desc_effective(&e);
    cr_expect(e.retain_set && e.retain == 0, "read by the page source, whatever the classes");
    /* the default budget is the same as no line, and printed as none */
    dmm_err_t err = { { 0 } };
    char out[1024], same[128];
    snprintf(same, sizeof same, "retain bytes=%u\nsss range=(0,64]\n", (unsigned)DMM_RETAIN_BYTES);
    cr_assert_eq(dmm_desc_parse("t", same, strlen(same), &d, &err), 0, "%s", err.msg);
    cr_expect_eq(dmm_desc_retain(&d), DMM_RETAIN_BYTES);
    dmm_desc_effective(&d);
    cr_expect_eq(d.retain_set, 0);
    dmm_desc_print(&d, out, sizeof out);
    cr_expect_null(strstr(out, "retain"), "%s", out);
    const char *none = "sss range=(0,64]\n";
    cr_assert_eq(dmm_desc_parse("t", none, strlen(none), &d, &err), 0, "%s", err.msg);
    cr_expect(!d.retain_set && dmm_desc_retain(&d) == DMM_RETAIN_BYTES);
    const char *more = "sss range=(0,64]\nretain bytes=16777216\n";
    cr_assert_eq(dmm_desc_parse("t", more, strlen(more), &d, &err), 0, "%s", err.msg);
    cr_expect_eq(dmm_desc_retain(&d), 16777216);
}

Test(desc, bad_retain_lines_name_the_line_and_field)
{
    bad("lea range=(0,5]\nretain bytes=1M\n", "line 2", "field 'bytes': expected 0 to");
    bad("retain bytes=inf\nlea range=(0,5]\n", "line 1", "field 'bytes'");
    bad("retain bytes=2199023255553\nlea range=(0,5]\n", "line 1", "got '2199023255553'");
    bad("retain\nlea range=(0,5]\n", "line 1", "field 'bytes': missing");
    bad("retain keep=0\nlea range=(0,5]\n", "field 'keep'", "unknown field of the retain line");
    bad("retain bytes=0\nretain bytes=0\nlea range=(0,5]\n", "line 2", "second retain line");
    bad("retain bytes=0\n", "no allocator", NULL);
}

Test(desc, at_most_the_maximum_allocators)
{
    char text[8192];
    size_t n = 0;
    for (int i = 0; i <= DMM_DESC_MAX; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, "kingsley range=(%d,%d]\n", i * 10, i * 10 + 10);
    bad(text, "more than", NULL);
}

Test(desc, load_reads_presets_and_files)
{
    dmm_desc_t d;
    dmm_err_t err = { { 0 } };
    cr_assert_eq(dmm_desc_load("fib", &d, &err), 0, "%s", err.msg);
    cr_expect_eq(d.a[0].cls, DMM_CLASS_BUDDY_FIB);
    cr_expect_eq(dmm_desc_load("/nonexistent/x.dmm", &d, &err), -1);
    cr_expect_not_null(strstr(err.msg, "not a preset"));
    char path[] = "/tmp/dmm-desc-XXXXXX";
    int fd = mkstemp(path);
    const char *text = "sss range=(0,256]\nlea range=(256,inf]\n";
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    cr_assert_eq(dmm_desc_load(path, &d, &err), 0, "%s", err.msg);
    cr_expect_eq(d.n, 2);
    unlink(path);
}
