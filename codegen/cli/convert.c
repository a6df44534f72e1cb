/* convert.c - `dmm convert`: read a trace in any format dmm reads and write
 * it in another (binary .trc, mdriver .rep, glibc mtrace, Android
 * memory_replay, wee_alloc, or the readable text dump).
 *
 *   dmm convert [--to FORMAT] [--zstd] [--force] IN OUT
 *
 * IN and OUT may be "-" (standard input / output).  A file OUT appears only
 * once it is completely written, and an existing one is replaced only with
 * --force.  Exit status as cli.h: 0 done, 1 usage, 2 the input could not be
 * read or the output not written (the message says which file and where).
 */
#include "codegen/cli/cli.h"
#include "codegen/cli/util.h"
#include "tracer/format/textfmt.h"
#include "tracer/format/convert.h"
#include "tracer/format/trace.h"
#include "tracer/format/trc_write.h"
#include "tracer/base/file.h"
#include "tracer/format/dump.h"
#include "tracer/format/load.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fputs("usage: dmm convert [--to FORMAT] [--zstd] [--force] IN OUT\n"
          "  IN           a trace: trc, rep, mtrace, android or wee (detected); - = stdin\n"
          "  OUT          the file to write; - = stdout\n"
          "  --to FORMAT  trc, rep, mtrace, android, wee or text; default from OUT's\n"
          "               extension: .trc .rep .mtrace .trace (wee) .txt/.text (text)\n"
          "  --zstd       compress the blocks of a trc output\n"
          "  --force      replace OUT if it exists; write trc to a terminal\n", f);
}

static int usage_err(const char *fmt, const char *arg)
{
    fputs("dmm convert: ", stderr);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    usage(stderr);
    return 1;
}

/* Write t in fmt to out; name is OUT for messages. */
static int write_as(dmm_format_t fmt, const dmm_trace_t *t, FILE *out, const char *name,
                    int zstd, dmm_err_t *err)
{
    switch (fmt) {
    case DMM_FMT_TRC:     return dmm_write_trc_stream(t, out, name, zstd, err);
    case DMM_FMT_REP:     return dmm_write_rep(t, out, err);
    case DMM_FMT_MTRACE:  return dmm_write_mtrace(t, out, err);
    case DMM_FMT_ANDROID: return dmm_write_android(t, out, err);
    case DMM_FMT_WEE:     return dmm_write_wee(t, out, err);
    case DMM_FMT_TEXT:
        errno = 0;
        if (dmm_write_text(t, out) != 0)
            return dmm_err_set(err, "%s: write error: %s", name, strerror(errno ? errno : EIO));
        return 0;
    default:
        return dmm_err_set(err, "%s: no writer for format %s", name, dmm_format_name(fmt));
    }
}

int dmm_convert_main(int argc, char **argv)
{
    const char *to = NULL, *pos[2] = {NULL, NULL};
    int zstd = 0, force = 0, npos = 0, opts = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (opts && a[0] == '-' && a[1] != '\0') {
            if (!strcmp(a, "--")) {
                opts = 0;
            } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
                usage(stdout);
                return 0;
            } else if (!strcmp(a, "--zstd")) {
                zstd = 1;
            } else if (!strcmp(a, "--force") || !strcmp(a, "-f")) {
                force = 1;
            } else if (!strcmp(a, "--to") || !strcmp(a, "-t")) {
                if (++i >= argc)
                    return usage_err("%s needs a format", a);
                to = argv[i];
            } else if (!strncmp(a, "--to=", 5)) {
                to = a + 5;
            } else {
                return usage_err("unknown option %s", a);
            }
            continue;
        }
        if (npos == 2)
            return usage_err("too many arguments (from %s on)", a);
        pos[npos++] = a;
    }
    if (npos < 2)
        return usage_err("%s", npos ? "no OUT given" : "no IN and OUT given");
    const char *in = pos[0], *outp = pos[1];
    int to_stdout = !strcmp(outp, "-");

    dmm_format_t fmt;
    if (to) {
        fmt = dmm_format_from_name(to);
        if (fmt == DMM_FMT_UNKNOWN)
            return usage_err("unknown output format '%s' (trc, rep, mtrace, android, wee, text)",
                             to);
    } else {
        fmt = to_stdout ? DMM_FMT_UNKNOWN : dmm_format_from_path(outp);
        if (fmt == DMM_FMT_UNKNOWN)
            return usage_err("cannot tell the output format from '%s'; say --to FORMAT", outp);
    }
    if (zstd && fmt != DMM_FMT_TRC)
        return usage_err("--zstd applies to trc output only, not %s", dmm_format_name(fmt));
    if (fmt == DMM_FMT_TRC && to_stdout && !force && isatty(STDOUT_FILENO))
        return usage_err("%s", "not writing a binary trace to a terminal (--force to do it)");

    char picked[4096];
    if (!(in = dmm_cli_trace("convert", in, picked, sizeof picked)))
        return 2;
    dmm_err_t err = {{0}};
    uint8_t *buf;
    size_t len;
    if (dmm_read_file(in, &buf, &len, &err) != 0) {
        fprintf(stderr, "dmm convert: %s\n", err.msg);
        return 2;
    }
    /* a .trc into a text format: a record at a time, not held whole */
    dmm_convert_t cv;
    int streamed = 1;
    if (len && dmm_format_detect(buf, len) == DMM_FMT_TRC)
        streamed = dmm_convert_begin(&cv, in, buf, len, fmt, &err);
    else
        memset(&cv, 0, sizeof cv);
    dmm_trace_t t;
    memset(&t, 0, sizeof t);
    if (streamed == 1 && dmm_trace_parse(in, buf, len, DMM_FMT_UNKNOWN, &t, &err) != 0)
        streamed = -1;
    if (streamed < 0) {
        fprintf(stderr, "dmm convert: %s\n", err.msg);
        dmm_convert_free(&cv);
        free(buf);
        return 2;
    }
    const char *note = streamed == 0 ? cv.note : t.truncated ? t.note : "";
    if (note[0])
        fprintf(stderr, "dmm convert: warning: %s\n", note);

    int rc = 0;
    FILE *fp = stdout;
    const char *outname = "(stdout)";
    dmm_outfile_t o;
    if (!to_stdout) {
        rc = dmm_out_open(&o, outp, force, &err);
        fp = o.fp;
        outname = outp;
    }
    if (rc == 0) {
        rc = streamed == 0 ? dmm_convert_write(&cv, fp, outname, &err)
                           : write_as(fmt, &t, fp, outname, zstd, &err);
        if (to_stdout) {
            if (rc == 0 && (fflush(stdout) != 0 || ferror(stdout)))
                rc = dmm_err_set(&err, "(stdout): write error: %s", strerror(errno ? errno : EIO));
        } else if (rc != 0) {
            dmm_out_abort(&o);
        } else {
            rc = dmm_out_commit(&o, &err);
        }
    }
    dmm_convert_free(&cv);
    free(buf);
    dmm_trace_free(&t);
    if (rc != 0) {
        fprintf(stderr, "dmm convert: %s\n", err.msg);
        return 2;
    }
    return 0;
}
