/* model/op-tflite-elem.c: TFLite's elementwise operators (model/op-
 * tflite.h): ADD, SUB, MUL (numpy broadcasting), LEAKY_RELU, HARD_SWISH,
 * RELU, RELU6, RELU_N1_TO_1, LOGISTIC, TANH, QUANTIZE and DEQUANTIZE, each
 * on float or with TFLite's integer arithmetic: MultiplyByQuantizedMultiplier
 * is tflite-double (qp_rq_scale_fixed), multipliers come from
 * QuantizeMultiplier of the real ratios TFLite forms in Prepare. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/fixedpoint.h"
#include "kernels/quantize-act.h"
#include "model/op-tflite.h"

#define RQ QP_RQ_TFLITE_DOUBLE

static int32_t mbqm(int32_t x, int32_t m, int32_t s)
{
    return qp_rq_scale_fixed(RQ, x, m, s);
}

static void quantize_multiplier(double real, int32_t *m, int32_t *s)
{
    qp_rq_quantize_multiplier(RQ, real, m, s);
}

static int32_t clampi(int32_t v, int32_t lo, int32_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static enum qp_status alloc_impl(struct qp_tfl_node *s, size_t size,
                                 struct qp_error *err)
{
    if (!(s->impl = calloc(1, size)))
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    s->impl_free = free;
    return QP_OK;
}

static bool is_q(const struct qp_tfl_node *s, int k)
{
    return s->qin[k].quant && s->qout[0].quant;
}

/* ---- ADD, SUB, MUL ----------------------------------------------------------- */

struct binary {
    bool pot;                 /* int16 ADD/SUB with power-of-two scales */
    int left_shift;
    int32_t m1, s1, m2, s2, mo, so;
    int pot_shift1, pot_shift2;
};

/* CheckedLog2: log2 of a float scale, rounded, and whether it is a power
 * of two (fractional part below 1e-3). */
static bool checked_log2(float x, int *out)
{
    float l = logf(x) * (1.0f / logf(2.0f));
    float r = roundf(l);
    *out = (int)r;
    return fabsf(l - r) < 1e-3f;
}

static enum qp_status prep_binary(struct qp_tfl_node *s,
                                  const struct qp_tfl_model *m,
                                  const struct qp_tfl_op *op,
                                  struct qp_error *err)
{
    if (s->n_in != 2)
        return qp_tfl_fail(err, m, op, QP_E_FORMAT, "needs two inputs");
    enum qp_status st = alloc_impl(s, sizeof(struct binary), err);
    if (st)
        return st;
    struct binary *k = s->impl;
    enum qp_dtype dt = s->out[0].dtype;
    for (int i = 0; i < 2; i++) {
        const struct qp_tdesc *x = &s->in[i], *y = &s->out[0];
        bool ok = x->ndim <= y->ndim;
        for (int d = 1; ok && d <= x->ndim; d++) {
            int64_t a = x->shape[x->ndim - d], b = y->shape[y->ndim - d];
            ok = a == b || a == 1;
        }
        if (!ok)
            return qp_tfl_fail(err, m, op, QP_E_SHAPE, "input %d does not "
                               "broadcast to the output", i);
    }
    if (qp_tdesc_numel(&s->out[0]) && (!qp_tdesc_numel(&s->in[0]) ||
                                       !qp_tdesc_numel(&s->in[1])))
        return qp_tfl_fail(err, m, op, QP_E_SHAPE, "an empty input");
    if (s->in[0].dtype != dt || s->in[1].dtype != dt)
        return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "mixed input types");
    if (dt == QP_DTYPE_F32)
        return QP_OK;
    if (!is_q(s, 0) || !is_q(s, 1) ||
        (dt != QP_DTYPE_I8 && dt != QP_DTYPE_U8 && dt != QP_DTYPE_I16))
        return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "%s tensors",
                           qp_dtype_name(dt));
    if ((st = qp_tfl_act_range(s, s->opt.act, dt, &s->qout[0], err)))
        return qp_error_prefix(err, "'%s': ", m->path);
    float s1 = s->qin[0].scale, s2 = s->qin[1].scale, so = s->qout[0].scale;
    if (op->builtin == QP_TFL_MUL) {
        quantize_multiplier((double)s1 * (double)s2 / (double)so, &k->mo, &k->so);
        return QP_OK;
    }
    if (dt == QP_DTYPE_I16 && s->opt.pot_scale_int16) {
        int l1, l2, lo;
        bool p1 = checked_log2(s1, &l1), p2 = checked_log2(s2, &l2);
        bool po = checked_log2(so, &lo);
        if (p1 && p2 && po) {
            k->pot = true;
            k->pot_shift1 = l1 - lo;
            k->pot_shift2 = l2 - lo;
            if (s->qin[0].zp || s->qin[1].zp || s->qout[0].zp ||
                (k->pot_shift1 && k->pot_shift2) || k->pot_shift1 > 0 ||
                k->pot_shift2 > 0)
                return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "int16 "
                                   "power-of-two scales TFLite refuses");
            return QP_OK;
        }
    }
    k->left_shift = dt == QP_DTYPE_I16 ? 15 : 20;
    double twice_max = 2 * (s1 > s2 ? s1 : s2);
    quantize_multiplier(s1 / twice_max, &k->m1, &k->s1);
    quantize_multiplier(s2 / twice_max, &k->m2, &k->s2);
    quantize_multiplier(twice_max / ((1 << k->left_shift) * so), &k->mo, &k->so);
    return QP_OK;
}

