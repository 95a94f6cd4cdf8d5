/* Unit tests of analysis/export-enc.c and formats/qnn-encodings-write.c:
 * AIMET/QNN encodings of a plan read back through qprobe's QNN reader
 * (the one raw dumps use) with the plan's every scale and zero point, on
 * AIMET's unsigned grid (symmetric int8 and int16 shifted by 2^(b-1)),
 * min / max / offset fields as the 0.6.1 specification defines them,
 * per-channel weights under their own names (a BN-folded weight as the
 * conv's), float entries; qnn-overrides with exactly the tensors a
 * recipe's rules decide; and the writer's refusals. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/export-enc.h"
#include "formats/json.h"
#include "formats/qnn-encodings.h"
#include "tests/test.h"
#include "tests/unit/export-test-util.h"

struct fix {
    char model[1024], calib[1024], out[1024];
};

static bool fix_setup(struct qp_test_ctx *ctx, struct fix *f)
{
    snprintf(f->model, sizeof f->model, "%s/small.onnx", qp_test_tmpdir(ctx));
    snprintf(f->calib, sizeof f->calib, "%s/calib", qp_test_tmpdir(ctx));
    snprintf(f->out, sizeof f->out, "%s/enc.json", qp_test_tmpdir(ctx));
    return ex_model(ctx, f->model, 13) && ex_inputs(ctx, f->calib, 2, 3);
}

/* The number field key of the first encoding of name in group. */
static double field(const struct qp_json *root, const char *group,
                    const char *name, size_t c, const char *key)
{
    const struct qp_json *e = qp_json_at(qp_json_get(qp_json_get(root, group), name), c);
    double v = NAN;
    qp_json_num(qp_json_get(e, key), &v);
    return v;
}

static void check_round_trip(struct qp_test_ctx *ctx, const struct fix *f,
                             const char *scheme, int bits, int32_t shift)
{
    struct qp_error err;
    struct qp_session *s;
    struct qp_recipe *r;
    struct qp_splan *plan;
    REQUIRE(ex_plan(ctx, f->model, f->calib, scheme, NULL, &s, &r, &plan));
    const struct qp_qplan *p = qp_splan_qplan(plan);
    const struct qp_graph *g = qp_session_graph(s);
    char summary[512];
    REQUIRE_OK(qp_export_encodings(s, p, NULL, f->out, summary, sizeof summary,
                                   &err), &err);
    CHECK_CONTAINS(summary, "10 activation and 3 param encodings (3 per channel)");
    struct qp_json *root;
    struct qp_qnn_encodings enc = {0};
    REQUIRE_OK(qp_json_load(f->out, &root, &err), &err);
    REQUIRE_OK(qp_qnn_encodings_parse(root, "'enc.json'", &enc, &err), &err);
    CHECK_INT(enc.n, 13);
    const char *version = NULL;
    CHECK(qp_json_str(qp_json_get(root, "version"), &version) &&
          !strcmp(version, "0.6.1"));
    for (int v = 0; v < g->n_values; v++) {
        if (!p->v[v].quant)
            continue;
        const char *name = g->values[v].name;
        const struct qp_qnn_encoding *e = qp_qnn_encodings_find(&enc, name);
        REQUIRE(e);
        CHECK_INT(e->bitwidth, bits);
        CHECK_INT(e->count, 1);
        CHECK(e->symmetric == !p->v[v].as.f.asym);
        CHECK(e->scale[0] == p->v[v].scale);
        CHECK_INT(e->zero_point[0], p->v[v].zp + shift);
        /* offset = -zero point; min = offset * scale; max = min + (2^b-1) s */
        double off = field(root, "activation_encodings", name, 0, "offset");
        double sc = field(root, "activation_encodings", name, 0, "scale");
        CHECK(off == -(double)(p->v[v].zp + shift));
        /* (cJSON prints doubles to within an ulp, not always exactly) */
        double lo = off * sc, hi = (off + ldexp(1.0, bits) - 1) * sc;
        CHECK_NEAR(field(root, "activation_encodings", name, 0, "min"), lo,
                   4e-16 * fabs(lo));
        CHECK_NEAR(field(root, "activation_encodings", name, 0, "max"), hi,
                   4e-16 * fabs(hi));
    }
    /* weights: per channel, under their own names; conv2's folded */
    static const char *const weights[] = {"conv1.w", "conv2.w", "fc.w"};
    static const size_t channels[] = {6, 6, 5};
    for (int k = 0; k < 3; k++) {
        const struct qp_qnn_encoding *e = qp_qnn_encodings_find(&enc, weights[k]);
        REQUIRE(e);
        CHECK_INT(e->bitwidth, 8);
        CHECK(e->symmetric);
        CHECK_INT(e->count, channels[k]);
        CHECK_INT(e->zero_point[0], 128); /* symmetric int8 on the u8 grid */
        CHECK(field(root, "param_encodings", weights[k], 1, "offset") == -128);
    }
    for (int i = 0; i < g->n_nodes; i++)
        if (p->n[i].wq) {
            char wn[256];
            qp_node_weight_name(g, i, wn, sizeof wn);
            const struct qp_qnn_encoding *e = qp_qnn_encodings_find(&enc, wn);
            REQUIRE(e);
            for (size_t c = 0; c < e->count; c++)
                CHECK(e->scale[c] == p->n[i].w_q->qp->scale[c]);
        }
    qp_qnn_encodings_release(&enc);
    qp_json_free(root);
    qp_splan_free(plan);
    qp_session_free(s);
}

