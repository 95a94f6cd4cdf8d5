/* formats/hdf5-reader.h: the HDF5 dump reader's parts, shared by
 * formats/hdf5.c (listing), formats/hdf5-load.c (tensors) and
 * formats/hdf5-worker.c (the dump backend, which runs them in this process
 * for file images and in a worker process for files). Not a public API. */
#ifndef QP_FORMATS_HDF5_READER_H
#define QP_FORMATS_HDF5_READER_H

#include <hdf5.h>

#include "formats/dump.h"

struct qp_h5_ref { /* a dataset, by backing index */
    char *path;          /* HDF5 path, owned */
    enum qp_dtype dtype; /* logical dtype (packed: unpacked in the file) */
};

struct qp_h5_reader {
    hid_t file;
    hsize_t size;        /* bytes of the file (or image) */
    const void *image;   /* a file image to open instead of d->path */
    size_t image_size;
    struct qp_h5_ref *refs;
    size_t n, cap;
    haddr_t *groups;     /* groups visited, against hard-link cycles */
    size_t ngroups, capgroups;
};

/* Opens d->path (or r->image, which r->file then owns a copy of) with
 * libhdf5 in this process and lists it into d: entries with their
 * quantization parameters and layouts, and the metadata. r is zeroed by
 * the caller but for image; release with qp_h5_reader_release. Errors
 * name d->path. */
enum qp_status qp_h5_reader_open(struct qp_dump *d, struct qp_h5_reader *r,
                                 struct qp_error *err);

void qp_h5_reader_release(struct qp_h5_reader *r);

/* Memory for a tensor's data of nbytes (the worker's shared memory); NULL
 * when it cannot be had. */
typedef void *(*qp_h5_buf_fn)(void *ctx, size_t nbytes);

/* Reads dataset i of r (an index into d's backing entries) into *out: a
 * new tensor named by its dataset path, whose data is buf(ctx, nbytes)
 * (borrowed: the caller releases it after freeing the tensor), or owned
 * when buf is NULL. Refuses what the file cannot hold (see
 * formats/hdf5-load.c) before allocating. */
enum qp_status qp_h5_reader_load(struct qp_dump *d, struct qp_h5_reader *r,
                                 size_t i, qp_h5_buf_fn buf, void *ctx,
                                 struct qp_tensor **out, struct qp_error *err);

#endif
