/* cli/cmd-kernel.c: `qprobe kernel conv|depthwise|fc`: one integer layer
 * with TFLite's conventions, to reproduce a suspicious device layer on the
 * host. Offsets are TFLite's: input_offset = -input zero point (added to
 * the input), filter_offset added to the filter (per-tensor
 * FullyConnected's weights_offset), output_offset = output zero point. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/opt-types.h"
#include "core/size.h"
#include "core/tensor.h"
#include "formats/npy.h"
#include "kernels/conv-s8.h"
#include "kernels/depthwise-s8.h"
#include "kernels/gemm-s8.h"

static const struct qp_cli cli = {
    "kernel", "conv|depthwise|fc --flavor F --input X.npy --filter W.npy "
              "--input-offset N --output-offset N (--multiplier M.npy "
              "--shift S.npy | --scale SCALE.npy) -o Y.npy [options]",
    "Run one integer conv, depthwise conv or fully-connected layer with "
    "device conventions and write its output.",
    "Offsets follow TFLite: the input offset is minus the input zero point\n"
    "and is added to the input; the output offset is the output zero point.\n"
    "Taps in the padding are skipped (as padding with the input zero point).\n"
    "The output has the input's dtype; --act-min/--act-max clamp it.\n"
    "Example (a TFLite conv layer):\n"
    "  qprobe kernel conv --flavor tflite --input x.npy --filter w.npy \\\n"
    "    --bias b.npy --input-offset 128 --output-offset -5 \\\n"
    "    --multiplier m.npy --shift s.npy --stride 2,2 --padding same -o y.npy",
    1, 1, "one of conv, depthwise, fc",
};

enum op { OP_CONV, OP_DEPTHWISE, OP_FC };

struct args {
    enum op op;
    const char *input, *filter, *bias, *mult, *shift, *scale, *out;
    enum qp_rq_flavor flavor;
    int64_t in_off, f_off, out_off, act_min, act_max, groups, dm;
    int64_t stride[2], dilation[2], pad[4];
    int padding; /* index into padding_names */
    bool same, int32_out;
    bool has_flavor, has_out_off, has_act_min, has_act_max, has_groups, has_dm;
};

static const char *const padding_names[] = {"same", "valid", NULL};

/* "a" or "a,b" (or "a,b,c,d" when n == 4) into n values >= min; "a" and
 * "a,b" repeat as TFLite's (h, w) pairs do. */
static bool parse_list(const char *s, int n, int64_t min, int64_t *out)
{
    int64_t v[4];
    int got = 0;
    char buf[128];
    if (strlen(s) >= sizeof buf)
        return false;
    strcpy(buf, s);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t;
         t = strtok_r(NULL, ",", &save)) {
        if (got == 4 || !qp_cli_parse_i64(t, &v[got]) || v[got] < min ||
            v[got] > (1 << 24))
            return false;
        got++;
    }
    if (got == 1)
        v[1] = v[0];
    if (got <= 2) { /* (h, w) -> top, left, bottom, right */
        v[2] = v[0];
        v[3] = v[1];
        got = n;
    }
    if (got != n)
        return false;
    memcpy(out, v, (size_t)n * sizeof *out);
    return true;
}

static enum qp_status parse_hw(const char *arg, void *dest,
                               struct qp_error *err)
{
    if (!parse_list(arg, 2, 1, dest))
        return qp_fail(err, QP_E_INVAL, "expected H,W (each 1..2^24), not '%s'",
                       arg);
    return QP_OK;
}

static enum qp_status parse_pad(const char *arg, void *dest,
                                struct qp_error *err)
{
    if (!parse_list(arg, 4, 0, dest))
        return qp_fail(err, QP_E_INVAL, "expected T,L,B,R, H,W or N (each "
                       "0..2^24), not '%s'", arg);
    return QP_OK;
}

