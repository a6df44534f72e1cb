/* mpi_plugin.c - libdmm_mpi.so: the few Open MPI calls `dmm evolve --mpi`
 * makes (mpi.h), in a library of their own so that dmm itself needs no MPI.
 * Built with mpicc; only the thread that called init uses it (funneled). */
#include <mpi.h>

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "codegen/search/mpi.h"

static int p_init(int *argc, char ***argv, int *rank, int *size, char *msg, size_t cap)
{
    int provided;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
        snprintf(msg, cap, "MPI_Init_thread failed");
        return -1;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (MPI_Comm_rank(MPI_COMM_WORLD, rank) != MPI_SUCCESS ||
        MPI_Comm_size(MPI_COMM_WORLD, size) != MPI_SUCCESS) {
        snprintf(msg, cap, "MPI_Comm_rank/size failed");
        return -1;
    }
    return 0;
}

static void nap(void)
{
    struct timespec t = { 0, 1000000 };
    nanosleep(&t, NULL);
}

/* A send that a dead receiver cannot hold forever: over shared memory, a
 * rank that died leaves its queue full and MPI_Send would wait for it. */
static int p_send(int to, int tag, const void *buf, size_t len, const volatile sig_atomic_t *stop)
{
    if (len > (size_t)0x7fffffff)
        return -1;
    MPI_Request req;
    if (MPI_Isend(buf, (int)len, MPI_BYTE, to, tag, MPI_COMM_WORLD, &req) != MPI_SUCCESS)
        return -1;
    for (;;) {
        int done = 0;
        if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return -1;
        if (done)
            return 0;
        if (stop && *stop)
            return -1;   /* the job is ending: leave the request */
        nap();
    }
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int p_recv(int from, int *src, int *tag, void *buf, size_t cap, size_t *len,
                  double timeout_s)
{
    double end = timeout_s >= 0 ? now() + timeout_s : 0;
    MPI_Status st;
    for (;;) {
        int flag = 0;
        if (MPI_Iprobe(from < 0 ? MPI_ANY_SOURCE : from, MPI_ANY_TAG, MPI_COMM_WORLD, &flag,
                       &st) != MPI_SUCCESS)
            return -1;
        if (flag)
            break;
        if (timeout_s >= 0 && now() >= end)
            return 0;
        nap();   /* a blocking receive would spin a core: poll every 1 ms */
    }
    int n;
    if (MPI_Get_count(&st, MPI_BYTE, &n) != MPI_SUCCESS || n < 0 || (size_t)n > cap)
        return -1;
    if (MPI_Recv(buf, n, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE) != MPI_SUCCESS)
        return -1;
    *src = st.MPI_SOURCE;
    *tag = st.MPI_TAG;
    *len = (size_t)n;
    return 1;
}

static void p_finalize(void)
{
    MPI_Finalize();
}

__attribute__((visibility("default"))) const dmm_mpi_api_t dmm_mpi_api = {
    DMM_MPI_ABI, p_init, p_send, p_recv, p_finalize,
};
