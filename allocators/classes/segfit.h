/* segfit.h - the boundary-tag engine that the "segregated" and "exact"
 * classes share (implemented in segfit.c; segregated.c and exact.c add
 * their lists).  Private to those three files.
 *
 * Also "tlsf" (tlsf.c): its lists and the bitmap of the non-empty ones.
 *
 * Blocks.  A block of S bytes (S a multiple of 16) starts at B, with
 * B = 8 (mod 16); its header word at B is S | flags, its payload at B + 8 is
 * 16-aligned and S - 8 bytes usable.  Flags: bit 0 INUSE, bit 1 PFREE (the
 * block physically before is free, so the word at B - 8 is its footer), bit 2
 * FENCE (the end fencepost of a chunk, whose size field is the chunk length).
 * A free block holds its free-list node (freelist.h) at B + 8 and, when the
 * allocator coalesces, a footer word S at B + S - 8.  Without coalescing no
 * footer and no PFREE bit are kept (nothing would read them).  The smallest
 * block is dmm_flist_min_block(list) + 16 bytes (32 SLL, 48 DLL, 64 BTREE).
 *
 * Chunks.  From dmm_pagesrc_get(ps, len, 0, owner): a 40-byte chunk header
 * (links, length), the blocks tiling [chunk + 40, chunk + len - 8), and the
 * fencepost word at chunk + len - 8.  Standard chunks are 64 KiB; a block
 * that would not fit in one gets a chunk of its own, page-rounded.  Under
 * the chain's `grow by=pages` (DMM_GROW_PAGES) a new standard chunk is,
 * while the chunks hold less than 256 KiB, whole pages instead: as many as
 * the request needs, at least a quarter of what the chunks hold.
 *
 * The top.  The unused end of the newest standard chunk is one free block,
 * the top, listed nowhere; malloc carves from it when the lists have no
 * block.  Taking a new standard chunk lists the old top (or gives its chunk
 * back if the top covers all of it). */
#ifndef DMM_CLASSES_SEGFIT_H
#define DMM_CLASSES_SEGFIT_H

#include <stddef.h>
#include <stdint.h>

#include "allocators/core/alloc.h"
#include "allocators/core/freelist.h"

typedef struct seg_ent {
    size_t       key;   /* segregated: upper bound; exact: the block size */
    dmm_flist_t *l;
} seg_ent_t;

typedef struct seg_chunk {
    struct seg_chunk *next, *prev;
    size_t len;
    size_t spare[2];
} seg_chunk_t;

typedef struct seg seg_t;
struct seg {
    dmm_alloc_t *a;
    dmm_pagesrc_t *ps;
    dmm_cost_t *cost;
    uint8_t split, coalesce, kind, fit, order, exact;
    size_t minblk;
    seg_chunk_t *chunks;
    size_t held;            /* bytes of the chunks */
    uint8_t by_pages;       /* grow by=pages */
    char *top;              /* header of the top block, or NULL */
    size_t top_size;
    /* the lists: n entries sorted by key */
    size_t n, cap;
    seg_ent_t *ents;
    void *ents_meta;        /* META chunk holding ents, or NULL (state area) */
    size_t ents_meta_len;
    /* where new dmm_flist_t come from: the state area, then META pages;
     * list structs never move (DLL tags name the list's address) */
    char *sa_next;
    size_t sa_left;
    void *slabs;            /* META pages of lists, linked by their first word */
    char *slab_next;
    size_t slab_left;
    /* list index for a request of block size need (exact: creates it) */
    long (*req_list)(seg_t *s, size_t need);
    /* tlsf.c: the list of a block size computed (else: searched among the
     * keys), and one bit per list that holds blocks, so that the next such
     * list is found without visiting the empty ones; NULL for the others */
    size_t (*map)(const seg_t *s, size_t S);
    uint64_t *bits;
    size_t map_base;        /* tlsf: the class of list 0 */
};

/* Common set-up: fields from a->desc, the state in a->state_area.  0 or -1
 * with errno. */
int     dmm_seg_setup(dmm_alloc_t *a);
/* Bump bytes from the state area (16-aligned), or NULL. */
void   *dmm_seg_sa_alloc(seg_t *s, size_t len);
/* len bytes of META pages for the lists' table (s->ents_meta, given back
 * by destroy), or NULL with errno = ENOMEM. */
void   *dmm_seg_meta(seg_t *s, size_t len);
/* A new, initialised list struct (state area, then META pages); NULL with
 * errno = ENOMEM. */
dmm_flist_t *dmm_seg_new_list(seg_t *s);
/* The list index a free block of size S belongs to. */
size_t  dmm_seg_class_of(const seg_t *s, size_t S);
/* Block size for a request of n bytes; 0 if too large. */
size_t  dmm_seg_need(const seg_t *s, size_t n);

void   *dmm_seg_malloc(dmm_alloc_t *a, size_t n);
void    dmm_seg_free(dmm_alloc_t *a, void *p);
size_t  dmm_seg_usable(dmm_alloc_t *a, const void *p);
int     dmm_seg_resize(dmm_alloc_t *a, void *p, size_t n);
size_t  dmm_seg_check(dmm_alloc_t *a);
void    dmm_seg_destroy(dmm_alloc_t *a);

/* The ops every class of this engine shares: .name, .options and .init are
 * its own. */
#define DMM_SEG_OPS                                                                   \
    .malloc = dmm_seg_malloc, .free = dmm_seg_free, .usable_nolock = 1, .hdr_usable = 1, \
    .reads_grow = 1,                                                                   \
    .usable = dmm_seg_usable, .resize = dmm_seg_resize, .check = dmm_seg_check,          \
    .destroy = dmm_seg_destroy

#endif
