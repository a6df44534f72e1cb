/* desc.h - DMM descriptions: the .dmm text of DESIGN.md, parsed and printed.
 *
 *   # dmm 1   trace=app.trc  fitness=0.913
 *   buddy-binary  range=(0,8192]        split=no  coalesce=no  list=sll   fit=exact order=lifo
 *   segregated    range=(8192,65536]    split=yes coalesce=yes list=btree fit=first order=lifo
 *
 * One allocator a line, in chain order; `range=(lo,hi]` with hi a number or
 * `inf`; fields in any order, missing ones take the defaults below; `lists=N`
 * for segregated.  At most one line
 *
 *   cache         max=256 count=16
 *
 * anywhere (printed first) puts a block cache in front of the chain: each
 * thread keeps up to `count` freed blocks per 8-byte usable size up to
 * `max` bytes (16 to 1024) and serves the next request of that size from
 * them without calling their allocator (allocators/chain/chain.h).  At
 * most one line
 *
 *   release       keep=1048576 delay=inf
 *
 * (printed after the cache line) gives empty areas back to the page source
 * under a policy (dmm_release_t, core/alloc.h): keep= bytes of empty areas
 * an allocator may hold, delay= calls of the allocator an empty area may
 * wait, each a number or `inf`; a missing field is 0 (at once).  At most
 * one line
 *
 *   grow          by=pages
 *
 * (printed after the release line) has the classes that read it (lea,
 * segregated, exact, tlsf) take
 * memory in whole pages while they hold little (DMM_GROW_PAGES,
 * core/alloc.h) instead of 64 KiB granules (by=64k, the same as no line).
 * At most one line
 *   pages         huge=yes
 * (printed after that) holds the chain's memory in 2 MiB extents of
 * transparent huge pages (dmm_pagesrc_huge, core/pagesrc.h): a page fault
 * per 2 MiB instead of per 4 KiB, the footprint counted in whole extents
 * (huge=no, the same as no line).  At most one line
 *   pool          bytes=33554432
 * (printed after those) holds that many bytes from the start, their pages
 * populated, and never gives them back (core/pagesrc.h): the calls that
 * take chunks inside it make no system call and touch no fresh page.  At
 * most one line
 *   retain        bytes=0
 * (printed last of them) sets how many bytes of large chunks (64 KiB and
 * more) given back the page source keeps, pages and all, for the next
 * request of their length (dmm_pagesrc_retain; without the line
 * DMM_RETAIN_BYTES, 1 MiB): 0 gives each back to the OS at once.  Ranges
 * must be sorted and must not overlap; sizes in the gaps between them, and
 * above the last, take the chain's fallback path.
 * '#' starts a comment; the first line's comment ("# dmm 1 ...") is kept as
 * the description's title.  dmm_desc_print(dmm_desc_parse(x)) == x for text
 * in canonical form (what dmm_desc_print writes).
 *
 * Presets (dmm_desc_preset): kng, lea, fib, s10, exa — the paper's five
 * references (section 7), written as .dmm text in desc.c and the README.
 *
 * Parsing allocates nothing (libdmm.so parses DMM_CONFIG before it has a
 * heap): the description is a fixed-size value. */
#ifndef DMM_CHAIN_DESC_H
#define DMM_CHAIN_DESC_H

#include <stdio.h>

#include "allocators/classes/registry.h"
#include "allocators/core/alloc.h"
#include "tracer/base/err.h"

#define DMM_DESC_MAX 32   /* allocators in one chain */
#define DMM_DESC_CACHE_MAX   1024u  /* the largest cache max= */
#define DMM_DESC_CACHE_COUNT 4096u  /* the largest cache count= */

