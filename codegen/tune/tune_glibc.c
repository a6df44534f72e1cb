/* tune_glibc.c - `dmm tune-glibc TRACE`: the glibc malloc tunables that
 * suit one trace, found by grammatical evolution over a grammar of values
 * and scored by real replays under glibc (see tune_glibc.h).
 *
 * Fitness, the project's weighted form: F = 0.5 * t/t_def + 0.5 * M/M_def,
 * the defaults (no tunable set) measured the same way at the start.
 *
 *  - t is the replay's wall time (`wall_s`), not its time in the calls
 *    (`op_s`): the tunables act through system calls (brk, mmap, munmap,
 *    trimming) and page faults, and the faults of fresh or given-back memory
 *    mostly land on the first write of a block, after malloc returned.  A
 *    small trim or mmap threshold looks free to op_s while the program pays
 *    for it; wall_s sees it.  The replay's own constant work (payload
 *    writes, the timer) stands in for the program's work around its calls.
 *  - M is the replay's peak held memory (anonymous RSS over its level
 *    before the replay: what the allocator made resident) plus a constant
 *    baseline, the defaults' smallest RSS before the replay (the dmm process
 *    and its tables: the part of a process the tunables do not touch).  The
 *    sum is the peak RSS the process would have, on the same scale, so the
 *    memory half of F is not inflated for a small heap; but peak_rss_bytes
 *    itself moves by ~100-200 KiB from run to run with the baseline (address
 *    space layout, the kernel's high-water mark), while peak held is the
 *    same to the page on every run of the same settings: a constant
 *    baseline keeps the resolution and drops the noise.
 *
 * Noise: each candidate gets --reps replays (3) and keeps the smallest time
 * and the smallest held (min: interference on a shared machine only ever
 * adds time); a phenotype is measured once (the engine's cache).  The
 * winner of many noisy measurements is flattered by its own luck, so the
 * result is measured again in one final run: defaults and tuned alternating
 * (ABBA), --final-reps times each, medians, ranges and Mann-Whitney p-values
 * reported; the settings are recommended only when that run measures a gain
 * and no cost.  Before it, pruning (--prune) puts back to default each
 * setting whose removal costs at most 0.02 in F, measured with and without
 * side by side: noise otherwise fills the tunables that do not matter.
 *
 * arena_max: dmm replay runs every thread of the trace on one thread, and
 * glibc only creates arenas for threads that contend, so no replay can see
 * arena_max: the grammar offers it, but candidates are keyed and measured
 * with it folded to default (otherwise noise would pick a value). */
#include "codegen/tune/tune_glibc.h"

#include "codegen/cli/cli.h"
#include "tracer/stats/stats.h"
#include "tracer/base/json.h"

#include <errno.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ---- the four tunables -------------------------------------------------- */

/* mmap_threshold: glibc refuses values above HEAP_MAX_SIZE / 2, 32 MiB on
 * 64-bit (4 * 1024 * 1024 * sizeof(long)); a larger one would be ignored. */
const dmm_tunable_info_t dmm_tunables_info[DMM_TUNE_N] = {
    { "top_pad", "glibc.malloc.top_pad", "MALLOC_TOP_PAD_", 0, 1LL << 40 },
    { "trim_threshold", "glibc.malloc.trim_threshold", "MALLOC_TRIM_THRESHOLD_", 0, 1LL << 40 },
    { "mmap_threshold", "glibc.malloc.mmap_threshold", "MALLOC_MMAP_THRESHOLD_", 0,
      4LL * 1024 * 1024 * (long long)sizeof(long) },
    { "arena_max", "glibc.malloc.arena_max", "MALLOC_ARENA_MAX", 1, 4096 },
};

void dmm_tunables_default(dmm_tunables_t *t)
{
    for (int i = 0; i < DMM_TUNE_N; i++)
        t->v[i] = DMM_TUNE_DEFAULT;
}

int dmm_tunables_all_default(const dmm_tunables_t *t)
{
    for (int i = 0; i < DMM_TUNE_N; i++)
        if (t->v[i] != DMM_TUNE_DEFAULT)
            return 0;
    return 1;
}

int dmm_tunables_static_threshold(const dmm_tunables_t *t)
{
    return t->v[DMM_TUNE_TOP_PAD] != DMM_TUNE_DEFAULT ||
           t->v[DMM_TUNE_TRIM_THRESHOLD] != DMM_TUNE_DEFAULT ||
           t->v[DMM_TUNE_MMAP_THRESHOLD] != DMM_TUNE_DEFAULT;
}

static int tunable_index(const char *name, size_t len)
{
    for (int i = 0; i < DMM_TUNE_N; i++)
        if (strlen(dmm_tunables_info[i].name) == len && !memcmp(dmm_tunables_info[i].name, name, len))
            return i;
    return -1;
}

/* "default", or decimal digits with an optional k/m/g suffix (only when
 * suffix is set: glibc's own parser reads "1m" as 1), within the tunable's
 * range.  0, or -1. */
static int parse_value(int i, const char *s, size_t len, int suffix, long long *v)
{
    if (len == 7 && !memcmp(s, "default", 7)) {
        *v = DMM_TUNE_DEFAULT;
        return 0;
    }
    unsigned long long x = 0;
    size_t k = 0;
    for (; k < len && s[k] >= '0' && s[k] <= '9'; k++) {
        if (x > (ULLONG_MAX - 9) / 10)
            return -1;
        x = x * 10 + (unsigned)(s[k] - '0');
    }
    if (k == 0)
        return -1;
    if (k < len) {
        if (!suffix)
            return -1;
        int shift;
        switch (s[k]) {
        case 'k': case 'K': shift = 10; break;
        case 'm': case 'M': shift = 20; break;
        case 'g': case 'G': shift = 30; break;
        default: return -1;
        }
        if (k + 1 != len || x > (ULLONG_MAX >> shift))
            return -1;
        x <<= shift;
    }
    if (x < (unsigned long long)dmm_tunables_info[i].lo ||
        x > (unsigned long long)dmm_tunables_info[i].hi)
        return -1;
    *v = (long long)x;
    return 0;
}

int dmm_tunables_parse(const char *ph, dmm_tunables_t *t, char *err, size_t errlen)
{
    dmm_tunables_default(t);
    int seen[DMM_TUNE_N] = { 0 };
    const char *p = ph;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n')
            p++;
        if (!*p)
            return 0;
        const char *w = p;
        while (*p && *p != ' ' && *p != '\t' && *p != '\n')
            p++;
        size_t wl = (size_t)(p - w);
        const char *eq = memchr(w, '=', wl);
        int i = eq ? tunable_index(w, (size_t)(eq - w)) : -1;
        if (i < 0) {
            snprintf(err, errlen, "'%.*s' is not top_pad=, trim_threshold=, mmap_threshold= or "
                                  "arena_max=VALUE", (int)(wl > 80 ? 80 : wl), w);
            return -1;
        }
        if (seen[i]++) {
            snprintf(err, errlen, "%s is given twice", dmm_tunables_info[i].name);
            return -1;
        }
        if (parse_value(i, eq + 1, wl - (size_t)(eq + 1 - w), 1, &t->v[i]) != 0) {
            snprintf(err, errlen, "'%.*s': %s takes \"default\" or a number in %lld..%lld "
                                  "(k, m, g: binary multiples)", (int)(wl > 80 ? 80 : wl), w,
                     dmm_tunables_info[i].name, dmm_tunables_info[i].lo, dmm_tunables_info[i].hi);
            return -1;
        }
    }
}

size_t dmm_tunables_format(const dmm_tunables_t *t, char *buf, size_t cap)
{
    size_t n = 0;
    for (int i = 0; i < DMM_TUNE_N; i++) {
        char v[32];
        if (t->v[i] == DMM_TUNE_DEFAULT)
            snprintf(v, sizeof v, "default");
        else
            snprintf(v, sizeof v, "%lld", t->v[i]);
        int w = snprintf(buf + (n < cap ? n : cap), n < cap ? cap - n : 0, "%s%s=%s",
                         i ? " " : "", dmm_tunables_info[i].name, v);
        n += (size_t)(w > 0 ? w : 0);
    }
    if (cap && n >= cap)
        buf[cap - 1] = 0;
    return n;
}

