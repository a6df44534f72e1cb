/* misuse.c - heap misuse on purpose, for DMM_CHECK's tests (test_check.c).
 * Usage: misuse MODE
 *
 *   double-free         free a block twice
 *   foreign-free        free a pointer to the stack
 *   mmap-free           free a pointer into a private mmap
 *   interior-free       free a pointer 8 bytes into a block
 *   overflow            write one byte (a NUL) past a 24-byte block, free it
 *   overflow-neighbour  overwrite from the end of a block to the start of
 *                       the next one, then free the next one
 *   realloc-after-free  realloc a block already freed
 *   usable-after-free   malloc_usable_size of a block already freed
 *   usable-foreign      malloc_usable_size of a stack pointer
 *   clean               much legal work (malloc, calloc, realloc growing
 *                       and shrinking, every aligned call, writing up to
 *                       malloc_usable_size, threads); checks every result,
 *                       exit status 1 and a line on stderr on a mismatch
 *
 * A misuse mode that comes back from its misuse exits with status 2 (the
 * library did not stop it); one that could not set its misuse up, 3. */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Hide where a pointer comes from, so that the compiler neither warns
 * about the misuse nor optimises it away. */
static void *launder(void *p)
{
    __asm__ volatile("" : "+r"(p));
    return p;
}

static int fails;
/* volatile: the compiler must not see the overflow coming */
static volatile size_t huge = SIZE_MAX / 2;

static void fail(const char *what, long a, long b)
{
    fprintf(stderr, "misuse clean: %s (%ld, %ld)\n", what, a, b);
    fails++;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(seed + i * 7);
}

static int holds(const unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(seed + i * 7))
            return 0;
    return 1;
}

/* A block of n bytes, checked as usable up to malloc_usable_size. */
static unsigned char *block(size_t n, unsigned seed)
{
    unsigned char *p = malloc(n);
    if (!p) {
        fail("malloc returned NULL", (long)n, 0);
        return NULL;
    }
    if ((uintptr_t)p % 16)
        fail("malloc not 16-byte aligned", (long)n, (long)(uintptr_t)p);
    size_t u = malloc_usable_size(p);
    if (u < n)
        fail("malloc_usable_size below the request", (long)n, (long)u);
    fill(p, u, seed);
    return p;
}

static void aligned_calls(void)
{
    static const size_t aligns[] = { 8, 16, 32, 64, 256, 4096, 65536 };
    for (size_t i = 0; i < sizeof aligns / sizeof aligns[0]; i++) {
        size_t a = aligns[i];
        for (size_t n = 0; n < 5000; n += 1237) {
            void *v[4] = { NULL, NULL, NULL, NULL };
            if (a >= sizeof(void *)) {
                int r = posix_memalign(&v[0], a, n);
                if (r != 0)
                    fail("posix_memalign failed", (long)a, r);
            }
            v[1] = memalign(a, n);
            v[2] = aligned_alloc(a, n);
            for (int k = 0; k < 3; k++) {
                if (!v[k])
                    continue;
                if ((uintptr_t)v[k] % a)
                    fail("aligned block misaligned", (long)a, k);
                size_t u = malloc_usable_size(v[k]);
                if (u < n)
                    fail("aligned block's usable size", (long)n, (long)u);
                fill(v[k], u, (unsigned)(a + n));
            }
            for (int k = 0; k < 3; k++)
                if (v[k] && !holds(v[k], malloc_usable_size(v[k]), (unsigned)(a + n)))
                    fail("aligned block lost its contents", (long)a, k);
            /* realloc of an aligned block keeps the bytes */
            if (v[1]) {
                unsigned char *q = realloc(v[1], n + 100);
                if (!q || !holds(q, n, (unsigned)(a + n)))
                    fail("realloc of an aligned block", (long)a, (long)n);
                v[1] = q;
            }
            for (int k = 0; k < 3; k++)
                free(v[k]);
        }
    }
    void *p = valloc(100);
    if (!p || (uintptr_t)p % 4096)
        fail("valloc", 0, 0);
    free(p);
    p = pvalloc(100);
    if (!p || (uintptr_t)p % 4096 || malloc_usable_size(p) < 4096)
        fail("pvalloc", 0, p ? (long)malloc_usable_size(p) : 0);
    free(p);
    /* the errors glibc documents */
    void *out = NULL;
    if (posix_memalign(&out, 24, 10) != EINVAL)
        fail("posix_memalign(24) is not EINVAL", 0, 0);
    errno = 0;
    if (memalign(SIZE_MAX / 2 + 2, 10) != NULL || errno != EINVAL)
        fail("memalign of a huge alignment", errno, 0);
}

