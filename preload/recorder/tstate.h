/* tstate.h - a thread's state in libdmmtrace.so: its way into the
 * recorder (the gate) and its record buffer, in one thread-local object.
 *
 * recorder.c owns it; it is in a header so that the shim's malloc and free
 * write their usual records inline (recorder.h, the lean way): the gate
 * and the fields they touch then lie at fixed offsets from one thread
 * pointer, found with one load of the object's offset, where a thread-local
 * word of its own beside the buffer's state took a load for each. */
#ifndef DMM_RECORDER_TSTATE_H
#define DMM_RECORDER_TSTATE_H

#include <stdint.h>

#include "preload/recorder/block.h"
#include "preload/recorder/writer.h"
#include "tracer/format/trcenc.h"

#define DMM_TW_SMALL_BYTES 1024u   /* in-TLS buffer of exiting threads */

/* The gate: DMM_TW_READY alone when a call may be recorded at once; that
 * bit is set once the thread's first call has started it (never while
 * tracing is off), and DMM_TW_INSIDE is added for each level of the
 * recorder the thread is inside (a call made meanwhile goes straight to
 * glibc).  0 until then, as thread-local memory starts: the fast path
 * compares the word with a constant, which x86 does in one instruction
 * where testing it for 0 takes a load first. */
#define DMM_TW_READY  1
#define DMM_TW_INSIDE 2

enum { TS_NONE, TS_ACTIVE, TS_EXITING };

typedef struct tstate {
    uint8_t       *buf;
    uint8_t       *spare;      /* the other buffer, while the writer has this one */
    uint32_t       cap;        /* bytes, DMM_TRC2_MAX_REC of them kept as slack */
    uint32_t       pos;        /* bytes written by the owner (release store) */
    uint32_t       lim;        /* the lean way while pos < lim (0: never); the
                                  owner's, but exit's flush zeroes it (relaxed
                                  atomics) */
    uint32_t       flushed;    /* bytes already in the file (flush lock) */
    dmm_trc2_state_t st;       /* the owner's: where its records stand since pos 0 */
    uint64_t       tnow;       /* the last clock reading */
    uint64_t       lclock;     /* multi-threaded: the least seq of the next record */
    uint32_t       tleft;      /* records until the next one */
    int            gate;       /* DMM_TW_*, the thread's own (and its signal
                                  handlers') */
    uint32_t       blocks;     /* blocks flushed by the owner */
    uint32_t       spare_cap;  /* the bytes of the spare that a block may fill */
    uint64_t       cpu_ns;     /* its CPU time at its last sample (recorder.c) */
    uint32_t       tid;
    int            tab1;       /* 1 + its order column (seq_mt); 0: none yet, -1:
                                  the shared table */
    uint64_t      *col;        /* its column's entry of row 0, or NULL */
    int            lock;       /* flush lock */
    int            mode;       /* TS_* */
    int            gatekeeper; /* this thread closed the write gate */
    int            early;      /* a fork's child: start the writer once pos
                                  reaches CHILD_EARLY (recorder.c) */
    struct tstate *next;       /* registry */
    dmm_block_z_t  z;          /* when compressing */
    dmm_wjob_t     job;        /* the spare's block, with the writer */
    uint8_t        small[DMM_TW_SMALL_BYTES];
} tstate_t;

extern __thread tstate_t dmm_tw_ts __attribute__((tls_model("initial-exec")));

#endif
