/* test_pagesrc.c - the page source and page map: placement, owners,
 * footprint, and the same offsets in simulated and real mode. */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/single_threaded.h>
#include <sys/wait.h>
#include <unistd.h>

#include "allocators/core/pagesrc.h"
#include "allocators/core/prefault.h"

static dmm_pagesrc_t *new_ps(int mode)
{
    dmm_pagesrc_t *ps = malloc(sizeof *ps);
    cr_assert_not_null(ps);
    cr_assert_eq(dmm_pagesrc_init(ps, mode), 0);
    return ps;
}

/* A page source of mode whose costs are counted in *cost (zeroed). */
static dmm_pagesrc_t *new_counted_ps(int mode, dmm_cost_t *cost)
{
    dmm_pagesrc_t *ps = new_ps(mode);
    memset(cost, 0, sizeof *cost);
    ps->cost = cost;
    return ps;
}

static void del_ps(dmm_pagesrc_t *ps)
{
    dmm_pagesrc_fini(ps);
    free(ps);
}

Test(pagesrc, chunks_are_aligned_owned_and_writable)
{
    for (int mode = 0; mode < 2; mode++) {
        dmm_pagesrc_t *ps = new_ps(mode);
        size_t aligns[] = { 0, 4096, 65536, 1 << 20, 64 << 20 };
        for (size_t i = 0; i < sizeof aligns / sizeof aligns[0]; i++) {
            size_t len = 10000 + i * 50000;
            char *p = dmm_pagesrc_get(ps, len, aligns[i], 7 + (unsigned)i);
            cr_assert_not_null(p);
            size_t al = aligns[i] ? aligns[i] : 4096;
            cr_expect_eq((uintptr_t)p % al, 0);
            memset(p, 0xab, len);
            cr_expect_eq(dmm_pagesrc_owner(ps, p), 7 + i);
            cr_expect_eq(dmm_pagesrc_owner(ps, p + len - 1), 7 + i);
        }
        int local;
        cr_expect_eq(dmm_pagesrc_owner(ps, &local), DMM_OWNER_NONE);
        cr_expect_eq(dmm_pagesrc_owner(ps, NULL), DMM_OWNER_NONE);
        del_ps(ps);
    }
}

Test(pagesrc, footprint_counts_chunks_and_map_pages)
{
    dmm_pagesrc_t *ps = new_ps(DMM_PS_SIM);
    void *a = dmm_pagesrc_get(ps, 1, 0, 1);
    cr_assert_not_null(a);
    /* one page of chunk; the map of a small heap is the page source's map0 */
    cr_expect_eq(ps->footprint, 4096);
    cr_expect_eq(dmm_pagesrc_map_bytes(ps), 0);
    void *b = dmm_pagesrc_get(ps, 3 * 4096, 0, 1);
    cr_expect_eq(ps->footprint, 4 * 4096);
    dmm_pagesrc_put(ps, a, 1);
    cr_expect_eq(ps->footprint, 3 * 4096);
    cr_expect_eq(ps->peak, 4 * 4096);
    cr_expect_eq(dmm_pagesrc_owner(ps, a), DMM_OWNER_NONE);
    /* the freed page is reused first (first fit by address) */
    void *c = dmm_pagesrc_get(ps, 4096, 0, 2);
    cr_expect_eq(c, a);
    /* past DMM_MAP_INLINE pages the map gets pages of its own, counted
     * from then on, and keeps every owner */
    size_t big = (size_t)DMM_MAP_INLINE * 4096;
    char *d = dmm_pagesrc_get(ps, big, 0, 3);
    cr_assert_not_null(d);
    cr_expect_eq(dmm_pagesrc_map_bytes(ps), 4096);
    cr_expect_eq(ps->footprint, 4 * 4096 + big + 4096);
    cr_expect_eq(dmm_pagesrc_owner(ps, c), 2);
    cr_expect_eq(dmm_pagesrc_owner(ps, b), 1);
    cr_expect_eq(dmm_pagesrc_owner(ps, d + big - 1), 3);
    dmm_pagesrc_put(ps, b, 3 * 4096);
    dmm_pagesrc_put(ps, c, 4096);
    dmm_pagesrc_retain(ps, 0);
    dmm_pagesrc_put(ps, d, big);
    cr_expect_eq(ps->footprint, 4096, "only the page map is left");
    cr_expect_eq(ps->nfree, 1, "the freed ranges merged");
    del_ps(ps);
}

/* The same sequence of calls places every chunk at the same offset from
 * its arena in both modes, and counts the same footprint. */
Test(pagesrc, simulated_and_real_place_alike)
{
    dmm_pagesrc_t *ps[2] = { new_ps(DMM_PS_SIM), new_ps(DMM_PS_REAL) };
    void *held[2][256] = { { 0 } };
    size_t len[256];
    unsigned x = 1;
    for (int step = 0; step < 5000; step++) {
        x = x * 1103515245u + 12345u;
        int k = (int)((x >> 8) % 256);
        size_t l = 4096 * (1 + (x >> 20) % 40);
        size_t al = (x & 3) == 0 ? 65536 : 0;
        for (int m = 0; m < 2; m++) {
            if (held[m][k]) {
                dmm_pagesrc_put(ps[m], held[m][k], len[k]);
                held[m][k] = NULL;
            } else {
                held[m][k] = dmm_pagesrc_get(ps[m], l, al, 3);
                cr_assert_not_null(held[m][k]);
            }
        }
        if (held[0][k]) {
            len[k] = l;
            uintptr_t o0 = (uintptr_t)held[0][k] - ps[0]->arenas[0].base;
            uintptr_t o1 = (uintptr_t)held[1][k] - ps[1]->arenas[0].base;
            cr_assert_eq(o0, o1, "step %d: offsets %lx and %lx", step, (unsigned long)o0,
                         (unsigned long)o1);
            memset(held[1][k], 1, l);
        }
        cr_assert_eq(ps[0]->footprint, ps[1]->footprint);
    }
    cr_expect_eq(ps[0]->peak, ps[1]->peak);
    del_ps(ps[0]);
    del_ps(ps[1]);
}

