/* shim.h - what the parts of the malloc family of libdmm.so and
 * libdmm_evolved.so share, and nothing outside the two libraries sees:
 *
 *   shim.c             the malloc family: the fast paths, the start, fork,
 *                      DMM_STATS
 *   check.c            DMM_CHECK=1: every call checked (check.h)
 *   offload.c          DMM_OFFLOAD=1: frees done by a helper thread
 *                      (offload.h)
 *   backend_chain.c    libdmm.so's chain, or
 *   backend_evolved.c  libdmm_evolved.so's (backend.h)
 *
 * The libraries are built with -flto, so that calls between these files
 * inline as if they were one: the fast paths stay a few instructions. */
#ifndef DMM_SHIM_SHIM_H
#define DMM_SHIM_SHIM_H

#include "allocators/chain/chain.h"

/* The shim's life.  The fast path of every entry point tests for
 * DMM_SHIM_ON alone; every other state goes to its slow path. */
typedef enum dmm_shim_state {
    DMM_SHIM_NEW,         /* no call has come yet */
    DMM_SHIM_STARTING,    /* a thread is building the chain */
    DMM_SHIM_ON,          /* the chain serves every call */
    DMM_SHIM_GLIBC,       /* no chain (a bad DMM_CONFIG): glibc serves */
    DMM_SHIM_CHECKED,     /* the chain serves, through DMM_CHECK */
    DMM_SHIM_HELPER,      /* the chain serves, and the next malloc starts
                             DMM_OFFLOAD's helper thread */
} dmm_shim_state_t;

/* Hidden: the libraries export the malloc family alone, and a hidden name
 * is reached without the GOT. */
#pragma GCC visibility push(hidden)

/* The chain, set before the state leaves DMM_SHIM_STARTING. */
extern dmm_chain_t *dmm_shim_chain;
extern dmm_shim_state_t dmm_shim_state;
/* Set while this thread builds the chain: what it allocates meanwhile
 * (pthread_atfork, atexit) comes from glibc and goes back there. */
extern __thread int dmm_shim_starting __attribute__((tls_model("initial-exec")));

/* "dmm: AB" and a newline on stderr, in one write. */
void dmm_shim_say(const char *a, const char *b);
/* free() of a pointer that is not a block of the running chain (glibc's
 * blocks of the start, DMM_CHECK's, a failed start's): the back end's
 * dmm_backend_free_any hands it back here. */
void dmm_shim_free_other(void *p);

/* Where free's fast path looks a pointer up: the chain's newest arena
 * (&dmm_shim_chain->ps.newest) once free may free at once (the chain on,
 * frees neither checked nor offloaded); before that, and in those modes,
 * an empty arena, in which no pointer is found: then every free takes the
 * back end's slow way, which ends in dmm_shim_free_other.  So free's fast
 * path has no state to test. */
extern dmm_arena_t *const *dmm_shim_free_newest;
static inline const dmm_arena_t *dmm_shim_free_arena(void)
{
    dmm_arena_t *const *w = __atomic_load_n(&dmm_shim_free_newest, __ATOMIC_ACQUIRE);
    return __atomic_load_n(w, __ATOMIC_ACQUIRE);
}
/* The chain when free may free at once, else NULL. */
dmm_chain_t *dmm_shim_free_chain(void);

#pragma GCC visibility pop

#endif
