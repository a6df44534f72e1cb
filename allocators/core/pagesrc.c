/* pagesrc.c - arenas, chunks and the page map (see pagesrc.h).
 *
 * Chunks are placed by offset from the arena base: first fit by address
 * among ranges given back (kept sorted and merged), else the bump pointer.
 * Nothing here depends on the absolute address an arena got, so the
 * simulated and the real page source place every chunk at the same offsets
 * and count the same footprint. */
#include "allocators/core/pagesrc.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "allocators/core/prefault.h"
#include "tracer/base/spinlock.h"

#define MIN_ARENA   (64u << 20)
#define DEF_ARENA   ((size_t)64 << 30)    /* 64 GiB of address space */

static size_t round_up(size_t n, size_t a)
{
    return (n + a - 1) & ~(a - 1);
}

/* Simulated arenas outlive their page source.  A simulation touches the
 * headers of its chunks, and each first touch of a page is a page fault
 * (several microseconds on a VM, against tens of nanoseconds for the
 * operation that caused it); a search simulates thousands of candidates one
 * after another.  So a simulated page source's arenas are kept here when it
 * ends, pages and all, and the next one takes them back.  Nothing is zeroed:
 * in simulation a chunk given back keeps its bytes too (no madvise), and no
 * class reads a byte of a chunk that it did not write first
 * (test_sim_fill checks that against every class: dmm_pagesrc_sim_fill). */
#define SPARES 4
static int         g_spare_lock;
static int         g_nspare;
static dmm_arena_t g_spare[SPARES];
static int         g_sim_fill = -1;

void dmm_pagesrc_sim_fill(int byte)
{
    __atomic_store_n(&g_sim_fill, byte, __ATOMIC_RELAXED);
}

/* A simulated chunk handed out: filled for the test that proves nothing
 * depends on its contents. */
static void sim_handout(const dmm_pagesrc_t *ps, uintptr_t p, size_t len)
{
    int fill = __atomic_load_n(&g_sim_fill, __ATOMIC_RELAXED);
    if (ps->mode == DMM_PS_SIM && fill >= 0)
        memset((void *)p, fill, len);
}

/* A kept arena of exactly size bytes (placement depends on the size), its
 * page map cleared; 1, or 0 when none is kept. */
static int spare_take(size_t size, dmm_arena_t *out)
{
    int found = 0;
    dmm_spin_lock(&g_spare_lock);
    for (int i = g_nspare; i-- > 0;) {
        if (g_spare[i].size != size)
            continue;
        *out = g_spare[i];
        g_spare[i] = g_spare[--g_nspare];
        found = 1;
        break;
    }
    dmm_spin_unlock(&g_spare_lock);
    if (found) {
        memset(out->map_mem, DMM_OWNER_NONE, (out->used + DMM_PAGE - 1) / DMM_PAGE);
        out->used = 0;
        out->opened = 0;
        out->ahead = 0;
        out->map_pages = 0;
    }
    return found;
}

/* Keep a simulated arena for the next page source; 0, or -1 when the
 * spares are full. */
static int spare_put(const dmm_arena_t *a)
{
    int kept = 0;
    dmm_spin_lock(&g_spare_lock);
    if (g_nspare < SPARES) {
        g_spare[g_nspare] = *a;
        g_spare[g_nspare++].map = a->map_mem;   /* not its page source's map0 */
        kept = 1;
    }
    dmm_spin_unlock(&g_spare_lock);
    return kept ? 0 : -1;
}

static void account(dmm_pagesrc_t *ps, ptrdiff_t delta)
{
    ps->footprint = (size_t)((ptrdiff_t)ps->footprint + delta);
    if (ps->footprint > ps->peak)
        ps->peak = ps->footprint;
}

/* How many bytes of [s, s+len) lie beyond the pool (all of them when there
 * is none): what a chunk there adds to the footprint, and the pages that
 * are fresh or dropped. */
static size_t beyond_pool(const dmm_pagesrc_t *ps, uintptr_t s, size_t len)
{
    if (s >= ps->pool_hi || s + len <= ps->pool_lo)
        return len;
    size_t in = (s + len < ps->pool_hi ? s + len : ps->pool_hi) - (s > ps->pool_lo ? s : ps->pool_lo);
    return len - in;
}

/* The length of an arena's extent counts (huge pages). */
static size_t ext_len(const dmm_arena_t *a)
{
    return round_up(a->size / DMM_EXTENT * sizeof a->ext[0], DMM_PAGE);
}

/* What ps->newest points to before the first arena: nothing is below its
 * used (0), so dmm_pagesrc_owner() needs no NULL test. */
static dmm_arena_t g_no_arena;

