/* pagesrc.h - where every allocator of a chain gets its memory, and the page
 * map that names the owner of any block in O(1).
 *
 * A page source reserves large address ranges (arenas, 64 MiB-aligned) and
 * hands out page-granular chunks from them, first fit by address among the
 * ranges given back, else from the arena's bump pointer.  Chunk addresses
 * are the same offsets from the arena base in both modes:
 *
 *   DMM_PS_REAL  (libdmm.so, libdmm_evolved.so) reserves arenas inaccessible,
 *                opens fresh space as the bump pointer passes it (mprotect),
 *                and drops the pages of a chunk given back (madvise
 *                DONTNEED: one system call; the range stays mapped);
 *   DMM_PS_SIM   (dmm sim) reserves the arena readable and writable once and
 *                only counts: allocators write their headers, payloads are
 *                never touched, so a simulation holds little memory.
 *
 * Because both modes run the same code on the same offsets, the footprint a
 * simulation predicts is the footprint the library holds, by construction.
 * The footprint counts the chunks held plus the page-map pages that cover
 * the used part of each arena (one byte per 4 KiB page; none while the
 * first arena's map is the page source's map0, below).
 *
 * A pool (dmm_pagesrc_pool, the .dmm line `pool bytes=N`): the first N
 * bytes of the first arena are held from the start, opened and their pages
 * populated at once (REAL: MADV_POPULATE_WRITE, else a write to each
 * page), and never given back: a chunk inside them costs no system call
 * and no page fault, which bounds the time of the calls that take it (the
 * real-time allocators' preallocated pool).  The footprint counts the pool
 * whole from the start, and a chunk only for its part beyond it; fresh
 * pages and system calls are counted only there too, in both modes.
 *
 * Huge pages (dmm_pagesrc_huge, the .dmm line `pages huge=yes`): the
 * arenas are marked for transparent huge pages (REAL: MADV_HUGEPAGE) and
 * held in whole 2 MiB extents.  An extent is held, and counted whole in the
 * footprint, from the first chunk page in it to the last one given back;
 * then its pages go back at once (one madvise for the extent, or for a run
 * of them), and none before: so the footprint is what the process holds,
 * and an extent faults in once (one 2 MiB fault, counted as
 * DMM_HUGE_FAULT_PAGES fresh pages, instead of 512).  The pool, if any, is
 * rounded up to whole extents.  Moves (dmm_pagesrc_move) are refused.
 * Without huge pages the arenas are marked MADV_NOHUGEPAGE (REAL), so that
 * a kernel that backs every large mapping with huge pages does not hold
 * 2 MiB for a chunk of 4 KiB: the footprint is what the process holds
 * either way.
 *
 * Faulting in ahead (dmm_pagesrc_prefault; REAL, with huge pages): once an
 * arena has 64 MiB open, each time the bump opens more, the extent after it is
 * opened too and handed to the helper thread of prefault.h, which faults
 * it in while the program runs on; when the bump gets there, its pages are
 * resident.  Nothing else changes: the footprint counts an extent from its
 * first chunk page, as without it (so it stays equal to the simulated
 * one), and what is faulted in ahead -- at most one extent an arena -- is
 * resident memory outside it.
 *
 * Thread-safe (a spinlock; page-source calls are rare).  Allocates nothing
 * through malloc. */
#ifndef DMM_PAGESRC_H
#define DMM_PAGESRC_H

#include <stddef.h>
#include <stdint.h>

#include "allocators/core/cost.h"

#define DMM_PAGE          4096u
#define DMM_ARENA_ALIGN   (64u << 20)
#define DMM_MAX_ARENAS    64
#define DMM_MAX_FREE_RANGES 4096
#define DMM_MAP_INLINE    512     /* pages: 2 MiB of the first arena */
#define DMM_EXTENT        (2u << 20)   /* a huge page (x86-64, arm64 with 4 KiB pages) */
/* What a fresh 2 MiB extent's one fault costs, in fresh 4 KiB pages' faults
 * (measured on this project's VM: 0.13 ms against 9 us; on bare metal,
 * where a 4 KiB fault is far cheaper, the ratio is larger: the zeroing of
 * 2 MiB dominates). */
#define DMM_HUGE_FAULT_PAGES 14
/* Chunks of at least DMM_RETAIN_MIN given back are kept, pages and all, up
 * to a budget (DMM_RETAIN_BYTES unless dmm_pagesrc_retain() set another;
 * the .dmm line `retain bytes=N`) in at most max(8, N / 128 KiB) slots
 * (DMM_RETAIN_SLOTS at most), for the next request of the same length: a
 * program that frees and allocates large blocks in turn then pays neither
 * a system call nor page faults.  Retained chunks are still held from the
 * OS and counted in the footprint, but they never raise its peak: a request
 * that no retained chunk of its length serves, and that fresh pages would
 * take past the peak, gets the head of the shortest longer one (its tail
 * dropped), else the oldest are dropped until the fresh pages fit under the
 * peak.  A budget of 0 gives every chunk back at once. */
