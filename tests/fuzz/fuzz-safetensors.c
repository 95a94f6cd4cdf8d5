/* tests/fuzz/fuzz-safetensors.c: a safetensors file of arbitrary bytes
 * through the whole dump reader (header, companions, __qprobe__ metadata,
 * loading every tensor). The bytes live in a memfd opened by path. */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "formats/dump.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz.safetensors", 0);
    if (fd < 0)
        return 0;
    if (write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    struct qp_error err;
    struct qp_dump *d;
    if (qp_dump_open(path, QP_DUMP_SAFETENSORS, &d, &err) == QP_OK) {
        for (size_t i = 0; i < qp_dump_count(d); i++) {
            struct qp_tensor *t;
            if (qp_dump_load(d, i, &t, &err) == QP_OK) {
                float buf[64];
                size_t n = qp_tensor_numel(t);
                for (size_t k = 0; k < n; k += 64)
                    qp_tensor_read_f32(t, k, n - k < 64 ? n - k : 64, buf);
                qp_tensor_free(t);
            }
        }
        qp_dump_close(d);
    }
    close(fd);
    return 0;
}
