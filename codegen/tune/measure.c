/* measure.c - replays of the trace under candidate settings, the fitness,
 * and the final run (see measure.h). */
#include "codegen/tune/measure.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen/search/ge.h"
#include "tracer/base/jsonread.h"

int dmm_tuner_open(dmm_tuner_t *tu, const char *trace, int reps, FILE *notes, dmm_err_t *err)
{
    memset(tu, 0, sizeof *tu);
    tu->outfd = tu->errfd = -1;
    tu->trace = trace;
    tu->reps = reps;
    snprintf(tu->exe, sizeof tu->exe, "/proc/self/exe");
    if (access(tu->exe, X_OK) != 0)
        return dmm_err_set(err, "cannot run this program again (/proc/self/exe): %s",
                           strerror(errno));
    tu->outfd = memfd_create("dmm-tune-out", MFD_CLOEXEC);
    tu->errfd = memfd_create("dmm-tune-err", MFD_CLOEXEC);
    if (tu->outfd < 0 || tu->errfd < 0 ||
        dmm_tune_env_init(&tu->env, notes, "the search sets it",
                          "the replays run on glibc's malloc") != 0)
        return dmm_err_set(err, "cannot set up the replays: %s", strerror(errno));
    return 0;
}

void dmm_tuner_close(dmm_tuner_t *tu)
{
    free(tu->cand);
    dmm_tune_env_free(&tu->env);
    if (tu->outfd >= 0)
        close(tu->outfd);
    if (tu->errfd >= 0)
        close(tu->errfd);
    tu->cand = NULL;
    tu->outfd = tu->errfd = -1;
}

/* Everything in fd (a memfd), NUL-terminated, malloc'd, its length in
 * *len; NULL out of memory. */