size_t dmm_tunables_glibc(const dmm_tunables_t *t, char *buf, size_t cap)
{
    size_t n = 0;
    if (cap)
        buf[0] = 0;
    for (int i = 0; i < DMM_TUNE_N; i++) {
        if (t->v[i] == DMM_TUNE_DEFAULT)
            continue;
        int w = snprintf(buf + (n < cap ? n : cap), n < cap ? cap - n : 0, "%s%s=%lld",
                         n ? ":" : "", dmm_tunables_info[i].tunable, t->v[i]);
        n += (size_t)(w > 0 ? w : 0);
    }
    if (cap && n >= cap)
        buf[cap - 1] = 0;
    return n;
}

int dmm_tunables_from_glibc(const char *value, dmm_tunables_t *t, char *err, size_t errlen)
{
    dmm_tunables_default(t);
    const char *p = value;
    while (*p) {
        const char *e = strchr(p, ':');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (eq) {
            for (int i = 0; i < DMM_TUNE_N; i++) {
                const char *name = dmm_tunables_info[i].tunable;
                if (strlen(name) == (size_t)(eq - p) && !memcmp(name, p, (size_t)(eq - p))) {
                    long long v;
                    size_t vl = len - (size_t)(eq + 1 - p);
                    if (parse_value(i, eq + 1, vl, 0, &v) != 0 || v == DMM_TUNE_DEFAULT) {
                        snprintf(err, errlen, "GLIBC_TUNABLES: bad value '%.*s' for %s",
                                 (int)(vl > 40 ? 40 : vl), eq + 1, name);
                        return -1;
                    }
                    t->v[i] = v;
                }
            }
        }
        if (!e)
            break;
        p = e + 1;
    }
    return 0;
}

/* ---- the grammar ------------------------------------------------------------ */

static void alternatives(FILE *f, const char *rule, const char *name, const long long *vals, int n)
{
    fprintf(f, "<%s> ::= %s=default", rule, name);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%s=%lld", (i + 1) % 6 == 0 ? "\n    | " : " | ", name, vals[i]);
    fputc('\n', f);
}

static char grammar_text[8192];

static void build_grammar(void)
{
    FILE *f = fmemopen(grammar_text, sizeof grammar_text, "w");
    if (!f)
        return;
    fprintf(f,
        "# dmm tune-glibc: glibc malloc's tunables, one value of each (bytes;\n"
        "# \"default\": not set, glibc's own behaviour).  Setting any of top_pad,\n"
        "# trim_threshold or mmap_threshold turns glibc's dynamic mmap threshold off.\n"
        "# mmap_threshold stops at 32 MiB: glibc ignores larger values on 64-bit.\n"
        "# arena_max only matters to threads contending for arenas: a replay runs on\n"
        "# one thread, so dmm tune-glibc measures every candidate with it at default.\n"
        "# Values may be written 64k, 1m, 2g (binary multiples).\n"
        "<Tunables> ::= <TopPad> <TrimThreshold> <MmapThreshold> <ArenaMax>\n");
    long long pad[16], mm[18], ar[8];
    pad[0] = 0;
    for (int i = 0; i < 15; i++)
        pad[i + 1] = 4096LL << i;        /* 4 KiB .. 64 MiB */
    for (int i = 0; i < 18; i++)
        mm[i] = 256LL << i;              /* 256 B .. 32 MiB */
    for (int i = 0; i < 8; i++)
        ar[i] = i + 1;
    alternatives(f, "TopPad", "top_pad", pad, 16);
    alternatives(f, "TrimThreshold", "trim_threshold", pad, 16);
    alternatives(f, "MmapThreshold", "mmap_threshold", mm, 18);
    alternatives(f, "ArenaMax", "arena_max", ar, 8);
    fclose(f);
    grammar_text[sizeof grammar_text - 1] = 0;
}

const char *dmm_tune_grammar_text(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, build_grammar);
    return grammar_text;
}

/* ---- the search (any fitness) ---------------------------------------------- */

typedef struct search_ctx {
    int fold_arena;
    dmm_tune_fitness_fn fitness;
    void *arg;
} search_ctx_t;

static int canon_cb(const char *ph, char *key, size_t cap, void *arg)
{
    const search_ctx_t *c = arg;
    dmm_tunables_t t;
    char err[256];
    if (dmm_tunables_parse(ph, &t, err, sizeof err) != 0)
        return -1;
    if (c->fold_arena)
        t.v[DMM_TUNE_ARENA_MAX] = DMM_TUNE_DEFAULT;
    return dmm_tunables_format(&t, key, cap) < cap ? 0 : -1;
}

static double fitness_cb(const char *key, uint64_t *T, size_t *M, void *arg)
{
    const search_ctx_t *c = arg;
    dmm_tunables_t t;
    char err[256];
    if (dmm_tunables_parse(key, &t, err, sizeof err) != 0)
        return DMM_GE_WORST;
    return c->fitness(&t, T, M, c->arg);
}

void dmm_tune_config_default(dmm_ge_config_t *cfg)
{
    dmm_ge_config_default(cfg);
    cfg->pop = 12;
    cfg->elite = 2;
    cfg->gens = 8;
    cfg->pmut = 0.15;
    cfg->length = 8;
    cfg->wraps = 2;
    cfg->jobs = 1;
}

int dmm_tune_search(const dmm_ge_config_t *cfg, const dmm_grammar_t *g, int fold_arena,
                    dmm_tune_fitness_fn fitness, void *arg, dmm_tune_result_t *r, char *err,
                    size_t errlen)
{
    memset(r, 0, sizeof *r);
    search_ctx_t ctx = { fold_arena, fitness, arg };
    dmm_ge_custom_t custom = { canon_cb, fitness_cb, &ctx };
    dmm_ge_config_t c = *cfg;
    c.custom = &custom;
    if (dmm_ge_run(&c, g, NULL, &r->ge, err, errlen) != 0)
        return -1;
    if (r->ge.found && r->ge.best_key &&
        dmm_tunables_parse(r->ge.best_key, &r->best, err, errlen) == 0) {
        r->found = 1;
        r->F = r->ge.F;
    }
    return 0;
}

void dmm_tune_result_free(dmm_tune_result_t *r)
{
    dmm_ge_result_free(&r->ge);
}

int dmm_tune_prune(dmm_tunables_t *t, double tol, dmm_tune_fitness_fn fitness, void *arg)
{
    int mask = 0;
    for (int i = 0; i < DMM_TUNE_N; i++) {
        if (t->v[i] == DMM_TUNE_DEFAULT)
            continue;
        dmm_tunables_t without = *t;
        without.v[i] = DMM_TUNE_DEFAULT;
        uint64_t T;
        size_t M;
        double f_with = fitness(t, &T, &M, arg);
        double f_without = fitness(&without, &T, &M, arg);
        if (f_without < DMM_GE_WORST && (f_with >= DMM_GE_WORST || f_without <= f_with + tol)) {
            *t = without;
            mask |= 1 << i;
        }
    }
    return mask;
}

/* ---- measuring: dmm replay --json in a child -------------------------------- */

typedef struct meas {
    double   wall, op;            /* seconds */
    uint64_t rss, base, held;     /* peak RSS, RSS before the replay, peak held */
    uint64_t failed, ops;
} meas_t;

typedef struct cand {
    dmm_tunables_t t;
    int      valid;
    meas_t   m;                   /* min over the reps */
    double   F;
} cand_t;

