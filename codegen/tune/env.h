/* env.h - the environment dmm tune-glibc gives the programs it measures
 * (its replays, and the real program of --verify): its own, less
 * LD_PRELOAD (glibc's malloc is what is tuned) and every form of the four
 * tunables (MALLOC_TOP_PAD_ ..., and their entries in GLIBC_TUNABLES), so
 * that each run sets exactly the settings it measures.  The user's other
 * GLIBC_TUNABLES entries are kept, in every run. */
#ifndef DMM_TUNE_ENV_H
#define DMM_TUNE_ENV_H

#include <stddef.h>
#include <stdio.h>

typedef struct dmm_tune_env {
    char  **env;          /* environ less ours; two slots more */
    size_t  n;
    char    user[4096];   /* the user's other GLIBC_TUNABLES entries */
    char   *slot;         /* GLIBC_TUNABLES=... of the last dmm_tune_env_with */
    size_t  slotcap;
} dmm_tune_env_t;

/* From this process's environment.  A note for each variable or entry left
 * out goes to notes (NULL: none), saying why: ours_why for our settings
 * ("the search sets it"), preload_why for LD_PRELOAD.  0, or -1 out of
 * memory. */
int dmm_tune_env_init(dmm_tune_env_t *e, FILE *notes, const char *ours_why,
                      const char *preload_why);
void dmm_tune_env_free(dmm_tune_env_t *e);

/* The environment with GLIBC_TUNABLES set to the user's entries and
 * tunables (a GLIBC_TUNABLES value; "" for none), valid until the next
 * call; NULL out of memory. */
char **dmm_tune_env_with(dmm_tune_env_t *e, const char *tunables);

#endif
