/* quant/ckpt.h: post-training weight quantization of a whole checkpoint
 * (`qprobe quantize`), one tensor at a time: the model is streamed from
 * its dump (formats/dump.h), never held whole.
 *
 * Selection: float 2-D and 4-D tensors (qp_rtn_default_selected), plus
 * those an include glob matches, minus those an exclude glob matches
 * (globs as quant/recipe.h matches them). A selected tensor gets the
 * scheme, or the recipe's weight scheme for its name (none: copied as it
 * is). Quantized tensors are written as integers with their parameters
 * (or dequantized to f32 with fake) and their scheme in the metadata key
 * "scheme:NAME"; the rest are copied. Weight layouts (which axis is the
 * output channel) come from layout_of when it knows the tensor, else from
 * the options' default. */
#ifndef QP_QUANT_CKPT_H
#define QP_QUANT_CKPT_H

#include <stdbool.h>
#include <stddef.h>

#include "core/progress.h"
#include "formats/dump.h"
#include "quant/recipe.h"
#include "quant/rtn.h"
#include "quant/scheme.h"

/* A calibrated (GPTQ) weight made elsewhere, borrowed: q its integer
 * form in the tensor's own layout with RTN's parameter geometry, fake its
 * dequantized values (f32, the tensor's shape), g_idx NULL or the int32
 * tensor written beside it as NAME.g_idx (quant/gptq-layer.h). */
struct qp_ckpt_calibrated {
    const struct qp_tensor *q, *fake, *g_idx;
};

struct qp_ckpt_opts {
    const struct qp_scheme *scheme;  /* one of scheme and recipe */
    const struct qp_recipe *recipe;
    const char *recipe_path;         /* for messages */
    const char *const *include;
    size_t ninclude;
    const char *const *exclude;
    size_t nexclude;
    bool fake;                       /* write dequantized f32 */
    struct qp_wquant_opts wq;        /* rounding; the default layout */
    /* the layout of tensor `name` when known (e.g. from the model's graph);
     * NULL or false: wq.layout */
    bool (*layout_of)(void *ctx, const char *name, enum qp_wlayout *out);
    void *layout_ctx;
    const char *layout_note;         /* metadata "quantize:layout" ("onnx-graph");
                                        NULL: wq.layout's name */
    const struct qp_progress *progress;
    /* '@gptq' tensors: their calibrated form (true), or false when none
     * was made for this one (no layer reads it as a weight): it is then
     * rounded to nearest on the same grid and its scheme recorded so.
     * NULL: '@gptq' schemes are refused (no model runtime). */
    bool (*calibrated)(void *ctx, const char *name,
                       struct qp_ckpt_calibrated *out);
    void *calibrated_ctx;
};

/* One float tensor's outcome, for the report (analysis/quant-report.h). */
struct qp_ckpt_row {
    const struct qp_tensor *ref;    /* the original (f32 or another float) */
    const struct qp_scheme *scheme; /* NULL: copied as it is */
    const struct qp_tensor *q;      /* the quantized tensor, or NULL */
    size_t bytes_out;               /* what it costs in the output */
    const struct qp_tensor *fake;   /* its dequantized values when q's own
                                       parameters do not give them (g_idx),
                                       else NULL */
};

struct qp_ckpt_result {
    size_t quantized, kept;
    double bytes_in, bytes_out;
    /* which recipe rules (recipe->nrules), include and exclude globs
     * matched some tensor: those that did not are likely typos */
    bool *rule_used, *include_used, *exclude_used; /* owned */
    size_t calibrated, rtn_fallback; /* '@gptq' tensors with a calibrated
                                        form, and those rounded instead */
};

/* The scheme tensor e gets (true), or false when it is copied: the
 * selection and recipe rules above. */
bool qp_ckpt_pick(const struct qp_ckpt_opts *o, const struct qp_tensor *e,
                  struct qp_scheme *s);

/* Refuses, before anything is written, what would fail half-way: a
 * selected tensor whose scheme cannot quantize it, in an npy directory a
 * partial last group that NAME.scale cannot express and packed types, and
 * names taken by a tensor's companions. Errors name the file and tensor. */
enum qp_status qp_ckpt_check(struct qp_dump *in, enum qp_dump_format out_format,
                             const char *out_path, const struct qp_ckpt_opts *o,
                             struct qp_error *err);

/* Quantizes (or copies) every tensor of in into w, in order, calling
 * on_row (may be NULL) for every float tensor. res is filled and owned by
 * the caller (qp_ckpt_result_release), also on failure. The writer is not
 * committed. */
enum qp_status qp_ckpt_quantize(struct qp_dump *in, struct qp_dump_writer *w,
                                const struct qp_ckpt_opts *o,
                                enum qp_status (*on_row)(void *ctx,
                                                         const struct qp_ckpt_row *r,
                                                         struct qp_error *err),
                                void *row_ctx, struct qp_ckpt_result *res,
                                struct qp_error *err);

void qp_ckpt_result_release(struct qp_ckpt_result *res);

#endif
