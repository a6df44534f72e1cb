/* jsonread.c - the JSON reader (see jsonread.h): a recursive-descent
 * parser that checks the document and lists its values in document order,
 * and lookups that walk that list by key path. */
#include "tracer/base/jsonread.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Deeper documents are refused rather than risking the stack; dmm's own
 * outputs nest four levels. */
#define MAX_DEPTH 512

/* A value, or an object's key (a string).  An object's children are its
 * keys and values alternating; `end` skips a whole subtree. */
struct dmm_jsonread_node {
    int    type;
    size_t start, len;   /* the value's text; a string's with its quotes */
    size_t end;          /* the index of the node after this subtree */
    size_t count;        /* an array's elements, an object's members */
};

typedef struct parser {
    dmm_jsonread_t *d;
    const char     *s;
    size_t          len, pos;
    int             depth;
    dmm_err_t      *err;
} parser_t;

static int fail(parser_t *p, const char *what)
{
    return dmm_err_set(p->err, "JSON offset %zu: %s", p->pos, what);
}

static void skip_ws(parser_t *p)
{
    while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
                               p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
        p->pos++;
}

/* A new node at the current offset; its index, or -1 out of memory. */
static long add_node(parser_t *p, int type)
{
    dmm_jsonread_t *d = p->d;
    if (d->n == d->cap) {
        size_t nc = d->cap ? d->cap * 2 : 64;
        dmm_jsonread_node_t *n = realloc(d->node, nc * sizeof *n);
        if (!n)
            return fail(p, "out of memory");
        d->node = n;
        d->cap = nc;
    }
    d->node[d->n] = (dmm_jsonread_node_t){ .type = type, .start = p->pos };
    return (long)d->n++;
}

static void close_node(parser_t *p, long i)
{
    p->d->node[i].len = p->pos - p->d->node[i].start;
    p->d->node[i].end = p->d->n;
}

static int is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int parse_string(parser_t *p)
{
    long i = add_node(p, DMM_JSON_STRING);
    if (i < 0)
        return -1;
    p->pos++;   /* the opening quote */
    for (;;) {
        if (p->pos >= p->len)
            return fail(p, "unterminated string");
        unsigned char c = (unsigned char)p->s[p->pos];
        if (c == '"')
            break;
        if (c < 0x20)
            return fail(p, "control character in a string");
        if (c != '\\') {
            p->pos++;
            continue;
        }
        if (p->pos + 1 >= p->len)
            return fail(p, "unterminated string");
        char e = p->s[p->pos + 1];
        if (e == 'u') {
            for (int k = 2; k < 6; k++)
                if (p->pos + (size_t)k >= p->len || !is_hex(p->s[p->pos + (size_t)k]))
                    return fail(p, "\\u needs four hexadecimal digits");
            p->pos += 6;
        } else if (e && strchr("\"\\/bfnrt", e)) {
            p->pos += 2;
        } else {
            return fail(p, "unknown escape in a string");
        }
    }
    p->pos++;   /* the closing quote */
    close_node(p, i);
    return 0;
}

static int digits(parser_t *p)
{
    size_t from = p->pos;
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
        p->pos++;
    return p->pos > from ? 0 : fail(p, "a number needs a digit here");
}

static int parse_number(parser_t *p)
{
    long i = add_node(p, DMM_JSON_NUMBER);
    if (i < 0)
        return -1;
    if (p->s[p->pos] == '-')
        p->pos++;
    if (p->pos < p->len && p->s[p->pos] == '0')
        p->pos++;   /* no leading zeros: "01" ends at the 0 */
    else if (digits(p) != 0)
        return -1;
    if (p->pos < p->len && p->s[p->pos] == '.') {
        p->pos++;
        if (digits(p) != 0)
            return -1;
    }
    if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
        p->pos++;
        if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-'))
            p->pos++;
        if (digits(p) != 0)
            return -1;
    }
    close_node(p, i);
    return 0;
}

static int parse_literal(parser_t *p, const char *word, int type)
{
    size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n))
        return fail(p, "unexpected character");
    long i = add_node(p, type);
    if (i < 0)
        return -1;
    p->pos += n;
    close_node(p, i);
    return 0;
}

