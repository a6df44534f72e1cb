/* textfmt.c - readers and writers of the text trace formats: CS:APP mdriver
 * .rep, glibc mtrace() output, AOSP memory_replay text and wee_alloc lists
 * (declarations in trace.h and textfmt.h).
 *
 * The readers share one line scanner that works on raw bytes: no NUL
 * terminator is assumed and any byte may appear, blank lines and '#'
 * comments are skipped, "\r\n" ends a line like "\n", and lines are numbered
 * from 1 for messages.  Numbers are parsed by hand with overflow checks, so a
 * 100-digit field is an error rather than a silent wrap-around.  Every reader
 * makes one pass and keeps O(records) state, so no input makes it slow or
 * makes it allocate more than a constant times the input size.
 *
 * How records are shaped for opstream.c: a realloc that moved its block is a
 * DMM_TRC_RELEASE of the old address followed by a DMM_TRC_REALLOC; an
 * in-place realloc is a REALLOC alone with ptr_in == ptr_out; realloc(NULL)
 * has ptr_in 0; realloc(p, 0) that freed p has ptr_out 0.  Formats without
 * addresses (.rep, wee) name block k by DMM_PSEUDO_ADDR(k).
 */
#include "tracer/format/textfmt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/format/opstream.h"

#define MAX_SIZE  ((uint64_t)INT64_MAX)        /* sizes must fit in 63 bits */
#define MAX_ID    ((uint64_t)UINT32_MAX - 1)   /* op-stream ids are uint32 */
#define NO_TIME   UINT64_MAX                   /* while reading: line had no time */

/* ------------------------------------------------------------------ */
/* Line scanner and tokens                                             */

typedef struct tok {
    const uint8_t *p;
    size_t         n;
} tok_t;

typedef struct lines {
    const char    *name;
    const uint8_t *buf;
    size_t         len, pos;
    uint64_t       lineno;      /* of the current line, from 1 */
    const uint8_t *s, *e;       /* the current line, blanks trimmed */
    dmm_err_t     *err;
} lines_t;

