/* options.c - the DMM_* options of every preload library (see options.h and
 * the README's table). */
#include "preload/common/options.h"

#include <string.h>
#include <unistd.h>

extern char **environ;

static const char *const known[] = {
    "DMM_TRACE_FILE", "DMM_TRACE_STACK", "DMM_TRACE_COMPRESS",   /* libdmmtrace.so */
    "DMM_TRACE_TIME_STRIDE", "DMM_TRACE_FOLLOW_EXEC", "DMM_TRACE_FOLLOW_FORK",
    "DMM_TRACE_WRITER",
    "DMM_CONFIG", "DMM_STATS", "DMM_CHECK", "DMM_OFFLOAD",       /* libdmm.so */
    "DMM_PREFAULT",
};

void dmm_options_report_unknown(void)
{
    if (!environ)
        return;
    for (char **e = environ; *e; e++) {
        if (strncmp(*e, "DMM_", 4) != 0)
            continue;
        size_t n = strcspn(*e, "=");
        int ok = 0;
        for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
            ok |= strlen(known[i]) == n && strncmp(*e, known[i], n) == 0;
        if (ok)
            continue;
        char msg[200];
        size_t k = 0;
        const char *parts[3] = { "dmm: unknown option ", *e, " ignored (see the README for DMM_* options)\n" };
        for (int p = 0; p < 3; p++) {
            size_t len = p == 1 ? (n < 100 ? n : 100) : strlen(parts[p]);
            memcpy(msg + k, parts[p], len);
            k += len;
        }
        ssize_t r = write(2, msg, k);
        (void)r;
    }
}
