/* order.c - longest expected replays first (see order.h). */
#include "codegen/search/order.h"

#include <math.h>
#include <string.h>

/* FNV-1a of len bytes */
static uint64_t line_hash(const char *p, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)p[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* The next line of *p (without its newline); 0 at the end.  Comment lines
 * (a title) are skipped. */
static size_t next_line(const char **p, const char **line)
{
    for (;;) {
        const char *s = *p;
        if (!*s)
            return 0;
        const char *e = strchr(s, '\n');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        *p = e ? e + 1 : s + len;
        if (len && s[0] != '#') {
            *line = s;
            return len;
        }
    }
}

int dmm_ge_times_note(dmm_ge_times_t *t, const char *key, double seconds)
{
    uint64_t us = seconds > 0 ? (uint64_t)(seconds * 1e6) : 0;
    const char *p = key, *line;
    size_t len;
    while ((len = next_line(&p, &line)) > 0)
        if (dmm_u64map_put(&t->lines, line_hash(line, len), us) != 0)
            return -1;
    return 0;
}

double dmm_ge_times_expect(const dmm_ge_times_t *t, const char *key)
{
    double most = 0;
    const char *p = key, *line;
    size_t len;
    while ((len = next_line(&p, &line)) > 0) {
        const uint64_t *us = dmm_u64map_get(&t->lines, line_hash(line, len));
        if (!us)
            return HUGE_VAL;
        if ((double)*us * 1e-6 > most)
            most = (double)*us * 1e-6;
    }
    return most;
}

void dmm_ge_order(int *work, double *expect, int n)
{
    /* insertion sort: stable, and a generation has few new candidates */
    for (int i = 1; i < n; i++) {
        int w = work[i];
        double e = expect[i];
        int j = i;
        for (; j > 0 && expect[j - 1] < e; j--) {
            work[j] = work[j - 1];
            expect[j] = expect[j - 1];
        }
        work[j] = w;
        expect[j] = e;
    }
}

void dmm_ge_times_free(dmm_ge_times_t *t)
{
    dmm_u64map_free(&t->lines);
}
