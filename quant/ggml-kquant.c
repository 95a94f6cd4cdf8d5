#include "quant/ggml-kquant.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "core/ggml-block.h"
#include "core/half.h"

/* Sub-blocks whose largest magnitude is below this are all zero (ggml's
 * GROUP_MAX_EPS). */
#define GROUP_EPS 1e-15f

/* Round to nearest, ties to even, for |v| < 2^22: adding 1.5 * 2^23 puts
 * the integer in the low mantissa bits (ggml's nearest_int). Outside that
 * range (inf, NaN) it returns what ggml's bit trick returns. */
static int nearest(float v)
{
    float s = v + 12582912.f;
    int32_t i;
    memcpy(&i, &s, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ggml's make_qkx2_quants without its unused options: an asymmetric
 * nmax-level quantization of x[n] with weights w[n], minimizing the
 * weighted squared error over the nstep + 1 inverse scales
 * (rmin + rdelta * is + nmax) / (max - min). Writes the levels to L, the
 * (non-negative) min offset to *the_min, returns the scale. aux[n] is
 * scratch. */
static float qkx2(int n, int nmax, const float *x, const float *w, uint8_t *L,
                  float *the_min, uint8_t *aux, float rmin, float rdelta,
                  int nstep)
{
    float min = x[0], max = x[0];
    float sum_w = w[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min)
            min = x[i];
        if (x[i] > max)
            max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0)
        min = 0;
    if (max == min) {
        memset(L, 0, (size_t)n);
        *the_min = -min;
        return 0.f;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float best = 0;
    for (int i = 0; i < n; i++) {
        L[i] = (uint8_t)clampi(nearest(iscale * (x[i] - min)), 0, nmax);
        float diff = scale * L[i] + min - x[i];
        best += w[i] * (diff * diff);
    }
    for (int is = 0; is <= nstep; is++) {
        iscale = (rmin + rdelta * is + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; i++) {
            int l = clampi(nearest(iscale * (x[i] - min)), 0, nmax);
            aux[i] = (uint8_t)l;
            sum_l += w[i] * l;
            sum_l2 += w[i] * l * l;
            sum_xl += w[i] * l * x[i];
        }
        float D = sum_w * sum_l2 - sum_l * sum_l;
        if (!(D > 0))
            continue;
        float sc = (sum_w * sum_xl - sum_x * sum_l) / D;
        float mn = (sum_l2 * sum_x - sum_l * sum_xl) / D;
        if (mn > 0) {
            mn = 0;
            sc = sum_xl / sum_l2;
        }
        float err = 0;
        for (int i = 0; i < n; i++) {
            float diff = sc * aux[i] + mn - x[i];
            err += w[i] * (diff * diff);
        }
        if (err < best) {
            memcpy(L, aux, (size_t)n);
            best = err;
            scale = sc;
            min = mn;
        }
    }
    *the_min = -min;
    return scale;
}

/* ggml's make_qx_quants with rmse_type 1 and no importance weights: a
 * symmetric quantization of x[n] to levels [-nmax, nmax - 1] (stored + nmax
 * in L) with weights x^2, the best of the 19 inverse scales
 * -(nmax + 0.1 is) / max. Returns the scale (0 for an all-zero x). */
static float qx(int n, int nmax, const float *x, int8_t *L)
{
    float max = 0, amax = 0;
    for (int i = 0; i < n; i++) {
        float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < GROUP_EPS) {
        memset(L, 0, (size_t)n);
        return 0.f;
    }
    float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        int l = clampi(nearest(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)(l + nmax);
        float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    float scale = suml2 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; is++) {
        if (is == 0)
            continue;
        iscale = -(nmax + 0.1f * is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; i++) {
            int l = clampi(nearest(iscale * x[i]), -nmax, nmax - 1);
            float w = x[i] * x[i];
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++)
                L[i] = (int8_t)(nmax + clampi(nearest(iscale * x[i]), -nmax,
                                              nmax - 1));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* Stores sub-block j's 6-bit scale ls and min lm into a q4_K scales[12]
 * (the layout core/ggml-block.h describes). j runs upwards, so the top
 * bits of j >= 4 land on bytes j < 4 already written. */
static void put_scale_min(uint8_t *s, int j, uint8_t ls, uint8_t lm)
{
    if (j < 4) {
        s[j] = ls;
        s[j + 4] = lm;
    } else {
        s[j + 4] = (uint8_t)((ls & 0xF) | ((lm & 0xF) << 4));
        s[j - 4] |= (uint8_t)((ls >> 4) << 6);
        s[j] |= (uint8_t)((lm >> 4) << 6);
    }
}

static void get_scale_min(const uint8_t *s, int j, uint8_t *ls, uint8_t *lm)
{
    if (j < 4) {
        *ls = s[j] & 63;
        *lm = s[j + 4] & 63;
    } else {
        *ls = (uint8_t)((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4));
        *lm = (uint8_t)((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
}

static uint8_t min_u8(uint8_t a, uint8_t b) { return a < b ? a : b; }

void qp_ggml_quantize_row_q4_K_ref(const float *x, void *blocks, int64_t n)
{
    unsigned char *p = blocks;
    enum { NSUB = QP_QK_K / 32 };
    uint8_t L[QP_QK_K], aux[32];
    float w[32], mins[NSUB], scales[NSUB];
    for (int64_t i = 0; i < n / QP_QK_K; i++, x += QP_QK_K) {
        struct qp_block_q4_K b;
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < NSUB; j++) {
            const float *xs = x + 32 * j;
            float sum_x2 = 0;
            for (int l = 0; l < 32; l++)
                sum_x2 += xs[l] * xs[l];
            float av_x = sqrtf(sum_x2 / 32);
            for (int l = 0; l < 32; l++)
                w[l] = av_x + fabsf(xs[l]);
            scales[j] = qkx2(32, 15, xs, w, L + 32 * j, &mins[j], aux, -1.f,
                             0.1f, 20);
            if (scales[j] > max_scale)
                max_scale = scales[j];
            if (mins[j] > max_min)
                max_min = mins[j];
        }
        float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
        float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
        for (int j = 0; j < NSUB; j++) {
            /* int -> uint8_t wraps as ggml's assignment does */
            uint8_t ls = (uint8_t)nearest(inv_scale * scales[j]);
            uint8_t lm = (uint8_t)nearest(inv_min * mins[j]);
            put_scale_min(b.scales, j, min_u8(63, ls), min_u8(63, lm));
        }
        b.d = qp_f32_to_f16(max_scale / 63.f);
        b.dmin = qp_f32_to_f16(max_min / 63.f);
        for (int j = 0; j < NSUB; j++) {
            uint8_t sc, m;
            get_scale_min(b.scales, j, &sc, &m);
            const float d = qp_f16_to_f32(b.d) * sc;
            if (!d)
                continue; /* keeps the levels of the search */
            const float dm = qp_f16_to_f32(b.dmin) * m;
            for (int l = 0; l < 32; l++)
                L[32 * j + l] = (uint8_t)clampi(
                    nearest((x[32 * j + l] + dm) / d), 0, 15);
        }
        for (int j = 0; j < QP_QK_K; j += 64)
            for (int l = 0; l < 32; l++)
                b.qs[j / 2 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
        memcpy(p + (size_t)i * sizeof b, &b, sizeof b);
    }
}

void qp_ggml_quantize_row_q6_K_ref(const float *x, void *blocks, int64_t n)
{
    unsigned char *p = blocks;
    enum { NSUB = QP_QK_K / 16 };
    int8_t L[QP_QK_K];
    float scales[NSUB];
    for (int64_t i = 0; i < n / QP_QK_K; i++, x += QP_QK_K) {
        struct qp_block_q6_K b;
        float max_scale = 0, max_abs_scale = 0;
        for (int ib = 0; ib < NSUB; ib++) {
            scales[ib] = qx(16, 32, x + 16 * ib, L + 16 * ib);
            if (fabsf(scales[ib]) > max_abs_scale) {
                max_abs_scale = fabsf(scales[ib]);
                max_scale = scales[ib];
            }
        }
        if (max_abs_scale < GROUP_EPS) {
            memset(&b, 0, sizeof b);
            b.d = qp_f32_to_f16(0.f);
            memcpy(p + (size_t)i * sizeof b, &b, sizeof b);
            continue;
        }
        float iscale = -128.f / max_scale;
        b.d = qp_f32_to_f16(1 / iscale);
        for (int ib = 0; ib < NSUB; ib++) {
            int s = nearest(iscale * scales[ib]);
            b.scales[ib] = (int8_t)(s < 127 ? s : 127);
        }
        for (int j = 0; j < NSUB; j++) {
            float d = qp_f16_to_f32(b.d) * b.scales[j];
            if (!d)
                continue;
            for (int l = 0; l < 16; l++)
                L[16 * j + l] = (int8_t)(clampi(nearest(x[16 * j + l] / d),
                                                -32, 31) + 32);
        }
        /* each half of 128 values: ql holds the low nibbles of values
         * l, l + 32 (low nibble) and l + 64, l + 96 (high nibble), qh the
         * top two bits of the four */
        for (int h = 0; h < 2; h++) {
            const int8_t *Lh = L + 128 * h;
            uint8_t *ql = b.ql + 64 * h, *qh = b.qh + 32 * h;
            for (int l = 0; l < 32; l++) {
                const uint8_t q1 = Lh[l] & 0xF, q2 = Lh[l + 32] & 0xF,
                              q3 = Lh[l + 64] & 0xF, q4 = Lh[l + 96] & 0xF;
                ql[l] = (uint8_t)(q1 | (q3 << 4));
                ql[l + 32] = (uint8_t)(q2 | (q4 << 4));
                qh[l] = (uint8_t)((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) |
                                  ((Lh[l + 64] >> 4) << 4) |
                                  ((Lh[l + 96] >> 4) << 6));
            }
        }
        memcpy(p + (size_t)i * sizeof b, &b, sizeof b);
    }
}