typedef struct tuner {
    const char *trace;
    char     exe[PATH_MAX];
    char   **env;                 /* environ less LD_PRELOAD and our settings; +2 slots */
    size_t   nenv;
    char     user_tunables[4096]; /* the user's other GLIBC_TUNABLES entries */
    int      outfd, errfd;
    int      reps;
    int      quiet, tty;
    /* the defaults, the fitness's reference */
    meas_t   ref;
    double   t_def, M_def;
    uint64_t baseline;
    double   noise;               /* the defaults' (max - min) / min replay time */
    /* every candidate measured */
    cand_t  *cand;
    size_t   ncand, capcand;
    uint64_t replays, failures;
    char     last_err[512];
} tuner_t;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int is_ours(const char *e)
{
    static const char *const names[] = { "LD_PRELOAD=", "GLIBC_TUNABLES=", "MALLOC_TOP_PAD_=",
                                         "MALLOC_TRIM_THRESHOLD_=", "MALLOC_MMAP_THRESHOLD_=",
                                         "MALLOC_ARENA_MAX=" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strncmp(e, names[i], strlen(names[i])))
            return 1;
    return 0;
}

/* The replays' environment: this one without LD_PRELOAD (glibc is what is
 * tuned), the MALLOC_* forms of our four and our four in GLIBC_TUNABLES;
 * the user's other GLIBC_TUNABLES entries are kept.  0, or -1. */
static int build_env(tuner_t *tu)
{
    size_t n = 0;
    for (char **e = environ; *e; e++)
        n++;
    tu->env = calloc(n + 2, sizeof *tu->env);
    if (!tu->env)
        return -1;
    for (char **e = environ; *e; e++) {
        if (!is_ours(*e)) {
            tu->env[tu->nenv++] = *e;
            continue;
        }
        if (!strncmp(*e, "GLIBC_TUNABLES=", 15)) {
            /* keep the entries that are not ours */
            const char *p = *e + 15;
            size_t u = 0;
            while (*p) {
                const char *end = strchr(p, ':');
                size_t len = end ? (size_t)(end - p) : strlen(p);
                int ours = 0;
                for (int i = 0; i < DMM_TUNE_N; i++) {
                    size_t tl = strlen(dmm_tunables_info[i].tunable);
                    if (len > tl && !memcmp(p, dmm_tunables_info[i].tunable, tl) && p[tl] == '=')
                        ours = 1;
                }
                if (ours) {
                    if (!tu->quiet)
                        fprintf(stderr, "dmm tune-glibc: note: %.*s from GLIBC_TUNABLES is not "
                                        "used: the search sets it\n", (int)len, p);
                } else if (len && u + len + 2 < sizeof tu->user_tunables) {
                    u += (size_t)snprintf(tu->user_tunables + u, sizeof tu->user_tunables - u,
                                          "%s%.*s", u ? ":" : "", (int)len, p);
                }
                if (!end)
                    break;
                p = end + 1;
            }
        } else if (!tu->quiet) {
            const char *eq = strchr(*e, '=');
            fprintf(stderr, "dmm tune-glibc: note: %.*s is not used: %s\n",
                    (int)(eq ? eq - *e : 0), *e,
                    strncmp(*e, "LD_PRELOAD=", 11) ? "the search sets it"
                                                   : "the replays run on glibc's malloc");
        }
    }
    return 0;
}

static int json_num(const char *s, const char *key, double *v)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(s, pat);
    if (!p)
        return -1;
    char *end;
    *v = strtod(p + strlen(pat), &end);
    return end == p + strlen(pat) ? -1 : 0;
}

/* Everything in fd (a memfd), NUL-terminated, malloc'd; NULL out of memory. */
static char *read_all(int fd)
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
    return buf;
}

/* One replay under t.  0 with m filled; else the exit status of dmm replay
 * (or 1) with tu->last_err set. */
static int replay_once(tuner_t *tu, const dmm_tunables_t *t, meas_t *m)
{
    char ours[1024], gt[sizeof tu->user_tunables + sizeof ours + 32];
    dmm_tunables_glibc(t, ours, sizeof ours);
    gt[0] = 0;
    if (tu->user_tunables[0] || ours[0])
        snprintf(gt, sizeof gt, "GLIBC_TUNABLES=%s%s%s", tu->user_tunables,
                 tu->user_tunables[0] && ours[0] ? ":" : "", ours);
    tu->env[tu->nenv] = gt[0] ? gt : NULL;
    tu->env[tu->nenv + 1] = NULL;
    char *argv[] = { "dmm", "replay", "--json", (char *)tu->trace, NULL };
    if (ftruncate(tu->outfd, 0) != 0 || ftruncate(tu->errfd, 0) != 0 ||
        lseek(tu->outfd, 0, SEEK_SET) < 0 || lseek(tu->errfd, 0, SEEK_SET) < 0) {
        snprintf(tu->last_err, sizeof tu->last_err, "cannot reset the output files: %s",
                 strerror(errno));
        return 1;
    }
    fflush(NULL);
    tu->replays++;
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(tu->last_err, sizeof tu->last_err, "fork: %s", strerror(errno));
        return 1;
    }
    if (pid == 0) {
        int in = open("/dev/null", O_RDONLY);
        if (in >= 0)
            dup2(in, 0);
        dup2(tu->outfd, 1);
        dup2(tu->errfd, 2);
        execve(tu->exe, argv, tu->env);
        dprintf(2, "cannot run %s: %s\n", tu->exe, strerror(errno));
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) {
            snprintf(tu->last_err, sizeof tu->last_err, "waitpid: %s", strerror(errno));
            return 1;
        }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        char *e = read_all(tu->errfd);
        char *nl = e ? strchr(e, '\n') : NULL;
        if (nl)
            *nl = 0;
        const char *msg = !e ? "" : !strncmp(e, "dmm replay: ", 12) ? e + 12 : e;
        if (WIFEXITED(st))
            snprintf(tu->last_err, sizeof tu->last_err, "%.400s", msg[0] ? msg : "dmm replay failed");
        else
            snprintf(tu->last_err, sizeof tu->last_err, "dmm replay died of signal %d",
                     WTERMSIG(st));
        free(e);
        tu->failures++;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    }
    char *out = read_all(tu->outfd);
    double wall, op, rss, base, held, failed, ops;
    if (!out || json_num(out, "wall_s", &wall) || json_num(out, "op_s", &op) ||
        json_num(out, "peak_rss_bytes", &rss) || json_num(out, "baseline_rss_bytes", &base) ||
        json_num(out, "peak_held_bytes", &held) || json_num(out, "failed", &failed) ||
        json_num(out, "ops", &ops)) {
        snprintf(tu->last_err, sizeof tu->last_err, "%s", out ? "dmm replay's JSON lacks a field"
                                                              : "out of memory");
        free(out);
        tu->failures++;
        return 1;
    }
    free(out);
    m->wall = wall;
    m->op = op;
    m->rss = (uint64_t)rss;
    m->base = (uint64_t)base;
    m->held = held > 0 ? (uint64_t)held : 0;
    m->failed = (uint64_t)failed;
    m->ops = (uint64_t)ops;
    return 0;
}

/* reps replays of t; the smallest of each number into m.  0, or what
 * replay_once returned. */
static int measure(tuner_t *tu, const dmm_tunables_t *t, int reps, meas_t *m)
{
    for (int k = 0; k < reps; k++) {
        meas_t x;
        int rc = replay_once(tu, t, &x);
        if (rc)
            return rc;
        if (k == 0) {
            *m = x;
            continue;
        }
        if (x.wall < m->wall) m->wall = x.wall;
        if (x.op < m->op)     m->op = x.op;
        if (x.rss < m->rss)   m->rss = x.rss;
        if (x.base < m->base) m->base = x.base;
        if (x.held < m->held) m->held = x.held;
        if (x.failed > m->failed) m->failed = x.failed;
    }
    return 0;
}

static double fitness_of(const tuner_t *tu, double wall, uint64_t held)
{
    return 0.5 * wall / tu->t_def + 0.5 * ((double)held + (double)tu->baseline) / tu->M_def;
}

