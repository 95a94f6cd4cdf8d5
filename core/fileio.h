/* core/fileio.h: small whole-file helpers and path utilities. */
#ifndef QP_CORE_FILEIO_H
#define QP_CORE_FILEIO_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

/* Reads a whole file (at most max_bytes) into a NUL-terminated malloc'd
 * buffer. *out belongs to the caller (free). QP_E_IO names the file. */
enum qp_status qp_read_file(const char *path, size_t max_bytes, char **out,
                            size_t *len, struct qp_error *err);

/* True when s ends with suffix (case-insensitive). */
bool qp_str_ends_with(const char *s, const char *suffix);

/* True when path is an existing directory. */
bool qp_is_dir(const char *path);

/* malloc'd "dir/name" (dir may be "" or end in '/'); NULL on no memory. */
char *qp_path_join(const char *dir, const char *name);

#endif
