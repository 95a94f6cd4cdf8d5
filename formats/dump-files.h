/* formats/dump-files.h: dumps made of one file per tensor, for formats
 * whose files hold a single tensor (.npy, .pb).
 *
 * Reading: the format supplies a function reading one file; these
 * functions are the rest of its struct qp_dump_ops. A directory lists the
 * files ending in the extension (qp_dump_scan_dir: ".qprobe-order" first,
 * then natural order), each named by the file reader, which receives the
 * file's path relative to the directory without the extension (%XX escapes
 * decoded) as the fallback name; companions are attached. A single file is
 * a one-tensor dump.
 *
 * Writing: the format supplies a function writing one tensor to a stream;
 * these functions are the rest of its struct qp_dump_writer_ops:
 *
 *   directory  : a temporary directory renamed into place on commit, one
 *                file per tensor named after it (qp_dump_escape_name),
 *                ".qprobe-order" listing the files in the order they were
 *                added (qp_dump_scan_dir reads it back), the NAME.scale
 *                / NAME.zero_point companions of quantized integer tensors
 *                as files of their own, and the dump's metadata in
 *                ".qprobe-meta.json" (read back by qp_dump_files_read);
 *   single file: exactly one tensor, without quantization parameters,
 *                written to a temporary name and renamed on commit. */
#ifndef QP_FORMATS_DUMP_FILES_H
#define QP_FORMATS_DUMP_FILES_H

#include <stdbool.h>
#include <stdio.h>

#include "formats/dump.h"

/* Reads the file at path: a descriptor with header_only, else the whole
 * tensor. name is the fallback name (NULL for a single-file dump). */
typedef enum qp_status (*qp_dump_file_reader)(const char *path,
                                              const char *name,
                                              bool header_only,
                                              struct qp_tensor **out,
                                              struct qp_error *err);

/* For a reader's open: lists d->path, a directory (dir) of files ending in
 * ext ("pb") or a single file, read by read. */
enum qp_status qp_dump_files_read(struct qp_dump *d, bool dir, const char *ext,
                                  qp_dump_file_reader read,
                                  struct qp_error *err);

/* The load and close of struct qp_dump_ops. */
enum qp_status qp_dump_files_load(struct qp_dump *d, size_t i,
                                  struct qp_tensor **out, struct qp_error *err);
void qp_dump_files_close(struct qp_dump *d);

/* Writes one tensor (without quantization parameters) to fp. */
typedef enum qp_status (*qp_dump_file_writer)(FILE *fp,
                                              const struct qp_tensor *t,
                                              struct qp_error *err);

/* For a writer's open: sets w->impl up for a directory (dir) or a single
 * file at w->path whose files end in ext ("pb") and are written by write. */
enum qp_status qp_dump_files_open(struct qp_dump_writer *w, bool dir,
                                  const char *ext, qp_dump_file_writer write,
                                  struct qp_error *err);

/* The add, commit and abort of struct qp_dump_writer_ops. */
enum qp_status qp_dump_files_add(struct qp_dump_writer *w,
                                 const struct qp_tensor *t,
                                 struct qp_error *err);
enum qp_status qp_dump_files_commit(struct qp_dump_writer *w,
                                    struct qp_error *err);
void qp_dump_files_abort(struct qp_dump_writer *w);

#endif
