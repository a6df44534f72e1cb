/* freelist.c - the free-block containers (freelist.h): SLL, DLL and an AVL
 * tree, all on nodes stored at the start of the free blocks themselves.
 *
 * Cost: every node whose fields a call reads is one DMM_COST(nodes) unit
 * (paper Figure 9).  Each call counts into a local and adds it to l->cost
 * once at the end; l->cost may be NULL (nothing is counted).
 *
 * No malloc, no recursion except check() on the tree, whose depth is the
 * tree's height and bounded (a corrupt deeper tree is a violation, not a
 * stack overflow). */
#include "allocators/core/freelist.h"

#include <stdbool.h>

/* Tree children live in the list links. */
#define LEFT(n)  ((n)->next)
#define RIGHT(n) ((n)->prev)

static inline void count_nodes(dmm_flist_t *l, uint64_t n)
{
    if (n && l->cost)
        DMM_COST(l->cost, nodes, n);
}

size_t dmm_flist_min_block(int kind)
{
    switch (kind) {
    case DMM_LIST_SLL: return 16;   /* size, next */
    case DMM_LIST_DLL: return 32;   /* size, next, prev (+ tag): 32 */
    default:           return 48;   /* the whole node */
    }
}

void dmm_flist_init(dmm_flist_t *l, int kind, int fit, int order, dmm_cost_t *cost)
{
    l->kind = (uint8_t)kind;
    l->fit = (uint8_t)fit;
    l->order = (uint8_t)order;
    l->head = l->tail = l->root = NULL;
    l->count = 0;
    l->bytes = 0;
    l->seq = 0;
    l->cost = cost;
}

/* ======================================================================
 * SLL and DLL
 * ====================================================================== */

static void list_insert(dmm_flist_t *l, dmm_fnode_t *n)
{
    bool dll = l->kind == DMM_LIST_DLL;
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
    } else {                    /* FIFO: append */
        n->next = NULL;
        if (dll)
            n->prev = l->tail;
        l->tail->next = n;
        l->tail = n;
    }
    if (dll)
        n->parent = dmm_flist_dll_tag(l, n);
}

/* Unlink n, whose predecessor in list order is pred (NULL: n is the head). */
static void list_unlink(dmm_flist_t *l, dmm_fnode_t *n, dmm_fnode_t *pred)
{
    if (pred)
        pred->next = n->next;
    else
        l->head = n->next;
    if (l->tail == n)
        l->tail = pred;
    if (l->kind == DMM_LIST_DLL) {
        if (n->next)
            n->next->prev = pred;
        n->parent = NULL;       /* clear the tag */
    }
}

static dmm_fnode_t *list_take(dmm_flist_t *l, size_t want)
{
    uint64_t visited = 0;
    dmm_fnode_t *pred = NULL, *best = NULL, *best_pred = NULL;
    for (dmm_fnode_t *n = l->head; n; pred = n, n = n->next) {
        visited++;
        size_t s = n->size;
        if (l->fit == DMM_FIT_EXACT) {
            if (s == want) { best = n; best_pred = pred; break; }
        } else if (s >= want) {
            if (l->fit == DMM_FIT_FIRST || s == want) {
                /* first fit; or a perfect fit, which no later node beats */
                best = n; best_pred = pred;
                break;
            }
            if (!best || s < best->size) { best = n; best_pred = pred; }
        }
    }
    count_nodes(l, visited);
    if (best)
        list_unlink(l, best, best_pred);
    return best;
}

static int sll_remove(dmm_flist_t *l, dmm_fnode_t *target)
{
    uint64_t visited = 0;
    dmm_fnode_t *pred = NULL;
    for (dmm_fnode_t *n = l->head; n; pred = n, n = n->next) {
        visited++;
        if (n == target) {
            count_nodes(l, visited);
            list_unlink(l, n, pred);
            return 0;
        }
    }
    count_nodes(l, visited);
    return -1;
}

static int dll_remove(dmm_flist_t *l, dmm_fnode_t *n)
{
    count_nodes(l, 1);
    if (n->parent != dmm_flist_dll_tag(l, n))
        return -1;
    /* Tagged: the links are ours; still make sure they agree. */
    if (n->prev ? n->prev->next != n : l->head != n)
        return -1;
    if (n->next ? n->next->prev != n : l->tail != n)
        return -1;
    list_unlink(l, n, n->prev);
    return 0;
}

