/* test_textfmt.c - the text trace formats (tracer/format/textfmt.h): every record
 * the readers make from small inline examples, the variants they tolerate,
 * the line numbers of their errors, and read -> write -> read round trips
 * that must keep the operation stream. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracer/format/opstream.h"
#include "tracer/format/textfmt.h"
#include "tracer/format/trace.h"
#include "tracer/base/file.h"
#include "tracer/format/load.h"

/* ---- helpers ---- */

static void parse_ok(dmm_format_t fmt, const char *text, size_t len, dmm_trace_t *t)
{
    dmm_err_t err = { { 0 } };
    int rc = dmm_trace_parse("t", (const uint8_t *)text, len, fmt, t, &err);
    cr_assert_eq(rc, 0, "parse failed: %s", err.msg);
}
#define PARSE(fmt, s, t) parse_ok(fmt, s, sizeof(s) - 1, t)

/* Parses text expecting failure; returns the message. */
static const char *parse_fail(dmm_format_t fmt, const char *text, size_t len)
{
    static dmm_err_t err;
    dmm_trace_t t;
    memset(&err, 0, sizeof err);
    int rc = dmm_trace_parse("t", (const uint8_t *)text, len, fmt, &t, &err);
    cr_assert_eq(rc, -1, "parse of %.*s should fail", (int)len, text);
    cr_assert_eq(t.nrecs, 0);
    cr_assert_null(t.recs);
    return err.msg;
}
#define FAIL_AT(fmt, s, where)                                                       \
    do {                                                                             \
        const char *m_ = parse_fail(fmt, s, sizeof(s) - 1);                          \
        cr_assert(strstr(m_, where) != NULL, "message '%s' lacks '%s'", m_, where); \
    } while (0)

static void rec_is(const dmm_trace_t *t, size_t i, unsigned op, uint32_t tid, uint64_t size,
                   uint64_t arg, uint64_t in, uint64_t out, unsigned flags)
{
    cr_assert_lt(i, t->nrecs, "record %zu missing (%zu records)", i, t->nrecs);
    const dmm_rec_t *r = &t->recs[i];
    cr_assert_eq(r->seq, i, "record %zu seq", i);
    cr_assert_eq(r->op, op, "record %zu op %u, want %u", i, r->op, op);
    cr_assert_eq(r->tid, tid, "record %zu tid", i);
    cr_assert_eq(r->size, size, "record %zu size %llu, want %llu", i,
                 (unsigned long long)r->size, (unsigned long long)size);
    cr_assert_eq(r->arg, arg, "record %zu arg", i);
    cr_assert_eq(r->ptr_in, in, "record %zu ptr_in %llx, want %llx", i,
                 (unsigned long long)r->ptr_in, (unsigned long long)in);
    cr_assert_eq(r->ptr_out, out, "record %zu ptr_out %llx, want %llx", i,
                 (unsigned long long)r->ptr_out, (unsigned long long)out);
    cr_assert_eq(r->flags, flags, "record %zu flags", i);
}

#define P(id) DMM_PSEUDO_ADDR(id)

typedef int (*writer_t)(const dmm_trace_t *, FILE *, dmm_err_t *);

static char *write_to_string(writer_t w, const dmm_trace_t *t, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    cr_assert_not_null(f);
    dmm_err_t err = { { 0 } };
    cr_assert_eq(w(t, f, &err), 0, "write failed: %s", err.msg);
    fclose(f);
    return buf;
}

/* Op streams are equal; flags and alignment only where the format keeps them. */
static void same_ops(const dmm_trace_t *a, const dmm_trace_t *b, int exact)
{
    dmm_opstream_t x, y;
    dmm_err_t err;
    cr_assert_eq(dmm_opstream_build(a, &x, &err), 0, "%s", err.msg);
    cr_assert_eq(dmm_opstream_build(b, &y, &err), 0, "%s", err.msg);
    cr_assert_eq(x.nops, y.nops, "ops %zu vs %zu", x.nops, y.nops);
    cr_assert_eq(x.nids, y.nids);
    for (size_t i = 0; i < x.nops; i++) {
        cr_assert_eq(x.ops[i].kind, y.ops[i].kind, "op %zu kind", i);
        cr_assert_eq(x.ops[i].id, y.ops[i].id, "op %zu id", i);
        cr_assert_eq(x.ops[i].size, y.ops[i].size, "op %zu size", i);
        if (exact) {
            cr_assert_eq(x.ops[i].flags, y.ops[i].flags, "op %zu flags", i);
            cr_assert_eq(x.ops[i].align_log2, y.ops[i].align_log2, "op %zu align", i);
        }
    }
    dmm_opstream_free(&x);
    dmm_opstream_free(&y);
}

/* read (already done) -> write -> read; the op streams must match. */
static void round_trip(const dmm_trace_t *t, dmm_format_t fmt, writer_t w, int exact)
{
    size_t len;
    char *text = write_to_string(w, t, &len);
    dmm_trace_t u;
    dmm_err_t err = { { 0 } };
    cr_assert_eq(dmm_trace_parse("rt", (uint8_t *)text, len, fmt, &u, &err), 0,
                 "re-read failed: %s\n%s", err.msg, text);
    /* and the detector must recognise what we wrote */
    cr_assert_eq(dmm_format_detect((uint8_t *)text, len), fmt, "detect:\n%.200s", text);
    same_ops(t, &u, exact);
    dmm_trace_free(&u);
    free(text);
}

