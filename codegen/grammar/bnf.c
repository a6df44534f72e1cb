/* bnf.c - the parser of grammars in the paper's BNF notation (grammar.h):
 * names and words interned, rules and alternatives in flat arrays (bnf.h),
 * then every rule checked: defined, reachable from the start and able to
 * end in terminals. */
#include "codegen/grammar/bnf.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/base/file.h"

/* ---- interned strings ------------------------------------------------ */



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
    dmm_err_t  *err;
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
    if (p->err) {
        char *m = p->err->msg;
        size_t cap = sizeof p->err->msg;
        int n = snprintf(m, cap, "%s: line %u, column %u: ", p->name, line, col);
        if (n >= 0 && (size_t)n < cap) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(m + n, cap - (size_t)n, fmt, ap);
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

#define RNAME(g, id) (int)(g)->names.len[id], (g)->names.pool + (g)->names.off[id]

/* Every rule used is defined: the earliest use of one that is not is
 * reported. */
static int check_defined(parser_t *p, const dmm_grammar_t *g)
{
    long bad = -1;
    for (uint32_t i = 0; i < g->names.n; i++) {
        const rule_t *r = &g->rules[i];
        if (r->def_line)
            continue;
        if (bad < 0 || r->use_line < g->rules[bad].use_line ||
            (r->use_line == g->rules[bad].use_line && r->use_col < g->rules[bad].use_col))
            bad = i;
    }
    if (bad >= 0)
        return perr(p, g->rules[bad].use_line, g->rules[bad].use_col,
                    "<%.*s> is used but never defined", RNAME(g, bad));
    return 0;
}

/* Every rule is reachable from the start; mark and work have a slot per
 * rule (work one more). */
static int check_reachable(parser_t *p, const dmm_grammar_t *g, uint8_t *mark, uint32_t *work)
{
    uint32_t nw = 0;
    mark[g->start] = 1;
    work[nw++] = g->start;
    while (nw) {
        const rule_t *r = &g->rules[work[--nw]];
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
            const rule_t *r = &g->rules[i];
            return perr(p, r->def_line, r->def_col,
                        "<%.*s> (line %u) is unreachable from the start symbol <%.*s>",
                        RNAME(g, i), r->def_line, RNAME(g, g->start));
        }
    }
    return 0;
}

/* Every rule can derive a string of terminals: a fixpoint by counting, per
 * alternative, its occurrences of non-terminals not yet known to be
 * productive.  mark and work as for check_reachable. */
static int check_productive(parser_t *p, const dmm_grammar_t *g, uint8_t *mark, uint32_t *work)
{
    uint32_t nr = g->names.n, nw = 0;
    uint32_t *pending = calloc(g->nalts ? g->nalts : 1, sizeof *pending);
    uint32_t *alt_rule = malloc((g->nalts ? g->nalts : 1) * sizeof *alt_rule);
    uint32_t *uses0 = calloc((size_t)nr + 1, sizeof *uses0);   /* occurrences of rule i: */
    uint32_t *uses = malloc((g->nsyms ? g->nsyms : 1) * sizeof *uses); /* alts, grouped by i */
    uint32_t *fill = calloc(nr ? nr : 1, sizeof *fill);
    int rc = 0;
    if (!pending || !alt_rule || !uses0 || !uses || !fill) {
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
    for (uint32_t a = 0; a < g->nalts; a++)
        for (uint32_t s = g->alts[a]; s < g->alts[a + 1]; s++) {
            int32_t y = g->syms[s];
            if (y >= 0) {
                uses[uses0[y] + fill[y]++] = a;
                pending[a]++;
            }
        }
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
    for (uint32_t k = 0; k < g->norder && rc == 0; k++) {
        uint32_t i = g->order[k];
        if (!mark[i]) {
            const rule_t *r = &g->rules[i];
            rc = perr(p, r->def_line, r->def_col,
                      "<%.*s> can never derive a string of terminals (every alternative "
                      "leads back to a rule that cannot end)", RNAME(g, i));
        }
    }
out:
    free(pending);
    free(alt_rule);
    free(uses0);
    free(uses);
    free(fill);
    return rc;
}

/* Every rule defined, reachable from the start and productive. */
static int check_rules(parser_t *p, dmm_grammar_t *g)
{
    if (check_defined(p, g) != 0)
        return -1;
    uint32_t nr = g->names.n;
    uint8_t *mark = calloc(nr, 1);
    uint32_t *work = malloc(((size_t)nr + 1) * sizeof *work);
    int rc;
    if (!mark || !work)
        rc = perr(p, 1, 1, "out of memory");
    else if ((rc = check_reachable(p, g, mark, work)) == 0)
        rc = check_productive(p, g, mark, work);
    free(mark);
    free(work);
    return rc;
}

dmm_grammar_t *dmm_grammar_parse(const char *name, const char *text, size_t len,
                                 dmm_err_t *err)
{
    if (err)
        err->msg[0] = 0;
    parser_t p = { .name = name ? name : "grammar", .s = text ? text : "",
                   .len = text ? len : 0, .line = 1, .err = err };
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

dmm_grammar_t *dmm_grammar_load(const char *path, dmm_err_t *err)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    if (dmm_read_file(path, &buf, &len, err) != 0)
        return NULL;
    dmm_grammar_t *g = dmm_grammar_parse(path, (const char *)buf, len, err);
    free(buf);
    return g;
}
