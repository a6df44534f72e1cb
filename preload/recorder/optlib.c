/* optlib.c - libunwind and libzstd, opened when a recording needs them (see
 * optlib.h). */
#include "preload/recorder/optlib.h"

#include <dlfcn.h>

int (*dmm_unw_backtrace)(void **, int);
dmm_zstd_api_t dmm_zstd;

static void *open_lib(const char *soname, const char **why)
{
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        *why = dlerror();
    return h;
}

/* The address of name in h, or NULL with *why set. */
static void *sym(void *h, const char *name, const char **why)
{
    dlerror();
    void *p = dlsym(h, name);
    if (!p)
        *why = dlerror();
    return p;
}

int dmm_optlib_unwind(const char **why)
{
    if (dmm_unw_backtrace)
        return 1;
    void *h = open_lib("libunwind.so.8", why);
    void *f = h ? sym(h, "unw_backtrace", why) : NULL;
    if (!f)
        return 0;
    *(void **)&dmm_unw_backtrace = f;
    return 1;
}

int dmm_optlib_zstd(const char **why)
{
    if (dmm_zstd.compressCCtx)
        return 1;
    void *h = open_lib("libzstd.so.1", why);
    if (!h)
        return 0;
    static const char *const names[] = { "ZSTD_estimateCCtxSize", "ZSTD_compressBound",
                                         "ZSTD_initStaticCCtx", "ZSTD_compressCCtx",
                                         "ZSTD_isError" };
    void *f[5];
    for (int i = 0; i < 5; i++)
        if (!(f[i] = sym(h, names[i], why)))
            return 0;
    dmm_zstd_api_t z;
    *(void **)&z.estimateCCtxSize = f[0];
    *(void **)&z.compressBound = f[1];
    *(void **)&z.initStaticCCtx = f[2];
    *(void **)&z.compressCCtx = f[3];
    *(void **)&z.isError = f[4];
    dmm_zstd = z;
    return 1;
}
