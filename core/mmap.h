/* core/mmap.h: read-only, reference-counted file mappings.
 *
 * A tensor whose data lives in a mapped file holds a reference on the
 * mapping, so the file stays mapped until the last such tensor is freed. */
#ifndef QP_CORE_MMAP_H
#define QP_CORE_MMAP_H

#include <stddef.h>

#include "core/status.h"

struct qp_mmap {
    const unsigned char *data; /* size bytes; NULL when size == 0 */
    size_t size;
    char *path;                /* owned copy of the path, for messages */
    int refs;
};

/* Maps path read-only. *out belongs to the caller (one reference); release
 * with qp_mmap_unref. QP_E_IO when the file cannot be opened or mapped,
 * naming the file. An empty file maps with data == NULL, size == 0. */
enum qp_status qp_mmap_open(const char *path, struct qp_mmap **out,
                            struct qp_error *err);

/* Takes another reference; returns m. */
struct qp_mmap *qp_mmap_ref(struct qp_mmap *m);

/* Drops a reference; unmaps and frees at zero. NULL is ignored. */
void qp_mmap_unref(struct qp_mmap *m);

/* Advises the kernel that [off, off+len) will be read soon, sequentially. */
void qp_mmap_prefetch(const struct qp_mmap *m, size_t off, size_t len);

/* Advises the kernel that [off, off+len) is no longer needed, so streaming
 * readers keep the resident set small. */
void qp_mmap_release_range(const struct qp_mmap *m, size_t off, size_t len);

#endif
