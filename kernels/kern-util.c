/* kernels/kern-util.c: helpers shared by the integer kernels
 * (kernels/kern-util.h). */
#include "kernels/kern-util.h"

#include <stdlib.h>
#include <string.h>

void qp_kern_requant_rows(const struct qp_rq *rq, const int32_t *acc,
                          size_t lda, size_t rows, size_t cols, void *out,
                          size_t ldo)
{
    size_t es = qp_kern_out_size(rq);
    if (rq && lda == cols && ldo == cols) {
        qp_rq_apply_i32(rq, acc, rows, cols, out);
        return;
    }
    for (size_t r = 0; r < rows; r++) {
        char *o = (char *)out + r * ldo * es;
        if (rq)
            qp_rq_apply_i32(rq, acc + r * lda, 1, cols, o);
        else
            memcpy(o, acc + r * lda, cols * sizeof(int32_t));
    }
}

static bool is_8bit(enum qp_dtype dt)
{
    return dt == QP_DTYPE_I8 || dt == QP_DTYPE_U8;
}

enum qp_status qp_kern_check_quant(const char *what, enum qp_dtype in_dtype,
                                   enum qp_dtype w_dtype, const int32_t *w_zp,
                                   size_t w_zps, size_t channels,
                                   const struct qp_rq *rq,
                                   enum qp_kern_isa isa, struct qp_error *err)
{
    if (!is_8bit(in_dtype) || !is_8bit(w_dtype))
        return qp_fail(err, QP_E_INVAL, "%s: input and weights must be int8 "
                       "or uint8, not %s and %s", what,
                       qp_dtype_name(in_dtype), qp_dtype_name(w_dtype));
    if (w_zp && w_zps != 1 && w_zps != channels)
        return qp_fail(err, QP_E_INVAL, "%s: %zu weight zero points for %zu "
                       "channels (need 1 or %zu)", what, w_zps, channels,
                       channels);
    if (rq) {
        if (rq->channels != 1 && rq->channels != channels)
            return qp_fail(err, QP_E_INVAL, "%s: requantization has %zu "
                           "channels for %zu outputs (need 1 or %zu)", what,
                           rq->channels, channels, channels);
        if (qp_rq_flavor_acc64(rq->flavor))
            return qp_fail(err, QP_E_UNSUPPORTED, "%s: flavor '%s' needs "
                           "int64 accumulators; 8-bit kernels have int32",
                           what, qp_rq_flavor_name(rq->flavor));
        enum qp_dtype o = rq->out_dtype;
        if (o != QP_DTYPE_I8 && o != QP_DTYPE_U8 && o != QP_DTYPE_I16)
            return qp_fail(err, QP_E_INVAL, "%s: output dtype %s is not "
                           "int8, uint8 or int16", what, qp_dtype_name(o));
    }
    if ((unsigned)isa >= QP_KERN_ISA_COUNT)
        return qp_fail(err, QP_E_INVAL, "%s: unknown instruction set %d",
                       what, (int)isa);
    return QP_OK;
}

int32_t *qp_kern_dup_i32(const int32_t *src, size_t n)
{
    if (!src)
        return NULL;
    int32_t *d = malloc(n * sizeof *d);
    if (d)
        memcpy(d, src, n * sizeof *d);
    return d;
}

int32_t *qp_kern_expand_zp(const int32_t *zp, size_t count, size_t n)
{
    int32_t *d = malloc(n * sizeof *d);
    if (d)
        for (size_t j = 0; j < n; j++)
            d[j] = qp_kern_zp(zp, count, j);
    return d;
}