static int parse_args(int argc, char **argv, struct args *a)
{
    memset(a, 0, sizeof *a);
    a->stride[0] = a->stride[1] = a->dilation[0] = a->dilation[1] = 1;
    const double i32lo = INT32_MIN, i32hi = INT32_MAX;
    struct qp_cli_opt opts[] = {
        QP_OPT_PARSE_("flavor", 'f', "F", "requantization flavor (tflite-double, "
                      "tflite-single, cmsis-nn, gemmlowp, xnnpack-fp32, ...)",
                      &a->flavor, qp_opt_flavor),
        QP_OPT_STR_("input", 'i', "X.npy", "input, int8 or uint8: NHWC "
                    "[N,H,W,C] (conv, depthwise), [N,IC] (fc)", &a->input),
        QP_OPT_STR_("filter", 'w', "W.npy", "filter, int8 or uint8: OHWI "
                    "(conv), [1,KH,KW,OC] (depthwise), [OC,IC] (fc)", &a->filter),
        QP_OPT_STR_("bias", 'b', "B.npy", "int32 bias [OC] (default none)",
                    &a->bias),
        QP_OPT_INT_("input-offset", 0, "N", "added to the input: minus its zero "
                    "point (required)", &a->in_off, i32lo, i32hi),
        QP_OPT_INT_("filter-offset", 0, "N", "added to the filter (TFLite "
                    "per-tensor fc weights_offset; default 0)", &a->f_off,
                    i32lo, i32hi),
        QP_OPT_INT_("output-offset", 0, "N", "output zero point (required "
                    "unless --int32)", &a->out_off, i32lo, i32hi),
        QP_OPT_STR_("multiplier", 'm', "M.npy", "int32 Q31 multipliers, [OC] or "
                    "[1]", &a->mult),
        QP_OPT_STR_("shift", 's', "S.npy", "int32 shifts, [OC] or [1] (positive "
                    "= left)", &a->shift),
        QP_OPT_STR_("scale", 0, "SCALE.npy", "float effective scales, [OC] or "
                    "[1], instead of --multiplier/--shift", &a->scale),
        QP_OPT_INT_("act-min", 0, "A", "activation clamp minimum, output units "
                    "(default: dtype minimum)", &a->act_min, i32lo, i32hi),
        QP_OPT_INT_("act-max", 0, "B", "activation clamp maximum, output units "
                    "(default: dtype maximum)", &a->act_max, i32lo, i32hi),
        QP_OPT_PARSE_("stride", 0, "H,W", "stride (default 1,1)", a->stride,
                      parse_hw),
        QP_OPT_PARSE_("dilation", 0, "H,W", "dilation (default 1,1)",
                      a->dilation, parse_hw),
        QP_OPT_PARSE_("pad", 0, "T,L,B,R", "explicit padding (also N or H,W; "
                      "default 0)", a->pad, parse_pad),
        QP_OPT_CHOICE_("padding", 0, "same|valid", "TFLite padding instead of "
                       "--pad", &a->padding, padding_names),
        QP_OPT_INT_("groups", 'g', "G", "conv groups (default: input channels / "
                    "filter channels)", &a->groups, 1, 1 << 24),
        QP_OPT_INT_("depth-multiplier", 0, "K", "depthwise depth multiplier "
                    "(default: OC / input channels)", &a->dm, 1, 1 << 24),
        QP_OPT_FLAG_("int32", 0, "write the int32 accumulators, before "
                     "requantization", &a->int32_out),
        QP_OPT_STR_("output", 'o', "Y.npy", "output .npy (required): NHWC "
                    "[N,OH,OW,OC] or [N,OC]", &a->out),
        QP_OPT_END_,
    };
    qp_cli_exclusive(opts, "pad", "padding");
    int first, rc = qp_cli_parse(&cli, opts, argc, argv, &first);
    if (rc != QP_CLI_GO)
        return rc;
    const char *op = argv[first];
    if (!strcmp(op, "conv"))
        a->op = OP_CONV;
    else if (!strcmp(op, "depthwise"))
        a->op = OP_DEPTHWISE;
    else if (!strcmp(op, "fc"))
        a->op = OP_FC;
    else
        return qp_cli_usage(&cli, "'%s' is not conv, depthwise or fc", op);
    static const char *const required[] = {"input", "filter", "input-offset",
                                           "output"};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!qp_cli_given(opts, required[i]))
            return qp_cli_usage(&cli, "--%s is required", required[i]);
    a->has_flavor = qp_cli_given(opts, "flavor");
    a->has_out_off = qp_cli_given(opts, "output-offset");
    a->has_act_min = qp_cli_given(opts, "act-min");
    a->has_act_max = qp_cli_given(opts, "act-max");
    a->has_groups = qp_cli_given(opts, "groups");
    a->has_dm = qp_cli_given(opts, "depth-multiplier");
    a->same = qp_cli_given(opts, "padding") && a->padding == 0;
    if (!a->int32_out) {
        if (!a->has_flavor || !a->has_out_off)
            return qp_cli_usage(&cli, "--flavor and --output-offset are "
                                "required (or --int32)");
        bool fixed = a->mult || a->shift;
        if (fixed == (a->scale != NULL) || (fixed && !(a->mult && a->shift)))
            return qp_cli_usage(&cli, "give --multiplier and --shift, or "
                                "--scale");
        if (fixed && !qp_rq_flavor_fixed(a->flavor))
            return qp_cli_usage(&cli, "flavor '%s' multiplies by a float "
                                "scale: give --scale",
                                qp_rq_flavor_name(a->flavor));
    }
    return QP_CLI_GO;
}

