/* cli/opt-types.c: shared option value parsers (cli/opt-types.h). */
#include "cli/opt-types.h"

#include <stdio.h>
#include <string.h>

#include "analysis/plot.h"
#include "formats/dump.h"
#include "kernels/requant.h"
#include "model/qplan.h"
#include "quant/qparams.h"
#include "quant/scheme.h"

enum qp_status qp_opt_dump_format(const char *arg, void *dest,
                                  struct qp_error *err)
{
    if (!qp_dump_format_from_name(arg, dest))
        return qp_fail(err, QP_E_INVAL, "unknown format '%s' (safetensors, "
                       "npz, h5, npy, pb, onnx, npy-dir, pb-dir, raw-dir)", arg);
    return QP_OK;
}

enum qp_status qp_opt_scheme(const char *arg, void *dest, struct qp_error *err)
{
    return qp_scheme_parse(arg, dest, NULL, err);
}

enum qp_status qp_opt_flavor(const char *arg, void *dest, struct qp_error *err)
{
    if (qp_rq_flavor_from_name(arg, dest))
        return QP_OK;
    return qp_fail(err, QP_E_INVAL, "unknown requantization flavor '%s' (%s)",
                   arg, qp_rq_flavor_list());
}

enum qp_status qp_opt_mode(const char *arg, void *dest, struct qp_error *err)
{
    if (!qp_run_mode_from_name(arg, dest))
        return qp_fail(err, QP_E_INVAL, "unknown mode '%s' (fp32, fake or int)",
                       arg);
    return QP_OK;
}

enum qp_status qp_opt_wlayout(const char *arg, void *dest, struct qp_error *err)
{
    if (!qp_wlayout_from_name(arg, dest))
        return qp_fail(err, QP_E_INVAL, "must be torch, tflite, keras or io, "
                       "not '%s'", arg);
    return QP_OK;
}

enum qp_status qp_opt_plot(const char *arg, void *dest, struct qp_error *err)
{
    if (!qp_plot_path_ok(arg))
        return qp_fail(err, QP_E_INVAL, "'%s' must end in .png or .svg", arg);
    *(const char **)dest = arg;
    return QP_OK;
}

enum qp_status qp_opt_round(const char *arg, void *dest, struct qp_error *err)
{
    if (!qp_round_from_name(arg, dest))
        return qp_fail(err, QP_E_INVAL, "must be half-away or half-even, not "
                       "'%s'", arg);
    return QP_OK;
}
