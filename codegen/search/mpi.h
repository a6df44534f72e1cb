/* mpi.h - the search across processes and hosts: `mpirun -np N dmm evolve
 * --mpi`.  Rank 0 runs the search (ge.c) and hands candidates out to the
 * other ranks as they come free (master/worker, dynamic assignment); each
 * worker replays a candidate's .dmm text on its own copy of the operation
 * stream under the bound rank 0 sends, and returns the replay's numbers.  An
 * evaluation is a pure function of (stream, description, bound), so the
 * same seed gives the same result on any number of ranks.
 *
 * Open MPI is reached through a plugin, libdmm_mpi.so (mpi_plugin.c, built
 * where mpicc is), that dmm opens only for --mpi: the plain dmm neither
 * links nor needs MPI.  The plugin's whole interface is dmm_mpi_api_t.
 *
 * Rank 0 checks that every worker holds the same operation stream (count,
 * ids and CRC-32C of the operations) and learns each worker's pid and host.
 * When a worker dies, mpirun ends the job by sending SIGTERM to every rank;
 * workers stay 2 s more, and rank 0 looks at once (in its SIGTERM handler)
 * which of its own host's workers is already gone, to name it; rank 0
 * itself stops as on Ctrl-C and keeps the best so far. */
#ifndef DMM_SEARCH_MPI_H
#define DMM_SEARCH_MPI_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "codegen/search/ge.h"
#include "tracer/base/err.h"
#include "tracer/format/opstream.h"

#define DMM_MPI_ABI 2

/* Where libdmm_mpi.so is: beside the dmm binary (build/), or in
 * PREFIX/lib/dmm when installed (bin/../lib/dmm).  1 with its path in
 * path, 0 when neither exists (path: the first place looked), -1 when the
 * binary cannot be found (errno). */
int dmm_mpi_plugin_path(char *path, size_t len);

/* What libdmm_mpi.so exports as `dmm_mpi_api`. */
typedef struct dmm_mpi_api {
    int    abi;    /* DMM_MPI_ABI */
    /* MPI_Init_thread (funneled), errors returned; 0, or -1 with msg */
    int  (*init)(int *argc, char ***argv, int *rank, int *size, char *msg, size_t cap);
    /* len bytes to rank `to` with tag, waiting for the send to complete
     * unless *stop is raised (stop may be NULL); 0, or -1 (error, or stop) */
    int  (*send)(int to, int tag, const void *buf, size_t len, const volatile sig_atomic_t *stop);
    /* the next message (from any rank when from < 0) within timeout_s (< 0:
     * no limit), polling without spinning: 1 (src, tag, len set; at most cap
     * bytes into buf, -1 if it was longer), 0 none yet, -1 an error */
    int  (*recv)(int from, int *src, int *tag, void *buf, size_t cap, size_t *len,
                 double timeout_s);
    void (*finalize)(void);
} dmm_mpi_api_t;

typedef struct dmm_mpi_peer {
    int64_t pid;
    char    host[64];
    char    stat_path[40];   /* /proc/PID/stat of a rank on rank 0's host, else "" */
} dmm_mpi_peer_t;

typedef struct dmm_mpi {
    const dmm_mpi_api_t *api;
    void           *handle;     /* dlopen's */
    int             rank, size;
    dmm_mpi_peer_t *peers;      /* rank 0: every rank's pid and host */
    const volatile sig_atomic_t *stop;   /* rank 0: gives up a send to a rank
                                            that no longer receives */
    char           *buf;        /* messages */
    size_t          cap;
} dmm_mpi_t;

/* Whether this process was started by mpirun (Open MPI's environment). */
int  dmm_mpi_under_mpirun(void);
/* Open the plugin and MPI; 0, or -1 with err (no Open MPI, no plugin). */
int  dmm_mpi_open(dmm_mpi_t *m, int *argc, char ***argv, dmm_err_t *err);
/* Rank 0: every worker's hello, checked against s; 0, or -1 with err
 * naming the rank and its host (or when *stop is raised while waiting). */
int  dmm_mpi_gather(dmm_mpi_t *m, const dmm_opstream_t *s, const volatile sig_atomic_t *stop,
                    dmm_err_t *err);
/* Rank 0: the remote evaluator for the search (one worker per other rank). */
void dmm_mpi_remote(dmm_mpi_t *m, dmm_ge_remote_t *rm);
/* Rank 0: tell every worker to end. */
void dmm_mpi_stop_workers(dmm_mpi_t *m);
/* A worker: hello, then replay what rank 0 sends until it says stop.  0, or
 * -1 with err. */
int  dmm_mpi_work(dmm_mpi_t *m, const dmm_opstream_t *s, dmm_err_t *err);
/* Rank 0: the first worker on this host whose process is gone (its rank),
 * or -1.  Async-signal-safe: rank 0's SIGTERM handler calls it. */
int  dmm_mpi_dead_worker(const dmm_mpi_t *m);
/* MPI_Finalize (unless the job is being torn down: skip) and unload. */
void dmm_mpi_close(dmm_mpi_t *m, int finalize);

#endif