#define DMM_RETAIN_MIN      (64u << 10)
#define DMM_RETAIN_BYTES    (1u << 20)
#define DMM_RETAIN_SLOTS    1024

/* Owner ids in the page map.  1..DMM_OWNER_MAX_ALLOC are the allocators of
 * a chain, in order. */
enum {
    DMM_OWNER_NONE = 0,
    DMM_OWNER_MAX_ALLOC = 240,
    DMM_OWNER_ROOM = 252,     /* a chunk's room to grow (dmm_pagesrc_get_room) */
    DMM_OWNER_META = 253,     /* allocator metadata, never a block */
    DMM_OWNER_LARGE = 254,    /* the chain's fallback path */
};

enum { DMM_PS_REAL = 0, DMM_PS_SIM = 1 };

typedef struct dmm_arena {
    uintptr_t base;           /* DMM_ARENA_ALIGN-aligned */
    size_t    size;           /* reserved bytes */
    size_t    used;           /* bump offset */
    uint8_t  *map;            /* one owner byte per page of the arena: map_mem,
                                 or the page source's map0 (see there) */
    uint8_t  *map_mem;        /* the map's own mapping */
    size_t    map_pages;      /* map pages counted in the footprint */
    void     *raw;            /* what mmap returned, for munmap */
    size_t    raw_len;
    size_t    opened;         /* bytes from base open for use (REAL: mprotect'ed) */
    uint16_t *ext;            /* huge pages: chunk pages held in each extent */
    size_t    ext_pages;      /* pages of ext counted in the footprint */
    size_t    ahead;          /* REAL, prefaulting: bytes from base open and
                                 asked of the helper (beyond opened) */
} dmm_arena_t;

typedef struct dmm_range {
    uintptr_t start;
    size_t    len;
} dmm_range_t;

typedef struct dmm_pagesrc {
    int         mode;
    int         lock;
    int         narenas;
    int         huge;         /* arenas held in 2 MiB extents (dmm_pagesrc_huge) */
    int         prefault;     /* REAL, huge: extents faulted in ahead (dmm_pagesrc_prefault) */
    int         kept_dirty;   /* a drop's madvise failed (locked pages): no range
                                 given back is known to read as zero */
    dmm_arena_t *newest;      /* arenas[narenas - 1], published after it;
                                 before any, an empty arena (never NULL) */
    size_t      nfree;
    size_t      nretained, retained_bytes;
    size_t      retain_max;   /* the budget of retained bytes */
    size_t      retain_slots; /* and of retained chunks */
    size_t      footprint;    /* bytes held: chunks out, retained ones, page-map pages */
    size_t      chunk_bytes;  /* bytes of the chunks handed out and not given back */
    size_t      peak;         /* highest footprint */
    uint64_t    calls;        /* get + put */
    uint64_t    moves;        /* dmm_pagesrc_move calls */
    size_t      arena_size;   /* reservation size for new arenas */
    uintptr_t   pool_lo, pool_hi; /* the pool's addresses; equal: none */
    dmm_cost_t *cost;         /* where fresh pages are counted, or NULL */
    /* The first arena's page map while its bump offset covers at most
     * DMM_MAP_INLINE pages: here, beside the fields every call reads, so a
     * small heap holds no page for its map (and the footprint counts none);
     * past that the map moves to its own mapping, counted as before. */
    uint8_t     map0[DMM_MAP_INLINE];
    /* The tables, last: init leaves them as they are (each is read only
     * below its count), so their pages are touched only as they fill. */
    dmm_arena_t arenas[DMM_MAX_ARENAS];
    dmm_range_t free[DMM_MAX_FREE_RANGES];  /* given back, sorted by address */
    dmm_range_t retained[DMM_RETAIN_SLOTS]; /* given back, kept; oldest first */
} dmm_pagesrc_t;

/* 0, or -1 with errno set.  The struct may live anywhere (it is large:
 * keep one per chain, not on a small stack). */
int  dmm_pagesrc_init(dmm_pagesrc_t *ps, int mode);
void dmm_pagesrc_fini(dmm_pagesrc_t *ps);
/* Hold a pool of bytes (rounded up to DMM_PAGE) from now on; before the
 * first get.  0, or -1 with errno (nothing held). */
int  dmm_pagesrc_pool(dmm_pagesrc_t *ps, size_t bytes);
/* Hold memory in 2 MiB extents of transparent huge pages from now on
 * (see above); before the pool and the first get.  0, or -1 with errno. */
int  dmm_pagesrc_huge(dmm_pagesrc_t *ps);
/* Keep up to bytes of large chunks given back (see DMM_RETAIN_MIN), from
 * now on; 0 keeps none.  Before the first put (the chunks retained so far
 * are not looked at again). */