static int is_blank(uint8_t c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* Moves to the next line that is neither blank nor a '#' comment; 0 at the
 * end of the input. */
static int next_line(lines_t *L)
{
    while (L->pos < L->len) {
        const uint8_t *s = L->buf + L->pos;
        const uint8_t *nl = memchr(s, '\n', L->len - L->pos);
        const uint8_t *e = nl ? nl : L->buf + L->len;
        L->pos = (size_t)(e - L->buf) + (nl != NULL);
        L->lineno++;
        while (s < e && is_blank(*s))
            s++;
        while (e > s && is_blank(e[-1]))
            e--;
        if (s < e && *s != '#') {
            L->s = s;
            L->e = e;
            return 1;
        }
    }
    return 0;
}

/* Splits [s, e) at blanks into at most max tokens.  Returns the count, or
 * max + 1 when there are more (the caller reports too many fields without
 * us walking an enormous line into an unbounded array). */
static size_t split(const uint8_t *s, const uint8_t *e, tok_t *tok, size_t max)
{
    size_t n = 0;
    for (;;) {
        while (s < e && is_blank(*s))
            s++;
        if (s == e)
            return n;
        if (n == max)
            return max + 1;
        tok[n].p = s;
        while (s < e && !is_blank(*s))
            s++;
        tok[n].n = (size_t)(s - tok[n].p);
        n++;
    }
}

static int tok_is(tok_t t, const char *word)
{
    size_t n = strlen(word);
    return t.n == n && memcmp(t.p, word, n) == 0;
}

/* A token as a message may show it: quoted, cut at 40 bytes, any byte that
 * is not printable ASCII escaped, so that garbage input gives a readable
 * one-line error. */
#define QUOTE_BUF 176
static const char *quote(tok_t t, char *buf)
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

static int line_err(lines_t *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int line_err(lines_t *L, const char *fmt, ...)
{
    char fault[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fault, sizeof fault, fmt, ap);
    va_end(ap);
    return dmm_err_set(L->err, "%s: line %" PRIu64 ": %s", L->name, L->lineno, fault);
}

/* ------------------------------------------------------------------ */
/* Numbers                                                             */

enum { NUM_OK, NUM_BAD, NUM_RANGE };
enum { NUM_DEC, NUM_AUTO, NUM_PTR };   /* decimal; 0x-hex or decimal; as AUTO or "(nil)" */

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

/* Parses t as a number no larger than max; on failure the error names the
 * line, what the field is and the token. */
static int get_num(lines_t *L, tok_t t, int mode, uint64_t max, const char *what, uint64_t *out)
{
    char q[QUOTE_BUF];
    int rc;
    if (mode == NUM_PTR && tok_is(t, "(nil)")) {
        *out = 0;
        return 0;
    }
    if (mode != NUM_DEC && t.n >= 2 && t.p[0] == '0' && (t.p[1] | 0x20) == 'x')
        rc = parse_uint(t.p + 2, t.n - 2, 16, max, out);
    else
        rc = parse_uint(t.p, t.n, 10, max, out);
    if (rc == NUM_OK)
        return 0;
    if (rc == NUM_RANGE)
        return line_err(L, "%s %s is too large (at most %" PRIu64 ")", what, quote(t, q), max);
    return line_err(L, "%s %s is not a number", what, quote(t, q));
}

/* ------------------------------------------------------------------ */
/* A small map from nonzero uint64 keys to uint64 values (0 = absent).  No
 * deletion: callers store a state in the value instead, so the table only
 * grows with distinct keys, which are bounded by the input's lines.  */

typedef struct kv {
    uint64_t k, v;
} kv_t;

typedef struct u64map {
    kv_t  *s;
    size_t cap, used;
} u64map_t;

static size_t mix(uint64_t k)
{
    k ^= k >> 31;
    k *= 0x9e3779b97f4a7c15ull;
    k ^= k >> 29;
    return (size_t)k;
}

static kv_t *map_find(const u64map_t *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    for (size_t j = mix(key) & (m->cap - 1);; j = (j + 1) & (m->cap - 1)) {
        if (m->s[j].k == key)
            return &m->s[j];
        if (m->s[j].k == 0)
            return NULL;
    }
}

static int map_set(u64map_t *m, uint64_t key, uint64_t val)
{
    kv_t *e = map_find(m, key);
    if (e) {
        e->v = val;
        return 0;
    }
    if ((m->used + 1) * 4 >= m->cap * 3) {
        size_t ncap = m->cap ? m->cap * 2 : 256;
        kv_t *ns = calloc(ncap, sizeof *ns);
        if (!ns)
            return -1;
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->s[i].k)
                continue;
            size_t j = mix(m->s[i].k) & (ncap - 1);
            while (ns[j].k)
                j = (j + 1) & (ncap - 1);
            ns[j] = m->s[i];
        }
        free(m->s);
        m->s = ns;
        m->cap = ncap;
    }
    size_t j = mix(key) & (m->cap - 1);
    while (m->s[j].k)
        j = (j + 1) & (m->cap - 1);
    m->s[j].k = key;
    m->s[j].v = val;
    m->used++;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Record helpers                                                      */

static dmm_rec_t *push(lines_t *L, dmm_trace_t *t, unsigned op, uint32_t tid, uint64_t time)
{
    dmm_rec_t *r = dmm_trace_push(t);
    if (!r) {
        line_err(L, "out of memory after %zu records", t->nrecs);
        return NULL;
    }
    r->op = (uint8_t)op;
    r->tid = tid;
    r->time = time;
    return r;
}

/* A realloc seen as old -> new: moved blocks get a RELEASE first (see the
 * file comment); new == 0 with size > 0 is a failed call, with size 0 it
 * freed old. */
static int push_realloc(lines_t *L, dmm_trace_t *t, uint32_t tid, uint64_t time,
                        uint64_t old, uint64_t new, uint64_t size)
{
    dmm_rec_t *r;
    if (old && new && old != new) {
        if (!(r = push(L, t, DMM_TRC_RELEASE, tid, time)))
            return -1;
        r->ptr_in = old;
    }
    if (!(r = push(L, t, DMM_TRC_REALLOC, tid, time)))
        return -1;
    r->ptr_in = old;
    r->ptr_out = new;
    r->size = size;
    if (!new && size)
        r->flags |= DMM_TRC_RF_FAILED;
    return 0;
}

static int push_alloc(lines_t *L, dmm_trace_t *t, unsigned op, uint32_t tid, uint64_t time,
                      uint64_t ptr, uint64_t size, uint64_t arg)
{
    dmm_rec_t *r = push(L, t, op, tid, time);
    if (!r)
        return -1;
    r->ptr_out = ptr;
    r->size = size;
    r->arg = arg;
    if (!ptr)
        r->flags |= DMM_TRC_RF_FAILED;
    return 0;
}

static int push_free(lines_t *L, dmm_trace_t *t, uint32_t tid, uint64_t time, uint64_t ptr)
{
    dmm_rec_t *r = push(L, t, DMM_TRC_FREE, tid, time);
    if (!r)
        return -1;
    r->ptr_in = ptr;
    return 0;
}

static void lines_init(lines_t *L, const char *name, const uint8_t *buf, size_t len, dmm_err_t *err)
{
    memset(L, 0, sizeof *L);
    L->name = name;
    L->buf = buf;
    L->len = len;
    L->err = err;
}

/* ------------------------------------------------------------------ */
/* mdriver .rep                                                        */

/* Header lines are lines of numbers before the first operation.  mdriver
 * has four (heap size, ids, ops, weight), but variants have more, fewer or
 * none, and some write decimals, so anything numeric-looking is accepted
 * and ignored: the operations alone define the trace. */
static int rep_header_line(const uint8_t *s, const uint8_t *e)
{
    if (!((*s >= '0' && *s <= '9') || *s == '-' || *s == '+'))
        return 0;
    for (; s < e; s++)
        if (!((*s >= '0' && *s <= '9') || *s == '-' || *s == '+' || *s == '.' || is_blank(*s)))
            return 0;
    return 1;
}

/* Live state of a .rep id in the map (key id + 1). */
enum { REP_LIVE = 1, REP_DEAD = 2 };

int dmm_read_rep(const char *name, const uint8_t *buf, size_t len, dmm_trace_t *t, dmm_err_t *err)
{
    lines_t L;
    lines_init(&L, name, buf, len, err);
    u64map_t ids = { 0 };
    int in_header = 1, rc = 0;
    char q[QUOTE_BUF];

    t->format = DMM_FMT_REP;
    t->flags |= DMM_TRC_F_NOTIME;
    while (rc == 0 && next_line(&L)) {
        if (rep_header_line(L.s, L.e)) {
            if (!in_header)
                rc = line_err(&L, "a header line of numbers after the first operation");
            continue;
        }
        in_header = 0;
        tok_t tk[3];
        size_t n = split(L.s, L.e, tk, 3);
        char op = tk[0].n == 1 ? (char)tk[0].p[0] : 0;
        if (op != 'a' && op != 'r' && op != 'f') {
            rc = line_err(&L, "unknown operation %s (expected a, r or f)", quote(tk[0], q));
            break;
        }
        size_t want = op == 'f' ? 2 : 3;
        if (n != want) {
            rc = n < want ? line_err(&L, "'%c' needs %s", op, op == 'f' ? "an id" : "an id and a size")
                          : line_err(&L, "too many fields after '%c'", op);
            break;
        }
        uint64_t id, size = 0;
        if (op == 'f' && tok_is(tk[1], "-1")) {   /* free(NULL) */
            rc = push_free(&L, t, 0, 0, 0);
            continue;
        }
        if (tk[1].p[0] == '-') {
            rc = line_err(&L, "negative id %s", quote(tk[1], q));
            break;
        }
        if (get_num(&L, tk[1], NUM_DEC, MAX_ID, "id", &id) != 0 ||
            (op != 'f' && get_num(&L, tk[2], NUM_DEC, MAX_SIZE, "size", &size) != 0)) {
            rc = -1;
            break;
        }
        uint64_t addr = DMM_PSEUDO_ADDR(id);
        kv_t *st = map_find(&ids, id + 1);
        if (op == 'a') {
            rc = push_alloc(&L, t, DMM_TRC_MALLOC, 0, 0, addr, size, 0);
        } else if (op == 'r') {
            /* r of an id that is not live acts as malloc (realloc(NULL)) */
            rc = push_realloc(&L, t, 0, 0, st && st->v == REP_LIVE ? addr : 0, addr, size);
        } else {
            rc = push_free(&L, t, 0, 0, addr);
            if (st)
                st->v = REP_DEAD;
            continue;
        }
        if (rc == 0 && map_set(&ids, id + 1, REP_LIVE) != 0)
            rc = line_err(&L, "out of memory");
    }
    free(ids.s);
    return rc;
}

/* ------------------------------------------------------------------ */
/* glibc mtrace                                                        */

static int mtrace_op(tok_t t)
{
    return t.n == 1 && strchr("+-<>!", t.p[0]) ? t.p[0] : 0;
}

int dmm_read_mtrace(const char *name, const uint8_t *buf, size_t len, dmm_trace_t *t, dmm_err_t *err)
{
    lines_t L;
    lines_init(&L, name, buf, len, err);
    int rc = 0;
    int have_lt = 0;            /* a '<' waits for its '>' */
    uint64_t lt_ptr = 0, lt_line = 0;
    char q[QUOTE_BUF];

    t->format = DMM_FMT_MTRACE;
    t->flags |= DMM_TRC_F_NOTIME;
    while (rc == 0 && next_line(&L)) {
        if (L.s[0] == '=')      /* "= Start", "= End" */
            continue;
        tok_t first;
        split(L.s, L.e, &first, 1);
        const uint8_t *opp;
        if (tok_is(first, "@")) {
            /* "@ caller op args": the caller may hold anything, blanks
             * included, but the arguments after the op are numbers, so the
             * op is the last token that is one of the op characters alone. */
            opp = NULL;
            for (const uint8_t *p = first.p + 1; p < L.e;) {
                while (p < L.e && is_blank(*p))
                    p++;
                const uint8_t *b = p;
                while (p < L.e && !is_blank(*p))
                    p++;
                if (mtrace_op((tok_t){ b, (size_t)(p - b) }))
                    opp = b;
            }
            if (!opp) {
                rc = line_err(&L, "no operation (+ - < > !) after the caller");
                break;
            }
        } else if (mtrace_op(first)) {
            opp = first.p;
        } else {
            rc = line_err(&L, "not an mtrace line: %s", quote(first, q));
            break;
        }
        int op = opp[0];
        tok_t a[2];
        size_t n = split(opp + 1, L.e, a, 2);
        size_t want = (op == '-' || op == '<') ? 1 : 2;
        if (n != want) {
            rc = n < want ? line_err(&L, "'%c' needs %s", op, want == 1 ? "an address" : "an address and a size")
                          : line_err(&L, "too many fields after '%c'", op);
            break;
        }
        if (have_lt && op != '>') {
            L.lineno = lt_line;
            rc = line_err(&L, "'<' (realloc) not followed by its '>'");
            break;
        }
        uint64_t ptr, size = 0;
        if (get_num(&L, a[0], NUM_PTR, UINT64_MAX, "address", &ptr) != 0 ||
            (want == 2 && get_num(&L, a[1], NUM_AUTO, MAX_SIZE, "size", &size) != 0)) {
            rc = -1;
            break;
        }
        dmm_rec_t *r;
        switch (op) {
        case '+':
            rc = push_alloc(&L, t, DMM_TRC_MALLOC, 0, 0, ptr, size, 0);
            break;
        case '-':
            rc = push_free(&L, t, 0, 0, ptr);
            break;
        case '<':
            have_lt = 1;
            lt_ptr = ptr;
            lt_line = L.lineno;
            break;
        case '>':
            if (!have_lt) {
                rc = line_err(&L, "'>' (realloc) without a '<' before it");
                break;
            }
            have_lt = 0;
            rc = push_realloc(&L, t, 0, 0, lt_ptr, ptr, size);
            break;
        case '!':               /* realloc(ptr, size) failed */
            if (!(r = push(&L, t, DMM_TRC_REALLOC, 0, 0))) {
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
        rc = line_err(&L, "'<' (realloc) not followed by its '>'");
    }
    return rc;
}

/* ------------------------------------------------------------------ */
/* Android memory_replay                                               */

int dmm_read_android(const char *name, const uint8_t *buf, size_t len, dmm_trace_t *t, dmm_err_t *err)
{
    lines_t L;
    lines_init(&L, name, buf, len, err);
    int rc = 0;
    uint64_t min_time = NO_TIME;
    char q[QUOTE_BUF];

    t->format = DMM_FMT_ANDROID;
    while (rc == 0 && next_line(&L)) {
        tok_t tk[7];
        size_t n = split(L.s, L.e, tk, 7);
        if (n > 7) {
            rc = line_err(&L, "too many fields");
            break;
        }
        uint64_t tid;
        if (tk[0].n < 2 || tk[0].p[tk[0].n - 1] != ':') {
            rc = line_err(&L, "expected '<tid>:' at the start, got %s", quote(tk[0], q));
            break;
        }
        if (get_num(&L, (tok_t){ tk[0].p, tk[0].n - 1 }, NUM_DEC, UINT32_MAX, "thread id", &tid) != 0) {
            rc = -1;
            break;
        }
        if (n < 2) {
            rc = line_err(&L, "no operation after the thread id");
            break;
        }
        /* what each field is, for messages; pointers are hex */
        static const struct { const char *word; unsigned op; size_t nargs; const char *what[3]; }
        ops[] = {
            { "malloc", DMM_TRC_MALLOC, 2, { "pointer", "size" } },
            { "calloc", DMM_TRC_CALLOC, 3, { "pointer", "element count", "element size" } },
            { "memalign", DMM_TRC_MEMALIGN, 3, { "pointer", "alignment", "size" } },
            { "realloc", DMM_TRC_REALLOC, 3, { "new pointer", "old pointer", "size" } },
            { "free", DMM_TRC_FREE, 1, { "pointer" } },
            { "thread_done", DMM_TRC_THREAD_EXIT, 1, { "pointer" } },
        };
        size_t k = 0;
        while (k < sizeof ops / sizeof ops[0] && !tok_is(tk[1], ops[k].word))
            k++;
        if (k == sizeof ops / sizeof ops[0]) {
            rc = line_err(&L, "unknown operation %s", quote(tk[1], q));
            break;
        }
        unsigned op = ops[k].op;
        size_t nargs = ops[k].nargs, have = n - 2;
        /* Newer recorders append "start_ns end_ns"; thread_done may carry
         * only one of them. */
        if (have < nargs) {
            rc = line_err(&L, "%s needs %zu fields, got %zu", ops[k].word, nargs, have);
            break;
        }
        size_t extra = have - nargs;
        if (extra == 1 && op != DMM_TRC_THREAD_EXIT) {
            rc = line_err(&L, "one field too many after %s (timestamps come in pairs)", ops[k].word);
            break;
        }
        uint64_t v[3] = { 0, 0, 0 }, time = NO_TIME, end;
        for (size_t i = 0; i < nargs && rc == 0; i++) {
            int is_ptr = i == 0 || (op == DMM_TRC_REALLOC && i == 1);
            rc = get_num(&L, tk[2 + i], is_ptr ? NUM_PTR : NUM_AUTO,
                         is_ptr ? UINT64_MAX : MAX_SIZE, ops[k].what[i], &v[i]);
        }
        if (rc == 0 && extra >= 1)
            rc = get_num(&L, tk[2 + nargs], NUM_DEC, MAX_SIZE, "start time", &time);
        if (rc == 0 && extra == 2)
            rc = get_num(&L, tk[3 + nargs], NUM_DEC, MAX_SIZE, "end time", &end);
        if (rc != 0)
            break;
        if (time != NO_TIME && time < min_time)
            min_time = time;
        switch (op) {
        case DMM_TRC_MALLOC:
            rc = push_alloc(&L, t, op, (uint32_t)tid, time, v[0], v[1], 0);
            break;
        case DMM_TRC_CALLOC: {
            uint64_t size = 0;
            if (v[1] && v[2] > MAX_SIZE / v[1]) {
                if (v[0]) {
                    rc = line_err(&L, "calloc of %" PRIu64 " x %" PRIu64 " bytes overflows "
                                  "but returned a block", v[1], v[2]);
                    break;
                }
            } else {
                size = v[1] * v[2];
            }
            rc = push_alloc(&L, t, op, (uint32_t)tid, time, v[0], size, v[1]);
            break;
        }
        case DMM_TRC_MEMALIGN:
            rc = push_alloc(&L, t, op, (uint32_t)tid, time, v[0], v[2], v[1]);
            break;
        case DMM_TRC_REALLOC:
            rc = push_realloc(&L, t, (uint32_t)tid, time, v[1], v[0], v[2]);
            break;
        case DMM_TRC_FREE:
            rc = push_free(&L, t, (uint32_t)tid, time, v[0]);
            break;
        default:
            rc = push(&L, t, DMM_TRC_THREAD_EXIT, (uint32_t)tid, time) ? 0 : -1;
            break;
        }
    }
    /* Times become "since the trace started": the earliest start seen. */
    for (size_t i = 0; i < t->nrecs; i++)
        t->recs[i].time = t->recs[i].time == NO_TIME ? 0 : t->recs[i].time - min_time;
    if (min_time == NO_TIME)
        t->flags |= DMM_TRC_F_NOTIME;
    return rc;
}

/* ------------------------------------------------------------------ */
/* wee_alloc                                                           */

static const uint8_t *skip_blanks(const uint8_t *p, const uint8_t *e)
{
    while (p < e && is_blank(*p))
        p++;
    return p;
}

int dmm_read_wee(const char *name, const uint8_t *buf, size_t len, dmm_trace_t *t, dmm_err_t *err)
{
    lines_t L;
    lines_init(&L, name, buf, len, err);
    int rc = 0;
    uint64_t nallocs = 0;
    char q[QUOTE_BUF];

    t->format = DMM_FMT_WEE;
    t->flags |= DMM_TRC_F_NOTIME;
    while (rc == 0 && next_line(&L)) {
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
                rc = line_err(&L, "expected Alloc(size) or Free(index), got %s",
                              quote((tok_t){ p, (size_t)(e - p) }, q));
                break;
            }
            p = skip_blanks(p, e);
            const uint8_t *b = p < e && *p == '(' ? skip_blanks(p + 1, e) : NULL;
            const uint8_t *c = b;
            while (c && c < e && *c != ')' && !is_blank(*c))
                c++;
            const uint8_t *close = c ? skip_blanks(c, e) : NULL;
            if (!b || close == e || *close != ')') {
                rc = line_err(&L, "%s: expected '(number)'", alloc ? "Alloc" : "Free");
                break;
            }
            uint64_t v;
            if (get_num(&L, (tok_t){ b, (size_t)(c - b) }, NUM_DEC, alloc ? MAX_SIZE : UINT64_MAX,
                        alloc ? "size" : "index", &v) != 0) {
                rc = -1;
                break;
            }
            p = skip_blanks(close + 1, e);
            int comma = p < e && *p == ',';
            if (comma)
                p = skip_blanks(p + 1, e);
            if (p < e && !comma) {
                rc = line_err(&L, "expected ',' between operations, got %s",
                              quote((tok_t){ p, (size_t)(e - p) }, q));
                break;
            }
            if (alloc) {
                rc = push_alloc(&L, t, DMM_TRC_MALLOC, 0, 0, DMM_PSEUDO_ADDR(nallocs), v, 0);
                nallocs++;
            } else if (v >= nallocs) {
                rc = line_err(&L, "Free(%" PRIu64 ") but only %" PRIu64 " blocks were allocated so far",
                              v, nallocs);
            } else {
                /* a second free of the same index is kept: the op stream
                 * counts it as a free of an unknown block */
                rc = push_free(&L, t, 0, 0, DMM_PSEUDO_ADDR(v));
            }
        }
    }
    return rc;
}

/* ------------------------------------------------------------------ */
/* Writers                                                             */

static const char *trace_name(const dmm_trace_t *t)
{
    return t->path ? t->path : "trace";
}

static int finish_output(const dmm_trace_t *t, FILE *out, dmm_err_t *err)
{
    if (fflush(out) != 0 || ferror(out))
        return dmm_err_set(err, "%s: write error: %s", trace_name(t), strerror(errno ? errno : EIO));
    return 0;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

int dmm_write_rep(const dmm_trace_t *t, FILE *out, dmm_err_t *err)
{
    dmm_opstream_t s;
    if (dmm_opstream_build(t, &s, err) != 0)
        return -1;
    uint64_t *size = calloc(s.nids ? s.nids : 1, sizeof *size);
    if (!size) {
        dmm_opstream_free(&s);
        return dmm_err_set(err, "%s: out of memory writing .rep", trace_name(t));
    }
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
    dmm_opstream_free(&s);
    return finish_output(t, out, err);
}

int dmm_write_wee(const dmm_trace_t *t, FILE *out, dmm_err_t *err)
{
    dmm_opstream_t s;
    if (dmm_opstream_build(t, &s, err) != 0)
        return -1;
    /* each block's index is the number of its Alloc line; a realloc is a
     * Free of the old index and a new Alloc, as wee_alloc's tracer did */
    uint64_t *line = calloc(s.nids ? s.nids : 1, sizeof *line);
    if (!line) {
        dmm_opstream_free(&s);
        return dmm_err_set(err, "%s: out of memory writing wee", trace_name(t));
    }
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
    dmm_opstream_free(&s);
    return finish_output(t, out, err);
}

static int is_realloc(unsigned op)
{
    return op == DMM_TRC_REALLOC || op == DMM_TRC_REALLOCARRAY;
}

/* The text formats print a realloc as one event, so the RELEASE before a
 * moved realloc is held per thread and printed with its REALLOC; this
 * returns the old address a REALLOC record stands for, as opstream.c reads
 * it.  pending holds tid + 1 -> released address. */
static uint64_t realloc_old(u64map_t *pending, const dmm_rec_t *r)
{
    kv_t *p = r->ptr_in ? map_find(pending, (uint64_t)r->tid + 1) : NULL;
    uint64_t old = r->ptr_in;
    if (p && p->v) {
        old = p->v;
        p->v = 0;
    }
    return old;
}

int dmm_write_mtrace(const dmm_trace_t *t, FILE *out, dmm_err_t *err)
{
    u64map_t pending = { 0 };
    fputs("= Start\n", out);
    for (size_t i = 0; i < t->nrecs; i++) {
        const dmm_rec_t *r = &t->recs[i];
        int failed = (r->flags & DMM_TRC_RF_FAILED) != 0;
        uint64_t old;
        if (failed && (r->op == DMM_TRC_FREE || r->op == DMM_TRC_RELEASE))
            continue;   /* opstream.c ignores them: so does the text */
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
            if (r->ptr_in && map_set(&pending, (uint64_t)r->tid + 1, r->ptr_in) != 0) {
                free(pending.s);
                return dmm_err_set(err, "%s: out of memory writing mtrace", trace_name(t));
            }
        } else if (is_realloc(r->op)) {
            if (failed) {       /* leaves the block alone, as in opstream.c */
                if (r->ptr_in)
                    fprintf(out, "! 0x%" PRIx64 " 0x%" PRIx64 "\n", r->ptr_in, r->size);
                else
                    fprintf(out, "+ (nil) 0x%" PRIx64 "\n", r->size);
                continue;
            }
            old = realloc_old(&pending, r);
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
    }
    fputs("= End\n", out);
    free(pending.s);
    return finish_output(t, out, err);
}

int dmm_write_android(const dmm_trace_t *t, FILE *out, dmm_err_t *err)
{
    u64map_t pending = { 0 };
    int timed = !(t->flags & DMM_TRC_F_NOTIME);
    for (size_t i = 0; i < t->nrecs; i++) {
        const dmm_rec_t *r = &t->recs[i];
        int failed = (r->flags & DMM_TRC_RF_FAILED) != 0;
        uint64_t ptr = failed ? 0 : r->ptr_out, old;
        int printed = 1;
        if (failed && (r->op == DMM_TRC_FREE || r->op == DMM_TRC_RELEASE))
            continue;   /* opstream.c ignores them: so does the text */
        switch (r->op) {
        case DMM_TRC_MALLOC:
            fprintf(out, "%" PRIu32 ": malloc 0x%" PRIx64 " %" PRIu64, r->tid, ptr, r->size);
            break;
        case DMM_TRC_CALLOC: {
            uint64_t n = r->arg && r->size % r->arg == 0 ? r->arg : 1;
            fprintf(out, "%" PRIu32 ": calloc 0x%" PRIx64 " %" PRIu64 " %" PRIu64, r->tid, ptr, n,
                    r->size / n);
            break;
        }
        case DMM_TRC_MEMALIGN: case DMM_TRC_POSIX_MEMALIGN: case DMM_TRC_ALIGNED_ALLOC:
        case DMM_TRC_VALLOC: case DMM_TRC_PVALLOC:
            fprintf(out, "%" PRIu32 ": memalign 0x%" PRIx64 " %" PRIu64 " %" PRIu64, r->tid, ptr,
                    r->arg, r->size);
            break;
        case DMM_TRC_FREE:
            fprintf(out, "%" PRIu32 ": free 0x%" PRIx64, r->tid, r->ptr_in);
            break;
        case DMM_TRC_THREAD_EXIT:
            fprintf(out, "%" PRIu32 ": thread_done 0x0", r->tid);
            break;
        case DMM_TRC_RELEASE:
            printed = 0;
            if (r->ptr_in && map_set(&pending, (uint64_t)r->tid + 1, r->ptr_in) != 0) {
                free(pending.s);
                return dmm_err_set(err, "%s: out of memory writing android", trace_name(t));
            }
            break;
        case DMM_TRC_REALLOC: case DMM_TRC_REALLOCARRAY:
            if (failed) {
                /* "realloc 0x0 old size" reads back as a failed call; a
                 * failed realloc(p, 0) has no such form, and changes nothing */
                printed = r->size != 0;
                if (printed)
                    fprintf(out, "%" PRIu32 ": realloc 0x0 0x%" PRIx64 " %" PRIu64, r->tid,
                            r->ptr_in, r->size);
                break;
            }
            old = realloc_old(&pending, r);
            /* a NULL result without failure freed the block: size 0 says so */
            fprintf(out, "%" PRIu32 ": realloc 0x%" PRIx64 " 0x%" PRIx64 " %" PRIu64, r->tid,
                    r->ptr_out, old, r->ptr_out ? r->size : 0);
            break;
        default:
            printed = 0;
            break;
        }
        if (printed) {
            /* the end of the call is not recorded: both stamps are its start */
            if (timed)
                fprintf(out, " %" PRIu64 " %" PRIu64, r->time, r->time);
            fputc('\n', out);
        }
    }
    free(pending.s);
    return finish_output(t, out, err);
}
