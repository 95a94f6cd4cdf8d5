/* tests/fuzz/fuzz-raw.c: the JSON files of a raw dump folder. The first
 * input byte picks the role of the rest (0: the index, 1: the sidecar of
 * x.raw, 2: a QNN encodings file); it is written into a folder that also
 * holds x.raw, y.bin and a qnn-net-run native file q_native.raw, which is
 * then opened and read through the whole dump reader. The folder is on
 * tmpfs (/dev/shm) when there is one: on a disk, creating and removing a
 * file per input was most of the target's time. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/outfile.h"
#include "tests/fuzz/fuzz-dump.h"

static char dir[64];

static void cleanup(void)
{
    qp_rmtree(dir);
}

static void put(const char *rel, const void *data, size_t n)
{
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    FILE *f = fopen(p, "wb");
    if (f) {
        fwrite(data, 1, n, f);
        fclose(f);
    }
}

static void setup(void)
{
    /* tmpfs: each input creates, reads and removes files there */
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm"
                       : getenv("TMPDIR")           ? getenv("TMPDIR")
                                                    : "/tmp";
    snprintf(dir, sizeof dir, "%.40s/qp-fuzz-raw-XXXXXX", base);
    if (!mkdtemp(dir))
        abort();
    atexit(cleanup);
    static const unsigned char bytes[24] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0x80, 0x3f};
    put("x.raw", bytes, 24);
    put("y.bin", bytes, 8);
    put("q_native.raw", bytes, 4);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const roles[3] = {"index.json", "x.json", "enc.json"};
    if (!*dir)
        setup();
    if (size < 1)
        return 0;
    const char *role = roles[data[0] % 3];
    put(role, data + 1, size - 1);
    fuzz_dump_read_all(dir, QP_DUMP_RAW_DIR);
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, role);
    unlink(p);
    return 0;
}
