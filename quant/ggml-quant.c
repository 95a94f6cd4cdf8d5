#include "quant/ggml-quant.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/half.h"
#include "core/size.h"
#include "quant/ggml-kquant.h"

_Static_assert(QP_GGML_MAX_DIMS == QP_MAX_DIMS, "ggml data holds any tensor");

/* (int8_t)v as ggml's x86-64 build computes it: a truncating cvttss2si,
 * whose result for NaN and out-of-range values is INT32_MIN, of which the
 * int8 keeps the low byte (0). C leaves those cases undefined, hence the
 * explicit test; in range it is C's truncation. */
static int8_t to_i8(float v)
{
    if (!(v > -2147483648.0f && v < 2147483648.0f))
        return 0;
    return (int8_t)(uint8_t)(uint32_t)(int32_t)v;
}

static int min_int(int a, int b) { return a < b ? a : b; }

void qp_ggml_quantize_row_q8_0_ref(const float *x, void *blocks, int64_t n)
{
    unsigned char *p = blocks;
    for (int64_t i = 0; i < n / QP_QK8_0; i++) {
        struct qp_block_q8_0 b;
        float amax = 0.0f;
        for (int j = 0; j < QP_QK8_0; j++) {
            const float v = fabsf(x[i * QP_QK8_0 + j]);
            amax = amax > v ? amax : v; /* ggml's MAX(amax, v) */
        }
        const float d = amax / ((1 << 7) - 1);
        const float id = d ? 1.0f / d : 0.0f;
        b.d = qp_f32_to_f16(d);
        for (int j = 0; j < QP_QK8_0; j++)
            b.qs[j] = to_i8(roundf(x[i * QP_QK8_0 + j] * id));
        memcpy(p + i * sizeof b, &b, sizeof b);
    }
}

/* The value of largest magnitude of x[n], signed; the first one on ties. */
static float signed_absmax(const float *x, int n)
{
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; j++)
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    return max;
}

/* The symmetric legacy types (q4_0: half 8, q5_0: half 16): d = max / -half
 * in fp16 into *d16, and level j = min(2 half - 1, (int8)(x * id + half +
 * 0.5)) into q[32]. */
static void sym_levels(const float *x, int half, uint16_t *d16, uint8_t *q)
{
    const float d = signed_absmax(x, 32) / -half;
    const float id = d ? 1.0f / d : 0.0f;
    *d16 = qp_f32_to_f16(d);
    const float bias = half + 0.5f; /* 8.5f, 16.5f: exact */
    for (int j = 0; j < 32; j++)
        q[j] = (uint8_t)min_int(2 * half - 1, to_i8(x[j] * id + bias));
}

void qp_ggml_quantize_row_q4_0_ref(const float *x, void *blocks, int64_t n)
{
    unsigned char *p = blocks;
    for (int64_t i = 0; i < n / QP_QK4_0; i++, x += QP_QK4_0) {
        struct qp_block_q4_0 b;
        uint8_t q[32];
        sym_levels(x, 8, &b.d, q);
        for (int j = 0; j < 16; j++)
            b.qs[j] = (uint8_t)(q[j] | (q[j + 16] << 4));
        memcpy(p + i * sizeof b, &b, sizeof b);
    }
}

void qp_ggml_quantize_row_q4_1_ref(const float *x, void *blocks, int64_t n)
{
    unsigned char *p = blocks;
    const int qk = QP_QK4_1;
    for (int64_t i = 0; i < n / qk; i++, x += qk) {
        struct qp_block_q4_1 b;
        float min = FLT_MAX, max = -FLT_MAX;
        for (int j = 0; j < qk; j++) {
            if (x[j] < min)
                min = x[j];
            if (x[j] > max)
                max = x[j];
        }
        const float d = (max - min) / ((1 << 4) - 1);
        const float id = d ? 1.0f / d : 0.0f;
        b.d = qp_f32_to_f16(d);
        b.m = qp_f32_to_f16(min);
        for (int j = 0; j < qk / 2; j++) {
            const float x0 = (x[j] - min) * id;
            const float x1 = (x[qk / 2 + j] - min) * id;
            const uint8_t xi0 = (uint8_t)min_int(15, to_i8(x0 + 0.5f));
            const uint8_t xi1 = (uint8_t)min_int(15, to_i8(x1 + 0.5f));
            b.qs[j] = (uint8_t)(xi0 | (xi1 << 4));
        }
        memcpy(p + i * sizeof b, &b, sizeof b);
    }
}

