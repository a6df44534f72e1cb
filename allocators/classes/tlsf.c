/* tlsf.c - two-level segregated fit ("tlsf"; Masmano, Ripoll, Crespo and
 * Real, ECRTS 2004), on the boundary-tag engine of segfit.c: malloc and
 * free in bounded time, whatever the heap holds.
 *
 * Size classes.  A free block of S bytes (a multiple of 16) is listed by
 * its first level, the power of two below it, and its second level, which
 * of 16 equal slices of that power it falls in: blocks under 256 bytes get
 * a list per 16-byte size (16 lists), and from 256 up, for
 * fl = floor(log2 S), list 16 + 16 (fl - 8) + ((S >> (fl - 4)) & 15).  The
 * class is computed, never searched.  An allocator over (lo, hi] keeps the
 * lists from the class of its smallest block to that of its largest (hi
 * infinite: up to 4 GiB), the last one open-ended.
 *
 * Good fit.  A request of a block of need bytes goes to the first list
 * whose every block is at least need (its own class when need is the
 * class's lower bound, else the next), so that its first block fits: no
 * list is walked.  When that list is empty, a bitmap of the lists that
 * hold blocks gives the next one in a word or two, whose first block is
 * split.  Frees coalesce with both neighbours at once (boundary tags) and
 * list the result in its class.  The wasted space is bounded too: a block
 * is at most 1/16 larger than the request it serves (plus the rounding to
 * 16 bytes), less the split-off rest.
 *
 * Options: TLSF always splits, coalesces, keeps doubly linked LIFO lists and
 * takes a list's first block: the .dmm options are ignored. */
#include "allocators/classes/segfit.h"
#include "allocators/classes/registry.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#define SMALL_LISTS 16u          /* one per 16-byte size under 256 */
#define SLICES      16u          /* second-level lists per power of two */
#define TOP_FL      31u          /* hi = inf: lists up to 4 GiB, then one more */

/* The class of a block size (a multiple of 16), counted from 0 for all of
 * them; and the smallest size of a class. */
static size_t tlsf_class(size_t S)
{
    if (S < 256)
        return S >> 4;
    unsigned fl = 63u - (unsigned)__builtin_clzll(S);
    return SMALL_LISTS + SLICES * (fl - 8) + ((S >> (fl - 4)) & (SLICES - 1));
}

static size_t tlsf_lower(size_t c)
{
    if (c < SMALL_LISTS)
        return c << 4;
    size_t fl = 8 + (c - SMALL_LISTS) / SLICES, sl = (c - SMALL_LISTS) % SLICES;
    return (SLICES + sl) << (fl - 4);
}

static size_t tlsf_map(const seg_t *s, size_t S)
{
    size_t c = tlsf_class(S);
    if (c < s->map_base)
        return 0;
    return c - s->map_base < s->n ? c - s->map_base : s->n - 1;
}

static long tlsf_req_list(seg_t *s, size_t need)
{
    size_t c = tlsf_class(need);
    if (tlsf_lower(c) != need)
        c++;                   /* the next class: every block of it fits */
    if (c < s->map_base)
        return 0;
    return (long)(c - s->map_base < s->n ? c - s->map_base : s->n - 1);
}

static int tlsf_init(dmm_alloc_t *a)
{
    /* what TLSF is, whatever the line said */
    a->desc.split = 1;
    a->desc.coalesce = 1;
    a->desc.list = DMM_LIST_DLL;
    a->desc.fit = DMM_FIT_FIRST;
    a->desc.order = DMM_ORDER_LIFO;
    if (dmm_seg_setup(a) != 0)
        return -1;
    seg_t *s = a->state;
    size_t bmin = dmm_seg_need(s, a->desc.lo + 1);
    size_t top = a->desc.hi == DMM_SIZE_INF || a->desc.hi > ((size_t)1 << TOP_FL)
                     ? (size_t)1 << TOP_FL
                     : dmm_seg_need(s, a->desc.hi);
    s->map_base = tlsf_class(bmin);
    size_t nl = tlsf_class(top) - s->map_base + 2;   /* and one open-ended list */
    size_t ents = nl * sizeof(seg_ent_t), words = (nl + 63) / 64;
    if (!(s->ents = dmm_seg_meta(s, ents + words * 8))) {
        a->state = NULL;
        return -1;
    }
    s->bits = (uint64_t *)((char *)s->ents + ents);
    memset(s->bits, 0, words * 8);
    s->cap = s->n = nl;
    s->map = tlsf_map;
    s->req_list = tlsf_req_list;
    for (size_t i = 0; i < nl; i++) {
        /* class first + i holds (lower(c) - 16 .. lower(c + 1) - 16]; the
         * keys are the largest size of each, as segfit.c's check reads them */
        s->ents[i].key = i + 1 == nl ? SIZE_MAX : tlsf_lower(s->map_base + i + 1) - 16;
        s->ents[i].l = dmm_seg_new_list(s);
        if (!s->ents[i].l) {
            dmm_seg_destroy(a);
            errno = ENOMEM;
            return -1;
        }
    }
    return 0;
}

const dmm_class_ops_t dmm_class_tlsf = {
    .name = "tlsf",
    .options = 0,
    .init = tlsf_init,
    DMM_SEG_OPS,
};
