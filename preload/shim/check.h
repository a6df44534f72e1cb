/* check.h - DMM_CHECK=1: heap misuse detection for libdmm.so and
 * libdmm_evolved.so.  While it is on, the shim sends every call of the
 * malloc family here: double frees, foreign and interior pointers and
 * overwritten headers and guards abort the program with a message that
 * names the fault (check.c says how). */
#ifndef DMM_SHIM_CHECK_H
#define DMM_SHIM_CHECK_H

#include <stddef.h>

#include "allocators/chain/chain.h"

#pragma GCC visibility push(hidden)

/* At the start, before the chain returns any block. */
void  dmm_check_init(void);

/* The malloc family on chain c, checked.  align: a power of two. */
void *dmm_check_malloc(dmm_chain_t *c, size_t n);
void *dmm_check_calloc(dmm_chain_t *c, size_t nmemb, size_t size);
void *dmm_check_memalign(dmm_chain_t *c, size_t align, size_t n);
void *dmm_check_realloc(dmm_chain_t *c, void *p, size_t n);
void  dmm_check_free(dmm_chain_t *c, void *p);
/* 1 with p's usable size in *n; 0 for a glibc block (the caller asks
 * glibc). */
int   dmm_check_usable(dmm_chain_t *c, void *p, size_t *n);

/* The glibc blocks handed out while the chain was being built, which are
 * not foreign: old becomes p (NULL, p: a new one; p, NULL: freed). */
void  dmm_check_glibc_set(void *old, void *p);

/* Fork: hold the check's lock across it, taken before the chain's. */
void  dmm_check_lock_fork(void);
void  dmm_check_unlock_fork(void);

/* DMM_STATS's line into buf: snprintf's result. */
int   dmm_check_print(char *buf, size_t len);

#pragma GCC visibility pop

#endif