static int32_t binary_one(const struct qp_tfl_node *s, const struct binary *k,
                          int32_t a, int32_t b)
{
    bool sub = s->builtin == QP_TFL_SUB;
    if (s->builtin == QP_TFL_MUL) {
        int32_t v = mbqm((a - s->qin[0].zp) * (b - s->qin[1].zp), k->mo, k->so);
        return clampi(v + s->qout[0].zp, s->act_min, s->act_max);
    }
    if (k->pot) { /* gemmlowp F0 int16: RoundingDivideByPOT, SaturatingAdd */
        int32_t sa = qp_fx_rdbypot(a, -k->pot_shift1);
        int32_t sb = qp_fx_rdbypot(b, -k->pot_shift2);
        int32_t v = sub ? sa - sb : sa + sb;
        v = clampi(v, INT16_MIN, INT16_MAX);
        return clampi(v, s->act_min, s->act_max);
    }
    int32_t xa = (a - s->qin[0].zp) * (1 << k->left_shift);
    int32_t xb = (b - s->qin[1].zp) * (1 << k->left_shift);
    int32_t va = mbqm(xa, k->m1, k->s1), vb = mbqm(xb, k->m2, k->s2);
    int32_t v = mbqm(sub ? va - vb : va + vb, k->mo, k->so) + s->qout[0].zp;
    return clampi(v, s->act_min, s->act_max);
}