void qp_ggml_quantize_row_q5_0_ref(const float *x, void *blocks, int64_t n)
{
    unsigned char *p = blocks;
    for (int64_t i = 0; i < n / QP_QK5_0; i++, x += QP_QK5_0) {
        struct qp_block_q5_0 b;
        uint8_t q[32];
        sym_levels(x, 16, &b.d, q);
        uint32_t qh = 0;
        for (int j = 0; j < 16; j++) {
            b.qs[j] = (uint8_t)((q[j] & 0x0F) | ((q[j + 16] & 0x0F) << 4));
            qh |= ((q[j] & 0x10u) >> 4) << j;
            qh |= ((q[j + 16] & 0x10u) >> 4) << (j + 16);
        }
        memcpy(b.qh, &qh, sizeof qh);
        memcpy(p + i * sizeof b, &b, sizeof b);
    }
}

bool qp_ggml_quantize_row(enum qp_ggml_type t, const float *x, void *blocks,
                          int64_t n)
{
    uint16_t h;
    switch (t) {
    case QP_GGML_Q8_0: qp_ggml_quantize_row_q8_0_ref(x, blocks, n); return true;
    case QP_GGML_Q4_0: qp_ggml_quantize_row_q4_0_ref(x, blocks, n); return true;
    case QP_GGML_Q4_1: qp_ggml_quantize_row_q4_1_ref(x, blocks, n); return true;
    case QP_GGML_Q5_0: qp_ggml_quantize_row_q5_0_ref(x, blocks, n); return true;
    case QP_GGML_Q4_K: qp_ggml_quantize_row_q4_K_ref(x, blocks, n); return true;
    case QP_GGML_Q6_K: qp_ggml_quantize_row_q6_K_ref(x, blocks, n); return true;
    case QP_GGML_F32:
        memcpy(blocks, x, (size_t)n * sizeof *x);
        return true;
    case QP_GGML_F16:
    case QP_GGML_BF16:
        for (int64_t i = 0; i < n; i++) {
            h = t == QP_GGML_F16 ? qp_f32_to_f16(x[i]) : qp_f32_to_bf16(x[i]);
            memcpy((unsigned char *)blocks + 2 * i, &h, 2);
        }
        return true;
    default:
        return false;
    }
}

bool qp_ggml_type_from_scheme(const char *s, size_t len, enum qp_ggml_type *out)
{
    for (int t = 0; t < QP_GGML_TYPE_COUNT; t++) {
        const char *name = qp_ggml_type_info((enum qp_ggml_type)t)->scheme;
        if (name && strlen(name) == len && !memcmp(name, s, len)) {
            *out = (enum qp_ggml_type)t;
            return true;
        }
    }
    return false;
}

enum qp_ggml_type qp_ggml_fallback(enum qp_ggml_type t, int64_t row)
{
    if (row % qp_ggml_type_info(t)->block == 0)
        return t;
    enum qp_ggml_type f = t == QP_GGML_Q4_K ? QP_GGML_Q5_0
                        : t == QP_GGML_Q6_K ? QP_GGML_Q8_0 : QP_GGML_F16;
    return row % qp_ggml_type_info(f)->block == 0 ? f : QP_GGML_F16;
}

enum qp_ggml_type qp_ggml_nearest(const struct qp_wscheme *ws)
{
    if (ws->family == QP_WFAMILY_GGML)
        return ws->ggml;
    unsigned b = ws->f.bits;
    if (b >= 16)
        return QP_GGML_F16;
    if (b >= 8)
        return QP_GGML_Q8_0;
    if (b >= 6)
        return QP_GGML_Q6_K;
    if (b == 5)
        return QP_GGML_Q5_0;
    if (b == 4 && !ws->f.asym)
        return QP_GGML_Q4_0;
    if (b == 4 && ws->gran == QP_GRAN_GROUP && ws->group < QP_QK_K)
        return QP_GGML_Q4_1;
    return QP_GGML_Q4_K;
}

enum qp_status qp_ggml_check_row(enum qp_ggml_type t, int64_t row, int axis,
                                 const char *what, struct qp_error *err)
{
    const struct qp_ggml_type_info *ti = qp_ggml_type_info(t);
    if (row > 0 && row % ti->block == 0)
        return QP_OK;
    enum qp_ggml_type f = qp_ggml_fallback(t, row);
    const struct qp_ggml_type_info *fi = qp_ggml_type_info(f);
    char use[96];
    if (fi->scheme)
        snprintf(use, sizeof use, "llama.cpp falls back to %s (use it, or "
                 "fp32 in a recipe)", fi->scheme);
    else
        snprintf(use, sizeof use, "llama.cpp would store it as %s (fp32 in "
                 "a recipe)", fi->name);
    return qp_fail(err, QP_E_SHAPE, "%s: rows of %lld values (axis %d) are "
                   "not a multiple of %s's block of %lld; %s", what,
                   (long long)row, axis, ti->name, (long long)ti->block, use);
}

/* Row length and row count of a weight under layout l: rows run along the
 * input axis (axis -1 for a scalar: one row of one value). */
