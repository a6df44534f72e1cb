/* fuzz_mtrace.c - libFuzzer harness for the mtrace text trace reader and writer
 * (see text_roundtrip.h for what it checks). */
#include "test/fuzz/text_roundtrip.h"
#include "tracer/format/textfmt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_text_roundtrip(data, size, DMM_FMT_MTRACE, dmm_write_mtrace);
}
