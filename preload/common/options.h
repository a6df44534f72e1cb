/* options.h - what the preload libraries share: the one table of DMM_*
 * options the project knows, the check that reports any other DMM_*
 * variable once, and glibc's __libc_* entry points. */
#ifndef DMM_OPTIONS_H
#define DMM_OPTIONS_H

#include <stddef.h>

#define EXPORT __attribute__((visibility("default")))

extern void *__libc_malloc(size_t);
extern void  __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

/* Write "dmm: unknown option NAME ignored ..." on stderr for every DMM_*
 * variable of the environment that is not in the table.  No malloc. */
void dmm_options_report_unknown(void);

#endif