static enum qp_status run_binary(const struct qp_op_ctx *c,
                                 const struct qp_tfl_node *s,
                                 struct qp_tensor *const *out,
                                 struct qp_error *err)
{
    (void)err;
    const struct binary *k = s->impl;
    const struct qp_tensor *ops[2] = {c->in[0], c->in[1]};
    struct qp_tdesc d;
    qp_tdesc_of(out[0], &d);
    struct qp_bcast b;
    qp_bcast_init(&b, &d, ops, 2);
    enum qp_dtype dt = d.dtype;
    const void *x1 = ops[0]->data, *x2 = ops[1]->data;
    void *y = out[0]->data;
    for (size_t r = 0; r * b.inner < b.total; r++) {
        int64_t off[2];
        qp_bcast_row(&b, r, off);
        int64_t s1 = b.stride[0][b.nd - 1], s2 = b.stride[1][b.nd - 1];
        for (size_t j = 0; j < b.inner; j++) {
            size_t i = r * b.inner + j;
            size_t i1 = (size_t)(off[0] + (int64_t)j * s1);
            size_t i2 = (size_t)(off[1] + (int64_t)j * s2);
            if (dt == QP_DTYPE_F32) {
                float a = ((const float *)x1)[i1], bb = ((const float *)x2)[i2];
                float v = s->builtin == QP_TFL_ADD ? a + bb
                        : s->builtin == QP_TFL_SUB ? a - bb : a * bb;
                ((float *)y)[i] = qp_tfl_act_f32(s->opt.act, v);
                continue;
            }
            qp_elem_set_i64(dt, y, i, binary_one(s, k, qp_tfl_get_int(dt, x1, i1),
                                                 qp_tfl_get_int(dt, x2, i2)));
        }
    }
    return QP_OK;
}

/* ---- unary: a per-element function of one input ---------------------------- */

struct unary {
    bool identity;                        /* float QUANTIZE/DEQUANTIZE */
    int32_t m_id, s_id, m_alpha, s_alpha; /* LEAKY_RELU, RELU*, QUANTIZE */
    int32_t lo, hi;                       /* RELU*: clamp, output units */
    /* HARD_SWISH (reference_ops::HardSwish) */
    int16_t relu_m16, out_m16;
    int relu_e, out_e;
    /* 8-bit LOGISTIC / TANH: a table over input codes (uint8 view) */
    bool lut;
    int32_t table[256];
    /* TFLite Micro's int8 LOGISTIC / TANH: Q4 input multiplier */
    bool fixed;
    int32_t in_mult, in_shift, radius;
};

static int16_t down16(int32_t m)
{
    /* DownScaleInt32ToInt16Multiplier */
    if (m >= INT32_MAX - (1 << 15))
        return INT16_MAX;
    return (int16_t)((m + (1 << 15)) >> 16);
}

static int16_t sat16(int32_t v)
{
    return (int16_t)clampi(v, INT16_MIN, INT16_MAX);
}

/* gemmlowp's SaturatingRoundingDoublingHighMul on int16 */
static int16_t srdhm16(int16_t a, int16_t b)
{
    if (a == b && a == INT16_MIN)
        return INT16_MAX;
    int32_t ab = (int32_t)a * b;
    int32_t nudge = ab >= 0 ? (1 << 14) : (1 - (1 << 14));
    return (int16_t)((ab + nudge) / (1 << 15));
}

static int32_t hard_swish(const struct qp_tfl_node *s, const struct unary *k,
                          int32_t q)
{
    int16_t x = (int16_t)(q - s->qin[0].zp);
    int16_t hires = (int16_t)(x * (1 << 7));
    int16_t preshift = srdhm16(hires, k->out_m16);
    int16_t r = hires;
    if (k->relu_e > 0)
        r = sat16((int32_t)r * (1 << (k->relu_e - 1)));
    r = srdhm16(r, k->relu_m16);
    if (k->relu_e > 0)
        r = sat16((int32_t)r * 2);
    if (k->relu_e < 0)
        r = (int16_t)qp_fx_rdbypot(r, -k->relu_e);
    r = (int16_t)((r + (1 << 15)) >> 1);
    /* SaturatingDoublingHighMul (truncating) */
    int16_t pre = r == preshift && r == INT16_MIN
                      ? INT16_MAX
                      : (int16_t)(((int32_t)r * preshift) / (1 << 15));
    int32_t v = qp_fx_rdbypot(pre, -k->out_e) + s->qout[0].zp;
    return v;
}

