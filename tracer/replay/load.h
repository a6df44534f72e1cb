/* load.h - a trace's operation stream for dmm replay, read without
 * touching this process's heap.
 *
 * The trace is read and reduced to its operation stream in a child
 * process, which hands the stream over in a memfd (or an unnamed file in
 * /tmp); this process maps it.  So the reader's own mallocs and frees never
 * reach the allocator under test (glibc would, for one, raise its mmap
 * threshold after freeing the reader's big arrays). */
#ifndef DMM_REPLAY_LOAD_H
#define DMM_REPLAY_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "tracer/format/opstream.h"

/* What the child writes before the stream: the stream's size and the
 * anomalies of the trace that the stream leaves out. */
typedef struct dmm_replay_ops_header {
    uint64_t magic, nops;
    uint32_t nids, format;   /* format: a dmm_format_t */
    uint64_t free_null, unknown_free, failed, reused_live;
    uint64_t nresident;      /* dmm_resident_t entries after the ops, by id */
} dmm_replay_ops_header_t;
_Static_assert(sizeof(dmm_replay_ops_header_t) == 64, "the stream starts 64 bytes in");

/* The stream, mapped read-only. */
typedef struct dmm_replay_ops {
    const dmm_replay_ops_header_t *h;
    const dmm_op_t                *ops;   /* h->nops of them */
    const dmm_resident_t          *resident;   /* h->nresident, in the order of their ids */
    size_t                         maplen;
} dmm_replay_ops_t;

/* Load path's operation stream into L, from its TRACE.ops when use_cache
 * and that is valid (tracer/format/opcache.h; else parsed, and the cache
 * written).  Returns an exit status: 0, 1 (the
 * system refused: no memfd, fork, mmap) or 2 (a bad trace, or one without
 * operations); the message has been printed on stderr, by the child for
 * the trace's faults. */
int dmm_replay_load(const char *path, int use_cache, dmm_replay_ops_t *L);
void dmm_replay_unload(dmm_replay_ops_t *L);

/* The bytes of block id that the traced program had written (resident when
 * it freed the block), or UINT64_MAX when its trace does not say. */
uint64_t dmm_replay_resident(const dmm_replay_ops_t *L, uint32_t id);

#endif
