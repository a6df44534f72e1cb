/* rundmm.h - run the built dmm binary from a test: standard output to
 * DIR/stdout, standard error to DIR/stderr and into err; returns the exit
 * status (a death by signal fails the test).  Header-only. */
#ifndef DMM_TEST_RUNDMM_H
#define DMM_TEST_RUNDMM_H

#include <criterion/criterion.h>

#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#define DMM DMM_BUILD_DIR "/dmm"

static int run_dmm(const char *dir, char *const args[], char *err, size_t errlen)
{
    char errf[300], outf[300];
    snprintf(errf, sizeof errf, "%s/stderr", dir);
    snprintf(outf, sizeof outf, "%s/stdout", dir);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 2);
        int out = open(outf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(out, 1);
        execv(DMM, args);
        _exit(127);
    }
    int st;
    waitpid(pid, &st, 0);
    FILE *f = fopen(errf, "r");
    size_t n = f ? fread(err, 1, errlen - 1, f) : 0;
    err[n] = 0;
    if (f)
        fclose(f);
    cr_assert(WIFEXITED(st), "dmm died of signal %d", WTERMSIG(st));
    return WEXITSTATUS(st);
}

#endif
