/* tests/fuzz/fuzz-npz.c: an npz archive of arbitrary bytes through the
 * whole dump reader (libzip, npy member headers and data, companions,
 * the __qprobe__.json member, every tensor). */
#include "tests/fuzz/fuzz-dump.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_dump_bytes(data, size, QP_DUMP_NPZ);
    return 0;
}
