/* cli/cmd-requant.c: `qprobe requant`, device-exact requantization of
 * integer accumulators (kernels/requant.h), its step-by-step explanation,
 * and the (multiplier, shift) derivation of each runtime. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/opt-types.h"
#include "core/size.h"
#include "core/tensor.h"
#include "formats/npy.h"
#include "kernels/requant.h"

static const struct qp_cli cli = {
    "requant",
    "--flavor F --acc ACC.npy (--multiplier M.npy --shift S.npy | --scale "
    "SCALE.npy) [options] -o OUT.npy\n"
    "       qprobe requant --flavor F --derive REAL.npy --multiplier-out M.npy "
    "--shift-out S.npy\n"
    "       qprobe requant --flavor F --derive-per-channel --input-scale S "
    "--weight-scale WS.npy --output-scale S --multiplier-out M.npy --shift-out "
    "S.npy",
    "Requantizes integer accumulators exactly as a device runtime does, or "
    "derives the (multiplier, shift) pairs that runtime computes from scales.",
    "flavors: tflite-double (tflite), tflite-single, tflite-int64-double,\n"
    "  tflite-int64-single, cmsis-nn-double (cmsis-nn), cmsis-nn-single,\n"
    "  cmsis-nn-s64, gemmlowp, xnnpack-fp32, xnnpack-rndnu, onnx-ref (onnx), ort.\n"
    "Output = clamp(scaled + zero point, qmin, qmax); the real multiplier is\n"
    "multiplier * 2^(shift - 31). Parameters are per channel along the last\n"
    "axis of ACC.npy; arrays of length 1 broadcast. xnnpack-fp32, ort and\n"
    "onnx-ref take --scale; the others take --multiplier/--shift, or --scale\n"
    "from which they derive them as their runtime does. Float32 quantities\n"
    "given as float64 arrays must be exact float32 values.",
    0, 0, NULL,
};

struct args {
    const char *acc, *mult, *shift, *scale, *out, *derive, *w_scale;
    const char *mult_out, *shift_out;
    bool derive_pc, legacy;
    enum qp_rq_flavor flavor;
};

/* ---- reading parameter arrays ---- */

static int64_t int_at(const struct qp_tensor *t, size_t i)
{
    switch (t->dtype) {
    case QP_DTYPE_I8: return ((const int8_t *)t->data)[i];
    case QP_DTYPE_U8: return ((const uint8_t *)t->data)[i];
    case QP_DTYPE_I16: return ((const int16_t *)t->data)[i];
    case QP_DTYPE_U16: return ((const uint16_t *)t->data)[i];
    case QP_DTYPE_I32: return ((const int32_t *)t->data)[i];
    case QP_DTYPE_U32: return ((const uint32_t *)t->data)[i];
    case QP_DTYPE_I64: return ((const int64_t *)t->data)[i];
    default: return (int64_t)((const uint64_t *)t->data)[i];
    }
}

/* A copy of integer tensor t as int32; every value must fit. */
static enum qp_status ints32(const char *path, const struct qp_tensor *t,
                             const char *what, int32_t **out,
                             struct qp_error *err)
{
    if (!qp_dtype_is_int(t->dtype) || qp_dtype_is_packed(t->dtype))
        return qp_fail(err, QP_E_FORMAT, "'%s': %s must be an integer array, not %s",
                       path, what, qp_dtype_name(t->dtype));
    size_t n = qp_tensor_numel(t);
    *out = malloc((n ? n : 1) * sizeof **out);
    if (!*out)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        int64_t v = int_at(t, i);
        if (v < INT32_MIN || v > INT32_MAX ||
            (t->dtype == QP_DTYPE_U64 && ((const uint64_t *)t->data)[i] > INT64_MAX)) {
            free(*out);
            *out = NULL;
            return qp_fail(err, QP_E_FORMAT,
                           "'%s': %s[%zu] = %" PRId64 " does not fit int32", path,
                           what, i, v);
        }
        (*out)[i] = (int32_t)v;
    }
    return QP_OK;
}

