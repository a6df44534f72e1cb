/* test_trc.c - the binary .trc reader and writer: round trips of every field
 * (plain and zstd), files cut short at every byte, corrupt bytes, and each
 * kind of bad input giving a clear error; the text dump; safe output. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tracer/format/trace.h"
#include "tracer/format/trc_write.h"
#include "test/lib/trc_sample.h"
#include "tracer/base/file.h"
#include "tracer/format/crc32.h"
#include "tracer/format/dump.h"
#include "tracer/format/load.h"
#include "tracer/format/trc_read.h"

static char dir[] = "/tmp/dmm_test_trc.XXXXXX";

static void setup(void)
{
    cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char p[512];
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

TestSuite(trc, .init = setup, .fini = teardown);

static char *tmp_path(const char *name)
{
    static char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

static uint8_t *slurp(const char *path, size_t *len)
{
    uint8_t *buf;
    dmm_err_t err;
    cr_assert_eq(dmm_read_file(path, &buf, len, &err), 0, "%s", err.msg);
    return buf;
}

static void spill(const char *path, const void *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(buf, 1, len, f), len);
    cr_assert_eq(fclose(f), 0);
}

static uint32_t ld32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void st32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Offset of the first block: header, command line, padding to 8. */
static size_t first_block(const uint8_t *buf)
{
    size_t off = (size_t)(buf[10] | buf[11] << 8) + ld32(buf + 48);
    return (off + 7) & ~(size_t)7;
}

static void roundtrip(size_t nextra, int zstd)
{
    dmm_trace_t a, b;
    dmm_err_t err;
    sample_trace(&a, nextra);
    const char *p = tmp_path(zstd ? "rt.z.trc" : "rt.trc");
    cr_assert_eq(dmm_write_trc(&a, p, zstd, &err), 0, "%s", err.msg);
    cr_assert_eq(dmm_trace_load(p, &b, &err), 0, "%s", err.msg);
    cr_assert_eq(b.format, DMM_FMT_TRC);
    cr_assert_eq(b.flags, a.flags);
    cr_assert_str_eq(b.path, p);
    sample_compare(&a, &b);
    dmm_trace_free(&a);
    dmm_trace_free(&b);
}

Test(trc, roundtrip_small_plain) { roundtrip(0, 0); }
Test(trc, roundtrip_small_zstd) { roundtrip(0, 1); }
Test(trc, roundtrip_many_blocks_plain) { roundtrip(20000, 0); }
Test(trc, roundtrip_many_blocks_zstd) { roundtrip(20000, 1); }

Test(trc, zstd_is_smaller)
{
    dmm_trace_t a;
    dmm_err_t err;
    sample_trace(&a, 20000);
    cr_assert_eq(dmm_write_trc(&a, tmp_path("p.trc"), 0, &err), 0, "%s", err.msg);
    cr_assert_eq(dmm_write_trc(&a, tmp_path("z.trc"), 1, &err), 0, "%s", err.msg);
    struct stat sp, sz;
    stat(tmp_path("p.trc"), &sp);
    stat(tmp_path("z.trc"), &sz);
    cr_assert_lt(sz.st_size * 4, sp.st_size);
    dmm_trace_free(&a);
}

Test(trc, converted_flags)
{
    dmm_trace_t a, b;
    dmm_err_t err;
    sample_trace(&a, 5);
    a.format = DMM_FMT_REP;
    a.flags = 0;
    cr_assert_eq(dmm_write_trc(&a, tmp_path("c.trc"), 0, &err), 0, "%s", err.msg);
    cr_assert_eq(dmm_trace_load(tmp_path("c.trc"), &b, &err), 0, "%s", err.msg);
    cr_assert_eq(b.flags, DMM_TRC_F_CONVERTED | DMM_TRC_F_NOTIME);
    uint8_t *buf;
    size_t len;
    buf = slurp(tmp_path("c.trc"), &len);
    cr_assert_eq(ld32(buf + 56), DMM_FMT_REP, "source_format");
    free(buf);
    sample_compare(&a, &b);
    dmm_trace_free(&a);
    dmm_trace_free(&b);
}

