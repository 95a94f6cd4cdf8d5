/* core/half.h: exact conversions between f32 and the 16- and 8-bit floats.
 *
 * Narrowing rounds to nearest, ties to even; NaN stays NaN (quiet, sign and
 * top payload bits kept), infinities and signed zeros are kept, subnormals
 * are produced and read exactly. Widening is exact. */
#ifndef QP_CORE_HALF_H
#define QP_CORE_HALF_H

#include <stdint.h>

float qp_f16_to_f32(uint16_t h);
uint16_t qp_f32_to_f16(float f);
float qp_bf16_to_f32(uint16_t b);
uint16_t qp_f32_to_bf16(float f);
/* float8 e4m3fn (no infinities; S.1111.111 is NaN) and e5m2 (IEEE-like). */
float qp_f8e4m3_to_f32(uint8_t v);
float qp_f8e5m2_to_f32(uint8_t v);

#endif
