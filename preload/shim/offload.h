/* offload.h - DMM_OFFLOAD=1: a program's frees handed to a helper thread
 * (libdmm.so and libdmm_evolved.so), through a bounded lock-free queue, so
 * that the threads that free do not wait for the allocator's locks and
 * structures (offload.c says how).  The shim sets it up at the start and
 * sends every free of the chain here while it is on. */
#ifndef DMM_SHIM_OFFLOAD_H
#define DMM_SHIM_OFFLOAD_H

#include <stddef.h>

#include "allocators/chain/chain.h"

#pragma GCC visibility push(hidden)

/* At the start (the shim's init): map the queue.  0, or -1 when the OS
 * gives no memory (offload then stays off). */
int   dmm_offload_setup(void);
/* Is offloading set up?  (Then every free of the chain comes here.) */
int   dmm_offload_on(void);
/* The library's constructor ran: libc is set up, a helper may start. */
void  dmm_offload_ready(void);
/* From malloc's slow path in DMM_SHIM_HELPER: start the helper thread. */
void  dmm_offload_start(dmm_chain_t *c);

/* Take block p of chain c, of owner o in the page map (the caller checked
 * that it is the chain's), for the helper.  1 when it is taken, 0 when the
 * caller must free it now. */
int   dmm_offload_push(dmm_chain_t *c, void *p, unsigned o);

/* Exit (an atexit handler): from now on every free is the caller's. */
void  dmm_offload_stop(void);

/* Fork: prepare holds the helper between two batches; the child frees what
 * was queued and starts again without a helper. */
void  dmm_offload_prepare(void);
void  dmm_offload_parent(void);
void  dmm_offload_child(dmm_chain_t *c);

/* DMM_STATS's line into buf (nothing when off): the bytes written. */
int   dmm_offload_print(char *buf, size_t len);

#pragma GCC visibility pop

#endif
