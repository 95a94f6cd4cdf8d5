/* formats/npy.h: NumPy .npy files, format versions 1.0, 2.0 and 3.0.
 *
 * Reading: little- and big-endian data (big-endian is byte-swapped into an
 * owned copy), C order borrowed straight from the mapping when aligned,
 * Fortran order transposed into an owned C-order copy. Supported descrs:
 * f2 f4 f8 i1 u1 i2 u2 i4 u4 i8 u8 b1; anything else (structured dtypes,
 * strings, objects) is refused with a message naming the descr.
 * Writing: version 1.0 (the header of an 8-dim tensor always fits), padded
 * so the data starts at a multiple of 64 bytes. Packed 4-bit, bf16 and
 * float8 tensors have no numpy dtype and are refused. */
#ifndef QP_FORMATS_NPY_H
#define QP_FORMATS_NPY_H

#include <stdbool.h>
#include <stdio.h>

#include "core/tensor.h"

/* Parses the .npy image buf[0..len) named `what` in messages. The tensor is
 * named `name`. With header_only the result is a descriptor (data NULL,
 * nbytes set) and data bytes are only checked for presence. When map is
 * non-NULL and buf lies inside it, C-order aligned little-endian data is
 * borrowed from the mapping; otherwise it is copied. *out belongs to the
 * caller. Every malformed case returns QP_E_FORMAT with a message.
 * header_only reads no byte past the end of the header, so buf may hold
 * just the header while len is the size of the whole image (formats/npz.c
 * lists archive members from their first bytes this way). */
enum qp_status qp_fmt_npy_parse(const char *what, const void *buf, size_t len,
                                const char *name, struct qp_mmap *map,
                                bool header_only, struct qp_tensor **out,
                                struct qp_error *err);

/* Maps path and parses it; the tensor is named name (NULL: the file's base
 * name without ".npy"). */
enum qp_status qp_fmt_npy_load(const char *path, const char *name,
                               bool header_only, struct qp_tensor **out,
                               struct qp_error *err);

/* Writes t (with data) as .npy to fp. */
enum qp_status qp_fmt_npy_write(FILE *fp, const struct qp_tensor *t,
                                struct qp_error *err);

/* Writes t to path atomically (temporary name, then rename). */
enum qp_status qp_fmt_npy_save(const char *path, const struct qp_tensor *t,
                               struct qp_error *err);

/* The numpy descr for dtype ("<f4", "|i1", ...) or NULL when numpy has no
 * such dtype. */
const char *qp_fmt_npy_descr(enum qp_dtype dtype);

#endif
