/* err.c - dmm_err_set (see err.h). */
#include "tracer/base/err.h"

#include <stdarg.h>
#include <stdio.h>

int dmm_err_set(dmm_err_t *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}