static double measured_fitness(const dmm_tunables_t *t, uint64_t *T, size_t *M, void *arg)
{
    tuner_t *tu = arg;
    if (tu->ncand == tu->capcand) {
        size_t nc = tu->capcand ? tu->capcand * 2 : 64;
        cand_t *c = realloc(tu->cand, nc * sizeof *c);
        if (!c)
            return DMM_GE_WORST;
        tu->cand = c;
        tu->capcand = nc;
    }
    cand_t *c = &tu->cand[tu->ncand++];
    memset(c, 0, sizeof *c);
    c->t = *t;
    c->F = DMM_GE_WORST;
    if (measure(tu, t, tu->reps, &c->m) != 0 || c->m.failed > tu->ref.failed)
        return DMM_GE_WORST;
    c->valid = 1;
    c->F = fitness_of(tu, c->m.wall, c->m.held);
    *T = (uint64_t)llround(c->m.wall * 1e9);
    *M = (size_t)(c->m.held + tu->baseline);
    return c->F;
}

/* ---- --probe: what this process's glibc made of its environment ------------ */

static void *volatile probe_sink[4];

/* Run first thing in a fresh process, before anything else allocated. */
static int probe(void)
{
    struct mallinfo2 m0 = mallinfo2();
    probe_sink[0] = malloc(64);
    struct mallinfo2 m1 = mallinfo2();
    probe_sink[1] = malloc(200000);
    struct mallinfo2 m2 = mallinfo2();
    free(probe_sink[1]);
    probe_sink[1] = malloc(200000);
    struct mallinfo2 m3 = mallinfo2();
    int first_mmapped = m2.hblks > m1.hblks, second_mmapped = m3.hblks > m1.hblks;
    printf("{\"glibc\":\"%s\",\"heap_before_bytes\":%zu,\"first_extension_bytes\":%zu,"
           "\"first_200000_mmapped\":%s,\"second_200000_mmapped\":%s,\"dynamic_mmap_threshold\":%s",
           gnu_get_libc_version(), m0.arena, m1.arena - m0.arena,
           first_mmapped ? "true" : "false", second_mmapped ? "true" : "false",
           !first_mmapped ? "null" : second_mmapped ? "false" : "true");
    const char *names[] = { "GLIBC_TUNABLES", "MALLOC_TOP_PAD_", "MALLOC_TRIM_THRESHOLD_",
                            "MALLOC_MMAP_THRESHOLD_", "MALLOC_ARENA_MAX" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        printf(",\"%s\":", names[i]);
        dmm_json_str(stdout, v);
    }
    printf("}\n");
    free(probe_sink[0]);
    free(probe_sink[1]);
    return 0;
}

/* ---- output helpers -------------------------------------------------------- */

static void human_bytes(char *buf, size_t cap, double b)
{
    if (b >= 1048576.0)
        snprintf(buf, cap, "%.2f MiB", b / 1048576.0);
    else if (b >= 1024.0)
        snprintf(buf, cap, "%.1f KiB", b / 1024.0);
    else
        snprintf(buf, cap, "%.0f B", b);
}

static void human_value(char *buf, size_t cap, int i, long long v)
{
    if (v == DMM_TUNE_DEFAULT)
        snprintf(buf, cap, "default");
    else if (i == DMM_TUNE_ARENA_MAX || v < 1024 || v % 1024)
        snprintf(buf, cap, "%lld", v);
    else if (v % 1048576 == 0)
        snprintf(buf, cap, "%lld (%lld MiB)", v, v / 1048576);
    else
        snprintf(buf, cap, "%lld (%lld KiB)", v, v / 1024);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct stat3 {
    double med, min, max;
} stat3_t;

static stat3_t stats_of(const double *v, int n)
{
    stat3_t s = { 0, 0, 0 };
    if (n <= 0)
        return s;
    double *c = malloc((size_t)n * sizeof *c);
    if (!c)
        return s;
    memcpy(c, v, (size_t)n * sizeof *c);
    qsort(c, (size_t)n, sizeof *c, cmp_double);
    s.min = c[0];
    s.max = c[n - 1];
    s.med = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
    free(c);
    return s;
}

static void json_tunables(FILE *f, const dmm_tunables_t *t)
{
    fputc('{', f);
    for (int i = 0; i < DMM_TUNE_N; i++) {
        fprintf(f, "%s\"%s\":", i ? "," : "", dmm_tunables_info[i].name);
        if (t->v[i] == DMM_TUNE_DEFAULT)
            fprintf(f, "\"default\"");
        else
            fprintf(f, "%lld", t->v[i]);
    }
    fputc('}', f);
}

/* ---- progress ---------------------------------------------------------------- */

typedef struct progress {
    tuner_t *tu;
} progress_t;

static void on_generation(const dmm_ge_gen_t *row, const dmm_ge_config_t *cfg, void *arg)
{
    const tuner_t *tu = ((progress_t *)arg)->tu;
    if (tu->quiet)
        return;
    char best[32], mean[32];
    snprintf(best, sizeof best, row->best_F >= DMM_GE_WORST ? "-" : "%.4f", row->best_F);
    snprintf(mean, sizeof mean, row->mean_F >= DMM_GE_WORST ? "-" : "%.4f", row->mean_F);
    unsigned long left = row->eta >= 0 ? (unsigned long)(row->eta + 0.5) : 0;
    if (tu->tty)
        fprintf(stderr, "\rgen %d/%d  best F %s  mean %s  measured %zu  cache hits %llu  "
                        "left %lu:%02lu   ", row->gen, cfg->gens, best, mean, tu->ncand,
                (unsigned long long)row->cache_hits, left / 60, left % 60);
    else
        fprintf(stderr, "dmm tune-glibc: gen %d/%d best_F=%s mean_F=%s measured=%zu "
                        "cache_hits=%llu left=%lu:%02lu\n", row->gen, cfg->gens, best, mean,
                tu->ncand, (unsigned long long)row->cache_hits, left / 60, left % 60);
    fflush(stderr);
}

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* ---- the command --------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
        "usage: dmm tune-glibc [options] TRACE\n"
        "       dmm tune-glibc --print-grammar | --probe\n"
        "\n"
        "Search glibc malloc's tunables top_pad, trim_threshold, mmap_threshold and\n"
        "arena_max for TRACE by grammatical evolution, each candidate scored by replaying\n"
        "TRACE under glibc with it set (dmm replay --json in a child process):\n"
        "F = 0.5*t/t_default + 0.5*M/M_default, t the replay's wall time, M its peak held\n"
        "memory plus the defaults' RSS before the replay (min over --reps replays each).\n"
        "Prints the winner as lines to paste (GLIBC_TUNABLES and MALLOC_*), then a final\n"
        "run of defaults and tuned settings, alternating, with the change in percent.\n"
        "\n"
        "  --pop N           population size (12)\n"
        "  --gens N          generations after the initial population (8)\n"
        "  --elite N         best individuals kept unchanged (2)\n"
        "  --seed N          random seed (1)\n"
        "  --reps N          replays per candidate, the fastest kept (3)\n"
        "  --final-reps N    replays of each side in the final run (5; 0: none)\n"
        "  --time SECONDS    stop the search after the generation that crosses this\n"
        "  --prune TOL       after the search, put each setting back to default when F\n"
        "                    without it is at most TOL above F with it, both measured\n"
        "                    again side by side (0.02); --no-prune: keep them all\n"
        "  --grammar FILE    a grammar of settings (default: --print-grammar's)\n"
        "  --json            one JSON object on standard output instead of the text\n"
        "  -q, --quiet       no progress or notes on standard error\n"
        "  --print-grammar   print the built-in grammar and exit\n"
        "  --probe           print, as JSON, what this process's glibc made of the\n"
        "                    settings in its environment (top pad of the first heap\n"
        "                    extension, dynamic mmap threshold on or off) and exit\n"
        "\n"
        "Exit status: 0 done, 1 usage error, 2 bad input (TRACE or grammar).\n");
}

