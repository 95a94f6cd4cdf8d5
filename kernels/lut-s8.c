/* kernels/lut-s8.c: byte lookup tables on the variant the dispatch table
 * chose (kernels/dispatch.c; kernels/lut-s8.h). */
#include "kernels/lut-s8.h"

#include <string.h>

#include "kernels/dispatch.h"

#if defined(__x86_64__)
/* kernels/x86/lut-s8-avx512.c */
void qp_lut8_apply_vbmi(const uint8_t *table, const uint8_t *x, size_t n,
                        uint8_t *y);
void qp_lut16_apply_avx512(const uint8_t *table, const uint8_t *a,
                           const uint8_t *b, size_t n, uint8_t *y);
void qp_lutsum_planes_vbmi(const int64_t *table, const uint8_t *x,
                           size_t area, size_t planes, int64_t *s);

/* AVX-512 VBMI (vpermi2b) on top of the AVX-512 set */
static bool vbmi_supported(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vbmi");
}

const struct qp_lut8_variant qp_lut8_vbmi = {
    "avx512-vbmi", QP_KERN_AVX512, vbmi_supported, qp_lut8_apply_vbmi,
    qp_lut16_apply_avx512, qp_lutsum_planes_vbmi,
};

/* kernels/x86/lut-s8-avx2.c: single tables only (pair tables and table
 * sums run the reference) */
void qp_lut8_apply_avx2(const uint8_t *table, const uint8_t *x, size_t n,
                        uint8_t *y);

const struct qp_lut8_variant qp_lut8_avx2 = {
    "avx2", QP_KERN_AVX2, NULL, qp_lut8_apply_avx2, NULL, NULL,
};
#endif

bool qp_lut8_variant_runs(const struct qp_lut8_variant *v)
{
    return qp_kern_isa_available(v->isa) && (!v->supported || v->supported());
}

const char *qp_lut8_variant(void)
{
    const struct qp_lut8_variant *v = qp_kern_table()->lut8;
    return v ? v->name : "ref";
}

void qp_lut8_apply(const uint8_t table[256], const uint8_t *x, size_t n,
                   uint8_t *y)
{
    const struct qp_lut8_variant *v = qp_kern_table()->lut8;
    if (v)
        v->apply(table, x, n, y);
    else
        qp_lut8_apply_ref(table, x, n, y);
}

/* The SIMD variant named name when this machine runs it; NULL for "ref"
 * (*ref set) and for any other name. */
static const struct qp_lut8_variant *by_name(const char *name, bool *ref)
{
    *ref = !strcmp(name, "ref");
#if defined(__x86_64__)
    const struct qp_lut8_variant *all[] = {&qp_lut8_vbmi, &qp_lut8_avx2};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (!strcmp(name, all[i]->name) && qp_lut8_variant_runs(all[i]))
            return all[i];
#endif
    return NULL;
}

bool qp_lut8_apply_variant(const char *name, const uint8_t table[256],
                           const uint8_t *x, size_t n, uint8_t *y)
{
    bool ref;
    const struct qp_lut8_variant *v = by_name(name, &ref);
    if (v)
        v->apply(table, x, n, y);
    else if (ref)
        qp_lut8_apply_ref(table, x, n, y);
    return v || ref;
}

void qp_lut16_apply(const uint8_t *table, const uint8_t *a, const uint8_t *b,
                    size_t n, uint8_t *y)
{
    const struct qp_lut8_variant *v = qp_kern_table()->lut8;
    if (v && v->apply2)
        v->apply2(table, a, b, n, y);
    else
        qp_lut16_apply_ref(table, a, b, n, y);
}

bool qp_lut16_apply_variant(const char *name, const uint8_t *table,
                            const uint8_t *a, const uint8_t *b, size_t n,
                            uint8_t *y)
{
    bool ref;
    const struct qp_lut8_variant *v = by_name(name, &ref);
    if (v && v->apply2)
        v->apply2(table, a, b, n, y);
    else if (ref)
        qp_lut16_apply_ref(table, a, b, n, y);
    return (v && v->apply2) || ref;
}

void qp_lutsum_planes(const int64_t table[256], const uint8_t *x, size_t area,
                      size_t planes, int64_t *s)
{
    const struct qp_lut8_variant *v = qp_kern_table()->lut8;
    if (v && v->sum)
        v->sum(table, x, area, planes, s);
    else
        qp_lutsum_planes_ref(table, x, area, planes, s);
}

bool qp_lutsum_planes_variant(const char *name, const int64_t table[256],
                              const uint8_t *x, size_t area, size_t planes,
                              int64_t *s)
{
    bool ref;
    const struct qp_lut8_variant *v = by_name(name, &ref);
    if (v && v->sum)
        v->sum(table, x, area, planes, s);
    else if (ref)
        qp_lutsum_planes_ref(table, x, area, planes, s);
    return (v && v->sum) || ref;
}