Test(pagesrc, out_of_memory_is_enomem_and_recoverable)
{
#if defined(__SANITIZE_ADDRESS__)
    cr_skip_test("AddressSanitizer's shadow memory does not fit under a small RLIMIT_AS");
#endif
    pid_t pid = fork();
    if (pid == 0) {
        struct rlimit rl = { 512u << 20, 512u << 20 };
        setrlimit(RLIMIT_AS, &rl);
        dmm_pagesrc_t ps;
        if (dmm_pagesrc_init(&ps, DMM_PS_REAL) != 0)
            _exit(10);
        void *big = dmm_pagesrc_get(&ps, 1u << 30, 0, 1);
        if (big || errno != ENOMEM)
            _exit(11);
        void *p = dmm_pagesrc_get(&ps, 1 << 20, 0, 1);
        if (!p)
            _exit(12);
        memset(p, 1, 1 << 20);
        dmm_pagesrc_put(&ps, p, 1 << 20);
        if (!dmm_pagesrc_get(&ps, 1 << 20, 0, 1))
            _exit(13);
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    cr_assert(WIFEXITED(st));
    cr_expect_eq(WEXITSTATUS(st), 0, "child step %d failed", WEXITSTATUS(st));
}

Test(pagesrc, bad_alignment_is_einval)
{
    dmm_pagesrc_t *ps = new_ps(DMM_PS_SIM);
    errno = 0;
    cr_expect_null(dmm_pagesrc_get(ps, 4096, 3 * 4096, 1));
    cr_expect_eq(errno, EINVAL);
    cr_expect_null(dmm_pagesrc_get(ps, 0, 0, 1));
    del_ps(ps);
}

/* Large chunks given back are kept for the next request of their length:
 * no system call, the pages still there, and still counted as held. */
Test(pagesrc, large_chunks_are_retained_for_reuse)
{
    dmm_pagesrc_t *ps = new_ps(DMM_PS_REAL);
    size_t big = 256 << 10;
    char *a = dmm_pagesrc_get(ps, big, 0, 1);
    memset(a, 9, big);
    size_t fp = ps->footprint;
    dmm_pagesrc_put(ps, a, big);
    cr_expect_eq(ps->footprint, fp, "a retained chunk is still held");
    cr_expect_eq(ps->chunk_bytes, 0);
    cr_expect_eq(dmm_pagesrc_owner(ps, a), DMM_OWNER_NONE);
    char *b = dmm_pagesrc_get(ps, big, 0, 2);
    cr_expect_eq(b, a, "the same length gets the retained chunk back");
    cr_expect_eq(b[100], 9, "pages and all");
    cr_expect_eq(dmm_pagesrc_owner(ps, b), 2);
    dmm_pagesrc_put(ps, b, big);
    /* past the budget, the oldest are dropped */
    char *c[8];
    for (int i = 0; i < 8; i++)
        c[i] = dmm_pagesrc_get(ps, big, 0, 1);
    size_t held = ps->footprint;
    for (int i = 0; i < 8; i++)
        dmm_pagesrc_put(ps, c[i], big);
    cr_expect_eq(ps->retained_bytes, DMM_RETAIN_BYTES);
    cr_expect_eq(ps->footprint, held - (8 * big - DMM_RETAIN_BYTES));
    /* small chunks are never retained */
    char *s = dmm_pagesrc_get(ps, 4096, 0, 1);
    size_t before = ps->footprint;
    dmm_pagesrc_put(ps, s, 4096);
    cr_expect_eq(ps->footprint, before - 4096);
    del_ps(ps);
}

/* The retain budget (the .dmm line `retain bytes=N`): 0 gives every large
 * chunk back at once, a larger one keeps larger chunks; the same numbers
 * in both modes. */
Test(pagesrc, the_retain_budget_bounds_what_is_kept)
{
    for (int mode = 0; mode < 2; mode++) {
        dmm_pagesrc_t *ps = new_ps(mode);
        dmm_pagesrc_retain(ps, 0);
        size_t big = 256 << 10;
        char *a = dmm_pagesrc_get(ps, big, 0, 1);
        size_t fp = ps->footprint;
        dmm_pagesrc_put(ps, a, big);
        cr_expect_eq(ps->footprint, fp - big, "mode %d: nothing kept", mode);
        cr_expect_eq(ps->nretained, 0);
        /* 4 MiB: a 2 MiB chunk is kept (past the default budget), twice is
         * one too many */
        dmm_pagesrc_retain(ps, 4 << 20);
        size_t two = 2 << 20;
        char *b = dmm_pagesrc_get(ps, two, 0, 1), *c = dmm_pagesrc_get(ps, two, 0, 1),
             *e = dmm_pagesrc_get(ps, two, 0, 1);
        fp = ps->footprint;
        dmm_pagesrc_put(ps, b, two);
        dmm_pagesrc_put(ps, c, two);
        cr_expect_eq(ps->footprint, fp, "mode %d: both kept", mode);
        dmm_pagesrc_put(ps, e, two);
        cr_expect_eq(ps->retained_bytes, 4u << 20);
        cr_expect_eq(ps->footprint, fp - two, "mode %d: the oldest dropped", mode);
        cr_expect_eq(dmm_pagesrc_get(ps, two, 0, 1), e, "the newest comes back first");
        del_ps(ps);
    }
}

/* Retained chunks never raise the peak footprint: a request they do not
 * serve and that fresh pages would take past the peak gets the head of a
 * longer one (pages and all, its tail dropped), or drops them first; under
 * the peak they stay.  The same numbers in both modes. */
Test(pagesrc, retained_chunks_never_raise_the_peak)
{
    for (int mode = 0; mode < 2; mode++) {
        dmm_pagesrc_t *ps = new_ps(mode);
        dmm_pagesrc_retain(ps, 64u << 20);
        size_t k = 256 << 10;
        char *a = dmm_pagesrc_get(ps, k, 0, 1), *b = dmm_pagesrc_get(ps, k, 0, 1);
        size_t map = dmm_pagesrc_map_bytes(ps);
        cr_assert_eq(ps->peak, map + 2 * k);
        dmm_pagesrc_put(ps, a, k);
        cr_expect_eq(ps->retained_bytes, k, "mode %d: kept", mode);
        /* 2k more: fresh pages past the peak; a is too short to serve, so
         * it goes back first */
        char *c = dmm_pagesrc_get(ps, 2 * k, 0, 1);
        cr_assert_not_null(c);
        cr_expect_eq(ps->nretained, 0, "mode %d: dropped before fresh pages", mode);
        size_t peak = dmm_pagesrc_map_bytes(ps) + 3 * k;
        cr_expect_eq(ps->peak, peak, "mode %d: peak %zu, b and c %zu", mode, ps->peak, peak);
        /* c kept, then k asked for: at the peak already, so c's head serves
         * it and its tail goes back */
        if (mode == DMM_PS_REAL)
            memset(c, 0x5a, 2 * k);
        dmm_pagesrc_put(ps, c, 2 * k);
        cr_expect_eq(ps->footprint, peak, "mode %d: c still held", mode);
        char *d = dmm_pagesrc_get(ps, k, 0, 2);
        cr_expect_eq(d, c, "mode %d: the head of the kept chunk", mode);
        if (mode == DMM_PS_REAL)
            cr_expect_eq(d[k - 1], 0x5a, "pages and all");
        cr_expect_eq(dmm_pagesrc_owner(ps, d), 2);
        cr_expect_eq(dmm_pagesrc_owner(ps, d + k), DMM_OWNER_NONE);
        cr_expect_eq(ps->footprint, peak - k, "mode %d: the tail given back", mode);
        cr_expect_eq(ps->nretained, 0);
        /* under the peak, a kept chunk of another length stays kept */
        dmm_pagesrc_put(ps, d, k);
        char *e = dmm_pagesrc_get(ps, 64 << 10, 0, 1);
        cr_expect_neq(e, d, "mode %d: fresh pages under the peak", mode);
        cr_expect_eq(ps->retained_bytes, k, "mode %d: d still kept", mode);
        cr_expect_eq(ps->peak, peak, "mode %d: the peak unchanged", mode);
        cr_expect_eq(dmm_pagesrc_get(ps, k, 0, 1), d, "mode %d: d taken back", mode);
        (void)b;
        del_ps(ps);
    }
}

/* A simulated page source's arena outlives it: the next one takes it back
 * (no fresh mapping, no page fault), with an empty page map, and places
 * chunks at the same offsets as on a fresh arena. */
Test(pagesrc, simulated_arenas_are_kept_for_the_next_simulation)
{
    dmm_pagesrc_t *ps = new_ps(DMM_PS_SIM);
    char *a = dmm_pagesrc_get(ps, 3 * 4096, 0, 5);
    char *b = dmm_pagesrc_get(ps, 4096, 0, 6);
    cr_assert(a && b);
    memset(a, 0x77, 3 * 4096);
    uintptr_t base = ps->arenas[0].base;
    del_ps(ps);
    ps = new_ps(DMM_PS_SIM);
    char *c = dmm_pagesrc_get(ps, 4096, 0, 9);
    cr_assert_not_null(c);
    cr_expect_eq(ps->arenas[0].base, base, "the kept arena came back");
    cr_expect_eq(c, a, "at the same offset as on a fresh arena");
    cr_expect_eq(dmm_pagesrc_owner(ps, c), 9);
    cr_expect_eq(ps->footprint, 4096, "one chunk page (the map is map0)");
    /* an aligned chunk leaves a gap over the old chunks: nobody owns it */
    char *e = dmm_pagesrc_get(ps, 4096, 65536, 10);
    cr_assert_eq((uintptr_t)e - base, 65536);
    cr_expect_eq(dmm_pagesrc_owner(ps, a + 4096), DMM_OWNER_NONE, "the old owners are gone");
    cr_expect_eq(dmm_pagesrc_owner(ps, b), DMM_OWNER_NONE);
    del_ps(ps);
    /* a real page source never takes a simulated arena */
    ps = new_ps(DMM_PS_REAL);
    c = dmm_pagesrc_get(ps, 4096, 0, 1);
    cr_expect_neq(ps->arenas[0].base, base);
    del_ps(ps);
}

/* dmm_pagesrc_move: the pages and their bytes go to the new chunk (real
 * memory); after DMM_MAX_MOVES moves it refuses, in both modes alike, and
 * the caller copies instead. */
Test(pagesrc, move_carries_the_bytes_and_stops_after_its_limit)
{
    static dmm_pagesrc_t ps;
    cr_assert_eq(dmm_pagesrc_init(&ps, DMM_PS_REAL), 0);
    size_t len = 64 * DMM_PAGE;
    unsigned char *a = dmm_pagesrc_get(&ps, len, 0, 7), *b = dmm_pagesrc_get(&ps, 2 * len, 0, 7);
    cr_assert(a && b);
    for (size_t i = 0; i < len; i++)
        a[i] = (unsigned char)(i % 251);
    cr_assert_eq(dmm_pagesrc_move(&ps, a, b, len), 0, "%s", strerror(errno));
    for (size_t i = 0; i < len; i++)
        cr_assert_eq(b[i], (unsigned char)(i % 251), "byte %zu", i);
    for (size_t i = 0; i < len; i += DMM_PAGE)
        cr_assert_eq(a[i], 0, "the old range is mapped afresh");
    a[0] = 1;   /* and writable */
    dmm_pagesrc_put(&ps, a, len);
    dmm_pagesrc_put(&ps, b, 2 * len);
    dmm_pagesrc_fini(&ps);
    for (int mode = DMM_PS_REAL; mode <= DMM_PS_SIM; mode++) {
        cr_assert_eq(dmm_pagesrc_init(&ps, mode), 0);
        ps.moves = DMM_MAX_MOVES - 1;
        a = dmm_pagesrc_get(&ps, DMM_PAGE, 0, 7);
        b = dmm_pagesrc_get(&ps, DMM_PAGE, 0, 7);
        cr_expect_eq(dmm_pagesrc_move(&ps, a, b, DMM_PAGE), 0);
        errno = 0;
        cr_expect_eq(dmm_pagesrc_move(&ps, b, a, DMM_PAGE), -1, "mode %d", mode);
        cr_expect_eq(errno, ENOSPC);
        dmm_pagesrc_fini(&ps);
    }
}

/* A chunk with room grows into it where it is, the room neither held nor
 * given to another chunk; given back, chunk and room are free again.  A
 * chunk grows too past the bump pointer and into a range given back that
 * starts at its end.  Both modes alike, bytes kept in the real one. */
Test(pagesrc, a_chunk_grows_in_place_into_its_room)
{
    const size_t P = DMM_PAGE;
    for (int mode = 0; mode < 2; mode++) {
        dmm_cost_t cost;
        dmm_pagesrc_t *ps = new_counted_ps(mode, &cost);
        unsigned char *a = dmm_pagesrc_get_room(ps, 3 * P, 8 * P, DMM_OWNER_LARGE);
        cr_assert_not_null(a);
        cr_expect_eq(ps->footprint, 3 * P, "mode %d: the room is not held", mode);
        cr_expect_eq(cost.pages, 3);
        cr_expect_eq(dmm_pagesrc_owner(ps, a + 3 * P), DMM_OWNER_ROOM);
        cr_expect_eq(dmm_pagesrc_owner(ps, a + 11 * P - 1), DMM_OWNER_ROOM);
        unsigned char *b = dmm_pagesrc_get(ps, 4 * P, 0, 7);
        cr_expect_geq(b, a + 11 * P, "mode %d: another chunk is not put in the room", mode);
        if (mode == DMM_PS_REAL)
            memset(a, 0x5a, 3 * P);
        cr_assert_eq(dmm_pagesrc_extend(ps, a, 3 * P, 9 * P - 100), 0);
        cr_expect_eq(ps->footprint, 13 * P);
        cr_expect_eq(cost.pages, 13, "the room's pages are fresh when taken");
        cr_expect_eq(dmm_pagesrc_owner(ps, a + 9 * P - 1), DMM_OWNER_LARGE);
        cr_expect_eq(dmm_pagesrc_owner(ps, a + 9 * P), DMM_OWNER_ROOM);
        if (mode == DMM_PS_REAL) {
            memset(a + 3 * P, 0x5a, 6 * P);   /* writable */
            cr_expect_eq(a[0], 0x5a);
            cr_expect_eq(a[3 * P - 1], 0x5a, "the bytes stay where they were");
        }
        /* two pages of room left, then b: no further */
        cr_expect_eq(dmm_pagesrc_extend(ps, a, 9 * P, 12 * P), -1);
        cr_expect_eq(ps->footprint, 13 * P, "nothing changed");
        cr_expect_eq(dmm_pagesrc_owner(ps, a + 10 * P), DMM_OWNER_ROOM);
        cr_expect_eq(dmm_pagesrc_extend(ps, a, 9 * P, 9 * P), 0);
        cr_expect_eq(dmm_pagesrc_extend(ps, a, 9 * P, 8 * P), -1, "no shrinking");
        /* given back: the chunk and its room are one free range again */
        dmm_pagesrc_retain(ps, 0);
        dmm_pagesrc_put(ps, a, 9 * P);
        cr_expect_eq(ps->footprint, 4 * P);
        cr_expect_eq(dmm_pagesrc_owner(ps, a + 10 * P), DMM_OWNER_NONE);
        unsigned char *c = dmm_pagesrc_get(ps, 11 * P, 0, 8);
        cr_expect_eq(c, a, "mode %d: first fit finds chunk and room as one range", mode);
        /* b ends at the bump pointer: it grows past it */
        cr_assert_eq(dmm_pagesrc_extend(ps, b, 4 * P, 6 * P), 0);
        cr_expect_eq(dmm_pagesrc_owner(ps, b + 6 * P - 1), 7);
        cr_expect_eq(ps->footprint, 17 * P);
        /* c grows into b's range once b is given back */
        cr_expect_eq(dmm_pagesrc_extend(ps, c, 11 * P, 12 * P), -1, "b is there");
        dmm_pagesrc_put(ps, b, 6 * P);
        cr_assert_eq(dmm_pagesrc_extend(ps, c, 11 * P, 13 * P), 0);
        cr_expect_eq(dmm_pagesrc_owner(ps, c + 13 * P - 1), 8);
        cr_expect_eq(ps->footprint, 13 * P);
        unsigned char *d = dmm_pagesrc_get(ps, P, 0, 9);
        cr_expect_eq(d, c + 13 * P, "mode %d: the rest of b's range is still free", mode);
        del_ps(ps);
    }
}

/* A pool past the 2 MiB that map0 spans has its page map in pages of its
 * own from the start, counted with it, so that no later call is the first
 * to touch them; chunks inside the pool add nothing.  Both modes alike. */
Test(pagesrc, a_large_pool_holds_its_page_map_from_the_start)
{
    size_t fp[2][2];
    for (int mode = 0; mode < 2; mode++) {
        dmm_pagesrc_t *ps = new_ps(mode);
        cr_assert_eq(dmm_pagesrc_pool(ps, 4 << 20), 0);
        const dmm_arena_t *a = &ps->arenas[0];
        cr_expect_eq(a->map, a->map_mem, "mode %d: the map in its own pages", mode);
        fp[mode][0] = ps->footprint;
        cr_expect_eq(fp[mode][0], (4 << 20) + 4096, "mode %d: the pool and one map page", mode);
        char *c = dmm_pagesrc_get(ps, 3 << 20, 0, 5);
        cr_assert_not_null(c);
        cr_expect_eq(dmm_pagesrc_owner(ps, c + (3 << 20) - 1), 5);
        fp[mode][1] = ps->footprint;
        cr_expect_eq(fp[mode][1], fp[mode][0], "mode %d: a chunk inside the pool", mode);
        dmm_pagesrc_put(ps, c, 3 << 20);
        del_ps(ps);
    }
    cr_expect_eq(fp[0][0], fp[1][0]);
    cr_expect_eq(fp[0][1], fp[1][1]);
}

/* A pool: held whole from the start; a chunk inside it adds nothing to the
 * footprint, counts no fresh page and no system call, and costs no page
 * fault when written (REAL); given back, it keeps its pages; beyond the
 * pool, chunks are counted as ever.  The same numbers in both modes. */
Test(pagesrc, a_pool_is_held_from_the_start_and_its_chunks_cost_nothing)
{
    size_t fp[2][4];
    uint64_t pages[2], sys[2];
    for (int mode = 0; mode < 2; mode++) {
        dmm_cost_t cost;
        dmm_pagesrc_t *ps = new_counted_ps(mode, &cost);
        cr_assert_eq(dmm_pagesrc_pool(ps, (1 << 20) + 1), 0);
        cr_expect_neq(dmm_pagesrc_pool(ps, 4096), 0, "one pool");
        fp[mode][0] = ps->footprint;
        cr_expect_eq(fp[mode][0], (1 << 20) + 4096, "the pool, rounded up to a page");
        struct rusage r0, r1;
        getrusage(RUSAGE_SELF, &r0);
        char *a = dmm_pagesrc_get(ps, 256 << 10, 0, 3);
        cr_assert_not_null(a);
        if (mode == DMM_PS_REAL)
            memset(a, 0x5a, 256 << 10);
        getrusage(RUSAGE_SELF, &r1);
        /* 64 fresh pages would fault 64 times; a sanitizer's shadow pages
         * may add a few */
        if (mode == DMM_PS_REAL)
            cr_expect_lt(r1.ru_minflt - r0.ru_minflt, 24, "%ld faults writing 64 pages of the pool",
                         r1.ru_minflt - r0.ru_minflt);
        fp[mode][1] = ps->footprint;   /* the map is still map0 */
        cr_expect_eq(cost.syscalls, 0, "no mprotect inside the pool");
        cr_expect_eq(cost.pages, 0, "no fresh page");
        dmm_pagesrc_put(ps, a, 256 << 10);
        fp[mode][2] = ps->footprint;
        cr_expect_eq(fp[mode][2], fp[mode][1], "the pool keeps its pages");
        /* 2 MiB: a megabyte inside the pool's rest, the rest beyond it;
         * past 2 MiB of arena the map gets its own page */
        char *b = dmm_pagesrc_get(ps, 2 << 20, 0, 3);
        cr_assert_not_null(b);
        fp[mode][3] = ps->footprint;
        pages[mode] = cost.pages;
        sys[mode] = cost.syscalls;
        dmm_pagesrc_put(ps, b, 2 << 20);
        cr_expect_eq(ps->footprint, fp[mode][2] + 4096, "back to the pool and its map");
        del_ps(ps);
    }
    cr_expect_gt(fp[0][3], fp[0][2]);
    for (int k = 0; k < 4; k++)
        cr_expect_eq(fp[0][k], fp[1][k], "footprint %d: real %zu, simulated %zu", k, fp[0][k],
                     fp[1][k]);
    cr_expect_eq(pages[0], pages[1]);
    cr_expect_eq(sys[0], sys[1]);
}

/* Whether the kernel backs [p, p+len) with a transparent huge page: the
 * AnonHugePages of the mapping that holds p (/proc/self/smaps), in KiB. */
static long anon_huge_kib(const void *p)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    char line[512];
    int in = 0;
    long kib = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
            in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
        else if (in && sscanf(line, "AnonHugePages: %ld kB", &kib) == 1)
            break;
    }
    fclose(f);
    return kib;
}