static double unary_f(int32_t builtin, double v, float alpha)
{
    switch (builtin) {
    case QP_TFL_LOGISTIC: return 1.0 / (1.0 + exp(-v));
    case QP_TFL_TANH: return tanh(v);
    case QP_TFL_LEAKY_RELU: return v > 0 ? v : alpha * v;
    case QP_TFL_HARD_SWISH: {
        double r = v + 3 < 0 ? 0 : v + 3 > 6 ? 6 : v + 3;
        return v * r / 6;
    }
    case QP_TFL_RELU: return v < 0 ? 0 : v;
    case QP_TFL_RELU6: return v < 0 ? 0 : v > 6 ? 6 : v;
    case QP_TFL_RELU_N1_TO_1: return v < -1 ? -1 : v > 1 ? 1 : v;
    default: return v;
    }
}

static enum qp_status prep_unary(struct qp_tfl_node *s,
                                 const struct qp_tfl_model *m,
                                 const struct qp_tfl_op *op,
                                 struct qp_error *err)
{
    enum qp_status st = alloc_impl(s, sizeof(struct unary), err);
    if (st || (st = qp_tfl_same_shape(s, m, op, 0, err)))
        return st;
    struct unary *k = s->impl;
    enum qp_dtype xt = s->in[0].dtype, yt = s->out[0].dtype;
    int32_t b = op->builtin;
    if ((b == QP_TFL_QUANTIZE || b == QP_TFL_DEQUANTIZE) &&
        xt == QP_DTYPE_F32 && yt == QP_DTYPE_F32) {
        k->identity = true; /* a dequantized model's */
        return QP_OK;
    }
    if (b == QP_TFL_DEQUANTIZE) {
        bool ok = (xt == QP_DTYPE_F16 || s->qin[0].quant) && yt == QP_DTYPE_F32;
        return ok ? QP_OK : qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED,
                                        "%s to %s", qp_dtype_name(xt),
                                        qp_dtype_name(yt));
    }
    if (b == QP_TFL_QUANTIZE) {
        if (!s->qout[0].quant || (xt != QP_DTYPE_F32 && !s->qin[0].quant))
            return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "%s to %s",
                               qp_dtype_name(xt), qp_dtype_name(yt));
        if (xt != QP_DTYPE_F32)
            quantize_multiplier((double)s->qin[0].scale /
                                (double)s->qout[0].scale, &k->m_id, &k->s_id);
        return QP_OK;
    }
    if (xt != yt)
        return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "%s to %s",
                           qp_dtype_name(xt), qp_dtype_name(yt));
    if (xt == QP_DTYPE_F32)
        return QP_OK;
    if (!is_q(s, 0) ||
        (xt != QP_DTYPE_I8 && xt != QP_DTYPE_U8 && xt != QP_DTYPE_I16))
        return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "%s tensors",
                           qp_dtype_name(xt));
    float si = s->qin[0].scale, so = s->qout[0].scale;
    const struct qp_dtype_traits *tr = qp_dtype_traits(yt);
    switch (b) {
    case QP_TFL_LEAKY_RELU:
        quantize_multiplier(si * s->opt.alpha / so, &k->m_alpha, &k->s_alpha);
        quantize_multiplier(si / so, &k->m_id, &k->s_id);
        return QP_OK;
    case QP_TFL_RELU: case QP_TFL_RELU6: case QP_TFL_RELU_N1_TO_1: {
        float lo = b == QP_TFL_RELU_N1_TO_1 ? -1.0f : 0.0f;
        float hi = b == QP_TFL_RELU6 ? 6.0f : 1.0f;
        quantize_multiplier(si / so, &k->m_id, &k->s_id);
        int32_t zp = s->qout[0].zp;
        k->lo = clampi(qp_tfl_round_code(lo / so, zp), (int32_t)tr->min,
                       (int32_t)tr->max);
        k->hi = b == QP_TFL_RELU ? (int32_t)tr->max
                                 : clampi(qp_tfl_round_code(hi / so, zp),
                                          (int32_t)tr->min, (int32_t)tr->max);
        return QP_OK;
    }
    case QP_TFL_HARD_SWISH: {
        if (xt == QP_DTYPE_I16)
            break;
        float hires = (1.0f / 128.0f) * si;
        int32_t m32, e;
        quantize_multiplier(hires / so, &m32, &e);
        k->out_m16 = down16(m32);
        k->out_e = e;
        quantize_multiplier(hires / (3.0f / 32768.0f), &m32, &e);
        k->relu_m16 = down16(m32);
        k->relu_e = e;
        if (k->out_e > 0)
            return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "output scale "
                               "too small for TFLite's HARD_SWISH");
        return QP_OK;
    }
    case QP_TFL_LOGISTIC: case QP_TFL_TANH:
        if (xt == QP_DTYPE_I16)
            break;
        if (s->flavor == QP_TFL_MICRO && xt == QP_DTYPE_I8) {
            /* TFLite Micro: the input on a Q4 grid, gemmlowp's function */
            bool lg = b == QP_TFL_LOGISTIC;
            if (s->qout[0].zp != (lg ? -128 : 0) ||
                so != (lg ? 1.0f / 256 : 1.0f / 128))
                return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "TFLite "
                                   "Micro needs output scale 1/%d, zero point "
                                   "%d", lg ? 256 : 128, lg ? -128 : 0);
            int e;
            double q = frexp((double)si * (double)(1 << 27), &e);
            k->in_mult = (int32_t)round(q * 2147483648.0);
            k->in_shift = e;
            /* CalculateInputRadius(4, shift) */
            k->radius = (int32_t)floor(15.0 * (double)(1 << 27) /
                                       ldexp(1.0, e));
            k->fixed = true;
            return QP_OK;
        }
        /* TFLite's optimized kernels: a table of the float function of
         * each code, rounded to the output grid */
        k->lut = true;
        for (int v = 0; v < 256; v++) {
            int32_t q = xt == QP_DTYPE_I8 ? (int8_t)v : v;
            float deq = si * (float)(q - s->qin[0].zp);
            float f = b == QP_TFL_LOGISTIC ? 1.0f / (1.0f + expf(-deq))
                                           : tanhf(deq);
            /* clamped as a float: an output scale tiny enough puts the
             * code beyond int32 (and a NaN goes to the lowest code) */
            float y = roundf(f * (1.0f / so)) + (float)s->qout[0].zp;
            if (!(y >= (float)tr->min))
                y = (float)tr->min;
            if (y > (float)tr->max)
                y = (float)tr->max;
            k->table[v] = (int32_t)y;
        }
        return QP_OK;
    default:
        break;
    }
    return qp_tfl_fail(err, m, op, QP_E_UNSUPPORTED, "%s tensors",
                       qp_dtype_name(xt));
}

