/* json.h - the one JSON writer of dmm's tools.
 *
 * Members are written in order, straight to a FILE; the writer puts the
 * commas, the keys and the layout.  Two layouts: pretty (a member a line,
 * two spaces a level, "key": value) for files people read, and compact
 * (one line, "key":value) for output that programs parse line by line.
 *
 *   dmm_json_t j;
 *   dmm_json_begin(&j, stdout, 1);          {
 *   dmm_json_u64(&j, "ops", 12);              "ops": 12,
 *   dmm_json_obj(&j, "latency");              "latency": {
 *   dmm_json_num(&j, "p50_ns", "%.2f", x);      "p50_ns": 41.00
 *   dmm_json_close_obj(&j);                   },
 *   dmm_json_arr(&j, "sizes");                "sizes": [
 *   dmm_json_u64(&j, NULL, 16);                 16
 *   dmm_json_close_arr(&j);                   ]
 *   dmm_json_end(&j);                       }
 *
 * Keys are NULL inside arrays.  Numbers that are not finite are written as
 * null; strings are escaped by dmm_json_str. */
#ifndef DMM_BASE_JSON_H
#define DMM_BASE_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct dmm_json {
    FILE *f;
    int   pretty;
    int   depth;      /* open containers */
    int   first;      /* nothing written yet in the innermost one */
    int   flat;       /* depth from which members stay on one line (0: none) */
} dmm_json_t;

/* Open the top-level object / close it (and end the line). */
void dmm_json_begin(dmm_json_t *j, FILE *f, int pretty);
void dmm_json_end(dmm_json_t *j);

void dmm_json_obj(dmm_json_t *j, const char *key);
void dmm_json_close_obj(dmm_json_t *j);
void dmm_json_arr(dmm_json_t *j, const char *key);
/* An array written on one line even in the pretty layout ([1, 2, 3]):
 * for long lists of numbers. */
void dmm_json_arr_flat(dmm_json_t *j, const char *key);
void dmm_json_close_arr(dmm_json_t *j);

void dmm_json_u64(dmm_json_t *j, const char *key, uint64_t v);
void dmm_json_i64(dmm_json_t *j, const char *key, int64_t v);
/* A number printed with fmt (one double conversion, e.g. "%.6f"). */
void dmm_json_num(dmm_json_t *j, const char *key, const char *fmt, double v);
void dmm_json_bool(dmm_json_t *j, const char *key, int v);
void dmm_json_null(dmm_json_t *j, const char *key);
/* s as a JSON string, or null for NULL. */
void dmm_json_string(dmm_json_t *j, const char *key, const char *s);
/* n bytes of s as a JSON string. */
void dmm_json_string_n(dmm_json_t *j, const char *key, const char *s, size_t n);
/* The separator and key of a value the caller then writes to j->f itself
 * (a preformatted number, a nested document). */
void dmm_json_key(dmm_json_t *j, const char *key);

/* s as a JSON string literal (quotes, backslashes and control characters
 * escaped; other bytes as they are, so UTF-8 passes through), or null for
 * NULL: the escaping every JSON output of dmm uses. */
void dmm_json_str(FILE *f, const char *s);
void dmm_json_str_n(FILE *f, const char *s, size_t n);

#endif
