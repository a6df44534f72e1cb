/* freelist.h - the free-block containers the classes share: the paper's
 * data structures (SLL, DLL, BTREE), allocation mechanisms (FIRST, BEST,
 * EXACT fit) and policies (FIFO, LIFO), on nodes stored inside the free
 * blocks themselves (never malloc).
 *
 * A free block of `size` bytes at `block` holds a dmm_fnode_t at its start,
 * so a block must be at least dmm_flist_min_block(kind) bytes to be listed.
 *
 *   SLL    singly linked; FIFO appends at the tail, LIFO pushes at the head;
 *          take() scans from the head; remove() of a given block walks.
 *   DLL    doubly linked; as SLL, but remove() is O(1).
 *   BTREE  a balanced search tree (AVL) keyed by (size, insertion number),
 *          the number rising for FIFO and falling for LIFO, so that in-order
 *          is by size and, among equal sizes, policy order:
 *          BEST and EXACT find in O(log n); FIRST returns the first block in
 *          policy order that fits, i.e. among fitting sizes the smallest
 *          (the tree's order is by size), and among equal sizes the oldest
 *          (FIFO) or newest (LIFO).
 *
 *   FIRST  the first block in list order with size >= want;
 *   BEST   the smallest block with size >= want (ties by policy order);
 *   EXACT  only a block with size == want; NULL otherwise.
 *
 * Every node visited is counted with DMM_COST(cost, nodes, 1): SLL/DLL
 * take() the nodes scanned (FIRST: position of the block taken + 1; BEST:
 * the whole list, or up to the first perfect fit, which nothing beats;
 * EXACT: up to the first size == want), insert() 1, remove() SLL the nodes
 * walked, DLL 1; BTREE every node compared on the way down plus every node
 * retraced on the way up (heights, rotations) and, for a delete with two
 * children, the successor search.  cost may be NULL: nothing is counted.
 *
 * Preconditions: blocks are 16-byte aligned, sizes are multiples of 16 and
 * >= dmm_flist_min_block(kind); a block is listed in at most one list at a
 * time; walk()'s fn does not change the list.  check() reports any breach
 * it can see. */
#ifndef DMM_FREELIST_H
#define DMM_FREELIST_H

#include <stddef.h>
#include <stdint.h>

#include "allocators/core/alloc.h"

typedef struct dmm_fnode {
    size_t            size;
    struct dmm_fnode *next;     /* SLL, DLL; BTREE: left child */
    struct dmm_fnode *prev;     /* DLL; BTREE: right child */
    struct dmm_fnode *parent;   /* BTREE; DLL: a tag naming node and list */
    uint64_t          seq;      /* BTREE: insertion number, for FIFO/LIFO */
    int64_t           height;   /* BTREE: AVL height */
} dmm_fnode_t;

typedef struct dmm_flist {
    uint8_t      kind;          /* DMM_LIST_* */
    uint8_t      fit;           /* DMM_FIT_* */
    uint8_t      order;         /* DMM_ORDER_* */
    dmm_fnode_t *head, *tail;   /* SLL, DLL */
    dmm_fnode_t *root;          /* BTREE */
    size_t       count;
    size_t       bytes;         /* sum of sizes listed */
    uint64_t     seq;
    dmm_cost_t  *cost;
} dmm_flist_t;

/* Smallest block a list of this kind can hold (16-byte multiple). */
size_t dmm_flist_min_block(int kind);

void  dmm_flist_init(dmm_flist_t *l, int kind, int fit, int order, dmm_cost_t *cost);
/* List a free block; size >= dmm_flist_min_block(kind). */
static inline void dmm_flist_insert(dmm_flist_t *l, void *block, size_t size);
/* Unlist and return a block chosen by the list's fit and order for a
 * request of want bytes; *got = its size.  NULL if none fits. */
static inline void *dmm_flist_take(dmm_flist_t *l, size_t want, size_t *got);
/* The same for every kind: insert and take are these but for an SLL's
 * common cases, which they do inline (below). */
void  dmm_flist_insert_any(dmm_flist_t *l, void *block, size_t size);
void *dmm_flist_take_any(dmm_flist_t *l, size_t want, size_t *got);
/* Unlist a given block (when it is coalesced with a neighbour); 0 if it was
 * listed in l, -1 if not (nothing changes).  A block that is not listed is
 * handled safely as long as its first min_block bytes are readable, whatever
 * they hold: SLL walks the list (O(n)); DLL checks, in O(1), the tag that
 * insert() writes in the node and unlisting clears, and then the links of its
 * neighbours (memory that holds exactly this node's tag for this list by
 * chance would be trusted); BTREE searches the tree for the block's own
 * (size, seq) key and compares addresses (O(log n), exact). */
