/* traces.h - what the integration tests check in the trace files a run under
 * libdmmtrace.so left in a directory: each one whole, consistent, and read
 * by `dmm stats`.  Header-only, after progrun.h and rundmm.h. */
#ifndef DMM_TEST_TRACES_H
#define DMM_TEST_TRACES_H

#include <criterion/criterion.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracer/format/opstream.h"
#include "test/lib/progrun.h"
#include "test/lib/rundmm.h"
#include "tracer/format/trace.h"
#include "tracer/format/load.h"

/* The .trc files in dir, sorted by name, as one malloc'd array of paths
 * (free it with free_names); returns how many. */
static int trace_names(const char *dir, char ***names)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s", dir);
    int n = 0, cap = 16;
    char **v = malloc((size_t)cap * sizeof *v);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 4, ".trc"))
            continue;
        if (n == cap)
            v = realloc(v, (size_t)(cap *= 2) * sizeof *v);
        v[n] = malloc(strlen(dir) + l + 2);
        sprintf(v[n++], "%s/%s", dir, e->d_name);
    }
    closedir(d);
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) {
            char *t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    *names = v;
    return n;
}

static void free_names(char **names, int n)
{
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* Load a trace that must be whole and check it: no live address handed out
 * twice; no free of a block it never saw allocated, except up to
 * `unknown_in_child` in the file of a forked child (which may free what its
 * parent allocated); and `dmm stats --json` reads it (its output is left in
 * scratch/stdout). */
static void load_checked(const char *path, dmm_trace_t *t, uint64_t unknown_in_child,
                         const char *scratch)
{
    dmm_err_t err;
    cr_assert_eq(dmm_trace_load(path, t, &err), 0, "%s", err.msg);
    cr_assert_not(t->truncated, "%s: %s", path, t->note);
    uint64_t unknown_ok = (t->flags & DMM_TRC_F_FORKED) ? unknown_in_child : 0;
    dmm_opstream_t s;
    cr_assert_eq(dmm_opstream_build(t, &s, &err), 0, "%s", err.msg);
    cr_expect_leq(s.unknown_free, unknown_ok, "%s: %llu frees of unknown blocks", path,
                  (unsigned long long)s.unknown_free);
    cr_expect_eq(s.reused_live, 0, "%s: %llu live addresses handed out again", path,
                 (unsigned long long)s.reused_live);
    dmm_opstream_free(&s);
    char *args[] = { DMM, "stats", "--json", (char *)path, NULL };
    char e[2048];
    cr_expect_eq(run_dmm(scratch, args, e, sizeof e), 0, "dmm stats %s: %s", path, e);
    char so[600];
    snprintf(so, sizeof so, "%s/stdout", scratch);
    char *json = slurp(so, NULL);
    cr_assert_not_null(json);
    cr_expect_not_null(strstr(json, "\"truncated\": false"), "dmm stats %s: %.300s", path, json);
    free(json);
}

/* Every trace in dir passes load_checked; they are removed.  Returns how
 * many there were. */
static int check_traces_in(const char *dir, uint64_t unknown_in_child, const char *scratch)
{
    char **names;
    int n = trace_names(dir, &names);
    for (int i = 0; i < n; i++) {
        dmm_trace_t t;
        load_checked(names[i], &t, unknown_in_child, scratch);
        dmm_trace_free(&t);
        unlink(names[i]);
    }
    free_names(names, n);
    return n;
}

/* Records of op by thread tid (0: any thread); frees of NULL do not count
 * (glibc makes some as a thread ends). */
__attribute__((unused))
static uint64_t count_op(const dmm_trace_t *t, unsigned op, uint32_t tid)
{
    uint64_t n = 0;
    for (size_t i = 0; i < t->nrecs; i++) {
        const dmm_rec_t *r = &t->recs[i];
        n += r->op == op && (!tid || r->tid == tid) && (op != DMM_TRC_FREE || r->ptr_in);
    }
    return n;
}

#endif
