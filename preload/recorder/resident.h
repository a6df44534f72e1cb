/* resident.h - how much of a block glibc mapped on its own is in memory:
 * what a trace's FREE of such a block says (DMM_TRC_RF_RESIDENT,
 * trcfmt.h), so that a replay writes as much of it as the program did and
 * the memory it measures is the program's (a program that writes a few
 * pages of a 1 MiB buffer that glibc mapped on its own holds those few
 * pages).
 *
 * The tracer sits on glibc's malloc, so a block's size is in glibc's chunk
 * header, the word before the block: the chunk's bytes with three flag
 * bits, IS_MMAPPED (2) among them.  Only mapped blocks are asked about: a
 * block in glibc's heap lies on pages that earlier blocks may have written,
 * so what is resident there says little of the block, and asking costs a
 * system call (2.3 µs here) that a heap block's free does not otherwise
 * make: the bundled work_media frees a 225 KiB heap block each frame,
 * 0.086 s for 3000 frames traced, 0.093 s when each was asked about. */
#ifndef DMM_RECORDER_RESIDENT_H
#define DMM_RECORDER_RESIDENT_H

#include <stddef.h>
#include <stdint.h>

#include "tracer/format/trcfmt.h"

/* Whether glibc's block p (not NULL) is one to ask about: glibc mapped it
 * on its own. */
static inline int dmm_resident_mapped(const void *p)
{
    return (((const size_t *)p)[-1] & 2) != 0;
}

/* Whether a request of n bytes may give such a block: glibc maps a request
 * of its mmap threshold or more, DMM_TRC_RESIDENT_MIN at least unless the
 * program lowered it (mallopt; then a smaller mapped block is asked about
 * at its free, but not listed below). */
static inline int dmm_resident_may_be_mapped(uint64_t n)
{
    return n >= DMM_TRC_RESIDENT_MIN - 32;
}

/* The mapped blocks live now, for the end of the process: an address list
 * (at most DMM_RESIDENT_LIVE; a block beyond it goes unsaid) under a lock:
 * a large block costs glibc a system call or page faults, beside which the
 * lock is nothing.  dmm_resident_update: block p (NULL: none) has come into
 * being, or grown or shrunk in place: listed if mapped, else not.
 * dmm_resident_forget: p is about to be freed or moved.  dmm_resident_each:
 * fn(p, its resident bytes, ctx) for each listed block (its size as it was
 * listed, read from glibc then: a block freed while the tracer was off may
 * be gone; one that is no longer mapped is left out).
 * dmm_resident_atfork_child: the lock is free in a fork's child. */
#define DMM_RESIDENT_LIVE 4096u
void dmm_resident_update(const void *p);
void dmm_resident_forget(const void *p);
void dmm_resident_each(void (*fn)(const void *p, uint64_t bytes, void *ctx), void *ctx);
void dmm_resident_atfork_child(void);

/* The bytes of glibc's block p that are resident: its pages that mincore
 * finds in memory (a page the block shares with a neighbour counts, when
 * in memory), times the page size, at most the block's usable size.
 * Raw system calls: errno is left alone. */
uint64_t dmm_resident_bytes(const void *p);

#endif
