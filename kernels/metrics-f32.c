/* kernels/metrics-f32.c: the metrics pass on the variant the dispatch
 * table chose, and the variants by name (kernels/metrics-f32.h). */
#include "kernels/metrics-f32.h"

#include <string.h>

void qp_metrics_f32_add(struct qp_metrics_f32 *m, const float *ref,
                        const float *test, size_t n)
{
    const struct qp_metrics_f32_variant *v = qp_kern_table()->metrics_f32;
    (v ? v->add : qp_metrics_f32_add_ref)(m, ref, test, n);
}

const char *qp_metrics_f32_variant(void)
{
    const struct qp_metrics_f32_variant *v = qp_kern_table()->metrics_f32;
    return v ? v->name : "ref";
}

qp_metrics_f32_fn qp_metrics_f32_by_name(const char *name)
{
    if (!strcmp(name, "ref"))
        return qp_metrics_f32_add_ref;
#if defined(__x86_64__)
    const struct qp_metrics_f32_variant *const vs[] = {&qp_metrics_f32_avx2,
                                                       &qp_metrics_f32_avx512};
    for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++)
        if (!strcmp(name, vs[i]->name))
            return qp_kern_isa_available(vs[i]->isa) ? vs[i]->add : NULL;
#endif
    return NULL;
}
