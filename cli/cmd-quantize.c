/* cli/cmd-quantize.c: qprobe quantize MODEL (--scheme S | --recipe R) -o OUT
 *
 * Post-training quantization of a checkpoint's weights, one tensor at a
 * time (the model is streamed, never held whole): selected tensors are
 * quantized round-to-nearest (quant/rtn.h) and written as integer tensors
 * with their scales and zero points, or dequantized back to FP32 with
 * --fake; the rest are copied as they are. --report writes a CSV row per
 * float tensor with the error the scheme causes and the bytes it costs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/diff-report.h"
#include "analysis/metrics.h"
#include "core/strmap.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "formats/csv.h"
#include "formats/dump.h"
#include "formats/npy.h"
#include "formats/onnx.h"
#include "quant/recipe.h"
#include "quant/rtn.h"

static const struct qp_cli_opt opts[] = {
    {"scheme", 's', true, "S", "quantize every selected tensor with scheme S "
                               "(w8c, w4g128, w4g32z@mse, ...)"},
    {"recipe", 'r', true, "R", "recipe JSON: a scheme (or \"fp32\") per tensor "
                               "glob"},
    {"output", 'o', true, "OUT", "output checkpoint: .safetensors, .npz, .h5, "
                                 "or a directory of .npy"},
    {"fake", 0, false, NULL, "write dequantized FP32 tensors (same names and "
                             "shapes) instead of integers"},
    {"report", 0, true, "CSV", "per-tensor error and size report"},
    {"include", 0, true, "GLOB", "also quantize float tensors matching GLOB "
                                 "(repeatable)"},
    {"exclude", 0, true, "GLOB", "never quantize tensors matching GLOB "
                                 "(repeatable)"},
    {"layout", 0, true, "L", "weight layout of every tensor: torch ([out,in], "
                             "OIHW), tflite (OHWI), keras ([in,out], HWIO), io "
                             "([in,out,...]); default: read from the graph for "
                             ".onnx models, else torch"},
    {"round", 0, true, "MODE", "half-away (default) or half-even"},
    {"calib", 0, true, "X", "calibration data, for activation-aware methods "
                            "(not available yet)"},
    {"quiet", 'q', false, NULL, "no progress output"},
    {0},
};
enum { O_SCHEME, O_RECIPE, O_OUTPUT, O_FAKE, O_REPORT, O_INCLUDE, O_EXCLUDE,
       O_LAYOUT, O_ROUND, O_CALIB, O_QUIET };

static const struct qp_cli cli = {
    "quantize",
    "MODEL (--scheme S | --recipe R) -o OUT [options]",
    "Quantizes the weights of a checkpoint (safetensors, ONNX, npz, HDF5, npy) "
    "round-to-nearest.",
    "Selected by default: float 2-D and 4-D tensors (linear/matmul and conv\n"
    "weights); biases, norms and other 1-D tensors stay as they are.\n"
    "--include/--exclude (globs on tensor names, or names without their last\n"
    ".component) override; with a recipe, the first matching rule gives the\n"
    "scheme of a selected tensor, \"fp32\" keeps it.\n\n"
    "Schemes: w BITS (t | c | g N) [z | n] [@rtn | @mse], BITS 2..8 or 16;\n"
    "t per-tensor, c per output channel, g N groups of N along the input axis\n"
    "(a last partial group is allowed); z asymmetric (unsigned), n narrow\n"
    "symmetric; @mse searches the clipping range per channel/group.\n\n"
    "OUT holds each quantized tensor as integers (packed below 8 bits) with\n"
    "NAME.scale and NAME.zero_point, and its scheme in the metadata key\n"
    "scheme:NAME; the report counts scales at 4 bytes and zero points at the\n"
    "tensor's own width.",
    opts,
};

struct quantize {
    const char *model, *out, *scheme_str, *recipe_path, *report, *calib;
    const char **include, **exclude;
    size_t ninc, nexc;
    bool fake, quiet;
    struct qp_wquant_opts wq;
    bool layout_given;         /* --layout: one layout for every tensor */
    struct qp_strmap layouts;  /* else, for .onnx: weight name -> layout */
    struct qp_scheme scheme;
    struct qp_recipe *recipe;
    struct qp_dump *in;
    struct qp_dump_writer *w;
    struct qp_csv_writer *rep;
    size_t quantized, kept;
    double bytes_in, bytes_out;
};