Test(trc, empty_trace)
{
    dmm_trace_t a, b;
    dmm_err_t err;
    memset(&a, 0, sizeof a);
    a.format = DMM_FMT_TRC;
    cr_assert_eq(dmm_write_trc(&a, tmp_path("e.trc"), 1, &err), 0, "%s", err.msg);
    cr_assert_eq(dmm_trace_load(tmp_path("e.trc"), &b, &err), 0, "%s", err.msg);
    cr_assert_eq(b.nrecs, 0);
    cr_assert_eq(b.nstacks, 1, "stacks[0] is always there");
    cr_assert_eq(b.cmdline_len, 0);
    cr_assert_str_eq(b.cmdline, "");
    dmm_trace_free(&b);
}

/* Cut a file at every length: inside the header a clear error, inside a
 * block the whole blocks before it with truncated set, at a block boundary
 * a clean read. */
static void cut_everywhere(int zstd)
{
    dmm_trace_t a;
    dmm_err_t err;
    sample_trace(&a, 10);
    const char *p = tmp_path("cut.trc");
    cr_assert_eq(dmm_write_trc(&a, p, zstd, &err), 0, "%s", err.msg);
    size_t len;
    uint8_t *file = slurp(p, &len);
    size_t hdr = first_block(file);

    /* block boundaries and the records they hold */
    size_t bounds[64], recs_before[64], nb = 0, off = hdr, nrecs = 0;
    while (off < len) {
        cr_assert_lt(nb, 63);
        bounds[nb] = off;
        recs_before[nb++] = nrecs;
        size_t n = off;
        off += 32 + ld32(file + off + 8);
        /* count what the block adds by reading the file up to its end */
        uint8_t *pre = malloc(off);
        memcpy(pre, file, off);
        dmm_trace_t t;
        cr_assert_eq(dmm_trace_parse("x", pre, off, DMM_FMT_TRC, &t, &err), 0, "%s", err.msg);
        nrecs = t.nrecs;
        dmm_trace_free(&t);
        free(pre);
        (void)n;
    }
    cr_assert_eq(off, len);
    cr_assert_geq(nb, 3, "stacks, modules and records blocks");
    bounds[nb] = len;
    recs_before[nb] = a.nrecs;
    cr_assert_eq(nrecs, a.nrecs);

    for (size_t cut = 0; cut <= len; cut++) {
        uint8_t *pre = malloc(cut ? cut : 1);   /* exact size, for ASan */
        memcpy(pre, file, cut);
        dmm_trace_t t;
        int rc = dmm_trace_parse("cut.trc", pre, cut, DMM_FMT_TRC, &t, &err);
        if (cut < hdr) {
            cr_assert_eq(rc, -1, "cut at %zu inside the header must fail", cut);
            cr_assert(strstr(err.msg, "cut.trc: offset ") == err.msg, "cut %zu: %s", cut, err.msg);
        } else {
            cr_assert_eq(rc, 0, "cut at %zu: %s", cut, err.msg);
            size_t k = 0;
            while (k < nb && bounds[k + 1] <= cut)
                k++;
            int at_bound = cut == bounds[k] || cut == len;
            cr_assert_eq(t.truncated, !at_bound, "cut at %zu", cut);
            if (!at_bound) {
                cr_assert(strstr(t.note, "cut short at offset") != NULL, "%s", t.note);
                char want[64];
                snprintf(want, sizeof want, "inside block at offset %zu", bounds[k]);
                cr_assert(strstr(t.note, want) != NULL, "cut %zu: %s", cut, t.note);
            }
            size_t expect = cut == len ? a.nrecs : recs_before[k];
            cr_assert_eq(t.nrecs, expect, "cut at %zu: %zu records, expected %zu", cut,
                         t.nrecs, expect);
            dmm_trace_free(&t);
        }
        free(pre);
    }
    free(file);
    dmm_trace_free(&a);
}

Test(trc, cut_at_every_byte_plain) { cut_everywhere(0); }
Test(trc, cut_at_every_byte_zstd) { cut_everywhere(1); }

/* Flip every byte in turn: the reader may accept (bytes no checksum covers)
 * or refuse, but never crash, and a refusal names an offset. */