int dmm_pagesrc_init(dmm_pagesrc_t *ps, int mode)
{
    memset(ps, 0, offsetof(dmm_pagesrc_t, arenas));
    ps->newest = &g_no_arena;
    if (mode != DMM_PS_REAL && mode != DMM_PS_SIM) {
        errno = EINVAL;
        return -1;
    }
    ps->mode = mode;
    ps->arena_size = DEF_ARENA;
    dmm_pagesrc_retain(ps, DMM_RETAIN_BYTES);
    return 0;
}

int dmm_pagesrc_huge(dmm_pagesrc_t *ps)
{
    if (ps->narenas || ps->pool_hi) {
        errno = EINVAL;
        return -1;
    }
    ps->huge = 1;
    return 0;
}

void dmm_pagesrc_prefault(dmm_pagesrc_t *ps, int on)
{
    ps->prefault = on && ps->mode == DMM_PS_REAL;
}

void dmm_pagesrc_retain(dmm_pagesrc_t *ps, size_t bytes)
{
    size_t slots = bytes / (128u << 10);
    ps->retain_max = bytes;
    ps->retain_slots = slots < 8 ? 8 : slots > DMM_RETAIN_SLOTS ? DMM_RETAIN_SLOTS : slots;
}

void dmm_pagesrc_fini(dmm_pagesrc_t *ps)
{
    for (int i = 0; i < ps->narenas; i++) {
        dmm_arena_t *a = &ps->arenas[i];
        if (a->ext)
            munmap(a->ext, ext_len(a));
        a->ext = NULL;
        a->ext_pages = 0;
        if (ps->mode == DMM_PS_SIM && spare_put(a) == 0)
            continue;
        munmap(a->raw, a->raw_len);
        munmap(a->map_mem, round_up(a->size / DMM_PAGE, DMM_PAGE));
    }
    ps->narenas = 0;
    ps->newest = &g_no_arena;
    ps->nfree = 0;
}

static dmm_arena_t *new_arena(dmm_pagesrc_t *ps, size_t len);
static void map_cover(dmm_arena_t *a, size_t used);

void dmm_pagesrc_pool_populate(dmm_pagesrc_t *ps)
{
    if (ps->mode != DMM_PS_REAL || ps->pool_hi == ps->pool_lo)
        return;
    char *p = (char *)ps->pool_lo;
    size_t bytes = ps->pool_hi - ps->pool_lo;
    /* The kernel populates the pages in one call (Linux 5.14; an older one
     * faults each in below instead); then a write to each from here all
     * the same: under a hypervisor that shadows the page tables (this
     * project's VM), the first access from user space to each page traps
     * even when the kernel populated it (measured there, `dmm replay
     * --runs 5` of a perl trace on a pooled TLSF: malloc's p99 4.5 us
     * without these writes, 108 ns with them).  Atomic adds of 0, that a
     * block being written meanwhile would not mind. */
    (void)madvise(p, bytes, 23 /* MADV_POPULATE_WRITE */);
    for (size_t off = 0; off < bytes; off += DMM_PAGE)
        __atomic_fetch_add((volatile char *)p + off, 0, __ATOMIC_RELAXED);
    /* and the pool's page map when it has pages of its own (see
     * dmm_pagesrc_pool) */
    const dmm_arena_t *a = &ps->arenas[0];
    if (a->map == a->map_mem)
        for (size_t off = 0; off < a->map_pages * DMM_PAGE; off += DMM_PAGE)
            __atomic_fetch_add((volatile char *)a->map_mem + off, 0, __ATOMIC_RELAXED);
}

int dmm_pagesrc_pool(dmm_pagesrc_t *ps, size_t bytes)
{
    if (ps->narenas || ps->pool_hi || bytes == 0 || bytes > SIZE_MAX / 2) {
        errno = EINVAL;
        return -1;
    }
    bytes = round_up(bytes, ps->huge ? DMM_EXTENT : DMM_PAGE);
    dmm_spin_lock(&ps->lock);
    dmm_arena_t *a = new_arena(ps, bytes);
    int rc = a ? 0 : -1;
    if (a && ps->mode == DMM_PS_REAL && mprotect((void *)a->base, bytes, PROT_READ | PROT_WRITE))
        rc = -1;
    if (rc == 0) {
        ps->pool_lo = a->base;
        ps->pool_hi = a->base + bytes;
        a->opened = bytes;
        account(ps, (ptrdiff_t)bytes);
        /* A pool past map0's span has its page map in pages of its own from
         * the start, held (counted) and populated with it: the map's first
         * page, in a fresh mapping, would otherwise be touched inside the
         * malloc whose chunk first passes that span (about 200 us on this
         * project's VM, the costliest call of a pooled TLSF's replay). */
        if (bytes / DMM_PAGE > DMM_MAP_INLINE) {
            map_cover(a, bytes);
            size_t pages = round_up(bytes / DMM_PAGE, DMM_PAGE) / DMM_PAGE;
            account(ps, (ptrdiff_t)(pages * DMM_PAGE));
            a->map_pages = pages;
        }
        dmm_pagesrc_pool_populate(ps);
    }
    dmm_spin_unlock(&ps->lock);
    if (rc != 0)
        errno = ENOMEM;
    return rc;
}

