/* work_media.c - the bundled workload: the allocation pattern of a small
 * multimedia pipeline, the kind of program the paper's method targets.
 *
 * Per frame it receives a compressed packet (skewed sizes, queued a few
 * frames deep), decodes it into three planes (large, fixed sizes, kept as
 * reference frames for a few frames), makes many short-lived small objects
 * (slice and macroblock metadata) and a few long-lived ones (tables that
 * change now and then), and grows an audio buffer with realloc.  Payloads
 * are written, so the program does real work besides allocating.
 *
 *   work_media [-f FRAMES] [-s SCALE] [-t THREADS] [-r SEED]
 *
 * THREADS > 1 runs that many pipelines, and hands each finished frame to
 * the next thread to free (cross-thread frees).  Output: one checksum line,
 * the same on every allocator. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct rng { uint64_t s; } rng_t;

static uint32_t next(rng_t *r)
{
    r->s = r->s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(r->s >> 33);
}

typedef struct frame {
    uint8_t *plane[3];
    size_t   size[3];
    uint32_t id;
} frame_t;

#define REFS    4
#define QDEPTH  6
#define TABLES  16

typedef struct pipeline {
    int        frames, scale, index, nthreads;
    uint64_t   seed, checksum;
    /* frames handed over by the previous pipeline, freed here */
    frame_t   *inbox[64];
    int        in_head, in_tail;
    pthread_mutex_t lock;
} pipeline_t;

static pipeline_t *pipes;

static void give(pipeline_t *to, frame_t *f)
{
    pthread_mutex_lock(&to->lock);
    if ((to->in_tail + 1) % 64 == to->in_head) {
        /* full: the receiver is slow, free it here */
        pthread_mutex_unlock(&to->lock);
        for (int p = 0; p < 3; p++)
            free(f->plane[p]);
        free(f);
        return;
    }
    to->inbox[to->in_tail] = f;
    to->in_tail = (to->in_tail + 1) % 64;
    pthread_mutex_unlock(&to->lock);
}

/* Free the frames other threads handed over.  Which thread frees a frame
 * depends on timing, so nothing here enters the checksum. */
static void drain(pipeline_t *me)
{
    pthread_mutex_lock(&me->lock);
    while (me->in_head != me->in_tail) {
        frame_t *f = me->inbox[me->in_head];
        me->in_head = (me->in_head + 1) % 64;
        for (int p = 0; p < 3; p++)
            free(f->plane[p]);
        free(f);
    }
    pthread_mutex_unlock(&me->lock);
}

static frame_t *decode(rng_t *r, int scale, uint32_t id, const uint8_t *pkt, size_t plen)
{
    frame_t *f = malloc(sizeof *f);
    size_t w = 160u * (size_t)scale, h = 90u * (size_t)scale;
    f->size[0] = w * h;
    f->size[1] = f->size[2] = w * h / 4;
    f->id = id;
    for (int p = 0; p < 3; p++) {
        f->plane[p] = malloc(f->size[p]);
        /* write a strided pattern: real stores, not the whole plane */
        for (size_t i = 0; i < f->size[p]; i += 64)
            f->plane[p][i] = (uint8_t)(pkt[i % plen] + p + (next(r) & 3));
    }
    return f;
}