typedef struct int_opt { const char *name; long lo, hi; int *dst; } int_opt_t;

static int parse_long(const char *opt, const char *s, long lo, long hi, long *v)
{
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (errno || end == s || *end || x < lo || x > hi) {
        fprintf(stderr, "dmm tune-glibc: %s needs an integer in %ld..%ld, not '%s'\n", opt, lo,
                hi, s);
        return -1;
    }
    *v = x;
    return 0;
}

/* The final run: defaults and t alternating (ABBA), n each. */
typedef struct final {
    int      n;
    meas_t  *def, *tun;
} final_t;

static int final_run(tuner_t *tu, const dmm_tunables_t *t, int n, final_t *fr)
{
    dmm_tunables_t d;
    dmm_tunables_default(&d);
    fr->n = 0;
    fr->def = calloc((size_t)n + 1, sizeof *fr->def);
    fr->tun = calloc((size_t)n + 1, sizeof *fr->tun);
    if (!fr->def || !fr->tun)
        return -1;
    for (int k = 0; k < n; k++) {
        int tuned_first = k % 2;
        for (int s = 0; s < 2; s++) {
            int tuned = s == tuned_first;
            if (replay_once(tu, tuned ? t : &d, tuned ? &fr->tun[k] : &fr->def[k]) != 0)
                return -1;
        }
        fr->n++;
    }
    return 0;
}

typedef struct side {
    stat3_t wall, op, rss, held;
} side_t;

static side_t side_of(const meas_t *m, int n)
{
    double *w = malloc((size_t)(n ? n : 1) * 4 * sizeof *w);
    side_t s;
    memset(&s, 0, sizeof s);
    if (!w)
        return s;
    for (int i = 0; i < n; i++) {
        w[i] = m[i].wall;
        w[n + i] = m[i].op;
        w[2 * n + i] = (double)m[i].rss;
        w[3 * n + i] = (double)m[i].held;
    }
    s.wall = stats_of(w, n);
    s.op = stats_of(w + n, n);
    s.rss = stats_of(w + 2 * n, n);
    s.held = stats_of(w + 3 * n, n);
    free(w);
    return s;
}

static double pct(double a, double b)
{
    return b > 0 ? 100.0 * (a - b) / b : 0;
}

double dmm_tune_mann_whitney(const double *x, int n, const double *y, int m)
{
    if (n < 1 || m < 1)
        return 1;
    double U = 0;
    int ties = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < m; j++) {
            if (x[i] > y[j])
                U += 1;
            else if (x[i] == y[j]) {
                U += 0.5;
                ties = 1;
            }
        }
    int N = n + m;
    if (ties || n > 60 || m > 60) {
        double *all = malloc((size_t)N * sizeof *all);
        if (!all)
            return 1;
        memcpy(all, x, (size_t)n * sizeof *all);
        memcpy(all + n, y, (size_t)m * sizeof *all);
        qsort(all, (size_t)N, sizeof *all, cmp_double);
        double tsum = 0;
        for (int i = 0; i < N;) {
            int k = i;
            while (k < N && all[k] == all[i])
                k++;
            double t = k - i;
            tsum += t * t * t - t;
            i = k;
        }
        free(all);
        double var = (double)n * m / 12.0 * ((N + 1) - tsum / ((double)N * (N - 1)));
        if (!(var > 0))
            return 1;
        double z = (fabs(U - (double)n * m / 2.0) - 0.5) / sqrt(var);
        if (z < 0)
            z = 0;
        return erfc(z / sqrt(2.0));
    }
    /* f[j][u]: orderings of i values of x and j of y in which u pairs have
     * the x above the y; built up over i. */
    int maxu = n * m;
    size_t w = (size_t)maxu + 1;
    double *f = calloc((size_t)(m + 1) * w, sizeof *f), *g = calloc((size_t)(m + 1) * w, sizeof *g);
    if (!f || !g) {
        free(f);
        free(g);
        return 1;
    }
    for (int j = 0; j <= m; j++)
        f[(size_t)j * w] = 1;
    for (int i = 1; i <= n; i++) {
        memset(g, 0, (size_t)(m + 1) * w * sizeof *g);
        g[0] = 1;
        for (int j = 1; j <= m; j++)
            for (int u = 0; u <= maxu; u++)
                g[(size_t)j * w + (size_t)u] = (u >= j ? f[(size_t)j * w + (size_t)(u - j)] : 0) +
                                               g[(size_t)(j - 1) * w + (size_t)u];
        double *t = f;
        f = g;
        g = t;
    }
    double total = 0, lo = 0, hi = 0;
    int uo = (int)U;
    for (int u = 0; u <= maxu; u++) {
        double c = f[(size_t)m * w + (size_t)u];
        total += c;
        if (u <= uo)
            lo += c;
        if (u >= uo)
            hi += c;
    }
    free(f);
    free(g);
    double p = 2 * (lo < hi ? lo : hi) / total;
    return p > 1 ? 1 : p;
}

static double field_of(const meas_t *m, int q)
{
    return q == 0 ? m->wall : q == 1 ? m->op : q == 2 ? (double)m->rss : (double)m->held;
}

/* The p-value of the final run's field q (0 wall, 1 in calls, 2 RSS, 3 held). */
static double final_p(const final_t *fr, int q)
{
    double *x = malloc((size_t)(fr->n ? fr->n : 1) * 2 * sizeof *x);
    if (!x)
        return 1;
    for (int i = 0; i < fr->n; i++) {
        x[i] = field_of(&fr->tun[i], q);
        x[fr->n + i] = field_of(&fr->def[i], q);
    }
    double p = dmm_tune_mann_whitney(x, fr->n, x + fr->n, fr->n);
    free(x);
    return p;
}

/* The change in words: measurable when significant at 5 % and the medians
 * differ by 0.5 % or more (a shift of one page in 16 MiB can be "significant"
 * and mean nothing). */
static void verdict(char *buf, size_t cap, double p, double d, double t, const char *less,
                    const char *more)
{
    if (p < 0.05 && fabs(pct(t, d)) >= 0.5)
        snprintf(buf, cap, "%s (p=%.3f)", t < d ? less : more, p);
    else if (p < 0.05)
        snprintf(buf, cap, "negligible (p=%.3f)", p);
    else
        snprintf(buf, cap, "no significant change (p=%.2f)", p);
}

/* One run of the command: its options, the measurements and the outcome. */
typedef struct cmd {
    dmm_ge_config_t   cfg;
    tuner_t           tu;
    int               final_reps, json;
    const char       *grammar_path, *trace;
    double            budget;
    dmm_tune_result_t r;
    dmm_tunables_t    best;      /* the winner: the search's best, pruned, or the defaults */
    double            prune_tol; /* < 0: no pruning */
    int               pruned;    /* mask of the tunables put back to default */
    int               tuned;     /* best sets something */
    final_t           fr;
    side_t            sd, st;    /* the final run's defaults and tuned */
    double            p[4];      /* Mann-Whitney: wall, in calls, RSS, held */
    double            F_final;
    int               recommended;  /* the final run found a gain and no cost */
    double            t_search, t_total;
    char              full[8192];   /* GLIBC_TUNABLES to paste */
} cmd_t;

