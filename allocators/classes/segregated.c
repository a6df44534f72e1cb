/* segregated.c - segregated free lists ("segregated"; the paper's S10 with
 * lists=10), on the boundary-tag engine of segfit.c.
 *
 * Size classes.  desc.lists lists (0 = 10), by block size (request + 8,
 * rounded up to 16, at least the minimum block).  With bmin the block size
 * of the smallest request lo + 1 and bmax that of hi, list i < lists - 1
 * holds the free blocks of size (b[i-1], b[i]] with
 *     b[i] = bmin << (k * i)          (b[-1] = 0)
 * and the last list every larger block (open-ended: coalesced blocks may be
 * larger than any request).  k = 1 (powers of two) unless the range spans
 * more doublings than there are lists, then k = ceil(log2(bmax/bmin) /
 * (lists - 1)); hi = inf counts as k = 1.  S10 over (0, inf] with DLL:
 * (0,48] (48,96] (96,192] ... (6144,12288] (12288,inf).
 *
 * malloc, free, resize: segfit.c. */
#include "allocators/classes/segfit.h"
#include "allocators/classes/registry.h"

#include <errno.h>
#include <stdint.h>

#define MAX_LISTS  1024u

static long seg_req_list(seg_t *s, size_t need)
{
    return (long)dmm_seg_class_of(s, need);
}

static int seg_init(dmm_alloc_t *a)
{
    if (dmm_seg_setup(a) != 0)
        return -1;
    seg_t *s = a->state;
    size_t nl = a->desc.lists ? a->desc.lists : 10;
    if (nl > MAX_LISTS) {
        a->state = NULL;
        errno = EINVAL;
        return -1;
    }
    s->req_list = seg_req_list;
    s->ents = dmm_seg_sa_alloc(s, nl * sizeof(seg_ent_t));
    if (!s->ents && !(s->ents = dmm_seg_meta(s, nl * sizeof(seg_ent_t)))) {
        a->state = NULL;
        return -1;
    }
    s->cap = s->n = nl;
    /* boundaries: bmin << (k * i), the last open-ended */
    size_t bmin = dmm_seg_need(s, a->desc.lo + 1);
    size_t bmax = a->desc.hi == DMM_SIZE_INF ? 0 : dmm_seg_need(s, a->desc.hi);
    unsigned k = 1;
    if (bmax > bmin && nl > 1) {
        unsigned dbl = 0;
        while (dbl < 63 && (bmin << dbl) < bmax)
            dbl++;
        k = (unsigned)((dbl + (nl - 1) - 1) / (nl - 1));
        if (k < 1)
            k = 1;
    }
    size_t b = bmin;
    for (size_t i = 0; i < nl; i++) {
        s->ents[i].key = i + 1 == nl ? SIZE_MAX : b;
        s->ents[i].l = dmm_seg_new_list(s);
        if (!s->ents[i].l) {
            dmm_seg_destroy(a);
            errno = ENOMEM;
            return -1;
        }
        for (unsigned j = 0; j < k; j++)
            b = b > SIZE_MAX / 2 ? SIZE_MAX - 1 : b * 2;
    }
    return 0;
}

const dmm_class_ops_t dmm_class_segregated = {
    .name = "segregated",
    .options = DMM_OPT_ALL,
    .init = seg_init,
    DMM_SEG_OPS,
};
