/* trcfmt.h - the on-disk layout of dmm's binary trace files (.trc).
 *
 * A trace is a file header followed by self-delimiting blocks.  Every block
 * carries its own length and a CRC32 of its payload, so a file that was cut
 * short (a killed process, a full disk) reads up to its last whole block and
 * the reader can say where and why it stopped.  All integers are
 * little-endian.  Writers: preload/recorder/recorder.c (the preload library) and
 * tracer/format/trc_write.c (dmm convert).  Reader: tracer/format/trc_read.c.
 *
 *   file   := header block*
 *   header := dmm_trc_header_t, then cmdline_len bytes of the command line
 *             (arguments separated by NUL), padded with zeros to 8 bytes
 *   block  := dmm_trc_block_t, then stored_len payload bytes
 *   payload (after optional zstd decompression) := raw_len bytes of records
 *
 * Records of one block come from one thread, in that thread's order.  How
 * a payload holds them depends on the header's version:
 *
 * Version 4 (what dmm writes): version 3, and two more op values in the op
 * bits, each in version 2's long form with the fields ptr_in and arg: 19
 * (DMM_TRC4_FREE_RESIDENT, trcenc.h), a FREE that says how much of its
 * block was resident when it was freed (DMM_TRC_RF_RESIDENT), and 20
 * (DMM_TRC_RESIDENT), how much of a block still live at the end was.
 *
 * Version 3: version 2, and a short form of the usual
 * malloc and free records: one op byte whose op bits hold a value no op
 * has (18: FREE; 23 to 31: MALLOC, 23 + the size's length), bits 5-7 the
 * length of the address difference, then the size and the difference as
 * below.  Such a record's seq is the previous record's + 1, its time the
 * previous record's; it did not fail and has no stack (trcenc.h).
 *
 * Version 2: compact records, a few bytes each
 * (trcenc.h).  A record is an op byte (the op in bits 0-4; bit 5 FAILED;
 * bit 6 SEQ_NEXT: its seq is the previous record's + 1 and is not stored;
 * bit 7 STACK: a call-site id is stored), then one byte of two 4-bit
 * lengths per two of its fields, then the fields, each little-endian in as
 * many bytes as its length says (0 to 8; 0 = the value 0).  The fields, in
 * order: seq (unless SEQ_NEXT), time, then those of its op
 * (DMM_TRC2_FIELDS: size, arg, ptr_in, ptr_out), errnum (if FAILED), stack
 * (if STACK).  seq, time and the pointers are stored as the zigzag
 * difference from the previous record's value of the same thread (the two
 * pointers share one: ptr_out follows ptr_in); size, arg, errnum and stack
 * as they are.  A STACKDEF record is followed by its size frames, 8 bytes
 * each; a MODULE record by its size bytes of path.  Differences start from
 * zero at a block's first record, unless the block's flags have
 * DMM_TRC_BF_CONT: then they go on from where the thread's previous block
 * ended (a block written by another thread at exit or on a signal cuts a
 * thread's records where they stand).
 *
 * Version 1: raw_len / 64 slots of dmm_trc_rec_t.  A slot is one record,
 * except that a DMM_TRC_STACKDEF record is followed by ceil(nframes / 8)
 * continuation slots holding the frame addresses as uint64_t (8 per slot,
 * zero-padded), and a DMM_TRC_MODULE record is followed by continuation
 * slots holding its path.  dmm reads it still, and writes it on request
 * (dmm_write_trc_version).
 */
#ifndef DMM_TRCFMT_H
#define DMM_TRCFMT_H

#include <stdint.h>

#define DMM_TRC_MAGIC        "DMMTRACE"   /* 8 bytes, no NUL */
#define DMM_TRC_VERSION      4            /* what dmm writes */
#define DMM_TRC_VERSION_MIN  1            /* the oldest it reads */
#define DMM_TRC_BLOCK_MAGIC  0x4b4c4244u  /* "DBLK" little-endian */

/* Limits a reader enforces, so that a corrupt length can never make it
 * allocate absurd amounts or loop for ever. */
