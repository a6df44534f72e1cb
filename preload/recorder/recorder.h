/* recorder.h - the recording side of libdmmtrace.so, as the malloc shim
 * (preload/recorder/trace_shim.c) sees it.
 *
 * The shim brackets every call with dmm_tw_enter()/dmm_tw_leave().  Enter
 * returns 0 when the call must not be recorded: tracing is off, or this
 * thread is already inside the tracer (libunwind, dlsym or pthread code that
 * allocates while we record), in which case the call goes straight to glibc.
 * Nothing here calls malloc, stdio or getenv on the recording path. */
#ifndef DMM_TRACE_WRITER_H
#define DMM_TRACE_WRITER_H

#include <stddef.h>
#include <stdint.h>

/* This thread's way into the recorder: 0 when a call may be recorded at
 * once; DMM_TW_NOT_READY until the thread's first call has started it (and
 * for good once tracing is off), plus DMM_TW_INSIDE for each level of the
 * recorder the thread is inside (a call made meanwhile goes straight to
 * glibc).  Inline: the shim's fast path tests one thread-local word. */
#define DMM_TW_NOT_READY 1
#define DMM_TW_INSIDE    2
extern __thread int dmm_tw_gate __attribute__((tls_model("initial-exec")));
extern uint64_t dmm_tw_next_seq;
extern char __libc_single_threaded;
int dmm_tw_enter_slow(void);

static inline int dmm_tw_enter(void)
{
    if (__builtin_expect(dmm_tw_gate == 0, 1)) {
        dmm_tw_gate = DMM_TW_INSIDE;
        return 1;
    }
    return dmm_tw_enter_slow();
}

static inline void dmm_tw_leave(void)
{
    dmm_tw_gate -= DMM_TW_INSIDE;
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
 * thread may be handed the same address).  Neither changes errno. */
void    *dmm_tw_malloc_done(size_t n, void *p);
void     dmm_tw_free_done(void *p);
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

#endif