static int load(const char *rel, dmm_trace_t *t)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", DMM_SRC_DIR, rel);
    dmm_err_t err = { { 0 } };
    int rc = dmm_trace_load(path, t, &err);
    cr_assert_eq(rc, 0, "%s", err.msg);
    return rc;
}

/* ---- mdriver .rep ---- */

Test(textfmt, rep_paper_example)
{
    dmm_trace_t t;
    PARSE(DMM_FMT_REP, "20000\n2\n5\n1\na 0 512\na 1 128\nr 0 640\nf 1\nf 0\n", &t);
    cr_assert_eq(t.format, DMM_FMT_REP);
    cr_assert(t.flags & DMM_TRC_F_NOTIME);
    cr_assert_eq(t.nrecs, 5);
    rec_is(&t, 0, DMM_TRC_MALLOC, 0, 512, 0, 0, P(0), 0);
    rec_is(&t, 1, DMM_TRC_MALLOC, 0, 128, 0, 0, P(1), 0);
    rec_is(&t, 2, DMM_TRC_REALLOC, 0, 640, 0, P(0), P(0), 0);
    rec_is(&t, 3, DMM_TRC_FREE, 0, 0, 0, P(1), 0, 0);
    rec_is(&t, 4, DMM_TRC_FREE, 0, 0, 0, P(0), 0, 0);
    dmm_trace_free(&t);
}

Test(textfmt, rep_tolerated_variants)
{
    dmm_trace_t t;
    /* no header, comments, blank lines, CRLF, trailing blanks, free(NULL),
     * r of an unknown id, id reuse after free */
    PARSE(DMM_FMT_REP,
          "# a comment\r\n\r\n  a 7 10  \r\n"
          "f -1\n"
          "r 3 20\t\n"
          "\n"
          "f 7\n"
          "a 7 30\n"
          "r 7 40",   /* no final newline */
          &t);
    cr_assert_eq(t.nrecs, 6);
    rec_is(&t, 0, DMM_TRC_MALLOC, 0, 10, 0, 0, P(7), 0);
    rec_is(&t, 1, DMM_TRC_FREE, 0, 0, 0, 0, 0, 0);
    rec_is(&t, 2, DMM_TRC_REALLOC, 0, 20, 0, 0, P(3), 0);
    rec_is(&t, 3, DMM_TRC_FREE, 0, 0, 0, P(7), 0, 0);
    rec_is(&t, 4, DMM_TRC_MALLOC, 0, 30, 0, 0, P(7), 0);
    rec_is(&t, 5, DMM_TRC_REALLOC, 0, 40, 0, P(7), P(7), 0);

    dmm_opstream_t s;
    dmm_err_t err;
    cr_assert_eq(dmm_opstream_build(&t, &s, &err), 0);
    cr_assert_eq(s.nops, 5);
    cr_assert_eq(s.free_null, 1);
    cr_assert_eq(s.nids, 3);   /* 7, 3, 7 again */
    cr_assert_eq(s.ops[1].kind, DMM_OP_ALLOC);   /* r of unknown id */
    cr_assert_eq(s.ops[4].kind, DMM_OP_REALLOC);
    cr_assert_eq(s.ops[4].id, 2);
    dmm_opstream_free(&s);
    dmm_trace_free(&t);

    /* other header lengths and values, including decimals and one line */
    PARSE(DMM_FMT_REP, "1\n2\n3\n4\n5\n6\na 0 1\n", &t);
    cr_assert_eq(t.nrecs, 1);
    dmm_trace_free(&t);
    PARSE(DMM_FMT_REP, "0 0 0 0.5\n-3\na 0 1\n", &t);
    cr_assert_eq(t.nrecs, 1);
    dmm_trace_free(&t);
    /* a header and nothing else is an empty trace */
    PARSE(DMM_FMT_REP, "20000\n0\n0\n1\n", &t);
    cr_assert_eq(t.nrecs, 0);
    dmm_trace_free(&t);
    /* the largest size that fits in 63 bits */
    PARSE(DMM_FMT_REP, "a 0 9223372036854775807\n", &t);
    rec_is(&t, 0, DMM_TRC_MALLOC, 0, 9223372036854775807ull, 0, 0, P(0), 0);
    dmm_trace_free(&t);
}

