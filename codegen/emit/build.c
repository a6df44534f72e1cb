/* build.c - a .dmm compiled into its own libdmm_evolved.so (see build.h). */
#include "codegen/emit/build.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int dmm_build_find_kit(const char *exe_dir, char *path, size_t len, dmm_err_t *err)
{
    const char *tries[] = { "%s/dmm-build.txt", "%s/../share/dmm/src/dmm-build.txt" };
    for (size_t i = 0; i < sizeof tries / sizeof tries[0]; i++) {
        snprintf(path, len, tries[i], exe_dir);
        if (access(path, R_OK) == 0)
            return 0;
    }
    return dmm_err_set(err, "no build kit beside this dmm: neither %s/dmm-build.txt (the "
                            "build tree: run make) nor %s/../share/dmm/src/dmm-build.txt "
                            "(installed: make install)", exe_dir, exe_dir);
}

/* A growing argument vector; the strings are owned. */
typedef struct argv_s {
    char **v;
    size_t n, cap;
} argv_t;

static void arg_add(argv_t *a, const char *s, size_t len)
{
    if (a->n + 2 > a->cap) {
        a->cap = a->cap ? 2 * a->cap : 64;
        a->v = realloc(a->v, a->cap * sizeof *a->v);
        if (!a->v)
            abort();
    }
    a->v[a->n] = strndup(s, len);
    if (!a->v[a->n])
        abort();
    a->v[++a->n] = NULL;
}

/* Every blank-separated word of s. */
static void arg_words(argv_t *a, const char *s)
{
    while (*s) {
        s += strspn(s, " \t");
        size_t w = strcspn(s, " \t");
        if (w)
            arg_add(a, s, w);
        s += w;
    }
}

static void arg_free(argv_t *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->v[i]);
    free(a->v);
}

typedef struct kit {
    char root[4096], cc[256];
    argv_t cflags, ldflags, libs, src;
} kit_t;

static int kit_line(kit_t *k, const char *key, const char *val, const char *path, int line,
                    dmm_err_t *err)
{
    if (!strcmp(key, "root") || !strcmp(key, "cc")) {
        char *dst = key[0] == 'r' ? k->root : k->cc;
        size_t cap = key[0] == 'r' ? sizeof k->root : sizeof k->cc;
        if (!*val || strlen(val) >= cap)
            return dmm_err_set(err, "%s: line %d: %s needs one value", path, line, key);
        memcpy(dst, val, strlen(val) + 1);
    } else if (!strcmp(key, "cflags")) {
        arg_words(&k->cflags, val);
    } else if (!strcmp(key, "ldflags")) {
        arg_words(&k->ldflags, val);
    } else if (!strcmp(key, "libs")) {
        arg_words(&k->libs, val);
    } else if (!strcmp(key, "src")) {
        if (!*val || val[0] == '/' || strstr(val, ".."))
            return dmm_err_set(err, "%s: line %d: src needs a path inside root, not '%s'",
                               path, line, val);
        arg_add(&k->src, val, strlen(val));
    } else {
        return dmm_err_set(err, "%s: line %d: unknown key '%s' (root, cc, cflags, ldflags, "
                                "libs, src)", path, line, key);
    }
    return 0;
}

static int kit_read(kit_t *k, const char *path, dmm_err_t *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return dmm_err_set(err, "%s: %s", path, strerror(errno));
    char buf[8192];
    int line = 0, rc = 0;
    while (rc == 0 && fgets(buf, sizeof buf, f)) {
        line++;
        size_t n = strlen(buf);
        if (n && buf[n - 1] != '\n' && !feof(f)) {
            rc = dmm_err_set(err, "%s: line %d: longer than %zu bytes", path, line,
                             sizeof buf - 2);
            break;
        }
        while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
            buf[--n] = 0;
        char *s = buf + strspn(buf, " \t");
        if (!*s || *s == '#')
            continue;
        size_t kl = strcspn(s, " \t");
        char *val = s + kl + strspn(s + kl, " \t");
        s[kl] = 0;
        rc = kit_line(k, s, val, path, line, err);
    }
    fclose(f);
    if (rc == 0 && (!k->root[0] || !k->cc[0] || !k->src.n))
        rc = dmm_err_set(err, "%s: root, cc and at least one src are needed", path);
    if (rc == 0 && k->root[0] != '/') {
        /* relative to the kit file's folder (installed: "root .") */
        char rel[sizeof k->root];
        memcpy(rel, k->root, sizeof rel);
        const char *slash = strrchr(path, '/');
        int dl = slash ? (int)(slash - path) : 1;
        if (snprintf(k->root, sizeof k->root, "%.*s/%s", dl, slash ? path : ".", rel) >=
            (int)sizeof k->root)
            rc = dmm_err_set(err, "%s: root is too long", path);
    }
    return rc;
}

