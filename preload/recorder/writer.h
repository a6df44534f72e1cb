/* writer.h - the trace writer: a process of libdmmtrace.so's own that
 * writes the recording threads' full buffers to the trace file, so that the
 * copy into the file, the checksum and zstd are not on the threads' time.
 *
 * A thread that fills its buffer hands it over as a job (its bytes stay
 * where they are) and goes on recording into a second buffer; before it
 * reuses the first, it waits for the job, which by then has long been
 * written.  A thread's blocks reach the file in their order: it has one job
 * under way at a time, and whoever else writes its records (exit, a fatal
 * signal) waits for that job first.
 *
 * The recorder starts the writer as soon as a program's trace file is open
 * (a fork's child: once it has recorded a little), as clone(2) with
 * CLONE_VM: it shares the program's memory (no copy of a buffer, and the
 * program's C library does not see a second thread, so its malloc stays on
 * its single-threaded path), its exit signal is none (wait(2) without
 * __WALL does not see it), every signal is blocked in it, and it holds no
 * file descriptor of the program's but the trace file.  It makes raw system
 * calls only (sys.h).  It ends when told to (exec, _exit, a fatal signal:
 * dmm_writer_stop, after its jobs; exit: dmm_writer_release) or, having
 * written what it was given, when the program is gone without telling it
 * (killed; after an exec the recorder did not see, when the program that
 * exec started ends), and first writes what the threads' buffers still
 * hold (dmm_writer_on_orphan).  If it dies,
 * the jobs it had not taken come back to their threads, and no writer is
 * started again.
 *
 * Not with ThreadSanitizer, whose runtime does not know a process sharing
 * its memory; not where sys.h has no raw system calls. */
#ifndef DMM_RECORDER_WRITER_H
#define DMM_RECORDER_WRITER_H

#include <stdint.h>

#include "preload/recorder/block.h"

/* A job: a block's bytes, in a buffer that stays unchanged until the job is
 * done (state 0).  Lives in its thread's state; the writer keeps a pointer
 * to it until then. */
typedef struct dmm_wjob {
    struct dmm_wjob *next;      /* the writer's queue */
    const void      *payload;
    uint32_t         len;
    uint32_t         tid;
    int              cont;      /* goes on from the thread's previous block */
    int              state;     /* 0 done, else DMM_WJOB_* bits (futex word) */
} dmm_wjob_t;

#define DMM_WJOB_QUEUED 1
#define DMM_WJOB_TAKEN  2
#define DMM_WJOB_WAITER 4

/* Whether a writer can run here at all (raw system calls, no TSan). */
int  dmm_writer_supported(void);

/* Queue job j (payload, len, tid and cont set) to be appended to fd,
 * zstd-compressed at zlevel: 1, or 0 when no writer takes it (none could be
 * started, one died, or one is being stopped): the caller writes it then.
 * Starts the writer on the first call. */
int  dmm_writer_submit(dmm_wjob_t *j, int fd, int zlevel);

/* Start the writer now, for jobs to fd at zlevel, rather than on the first
 * job: a program killed before it filled a buffer (python3 stopped with
 * Ctrl-C soon after it started) then loses none of its records either.  1
 * when a writer runs. */
int  dmm_writer_start(int fd, int zlevel);

/* Wait until j is done: 0.  1 when the writer died before it took j: the
 * block is the caller's to write (j is done from here on). */
int  dmm_writer_wait(dmm_wjob_t *j);

/* Let the writer finish every job, end it and reap it: the trace file holds
 * every block handed over.  A later job starts a new one (exec failed). */
void dmm_writer_stop(void);

/* At the process's end, once every job is done and nothing more will be
 * handed over: tell the writer to end, without waiting for it (it writes
 * nothing more, and an exit that waited paid its end: about 0.1 ms a
 * process here).  Whoever reaps the program's children reaps it. */
void dmm_writer_release(void);

/* hook(fd, z) runs in the writer, after its last job, when the program
 * died without stopping it (SIGKILL, a signal the program handles itself):
 * it may write what the dead program's buffers still hold to fd (the
 * writer's own copy of the trace file's descriptor), through z, with raw
 * system calls only and without waiting on a lock. */
void dmm_writer_on_orphan(void (*hook)(int fd, dmm_block_z_t *z));

/* In a fork's child: the writer and its jobs are the parent's. */
void dmm_writer_forget(void);

#endif