static int push_glob(const char ***v, size_t *n, const char *g)
{
    const char **nv = realloc(*v, (*n + 1) * sizeof *nv);
    if (!nv) {
        qp_cli_error("out of memory");
        return -1;
    }
    nv[(*n)++] = g;
    *v = nv;
    return 0;
}

static bool any_match(const char *const *globs, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (qp_recipe_glob_match(globs[i], name))
            return true;
    return false;
}

/* Weight layouts from an ONNX model's graph: the operator that reads a
 * tensor as its weight says which axis is the output (e.g. PaddlePaddle
 * exports MatMul weights as [in, out]). A tensor read in two layouts is
 * left to the default. */
static enum qp_status onnx_layouts(struct quantize *q, struct qp_error *err)
{
    struct qp_onnx_model *m;
    enum qp_status st = qp_onnx_load(q->model, &m, err);
    if (st)
        return st;
    const struct qp_onnx_graph *g = m->graph;
    struct qp_strmap clash = {0};
    for (size_t i = 0; i < g->n_nodes && !st; i++) {
        const struct qp_onnx_node *n = &g->nodes[i];
        int64_t tb = 0;
        enum qp_wlayout l;
        if (n->n_inputs < 2 || !*n->inputs[1] ||
            !qp_onnx_domain_is_default(n->domain) ||
            (!strcmp(n->op_type, "Gemm") &&
             (st = qp_onnx_attr_int(n, "transB", 0, &tb, err))) ||
            !qp_wlayout_of_onnx_op(n->op_type, tb != 0, &l))
            continue;
        size_t have;
        if (!qp_strmap_get(&q->layouts, n->inputs[1], &have))
            st = qp_strmap_put(&q->layouts, n->inputs[1], (size_t)l, NULL, err);
        else if (have != (size_t)l)
            st = qp_strmap_put(&clash, n->inputs[1], 0, NULL, err);
    }
    /* drop the names read in two layouts: rebuild without them */
    struct qp_strmap keep = {0};
    for (size_t i = 0; i < q->layouts.cap && !st; i++)
        if (q->layouts.keys[i] && !qp_strmap_get(&clash, q->layouts.keys[i], NULL))
            st = qp_strmap_put(&keep, q->layouts.keys[i], q->layouts.values[i],
                               NULL, err);
    qp_strmap_release(&q->layouts);
    q->layouts = keep;
    qp_strmap_release(&clash);
    qp_onnx_model_free(m);
    return st;
}

/* The quantizer options for tensor name: its graph layout when known. */
static struct qp_wquant_opts opts_for(const struct quantize *q, const char *name)
{
    struct qp_wquant_opts o = q->wq;
    size_t l;
    if (!q->layout_given && qp_strmap_get(&q->layouts, name, &l))
        o.layout = (enum qp_wlayout)l;
    return o;
}

/* The scheme for entry e, or NULL to copy it as it is. */
static const struct qp_scheme *pick(const struct quantize *q,
                                    const struct qp_tensor *e)
{
    if (!qp_dtype_traits(e->dtype)->is_float)
        return NULL;
    bool sel = qp_rtn_default_selected(e) ||
               any_match(q->include, q->ninc, e->name);
    if (!sel || any_match(q->exclude, q->nexc, e->name))
        return NULL;
    if (!q->recipe)
        return &q->scheme;
    const struct qp_recipe_rule *r = qp_recipe_lookup(q->recipe, e->name);
    return r && !r->fp32 ? &r->scheme : NULL;
}

static int refuse_gptq(const struct qp_scheme *s, const char *where)
{
    char buf[QP_SCHEME_MAX + 1];
    qp_scheme_format(s, buf, sizeof buf);
    qp_cli_error("%sscheme '%s': GPTQ needs calibration data and the model "
                 "runtime, which qprobe does not have yet; use @rtn or @mse",
                 where, buf);
    return QP_EXIT_FAIL;
}

/* Refuses, before anything is written, what would fail half-way: in an
 * npy directory (companion tensors only, no per-tensor metadata) a partial
 * last group the scale shape cannot express and packed types; names taken
 * by a tensor's companions. */
