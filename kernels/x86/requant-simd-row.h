/* kernels/x86/requant-simd-row.h: the flavor dispatch and row loop shared
 * by requant-avx2.c, requant-avx512.c and kernels/arm/requant-neon.c
 * (nothing in it is x86-specific), included once by each after it
 * defines, for its vector width:
 *
 *   VI, LANES, ROW_FN            integer vector type, lanes, exported name
 *   struct params, params_init   broadcast constants of one struct qp_rq
 *   v_load(acc + i)              LANES accumulators
 *   v_loadi(a, k, per)           a[k .. k+LANES) or LANES copies of a[k]
 *   v_add, clamp(v, p)           int32 add; clamp to [qmin, qmax]
 *   scale_double, scale_single, scale_rndnu   the fixed-point steps
 *   requant_float(x, scale, k, per, p)        xnnpack-fp32 / ort
 *   requant_onnx(x, scale_d, k, per, p)       onnx-ref
 *   store(dt, out, i, v)         narrow LANES clamped values to dt
 *   optionally V_TAIL, with v_load_tail(acc, r) and store_tail(dt, out,
 *   i, r, v) on the first r < LANES lanes: a plane's tail then runs
 *   masked instead of through the reference
 *
 * The flavor is a constant inside each case of ROW_FN, so vec()'s switch
 * folds and every loop is one flavor's straight-line arithmetic. Tails
 * (n % LANES) of rows of at least LANES run as one more vector over the
 * last LANES elements (the overlap computed again, to the same bytes:
 * each element is a function of its accumulator and channel alone) when
 * out does not overlap acc; otherwise, and for shorter rows, masked lanes
 * (V_TAIL, one channel) or the reference. */

/* simple: the shifts are <= 0 and no multiplier is INT32_MIN (one
 * channel's, checked by run(); every channel's, rq->right_only), so the
 * double-rounding flavors make no left shift and their multiply cannot
 * saturate: that step and both checks are left out. */
static inline __attribute__((always_inline)) VI
vec(enum qp_rq_flavor f, const struct qp_rq *rq, size_t k, bool per,
    bool simple, VI x, const struct params *p)
{
    switch (f) {
    case QP_RQ_TFLITE_DOUBLE:
    case QP_RQ_CMSIS_NN_DOUBLE:
    case QP_RQ_GEMMLOWP:
        return clamp(v_add(scale_double(x, v_loadi(rq->multiplier, k, per),
                                        v_loadi(rq->shift, k, per),
                                        f == QP_RQ_GEMMLOWP && !simple,
                                        f != QP_RQ_CMSIS_NN_DOUBLE && !simple,
                                        simple),
                           p->zp), p);
    case QP_RQ_TFLITE_SINGLE:
    case QP_RQ_CMSIS_NN_SINGLE:
        return clamp(v_add(scale_single(x, v_loadi(rq->multiplier, k, per),
                                        v_loadi(rq->shift, k, per)),
                           p->zp), p);
    case QP_RQ_XNNPACK_RNDNU:
        /* |scaled| <= 2^30: the zero point add cannot overflow */
        return clamp(v_add(scale_rndnu(x, v_loadi(rq->multiplier, k, per),
                                       v_loadi(rq->shift, k, per)),
                           p->zp), p);
    case QP_RQ_XNNPACK_FP32:
    case QP_RQ_ORT:
        return requant_float(x, rq->scale, k, per, p);
    case QP_RQ_ONNX_REF:
        return requant_onnx(x, rq->scale_d, k, per, p);
    default:
        return x;
    }
}

/* True when out[0, n) of dt does not overlap acc[0, n): a tail computed
 * again then cannot read an accumulator the loop has overwritten. */
static inline bool apart(const int32_t *acc, size_t n, const void *out,
                         enum qp_dtype dt)
{
    uintptr_t a = (uintptr_t)acc, o = (uintptr_t)out;
    uintptr_t es = dt == QP_DTYPE_I16 ? 2 : 1;
    return o + n * es <= a || a + n * sizeof *acc <= o;
}