/* ======================================================================
 * AVL tree keyed by (size, seq): seq ascending for FIFO, descending for
 * LIFO, so that in-order is (size, policy order) and the smallest fitting
 * block in policy order is the leftmost node with size >= want.
 * ====================================================================== */

static inline bool key_less(const dmm_flist_t *l, const dmm_fnode_t *a, const dmm_fnode_t *b)
{
    if (a->size != b->size)
        return a->size < b->size;
    return l->order == DMM_ORDER_LIFO ? a->seq > b->seq : a->seq < b->seq;
}

static inline int64_t ht(const dmm_fnode_t *n) { return n ? n->height : 0; }

static inline void fix_height(dmm_fnode_t *n)
{
    int64_t a = ht(LEFT(n)), b = ht(RIGHT(n));
    n->height = 1 + (a > b ? a : b);
}

static inline void replace_child(dmm_flist_t *l, dmm_fnode_t *parent, dmm_fnode_t *old,
                                 dmm_fnode_t *new_)
{
    if (!parent)
        l->root = new_;
    else if (LEFT(parent) == old)
        LEFT(parent) = new_;
    else
        RIGHT(parent) = new_;
}

static dmm_fnode_t *rotate_left(dmm_flist_t *l, dmm_fnode_t *x)
{
    dmm_fnode_t *y = RIGHT(x);
    RIGHT(x) = LEFT(y);
    if (LEFT(y))
        LEFT(y)->parent = x;
    y->parent = x->parent;
    replace_child(l, x->parent, x, y);
    LEFT(y) = x;
    x->parent = y;
    fix_height(x);
    fix_height(y);
    return y;
}

static dmm_fnode_t *rotate_right(dmm_flist_t *l, dmm_fnode_t *x)
{
    dmm_fnode_t *y = LEFT(x);
    LEFT(x) = RIGHT(y);
    if (RIGHT(y))
        RIGHT(y)->parent = x;
    y->parent = x->parent;
    replace_child(l, x->parent, x, y);
    RIGHT(y) = x;
    x->parent = y;
    fix_height(x);
    fix_height(y);
    return y;
}

/* Restore balance at n; returns the root of n's subtree afterwards. */
static dmm_fnode_t *rebalance(dmm_flist_t *l, dmm_fnode_t *n)
{
    int64_t bf = ht(LEFT(n)) - ht(RIGHT(n));
    if (bf > 1) {
        dmm_fnode_t *c = LEFT(n);
        if (ht(LEFT(c)) < ht(RIGHT(c)))
            rotate_left(l, c);
        return rotate_right(l, n);
    }
    if (bf < -1) {
        dmm_fnode_t *c = RIGHT(n);
        if (ht(RIGHT(c)) < ht(LEFT(c)))
            rotate_right(l, c);
        return rotate_left(l, n);
    }
    fix_height(n);
    return n;
}

/* Walk up from p fixing heights and balance until a subtree's height is
 * what it was (then nothing above changes).  Returns nodes visited. */
static uint64_t retrace(dmm_flist_t *l, dmm_fnode_t *p)
{
    uint64_t visited = 0;
    while (p) {
        visited++;
        int64_t old = p->height;
        p = rebalance(l, p);
        if (p->height == old)
            break;
        p = p->parent;
    }
    return visited;
}

static void tree_insert(dmm_flist_t *l, dmm_fnode_t *n)
{
    uint64_t visited = 0;
    dmm_fnode_t *p = NULL, *c = l->root;
    bool left = false;
    while (c) {
        visited++;
        p = c;
        left = key_less(l, n, c);
        c = left ? LEFT(c) : RIGHT(c);
    }
    LEFT(n) = RIGHT(n) = NULL;
    n->parent = p;
    n->height = 1;
    if (!p)
        l->root = n;
    else if (left)
        LEFT(p) = n;
    else
        RIGHT(p) = n;
    visited += retrace(l, p);
    count_nodes(l, visited);
}

