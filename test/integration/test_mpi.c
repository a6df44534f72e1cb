/* test_mpi.c - `dmm evolve --mpi` under Open MPI's mpirun (on this host):
 * the same best.dmm from one process, -np 1 and -np 3; a worker killed in
 * the middle of the search makes rank 0 name it and keep the best so far;
 * --mpi outside mpirun is one clear message and exit 2. */
#include <criterion/criterion.h>

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test/lib/progrun.h"
#include "test/lib/rundmm.h"

static char rep[300];

/* 2000 blocks of 300 sizes, half of them freed, then 10000 frees and
 * mallocs: a search over it takes a moment per generation. */
static void setup(void)
{
    make_tmpdir();
    snprintf(rep, sizeof rep, "%s/t.rep", tmpdir);
    FILE *f = fopen(rep, "w");
    cr_assert_not_null(f);
    enum { LIVE = 2000, CHURN = 10000 };
    static int id_of[LIVE];
    int next = 0;
    uint64_t x = 99;
    fprintf(f, "100000\n%d\n%d\n1\n", LIVE + CHURN, LIVE + LIVE / 2 + 2 * CHURN);
    for (int i = 0; i < LIVE; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        fprintf(f, "a %d %u\n", next, 16 + (unsigned)(x >> 33) % 300 * 8);
        id_of[i] = next++;
    }
    for (int i = 0; i < LIVE; i += 2) {
        fprintf(f, "f %d\n", id_of[i]);
        id_of[i] = -1;
    }
    for (int k = 0; k < CHURN; k++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        int i = (int)((x >> 33) % LIVE);
        while (id_of[i] < 0)
            i = (i + 1) % LIVE;
        fprintf(f, "f %d\n", id_of[i]);
        fprintf(f, "a %d %u\n", next, 16 + (unsigned)(x >> 40) % 300 * 8);
        id_of[i] = next++;
    }
    fclose(f);
    /* mpirun refuses root without this */
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    /* under make check-sanitize: Open MPI 4.1 leaves its own allocations
     * behind at MPI_Finalize, inside components it has already unloaded, so
     * LeakSanitizer can neither name nor suppress them (dmm's own code on
     * these paths is leak-checked by the single-process tests) */
    setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
    /* when a rank dies, mpirun waits this many seconds (1 by default)
     * before its SIGTERM and again before its SIGKILL: on a loaded machine
     * (make test, sanitized) rank 0 needs more than 1 s to write its best */
    setenv("OMPI_MCA_odls_base_sigkill_timeout", "5", 1);
    cr_assert_eq(system("command -v mpirun >/dev/null"), 0,
                 "mpirun is missing: scripts/deps.sh installs openmpi-bin");
    cr_assert_eq(access(DMM_BUILD_DIR "/libdmm_mpi.so", F_OK), 0,
                 "build/libdmm_mpi.so was not built (no mpicc: libopenmpi-dev)");
}

static void teardown(void)
{
    remove_tmpdir();
}

TestSuite(mpi, .init = setup, .fini = teardown, .timeout = 120);

/* mpirun -np N dmm evolve --mpi ARGS... --out DIR/name: its exit status. */
static int mpirun(int np, const char *name, const char *extra)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && mpirun --oversubscribe -np %d %s evolve --mpi -q --pop 24 --gens 4 "
             "--seed 5 %s --out '%s/%s' '%s' >'%s/%s.out' 2>'%s/%s.err'",
             tmpdir, np, DMM, extra, tmpdir, name, rep, tmpdir, name, tmpdir, name);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static char *best(const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s/best.dmm", tmpdir, name);
    char *b = slurp(p, NULL);
    cr_assert_not_null(b, "%s has no best.dmm", name);
    return b;
}

Test(mpi, same_best_dmm_on_one_process_and_on_1_and_3_ranks)
{
    char out[300], err[4096];
    snprintf(out, sizeof out, "%s/plain", tmpdir);
    char *args[] = { "dmm", "evolve", "-q", "--pop", "24", "--gens", "4", "--seed", "5",
                     "--jobs", "1", "--out", out, rep, NULL };
    cr_assert_eq(run_dmm(tmpdir, args, err, sizeof err), 0, "%s", err);
    cr_assert_eq(mpirun(1, "np1", ""), 0);
    cr_assert_eq(mpirun(3, "np3", ""), 0);
    char *p = best("plain"), *a = best("np1"), *b = best("np3");
    cr_expect_str_eq(a, p, "-np 1");
    cr_expect_str_eq(b, p, "-np 3");
    free(p);
    free(a);
    free(b);
}

