/* probe.c - --probe's observations of glibc's malloc (see probe.h). */
#include "codegen/tune/probe.h"

#include <gnu/libc-version.h>
#include <malloc.h>
#include <stdlib.h>

#include "tracer/base/json.h"

static void *volatile probe_sink[4];

int dmm_tune_probe(FILE *f)
{
    struct mallinfo2 m0 = mallinfo2();
    probe_sink[0] = malloc(64);
    struct mallinfo2 m1 = mallinfo2();
    probe_sink[1] = malloc(200000);
    struct mallinfo2 m2 = mallinfo2();
    free(probe_sink[1]);
    probe_sink[1] = malloc(200000);
    struct mallinfo2 m3 = mallinfo2();
    int first_mmapped = m2.hblks > m1.hblks, second_mmapped = m3.hblks > m1.hblks;
    dmm_json_t j;
    dmm_json_begin(&j, f, 0);
    dmm_json_string(&j, "glibc", gnu_get_libc_version());
    dmm_json_u64(&j, "heap_before_bytes", m0.arena);
    dmm_json_u64(&j, "first_extension_bytes", m1.arena - m0.arena);
    dmm_json_bool(&j, "first_200000_mmapped", first_mmapped);
    dmm_json_bool(&j, "second_200000_mmapped", second_mmapped);
    /* a second block mmapped again: the threshold did not rise */
    if (first_mmapped)
        dmm_json_bool(&j, "dynamic_mmap_threshold", !second_mmapped);
    else
        dmm_json_null(&j, "dynamic_mmap_threshold");
    const char *names[] = { "GLIBC_TUNABLES", "MALLOC_TOP_PAD_", "MALLOC_TRIM_THRESHOLD_",
                            "MALLOC_MMAP_THRESHOLD_", "MALLOC_ARENA_MAX" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        dmm_json_string(&j, names[i], getenv(names[i]));
    dmm_json_end(&j);
    free(probe_sink[0]);
    free(probe_sink[1]);
    return 0;
}