static char *read_all(int fd, size_t *len)
{
    struct stat sb;
    size_t cap = fstat(fd, &sb) == 0 && sb.st_size > 0 ? (size_t)sb.st_size : 0;
    char *buf = malloc(cap + 1);
    if (!buf)
        return NULL;
    size_t n = 0;
    while (n < cap) {
        ssize_t r = pread(fd, buf + n, cap - n, (off_t)n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

/* The numbers of `dmm replay --json`'s output.  0, or -1 with msg. */
static int read_replay_json(const char *out, size_t len, dmm_tune_meas_t *m, char *msg,
                            size_t cap)
{
    static const char *const keys[] = { "wall_s", "op_s", "peak_rss_bytes", "baseline_rss_bytes",
                                        "peak_held_bytes", "failed", "ops" };
    double v[sizeof keys / sizeof keys[0]];
    dmm_jsonread_t d;
    dmm_err_t err;
    if (dmm_jsonread_parse(&d, out, len, &err) != 0) {
        snprintf(msg, cap, "dmm replay's JSON: %.400s", err.msg);
        return -1;
    }
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (dmm_jsonread_num(&d, keys[i], &v[i]) != 0) {
            snprintf(msg, cap, "dmm replay's JSON lacks a field (%s)", keys[i]);
            dmm_jsonread_free(&d);
            return -1;
        }
    dmm_jsonread_free(&d);
    m->wall = v[0];
    m->op = v[1];
    m->rss = (uint64_t)v[2];
    m->base = (uint64_t)v[3];
    m->held = v[4] > 0 ? (uint64_t)v[4] : 0;
    m->failed = (uint64_t)v[5];
    m->ops = (uint64_t)v[6];
    return 0;
}

/* Run `dmm replay --json TRACE` under env, its output in the memfds.  The
 * wait status, or -1 with tu->last_err. */
static int run_replay(dmm_tuner_t *tu, char **env)
{
    char *argv[] = { "dmm", "replay", "--json", (char *)tu->trace, NULL };
    if (ftruncate(tu->outfd, 0) != 0 || ftruncate(tu->errfd, 0) != 0 ||
        lseek(tu->outfd, 0, SEEK_SET) < 0 || lseek(tu->errfd, 0, SEEK_SET) < 0) {
        snprintf(tu->last_err, sizeof tu->last_err, "cannot reset the output files: %s",
                 strerror(errno));
        return -1;
    }
    fflush(NULL);
    tu->replays++;
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(tu->last_err, sizeof tu->last_err, "fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        int in = open("/dev/null", O_RDONLY);
        if (in >= 0)
            dup2(in, 0);
        dup2(tu->outfd, 1);
        dup2(tu->errfd, 2);
        execve(tu->exe, argv, env);
        dprintf(2, "cannot run %s: %s\n", tu->exe, strerror(errno));
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) {
            snprintf(tu->last_err, sizeof tu->last_err, "waitpid: %s", strerror(errno));
            return -1;
        }
    return st;
}

/* A failed replay's message (the first line of its standard error) into
 * tu->last_err; returns the status to report. */
static int replay_failed(dmm_tuner_t *tu, int st)
{
    size_t len;
    char *e = read_all(tu->errfd, &len);
    char *nl = e ? strchr(e, '\n') : NULL;
    if (nl)
        *nl = 0;
    const char *msg = !e ? "" : !strncmp(e, "dmm replay: ", 12) ? e + 12 : e;
    if (WIFEXITED(st))
        snprintf(tu->last_err, sizeof tu->last_err, "%.400s", msg[0] ? msg : "dmm replay failed");
    else
        snprintf(tu->last_err, sizeof tu->last_err, "dmm replay died of signal %d", WTERMSIG(st));
    free(e);
    tu->failures++;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

int dmm_tuner_replay(dmm_tuner_t *tu, const dmm_tunables_t *t, dmm_tune_meas_t *m)
{
    char ours[1024];
    dmm_tunables_glibc(t, ours, sizeof ours);
    char **env = dmm_tune_env_with(&tu->env, ours);
    if (!env) {
        snprintf(tu->last_err, sizeof tu->last_err, "out of memory");
        return 1;
    }
    int st = run_replay(tu, env);
    if (st < 0)
        return 1;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return replay_failed(tu, st);
    size_t len;
    char *out = read_all(tu->outfd, &len);
    if (!out)
        snprintf(tu->last_err, sizeof tu->last_err, "out of memory");
    int rc = out ? read_replay_json(out, len, m, tu->last_err, sizeof tu->last_err) : -1;
    free(out);
    if (rc != 0) {
        tu->failures++;
        return 1;
    }
    return 0;
}

/* x into m, the smallest of each number (the largest failure count). */
static void keep_min(dmm_tune_meas_t *m, const dmm_tune_meas_t *x)
{
    if (x->wall < m->wall) m->wall = x->wall;
    if (x->op < m->op)     m->op = x->op;
    if (x->rss < m->rss)   m->rss = x->rss;
    if (x->base < m->base) m->base = x->base;
    if (x->held < m->held) m->held = x->held;
    if (x->failed > m->failed) m->failed = x->failed;
}

/* reps replays of t, kept by keep_min.  0, or what dmm_tuner_replay
 * returned. */
static int measure(dmm_tuner_t *tu, const dmm_tunables_t *t, int reps, dmm_tune_meas_t *m)
{
    for (int k = 0; k < reps; k++) {
        dmm_tune_meas_t x;
        int rc = dmm_tuner_replay(tu, t, &x);
        if (rc)
            return rc;
        if (k == 0)
            *m = x;
        else
            keep_min(m, &x);
    }
    return 0;
}

int dmm_tuner_reference(dmm_tuner_t *tu, dmm_err_t *err)
{
    dmm_tunables_t def;
    dmm_tunables_default(&def);
    dmm_tune_meas_t x;
    int xr = dmm_tuner_replay(tu, &def, &x);
    double *w = malloc((size_t)tu->reps * sizeof *w);
    if (!w) {
        dmm_err_set(err, "out of memory");
        return 1;
    }
    for (int k = 0; k < tu->reps && xr == 0; k++) {
        xr = dmm_tuner_replay(tu, &def, &x);
        if (xr)
            break;
        w[k] = x.wall;
        if (k == 0)
            tu->ref = x;
        else
            keep_min(&tu->ref, &x);
    }
    if (xr == 0) {
        dmm_tune_stat3_t s = dmm_tune_stat3(w, tu->reps);
        tu->noise = s.min > 0 ? (s.max - s.min) / s.min : 0;
    }
    free(w);
    if (xr) {
        dmm_err_set(err, "%s", tu->last_err);
        return xr == 2 ? 2 : 1;
    }
    if (tu->ref.ops == 0 || !(tu->ref.wall > 0)) {
        dmm_err_set(err, "%s: no operations to replay", tu->trace);
        return 2;
    }
    tu->t_def = tu->ref.wall;
    tu->baseline = tu->ref.base;
    tu->M_def = (double)tu->ref.held + (double)tu->baseline;
    return 0;
}

double dmm_tuner_fitness(const dmm_tunables_t *t, uint64_t *T, size_t *M, void *arg)
{
    dmm_tuner_t *tu = arg;
    if (tu->ncand == tu->capcand) {
        size_t nc = tu->capcand ? tu->capcand * 2 : 64;
        dmm_tune_cand_t *c = realloc(tu->cand, nc * sizeof *c);
        if (!c)
            return DMM_GE_WORST;
        tu->cand = c;
        tu->capcand = nc;
    }
    dmm_tune_cand_t *c = &tu->cand[tu->ncand++];
    memset(c, 0, sizeof *c);
    c->t = *t;
    c->F = DMM_GE_WORST;
    if (measure(tu, t, tu->reps, &c->m) != 0 || c->m.failed > tu->ref.failed)
        return DMM_GE_WORST;
    c->valid = 1;
    c->F = 0.5 * c->m.wall / tu->t_def +
           0.5 * ((double)c->m.held + (double)tu->baseline) / tu->M_def;
    *T = (uint64_t)llround(c->m.wall * 1e9);
    *M = (size_t)(c->m.held + tu->baseline);
    return c->F;
}

/* ---- the final run ------------------------------------------------------ */

static double field_of(const dmm_tune_meas_t *m, int q)
{
    return q == DMM_TUNE_Q_WALL ? m->wall : q == DMM_TUNE_Q_OP ? m->op
         : q == DMM_TUNE_Q_RSS  ? (double)m->rss : (double)m->held;
}

/* The comparison of each measure, F and the recommendation.  0, or -1 out
 * of memory. */
static int final_compare(const dmm_tuner_t *tu, dmm_tune_final_t *fr)
{
    int n = fr->n;
    double *x = malloc((size_t)(n ? n : 1) * 2 * sizeof *x);
    if (!x)
        return -1;
    for (int q = 0; q < DMM_TUNE_NQ; q++) {
        for (int i = 0; i < n; i++) {
            x[i] = field_of(&fr->def[i], q);
            x[n + i] = field_of(&fr->tun[i], q);
        }
        fr->q[q] = dmm_tune_compare(x, x + n, n);
    }
    free(x);
    const dmm_tune_cmp_t *w = &fr->q[DMM_TUNE_Q_WALL], *h = &fr->q[DMM_TUNE_Q_HELD];
    fr->F = 0.5 * w->tun.med / w->def.med +
            0.5 * (h->tun.med + (double)tu->baseline) / (h->def.med + (double)tu->baseline);
    /* worth setting: F below 1, wall time or peak held measurably better,
     * neither measurably worse */
    fr->recommended = fr->F < 1.0 && (w->measurable < 0 || h->measurable < 0) &&
                      w->measurable <= 0 && h->measurable <= 0;
    return 0;
}

int dmm_tuner_final(dmm_tuner_t *tu, const dmm_tunables_t *t, int n, dmm_tune_final_t *fr)
{
    dmm_tunables_t d;
    dmm_tunables_default(&d);
    memset(fr, 0, sizeof *fr);
    fr->def = calloc((size_t)n + 1, sizeof *fr->def);
    fr->tun = calloc((size_t)n + 1, sizeof *fr->tun);
    if (!fr->def || !fr->tun)
        return -1;
    for (int k = 0; k < n; k++) {
        int tuned_first = k % 2;
        for (int s = 0; s < 2; s++) {
            int tuned = s == tuned_first;
            if (dmm_tuner_replay(tu, tuned ? t : &d, tuned ? &fr->tun[k] : &fr->def[k]) != 0)
                return -1;
        }
        fr->n++;
    }
    return final_compare(tu, fr);
}

void dmm_tune_final_free(dmm_tune_final_t *fr)
{
    free(fr->def);
    free(fr->tun);
    fr->def = fr->tun = NULL;
}