/* ---- loading --------------------------------------------------------- */

struct inputs {
    struct qp_tensor *x, *w, *bias, *mult, *shift, *scale;
};

static void inputs_free(struct inputs *in)
{
    qp_tensor_free(in->x);
    qp_tensor_free(in->w);
    qp_tensor_free(in->bias);
    qp_tensor_free(in->mult);
    qp_tensor_free(in->shift);
    qp_tensor_free(in->scale);
}

static enum qp_status shape_err(struct qp_error *err, const char *path,
                                const char *what, const struct qp_tensor *t,
                                const char *fmt_want)
{
    char s[128];
    qp_shape_str(t->ndim, t->shape, s, sizeof s);
    return qp_fail(err, QP_E_SHAPE, "'%s': %s has shape %s %s; expected %s",
                   path, what, s, qp_dtype_name(t->dtype), fmt_want);
}

/* Loads path; dtype must be one of dts (n of them). */
static enum qp_status load(const char *path, const char *what,
                           const enum qp_dtype *dts, int n,
                           const char *want, struct qp_tensor **t,
                           struct qp_error *err)
{
    enum qp_status st = qp_fmt_npy_load(path, NULL, false, t, err);
    if (st)
        return st;
    for (int i = 0; i < n; i++)
        if ((*t)->dtype == dts[i])
            return QP_OK;
    return shape_err(err, path, what, *t, want);
}

/* A per-channel array of 1 or oc values. */
static enum qp_status check_channels(const char *path, const char *what,
                                     const struct qp_tensor *t, size_t oc,
                                     struct qp_error *err)
{
    size_t n = qp_tensor_numel(t);
    if (t->ndim <= 1 && (n == 1 || n == oc))
        return QP_OK;
    char want[64];
    snprintf(want, sizeof want, "[%zu] or [1]", oc);
    return shape_err(err, path, what, t, want);
}

static const enum qp_dtype dt8[] = {QP_DTYPE_I8, QP_DTYPE_U8};
static const enum qp_dtype dt32[] = {QP_DTYPE_I32};
static const enum qp_dtype dtf[] = {QP_DTYPE_F32, QP_DTYPE_F64};

