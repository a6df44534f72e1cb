/* android.c - AOSP memory_replay text: reader and writer (`tid: malloc ptr size`,
 * `tid: free ptr`, ..., with optional start and end times). */
#include "tracer/format/textfmt.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/base/hash.h"
#include "tracer/format/text.h"

/* ---- reader ---- */

int dmm_read_android(const char *name, const uint8_t *buf, size_t len, dmm_trace_t *t, dmm_err_t *err)
{
    dmm_text_lines_t L;
    dmm_text_init(&L, name, buf, len, err);
    int rc = 0;
    uint64_t min_time = DMM_TEXT_NO_TIME;
    char q[DMM_TEXT_QUOTE];

    t->format = DMM_FMT_ANDROID;
    while (rc == 0 && dmm_text_next_line(&L)) {
        dmm_text_tok_t tk[7];
        size_t n = dmm_text_split(L.s, L.e, tk, 7);
        if (n > 7) {
            rc = dmm_text_err(&L, "too many fields");
            break;
        }
        uint64_t tid;
        if (tk[0].n < 2 || tk[0].p[tk[0].n - 1] != ':') {
            rc = dmm_text_err(&L, "expected '<tid>:' at the start, got %s", dmm_text_quote(tk[0], q));
            break;
        }
        if (dmm_text_num(&L, (dmm_text_tok_t){ tk[0].p, tk[0].n - 1 }, DMM_TEXT_DEC, UINT32_MAX, "thread id", &tid) != 0) {
            rc = -1;
            break;
        }
        if (n < 2) {
            rc = dmm_text_err(&L, "no operation after the thread id");
            break;
        }
        /* what each field is, for messages; pointers are hex */
        static const struct { const char *word; unsigned op; size_t nargs; const char *what[3]; }
        ops[] = {
            { "malloc", DMM_TRC_MALLOC, 2, { "pointer", "size" } },
            { "calloc", DMM_TRC_CALLOC, 3, { "pointer", "element count", "element size" } },
            { "memalign", DMM_TRC_MEMALIGN, 3, { "pointer", "alignment", "size" } },
            { "realloc", DMM_TRC_REALLOC, 3, { "new pointer", "old pointer", "size" } },
            { "free", DMM_TRC_FREE, 1, { "pointer" } },
            { "thread_done", DMM_TRC_THREAD_EXIT, 1, { "pointer" } },
        };
        size_t k = 0;
        while (k < sizeof ops / sizeof ops[0] && !dmm_text_tok_is(tk[1], ops[k].word))
            k++;
        if (k == sizeof ops / sizeof ops[0]) {
            rc = dmm_text_err(&L, "unknown operation %s", dmm_text_quote(tk[1], q));
            break;
        }
        unsigned op = ops[k].op;
        size_t nargs = ops[k].nargs, have = n - 2;
        /* Newer recorders append "start_ns end_ns"; thread_done may carry
         * only one of them. */
        if (have < nargs) {
            rc = dmm_text_err(&L, "%s needs %zu fields, got %zu", ops[k].word, nargs, have);
            break;
        }
        size_t extra = have - nargs;
        if (extra == 1 && op != DMM_TRC_THREAD_EXIT) {
            rc = dmm_text_err(&L, "one field too many after %s (timestamps come in pairs)", ops[k].word);
            break;
        }
        uint64_t v[3] = { 0, 0, 0 }, time = DMM_TEXT_NO_TIME, end;
        for (size_t i = 0; i < nargs && rc == 0; i++) {
            int is_ptr = i == 0 || (op == DMM_TRC_REALLOC && i == 1);
            rc = dmm_text_num(&L, tk[2 + i], is_ptr ? DMM_TEXT_PTR : DMM_TEXT_AUTO,
                         is_ptr ? UINT64_MAX : DMM_TEXT_MAX_SIZE, ops[k].what[i], &v[i]);
        }
        if (rc == 0 && extra >= 1)
            rc = dmm_text_num(&L, tk[2 + nargs], DMM_TEXT_DEC, DMM_TEXT_MAX_SIZE, "start time", &time);
        if (rc == 0 && extra == 2)
            rc = dmm_text_num(&L, tk[3 + nargs], DMM_TEXT_DEC, DMM_TEXT_MAX_SIZE, "end time", &end);
        if (rc != 0)
            break;
        if (time != DMM_TEXT_NO_TIME && time < min_time)
            min_time = time;
        switch (op) {
        case DMM_TRC_MALLOC:
            rc = dmm_text_push_alloc(&L, t, op, (uint32_t)tid, time, v[0], v[1], 0);
            break;
        case DMM_TRC_CALLOC: {
            uint64_t size = 0;
            if (v[1] && v[2] > DMM_TEXT_MAX_SIZE / v[1]) {
                if (v[0]) {
                    rc = dmm_text_err(&L, "calloc of %" PRIu64 " x %" PRIu64 " bytes overflows "
                                  "but returned a block", v[1], v[2]);
                    break;
                }
            } else {
                size = v[1] * v[2];
            }
            rc = dmm_text_push_alloc(&L, t, op, (uint32_t)tid, time, v[0], size, v[1]);
            break;
        }
        case DMM_TRC_MEMALIGN:
            rc = dmm_text_push_alloc(&L, t, op, (uint32_t)tid, time, v[0], v[2], v[1]);
            break;
        case DMM_TRC_REALLOC:
            rc = dmm_text_push_realloc(&L, t, (uint32_t)tid, time, v[1], v[0], v[2]);
            break;
        case DMM_TRC_FREE:
            rc = dmm_text_push_free(&L, t, (uint32_t)tid, time, v[0]);
            break;
        default:
            rc = dmm_text_push(&L, t, DMM_TRC_THREAD_EXIT, (uint32_t)tid, time) ? 0 : -1;
            break;
        }
    }
    /* Times become "since the trace started": the earliest start seen. */
    for (size_t i = 0; i < t->nrecs; i++)
        t->recs[i].time = t->recs[i].time == DMM_TEXT_NO_TIME ? 0 : t->recs[i].time - min_time;
    if (min_time == DMM_TEXT_NO_TIME)
        t->flags |= DMM_TRC_F_NOTIME;
    return rc;
}

