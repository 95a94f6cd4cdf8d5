/* quant/ckpt.c: weight quantization of a whole checkpoint (quant/ckpt.h). */
#include "quant/ckpt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/dump-gguf.h"
#include "formats/npy.h"
#include "quant/ggml-quant.h"

static bool any_match(const char *const *globs, size_t n, const char *name,
                      bool *used)
{
    bool hit = false;
    for (size_t i = 0; i < n; i++)
        if (qp_recipe_glob_match(globs[i], name)) {
            hit = true;
            if (used)
                used[i] = true;
        }
    return hit;
}

/* The weight scheme for entry e (written to *ws), or false to copy it;
 * marks the rules and globs that decided. */
static bool pick(const struct qp_ckpt_opts *o, const struct qp_tensor *e,
                 struct qp_scheme *ws, struct qp_ckpt_result *res)
{
    if (!qp_dtype_traits(e->dtype)->is_float)
        return false;
    bool sel = qp_rtn_default_selected(e) |
               any_match(o->include, o->ninclude, e->name,
                         res ? res->include_used : NULL);
    if (!sel || any_match(o->exclude, o->nexclude, e->name,
                          res ? res->exclude_used : NULL))
        return false;
    if (!o->recipe) {
        *ws = *o->scheme;
        return true;
    }
    const char *names[1] = {e->name};
    int rule;
    memset(ws, 0, sizeof *ws);
    bool q = qp_recipe_weights(o->recipe, names, 1, &ws->w, &rule);
    if (res && rule >= 0)
        res->rule_used[rule] = true;
    return q;
}

bool qp_ckpt_pick(const struct qp_ckpt_opts *o, const struct qp_tensor *e,
                  struct qp_scheme *s)
{
    return pick(o, e, s, NULL);
}

static struct qp_wquant_opts opts_for(const struct qp_ckpt_opts *o,
                                      const char *name)
{
    struct qp_wquant_opts w = o->wq;
    enum qp_wlayout l;
    if (o->layout_of && o->layout_of(o->layout_ctx, name, &l))
        w.layout = l;
    return w;
}

static enum qp_status check_entry(struct qp_dump *in, enum qp_dump_format fmt,
                                  const char *out_path, const struct qp_ckpt_opts *o,
                                  const struct qp_tensor *e, const struct qp_scheme *s,
                                  struct qp_error *err)
{
    struct qp_qgeom g;
    enum qp_status st = qp_qgeom_init(&g, e->ndim, e->shape, s->w.gran,
                                      s->w.group, opts_for(o, e->name).layout, err);
    if (st)
        return qp_error_prefix(err, "'%s': tensor '%s': ", in->path, e->name);
    char shape[128];
    qp_shape_str(e->ndim, e->shape, shape, sizeof shape);
    bool npy = fmt == QP_DUMP_NPY_DIR;
    if (npy && !qp_qgeom_storable(&g, e->ndim, e->shape))
        return qp_fail(err, QP_E_UNSUPPORTED, "'%s': tensor '%s' %s: groups of "
                       "%lld along axis %d (size %zu) leave a partial last group "
                       "that NAME.scale cannot express (it would read back as "
                       "groups of %zu); use a group size dividing %zu, a "
                       ".safetensors output, or --fake", in->path, e->name, shape,
                       (long long)g.block, g.axis, g.dim,
                       (g.dim + g.nblk - 1) / g.nblk, g.dim);
    enum qp_dtype dt = qp_qformat_dtype(&s->w.f);
    if (npy && !qp_fmt_npy_descr(dt))
        return qp_fail(err, QP_E_UNSUPPORTED, "'%s': tensor '%s': .npy files "
                       "cannot hold %s (%u-bit packed) tensors; write a "
                       ".safetensors file, or use --fake", out_path, e->name,
                       qp_dtype_name(dt), s->w.f.bits);
    static const char *const sfx[] = {".scale", ".zero_point", ".g_idx"};
    int nsfx = s->w.algo == QP_WALGO_GPTQ && s->w.gptq.act_order ? 3 : 2;
    for (int k = 0; k < nsfx; k++) {
        size_t len = strlen(e->name) + strlen(sfx[k]) + 1;
        char *n = malloc(len);
        if (!n)
            return qp_fail(err, QP_E_NOMEM, "out of memory");
        snprintf(n, len, "%s%s", e->name, sfx[k]);
        long dup = qp_dump_find(in, n);
        free(n);
        if (dup >= 0)
            return qp_fail(err, QP_E_INVAL, "'%s': tensor '%s' would be written "
                           "beside its quantized '%s' as a scale, zero point "
                           "or g_idx; rename it or exclude '%s'", in->path,
                           qp_dump_entry(in, (size_t)dup)->name, e->name,
                           e->name);
    }
    return QP_OK;
}

