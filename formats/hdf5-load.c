/* formats/hdf5-load.c: reading one dataset of an HDF5 dump into a tensor
 * (formats/hdf5-reader.h), after checking that the file can hold what it
 * declares. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/memlimit.h"
#include "core/size.h"
#include "formats/hdf5-reader.h"
#include "formats/hdf5.h"

/* Packs the unpacked values of a 2/3/4-bit dataset, checking their range. */
static enum qp_status pack(const char *what, const int32_t *v, size_t n,
                           struct qp_tensor *t, struct qp_error *err)
{
    const struct qp_dtype_traits *tr = qp_dtype_traits(t->dtype);
    for (size_t i = 0; i < n; i++) {
        if (v[i] < tr->min || v[i] > tr->max)
            return qp_fail(err, QP_E_FORMAT, "%s: value %d at element %zu is "
                           "outside %s", what, (int)v[i], i, tr->name);
        qp_packed_set(t->dtype, t->data, i, v[i]);
    }
    return QP_OK;
}

/* The most a filter can expand the bytes it stores: deflate 1032:1 (its
 * format's limit), n-bit packing 64:1 (one bit of a 64-bit value);
 * scale-offset (which stores a constant in no bits) and any other filter
 * libhdf5 has (a plugin) have no bound. */
static double filter_expansion(H5Z_filter_t id)
{
    switch (id) {
    case H5Z_FILTER_DEFLATE: return 1032;
    case H5Z_FILTER_SHUFFLE:
    case H5Z_FILTER_FLETCHER32: return 1;
    case H5Z_FILTER_NBIT:
    case H5Z_FILTER_SZIP: return 64;
    default: return INFINITY;
    }
}

/* A dataset's extent as dataset_shape reads it once. */
struct extent {
    int rank;
    hsize_t dims[H5S_MAX_RANK];
    size_t esize; /* bytes an element takes in the file (not 0) */
};

/* libhdf5 keeps a record of some hundred bytes for every chunk a read
 * touches, written or not, so a small file declaring millions of tiny
 * chunks costs gigabytes before a byte is read. A written chunk costs the
 * file at least an 8-byte address in its chunk index, and unwritten ones
 * are read as the fill value, of which check_storage allows 1 MiB: more
 * chunks than the file's size / 8, plus those 1 MiB hold, are refused. */
static enum qp_status check_chunks(const struct qp_h5_reader *r,
                                   const struct extent *x, int crank,
                                   const hsize_t *cdims, const char *what,
                                   struct qp_error *err)
{
    if (crank <= 0)
        return QP_OK;
    if (x->rank != crank)
        return qp_fail(err, QP_E_FORMAT, "%s: its chunks have %d dimensions, "
                       "its data %d", what, crank, x->rank);
    int rank = x->rank;
    const hsize_t *dims = x->dims;
    double chunks = 1, cbytes = (double)x->esize;
    for (int k = 0; k < rank; k++) {
        if (!cdims[k])
            return qp_fail(err, QP_E_FORMAT, "%s: a chunk dimension is 0", what);
        chunks *= (double)(dims[k] / cdims[k] + (dims[k] % cdims[k] != 0));
        cbytes *= (double)cdims[k];
    }
    double most = (double)(r->size / 8) + ceil((double)(1 << 20) / cbytes) + 1;
    if (chunks <= most)
        return QP_OK;
    return qp_fail(err, QP_E_FORMAT, "%s: declares %.0f chunks of %.0f bytes, "
                   "more than a file of %zu bytes can hold (at most %.0f)",
                   what, chunks, cbytes, (size_t)r->size, most);
}

/* Data that may not come from this file is not read: virtual datasets
 * (made of other datasets, in other files) and external raw storage (any
 * file the creator named). Otherwise the bytes the file stores for ds,
 * expanded as far as its filters can, plus 1 MiB of unwritten chunks read
 * as the fill value, must cover the nbytes it declares: a 1.4 KB file
 * declaring 8 GiB in unwritten or "compressed" chunks is refused before
 * anything is allocated. */
static enum qp_status check_storage(const struct qp_h5_reader *r, hid_t ds,
                                    const struct extent *x, size_t nbytes,
                                    const char *what, struct qp_error *err)
{
    hid_t dcpl = H5Dget_create_plist(ds);
    if (dcpl < 0)
        return qp_h5_fail(err, QP_E_FORMAT, what);
    H5D_layout_t layout = H5Pget_layout(dcpl);
    int external = H5Pget_external_count(dcpl), nf = H5Pget_nfilters(dcpl);
    hsize_t cdims[H5S_MAX_RANK];
    int crank = layout == H5D_CHUNKED ? H5Pget_chunk(dcpl, H5S_MAX_RANK, cdims)
                                      : 0;
    double ratio = 1;
    for (int k = 0; k < nf; k++) {
        unsigned flags, cd[8], conf;
        size_t ncd = 8;
        char fname[64];
        H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)k, &flags, &ncd, cd,
                                         sizeof fname, fname, &conf);
        /* a filter this libhdf5 does not have never runs: an optional one
         * is skipped, a required one fails the read */
        ratio *= id >= 0 && H5Zfilter_avail(id) <= 0 ? 1 : filter_expansion(id);
    }
    H5Pclose(dcpl);
    if (layout < 0 || external < 0 || nf < 0 || crank < 0)
        return qp_h5_fail(err, QP_E_FORMAT, what);
    if (layout == H5D_VIRTUAL)
        return qp_fail(err, QP_E_UNSUPPORTED, "%s: a virtual dataset (data "
                       "from other datasets or files) is not read", what);
    if (external > 0)
        return qp_fail(err, QP_E_UNSUPPORTED, "%s: data in external files is "
                       "not read", what);
    hsize_t stored = H5Dget_storage_size(ds);
    if (stored > r->size)
        stored = r->size;
    double can = stored ? (double)stored * ratio : 0;
    if ((double)nbytes <= can + (1 << 20))
        return check_chunks(r, x, crank, cdims, what, err);
    char how[64] = "";
    if (nf > 0 && isfinite(ratio))
        snprintf(how, sizeof how, ", which its filters expand %.0f:1 at most",
                 ratio);
    return qp_fail(err, QP_E_FORMAT, "%s: declares %zu bytes, but the file "
                   "stores %llu bytes of it%s", what, nbytes,
                   (unsigned long long)stored, how);
}

