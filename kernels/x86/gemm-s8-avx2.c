/* kernels/x86/gemm-s8-avx2.c: the GEMM micro-kernel for AVX2
 * (kernels/gemm-s8-ukernel.h). AVX2 has no 8-bit dot product that cannot
 * saturate (vpmaddubsw saturates to int16), so operands are packed as
 * 16-bit values, A as u16 and B as s16, and multiplied with vpmaddwd: two
 * products per int32 lane, each at most 255 * 128 in magnitude, so the
 * pair sums are exact. A tile is 6 rows x 16 columns, 12 ymm
 * accumulators; one 4-byte broadcast of A holds 2 K elements. */
#if defined(__x86_64__)
#include <immintrin.h>

#define UKERNEL qp_gemm_s8_avx2
#define NAME "avx2"
#define ISA QP_KERN_AVX2
#define MR 6
#define NV 2
#define VEC __m256i
#define VBYTES 32
#define KR 2
#define AELEM uint16_t
#define VLOADU(p) _mm256_loadu_si256((const __m256i *)(p))
#define VLOADB(p) _mm256_load_si256((const __m256i *)(p))
#define VSTOREU(p, v) _mm256_storeu_si256((__m256i *)(p), v)
#define VSET1(x) _mm256_set1_epi32(x)
#define VDOT(c, a, b) _mm256_add_epi32(c, _mm256_madd_epi16(a, b))
#include "kernels/x86/gemm-s8-tile.h"
#endif