#define DMM_TRC_MAX_CMDLINE   (1u << 20)
#define DMM_TRC_MAX_BLOCK     (64u << 20)  /* raw or stored payload bytes */
#define DMM_TRC_MAX_FRAMES    256u
#define DMM_TRC_MAX_PATH      4096u

/* Header flags. */
#define DMM_TRC_F_CONVERTED   0x1u  /* written by dmm convert, not recorded */
#define DMM_TRC_F_FORKED      0x2u  /* recorded in the child of a fork */
#define DMM_TRC_F_NOTIME      0x4u  /* the time field carries no clock */

/* clock_id of a trace whose record times are x86 TSC ticks since start.
 * The TSC is read in a third of the time of a vDSO clock_gettime; CLOCKSYNC
 * records pair ticks with CLOCK_MONOTONIC nanoseconds, and readers convert
 * record times to nanoseconds from them. */
#define DMM_TRC_CLOCK_TSC 0x10000u

typedef struct dmm_trc_header {
    char     magic[8];          /* DMM_TRC_MAGIC */
    uint16_t version;           /* DMM_TRC_VERSION */
    uint16_t header_size;       /* sizeof(dmm_trc_header_t) */
    uint32_t flags;             /* DMM_TRC_F_* */
    uint32_t pid;
    uint32_t ppid;
    uint32_t clock_id;          /* clockid_t of the time fields, or DMM_TRC_CLOCK_TSC */
    uint32_t clock_res_ns;      /* its resolution */
    uint64_t start_realtime_ns; /* wall clock at start (CLOCK_REALTIME) */
    uint64_t start_clock_ns;    /* clock_id at start; record times are relative */
    uint32_t cmdline_len;       /* bytes that follow the header */
    uint32_t stack_depth;       /* DMM_TRACE_STACK in force, 0 = off */
    uint32_t source_format;     /* dmm_format_t the data came from */
    uint32_t time_stride;       /* v2: the clock is read every this many
                                   records of a thread, which carry the last
                                   reading in between (0, 1: every record) */
} dmm_trc_header_t;
_Static_assert(sizeof(dmm_trc_header_t) == 64, "trace header is 64 bytes");

/* Block compression. */
#define DMM_TRC_COMP_NONE 0u
#define DMM_TRC_COMP_ZSTD 1u

typedef struct dmm_trc_block {
    uint32_t magic;             /* DMM_TRC_BLOCK_MAGIC */
    uint32_t tid;               /* thread that recorded every record in it */
    uint32_t stored_len;        /* payload bytes in the file */
    uint32_t raw_len;           /* payload bytes after decompression */
    uint32_t compression;       /* DMM_TRC_COMP_* */
    uint32_t crc32;             /* CRC-32C (dmm_crc32) of the stored payload */
    uint32_t header_crc32;      /* CRC-32C of the first 24 bytes of this struct
                                   (v2: continued over flags) */
    uint32_t flags;             /* DMM_TRC_BF_* (v2; 0 in v1) */
} dmm_trc_block_t;
_Static_assert(sizeof(dmm_trc_block_t) == 32, "block header is 32 bytes");

/* Block flags (v2). */
#define DMM_TRC_BF_CONT 0x1u    /* differences go on from the thread's previous block */

