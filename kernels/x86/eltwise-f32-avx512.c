/* kernels/x86/eltwise-f32-avx512.c: the elementwise loops of
 * kernels/eltwise-f32.h compiled for AVX-512 (16 floats a vector): the
 * reference's source, so the reference's bits. */
#if defined(__x86_64__)
#define EW_VARIANT qp_ew_f32_avx512
#define EW_NAME "avx512"
#include "kernels/eltwise-f32-body.h"
#endif