/* Huge pages: memory is held in whole 2 MiB extents, from the first chunk
 * page in one to the last given back, then the extent goes back at once
 * (one system call for a run of them); a fresh extent counts as
 * DMM_HUGE_FAULT_PAGES fresh pages; the extent counts' page is counted as
 * the page map's; a pool is rounded up to whole extents; moves are
 * refused.  The same numbers in both modes; in REAL mode an extent written
 * is one huge page where the kernel has them. */
Test(pagesrc, huge_pages_hold_whole_extents)
{
    const size_t X = DMM_EXTENT;
    size_t fp[2][5];
    uint64_t pages[2], sys[2];
    for (int mode = 0; mode < 2; mode++) {
        dmm_cost_t cost;
        dmm_pagesrc_t *ps = new_counted_ps(mode, &cost);
        cr_assert_eq(dmm_pagesrc_huge(ps), 0);
        char *a = dmm_pagesrc_get(ps, 4096, 0, 3);
        cr_assert_not_null(a);
        fp[mode][0] = ps->footprint;
        cr_expect_eq(fp[mode][0], X + 4096, "mode %d: one extent and its count's page", mode);
        cr_expect_eq(dmm_pagesrc_map_bytes(ps), 4096);
        cr_expect_eq(cost.pages, DMM_HUGE_FAULT_PAGES + 1);
        cr_expect_neq(dmm_pagesrc_huge(ps), 0, "after the first get: refused");
        /* more chunks in the same extent: nothing more held, no fault */
        char *b = dmm_pagesrc_get(ps, 100 * 4096, 0, 3);
        cr_assert_not_null(b);
        cr_expect_eq(ps->footprint, fp[mode][0]);
        cr_expect_eq(cost.pages, DMM_HUGE_FAULT_PAGES + 1);
        /* a chunk across the extent's end (pages 101 to 613) holds a second;
         * the page map passes 2 MiB and takes a page of its own */
        char *c = dmm_pagesrc_get(ps, X + 4096, 0, 4);
        cr_assert_not_null(c);
        fp[mode][1] = ps->footprint;
        cr_expect_eq(fp[mode][1], 2 * X + 2 * 4096, "mode %d: %zu", mode, fp[mode][1]);
        cr_expect_eq(dmm_pagesrc_map_bytes(ps), 2 * 4096);
        if (mode == DMM_PS_REAL) {
            memset(a, 1, 4096);
            long kib = anon_huge_kib(a);
            FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
            char mode_line[128] = "";
            if (f) {
                if (!fgets(mode_line, sizeof mode_line, f))
                    mode_line[0] = 0;
                fclose(f);
            }
            if (strstr(mode_line, "[madvise]") || strstr(mode_line, "[always]"))
                cr_expect_geq(kib, 2048, "the first extent written is a huge page (%ld KiB)", kib);
        }
        uint64_t sys0 = cost.syscalls;
        /* the first extent's pages go back only with its last one */
        dmm_pagesrc_retain(ps, 0);
        dmm_pagesrc_put(ps, a, 4096);
        cr_expect_eq(ps->footprint, fp[mode][1]);
        cr_expect_eq(cost.syscalls, sys0, "no madvise while the extent holds a chunk");
        /* c's pages in the first extent are (100 + 1) pages in: putting b
         * leaves c's head there */
        dmm_pagesrc_put(ps, b, 100 * 4096);
        fp[mode][2] = ps->footprint;
        cr_expect_eq(fp[mode][2], fp[mode][1], "c still lies in the first extent");
        /* c given back: both extents go, in one call */
        dmm_pagesrc_put(ps, c, X + 4096);
        fp[mode][3] = ps->footprint;
        cr_expect_eq(fp[mode][3], 2 * 4096, "mode %d: the map's and the counts' pages alone: %zu",
                     mode, fp[mode][3]);
        cr_expect_eq(cost.syscalls, sys0 + 1, "one madvise for the run of extents");
        cr_expect_neq(dmm_pagesrc_move(ps, c, c, 4096), 0, "moves refused");
        cr_expect_eq(errno, ENOTSUP);
        /* taken again: a fresh extent */
        char *d = dmm_pagesrc_get(ps, 4096, 0, 3);
        cr_assert_not_null(d);
        fp[mode][4] = ps->footprint;
        cr_expect_eq(fp[mode][4], X + 2 * 4096);
        pages[mode] = cost.pages;
        sys[mode] = cost.syscalls;
        del_ps(ps);
        /* a pool: whole extents */
        ps = new_ps(mode);
        cr_assert_eq(dmm_pagesrc_huge(ps), 0);
        cr_assert_eq(dmm_pagesrc_pool(ps, X + 1), 0);
        cr_expect_eq(ps->pool_hi - ps->pool_lo, 2 * X);
        size_t held = ps->footprint;
        cr_expect_eq(held, 2 * X + 4096, "the pool and its page map's page: %zu", held);
        char *e = dmm_pagesrc_get(ps, X, 0, 3);
        cr_assert_not_null(e);
        cr_expect_eq(ps->footprint, held, "inside the pool: nothing more");
        char *f = dmm_pagesrc_get(ps, X + 4096, 0, 3);
        cr_assert_not_null(f);
        cr_expect_eq(ps->footprint, held + X + 4096,
                     "its last page beyond it: an extent, and the counts' page");
        del_ps(ps);
    }
    for (int k = 0; k < 5; k++)
        cr_expect_eq(fp[0][k], fp[1][k], "footprint %d: real %zu, simulated %zu", k, fp[0][k],
                     fp[1][k]);
    cr_expect_eq(pages[0], pages[1]);
    cr_expect_eq(sys[0], sys[1]);
}

