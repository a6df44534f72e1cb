/* registry.h - the allocator classes by id and by name: what a .dmm line's
 * first word names (allocators/chain/desc.c), what the chain sets up
 * (chain.c) and what the C emitter calls by name (codegen/emit). */
#ifndef DMM_CLASSES_REGISTRY_H
#define DMM_CLASSES_REGISTRY_H

#include "allocators/core/alloc.h"

/* The ops of each class (allocators/classes/<class>.c). */
extern const dmm_class_ops_t dmm_class_buddy_binary, dmm_class_buddy_fib,
    dmm_class_segregated, dmm_class_sss, dmm_class_exact, dmm_class_kingsley,
    dmm_class_lea, dmm_class_tlsf;

/* Ops for a class id, or NULL; the class name as written in .dmm text. */
const dmm_class_ops_t *dmm_class_ops(dmm_class_t c);
const char *dmm_class_name(dmm_class_t c);
/* The class's name in the paper (Table 1, Figure 3): "BuddySystemBinary",
 * ..., or NULL. */
const char *dmm_class_paper_name(dmm_class_t c);

/* Each class's usable(), also by name, so that the evolved library's free
 * calls it directly and link-time optimisation can put it inline
 * (dmm_seg_usable, of segregated and exact, is in segfit.h). */
size_t dmm_buddy_usable(dmm_alloc_t *a, const void *p);
size_t dmm_sss_usable(dmm_alloc_t *a, const void *p);
/* sss's malloc and free by name, for link-time inlining (dmm_class_sss's
 * ops are these); and their common cases alone, calling nothing (NULL or
 * 0 for the rest, with nothing done), for a caller with no stack frame. */
void  *dmm_sss_malloc(dmm_alloc_t *a, size_t n);
void   dmm_sss_free(dmm_alloc_t *a, void *p);
int    dmm_sss_resize(dmm_alloc_t *a, void *p, size_t n);
void  *dmm_sss_malloc_fast(dmm_alloc_t *a, size_t n);
int    dmm_sss_free_fast(dmm_alloc_t *a, void *p);
/* The same for an allocator known (to codegen, from its .dmm) to keep an
 * SLL under no release policy, in the order given (lifo 1, FIFO 0): those
 * tests folded away.  Never for any other. */
void  *dmm_sss_malloc_fast_sll(dmm_alloc_t *a, size_t n, int lifo);
int    dmm_sss_free_fast_sll(dmm_alloc_t *a, void *p, int lifo);
/* The same for an allocator known to keep a DLL (dll 1) or an SLL (0),
 * under a release policy of the form rel (dmm_sss_release_form) or none
 * (0): the common cases of either, the policy's bookkeeping included (NULL
 * or 0 where the queue of empty areas is involved).  Never for a BTREE. */
void  *dmm_sss_malloc_fast_known(dmm_alloc_t *a, size_t n, int dll, int rel, int lifo);
int    dmm_sss_free_fast_known(dmm_alloc_t *a, void *p, int dll, int rel, int lifo);
/* A release policy as sss's common cases take it: none; one they read at
 * run time (ANY: what every other form does too, only slower); one that
 * gives an empty area back at once (keep=0 or delay=0) or never (keep=inf
 * delay=inf; empty areas still serve again), where the allocator's clock
 * says nothing and they leave it alone. */
enum { DMM_SSS_REL_NONE = 0, DMM_SSS_REL_ANY, DMM_SSS_REL_AT_ONCE, DMM_SSS_REL_NEVER };
int    dmm_sss_release_form(const dmm_release_t *r);
/* The most usable bytes a block of an sss allocator of range d can have:
 * SIZE_MAX where a request of its range may get a one-block area (the
 * range reaches past sss's largest class).  Where it is not SIZE_MAX,
 * dmm_sss_usable_classed() is usable() without that case's test. */
size_t dmm_sss_usable_max(const dmm_alloc_desc_t *d);
size_t dmm_sss_usable_classed(dmm_alloc_t *a, const void *p);
size_t dmm_kingsley_usable(dmm_alloc_t *a, const void *p);
size_t dmm_lea_usable(dmm_alloc_t *a, const void *p);

#endif