static int parse_value(parser_t *p);

/* An array or an object, from its opening bracket. */
static int parse_container(parser_t *p, int type)
{
    char close = type == DMM_JSON_ARRAY ? ']' : '}';
    if (++p->depth > MAX_DEPTH)
        return fail(p, "nested too deeply");
    long i = add_node(p, type);
    if (i < 0)
        return -1;
    p->pos++;
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == close) {
        p->pos++;
        close_node(p, i);
        p->depth--;
        return 0;
    }
    for (;;) {
        if (type == DMM_JSON_OBJECT) {
            skip_ws(p);
            if (p->pos >= p->len || p->s[p->pos] != '"')
                return fail(p, "expected a key (a string)");
            if (parse_string(p) != 0)
                return -1;
            skip_ws(p);
            if (p->pos >= p->len || p->s[p->pos] != ':')
                return fail(p, "expected ':' after a key");
            p->pos++;
        }
        if (parse_value(p) != 0)
            return -1;
        p->d->node[i].count++;
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->pos < p->len && p->s[p->pos] == close)
            break;
        return fail(p, type == DMM_JSON_ARRAY ? "expected ',' or ']'" : "expected ',' or '}'");
    }
    p->pos++;
    close_node(p, i);
    p->depth--;
    return 0;
}

static int parse_value(parser_t *p)
{
    skip_ws(p);
    if (p->pos >= p->len)
        return fail(p, "unexpected end of the document");
    char c = p->s[p->pos];
    switch (c) {
    case '{': return parse_container(p, DMM_JSON_OBJECT);
    case '[': return parse_container(p, DMM_JSON_ARRAY);
    case '"': return parse_string(p);
    case 't': return parse_literal(p, "true", DMM_JSON_TRUE);
    case 'f': return parse_literal(p, "false", DMM_JSON_FALSE);
    case 'n': return parse_literal(p, "null", DMM_JSON_NULL);
    default:
        if (c == '-' || (c >= '0' && c <= '9'))
            return parse_number(p);
        return fail(p, "unexpected character");
    }
}

int dmm_jsonread_parse(dmm_jsonread_t *d, const char *text, size_t len, dmm_err_t *err)
{
    memset(d, 0, sizeof *d);
    d->text = text;
    d->len = len;
    parser_t p = { .d = d, .s = text, .len = len, .err = err };
    if (parse_value(&p) == 0) {
        skip_ws(&p);
        if (p.pos == len)
            return 0;
        fail(&p, "more after the end of the document");
    }
    dmm_jsonread_free(d);
    return -1;
}

void dmm_jsonread_free(dmm_jsonread_t *d)
{
    free(d->node);
    memset(d, 0, sizeof *d);
}

/* ---- lookups ------------------------------------------------------------- */

static int hex_val(char c)
{
    return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

static unsigned hex4(const char *s)
{
    return (unsigned)(hex_val(s[0]) << 12 | hex_val(s[1]) << 8 | hex_val(s[2]) << 4 |
                      hex_val(s[3]));
}

/* The next character of a checked string, *pos moving over it (escapes
 * included), as UTF-8 bytes in out; returns their count. */
static int next_char(const char *s, size_t end, size_t *pos, char out[4])
{
    size_t i = *pos;
    if (s[i] != '\\') {
        out[0] = s[i];
        *pos = i + 1;
        return 1;
    }
    char e = s[i + 1];
    *pos = i + 2;
    switch (e) {
    case 'b': out[0] = '\b'; return 1;
    case 'f': out[0] = '\f'; return 1;
    case 'n': out[0] = '\n'; return 1;
    case 'r': out[0] = '\r'; return 1;
    case 't': out[0] = '\t'; return 1;
    case 'u': break;
    default:  out[0] = e;    return 1;   /* \" \\ \/ */
    }
    unsigned cp = hex4(s + i + 2);
    *pos = i + 6;
    if (cp >= 0xd800 && cp < 0xdc00 && i + 12 <= end && s[i + 6] == '\\' && s[i + 7] == 'u') {
        unsigned lo = hex4(s + i + 8);
        if (lo >= 0xdc00 && lo < 0xe000) {
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            *pos = i + 12;
        }
    }
    if (cp >= 0xd800 && cp < 0xe000)
        cp = 0xfffd;   /* a lone surrogate: the replacement character */
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | cp >> 12);
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | cp >> 18);
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Does string node k decode to the n bytes of key? */
static int key_is(const dmm_jsonread_t *d, size_t k, const char *key, size_t n)
{
    const dmm_jsonread_node_t *x = &d->node[k];
    size_t pos = x->start + 1, end = x->start + x->len - 1, m = 0;
    while (pos < end) {
        char c[4];
        int w = next_char(d->text, end, &pos, c);
        if (m + (size_t)w > n || memcmp(key + m, c, (size_t)w))
            return 0;
        m += (size_t)w;
    }
    return m == n;
}

