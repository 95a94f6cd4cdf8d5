/* kernels/ref/requant-impl.h: what the requantization variants share
 * (internal to kernels/; users include kernels/requant.h).
 *
 * A row kernel requantizes n accumulators; element i has channel
 * (per_elem ? c + i : c), and out points at the row's first output element
 * (rq->out_dtype). SIMD row kernels handle whole vectors and hand the tail
 * to qp_rq_row_ref, so every variant shares the reference's scalar code. */
#ifndef QP_KERNELS_REF_REQUANT_IMPL_H
#define QP_KERNELS_REF_REQUANT_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/requant.h"

typedef void (*qp_rq_row_fn)(const struct qp_rq *rq, size_t c, bool per_elem,
                             const int32_t *acc, size_t n, void *out);

void qp_rq_row_ref(const struct qp_rq *rq, size_t c, bool per_elem,
                   const int32_t *acc, size_t n, void *out);

/* in * w / out per qp_rq_effective_scale after checking the three scales
 * are finite and > 0 (QP_E_INVAL naming weight index c). */
enum qp_status qp_rq_effective_checked(enum qp_rq_product p, float in_scale,
                                       float w_scale, size_t c,
                                       float out_scale, double *eff,
                                       struct qp_error *err);

/* Bytes per output element of rq->out_dtype (1 or 2). */
static inline size_t qp_rq_out_size(const struct qp_rq *rq)
{
    return rq->out_dtype == QP_DTYPE_I16 ? 2 : 1;
}

#if defined(__x86_64__) || defined(__i386__)
/* kernels/x86/requant-avx2.c, requant-avx512.c: flavors covered, and the
 * row kernels (only called for covered flavors on a CPU that has the ISA). */
bool qp_rq_avx2_covers(enum qp_rq_flavor f);
void qp_rq_row_avx2(const struct qp_rq *rq, size_t c, bool per_elem,
                    const int32_t *acc, size_t n, void *out);
bool qp_rq_avx512_covers(enum qp_rq_flavor f);
void qp_rq_row_avx512(const struct qp_rq *rq, size_t c, bool per_elem,
                      const int32_t *acc, size_t n, void *out);
#endif

#if defined(__aarch64__)
/* kernels/arm/requant-neon.c: the same for NEON (every aarch64 CPU). */
bool qp_rq_neon_covers(enum qp_rq_flavor f);
void qp_rq_row_neon(const struct qp_rq *rq, size_t c, bool per_elem,
                    const int32_t *acc, size_t n, void *out);
#endif

#endif