Test(textfmt, rep_errors_name_the_line)
{
    FAIL_AT(DMM_FMT_REP, "4\n1\n1\n1\na 0 10\nx 1 2\n", "t: line 6: unknown operation 'x'");
    FAIL_AT(DMM_FMT_REP, "a 0 10\n\n# c\nf -2\n", "t: line 4: negative id '-2'");
    FAIL_AT(DMM_FMT_REP, "a -1 10\n", "line 1: negative id '-1'");
    FAIL_AT(DMM_FMT_REP, "a 0 9223372036854775808\n", "line 1: size '9223372036854775808' is too large");
    FAIL_AT(DMM_FMT_REP, "a 0 10\na 1 "
            "1234567890123456789012345678901234567890123456789012345678901234567890"
            "123456789012345678901234567890\n", "line 2: size '1234567890123456789012345678901234567890...' is too large");
    FAIL_AT(DMM_FMT_REP, "a 0\n", "line 1: 'a' needs an id and a size");
    FAIL_AT(DMM_FMT_REP, "f\n", "line 1: 'f' needs an id");
    FAIL_AT(DMM_FMT_REP, "f 1 2\n", "line 1: too many fields after 'f'");
    FAIL_AT(DMM_FMT_REP, "a 0 1 2\n", "line 1: too many fields after 'a'");
    FAIL_AT(DMM_FMT_REP, "a 0x1 2\n", "line 1: id '0x1' is not a number");
    FAIL_AT(DMM_FMT_REP, "a 1 2k\n", "line 1: size '2k' is not a number");
    FAIL_AT(DMM_FMT_REP, "a 4294967295 2\n", "line 1: id '4294967295' is too large");
    FAIL_AT(DMM_FMT_REP, "a 0 1\n5\n", "line 2: a header line of numbers after the first operation");
    FAIL_AT(DMM_FMT_REP, "a 0 1\r\naa 1 2\r\n", "line 2: unknown operation 'aa'");
    /* a NUL and binary garbage are shown escaped */
    FAIL_AT(DMM_FMT_REP, "a 0 1\na 1 2\0\n", "line 2: size '2\\x00' is not a number");
    FAIL_AT(DMM_FMT_REP, "\xff\xfe\n", "line 1: unknown operation '\\xff\\xfe'");
}

/* ---- glibc mtrace ---- */

Test(textfmt, mtrace_records)
{
    dmm_trace_t t;
    PARSE(DMM_FMT_MTRACE,
          "= Start\n"
          "@ ./prog:[0x4005b4] + 0x1e3c460 0x64\n"
          "@ /lib/x86_64-linux-gnu/libc.so.6:(_IO_file_doallocate+0x94)[0x7f12] + 0x1e3d000 0x1000\n"
          "@ ./prog:[0x4005c0] < 0x1e3c460\n"
          "@ ./prog:[0x4005c0] > 0x1e3c460 0xc8\n"       /* in place */
          "@ ./prog:[0x4005d0] < 0x1e3c460\n"
          "@ ./prog:[0x4005d0] > 0x1e50000 0x2000\n"     /* moved */
          "+ 0x1e60000 300\n"                            /* no caller, decimal size */
          "@ ./odd - name:[0x1] - 0x1e3d000\n"           /* a caller with a blank and a '-' */
          "@ ./prog:[0x4005e0] ! 0x1e50000 0x100000000\n"
          "- (nil)\n"
          "- 0\n"
          "@ ./prog:[0x1] + (nil) 0x10\n"
          "= End\n",
          &t);
    cr_assert(t.flags & DMM_TRC_F_NOTIME);
    cr_assert_eq(t.nrecs, 11);
    rec_is(&t, 0, DMM_TRC_MALLOC, 0, 0x64, 0, 0, 0x1e3c460, 0);
    rec_is(&t, 1, DMM_TRC_MALLOC, 0, 0x1000, 0, 0, 0x1e3d000, 0);
    rec_is(&t, 2, DMM_TRC_REALLOC, 0, 0xc8, 0, 0x1e3c460, 0x1e3c460, 0);
    rec_is(&t, 3, DMM_TRC_RELEASE, 0, 0, 0, 0x1e3c460, 0, 0);
    rec_is(&t, 4, DMM_TRC_REALLOC, 0, 0x2000, 0, 0x1e3c460, 0x1e50000, 0);
    rec_is(&t, 5, DMM_TRC_MALLOC, 0, 300, 0, 0, 0x1e60000, 0);
    rec_is(&t, 6, DMM_TRC_FREE, 0, 0, 0, 0x1e3d000, 0, 0);
    rec_is(&t, 7, DMM_TRC_REALLOC, 0, 0x100000000ull, 0, 0x1e50000, 0, DMM_TRC_RF_FAILED);
    rec_is(&t, 8, DMM_TRC_FREE, 0, 0, 0, 0, 0, 0);
    rec_is(&t, 9, DMM_TRC_FREE, 0, 0, 0, 0, 0, 0);
    rec_is(&t, 10, DMM_TRC_MALLOC, 0, 0x10, 0, 0, 0, DMM_TRC_RF_FAILED);

    dmm_opstream_t s;
    dmm_err_t err;
    cr_assert_eq(dmm_opstream_build(&t, &s, &err), 0);
    cr_assert_eq(s.nops, 6);
    cr_assert_eq(s.ops[3].kind, DMM_OP_REALLOC);
    cr_assert_eq(s.ops[3].id, 0);
    cr_assert_eq(s.ops[3].size, 0x2000);
    cr_assert_eq(s.free_null, 2);
    cr_assert_eq(s.failed, 2);
    dmm_opstream_free(&s);
    dmm_trace_free(&t);
}