static void flip_everywhere(int zstd)
{
    dmm_trace_t a;
    dmm_err_t err;
    sample_trace(&a, 4);
    cr_assert_eq(dmm_write_trc(&a, tmp_path("flip.trc"), zstd, &err), 0, "%s", err.msg);
    size_t len;
    uint8_t *file = slurp(tmp_path("flip.trc"), &len);
    size_t hdr = first_block(file);
    for (size_t i = 0; i < len; i++) {
        uint8_t *c = malloc(len);
        memcpy(c, file, len);
        c[i] ^= 0x5a;
        dmm_trace_t t;
        int rc = dmm_trace_parse("flip.trc", c, len, DMM_FMT_TRC, &t, &err);
        if (rc == 0)
            dmm_trace_free(&t);
        else
            cr_assert(strstr(err.msg, "offset") != NULL, "byte %zu: %s", i, err.msg);
        /* every block byte but the header's reserved word is checked */
        if (i >= hdr) {
            size_t off = hdr;
            while (off + 32 + ld32(file + off + 8) <= i)
                off += 32 + ld32(file + off + 8);
            if (i - off < 28 || i - off >= 32)
                cr_assert_eq(rc, -1, "byte %zu flipped was accepted", i);
        }
        free(c);
    }
    free(file);
    dmm_trace_free(&a);
}

Test(trc, flip_every_byte_plain) { flip_everywhere(0); }
Test(trc, flip_every_byte_zstd) { flip_everywhere(1); }

/* Write the sample, let edit change the bytes, load, expect an error
 * containing want. */
static void expect_error(void (*edit)(uint8_t *buf, size_t *len), const char *want)
{
    dmm_trace_t a, t;
    dmm_err_t err;
    sample_trace(&a, 3);
    const char *p = tmp_path("bad.trc");
    unlink(p);
    cr_assert_eq(dmm_write_trc(&a, p, 0, &err), 0, "%s", err.msg);
    size_t len;
    uint8_t *file = slurp(p, &len);
    uint8_t *buf = calloc(1, len + 64);   /* room to append */
    memcpy(buf, file, len);
    free(file);
    edit(buf, &len);
    unlink(p);
    spill(p, buf, len);
    free(buf);
    err.msg[0] = '\0';
    cr_assert_eq(dmm_trace_load(p, &t, &err), -1, "accepted, wanted: %s", want);
    cr_assert(strstr(err.msg, want) != NULL, "got '%s', wanted '%s'", err.msg, want);
    cr_assert(strstr(err.msg, p) == err.msg, "message names the file: %s", err.msg);
    dmm_trace_free(&a);
}

static void payload_byte(uint8_t *b, size_t *len)
{
    size_t off = first_block(b);
    b[off + 32 + 5] ^= 1;
    (void)len;
}
Test(trc, corrupt_payload)
{
    char want[64];
    expect_error(payload_byte, "checksum mismatch");
    /* the message names the payload's offset */
    snprintf(want, sizeof want, "offset %zu:", (size_t)(64 + 16 + 32));
    expect_error(payload_byte, want);
}

/* "DMMTRACX": close enough that detection calls it a bad trc magic */
static void bad_magic(uint8_t *b, size_t *len) { b[7] = 'X'; (void)len; }
Test(trc, wrong_magic)
{
    expect_error(bad_magic, "offset 0: bad magic");
    /* and straight to the reader, with any other first bytes */
    dmm_trace_t t;
    dmm_err_t err;
    memset(&t, 0, sizeof t);
    static const uint8_t junk[80] = "MZ not a trace";
    cr_assert_eq(dmm_read_trc("j", junk, sizeof junk, &t, &err), -1);
    cr_assert_str_eq(err.msg, "j: offset 0: bad magic, not a dmm trace");
    dmm_trace_free(&t);
}

static void future_version(uint8_t *b, size_t *len) { b[8] = 2; (void)len; }
Test(trc, future_version)
{
    expect_error(future_version, "offset 8: unsupported trace version 2 (this dmm reads 1)");
}

static void zero_version(uint8_t *b, size_t *len) { b[8] = 0; (void)len; }
Test(trc, zero_version) { expect_error(zero_version, "bad trace version 0"); }

static void small_header(uint8_t *b, size_t *len) { b[10] = 32; (void)len; }
Test(trc, header_size_too_small) { expect_error(small_header, "header size 32"); }

static void huge_cmdline(uint8_t *b, size_t *len) { st32(b + 48, 0x7fffffff); (void)len; }
Test(trc, absurd_cmdline) { expect_error(huge_cmdline, "absurd command line length"); }