/* ---- writer ---- */

int dmm_android_rec(const dmm_rec_t *r, FILE *out, dmm_u64map_t *pending, int timed)
{
    int failed = (r->flags & DMM_TRC_RF_FAILED) != 0;
    uint64_t ptr = failed ? 0 : r->ptr_out, old;
    int printed = 1;
    if (failed && (r->op == DMM_TRC_FREE || r->op == DMM_TRC_RELEASE))
        return 0;   /* opstream.c ignores them: so does the text */
    switch (r->op) {
    case DMM_TRC_MALLOC:
        fprintf(out, "%" PRIu32 ": malloc 0x%" PRIx64 " %" PRIu64, r->tid, ptr, r->size);
        break;
    case DMM_TRC_CALLOC: {
        uint64_t n = r->arg && r->size % r->arg == 0 ? r->arg : 1;
        fprintf(out, "%" PRIu32 ": calloc 0x%" PRIx64 " %" PRIu64 " %" PRIu64, r->tid, ptr, n,
                r->size / n);
        break;
    }
    case DMM_TRC_MEMALIGN: case DMM_TRC_POSIX_MEMALIGN: case DMM_TRC_ALIGNED_ALLOC:
    case DMM_TRC_VALLOC: case DMM_TRC_PVALLOC:
        fprintf(out, "%" PRIu32 ": memalign 0x%" PRIx64 " %" PRIu64 " %" PRIu64, r->tid, ptr,
                r->arg, r->size);
        break;
    case DMM_TRC_FREE:
        fprintf(out, "%" PRIu32 ": free 0x%" PRIx64, r->tid, r->ptr_in);
        break;
    case DMM_TRC_THREAD_EXIT:
        fprintf(out, "%" PRIu32 ": thread_done 0x0", r->tid);
        break;
    case DMM_TRC_RELEASE:
        printed = 0;
        if (r->ptr_in && dmm_u64map_put(pending, (uint64_t)r->tid + 1, r->ptr_in) != 0)
            return -1;
        break;
    case DMM_TRC_REALLOC: case DMM_TRC_REALLOCARRAY:
        if (failed) {
            /* "realloc 0x0 old size" reads back as a failed call; a
             * failed realloc(p, 0) has no such form, and changes nothing */
            printed = r->size != 0;
            if (printed)
                fprintf(out, "%" PRIu32 ": realloc 0x0 0x%" PRIx64 " %" PRIu64, r->tid,
                        r->ptr_in, r->size);
            break;
        }
        old = dmm_text_realloc_old(pending, r);
        /* a NULL result without failure freed the block: size 0 says so */
        fprintf(out, "%" PRIu32 ": realloc 0x%" PRIx64 " 0x%" PRIx64 " %" PRIu64, r->tid,
                r->ptr_out, old, r->ptr_out ? r->size : 0);
        break;
    default:
        printed = 0;
        break;
    }
    if (printed) {
        /* the end of the call is not recorded: both stamps are its start */
        if (timed)
            fprintf(out, " %" PRIu64 " %" PRIu64, r->time, r->time);
        fputc('\n', out);
    }
    return 0;
}

int dmm_write_android(const dmm_trace_t *t, FILE *out, dmm_err_t *err)
{
    dmm_u64map_t pending = DMM_U64MAP_INIT;
    int timed = !(t->flags & DMM_TRC_F_NOTIME);
    for (size_t i = 0; i < t->nrecs; i++) {
        if (dmm_android_rec(&t->recs[i], out, &pending, timed) != 0) {
            dmm_u64map_free(&pending);
            return dmm_err_set(err, "%s: out of memory writing android", dmm_text_trace_name(t));
        }
    }
    dmm_u64map_free(&pending);
    return dmm_text_finish(t, out, err);
}
