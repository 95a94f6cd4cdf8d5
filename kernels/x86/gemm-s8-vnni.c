/* kernels/x86/gemm-s8-vnni.c: the GEMM micro-kernel for AVX-512 VNNI
 * (kernels/gemm-s8-ukernel.h): a tile of 8 rows x 48 columns in 24 zmm
 * accumulators; each K group of 4 loads 3 zmm of packed B (16 columns x 4
 * signed bytes) and issues one vpdpbusd (u8 x s8, 4 products summed into
 * each int32 lane, exact: no saturation) per accumulator. */
#if defined(__x86_64__)
#include <immintrin.h>

#define UKERNEL qp_gemm_s8_avx512vnni
#define NAME "avx512-vnni"
#define ISA QP_KERN_AVX512VNNI
#define MR 8
#define NV 3
#define VEC __m512i
#define VBYTES 64
#define KR 4
#define AELEM uint8_t
#define VLOADU(p) _mm512_loadu_si512(p)
#define VLOADB(p) _mm512_load_si512(p)
#define VSTOREU(p, v) _mm512_storeu_si512(p, v)
#define VSET1(x) _mm512_set1_epi32(x)
#define VDOT(c, a, b) _mm512_dpbusd_epi32(c, a, b)
#include "kernels/x86/gemm-s8-tile.h"
#endif