/* 0, 1 (usage error, said), or -1 (--help or --print-grammar done). */
static int parse_options(cmd_t *c, int argc, char **argv)
{
    const int_opt_t int_opts[] = {
        { "--pop", 2, 100000, &c->cfg.pop },
        { "--gens", 0, 1000000, &c->cfg.gens },
        { "--elite", 0, 100000, &c->cfg.elite },
        { "--reps", 1, 1000, &c->tu.reps },
        { "--final-reps", 0, 10000, &c->final_reps },
    };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return -1;
        }
        if (!strcmp(a, "--print-grammar")) {
            fputs(dmm_tune_grammar_text(), stdout);
            return -1;
        }
        if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            c->tu.quiet = 1;
            continue;
        }
        if (!strcmp(a, "--json")) {
            c->json = 1;
            continue;
        }
        if (!strcmp(a, "--no-prune")) {
            c->prune_tol = -1;
            continue;
        }
        if (a[0] != '-' || !a[1]) {
            if (c->trace) {
                fprintf(stderr, "dmm tune-glibc: one trace only ('%s', then '%s')\n", c->trace, a);
                return 1;
            }
            c->trace = a;
            continue;
        }
        if (!v) {
            fprintf(stderr, "dmm tune-glibc: %s needs a value\n", a);
            return 1;
        }
        i++;
        const int_opt_t *io = NULL;
        for (size_t k = 0; k < sizeof int_opts / sizeof int_opts[0]; k++)
            if (!strcmp(a, int_opts[k].name))
                io = &int_opts[k];
        long n;
        char *end;
        if (io) {
            if (parse_long(a, v, io->lo, io->hi, &n))
                return 1;
            *io->dst = (int)n;
        } else if (!strcmp(a, "--seed")) {
            errno = 0;
            unsigned long long s = strtoull(v, &end, 10);
            if (errno || end == v || *end || v[0] == '-') {
                fprintf(stderr, "dmm tune-glibc: --seed needs a non-negative integer, not '%s'\n",
                        v);
                return 1;
            }
            c->cfg.seed = s;
        } else if (!strcmp(a, "--time")) {
            errno = 0;
            c->budget = strtod(v, &end);
            if (errno || end == v || *end || !(c->budget >= 0 && c->budget <= 1e9)) {
                fprintf(stderr, "dmm tune-glibc: --time needs seconds >= 0, not '%s'\n", v);
                return 1;
            }
        } else if (!strcmp(a, "--prune")) {
            errno = 0;
            c->prune_tol = strtod(v, &end);
            if (errno || end == v || *end || !(c->prune_tol >= 0 && c->prune_tol <= 1)) {
                fprintf(stderr, "dmm tune-glibc: --prune needs a tolerance in [0, 1], not '%s'\n",
                        v);
                return 1;
            }
        } else if (!strcmp(a, "--grammar")) {
            c->grammar_path = v;
        } else {
            fprintf(stderr, "dmm tune-glibc: unknown option %s\n", a);
            usage(stderr);
            return 1;
        }
    }
    if (!c->trace) {
        usage(stderr);
        return 1;
    }
    if (!strcmp(c->trace, "-")) {
        fprintf(stderr, "dmm tune-glibc: the trace is replayed many times: give a file, not "
                        "standard input\n");
        return 1;
    }
    if (c->cfg.elite >= c->cfg.pop) {
        fprintf(stderr, "dmm tune-glibc: --elite must be below --pop\n");
        return 1;
    }
    if (c->cfg.tournament > c->cfg.pop)
        c->cfg.tournament = c->cfg.pop;
    c->cfg.time_budget = c->budget;
    return 0;
}

/* The defaults: a warm-up replay (which also says whether the trace reads),
 * then --reps replays, the reference of the fitness.  0, or the exit status
 * (a message printed). */
static int reference(tuner_t *tu)
{
    dmm_tunables_t def;
    dmm_tunables_default(&def);
    meas_t x;
    int xr = replay_once(tu, &def, &x);
    double *w = malloc((size_t)tu->reps * sizeof *w);
    if (!w) {
        fprintf(stderr, "dmm tune-glibc: out of memory\n");
        return 1;
    }
    for (int k = 0; k < tu->reps && xr == 0; k++) {
        xr = replay_once(tu, &def, &x);
        if (xr)
            break;
        w[k] = x.wall;
        if (k == 0) {
            tu->ref = x;
            continue;
        }
        if (x.wall < tu->ref.wall) tu->ref.wall = x.wall;
        if (x.op < tu->ref.op)     tu->ref.op = x.op;
        if (x.rss < tu->ref.rss)   tu->ref.rss = x.rss;
        if (x.base < tu->ref.base) tu->ref.base = x.base;
        if (x.held < tu->ref.held) tu->ref.held = x.held;
        if (x.failed > tu->ref.failed) tu->ref.failed = x.failed;
    }
    if (xr == 0) {
        stat3_t s = stats_of(w, tu->reps);
        tu->noise = s.min > 0 ? (s.max - s.min) / s.min : 0;
    }
    free(w);
    if (xr) {
        fprintf(stderr, "dmm tune-glibc: %s\n", tu->last_err);
        return xr == 2 ? 2 : 1;
    }
    if (tu->ref.ops == 0 || !(tu->ref.wall > 0)) {
        fprintf(stderr, "dmm tune-glibc: %s: no operations to replay\n", tu->trace);
        return 2;
    }
    tu->t_def = tu->ref.wall;
    tu->baseline = tu->ref.base;
    tu->M_def = (double)tu->ref.held + (double)tu->baseline;
    return 0;
}

static const char *stopped_name(int s)
{
    return s == DMM_GE_DONE ? "completed" : s == DMM_GE_TIME ? "time budget" : "interrupted";
}

/* Measurable (p < 0.05, medians 0.5 % or more apart) change of the final
 * run's field q: -1 better, +1 worse, 0 none. */
static int measurable(const cmd_t *c, int q)
{
    stat3_t d = q == 0 ? c->sd.wall : c->sd.held, t = q == 0 ? c->st.wall : c->st.held;
    if (!(c->p[q] < 0.05) || fabs(pct(t.med, d.med)) < 0.5)
        return 0;
    return t.med < d.med ? -1 : 1;
}

/* The settings are worth setting when the final run's F is below 1, wall
 * time or peak held improved measurably and neither got measurably worse. */
static int recommend(const cmd_t *c)
{
    int w = measurable(c, 0), h = measurable(c, 3);
    return c->F_final < 1.0 && (w < 0 || h < 0) && w <= 0 && h <= 0;
}

