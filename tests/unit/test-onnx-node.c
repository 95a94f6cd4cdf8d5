/* The ONNX backend node tests (Debian's libonnx-testdata: model.onnx plus
 * test_data_set_N/input_K.pb and output_K.pb, outputs computed by the ONNX
 * reference implementation) for every test whose operators qprobe
 * supports: import, run every data set, compare every output.
 *
 * Tolerance: integers and bools exactly; floats |got - want| <= atol +
 * rtol * |want| with (rtol, atol) = (1e-5, 1e-6) for f32 and f64, (1e-3,
 * 1e-3) for f16 and (1e-2, 1e-2) for bf16 (their own precision); NaN
 * must meet NaN. The few tests of supported operators that are not run
 * are listed below with the reason. Prints how many tests it covers.
 *
 * The 1.12 test data stores bfloat16 tensors with data type UINT16; the
 * harness reads those as the bfloat16 the model declares (bits unchanged),
 * as ONNX's own runner does. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/onnx.h"
#include "formats/tensorproto.h"
#include "model/exec.h"
#include "model/onnx-import.h"
#include "model/op.h"
#include "tests/test.h"

#define NODE_DIR "/usr/share/libonnx-testdata/data/node"

static const struct {
    const char *test, *why;
} excluded[] = {
    {"test_cast_FLOAT_to_STRING", "string tensors"},
    {"test_cast_STRING_to_FLOAT", "string tensors"},
    {"test_castlike_FLOAT_to_STRING", "string tensors"},
    {"test_castlike_STRING_to_FLOAT", "string tensors"},
    {"test_castlike_FLOAT_to_STRING_expanded", "string tensors"},
    {"test_castlike_STRING_to_FLOAT_expanded", "string tensors"},
    {"test_if", "a runtime If condition (qprobe inlines constant ones)"},
    /* the model declares input 'like' [3,4]; its data is [1] */
    {"test_castlike_BFLOAT16_to_FLOAT", "data disagrees with declared shape"},
    {"test_castlike_BFLOAT16_to_FLOAT_expanded", "data disagrees with declared shape"},
    {"test_castlike_FLOAT_to_BFLOAT16", "data disagrees with declared shape"},
    {"test_castlike_FLOAT_to_BFLOAT16_expanded", "data disagrees with declared shape"},
    {"test_training_dropout", "a random mask"},
    {"test_training_dropout_default", "a random mask"},
    {"test_training_dropout_default_mask", "a random mask"},
    {"test_training_dropout_mask", "a random mask"},
    {"test_if_opt", "optional types"},
    {"test_if_seq", "sequence types"},
    {"test_identity_opt", "optional types"},
    {"test_identity_sequence", "sequence types"},
};

static const char *why_excluded(const char *test)
{
    for (size_t i = 0; i < sizeof excluded / sizeof excluded[0]; i++)
        if (!strcmp(excluded[i].test, test))
            return excluded[i].why;
    return NULL;
}

/* True when every node of the main graph is an operator qprobe runs (or a
 * Constant, which import turns into a value). */
static bool supported(const struct qp_onnx_model *m)
{
    const struct qp_onnx_graph *g = m->graph;
    for (size_t i = 0; i < g->n_nodes; i++) {
        const struct qp_onnx_node *n = &g->nodes[i];
        if (qp_onnx_node_is(n, "Constant"))
            continue;
        if (!qp_op_find(n->domain, n->op_type))
            return false;
    }
    return true;
}

static void tolerance(enum qp_dtype dt, double *rtol, double *atol)
{
    *rtol = dt == QP_DTYPE_F16 ? 1e-3 : dt == QP_DTYPE_BF16 ? 1e-2 : 1e-5;
    *atol = dt == QP_DTYPE_F16 ? 1e-3 : dt == QP_DTYPE_BF16 ? 1e-2 : 1e-6;
}

/* Empty string when got matches want, else what differs. */
static void compare(const struct qp_tensor *got, const struct qp_tensor *want,
                    char *why, size_t size)
{
    why[0] = '\0';
    if (got->dtype != want->dtype) {
        snprintf(why, size, "dtype %s, expected %s", qp_dtype_name(got->dtype),
                 qp_dtype_name(want->dtype));
        return;
    }
    if (!qp_shape_equal(got->ndim, got->shape, want->ndim, want->shape)) {
        char s0[128], s1[128];
        qp_shape_str(got->ndim, got->shape, s0, sizeof s0);
        qp_shape_str(want->ndim, want->shape, s1, sizeof s1);
        snprintf(why, size, "shape %s, expected %s", s0, s1);
        return;
    }
    size_t n = qp_tensor_numel(want);
    bool is_f = qp_dtype_traits(want->dtype)->is_float;
    double rtol, atol;
    tolerance(want->dtype, &rtol, &atol);
    for (size_t i = 0; i < n; i++) {
        if (!is_f) {
            int64_t a = qp_elem_get_i64(got->dtype, got->data, i);
            int64_t b = qp_elem_get_i64(want->dtype, want->data, i);
            if (a != b) {
                snprintf(why, size, "element %zu is %lld, expected %lld", i,
                         (long long)a, (long long)b);
                return;
            }
            continue;
        }
        double a = qp_elem_get_f64(got->dtype, got->data, i);
        double b = qp_elem_get_f64(want->dtype, want->data, i);
        bool ok = (isnan(a) && isnan(b)) || a == b ||
                  fabs(a - b) <= atol + rtol * fabs(b);
        if (!ok) {
            snprintf(why, size, "element %zu is %.9g, expected %.9g", i, a, b);
            return;
        }
    }
}

