/* grammar.c - BNF grammars of DMM designs, the paper's grammar for a trace,
 * the GE genotype-to-phenotype mapping and phenotypes as .dmm descriptions
 * (paper sections 5 and 6; the contract is grammar.h).
 *
 * A grammar is held as flat arrays: every non-terminal is a rule (its id is
 * the order in which its name first appeared), a rule's alternatives are a
 * contiguous run of alts[], an alternative is a run of syms[] (>= 0: a
 * non-terminal id; < 0: terminal -1 - id).  Names and terminal words are
 * interned.  Every size is bounded, so that hostile text cannot make the
 * parser allocate without bound, and the mapper uses an explicit stack and
 * an expansion limit, so that no grammar can make it recurse or loop. */
#include "codegen/grammar/grammar.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tracer/format/opstream.h"
#include "tracer/base/file.h"

#define G_MAX_RULES   100000u   /* non-terminals */
#define G_MAX_ALTS    100000u   /* alternatives of one rule */
#define G_MAX_SYMS    1000000u  /* symbols in all alternatives together */
#define G_MAX_WORD    1024u     /* bytes of one name or terminal */
#define GE_MAX_EXPAND 1000000u  /* non-terminals one mapping may expand */
#define GE_MAX_STACK  1000000u  /* pending symbols of one mapping */

/* ---- interned strings ------------------------------------------------ */

typedef struct intern {
    char     *pool;
    size_t    pool_len, pool_cap;
    uint32_t *off, *len;        /* of item i in pool */
    uint32_t  n, cap;
    uint32_t *bucket;           /* item + 1; 0 = empty */
    uint32_t  nbucket;          /* power of two */
} intern_t;