static int check_plan(const struct quantize *q)
{
    for (size_t i = 0; i < qp_dump_count(q->in); i++) {
        const struct qp_tensor *e = qp_dump_entry(q->in, i);
        const struct qp_scheme *s = pick(q, e);
        if (!s || q->fake)
            continue;
        struct qp_qgeom g;
        struct qp_error err;
        if (qp_qgeom_init(&g, e->ndim, e->shape, s->w.gran, s->w.group,
                          opts_for(q, e->name).layout, &err))
            return qp_cli_fail(&err);
        char shape[128];
        qp_shape_str(e->ndim, e->shape, shape, sizeof shape);
        bool npy = q->w->format == QP_DUMP_NPY_DIR;
        if (npy && !qp_qgeom_storable(&g, e->ndim, e->shape)) {
            qp_cli_error("'%s': tensor '%s' %s: groups of %lld along axis %d "
                         "(size %zu) leave a partial last group that NAME.scale "
                         "cannot express (it would read back as groups of "
                         "%zu); use a group size dividing %zu, a .safetensors "
                         "output, or --fake", q->model, e->name, shape,
                         (long long)g.block, g.axis, g.dim,
                         (g.dim + g.nblk - 1) / g.nblk, g.dim);
            return QP_EXIT_FAIL;
        }
        enum qp_dtype dt = qp_qformat_dtype(&s->w.f);
        if (npy && !qp_fmt_npy_descr(dt)) {
            qp_cli_error("'%s': tensor '%s': .npy files cannot hold %s "
                         "(%u-bit packed) tensors; write a .safetensors file, "
                         "or use --fake", q->out, e->name, qp_dtype_name(dt),
                         s->w.f.bits);
            return QP_EXIT_FAIL;
        }
        static const char *const sfx[] = {".scale", ".zero_point"};
        for (int k = 0; k < 2; k++) {
            size_t len = strlen(e->name) + strlen(sfx[k]) + 1;
            char *n = malloc(len);
            if (!n) {
                qp_cli_error("out of memory");
                return QP_EXIT_FAIL;
            }
            snprintf(n, len, "%s%s", e->name, sfx[k]);
            long dup = qp_dump_find(q->in, n);
            free(n);
            if (dup >= 0) {
                qp_cli_error("'%s': tensor '%s' would be written beside its "
                             "quantized '%s' as a scale or zero point; rename "
                             "it or --exclude '%s'", q->model,
                             qp_dump_entry(q->in, (size_t)dup)->name, e->name,
                             e->name);
                return QP_EXIT_FAIL;
            }
        }
    }
    return QP_EXIT_OK;
}

/* ---- report ------------------------------------------------------------- */

/* One report row: ref is the original tensor, s the scheme and qt the
 * quantized tensor (NULL, NULL when ref is kept as it is). */
static enum qp_status report_row(const struct quantize *q,
                                 const struct qp_tensor *ref,
                                 const struct qp_scheme *s,
                                 const struct qp_tensor *qt,
                                 struct qp_error *err)
{
    char shape[200], scheme[QP_SCHEME_MAX + 1] = "fp32";
    qp_diff_shape_field(ref->ndim, ref->shape, shape, sizeof shape);
    unsigned bits = qp_dtype_traits(ref->dtype)->bits;
    struct qp_metrics m;
    qp_metrics_init(&m);
    if (s) {
        qp_scheme_format(s, scheme, sizeof scheme);
        bits = s->w.f.bits;
        enum qp_status st = qp_metrics_tensors(ref, qt, &m, err);
        if (st)
            return st;
    }
    qp_csv_str(q->rep, ref->name);
    qp_csv_str(q->rep, shape);
    qp_csv_str(q->rep, scheme);
    qp_csv_int(q->rep, bits);
    qp_csv_num(q->rep, s ? qp_metrics_sqnr_db(&m) : INFINITY);
    qp_csv_num(q->rep, s ? qp_metrics_cosine(&m) : 1);
    qp_csv_num(q->rep, s ? qp_metrics_mae(&m) : 0);
    qp_csv_num(q->rep, m.max_abs_err);
    qp_csv_int(q->rep, (int64_t)qp_tensor_numel(ref) * 4);
    qp_csv_int(q->rep, (int64_t)(s ? qp_rtn_bytes(qt) : ref->nbytes));
    qp_csv_end_row(q->rep);
    return QP_OK;
}

/* ---- the run ------------------------------------------------------------ */

/* Records the scheme of tensor name in the output's metadata, under
 * "scheme:NAME". */
static enum qp_status record_scheme(struct quantize *q, const char *name,
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
    enum qp_status st = qp_dump_writer_set_meta(q->w, key, value, err);
    free(key);
    return st;
}

