/* mem.h - this process's resident memory, as dmm replay measures it: RSS
 * from /proc/self/statm (sampled during the run, so it must not allocate:
 * the fd is opened once, before the clock starts) and the kernel's
 * high-water mark from /proc/self/status, which covers the moments between
 * samples and can be reset when the kernel allows. */
#ifndef DMM_REPLAY_MEM_H
#define DMM_REPLAY_MEM_H

#include <stdint.h>

/* Resident bytes, all of them and the anonymous ones (resident minus
 * file-backed and shared: statm's second field minus its third), read from
 * fd, an open /proc/self/statm; both 0 if it cannot be read. */
void dmm_mem_statm(int fd, uint64_t *rss, uint64_t *anon);

/* VmHWM from /proc/self/status, in bytes; 0 if unknown. */
uint64_t dmm_mem_hwm(void);

/* Reset the kernel's RSS high-water mark (Linux >= 4.0); 1 on success. */
int dmm_mem_reset_hwm(void);

/* The page size, 4096 when the system does not say. */
long dmm_mem_page_size(void);

#endif
