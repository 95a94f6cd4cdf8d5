/* tests/unit/gptq-test-util.h: inputs and runs shared by the GPTQ and
 * Hessian tests (test-gptq*.c, test-hessian.c). */
#ifndef QP_TESTS_GPTQ_TEST_UTIL_H
#define QP_TESTS_GPTQ_TEST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "quant/gptq.h"
#include "quant/hessian.h"
#include "quant/rtn.h"
#include "quant/scheme.h"

/* A standard normal variate from the xorshift state *s (Box-Muller). */
double gt_normal(uint64_t *s);

/* Correlated layer inputs X [tokens, cols]: each row is a random mix
 * z A of independent normals z through a fixed random matrix A whose
 * column j has a scale 1 + spread * j / cols, plus a shared component,
 * so H has strong off-diagonal terms and a spread diagonal. malloc'd. */
float *gt_inputs(size_t tokens, size_t cols, float spread, uint64_t seed);

/* Weights W [rows, cols] (normal, scale 0.05, a few outliers), as a new
 * f32 tensor named "w". NULL when out of memory. */
struct qp_tensor *gt_weight(size_t rows, size_t cols, uint64_t seed);

/* H of x [tokens, cols] added in batches of `batch` rows (NULL on error). */
struct qp_hessian *gt_hessian(const float *x, size_t tokens, size_t cols,
                              size_t batch);

/* A layer problem: inputs x [tokens, cols] (gt_inputs(tokens, cols,
 * spread, xseed)), their Hessian added in batches of `batch`, and a
 * weight [rows, cols] (gt_weight(rows, cols, wseed)). */
struct gt_problem {
    float *x;
    struct qp_hessian *h;
    struct qp_tensor *w;
};

/* False when out of memory (p is then released). */
bool gt_problem_init(struct gt_problem *p, size_t rows, size_t cols,
                     size_t tokens, size_t batch, float spread, uint64_t xseed,
                     uint64_t wseed);
void gt_problem_release(struct gt_problem *p);

/* The parsed weight part of scheme string s (aborts the test run when s
 * does not parse: tests only pass literals). */
struct qp_wscheme gt_scheme(const char *s);

/* Dequantized q (with g_idx when given) as malloc'd floats. */
float *gt_dequant(const struct qp_tensor *q, const int32_t *g_idx);

/* RTN of w with ws (algo forced to RTN) dequantized, malloc'd; *q (may be
 * NULL) receives the integer tensor. */
float *gt_rtn(const struct qp_tensor *w, struct qp_wscheme ws, enum qp_round r,
              struct qp_tensor **q);

/* Relative output errors of approximations a and b of w on h
 * (qp_hessian_output_error); b may be NULL. */
void gt_output_error(const struct qp_hessian *h, const struct qp_tensor *w,
                     const float *a, const float *b, double *ra, double *rb);

#endif