/* Every byte of [p, p + len) is 0. */
static int all_zero(const char *p, size_t len)
{
    static const char zero[4096];
    for (size_t i = 0; i < len; i += sizeof zero)
        if (memcmp(p + i, zero, len - i < sizeof zero ? len - i : sizeof zero))
            return 0;
    return 1;
}

/* What get_zero said of a chunk of len bytes: 1 all of it zero, 0 none,
 * -1 a part. */
static int said(const size_t z[2], size_t len)
{
    if (z[0] == z[1])
        return 0;
    return z[0] == 0 && z[1] == len ? 1 : -1;
}

/* dmm_pagesrc_get_zero says a part of a chunk reads as zero only when it
 * does (what calloc relies on to leave it unwritten): fresh space and
 * dropped ranges yes; retained chunks, the pool's reused pages, and with
 * huge pages the pages of an extent still held, no; and once a drop could
 * not drop (the pages locked), no range given back. */
Test(pagesrc, a_chunk_reads_as_zero_where_it_says_so)
{
    size_t z[2];
    dmm_pagesrc_t *ps = new_ps(DMM_PS_REAL);
    char *a = dmm_pagesrc_get_zero(ps, 8192, 0, 1, z);
    cr_assert_not_null(a);
    cr_expect_eq(said(z, 8192), 1, "fresh space");
    memset(a, 0xff, 8192);
    dmm_pagesrc_put(ps, a, 8192);   /* small: dropped */
    char *b = dmm_pagesrc_get_zero(ps, 8192, 0, 1, z);
    cr_expect_eq(b, a, "the range given back");
    cr_expect_eq(said(z, 8192), 1, "its pages were dropped");
    cr_expect(all_zero(b, 8192));
    size_t big = 256 << 10;
    char *r = dmm_pagesrc_get_zero(ps, big, 0, 1, z);
    memset(r, 0xff, big);
    dmm_pagesrc_put(ps, r, big);   /* retained */
    char *r2 = dmm_pagesrc_get_zero(ps, big, 0, 1, z);
    cr_expect_eq(r2, r);
    cr_expect_eq(said(z, big), 0, "a retained chunk keeps its pages");
    cr_expect_eq((unsigned char)r2[5], 0xff);
    /* pages that could not be dropped: a locked chunk given back */
    if (mlock(b, 8192) == 0) {
        memset(b, 0xff, 8192);
        dmm_pagesrc_put(ps, b, 8192);
        char *c = dmm_pagesrc_get_zero(ps, 8192, 0, 1, z);
        cr_expect_eq(c, b);
        if ((unsigned char)c[0] == 0xff)   /* locked (ASan makes mlock a no-op) */
            cr_expect_eq(said(z, 8192), 0, "a drop failed: nothing given back is known zero");
        else
            cr_expect(all_zero(c, 8192), "the pages were dropped after all");
        munlock(c, 8192);
    }
    del_ps(ps);

    /* the pool: fresh once, its pages kept when given back */
    ps = new_ps(DMM_PS_REAL);
    cr_assert_eq(dmm_pagesrc_pool(ps, 1 << 20), 0);
    a = dmm_pagesrc_get_zero(ps, 8192, 0, 1, z);
    cr_expect_eq(said(z, 8192), 1, "fresh pool space");
    cr_expect(all_zero(a, 8192));
    memset(a, 0xff, 8192);
    dmm_pagesrc_put(ps, a, 8192);
    b = dmm_pagesrc_get_zero(ps, 8192, 0, 1, z);
    cr_expect_eq(b, a);
    cr_expect_eq(said(z, 8192), 0, "the pool's pages stay");
    del_ps(ps);

    /* huge pages: an extent's pages go only with its last chunk */
    const size_t X = DMM_EXTENT;
    ps = new_ps(DMM_PS_REAL);
    cr_assert_eq(dmm_pagesrc_huge(ps), 0);
    dmm_pagesrc_retain(ps, 0);
    a = dmm_pagesrc_get_zero(ps, 8192, 0, 1, z);
    b = dmm_pagesrc_get_zero(ps, 8192, 0, 1, z);
    memset(a, 0xff, 8192);
    dmm_pagesrc_put(ps, a, 8192);
    char *c = dmm_pagesrc_get_zero(ps, 8192, 0, 1, z);
    cr_expect_eq(c, a);
    cr_expect_eq(said(z, 8192), 0, "its extent was held by b all along");
    cr_expect_eq((unsigned char)c[0], 0xff);
    dmm_pagesrc_put(ps, c, 8192);
    dmm_pagesrc_put(ps, b, 8192);   /* the extent goes */
    c = dmm_pagesrc_get_zero(ps, 8192, 0, 1, z);
    cr_expect_eq(c, a);
    cr_expect_eq(said(z, 8192), 1, "the extent was dropped whole");
    cr_expect(all_zero(c, 8192));
    /* a chunk over three extents, the first held by c: the rest is zero */
    char *d = dmm_pagesrc_get_zero(ps, 2 * X, 0, 1, z);
    cr_expect_eq(said(z, 2 * X), 1);
    memset(d, 0xff, 2 * X);
    dmm_pagesrc_put(ps, d, 2 * X);
    char *e = dmm_pagesrc_get_zero(ps, 2 * X, 0, 1, z);
    cr_assert_lt((uintptr_t)e % X, X - 8192, "e starts in c's extent");
    size_t head = X - (size_t)((uintptr_t)e % X);
    cr_expect_eq(z[0], head, "the first extent, c's, is held: %zu", z[0]);
    cr_expect_eq(z[1], 2 * X, "the last one went");
    cr_expect(all_zero(e + z[0], z[1] - z[0]));
    cr_expect_eq((unsigned char)e[head - 1], 0xff, "d's bytes in the held extent stay");
    del_ps(ps);
}

