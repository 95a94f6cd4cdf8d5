/* tests/fuzz/fuzz-safetensors.c: a safetensors file of arbitrary bytes
 * through the whole dump reader (header, companions, __metadata__ and its
 * __qprobe__ description, every tensor). */
#include "tests/fuzz/fuzz-dump.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_dump_bytes(data, size, QP_DUMP_SAFETENSORS);
    return 0;
}
