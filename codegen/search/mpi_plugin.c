/* mpi_plugin.c - libdmm_mpi.so: the few Open MPI calls `dmm evolve --mpi`
 * makes (mpi.h), in a library of their own so that dmm itself needs no MPI.
 * Built with mpicc; only the thread that called init uses it (funneled). */
#include <mpi.h>

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

static int p_send(int to, int tag, const void *buf, size_t len)
{
    if (len > (size_t)0x7fffffff)
        return -1;
    return MPI_Send(buf, (int)len, MPI_BYTE, to, tag, MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : -1;
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
        /* a blocking receive would spin a core: poll every 200 us instead */
        struct timespec nap = { 0, 200000 };
        nanosleep(&nap, NULL);
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