static void *thread_work(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    unsigned char *v[64] = { NULL };
    for (int i = 0; i < 3000; i++) {
        int k = (int)((seed * 31u + (unsigned)i * 17u) % 64);
        if (v[k]) {
            if (!holds(v[k], 16 + (size_t)k * 5, seed + (unsigned)k))
                fail("a thread's block changed", k, i);
            free(v[k]);
            v[k] = NULL;
        } else {
            v[k] = malloc(16 + (size_t)k * 5);
            if (v[k])
                fill(v[k], 16 + (size_t)k * 5, seed + (unsigned)k);
        }
    }
    for (int k = 0; k < 64; k++)
        free(v[k]);
    return NULL;
}

static int clean(void)
{
    /* many sizes, some live at once, freed out of order */
    enum { N = 2000 };
    static unsigned char *v[N];
    static size_t len[N];
    for (int i = 0; i < N; i++) {
        len[i] = (size_t)(i * 37 % 700) + (i % 97 == 0 ? 70000 : 0);
        v[i] = block(len[i], (unsigned)i);
    }
    for (int i = 0; i < N; i += 2) {
        if (v[i] && !holds(v[i], len[i], (unsigned)i))
            fail("block changed", i, (long)len[i]);
        free(v[i]);
        v[i] = NULL;
    }
    /* realloc: grow step by step, shrink, grow again; contents kept */
    for (int i = 1; i < N; i += 2) {
        unsigned char *p = v[i];
        size_t n = len[i];
        if (!p)
            continue;
        if (!holds(p, n, (unsigned)i))
            fail("block changed before realloc", i, (long)n);
        size_t steps[] = { n + 1, n + 40, 2 * n + 100, n / 2 + 1, 3, 5000, n + 1 };
        size_t keep = n;
        for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
            unsigned char *q = realloc(p, steps[s]);
            if (!q) {
                fail("realloc returned NULL", i, (long)steps[s]);
                break;
            }
            keep = keep < steps[s] ? keep : steps[s];
            if (!holds(q, keep, (unsigned)i))
                fail("realloc lost bytes", i, (long)steps[s]);
            size_t u = malloc_usable_size(q);
            if (u < steps[s])
                fail("usable size after realloc", (long)steps[s], (long)u);
            /* write up to the usable size: legal, and must not trip the guard */
            if (u > keep)
                memset(q + keep, 0x5a, u - keep);
            fill(q, keep, (unsigned)i);
            p = q;
        }
        free(p);
        v[i] = NULL;
    }
    /* calloc zeroes, also where a freed block's bytes were */
    for (int i = 0; i < 300; i++) {
        unsigned char *p = block((size_t)(i * 13 % 500 + 1), 0xff);
        free(p);
        size_t n = (size_t)(i * 13 % 500 + 1);
        unsigned char *z = calloc(n, 1);
        if (!z) {
            fail("calloc returned NULL", i, 0);
            continue;
        }
        for (size_t k = 0; k < n; k++)
            if (z[k]) {
                fail("calloc did not zero", i, (long)k);
                break;
            }
        free(z);
    }
    errno = 0;
    if (calloc(huge, 4) != NULL || errno != ENOMEM)
        fail("calloc overflow is not ENOMEM", errno, 0);
    /* the glibc corner cases */
    void *z = malloc(0);
    void *z2 = malloc(0);
    if (!z || !z2 || z == z2)
        fail("malloc(0) is not a unique pointer", 0, 0);
    free(z);
    free(z2);
    if (realloc(malloc(10), 0) != NULL)
        fail("realloc(p, 0) did not free", 0, 0);
    void *r = realloc(NULL, 50);
    if (!r)
        fail("realloc(NULL, n)", 0, 0);
    free(r);
    free(NULL);
    if (malloc_usable_size(NULL) != 0)
        fail("malloc_usable_size(NULL)", 0, 0);
    void *ra = reallocarray(NULL, 10, 10);
    if (!ra)
        fail("reallocarray", 0, 0);
    errno = 0;
    void *still = launder(ra);   /* a failed reallocarray leaves ra as it was */
    if (reallocarray(ra, huge, 3) != NULL || errno != ENOMEM)
        fail("reallocarray overflow is not ENOMEM", errno, 0);
    free(still);
    aligned_calls();
    /* threads, each freeing its own blocks */
    pthread_t t[3];
    for (uintptr_t k = 0; k < 3; k++)
        pthread_create(&t[k], NULL, thread_work, (void *)(k + 1));
    for (int k = 0; k < 3; k++)
        pthread_join(t[k], NULL);
    return fails ? 1 : 0;
}