/* Quantizes (or copies) entry i into the writer. */
static enum qp_status one(struct quantize *q, size_t i, struct qp_error *err)
{
    struct qp_tensor *t, *qt = NULL, *fake = NULL;
    enum qp_status st = qp_dump_load(q->in, i, &t, err);
    if (st)
        return st;
    const struct qp_scheme *s = pick(q, t);
    const struct qp_tensor *out = t;
    if (s) {
        struct qp_wquant_opts o = opts_for(q, t->name);
        st = qp_rtn_quantize(t, &s->w, &o, &qt, err);
        if (st) /* the quantizer knows the tensor, not its file */
            qp_error_in_file(err, q->model);
        if (!st && q->fake &&
            !(st = qp_tensor_new(t->name, QP_DTYPE_F32, t->ndim, t->shape, &fake,
                                 err)))
            qp_tensor_read_f32(qt, 0, qp_tensor_numel(qt), fake->data);
        out = q->fake ? fake : qt;
    }
    if (!st)
        st = qp_dump_writer_add(q->w, out, err);
    if (!st && s)
        st = record_scheme(q, t->name, s, err);
    if (!st && q->rep && qp_dtype_traits(t->dtype)->is_float)
        st = report_row(q, t, s, qt, err);
    if (!st) {
        q->bytes_in += (double)t->nbytes;
        q->bytes_out += s ? (double)qp_rtn_bytes(qt) : (double)t->nbytes;
        if (s)
            q->quantized++;
        else
            q->kept++;
    }
    qp_tensor_free(fake);
    qp_tensor_free(qt);
    qp_tensor_free(t);
    return st;
}

static const char *human_bytes(double v, char *buf, size_t size)
{
    if (v < 1e4)
        snprintf(buf, size, "%.0f B", v);
    else if (v < 1e7)
        snprintf(buf, size, "%.1f kB", v / 1e3);
    else
        snprintf(buf, size, "%.1f MB", v / 1e6);
    return buf;
}

static int run(struct quantize *q)
{
    struct qp_error err;
    if (q->recipe_path && qp_recipe_load(q->recipe_path, &q->recipe, &err))
        return qp_cli_fail(&err);
    if (q->recipe) {
        for (size_t i = 0; i < q->recipe->nrules; i++)
            if (!q->recipe->rules[i].fp32 &&
                q->recipe->rules[i].scheme.w.algo == QP_WALGO_GPTQ) {
                char where[600];
                snprintf(where, sizeof where, "'%s': layers \"%.300s\": ",
                         q->recipe_path, q->recipe->rules[i].glob);
                return refuse_gptq(&q->recipe->rules[i].scheme, where);
            }
        if (q->recipe->has_default && !q->recipe->def.fp32 &&
            q->recipe->def.scheme.w.algo == QP_WALGO_GPTQ) {
            char where[600];
            snprintf(where, sizeof where, "'%s': \"default\": ", q->recipe_path);
            return refuse_gptq(&q->recipe->def.scheme, where);
        }
    }
    if (qp_dump_open(q->model, QP_DUMP_AUTO, &q->in, &err))
        return qp_cli_fail(&err);
    if (!q->layout_given && q->in->format == QP_DUMP_ONNX &&
        onnx_layouts(q, &err))
        return qp_cli_fail(&err);
    if (qp_dump_writer_open(q->out, QP_DUMP_AUTO, &q->w, &err))
        return qp_cli_fail(&err);
    int rc = check_plan(q);
    if (rc)
        return rc;
    if (q->report) {
        static const char *const cols[] = {
            "name", "shape", "scheme", "bits", "sqnr_db", "cosine", "mae",
            "max_abs", "bytes_fp32", "bytes_quantized"};
        if (qp_csv_open(q->report, &q->rep, &err))
            return qp_cli_fail(&err);
        qp_csv_row(q->rep, cols, sizeof cols / sizeof cols[0]);
    }
    if (qp_dump_writer_set_meta(q->w, "quantize:round",
                                qp_round_name(q->wq.round), &err) ||
        qp_dump_writer_set_meta(q->w, "quantize:layout",
                                q->layouts.count ? "onnx-graph"
                                                 : qp_wlayout_name(q->wq.layout),
                                &err) ||
        (q->fake && qp_dump_writer_set_meta(q->w, "quantize:fake", "1", &err)))
        return qp_cli_fail(&err);
    struct qp_progress p = qp_cli_progress(q->quiet);
    size_t n = qp_dump_count(q->in);
    for (size_t i = 0; i < n; i++) {
        if (one(q, i, &err))
            return qp_cli_fail(&err);
        qp_progress_report(&p, "quantize", i + 1, n);
    }
    qp_cli_progress_done();
    enum qp_status st = qp_dump_writer_commit(q->w, &err);
    q->w = NULL;
    if (st)
        return qp_cli_fail(&err);
    if (q->rep) {
        st = qp_csv_commit(q->rep, &err);
        q->rep = NULL;
        if (st)
            return qp_cli_fail(&err);
    }
    if (!q->quiet) {
        char a[32], b[32];
        printf("%s: %zu tensors quantized, %zu kept; %s -> %s%s\n", q->out,
               q->quantized, q->kept, human_bytes(q->bytes_in, a, sizeof a),
               human_bytes(q->bytes_out, b, sizeof b),
               q->fake ? " as integers (written dequantized to fp32)" : "");
    }
    return QP_EXIT_OK;
}

