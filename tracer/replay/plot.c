/* plot.c - the gnuplot picture of a replay (see plot.h): the samples and
 * a script go to temporary files, gnuplot runs in a child. */
#include "tracer/replay/plot.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>   /* GNU basename: no libgen.h, the argument is never modified */
#include <sys/wait.h>
#include <unistd.h>

static int have_program(const char *name)
{
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/bin:/bin";
    char buf[4096];
    while (*path) {
        const char *c = strchr(path, ':');
        size_t n = c ? (size_t)(c - path) : strlen(path);
        if (n && n + strlen(name) + 2 < sizeof buf) {
            memcpy(buf, path, n);
            buf[n] = '/';
            strcpy(buf + n + 1, name);
            if (access(buf, X_OK) == 0)
                return 1;
        }
        path += n;
        if (*path == ':')
            path++;
    }
    return 0;
}

/* s as a gnuplot string: quotes and backslashes escaped, control
 * characters left out. */
static void gp_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        if ((unsigned char)*s >= 0x20)
            fputc(*s, f);
    }
    fputc('"', f);
}

/* The samples as gnuplot's data: op, requested MiB, held MiB. */
static int write_data(const dmm_replay_t *r, char *data)
{
    int fd = mkstemp(data);
    if (fd < 0)
        return -1;
    FILE *d = fdopen(fd, "w");
    for (size_t i = 0; i < r->nsamp_done; i++)
        fprintf(d, "%" PRIu64 " %.6f %.6f\n", r->samp[i].op,
                (double)r->samp[i].requested / 1048576.0,
                ((double)r->samp[i].anon - (double)r->baseline_anon) / 1048576.0);
    fclose(d);
    return 0;
}

static int write_script(const dmm_replay_t *r, char *script, const char *data, const char *png)
{
    int sfd = mkstemp(script);
    if (sfd < 0)
        return -1;
    FILE *g = fdopen(sfd, "w");
    const char *pre = getenv("LD_PRELOAD"), *cfg = getenv("DMM_CONFIG");
    char title[1024];
    snprintf(title, sizeof title, "%s under %s%s%s", basename(r->o->trace),
             pre ? basename(pre) : "glibc malloc", cfg ? " DMM_CONFIG=" : "", cfg ? cfg : "");
    fprintf(g, "set terminal pngcairo size 1000,600 noenhanced\nset output ");
    gp_str(g, png);
    fprintf(g, "\nset title ");
    gp_str(g, title);
    fprintf(g, "\nset xlabel \"operations\"\nset ylabel \"MiB\"\nset key bottom right\nset grid\n"
               "set yrange [0:*]\n");
    fprintf(g, "plot ");
    gp_str(g, data);
    fprintf(g, " using 1:2 with lines lw 2 title \"requested (live bytes)\", ");
    gp_str(g, data);
    fprintf(g, " using 1:3 with lines lw 2 title \"held (anonymous RSS over its level before the replay)\"\n");
    fclose(g);
    return 0;
}

/* gnuplot script, its own output to /dev/null; 0 if it succeeded. */
static int run_gnuplot(const char *script)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int nul = open("/dev/null", O_WRONLY);
        if (nul >= 0)
            dup2(nul, 1);
        execlp("gnuplot", "gnuplot", script, (char *)NULL);
        _exit(127);
    }
    int st = -1;
    if (pid > 0)
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
    return pid < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0 ? -1 : 0;
}

int dmm_replay_plot(const dmm_replay_t *r, const char *png)
{
    if (!have_program("gnuplot")) {
        fprintf(stderr, "dmm replay: gnuplot is not installed; no plot drawn "
                        "(apt-get install gnuplot-nox)\n");
        return 0;
    }
    char data[] = "/tmp/dmm-replay-XXXXXX";
    char script[] = "/tmp/dmm-replay-gp-XXXXXX";
    if (write_data(r, data) != 0) {
        fprintf(stderr, "dmm replay: no temporary file for the plot: %s\n", strerror(errno));
        return -1;
    }
    if (write_script(r, script, data, png) != 0) {
        int e = errno;
        unlink(data);
        fprintf(stderr, "dmm replay: no temporary file for the plot: %s\n", strerror(e));
        return -1;
    }
    int rc = run_gnuplot(script);
    unlink(data);
    unlink(script);
    if (rc != 0)
        fprintf(stderr, "dmm replay: gnuplot failed; no plot in %s\n", png);
    return rc;
}