/* Two blocks of n bytes next to each other (the closest pair of 16). */
static int neighbours(size_t n, unsigned char **lo, unsigned char **hi)
{
    unsigned char *v[16];
    for (int i = 0; i < 16; i++)
        v[i] = malloc(n);
    uintptr_t best = UINTPTR_MAX;
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++)
            if (v[j] > v[i] && (uintptr_t)(v[j] - v[i]) < best) {
                best = (uintptr_t)(v[j] - v[i]);
                *lo = v[i];
                *hi = v[j];
            }
    return best <= 4096;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: misuse MODE\n");
        return 64;
    }
    const char *m = argv[1];
    if (!strcmp(m, "clean"))
        return clean();
    if (!strcmp(m, "double-free")) {
        char *p = malloc(24);
        strcpy(p, "twice");
        char *again = launder(p);
        free(p);
        free(again);
    } else if (!strcmp(m, "foreign-free")) {
        char local[64];
        memset(local, 1, sizeof local);
        free(launder(local + 16));
    } else if (!strcmp(m, "mmap-free")) {
        char *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return 3;
        free(launder(p + 64));
    } else if (!strcmp(m, "interior-free")) {
        char *p = malloc(64);
        memset(p, 2, 64);
        free(launder(p + 8));
    } else if (!strcmp(m, "overflow")) {
        char *p = malloc(24);
        memset(p, 'a', 24);
        ((char *)launder(p))[24] = 0;   /* one NUL past the end */
        free(p);
    } else if (!strcmp(m, "overflow-neighbour")) {
        unsigned char *lo, *hi;
        if (!neighbours(24, &lo, &hi))
            return 3;
        memset(lo, 'a', 24);
        /* from lo's end to hi's start: what the library keeps in between */
        memset(launder(lo + 24), 'B', (size_t)(hi - lo) - 24);
        free(hi);
    } else if (!strcmp(m, "realloc-after-free")) {
        char *p = malloc(40);
        char *again = launder(p);
        free(p);
        printf("%p\n", realloc(again, 80));
    } else if (!strcmp(m, "usable-after-free")) {
        char *p = malloc(40);
        char *again = launder(p);
        free(p);
        printf("%zu\n", malloc_usable_size(again));
    } else if (!strcmp(m, "usable-foreign")) {
        char local[64];
        printf("%zu\n", malloc_usable_size(launder(local)));
    } else {
        fprintf(stderr, "misuse: unknown mode %s\n", m);
        return 64;
    }
    return 2;
}