/* GGUF outputs hold ggml block types and plain tensors only; a ggml scheme
 * needs a GGUF output (or fake), with rows on the tensor's last axis
 * (GGUF's ne0) that divide into blocks. */
static enum qp_status check_gguf(struct qp_dump *in, enum qp_dump_format fmt,
                                 const char *out_path,
                                 const struct qp_ckpt_opts *o,
                                 const struct qp_tensor *e,
                                 const struct qp_scheme *s, struct qp_error *err)
{
    bool gguf = fmt == QP_DUMP_GGUF;
    char name[QP_SCHEME_MAX + 1];
    qp_scheme_format(s, name, sizeof name);
    if (s->w.family != QP_WFAMILY_GGML) {
        if (!gguf)
            return QP_OK;
        const struct qp_ggml_type_info *ti =
            qp_ggml_type_info(qp_ggml_nearest(&s->w));
        return qp_fail(err, QP_E_UNSUPPORTED, "'%s': tensor '%s': scheme '%s' "
                       "has no GGUF type; the nearest is %s (or use --fake)",
                       out_path, e->name, name, ti->scheme ? ti->scheme : ti->name);
    }
    if (!gguf)
        return qp_fail(err, QP_E_UNSUPPORTED, "'%s': tensor '%s': scheme '%s' is "
                       "a ggml block type, which only a .gguf output holds; "
                       "write -o NAME.gguf, or use --fake", out_path, e->name,
                       name);
    int oa, ia;
    qp_wlayout_axes(opts_for(o, e->name).layout, e->ndim, &oa, &ia);
    if (e->ndim > 1 && ia != e->ndim - 1)
        return qp_fail(err, QP_E_UNSUPPORTED, "'%s': tensor '%s': its input "
                       "axis is %d, but GGUF rows are a tensor's last axis; "
                       "store it as [out, in], or use --fake", in->path, e->name,
                       ia);
    char what[300];
    snprintf(what, sizeof what, "'%s': tensor '%s'", in->path, e->name);
    return qp_ggml_check_row(s->w.ggml, e->ndim ? e->shape[e->ndim - 1] : 1,
                             e->ndim - 1, what, err);
}

static enum qp_status no_gptq(const struct qp_scheme *s, const char *where,
                              struct qp_error *err)
{
    if (s->w.algo != QP_WALGO_GPTQ)
        return QP_OK;
    char buf[QP_SCHEME_MAX + 1];
    qp_scheme_format(s, buf, sizeof buf);
    return qp_fail(err, QP_E_UNSUPPORTED, "%sscheme '%s': GPTQ needs calibration "
                   "data run through the model: give an .onnx model and "
                   "--calib, or use @rtn or @mse", where, buf);
}

/* GPTQ rules of a recipe, named. */
static enum qp_status recipe_gptq(const struct qp_recipe *r, const char *path,
                                  struct qp_error *err)
{
    char where[600];
    enum qp_status st = QP_OK;
    for (size_t i = 0; !st && i < r->nrules; i++)
        if (r->rules[i].w_said && !r->rules[i].w_float) {
            snprintf(where, sizeof where, "'%s': layers \"%.300s\": ", path,
                     r->rules[i].glob);
            st = no_gptq(&r->rules[i].scheme, where, err);
        }
    if (!st && r->has_default && !r->def.w_float) {
        snprintf(where, sizeof where, "'%s': \"default\": ", path);
        st = no_gptq(&r->def.scheme, where, err);
    }
    return st;
}

