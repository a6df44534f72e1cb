/* recorder.h - the recording side of libdmmtrace.so, as the malloc shim
 * (preload/recorder/trace_shim.c) sees it.
 *
 * The shim brackets the recording of every call with dmm_tw_enter() and
 * dmm_tw_leave().  Enter returns 0 when the call must not be recorded:
 * tracing is off, or this thread is already inside the tracer (libunwind,
 * dlsym or pthread code that allocates while we record), in which case the
 * call goes straight to glibc.
 * Nothing here calls malloc, stdio or getenv on the recording path. */
#ifndef DMM_TRACE_WRITER_H
#define DMM_TRACE_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "preload/common/options.h"
#include "preload/recorder/tstate.h"

/* This thread's way into the recorder: its gate (tstate.h), DMM_TW_READY
 * when a call may be recorded at once.  Inline: the shim's fast path tests
 * one thread-local word. */
extern uint64_t dmm_tw_next_seq;
extern char __libc_single_threaded;
int dmm_tw_enter_slow(void);

/* dmm_tw_enter's test alone: 0 where it would call dmm_tw_enter_slow(),
 * which the caller then calls out of line (no frame on the fast path). */
static inline int dmm_tw_enter_quick(void)
{
    if (__builtin_expect(dmm_tw_ts.gate == DMM_TW_READY, 1)) {
        dmm_tw_ts.gate = DMM_TW_READY + DMM_TW_INSIDE;
        return 1;
    }
    return 0;
}

static inline int dmm_tw_enter(void)
{
    return dmm_tw_enter_quick() || dmm_tw_enter_slow();
}

static inline void dmm_tw_leave(void)
{
    dmm_tw_ts.gate -= DMM_TW_INSIDE;
}

/* A sequence number: the order of records, consistent with causality.
 * Take it after the call for anything that acquires an address and before
 * it for anything that gives one up, naming that address (NULL: none).
 * While the process has one thread, the next of a process-wide count.
 * Multi-threaded, each thread keeps a clock of its own (recorder.c,
 * seq_mt): no line of memory that every call of every thread writes. */
uint64_t dmm_tw_seq_mt(const void *addr);
static inline uint64_t dmm_tw_seq_at(const void *addr)
{
    if (__libc_single_threaded)
        return dmm_tw_next_seq++;
    return dmm_tw_seq_mt(addr);
}
static inline uint64_t dmm_tw_seq(void)
{
    return dmm_tw_seq_at(0);
}
/* Record one call.  seq is from dmm_tw_seq().  err is errno after a failed
 * call, else 0. */
void     dmm_tw_record(unsigned op, uint64_t seq, uint64_t size, uint64_t arg,
                       const void *in, const void *out, int err);
/* malloc's and free's records, the two calls most programs make most; the
 * caller has entered the recorder, these leave it.  dmm_tw_malloc_done:
 * after glibc's malloc(n) returned p (errno as it left it), take the seq
 * and record; returns p.  dmm_tw_free_done: take the seq, record, then
 * glibc's free(p) (recorded first: once glibc has the block back another
 * thread may be handed the same address).  Neither changes errno.
 *
 * Inline, the usual record the lean way (recorder.c): a result, room in
 * the buffer, and none of what s->lim rules out (a thread exiting, a
 * process writing through after exit, call stacks, a clock other than the
 * TSC).  While the process has one thread, every record of the thread
 * takes the process's next seq, so a record's seq is its stream's next,
 * and its time is the last clock reading, which the stream's last record
 * carries: rewind_buf() and a record with a time of its own (time_kept())
 * make the next one read the clock, which takes it out of line
 * (dmm_tw_*_clock), where its seq and time are encoded as they are.  So
 * neither is compared here, and the record's bytes are trcenc.h's _same
 * encoders', calling nothing.  Anything else, threads included, goes out
 * of line: dmm_tw_*_mt. */
void    *dmm_tw_malloc_mt(size_t n, void *p);
void    *dmm_tw_malloc_clock(size_t n, void *p);
void     dmm_tw_free_mt(void *p);
void     dmm_tw_free_clock(void *p);