/* One quantized element of a unary operator. */
static int32_t unary_q(const struct qp_tfl_node *s, const struct unary *k,
                       int32_t q)
{
    const struct qp_dtype_traits *tr = qp_dtype_traits(s->out[0].dtype);
    int32_t lo = (int32_t)tr->min, hi = (int32_t)tr->max;
    int32_t x = q - s->qin[0].zp, zp = s->qout[0].zp;
    switch (s->builtin) {
    case QP_TFL_LEAKY_RELU:
        return clampi(zp + (x >= 0 ? mbqm(x, k->m_id, k->s_id)
                                   : mbqm(x, k->m_alpha, k->s_alpha)), lo, hi);
    case QP_TFL_RELU: case QP_TFL_RELU6: case QP_TFL_RELU_N1_TO_1:
        return clampi(zp + mbqm(x, k->m_id, k->s_id), k->lo, k->hi);
    case QP_TFL_QUANTIZE:
        return clampi(mbqm(x, k->m_id, k->s_id) + zp, lo, hi);
    case QP_TFL_HARD_SWISH:
        return clampi(hard_swish(s, k, q), lo, hi);
    default: /* LOGISTIC, TANH */
        if (!k->fixed)
            return k->table[(uint8_t)q];
        if (x <= -k->radius || x >= k->radius)
            return x < 0 ? INT8_MIN : INT8_MAX;
        int32_t q4 = mbqm(x, k->in_mult, k->in_shift);
        if (s->builtin == QP_TFL_LOGISTIC)
            return clampi(qp_fx_rdbypot(qp_fx_logistic(q4, 4), 23) - 128,
                          INT8_MIN, INT8_MAX);
        return clampi(qp_fx_rdbypot(qp_fx_tanh(q4, 4), 24), INT8_MIN, INT8_MAX);
    }
}