void dmm_pagesrc_retain(dmm_pagesrc_t *ps, size_t bytes);
/* REAL page sources with huge pages: fault the next extent in ahead from now
 * on (on = 1; see above), or not (0, as at init).  Ignored otherwise. */
void dmm_pagesrc_prefault(dmm_pagesrc_t *ps, int on);
/* Populate the pool's pages (REAL): at its start, and in a forked child
 * (its pages are its parent's until written); every page written once from
 * user space too (see pagesrc.c); nothing without a pool. */
void dmm_pagesrc_pool_populate(dmm_pagesrc_t *ps);

/* A chunk of len bytes (rounded up to DMM_PAGE) aligned to align (a power
 * of two; 0 = DMM_PAGE), marked as owned by owner.  Its contents are
 * unspecified.  NULL with errno = ENOMEM when no memory is left. */
void *dmm_pagesrc_get(dmm_pagesrc_t *ps, size_t len, size_t align, unsigned owner);
/* dmm_pagesrc_get, and in zero[] the part of the chunk known to read as
 * zero, [zero[0], zero[1]) bytes from its start (empty when equal): REAL,
 * calloc need not write it, nor fault its pages in.  Fresh arena space,
 * and pages of a range given back that were dropped since they were last
 * handed out; not a retained chunk, nor the pool's pages, nor with huge
 * pages those of an extent held meanwhile. */
void *dmm_pagesrc_get_zero(dmm_pagesrc_t *ps, size_t len, size_t align, unsigned owner,
                           size_t zero[2]);
/* A chunk of len bytes (rounded up to DMM_PAGE) from fresh arena space,
 * with room bytes after it kept for it to grow into (dmm_pagesrc_extend):
 * the room is neither held nor counted in the footprint (REAL: opened,
 * never touched, so not resident), and no other chunk is placed in it
 * until the chunk is given back.  NULL with errno = ENOMEM. */
void *dmm_pagesrc_get_room(dmm_pagesrc_t *ps, size_t len, size_t room, unsigned owner);
/* Grow chunk [p, p + oldlen) to newlen bytes where it is (both rounded up
 * to DMM_PAGE): into its room, or past the bump pointer when it ends there,
 * or into a range given back that starts where it ends; the new pages are
 * counted as a get's are.  0, or -1 (nothing changed: no such space). */
int   dmm_pagesrc_extend(dmm_pagesrc_t *ps, void *p, size_t oldlen, size_t newlen);
/* Give back a chunk (or the whole of one) that get returned, and its room
 * if it has one. */
void  dmm_pagesrc_put(dmm_pagesrc_t *ps, void *p, size_t len);
/* Move the pages of [from, from + len) to [to, to + len), two chunks out
 * (page-aligned, disjoint): the contents go along without a copy (REAL:
 * mremap, then `from` mapped afresh; SIM: nothing to move), two system
 * calls counted in both modes.  0, or -1 with errno (nothing moved; after
 * DMM_MAX_MOVES moves, always, in both modes alike: each splits a mapping). */
#define DMM_MAX_MOVES 4096
int   dmm_pagesrc_move(dmm_pagesrc_t *ps, void *from, void *to, size_t len);
/* Bytes held for no chunk that is out: page-map pages and retained chunks
 * (footprint - chunk_bytes). */
static inline size_t dmm_pagesrc_overhead(const dmm_pagesrc_t *ps)
{
    return ps->footprint - ps->chunk_bytes;
}
/* Bytes of page-map pages held, and of the extent counts' pages with huge
 * pages (part of the footprint; they only grow, as the arenas' bump
 * pointers do). */
static inline size_t dmm_pagesrc_map_bytes(const dmm_pagesrc_t *ps)
{
    size_t b = 0;
    for (int i = 0; i < ps->narenas; i++)
        b += (ps->arenas[i].map_pages + ps->arenas[i].ext_pages) * DMM_PAGE;
    return b;
}
/* The owner of the page holding p, or DMM_OWNER_NONE if p is not ours:
 * the newest arena looked at inline, the others by a call. */
unsigned dmm_pagesrc_owner_older(const dmm_pagesrc_t *ps, const void *p);
static inline unsigned dmm_pagesrc_owner(const dmm_pagesrc_t *ps, const void *p)
{
    const dmm_arena_t *a = __atomic_load_n(&ps->newest, __ATOMIC_ACQUIRE);
    uintptr_t off = (uintptr_t)p - a->base;
    if (__builtin_expect(off < __atomic_load_n(&a->used, __ATOMIC_ACQUIRE), 1))
        return __atomic_load_n(&a->map, __ATOMIC_RELAXED)[off / DMM_PAGE];
    return dmm_pagesrc_owner_older(ps, p);
}

/* Tests only: every chunk a simulated page source hands out from now on is
 * filled with this byte (-1: left as it is, the default).  A simulation
 * gives the same result whatever the fill, or some class reads memory it
 * did not write (test_sim_fill). */
void dmm_pagesrc_sim_fill(int byte);

#endif
