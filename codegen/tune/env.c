/* env.c - the measured programs' environment (see env.h). */
#include "codegen/tune/env.h"

#include <stdlib.h>
#include <string.h>

#include "codegen/tune/tunables.h"

extern char **environ;

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

/* Keep the entries of a GLIBC_TUNABLES value that are not ours. */
static void keep_user_tunables(dmm_tune_env_t *e, const char *p, FILE *notes, const char *why)
{
    size_t u = 0;
    while (*p) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (dmm_tunables_is_ours(p, len)) {
            if (notes)
                fprintf(notes, "dmm tune-glibc: note: %.*s from GLIBC_TUNABLES is not used: %s\n",
                        (int)len, p, why);
        } else if (len && u + len + 2 < sizeof e->user) {
            u += (size_t)snprintf(e->user + u, sizeof e->user - u, "%s%.*s", u ? ":" : "",
                                  (int)len, p);
        }
        if (!end)
            break;
        p = end + 1;
    }
}

int dmm_tune_env_init(dmm_tune_env_t *e, FILE *notes, const char *ours_why,
                      const char *preload_why)
{
    memset(e, 0, sizeof *e);
    size_t n = 0;
    for (char **v = environ; *v; v++)
        n++;
    e->env = calloc(n + 2, sizeof *e->env);
    if (!e->env)
        return -1;
    for (char **v = environ; *v; v++) {
        if (!is_ours(*v)) {
            e->env[e->n++] = *v;
        } else if (!strncmp(*v, "GLIBC_TUNABLES=", 15)) {
            keep_user_tunables(e, *v + 15, notes, ours_why);
        } else if (notes) {
            const char *eq = strchr(*v, '=');
            fprintf(notes, "dmm tune-glibc: note: %.*s is not used: %s\n",
                    (int)(eq ? eq - *v : 0), *v,
                    strncmp(*v, "LD_PRELOAD=", 11) ? ours_why : preload_why);
        }
    }
    return 0;
}

void dmm_tune_env_free(dmm_tune_env_t *e)
{
    free(e->env);
    free(e->slot);
    memset(e, 0, sizeof *e);
}

char **dmm_tune_env_with(dmm_tune_env_t *e, const char *tunables)
{
    size_t need = strlen(e->user) + strlen(tunables) + sizeof "GLIBC_TUNABLES=:";
    if (need > e->slotcap) {
        char *s = realloc(e->slot, need);
        if (!s)
            return NULL;
        e->slot = s;
        e->slotcap = need;
    }
    e->env[e->n] = NULL;
    if (e->user[0] || tunables[0]) {
        snprintf(e->slot, e->slotcap, "GLIBC_TUNABLES=%s%s%s", e->user,
                 e->user[0] && tunables[0] ? ":" : "", tunables);
        e->env[e->n] = e->slot;
    }
    e->env[e->n + 1] = NULL;
    return e->env;
}