/* Runs data set dir against g; false (with why) on the first mismatch. */
static bool run_set(const struct qp_graph *g, const char *dir, char *why,
                    size_t size)
{
    struct qp_error err;
    struct qp_tensor *in[QP_OP_MAX_IO] = {0}, *out[QP_OP_MAX_IO] = {0};
    bool ok = g->n_inputs <= QP_OP_MAX_IO && g->n_outputs <= QP_OP_MAX_IO;
    if (!ok)
        snprintf(why, size, "too many inputs or outputs");
    for (int k = 0; ok && k < g->n_inputs; k++) {
        char path[768];
        snprintf(path, sizeof path, "%s/input_%d.pb", dir, k);
        if (qp_fmt_pb_load(path, &in[k], &err)) {
            snprintf(why, size, "%s", err.msg);
            ok = false;
        } else if (in[k]->dtype == QP_DTYPE_U16 &&
                   g->values[g->inputs[k]].dtype == QP_DTYPE_BF16) {
            in[k]->dtype = QP_DTYPE_BF16; /* the UINT16 quirk, see above */
        }
    }
    if (ok && qp_exec_run(g, (const struct qp_tensor *const *)in, g->n_inputs,
                          NULL, out, NULL, &err)) {
        snprintf(why, size, "%s", err.msg);
        ok = false;
    }
    for (int k = 0; ok && k < g->n_outputs; k++) {
        char path[768];
        struct qp_tensor *want;
        snprintf(path, sizeof path, "%s/output_%d.pb", dir, k);
        if (qp_fmt_pb_load(path, &want, &err)) {
            snprintf(why, size, "%s", err.msg);
            ok = false;
            break;
        }
        if (want->dtype == QP_DTYPE_U16 && out[k]->dtype == QP_DTYPE_BF16)
            want->dtype = QP_DTYPE_BF16;
        int pre = snprintf(why, size, "output %d: ", k);
        compare(out[k], want, why + pre, size - (size_t)pre);
        if (why[pre])
            ok = false;
        else
            why[0] = '\0';
        qp_tensor_free(want);
    }
    for (int k = 0; k < QP_OP_MAX_IO; k++) {
        qp_tensor_free(in[k]);
        qp_tensor_free(out[k]);
    }
    return ok;
}

/* Imports and runs one test; returns false with why on failure. */
static bool run_test(const char *test, struct qp_onnx_model *m, char *why,
                     size_t size)
{
    struct qp_error err;
    struct qp_graph *g;
    if (qp_model_from_onnx(m, NULL, &g, &err)) {
        snprintf(why, size, "import: %s", err.msg);
        return false;
    }
    bool ok = true;
    int sets = 0;
    for (int s = 0; ok; s++) {
        char dir[512];
        struct stat st;
        snprintf(dir, sizeof dir, NODE_DIR "/%s/test_data_set_%d", test, s);
        if (stat(dir, &st))
            break;
        ok = run_set(g, dir, why, size);
        sets++;
    }
    if (ok && !sets) {
        snprintf(why, size, "no data set");
        ok = false;
    }
    qp_graph_free(g);
    return ok;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

QP_TEST(onnx_node_tests_of_supported_operators)
{
    DIR *d = opendir(NODE_DIR);
    if (!d) {
        qp_test_failf(ctx, __FILE__, __LINE__, "cannot open " NODE_DIR
                      " (Debian package libonnx-testdata)");
        return;
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (!strncmp(de->d_name, "test_", 5)) {
            names = realloc(names, (n + 1) * sizeof *names);
            names[n++] = strdup(de->d_name);
        }
    closedir(d);
    qsort(names, n, sizeof *names, by_name);
    int run = 0, failed = 0, excl = 0;
    for (size_t i = 0; i < n; i++) {
        char path[512], why[2048];
        struct qp_onnx_model *m;
        struct qp_error err;
        snprintf(path, sizeof path, NODE_DIR "/%s/model.onnx", names[i]);
        if (qp_onnx_load(path, &m, &err)) {
            /* the reader refuses some (string tensors, sparse...): then a
             * supported operator's test must be listed as excluded */
            if (!why_excluded(names[i]))
                continue;
            excl++;
            continue;
        }
        if (!supported(m)) {
            qp_onnx_model_free(m);
            continue;
        }
        if (why_excluded(names[i])) {
            qp_onnx_model_free(m);
            excl++;
            continue;
        }
        run++;
        if (!run_test(names[i], m, why, sizeof why)) {
            failed++;
            qp_test_failf(ctx, __FILE__, __LINE__, "%s: %s", names[i], why);
        }
    }
    printf("onnx node tests: %d of %zu run (every test whose operators qprobe "
           "supports), %d failed, %d excluded (listed in %s)\n", run, n, failed,
           excl, __FILE__);
    CHECK(run >= 300);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}
