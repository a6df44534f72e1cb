/* rep.c - the CS:APP mdriver .rep format: reader and writer (the operation
 * stream as `a id size`, `r id size`, `f id`, after a header of numbers). */
#include "tracer/format/textfmt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/base/hash.h"
#include "tracer/format/opstream.h"
#include "tracer/format/text.h"

/* ---- reader ---- */

/* Header lines are lines of numbers before the first operation.  mdriver
 * has four (heap size, ids, ops, weight), but variants have more, fewer or
 * none, and some write decimals, so anything numeric-looking is accepted
 * and ignored: the operations alone define the trace. */
static int rep_header_line(const uint8_t *s, const uint8_t *e)
{
    if (!((*s >= '0' && *s <= '9') || *s == '-' || *s == '+'))
        return 0;
    for (; s < e; s++)
        if (!((*s >= '0' && *s <= '9') || *s == '-' || *s == '+' || *s == '.' || dmm_text_is_blank(*s)))
            return 0;
    return 1;
}

/* Live state of a .rep id in the map (key id + 1). */
enum { REP_LIVE = 1, REP_DEAD = 2 };

int dmm_read_rep(const char *name, const uint8_t *buf, size_t len, dmm_trace_t *t, dmm_err_t *err)
{
    dmm_text_lines_t L;
    dmm_text_init(&L, name, buf, len, err);
    dmm_u64map_t ids = DMM_U64MAP_INIT;
    int in_header = 1, rc = 0;
    char q[DMM_TEXT_QUOTE];

    t->format = DMM_FMT_REP;
    t->flags |= DMM_TRC_F_NOTIME;
    while (rc == 0 && dmm_text_next_line(&L)) {
        if (rep_header_line(L.s, L.e)) {
            if (!in_header)
                rc = dmm_text_err(&L, "a header line of numbers after the first operation");
            continue;
        }
        in_header = 0;
        dmm_text_tok_t tk[3];
        size_t n = dmm_text_split(L.s, L.e, tk, 3);
        char op = tk[0].n == 1 ? (char)tk[0].p[0] : 0;
        if (op != 'a' && op != 'r' && op != 'f') {
            rc = dmm_text_err(&L, "unknown operation %s (expected a, r or f)", dmm_text_quote(tk[0], q));
            break;
        }
        size_t want = op == 'f' ? 2 : 3;
        if (n != want) {
            rc = n < want ? dmm_text_err(&L, "'%c' needs %s", op, op == 'f' ? "an id" : "an id and a size")
                          : dmm_text_err(&L, "too many fields after '%c'", op);
            break;
        }
        uint64_t id, size = 0;
        if (op == 'f' && dmm_text_tok_is(tk[1], "-1")) {   /* free(NULL) */
            rc = dmm_text_push_free(&L, t, 0, 0, 0);
            continue;
        }
        if (tk[1].p[0] == '-') {
            rc = dmm_text_err(&L, "negative id %s", dmm_text_quote(tk[1], q));
            break;
        }
        if (dmm_text_num(&L, tk[1], DMM_TEXT_DEC, DMM_TEXT_MAX_ID, "id", &id) != 0 ||
            (op != 'f' && dmm_text_num(&L, tk[2], DMM_TEXT_DEC, DMM_TEXT_MAX_SIZE, "size", &size) != 0)) {
            rc = -1;
            break;
        }
        uint64_t addr = DMM_PSEUDO_ADDR(id);
        uint64_t *st = dmm_u64map_get(&ids, id + 1);
        if (op == 'a') {
            rc = dmm_text_push_alloc(&L, t, DMM_TRC_MALLOC, 0, 0, addr, size, 0);
        } else if (op == 'r') {
            /* r of an id that is not live acts as malloc (realloc(NULL)) */
            rc = dmm_text_push_realloc(&L, t, 0, 0, st && *st == REP_LIVE ? addr : 0, addr, size);
        } else {
            rc = dmm_text_push_free(&L, t, 0, 0, addr);
            if (st)
                *st = REP_DEAD;
            continue;
        }
        if (rc == 0 && dmm_u64map_put(&ids, id + 1, REP_LIVE) != 0)
            rc = dmm_text_err(&L, "out of memory");
    }
    dmm_u64map_free(&ids);
    return rc;
}

/* ---- writer ---- */

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

int dmm_write_rep(const dmm_trace_t *t, FILE *out, dmm_err_t *err)
{
    dmm_opstream_t s;
    if (dmm_opstream_build(t, &s, err) != 0)
        return -1;
    int rc = dmm_write_rep_ops(dmm_text_trace_name(t), &s, out, err);
    dmm_opstream_free(&s);
    return rc;
}

int dmm_write_rep_ops(const char *name, const dmm_opstream_t *sp, FILE *out, dmm_err_t *err)
{
    const dmm_opstream_t s = *sp;
    uint64_t *size = calloc(s.nids ? s.nids : 1, sizeof *size);
    if (!size)
        return dmm_err_set(err, "%s: out of memory writing .rep", name);
    /* mdriver's first header line is a suggested heap size: the peak of
     * live requested bytes, rounded up to whole 4 KiB pages. */
    uint64_t live = 0, peak = 0;
    for (size_t i = 0; i < s.nops; i++) {
        const dmm_op_t *o = &s.ops[i];
        if (o->kind != DMM_OP_ALLOC)
            live -= size[o->id];
        if (o->kind != DMM_OP_FREE)
            live = sat_add(live, size[o->id] = o->size);
        else
            size[o->id] = 0;
        if (live > peak)
            peak = live;
    }
    peak = peak > UINT64_MAX - 4095 ? UINT64_MAX & ~4095ull : (peak + 4095) & ~4095ull;
    fprintf(out, "%" PRIu64 "\n%" PRIu32 "\n%zu\n1\n", peak, s.nids, s.nops);
    for (size_t i = 0; i < s.nops; i++) {
        const dmm_op_t *o = &s.ops[i];
        if (o->kind == DMM_OP_FREE)
            fprintf(out, "f %" PRIu32 "\n", o->id);
        else
            fprintf(out, "%c %" PRIu32 " %" PRIu64 "\n", o->kind == DMM_OP_ALLOC ? 'a' : 'r',
                    o->id, o->size);
    }
    free(size);
    if (fflush(out) != 0 || ferror(out))
        return dmm_err_set(err, "%s: write error: %s", name, strerror(errno ? errno : EIO));
    return 0;
}