static enum qp_status load_inputs(const struct args *a, struct inputs *in,
                                  struct qp_error *err)
{
    enum qp_status st;
    if ((st = load(a->input, "input", dt8, 2, "int8 or uint8", &in->x,
                   err)) ||
        (st = load(a->filter, "filter", dt8, 2, "int8 or uint8", &in->w,
                   err)) ||
        (a->bias && (st = load(a->bias, "bias", dt32, 1, "int32",
                                    &in->bias, err))) ||
        (a->mult && (st = load(a->mult, "multiplier", dt32, 1,
                                    "int32", &in->mult, err))) ||
        (a->shift && (st = load(a->shift, "shift", dt32, 1,
                                     "int32", &in->shift, err))) ||
        (a->scale && (st = load(a->scale, "scale", dtf, 2,
                                     "float32 or float64", &in->scale, err))))
        return st;
    return QP_OK;
}

/* ---- the layer ------------------------------------------------------- */

struct layer {
    size_t oc, batch;
    int ndim;
    int64_t out_shape[4];
    struct qp_conv_geom geom;
    size_t in_c, groups, dm;
};

/* TFLite's ComputePaddingHeightWidth for SAME: out = ceil(in / stride),
 * total = max((out - 1) * stride + dilated kernel - in, 0), the smaller
 * half first (top/left). */
static void same_padding(size_t in, size_t k, size_t s, size_t d,
                         size_t *before, size_t *after)
{
    size_t out = (in + s - 1) / s, eff = d * (k - 1) + 1;
    size_t need = (out - 1) * s + eff;
    size_t total = need > in ? need - in : 0;
    *before = total / 2;
    *after = total - total / 2;
}

static enum qp_status spatial(const struct args *a, const struct inputs *in,
                              size_t kh, size_t kw, struct layer *l,
                              struct qp_error *err)
{
    const int64_t *xs = in->x->shape;
    struct qp_conv_geom *g = &l->geom;
    *g = (struct qp_conv_geom){
        (size_t)xs[1], (size_t)xs[2], kh, kw, (size_t)a->stride[0],
        (size_t)a->stride[1], (size_t)a->dilation[0], (size_t)a->dilation[1],
        (size_t)a->pad[0], (size_t)a->pad[1], (size_t)a->pad[2],
        (size_t)a->pad[3]};
    if (a->same) {
        same_padding(g->in_h, kh, g->stride_h, g->dilation_h, &g->pad_top,
                     &g->pad_bottom);
        same_padding(g->in_w, kw, g->stride_w, g->dilation_w, &g->pad_left,
                     &g->pad_right);
    }
    size_t oh, ow;
    enum qp_status st = qp_conv_geom_out(g, a->op == OP_CONV ? "conv"
                                                             : "depthwise",
                                         &oh, &ow, err);
    if (st)
        return qp_error_prefix(err, "'%s': ", a->input);
    l->batch = (size_t)xs[0];
    l->in_c = (size_t)xs[3];
    l->ndim = 4;
    l->out_shape[0] = xs[0];
    l->out_shape[1] = (int64_t)oh;
    l->out_shape[2] = (int64_t)ow;
    l->out_shape[3] = (int64_t)l->oc;
    return QP_OK;
}

