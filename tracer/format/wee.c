/* wee.c - wee_alloc traces: reader and writer (`Alloc(n),` and `Free(i),`,
 * i the number of the Alloc line). */
#include "tracer/format/textfmt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/format/opstream.h"
#include "tracer/format/text.h"

/* ---- reader ---- */

static const uint8_t *skip_blanks(const uint8_t *p, const uint8_t *e)
{
    while (p < e && dmm_text_is_blank(*p))
        p++;
    return p;
}

int dmm_read_wee(const char *name, const uint8_t *buf, size_t len, dmm_trace_t *t, dmm_err_t *err)
{
    dmm_text_lines_t L;
    dmm_text_init(&L, name, buf, len, err);
    int rc = 0;
    uint64_t nallocs = 0;
    char q[DMM_TEXT_QUOTE];

    t->format = DMM_FMT_WEE;
    t->flags |= DMM_TRC_F_NOTIME;
    while (rc == 0 && dmm_text_next_line(&L)) {
        /* One or more "Alloc(n)," / "Free(i)," on the line; the files are
         * Rust array fragments, so the last comma is optional. */
        const uint8_t *p = L.s, *e = L.e;
        while (rc == 0 && p < e) {
            int alloc;
            if ((size_t)(e - p) >= 5 && memcmp(p, "Alloc", 5) == 0)
                alloc = 1, p += 5;
            else if ((size_t)(e - p) >= 4 && memcmp(p, "Free", 4) == 0)
                alloc = 0, p += 4;
            else {
                rc = dmm_text_err(&L, "expected Alloc(size) or Free(index), got %s",
                              dmm_text_quote((dmm_text_tok_t){ p, (size_t)(e - p) }, q));
                break;
            }
            p = skip_blanks(p, e);
            const uint8_t *b = p < e && *p == '(' ? skip_blanks(p + 1, e) : NULL;
            const uint8_t *c = b;
            while (c && c < e && *c != ')' && !dmm_text_is_blank(*c))
                c++;
            const uint8_t *close = c ? skip_blanks(c, e) : NULL;
            if (!b || close == e || *close != ')') {
                rc = dmm_text_err(&L, "%s: expected '(number)'", alloc ? "Alloc" : "Free");
                break;
            }
            uint64_t v;
            if (dmm_text_num(&L, (dmm_text_tok_t){ b, (size_t)(c - b) }, DMM_TEXT_DEC, alloc ? DMM_TEXT_MAX_SIZE : UINT64_MAX,
                        alloc ? "size" : "index", &v) != 0) {
                rc = -1;
                break;
            }
            p = skip_blanks(close + 1, e);
            int comma = p < e && *p == ',';
            if (comma)
                p = skip_blanks(p + 1, e);
            if (p < e && !comma) {
                rc = dmm_text_err(&L, "expected ',' between operations, got %s",
                              dmm_text_quote((dmm_text_tok_t){ p, (size_t)(e - p) }, q));
                break;
            }
            if (alloc) {
                rc = dmm_text_push_alloc(&L, t, DMM_TRC_MALLOC, 0, 0, DMM_PSEUDO_ADDR(nallocs), v, 0);
                nallocs++;
            } else if (v >= nallocs) {
                rc = dmm_text_err(&L, "Free(%" PRIu64 ") but only %" PRIu64 " blocks were allocated so far",
                              v, nallocs);
            } else {
                /* a second free of the same index is kept: the op stream
                 * counts it as a free of an unknown block */
                rc = dmm_text_push_free(&L, t, 0, 0, DMM_PSEUDO_ADDR(v));
            }
        }
    }
    return rc;
}

/* ---- writer ---- */

int dmm_write_wee(const dmm_trace_t *t, FILE *out, dmm_err_t *err)
{
    dmm_opstream_t s;
    if (dmm_opstream_build(t, &s, err) != 0)
        return -1;
    int rc = dmm_write_wee_ops(dmm_text_trace_name(t), &s, out, err);
    dmm_opstream_free(&s);
    return rc;
}

int dmm_write_wee_ops(const char *name, const dmm_opstream_t *sp, FILE *out, dmm_err_t *err)
{
    const dmm_opstream_t s = *sp;
    /* each block's index is the number of its Alloc line; a realloc is a
     * Free of the old index and a new Alloc, as wee_alloc's tracer did */
    uint64_t *line = calloc(s.nids ? s.nids : 1, sizeof *line);
    if (!line)
        return dmm_err_set(err, "%s: out of memory writing wee", name);
    uint64_t nalloc = 0;
    for (size_t i = 0; i < s.nops; i++) {
        const dmm_op_t *o = &s.ops[i];
        if (o->kind != DMM_OP_ALLOC)
            fprintf(out, "Free(%" PRIu64 "),\n", line[o->id]);
        if (o->kind != DMM_OP_FREE) {
            fprintf(out, "Alloc(%" PRIu64 "),\n", o->size);
            line[o->id] = nalloc++;
        }
    }
    free(line);
    if (fflush(out) != 0 || ferror(out))
        return dmm_err_set(err, "%s: write error: %s", name, strerror(errno ? errno : EIO));
    return 0;
}