Test(textfmt, mtrace_realloc_to_null)
{
    dmm_trace_t t;
    /* glibc prints realloc(p, 0) that freed p as "- p"; a "> (nil) 0" is
     * read the same way */
    PARSE(DMM_FMT_MTRACE, "+ 0x10 0x8\n< 0x10\n> (nil) 0x0\n< 0x0\n> 0x20 0x8\n", &t);
    cr_assert_eq(t.nrecs, 3);
    rec_is(&t, 1, DMM_TRC_REALLOC, 0, 0, 0, 0x10, 0, 0);
    rec_is(&t, 2, DMM_TRC_REALLOC, 0, 8, 0, 0, 0x20, 0);
    dmm_trace_free(&t);
}

Test(textfmt, mtrace_errors_name_the_line)
{
    FAIL_AT(DMM_FMT_MTRACE, "= Start\n< 0x10\n+ 0x20 0x8\n", "t: line 2: '<' (realloc) not followed by its '>'");
    FAIL_AT(DMM_FMT_MTRACE, "= Start\n+ 0x10 1\n\n< 0x10\n= End\n", "t: line 4: '<' (realloc) not followed");
    FAIL_AT(DMM_FMT_MTRACE, "= Start\n> 0x10 0x8\n", "t: line 2: '>' (realloc) without a '<'");
    FAIL_AT(DMM_FMT_MTRACE, "= Start\n@ ./prog:[0x1]\n", "line 2: no operation");
    FAIL_AT(DMM_FMT_MTRACE, "= Start\nhello\n", "line 2: not an mtrace line: 'hello'");
    FAIL_AT(DMM_FMT_MTRACE, "+ 0x10\n", "line 1: '+' needs an address and a size");
    FAIL_AT(DMM_FMT_MTRACE, "- 0x10 0x20\n", "line 1: too many fields after '-'");
    FAIL_AT(DMM_FMT_MTRACE, "+ 0xg 0x1\n", "line 1: address '0xg' is not a number");
    FAIL_AT(DMM_FMT_MTRACE, "+ 0x10 0x8000000000000000\n", "line 1: size '0x8000000000000000' is too large");
    FAIL_AT(DMM_FMT_MTRACE, "+ 0x10000000000000000 0x1\n", "line 1: address '0x10000000000000000' is too large");
    FAIL_AT(DMM_FMT_MTRACE, "+ 0x 0x1\n", "line 1: address '0x' is not a number");
}

/* ---- Android memory_replay ---- */

Test(textfmt, android_records)
{
    dmm_trace_t t;
    PARSE(DMM_FMT_ANDROID,
          "202: malloc 0xb4827400 1024\n"
          "202: calloc 0xb4830000 17 8\n"
          "203: memalign 0xb4840000 64 200\n"
          "202: realloc 0xb4850000 0xb4827400 2048\n"   /* moved */
          "203: realloc 0xb4840000 0xb4840000 300\n"    /* in place */
          "202: realloc 0xb4860000 0x0 40\n"            /* realloc(NULL) */
          "202: realloc 0x0 0xb4860000 0\n"             /* freed by realloc */
          "202: realloc 0x0 0xb4850000 99\n"            /* failed */
          "203: free 0xb4830000\n"
          "203: free 0x0\n"
          "203: thread_done 0x0\n",
          &t);
    cr_assert(t.flags & DMM_TRC_F_NOTIME);
    cr_assert_eq(t.nrecs, 12);
    rec_is(&t, 0, DMM_TRC_MALLOC, 202, 1024, 0, 0, 0xb4827400, 0);
    rec_is(&t, 1, DMM_TRC_CALLOC, 202, 136, 17, 0, 0xb4830000, 0);
    rec_is(&t, 2, DMM_TRC_MEMALIGN, 203, 200, 64, 0, 0xb4840000, 0);
    rec_is(&t, 3, DMM_TRC_RELEASE, 202, 0, 0, 0xb4827400, 0, 0);
    rec_is(&t, 4, DMM_TRC_REALLOC, 202, 2048, 0, 0xb4827400, 0xb4850000, 0);
    rec_is(&t, 5, DMM_TRC_REALLOC, 203, 300, 0, 0xb4840000, 0xb4840000, 0);
    rec_is(&t, 6, DMM_TRC_REALLOC, 202, 40, 0, 0, 0xb4860000, 0);
    rec_is(&t, 7, DMM_TRC_REALLOC, 202, 0, 0, 0xb4860000, 0, 0);
    rec_is(&t, 8, DMM_TRC_REALLOC, 202, 99, 0, 0xb4850000, 0, DMM_TRC_RF_FAILED);
    rec_is(&t, 9, DMM_TRC_FREE, 203, 0, 0, 0xb4830000, 0, 0);
    rec_is(&t, 10, DMM_TRC_FREE, 203, 0, 0, 0, 0, 0);
    rec_is(&t, 11, DMM_TRC_THREAD_EXIT, 203, 0, 0, 0, 0, 0);
    for (size_t i = 0; i < t.nrecs; i++)
        cr_assert_eq(t.recs[i].time, 0);

    dmm_opstream_t s;
    dmm_err_t err;
    cr_assert_eq(dmm_opstream_build(&t, &s, &err), 0);
    /* alloc x3, realloc moved, realloc in place, alloc (realloc NULL),
     * free (realloc to 0), free */
    cr_assert_eq(s.nops, 8);
    cr_assert_eq(s.ops[1].flags, DMM_OPF_ZERO);
    cr_assert_eq(s.ops[2].align_log2, 6);
    cr_assert_eq(s.ops[3].kind, DMM_OP_REALLOC);
    cr_assert_eq(s.ops[3].id, 0);
    cr_assert_eq(s.ops[6].kind, DMM_OP_FREE);
    cr_assert_eq(s.ops[6].id, 3);
    cr_assert_eq(s.failed, 1);
    cr_assert_eq(s.free_null, 1);
    cr_assert_eq(s.unknown_free, 0);
    dmm_opstream_free(&s);
    dmm_trace_free(&t);
}

