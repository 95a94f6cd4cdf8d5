/* kernels/eltwise-f32.h: elementwise float functions: the f32 loops of
 * the runtime's unary and binary operators (model/op-unary.c,
 * model/op-binary.c) and of fused elementwise chains (model/fuse.c).
 *
 * Each function is defined per element as a fixed sequence of IEEE
 * operations (no contraction into FMA, no reassociation) or one libm
 * call, so a loop gives the same bits however it is vectorized. The
 * variants (kernels/x86/eltwise-f32-avx2.c, -avx512.c) are the same
 * source compiled for wider vectors; tests check they agree bit for bit
 * with the reference (kernels/ref/eltwise-f32.c), infinities and signed
 * zeros included. The one freedom is which payload a NaN result carries
 * when both operands of + or * are NaN (x86 keeps the first source's, and
 * the compiler may order commutative operands either way). */
#ifndef QP_KERNELS_ELTWISE_F32_H
#define QP_KERNELS_ELTWISE_F32_H

#include <stdbool.h>
#include <stddef.h>

/* Functions of one value; alpha and beta are their parameters. Only
 * grows. */
enum qp_ew_unary {
    QP_EW_RELU = 0,   /* x > 0 ? x : 0 (NaN -> 0) */
    QP_EW_LEAKY,      /* x >= 0 ? x : alpha * x */
    QP_EW_SIGMOID,    /* 1 / (1 + exp(-x)) */
    QP_EW_HSIGMOID,   /* clamp(alpha * x + beta, 0, 1) */
    QP_EW_HSWISH,     /* x * clamp(x * (1/6) + 0.5, 0, 1) */
    QP_EW_TANH,
    QP_EW_ERF,
    QP_EW_GELU,       /* 0.5 x (1 + erf(x / sqrt 2)), in double */
    QP_EW_GELU_TANH,  /* the tanh approximation, in double */
    QP_EW_ELU,        /* x >= 0 ? x : alpha (exp(x) - 1), in double */
    QP_EW_SQRT,
    QP_EW_EXP,
    QP_EW_LOG,        /* in double */
    QP_EW_NEG,
    QP_EW_ABS,
    QP_EW_RECIP,      /* 1 / x, in double (the same bits as in float) */
    QP_EW_FLOOR,
    QP_EW_CEIL,
    QP_EW_CLIP,       /* x < alpha ? alpha : x > beta ? beta : x (NaN kept) */
    QP_EW_UNARY_COUNT
};

/* Functions of two values. Only grows. */
enum qp_ew_binary {
    QP_EW_ADD = 0,
    QP_EW_SUB,
    QP_EW_MUL,
    QP_EW_DIV,
    QP_EW_POW,        /* powf */
    QP_EW_MAX,        /* isnan(a) || a > b ? a : b */
    QP_EW_MIN,        /* isnan(a) || a < b ? a : b */
    QP_EW_BINARY_COUNT
};

/* The unary functions in double, for dtypes other than f32 (the f32 loops
 * define their own float arithmetic where it differs). */
double qp_ew_unary_f64(enum qp_ew_unary op, float alpha, float beta, double x);

/* One variant of the loops. */
struct qp_ew_f32 {
    const char *name;
    /* y[i] = f(x[i]) for i < n; y may equal x. */
    void (*unary)(enum qp_ew_unary op, float alpha, float beta,
                  const float *x, float *y, size_t n);
    /* o[i] = a[i] op b[i] for i < n, where an operand whose *_vec is
     * false is the single value a[0] (b[0]) for every i; o may equal a
     * vector operand. */
    void (*binary)(enum qp_ew_binary op, const float *a, bool a_vec,
                   const float *b, bool b_vec, float *o, size_t n);
    /* HardSwish as exporters spell it, Add, Clip, Mul, Div (or Mul):
     * o[i] = (x[i] * clip(x[i] + add, lo, hi)) / d when div, else
     * (...) * d, for i < n: the bits of those four loops run one after
     * the other (binary ADD, unary CLIP, binary MUL, binary DIV or MUL),
     * in one walk; o may equal x. */
    void (*hswish_chain)(const float *x, float add, float lo, float hi,
                         bool div, float d, float *o, size_t n);
    /* o[i] = x[i] * a + b (a rounded product, then a rounded sum: the
     * bits of binary MUL then binary ADD), for i < n; o may equal x. */
    void (*affine)(const float *x, float a, float b, float *o, size_t n);
    /* y[i] = expf(x[i] - m) (the difference rounded to float, then the C
     * library's expf: a softmax's numerators), for i < n; y may equal x.
     * The AVX-512 variant computes glibc's expf (2.28 and later, its FMA
     * form: a 32-entry table of 2^(i/32) and a cubic in double) 8 lanes at
     * a time; tests check it against expf bit for bit. */
    void (*exp_shifted)(const float *x, float m, float *y, size_t n);
};

extern const struct qp_ew_f32 qp_ew_f32_ref;
#if defined(__x86_64__)
extern const struct qp_ew_f32 qp_ew_f32_avx2;
extern const struct qp_ew_f32 qp_ew_f32_avx512;
#endif

/* The variant the dispatch table chose (kernels/dispatch.h). */
const struct qp_ew_f32 *qp_ew_f32(void);

#endif
