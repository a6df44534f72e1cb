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

int      dmm_tw_enter(void);
void     dmm_tw_leave(void);
/* A sequence number: the process-wide order of records.  Take it after the
 * call for anything that acquires an address and before it for anything
 * that gives one up, so that the order respects causality across threads. */
uint64_t dmm_tw_seq(void);
/* Record one call.  seq is from dmm_tw_seq().  err is errno after a failed
 * call, else 0. */
void     dmm_tw_record(unsigned op, uint64_t seq, uint64_t size, uint64_t arg,
                       const void *in, const void *out, int err);
/* Write every thread's pending records (exit, fatal signals). */
void     dmm_tw_flush_all(int final);
/* The same just before exec or _exit ends the process image: from here on
 * only the calling thread writes to the trace, so that no thread is killed
 * in the middle of a block.  dmm_tw_reopen() lets the others write again
 * (the exec failed).  Both keep errno. */
void     dmm_tw_flush_last(int final);
void     dmm_tw_reopen(void);

#endif