static void weight_rows(int ndim, const int64_t *shape, enum qp_wlayout l,
                        int *axis, int64_t *row, size_t *inner)
{
    int oa;
    qp_wlayout_axes(l, ndim, &oa, axis);
    *row = *axis >= 0 ? shape[*axis] : 1;
    *inner = 1;
    for (int k = *axis + 1; k < ndim; k++)
        *inner *= (size_t)shape[k];
}

bool qp_ggml_weight_bytes(enum qp_ggml_type t, int ndim, const int64_t *shape,
                          enum qp_wlayout l, size_t *out)
{
    int axis;
    int64_t row;
    size_t inner, numel = 1;
    weight_rows(ndim, shape, l, &axis, &row, &inner);
    for (int k = 0; k < ndim; k++)
        if (qp_size_mul(numel, (size_t)shape[k], &numel))
            return false;
    if (row <= 0 || row % qp_ggml_type_info(t)->block)
        return false;
    return qp_ggml_row_bytes(t, (int64_t)numel, out);
}

/* ---- tensors -------------------------------------------------------------- */

/* Byte offsets of the fp16 fields of t's block (-1 ends the list). */
static const int *fp16_fields(enum qp_ggml_type t)
{
    static const int at0[] = {0, -1}, at02[] = {0, 2, -1},
                     q6k[] = {offsetof(struct qp_block_q6_K, d), -1}, none[] = {-1};
    switch (t) {
    case QP_GGML_Q8_0: case QP_GGML_Q4_0: case QP_GGML_Q5_0: return at0;
    case QP_GGML_Q4_1: case QP_GGML_Q4_K: return at02;
    case QP_GGML_Q6_K: return q6k;
    case QP_GGML_F16: return at0;
    default: return none;
    }
}

/* Refuses blocks whose fp16 fields overflowed (ggml would store inf):
 * index of the first such block of data[nblocks], or -1. */
static int64_t overflowed_block(enum qp_ggml_type t, const unsigned char *data,
                                int64_t nblocks)
{
    const int *f = fp16_fields(t);
    size_t bb = qp_ggml_type_info(t)->block_bytes;
    for (int64_t b = 0; f[0] >= 0 && b < nblocks; b++)
        for (const int *o = f; *o >= 0; o++) {
            uint16_t h;
            memcpy(&h, data + (size_t)b * bb + (size_t)*o, 2);
            if ((h & 0x7c00) == 0x7c00)
                return b;
        }
    return -1;
}

/* f32 values of w (borrowed when w is f32, else converted into *owned),
 * all finite. */
static enum qp_status finite_f32(const struct qp_tensor *w, const float **x,
                                 float **owned, struct qp_error *err)
{
    *owned = NULL;
    if (!qp_dtype_traits(w->dtype)->is_float)
        return qp_fail(err, QP_E_UNSUPPORTED, "tensor '%s': only float tensors "
                       "can be quantized, this one is %s", w->name,
                       qp_dtype_name(w->dtype));
    if (!w->data)
        return qp_fail(err, QP_E_INVAL, "tensor '%s': no data", w->name);
    size_t n = qp_tensor_numel(w);
    if (w->dtype == QP_DTYPE_F32) {
        *x = w->data;
    } else {
        if (!(*owned = malloc(n * sizeof **owned + 1)))
            return qp_fail(err, QP_E_NOMEM, "tensor '%s': out of memory",
                           w->name);
        qp_tensor_read_f32(w, 0, n, *owned);
        *x = *owned;
    }
    for (size_t i = 0; i < n; i++)
        if (!isfinite((*x)[i])) {
            free(*owned);
            *owned = NULL;
            return qp_fail(err, QP_E_INVAL, "tensor '%s': element %zu is %g; "
                           "ggml types hold finite values only", w->name, i,
                           (double)(*x)[i]);
        }
    return QP_OK;
}

/* Quantizes nrows rows of `row` contiguous values of x into data, and
 * refuses an overflowed fp16 field naming the tensor and the row (rows
 * are numbered from first). */
static enum qp_status quantize_rows(enum qp_ggml_type t, const float *x,
                                    size_t nrows, int64_t row, void *data,
                                    const char *name, size_t first,
                                    struct qp_error *err)
{
    size_t rb;
    qp_ggml_row_bytes(t, row, &rb);
    int64_t nblk = row / qp_ggml_type_info(t)->block;
    for (size_t r = 0; r < nrows; r++) {
        unsigned char *out = (unsigned char *)data + r * rb;
        if (!qp_ggml_quantize_row(t, x + r * (size_t)row, out, row))
            return qp_fail(err, QP_E_UNSUPPORTED, "tensor '%s': %s is not a "
                           "type qprobe quantizes to", name,
                           qp_ggml_type_info(t)->name);
        int64_t b = overflowed_block(t, out, nblk);
        if (b >= 0 && qp_ggml_type_info(t)->block == 1)
            return qp_fail(err, QP_E_INVAL, "tensor '%s': row %zu, element "
                           "%lld: %g is beyond the range of %s", name,
                           first + r, (long long)b, (double)x[r * (size_t)row +
                           (size_t)b], qp_ggml_type_info(t)->name);
        if (b >= 0)
            return qp_fail(err, QP_E_INVAL, "tensor '%s': row %zu, block "
                           "%lld: values too large for %s (its fp16 scale "
                           "overflows)", name, first + r, (long long)b,
                           qp_ggml_type_info(t)->name);
    }
    return QP_OK;
}