int   dmm_flist_remove(dmm_flist_t *l, void *block);
/* Unlist the blocks at an address in [lo, hi), in one walk of the list from
 * its head that stops once max are unlisted (SLL, DLL; every node visited
 * counted); the number unlisted.  BTREE: 0, nothing done (remove() each
 * block instead). */
size_t dmm_flist_drop_range(dmm_flist_t *l, const void *lo, const void *hi, size_t max);
/* Violations: broken links, a count or byte total that disagrees, tree
 * order or balance broken, a node smaller than the minimum.  0 = sound. */
size_t dmm_flist_check(const dmm_flist_t *l);
/* Call fn for every listed block, in list order (BTREE: in order, i.e. by
 * size, equal sizes in policy order). */
void  dmm_flist_walk(const dmm_flist_t *l, void (*fn)(void *block, size_t size, void *arg),
                     void *arg);

/* DLL: a listed node carries this tag in its `parent` field, so remove()
 * can tell a listed block from any other in O(1) without following garbage
 * pointers.  It names both the node and the list; unlisting clears it. */
#define DMM_FLIST_DLL_TAG ((uintptr_t)0x9E3779B97F4A7C15ull)
static inline dmm_fnode_t *dmm_flist_dll_tag(const dmm_flist_t *l, const dmm_fnode_t *n)
{
    return (dmm_fnode_t *)((uintptr_t)l ^ (uintptr_t)n ^ DMM_FLIST_DLL_TAG);
}

/* An SLL or a DLL inline: insert at either end; take nothing from an empty
 * list, and the head when it is exactly want bytes, which every fit takes
 * after one node (the lists of simple segregated storage, all of one size,
 * always).  The same blocks, links, tags and counted nodes as the _any
 * calls; a BTREE goes to them. */
static inline void dmm_flist_insert(dmm_flist_t *l, void *block, size_t size)
{
    if (l->kind == DMM_LIST_BTREE) {
        dmm_flist_insert_any(l, block, size);
        return;
    }
    dmm_fnode_t *n = block;
    int dll = l->kind == DMM_LIST_DLL;
    n->size = size;
    l->count++;
    l->bytes += size;
    l->seq++;
    if (DMM_COUNT && l->cost)
        DMM_COST(l->cost, nodes, 1);
    if (l->order == DMM_ORDER_LIFO || !l->head) {
        n->next = l->head;
        if (dll) {
            n->prev = NULL;
            if (l->head)
                l->head->prev = n;
        }
        if (!l->head)
            l->tail = n;
        l->head = n;
    } else {
        n->next = NULL;
        if (dll)
            n->prev = l->tail;
        l->tail->next = n;
        l->tail = n;
    }
    if (dll)
        n->parent = dmm_flist_dll_tag(l, n);
}

/* An SLL's or a DLL's head when it is exactly want bytes, unlisted and its
 * node counted as take() counts it; NULL, with nothing done or read but the
 * head, for an empty list, a BTREE or another size (where take() decides).
 * Calls nothing, so that a caller's common case needs no stack frame. */
static inline void *dmm_flist_take_head(dmm_flist_t *l, size_t want)
{
    dmm_fnode_t *h = l->head;
    if (l->kind == DMM_LIST_BTREE || !h || h->size != want)
        return NULL;
    if (DMM_COUNT && l->cost)
        DMM_COST(l->cost, nodes, 1);
    l->head = h->next;
    if (l->tail == h)
        l->tail = NULL;
    if (l->kind == DMM_LIST_DLL) {
        if (h->next)
            h->next->prev = NULL;
        h->parent = NULL;   /* the tag cleared */
    }
    l->count--;
    l->bytes -= want;
    return h;
}

static inline void *dmm_flist_take(dmm_flist_t *l, size_t want, size_t *got)
{
    if (l->kind != DMM_LIST_BTREE && !l->head)
        return NULL;   /* an empty list: no node read */
    void *h = dmm_flist_take_head(l, want);
    if (!h)
        return dmm_flist_take_any(l, want, got);
    if (got)
        *got = want;
    return h;
}

/* Unlist a block of a DLL known to be listed in l (its tag and links are
 * not checked, as remove() checks them): remove()'s one counted node, its
 * links, in O(1) and inline. */
static inline void dmm_flist_unlist_dll(dmm_flist_t *l, void *block)
{
    dmm_fnode_t *n = block;
    if (DMM_COUNT && l->cost)
        DMM_COST(l->cost, nodes, 1);
    if (n->prev)
        n->prev->next = n->next;
    else
        l->head = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        l->tail = n->prev;
    n->parent = NULL;
    l->count--;
    l->bytes -= n->size;
}

#endif
