/* tests/fuzz/fuzz-hdf5.c: an HDF5 file of arbitrary bytes through the whole
 * dump reader: groups and links, datatypes, dataspaces, storage layouts and
 * filters (the declared-size check), quantization attributes, root
 * metadata, every tensor.
 *
 * By default the bytes are a file (a memfd) read as qprobe reads files:
 * by a worker process (formats/hdf5-worker.c), so libhdf5's own faults on
 * hostile files must come back as errors, and everything the worker sends
 * is checked here. With QP_FUZZ_H5_LOCAL=1 they are a file image read in
 * this process (qp_h5_open_image), so coverage reaches qprobe's reading
 * code; libhdf5 1.10's faults then crash the target (see
 * tests/fuzz/seeds/README.md). */
#include <stdlib.h>

#include "formats/hdf5.h"
#include "tests/fuzz/fuzz-dump.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int local = -1;
    if (local < 0) {
        const char *e = getenv("QP_FUZZ_H5_LOCAL");
        local = e && *e == '1';
    }
    struct qp_error err;
    struct qp_dump *d;
    if (!local)
        fuzz_dump_bytes(data, size, QP_DUMP_HDF5);
    else if (size && qp_h5_open_image("fuzz.h5", data, size, &d, &err) == QP_OK)
        fuzz_dump_walk(d);
    return 0;
}