static enum qp_status run_unary(const struct qp_op_ctx *c,
                                const struct qp_tfl_node *s,
                                struct qp_tensor *const *out,
                                struct qp_error *err)
{
    const struct unary *k = s->impl;
    const struct qp_tensor *x = c->in[0];
    size_t n = qp_tensor_numel(x);
    enum qp_dtype xt = x->dtype, yt = out[0]->dtype;
    float *fy = out[0]->data;
    if (k->identity) {
        qp_tfl_copy(c, out);
        return QP_OK;
    }
    if (s->builtin == QP_TFL_DEQUANTIZE) {
        for (size_t i = 0; i < n; i++)
            fy[i] = xt == QP_DTYPE_F16
                        ? (float)qp_elem_get_f64(xt, x->data, i)
                        : (float)((double)s->qin[0].scale *
                                  (qp_tfl_get_int(xt, x->data, i) - s->qin[0].zp));
        return QP_OK;
    }
    if (s->builtin == QP_TFL_QUANTIZE && xt == QP_DTYPE_F32) {
        const struct qp_dtype_traits *tr = qp_dtype_traits(yt);
        for (size_t i = 0; i < n; i++) {
            float v = ((const float *)x->data)[i];
            int32_t q;
            if (s->flavor == QP_TFL_X86) /* AffineQuantize: double division */
                q = (int32_t)fmax(fmin(round((double)v / (double)s->qout[0].scale)
                                       + s->qout[0].zp, (double)tr->max),
                                  (double)tr->min);
            else
                q = qp_qa_quantize_one(QP_QA_TFLITE, v, s->qout[0].scale,
                                       s->qout[0].zp, (int32_t)tr->min,
                                       (int32_t)tr->max);
            qp_elem_set_i64(yt, out[0]->data, i, q);
        }
        return QP_OK;
    }
    if (xt == QP_DTYPE_F32) {
        for (size_t i = 0; i < n; i++)
            fy[i] = (float)unary_f(s->builtin, ((const float *)x->data)[i],
                                   s->opt.alpha);
        return QP_OK;
    }
    (void)err;
    for (size_t i = 0; i < n; i++)
        qp_elem_set_i64(yt, out[0]->data, i,
                        unary_q(s, k, qp_tfl_get_int(xt, x->data, i)));
    return QP_OK;
}

const struct qp_tfl_impl qp_tfl_impls_elem[] = {
    {QP_TFL_ADD, prep_binary, run_binary},
    {QP_TFL_SUB, prep_binary, run_binary},
    {QP_TFL_MUL, prep_binary, run_binary},
    {QP_TFL_LEAKY_RELU, prep_unary, run_unary},
    {QP_TFL_HARD_SWISH, prep_unary, run_unary},
    {QP_TFL_RELU, prep_unary, run_unary},
    {QP_TFL_RELU6, prep_unary, run_unary},
    {QP_TFL_RELU_N1_TO_1, prep_unary, run_unary},
    {QP_TFL_LOGISTIC, prep_unary, run_unary},
    {QP_TFL_TANH, prep_unary, run_unary},
    {QP_TFL_QUANTIZE, prep_unary, run_unary},
    {QP_TFL_DEQUANTIZE, prep_unary, run_unary},
    {-1, NULL, NULL},
};