int cmd_quantize(int argc, char **argv)
{
    struct quantize q;
    memset(&q, 0, sizeof q);
    struct qp_cli_state st = {0};
    const char *arg;
    int c, rc = QP_EXIT_OK;
    /* after an error, options are still consumed so the parser ends */
    while ((c = qp_cli_next(&st, argc, argv, &cli, &arg)) != QP_CLI_END) {
        if (c == QP_CLI_HELP || c == QP_CLI_ERROR) {
            rc = rc ? rc : c == QP_CLI_HELP ? -2 : QP_EXIT_USAGE;
            break;
        }
        if (rc)
            continue;
        switch (c) {
        case O_SCHEME: q.scheme_str = arg; break;
        case O_RECIPE: q.recipe_path = arg; break;
        case O_OUTPUT: q.out = arg; break;
        case O_FAKE: q.fake = true; break;
        case O_REPORT: q.report = arg; break;
        case O_INCLUDE: rc = push_glob(&q.include, &q.ninc, arg); break;
        case O_EXCLUDE: rc = push_glob(&q.exclude, &q.nexc, arg); break;
        case O_LAYOUT:
            q.layout_given = true;
            if (!qp_wlayout_from_name(arg, &q.wq.layout))
                rc = qp_cli_usage(&cli, "--layout must be torch, tflite, "
                                        "keras or io, not '%s'", arg);
            break;
        case O_ROUND:
            if (!qp_round_from_name(arg, &q.wq.round))
                rc = qp_cli_usage(&cli, "--round must be half-away or "
                                        "half-even, not '%s'", arg);
            break;
        case O_CALIB: q.calib = arg; break;
        case O_QUIET: q.quiet = true; break;
        }
    }
    int nops = argc - st.optind;
    if (rc) {
        rc = rc == -2 ? QP_EXIT_OK : rc < 0 ? QP_EXIT_FAIL : rc;
    } else if (nops != 1) {
        rc = qp_cli_usage(&cli, nops ? "one MODEL expected, got %d operands"
                                     : "MODEL is missing", nops);
    } else if (!q.scheme_str == !q.recipe_path) {
        rc = qp_cli_usage(&cli, "give exactly one of --scheme and --recipe");
    } else if (!q.out) {
        rc = qp_cli_usage(&cli, "-o OUT is missing");
    } else if (q.calib) {
        qp_cli_error("--calib '%s': calibration-based quantization (GPTQ, "
                     "activation ranges) needs the model runtime, which qprobe "
                     "does not have yet; quantize the weights without --calib",
                     q.calib);
        rc = QP_EXIT_FAIL;
    } else {
        q.model = argv[st.optind];
        struct qp_error err;
        if (q.scheme_str && qp_scheme_parse(q.scheme_str, &q.scheme, NULL, &err))
            rc = qp_cli_fail(&err);
        else if (q.scheme_str && q.scheme.w.algo == QP_WALGO_GPTQ)
            rc = refuse_gptq(&q.scheme, "");
        else
            rc = run(&q);
    }
    qp_dump_writer_abort(q.w);
    qp_csv_abort(q.rep);
    qp_dump_close(q.in);
    qp_strmap_release(&q.layouts);
    qp_recipe_free(q.recipe);
    free(q.include);
    free(q.exclude);
    return rc;
}