/* A copy of a float tensor as double; float32 quantities given as float64
 * must be exact float32 values. */
static enum qp_status floats(const char *path, const struct qp_tensor *t,
                             const char *what, bool need_f32, double **out,
                             struct qp_error *err)
{
    if (t->dtype != QP_DTYPE_F32 && t->dtype != QP_DTYPE_F64)
        return qp_fail(err, QP_E_FORMAT, "'%s': %s must be float32 or float64, not %s",
                       path, what, qp_dtype_name(t->dtype));
    size_t n = qp_tensor_numel(t);
    *out = malloc((n ? n : 1) * sizeof **out);
    if (!*out)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        double v = t->dtype == QP_DTYPE_F32 ? ((const float *)t->data)[i]
                                            : ((const double *)t->data)[i];
        if (need_f32 && isfinite(v) && (double)(float)v != v) {
            free(*out);
            *out = NULL;
            return qp_fail(err, QP_E_FORMAT,
                           "'%s': %s[%zu] = %.17g is not a float32 value (the "
                           "runtime uses float32): write the array as float32",
                           path, what, i, v);
        }
        (*out)[i] = v;
    }
    return QP_OK;
}

/* Parameter arrays hold 1 value or one per channel. */
static enum qp_status check_len(const char *path, const struct qp_tensor *t,
                                const char *what, size_t channels,
                                const char *acc_path, struct qp_error *err)
{
    size_t n = qp_tensor_numel(t);
    if (t->ndim > 1 || (n != 1 && n != channels))
        return qp_fail(err, QP_E_SHAPE,
                       "'%s': %s has %zu values; expected 1 or %zu (the last "
                       "axis of '%s')",
                       path, what, n, channels, acc_path);
    return QP_OK;
}

/* ---- apply ---- */

static void print_params(const struct qp_rq *rq, size_t k)
{
    if (rq->multiplier)
        printf("multiplier %" PRId32 ", shift %" PRId32 " (real %.9g)",
               rq->multiplier[k], rq->shift[k],
               ldexp((double)rq->multiplier[k], rq->shift[k] - 31));
    else if (rq->scale)
        printf("scale %.9g (float32 %a)", (double)rq->scale[k], (double)rq->scale[k]);
    else
        printf("scale %.17g (float64)", rq->scale_d[k]);
}

static void explain(const struct qp_rq *rq, const struct qp_tensor *acc,
                    size_t channels, size_t n)
{
    size_t total = qp_tensor_numel(acc);
    printf("%s: zero point %" PRId32 ", clamp [%" PRId32 ", %" PRId32 "], %s\n",
           qp_rq_flavor_name(rq->flavor), rq->zero_point, rq->qmin, rq->qmax,
           qp_dtype_name(rq->out_dtype));
    for (size_t i = 0; i < n && i < total; i++) {
        size_t c = i % channels, k = rq->channels == 1 ? 0 : c;
        int64_t a = int_at(acc, i);
        printf("[%zu] acc %" PRId64 ", channel %zu: ", i, a, c);
        print_params(rq, k);
        printf("\n");
        struct qp_rq_trace t;
        int32_t out = qp_rq_explain(rq, c, a, &t);
        for (int s = 0; s < t.n; s++) {
            if (t.step[s].is_float)
                printf("    %-52s %.9g\n", t.step[s].what, t.step[s].f);
            else
                printf("    %-52s %" PRId64 "\n", t.step[s].what, t.step[s].i);
        }
        printf("    %-52s %" PRId32 "\n", "output", out);
    }
}

