/* tests/fuzz/fuzz-hdf5.c: an HDF5 file of arbitrary bytes through the whole
 * dump reader: groups and links, datatypes, dataspaces, storage layouts and
 * filters (the declared-size check), quantization attributes, root
 * metadata, every tensor.
 *
 * Under libFuzzer the bytes are a file image read by qp_h5_open_image, the
 * reading code the CLI's worker runs (formats/hdf5-worker.c), in the
 * sandbox of tests/fuzz/fuzz-sandbox.h: a long-lived worker process whose
 * coverage guides the fuzzer, so that libhdf5 1.10's own faults on
 * hostile files drop the input while a fault in qprobe's code is a crash
 * of this target (thousands of inputs a second, where forking the CLI's
 * worker per input ran 14). In the standalone driver (`make test`) the
 * bytes go both through the sandbox and, as a file, through the CLI's
 * worker, whose replies are checked as if read from a file (but for
 * inputs libhdf5 loops on in the sandbox). The mode can
 * be forced with QP_FUZZ_H5=sandbox|file|local; local (or the older
 * QP_FUZZ_H5_LOCAL=1) reads the image in this process, to debug a
 * reproducer: libhdf5's faults then crash the target (see
 * tests/fuzz/seeds/README.md). */
#include <stdlib.h>
#include <string.h>

#include "formats/hdf5.h"
#include "tests/fuzz/fuzz-dump.h"
#include "tests/fuzz/fuzz-sandbox.h"

/* The workers' sanitizer reports go nowhere (see fuzz-sandbox.h), and
 * symbolizing each (a new llvm-symbolizer per worker) took most of the
 * time: stacks are not symbolized. To read one of a reproducer, run it
 * with ASAN_OPTIONS=symbolize=1. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "symbolize=0";
}

/* libhdf5 leaks on some malformed files (blocks it allocates and loses
 * on an error path): not ours to fix. The suppression matches any frame,
 * so a leak of ours allocated under a libhdf5 callback would hide too;
 * qprobe's callbacks only copy names into buffers its caller frees. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libhdf5\n";
}

enum { MODE_BOTH, MODE_SANDBOX, MODE_FILE, MODE_LOCAL };

static void read_image(const uint8_t *data, size_t size)
{
    struct qp_error err;
    struct qp_dump *d;
    if (size && qp_h5_open_image("fuzz.h5", data, size, &d, &err) == QP_OK)
        fuzz_dump_walk(d);
}

/* In the zygote: libhdf5 initialized, its free lists without limits.
 * With its default limits (64 KB a list) each file's metadata cache
 * (megabytes) was allocated anew, and faulting in its pages was a fifth of
 * the time; now a worker reuses the blocks of the inputs before. */
static void prepare(void)
{
    H5open();
    H5set_free_list_limits(-1, -1, -1, -1, -1, -1);
}

static int mode_of_env(void)
{
    const char *m = getenv("QP_FUZZ_H5"), *l = getenv("QP_FUZZ_H5_LOCAL");
    if ((m && !strcmp(m, "local")) || (l && *l == '1'))
        return MODE_LOCAL;
    if (m && !strcmp(m, "file"))
        return MODE_FILE;
    if ((m && !strcmp(m, "sandbox")) || fuzz_sandbox_ncounters())
        return MODE_SANDBOX;
    return MODE_BOTH;
}

static int mode = -1;

/* Before libFuzzer starts (see fuzz_sandbox_begin). */
__attribute__((constructor)) static void start(void)
{
    mode = mode_of_env();
    if (mode == MODE_SANDBOX || mode == MODE_BOTH)
        fuzz_sandbox_begin(read_image, prepare);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (mode == MODE_LOCAL)
        read_image(data, size);
    /* both: not an input libhdf5 loops on, which would cost the CLI's
     * worker its whole time budget (10 s) each */
    if ((mode == MODE_SANDBOX || mode == MODE_BOTH) &&
        fuzz_sandbox_run(data, size) == FUZZ_SANDBOX_TIMED)
        return 0;
    if (mode == MODE_FILE || mode == MODE_BOTH)
        fuzz_dump_bytes(data, size, QP_DUMP_HDF5);
    return 0;
}
