/* tests/fuzz/fuzz-dump.h: runs one container file of arbitrary bytes
 * through the whole dump reader: open (validation, companions, metadata),
 * then load every tensor and read every element. The bytes live in a
 * file (fuzz_dump_path), so the reader maps and parses them exactly as it
 * would any file. */
#ifndef QP_TESTS_FUZZ_DUMP_H
#define QP_TESTS_FUZZ_DUMP_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "formats/dump.h"

/* Tensors of up to FUZZ_WALK_ALL elements are read whole; larger ones
 * (a small file may declare 60 M elements of fill value or deflated
 * zeros, which took seconds an input to read 64 at a time under the
 * sanitizers, all of it in this walk) as FUZZ_WALK_RUNS runs of 64
 * spread over the tensor (starting anywhere in a block of scales), and
 * the last. */
#define FUZZ_WALK_ALL 65536
#define FUZZ_WALK_RUNS 1024

/* Loads every tensor of d, reads its elements (as above) and every
 * metadata entry, and closes d. */
static inline void fuzz_dump_walk(struct qp_dump *d)
{
    struct qp_error err;
    for (size_t i = 0; i < qp_dump_count(d); i++) {
        struct qp_tensor *t;
        if (qp_dump_load(d, i, &t, &err) != QP_OK)
            continue;
        float buf[64];
        size_t n = qp_tensor_numel(t);
        size_t step = n <= FUZZ_WALK_ALL ? 64 : n / FUZZ_WALK_RUNS + 1;
        for (size_t k = 0; k < n; k += step)
            qp_tensor_read_f32(t, k, n - k < 64 ? n - k : 64, buf);
        if (n > FUZZ_WALK_ALL)
            qp_tensor_read_f32(t, n - 64, 64, buf);
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

static char fuzz_dump_dir[128], fuzz_dump_file[160];

static inline void fuzz_dump_cleanup(void)
{
    unlink(fuzz_dump_file);
    rmdir(fuzz_dump_dir);
}

/* The path fuzz_dump_bytes writes its input to: one file in a private
 * folder under /dev/shm (tmpfs; $TMPDIR or /tmp when there is none), made
 * at the first call, rewritten at each and removed at exit; *fd is open on
 * it for writing. A plain tmpfs path costs the reader far less to stat
 * and open than a memfd's /proc/self/fd link: the memfd's setup, teardown
 * and /proc lookups were a third of the time of the npz target. NULL if
 * the file cannot be made. */
static inline const char *fuzz_dump_path(int *fd)
{
    static int wfd = -1;
    if (wfd < 0) {
        const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm"
                           : getenv("TMPDIR")           ? getenv("TMPDIR")
                                                        : "/tmp";
        snprintf(fuzz_dump_dir, sizeof fuzz_dump_dir, "%.100s/qp-fuzz-XXXXXX",
                 base);
        if (!mkdtemp(fuzz_dump_dir))
            return NULL;
        snprintf(fuzz_dump_file, sizeof fuzz_dump_file, "%s/input",
                 fuzz_dump_dir);
        wfd = open(fuzz_dump_file, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (wfd < 0)
            return NULL;
        atexit(fuzz_dump_cleanup);
    }
    *fd = wfd;
    return fuzz_dump_file;
}

/* Writes the bytes to fuzz_dump_path's file and reads it as format. */
static inline void fuzz_dump_bytes(const uint8_t *data, size_t size,
                                   enum qp_dump_format format)
{
    int fd;
    const char *path = fuzz_dump_path(&fd);
    if (path && ftruncate(fd, 0) == 0 &&
        pwrite(fd, data, size, 0) == (ssize_t)size)
        fuzz_dump_read_all(path, format);
}

#endif
