/* tunables.h - what dmm tune-glibc searches: four of glibc malloc's
 * tunables, their text forms, and the grammar of their values.
 *
 * Four tunables (mallopt's M_TOP_PAD, M_TRIM_THRESHOLD, M_MMAP_THRESHOLD,
 * M_ARENA_MAX), set at start-up through GLIBC_TUNABLES=glibc.malloc.NAME=V:...
 * or the older MALLOC_TOP_PAD_, MALLOC_TRIM_THRESHOLD_, MALLOC_MMAP_THRESHOLD_
 * and MALLOC_ARENA_MAX (glibc 2.36 honours both; `dmm tune-glibc --probe`
 * shows what a process's glibc made of them).  A candidate is one value of
 * each, "default" meaning not set.  Setting any of top_pad, trim_threshold
 * or mmap_threshold turns glibc's dynamic mmap threshold off (by default
 * the threshold rises to the size of the largest mmapped block freed, and
 * trim_threshold to twice that), so an explicit value equal to glibc's
 * default is not the same candidate as "default".
 *
 * The search's genomes map through a BNF grammar whose terminals are
 * `name=value` settings (dmm_tune_grammar_text, or any grammar in that
 * notation); a phenotype is read back by dmm_tunables_parse. */
#ifndef DMM_TUNE_TUNABLES_H
#define DMM_TUNE_TUNABLES_H

#include <stddef.h>
#include "tracer/base/err.h"

enum {
    DMM_TUNE_TOP_PAD,
    DMM_TUNE_TRIM_THRESHOLD,
    DMM_TUNE_MMAP_THRESHOLD,
    DMM_TUNE_ARENA_MAX,
    DMM_TUNE_N
};

#define DMM_TUNE_DEFAULT (-1LL)   /* a tunable left unset */

typedef struct dmm_tunables {
    long long v[DMM_TUNE_N];      /* bytes (arena_max: a count), or DMM_TUNE_DEFAULT */
} dmm_tunables_t;

typedef struct dmm_tunable_info {
    const char *name;       /* the grammar's word: top_pad */
    const char *tunable;    /* glibc.malloc.top_pad */
    const char *env;        /* MALLOC_TOP_PAD_ */
    long long   lo, hi;     /* accepted values */
} dmm_tunable_info_t;

/* The table of the four, in the order above. */
extern const dmm_tunable_info_t dmm_tunables_info[DMM_TUNE_N];

/* All four unset. */
void dmm_tunables_default(dmm_tunables_t *t);
int  dmm_tunables_all_default(const dmm_tunables_t *t);
/* Is glibc's dynamic mmap threshold off under t? */
int  dmm_tunables_static_threshold(const dmm_tunables_t *t);

/* The built-in grammar (static text). */
const char *dmm_tune_grammar_text(void);

/* A phenotype: `name=value` words separated by blanks, each name at most
 * once (missing ones stay default); value "default", or a decimal number of
 * bytes with an optional k, m or g suffix (binary: 1k = 1024).  0, or -1
 * with err naming the word. */
int dmm_tunables_parse(const char *phenotype, dmm_tunables_t *t, dmm_err_t *err);

/* The canonical text: all four `name=value` in table order, values in
 * bytes or "default".  Returns the length (snprintf's rule). */
size_t dmm_tunables_format(const dmm_tunables_t *t, char *buf, size_t cap);

/* The GLIBC_TUNABLES value of the tunables that are set, `:`-separated
 * (empty when none is).  Returns the length (snprintf's rule). */
size_t dmm_tunables_glibc(const dmm_tunables_t *t, char *buf, size_t cap);

/* Read our four from a GLIBC_TUNABLES value (other entries ignored); 0, or
 * -1 with err for a bad value of one of ours. */
int dmm_tunables_from_glibc(const char *value, dmm_tunables_t *t, dmm_err_t *err);

/* Is the entry of GLIBC_TUNABLES at p (len bytes, "name=value") one of our
 * four? */
int dmm_tunables_is_ours(const char *p, size_t len);

#endif