/* A new arena's map: the first arena's starts in map0 (see pagesrc.h). */
static void map_start(dmm_pagesrc_t *ps, dmm_arena_t *a)
{
    a->map = a->map_mem;
    if (a == &ps->arenas[0]) {
        memset(ps->map0, DMM_OWNER_NONE, sizeof ps->map0);
        a->map = ps->map0;
    }
}

/* A new arena's huge pages.  With them: its extent counts, and (REAL)
 * the kernel told to back it with huge pages where it can (a kernel
 * without them refuses, and the arena is held in extents all the same).
 * Without: (REAL) told not to, so that a kernel that gives every large
 * mapping huge pages (transparent_hugepage=always) does not hold 2 MiB for
 * a chunk of 4 KiB, nor fill the holes of a heap: the footprint stays what
 * the process holds.  0, or -1. */
static int thp_start(dmm_pagesrc_t *ps, dmm_arena_t *a)
{
    int err = errno;   /* the malloc that got here keeps it */
    if (ps->mode == DMM_PS_REAL)
        (void)madvise((void *)a->base, a->size, ps->huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    errno = err;
    if (!ps->huge)
        return 0;
    void *e = mmap(NULL, ext_len(a), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (e == MAP_FAILED)
        return -1;
    a->ext = e;
    a->ext_pages = 0;
    return 0;
}

/* Reserve a new arena of at least len bytes, DMM_ARENA_ALIGN-aligned.
 * Large reservations may fail under a small RLIMIT_AS: halve and retry. */
static dmm_arena_t *new_arena(dmm_pagesrc_t *ps, size_t len)
{
    if (ps->narenas == DMM_MAX_ARENAS)
        return NULL;
    size_t want = ps->arena_size;
    if (want < round_up(len, DMM_ARENA_ALIGN))
        want = round_up(len, DMM_ARENA_ALIGN);
    int prot = ps->mode == DMM_PS_SIM ? PROT_READ | PROT_WRITE : PROT_NONE;
    if (ps->mode == DMM_PS_SIM) {
        dmm_arena_t *a = &ps->arenas[ps->narenas];
        if (spare_take(want, a)) {
            map_start(ps, a);
            if (thp_start(ps, a) != 0) {
                munmap(a->raw, a->raw_len);
                munmap(a->map_mem, round_up(a->size / DMM_PAGE, DMM_PAGE));
                return NULL;
            }
            __atomic_store_n(&ps->narenas, ps->narenas + 1, __ATOMIC_RELEASE);
            __atomic_store_n(&ps->newest, a, __ATOMIC_RELEASE);
            return a;
        }
    }
    for (;;) {
        size_t raw_len = want + DMM_ARENA_ALIGN;
        void *raw = mmap(NULL, raw_len, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (raw != MAP_FAILED) {
            size_t map_len = round_up(want / DMM_PAGE, DMM_PAGE);
            void *map = mmap(NULL, map_len, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            if (map == MAP_FAILED) {
                munmap(raw, raw_len);
            } else {
                dmm_arena_t *a = &ps->arenas[ps->narenas];
                memset(a, 0, sizeof *a);
                a->raw = raw;
                a->raw_len = raw_len;
                a->base = round_up((uintptr_t)raw, DMM_ARENA_ALIGN);
                a->size = want;
                a->map = a->map_mem = map;
                map_start(ps, a);
                if (thp_start(ps, a) != 0) {
                    munmap(raw, raw_len);
                    munmap(map, map_len);
                    return NULL;
                }
                /* owner() reads arenas without the lock: publish it whole */
                __atomic_store_n(&ps->narenas, ps->narenas + 1, __ATOMIC_RELEASE);
                __atomic_store_n(&ps->newest, a, __ATOMIC_RELEASE);
                /* later arenas: no bigger than what worked */
                ps->arena_size = want;
                return a;
            }
        }
        if (want / 2 < MIN_ARENA || want / 2 < round_up(len, DMM_PAGE))
            return NULL;
        want /= 2;
    }
}

static dmm_arena_t *arena_of(const dmm_pagesrc_t *ps, uintptr_t p)
{
    for (int i = 0; i < ps->narenas; i++) {
        const dmm_arena_t *a = &ps->arenas[i];
        if (p >= a->base && p - a->base < a->size)
            return (dmm_arena_t *)a;
    }
    return NULL;
}

/* Mark pages [p, p+len) for owner.  Ranges given back stay readable and
 * writable (their pages dropped), so taking one again costs no system call;
 * only fresh arena space is opened (real mode) by the bump path. */
static void take(dmm_pagesrc_t *ps, dmm_arena_t *a, uintptr_t p, size_t len, unsigned owner)
{
    memset(a->map + (p - a->base) / DMM_PAGE, (int)owner, len / DMM_PAGE);
    sim_handout(ps, p, len);
    size_t fresh = beyond_pool(ps, p, len);
    ps->chunk_bytes += len;
    if (!ps->huge) {
        account(ps, (ptrdiff_t)fresh);
        if (ps->cost)
            DMM_COST(ps->cost, pages, fresh / DMM_PAGE);
        return;
    }
    /* huge pages: each extent of the part beyond the pool (which ends on
     * an extent) is held from its first page taken, and faults in once */
    for (uintptr_t q = p + len - fresh; q < p + len;) {
        size_t e = (q - a->base) / DMM_EXTENT;
        uintptr_t end = a->base + (e + 1) * DMM_EXTENT;
        size_t n = ((end < p + len ? end : p + len) - q) / DMM_PAGE;
        if (a->ext[e] == 0) {
            account(ps, (ptrdiff_t)DMM_EXTENT);
            if (ps->cost)
                DMM_COST(ps->cost, pages, DMM_HUGE_FAULT_PAGES);
        }
        a->ext[e] = (uint16_t)(a->ext[e] + n);
        q = end;
    }
}

/* Huge pages: the extent counts cover the arena's open part (their pages
 * counted as the page map's are). */
static void ext_cover(dmm_pagesrc_t *ps, dmm_arena_t *a)
{
    if (!ps->huge)
        return;
    size_t exts = (a->opened + DMM_EXTENT - 1) / DMM_EXTENT;
    size_t pages = round_up(exts * sizeof a->ext[0], DMM_PAGE) / DMM_PAGE;
    if (pages > a->ext_pages) {
        account(ps, (ptrdiff_t)((pages - a->ext_pages) * DMM_PAGE));
        if (ps->cost)
            DMM_COST(ps->cost, pages, pages - a->ext_pages);
        a->ext_pages = pages;
    }
}

/* Before the bump offset passes used: a map that covers it (map0 moved
 * to the map's own mapping past DMM_MAP_INLINE pages). */
static void map_cover(dmm_arena_t *a, size_t used)
{
    if (a->map == a->map_mem || (used + DMM_PAGE - 1) / DMM_PAGE <= DMM_MAP_INLINE)
        return;
    memcpy(a->map_mem, a->map, DMM_MAP_INLINE);
    /* owner() reads map without the lock: the old one stays right for every
     * page below used (a live block's page keeps its owner) */
    __atomic_store_n(&a->map, a->map_mem, __ATOMIC_RELEASE);
}

/* The bump pointer moved: count the page-map pages that now cover it. */
static void grow_used(dmm_pagesrc_t *ps, dmm_arena_t *a, size_t used)
{
    /* owner() reads used without the lock: the page map below it is set */
    __atomic_store_n(&a->used, used, __ATOMIC_RELEASE);
    if (a->map != a->map_mem)
        return;   /* map0: no page of its own */
    size_t pages = round_up(used / DMM_PAGE, DMM_PAGE) / DMM_PAGE;
    if (pages > a->map_pages) {
        account(ps, (ptrdiff_t)((pages - a->map_pages) * DMM_PAGE));
        if (ps->cost)
            DMM_COST(ps->cost, pages, pages - a->map_pages);
        a->map_pages = pages;
    }
}

/* Remember [start, start+len) as free, merged with its neighbours. */
static void free_range(dmm_pagesrc_t *ps, uintptr_t start, size_t len)
{
    size_t lo = 0, hi = ps->nfree;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (ps->free[mid].start < start)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t i = lo;   /* insert before free[i] */
    int merge_prev = i > 0 && ps->free[i - 1].start + ps->free[i - 1].len == start &&
                     arena_of(ps, start) == arena_of(ps, ps->free[i - 1].start);
    int merge_next = i < ps->nfree && start + len == ps->free[i].start &&
                     arena_of(ps, start) == arena_of(ps, ps->free[i].start);
    if (merge_prev && merge_next) {
        ps->free[i - 1].len += len + ps->free[i].len;
        memmove(&ps->free[i], &ps->free[i + 1], (ps->nfree - i - 1) * sizeof ps->free[0]);
        ps->nfree--;
    } else if (merge_prev) {
        ps->free[i - 1].len += len;
    } else if (merge_next) {
        ps->free[i].start = start;
        ps->free[i].len += len;
    } else if (ps->nfree < DMM_MAX_FREE_RANGES) {
        memmove(&ps->free[i + 1], &ps->free[i], (ps->nfree - i) * sizeof ps->free[0]);
        ps->free[i].start = start;
        ps->free[i].len = len;
        ps->nfree++;
    }
    /* else: the table is full; the address range is not reused (the
     * footprint has dropped all the same) */
}

static void drop(dmm_pagesrc_t *ps, uintptr_t s, size_t len);
static void drop_oldest(dmm_pagesrc_t *ps);

/* A retained chunk for len bytes, or 0 (caller locks): one of that length,
 * newest first; else, when fresh pages would take the footprint past its
 * peak, the shortest longer one, its head handed out (pages and all, no
 * fault) and its tail dropped.  Retained chunks never raise the peak: when
 * none serves, the oldest are dropped while fresh pages would. */
static uintptr_t from_retained(dmm_pagesrc_t *ps, size_t len, size_t align, unsigned owner)
{
    size_t best = SIZE_MAX;
    for (size_t i = ps->nretained; i-- > 0;) {
        dmm_range_t r = ps->retained[i];
        if (r.len < len || r.start % align)
            continue;
        if (best == SIZE_MAX || r.len < ps->retained[best].len)
            best = i;
        if (r.len == len)
            break;
    }
    int over = ps->footprint + len > ps->peak;
    if (best != SIZE_MAX && (ps->retained[best].len == len || over)) {
        dmm_range_t r = ps->retained[best];
        memmove(&ps->retained[best], &ps->retained[best + 1],
                (ps->nretained - best - 1) * sizeof ps->retained[0]);
        ps->nretained--;
        ps->retained_bytes -= r.len;
        dmm_arena_t *a = arena_of(ps, r.start);
        memset(a->map + (r.start - a->base) / DMM_PAGE, (int)owner, len / DMM_PAGE);
        ps->chunk_bytes += len;
        sim_handout(ps, r.start, len);
        if (r.len > len)
            drop(ps, r.start + len, r.len - len);
        return r.start;
    }
    while (ps->nretained && ps->footprint + len > ps->peak)
        drop_oldest(ps);
    return 0;
}

static uintptr_t bump(dmm_pagesrc_t *ps, size_t len, size_t align, unsigned owner, size_t room);

/* The part of [s, s+len) of arena a, a range given back, that reads as
 * zero, into zero[] (offsets from s; empty when zero[0] == zero[1]): pages
 * dropped, or never handed out.  Not the pool's (they stay), nor with huge
 * pages those of an extent that is held (its pages go back only with its
 * last one): only the range's first and last extents may be, those in
 * between hold none of its pages.  Caller locks, before take(). */
static void range_zero(const dmm_pagesrc_t *ps, const dmm_arena_t *a, uintptr_t s, size_t len,
                       size_t zero[2])
{
    zero[0] = zero[1] = 0;
    if (ps->kept_dirty)
        return;
    uintptr_t lo = s + len - beyond_pool(ps, s, len), hi = s + len;
    if (ps->huge && lo < hi) {
        size_t e = (lo - a->base) / DMM_EXTENT;
        if (a->ext[e])
            lo = a->base + (e + 1) * DMM_EXTENT;
        e = (hi - 1 - a->base) / DMM_EXTENT;
        if (lo < hi && a->ext[e])
            hi = a->base + e * DMM_EXTENT;
    }
    if (lo < hi) {
        zero[0] = lo - s;
        zero[1] = hi - s;
    }
}

void *dmm_pagesrc_get(dmm_pagesrc_t *ps, size_t len, size_t align, unsigned owner)
{
    size_t zero[2];
    return dmm_pagesrc_get_zero(ps, len, align, owner, zero);
}

void *dmm_pagesrc_get_zero(dmm_pagesrc_t *ps, size_t len, size_t align, unsigned owner,
                           size_t zero[2])
{
    zero[0] = zero[1] = 0;
    if (len == 0 || len > SIZE_MAX - DMM_ARENA_ALIGN) {
        errno = ENOMEM;
        return NULL;
    }
    if (align < DMM_PAGE)
        align = DMM_PAGE;
    if ((align & (align - 1)) || align > DMM_ARENA_ALIGN) {
        errno = EINVAL;
        return NULL;
    }
    len = round_up(len, DMM_PAGE);
    dmm_spin_lock(&ps->lock);
    ps->calls++;
    uintptr_t kept = from_retained(ps, len, align, owner);
    if (kept) {
        dmm_spin_unlock(&ps->lock);
        return (void *)kept;
    }
    /* first fit by address among the ranges given back */
    for (size_t i = 0; i < ps->nfree; i++) {
        dmm_range_t *r = &ps->free[i];
        uintptr_t s = round_up(r->start, align);
        if (s - r->start > r->len || r->len - (s - r->start) < len)
            continue;
        dmm_arena_t *a = arena_of(ps, r->start);
        uintptr_t rstart = r->start;
        size_t rlen = r->len;
        range_zero(ps, a, s, len, zero);
        take(ps, a, s, len, owner);
        /* cut [s, s+len) out of the range */
        memmove(&ps->free[i], &ps->free[i + 1], (ps->nfree - i - 1) * sizeof ps->free[0]);
        ps->nfree--;
        if (s > rstart)
            free_range(ps, rstart, s - rstart);
        if (rstart + rlen > s + len)
            free_range(ps, s + len, rstart + rlen - (s + len));
        dmm_spin_unlock(&ps->lock);
        return (void *)s;
    }
    uintptr_t s = bump(ps, len, align, owner, 0);
    dmm_spin_unlock(&ps->lock);
    if (!s)
        errno = ENOMEM;
    if (s)   /* never handed out (the pool's pages too: populated with zeros) */
        zero[1] = len;
    return (void *)s;
}

void *dmm_pagesrc_get_room(dmm_pagesrc_t *ps, size_t len, size_t room, unsigned owner)
{
    if (len == 0 || len > SIZE_MAX / 4 || room > SIZE_MAX / 4) {
        errno = ENOMEM;
        return NULL;
    }
    len = round_up(len, DMM_PAGE);
    room = round_up(room, DMM_PAGE);
    dmm_spin_lock(&ps->lock);
    ps->calls++;
    uintptr_t s = bump(ps, len, DMM_PAGE, owner, room);
    dmm_spin_unlock(&ps->lock);
    if (!s)
        errno = ENOMEM;
    return (void *)s;
}

/* Faulting in ahead (pagesrc.h): the extent after a's opened space opened
 * and handed to the helper, unless it was already; from PREFAULT_FROM bytes
 * opened on, so that the extent faulted in ahead and never used, at the
 * heap's peak, is at most 1/32 of it (3 % of RSS; measured on sqlite3, 28
 * MB, and git pack-objects, 47 MB: no time gained, and 4 % more RSS for the
 * latter); and only where the helper has a core of its own (pinned to one
 * CPU, or with threads of its own, a program gains nothing).  A refusal (no
 * helper, or its queue full) leaves it open: it faults in when used. */
#define PREFAULT_FROM ((size_t)32 * DMM_EXTENT)
static void prefault_next(dmm_arena_t *a)
{
    if (a->opened < PREFAULT_FROM)
        return;
    size_t from = a->ahead > a->opened ? a->ahead : a->opened;
    size_t to = a->opened + DMM_EXTENT;
    if (to > a->size)
        to = a->size;
    if (to <= from)
        return;
    int err = errno;
    if (dmm_prefault_has_core() &&
        mprotect((void *)(a->base + from), to - from, PROT_READ | PROT_WRITE) == 0) {
        a->ahead = to;
        (void)dmm_prefault((void *)(a->base + from), to - from);
    }
    errno = err;
}

/* Open arena a's space up to end (REAL: mprotect; with huge pages, up to
 * the end of its extent: a huge page lies in one mapping), counting the
 * system call and the extent counts' pages.  0, or -1 (nothing opened). */
static int open_upto(dmm_pagesrc_t *ps, dmm_arena_t *a, uintptr_t end)
{
    uintptr_t open_from = a->base + a->opened;
    if (end <= open_from)
        return 0;
    uintptr_t open_to = ps->huge ? round_up(end, DMM_EXTENT) : end;
    if (open_to > a->base + a->size)
        open_to = a->base + a->size;
    if (a->ahead > a->opened)   /* opened ahead already */
        open_from = a->base + a->ahead;
    if (ps->mode == DMM_PS_REAL && open_to > open_from &&
        mprotect((void *)open_from, open_to - open_from, PROT_READ | PROT_WRITE) != 0)
        return -1;
    a->opened = open_to - a->base;
    if (ps->prefault && ps->huge)
        prefault_next(a);
    ext_cover(ps, a);
    if (ps->cost)
        DMM_COST(ps->cost, syscalls, 1);   /* the mprotect, in both modes */
    return 0;
}

/* A chunk of len bytes from the bump pointer of the first arena with room
 * for it and room bytes after it (marked DMM_OWNER_ROOM), or 0.  Caller
 * locks. */
static uintptr_t bump(dmm_pagesrc_t *ps, size_t len, size_t align, unsigned owner, size_t room)
{
    for (int k = 0; k <= ps->narenas; k++) {
        dmm_arena_t *a;
        if (k < ps->narenas) {
            a = &ps->arenas[k];
        } else {
            a = new_arena(ps, len + room + align);
            if (!a)
                break;
        }
        uintptr_t s = round_up(a->base + a->used, align);
        if (s + len + room > a->base + a->size)
            continue;
        uintptr_t old = a->base + a->used;
        /* open the fresh space, alignment gap and room included: the gap
         * joins the free ranges and must be usable like them (the pool is
         * open), the room is the chunk's to grow into */
        if (open_upto(ps, a, s + len + room) != 0)
            break;
        map_cover(a, s + len + room - a->base);
        take(ps, a, s, len, owner);
        if (room)
            memset(a->map + (s + len - a->base) / DMM_PAGE, DMM_OWNER_ROOM, room / DMM_PAGE);
        grow_used(ps, a, s + len + room - a->base);
        if (s > old)
            free_range(ps, old, s - old);
        return s;
    }
    return 0;
}

/* The pages of arena a that follow end and are the room of the chunk that
 * ends there: how many bytes of them. */
static size_t room_after(const dmm_arena_t *a, uintptr_t end)
{
    size_t n = 0;
    for (uintptr_t q = end; q < a->base + a->used && a->map[(q - a->base) / DMM_PAGE] == DMM_OWNER_ROOM;
         q += DMM_PAGE)
        n += DMM_PAGE;
    return n;
}

int dmm_pagesrc_extend(dmm_pagesrc_t *ps, void *p, size_t oldlen, size_t newlen)
{
    oldlen = round_up(oldlen, DMM_PAGE);
    newlen = round_up(newlen, DMM_PAGE);
    if (newlen <= oldlen)
        return newlen == oldlen ? 0 : -1;
    uintptr_t e = (uintptr_t)p + oldlen;
    size_t d = newlen - oldlen;
    int rc = -1;
    dmm_spin_lock(&ps->lock);
    ps->calls++;
    dmm_arena_t *a = arena_of(ps, (uintptr_t)p);
    if (!a || e > a->base + a->used || newlen > a->size) {
        dmm_spin_unlock(&ps->lock);
        return -1;
    }
    unsigned owner = a->map[((uintptr_t)p - a->base) / DMM_PAGE];
    size_t room = room_after(a, e);
    if (room >= d) {
        /* into its room */
        take(ps, a, e, d, owner);
        rc = 0;
    } else if (e + room == a->base + a->used) {
        /* its room, if any, ends at the bump pointer: past it */
        if (e + d <= a->base + a->size && open_upto(ps, a, e + d) == 0) {
            map_cover(a, e + d - a->base);
            take(ps, a, e, d, owner);
            grow_used(ps, a, e + d - a->base);
            rc = 0;
        }
    } else if (!room) {
        /* into a range given back that starts where the chunk ends */
        for (size_t i = 0; i < ps->nfree && ps->free[i].start <= e; i++) {
            dmm_range_t r = ps->free[i];
            if (r.start != e || r.len < d)
                continue;
            take(ps, a, e, d, owner);
            memmove(&ps->free[i], &ps->free[i + 1], (ps->nfree - i - 1) * sizeof ps->free[0]);
            ps->nfree--;
            if (r.len > d)
                free_range(ps, e + d, r.len - d);
            rc = 0;
            break;
        }
    }
    dmm_spin_unlock(&ps->lock);
    return rc;
}

/* madvise(DONTNEED) [s, s+len), errno kept (free keeps errno, POSIX 2024,
 * and the allocators' frees leave it to this, their one system call), and
 * counted in both modes. */
static void dontneed(dmm_pagesrc_t *ps, uintptr_t s, size_t len)
{
    if (ps->mode == DMM_PS_REAL) {
        int e = errno;
        if (madvise((void *)s, len, MADV_DONTNEED) != 0)
            ps->kept_dirty = 1;   /* mlock'ed: the pages keep what they held */
        errno = e;
    }
    if (ps->cost)
        DMM_COST(ps->cost, syscalls, 1);
}

/* Huge pages: [s, s+len) (beyond the pool) no longer held; each extent
 * whose last held page it was goes back whole, a run of them in one call. */
static void drop_extents(dmm_pagesrc_t *ps, uintptr_t s, size_t len)
{
    dmm_arena_t *a = len ? arena_of(ps, s) : NULL;
    uintptr_t run = 0, run_end = 0;
    for (uintptr_t q = s; a && q < s + len;) {
        size_t e = (q - a->base) / DMM_EXTENT;
        uintptr_t start = a->base + e * DMM_EXTENT, end = start + DMM_EXTENT;
        size_t n = ((end < s + len ? end : s + len) - q) / DMM_PAGE;
        a->ext[e] = (uint16_t)(a->ext[e] - n);
        if (a->ext[e] == 0) {
            account(ps, -(ptrdiff_t)DMM_EXTENT);
            if (run_end != start) {
                if (run_end)
                    dontneed(ps, run, run_end - run);
                run = start;
            }
            run_end = end;
        }
        q = end;
    }
    if (run_end)
        dontneed(ps, run, run_end - run);
}

/* Drop the pages of [s, s+len) and make the range free.  Caller locks. */
static void drop(dmm_pagesrc_t *ps, uintptr_t s, size_t len)
{
    /* The library drops the pages: one system call, and the range stays
     * mapped read-write for its next use.  A simulation only counts that
     * call and keeps the pages: no class reads what it did not write, and
     * the pages are most likely touched again (see g_spare).  The pool's
     * pages stay (the pool ends where arenas start, so the part beyond it
     * is the range's end). */
    size_t out = beyond_pool(ps, s, len);
    if (ps->huge) {
        drop_extents(ps, s + len - out, out);
    } else if (out) {
        dontneed(ps, s + len - out, out);
        account(ps, -(ptrdiff_t)out);
    }
    free_range(ps, s, len);
}

/* Drop the oldest retained chunk.  Caller locks; one is retained. */
static void drop_oldest(dmm_pagesrc_t *ps)
{
    dmm_range_t old = ps->retained[0];
    memmove(&ps->retained[0], &ps->retained[1], (ps->nretained - 1) * sizeof ps->retained[0]);
    ps->nretained--;
    ps->retained_bytes -= old.len;
    drop(ps, old.start, old.len);
}

void dmm_pagesrc_put(dmm_pagesrc_t *ps, void *p, size_t len)
{
    uintptr_t s = (uintptr_t)p;
    len = round_up(len, DMM_PAGE);
    dmm_spin_lock(&ps->lock);
    ps->calls++;
    dmm_arena_t *a = arena_of(ps, s);
    if (a && len && s + len <= a->base + a->size) {
        memset(a->map + (s - a->base) / DMM_PAGE, DMM_OWNER_NONE, len / DMM_PAGE);
        ps->chunk_bytes -= len;
        if (len >= DMM_RETAIN_MIN && len <= ps->retain_max) {
            /* keep it; make room by dropping the oldest */
            while (ps->nretained == ps->retain_slots ||
                   ps->retained_bytes + len > ps->retain_max)
                drop_oldest(ps);
            ps->retained[ps->nretained++] = (dmm_range_t){ s, len };
            ps->retained_bytes += len;
        } else {
            drop(ps, s, len);
        }
        /* the chunk's room, never handed out: free again as it is */
        size_t room = room_after(a, s + len);
        if (room) {
            memset(a->map + (s + len - a->base) / DMM_PAGE, DMM_OWNER_NONE, room / DMM_PAGE);
            free_range(ps, s + len, room);
        }
    }
    dmm_spin_unlock(&ps->lock);
}

int dmm_pagesrc_move(dmm_pagesrc_t *ps, void *from, void *to, size_t len)
{
    len = round_up(len, DMM_PAGE);
    if (ps->huge) {
        /* a move would split huge pages and leave 4 KiB ones behind */
        errno = ENOTSUP;
        return -1;
    }
    /* each move splits the arena's mapping (the moved pages keep their
     * origin's offset and merge with nothing): a bounded number of them
     * keeps the process far from the kernel's limit on mappings */
    if (__atomic_fetch_add(&ps->moves, 1, __ATOMIC_RELAXED) >= DMM_MAX_MOVES) {
        errno = ENOSPC;
        return -1;
    }
    if (ps->mode == DMM_PS_REAL) {
        /* the pages go to `to`; `from` is mapped afresh (zero, not
         * resident), as the arena's opened space is */
        if (mremap(from, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to) == MAP_FAILED)
            return -1;
        if (mmap(from, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
                 MAP_FIXED, -1, 0) == MAP_FAILED)
            abort();   /* a hole in the arena: nothing sane is left to do */
    }
    if (ps->cost)
        DMM_COST(ps->cost, syscalls, 2);
    return 0;
}

unsigned dmm_pagesrc_owner_older(const dmm_pagesrc_t *ps, const void *p)
{
    uintptr_t u = (uintptr_t)p;
    /* arenas are few; the newest is the likeliest (dmm_pagesrc_owner looked,
     * but one may have been added since) */
    for (int i = __atomic_load_n(&ps->narenas, __ATOMIC_ACQUIRE) - 1; i >= 0; i--) {
        const dmm_arena_t *a = &ps->arenas[i];
        if (u >= a->base && u - a->base < __atomic_load_n(&a->used, __ATOMIC_ACQUIRE))
            return __atomic_load_n(&a->map, __ATOMIC_RELAXED)[(u - a->base) / DMM_PAGE];
    }
    return DMM_OWNER_NONE;
}
