/* work_pairs.c - the fast path alone: malloc and free of small blocks in
 * pairs, the sizes a program's hot loop asks for.
 *
 *   work_pairs [-n ROUNDS] [-s SIZE] [-k KEEP] [-t THREADS]
 *
 * Each round allocates KEEP blocks (default 64) of SIZE, SIZE+8, SIZE+16
 * and SIZE+24 bytes in turn (default SIZE 32) and frees them in the same
 * order: 64 malloc + free pairs a round, nothing else.  With -t, THREADS
 * threads (default 1) each do all the rounds on blocks of their own, at
 * the same time: what a call costs when every thread allocates.  bench/fastpath.py
 * counts the instructions of two runs under callgrind and divides the
 * difference by the pairs between them, so start-up and exit cancel out.
 * Output: one line, the number of pairs (the same on every allocator). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static long rounds = 10000, keep = 64;
static size_t size = 32;

static void *pairs(void *arg)
{
    void *v[4096];
    for (long r = 0; r < rounds; r++) {
        for (long j = 0; j < keep; j++) {
            v[j] = malloc(size + (size_t)(j & 3) * 8);
            if (!v[j]) {
                perror("work_pairs: malloc");
                exit(1);
            }
            *(volatile char *)v[j] = (char)j;
        }
        for (long j = 0; j < keep; j++)
            free(v[j]);
    }
    return arg;
}

int main(int argc, char **argv)
{
    long threads = 1;
    int c;
    while ((c = getopt(argc, argv, "n:s:k:t:")) != -1) {
        if (c == 'n')
            rounds = atol(optarg);
        else if (c == 's')
            size = (size_t)atol(optarg);
        else if (c == 'k')
            keep = atol(optarg);
        else if (c == 't')
            threads = atol(optarg);
        else {
            fprintf(stderr, "usage: work_pairs [-n ROUNDS] [-s SIZE] [-k KEEP] [-t THREADS]\n");
            return 2;
        }
    }
    if (rounds < 0 || keep < 1 || keep > 4096 || size < 1 || threads < 1 || threads > 256) {
        fprintf(stderr, "work_pairs: ROUNDS >= 0, 1 <= KEEP <= 4096, SIZE >= 1, "
                "1 <= THREADS <= 256\n");
        return 2;
    }
    if (threads == 1) {
        pairs(NULL);
    } else {
        pthread_t th[256];
        for (long i = 0; i < threads; i++)
            if (pthread_create(&th[i], NULL, pairs, NULL) != 0) {
                fprintf(stderr, "work_pairs: cannot start thread %ld\n", i + 1);
                return 1;
            }
        for (long i = 0; i < threads; i++)
            pthread_join(th[i], NULL);
    }
    printf("work_pairs: %ld pairs\n", rounds * keep * threads);
    return 0;
}