static void print_json(const cmd_t *c)
{
    const tuner_t *tu = &c->tu;
    const dmm_tune_result_t *r = &c->r;
    FILE *f = stdout;
    fprintf(f, "{\"trace\":");
    dmm_json_str(f, c->trace);
    fprintf(f, ",\"glibc\":\"%s\",\"ops\":%" PRIu64 ",\"grammar\":", gnu_get_libc_version(),
            tu->ref.ops);
    dmm_json_str(f, c->grammar_path ? c->grammar_path : "built-in");
    fprintf(f, ",\"fitness\":{\"formula\":\"0.5*t/t_default+0.5*M/M_default\","
               "\"t\":\"wall_s, min of reps\",\"M\":\"peak_held_bytes + baseline_bytes, min of "
               "reps\",\"baseline_bytes\":%" PRIu64 ",\"t_default_s\":%.6f,"
               "\"M_default_bytes\":%.0f,\"default_time_spread\":%.4f},",
            tu->baseline, tu->t_def, tu->M_def, tu->noise);
    fprintf(f, "\"search\":{\"population\":%d,\"elite\":%d,\"generations\":%d,"
               "\"generations_run\":%d,\"seed\":%llu,\"reps\":%d,\"pmut\":%g,\"pcross\":%g,"
               "\"length\":%d,\"stopped\":\"%s\",\"evaluations\":%llu,\"cache_hits\":%llu,"
               "\"candidates_measured\":%zu,\"replays\":%llu,\"failed_replays\":%llu,"
               "\"seconds\":%.3f,\"log\":[",
            c->cfg.pop, c->cfg.elite, c->cfg.gens, r->ge.nlog - 1,
            (unsigned long long)c->cfg.seed, tu->reps, c->cfg.pmut, c->cfg.pcross,
            c->cfg.length, stopped_name(r->ge.stopped), (unsigned long long)r->ge.evaluations,
            (unsigned long long)r->ge.cache_hits, tu->ncand, (unsigned long long)tu->replays,
            (unsigned long long)tu->failures, c->t_search);
    for (int i = 0; i < r->ge.nlog; i++) {
        const dmm_ge_gen_t *row = &r->ge.log[i];
        fprintf(f, "%s{\"gen\":%d,\"valid\":%d,", i ? "," : "", row->gen, row->nvalid);
        if (row->nvalid)
            fprintf(f, "\"best_F\":%.6f,\"mean_F\":%.6f,", row->best_F, row->mean_F);
        else
            fprintf(f, "\"best_F\":null,\"mean_F\":null,");
        fprintf(f, "\"seconds\":%.3f}", row->seconds);
    }
    fprintf(f, "],\"candidates\":[");
    for (size_t i = 0; i < tu->ncand; i++) {
        const cand_t *k = &tu->cand[i];
        fprintf(f, "%s{\"settings\":", i ? "," : "");
        json_tunables(f, &k->t);
        if (k->valid)
            fprintf(f, ",\"F\":%.6f,\"wall_s\":%.6f,\"op_s\":%.6f,\"peak_held_bytes\":%" PRIu64
                       ",\"peak_rss_bytes\":%" PRIu64 "}", k->F, k->m.wall, k->m.op, k->m.held,
                    k->m.rss);
        else
            fprintf(f, ",\"F\":null}");
    }
    fprintf(f, "]},\"search_best\":");
    json_tunables(f, &r->best);
    fprintf(f, ",\"search_F\":%.6f,\"prune_tolerance\":%g,\"pruned\":[", r->F,
            c->prune_tol);
    for (int i = 0, k = 0; i < DMM_TUNE_N; i++)
        if (c->pruned & (1 << i))
            fprintf(f, "%s\"%s\"", k++ ? "," : "", dmm_tunables_info[i].name);
    fprintf(f, "],\"best\":");
    json_tunables(f, &c->best);
    fprintf(f, ",\"tuned\":%s,\"recommended\":%s,\"dynamic_mmap_threshold\":%s,"
               "\"GLIBC_TUNABLES\":", c->tuned ? "true" : "false",
            c->recommended ? "true" : "false",
            dmm_tunables_static_threshold(&c->best) ? "false" : "true");
    dmm_json_str(f, c->full);
    fprintf(f, ",\"env\":{");
    for (int i = 0, k = 0; i < DMM_TUNE_N; i++)
        if (c->best.v[i] != DMM_TUNE_DEFAULT)
            fprintf(f, "%s\"%s\":\"%lld\"", k++ ? "," : "", dmm_tunables_info[i].env,
                    c->best.v[i]);
    fprintf(f, "},\"final\":");
    if (!c->fr.n) {
        fprintf(f, "null");
    } else {
        fprintf(f, "{\"reps\":%d", c->fr.n);
        for (int s = 0; s < 2; s++) {
            const meas_t *m = s ? c->fr.tun : c->fr.def;
            const side_t *x = s ? &c->st : &c->sd;
            fprintf(f, ",\"%s\":{\"wall_s\":[", s ? "tuned" : "defaults");
            for (int i = 0; i < c->fr.n; i++)
                fprintf(f, "%s%.6f", i ? "," : "", m[i].wall);
            fprintf(f, "],\"op_s\":[");
            for (int i = 0; i < c->fr.n; i++)
                fprintf(f, "%s%.6f", i ? "," : "", m[i].op);
            fprintf(f, "],\"peak_rss_bytes\":[");
            for (int i = 0; i < c->fr.n; i++)
                fprintf(f, "%s%" PRIu64, i ? "," : "", m[i].rss);
            fprintf(f, "],\"peak_held_bytes\":[");
            for (int i = 0; i < c->fr.n; i++)
                fprintf(f, "%s%" PRIu64, i ? "," : "", m[i].held);
            fprintf(f, "],\"median_wall_s\":%.6f,\"median_op_s\":%.6f,"
                       "\"median_peak_rss_bytes\":%.0f,\"median_peak_held_bytes\":%.0f}",
                    x->wall.med, x->op.med, x->rss.med, x->held.med);
        }
        fprintf(f, ",\"change_pct\":{\"wall_s\":%.2f,\"op_s\":%.2f,\"peak_rss_bytes\":%.2f,"
                   "\"peak_held_bytes\":%.2f},\"p_value\":{\"wall_s\":%.4f,\"op_s\":%.4f,"
                   "\"peak_rss_bytes\":%.4f,\"peak_held_bytes\":%.4f},\"F\":%.6f}",
                pct(c->st.wall.med, c->sd.wall.med), pct(c->st.op.med, c->sd.op.med),
                pct(c->st.rss.med, c->sd.rss.med), pct(c->st.held.med, c->sd.held.med),
                c->p[0], c->p[1], c->p[2], c->p[3], c->F_final);
    }
    fprintf(f, ",\"seconds\":%.3f}\n", c->t_total);
}

/* One row of the final table: median (min-max) of each side, the change. */
static void table_row(const char *what, stat3_t d, stat3_t t, int bytes, double p,
                      const char *less, const char *more)
{
    char v[64];
    verdict(v, sizeof v, p, d.med, t.med, less, more);
    char cell[2][128];
    for (int s = 0; s < 2; s++) {
        stat3_t x = s ? t : d;
        if (bytes) {
            char a[32], b[32], m[32];
            human_bytes(m, sizeof m, x.med);
            human_bytes(a, sizeof a, x.min);
            human_bytes(b, sizeof b, x.max);
            snprintf(cell[s], sizeof cell[s], "%s (%s-%s)", m, a, b);
        } else {
            snprintf(cell[s], sizeof cell[s], "%.2f ms (%.2f-%.2f)", x.med * 1e3, x.min * 1e3,
                     x.max * 1e3);
        }
    }
    printf("%-10s %-34s %-34s %+6.1f %%  %s\n", what, cell[0], cell[1], pct(t.med, d.med), v);
}

static void print_text(const cmd_t *c)
{
    const tuner_t *tu = &c->tu;
    const dmm_tune_result_t *r = &c->r;
    const char *base = strrchr(c->trace, '/');
    char b1[64];
    printf("dmm tune-glibc: %s, %" PRIu64 " operations, glibc %s\n",
           base && base[1] ? base + 1 : c->trace, tu->ref.ops, gnu_get_libc_version());
    human_bytes(b1, sizeof b1, (double)tu->baseline);
    printf("fitness F = 0.5*t/t_default + 0.5*M/M_default; t: replay wall time, M: peak held "
           "+ %s baseline (min of %d replays each)\n", b1, tu->reps);
    printf("defaults: t %.2f ms (spread over %d replays %.1f %%), M %.2f MiB\n", tu->t_def * 1e3,
           tu->reps, 100 * tu->noise, tu->M_def / 1048576.0);
    printf("search: %d generations of %d, %zu candidates measured, %llu cache hits, %llu "
           "replays, %.1f s%s\n", r->ge.nlog - 1, c->cfg.pop, tu->ncand,
           (unsigned long long)r->ge.cache_hits, (unsigned long long)tu->replays, c->t_search,
           r->ge.stopped == DMM_GE_DONE ? "" : r->ge.stopped == DMM_GE_TIME ? " (time budget)"
                                                                          : " (interrupted)");
    printf("\nbest of the search (F %.4f; the defaults: 1; the best of many noisy measurements "
           "flatters itself:\nthe final run below is the fair comparison):\n", r->F);
    for (int i = 0; i < DMM_TUNE_N; i++) {
        char v[64];
        human_value(v, sizeof v, i, r->best.v[i]);
        printf("  %-15s %s%s\n", dmm_tunables_info[i].name, v,
               i == DMM_TUNE_ARENA_MAX ? "  (a one-thread replay cannot measure it)"
               : c->pruned & (1 << i) ? "  -> default: F without it is no worse (pruned)" : "");
    }
    if (!c->tuned) {
        printf("\nglibc's defaults won: nothing to set for this trace.\n");
        printf("total %.1f s\n", c->t_total);
        return;
    }
    printf("\nto use them, paste into the shell that starts the program:\n");
    printf("export GLIBC_TUNABLES=%s\n", c->full);
    printf("# or the same with the older variables (GLIBC_TUNABLES wins where both are set):\n");
    printf("export");
    for (int i = 0; i < DMM_TUNE_N; i++)
        if (c->best.v[i] != DMM_TUNE_DEFAULT)
            printf(" %s=%lld", dmm_tunables_info[i].env, c->best.v[i]);
    printf("\n");
    if (dmm_tunables_static_threshold(&c->best))
        printf("# note: setting these turns glibc's dynamic mmap threshold off\n");
    if (c->fr.n) {
        printf("\nfinal run: defaults and tuned alternating, %d replays each (median, min-max)\n",
               c->fr.n);
        printf("%-10s %-34s %-34s %s\n", "", "defaults", "tuned", "change");
        table_row("wall time", c->sd.wall, c->st.wall, 0, c->p[0], "faster", "slower");
        table_row("in calls", c->sd.op, c->st.op, 0, c->p[1], "faster", "slower");
        table_row("peak RSS", c->sd.rss, c->st.rss, 1, c->p[2], "smaller", "larger");
        table_row("peak held", c->sd.held, c->st.held, 1, c->p[3], "smaller", "larger");
        printf("%-10s %-34s %-34.4f %+6.1f %%\n", "F", "1.0000", c->F_final,
               pct(c->F_final, 1.0));
        if (c->recommended)
            printf("verdict: worth setting (the final run measured a gain and no cost)\n");
        else
            printf("verdict: keep glibc's defaults: the final run measured %s\n",
                   c->F_final >= 1.0 ? "no gain over them"
                   : measurable(c, 0) > 0 || measurable(c, 3) > 0 ? "a cost as well as a gain"
                                                                  : "no significant gain");
    }
    printf("total %.1f s\n", c->t_total);
}