enum qp_status qp_ckpt_check(struct qp_dump *in, enum qp_dump_format out_format,
                             const char *out_path, const struct qp_ckpt_opts *o,
                             struct qp_error *err)
{
    enum qp_status gst = o->calibrated ? QP_OK
                         : o->recipe ? recipe_gptq(o->recipe, o->recipe_path, err)
                                     : no_gptq(o->scheme, "", err);
    if (gst)
        return gst;
    for (size_t i = 0; i < qp_dump_count(in); i++) {
        const struct qp_tensor *e = qp_dump_entry(in, i);
        struct qp_scheme s;
        if (!pick(o, e, &s, NULL) || o->fake)
            continue;
        enum qp_status st = check_gguf(in, out_format, out_path, o, e, &s, err);
        if (!st && s.w.family != QP_WFAMILY_GGML) /* no scales, no companions */
            st = check_entry(in, out_format, out_path, o, e, &s, err);
        if (st)
            return st;
    }
    return QP_OK;
}

/* Records the scheme of tensor name in the output's metadata, under
 * "scheme:NAME". */
static enum qp_status record_scheme(struct qp_dump_writer *w, const char *name,
                                    const struct qp_scheme *s,
                                    struct qp_error *err)
{
    char value[QP_SCHEME_MAX + 1];
    qp_scheme_format(s, value, sizeof value);
    size_t len = strlen(name) + sizeof "scheme:";
    char *key = malloc(len);
    if (!key)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    snprintf(key, len, "scheme:%s", name);
    enum qp_status st = qp_dump_writer_set_meta(w, key, value, err);
    free(key);
    return st;
}

/* A ggml scheme into a GGUF output: t's blocks go to the writer, *fake
 * gets their decoded values (for the report). */
static enum qp_status ggml_blocks(struct qp_dump_writer *w,
                                  const struct qp_tensor *t,
                                  const struct qp_scheme *s,
                                  struct qp_tensor **fake, struct qp_error *err)
{
    struct qp_ggml_data d;
    enum qp_status st = qp_ggml_quantize_tensor(t, s->w.ggml, &d, err);
    if (!st)
        st = qp_dump_gguf_add_ggml(w, t->name, &d, err);
    if (!st)
        st = qp_tensor_new(t->name, QP_DTYPE_F32, t->ndim, t->shape, fake, err);
    if (!st)
        qp_ggml_dequantize_row(s->w.ggml, d.data, (*fake)->data,
                               (int64_t)qp_tensor_numel(t));
    free(d.data);
    return st;
}

/* Bytes t costs under scheme s (quantized to qt), or as it is. */
static size_t cost(const struct qp_ckpt_opts *o, const struct qp_tensor *t,
                   const struct qp_scheme *s, const struct qp_tensor *qt)
{
    size_t b = t->nbytes;
    if (s && s->w.family == QP_WFAMILY_GGML)
        qp_ggml_weight_bytes(s->w.ggml, t->ndim, t->shape,
                             opts_for(o, t->name).layout, &b);
    else if (s && qt)
        b = qp_rtn_bytes(qt);
    return b;
}