static void long_cmdline(uint8_t *b, size_t *len) { st32(b + 48, (uint32_t)*len); }
Test(trc, cmdline_past_end) { expect_error(long_cmdline, "file ends inside the trace header"); }

static void header_cut(uint8_t *b, size_t *len) { (void)b; *len = 40; }
Test(trc, header_cut_short) { expect_error(header_cut, "offset 40: file ends inside"); }

/* Set a block header field and fix the header checksum, so that the check
 * of the field itself is what fires. */
static void set_block_field(uint8_t *b, size_t at, uint32_t v)
{
    size_t off = first_block(b);
    st32(b + off + at, v);
    st32(b + off + 24, dmm_crc32(0, b + off, 24));
}
/* After editing a block's payload: both checksums right again. */
static void fix_crcs(uint8_t *blk)
{
    st32(blk + 20, dmm_crc32(0, blk + 32, ld32(blk + 8)));
    st32(blk + 24, dmm_crc32(0, blk, 24));
}

static void absurd_stored(uint8_t *b, size_t *len) { set_block_field(b, 8, 0x7fffffc0); (void)len; }
Test(trc, absurd_stored_len) { expect_error(absurd_stored, "absurd block length"); }

static void absurd_raw(uint8_t *b, size_t *len) { set_block_field(b, 12, 0xffffffc0); (void)len; }
Test(trc, absurd_raw_len) { expect_error(absurd_raw, "absurd raw block length"); }

static void odd_raw(uint8_t *b, size_t *len) { set_block_field(b, 12, 100); (void)len; }
Test(trc, raw_len_not_records) { expect_error(odd_raw, "not a whole number"); }

static void bad_comp(uint8_t *b, size_t *len) { set_block_field(b, 16, 7); (void)len; }
Test(trc, unknown_compression) { expect_error(bad_comp, "unknown block compression 7"); }

static void bad_block_magic(uint8_t *b, size_t *len) { set_block_field(b, 0, 0x12345678); (void)len; }
Test(trc, bad_block_magic)
{
    char want[64];
    snprintf(want, sizeof want, "offset %d: bad block magic", 64 + 16);
    expect_error(bad_block_magic, want);
}

static void bad_hcrc(uint8_t *b, size_t *len) { b[first_block(b) + 4] ^= 1; (void)len; }
Test(trc, bad_header_crc) { expect_error(bad_hcrc, "block header checksum mismatch"); }

static void trailing_garbage(uint8_t *b, size_t *len)
{
    /* a whole block header's worth of junk after the last block */
    memset(b + *len, 'j', 32);
    *len += 32;
}
Test(trc, junk_block) { expect_error(trailing_garbage, "bad block magic"); }

/* A record with an op outside the format, in a block with valid checksums. */
static void bad_op(uint8_t *b, size_t *len)
{
    size_t off = first_block(b);
    b[off + 32] = 99;
    fix_crcs(b + off);
    (void)len;
}
Test(trc, unknown_op) { expect_error(bad_op, "unknown record op 99"); }

static void many_frames(uint8_t *b, size_t *len)
{
    /* the first block is the stack table; its first record a STACKDEF */
    size_t off = first_block(b);
    cr_assert_eq(b[off + 32], DMM_TRC_STACKDEF);
    st32(b + off + 32 + 24, 100000);
    fix_crcs(b + off);
    (void)len;
}
Test(trc, stack_too_deep) { expect_error(many_frames, "too many frames"); }

static void frames_past_end(uint8_t *b, size_t *len)
{
    size_t off = first_block(b);
    st32(b + off + 32 + 24, 250);
    fix_crcs(b + off);
    (void)len;
}
Test(trc, stack_past_block) { expect_error(frames_past_end, "run past the end of the block"); }

static void huge_stack_id(uint8_t *b, size_t *len)
{
    size_t off = first_block(b);
    st32(b + off + 32 + 4, 0xfffffff0);
    fix_crcs(b + off);
    (void)len;
}
Test(trc, absurd_stack_id) { expect_error(huge_stack_id, "absurd stack id"); }

Test(trc, empty_file)
{
    dmm_trace_t t;
    dmm_err_t err;
    spill(tmp_path("empty.trc"), "", 0);
    cr_assert_eq(dmm_trace_load(tmp_path("empty.trc"), &t, &err), -1);
    cr_assert(strstr(err.msg, "offset 0: empty file") != NULL, "%s", err.msg);
    /* and straight to the reader */
    memset(&t, 0, sizeof t);
    cr_assert_eq(dmm_read_trc("e", (const uint8_t *)"", 0, &t, &err), -1);
    cr_assert(strstr(err.msg, "e: offset 0:") != NULL, "%s", err.msg);
    dmm_trace_free(&t);
}

