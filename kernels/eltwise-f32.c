/* kernels/eltwise-f32.c: the float elementwise loops of the dispatch
 * table's choice (kernels/eltwise-f32.h). */
#include "kernels/eltwise-f32.h"

#include "kernels/dispatch.h"

const struct qp_ew_f32 *qp_ew_f32(void)
{
    const struct qp_ew_f32 *v = qp_kern_table()->eltwise_f32;
    return v ? v : &qp_ew_f32_ref;
}