/* Quantizes (or copies) entry i into the writer. */
static enum qp_status one(struct qp_dump *in, struct qp_dump_writer *w,
                          const struct qp_ckpt_opts *o, size_t i,
                          enum qp_status (*on_row)(void *, const struct qp_ckpt_row *,
                                                   struct qp_error *),
                          void *row_ctx, struct qp_ckpt_result *res,
                          struct qp_error *err)
{
    struct qp_tensor *t, *qt = NULL, *fake = NULL;
    enum qp_status st = qp_dump_load(in, i, &t, err);
    if (st)
        return st;
    struct qp_scheme s;
    bool quant = pick(o, t, &s, res);
    const struct qp_tensor *out = t, *gidx = NULL, *row_fake = NULL;
    struct qp_ckpt_calibrated cal = {0};
    if (quant && s.w.family == QP_WFAMILY_GGML && !o->fake) {
        st = ggml_blocks(w, t, &s, &qt, err);
        if (st)
            qp_error_prefix(err, "'%s': ", in->path);
        out = NULL;
    } else if (quant && s.w.algo == QP_WALGO_GPTQ && o->calibrated &&
               o->calibrated(o->calibrated_ctx, t->name, &cal)) {
        out = o->fake ? cal.fake : cal.q;
        gidx = o->fake ? NULL : cal.g_idx;
        row_fake = cal.g_idx ? cal.fake : NULL;
        res->calibrated++;
    } else if (quant) {
        if (s.w.algo == QP_WALGO_GPTQ) { /* no layer reads it: the grid, RTN */
            s.w.algo = QP_WALGO_RTN;
            s.w.gptq = (struct qp_gptq_options){0};
            res->rtn_fallback++;
        }
        struct qp_wquant_opts wo = opts_for(o, t->name);
        st = qp_rtn_quantize(t, &s.w, &wo, &qt, err);
        if (st)
            qp_error_prefix(err, "'%s': ", in->path);
        if (!st && o->fake &&
            !(st = qp_tensor_new(t->name, QP_DTYPE_F32, t->ndim, t->shape, &fake,
                                 err)))
            qp_tensor_read_f32(qt, 0, qp_tensor_numel(qt), fake->data);
        out = o->fake ? fake : qt;
    }
    const struct qp_tensor *qrow = cal.q ? cal.q : qt;
    size_t bytes = cost(o, t, quant ? &s : NULL, qrow) +
                   (cal.g_idx ? cal.g_idx->nbytes : 0);
    if (!st && out)
        st = qp_dump_writer_add(w, out, err);
    if (!st && gidx)
        st = qp_dump_writer_add(w, gidx, err);
    if (!st && quant)
        st = record_scheme(w, t->name, &s, err);
    if (!st && on_row && qp_dtype_traits(t->dtype)->is_float) {
        struct qp_ckpt_row row = {t, quant ? &s : NULL, qrow, bytes, row_fake};
        st = on_row(row_ctx, &row, err);
    }
    if (!st) {
        res->bytes_in += (double)t->nbytes;
        res->bytes_out += (double)bytes;
        if (quant)
            res->quantized++;
        else
            res->kept++;
    }
    qp_tensor_free(fake);
    qp_tensor_free(qt);
    qp_tensor_free(t);
    return st;
}

void qp_ckpt_result_release(struct qp_ckpt_result *res)
{
    free(res->rule_used);
    free(res->include_used);
    free(res->exclude_used);
    *res = (struct qp_ckpt_result){0};
}

enum qp_status qp_ckpt_quantize(struct qp_dump *in, struct qp_dump_writer *w,
                                const struct qp_ckpt_opts *o,
                                enum qp_status (*on_row)(void *ctx,
                                                         const struct qp_ckpt_row *r,
                                                         struct qp_error *err),
                                void *row_ctx, struct qp_ckpt_result *res,
                                struct qp_error *err)
{
    *res = (struct qp_ckpt_result){0};
    size_t nr = o->recipe ? o->recipe->nrules : 0;
    res->rule_used = calloc(nr + 1, sizeof *res->rule_used);
    res->include_used = calloc(o->ninclude + 1, sizeof *res->include_used);
    res->exclude_used = calloc(o->nexclude + 1, sizeof *res->exclude_used);
    if (!res->rule_used || !res->include_used || !res->exclude_used)
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    enum qp_status st =
        qp_dump_writer_set_meta(w, "quantize:round", qp_round_name(o->wq.round),
                                err);
    if (!st)
        st = qp_dump_writer_set_meta(w, "quantize:layout",
                                     o->layout_note ? o->layout_note
                                                    : qp_wlayout_name(o->wq.layout),
                                     err);
    if (!st && o->fake)
        st = qp_dump_writer_set_meta(w, "quantize:fake", "1", err);
    size_t n = qp_dump_count(in);
    for (size_t i = 0; !st && i < n; i++) {
        st = one(in, w, o, i, on_row, row_ctx, res, err);
        qp_progress_report(o->progress, "quantize", i + 1, n);
    }
    return st;
}
