/* tests/unit/ort-cpu.h: the weights ONNX Runtime's fused uint8 kernels
 * sum exactly on this CPU.
 *
 * On x86-64 without VNNI (neither AVX-512 VNNI nor AVX-VNNI), ONNX
 * Runtime's uint8 x int8 GEMM and convolution kernels (MLAS, AVX2 and
 * AVX-512 BW) multiply with vpmaddubsw, which adds each two adjacent
 * products with int16 saturation. An activation pair near 255 times int8
 * weights whose magnitudes add up to more than 128 saturates there, so
 * ONNX Runtime's QLinearConv / QLinearMatMul are not the exact sums the
 * ort flavor computes (seen on an AMD EPYC with AVX2 only: w8c+a8tz
 * exports of PP-OCRv4 came out bit-exact at 2 of 329 boundaries). 7-bit
 * weights, [-64, 63] (ONNX Runtime's own reduce_range for such CPUs),
 * cannot saturate: 255 * 128 < 32768. With VNNI (vpdpbusd sums four
 * products in int32) and on aarch64 every 8-bit weight is exact.
 *
 * The tests that compare qprobe with ONNX Runtime's fused uint8 kernels
 * bit for bit take their weight bits from here, and print them. */
#ifndef QP_TESTS_ORT_CPU_H
#define QP_TESTS_ORT_CPU_H

#include <stdbool.h>

#include "kernels/dispatch.h"

static inline bool ort_u8s8_saturates(void)
{
#if defined(__x86_64__)
    return !qp_kern_isa_available(QP_KERN_AVX512VNNI) &&
           !qp_kern_isa_available(QP_KERN_AVXVNNI);
#else
    return false;
#endif
}

/* "w8c", or "w7c" where 8-bit weights saturate (above) */
static inline const char *ort_u8_weights(void)
{
    return ort_u8s8_saturates() ? "w7c" : "w8c";
}

/* The range test models draw int8 weights from: [-127, 127], or [-64, 63]
 * where 8-bit weights saturate */
static inline int ort_wmin(void)
{
    return ort_u8s8_saturates() ? -64 : -127;
}

static inline int ort_wmax(void)
{
    return ort_u8s8_saturates() ? 63 : 127;
}

#endif
