/* kernels/x86/gemm-s8-avxvnni.c: the GEMM micro-kernel for AVX-VNNI, the
 * VEX-encoded vpdpbusd on ymm of CPUs without AVX-512
 * (kernels/gemm-s8-ukernel.h): the AVX-512 VNNI scheme within 16
 * registers, a tile of 6 rows x 16 columns in 12 ymm accumulators. */
#if defined(__x86_64__)
#include <immintrin.h>

#define UKERNEL qp_gemm_s8_avxvnni
#define NAME "avx-vnni"
#define ISA QP_KERN_AVXVNNI
#define MR 6
#define NV 2
#define VEC __m256i
#define VBYTES 32
#define KR 4
#define AELEM uint8_t
#define VLOADU(p) _mm256_loadu_si256((const __m256i *)(p))
#define VLOADB(p) _mm256_load_si256((const __m256i *)(p))
#define VSTOREU(p, v) _mm256_storeu_si256((__m256i *)(p), v)
#define VSET1(x) _mm256_set1_epi32(x)
#define VDOT(c, a, b) _mm256_dpbusd_avx_epi32(c, a, b)
#include "kernels/x86/gemm-s8-tile.h"
#endif
