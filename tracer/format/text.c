/* text.c - what the readers and writers of the four text formats share
 * (see text.h). */
#include "tracer/format/text.h"
#include "tracer/base/hash.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- line scanner and tokens ---- */

int dmm_text_is_blank(uint8_t c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

int dmm_text_next_line(dmm_text_lines_t *L)
{
    while (L->pos < L->len) {
        const uint8_t *s = L->buf + L->pos;
        const uint8_t *nl = memchr(s, '\n', L->len - L->pos);
        const uint8_t *e = nl ? nl : L->buf + L->len;
        L->pos = (size_t)(e - L->buf) + (nl != NULL);
        L->lineno++;
        while (s < e && dmm_text_is_blank(*s))
            s++;
        while (e > s && dmm_text_is_blank(e[-1]))
            e--;
        if (s < e && *s != '#') {
            L->s = s;
            L->e = e;
            return 1;
        }
    }
    return 0;
}

size_t dmm_text_split(const uint8_t *s, const uint8_t *e, dmm_text_tok_t *tok, size_t max)
{
    size_t n = 0;
    for (;;) {
        while (s < e && dmm_text_is_blank(*s))
            s++;
        if (s == e)
            return n;
        if (n == max)
            return max + 1;
        tok[n].p = s;
        while (s < e && !dmm_text_is_blank(*s))
            s++;
        tok[n].n = (size_t)(s - tok[n].p);
        n++;
    }
}

int dmm_text_tok_is(dmm_text_tok_t t, const char *word)
{
    size_t n = strlen(word);
    return t.n == n && memcmp(t.p, word, n) == 0;
}

const char *dmm_text_quote(dmm_text_tok_t t, char *buf)
{
    size_t o = 0;
    buf[o++] = '\'';
    for (size_t i = 0; i < t.n; i++) {
        if (i == 40) {
            memcpy(buf + o, "...", 3);
            o += 3;
            break;
        }
        uint8_t c = t.p[i];
        if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
            buf[o++] = (char)c;
        } else {
            static const char hex[] = "0123456789abcdef";
            buf[o++] = '\\';
            buf[o++] = 'x';
            buf[o++] = hex[c >> 4];
            buf[o++] = hex[c & 15];
        }
    }
    buf[o++] = '\'';
    buf[o] = 0;
    return buf;
}

int dmm_text_err(dmm_text_lines_t *L, const char *fmt, ...)
{
    char fault[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fault, sizeof fault, fmt, ap);
    va_end(ap);
    return dmm_err_set(L->err, "%s: line %" PRIu64 ": %s", L->name, L->lineno, fault);
}

/* ---- numbers ---- */

enum { NUM_OK, NUM_BAD, NUM_RANGE };

static int parse_uint(const uint8_t *p, size_t n, unsigned base, uint64_t max, uint64_t *out)
{
    if (n == 0)
        return NUM_BAD;
    uint64_t v = 0;
    int range = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned c = p[i], d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (base == 16 && (c | 0x20) >= 'a' && (c | 0x20) <= 'f')
            d = (c | 0x20) - 'a' + 10;
        else
            return NUM_BAD;
        /* keep scanning after an overflow: a bad byte later on is the
         * better message */
        if (!range && v > (max - d) / base)
            range = 1;
        else if (!range)
            v = v * base + d;
    }
    if (range)
        return NUM_RANGE;
    *out = v;
    return NUM_OK;
}

int dmm_text_num(dmm_text_lines_t *L, dmm_text_tok_t t, int mode, uint64_t max, const char *what, uint64_t *out)
{
    char q[DMM_TEXT_QUOTE];
    int rc;
    if (mode == DMM_TEXT_PTR && dmm_text_tok_is(t, "(nil)")) {
        *out = 0;
        return 0;
    }
    if (mode != DMM_TEXT_DEC && t.n >= 2 && t.p[0] == '0' && (t.p[1] | 0x20) == 'x')
        rc = parse_uint(t.p + 2, t.n - 2, 16, max, out);
    else
        rc = parse_uint(t.p, t.n, 10, max, out);
    if (rc == NUM_OK)
        return 0;
    if (rc == NUM_RANGE)
        return dmm_text_err(L, "%s %s is too large (at most %" PRIu64 ")", what, dmm_text_quote(t, q), max);
    return dmm_text_err(L, "%s %s is not a number", what, dmm_text_quote(t, q));
}

/* ---- records ---- */

dmm_rec_t *dmm_text_push(dmm_text_lines_t *L, dmm_trace_t *t, unsigned op, uint32_t tid, uint64_t time)
{
    dmm_rec_t *r = dmm_trace_push(t);
    if (!r) {
        dmm_text_err(L, "out of memory after %zu records", t->nrecs);
        return NULL;
    }
    r->op = (uint8_t)op;
    r->tid = tid;
    r->time = time;
    return r;
}

int dmm_text_push_realloc(dmm_text_lines_t *L, dmm_trace_t *t, uint32_t tid, uint64_t time,
                        uint64_t old, uint64_t new, uint64_t size)
{
    dmm_rec_t *r;
    if (old && new && old != new) {
        if (!(r = dmm_text_push(L, t, DMM_TRC_RELEASE, tid, time)))
            return -1;
        r->ptr_in = old;
    }
    if (!(r = dmm_text_push(L, t, DMM_TRC_REALLOC, tid, time)))
        return -1;
    r->ptr_in = old;
    r->ptr_out = new;
    r->size = size;
    if (!new && size)
        r->flags |= DMM_TRC_RF_FAILED;
    return 0;
}

int dmm_text_push_alloc(dmm_text_lines_t *L, dmm_trace_t *t, unsigned op, uint32_t tid, uint64_t time,
                      uint64_t ptr, uint64_t size, uint64_t arg)
{
    dmm_rec_t *r = dmm_text_push(L, t, op, tid, time);
    if (!r)
        return -1;
    r->ptr_out = ptr;
    r->size = size;
    r->arg = arg;
    if (!ptr)
        r->flags |= DMM_TRC_RF_FAILED;
    return 0;
}

int dmm_text_push_free(dmm_text_lines_t *L, dmm_trace_t *t, uint32_t tid, uint64_t time, uint64_t ptr)
{
    dmm_rec_t *r = dmm_text_push(L, t, DMM_TRC_FREE, tid, time);
    if (!r)
        return -1;
    r->ptr_in = ptr;
    return 0;
}

void dmm_text_init(dmm_text_lines_t *L, const char *name, const uint8_t *buf, size_t len, dmm_err_t *err)
{
    memset(L, 0, sizeof *L);
    L->name = name;
    L->buf = buf;
    L->len = len;
    L->err = err;
}

/* ---- writers ---- */

const char *dmm_text_trace_name(const dmm_trace_t *t)
{
    return t->path ? t->path : "trace";
}

int dmm_text_finish(const dmm_trace_t *t, FILE *out, dmm_err_t *err)
{
    if (fflush(out) != 0 || ferror(out))
        return dmm_err_set(err, "%s: write error: %s", dmm_text_trace_name(t),
                           strerror(errno ? errno : EIO));
    return 0;
}

int dmm_text_is_realloc(unsigned op)
{
    return op == DMM_TRC_REALLOC || op == DMM_TRC_REALLOCARRAY;
}

uint64_t dmm_text_realloc_old(dmm_u64map_t *pending, const dmm_rec_t *r)
{
    uint64_t *p = r->ptr_in ? dmm_u64map_get(pending, (uint64_t)r->tid + 1) : NULL;
    uint64_t old = r->ptr_in;
    if (p && *p) {
        old = *p;
        *p = 0;
    }
    return old;
}
