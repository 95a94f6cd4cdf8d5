/* kernels/dispatch.h: run-time choice of kernel variants.
 *
 * The table is filled once, from __builtin_cpu_supports, the first time a
 * kernel is asked for; QP_KERNELS=ref in the environment forces the
 * portable reference everywhere. */
#ifndef QP_KERNELS_DISPATCH_H
#define QP_KERNELS_DISPATCH_H

/* One line naming the variant chosen for each kernel family, e.g.
 * "kernels: gemm-s8=avx512-vnni requant=avx2 metrics=avx2". Static storage. */
const char *qp_kern_describe(void);

#endif