/* Prepares rq from --multiplier/--shift or --scale. */
static enum qp_status prepare(const struct args *a, size_t channels,
                              int32_t zp, enum qp_dtype dt, int32_t qmin,
                              int32_t qmax, struct qp_rq *rq,
                              struct qp_error *err)
{
    struct qp_tensor *m = NULL, *s = NULL;
    int32_t *mv = NULL, *sv = NULL;
    double *scv = NULL;
    enum qp_status st;
    if (a->scale) {
        bool f32 = a->flavor == QP_RQ_XNNPACK_FP32 || a->flavor == QP_RQ_ORT ||
                   a->flavor == QP_RQ_XNNPACK_RNDNU;
        if ((st = qp_fmt_npy_load(a->scale, NULL, false, &s, err)) == QP_OK &&
            (st = check_len(a->scale, s, "scale", channels, a->acc, err)) == QP_OK &&
            (st = floats(a->scale, s, "scale", f32, &scv, err)) == QP_OK &&
            (st = qp_rq_prepare_float(rq, a->flavor, scv, qp_tensor_numel(s), zp, dt,
                                      qmin, qmax, err)) != QP_OK)
            qp_error_prefix(err, "'%s': ", a->scale);
    } else {
        if ((st = qp_fmt_npy_load(a->mult, NULL, false, &m, err)) == QP_OK &&
            (st = qp_fmt_npy_load(a->shift, NULL, false, &s, err)) == QP_OK &&
            (st = check_len(a->mult, m, "multiplier", channels, a->acc, err)) == QP_OK &&
            (st = check_len(a->shift, s, "shift", channels, a->acc, err)) == QP_OK &&
            (st = ints32(a->mult, m, "multiplier", &mv, err)) == QP_OK &&
            (st = ints32(a->shift, s, "shift", &sv, err)) == QP_OK) {
            size_t nm = qp_tensor_numel(m), ns = qp_tensor_numel(s);
            if (nm != ns)
                st = qp_fail(err, QP_E_SHAPE,
                             "'%s' has %zu values but '%s' has %zu",
                             a->mult, nm, a->shift, ns);
            else if ((st = qp_rq_prepare_fixed(rq, a->flavor, mv, sv, nm, zp, dt,
                                               qmin, qmax, err)) != QP_OK)
                qp_error_prefix(err, "'%s', '%s': ", a->mult, a->shift);
        }
    }
    free(mv);
    free(sv);
    free(scv);
    qp_tensor_free(m);
    qp_tensor_free(s);
    return st;
}

static int run_apply(const struct args *a, int32_t zp, enum qp_dtype dt,
                     int32_t qmin, int32_t qmax, long explain_n)
{
    struct qp_error err;
    struct qp_tensor *acc = NULL, *out = NULL;
    struct qp_rq rq = {0};
    int32_t *acc32 = NULL;
    int rc = QP_EXIT_FAIL;
    enum qp_status st = qp_fmt_npy_load(a->acc, NULL, false, &acc, &err);
    if (st != QP_OK)
        goto done;
    bool wide = qp_rq_flavor_acc64(a->flavor);
    if (acc->dtype != QP_DTYPE_I32 && acc->dtype != QP_DTYPE_I64) {
        st = qp_fail(&err, QP_E_FORMAT, "'%s': accumulators must be int32 or int64, not %s",
                     a->acc, qp_dtype_name(acc->dtype));
        goto done;
    }
    size_t total = qp_tensor_numel(acc);
    size_t channels = acc->ndim ? (size_t)acc->shape[acc->ndim - 1] : 1;
    if (channels == 0 || total == 0) {
        st = qp_fail(&err, QP_E_SHAPE, "'%s': no accumulators", a->acc);
        goto done;
    }
    /* an int64 file for an int32 flavor: every value must fit */
    if (acc->dtype == QP_DTYPE_I64 && !wide &&
        (st = ints32(a->acc, acc, "accumulator", &acc32, &err)) != QP_OK)
        goto done;
    if ((st = prepare(a, channels, zp, dt, qmin, qmax, &rq, &err)) != QP_OK)
        goto done;
    if (explain_n > 0)
        explain(&rq, acc, channels, (size_t)explain_n);
    if (a->out) {
        st = qp_tensor_new(acc->name, dt, acc->ndim, acc->shape, &out, &err);
        if (st != QP_OK)
            goto done;
        size_t rows = total / channels;
        if (acc->dtype == QP_DTYPE_I64 && wide)
            qp_rq_apply_i64(&rq, acc->data, rows, channels, out->data);
        else
            qp_rq_apply_i32(&rq, acc32 ? acc32 : acc->data, rows, channels, out->data);
        if ((st = qp_fmt_npy_save(a->out, out, &err)) != QP_OK)
            goto done;
    }
    rc = QP_EXIT_OK;
done:
    if (st != QP_OK)
        qp_cli_fail(&err);
    free(acc32);
    qp_rq_release(&rq);
    qp_tensor_free(acc);
    qp_tensor_free(out);
    return rc;
}

