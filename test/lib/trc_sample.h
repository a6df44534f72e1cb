/* trc_sample.h - a small trace with everything a .trc can hold (several
 * threads, stacks, modules, a realloc, a failed call), and a field-by-field
 * comparison of two traces; shared by test_trc.c and test_convert.c. */
#ifndef DMM_TEST_TRC_SAMPLE_H
#define DMM_TEST_TRC_SAMPLE_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/format/trace.h"

static void sample_rec(dmm_trace_t *t, uint32_t tid, unsigned op, uint64_t size, uint64_t arg,
                       uint64_t in, uint64_t out, uint32_t stack)
{
    dmm_rec_t *r = dmm_trace_push(t);
    cr_assert_not_null(r);
    r->op = (uint8_t)op;
    r->tid = tid;
    r->seq = 10 + 3 * (t->nrecs - 1);      /* not the push index */
    r->time = 1000 * t->nrecs + 7;
    r->size = size;
    r->arg = arg;
    r->ptr_in = in;
    r->ptr_out = out;
    r->stack = stack;
}

/* nextra more mallocs/frees spread over three threads, to fill several
 * blocks. */
static void sample_trace(dmm_trace_t *t, size_t nextra)
{
    memset(t, 0, sizeof *t);
    t->format = DMM_FMT_TRC;
    t->flags = DMM_TRC_F_FORKED;
    t->pid = 4242;
    t->ppid = 4241;
    t->clock_id = 1;
    t->clock_res_ns = 1;
    t->stack_depth = 12;
    t->start_realtime_ns = 1700000000123456789ull;
    static const char cmd[] = "./app\0--size\0" "42";   /* 16 bytes with the NUL */
    t->cmdline_len = sizeof cmd;
    t->cmdline = malloc(sizeof cmd);
    memcpy(t->cmdline, cmd, sizeof cmd);

    /* stacks 1 (3 frames), 2 (9 frames: two continuation slots), 3 (none) */
    t->nstacks = 4;
    t->stacks = calloc(4, sizeof *t->stacks);
    t->nframes = 12;
    t->frames = malloc(12 * sizeof *t->frames);
    for (size_t i = 0; i < 12; i++)
        t->frames[i] = 0x400000 + 0x111 * i;
    t->stacks[1] = (dmm_stack_t){ .nframes = 3, .first = 9 };
    t->stacks[2] = (dmm_stack_t){ .nframes = 9, .first = 0 };
    t->stacks[3] = (dmm_stack_t){ .nframes = 0, .first = 0 };

    t->nmodules = 2;
    t->modules = calloc(2, sizeof *t->modules);
    t->modules[0] = (dmm_module_t){ 0x400000, 0x401000, 0, strdup("/usr/bin/app") };
    char longpath[200];
    memset(longpath, 'd', sizeof longpath - 1);
    longpath[0] = '/';
    longpath[sizeof longpath - 1] = '\0';
    t->modules[1] = (dmm_module_t){ 0x7f0000000000, 0x7f0000020000, 0x3000, strdup(longpath) };

    sample_rec(t, 4242, DMM_TRC_MALLOC, 100, 0, 0, 0x1000, 1);
    sample_rec(t, 4243, DMM_TRC_CALLOC, 40, 4, 0, 0x2000, 2);
    sample_rec(t, 4242, DMM_TRC_RELEASE, 0, 0, 0x1000, 0, 0);
    sample_rec(t, 4242, DMM_TRC_REALLOC, 300, 0, 0x1000, 0x3000, 1);
    sample_rec(t, 4244, DMM_TRC_POSIX_MEMALIGN, 64, 64, 0, 0x4000, 0);
    sample_rec(t, 4244, DMM_TRC_MALLOC, 1ull << 50, 0, 0, 0, 3);
    dmm_rec_t *f = &t->recs[t->nrecs - 1];
    f->flags = DMM_TRC_RF_FAILED;
    f->errnum = 12;
    sample_rec(t, 4243, DMM_TRC_FREE, 0, 0, 0x2000, 0, 0);
    for (size_t i = 0; i < nextra; i++) {
        uint32_t tid = 4242 + (uint32_t)(i % 3);
        uint64_t a = 0x100000 + 0x40 * i;
        sample_rec(t, tid, i % 2 ? DMM_TRC_FREE : DMM_TRC_MALLOC, i % 2 ? 0 : 16 + i % 977,
                   0, i % 2 ? a - 0x40 : 0, i % 2 ? 0 : a, (uint32_t)(i % 4));
    }
    sample_rec(t, 4242, DMM_TRC_FREE, 0, 0, 0x3000, 0, 0);
    sample_rec(t, 4243, DMM_TRC_THREAD_EXIT, 0, 0, 0, 0, 0);
}

/* Every field of b equals a's (b as read back from a file written from a). */
__attribute__((unused)) static void sample_compare(const dmm_trace_t *a, const dmm_trace_t *b)
{
    cr_assert_eq(b->pid, a->pid);
    cr_assert_eq(b->ppid, a->ppid);
    cr_assert_eq(b->clock_id, a->clock_id);
    cr_assert_eq(b->clock_res_ns, a->clock_res_ns);
    cr_assert_eq(b->stack_depth, a->stack_depth);
    cr_assert_eq(b->start_realtime_ns, a->start_realtime_ns);
    cr_assert_eq(b->cmdline_len, a->cmdline_len);
    cr_assert(memcmp(b->cmdline, a->cmdline, a->cmdline_len) == 0);
    cr_assert_eq(b->truncated, 0);
    cr_assert_eq(b->nrecs, a->nrecs, "records: %zu, expected %zu", b->nrecs, a->nrecs);
    for (size_t i = 0; i < a->nrecs; i++) {
        const dmm_rec_t *x = &a->recs[i], *y = &b->recs[i];
        cr_assert_eq(y->op, x->op, "record %zu", i);
        cr_assert_eq(y->flags, x->flags, "record %zu", i);
        cr_assert_eq(y->tid, x->tid, "record %zu", i);
        cr_assert_eq(y->stack, x->stack, "record %zu", i);
        cr_assert_eq(y->errnum, x->errnum, "record %zu", i);
        cr_assert_eq(y->seq, x->seq, "record %zu", i);
        cr_assert_eq(y->time, x->time, "record %zu", i);
        cr_assert_eq(y->size, x->size, "record %zu", i);
        cr_assert_eq(y->arg, x->arg, "record %zu", i);
        cr_assert_eq(y->ptr_in, x->ptr_in, "record %zu", i);
        cr_assert_eq(y->ptr_out, x->ptr_out, "record %zu", i);
    }
    cr_assert_eq(b->nstacks, a->nstacks);
    for (size_t s = 1; s < a->nstacks; s++) {
        cr_assert_eq(b->stacks[s].nframes, a->stacks[s].nframes, "stack %zu", s);
        for (uint32_t k = 0; k < a->stacks[s].nframes; k++)
            cr_assert_eq(b->frames[b->stacks[s].first + k], a->frames[a->stacks[s].first + k],
                         "stack %zu frame %u", s, k);
    }
    cr_assert_eq(b->nmodules, a->nmodules);
    for (size_t m = 0; m < a->nmodules; m++) {
        cr_assert_eq(b->modules[m].start, a->modules[m].start);
        cr_assert_eq(b->modules[m].end, a->modules[m].end);
        cr_assert_eq(b->modules[m].offset, a->modules[m].offset);
        cr_assert_str_eq(b->modules[m].path, a->modules[m].path);
    }
}

#endif
