/* emit.h - the C emitter: a DMM description as C source for
 * libdmm_evolved.so (`dmm codegen`).
 *
 * The source it writes holds, after a header comment with the DMM map in
 * the paper's Table 1 layout and where the design came from:
 *
 *   static const dmm_desc_t dmm_evolved_desc = { ... };      the chain
 *   static inline int dmm_evolved_which(size_t n);           size -> allocator,
 *                                                             literal bounds
 *   inline void *dmm_evolved_class_malloc(c, i, n);          allocator i's class
 *   inline void  dmm_evolved_class_free(c, i, p);            called by name
 *
 * and the names of preload/shim/dmm_evolved.h, by which libdmm_evolved.so's
 * back end (preload/shim/backend_evolved.c) calls it.
 * The ops structs of the classes are constant, so with -flto the calls
 * through dmm_class_X.malloc become direct calls. */
#ifndef DMM_EMIT_EMIT_H
#define DMM_EMIT_EMIT_H

#include <stdio.h>

#include "allocators/chain/desc.h"

/* Where the design came from, for the header comment; NULL fields are left
 * out. */
typedef struct dmm_emit_info {
    const char *source;    /* the .dmm file */
    const char *trace;
    const char *seed;
    const char *fitness;
} dmm_emit_info_t;

/* The words of d's title line that a NULL trace, seed or fitness of info
 * defaults to (trace=, seed=, fitness=), kept in t. */
typedef struct dmm_emit_title {
    char trace[256], seed[64], fitness[64];
} dmm_emit_title_t;
void dmm_emit_info_from_title(const dmm_desc_t *d, dmm_emit_info_t *info, dmm_emit_title_t *t);

/* Write the C source for d to f.  0, or -1 on a write error. */
int dmm_emit_c(FILE *f, const dmm_desc_t *d, const dmm_emit_info_t *info);

#endif
