/* util.c - number options and Ctrl-C for the commands (see util.h). */
#include "codegen/cli/util.h"

#include "allocators/chain/desc.h"
#include "tracer/record/record.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dmm_cli_long(const char *cmd, const char *opt, const char *s, long lo, long hi, long *v)
{
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (errno || end == s || *end || x < lo || x > hi) {
        fprintf(stderr, "dmm %s: %s needs an integer in %ld..%ld, not '%s'\n", cmd, opt, lo, hi,
                s);
        return -1;
    }
    *v = x;
    return 0;
}

int dmm_cli_real(const char *cmd, const char *opt, const char *s, double lo, double hi,
                 double *v)
{
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (errno || end == s || *end || !(x >= lo && x <= hi)) {
        fprintf(stderr, "dmm %s: %s needs a number in [%g, %g], not '%s'\n", cmd, opt, lo, hi, s);
        return -1;
    }
    *v = x;
    return 0;
}

int dmm_cli_seed(const char *cmd, const char *s, uint64_t *v)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-') {
        fprintf(stderr, "dmm %s: --seed needs a non-negative integer, not '%s'\n", cmd, s);
        return -1;
    }
    *v = x;
    return 0;
}

volatile sig_atomic_t dmm_cli_interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    dmm_cli_interrupted = 1;
}

void dmm_cli_catch_sigint(struct sigaction *old)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sa.sa_flags = SA_RESETHAND;   /* a second Ctrl-C kills */
    sigemptyset(&sa.sa_mask);
    dmm_cli_interrupted = 0;
    sigaction(SIGINT, &sa, old);
}

void dmm_cli_release_sigint(const struct sigaction *old)
{
    sigaction(SIGINT, old, NULL);
}

const char *dmm_cli_trace(const char *cmd, const char *path, char *buf, size_t len)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "dmm %s", cmd);
    dmm_err_t err;
    const char *p = dmm_record_pick(prefix, path, buf, len, &err);
    if (!p)
        fprintf(stderr, "%s: %s\n", prefix, err.msg);
    return p;
}

int dmm_cli_desc(const char *cmd, const char *path, dmm_desc_t *d)
{
    dmm_err_t err;
    if (dmm_desc_load(path, d, &err) == 0)
        return 0;
    fprintf(stderr, "dmm %s: %s\n", cmd, err.msg);
    return -1;
}