/* Checks the shapes against each other and derives the layer. */
static enum qp_status layer_shapes(const struct args *a,
                                   const struct inputs *in, struct layer *l,
                                   struct qp_error *err)
{
    const struct qp_tensor *x = in->x, *w = in->w;
    const char *xp = a->input, *wp = a->filter;
    char want[128];
    memset(l, 0, sizeof *l);
    for (int i = 0; i < x->ndim; i++)
        if (x->shape[i] < 1)
            return shape_err(err, xp, "input", x, "no empty dimension");
    if (a->op == OP_FC) {
        if (x->ndim != 2)
            return shape_err(err, xp, "input", x, "[N,IC]");
        snprintf(want, sizeof want, "[OC,%lld]", (long long)x->shape[1]);
        if (w->ndim != 2 || w->shape[1] != x->shape[1] || w->shape[0] < 1)
            return shape_err(err, wp, "filter", w, want);
        l->oc = (size_t)w->shape[0];
        l->batch = (size_t)x->shape[0];
        l->ndim = 2;
        l->out_shape[0] = x->shape[0];
        l->out_shape[1] = w->shape[0];
        return QP_OK;
    }
    if (x->ndim != 4)
        return shape_err(err, xp, "input", x, "NHWC [N,H,W,C]");
    int64_t c = x->shape[3];
    if (a->op == OP_CONV) {
        if (w->ndim != 4 || w->shape[0] < 1 || w->shape[3] < 1 ||
            c % w->shape[3] ||
            (a->has_groups && w->shape[3] * a->groups != c) ||
            w->shape[0] % (c / w->shape[3])) {
            snprintf(want, sizeof want, "OHWI [OC,KH,KW,%lld/groups] with "
                     "OC a multiple of the groups (input has %lld channels)",
                     (long long)c, (long long)c);
            return shape_err(err, wp, "filter", w, want);
        }
        l->oc = (size_t)w->shape[0];
        l->groups = (size_t)(c / w->shape[3]);
    } else {
        if (w->ndim != 4 || w->shape[0] != 1 || w->shape[3] % c ||
            w->shape[3] < 1 || (a->has_dm && w->shape[3] != c * a->dm)) {
            snprintf(want, sizeof want, "[1,KH,KW,%lld*depth_multiplier]",
                     (long long)c);
            return shape_err(err, wp, "filter", w, want);
        }
        l->oc = (size_t)w->shape[3];
        l->dm = (size_t)(w->shape[3] / c);
    }
    return spatial(a, in, (size_t)w->shape[1], (size_t)w->shape[2], l, err);
}

static enum qp_status make_rq(const struct args *a, const struct inputs *in,
                              const struct layer *l, struct qp_rq *rq,
                              struct qp_error *err)
{
    enum qp_dtype dt = in->x->dtype;
    int32_t lo = dt == QP_DTYPE_I8 ? -128 : 0, hi = dt == QP_DTYPE_I8 ? 127 : 255;
    int32_t qmin = a->has_act_min ? (int32_t)a->act_min : lo;
    int32_t qmax = a->has_act_max ? (int32_t)a->act_max : hi;
    enum qp_status st;
    if (in->scale) {
        size_t n = qp_tensor_numel(in->scale);
        if ((st = check_channels(a->scale, "scale", in->scale, l->oc,
                                 err)))
            return st;
        double *s = malloc(n * sizeof *s);
        if (!s)
            return qp_fail(err, QP_E_NOMEM, "out of memory");
        for (size_t i = 0; i < n; i++)
            s[i] = in->scale->dtype == QP_DTYPE_F64
                       ? ((const double *)in->scale->data)[i]
                       : ((const float *)in->scale->data)[i];
        st = qp_rq_prepare_float(rq, a->flavor, s, n, (int32_t)a->out_off, dt,
                                 qmin, qmax, err);
        free(s);
        return st;
    }
    if ((st = check_channels(a->mult, "multiplier", in->mult, l->oc,
                             err)) ||
        (st = check_channels(a->shift, "shift", in->shift, l->oc, err)))
        return st;
    if (qp_tensor_numel(in->mult) != qp_tensor_numel(in->shift))
        return qp_fail(err, QP_E_SHAPE, "'%s' has %zu multipliers, '%s' %zu "
                       "shifts", a->mult, qp_tensor_numel(in->mult),
                       a->shift, qp_tensor_numel(in->shift));
    return qp_rq_prepare_fixed(rq, a->flavor, in->mult->data, in->shift->data,
                               qp_tensor_numel(in->mult), (int32_t)a->out_off,
                               dt, qmin, qmax, err);
}