/* The vector loop over acc[0, n) with the output dtype a constant dt. */
static inline __attribute__((always_inline)) size_t
run_loop(enum qp_rq_flavor f, enum qp_dtype dt, const struct qp_rq *rq,
         size_t c, size_t kb, bool per, bool simple, const int32_t *acc,
         size_t n, void *out, const struct params *p)
{
    size_t i = 0;
    for (; i + LANES <= n; i += LANES)
        store(dt, out, i, vec(f, rq, per ? c + i : kb, per, simple, v_load(acc + i), p));
    if (i < n && n >= LANES && apart(acc, n, out, dt)) {
        size_t k = n - LANES; /* the last vector, overlapping the loop's */
        store(dt, out, k, vec(f, rq, per ? c + k : kb, per, simple, v_load(acc + k), p));
        i = n;
    }
#if defined(V_TAIL)
    /* one channel's tail as masked lanes (no per-element array is read) */
    if (!per && i < n) {
        store_tail(dt, out, i, n - i,
                   vec(f, rq, kb, false, simple, v_load_tail(acc + i, n - i), p));
        i = n;
    }
#endif
    return i;
}

static inline __attribute__((always_inline)) size_t
run_dtype(enum qp_rq_flavor f, const struct qp_rq *rq, size_t c, size_t kb,
          bool per, bool simple, const int32_t *acc, size_t n, void *out,
          const struct params *p)
{
    switch (rq->out_dtype) {
    case QP_DTYPE_I8:
        return run_loop(f, QP_DTYPE_I8, rq, c, kb, per, simple, acc, n, out, p);
    case QP_DTYPE_I16:
        return run_loop(f, QP_DTYPE_I16, rq, c, kb, per, simple, acc, n, out, p);
    default: /* store()'s uint8 */
        return run_loop(f, QP_DTYPE_U8, rq, c, kb, per, simple, acc, n, out, p);
    }
}

static inline __attribute__((always_inline)) void
run(enum qp_rq_flavor f, const struct qp_rq *rq, size_t c, bool per,
    const int32_t *acc, size_t n, void *out)
{
    struct params p;
    params_init(&p, rq);
    size_t kb = rq->channels == 1 ? 0 : c, i;
    bool dbl = f == QP_RQ_TFLITE_DOUBLE || f == QP_RQ_CMSIS_NN_DOUBLE ||
               f == QP_RQ_GEMMLOWP;
    if (per && dbl && rq->right_only) {
        i = run_dtype(f, rq, c, kb, true, true, acc, n, out, &p);
    } else if (per) {
        i = run_dtype(f, rq, c, kb, true, false, acc, n, out, &p);
    } else {
        /* One channel: its constants copied where no store through out
         * can reach them, so their broadcasts and the arithmetic on the
         * shift leave the loop. */
        int32_t m = rq->multiplier ? rq->multiplier[kb] : 0;
        int32_t sh = rq->shift ? rq->shift[kb] : 0;
        float sc = rq->scale ? rq->scale[kb] : 0.0f;
        double sd = rq->scale_d ? rq->scale_d[kb] : 0.0;
        struct qp_rq one = *rq;
        one.channels = 1;
        one.multiplier = &m;
        one.shift = &sh;
        one.scale = &sc;
        one.scale_d = &sd;
        if (dbl && sh <= 0 && m != INT32_MIN)
            i = run_dtype(f, &one, 0, 0, false, true, acc, n, out, &p);
        else
            i = run_dtype(f, &one, 0, 0, false, false, acc, n, out, &p);
    }
    if (i < n)
        qp_rq_row_ref(rq, per ? c + i : c, per, acc + i, n - i,
                      (char *)out + i * qp_rq_out_size(rq));
}

#define RUN_CASE(F)                                                            \
    case F:                                                                    \
        run(F, rq, c, per_elem, acc, n, out);                                  \
        break

void ROW_FN(const struct qp_rq *rq, size_t c, bool per_elem,
            const int32_t *acc, size_t n, void *out)
{
    switch (rq->flavor) {
        RUN_CASE(QP_RQ_TFLITE_DOUBLE);
        RUN_CASE(QP_RQ_CMSIS_NN_DOUBLE);
        RUN_CASE(QP_RQ_GEMMLOWP);
        RUN_CASE(QP_RQ_TFLITE_SINGLE);
        RUN_CASE(QP_RQ_CMSIS_NN_SINGLE);
        RUN_CASE(QP_RQ_XNNPACK_RNDNU);
        RUN_CASE(QP_RQ_XNNPACK_FP32);
        RUN_CASE(QP_RQ_ORT);
        RUN_CASE(QP_RQ_ONNX_REF);
    default:
        qp_rq_row_ref(rq, c, per_elem, acc, n, out);
    }
}

#undef RUN_CASE