Test(textfmt, android_timestamps)
{
    dmm_trace_t t;
    PARSE(DMM_FMT_ANDROID,
          "1: malloc 0x100 10 5000 5100\n"
          "2: malloc 0x200 20 4000 4050\n"
          "1: realloc 0x300 0x100 30 7000 7100\n"
          "1: free 0x300 9000 9001\n"
          "2: thread_done 0x0 9500\n",
          &t);
    cr_assert_not(t.flags & DMM_TRC_F_NOTIME);
    cr_assert_eq(t.nrecs, 6);
    cr_assert_eq(t.recs[0].time, 1000);
    cr_assert_eq(t.recs[1].time, 0);
    cr_assert_eq(t.recs[2].time, 3000);   /* RELEASE */
    cr_assert_eq(t.recs[3].time, 3000);
    cr_assert_eq(t.recs[4].time, 5000);
    cr_assert_eq(t.recs[5].time, 5500);
    rec_is(&t, 5, DMM_TRC_THREAD_EXIT, 2, 0, 0, 0, 0, 0);
    dmm_trace_free(&t);
}

Test(textfmt, android_calloc_overflow)
{
    dmm_trace_t t;
    /* an overflowing calloc that failed is kept as a failed call */
    PARSE(DMM_FMT_ANDROID, "1: calloc 0x0 4294967296 4294967296\n", &t);
    rec_is(&t, 0, DMM_TRC_CALLOC, 1, 0, 4294967296ull, 0, 0, DMM_TRC_RF_FAILED);
    dmm_trace_free(&t);
    FAIL_AT(DMM_FMT_ANDROID, "1: calloc 0x10 4294967296 4294967296\n",
            "line 1: calloc of 4294967296 x 4294967296 bytes overflows");
}

Test(textfmt, android_errors_name_the_line)
{
    FAIL_AT(DMM_FMT_ANDROID, "1: malloc 0x10 8\n\n1: mallok 0x20 8\n", "t: line 3: unknown operation 'mallok'");
    FAIL_AT(DMM_FMT_ANDROID, "1 malloc 0x10 8\n", "line 1: expected '<tid>:' at the start, got '1'");
    FAIL_AT(DMM_FMT_ANDROID, "x: malloc 0x10 8\n", "line 1: thread id 'x' is not a number");
    FAIL_AT(DMM_FMT_ANDROID, "4294967296: malloc 0x10 8\n", "line 1: thread id '4294967296' is too large");
    FAIL_AT(DMM_FMT_ANDROID, "1:\n", "line 1: no operation");
    FAIL_AT(DMM_FMT_ANDROID, "1: malloc 0x10\n", "line 1: malloc needs 2 fields, got 1");
    FAIL_AT(DMM_FMT_ANDROID, "1: malloc 0x10 8 99\n", "line 1: one field too many after malloc");
    FAIL_AT(DMM_FMT_ANDROID, "1: free 0x10 1 2 3 4 5\n", "line 1: too many fields");
    FAIL_AT(DMM_FMT_ANDROID, "1: memalign 0x10 x 8\n", "line 1: alignment 'x' is not a number");
    FAIL_AT(DMM_FMT_ANDROID, "1: realloc 0x10 zz 8\n", "line 1: old pointer 'zz' is not a number");
    FAIL_AT(DMM_FMT_ANDROID, "1: malloc 0x10 8 1 x\n", "line 1: end time 'x' is not a number");
}

/* ---- wee_alloc ---- */

