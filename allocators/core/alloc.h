/* alloc.h - the contract of an allocator class: one building block of a
 * DMM chain (paper section 3.2, Table 1), serving the request sizes in
 * (lo, hi] on memory it takes from the chain's page source.
 *
 * Rules every class keeps:
 * - never call malloc (or anything that might): its own state and any
 *   metadata come from dmm_pagesrc_get(..., DMM_OWNER_META) or from the
 *   state area the chain gives it;
 * - chunks for blocks are taken with dmm_pagesrc_get(ps, len, align,
 *   a->owner), so that the chain finds the owner of any block it returned
 *   from the page map, in O(1), without asking the class;
 * - every block it returns is 16-byte aligned and has at least the
 *   requested bytes usable; payload bytes are never read or written by the
 *   class (the simulator never backs them with real stores), only headers,
 *   boundary tags and free-list links;
 * - count its steps with DMM_COST(a->cost, field, n) (cost.h): every
 *   free-list or tree node visited, header read and write, split, coalesce
 *   and page-source call;
 * - check() walks every structure and returns the number of violations it
 *   finds (0 = consistent); the stress tests call it after every operation;
 * - not thread-safe by itself: the chain locks around each call.
 *
 * Options (dmm_alloc_desc_t) mean what the README's table says for each
 * class; a class ignores options that mean nothing for it, and says which
 * in the README. */
#ifndef DMM_CORE_ALLOC_H
#define DMM_CORE_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "allocators/core/cost.h"
#include "allocators/core/pagesrc.h"

#define DMM_ALIGN 16u
#define DMM_SIZE_INF SIZE_MAX     /* hi of an unbounded range */

typedef enum dmm_class {
    DMM_CLASS_NONE = 0,
    DMM_CLASS_BUDDY_BINARY,   /* "buddy-binary" */
    DMM_CLASS_BUDDY_FIB,      /* "buddy-fib" */
    DMM_CLASS_SEGREGATED,     /* "segregated": segregated free lists */
    DMM_CLASS_SSS,            /* "sss": simple segregated storage */
    DMM_CLASS_EXACT,          /* "exact": exact segregated fit */
    DMM_CLASS_KINGSLEY,       /* "kingsley" */
    DMM_CLASS_LEA,            /* "lea" */
    DMM_CLASS_TLSF,           /* "tlsf": two-level segregated fit, O(1) */
    DMM_CLASS_COUNT
} dmm_class_t;

enum { DMM_LIST_SLL = 0, DMM_LIST_DLL, DMM_LIST_BTREE };
enum { DMM_FIT_FIRST = 0, DMM_FIT_BEST, DMM_FIT_EXACT };
enum { DMM_ORDER_FIFO = 0, DMM_ORDER_LIFO };

/* One line of a .dmm description. */
typedef struct dmm_alloc_desc {
    dmm_class_t cls;
    size_t   lo, hi;          /* serves sizes n with lo < n <= hi */
    uint8_t  split, coalesce; /* 0 or 1 */
    uint8_t  list;            /* DMM_LIST_* */
    uint8_t  fit;             /* DMM_FIT_* */
    uint8_t  order;           /* DMM_ORDER_* */
    uint32_t lists;           /* segregated: number of lists; 0 = default */
} dmm_alloc_desc_t;

/* When a class gives memory it holds empty back to the page source (the
 * .dmm line `release keep=B delay=N`, chain/desc.h): an empty area waits
 * until it has stayed empty for `delay` calls of its allocator, or until the
 * allocator holds more than `keep` bytes of empty areas (the oldest go
 * first).  keep=0 or delay=0: at once; keep=inf delay=inf: never, but an
 * empty area may still serve another size.  on == 0 (no release line):
 * the class keeps what it keeps today.  Read by sss (empty areas) and lea
 * (keep= as its top's trim threshold); the other classes follow their own
 * fixed rules (README). */
typedef struct dmm_release {
    uint8_t  on;
    size_t   keep;            /* bytes; DMM_SIZE_INF: no bound */
    uint64_t delay;           /* calls; UINT64_MAX: no delay bound */
} dmm_release_t;

/* How a class takes memory from the page source (the .dmm line
 * `grow by=pages`, chain/desc.h): DMM_GROW_64K (no grow line) in 64 KiB
 * granules, the classes' own rule; DMM_GROW_PAGES, while the allocator
 * holds less than 256 KiB, in whole pages, at least a quarter of what it
 * holds, then in 64 KiB granules: a small heap is not held in 64 KiB
 * pieces.  Read by lea (its segments) and by segregated, exact and tlsf
 * (their standard chunks); the other classes keep their fixed rules
 * (README). */
