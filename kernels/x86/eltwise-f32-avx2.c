/* kernels/x86/eltwise-f32-avx2.c: the elementwise loops of
 * kernels/eltwise-f32.h compiled for AVX2 (8 floats a vector): the
 * reference's source, so the reference's bits. */
#if defined(__x86_64__)
#define EW_VARIANT qp_ew_f32_avx2
#define EW_NAME "avx2"
#include "kernels/eltwise-f32-body.h"
#endif
