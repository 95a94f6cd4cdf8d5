/* kernels/add-s8.c: the prepared quantized add, by tables and the
 * dispatched requantization (kernels/add-s8.h). */
#include "kernels/add-s8.h"

#include <string.h>

#include "kernels/kern-util.h"

void qp_add_s8_release(struct qp_add_s8 *a)
{
    qp_rq_release(&a->rq);
    memset(a, 0, sizeof *a);
}

enum qp_status qp_add_s8_prepare(struct qp_add_s8 *a,
                                 const struct qp_add_s8_params *p,
                                 struct qp_error *err)
{
    memset(a, 0, sizeof *a);
    enum qp_status st = qp_add_s8_check(p, err);
    if (!st)
        st = qp_rq_prepare_fixed(&a->rq, p->flavor, &p->out_multiplier,
                                 &p->out_shift, 1, p->out_zero_point, p->dtype,
                                 p->act_min, p->act_max, err);
    if (st)
        return st;
    a->p = *p;
    for (int b = 0; b < 256; b++) {
        uint8_t byte = (uint8_t)b;
        int32_t x = qp_kern_load8(p->dtype, &byte, 0);
        a->t1[b] = qp_add_s8_rescale(p, x, p->zero_point1, p->multiplier1,
                                     p->shift1);
        a->t2[b] = qp_add_s8_rescale(p, x, p->zero_point2, p->multiplier2,
                                     p->shift2);
    }
    return QP_OK;
}

void qp_add_s8_run(const struct qp_add_s8 *a, const void *x1, const void *x2,
                   size_t n, size_t n2, void *out)
{
    const uint8_t *u1 = x1, *u2 = x2;
    int32_t sum[256];
    for (size_t i0 = 0; i0 < n; i0 += 256) {
        size_t m = n - i0 < 256 ? n - i0 : 256;
        if (n2 == n)
            for (size_t i = 0; i < m; i++)
                sum[i] = (int32_t)((uint32_t)a->t1[u1[i0 + i]] +
                                   (uint32_t)a->t2[u2[i0 + i]]);
        else
            for (size_t i = 0; i < m; i++)
                sum[i] = (int32_t)((uint32_t)a->t1[u1[i0 + i]] +
                                   (uint32_t)a->t2[u2[(i0 + i) % n2]]);
        qp_rq_apply_i32(&a->rq, sum, 1, m, (uint8_t *)out + i0);
    }
}