Test(mpi, outside_mpirun_one_message_and_exit_2)
{
    char out[300], err[4096];
    snprintf(out, sizeof out, "%s/o", tmpdir);
    unsetenv("OMPI_COMM_WORLD_SIZE");
    char *args[] = { "dmm", "evolve", "--mpi", "--out", out, rep, NULL };
    cr_expect_eq(run_dmm(tmpdir, args, err, sizeof err), 2, "%s", err);
    cr_expect_not_null(strstr(err, "not started by mpirun"), "%s", err);
    cr_expect_eq(strchr(err, '\n'), err + strlen(err) - 1, "one line: %s", err);
    cr_expect_neq(access(out, F_OK), 0, "nothing written");
}

/* The pid of MPI rank `rank` of the dmm whose command line has `mark`, or
 * 0 (the other tests of this file may run their own jobs meanwhile). */
static pid_t rank_pid(int rank, const char *mark)
{
    char cmd[512], want[64];
    snprintf(want, sizeof want, "OMPI_COMM_WORLD_RANK=%d", rank);
    snprintf(cmd, sizeof cmd, "pgrep -f -- '%s evolve --mpi.*%s'", DMM, mark);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    long pid;
    pid_t found = 0;
    while (!found && fscanf(p, "%ld", &pid) == 1) {
        char path[64], env[1 << 15];
        snprintf(path, sizeof path, "/proc/%ld/environ", pid);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t n = fread(env, 1, sizeof env - 1, f);
        fclose(f);
        for (size_t i = 0; i < n; i += strlen(env + i) + 1) {
            env[n] = 0;
            if (!strcmp(env + i, want))
                found = (pid_t)pid;
        }
    }
    pclose(p);
    return found;
}

Test(mpi, a_worker_that_dies_is_named_and_the_best_so_far_kept)
{
    char cmd[4096], errf[300];
    snprintf(errf, sizeof errf, "%s/kill.err", tmpdir);
    snprintf(cmd, sizeof cmd,
             "mpirun --oversubscribe -np 3 %s evolve --mpi --pop 24 --gens 100000 --time 90 "
             "--out '%s/kill' '%s' >/dev/null 2>'%s'", DMM, tmpdir, rep, errf);
    pid_t job = fork();
    if (job == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    /* wait for two generations, then kill rank 1 */
    char *err = NULL;
    for (int i = 0; i < 600; i++) {
        free(err);
        err = slurp(errf, NULL);
        if (err && strstr(err, "gen 2/"))
            break;
        struct timespec nap = { 0, 100000000 };
        nanosleep(&nap, NULL);
    }
    cr_assert(err && strstr(err, "gen 2/"), "the search did not get going: %s", err);
    char mark[300];
    snprintf(mark, sizeof mark, "%s/kill", tmpdir);
    pid_t victim = rank_pid(1, mark);
    cr_assert_gt(victim, 0, "no rank 1");
    cr_assert_eq(kill(victim, SIGKILL), 0);
    int st;
    cr_assert_eq(waitpid(job, &st, 0), job);
    free(err);
    err = slurp(errf, NULL);
    char want[128];
    snprintf(want, sizeof want, "dmm evolve: rank 1 (pid %d on ", (int)victim);
    cr_expect_not_null(strstr(err, want), "rank 0 names the dead rank: %s", err);
    cr_expect_not_null(strstr(err, "keeping the best so far"), "%s", err);
    char *b = best("kill");
    cr_expect_not_null(strstr(b, "range=("), "%s", b);
    free(b);
    char p[512];
    snprintf(p, sizeof p, "%s/kill/log.csv", tmpdir);
    char *log = slurp(p, NULL);
    cr_expect_not_null(log, "log.csv written");
    free(log);
    free(err);
}