/* The same, at random: chunks of 1 to 64 pages (and now and then 1 to 3
 * extents) taken and given back in any order under every kind of page
 * source, each written whole before it goes back; every part of a chunk
 * said to read as zero must. */
Test(pagesrc, no_part_said_to_be_zero_holds_a_byte)
{
    enum { N = 32 };
    for (int kind = 0; kind < 5; kind++) {
        dmm_pagesrc_t *ps = new_ps(DMM_PS_REAL);
        if (kind == 1 || kind == 4)
            cr_assert_eq(dmm_pagesrc_huge(ps), 0);
        if (kind == 2 || kind == 4)
            cr_assert_eq(dmm_pagesrc_pool(ps, 3 << 20), 0);
        if (kind == 3)
            dmm_pagesrc_retain(ps, 0);
        char *p[N] = { 0 };
        size_t len[N] = { 0 };
        unsigned seed = 12345u + (unsigned)kind;
        size_t counts[3] = { 0, 0, 0 }, got = 0;
        for (int step = 0; step < 1500; step++) {
            seed = seed * 1103515245u + 12345u;
            int i = (int)((seed >> 8) % N);
            if (p[i]) {
                memset(p[i], 0xa5, len[i]);
                dmm_pagesrc_put(ps, p[i], len[i]);
                p[i] = NULL;
                continue;
            }
            seed = seed * 1103515245u + 12345u;
            len[i] = (1 + (seed >> 8) % 64) * 4096;
            if ((seed >> 20) % 16 == 0)
                len[i] = (1 + (seed >> 8) % 3) * DMM_EXTENT - 4096 * ((seed >> 12) % 2);
            size_t z[2] = { 7, 3 };
            p[i] = dmm_pagesrc_get_zero(ps, len[i], 0, 1, z);
            cr_assert_not_null(p[i]);
            cr_assert(z[0] <= z[1] && z[1] <= len[i], "kind %d step %d: [%zu, %zu) of %zu", kind,
                      step, z[0], z[1], len[i]);
            cr_assert(all_zero(p[i] + z[0], z[1] - z[0]),
                      "kind %d step %d: a part said zero is not", kind, step);
            counts[said(z, len[i]) + 1]++;
            got++;
        }
        cr_expect_gt(counts[2], 0, "kind %d: some chunk all zero", kind);
        if (kind == 3)   /* nothing retained, pooled or held in extents */
            cr_expect_eq(counts[2], got, "every chunk is fresh or dropped");
        else
            cr_expect_lt(counts[2], got, "kind %d: some reused chunk is not known zero", kind);
        for (int i = 0; i < N; i++)
            if (p[i])
                dmm_pagesrc_put(ps, p[i], len[i]);
        del_ps(ps);
    }
}

