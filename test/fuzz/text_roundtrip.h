/* text_roundtrip.h - the body shared by the text-format fuzz harnesses
 * (fuzz_rep.c, fuzz_mtrace.c, fuzz_android.c, fuzz_wee.c).  Any input must
 * parse or fail with a message, never crash, hang or leak; whatever parses
 * must build an operation stream, write back out, and read back to the same
 * operation stream, so the fuzzer checks the writers as well. */
#ifndef DMM_FUZZ_TEXT_ROUNDTRIP_H
#define DMM_FUZZ_TEXT_ROUNDTRIP_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/format/opstream.h"
#include "tracer/format/textfmt.h"
#include "tracer/format/trace.h"
#include "tracer/format/load.h"

static int fuzz_text_roundtrip(const uint8_t *data, size_t size, dmm_format_t fmt,
                               int (*writer)(const dmm_trace_t *, FILE *, dmm_err_t *))
{
    dmm_trace_t t, u;
    dmm_err_t err;
    dmm_opstream_t s, s2;
    if (dmm_trace_parse("fuzz", data, size, fmt, &t, &err) != 0)
        return 0;
    if (dmm_opstream_build(&t, &s, &err) != 0)
        __builtin_trap();   /* only out of memory may fail here */
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out)
        __builtin_trap();
    if (writer(&t, out, &err) != 0)
        __builtin_trap();
    fclose(out);
    /* an empty .rep or wee output is no trace at all for the parser */
    if (len > 0) {
        if (dmm_trace_parse("again", (const uint8_t *)text, len, fmt, &u, &err) != 0) {
            fprintf(stderr, "re-read failed: %s\n%s\n", err.msg, text);
            __builtin_trap();
        }
        if (dmm_opstream_build(&u, &s2, &err) != 0)
            __builtin_trap();
        if (s.nops != s2.nops || s.nids != s2.nids)
            __builtin_trap();
        for (size_t i = 0; i < s.nops; i++)
            if (s.ops[i].kind != s2.ops[i].kind || s.ops[i].id != s2.ops[i].id ||
                s.ops[i].size != s2.ops[i].size)
                __builtin_trap();
        dmm_opstream_free(&s2);
        dmm_trace_free(&u);
    } else if (s.nops != 0) {
        __builtin_trap();
    }
    free(text);
    dmm_opstream_free(&s);
    dmm_trace_free(&t);
    return 0;
}

#endif
