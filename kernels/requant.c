/* kernels/requant.c: the requantization variants and the apply entry
 * points (kernels/requant.h). Which variant runs is the dispatch table's
 * choice (kernels/dispatch.c); a variant that has no SIMD path for a
 * flavor runs the reference for it. */
#include "kernels/dispatch.h"
#include "kernels/ref/requant-impl.h"
#include "kernels/requant.h"

static const char *const isa_names[] = {
    [QP_RQ_ISA_REF] = "ref",
    [QP_RQ_ISA_AVX2] = "avx2",
    [QP_RQ_ISA_AVX512] = "avx512",
    [QP_RQ_ISA_NEON] = "neon",
};
_Static_assert(sizeof isa_names / sizeof isa_names[0] == QP_RQ_ISA_COUNT,
               "a name for every variant");

/* The instruction set of kernels/dispatch.h each variant needs. */
static const enum qp_kern_isa needs[] = {
    [QP_RQ_ISA_REF] = QP_KERN_REF,
    [QP_RQ_ISA_AVX2] = QP_KERN_AVX2,
    [QP_RQ_ISA_AVX512] = QP_KERN_AVX512,
    [QP_RQ_ISA_NEON] = QP_KERN_NEON,
};
_Static_assert(sizeof needs / sizeof needs[0] == QP_RQ_ISA_COUNT,
               "an instruction set for every variant");

const char *qp_rq_isa_name(enum qp_rq_isa isa)
{
    return (unsigned)isa < QP_RQ_ISA_COUNT ? isa_names[isa] : "?";
}


bool qp_rq_isa_available(enum qp_rq_isa isa)
{
    if ((unsigned)isa >= QP_RQ_ISA_COUNT)
        return false;
#if !defined(__x86_64__)
    if (isa == QP_RQ_ISA_AVX2 || isa == QP_RQ_ISA_AVX512)
        return false;
#endif
#if !defined(__aarch64__)
    if (isa == QP_RQ_ISA_NEON)
        return false;
#endif
    return qp_kern_isa_available(needs[isa]);
}

bool qp_rq_isa_allowed(enum qp_rq_isa isa)
{
    return qp_rq_isa_available(isa) && qp_kern_isa_allowed(needs[isa]);
}

const char *qp_rq_variant(void)
{
    return isa_names[qp_kern_table()->requant];
}

bool qp_rq_isa_covers(enum qp_rq_isa isa, enum qp_rq_flavor f)
{
    switch (isa) {
#if defined(__x86_64__)
    case QP_RQ_ISA_AVX2:
        return qp_rq_avx2_covers(f);
    case QP_RQ_ISA_AVX512:
        return qp_rq_avx512_covers(f);
#endif
#if defined(__aarch64__)
    case QP_RQ_ISA_NEON:
        return qp_rq_neon_covers(f);
#endif
    default:
        return false;
    }
}

static qp_rq_row_fn row_fn(enum qp_rq_isa isa, enum qp_rq_flavor f)
{
    if (!qp_rq_isa_covers(isa, f))
        return qp_rq_row_ref;
#if defined(__x86_64__)
    if (isa == QP_RQ_ISA_AVX512)
        return qp_rq_row_avx512;
    if (isa == QP_RQ_ISA_AVX2)
        return qp_rq_row_avx2;
#endif
#if defined(__aarch64__)
    if (isa == QP_RQ_ISA_NEON)
        return qp_rq_row_neon;
#endif
    return qp_rq_row_ref;
}

void qp_rq_apply_i32_isa(enum qp_rq_isa isa, const struct qp_rq *rq,
                         const int32_t *acc, size_t rows, size_t cols,
                         void *out)
{
    qp_rq_row_fn fn = row_fn(isa, rq->flavor);
    size_t esz = qp_rq_out_size(rq);
    bool per_elem = rq->channels > 1;
    for (size_t r = 0; r < rows; r++)
        fn(rq, 0, per_elem, acc + r * cols, cols, (char *)out + r * cols * esz);
}

void qp_rq_apply_plane_isa(enum qp_rq_isa isa, const struct qp_rq *rq,
                           size_t c, const int32_t *acc, size_t n, void *out)
{
    row_fn(isa, rq->flavor)(rq, c, false, acc, n, out);
}

void qp_rq_apply_i32(const struct qp_rq *rq, const int32_t *acc, size_t rows,
                     size_t cols, void *out)
{
    qp_rq_apply_i32_isa(qp_kern_table()->requant, rq, acc, rows, cols, out);
}

void qp_rq_apply_plane(const struct qp_rq *rq, size_t c, const int32_t *acc,
                       size_t n, void *out)
{
    qp_rq_apply_plane_isa(qp_kern_table()->requant, rq, c, acc, n, out);
}
