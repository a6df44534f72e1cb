/* backend.h - what libdmm.so and libdmm_evolved.so do differently under the
 * malloc family they share (shim.c, check.c, offload.c).  Each library
 * links one of the two files that define these names:
 *
 *   backend_chain.c    libdmm.so: the chain that DMM_CONFIG names (a preset
 *                      or a .dmm file; lea by default), through
 *                      dmm_chain_malloc and dmm_chain_free, with the cost
 *                      counters that DMM_STATS prints;
 *   backend_evolved.c  libdmm_evolved.so: the chain that `dmm codegen` wrote
 *                      into dmm_evolved.c; malloc and free pick the
 *                      allocator with constant range bounds and call its
 *                      class by name; no cost counters; DMM_CONFIG ignored
 *                      with a notice.
 *
 * Nothing here calls malloc or stdio on the malloc path. */
#ifndef DMM_SHIM_BACKEND_H
#define DMM_SHIM_BACKEND_H

#include <stddef.h>

#include "allocators/chain/chain.h"
#include "allocators/chain/desc.h"

#pragma GCC visibility push(hidden)

/* The library's file name, for messages. */
extern const char dmm_backend_lib[];

/* The description to build the chain from, read at the start.  NULL, after
 * a notice that says why, when the program is to run on glibc's malloc;
 * check: DMM_CHECK=1 was asked for (the notice says it is ignored too). */
const dmm_desc_t *dmm_backend_desc(int check);

void *dmm_backend_malloc(dmm_chain_t *c, size_t n);
/* malloc's fast path: a block of at least n bytes from the calling
 * thread's cache, or NULL (then malloc takes its slow path).  It tests no
 * state: a thread's cache holds blocks only while the chain serves
 * unchecked and frees are not offloaded (shim.c opens the caches then
 * alone), and is empty before the chain starts. */
void *dmm_backend_malloc_fast(size_t n);
/* dmm_backend_malloc, after dmm_backend_malloc_fast found nothing. */
void *dmm_backend_malloc_miss(dmm_chain_t *c, size_t n);
/* p is a block of c: the caller checked. */
void  dmm_backend_free(dmm_chain_t *c, void *p);
/* free's fast path: p freed if it is a block of the chain and free may
 * free at once (errno kept), else handed to dmm_shim_free_other (shim.h).
 * It tests no state either: it looks p up in dmm_shim_free_arena(), which
 * is an empty arena unless free may free at once. */
void  dmm_backend_free_any(void *p);
/* calloc of nmemb * size bytes, as dmm_chain_calloc decides it: the
 * chain's malloc for a request a class or the cache serves, then the bytes
 * cleared; the fallback path's own calloc for the rest. */
void *dmm_backend_calloc(dmm_chain_t *c, size_t nmemb, size_t size);
/* realloc of p, NULL or a block of c (the caller checked), as
 * dmm_chain_realloc decides it. */
void *dmm_backend_realloc(dmm_chain_t *c, void *p, size_t n);
/* The free of allocator i of c, its lock held by the caller (the
 * DMM_OFFLOAD helper, which frees runs of blocks under one hold). */
void  dmm_backend_class_free(dmm_chain_t *c, int i, void *p);

/* DMM_STATS's first lines for c, into buf: snprintf's result. */
int   dmm_backend_stats(const dmm_chain_t *c, char *buf, size_t len);

#pragma GCC visibility pop

#endif
