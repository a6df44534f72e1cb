/* record.h - `dmm record`: a program run under libdmmtrace.so, the traces of
 * its whole process tree in one directory, and what each process did.
 *
 * dmm_record_run() starts the program with the tracer preloaded and every
 * trace named DIR/<program>.<pid>.trc, becomes the subreaper of everything
 * it starts (so that a daemonising grandchild is still waited for), and
 * waits until no process of the tree is left.  dmm_record_scan() reads the
 * traces a directory holds: what `dmm record` prints at the end, and the
 * one that `dmm stats DIR` and `make evolve TRACE=DIR` read. */
#ifndef DMM_RECORD_RECORD_H
#define DMM_RECORD_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "tracer/base/err.h"

typedef struct dmm_record_opts {
    const char *dir;           /* created if missing; must hold no trace yet */
    const char *tracer;        /* libdmmtrace.so */
    unsigned    stacks;        /* DMM_TRACE_STACK, 0 = off */
    int         zstd;          /* DMM_TRACE_COMPRESS=zstd */
    int         follow_exec;   /* 0: a program the first one execs is not traced */
    int         follow_fork;   /* 0: the first process's children are not traced */
    char *const *argv;         /* the program and its arguments (argv[0] looked up in PATH) */
} dmm_record_opts_t;

/* Run o->argv to the end of its process tree.  0 with *status its wait
 * status (the first process's), or -1 with err set and nothing left behind
 * (a directory it made is removed): no command, a program that cannot be
 * found or run, a directory that cannot be made or written.  Once the
 * first process has ended, a Ctrl-C or SIGTERM stops the waiting for what
 * it left running (a second on, it says on stderr whom it waits for):
 * *left, how many of its processes were still running then (0: it waited
 * for all), their traces still being written. */
int dmm_record_run(const dmm_record_opts_t *o, int *status, int *left, dmm_err_t *err);

/* One trace of a directory. */
typedef struct dmm_record_proc {
    char     file[256];        /* name inside the directory */
    uint32_t pid, ppid;
    uint64_t start_ns;         /* when it started recording (its header's
                                  realtime): an exec's new image later */
    char     command[1024];    /* its command line as shell words (dmm_cmdline_shell) */
    int      command_inexact;  /* 1: a shell would not run that line as it ran */
    uint64_t records;          /* calls recorded */
    uint64_t alloc_calls;      /* allocating calls (malloc, calloc, realloc, ...) */
    uint64_t alloc_bytes;      /* bytes they asked for, in total (frees ignored) */
    uint64_t peak_live;        /* peak of live requested bytes */
    uint64_t peak_rss;         /* the process's peak RSS, tracer included; 0:
                                  its trace does not say (trace.h) */
    int      unreadable;       /* 1: the file did not read (err names why) */
    char     err[768];         /* dmm_err_t's size */
} dmm_record_proc_t;

/* The names of the .trc files of dir, in *procs (free()), nothing read:
 * 0, or -1 with err set (dir cannot be read, or holds no trace). */
int dmm_record_list(const char *dir, dmm_record_proc_t **procs, size_t *n, dmm_err_t *err);

/* The .trc files of dir, each read whole, sorted by pid, in *procs
 * (free()); *most: the
 * index of the one that allocated most: the most bytes asked for in total,
 * then the most allocating calls (-1 if none read).
 * 0, or -1 with err set (dir cannot be read, or holds no trace). */
int dmm_record_scan(const char *dir, dmm_record_proc_t **procs, size_t *n, long *most,
                    dmm_err_t *err);

/* Whether the process that writes dir/file (the pid its header names)
 * still runs: after dmm_record_run stopped waiting, a trace still being
 * written.  0 where the file does not read. */
int dmm_record_running(const char *dir, const char *file);

/* The index in procs (as dmm_record_scan sorts them) of the process that
 * dmm record started: the one whose parent it did not trace, the first to
 * start where it exec'd (its images share its pid); -1 if none (a
 * directory of traces recorded some other way may have none). */
long dmm_record_root(const dmm_record_proc_t *procs, size_t n);

/* path if it is not a directory; else the trace of it that allocated most
 * (dmm_record_scan), into buf, after a line on stderr that says which and
 * why ("PREFIX: DIR holds N traces; reading ...").  NULL with err set. */
const char *dmm_record_pick(const char *prefix, const char *path, char *buf, size_t len,
                            dmm_err_t *err);

#endif
