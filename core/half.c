#include "core/half.h"

#include <math.h>
#include <string.h>

static inline uint32_t f32_bits(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    return x;
}

static inline float bits_f32(uint32_t x)
{
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

/* Shifts m right by s (1 <= s <= 31) rounding to nearest, ties to even. */
static inline uint32_t shift_rne(uint32_t m, unsigned s)
{
    uint32_t q = m >> s;
    uint32_t rem = m & ((1u << s) - 1);
    uint32_t half = 1u << (s - 1);
    if (rem > half || (rem == half && (q & 1)))
        q++;
    return q;
}

float qp_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ff;
    if (exp == 0x1f) /* inf or NaN: keep the payload in the top bits */
        return bits_f32(sign | 0x7f800000 | (man << 13));
    if (exp == 0) {
        if (man == 0)
            return bits_f32(sign);
        /* subnormal: man * 2^-24, exact in f32 */
        float v = (float)man * 0x1p-24f;
        return sign ? -v : v;
    }
    return bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t qp_f32_to_f16(float f)
{
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t ax = x & 0x7fffffff;
    if (ax > 0x7f800000) /* NaN: quiet, keep top payload bits */
        return (uint16_t)(sign | 0x7e00 | ((ax >> 13) & 0x3ff));
    if (ax >= 0x477ff000) /* >= 65520 rounds to infinity (and inf itself) */
        return (uint16_t)(sign | 0x7c00);
    if (ax < 0x38800000) { /* below 2^-14: f16 subnormal or zero */
        if (ax < 0x33000000) /* < 2^-25: rounds to zero (2^-25 is a tie to 0) */
            return sign;
        uint32_t m = (ax & 0x7fffff) | 0x800000;
        unsigned e = ax >> 23;
        /* value = m * 2^(e-150); in units of 2^-24 that is m >> (126 - e) */
        return (uint16_t)(sign | shift_rne(m, 126 - e));
    }
    /* normal: rebias the exponent (127 -> 15) and round off 13 bits; a carry
     * out of the mantissa correctly bumps the exponent */
    uint32_t q = shift_rne(ax, 13) - (112u << 10);
    return (uint16_t)(sign | q);
}

float qp_bf16_to_f32(uint16_t b)
{
    return bits_f32((uint32_t)b << 16);
}

uint16_t qp_f32_to_bf16(float f)
{
    uint32_t x = f32_bits(f);
    if ((x & 0x7fffffff) > 0x7f800000)
        return (uint16_t)((x >> 16) | 0x40);
    uint32_t lsb = (x >> 16) & 1;
    return (uint16_t)((x + 0x7fff + lsb) >> 16);
}

float qp_f8e4m3_to_f32(uint8_t v)
{
    uint32_t sign = (uint32_t)(v & 0x80) << 24;
    uint32_t exp = (v >> 3) & 0xf;
    uint32_t man = v & 0x7;
    if (exp == 0xf && man == 0x7)
        return bits_f32(sign | 0x7fc00000);
    if (exp == 0) {
        float m = (float)man * 0x1p-9f;
        return sign ? -m : m;
    }
    return bits_f32(sign | ((exp + 120) << 23) | (man << 20));
}

float qp_f8e5m2_to_f32(uint8_t v)
{
    return qp_f16_to_f32((uint16_t)(v << 8));
}
