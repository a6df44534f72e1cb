/* mtrace.c - glibc mtrace() output: reader and writer (`@ caller + ptr size`,
 * `- ptr`, `< old` / `> new size`). */
#include "tracer/format/textfmt.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/base/hash.h"
#include "tracer/format/text.h"

/* ---- reader ---- */

static int mtrace_op(dmm_text_tok_t t)
{
    return t.n == 1 && strchr("+-<>!", t.p[0]) ? t.p[0] : 0;
}

int dmm_read_mtrace(const char *name, const uint8_t *buf, size_t len, dmm_trace_t *t, dmm_err_t *err)
{
    dmm_text_lines_t L;
    dmm_text_init(&L, name, buf, len, err);
    int rc = 0;
    int have_lt = 0;            /* a '<' waits for its '>' */
    uint64_t lt_ptr = 0, lt_line = 0;
    char q[DMM_TEXT_QUOTE];

    t->format = DMM_FMT_MTRACE;
    t->flags |= DMM_TRC_F_NOTIME;
    while (rc == 0 && dmm_text_next_line(&L)) {
        if (L.s[0] == '=')      /* "= Start", "= End" */
            continue;
        dmm_text_tok_t first;
        dmm_text_split(L.s, L.e, &first, 1);
        const uint8_t *opp;
        if (dmm_text_tok_is(first, "@")) {
            /* "@ caller op args": the caller may hold anything, blanks
             * included, but the arguments after the op are numbers, so the
             * op is the last token that is one of the op characters alone. */
            opp = NULL;
            for (const uint8_t *p = first.p + 1; p < L.e;) {
                while (p < L.e && dmm_text_is_blank(*p))
                    p++;
                const uint8_t *b = p;
                while (p < L.e && !dmm_text_is_blank(*p))
                    p++;
                if (mtrace_op((dmm_text_tok_t){ b, (size_t)(p - b) }))
                    opp = b;
            }
            if (!opp) {
                rc = dmm_text_err(&L, "no operation (+ - < > !) after the caller");
                break;
            }
        } else if (mtrace_op(first)) {
            opp = first.p;
        } else {
            rc = dmm_text_err(&L, "not an mtrace line: %s", dmm_text_quote(first, q));
            break;
        }
        int op = opp[0];
        dmm_text_tok_t a[2];
        size_t n = dmm_text_split(opp + 1, L.e, a, 2);
        size_t want = (op == '-' || op == '<') ? 1 : 2;
        if (n != want) {
            rc = n < want ? dmm_text_err(&L, "'%c' needs %s", op, want == 1 ? "an address" : "an address and a size")
                          : dmm_text_err(&L, "too many fields after '%c'", op);
            break;
        }
        if (have_lt && op != '>') {
            L.lineno = lt_line;
            rc = dmm_text_err(&L, "'<' (realloc) not followed by its '>'");
            break;
        }
        uint64_t ptr, size = 0;
        if (dmm_text_num(&L, a[0], DMM_TEXT_PTR, UINT64_MAX, "address", &ptr) != 0 ||
            (want == 2 && dmm_text_num(&L, a[1], DMM_TEXT_AUTO, DMM_TEXT_MAX_SIZE, "size", &size) != 0)) {
            rc = -1;
            break;
        }
        dmm_rec_t *r;
        switch (op) {
        case '+':
            rc = dmm_text_push_alloc(&L, t, DMM_TRC_MALLOC, 0, 0, ptr, size, 0);
            break;
        case '-':
            rc = dmm_text_push_free(&L, t, 0, 0, ptr);
            break;
        case '<':
            have_lt = 1;
            lt_ptr = ptr;
            lt_line = L.lineno;
            break;
        case '>':
            if (!have_lt) {
                rc = dmm_text_err(&L, "'>' (realloc) without a '<' before it");
                break;
            }
            have_lt = 0;
            rc = dmm_text_push_realloc(&L, t, 0, 0, lt_ptr, ptr, size);
            break;
        case '!':               /* realloc(ptr, size) failed */
            if (!(r = dmm_text_push(&L, t, DMM_TRC_REALLOC, 0, 0))) {
                rc = -1;
                break;
            }
            r->flags |= DMM_TRC_RF_FAILED;
            r->ptr_in = ptr;
            r->size = size;
            break;
        }
    }
    if (rc == 0 && have_lt) {
        L.lineno = lt_line;
        rc = dmm_text_err(&L, "'<' (realloc) not followed by its '>'");
    }
    return rc;
}

/* ---- writer ---- */

int dmm_mtrace_rec(const dmm_rec_t *r, FILE *out, dmm_u64map_t *pending)
{
    int failed = (r->flags & DMM_TRC_RF_FAILED) != 0;
    uint64_t old;
    if (failed && (r->op == DMM_TRC_FREE || r->op == DMM_TRC_RELEASE))
        return 0;   /* opstream.c ignores them: so does the text */
    if (dmm_op_is_alloc(r->op)) {
        if (failed || !r->ptr_out)
            fprintf(out, "+ (nil) 0x%" PRIx64 "\n", r->size);
        else
            fprintf(out, "+ 0x%" PRIx64 " 0x%" PRIx64 "\n", r->ptr_out, r->size);
    } else if (r->op == DMM_TRC_FREE) {
        if (r->ptr_in)
            fprintf(out, "- 0x%" PRIx64 "\n", r->ptr_in);
        else
            fputs("- (nil)\n", out);
    } else if (r->op == DMM_TRC_RELEASE) {
        if (r->ptr_in && dmm_u64map_put(pending, (uint64_t)r->tid + 1, r->ptr_in) != 0)
            return -1;
    } else if (dmm_text_is_realloc(r->op)) {
        if (failed) {       /* leaves the block alone, as in opstream.c */
            if (r->ptr_in)
                fprintf(out, "! 0x%" PRIx64 " 0x%" PRIx64 "\n", r->ptr_in, r->size);
            else
                fprintf(out, "+ (nil) 0x%" PRIx64 "\n", r->size);
            return 0;
        }
        old = dmm_text_realloc_old(pending, r);
        if (!old) {
            if (r->ptr_out)
                fprintf(out, "+ 0x%" PRIx64 " 0x%" PRIx64 "\n", r->ptr_out, r->size);
        } else if (!r->ptr_out) {
            fprintf(out, "- 0x%" PRIx64 "\n", old);
        } else {
            fprintf(out, "< 0x%" PRIx64 "\n> 0x%" PRIx64 " 0x%" PRIx64 "\n", old, r->ptr_out,
                    r->size);
        }
    }
    return 0;
}

int dmm_write_mtrace(const dmm_trace_t *t, FILE *out, dmm_err_t *err)
{
    dmm_u64map_t pending = DMM_U64MAP_INIT;
    fputs(DMM_MTRACE_START, out);
    for (size_t i = 0; i < t->nrecs; i++) {
        if (dmm_mtrace_rec(&t->recs[i], out, &pending) != 0) {
            dmm_u64map_free(&pending);
            return dmm_err_set(err, "%s: out of memory writing mtrace", dmm_text_trace_name(t));
        }
    }
    fputs(DMM_MTRACE_END, out);
    dmm_u64map_free(&pending);
    return dmm_text_finish(t, out, err);
}
