/* Unit tests of analysis/export-ort.c: quantize_static's arguments and
 * TensorQuantOverrides of a recipe on the small model, field by field,
 * with types only (no calibration) and with the plan's parameters and
 * converts; and the refusals. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/export-ort.h"
#include "formats/json.h"
#include "tests/test.h"
#include "tests/unit/export-test-util.h"

static const char *RECIPE =
    "{\"qprobe_recipe\": 1, \"default\": \"w8c+a8tz\", \"layers\": {"
    "\"conv1.w\": \"w4c\", \"conv2.w\": \"w8c+a16tz\", \"fc.w\": \"fp32\"}}";

static const char *str_of(const struct qp_json *o, const char *key)
{
    const char *s = NULL;
    return qp_json_str(qp_json_get(o, key), &s) ? s : "";
}

static double num_of(const struct qp_json *o, const char *key)
{
    double v = NAN;
    qp_json_num(qp_json_get(o, key), &v);
    return v;
}

static int bool_of(const struct qp_json *o, const char *key)
{
    bool b;
    return qp_json_bool(qp_json_get(o, key), &b) ? b : -1;
}

/* Writes the overrides of RECIPE (with the plan when calib) and loads them. */
static struct qp_json *overrides(struct qp_test_ctx *ctx, bool calib,
                                 struct qp_splan **keep, struct qp_session **ks)
{
    char model[1024], cdir[1024], out[1024];
    const char *tmp = qp_test_tmpdir(ctx);
    snprintf(model, sizeof model, "%s/small.onnx", tmp);
    snprintf(cdir, sizeof cdir, "%s/calib", tmp);
    snprintf(out, sizeof out, "%s/ov%d.json", tmp, calib);
    if (!ex_model(ctx, model, 13) || !ex_inputs(ctx, cdir, 2, 3))
        return NULL;
    struct qp_error err;
    struct qp_session *s;
    struct qp_recipe *r;
    struct qp_splan *plan = NULL;
    if (!ex_plan(ctx, model, calib ? cdir : NULL, calib ? NULL : "w8c", calib
                 ? RECIPE : NULL, &s, &r, &plan))
        return NULL;
    if (!calib && qp_recipe_parse(RECIPE, "'r'", &r, &err))
        return NULL;
    char summary[512];
    struct qp_json *root = NULL;
    if (qp_export_ort_overrides(s, calib ? qp_splan_qplan(plan) : NULL, r, true,
                                out, summary, sizeof summary, &err) ||
        qp_json_load(out, &root, &err))
        qp_test_failf(ctx, __FILE__, __LINE__, "%s", err.msg);
    qp_recipe_free(r);
    *keep = plan;
    *ks = s;
    return root;
}

QP_TEST(export_ort_overrides_types_only)
{
    struct qp_splan *plan;
    struct qp_session *s;
    struct qp_json *root = overrides(ctx, false, &plan, &s);
    REQUIRE(root);
    CHECK_STR(str_of(root, "weight_type"), "QInt8");
    CHECK_STR(str_of(root, "activation_type"), "QUInt8");
    CHECK_INT(bool_of(root, "per_channel"), 1);
    const struct qp_json *ex = qp_json_get(root, "nodes_to_exclude");
    CHECK_INT(qp_json_size(ex), 1);
    const char *n0 = NULL;
    CHECK(qp_json_str(qp_json_at(ex, 0), &n0) && !strcmp(n0, "mm"));
    const struct qp_json *ov = qp_json_get(root, "TensorQuantOverrides");
    /* conv1.w and conv2.w (the folded one under the conv's name), n2 */
    CHECK_INT(qp_json_size(ov), 3);
    const struct qp_json *w1 = qp_json_at(qp_json_get(ov, "conv1.w"), 0);
    CHECK_STR(str_of(w1, "quant_type"), "QInt4");
    CHECK(num_of(w1, "axis") == 0);
    CHECK_INT(bool_of(w1, "symmetric"), 1);
    CHECK_INT(qp_json_size(qp_json_get(ov, "conv1.w")), 1);
    const struct qp_json *w2 = qp_json_at(qp_json_get(ov, "conv2.w"), 0);
    CHECK_STR(str_of(w2, "quant_type"), "QInt8");
    const struct qp_json *a = qp_json_at(qp_json_get(ov, "n2"), 0);
    CHECK_STR(str_of(a, "quant_type"), "QUInt16");
    CHECK_INT(bool_of(a, "symmetric"), 0);
    CHECK(!qp_json_get(a, "scale") && !qp_json_get(a, "convert"));
    qp_json_free(root);
    qp_splan_free(plan);
    qp_session_free(s);
}