Test(textfmt, wee_records)
{
    dmm_trace_t t;
    PARSE(DMM_FMT_WEE,
          "Alloc(552),\nAlloc(120),\r\nAlloc(0),\n\nFree(1),\nFree(1),\n"
          "  Alloc( 8 ) , Free(0),Free(3)\n",
          &t);
    cr_assert(t.flags & DMM_TRC_F_NOTIME);
    cr_assert_eq(t.nrecs, 8);
    rec_is(&t, 0, DMM_TRC_MALLOC, 0, 552, 0, 0, P(0), 0);
    rec_is(&t, 1, DMM_TRC_MALLOC, 0, 120, 0, 0, P(1), 0);
    rec_is(&t, 2, DMM_TRC_MALLOC, 0, 0, 0, 0, P(2), 0);
    rec_is(&t, 3, DMM_TRC_FREE, 0, 0, 0, P(1), 0, 0);
    rec_is(&t, 4, DMM_TRC_FREE, 0, 0, 0, P(1), 0, 0);
    rec_is(&t, 5, DMM_TRC_MALLOC, 0, 8, 0, 0, P(3), 0);
    rec_is(&t, 6, DMM_TRC_FREE, 0, 0, 0, P(0), 0, 0);
    rec_is(&t, 7, DMM_TRC_FREE, 0, 0, 0, P(3), 0, 0);
    dmm_trace_free(&t);

    PARSE(DMM_FMT_WEE, "Alloc(1),\nFree(0),\nFree(0),\n", &t);
    dmm_opstream_t s;
    dmm_err_t err;
    cr_assert_eq(dmm_opstream_build(&t, &s, &err), 0);
    cr_assert_eq(s.nops, 2);
    cr_assert_eq(s.unknown_free, 1);   /* the double free is counted */
    dmm_opstream_free(&s);
    dmm_trace_free(&t);
}

Test(textfmt, wee_errors_name_the_line)
{
    FAIL_AT(DMM_FMT_WEE, "Alloc(1),\nFree(1),\n", "t: line 2: Free(1) but only 1 blocks were allocated so far");
    FAIL_AT(DMM_FMT_WEE, "Alloc(1),\nFree(0),\n\nAlloc 5,\n", "t: line 4: Alloc: expected '(number)'");
    FAIL_AT(DMM_FMT_WEE, "Alloc(1\n", "line 1: Alloc: expected '(number)'");
    FAIL_AT(DMM_FMT_WEE, "Alloc(-1),\n", "line 1: size '-1' is not a number");
    FAIL_AT(DMM_FMT_WEE, "Alloc(9223372036854775808),\n", "line 1: size '9223372036854775808' is too large");
    FAIL_AT(DMM_FMT_WEE, "Alloc(1) Free(0)\n", "line 1: expected ',' between operations, got 'Free(0)'");
    FAIL_AT(DMM_FMT_WEE, "Alloc(1),\nRealloc(1),\n", "line 2: expected Alloc(size) or Free(index), got 'Realloc(1),'");
    FAIL_AT(DMM_FMT_WEE, "Free(0),\n", "line 1: Free(0) but only 0 blocks");
}

/* ---- writers ---- */

Test(textfmt, writers_exact_text)
{
    dmm_trace_t t;
    PARSE(DMM_FMT_ANDROID,
          "5: malloc 0x1000 100\n"
          "5: calloc 0x2000 4 32\n"
          "6: memalign 0x3000 64 300\n"
          "5: realloc 0x4000 0x1000 200\n"
          "6: free 0x2000\n"
          "5: realloc 0x4000 0x4000 250\n"
          "6: thread_done 0x0\n"
          "5: free 0x3000\n",
          &t);
    size_t len;
    char *s = write_to_string(dmm_write_android, &t, &len);
    cr_assert_str_eq(s,
                     "5: malloc 0x1000 100\n"
                     "5: calloc 0x2000 4 32\n"
                     "6: memalign 0x3000 64 300\n"
                     "5: realloc 0x4000 0x1000 200\n"
                     "6: free 0x2000\n"
                     "5: realloc 0x4000 0x4000 250\n"
                     "6: thread_done 0x0\n"
                     "5: free 0x3000\n");
    free(s);
    s = write_to_string(dmm_write_mtrace, &t, &len);
    cr_assert_str_eq(s,
                     "= Start\n"
                     "+ 0x1000 0x64\n"
                     "+ 0x2000 0x80\n"
                     "+ 0x3000 0x12c\n"
                     "< 0x1000\n> 0x4000 0xc8\n"
                     "- 0x2000\n"
                     "< 0x4000\n> 0x4000 0xfa\n"
                     "- 0x3000\n"
                     "= End\n");
    free(s);
    s = write_to_string(dmm_write_rep, &t, &len);
    /* peak live: 100 + 128 + 300, then 200 + 128 + 300 = 628 -> one page */
    cr_assert_str_eq(s,
                     "4096\n3\n7\n1\n"
                     "a 0 100\na 1 128\na 2 300\nr 0 200\nf 1\nr 0 250\nf 2\n");
    free(s);
    s = write_to_string(dmm_write_wee, &t, &len);
    cr_assert_str_eq(s,
                     "Alloc(100),\nAlloc(128),\nAlloc(300),\nFree(0),\nAlloc(200),\n"
                     "Free(1),\nFree(3),\nAlloc(250),\nFree(2),\n");
    free(s);
    dmm_trace_free(&t);
}

