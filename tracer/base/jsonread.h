/* jsonread.h - the JSON reader of dmm's tools: for a tool that reads what
 * another dmm command wrote (dmm tune-glibc reads `dmm replay --json`), so
 * that no one scrapes JSON text for a key.
 *
 * dmm_jsonread_parse checks a whole document against RFC 8259 (one value,
 * whitespace around it, nothing else; strings without raw control
 * characters and with only JSON's escapes; numbers in JSON's grammar) and
 * indexes its values; lookups then go by a key path, the keys of nested
 * objects joined by dots ("latency.alloc.p50_ns"), a segment of digits
 * picking an element of an array ("log.0.gen").  Bytes of 0x80 and above
 * are taken as they are, unchecked: dmm's own writer passes a file name's
 * bytes through, and its reader must read them back.  Where a key appears
 * twice in one object, the first wins.
 *
 *   dmm_jsonread_t d;
 *   if (dmm_jsonread_parse(&d, text, len, &err) == 0) {
 *       double wall;
 *       if (dmm_jsonread_num(&d, "wall_s", &wall) == 0) ...
 *       dmm_jsonread_free(&d);
 *   }
 *
 * The document keeps pointing into text: keep it until dmm_jsonread_free. */
#ifndef DMM_BASE_JSONREAD_H
#define DMM_BASE_JSONREAD_H

#include <stddef.h>

#include "tracer/base/err.h"

/* The kinds of value; 0 (DMM_JSON_NONE) is "no such value". */
enum {
    DMM_JSON_NONE = 0,
    DMM_JSON_NULL,
    DMM_JSON_FALSE,
    DMM_JSON_TRUE,
    DMM_JSON_NUMBER,
    DMM_JSON_STRING,
    DMM_JSON_ARRAY,
    DMM_JSON_OBJECT,
};

typedef struct dmm_jsonread_node dmm_jsonread_node_t;

typedef struct dmm_jsonread {
    const char          *text;
    size_t               len;
    dmm_jsonread_node_t *node;    /* every value and key, in document order */
    size_t               n, cap;
} dmm_jsonread_t;

/* Parse text (len bytes; a NUL is not needed, and one inside is an error).
 * 0, or -1 with err naming the byte offset and the fault ("JSON offset 12:
 * expected ':' after a key"); d then holds nothing to free. */
int dmm_jsonread_parse(dmm_jsonread_t *d, const char *text, size_t len, dmm_err_t *err);
void dmm_jsonread_free(dmm_jsonread_t *d);

/* The kind of the value at path (DMM_JSON_*), DMM_JSON_NONE when there is
 * none; "" is the whole document. */
int dmm_jsonread_type(const dmm_jsonread_t *d, const char *path);

/* The number at path, as strtod reads its text.  0, or -1 when there is
 * no value there or it is not a number. */
int dmm_jsonread_num(const dmm_jsonread_t *d, const char *path, double *v);

/* The string at path, its escapes decoded (\uXXXX as UTF-8, a surrogate
 * pair as one character), NUL-terminated in buf.  Returns the decoded
 * length (as snprintf does: buf holds cap - 1 bytes of a longer one), or
 * -1 when there is no string there. */
long dmm_jsonread_str(const dmm_jsonread_t *d, const char *path, char *buf, size_t cap);

/* The number of elements of the array, or members of the object, at path;
 * -1 when there is no array or object there. */
long dmm_jsonread_count(const dmm_jsonread_t *d, const char *path);

#endif