QP_TEST(export_ort_overrides_with_the_plans_parameters)
{
    struct qp_splan *plan;
    struct qp_session *s;
    struct qp_json *root = overrides(ctx, true, &plan, &s);
    REQUIRE(root);
    const struct qp_qplan *p = qp_splan_qplan(plan);
    const struct qp_graph *g = qp_session_graph(s);
    const struct qp_json *ov = qp_json_get(root, "TensorQuantOverrides");
    /* conv1.w: one dict per channel, the first with the axis, every one
     * with qprobe's scale and zero point (which exclude "symmetric") */
    const struct qp_json *w1 = qp_json_get(ov, "conv1.w");
    CHECK_INT(qp_json_size(w1), 6);
    int conv1 = -1;
    for (int i = 0; i < g->n_nodes; i++)
        if (!strcmp(g->nodes[i].name, "conv1"))
            conv1 = i;
    REQUIRE(conv1 >= 0);
    for (size_t c = 0; c < 6; c++) {
        const struct qp_json *d = qp_json_at(w1, c);
        CHECK(num_of(d, "scale") == p->n[conv1].w_q->qp->scale[c]);
        CHECK(num_of(d, "zero_point") == 0);
        CHECK(!qp_json_get(d, "symmetric"));
        CHECK(c == 0 ? num_of(d, "axis") == 0 : !qp_json_get(d, "axis"));
    }
    /* the folded conv2.w: its type only */
    const struct qp_json *w2 = qp_json_get(ov, "conv2.w");
    CHECK_INT(qp_json_size(w2), 1);
    CHECK(!qp_json_get(qp_json_at(w2, 0), "scale"));
    /* n2 (16-bit) with its scale, and a convert to uint8 for add1 */
    int n2 = qp_graph_find(g, "n2"), r1 = qp_graph_find(g, "r1");
    REQUIRE(n2 >= 0 && r1 >= 0);
    const struct qp_json *a = qp_json_at(qp_json_get(ov, "n2"), 0);
    CHECK_STR(str_of(a, "quant_type"), "QUInt16");
    CHECK(num_of(a, "scale") == p->v[n2].scale);
    CHECK(num_of(a, "zero_point") == p->v[n2].zp);
    const struct qp_json *cv = qp_json_get(a, "convert");
    CHECK_STR(str_of(cv, "quant_type"), "QUInt8");
    const char *recv = NULL;
    CHECK(qp_json_str(qp_json_at(qp_json_get(cv, "recv_nodes"), 0), &recv) &&
          !strcmp(recv, "add1"));
    /* r1 (8-bit, the default) converts up for conv2 */
    const struct qp_json *b = qp_json_at(qp_json_get(ov, "r1"), 0);
    CHECK_STR(str_of(b, "quant_type"), "QUInt8");
    CHECK_STR(str_of(qp_json_get(b, "convert"), "quant_type"), "QUInt16");
    CHECK(qp_json_str(qp_json_at(qp_json_get(qp_json_get(b, "convert"), "recv_nodes"),
                                 0), &recv) && !strcmp(recv, "conv2"));
    CHECK(fabs(num_of(qp_json_get(b, "convert"), "scale") * 257 - p->v[r1].scale) <
          1e-6 * p->v[r1].scale);
    qp_json_free(root);
    qp_splan_free(plan);
    qp_session_free(s);
}

QP_TEST(export_ort_overrides_refusals)
{
    char model[1024], out[1024];
    const char *tmp = qp_test_tmpdir(ctx);
    snprintf(model, sizeof model, "%s/small.onnx", tmp);
    snprintf(out, sizeof out, "%s/ov.json", tmp);
    REQUIRE(ex_model(ctx, model, 13));
    static const struct {
        const char *rule, *needle;
    } cases[] = {
        {"w6c", "tensor 'conv1.w': w6c has 6 bits; onnxruntime's QuantType has "
                "4, 8 and 16"},
        {"w4g16", "tensor 'conv1.w': w4g16 has no TensorQuantOverrides form"},
        {"w8c+a8d", "activation 'c1': a8d is dynamic"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char recipe[256];
        snprintf(recipe, sizeof recipe, "{\"qprobe_recipe\": 1, \"layers\": "
                 "{\"conv1.w\": \"%s\"}}", cases[k].rule);
        struct qp_error err;
        struct qp_session *s;
        struct qp_recipe *r;
        REQUIRE_OK(qp_session_open(model, NULL, &s, &err), &err);
        REQUIRE_OK(qp_recipe_parse(recipe, "'r'", &r, &err), &err);
        char summary[256];
        CHECK_FAILS(qp_export_ort_overrides(s, NULL, r, true, out, summary,
                                            sizeof summary, &err),
                    QP_E_UNSUPPORTED, &err, cases[k].needle);
        struct stat sb;
        CHECK(stat(out, &sb) != 0);
        qp_recipe_free(r);
        qp_session_free(s);
    }
}