/* Record operations.  Values are part of the file format: append only. */
enum {
    DMM_TRC_MALLOC = 1,
    DMM_TRC_CALLOC,           /* size = nmemb * size (0 on overflow), arg = nmemb */
    DMM_TRC_REALLOC,          /* ptr_in old, ptr_out new, size new */
    DMM_TRC_REALLOCARRAY,     /* as REALLOC, arg = nmemb */
    DMM_TRC_FREE,             /* ptr_in */
    DMM_TRC_MEMALIGN,         /* arg = alignment */
    DMM_TRC_POSIX_MEMALIGN,   /* arg = alignment */
    DMM_TRC_ALIGNED_ALLOC,    /* arg = alignment */
    DMM_TRC_VALLOC,           /* arg = page size */
    DMM_TRC_PVALLOC,          /* arg = page size */
    DMM_TRC_RELEASE,          /* a realloc gave up ptr_in; its REALLOC follows */
    DMM_TRC_STACKDEF,         /* stack = id, size = nframes; frames follow */
    DMM_TRC_THREAD_EXIT,      /* the recording thread is exiting */
    DMM_TRC_FORK,             /* ptr_out = child pid (or 0 on failure) */
    DMM_TRC_EXEC,             /* an exec is about to happen */
    DMM_TRC_MODULE,           /* an executable mapping: ptr_in = start,
                                 ptr_out = end, arg = file offset, size =
                                 path length; the path follows in
                                 ceil(size / 64) continuation slots */
    DMM_TRC_CLOCKSYNC,        /* time = ns since start_clock_ns on
                                 CLOCK_MONOTONIC, arg = clock ticks since
                                 start at that moment (DMM_TRC_CLOCK_TSC),
                                 size = the program's peak RSS in bytes
                                 until then (VmHWM, else getrusage; 0 =
                                 not sampled, as by the recorders of
                                 before), ptr_in =
                                 its CPU time until then, user + system,
                                 in ns (0 = not sampled): every thread's
                                 at the end; before, the recording
                                 threads', each to its last sample,
                                 ptr_out = the thread's stream's address
                                 before the record (so that the next
                                 one's difference is the one it would
                                 have had) */
    DMM_TRC_OP_MAX,           /* the ops of versions 1 to 3 are below it
                                 (18); 18 to 31 are op bits of version 3's
                                 short forms, 19 of version 4's resident
                                 FREE (trcenc.h) */
    DMM_TRC_RESIDENT = 20,    /* version 4: ptr_in = a block that glibc
                                 mapped, still live at the end of the
                                 process (exit, _exit), arg = its resident
                                 bytes, as a FREE's with
                                 DMM_TRC_RF_RESIDENT says them; no call */
    DMM_TRC_OP_END            /* every op is below it */
};

/* Whether a record of a version-`version` file may have op `op`. */
static inline int dmm_trc_op_valid(unsigned op, unsigned version)
{
    return (op > 0 && op < DMM_TRC_OP_MAX) || (op == DMM_TRC_RESIDENT && version >= 4);
}

/* Record flags. */
#define DMM_TRC_RF_FAILED 0x1u    /* the call returned NULL / an error */
#define DMM_TRC_RF_RESIDENT 0x2u  /* a FREE's arg: the bytes of its block
                                     that were resident when it was freed
                                     (pages that mincore found in memory,
                                     times the page size, at most the
                                     block's usable size); the recorder
                                     looks only at blocks that glibc
                                     mapped on their own (unwritten pages
                                     take no memory there), which are
                                     DMM_TRC_RESIDENT_MIN bytes or more
                                     unless the program lowered glibc's
                                     mmap threshold; versions 1 and 4
                                     keep it */
#define DMM_TRC_RESIDENT_MIN (128u << 10)   /* glibc's default mmap threshold */

typedef struct dmm_trc_rec {
    uint8_t  op;        /* DMM_TRC_* */
    uint8_t  flags;     /* DMM_TRC_RF_* */
    uint16_t reserved;
    uint32_t stack;     /* call-site id, 0 = none */
    uint64_t seq;       /* process-wide order, consistent with causality; rises
                           within a thread, and two threads' records may share
                           one (nothing orders them: read in file order) */
    uint64_t time;      /* ns since start_clock_ns */
    uint64_t size;      /* requested bytes */
    uint64_t arg;       /* alignment or nmemb */
    uint64_t ptr_in;    /* argument pointer (free, realloc) */
    uint64_t ptr_out;   /* result pointer */
    uint64_t errnum;    /* errno after a failed call, else 0 */
} dmm_trc_rec_t;
_Static_assert(sizeof(dmm_trc_rec_t) == 64, "trace record is 64 bytes");

#endif
