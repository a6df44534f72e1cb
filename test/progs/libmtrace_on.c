/* mtrace_on.c - a preload library that opens and closes a window of
 * allocation calls that glibc's mtrace and libdmmtrace.so both see.
 *
 * The tracer's tests use glibc's own mtrace (libc_malloc_debug.so.0) as an
 * independent oracle: run a program once with this library and mtrace, once
 * with this library and libdmmtrace.so, and compare the calls each saw
 * between the two markers.  The constructor calls mtrace() and allocates
 * MARKER_START bytes; an atexit handler, registered right after mtrace()
 * (so it runs after the program's own handlers, but before the cleanup that
 * mtrace registered, __libc_freeres, which only mtrace runs do), allocates
 * MARKER_END bytes and calls muntrace().
 * Without libc_malloc_debug, mtrace() and muntrace() are no-ops. */
#include <mcheck.h>
#include <stdlib.h>

#define MARKER_START 1234567
#define MARKER_END   1234568

static void stop_mtrace(void)
{
    void *volatile p = malloc(MARKER_END);
    free(p);
    muntrace();
}

__attribute__((constructor)) static void start_mtrace(void)
{
    mtrace();
    atexit(stop_mtrace);
    void *volatile p = malloc(MARKER_START);
    free(p);
}
