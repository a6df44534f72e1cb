/* test_badinput.c - every kind of bad input to the dmm tool gives one clear
 * line naming the file and the byte offset or line of the fault, exit
 * status 2, and no crash: run the real binary on each. */
#include <criterion/criterion.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tracer/format/trace.h"

#include "test/lib/rundmm.h"
#include "tracer/base/file.h"
#include "tracer/format/crc32.h"

static char dir[64];

static void setup(void)
{
    strcpy(dir, "/tmp/dmm-bad-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

static void put(const char *name, const void *data, size_t len, char *path)
{
    sprintf(path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    if (len)
        cr_assert_eq(fwrite(data, 1, len, f), len);
    fclose(f);
}

/* Run `dmm stats path`; returns the exit status, stderr in err. */
static int stats(const char *path, char *err, size_t errlen)
{
    char *args[] = { "dmm", "stats", (char *)path, NULL };
    return run_dmm(dir, args, err, errlen);
}

static void expect_error(const char *path, const char *where, const char *fault)
{
    char err[4096];
    int rc = stats(path, err, sizeof err);
    cr_expect_eq(rc, 2, "exit status %d for %s: %s", rc, path, err);
    cr_expect_not_null(strstr(err, path), "the message names the file: %s", err);
    cr_expect_not_null(strstr(err, where), "the message says '%s': %s", where, err);
    if (fault)
        cr_expect_not_null(strstr(err, fault), "the message says '%s': %s", fault, err);
    cr_expect_null(strchr(strchr(err, '\n') ? strchr(err, '\n') + 1 : "", '\n'),
                   "one line: %s", err);
}

/* A small valid trace: a header and one block of two records, in version
 * 1's 64-byte slots (the reader keeps reading them). */
static size_t valid_trc(uint8_t *buf)
{
    dmm_trc_header_t h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, DMM_TRC_MAGIC, 8);
    h.version = 1;
    h.header_size = sizeof h;
    h.clock_id = 1;
    memcpy(buf, &h, sizeof h);
    dmm_trc_rec_t r[2];
    memset(r, 0, sizeof r);
    r[0].op = DMM_TRC_MALLOC, r[0].seq = 0, r[0].size = 24, r[0].ptr_out = 0x1000;
    r[1].op = DMM_TRC_FREE, r[1].seq = 1, r[1].ptr_in = 0x1000;
    dmm_trc_block_t b;
    memset(&b, 0, sizeof b);
    b.magic = DMM_TRC_BLOCK_MAGIC;
    b.tid = 7;
    b.stored_len = b.raw_len = sizeof r;
    b.crc32 = dmm_crc32(0, r, sizeof r);
    b.header_crc32 = dmm_crc32(0, &b, 24);
    memcpy(buf + 64, &b, sizeof b);
    memcpy(buf + 96, r, sizeof r);
    return 96 + sizeof r;
}

Test(badinput, a_valid_trace_reads, .init = setup, .fini = teardown)
{
    uint8_t buf[512];
    char path[128], err[4096];
    put("ok.trc", buf, valid_trc(buf), path);
    cr_assert_eq(stats(path, err, sizeof err), 0, "%s", err);
}

Test(badinput, empty_file, .init = setup, .fini = teardown)
{
    char path[128];
    put("empty.trc", "", 0, path);
    expect_error(path, "offset 0", "empty");
}

Test(badinput, missing_file_and_directory, .init = setup, .fini = teardown)
{
    char path[128];
    sprintf(path, "%s/none.trc", dir);
    expect_error(path, "cannot open", NULL);
    /* a directory is read as dmm record's: it must hold a trace */
    expect_error(dir, "holds no .trc file", NULL);
}

Test(badinput, not_a_trace, .init = setup, .fini = teardown)
{
    char path[128];
    put("elf", "\x7f" "ELF\2\1\1\0\0\0\0\0\0\0\0\0", 16, path);
    expect_error(path, "offset 0", "not a trace");
    put("zip", "PK\3\4rest", 8, path);
    expect_error(path, "offset 0", "zip");
}

Test(badinput, wrong_magic, .init = setup, .fini = teardown)
{
    uint8_t buf[512];
    char path[128];
    size_t n = valid_trc(buf);
    buf[7] = 'X';   /* DMMTRACX */
    put("magic.trc", buf, n, path);
    expect_error(path, "offset 0", "magic");
}

Test(badinput, future_version, .init = setup, .fini = teardown)
{
    uint8_t buf[512];
    char path[128];
    size_t n = valid_trc(buf);
    buf[8] = 99;
    put("future.trc", buf, n, path);
    expect_error(path, "offset 8", "version 99");
}

Test(badinput, truncated_header, .init = setup, .fini = teardown)
{
    uint8_t buf[512];
    char path[128];
    valid_trc(buf);
    put("cut.trc", buf, 40, path);
    expect_error(path, "offset", NULL);
}

Test(badinput, truncated_block_reads_what_is_whole, .init = setup, .fini = teardown)
{
    uint8_t buf[512];
    char path[128], err[4096];
    size_t n = valid_trc(buf);
    put("cutblock.trc", buf, n - 10, path);
    int rc = stats(path, err, sizeof err);
    cr_expect_eq(rc, 0, "a cut-short trace still reads: %s", err);
    cr_expect_not_null(strstr(err, "cut short"), "and says so: %s", err);
}

Test(badinput, corrupted_payload, .init = setup, .fini = teardown)
{
    uint8_t buf[512];
    char path[128];
    size_t n = valid_trc(buf);
    buf[96 + 20] ^= 0x40;
    put("corrupt.trc", buf, n, path);
    expect_error(path, "offset 64", NULL);
}

Test(badinput, absurd_count, .init = setup, .fini = teardown)
{
    uint8_t buf[512];
    char path[128];
    size_t n = valid_trc(buf);
    dmm_trc_block_t b;
    memcpy(&b, buf + 64, sizeof b);
    b.raw_len = b.stored_len = 0xfffffff0u;
    b.header_crc32 = dmm_crc32(0, &b, 24);
    memcpy(buf + 64, &b, sizeof b);
    put("absurd.trc", buf, n, path);
    expect_error(path, "offset 72", "absurd");
}

Test(badinput, text_formats_name_the_line, .init = setup, .fini = teardown)
{
    char path[128];
    const char rep[] = "20000\n2\n3\n1\na 0 512\nq 1 5\nf 0\n";
    put("bad.rep", rep, sizeof rep - 1, path);
    expect_error(path, "line 6", NULL);
    const char wee[] = "Alloc(5),\nFree(0),\nAlloc(x),\n";
    put("bad.trace", wee, sizeof wee - 1, path);
    expect_error(path, "line 3", NULL);
    const char android[] = "12: malloc 0x10 32\n12: free 0x10\n12: frob 0x10\n";
    put("bad.txt", android, sizeof android - 1, path);
    expect_error(path, "line 3", NULL);
    const char mtrace[] = "= Start\n@ ./a:[0x1] + 0x10 0x20\n@ ./a:[0x2] < 0x10\n= End\n";
    put("bad.mtrace", mtrace, sizeof mtrace - 1, path);
    expect_error(path, "line 3", NULL);
}

Test(badinput, bad_dmm_descriptions_for_dmm_sim, .init = setup, .fini = teardown)
{
    uint8_t buf[512];
    char trace[128], dmm[128], err[4096];
    put("ok.trc", buf, valid_trc(buf), trace);
    const char *bad[][3] = {
        { "lea range=(0,100]\nkingsley range=(50,inf]\n", "line 2", "field 'range'" },
        { "kingsly range=(0,inf]\n", "line 1", "field 'class'" },
        { "lea range=(0,1x]\n", "line 1", "field 'range'" },
        { "# nothing\n", "no allocator", NULL },
        { "lea range=(0,5] fit=worst\n", "line 1", "field 'fit'" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        put("bad.dmm", bad[i][0], strlen(bad[i][0]), dmm);
        char *args[] = { "dmm", "sim", "--dmm", dmm, trace, NULL };
        int rc = run_dmm(dir, args, err, sizeof err);
        cr_expect_eq(rc, 2, "exit %d for %s: %s", rc, bad[i][0], err);
        cr_expect_not_null(strstr(err, dmm), "names the file: %s", err);
        cr_expect_not_null(strstr(err, bad[i][1]), "%s", err);
        if (bad[i][2])
            cr_expect_not_null(strstr(err, bad[i][2]), "%s", err);
    }
    char *none[] = { "dmm", "sim", "--dmm", "nosuchpreset", trace, NULL };
    cr_expect_eq(run_dmm(dir, none, err, sizeof err), 2);
    cr_expect_not_null(strstr(err, "not a preset"), "%s", err);
}

Test(badinput, dmm_sim_output_is_the_same_on_every_run, .init = setup, .fini = teardown)
{
    /* a wee trace with reuse, reallocs by free+alloc, several sizes */
    char trace[128], err[4096], out1[128];
    char text[8192];
    size_t n = 0;
    for (int i = 0; i < 300; i++) {
        n += (size_t)snprintf(text + n, sizeof text - n, "Alloc(%d),\n", 1 + (i * 37) % 5000);
        if (i % 3 == 2)
            n += (size_t)snprintf(text + n, sizeof text - n, "Free(%d),\n", i - 1);
    }
    put("t.trace", text, n, trace);
    char *args[] = { "dmm", "sim", "--all", "--check", "1", trace, NULL };
    cr_assert_eq(run_dmm(dir, args, err, sizeof err), 0, "%s", err);
    snprintf(out1, sizeof out1, "%s/stdout", dir);
    uint8_t *a, *b;
    size_t la, lb;
    dmm_err_t e;
    cr_assert_eq(dmm_read_file(out1, &a, &la, &e), 0);
    cr_assert_eq(run_dmm(dir, args, err, sizeof err), 0, "%s", err);
    cr_assert_eq(dmm_read_file(out1, &b, &lb, &e), 0);
    cr_expect(la == lb && memcmp(a, b, la) == 0, "two runs of dmm sim printed different output");
    cr_expect_not_null(memmem(a, la, "check violations", 16));
    free(a);
    free(b);
}