static void tree_delete(dmm_flist_t *l, dmm_fnode_t *z)
{
    uint64_t visited = 0;
    dmm_fnode_t *p;
    if (!LEFT(z) || !RIGHT(z)) {
        dmm_fnode_t *child = LEFT(z) ? LEFT(z) : RIGHT(z);
        p = z->parent;
        replace_child(l, p, z, child);
        if (child)
            child->parent = p;
    } else {
        dmm_fnode_t *y = RIGHT(z);          /* z's successor */
        visited++;
        while (LEFT(y)) {
            y = LEFT(y);
            visited++;
        }
        if (y->parent == z) {
            p = y;
        } else {
            p = y->parent;
            LEFT(p) = RIGHT(y);
            if (RIGHT(y))
                RIGHT(y)->parent = p;
            RIGHT(y) = RIGHT(z);
            RIGHT(y)->parent = y;
        }
        LEFT(y) = LEFT(z);
        LEFT(y)->parent = y;
        y->parent = z->parent;
        replace_child(l, z->parent, z, y);
        y->height = z->height;
    }
    visited += retrace(l, p);
    count_nodes(l, visited);
}

static dmm_fnode_t *tree_take(dmm_flist_t *l, size_t want)
{
    uint64_t visited = 0;
    dmm_fnode_t *best = NULL;
    for (dmm_fnode_t *n = l->root; n;) {
        visited++;
        if (n->size >= want) {
            best = n;
            n = LEFT(n);
        } else {
            n = RIGHT(n);
        }
    }
    count_nodes(l, visited);
    if (!best || (l->fit == DMM_FIT_EXACT && best->size != want))
        return NULL;
    tree_delete(l, best);
    return best;
}

/* The block's own node holds its key; search for it.  Exact: keys are
 * unique among listed nodes, so only the block itself matches. */
static int tree_remove(dmm_flist_t *l, dmm_fnode_t *target)
{
    uint64_t visited = 0;
    for (dmm_fnode_t *n = l->root; n;) {
        visited++;
        if (n == target) {
            count_nodes(l, visited);
            tree_delete(l, n);
            return 0;
        }
        n = key_less(l, target, n) ? LEFT(n) : RIGHT(n);
    }
    count_nodes(l, visited);
    return -1;
}

/* ======================================================================
 * The API
 * ====================================================================== */

void dmm_flist_insert_any(dmm_flist_t *l, void *block, size_t size)
{
    dmm_fnode_t *n = block;
    n->size = size;
    l->count++;
    l->bytes += size;
    uint64_t seq = l->seq++;
    if (l->kind == DMM_LIST_BTREE) {
        n->seq = seq;
        tree_insert(l, n);
    } else {
        count_nodes(l, 1);
        list_insert(l, n);
    }
}

void *dmm_flist_take_any(dmm_flist_t *l, size_t want, size_t *got)
{
    dmm_fnode_t *n = l->kind == DMM_LIST_BTREE ? tree_take(l, want) : list_take(l, want);
    if (!n)
        return NULL;
    l->count--;
    l->bytes -= n->size;
    if (got)
        *got = n->size;
    return n;
}

int dmm_flist_remove(dmm_flist_t *l, void *block)
{
    dmm_fnode_t *n = block;
    int r;
    if (!n || l->count == 0)
        return -1;
    switch (l->kind) {
    case DMM_LIST_SLL: r = sll_remove(l, n); break;
    case DMM_LIST_DLL: r = dll_remove(l, n); break;
    default:           r = tree_remove(l, n); break;
    }
    if (r == 0) {
        l->count--;
        l->bytes -= n->size;
    }
    return r;
}

size_t dmm_flist_drop_range(dmm_flist_t *l, const void *lo, const void *hi, size_t max)
{
    if (l->kind == DMM_LIST_BTREE)
        return 0;
    uint64_t visited = 0;
    size_t dropped = 0;
    dmm_fnode_t *pred = NULL;
    for (dmm_fnode_t *n = l->head, *next; n && dropped < max; n = next) {
        visited++;
        next = n->next;
        if ((const char *)n >= (const char *)lo && (const char *)n < (const char *)hi) {
            list_unlink(l, n, pred);
            l->count--;
            l->bytes -= n->size;
            dropped++;
        } else {
            pred = n;
        }
    }
    count_nodes(l, visited);
    return dropped;
}

/* ---- check ---- */

static size_t node_check(const dmm_flist_t *l, const dmm_fnode_t *n)
{
    size_t bad = 0;
    if ((uintptr_t)n % DMM_ALIGN)
        bad++;
    if (n->size < dmm_flist_min_block(l->kind))
        bad++;
    if (n->size % DMM_ALIGN)
        bad++;
    return bad;
}

