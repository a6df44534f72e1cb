/* prefault.h - a helper thread that faults in memory before it is used.
 *
 * A page source with huge pages (REAL) grows by 2 MiB extents, and the
 * first write to each costs the thread that makes it a page fault: the
 * kernel zeroes 2 MiB, and under a hypervisor the host backs them first
 * (measured on this project's VM: 2.8 ms an extent most of the time, 0.13
 * ms when the host still holds the memory; jq's heap of 160 MB spent 0.27 s
 * of its 0.66 s there).  So when the page source opens an extent it asks
 * for the next one here, and a helper faults it in (MADV_POPULATE_WRITE)
 * while the program runs on: on a machine with a core to spare, a growing
 * heap's faults leave the program's threads.  What is faulted in ahead is
 * resident before it is handed out (one extent ahead of the bump: at most
 * 2 MiB of RSS above the footprint) and reads as zero, as any fresh page.
 * That RSS is the price, so requests are taken only while faults are slow
 * (the helper times each; see prefault.c), and one in a few otherwise; and
 * the page source asks only where the helper has a core to itself
 * (dmm_prefault_has_core).
 *
 * The helper is not a pthread: pthread_create would clear
 * __libc_single_threaded, and with it the one-thread fast paths of the
 * preload libraries and of glibc.  It is a thread of the kernel's (clone,
 * its own stack and thread pointer, every signal blocked) that makes raw
 * system calls only -- madvise and futex -- and touches nothing of libc's:
 * no errno, no TLS.  It sleeps on a futex while nothing is asked and ends
 * after 100 ms without a request (the next one starts another), so that it
 * exists only while a heap grows; and with the process (exit and exec end
 * every thread; a fork child, which has none, starts its own).  Where it
 * cannot start (an architecture without raw system calls here, see
 * tracer/base/sys.h; a sandbox that refuses clone; the sanitizers' builds),
 * requests are refused and memory faults in where it is used, as without
 * it. */
#ifndef DMM_CORE_PREFAULT_H
#define DMM_CORE_PREFAULT_H

#include <stddef.h>

/* Ask the helper to fault in [p, p + len) (page-aligned, open for reading
 * and writing, and staying so): 0 when asked, -1 when there is no helper
 * (none can run here, or the queue of requests is full).  Starts the helper
 * on the process's first request.  Never calls malloc; errno is kept. */
int dmm_prefault(void *p, size_t len);

/* Whether a helper would run beside the program rather than in its place:
 * glibc sees one thread (a program with threads of its own may use every
 * CPU) and the process may run on two CPUs or more (not pinned to one). */
int dmm_prefault_has_core(void);

/* Requests the helper has finished in this process (tests wait on it). */
unsigned long dmm_prefault_done(void);

/* The helper's thread id in this process, or 0 when it has none (a thread
 * that counts the process's others, to know whether it is the last, leaves
 * it out: it never keeps a process alive). */
long dmm_prefault_tid(void);

#endif