Test(textfmt, android_writer_keeps_times)
{
    dmm_trace_t t;
    PARSE(DMM_FMT_ANDROID, "1: malloc 0x100 10 100 150\n1: free 0x100 300 310\n", &t);
    size_t len;
    char *s = write_to_string(dmm_write_android, &t, &len);
    cr_assert_str_eq(s, "1: malloc 0x100 10 0 0\n1: free 0x100 200 200\n");
    free(s);
    dmm_trace_free(&t);
}

Test(textfmt, writers_failed_and_null_calls)
{
    dmm_trace_t t;
    PARSE(DMM_FMT_MTRACE, "+ (nil) 0x10\n+ 0x10 0x8\n! 0x10 0x100\n- (nil)\n< 0x10\n> 0x0 0x0\n", &t);
    size_t len;
    char *s = write_to_string(dmm_write_mtrace, &t, &len);
    cr_assert_str_eq(s, "= Start\n+ (nil) 0x10\n+ 0x10 0x8\n! 0x10 0x100\n- (nil)\n- 0x10\n= End\n");
    free(s);
    s = write_to_string(dmm_write_android, &t, &len);
    cr_assert_str_eq(s, "0: malloc 0x0 16\n0: malloc 0x10 8\n0: realloc 0x0 0x10 256\n"
                        "0: free 0x0\n0: realloc 0x0 0x10 0\n");
    free(s);
    round_trip(&t, DMM_FMT_ANDROID, dmm_write_android, 1);
    round_trip(&t, DMM_FMT_MTRACE, dmm_write_mtrace, 1);
    dmm_trace_free(&t);
}

static void add(dmm_trace_t *t, uint32_t tid, unsigned op, uint64_t size, uint64_t arg,
                uint64_t in, uint64_t out, unsigned flags)
{
    dmm_rec_t *r = dmm_trace_push(t);
    cr_assert_not_null(r);
    r->op = (uint8_t)op;
    r->tid = tid;
    r->size = size;
    r->arg = arg;
    r->ptr_in = in;
    r->ptr_out = out;
    r->flags = (uint8_t)flags;
    r->time = 1000 * t->nrecs;
}

/* A trace as the preload tracer records it: a moved realloc's RELEASE and
 * REALLOC apart, with another thread's work between them, aligned calls,
 * a failed free, a fork record. */
Test(textfmt, writers_of_a_recorded_trace)
{
    dmm_trace_t t;
    memset(&t, 0, sizeof t);
    add(&t, 1, DMM_TRC_MALLOC, 100, 0, 0, 0x1000, 0);
    add(&t, 2, DMM_TRC_POSIX_MEMALIGN, 64, 256, 0, 0x2000, 0);
    add(&t, 1, DMM_TRC_RELEASE, 0, 0, 0x1000, 0, 0);
    add(&t, 2, DMM_TRC_ALIGNED_ALLOC, 32, 4096, 0, 0x3000, 0);
    add(&t, 1, DMM_TRC_REALLOC, 500, 0, 0x1000, 0x4000, 0);
    add(&t, 2, DMM_TRC_FREE, 0, 0, 0x2000, 0, DMM_TRC_RF_FAILED);
    add(&t, 2, DMM_TRC_FORK, 0, 0, 0, 77, 0);
    add(&t, 2, DMM_TRC_CALLOC, 30, 3, 0, 0x5000, 0);
    add(&t, 1, DMM_TRC_REALLOCARRAY, 600, 6, 0x4000, 0x4000, 0);
    add(&t, 2, DMM_TRC_THREAD_EXIT, 0, 0, 0, 0, 0);
    add(&t, 1, DMM_TRC_FREE, 0, 0, 0x4000, 0, 0);
    size_t len;
    char *s = write_to_string(dmm_write_android, &t, &len);
    cr_assert_str_eq(s,
                     "1: malloc 0x1000 100 1000 1000\n"
                     "2: memalign 0x2000 256 64 2000 2000\n"
                     "2: memalign 0x3000 4096 32 4000 4000\n"
                     "1: realloc 0x4000 0x1000 500 5000 5000\n"
                     "2: calloc 0x5000 3 10 8000 8000\n"
                     "1: realloc 0x4000 0x4000 600 9000 9000\n"
                     "2: thread_done 0x0 10000 10000\n"
                     "1: free 0x4000 11000 11000\n");
    free(s);
    round_trip(&t, DMM_FMT_ANDROID, dmm_write_android, 1);
    round_trip(&t, DMM_FMT_MTRACE, dmm_write_mtrace, 0);
    round_trip(&t, DMM_FMT_REP, dmm_write_rep, 0);
    dmm_trace_free(&t);
}

/* ---- round trips ---- */

Test(textfmt, round_trip_rep)
{
    dmm_trace_t t;
    load("test/data/sample.rep", &t);
    cr_assert_eq(t.nrecs, 12);
    round_trip(&t, DMM_FMT_REP, dmm_write_rep, 1);
    /* through every other text format too */
    round_trip(&t, DMM_FMT_MTRACE, dmm_write_mtrace, 1);
    round_trip(&t, DMM_FMT_ANDROID, dmm_write_android, 1);
    dmm_trace_free(&t);
}