/* Prepares and runs the layer into out (numel x element size bytes). */
static enum qp_status run_layer(const struct args *a, const struct inputs *in,
                                const struct layer *l, const struct qp_rq *rq,
                                void *out, struct qp_error *err)
{
    int32_t izp = (int32_t)-a->in_off, fzp = (int32_t)-a->f_off;
    const int32_t *bias = in->bias ? in->bias->data : NULL;
    enum qp_dtype xdt = in->x->dtype, wdt = in->w->dtype;
    enum qp_status st;
    void *scratch = NULL;
    if (a->op == OP_FC) {
        struct qp_gemm_s8_params p = {
            .n = l->oc, .k = (size_t)in->w->shape[1], .a_dtype = xdt,
            .b_dtype = wdt, .a_zero_point = izp, .b_zero_point = &fzp,
            .b_zero_points = 1, .bias = bias, .rq = rq};
        struct qp_gemm_s8 g;
        if ((st = qp_gemm_s8_prepare(&g, &p, in->w->data, p.k, err)))
            return st;
        scratch = malloc(qp_gemm_s8_scratch_size(&g, l->batch) + 1);
        st = scratch ? qp_gemm_s8_run(&g, in->x->data, l->batch, p.k, out,
                                      p.n, scratch, err)
                     : qp_fail(err, QP_E_NOMEM, "out of memory");
        qp_gemm_s8_release(&g);
    } else if (a->op == OP_CONV) {
        struct qp_conv_s8_params p = {
            .layout = QP_CONV_NHWC, .geom = l->geom, .in_c = l->in_c,
            .out_c = l->oc, .groups = l->groups, .in_dtype = xdt,
            .filter_dtype = wdt, .input_zero_point = izp,
            .filter_zero_point = &fzp, .filter_zero_points = 1, .bias = bias,
            .rq = rq};
        struct qp_conv_s8 c;
        if ((st = qp_conv_s8_prepare(&c, &p, in->w->data, err)))
            return st;
        scratch = malloc(qp_conv_s8_scratch_size(&c, l->batch) + 1);
        st = scratch ? qp_conv_s8_run(&c, in->x->data, l->batch, out, scratch,
                                      err)
                     : qp_fail(err, QP_E_NOMEM, "out of memory");
        qp_conv_s8_release(&c);
    } else {
        struct qp_dw_s8_params p = {
            .geom = l->geom, .in_c = l->in_c, .depth_multiplier = l->dm,
            .in_dtype = xdt, .filter_dtype = wdt, .input_zero_point = izp,
            .filter_zero_point = &fzp, .filter_zero_points = 1, .bias = bias,
            .rq = rq};
        struct qp_dw_s8 d;
        if ((st = qp_dw_s8_prepare(&d, &p, in->w->data, err)))
            return st;
        scratch = malloc(qp_dw_s8_scratch_size(&d, l->batch) + 1);
        st = scratch ? qp_dw_s8_run(&d, in->x->data, l->batch, out, scratch,
                                    err)
                     : qp_fail(err, QP_E_NOMEM, "out of memory");
        qp_dw_s8_release(&d);
    }
    free(scratch);
    return st;
}

int cmd_kernel(int argc, char **argv)
{
    struct args a;
    int rc = parse_args(argc, argv, &a);
    if (rc != QP_CLI_GO)
        return rc;
    struct inputs in = {0};
    struct layer l;
    struct qp_rq rq = {0};
    struct qp_tensor *y = NULL;
    struct qp_error err;
    enum qp_status st = load_inputs(&a, &in, &err);
    if (!st)
        st = layer_shapes(&a, &in, &l, &err);
    if (!st && in.bias && (in.bias->ndim != 1 ||
                           (size_t)in.bias->shape[0] != l.oc)) {
        char want[32];
        snprintf(want, sizeof want, "[%zu]", l.oc);
        st = shape_err(&err, a.bias, "bias", in.bias, want);
    }
    if (!st && !a.int32_out)
        st = make_rq(&a, &in, &l, &rq, &err);
    if (!st)
        st = qp_tensor_new("y", a.int32_out ? QP_DTYPE_I32 : in.x->dtype,
                           l.ndim, l.out_shape, &y, &err);
    if (!st)
        st = run_layer(&a, &in, &l, a.int32_out ? NULL : &rq, y->data, &err);
    if (!st)
        st = qp_fmt_npy_save(a.out, y, &err);
    qp_tensor_free(y);
    qp_rq_release(&rq);
    inputs_free(&in);
    return st ? qp_cli_fail(&err) : QP_EXIT_OK;
}