/* The pages of [p, p + len) that are resident (mincore). */
static size_t resident_pages(const void *p, size_t len)
{
    unsigned char v[1024];
    size_t n = len / DMM_PAGE, got = 0;
    cr_assert_leq(n, sizeof v);
    cr_assert_eq(mincore((void *)p, len, v), 0);
    for (size_t i = 0; i < n; i++)
        got += v[i] & 1;
    return got;
}

/* The helper of prefault.h faults a range in while the caller goes on,
 * leaves its bytes alone (a page written before it got there keeps what was
 * written), and is no thread of glibc's: the process stays single-threaded
 * to it.  Where it cannot run (the sanitizers' builds) requests are refused
 * and nothing else changes. */
Test(prefault, the_helper_faults_a_range_in_and_changes_nothing)
{
    int single = __libc_single_threaded;
    size_t len = 64 * DMM_PAGE;
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(p, MAP_FAILED);
    p[5 * DMM_PAGE] = 42;
    errno = 1234;
    unsigned long done = dmm_prefault_done();
    int rc = dmm_prefault(p, len);
    cr_expect_eq(errno, 1234, "errno kept");
    if (rc != 0) {
        cr_log_info("no helper here (a sanitizer's build?): the request was refused");
        cr_expect_eq(resident_pages(p, len), 1);
    } else {
        for (int i = 0; i < 5000 && dmm_prefault_done() == done; i++)
            usleep(1000);
        cr_assert_gt(dmm_prefault_done(), done, "the helper did not finish in 5 s");
        cr_expect_eq(resident_pages(p, len), 64, "every page faulted in");
        cr_expect_eq(p[5 * DMM_PAGE], 42, "a written page keeps its byte");
        cr_expect_eq(p[6 * DMM_PAGE], 0, "a fresh page reads zero");
        /* idle, it ends (its id is no longer the process's), and the next
         * request starts another, which faults in what it asks */
        cr_expect_neq(dmm_prefault_tid(), 0);
        for (int i = 0; i < 5000 && dmm_prefault_tid() != 0; i++)
            usleep(1000);
        cr_expect_eq(dmm_prefault_tid(), 0, "the helper did not end when idle");
        munmap(p, len);
        p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        cr_assert_neq(p, MAP_FAILED);
        done = dmm_prefault_done();
        int again = -1;
        /* refused while the last one exits, and 15 of 16 times while
         * faults are fast (prefault.c) */
        for (int i = 0; i < 5000 && again != 0; i++) {
            if ((again = dmm_prefault(p, len)) != 0)
                usleep(1000);
        }
        cr_assert_eq(again, 0, "no new helper");
        for (int i = 0; i < 5000 && dmm_prefault_done() == done; i++)
            usleep(1000);
        cr_expect_eq(resident_pages(p, len), 64, "the new helper faulted it in");
    }
    cr_expect_eq(__libc_single_threaded, single, "glibc sees the threads it saw before");
    munmap(p, len);
}