int dmm_tune_glibc_main(int argc, char **argv)
{
    /* --probe first: it must run before this process allocates anything */
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--probe"))
            return probe();

    static cmd_t cmd;
    cmd_t *c = &cmd;
    memset(c, 0, sizeof *c);
    dmm_tune_config_default(&c->cfg);
    c->tu.outfd = c->tu.errfd = -1;
    c->tu.reps = 3;
    c->final_reps = 5;
    c->prune_tol = 0.02;
    int prc = parse_options(c, argc, argv);
    if (prc)
        return prc < 0 ? 0 : prc;
    tuner_t *tu = &c->tu;

    /* inputs: the trace (a readable file?), the grammar */
    struct stat sb;
    int fd = open(c->trace, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fprintf(stderr, "dmm tune-glibc: %s: %s\n", c->trace,
                fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0)
            close(fd);
        return 2;
    }
    close(fd);
    char err[1024];
    const char *gt = dmm_tune_grammar_text();
    dmm_grammar_t *g = c->grammar_path
                           ? dmm_grammar_load(c->grammar_path, err, sizeof err)
                           : dmm_grammar_parse("tune-glibc.bnf", gt, strlen(gt), err, sizeof err);
    if (!g) {
        fprintf(stderr, "dmm tune-glibc: %s\n", err);
        return 2;
    }

    int rc = 1;
    tu->trace = c->trace;
    tu->tty = isatty(2);
    /* this very program, even if its file is replaced while the search runs */
    snprintf(tu->exe, sizeof tu->exe, "/proc/self/exe");
    if (access(tu->exe, X_OK) != 0) {
        fprintf(stderr, "dmm tune-glibc: cannot run this program again (/proc/self/exe): %s\n",
                strerror(errno));
        goto done;
    }
    tu->outfd = memfd_create("dmm-tune-out", MFD_CLOEXEC);
    tu->errfd = memfd_create("dmm-tune-err", MFD_CLOEXEC);
    if (tu->outfd < 0 || tu->errfd < 0 || build_env(tu) != 0) {
        fprintf(stderr, "dmm tune-glibc: cannot set up the replays: %s\n", strerror(errno));
        goto done;
    }
    double t_start = now_s();
    rc = reference(tu);
    if (rc)
        goto done;
    rc = 1;

    /* the search; Ctrl-C ends it after the current generation */
    progress_t prog = { tu };
    c->cfg.progress = on_generation;
    c->cfg.progress_arg = &prog;
    c->cfg.stop = &interrupted;
    interrupted = 0;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);
    int grc = dmm_tune_search(&c->cfg, g, 1, measured_fitness, tu, &c->r, err, sizeof err);
    sigaction(SIGINT, &old, NULL);
    if (tu->tty && !tu->quiet)
        fputc('\n', stderr);
    if (grc != 0) {
        fprintf(stderr, "dmm tune-glibc: %s\n", err);
        goto done;
    }
    c->t_search = now_s() - t_start;
    if (!tu->quiet && c->r.ge.stopped == DMM_GE_STOPPED)
        fprintf(stderr, "dmm tune-glibc: interrupted after generation %d; keeping the best so "
                        "far\n", c->r.ge.nlog - 1);
    else if (!tu->quiet && c->r.ge.stopped == DMM_GE_TIME)
        fprintf(stderr, "dmm tune-glibc: time budget of %g s reached after generation %d\n",
                c->budget, c->r.ge.nlog - 1);
    if (!c->r.found) {
        fprintf(stderr, "dmm tune-glibc: no candidate could be measured (%llu replays failed; "
                        "last: %s)\n", (unsigned long long)tu->failures,
                tu->last_err[0] ? tu->last_err : "every genome was invalid for the grammar");
        rc = 2;
        goto done;
    }
    /* The defaults are a candidate too, of F 1 by definition: a search
     * whose best is no better keeps them. */
    c->best = c->r.best;
    if (!(c->r.F < 1.0))
        dmm_tunables_default(&c->best);
    /* Each setting that does not pay for itself goes back to default. */
    if (c->prune_tol >= 0 && !dmm_tunables_all_default(&c->best)) {
        if (!tu->quiet)
            fprintf(stderr, "dmm tune-glibc: pruning: each setting measured with and without\n");
        c->pruned = dmm_tune_prune(&c->best, c->prune_tol, measured_fitness, tu);
    }
    c->tuned = !dmm_tunables_all_default(&c->best);
    char gl[1024];
    dmm_tunables_glibc(&c->best, gl, sizeof gl);
    snprintf(c->full, sizeof c->full, "%s%s%s", tu->user_tunables,
             tu->user_tunables[0] && gl[0] ? ":" : "", gl);

    /* the final run */
    if (c->tuned && c->final_reps > 0) {
        if (!tu->quiet)
            fprintf(stderr, "dmm tune-glibc: final run, defaults and tuned alternating, %d "
                            "replays each\n", c->final_reps);
        if (final_run(tu, &c->best, c->final_reps, &c->fr) != 0) {
            fprintf(stderr, "dmm tune-glibc: final run: %s\n",
                    tu->last_err[0] ? tu->last_err : "out of memory");
            goto done;
        }
        c->sd = side_of(c->fr.def, c->fr.n);
        c->st = side_of(c->fr.tun, c->fr.n);
        for (int q = 0; q < 4; q++)
            c->p[q] = final_p(&c->fr, q);
        c->F_final = 0.5 * c->st.wall.med / c->sd.wall.med +
                     0.5 * (c->st.held.med + (double)tu->baseline) /
                         (c->sd.held.med + (double)tu->baseline);
        c->recommended = recommend(c);
    }
    c->t_total = now_s() - t_start;
    if (c->json)
        print_json(c);
    else
        print_text(c);
    rc = 0;
done:
    free(c->fr.def);
    free(c->fr.tun);
    free(tu->cand);
    free(tu->env);
    if (tu->outfd >= 0)
        close(tu->outfd);
    if (tu->errfd >= 0)
        close(tu->errfd);
    dmm_tune_result_free(&c->r);
    dmm_grammar_free(g);
    return rc;
}
