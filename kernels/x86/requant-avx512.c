/* kernels/x86/requant-avx512.c: avx512 requantization (placeholder: no flavor yet). */
#include "kernels/ref/requant-impl.h"

#if defined(__x86_64__) || defined(__i386__)
bool qp_rq_avx512_covers(enum qp_rq_flavor f)
{
    (void)f;
    return false;
}

void qp_rq_row_avx512(const struct qp_rq *rq, size_t c, bool per_elem,
                    const int32_t *acc, size_t n, void *out)
{
    qp_rq_row_ref(rq, c, per_elem, acc, n, out);
}
#endif
