/* formats/hdf5.h: HDF5 dump files through libhdf5 (serial), the only
 * module that calls it.
 *
 * As a dump (formats/dump.h, QP_DUMP_HDF5): one dataset per tensor. A name
 * with '/' becomes nested groups ("a/b" is dataset b in group a) and the
 * reader walks groups recursively, rebuilding "a/b"; a name that cannot be
 * a path (empty or "." components, a clash between a group and a dataset)
 * is stored at the root under an escaped name with the original in a
 * string attribute "name". Datasets list in creation order, which the
 * writer tracks on every group, or in name order in files that lack it.
 *
 * Types: f32/f64 IEEE, integers of 8..64 bits, bool as h5py's enum
 * {FALSE, TRUE}, f16/bf16/float8 as HDF5 floats of those bit layouts (h5py
 * reads f16 natively). Packed 2/3/4-bit tensors are stored unpacked, one
 * value per i8/u8 element, with a string attribute "dtype" ("i4", ...).
 * Quantization parameters are dataset attributes: "scale" (f32 array, the
 * scales in the order of core/tensor.h), "zero_point" (i32 array, when
 * not all zero), "axis" (i32, -1 per tensor) and "block_size" (i64, 0
 * unless blocked); "layout" is a string attribute. The dump's metadata
 * are string attributes of the root group. Chunked and compressed
 * datasets written by other tools read like any other; their attributes
 * "name", "layout" and "dtype" are ignored unless they are strings (and
 * "dtype" unless it names a packed type), as those tools may mean other
 * things by them.
 *
 * HDF5's own error printing is turned off; its failures become messages
 * naming the file and dataset. Files are read by a worker process
 * (formats/hdf5-worker.c): libhdf5 1.10 crashes and hangs on hostile
 * files, and such a file then fails with "the HDF5 library crashed ...:
 * the file is malformed". Before a dataset is read, the bytes the file
 * stores for it (expanded as far as its filters can) must cover what it
 * declares, and data in other files (external storage, virtual datasets)
 * is not read. The writer creates the file under a temporary name
 * (core/outfile.h) with the 1.8 file format, so that attributes over 64
 * KiB (many block scales) can be stored. */
#ifndef QP_FORMATS_HDF5_H
#define QP_FORMATS_HDF5_H

#include <hdf5.h>
#include <stddef.h>

#include "core/dtype.h"
#include "core/status.h"

/* Turns off HDF5's printing of its error stack (for this thread). */
void qp_h5_quiet(void);

/* Fails with status and "<prefix>: <HDF5's innermost error message>", or
 * "<prefix>: <strerror>" when a system call failed (ENOSPC, EIO): never
 * HDF5's own record of it, which names temporary files and buffers. */
enum qp_status qp_h5_fail(struct qp_error *err, enum qp_status status,
                          const char *prefix);

/* Closes every valid identifier of ids[0..n) (of any kind). */
void qp_h5_close(size_t n, const hid_t *ids);

/* The HDF5 type of dtype as qprobe stores it (packed types: their i8/u8
 * carrier), little-endian; the caller closes it. H5I_INVALID_HID on
 * failure. */
hid_t qp_h5_type(enum qp_dtype dtype);

/* Opens an HDF5 file image (size bytes at image, copied) as a dump read
 * as QP_DUMP_HDF5 reads a file, name standing for the path in messages:
 * the same reading code without a file (tests, fuzzing). *out as
 * qp_dump_open gives it. */
struct qp_dump;
enum qp_status qp_h5_open_image(const char *name, const void *image,
                                size_t size, struct qp_dump **out,
                                struct qp_error *err);

/* Writes a scalar variable-length UTF-8 string attribute. */
enum qp_status qp_h5_put_str_attr(hid_t obj, const char *name, const char *value,
                                  const char *what, struct qp_error *err);

#endif
