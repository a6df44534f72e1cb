/* liboverlap.c - a broken allocator for the tests of `dmm replay
 * --mdriver`: a request of exactly OVERLAP_SIZE bytes gets a block 16 bytes
 * into the block of the previous request (aligned, but overlapping a live
 * block); every other request is glibc's.  The size is one no reader or
 * driver asks for, so only the trace that asks for it meets the fault. */
#include <stddef.h>
#include <stdint.h>

#define OVERLAP_SIZE 4321

void *__libc_malloc(size_t n);
void  __libc_free(void *p);

static char *last;
static void *fake[64];
static unsigned nfake;

__attribute__((visibility("default"))) void *malloc(size_t n)
{
    if (n == OVERLAP_SIZE && last && nfake < 64) {
        fake[nfake++] = last + 16;
        return last + 16;
    }
    last = __libc_malloc(n);
    return last;
}

__attribute__((visibility("default"))) void free(void *p)
{
    for (unsigned i = 0; i < nfake; i++)
        if (fake[i] == p)
            return;   /* not a block of glibc's */
    __libc_free(p);
}