enum qp_status qp_ggml_quantize_tensor(const struct qp_tensor *w,
                                       enum qp_ggml_type t,
                                       struct qp_ggml_data *out,
                                       struct qp_error *err)
{
    memset(out, 0, sizeof *out);
    const float *x;
    float *owned;
    enum qp_status st = finite_f32(w, &x, &owned, err);
    if (st)
        return st;
    int64_t row = w->ndim ? w->shape[w->ndim - 1] : 1;
    size_t numel = qp_tensor_numel(w), nrows = row ? numel / (size_t)row : 0;
    char what[300];
    snprintf(what, sizeof what, "tensor '%s'", w->name);
    size_t nbytes;
    if ((st = qp_ggml_check_row(t, row, w->ndim - 1, what, err)))
        goto done;
    if (!qp_ggml_row_bytes(t, (int64_t)numel, &nbytes)) {
        st = qp_fail(err, QP_E_OVERFLOW, "%s: too large", what);
        goto done;
    }
    out->type = t;
    out->ndim = w->ndim ? w->ndim : 1;
    for (int k = 0; k < out->ndim; k++)
        out->ne[k] = w->ndim ? w->shape[w->ndim - 1 - k] : 1;
    out->nbytes = nbytes;
    if (!(out->data = malloc(nbytes + 1))) {
        st = qp_fail(err, QP_E_NOMEM, "%s: out of memory", what);
        goto done;
    }
    if ((st = quantize_rows(t, x, nrows, row, out->data, w->name, 0, err))) {
        free(out->data);
        memset(out, 0, sizeof *out);
    }
done:
    free(owned);
    return st;
}

enum qp_status qp_ggml_fake_quantize(const struct qp_tensor *w,
                                     enum qp_ggml_type t, enum qp_wlayout l,
                                     struct qp_tensor **out,
                                     struct qp_error *err)
{
    *out = NULL;
    const float *x;
    float *owned, *rowbuf = NULL;
    void *blk = NULL;
    struct qp_tensor *y = NULL;
    enum qp_status st = finite_f32(w, &x, &owned, err);
    if (st)
        return st;
    int axis;
    int64_t row;
    size_t inner, rb;
    weight_rows(w->ndim, w->shape, l, &axis, &row, &inner);
    char what[300];
    snprintf(what, sizeof what, "tensor '%s'", w->name);
    if ((st = qp_ggml_check_row(t, row, axis, what, err)))
        goto done;
    qp_ggml_row_bytes(t, row, &rb);
    rowbuf = malloc((size_t)row * sizeof *rowbuf);
    blk = malloc(rb);
    if (!rowbuf || !blk) {
        st = qp_fail(err, QP_E_NOMEM, "%s: out of memory", what);
        goto done;
    }
    if ((st = qp_tensor_new(w->name, QP_DTYPE_F32, w->ndim, w->shape, &y, err)))
        goto done;
    /* [outer, row, inner]: each (outer, inner) position is one ggml row of
     * stride inner, gathered, quantized, dequantized and scattered back */
    float *yd = y->data;
    size_t outer = qp_tensor_numel(w) / ((size_t)row * inner);
    for (size_t o = 0; o < outer && !st; o++)
        for (size_t in = 0; in < inner && !st; in++) {
            size_t base = o * (size_t)row * inner + in;
            const float *src = x + base;
            if (inner != 1) {
                for (int64_t k = 0; k < row; k++)
                    rowbuf[k] = x[base + (size_t)k * inner];
                src = rowbuf;
            }
            st = quantize_rows(t, src, 1, row, blk, w->name, o * inner + in, err);
            if (!st)
                qp_ggml_dequantize_row(t, blk, rowbuf, row);
            for (int64_t k = 0; !st && k < row; k++)
                yd[base + (size_t)k * inner] = rowbuf[k];
        }
    if (!st && w->layout)
        st = qp_tensor_set_layout(y, w->layout, err);
    if (!st) {
        *out = y;
        y = NULL;
    }
done:
    qp_tensor_free(y);
    free(owned);
    free(rowbuf);
    free(blk);
    return st;
}