static uint32_t hash_bytes(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static void intern_free(intern_t *in)
{
    free(in->pool);
    free(in->off);
    free(in->len);
    free(in->bucket);
    memset(in, 0, sizeof *in);
}

static int intern_rehash(intern_t *in, uint32_t nb)
{
    uint32_t *b = calloc(nb, sizeof *b);
    if (!b)
        return -1;
    for (uint32_t i = 0; i < in->n; i++) {
        uint32_t h = hash_bytes(in->pool + in->off[i], in->len[i]) & (nb - 1);
        while (b[h])
            h = (h + 1) & (nb - 1);
        b[h] = i + 1;
    }
    free(in->bucket);
    in->bucket = b;
    in->nbucket = nb;
    return 0;
}

/* The id of s (added if new), -1 on out of memory, -2 when max items
 * exist already. */
static long intern_get(intern_t *in, const char *s, size_t n, uint32_t max, int *added)
{
    *added = 0;
    if (!in->nbucket && intern_rehash(in, 64) != 0)
        return -1;
    uint32_t h = hash_bytes(s, n) & (in->nbucket - 1);
    while (in->bucket[h]) {
        uint32_t i = in->bucket[h] - 1;
        if (in->len[i] == n && memcmp(in->pool + in->off[i], s, n) == 0)
            return i;
        h = (h + 1) & (in->nbucket - 1);
    }
    if (in->n >= max)
        return -2;
    if (in->n == in->cap) {
        uint32_t c = in->cap ? in->cap * 2 : 64;
        uint32_t *o = realloc(in->off, c * sizeof *o);
        if (!o)
            return -1;
        in->off = o;
        uint32_t *l = realloc(in->len, c * sizeof *l);
        if (!l)
            return -1;
        in->len = l;
        in->cap = c;
    }
    if (in->pool_len + n + 1 > in->pool_cap) {
        size_t c = in->pool_cap ? in->pool_cap : 1024;
        while (c < in->pool_len + n + 1)
            c *= 2;
        char *p = realloc(in->pool, c);
        if (!p)
            return -1;
        in->pool = p;
        in->pool_cap = c;
    }
    memcpy(in->pool + in->pool_len, s, n);
    in->pool[in->pool_len + n] = 0;
    in->off[in->n] = (uint32_t)in->pool_len;
    in->len[in->n] = (uint32_t)n;
    in->pool_len += n + 1;
    in->bucket[h] = in->n + 1;
    in->n++;
    *added = 1;
    if (in->n * 2 > in->nbucket && intern_rehash(in, in->nbucket * 2) != 0)
        return -1;
    return in->n - 1;
}

/* ---- the grammar ----------------------------------------------------- */

typedef struct rule {
    uint32_t alt0, nalts;       /* alts[alt0 .. alt0 + nalts) */
    uint32_t def_line, def_col; /* 0 = not defined */
    uint32_t use_line, use_col; /* first use on a right side; 0 = none */
} rule_t;

struct dmm_grammar {
    intern_t  names, terms;     /* non-terminal names (ids = rule ids), terminals */
    rule_t   *rules;            /* names.n of them */
    uint32_t  rules_cap;
    uint32_t *alts;             /* start of each alternative in syms; alts[nalts] = nsyms */
    uint32_t  nalts, alts_cap;
    int32_t  *syms;
    uint32_t  nsyms, syms_cap;
    uint32_t *order;            /* rule ids in the order they are defined */
    uint32_t  norder, order_cap;
    uint32_t  start;
};

void dmm_grammar_free(dmm_grammar_t *g)
{
    if (!g)
        return;
    intern_free(&g->names);
    intern_free(&g->terms);
    free(g->rules);
    free(g->alts);
    free(g->syms);
    free(g->order);
    free(g);
}

static int grow(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    uint32_t c = *cap ? *cap : 64;
    while (c < need)
        c = c > UINT32_MAX / 2 ? need : c * 2;
    void *q = realloc(*p, (size_t)c * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* ---- the parser ------------------------------------------------------ */

enum { T_EOF, T_NL, T_NT, T_WORD, T_BAR, T_DEF };

typedef struct parser {
    const char *name, *s;
    size_t      len, pos, line_start;
    uint32_t    line;
    char       *err;
    size_t      errlen;
    /* the token just read */
    int         tok;
    const char *text;           /* name (without <>) or word */
    size_t      tlen;
    uint32_t    tline, tcol;
} parser_t;

static int perr(parser_t *p, uint32_t line, uint32_t col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int perr(parser_t *p, uint32_t line, uint32_t col, const char *fmt, ...)
{
    if (p->err && p->errlen) {
        int n = snprintf(p->err, p->errlen, "%s: line %u, column %u: ", p->name, line, col);
        if (n >= 0 && (size_t)n < p->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

static int is_word_byte(unsigned char c)
{
    return c > ' ' && c < 0x7f && c != '<' && c != '>' && c != '|';
}

/* Read the next token into p; -1 with the error set on a bad byte. */
static int next_token(parser_t *p)
{
    for (;;) {
        while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
                                   p->s[p->pos] == '\r' || p->s[p->pos] == '\f' ||
                                   p->s[p->pos] == '\v'))
            p->pos++;
        if (p->pos < p->len && p->s[p->pos] == '#') {
            while (p->pos < p->len && p->s[p->pos] != '\n')
                p->pos++;
        }
        break;
    }
    p->tline = p->line;
    p->tcol = (uint32_t)(p->pos - p->line_start + 1);
    if (p->pos >= p->len) {
        p->tok = T_EOF;
        return 0;
    }
    unsigned char c = (unsigned char)p->s[p->pos];
    if (c == '\n') {
        p->pos++;
        p->line++;
        p->line_start = p->pos;
        p->tok = T_NL;
        return 0;
    }
    if (c == '|') {
        p->pos++;
        p->tok = T_BAR;
        return 0;
    }
    if (c == '>')
        return perr(p, p->tline, p->tcol, "unexpected '>'");
    if (c == '<') {
        size_t b = p->pos + 1, e = b;
        while (e < p->len && is_word_byte((unsigned char)p->s[e]))
            e++;
        if (e >= p->len || p->s[e] != '>')
            return perr(p, p->tline, p->tcol, "expected '>' to close the non-terminal");
        if (e == b)
            return perr(p, p->tline, p->tcol, "empty non-terminal '<>'");
        if (e - b > G_MAX_WORD)
            return perr(p, p->tline, p->tcol, "non-terminal name longer than %u bytes",
                        G_MAX_WORD);
        p->tok = T_NT;
        p->text = p->s + b;
        p->tlen = e - b;
        p->pos = e + 1;
        return 0;
    }
    if (!is_word_byte(c))
        return perr(p, p->tline, p->tcol, "unexpected byte 0x%02x", c);
    if (p->len - p->pos >= 3 && memcmp(p->s + p->pos, "::=", 3) == 0) {
        p->pos += 3;
        p->tok = T_DEF;
        return 0;
    }
    size_t e = p->pos;
    while (e < p->len && is_word_byte((unsigned char)p->s[e]))
        e++;
    if (e - p->pos > G_MAX_WORD)
        return perr(p, p->tline, p->tcol, "terminal longer than %u bytes", G_MAX_WORD);
    p->tok = T_WORD;
    p->text = p->s + p->pos;
    p->tlen = e - p->pos;
    p->pos = e;
    return 0;
}

static const char *tok_desc(int tok)
{
    switch (tok) {
    case T_EOF:  return "the end of the file";
    case T_NL:   return "the end of the line";
    case T_NT:   return "a non-terminal";
    case T_WORD: return "a terminal";
    case T_BAR:  return "'|'";
    default:     return "'::='";
    }
}

/* The id of non-terminal <text>; -1 with the error set. */
static long nt_id(parser_t *p, dmm_grammar_t *g)
{
    int added;
    long id = intern_get(&g->names, p->text, p->tlen, G_MAX_RULES, &added);
    if (id == -2)
        return perr(p, p->tline, p->tcol, "more than %u non-terminals", G_MAX_RULES);
    if (id < 0)
        return perr(p, p->tline, p->tcol, "out of memory");
    if (added) {
        if (grow((void **)&g->rules, &g->rules_cap, g->names.n, sizeof *g->rules) != 0)
            return perr(p, p->tline, p->tcol, "out of memory");
        memset(&g->rules[id], 0, sizeof g->rules[id]);
    }
    return id;
}

static int add_sym(parser_t *p, dmm_grammar_t *g, int32_t sym)
{
    if (g->nsyms >= G_MAX_SYMS)
        return perr(p, p->tline, p->tcol, "more than %u symbols", G_MAX_SYMS);
    if (grow((void **)&g->syms, &g->syms_cap, g->nsyms + 1, sizeof *g->syms) != 0)
        return perr(p, p->tline, p->tcol, "out of memory");
    g->syms[g->nsyms++] = sym;
    return 0;
}

/* A symbol of the right side being read. */
static int add_token_sym(parser_t *p, dmm_grammar_t *g)
{
    if (p->tok == T_NT) {
        long id = nt_id(p, g);
        if (id < 0)
            return -1;
        rule_t *r = &g->rules[id];
        if (!r->use_line) {
            r->use_line = p->tline;
            r->use_col = p->tcol;
        }
        return add_sym(p, g, (int32_t)id);
    }
    int added;
    long id = intern_get(&g->terms, p->text, p->tlen, G_MAX_SYMS, &added);
    if (id == -2)
        return perr(p, p->tline, p->tcol, "more than %u terminals", G_MAX_SYMS);
    if (id < 0)
        return perr(p, p->tline, p->tcol, "out of memory");
    return add_sym(p, g, (int32_t)(-1 - id));
}

/* Open an alternative of the current rule. */
static int open_alt(parser_t *p, dmm_grammar_t *g, rule_t *r)
{
    if (r->nalts >= G_MAX_ALTS)
        return perr(p, p->tline, p->tcol, "more than %u alternatives in one rule", G_MAX_ALTS);
    if (grow((void **)&g->alts, &g->alts_cap, g->nalts + 2, sizeof *g->alts) != 0)
        return perr(p, p->tline, p->tcol, "out of memory");
    g->alts[g->nalts++] = g->nsyms;
    g->alts[g->nalts] = g->nsyms;
    r->nalts++;
    return 0;
}

typedef struct opener {
    uint32_t line, col;
    const char *what;
} opener_t;

/* Close the last alternative: it must hold a symbol. */
static int close_alt(parser_t *p, dmm_grammar_t *g, const opener_t *o)
{
    g->alts[g->nalts] = g->nsyms;
    if (g->alts[g->nalts - 1] == g->nsyms)
        return perr(p, o->line, o->col, "empty alternative after '%s'", o->what);
    return 0;
}

static int parse_rules(parser_t *p, dmm_grammar_t *g)
{
    long cur = -1;              /* the rule being read */
    opener_t op = { 0, 0, "" };
    if (next_token(p) != 0)
        return -1;
    while (p->tok != T_EOF) {
        if (p->tok == T_NL) {
            if (next_token(p) != 0)
                return -1;
            continue;
        }
        /* the first token of a line: a new rule, or more of the current one */
        if (p->tok == T_NT) {
            parser_t save = *p;
            if (next_token(p) != 0)
                return -1;
            if (p->tok == T_DEF) {
                uint32_t dline = p->tline, dcol = p->tcol;
                parser_t after = *p;
                *p = save;
                if (cur >= 0 && close_alt(p, g, &op) != 0)
                    return -1;
                long id = nt_id(p, g);
                if (id < 0)
                    return -1;
                rule_t *r = &g->rules[id];
                if (r->def_line)
                    return perr(p, p->tline, p->tcol, "<%.*s> defined twice (first at line %u)",
                                (int)p->tlen, p->text, r->def_line);
                r->def_line = p->tline;
                r->def_col = p->tcol;
                r->alt0 = g->nalts;
                r->nalts = 0;
                *p = after;
                if (grow((void **)&g->order, &g->order_cap, g->norder + 1, sizeof *g->order) != 0)
                    return perr(p, dline, dcol, "out of memory");
                g->order[g->norder++] = (uint32_t)id;
                cur = id;
                if (open_alt(p, g, r) != 0)
                    return -1;
                op = (opener_t){ dline, dcol, "::=" };
                if (next_token(p) != 0)
                    return -1;
            } else {
                if (cur < 0)
                    return perr(p, p->tline, p->tcol, "expected '::=' after <%.*s>, found %s",
                                (int)save.tlen, save.text, tok_desc(p->tok));
                /* the non-terminal continues the current alternative */
                parser_t after = *p;
                *p = save;
                if (add_token_sym(p, g) != 0)
                    return -1;
                *p = after;
            }
        } else if (cur < 0) {
            return perr(p, p->tline, p->tcol, "expected a rule '<Name> ::= ...', found %s",
                        tok_desc(p->tok));
        }
        /* the rest of the line */
        while (p->tok != T_NL && p->tok != T_EOF) {
            if (p->tok == T_BAR) {
                if (close_alt(p, g, &op) != 0)
                    return -1;
                op = (opener_t){ p->tline, p->tcol, "|" };
                if (open_alt(p, g, &g->rules[cur]) != 0)
                    return -1;
            } else if (p->tok == T_DEF) {
                return perr(p, p->tline, p->tcol,
                            "unexpected '::=' (a rule '<Name> ::=' starts a line)");
            } else if (add_token_sym(p, g) != 0) {
                return -1;
            }
            if (next_token(p) != 0)
                return -1;
        }
    }
    if (cur < 0)
        return perr(p, 1, 1, "no rule: a grammar needs at least one '<Name> ::= ...'");
    return close_alt(p, g, &op);
}

/* Every rule defined, reachable from the start and productive. */
static int check_rules(parser_t *p, dmm_grammar_t *g)
{
    uint32_t nr = g->names.n;
    const char *pool = g->names.pool;
#define RNAME(id) (int)g->names.len[id], pool + g->names.off[id]
    /* undefined: report the earliest use */
    long bad = -1;
    for (uint32_t i = 0; i < nr; i++) {
        rule_t *r = &g->rules[i];
        if (r->def_line)
            continue;
        if (bad < 0 || r->use_line < g->rules[bad].use_line ||
            (r->use_line == g->rules[bad].use_line && r->use_col < g->rules[bad].use_col))
            bad = i;
    }
    if (bad >= 0)
        return perr(p, g->rules[bad].use_line, g->rules[bad].use_col,
                    "<%.*s> is used but never defined", RNAME(bad));

    uint8_t *mark = calloc(nr, 1);
    uint32_t *work = malloc(((size_t)nr + 1) * sizeof *work);
    if (!mark || !work) {
        free(mark);
        free(work);
        return perr(p, 1, 1, "out of memory");
    }
    /* reachable from the start */
    uint32_t nw = 0;
    mark[g->start] = 1;
    work[nw++] = g->start;
    while (nw) {
        rule_t *r = &g->rules[work[--nw]];
        for (uint32_t s = g->alts[r->alt0]; s < g->alts[r->alt0 + r->nalts]; s++) {
            int32_t y = g->syms[s];
            if (y >= 0 && !mark[y]) {
                mark[y] = 1;
                work[nw++] = (uint32_t)y;
            }
        }
    }
    for (uint32_t k = 0; k < g->norder; k++) {
        uint32_t i = g->order[k];
        if (!mark[i]) {
            rule_t *r = &g->rules[i];
            int rc = perr(p, r->def_line, r->def_col,
                          "<%.*s> (line %u) is unreachable from the start symbol <%.*s>",
                          RNAME(i), r->def_line, RNAME(g->start));
            free(mark);
            free(work);
            return rc;
        }
    }

    /* productive: a fixpoint by counting, per alternative, its occurrences
     * of non-terminals not yet known to be productive */
    uint32_t *pending = calloc(g->nalts ? g->nalts : 1, sizeof *pending);
    uint32_t *alt_rule = malloc((g->nalts ? g->nalts : 1) * sizeof *alt_rule);
    uint32_t *uses0 = calloc((size_t)nr + 1, sizeof *uses0);   /* occurrences of rule i: */
    uint32_t *uses = malloc((g->nsyms ? g->nsyms : 1) * sizeof *uses); /* alts, grouped by i */
    int rc = 0;
    if (!pending || !alt_rule || !uses0 || !uses) {
        rc = perr(p, 1, 1, "out of memory");
        goto out;
    }
    memset(mark, 0, nr);
    for (uint32_t i = 0; i < nr; i++)
        for (uint32_t a = g->rules[i].alt0; a < g->rules[i].alt0 + g->rules[i].nalts; a++)
            alt_rule[a] = i;
    for (uint32_t s = 0; s < g->nsyms; s++)
        if (g->syms[s] >= 0)
            uses0[g->syms[s] + 1]++;
    for (uint32_t i = 0; i < nr; i++)
        uses0[i + 1] += uses0[i];
    {
        uint32_t *fill = calloc(nr ? nr : 1, sizeof *fill);
        if (!fill) {
            rc = perr(p, 1, 1, "out of memory");
            goto out;
        }
        for (uint32_t a = 0; a < g->nalts; a++)
            for (uint32_t s = g->alts[a]; s < g->alts[a + 1]; s++) {
                int32_t y = g->syms[s];
                if (y >= 0) {
                    uses[uses0[y] + fill[y]++] = a;
                    pending[a]++;
                }
            }
        free(fill);
    }
    nw = 0;
    for (uint32_t a = 0; a < g->nalts; a++)
        if (!pending[a] && !mark[alt_rule[a]]) {
            mark[alt_rule[a]] = 1;
            work[nw++] = alt_rule[a];
        }
    while (nw) {
        uint32_t y = work[--nw];
        for (uint32_t u = uses0[y]; u < uses0[y + 1]; u++) {
            uint32_t a = uses[u];
            if (--pending[a] == 0 && !mark[alt_rule[a]]) {
                mark[alt_rule[a]] = 1;
                work[nw++] = alt_rule[a];
            }
        }
    }
    for (uint32_t k = 0; k < g->norder; k++) {
        uint32_t i = g->order[k];
        if (!mark[i]) {
            rule_t *r = &g->rules[i];
            rc = perr(p, r->def_line, r->def_col,
                      "<%.*s> can never derive a string of terminals (every alternative "
                      "leads back to a rule that cannot end)", RNAME(i));
            break;
        }
    }
out:
    free(mark);
    free(work);
    free(pending);
    free(alt_rule);
    free(uses0);
    free(uses);
    return rc;
#undef RNAME
}

dmm_grammar_t *dmm_grammar_parse(const char *name, const char *text, size_t len,
                                 char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    parser_t p = { .name = name ? name : "grammar", .s = text ? text : "",
                   .len = text ? len : 0, .line = 1, .err = err, .errlen = errlen };
    dmm_grammar_t *g = calloc(1, sizeof *g);
    if (!g) {
        perr(&p, 1, 1, "out of memory");
        return NULL;
    }
    if (parse_rules(&p, g) != 0 || (g->start = g->order[0], check_rules(&p, g)) != 0) {
        dmm_grammar_free(g);
        return NULL;
    }
    return g;
}

dmm_grammar_t *dmm_grammar_load(const char *path, char *err, size_t errlen)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    dmm_err_t e = { { 0 } };
    if (dmm_read_file(path, &buf, &len, &e) != 0) {
        if (err && errlen)
            snprintf(err, errlen, "%s", e.msg);
        return NULL;
    }
    dmm_grammar_t *g = dmm_grammar_parse(path, (const char *)buf, len, err, errlen);
    free(buf);
    return g;
}

/* ---- the mapper ------------------------------------------------------ */

long dmm_ge_map(const dmm_grammar_t *g, const uint32_t *genome, size_t n, int max_wraps,
                char *out, size_t cap)
{
    if (!g || !out || cap == 0)
        return -1;
    out[0] = 0;
    if (!genome || n == 0 || max_wraps < 0)
        return -1;
    int32_t small[256];
    int32_t *stack = small;
    size_t sp = 0, scap = sizeof small / sizeof small[0];
    size_t used = 0, pos = 0;
    long read = 0;
    int wraps = 0;
    uint32_t expanded = 0;
    long rc = -1;

    stack[sp++] = (int32_t)g->start;
    while (sp) {
        int32_t y = stack[--sp];
        if (y < 0) {
            uint32_t t = (uint32_t)(-1 - y);
            size_t tl = g->terms.len[t];
            if (used + (used ? 1 : 0) + tl + 1 > cap)
                goto done;
            if (used)
                out[used++] = ' ';
            memcpy(out + used, g->terms.pool + g->terms.off[t], tl);
            used += tl;
            out[used] = 0;
            continue;
        }
        if (++expanded > GE_MAX_EXPAND)
            goto done;
        if (pos == n) {
            if (wraps >= max_wraps)
                goto done;
            wraps++;
            pos = 0;
        }
        uint32_t codon = genome[pos++];
        read++;
        const rule_t *r = &g->rules[y];
        uint32_t a = r->alt0 + codon % r->nalts;
        uint32_t b = g->alts[a], e = g->alts[a + 1];
        size_t need = sp + (e - b);
        if (need > GE_MAX_STACK)
            goto done;
        if (need > scap) {
            size_t c = scap * 2;
            while (c < need)
                c *= 2;
            int32_t *ns = stack == small ? malloc(c * sizeof *ns)
                                         : realloc(stack, c * sizeof *ns);
            if (!ns)
                goto done;
            if (stack == small)
                memcpy(ns, small, sp * sizeof *ns);
            stack = ns;
            scap = c;
        }
        for (uint32_t s = e; s > b; s--)
            stack[sp++] = g->syms[s - 1];
    }
    rc = read;
done:
    if (stack != small)
        free(stack);
    if (rc < 0)
        out[0] = 0;
    return rc;
}

/* ---- the paper's grammar for a trace --------------------------------- */

typedef struct sbuf {
    char  *s;
    size_t len, cap;
    int    oom;
} sbuf_t;

static void sb_printf(sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(sbuf_t *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            return;
        }
        if (b->s && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t c = b->cap ? b->cap : 4096;
        while (c <= b->len + (size_t)n)
            c *= 2;
        char *s = realloc(b->s, c);
        if (!s) {
            b->oom = 1;
            return;
        }
        b->s = s;
        b->cap = c;
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

char *dmm_grammar_for_trace(const dmm_trace_t *t, int paper, const char *trace_name,
                            char *err, size_t errlen)
{
    const char *tn = trace_name ? trace_name : (t && t->path ? t->path : "trace");
    if (err && errlen)
        err[0] = 0;
    if (!t) {
        set_err(err, errlen, "%s: no trace", tn);
        return NULL;
    }
    dmm_opstream_t os;
    dmm_err_t e = { { 0 } };
    memset(&os, 0, sizeof os);
    if (dmm_opstream_build(t, &os, &e) != 0) {
        set_err(err, errlen, "%s", e.msg[0] ? e.msg : "cannot build the operation stream");
        return NULL;
    }
    size_t nsz = 0, nalloc = 0;
    uint64_t *sz = malloc((os.nops ? os.nops : 1) * sizeof *sz);
    if (!sz) {
        dmm_opstream_free(&os);
        set_err(err, errlen, "%s: out of memory", tn);
        return NULL;
    }
    for (size_t i = 0; i < os.nops; i++) {
        const dmm_op_t *o = &os.ops[i];
        if (o->kind != DMM_OP_ALLOC && o->kind != DMM_OP_REALLOC)
            continue;
        nalloc++;
        /* 0 asks for no bytes, and SIZE_MAX means "unbounded" in a range */
        if (o->size == 0 || o->size >= (uint64_t)SIZE_MAX)
            continue;
        sz[nsz++] = o->size;
    }
    dmm_opstream_free(&os);
    if (nalloc == 0 || nsz == 0) {
        free(sz);
        if (nalloc == 0)
            set_err(err, errlen, "%s: no allocation operations: nothing to build a grammar from",
                    tn);
        else
            set_err(err, errlen,
                    "%s: every allocation asks for 0 bytes: nothing to build a grammar from", tn);
        return NULL;
    }
    qsort(sz, nsz, sizeof *sz, cmp_u64);
    size_t u = 0;
    for (size_t i = 0; i < nsz; i++)
        if (u == 0 || sz[i] != sz[u - 1])
            sz[u++] = sz[i];
    nsz = u;

    sbuf_t b = { 0 };
    sb_printf(&b,
              "# dmm grammar: the designs of a dynamic memory manager, as the BNF of\n"
              "# Risco-Martin et al. (grammatical evolution of DMMs, Figure 3).\n"
              "# trace: %s\n"
              "# <Size>: the %zu distinct request sizes of the trace (%llu .. %llu bytes);\n"
              "# <MaxSize>: the largest.  Classes: %s.\n"
              "#\n"
              "# A DMM is a chain of allocators; each serves the sizes from the previous\n"
              "# allocator's size (exclusive; 0 for the first) up to its own.\n"
              "#\n"
              "# <Allocators> holds the paper's <AllocatorSize> and <AllocatorMaxSize>\n"
              "# (its rules III and IV) inlined as its two alternatives, the MaxSize one\n"
              "# FIRST.  The mapper reads a codon for every non-terminal it expands, single-\n"
              "# alternative ones included; inlined, the paper's worked example decodes as\n"
              "# printed: its Figure 4 genome reads 17 codons (213 mod 2 = 1 picks an\n"
              "# allocator with a <Size> and more to follow, 114 mod 2 = 0 the last one,\n"
              "# with <MaxSize>) and gives its Table 1 (but for the paper's slip\n"
              "# \"197 mod 3 = 0\": it is 2, EXACT).  Edit freely: the GE engine reads any\n"
              "# grammar in this notation.\n"
              "\n",
              tn, nsz, (unsigned long long)sz[0], (unsigned long long)sz[nsz - 1],
              paper ? "the paper's five" : "the paper's five, Kingsley and Lea");
    sb_printf(&b,
              "<DynamicMemoryManager> ::= <Allocators>\n"
              "\n"
              "<Allocators> ::= <AllocatorClass> <AllowSplitting> <AllowCoalescing> <MaxSize>"
              " <DataStructure> <AllocationMechanism> <AllocationPolicy>\n"
              "               | <AllocatorClass> <AllowSplitting> <AllowCoalescing> <Size>"
              " <DataStructure> <AllocationMechanism> <AllocationPolicy> <Allocators>\n"
              "\n"
              "<AllocatorClass> ::= SegregatedFreeList | SimpleSegregatedStorage"
              " | ExactSegregatedFit\n"
              "                   | BuddySystemBinary | BuddySystemFibonacci%s\n"
              "\n",
              paper ? "" : "\n                   | Kingsley | Lea");
    sb_printf(&b, "<Size> ::=");
    for (size_t i = 0; i < nsz; i++) {
        if (i == 0)
            sb_printf(&b, " %llu", (unsigned long long)sz[i]);
        else if (i % 10 == 0)
            sb_printf(&b, "\n         | %llu", (unsigned long long)sz[i]);
        else
            sb_printf(&b, " | %llu", (unsigned long long)sz[i]);
    }
    sb_printf(&b,
              "\n\n"
              "<MaxSize> ::= %llu\n"
              "\n"
              "<AllowSplitting> ::= true | false\n"
              "<AllowCoalescing> ::= true | false\n"
              "<DataStructure> ::= SLL | DLL | BTREE\n"
              "<AllocationMechanism> ::= FIRST | BEST | EXACT\n"
              "<AllocationPolicy> ::= FIFO | LIFO\n",
              (unsigned long long)sz[nsz - 1]);
    free(sz);
    if (b.oom) {
        free(b.s);
        set_err(err, errlen, "%s: out of memory", tn);
        return NULL;
    }
    return b.s;
}

/* ---- phenotypes ------------------------------------------------------ */

typedef struct word {
    const char *s;
    size_t      n;
} word_t;

static int word_eq(word_t w, const char *s)
{
    size_t n = strlen(s);
    return w.n == n && strncasecmp(w.s, s, n) == 0;
}

static int word_index(word_t w, const char *const *names, int count)
{
    for (int i = 0; i < count; i++)
        if (word_eq(w, names[i]))
            return i;
    return -1;
}

static const struct {
    const char *name;
    dmm_class_t cls;
} paper_classes[] = {
    { "SegregatedFreeList", DMM_CLASS_SEGREGATED },
    { "SimpleSegregatedStorage", DMM_CLASS_SSS },
    { "ExactSegregatedFit", DMM_CLASS_EXACT },
    { "BuddySystemBinary", DMM_CLASS_BUDDY_BINARY },
    { "BuddySystemFibonacci", DMM_CLASS_BUDDY_FIB },
    { "Kingsley", DMM_CLASS_KINGSLEY },
    { "Lea", DMM_CLASS_LEA },
};

static dmm_class_t class_of(word_t w)
{
    for (size_t i = 0; i < sizeof paper_classes / sizeof paper_classes[0]; i++)
        if (word_eq(w, paper_classes[i].name))
            return paper_classes[i].cls;
    for (int c = 1; c < DMM_CLASS_COUNT; c++) {
        const char *n = dmm_class_name((dmm_class_t)c);
        if (n && word_eq(w, n))
            return (dmm_class_t)c;
    }
    return DMM_CLASS_NONE;
}

static int bool_of(word_t w)
{
    static const char *const yes[] = { "true", "yes" }, *const no[] = { "false", "no" };
    if (word_index(w, yes, 2) >= 0)
        return 1;
    if (word_index(w, no, 2) >= 0)
        return 0;
    return -1;
}

/* A size: decimal digits, below SIZE_MAX (which means "unbounded"). */
static int size_of(word_t w, size_t *out)
{
    if (w.n == 0 || w.n > 20)
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < w.n; i++) {
        if (w.s[i] < '0' || w.s[i] > '9')
            return -1;
        unsigned d = (unsigned)(w.s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    if (v >= (uint64_t)SIZE_MAX)
        return -1;
    *out = (size_t)v;
    return 0;
}

static int next_word(const char **p, word_t *w)
{
    const char *s = *p;
    while (*s && isspace((unsigned char)*s))
        s++;
    if (!*s)
        return 0;
    const char *e = s;
    while (*e && !isspace((unsigned char)*e))
        e++;
    w->s = s;
    w->n = (size_t)(e - s);
    *p = e;
    return 1;
}

int dmm_phenotype_to_desc(const char *phenotype, dmm_desc_t *d, char *err, size_t errlen)
{
    static const char *const lists[] = { "SLL", "DLL", "BTREE" };
    static const char *const fits[] = { "FIRST", "BEST", "EXACT" };
    static const char *const orders[] = { "FIFO", "LIFO" };
    static const char *const field[] = { "class", "splitting", "coalescing", "size",
                                         "data structure", "mechanism", "policy" };
    if (err && errlen)
        err[0] = 0;
    if (!d) {
        set_err(err, errlen, "phenotype: no description to fill");
        return -1;
    }
    memset(d, 0, sizeof *d);
    if (!phenotype) {
        set_err(err, errlen, "phenotype: empty");
        return -1;
    }
    /* count first: the error for a wrong count names it */
    size_t nw = 0;
    word_t w;
    for (const char *p = phenotype; next_word(&p, &w);)
        nw++;
    if (nw == 0 || nw % 7 != 0) {
        set_err(err, errlen,
                "phenotype: %zu terminals; an allocator is 7 (class, splitting, coalescing, "
                "size, data structure, mechanism, policy)", nw);
        return -1;
    }
    const char *p = phenotype;
    size_t prev = 0;   /* the top of the ranges kept so far */
    for (size_t k = 0; k < nw / 7; k++) {
        dmm_alloc_desc_t a;
        memset(&a, 0, sizeof a);
        size_t size = 0;
        for (int f = 0; f < 7; f++) {
            next_word(&p, &w);
            int v = 0;
            switch (f) {
            case 0: a.cls = class_of(w); v = a.cls == DMM_CLASS_NONE ? -1 : 0; break;
            case 1: v = bool_of(w); a.split = (uint8_t)(v > 0); break;
            case 2: v = bool_of(w); a.coalesce = (uint8_t)(v > 0); break;
            case 3: v = size_of(w, &size); break;
            case 4: v = word_index(w, lists, 3); a.list = (uint8_t)(v > 0 ? v : 0); break;
            case 5: v = word_index(w, fits, 3); a.fit = (uint8_t)(v > 0 ? v : 0); break;
            default: v = word_index(w, orders, 2); a.order = (uint8_t)(v > 0 ? v : 0); break;
            }
            if (v < 0) {
                set_err(err, errlen, "phenotype: allocator %zu, terminal %zu: '%.*s' is not a %s",
                        k + 1, k * 7 + (size_t)f + 1, (int)(w.n > 64 ? 64 : w.n), w.s,
                        f == 3 ? "size below 2^64 - 1" : field[f]);
                memset(d, 0, sizeof *d);
                return -1;
            }
        }
        /* (prev, size]; nothing to serve when size is not above prev */
        if (size <= prev)
            continue;
        if (d->n == DMM_DESC_MAX) {
            set_err(err, errlen, "phenotype: more than %d allocators with a range", DMM_DESC_MAX);
            memset(d, 0, sizeof *d);
            return -1;
        }
        a.lo = prev;
        a.hi = size;
        d->a[d->n++] = a;
        prev = size;
    }
    if (d->n == 0) {
        set_err(err, errlen, "phenotype: no allocator serves any size (every size is 0)");
        return -1;
    }
    return 0;
}