/* The lean way's test: the owner's pos below its lim (exit's flush may zero
 * that from another thread). */
static inline __attribute__((always_inline)) int dmm_tw_lean(tstate_t *s)
{
    return __builtin_expect(s->pos < __atomic_load_n(&s->lim, __ATOMIC_RELAXED), 1);
}

/* dmm_tw_lean while the process has one thread: no other thread writes
 * lim, so a plain load, which the compare takes as its operand. */
static inline __attribute__((always_inline)) int dmm_tw_lean1(tstate_t *s)
{
    return __builtin_expect(s->pos < s->lim, 1);
}

/* A lean record whose seq is its stream's next and whose time stands: its
 * bytes by trcenc.h's _same encoders, and the rest of the way out. */
static inline __attribute__((always_inline)) void *dmm_tw_malloc_same(tstate_t *s, size_t n,
                                                                      void *p)
{
    uint32_t pos = s->pos;
    pos = dmm_trc3_put_malloc_same(s->buf + pos, pos, &s->st, n, (uintptr_t)p);
    __atomic_store_n(&s->pos, pos, __ATOMIC_RELEASE);
    dmm_tw_leave();
    return p;
}

static inline __attribute__((always_inline)) void dmm_tw_free_same(tstate_t *s, void *p)
{
    uint32_t pos = s->pos;
    pos = dmm_trc3_put_free_same(s->buf + pos, pos, &s->st, (uintptr_t)p);
    __atomic_store_n(&s->pos, pos, __ATOMIC_RELEASE);
    dmm_tw_leave();
    __libc_free(p);
}

static inline __attribute__((always_inline)) void *dmm_tw_malloc_done(size_t n, void *p)
{
    tstate_t *s = &dmm_tw_ts;
    if (!__builtin_expect(__libc_single_threaded && p != NULL && dmm_tw_lean1(s), 1))
        return dmm_tw_malloc_mt(n, p);
    if (__builtin_expect(--s->tleft == 0, 0))
        return dmm_tw_malloc_clock(n, p);
    dmm_tw_next_seq++;
    return dmm_tw_malloc_same(s, n, p);
}

static inline __attribute__((always_inline)) void dmm_tw_free_done(void *p)
{
    tstate_t *s = &dmm_tw_ts;
    if (!__builtin_expect(__libc_single_threaded && dmm_tw_lean1(s), 1)) {
        dmm_tw_free_mt(p);
        return;
    }
    if (__builtin_expect(--s->tleft == 0, 0)) {
        dmm_tw_free_clock(p);
        return;
    }
    dmm_tw_next_seq++;
    dmm_tw_free_same(s, p);
}

/* dmm_tw_free_done of a block that resident.h's dmm_resident_mapped() picks:
 * its record says how much of it was resident (DMM_TRC_RF_RESIDENT).
 * dmm_tw_malloc_large: dmm_tw_malloc_done of a request that
 * dmm_resident_may_be_mapped(), the block listed if mapped (out of the way of
 * the usual malloc, which makes no call after glibc's but this one). */
void     dmm_tw_free_large(void *p);
void    *dmm_tw_malloc_large(size_t n, void *p);
/* Write every thread's pending records (exit, fatal signals). */
void     dmm_tw_flush_all(int final);
/* The same just before exec or _exit ends the process image: from here on
 * only the calling thread writes to the trace, so that no thread is killed
 * in the middle of a block.  dmm_tw_reopen() lets the others write again
 * (the exec failed).  Both keep errno. */
void     dmm_tw_flush_last(int final);
void     dmm_tw_reopen(void);
/* 1 when the caller runs on another process's memory, the recorder's state
 * included: a vfork's child (posix_spawn's is glibc's own, and calls
 * nothing here) until it execs or _exits.  Its exec or _exit is not the
 * end of that process's recording (nor its exit, which it should not
 * call): the flushes above do nothing in it, and before_exec records no
 * exec. */
int      dmm_tw_vfork_child(void);

#endif