QP_TEST(export_encodings_round_trip_through_the_qnn_reader)
{
    struct fix f;
    REQUIRE(fix_setup(ctx, &f));
    check_round_trip(ctx, &f, "w8c+a8tz", 8, 0);
    check_round_trip(ctx, &f, "w8c+a8t", 8, 128);
    check_round_trip(ctx, &f, "w8c+a16t", 16, 32768);
    check_round_trip(ctx, &f, "w8c+a16tz", 16, 0);
}

QP_TEST(export_qnn_overrides_hold_the_rules_only)
{
    struct fix f;
    REQUIRE(fix_setup(ctx, &f));
    struct qp_error err;
    struct qp_session *s;
    struct qp_recipe *r;
    struct qp_splan *plan;
    const char *recipe = "{\"qprobe_recipe\": 1, \"default\": \"w8c+a8tz\", "
                         "\"layers\": {\"conv2.w\": \"w8c+a16tz\", \"p\": \"a16tz\", "
                         "\"fc.w\": \"fp32\"}}";
    REQUIRE(ex_plan(ctx, f.model, f.calib, NULL, recipe, &s, &r, &plan));
    char summary[512];
    REQUIRE_OK(qp_export_encodings(s, qp_splan_qplan(plan), r, f.out, summary,
                                   sizeof summary, &err), &err);
    struct qp_json *root;
    REQUIRE_OK(qp_json_load(f.out, &root, &err), &err);
    const struct qp_json *acts = qp_json_get(root, "activation_encodings");
    const struct qp_json *params = qp_json_get(root, "param_encodings");
    /* conv2's output (n2, named after the folded BN), p, and fc's float
     * output m; conv2's weight and fc's float weight */
    CHECK_INT(qp_json_size(acts), 3);
    CHECK_INT(qp_json_size(params), 2);
    CHECK(field(root, "activation_encodings", "n2", 0, "bitwidth") == 16);
    CHECK(field(root, "activation_encodings", "p", 0, "bitwidth") == 16);
    const char *dt = NULL;
    CHECK(qp_json_str(qp_json_get(qp_json_at(qp_json_get(acts, "m"), 0), "dtype"), &dt) &&
          !strcmp(dt, "float"));
    CHECK(field(root, "activation_encodings", "m", 0, "bitwidth") == 32);
    CHECK(qp_json_get(params, "conv2.w") && qp_json_get(params, "fc.w"));
    CHECK(!qp_json_get(params, "conv1.w") && !qp_json_get(acts, "c1"));
    /* the reader takes the integer ones and skips the float ones */
    struct qp_qnn_encodings enc = {0};
    REQUIRE_OK(qp_qnn_encodings_parse(root, "'ov'", &enc, &err), &err);
    CHECK_INT(enc.n, 3);
    CHECK(qp_qnn_encodings_find(&enc, "m") == NULL);
    qp_qnn_encodings_release(&enc);
    qp_json_free(root);
    qp_splan_free(plan);
    qp_recipe_free(r);
    qp_session_free(s);
}

QP_TEST(export_encodings_refusals)
{
    struct fix f;
    REQUIRE(fix_setup(ctx, &f));
    struct qp_error err;
    static const struct {
        const char *scheme, *needle;
    } cases[] = {
        {"w4g16+a8tz", "tensor 'conv1.w': w4g16 has no AIMET/QNN encoding"},
        {"w8c+a8d", "activation 'x': a8d is dynamic"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        struct qp_session *s;
        struct qp_recipe *r;
        struct qp_splan *plan;
        REQUIRE(ex_plan(ctx, f.model, f.calib, cases[k].scheme, NULL, &s, &r, &plan));
        char summary[512];
        CHECK_FAILS(qp_export_encodings(s, qp_splan_qplan(plan), NULL, f.out,
                                        summary, sizeof summary, &err),
                    QP_E_UNSUPPORTED, &err, cases[k].needle);
        struct stat sb;
        CHECK(stat(f.out, &sb) != 0);
        qp_splan_free(plan);
        qp_session_free(s);
    }
    /* the writer's own checks */
    float sc[2] = {0.5f, 0.25f};
    int32_t zp[2] = {3, 256};
    struct qp_qnn_enc_entry e[3] = {
        {"a", false, false, 8, false, 1, sc, zp},
        {"a", false, false, 8, false, 1, sc, zp},
        {"w", true, false, 8, false, 2, sc, zp},
    };
    CHECK_FAILS(qp_qnn_encodings_save(f.out, e, 2, &err), QP_E_INVAL, &err,
                "encoding 'a' appears twice in activation_encodings");
    CHECK_FAILS(qp_qnn_encodings_save(f.out, e + 2, 1, &err), QP_E_INVAL, &err,
                "encoding 'w' channel 1: zero point 256 is outside the grid [0, 255]");
    e[0].bitwidth = 0;
    CHECK_FAILS(qp_qnn_encodings_save(f.out, e, 1, &err), QP_E_INVAL, &err,
                "bitwidth 0 is outside 1..32");
    sc[0] = -1;
    e[0].bitwidth = 8;
    CHECK_FAILS(qp_qnn_encodings_save(f.out, e, 1, &err), QP_E_INVAL, &err,
                "scale -1 is not finite and positive");
    struct stat sb;
    CHECK(stat(f.out, &sb) != 0);
}