Test(textfmt, round_trip_mtrace)
{
    dmm_trace_t t;
    load("test/data/sample.mtrace", &t);
    cr_assert_eq(t.format, DMM_FMT_MTRACE);
    /* 19 op lines; the two '<' make no record of their own, and the moved
     * realloc gets a RELEASE */
    cr_assert_eq(t.nrecs, 18);
    round_trip(&t, DMM_FMT_MTRACE, dmm_write_mtrace, 1);
    round_trip(&t, DMM_FMT_REP, dmm_write_rep, 0);
    round_trip(&t, DMM_FMT_ANDROID, dmm_write_android, 1);
    dmm_opstream_t s;
    dmm_err_t err;
    cr_assert_eq(dmm_opstream_build(&t, &s, &err), 0);
    cr_assert_eq(s.unknown_free, 0);
    cr_assert_eq(s.reused_live, 0);
    dmm_opstream_free(&s);
    dmm_trace_free(&t);
}

Test(textfmt, round_trip_android)
{
    dmm_trace_t t;
    load("test/data/android_sample.txt", &t);
    cr_assert_eq(t.format, DMM_FMT_ANDROID);
    round_trip(&t, DMM_FMT_ANDROID, dmm_write_android, 1);
    round_trip(&t, DMM_FMT_MTRACE, dmm_write_mtrace, 0);
    round_trip(&t, DMM_FMT_REP, dmm_write_rep, 0);
    dmm_opstream_t s;
    dmm_err_t err;
    cr_assert_eq(dmm_opstream_build(&t, &s, &err), 0);
    cr_assert_eq(s.unknown_free, 0);
    cr_assert_eq(s.reused_live, 0);
    dmm_opstream_free(&s);
    dmm_trace_free(&t);
}

static void wee_file(const char *rel, size_t allocs, size_t frees)
{
    dmm_trace_t t;
    load(rel, &t);
    cr_assert_eq(t.format, DMM_FMT_WEE);
    cr_assert_eq(t.nrecs, allocs + frees);
    round_trip(&t, DMM_FMT_WEE, dmm_write_wee, 1);
    round_trip(&t, DMM_FMT_REP, dmm_write_rep, 1);
    /* and the text must come back byte for byte */
    size_t len, olen;
    char *s = write_to_string(dmm_write_wee, &t, &len);
    uint8_t *orig;
    dmm_err_t err;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", DMM_SRC_DIR, rel);
    cr_assert_eq(dmm_read_file(path, &orig, &olen, &err), 0);
    cr_assert_eq(len, olen);
    cr_assert(memcmp(s, orig, len) == 0);
    free(orig);
    free(s);
    dmm_trace_free(&t);
}

Test(textfmt, round_trip_wee_real_traces)
{
    /* counts from the table in shared/traces/wee_alloc/README.md */
    wee_file("test/data/wee/ls.trace", 45, 37);
    wee_file("test/data/wee/cpp-demangle.trace", 62, 40);
}

Test(textfmt, shared_wee_trace_if_present)
{
    const char *path = "/work/shared/traces/wee_alloc/ls.trace";
    if (access(path, R_OK) != 0)
        cr_skip_test("%s is not here", path);
    dmm_trace_t t;
    dmm_err_t err;
    cr_assert_eq(dmm_trace_load(path, &t, &err), 0, "%s", err.msg);
    cr_assert_eq(t.nrecs, 82);
    round_trip(&t, DMM_FMT_WEE, dmm_write_wee, 1);
    dmm_trace_free(&t);
}

/* ---- hostile input ---- */

Test(textfmt, enormous_line_and_garbage)
{
    size_t n = 1 << 20;
    char *buf = malloc(n);
    cr_assert_not_null(buf);
    memset(buf, '1', n);                  /* a header "number" a megabyte long */
    memcpy(buf + n - 8, "\na 0 1\n", 7);
    buf[n - 1] = '\n';
    dmm_trace_t t;
    dmm_err_t err;
    cr_assert_eq(dmm_trace_parse("big", (uint8_t *)buf, n, DMM_FMT_REP, &t, &err), 0, "%s", err.msg);
    cr_assert_eq(t.nrecs, 1);
    dmm_trace_free(&t);
    /* a size a megabyte long is an error, quoted short */
    memcpy(buf, "a 0 ", 4);
    cr_assert_eq(dmm_trace_parse("big", (uint8_t *)buf, n, DMM_FMT_REP, &t, &err), -1);
    cr_assert(strstr(err.msg, "big: line 1: too many fields") || strstr(err.msg, "too large"), "%s", err.msg);
    cr_assert_lt(strlen(err.msg), 200);
    for (size_t i = 0; i < n; i++)
        buf[i] = (char)(i * 131 + 7);
    dmm_format_t fmts[] = { DMM_FMT_REP, DMM_FMT_MTRACE, DMM_FMT_ANDROID, DMM_FMT_WEE };
    for (size_t f = 0; f < 4; f++) {
        cr_assert_eq(dmm_trace_parse("junk", (uint8_t *)buf, n, fmts[f], &t, &err), -1);
        cr_assert(strncmp(err.msg, "junk: line ", 11) == 0, "%s", err.msg);
    }
    free(buf);
}
