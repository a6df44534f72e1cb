/* exact.c - exact segregated fit ("exact"; the paper's EXA): one free list
 * for every distinct block size requested in (lo, hi], created the first
 * time that size is requested.  Blocks, chunks, the top, splitting and
 * coalescing are the boundary-tag engine of segfit.c (segfit.h).
 *
 * Block size of a request n: n + 8 rounded up to 16, at least the minimum
 * block (32 SLL, 48 DLL, 64 BTREE).
 *
 * The map size -> list is a sorted array of (size, list) pairs, searched by
 * bisection; it starts in the allocator's state area and moves to META
 * pages from the page source (doubling; the old ones are given back) as new
 * sizes appear.  The list structs themselves never move (state area, then
 * META pages of 63 lists each).  Entry 0 is the "under" list, key 0.
 *
 * A free block of size S is listed under the largest requested size <= S
 * (the under list if S is below every requested size).  With split=no and
 * coalesce=no every free block has exactly its list's size, except the whole
 * rest of the top when it is too small to stay a block; with split=yes
 * (rests of splits) or coalesce=yes (merged blocks) a list holds sizes from
 * its own up to the next requested size.  When a new size k is created, the
 * blocks of the list below it that are >= k move to k's list.
 *
 * malloc: the list of its size, with the allocator's fit (exact: only
 * blocks of exactly that size; first, best: any block of that list, which
 * is never smaller) and order; if none and split=yes, the next non-empty
 * larger size's list (first fit), splitting the block found when the rest is
 * at least the minimum block; else carve from the top or a new chunk.
 * free, resize, chunk return: as segregated (coalesce=yes merges with free
 * neighbours and the top; wholly free chunks are given back). */
#include "allocators/classes/segfit.h"
#include "allocators/classes/registry.h"

#include <errno.h>
#include <string.h>

#define ENTS0 8u

static int grow(seg_t *s)
{
    size_t len = dmm_align_up(s->cap * 2 * sizeof(seg_ent_t), DMM_PAGE);
    seg_ent_t *e = dmm_pagesrc_get(s->ps, len, 0, DMM_OWNER_META);
    DMM_COST(s->cost, pagesrc_calls, 1);
    if (!e)
        return -1;
    memcpy(e, s->ents, s->n * sizeof *e);
    if (s->ents_meta) {
        DMM_COST(s->cost, pagesrc_calls, 1);
        dmm_pagesrc_put(s->ps, s->ents_meta, s->ents_meta_len);
    }
    s->ents = e;
    s->ents_meta = e;
    s->ents_meta_len = len;
    s->cap = len / sizeof *e;
    return 0;
}

static long exact_req_list(seg_t *s, size_t need)
{
    size_t i = dmm_seg_class_of(s, need);
    if (i > 0 && s->ents[i].key == need)
        return (long)i;
    if (s->n == s->cap && grow(s) != 0)
        return -1;
    dmm_flist_t *l = dmm_seg_new_list(s);
    if (!l)
        return -1;
    memmove(&s->ents[i + 2], &s->ents[i + 1], (s->n - i - 1) * sizeof s->ents[0]);
    s->ents[i + 1].key = need;
    s->ents[i + 1].l = l;
    s->n++;
    /* blocks of the list below that now belong to the new size */
    dmm_flist_t *below = s->ents[i].l;
    if (below->count) {
        uint8_t f = below->fit;
        below->fit = DMM_FIT_FIRST;
        size_t got;
        void *b;
        while ((b = dmm_flist_take(below, need, &got)))
            dmm_flist_insert(l, b, got);
        below->fit = f;
    }
    return (long)(i + 1);
}

static int exact_init(dmm_alloc_t *a)
{
    if (dmm_seg_setup(a) != 0)
        return -1;
    seg_t *s = a->state;
    s->exact = 1;
    s->req_list = exact_req_list;
    s->ents = dmm_seg_sa_alloc(s, ENTS0 * sizeof(seg_ent_t));
    s->cap = ENTS0;
    s->ents[0].key = 0;
    s->ents[0].l = dmm_seg_new_list(s);
    s->n = 1;
    return 0;
}

const dmm_class_ops_t dmm_class_exact = {
    .name = "exact",
    .options = DMM_OPT_SPLIT | DMM_OPT_COALESCE | DMM_OPT_LIST | DMM_OPT_FIT | DMM_OPT_ORDER,
    .init = exact_init,
    DMM_SEG_OPS,
};