enum { DMM_GROW_64K = 0, DMM_GROW_PAGES = 1 };

typedef struct dmm_alloc dmm_alloc_t;

/* The options of a .dmm line that a class reads (dmm_class_ops_t.options).
 * The others change nothing it does: dmm_desc_effective() (chain/desc.h)
 * sets them to their defaults, so that the search simulates two lines that
 * differ only there once (test_chain checks every class against its
 * claim). */
enum {
    DMM_OPT_SPLIT = 1, DMM_OPT_COALESCE = 2, DMM_OPT_LIST = 4, DMM_OPT_FIT = 8,
    DMM_OPT_ORDER = 16, DMM_OPT_LISTS = 32, DMM_OPT_ALL = 63
};

typedef struct dmm_class_ops {
    const char *name;         /* as written in .dmm text */
    unsigned    options;      /* DMM_OPT_* it reads */
    /* 1 when usable() of a block the caller holds reads only what no other
     * call of the allocator writes (a header fixed at allocation): the
     * chain's block cache then asks it without the allocator's lock. */
    unsigned    usable_nolock;
    /* 1 when, besides, dmm_hdr_usable() (below) gives the usable bytes of
     * its blocks of up to DMM_HDR_USABLE_EXACT of them, and never less than
     * usable() for the others: a block cache then sizes a block with no
     * call and no look at which allocator it came from. */
    unsigned    hdr_usable;
    /* 1 when it reads the chain's release policy (dmm_alloc_t.release). */
    unsigned    reads_release;
    /* 1 when it reads the chain's growth rule (dmm_alloc_t.grow). */
    unsigned    reads_grow;
    /* Set up a->state (a->state_area bytes are free to use; take more
     * from the page source as DMM_OWNER_META).  0, or -1 with errno. */
    int    (*init)(dmm_alloc_t *a);
    /* A block with at least n usable bytes, lo < n <= hi; NULL with errno
     * = ENOMEM when the page source is exhausted. */
    void  *(*malloc)(dmm_alloc_t *a, size_t n);
    void   (*free)(dmm_alloc_t *a, void *p);
    /* Usable bytes of a block this allocator returned. */
    size_t (*usable)(dmm_alloc_t *a, const void *p);
    /* Make block p hold n bytes without moving it (n in (lo, hi]): 0 if
     * done, -1 if it cannot (the chain then moves it). */
    int    (*resize)(dmm_alloc_t *a, void *p, size_t n);
    /* Violations found walking every structure; 0 = consistent. */
    size_t (*check)(dmm_alloc_t *a);
    /* Give every chunk back to the page source. */
    void   (*destroy)(dmm_alloc_t *a);
} dmm_class_ops_t;

/* The word before block p, its four flag bits off, less 8 (the classes
 * that set hdr_usable keep a block's size there), read without a lock:
 * only an allocated block's flag bits ever change under it. */
#define DMM_HDR_USABLE_EXACT ((size_t)64 << 10)
static inline size_t dmm_hdr_usable(const void *p)
{
    return (__atomic_load_n((const size_t *)p - 1, __ATOMIC_RELAXED) & ~(size_t)15) - 8;
}

#define DMM_STATE_AREA 1024   /* bytes of state each allocator gets inline */

struct dmm_alloc {
    const dmm_class_ops_t *ops;
    dmm_alloc_desc_t desc;
    unsigned         owner;   /* its id in the page map: 1 + index in the chain */
    dmm_pagesrc_t   *ps;
    dmm_cost_t      *cost;    /* the chain's counters */
    void            *state;   /* class-private; points into state_area or META pages */
    uint64_t         served;  /* requests served (malloc + resize) */
    dmm_release_t    release; /* the chain's release policy */
    uint8_t          grow;    /* the chain's growth rule, DMM_GROW_* */
    _Alignas(16) unsigned char state_area[DMM_STATE_AREA];
};

/* Helpers for classes. */
static inline size_t dmm_align_up(size_t n, size_t a) { return (n + a - 1) & ~(a - 1); }

/* Is a's description one a class can be set up with (options in range, a
 * non-empty range, a page source and counters)?  Classes check it in init(). */
static inline int dmm_alloc_desc_ok(const dmm_alloc_t *a)
{
    const dmm_alloc_desc_t *d = &a->desc;
    return a->ps && a->cost && d->list <= DMM_LIST_BTREE && d->fit <= DMM_FIT_EXACT &&
           d->order <= DMM_ORDER_LIFO && d->split <= 1 && d->coalesce <= 1 && d->lo < d->hi;
}

#endif