/* ---- derive ---- */

static enum qp_status save_pairs(const struct args *a, const int32_t *m,
                                 const int32_t *s, size_t n,
                                 struct qp_error *err)
{
    int64_t shape[1] = {(int64_t)n};
    struct qp_tensor *tm = NULL, *ts = NULL;
    enum qp_status st;
    if ((st = qp_tensor_wrap("multiplier", QP_DTYPE_I32, 1, shape, m, n * 4, NULL, &tm,
                             err)) == QP_OK &&
        (st = qp_tensor_wrap("shift", QP_DTYPE_I32, 1, shape, s, n * 4, NULL, &ts, err)) ==
            QP_OK &&
        (st = qp_fmt_npy_save(a->mult_out, tm, err)) == QP_OK)
        st = qp_fmt_npy_save(a->shift_out, ts, err);
    qp_tensor_free(tm);
    qp_tensor_free(ts);
    return st;
}

static int run_derive(const struct args *a, float in_scale, float out_scale)
{
    struct qp_error err;
    struct qp_tensor *t = NULL;
    double *v = NULL;
    int32_t *m = NULL, *s = NULL;
    const char *path = a->derive_pc ? a->w_scale : a->derive;
    enum qp_status st = qp_fmt_npy_load(path, NULL, false, &t, &err);
    if (st == QP_OK)
        st = floats(path, t, a->derive_pc ? "weight scale" : "real multiplier",
                    a->derive_pc, &v, &err);
    size_t n = t ? qp_tensor_numel(t) : 0;
    if (st == QP_OK && (t->ndim > 1 || n == 0))
        st = qp_fail(&err, QP_E_SHAPE, "'%s': expected a non-empty 1-D array", path);
    if (st == QP_OK && (!(m = malloc(n * sizeof *m)) || !(s = malloc(n * sizeof *s))))
        st = qp_fail(&err, QP_E_NOMEM, "out of memory");
    if (st == QP_OK && a->derive_pc) {
        float *w = malloc(n * sizeof *w);
        if (!w) {
            st = qp_fail(&err, QP_E_NOMEM, "out of memory");
        } else {
            for (size_t i = 0; i < n; i++)
                w[i] = (float)v[i];
            enum qp_rq_product p = a->legacy ? QP_RQ_PRODUCT_LEGACY_FLOAT
                                             : qp_rq_flavor_product(a->flavor);
            st = qp_rq_derive_per_channel(a->flavor, p, in_scale, w, n, out_scale, m, s,
                                          &err);
            free(w);
        }
    } else if (st == QP_OK) {
        st = qp_rq_derive(a->flavor, v, n, m, s, &err);
    }
    if (st != QP_OK && t)
        qp_error_prefix(&err, "'%s': ", path);
    if (st == QP_OK)
        st = save_pairs(a, m, s, n, &err);
    free(v);
    free(m);
    free(s);
    qp_tensor_free(t);
    return st == QP_OK ? QP_EXIT_OK : qp_cli_fail(&err);
}

/* ---- options ---- */

