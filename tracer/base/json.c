/* json.c - the JSON writer (see json.h). */
#include "tracer/base/json.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

void dmm_json_str_n(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c == '\t')
            fputs("\\t", f);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);   /* UTF-8 passes through; invalid bytes too */
    }
    fputc('"', f);
}

void dmm_json_str(FILE *f, const char *s)
{
    if (s)
        dmm_json_str_n(f, s, strlen(s));
    else
        fputs("null", f);
}

static int in_flat(const dmm_json_t *j)
{
    return j->flat && j->depth >= j->flat;
}

static void newline(dmm_json_t *j)
{
    if (!j->pretty)
        return;
    fputc('\n', j->f);
    for (int i = 0; i < j->depth; i++)
        fputs("  ", j->f);
}

void dmm_json_key(dmm_json_t *j, const char *key)
{
    int flat = in_flat(j);
    if (!j->first)
        fputs(flat ? ", " : ",", j->f);
    j->first = 0;
    if (!flat)
        newline(j);
    if (key) {
        dmm_json_str(j->f, key);
        fputs(j->pretty ? ": " : ":", j->f);
    }
}

static void open_c(dmm_json_t *j, const char *key, char c)
{
    dmm_json_key(j, key);
    fputc(c, j->f);
    j->depth++;
    j->first = 1;
}

static void close_c(dmm_json_t *j, char c)
{
    int was_flat = in_flat(j);
    j->depth--;
    if (was_flat && j->depth < j->flat)
        j->flat = 0;
    else if (!j->first)
        newline(j);
    fputc(c, j->f);
    j->first = 0;
}

void dmm_json_begin(dmm_json_t *j, FILE *f, int pretty)
{
    *j = (dmm_json_t){ .f = f, .pretty = pretty, .depth = 1, .first = 1 };
    fputc('{', f);
}

void dmm_json_end(dmm_json_t *j)
{
    close_c(j, '}');
    fputc('\n', j->f);
}

void dmm_json_obj(dmm_json_t *j, const char *key)
{
    open_c(j, key, '{');
}

void dmm_json_close_obj(dmm_json_t *j)
{
    close_c(j, '}');
}

void dmm_json_arr(dmm_json_t *j, const char *key)
{
    open_c(j, key, '[');
}

void dmm_json_arr_flat(dmm_json_t *j, const char *key)
{
    open_c(j, key, '[');
    if (!j->flat)
        j->flat = j->depth;
}

void dmm_json_close_arr(dmm_json_t *j)
{
    close_c(j, ']');
}

void dmm_json_u64(dmm_json_t *j, const char *key, uint64_t v)
{
    dmm_json_key(j, key);
    fprintf(j->f, "%" PRIu64, v);
}

void dmm_json_i64(dmm_json_t *j, const char *key, int64_t v)
{
    dmm_json_key(j, key);
    fprintf(j->f, "%" PRId64, v);
}

void dmm_json_num(dmm_json_t *j, const char *key, const char *fmt, double v)
{
    dmm_json_key(j, key);
    if (isfinite(v))
        fprintf(j->f, fmt, v);
    else
        fputs("null", j->f);
}

void dmm_json_bool(dmm_json_t *j, const char *key, int v)
{
    dmm_json_key(j, key);
    fputs(v ? "true" : "false", j->f);
}

void dmm_json_null(dmm_json_t *j, const char *key)
{
    dmm_json_key(j, key);
    fputs("null", j->f);
}

void dmm_json_string(dmm_json_t *j, const char *key, const char *s)
{
    dmm_json_key(j, key);
    dmm_json_str(j->f, s);
}

void dmm_json_string_n(dmm_json_t *j, const char *key, const char *s, size_t n)
{
    dmm_json_key(j, key);
    dmm_json_str_n(j->f, s, n);
}