/* The shape of dataset ds, checked against the file's storage. */
static enum qp_status dataset_shape(const struct qp_h5_reader *r, hid_t ds,
                                    const char *what, int *ndim, int64_t *shape,
                                    struct qp_error *err)
{
    hid_t sp = ds < 0 ? H5I_INVALID_HID : H5Dget_space(ds);
    *ndim = sp < 0 ? -1 : H5Sget_simple_extent_ndims(sp);
    struct extent x = {*ndim, {0}, 0};
    enum qp_status st = *ndim < 0 || *ndim > QP_MAX_DIMS ||
                                H5Sget_simple_extent_dims(sp, x.dims, NULL) < 0
                            ? qp_h5_fail(err, QP_E_FORMAT, what)
                            : QP_OK;
    qp_h5_close(1, &sp);
    for (int k = 0; !st && k < *ndim; k++)
        shape[k] = (int64_t)x.dims[k];
    size_t numel = 0, fbytes;
    hid_t ft = st ? H5I_INVALID_HID : H5Dget_type(ds);
    x.esize = ft < 0 ? 0 : H5Tget_size(ft);
    qp_h5_close(1, &ft);
    if (!st && (st = qp_shape_check(what, QP_DTYPE_U8, *ndim, shape, &numel, err)))
        ; /* the element count overflows */
    else if (!st && !x.esize)
        st = qp_h5_fail(err, QP_E_FORMAT, what);
    else if (!st && qp_size_mul(numel, x.esize, &fbytes))
        st = qp_fail(err, QP_E_FORMAT, "%s: the data's byte size overflows",
                     what);
    else if (!st)
        st = check_storage(r, ds, &x, fbytes, what, err);
    return st;
}

/* A tensor over buf's memory, or with its own when buf is NULL. */
static enum qp_status new_tensor(const struct qp_h5_ref *ref, int ndim,
                                 const int64_t *shape, qp_h5_buf_fn buf,
                                 void *ctx, struct qp_tensor **out,
                                 struct qp_error *err)
{
    if (!buf)
        return qp_tensor_new(ref->path, ref->dtype, ndim, shape, out, err);
    size_t nbytes;
    enum qp_status st = qp_shape_check(ref->path, ref->dtype, ndim, shape,
                                       &nbytes, err);
    if (!st)
        st = qp_mem_check(ref->path, nbytes, err);
    void *data = st ? NULL : buf(ctx, nbytes);
    if (!st && !data)
        st = qp_fail(err, QP_E_NOMEM, "tensor '%s': cannot allocate %zu bytes",
                     ref->path, nbytes);
    return st ? st
              : qp_tensor_wrap(ref->path, ref->dtype, ndim, shape, data, nbytes,
                               NULL, out, err);
}

enum qp_status qp_h5_reader_load(struct qp_dump *d, struct qp_h5_reader *r,
                                 size_t i, qp_h5_buf_fn buf, void *ctx,
                                 struct qp_tensor **out, struct qp_error *err)
{
    qp_h5_quiet();
    *out = NULL;
    const struct qp_h5_ref *ref = &r->refs[i];
    char what[700];
    snprintf(what, sizeof what, "'%s': dataset '%s'", d->path, ref->path);
    hid_t ds = H5Dopen2(r->file, ref->path, H5P_DEFAULT);
    int ndim;
    int64_t shape[QP_MAX_DIMS];
    enum qp_status st = dataset_shape(r, ds, what, &ndim, shape, err);
    if (!st)
        st = new_tensor(ref, ndim, shape, buf, ctx, out, err);
    bool packed = !st && qp_dtype_is_packed(ref->dtype);
    size_t n = st ? 0 : qp_tensor_numel(*out);
    if (packed)
        st = qp_mem_check(what, n * sizeof(int32_t), err);
    int32_t *tmp = packed && !st ? malloc(n * sizeof *tmp + 1) : NULL;
    hid_t mem = packed ? H5Tcopy(H5T_NATIVE_INT32) : qp_h5_type(ref->dtype);
    if (!st && (mem < 0 || (packed && !tmp)))
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    if (!st && n && H5Dread(ds, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                            packed ? (void *)tmp : (*out)->data) < 0)
        st = qp_h5_fail(err, QP_E_FORMAT, what);
    if (!st && packed)
        st = pack(what, tmp, n, *out, err);
    free(tmp);
    qp_h5_close(2, (hid_t[]){mem, ds});
    if (st) {
        qp_tensor_free(*out);
        *out = NULL;
    }
    return st;
}