/* The child of container i named by one segment of a path; -1 if none. */
static long child(const dmm_jsonread_t *d, size_t i, const char *seg, size_t n)
{
    const dmm_jsonread_node_t *x = &d->node[i];
    size_t j = i + 1;
    if (x->type == DMM_JSON_OBJECT) {
        for (size_t k = 0; k < x->count; k++) {
            if (key_is(d, j, seg, n))
                return (long)j + 1;
            j = d->node[j + 1].end;
        }
        return -1;
    }
    if (x->type != DMM_JSON_ARRAY || n == 0 || n > 18)
        return -1;
    size_t idx = 0;
    for (size_t k = 0; k < n; k++) {
        if (seg[k] < '0' || seg[k] > '9')
            return -1;
        idx = idx * 10 + (size_t)(seg[k] - '0');
    }
    if (idx >= x->count)
        return -1;
    for (size_t k = 0; k < idx; k++)
        j = d->node[j].end;
    return (long)j;
}

/* The node at path; -1 if none. */
static long find(const dmm_jsonread_t *d, const char *path)
{
    if (!d->n)
        return -1;
    long i = 0;
    const char *p = path;
    while (*p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        i = child(d, (size_t)i, p, n);
        if (i < 0)
            return -1;
        if (!dot)
            break;
        p = dot + 1;
    }
    return i;
}

int dmm_jsonread_type(const dmm_jsonread_t *d, const char *path)
{
    long i = find(d, path);
    return i < 0 ? DMM_JSON_NONE : d->node[i].type;
}

int dmm_jsonread_num(const dmm_jsonread_t *d, const char *path, double *v)
{
    long i = find(d, path);
    if (i < 0 || d->node[i].type != DMM_JSON_NUMBER)
        return -1;
    const dmm_jsonread_node_t *x = &d->node[i];
    char small[64], *buf = x->len < sizeof small ? small : malloc(x->len + 1);
    if (!buf)
        return -1;
    memcpy(buf, d->text + x->start, x->len);
    buf[x->len] = 0;
    *v = strtod(buf, NULL);
    if (buf != small)
        free(buf);
    return 0;
}

long dmm_jsonread_str(const dmm_jsonread_t *d, const char *path, char *buf, size_t cap)
{
    long i = find(d, path);
    if (i < 0 || d->node[i].type != DMM_JSON_STRING)
        return -1;
    const dmm_jsonread_node_t *x = &d->node[i];
    size_t pos = x->start + 1, end = x->start + x->len - 1, m = 0;
    while (pos < end) {
        char c[4];
        int w = next_char(d->text, end, &pos, c);
        for (int k = 0; k < w; k++, m++)
            if (m + 1 < cap)
                buf[m] = c[k];
    }
    if (cap)
        buf[m < cap ? m : cap - 1] = 0;
    return (long)m;
}

long dmm_jsonread_count(const dmm_jsonread_t *d, const char *path)
{
    long i = find(d, path);
    if (i < 0 || (d->node[i].type != DMM_JSON_ARRAY && d->node[i].type != DMM_JSON_OBJECT))
        return -1;
    return (long)d->node[i].count;
}
