/* tests/fuzz/fuzz-dump.h: runs one container file of arbitrary bytes
 * through the whole dump reader: open (validation, companions, metadata),
 * then load every tensor and read every element. The bytes live in a
 * memfd opened by its /proc path, so the reader maps and parses them
 * exactly as it would a file. */
#ifndef QP_TESTS_FUZZ_DUMP_H
#define QP_TESTS_FUZZ_DUMP_H

#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "formats/dump.h"

/* Loads every tensor of d, reads every element and every metadata entry,
 * and closes d. */
static inline void fuzz_dump_walk(struct qp_dump *d)
{
    struct qp_error err;
    for (size_t i = 0; i < qp_dump_count(d); i++) {
        struct qp_tensor *t;
        if (qp_dump_load(d, i, &t, &err) != QP_OK)
            continue;
        float buf[64];
        size_t n = qp_tensor_numel(t);
        for (size_t k = 0; k < n; k += 64)
            qp_tensor_read_f32(t, k, n - k < 64 ? n - k : 64, buf);
        qp_tensor_free(t);
    }
    for (size_t i = 0; i < qp_dump_meta_count(d); i++) {
        const char *k, *v;
        qp_dump_meta_at(d, i, &k, &v);
        if (!k || !v)
            __builtin_trap();
    }
    qp_dump_close(d);
}

static inline void fuzz_dump_read_all(const char *path,
                                      enum qp_dump_format format)
{
    struct qp_error err;
    struct qp_dump *d;
    if (qp_dump_open(path, format, &d, &err) == QP_OK)
        fuzz_dump_walk(d);
}

static inline void fuzz_dump_bytes(const uint8_t *data, size_t size,
                                   enum qp_dump_format format)
{
    int fd = memfd_create("fuzz", 0);
    if (fd < 0)
        return;
    if (write(fd, data, size) == (ssize_t)size) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        fuzz_dump_read_all(path, format);
    }
    close(fd);
}

#endif