/* Run argv, waiting; 0 when it exited 0, else -1 with err. */
static int run(char *const argv[], dmm_err_t *err)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return dmm_err_set(err, "cannot fork: %s", strerror(errno));
    if (pid == 0) {
        execvp(argv[0], argv);
        fprintf(stderr, "dmm build: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return dmm_err_set(err, "waiting for %s: %s", argv[0], strerror(errno));
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
        return dmm_err_set(err, "the compiler %s could not be run (Debian: gcc, libc6-dev)",
                           argv[0]);
    if (WIFEXITED(st))
        return dmm_err_set(err, "%s failed (exit status %d)", argv[0], WEXITSTATUS(st));
    return dmm_err_set(err, "%s died of signal %d", argv[0], WTERMSIG(st));
}

/* The emitted source of d in a new directory dir (mkdtemp), as dir/c. */
static int emit_source(const dmm_desc_t *d, const dmm_emit_info_t *info, char *dir,
                       size_t dlen, char *c, size_t clen, dmm_err_t *err)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, dlen, "%s/dmm-build-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return dmm_err_set(err, "cannot make a directory %s: %s", dir, strerror(errno));
    snprintf(c, clen, "%s/dmm_evolved.c", dir);
    FILE *f = fopen(c, "w");
    int bad = !f || dmm_emit_c(f, d, info) != 0;
    if (f && fclose(f) != 0)
        bad = 1;
    if (bad) {
        unlink(c);
        rmdir(dir);
        return dmm_err_set(err, "cannot write %s", c);
    }
    return 0;
}

int dmm_build_library(const dmm_desc_t *d, const dmm_emit_info_t *info, const char *kit_path,
                      const char *cc, const char *out, int verbose, dmm_err_t *err)
{
    static kit_t k;   /* 4 KiB of root: not on the stack */
    memset(&k, 0, sizeof k);
    char dir[4096], c[4200], tmp[4200], inc[4200];
    int rc = kit_read(&k, kit_path, err);
    if (rc == 0)
        rc = emit_source(d, info, dir, sizeof dir, c, sizeof c, err);
    if (rc != 0)
        goto done;
    /* the library appears under its name whole, or not at all */
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", out, (long)getpid());
    argv_t a = { 0 };
    arg_words(&a, cc ? cc : k.cc);
    for (size_t i = 0; i < k.cflags.n; i++)
        arg_add(&a, k.cflags.v[i], strlen(k.cflags.v[i]));
    snprintf(inc, sizeof inc, "-I%s", k.root);
    arg_add(&a, inc, strlen(inc));
    for (size_t i = 0; i < k.ldflags.n; i++)
        arg_add(&a, k.ldflags.v[i], strlen(k.ldflags.v[i]));
    arg_add(&a, "-o", 2);
    arg_add(&a, tmp, strlen(tmp));
    for (size_t i = 0; i < k.src.n; i++) {
        char s[8400];
        snprintf(s, sizeof s, "%s/%s", k.root, k.src.v[i]);
        arg_add(&a, s, strlen(s));
    }
    arg_add(&a, c, strlen(c));
    for (size_t i = 0; i < k.libs.n; i++)
        arg_add(&a, k.libs.v[i], strlen(k.libs.v[i]));
    if (verbose) {
        for (size_t i = 0; i < a.n; i++)
            fprintf(stderr, "%s%s", i ? " " : "", a.v[i]);
        fprintf(stderr, "\n");
    }
    rc = a.n ? run(a.v, err) : dmm_err_set(err, "%s: cc is empty", kit_path);
    arg_free(&a);
    if (rc == 0 && rename(tmp, out) != 0)
        rc = dmm_err_set(err, "%s: %s", out, strerror(errno));
    if (rc != 0)
        unlink(tmp);
    unlink(c);
    rmdir(dir);
done:
    arg_free(&k.cflags);
    arg_free(&k.ldflags);
    arg_free(&k.libs);
    arg_free(&k.src);
    return rc;
}