Test(trc, a_directory)
{
    dmm_trace_t t;
    dmm_err_t err;
    cr_assert_eq(dmm_trace_load(dir, &t, &err), -1);
    cr_assert(strstr(err.msg, "is a directory") != NULL, "%s", err.msg);
}

Test(trc, nonexistent)
{
    dmm_trace_t t;
    dmm_err_t err;
    cr_assert_eq(dmm_trace_load(tmp_path("no-such.trc"), &t, &err), -1);
    cr_assert(strstr(err.msg, "cannot open") != NULL, "%s", err.msg);
    cr_assert(strstr(err.msg, "no-such.trc") != NULL, "%s", err.msg);
}

/* Stacks named by records but never defined (their block was lost) still
 * exist, empty, so that nobody indexes past stacks[]. */
Test(trc, undefined_stack_ids_are_empty)
{
    dmm_trace_t a, b;
    dmm_err_t err;
    sample_trace(&a, 0);
    a.recs[0].stack = 77;
    cr_assert_eq(dmm_write_trc(&a, tmp_path("u.trc"), 0, &err), 0, "%s", err.msg);
    cr_assert_eq(dmm_trace_load(tmp_path("u.trc"), &b, &err), 0, "%s", err.msg);
    cr_assert_eq(b.nstacks, 78);
    cr_assert_eq(b.stacks[77].nframes, 0);
    cr_assert_eq(b.recs[0].stack, 77);
    dmm_trace_free(&a);
    dmm_trace_free(&b);
}