/* A REAL page source with huge pages, faulting in ahead: once 64 MiB are
 * open, the extent after the open space is opened too (and asked of the
 * helper) where the helper would have a core of its own (not in a test
 * process with threads, as Criterion's: test_libdmm runs it single-threaded);
 * the footprint is the same as without, and the same as a simulated page
 * source's: what is faulted in ahead is not held. */
Test(prefault, the_page_source_opens_the_next_extent_ahead_and_counts_nothing_more)
{
    size_t fp[3];
    for (int k = 0; k < 3; k++) {   /* REAL ahead, REAL not, SIM */
        dmm_pagesrc_t *ps = new_ps(k == 2 ? DMM_PS_SIM : DMM_PS_REAL);
        cr_assert_eq(dmm_pagesrc_huge(ps), 0);
        dmm_pagesrc_prefault(ps, k == 0);
        for (int i = 0; i < 70; i++)
            cr_assert_not_null(dmm_pagesrc_get(ps, 1u << 20, 0, 3));
        const dmm_arena_t *a = ps->newest;
        cr_expect_eq(a->opened, 35 * (size_t)DMM_EXTENT, "k %d: %zu opened", k, a->opened);
        if (k == 0 && dmm_prefault_has_core()) {
            cr_expect_eq(a->ahead, a->opened + DMM_EXTENT, "the next extent opened ahead");
            char *next = (char *)(a->base + a->opened);
            next[100] = 7;   /* open for writing: no fault */
            cr_expect_eq(next[100], 7);
            next[100] = 0;
        } else {
            cr_expect_eq(a->ahead, 0, "k %d: nothing ahead", k);
        }
        fp[k] = ps->footprint;
        del_ps(ps);
    }
    cr_expect_eq(fp[0], fp[1], "ahead %zu, not %zu", fp[0], fp[1]);
    cr_expect_eq(fp[0], fp[2], "real %zu, simulated %zu", fp[0], fp[2]);
}
