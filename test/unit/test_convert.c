/* test_convert.c - `dmm convert`, run as the built build/dmm (or, before the
 * dispatcher exists, dmm_convert_main() in a child process): every output
 * format, round trips through .trc, standard input and output, the exit
 * status and message of each kind of failure, and that a refused or failed
 * conversion leaves no file behind. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen/cli/cli.h"
#include "tracer/format/opstream.h"
#include "tracer/format/trace.h"
#include "tracer/format/trc_write.h"
#include "test/lib/trc_sample.h"
#include "tracer/base/file.h"
#include "tracer/format/load.h"

static char dir[] = "/tmp/dmm_test_convert.XXXXXX";
static char out_text[1 << 16], err_text[1 << 16];

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
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

TestSuite(convert, .init = setup, .fini = teardown);

/* A path in the test's directory; four can be live at once. */
static const char *tp(const char *name)
{
    static char p[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

static void read_into(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, cap - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
    unlink(path);
}

/* Run `dmm convert ARGS...` (NULL-terminated) with standard input from
 * in_path (or /dev/null); its output and errors land in out_text and
 * err_text.  Returns the exit status. */
static int run(const char *in_path, ...)
{
    char *argv[32];
    int argc = 0;
    static char dmm[] = DMM_BUILD_DIR "/dmm", conv[] = "convert";
    argv[argc++] = dmm;
    argv[argc++] = conv;
    va_list ap;
    va_start(ap, in_path);
    const char *a;
    while ((a = va_arg(ap, const char *)) != NULL && argc < 31)
        argv[argc++] = (char *)a;
    va_end(ap);
    argv[argc] = NULL;

    char op[512], ep[512];
    snprintf(op, sizeof op, "%s/.stdout", dir);
    snprintf(ep, sizeof ep, "%s/.stderr", dir);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        int i = open(in_path ? in_path : "/dev/null", O_RDONLY);
        int o = open(op, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(ep, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (i < 0 || o < 0 || e < 0)
            _exit(99);
        dup2(i, 0);
        dup2(o, 1);
        dup2(e, 2);
        if (access(dmm, X_OK) == 0) {
            execv(dmm, argv);
            _exit(98);
        }
        int rc = dmm_convert_main(argc - 1, argv + 1);
        fflush(NULL);
        _exit(rc);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    read_into(op, out_text, sizeof out_text);
    read_into(ep, err_text, sizeof err_text);
    cr_assert(WIFEXITED(st), "dmm convert died: stderr: %s", err_text);
    return WEXITSTATUS(st);
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Entries in the directory other than the capture files. */
static int count_entries(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
        else if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
                 strcmp(e->d_name, ".stdout") && strcmp(e->d_name, ".stderr"))
            n += 1000;   /* a temporary left behind */
    closedir(d);
    return n;
}

static void write_sample(const char *path, size_t nextra, int zstd)
{
    dmm_trace_t a;
    dmm_err_t err;
    sample_trace(&a, nextra);
    cr_assert_eq(dmm_write_trc(&a, path, zstd, &err), 0, "%s", err.msg);
    dmm_trace_free(&a);
}

static void load(const char *path, dmm_trace_t *t)
{
    dmm_err_t err;
    cr_assert_eq(dmm_trace_load(path, t, &err), 0, "%s", err.msg);
}

/* The operation streams of two traces are the same calls. */
static void same_ops(const dmm_trace_t *a, const dmm_trace_t *b)
{
    dmm_opstream_t x, y;
    dmm_err_t err;
    cr_assert_eq(dmm_opstream_build(a, &x, &err), 0, "%s", err.msg);
    cr_assert_eq(dmm_opstream_build(b, &y, &err), 0, "%s", err.msg);
    cr_assert_eq(y.nops, x.nops, "%zu ops, expected %zu", y.nops, x.nops);
    for (size_t i = 0; i < x.nops; i++) {
        cr_assert_eq(y.ops[i].kind, x.ops[i].kind, "op %zu", i);
        cr_assert_eq(y.ops[i].id, x.ops[i].id, "op %zu", i);
        if (x.ops[i].kind != DMM_OP_FREE)
            cr_assert_eq(y.ops[i].size, x.ops[i].size, "op %zu", i);
    }
    dmm_opstream_free(&x);
    dmm_opstream_free(&y);
}

Test(convert, trc_to_trc_zstd_keeps_everything)
{
    dmm_trace_t a, b;
    write_sample(tp("in.trc"), 9000, 0);
    cr_assert_eq(run(NULL, "--zstd", tp("in.trc"), tp("out.trc"), NULL), 0, "%s", err_text);
    sample_trace(&a, 9000);
    load(tp("out.trc"), &b);
    cr_assert_eq(b.flags, a.flags);
    sample_compare(&a, &b);
    struct stat si, so;
    stat(tp("in.trc"), &si);
    stat(tp("out.trc"), &so);
    cr_assert_lt(so.st_size, si.st_size, "zstd output is smaller");
    cr_assert_eq(count_entries(), 2);
    dmm_trace_free(&a);
    dmm_trace_free(&b);
}

Test(convert, trc_to_text_file_and_stdout)
{
    write_sample(tp("in.trc"), 0, 1);
    cr_assert_eq(run(NULL, tp("in.trc"), tp("dump.txt"), NULL), 0, "%s", err_text);
    char file[1 << 14];
    read_into(tp("dump.txt"), file, sizeof file);
    cr_assert(strstr(file, "# pid: 4242 ppid: 4241\n") != NULL, "%s", file);
    cr_assert(strstr(file, " realloc size=300 in=0x1000 out=0x3000 stack=1\n") != NULL, "%s", file);
    cr_assert_eq(run(NULL, "--to", "text", tp("in.trc"), "-", NULL), 0, "%s", err_text);
    cr_assert_str_eq(out_text, file);
}

/* wee_alloc has no realloc: each becomes a free and an alloc, so only the
 * counts and the bytes allocated can be compared. */
static void same_ops_no_realloc(const dmm_trace_t *a, const dmm_trace_t *b)
{
    dmm_opstream_t x, y;
    dmm_err_t err;
    cr_assert_eq(dmm_opstream_build(a, &x, &err), 0, "%s", err.msg);
    cr_assert_eq(dmm_opstream_build(b, &y, &err), 0, "%s", err.msg);
    size_t n[2][4] = {{0}};
    uint64_t bytes[2] = {0};
    for (size_t i = 0; i < x.nops; i++) {
        n[0][x.ops[i].kind]++;
        if (x.ops[i].kind != DMM_OP_FREE)
            bytes[0] += x.ops[i].size;
    }
    for (size_t i = 0; i < y.nops; i++) {
        n[1][y.ops[i].kind]++;
        if (y.ops[i].kind != DMM_OP_FREE)
            bytes[1] += y.ops[i].size;
    }
    cr_assert_eq(n[1][DMM_OP_REALLOC], 0);
    cr_assert_eq(n[1][DMM_OP_ALLOC], n[0][DMM_OP_ALLOC] + n[0][DMM_OP_REALLOC]);
    cr_assert_eq(n[1][DMM_OP_FREE], n[0][DMM_OP_FREE] + n[0][DMM_OP_REALLOC]);
    cr_assert_eq(bytes[1], bytes[0]);
    dmm_opstream_free(&x);
    dmm_opstream_free(&y);
}

/* Each text format: written, read back as that format, same operations. */
static void via(const char *fmtname, const char *outname, dmm_format_t want)
{
    dmm_trace_t a, b;
    write_sample(tp("in.trc"), 300, 0);
    cr_assert_eq(run(NULL, "--to", fmtname, tp("in.trc"), tp(outname), NULL), 0,
                 "%s: %s", fmtname, err_text);
    load(tp(outname), &b);
    cr_assert_eq(b.format, want, "%s read back as %s", fmtname, dmm_format_name(b.format));
    load(tp("in.trc"), &a);
    if (want == DMM_FMT_WEE)
        same_ops_no_realloc(&a, &b);
    else
        same_ops(&a, &b);
    /* and on to .trc and back again */
    cr_assert_eq(run(NULL, tp(outname), tp("again.trc"), NULL), 0, "%s", err_text);
    dmm_trace_t c;
    load(tp("again.trc"), &c);
    cr_assert(c.flags & DMM_TRC_F_CONVERTED);
    cr_assert(c.flags & DMM_TRC_F_NOTIME);
    same_ops(&b, &c);
    dmm_trace_free(&a);
    dmm_trace_free(&b);
    dmm_trace_free(&c);
}

Test(convert, to_rep) { via("rep", "out.rep", DMM_FMT_REP); }
Test(convert, to_mtrace) { via("mtrace", "out.mtrace", DMM_FMT_MTRACE); }
Test(convert, to_android) { via("android", "out.android", DMM_FMT_ANDROID); }
Test(convert, to_wee) { via("wee", "out.trace", DMM_FMT_WEE); }

Test(convert, format_from_extension)
{
    write_sample(tp("in.trc"), 0, 0);
    cr_assert_eq(run(NULL, tp("in.trc"), tp("x.rep"), NULL), 0, "%s", err_text);
    cr_assert_eq(run(NULL, tp("in.trc"), tp("x.mtrace"), NULL), 0, "%s", err_text);
    cr_assert_eq(run(NULL, tp("in.trc"), tp("x.trace"), NULL), 0, "%s", err_text);
    dmm_trace_t t;
    load(tp("x.rep"), &t);
    cr_assert_eq(t.format, DMM_FMT_REP);
    dmm_trace_free(&t);
    load(tp("x.mtrace"), &t);
    cr_assert_eq(t.format, DMM_FMT_MTRACE);
    dmm_trace_free(&t);
    load(tp("x.trace"), &t);
    cr_assert_eq(t.format, DMM_FMT_WEE);
    dmm_trace_free(&t);
}

Test(convert, rep_sample_roundtrip)
{
    const char *rep = DMM_SRC_DIR "/test/data/sample.rep";
    cr_assert_eq(run(NULL, rep, tp("s.trc"), NULL), 0, "%s", err_text);
    dmm_trace_t a, b;
    load(rep, &a);
    load(tp("s.trc"), &b);
    same_ops(&a, &b);
    dmm_trace_free(&a);
    dmm_trace_free(&b);
}

Test(convert, stdin_and_stdout)
{
    write_sample(tp("in.trc"), 0, 0);
    cr_assert_eq(run(tp("in.trc"), "-", tp("o.trc"), NULL), 0, "%s", err_text);
    dmm_trace_t a, b;
    sample_trace(&a, 0);
    load(tp("o.trc"), &b);
    sample_compare(&a, &b);
    dmm_trace_free(&b);
    /* a binary trace to standard output when it is not a terminal */
    cr_assert_eq(run(tp("in.trc"), "--to", "trc", "-", "-", NULL), 0, "%s", err_text);
    dmm_err_t err;
    size_t n = strlen(out_text);   /* only the start: the magic has no NUL */
    cr_assert_geq(n, 8);
    cr_assert(memcmp(out_text, DMM_TRC_MAGIC, 8) == 0);
    (void)err;
    dmm_trace_free(&a);
}

Test(convert, to_a_device)
{
    write_sample(tp("in.trc"), 0, 0);
    cr_assert_eq(run(NULL, "--to", "text", tp("in.trc"), "/dev/null", NULL), 0, "%s", err_text);
    cr_assert_eq(run(NULL, "--to", "trc", tp("in.trc"), "/dev/null", NULL), 0, "%s", err_text);
    cr_assert_eq(count_entries(), 1);
}

Test(convert, refuses_to_overwrite)
{
    write_sample(tp("in.trc"), 0, 0);
    FILE *f = fopen(tp("keep.rep"), "w");
    fputs("mine\n", f);
    fclose(f);
    cr_assert_eq(run(NULL, tp("in.trc"), tp("keep.rep"), NULL), 2);
    cr_assert(strstr(err_text, "dmm convert: ") == err_text, "%s", err_text);
    cr_assert(strstr(err_text, "exists") != NULL, "%s", err_text);
    char buf[64];
    read_into(tp("keep.rep"), buf, sizeof buf);
    cr_assert_str_eq(buf, "mine\n");
    /* read_into removed it: put it back and replace it with --force */
    f = fopen(tp("keep.rep"), "w");
    fputs("mine\n", f);
    fclose(f);
    cr_assert_eq(run(NULL, "--force", tp("in.trc"), tp("keep.rep"), NULL), 0, "%s", err_text);
    dmm_trace_t t;
    load(tp("keep.rep"), &t);
    cr_assert_eq(t.format, DMM_FMT_REP);
    dmm_trace_free(&t);
    cr_assert_eq(count_entries(), 2);
}

Test(convert, in_place_with_force)
{
    write_sample(tp("in.trc"), 50, 0);
    cr_assert_eq(run(NULL, "--force", "--zstd", tp("in.trc"), tp("in.trc"), NULL), 0, "%s",
                 err_text);
    dmm_trace_t a, b;
    sample_trace(&a, 50);
    load(tp("in.trc"), &b);
    sample_compare(&a, &b);
    dmm_trace_free(&a);
    dmm_trace_free(&b);
    cr_assert_eq(count_entries(), 1);
}

Test(convert, usage_errors)
{
    write_sample(tp("in.trc"), 0, 0);
    cr_assert_eq(run(NULL, NULL), 1);
    cr_assert(strstr(err_text, "usage: dmm convert") != NULL, "%s", err_text);
    cr_assert_eq(run(NULL, tp("in.trc"), NULL), 1);
    cr_assert(strstr(err_text, "no OUT") != NULL, "%s", err_text);
    cr_assert_eq(run(NULL, "--bogus", tp("in.trc"), tp("o.rep"), NULL), 1);
    cr_assert(strstr(err_text, "unknown option --bogus") != NULL, "%s", err_text);
    cr_assert_eq(run(NULL, "--to", "pdf", tp("in.trc"), tp("o.rep"), NULL), 1);
    cr_assert(strstr(err_text, "unknown output format 'pdf'") != NULL, "%s", err_text);
    cr_assert_eq(run(NULL, "--to", NULL), 1);
    cr_assert_eq(run(NULL, tp("in.trc"), tp("o.unknown"), NULL), 1);
    cr_assert(strstr(err_text, "say --to FORMAT") != NULL, "%s", err_text);
    cr_assert_eq(run(NULL, tp("in.trc"), "-", NULL), 1);
    cr_assert_eq(run(NULL, "--zstd", tp("in.trc"), tp("o.rep"), NULL), 1);
    cr_assert(strstr(err_text, "--zstd") != NULL, "%s", err_text);
    cr_assert_eq(run(NULL, "a", "b", "c", NULL), 1);
    cr_assert_eq(run(NULL, "--help", NULL), 0);
    cr_assert(strstr(out_text, "usage: dmm convert") != NULL, "%s", out_text);
    cr_assert_eq(count_entries(), 1, "nothing written");
}

Test(convert, bad_input)
{
    FILE *f = fopen(tp("junk.trc"), "w");
    fputs("DMMTRACE but not really a header", f);
    fclose(f);
    cr_assert_eq(run(NULL, tp("junk.trc"), tp("o.rep"), NULL), 2);
    cr_assert(strstr(err_text, "dmm convert: ") == err_text, "%s", err_text);
    cr_assert(strstr(err_text, "junk.trc: offset ") != NULL, "%s", err_text);
    cr_assert_eq(run(NULL, tp("none.trc"), tp("o.rep"), NULL), 2);
    cr_assert(strstr(err_text, "none.trc") != NULL, "%s", err_text);
    /* a directory is read as dmm record's: none of its traces reads */
    cr_assert_eq(run(NULL, dir, tp("o.rep"), NULL), 2);
    cr_assert(strstr(err_text, "none of its 1 traces reads") != NULL, "%s", err_text);
    cr_assert_eq(count_entries(), 1, "nothing written");
}

Test(convert, unwritable_output)
{
    write_sample(tp("in.trc"), 0, 0);
    cr_assert_eq(run(NULL, tp("in.trc"), tp("no/such/dir/o.trc"), NULL), 2);
    cr_assert(strstr(err_text, "no/such/dir/o.trc") != NULL, "%s", err_text);
    cr_assert_eq(count_entries(), 1);
}

Test(convert, truncated_input_warns_and_converts)
{
    write_sample(tp("in.trc"), 5000, 0);
    uint8_t *buf;
    size_t len;
    dmm_err_t err;
    cr_assert_eq(dmm_read_file(tp("in.trc"), &buf, &len, &err), 0);
    FILE *f = fopen(tp("cut.trc"), "wb");
    fwrite(buf, 1, len - 100, f);
    fclose(f);
    free(buf);
    cr_assert_eq(run(NULL, tp("cut.trc"), tp("cut.txt"), NULL), 0, "%s", err_text);
    cr_assert(strstr(err_text, "dmm convert: warning: ") == err_text, "%s", err_text);
    cr_assert(strstr(err_text, "cut short at offset") != NULL, "%s", err_text);
    dmm_trace_t t;
    load(tp("cut.trc"), &t);
    cr_assert(t.truncated);
    cr_assert_gt(t.nrecs, 0);
    dmm_trace_free(&t);
    cr_assert(exists(tp("cut.txt")));
}
