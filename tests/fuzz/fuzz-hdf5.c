/* tests/fuzz/fuzz-hdf5.c: an HDF5 file of arbitrary bytes through the whole
 * dump reader, opened as an in-memory file image (qp_h5_open_image, the
 * reader libhdf5 uses for files, minus the disk): groups and links,
 * datatypes, dataspaces, storage layouts and filters (the declared-size
 * check), quantization attributes, root metadata, every tensor. */
#include "formats/hdf5.h"
#include "tests/fuzz/fuzz-dump.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct qp_error err;
    struct qp_dump *d;
    if (size && qp_h5_open_image("fuzz.h5", data, size, &d, &err) == QP_OK)
        fuzz_dump_walk(d);
    return 0;
}
