/* dmm_evolved.h - the names that dmm_evolved.c defines for libdmm_evolved.so's
 * back end (backend_evolved.c).  `dmm codegen` writes that file anew for
 * every evolved chain (codegen/emit/emit.c); these names stay the same.
 * With -flto the calls inline into malloc and free: the range bounds become
 * constants of the fast path and each class's ops direct calls. */
#ifndef DMM_SHIM_DMM_EVOLVED_H
#define DMM_SHIM_DMM_EVOLVED_H

#include <stddef.h>

#include "allocators/chain/chain.h"
#include "allocators/chain/desc.h"

#pragma GCC visibility push(hidden)

/* The chain the library was generated for (a constant). */
const dmm_desc_t *dmm_evolved_description(void);
/* The allocator that serves n bytes (n >= 1), or -1 for the fallback
 * path. */
int   dmm_evolved_pick(size_t n);
/* Allocator i of chain c, through its class's ops by name; the caller
 * holds its lock (usable: unless dmm_evolved_usable_nolock(i)). */
void *dmm_evolved_class_malloc(dmm_chain_t *c, int i, size_t n);
void  dmm_evolved_class_free(dmm_chain_t *c, int i, void *p);
size_t dmm_evolved_class_usable(dmm_chain_t *c, int i, const void *p);
int   dmm_evolved_class_resize(dmm_chain_t *c, int i, void *p, size_t n);
/* Whether some allocator has a common case that calls nothing (a
 * constant); allocator i's, for a caller that holds no lock because the
 * process has one thread: a block, or NULL (free: 1, or 0), nothing done,
 * when the caller must take the locked way. */
int   dmm_evolved_has_fast(void);
void *dmm_evolved_class_malloc_fast(dmm_chain_t *c, int i, size_t n);
int   dmm_evolved_class_free_fast(dmm_chain_t *c, int i, void *p);
/* Whether allocator i's usable() may be asked without its lock (its
 * class's usable_nolock). */
int   dmm_evolved_usable_nolock(int i);
/* Whether dmm_hdr_usable() (core/alloc.h) sizes allocator i's blocks (its
 * class's hdr_usable). */
int   dmm_evolved_hdr_usable(int i);
/* The most usable bytes a block of allocator i can have, SIZE_MAX where
 * that is not known to codegen: at most the cache's max=, free need not
 * compare a block's size with it. */
size_t dmm_evolved_usable_max(int i);
/* The number of allocators; the cache line's max= and count= (0 and 0
 * without one). */
int      dmm_evolved_count(void);
unsigned dmm_evolved_cache_max(void);
unsigned dmm_evolved_cache_count(void);
/* The cache bins a block of the chain can lie in: 1, odd bins alone (its
 * classes size blocks from the header word: 16k - 8 bytes); 2, even alone
 * (sss: multiples of 16); 0, either (a constant). */
int      dmm_evolved_cache_parity(void);

#pragma GCC visibility pop

#endif
