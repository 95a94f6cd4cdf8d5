/* kernels/kern-util.h: helpers shared by the integer kernels (the
 * prepare checks, zero-point arrays, requantized rows); the element loads
 * and stores they share with the references are in kernels/ref/ref-util.h.
 * Internal to kernels/. */
#ifndef QP_KERNELS_KERN_UTIL_H
#define QP_KERNELS_KERN_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/status.h"
#include "kernels/dispatch.h"
#include "kernels/ref/ref-util.h"
#include "kernels/requant.h"

/* Requantizes rows x cols int32 accumulators (row stride lda) into out
 * (row stride ldo elements), channel = column; int32 copy without rq. */
void qp_kern_requant_rows(const struct qp_rq *rq, const int32_t *acc,
                          size_t lda, size_t rows, size_t cols, void *out,
                          size_t ldo);

/* The checks every integer kernel's prepare makes, messages prefixed by
 * `what`: both operand dtypes int8 or uint8, 0, 1 or `channels` weight
 * zero points, rq (if any) with 1 or `channels` channels, an int32
 * flavor and an 8- or 16-bit output, and a known isa. */
enum qp_status qp_kern_check_quant(const char *what, enum qp_dtype in_dtype,
                                   enum qp_dtype w_dtype, const int32_t *w_zp,
                                   size_t w_zps, size_t channels,
                                   const struct qp_rq *rq,
                                   enum qp_kern_isa isa, struct qp_error *err);

/* A copy of n int32 values (NULL when src is NULL or on no memory: check
 * src). */
int32_t *qp_kern_dup_i32(const int32_t *src, size_t n);

/* The zero points expanded to n values (0, 1 or n given). */
int32_t *qp_kern_expand_zp(const int32_t *zp, size_t count, size_t n);

#endif