static enum qp_status parse_pos_float(const char *arg, void *dest,
                                      struct qp_error *err)
{
    double v;
    if (!qp_cli_parse_f64(arg, &v) || !(v > 0) || !isfinite((float)v))
        return qp_fail(err, QP_E_INVAL, "'%s' is not a positive float32", arg);
    *(float *)dest = (float)v;
    return QP_OK;
}

static enum qp_status parse_out_dtype(const char *arg, void *dest,
                                      struct qp_error *err)
{
    enum qp_dtype dt;
    if (!qp_dtype_from_name(arg, &dt) ||
        (dt != QP_DTYPE_I8 && dt != QP_DTYPE_U8 && dt != QP_DTYPE_I16))
        return qp_fail(err, QP_E_INVAL, "'%s': int8, uint8 or int16", arg);
    *(enum qp_dtype *)dest = dt;
    return QP_OK;
}

/* True when any of the named options was given. */
static bool any_given(const struct qp_cli_opt *opts, const char *const *names)
{
    for (size_t i = 0; names[i]; i++)
        if (qp_cli_given(opts, names[i]))
            return true;
    return false;
}

int cmd_requant(int argc, char **argv)
{
    struct args a = {0};
    int64_t zp = 0, qmin = 0, qmax = 0, n_explain = 0;
    float in_scale = 0, out_scale = 0;
    enum qp_dtype dt = QP_DTYPE_COUNT;
    const double i32lo = INT32_MIN, i32hi = INT32_MAX;
    struct qp_cli_opt opts[] = {
        QP_OPT_PARSE_("flavor", 'f', "F", "requantization flavor (required; see "
                      "below)", &a.flavor, qp_opt_flavor),
        QP_OPT_STR_("acc", 0, "ACC.npy", "accumulators, int32 (int64 for the "
                    "int64 flavors), channels along the last axis", &a.acc),
        QP_OPT_STR_("multiplier", 0, "M.npy", "Q31 multipliers, int32, 1 or one "
                    "per channel", &a.mult),
        QP_OPT_STR_("shift", 0, "S.npy", "shifts, int32, TFLite convention (> 0 "
                    "shifts left)", &a.shift),
        QP_OPT_STR_("scale", 0, "SCALE.npy", "effective scales (float32 or "
                    "float64) instead of multiplier/shift", &a.scale),
        QP_OPT_INT_("zero-point", 'z', "Z", "output zero point (default 0)", &zp,
                    i32lo, i32hi),
        QP_OPT_INT_("qmin", 0, "A", "final clamp minimum, output units (default: "
                    "the dtype's)", &qmin, i32lo, i32hi),
        QP_OPT_INT_("qmax", 0, "B", "final clamp maximum, output units (default: "
                    "the dtype's)", &qmax, i32lo, i32hi),
        QP_OPT_PARSE_("out-dtype", 0, "T", "int8, uint8 or int16 (default int8; "
                      "int16 for the int64 flavors)", &dt, parse_out_dtype),
        QP_OPT_STR_("output", 'o', "OUT.npy", "requantized output, the shape of "
                    "ACC.npy", &a.out),
        QP_OPT_INT_("explain", 0, "N", "print every intermediate of the first N "
                    "elements", &n_explain, 1, 1e15),
        QP_OPT_STR_("derive", 0, "REAL.npy", "derive (multiplier, shift) from "
                    "real multipliers (float64)", &a.derive),
        QP_OPT_FLAG_("derive-per-channel", 0, "derive from --input-scale, "
                     "--weight-scale, --output-scale", &a.derive_pc),
        QP_OPT_PARSE_("input-scale", 0, "S", "input scale (float32) for "
                      "--derive-per-channel", &in_scale, parse_pos_float),
        QP_OPT_STR_("weight-scale", 0, "WS.npy", "per-channel weight scales "
                    "(float32)", &a.w_scale),
        QP_OPT_PARSE_("output-scale", 0, "S", "output scale (float32) for "
                      "--derive-per-channel", &out_scale, parse_pos_float),
        QP_OPT_FLAG_("legacy-float-product", 0, "TFLite's legacy uint8 path: "
                     "in*w rounded to float32 first", &a.legacy),
        QP_OPT_STR_("multiplier-out", 0, "M.npy", "where --derive writes the "
                    "multipliers", &a.mult_out),
        QP_OPT_STR_("shift-out", 0, "S.npy", "where --derive writes the shifts",
                    &a.shift_out),
        QP_OPT_END_,
    };
    qp_cli_exclusive(opts, "derive", "derive-per-channel");
    int first, rc = qp_cli_parse(&cli, opts, argc, argv, &first);
    if (rc != QP_CLI_GO)
        return rc;
    if (!qp_cli_given(opts, "flavor"))
        return qp_cli_usage(&cli, "--flavor is required");
    const char *fname = qp_rq_flavor_name(a.flavor);
    bool fixed = qp_rq_flavor_fixed(a.flavor);
    static const char *const apply_opts[] = {"acc", "output", "multiplier",
                                             "shift", "scale", NULL};
    static const char *const pc_opts[] = {"input-scale", "weight-scale",
                                          "output-scale", "legacy-float-product",
                                          NULL};
    static const char *const derive_out[] = {"multiplier-out", "shift-out",
                                             "input-scale", "weight-scale",
                                             "output-scale",
                                             "legacy-float-product", NULL};

    if (a.derive || a.derive_pc) {
        if (any_given(opts, apply_opts))
            return qp_cli_usage(&cli, "derivation takes no --acc, -o, --multiplier, "
                                      "--shift or --scale");
        if (!a.mult_out || !a.shift_out)
            return qp_cli_usage(&cli, "derivation needs --multiplier-out and --shift-out");
        if (!fixed)
            return qp_cli_usage(&cli, "%s multiplies by a float scale; it derives no "
                                      "(multiplier, shift)", fname);
        if (a.derive_pc && (!in_scale || !a.w_scale || !out_scale))
            return qp_cli_usage(&cli, "--derive-per-channel needs --input-scale, "
                                      "--weight-scale and --output-scale");
        if (!a.derive_pc && any_given(opts, pc_opts))
            return qp_cli_usage(&cli, "--input-scale, --weight-scale, --output-scale and "
                                      "--legacy-float-product go with --derive-per-channel");
        return run_derive(&a, in_scale, out_scale);
    }

    if (any_given(opts, derive_out))
        return qp_cli_usage(&cli, "--multiplier-out, --shift-out and the scale options "
                                  "go with --derive or --derive-per-channel");
    if (!a.acc)
        return qp_cli_usage(&cli, "--acc is required");
    if (!a.out && !n_explain)
        return qp_cli_usage(&cli, "-o OUT.npy (or --explain N) is required");
    if (a.scale && (a.mult || a.shift))
        return qp_cli_usage(&cli, "give --scale or --multiplier/--shift, not both");
    if (!a.scale && (!a.mult || !a.shift))
        return qp_cli_usage(&cli, "give --multiplier and --shift, or --scale");
    if (!fixed && !a.scale)
        return qp_cli_usage(&cli, "%s multiplies by a float scale: give --scale", fname);
    if (dt == QP_DTYPE_COUNT)
        dt = qp_rq_flavor_acc64(a.flavor) ? QP_DTYPE_I16 : QP_DTYPE_I8;
    if (!qp_cli_given(opts, "qmin"))
        qmin = qp_dtype_traits(dt)->min;
    if (!qp_cli_given(opts, "qmax"))
        qmax = qp_dtype_traits(dt)->max;
    struct qp_error err;
    if (qp_rq_check_output(a.flavor, (int32_t)zp, dt, (int32_t)qmin,
                           (int32_t)qmax, &err) != QP_OK)
        return qp_cli_usage(&cli, "%s", err.msg);
    return run_apply(&a, (int32_t)zp, dt, (int32_t)qmin, (int32_t)qmax,
                     (long)n_explain);
}
