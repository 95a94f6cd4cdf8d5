/* cli/opt-types.h: parsers for the option values several commands share,
 * for QP_OPT_PARSE_ entries (cli/cli.h): each converts the whole argument
 * or fails with a message naming what is wrong (a usage error, exit 2). */
#ifndef QP_CLI_OPT_TYPES_H
#define QP_CLI_OPT_TYPES_H

#include "core/status.h"

/* enum qp_dump_format *: a dump format name (formats/dump.h). */
enum qp_status qp_opt_dump_format(const char *arg, void *dest,
                                  struct qp_error *err);

/* struct qp_scheme *: a scheme string (quant/scheme.h); the message shows
 * the caret under the offending character. */
enum qp_status qp_opt_scheme(const char *arg, void *dest, struct qp_error *err);

/* enum qp_rq_flavor *: a requantization flavor or alias (kernels/requant.h). */
enum qp_status qp_opt_flavor(const char *arg, void *dest, struct qp_error *err);

/* enum qp_run_mode *: fp32, fake or int (model/qplan.h). */
enum qp_status qp_opt_mode(const char *arg, void *dest, struct qp_error *err);

/* enum qp_wlayout *: torch, tflite, keras or io (quant/qparams.h). */
enum qp_status qp_opt_wlayout(const char *arg, void *dest, struct qp_error *err);

/* enum qp_round *: half-away or half-even (quant/qparams.h). */
enum qp_status qp_opt_round(const char *arg, void *dest, struct qp_error *err);

/* const char **: a plot path ending in .png or .svg. */
enum qp_status qp_opt_plot(const char *arg, void *dest, struct qp_error *err);

#endif