static size_t list_check(const dmm_flist_t *l)
{
    size_t bad = 0, n_seen = 0, bytes = 0;
    bool dll = l->kind == DMM_LIST_DLL;
    const dmm_fnode_t *prev = NULL, *n = l->head;
    while (n) {
        if (n_seen == l->count) {   /* more nodes than counted, or a cycle */
            bad++;
            break;
        }
        n_seen++;
        bytes += n->size;
        bad += node_check(l, n);
        if (dll) {
            if (n->prev != prev)
                bad++;
            if (n->parent != dmm_flist_dll_tag(l, n))
                bad++;
        }
        prev = n;
        n = n->next;
    }
    if (!n && l->tail != prev)      /* tail is not the last node */
        bad++;
    if (n_seen != l->count && !n)
        bad++;
    if (bytes != l->bytes && !n)
        bad++;
    if (l->root)
        bad++;
    return bad;
}

#define TREE_MAX_DEPTH 128  /* an AVL tree of 2^64 nodes is under 93 high */

typedef struct tree_ck {
    const dmm_flist_t *l;
    const dmm_fnode_t *last;    /* previous node in order */
    size_t seen, bytes, bad;
    bool   stop;
} tree_ck_t;

/* Returns the subtree's real height. */
static int64_t tree_check_rec(tree_ck_t *ck, const dmm_fnode_t *n, const dmm_fnode_t *parent,
                              int depth)
{
    if (!n || ck->stop)
        return 0;
    if (depth > TREE_MAX_DEPTH || ck->seen >= ck->l->count) {
        ck->bad++;              /* too deep, or more nodes than counted */
        ck->stop = true;
        return 0;
    }
    if (n->parent != parent) {
        ck->bad++;
        return 0;               /* do not follow a link we cannot trust */
    }
    int64_t hl = tree_check_rec(ck, LEFT(n), n, depth + 1);
    if (ck->stop)
        return 0;
    ck->seen++;
    ck->bytes += n->size;
    ck->bad += node_check(ck->l, n);
    if (n->seq >= ck->l->seq)
        ck->bad++;
    if (ck->last && !key_less(ck->l, ck->last, n))
        ck->bad++;              /* in-order keys must rise */
    ck->last = n;
    int64_t hr = tree_check_rec(ck, RIGHT(n), n, depth + 1);
    if (ck->stop)
        return 0;
    int64_t h = 1 + (hl > hr ? hl : hr);
    if (n->height != h)
        ck->bad++;
    if (hl - hr > 1 || hr - hl > 1)
        ck->bad++;
    return h;
}

static size_t tree_check(const dmm_flist_t *l)
{
    tree_ck_t ck = { .l = l };
    tree_check_rec(&ck, l->root, NULL, 0);
    if (!ck.stop) {
        if (ck.seen != l->count)
            ck.bad++;
        if (ck.bytes != l->bytes)
            ck.bad++;
    }
    if (l->head || l->tail)
        ck.bad++;
    return ck.bad;
}

size_t dmm_flist_check(const dmm_flist_t *l)
{
    if (l->kind > DMM_LIST_BTREE || l->fit > DMM_FIT_EXACT || l->order > DMM_ORDER_LIFO)
        return 1;
    return l->kind == DMM_LIST_BTREE ? tree_check(l) : list_check(l);
}

/* ---- walk ---- */

void dmm_flist_walk(const dmm_flist_t *l, void (*fn)(void *block, size_t size, void *arg),
                    void *arg)
{
    if (l->kind != DMM_LIST_BTREE) {
        for (dmm_fnode_t *n = l->head, *next; n; n = next) {
            next = n->next;     /* fn may overwrite the block */
            fn(n, n->size, arg);
        }
        return;
    }
    /* In order, iteratively through the parent links. */
    dmm_fnode_t *n = l->root;
    if (!n)
        return;
    while (LEFT(n))
        n = LEFT(n);
    while (n) {
        dmm_fnode_t *next;
        if (RIGHT(n)) {
            next = RIGHT(n);
            while (LEFT(next))
                next = LEFT(next);
        } else {
            dmm_fnode_t *c = n;
            next = n->parent;
            while (next && RIGHT(next) == c) {
                c = next;
                next = next->parent;
            }
        }
        fn(n, n->size, arg);
        n = next;
    }
}