static int count_entries(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

Test(trc, refuses_to_overwrite)
{
    dmm_trace_t a, b;
    dmm_err_t err;
    sample_trace(&a, 0);
    const char *p = tmp_path("x.trc");
    spill(p, "keep", 4);
    cr_assert_eq(dmm_write_trc(&a, p, 0, &err), -1);
    cr_assert(strstr(err.msg, "exists") != NULL, "%s", err.msg);
    size_t len;
    uint8_t *buf = slurp(p, &len);
    cr_assert_eq(len, 4);
    free(buf);
    cr_assert_eq(count_entries(), 1, "no temporary left behind");
    cr_assert_eq(dmm_write_trc_ex(&a, p, 1, 1, &err), 0, "%s", err.msg);
    cr_assert_eq(dmm_trace_load(p, &b, &err), 0, "%s", err.msg);
    sample_compare(&a, &b);
    cr_assert_eq(count_entries(), 1, "no temporary left behind");
    dmm_trace_free(&a);
    dmm_trace_free(&b);
}

Test(trc, unwritable_leaves_nothing)
{
    dmm_trace_t a;
    dmm_err_t err;
    sample_trace(&a, 0);
    cr_assert_eq(dmm_write_trc(&a, tmp_path("nodir/x.trc"), 0, &err), -1);
    cr_assert(strstr(err.msg, "nodir/x.trc") != NULL, "%s", err.msg);
    /* a record no .trc can hold is refused, and nothing is left */
    a.recs[1].op = DMM_TRC_OP_MAX;
    cr_assert_eq(dmm_write_trc(&a, tmp_path("y.trc"), 0, &err), -1);
    cr_assert(strstr(err.msg, "has op") != NULL, "%s", err.msg);
    cr_assert_eq(count_entries(), 0);
    dmm_trace_free(&a);
}

Test(trc, text_dump)
{
    dmm_trace_t a;
    sample_trace(&a, 0);
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    cr_assert_eq(dmm_write_text(&a, f), 0);
    fclose(f);
    cr_assert(strstr(s, "# pid: 4242 ppid: 4241\n") != NULL, "%s", s);
    cr_assert(strstr(s, "# cmdline: ./app --size 42\n") != NULL, "%s", s);
    cr_assert(strstr(s, "# records: 9\n") != NULL, "%s", s);
    cr_assert(strstr(s, "# stacks: 3\n") != NULL, "%s", s);
    cr_assert(strstr(s, "# module 0x400000-0x401000 offset 0x0 /usr/bin/app\n") != NULL, "%s", s);
    cr_assert(strstr(s, "\n10 1007 4242 malloc size=100 in=0x0 out=0x1000 stack=1\n") != NULL,
              "%s", s);
    cr_assert(strstr(s, " calloc size=40 nmemb=4 in=0x0 out=0x2000 stack=2\n") != NULL, "%s", s);
    cr_assert(strstr(s, " posix_memalign size=64 align=64 ") != NULL, "%s", s);
    cr_assert(strstr(s, " failed errno=12 stack=3\n") != NULL, "%s", s);
    cr_assert(strstr(s, "# stack 1: 0x400999 0x400aaa 0x400bbb\n") != NULL, "%s", s);
    cr_assert(strstr(s, "# stack 3:\n") != NULL, "%s", s);
    /* one line per record, each starting with its seq */
    size_t lines = 0;
    for (char *l = s; (l = strchr(l, '\n')) != NULL; l++)
        if (l[1] >= '0' && l[1] <= '9')
            lines++;
    cr_assert_eq(lines, a.nrecs);
    free(s);
    dmm_trace_free(&a);
}

/* The fuzzer's seeds, test/corpus/trc/: run with DMM_REGEN_CORPUS=1 to write
 * them again (after a format change); otherwise check they still read. */
Test(trc, regen_corpus)
{
    static const struct { const char *name; size_t nextra; int zstd, cut, fmt; } seeds[] = {
        { "small.trc", 0, 0, 0, DMM_FMT_TRC },
        { "small_zstd.trc", 0, 1, 0, DMM_FMT_TRC },
        { "threads.trc", 60, 0, 0, DMM_FMT_TRC },
        { "threads_zstd.trc", 200, 1, 0, DMM_FMT_TRC },
        { "converted.trc", 8, 0, 0, DMM_FMT_REP },
        { "cut_short.trc", 20, 0, 1, DMM_FMT_TRC },
        { "empty.trc", 0, 0, 0, DMM_FMT_UNKNOWN },
    };
    int regen = getenv("DMM_REGEN_CORPUS") != NULL;
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, DMM_SRC_DIR "/test/corpus/trc/%s", seeds[i].name);
        dmm_err_t err;
        if (regen) {
            dmm_trace_t a;
            if (seeds[i].fmt == DMM_FMT_UNKNOWN) {   /* header only */
                memset(&a, 0, sizeof a);
                a.format = DMM_FMT_TRC;
            } else {
                sample_trace(&a, seeds[i].nextra);
                a.format = (dmm_format_t)seeds[i].fmt;
            }
            const char *tmp = tmp_path("seed.trc");
            unlink(tmp);
            cr_assert_eq(dmm_write_trc(&a, tmp, seeds[i].zstd, &err), 0, "%s", err.msg);
            size_t len;
            uint8_t *buf = slurp(tmp, &len);
            if (seeds[i].cut)
                len -= 40;
            unlink(path);
            spill(path, buf, len);
            free(buf);
            dmm_trace_free(&a);
        }
        size_t len;
        uint8_t *buf = slurp(path, &len);
        cr_assert_lt(len, 8192, "%s: seeds stay small", seeds[i].name);
        free(buf);
        dmm_trace_t t;
        cr_assert_eq(dmm_trace_load(path, &t, &err), 0, "%s", err.msg);
        cr_assert_eq(t.truncated, seeds[i].cut, "%s", seeds[i].name);
        dmm_trace_free(&t);
    }
}

/* Many threads: each gets its own blocks, and every record keeps its thread
 * and its place. */
Test(trc, many_threads)
{
    dmm_trace_t a, b;
    dmm_err_t err;
    sample_trace(&a, 0);
    for (size_t i = 0; i < 30000; i++) {
        uint32_t tid = (uint32_t)((i * 7919) % 1500) * 65537u;
        sample_rec(&a, tid, DMM_TRC_MALLOC, i, 0, 0, 0x10 * (i + 1), 0);
    }
    cr_assert_eq(dmm_write_trc(&a, tmp_path("mt.trc"), 1, &err), 0, "%s", err.msg);
    cr_assert_eq(dmm_trace_load(tmp_path("mt.trc"), &b, &err), 0, "%s", err.msg);
    sample_compare(&a, &b);
    dmm_trace_free(&a);
    dmm_trace_free(&b);
}
