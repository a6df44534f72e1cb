/* fuzz_android.c - libFuzzer harness for the android text trace reader and writer
 * (see text_roundtrip.h for what it checks). */
#include "test/fuzz/text_roundtrip.h"
#include "tracer/format/textfmt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_text_roundtrip(data, size, DMM_FMT_ANDROID, dmm_write_android);
}
