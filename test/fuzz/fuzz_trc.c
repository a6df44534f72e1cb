/* fuzz_trc.c - libFuzzer harness for the binary .trc reader: any bytes must
 * give a trace or an error, never a crash, a leak, a hang or an unbounded
 * allocation.  Seeds: test/corpus/trc/ (made by test_trc's regen_corpus test).
 *
 * Each input is parsed twice, each time by the loader and by the scan
 * (dmm_scan_trc), which must agree: as it is, and with every block checksum made
 * right, because a mutated block almost never has a matching CRC and the
 * fuzzer would otherwise never reach the record and zstd decoding behind it.
 * Where the scan gives the loader's order, the text dump and the Android
 * text streamed from the file (convert.h) must be the loaded trace's, byte
 * for byte.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/format/trace.h"
#include "tracer/format/convert.h"
#include "tracer/format/crc32.h"
#include "tracer/format/dump.h"
#include "tracer/format/load.h"
#include "tracer/format/opstream.h"
#include "tracer/format/textfmt.h"
#include "tracer/format/trc_read.h"
#include "tracer/stats/stats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t ld32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void st32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Recompute the checksums of every block the layout lets us find. */
static void fix_crcs(uint8_t *b, size_t len)
{
    if (len < 64)
        return;
    uint64_t off = (uint64_t)(b[10] | b[11] << 8) + ld32(b + 48);
    off = (off + 7) & ~(uint64_t)7;
    while (off <= len && len - off >= 32) {
        uint8_t *h = b + off;
        uint32_t stored = ld32(h + 8);
        if (stored <= len - off - 32)
            st32(h + 20, dmm_crc32(0, h + 32, stored));
        st32(h + 24, dmm_crc32(0, h, 24));
        off += 32 + (uint64_t)stored;
    }
}

static int count_call(void *ctx, const dmm_rec_t *r)
{
    *(size_t *)ctx += r->op != DMM_TRC_CLOCKSYNC;
    return 0;
}

/* The loaded trace t written whole as fmt, and the file streamed into it:
 * the same bytes. */
static void same_conversion(const uint8_t *data, size_t size, const dmm_trace_t *t,
                            dmm_format_t fmt)
{
    char *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    dmm_err_t err;
    FILE *fa = open_memstream(&a, &na), *fb = open_memstream(&b, &nb);
    if (!fa || !fb)
        abort();
    int rc = fmt == DMM_FMT_TEXT ? dmm_write_text(t, fa) : dmm_write_android(t, fa, &err);
    dmm_convert_t cv;
    int how = dmm_convert_begin(&cv, "fuzz.trc", data, size, fmt, &err);
    /* 1: clock syncs kept among the calls (not the TSC's): read whole */
    if (rc != 0 || how < 0 || (how == 0 && dmm_convert_write(&cv, fb, "out", &err) != 0))
        __builtin_trap();
    dmm_convert_free(&cv);
    fclose(fa);
    fclose(fb);
    if (how == 0 && (na != nb || memcmp(a, b, na) != 0))
        __builtin_trap();
    free(a);
    free(b);
}

/* The same bytes scanned (dmm_scan_trc): it reads exactly when the loader
 * does, and then gives as many calls, CLOCKSYNC records apart (the loader
 * keeps them where the clock is not the TSC). */
static void scan(const uint8_t *data, size_t size, int loaded, const dmm_trace_t *t)
{
    dmm_trace_t h;
    dmm_err_t err;
    memset(&h, 0, sizeof h);
    size_t calls = 0;
    int rc = dmm_scan_trc("fuzz.trc", data, size, &h, count_call, &calls, &err);
    dmm_trace_free(&h);
    if ((rc >= 0) != loaded)
        __builtin_trap();
    if (!loaded)
        return;
    size_t want = 0;
    for (size_t i = 0; i < t->nrecs; i++)
        want += t->recs[i].op != DMM_TRC_CLOCKSYNC;
    if (calls != want)
        __builtin_trap();
    /* and the operation stream built as it scans (opcache's way to it), and
     * the statistics counted as it scans (dmm stats' and dmm record's) */
    dmm_opstream_t os, whole;
    char note[512];
    if (dmm_opstream_build_trc("fuzz.trc", data, size, &os, note, sizeof note, &err) != 0)
        __builtin_trap();
    /* the loader's stream, whatever order the file's calls are in */
    if (dmm_opstream_build(t, &whole, &err) != 0 || whole.nops != os.nops ||
        (os.nops && memcmp(os.ops, whole.ops, os.nops * sizeof *os.ops) != 0))
        __builtin_trap();
    dmm_opstream_free(&whole);
    dmm_opstream_free(&os);
    dmm_stats_t st;
    memset(&h, 0, sizeof h);
    if (dmm_stats_scan_trc("fuzz.trc", data, size, &h, &st, &err) != 0)
        __builtin_trap();
    if (st.records < want)
        __builtin_trap();
    dmm_stats_free(&st);
    dmm_trace_free(&h);
    if (rc == 0) {   /* the loader's order: dmm convert streams it */
        same_conversion(data, size, t, DMM_FMT_TEXT);
        same_conversion(data, size, t, DMM_FMT_ANDROID);
    }
}

static void parse(const uint8_t *data, size_t size)
{
    dmm_trace_t t;
    dmm_err_t err;
    int loaded = dmm_trace_parse("fuzz.trc", data, size, DMM_FMT_TRC, &t, &err) == 0;
    scan(data, size, loaded, &t);
    if (loaded) {
        /* what later stages rely on: every stack id a record names exists,
         * every stack's frames lie inside the frame table, seq order */
        for (size_t i = 0; i < t.nrecs; i++)
            if (t.recs[i].stack >= t.nstacks)
                __builtin_trap();
        for (size_t s = 0; s < t.nstacks; s++)
            if (t.stacks[s].nframes && t.stacks[s].first + t.stacks[s].nframes > t.nframes)
                __builtin_trap();
        for (size_t i = 1; i < t.nrecs; i++)
            if (t.recs[i].seq < t.recs[i - 1].seq)
                __builtin_trap();
        if (t.nstacks == 0 || t.cmdline == NULL || t.cmdline[t.cmdline_len] != '\0')
            __builtin_trap();
    }
    dmm_trace_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    parse(data, size);
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    fix_crcs(copy, size);
    parse(copy, size);
    free(copy);
    return 0;
}
