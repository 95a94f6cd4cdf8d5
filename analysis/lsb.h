/* analysis/lsb.h: errors of an integer tensor in units of its own
 * quantization step (QNN's ScaledDiff; TFLite's debugger reports rmse /
 * scale, about 0.289 for a healthy layer: the rounding error of a uniform
 * quantizer). For a test tensor holding integers with a scale (per tensor,
 * per axis or blocked), each element's error |ref - test| is divided by
 * the scale of its channel or block:
 *   mae_lsb    = mean of those
 *   max_lsb    = their maximum
 *   rmse_lsb   = root of their mean square
 *   mismatches = elements whose code differs: when ref holds integers with
 *                the same parameters, codes are compared exactly; otherwise
 *                an element whose error exceeds half a step counts (the
 *                reference would round to another code).
 * Pairs with NaN/Inf count as mismatches and are left out of the means. */
#ifndef QP_ANALYSIS_LSB_H
#define QP_ANALYSIS_LSB_H

#include <stdbool.h>
#include <stdint.h>

#include "core/tensor.h"

struct qp_lsb {
    bool valid;          /* the test tensor is integer with a scale */
    uint64_t n, mismatches;
    double sum, sum2, max;
};

/* Both tensors hold data with equal element counts (ref in any dtype). */
enum qp_status qp_lsb_tensors(const struct qp_tensor *ref,
                              const struct qp_tensor *test, struct qp_lsb *out,
                              struct qp_error *err);

double qp_lsb_mae(const struct qp_lsb *l);
double qp_lsb_rmse(const struct qp_lsb *l);

/* True when t holds integers with quantization parameters. */
bool qp_lsb_applies(const struct qp_tensor *t);

#endif