static void *run(void *arg)
{
    pipeline_t *me = arg;
    rng_t r = { me->seed * 2654435761u + (uint64_t)me->index };
    frame_t *refs[REFS] = { 0 };
    uint8_t *queue[QDEPTH] = { 0 };
    size_t qlen[QDEPTH] = { 0 };
    void *tables[TABLES];
    size_t tsize[TABLES];
    for (int i = 0; i < TABLES; i++) {
        tsize[i] = 64 + (next(&r) % 2048);
        tables[i] = calloc(1, tsize[i]);
    }
    size_t audio_len = 0, audio_cap = 1024;
    uint8_t *audio = malloc(audio_cap);
    uint64_t sum = 0;

    for (int fi = 0; fi < me->frames; fi++) {
        /* a packet: mostly small P-frames, an I-frame every 12 */
        size_t plen = (fi % 12 == 0) ? 20000 + next(&r) % 30000 : 500 + next(&r) % 4000;
        uint8_t *pkt = malloc(plen);
        for (size_t i = 0; i < plen; i += 16)
            pkt[i] = (uint8_t)next(&r);
        int q = fi % QDEPTH;
        free(queue[q]);
        queue[q] = pkt;
        qlen[q] = plen;
        int dq = (fi + 1) % QDEPTH;   /* decode the oldest queued packet */
        if (!queue[dq]) {
            dq = q;
        }

        /* slices and macroblocks: many small, short-lived objects */
        int nslices = 4 + (int)(next(&r) % 8);
        for (int s = 0; s < nslices; s++) {
            int nmb = 20 + (int)(next(&r) % 60);
            void *mbs[80];
            for (int m = 0; m < nmb; m++) {
                size_t sz = 16u << (next(&r) % 4);          /* 16 .. 128 */
                mbs[m] = malloc(sz);
                memset(mbs[m], m, 8);
            }
            uint8_t *slice = malloc(96 + (next(&r) % 160));
            memset(slice, s, 64);
            sum += slice[nmb % 64];
            for (int m = 0; m < nmb; m++) {
                sum += ((uint8_t *)mbs[m])[0];
                free(mbs[m]);
            }
            free(slice);
        }

        frame_t *f = decode(&r, me->scale, (uint32_t)fi, queue[dq], qlen[dq]);
        sum += f->plane[1][0];
        frame_t *old = refs[fi % REFS];
        refs[fi % REFS] = f;
        if (old) {
            sum += old->plane[0][0];
            if (me->nthreads > 1)
                give(&pipes[(me->index + 1) % me->nthreads], old);
            else {
                for (int p = 0; p < 3; p++)
                    free(old->plane[p]);
                free(old);
            }
        }
        if (me->nthreads > 1)
            drain(me);

        /* audio: append samples, grow by realloc, flush now and then */
        size_t add = 1152 + next(&r) % 1024;
        if (audio_len + add > audio_cap) {
            audio_cap = (audio_len + add) * 3 / 2;
            audio = realloc(audio, audio_cap);
        }
        memset(audio + audio_len, fi, add);
        audio_len += add;
        if (fi % 25 == 24) {
            sum += audio[audio_len / 2];
            audio_len = 0;
            audio_cap = 1024;
            audio = realloc(audio, audio_cap);
        }

        /* a table changes size every 30 frames */
        if (fi % 30 == 29) {
            int t = (int)(next(&r) % TABLES);
            free(tables[t]);
            tsize[t] = 64 + (next(&r) % 4096);
            tables[t] = calloc(1, tsize[t]);
        }
    }
    for (int i = 0; i < REFS; i++)
        if (refs[i]) {
            sum += refs[i]->plane[2][0];
            for (int p = 0; p < 3; p++)
                free(refs[i]->plane[p]);
            free(refs[i]);
        }
    for (int i = 0; i < QDEPTH; i++)
        free(queue[i]);
    for (int i = 0; i < TABLES; i++)
        free(tables[i]);
    free(audio);
    me->checksum = sum;
    return NULL;
}

int main(int argc, char **argv)
{
    int frames = 600, scale = 4, threads = 1;
    uint64_t seed = 1;
    int c;
    while ((c = getopt(argc, argv, "f:s:t:r:h")) != -1) {
        switch (c) {
        case 'f': frames = atoi(optarg); break;
        case 's': scale = atoi(optarg); break;
        case 't': threads = atoi(optarg); break;
        case 'r': seed = strtoull(optarg, NULL, 10); break;
        default:
            fprintf(stderr, "usage: work_media [-f FRAMES] [-s SCALE] [-t THREADS] [-r SEED]\n");
            return c == 'h' ? 0 : 2;
        }
    }
    if (frames < 1 || scale < 1 || scale > 64 || threads < 1 || threads > 64) {
        fprintf(stderr, "work_media: FRAMES >= 1, SCALE 1..64, THREADS 1..64\n");
        return 2;
    }
    pipes = calloc((size_t)threads, sizeof *pipes);
    pthread_t th[64];
    for (int i = 0; i < threads; i++) {
        pipes[i] = (pipeline_t){ .frames = frames, .scale = scale, .index = i,
                                 .nthreads = threads, .seed = seed };
        pthread_mutex_init(&pipes[i].lock, NULL);
    }
    if (threads == 1) {
        run(&pipes[0]);
    } else {
        for (int i = 0; i < threads; i++)
            pthread_create(&th[i], NULL, run, &pipes[i]);
        for (int i = 0; i < threads; i++)
            pthread_join(th[i], NULL);
        for (int i = 0; i < threads; i++)
            drain(&pipes[i]);
    }
    uint64_t total = 0;
    for (int i = 0; i < threads; i++)
        total += pipes[i].checksum;
    printf("work_media frames=%d scale=%d threads=%d checksum=%llu\n", frames, scale, threads,
           (unsigned long long)total);
    free(pipes);
    return 0;
}
