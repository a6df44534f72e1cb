/* spinlock.h - the one lock of dmm's allocators and recorder: a word that is
 * 0 when free and 1 when held, taken by atomic exchange and given back by a
 * release store of 0.
 *
 * A waiter yields the CPU while the word is taken rather than spinning: on
 * a machine with few cores the holder is often the thread that was
 * preempted, and a spinning waiter only delays it (measured on 2 cores:
 * see the commit that made the evolved library's lock wait this way).  The
 * DMM_OFFLOAD helper alone spins a while first (dmm_spin_lock_patient): it
 * waits for one malloc or free of another thread, and a system call per
 * busy lock made it slower than the frees it takes over.
 *
 * Nothing here allocates or calls stdio: the preload libraries use it from
 * inside malloc.  The words are plain ints, so that a structure mapped from
 * the OS (zero-filled) starts with every lock free, and fork handlers can
 * hold and release them with dmm_spin_lock/unlock. */
#ifndef DMM_BASE_SPINLOCK_H
#define DMM_BASE_SPINLOCK_H

#include <sched.h>

/* glibc 2.32+: nonzero while the process has only ever had one thread. */
extern char __libc_single_threaded;

/* Wait for the word to be free, yielding, then take it. */
static inline void dmm_spin_lock(int *l)
{
    while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(l, __ATOMIC_RELAXED))
            sched_yield();
}

static inline void dmm_spin_unlock(int *l)
{
    __atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/* Take the word within tries attempts (yielding between them): 1, or 0
 * when it stayed taken (a fatal-signal handler must not wait for ever on
 * a lock the interrupted thread may hold). */
static inline int dmm_spin_trylock(int *l, int tries)
{
    for (int i = 0; i < tries; i++) {
        if (!__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
            return 1;
        sched_yield();
    }
    return 0;
}

/* The waiting part of dmm_spin_lock_mt, out of line so that the
 * uncontended path stays a few instructions. */
static __attribute__((noinline, unused)) void dmm_spin_wait(int *l)
{
    dmm_spin_lock(l);
}

/* The allocators' lock: nothing to do while the process is
 * single-threaded (no thread can be waiting, and none can start while this
 * one is inside the allocator). */
static inline void dmm_spin_lock_mt(int *l)
{
    if (__libc_single_threaded)
        return;
    if (__builtin_expect(__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE), 0))
        dmm_spin_wait(l);
}

static inline void dmm_spin_unlock_mt(int *l)
{
    if (__libc_single_threaded)
        *l = 0;
    else
        __atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/* Spin (pause) up to `pauses` times while the word is taken before each
 * yield: for a waiter that is sure to be on a CPU of its own. */
static inline void dmm_spin_lock_patient(int *l, unsigned pauses)
{
    unsigned spins = 0;
    while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE)) {
        while (__atomic_load_n(l, __ATOMIC_RELAXED)) {
            if (++spins < pauses) {
#if defined(__x86_64__) || defined(__i386__)
                __builtin_ia32_pause();
#endif
            } else {
                sched_yield();
                spins = 0;
            }
        }
    }
}

#endif