typedef struct dmm_desc {
    int              n;
    dmm_alloc_desc_t a[DMM_DESC_MAX];
    uint32_t         cache_max;     /* the cache line's max=; 0: no cache */
    uint32_t         cache_count;   /* its count= */
    dmm_release_t    release;       /* the release line; .on == 0: none */
    uint8_t          grow;          /* the grow line's by=, DMM_GROW_*; 64k: none */
    uint8_t          huge;          /* the pages line's huge=yes */
    size_t           pool;          /* the pool line's bytes=; 0: none */
    uint8_t          retain_set;    /* a retain line, whose bytes= is retain */
    size_t           retain;        /* read through dmm_desc_retain() */
    char             title[256];   /* the first line's comment, without "# " */
} dmm_desc_t;

/* The page source's budget of retained bytes under d: the retain line's,
 * else DMM_RETAIN_BYTES. */
static inline size_t dmm_desc_retain(const dmm_desc_t *d)
{
    return d->retain_set ? d->retain : DMM_RETAIN_BYTES;
}

/* Parse text (len bytes, named name in messages).  0, or -1 with err set to
 * "NAME: line N: field 'F': fault". */
int dmm_desc_parse(const char *name, const char *text, size_t len, dmm_desc_t *d,
                   dmm_err_t *err);
/* A preset's text by name ("kng", "lea", "fib", "s10", "exa"; and "tlsf",
 * which is not one of the paper's references), or NULL. */
const char *dmm_desc_preset(const char *name);
/* The presets' names, in the paper's order (i from 0 to
 * DMM_DESC_NPRESETS - 1; NULL past the end): the one list every command,
 * report and benchmark takes them from. */
#define DMM_DESC_NPRESETS 5
const char *dmm_desc_preset_name(int i);
/* Load a preset name or a .dmm file.  0, or -1 with err set. */
int dmm_desc_load(const char *name_or_path, dmm_desc_t *d, dmm_err_t *err);
/* Canonical text into buf (always NUL-terminated); returns the length it
 * needed (as snprintf). */
size_t dmm_desc_print(const dmm_desc_t *d, char *buf, size_t cap);
/* The value of the word key=VALUE in d's title ("dmm 1  trace=app.trc
 * seed=7 fitness=0.61"), cut to fit buf; NULL when there is none. */
const char *dmm_desc_title_value(const dmm_desc_t *d, const char *key, char *buf, size_t cap);
/* Set every option that a line's class does not read (DMM_OPT_*, its
 * dmm_class_ops_t.options) to its default (split=no coalesce=no list=sll
 * fit=first order=lifo, no lists=): the same allocator, written one way.
 * The release policy likewise: none when no class reads it, keep=0
 * delay=0 when it gives back at once; the growth rule: 64k when no
 * class reads it; and a retain line of the default budget: none.  Two
 * descriptions that print alike
 * after this behave alike. */
void dmm_desc_effective(dmm_desc_t *d);
/* One allocator line, canonical. */
size_t dmm_desc_print_line(const dmm_alloc_desc_t *a, char *buf, size_t cap);
/* The cache line, canonical ("" when d has no cache). */
size_t dmm_desc_print_cache(const dmm_desc_t *d, char *buf, size_t cap);
/* The release line, canonical ("" when d has none). */
size_t dmm_desc_print_release(const dmm_desc_t *d, char *buf, size_t cap);
/* The grow line, canonical ("" when d has none: by=64k). */
size_t dmm_desc_print_grow(const dmm_desc_t *d, char *buf, size_t cap);
/* The pages line, canonical ("" when d has none). */
size_t dmm_desc_print_pages(const dmm_desc_t *d, char *buf, size_t cap);
/* The pool line, canonical ("" when d has none). */
size_t dmm_desc_print_pool(const dmm_desc_t *d, char *buf, size_t cap);
/* The retain line, canonical ("" when d has none). */
size_t dmm_desc_print_retain(const dmm_desc_t *d, char *buf, size_t cap);
/* The words of the list, fit and order fields ("sll", "best", "fifo", ...),
 * or NULL for a value out of range. */
const char *dmm_desc_list_name(unsigned list);
const char *dmm_desc_fit_name(unsigned fit);
const char *dmm_desc_order_name(unsigned order);

#endif
