/* tests/mutate/inputs.c: the valid files the mutations start from, written
 * by qprobe's own writers (tests/mutate/mutate.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "formats/dump.h"
#include "formats/npy.h"
#include "formats/tensorproto.h"
#include "model/graph.h"
#include "model/onnx-import.h"
#include "tests/mutate/mutate.h"

/* The tensors of every dump: a weight, a per-channel quantized int8
 * tensor with zero points, a bias, an f16 tensor. */
static int tensors(struct qp_tensor **t, struct qp_error *err)
{
    static const int64_t sw[2] = {8, 16}, sq[2] = {4, 8}, sb[1] = {8},
                         sh[2] = {2, 3};
    if (qp_tensor_new("w", QP_DTYPE_F32, 2, sw, &t[0], err) ||
        qp_tensor_new("layer.q", QP_DTYPE_I8, 2, sq, &t[1], err) ||
        qp_tensor_new("b", QP_DTYPE_F32, 1, sb, &t[2], err) ||
        qp_tensor_new("h", QP_DTYPE_F16, 2, sh, &t[3], err))
        return -1;
    for (int i = 0; i < 128; i++)
        ((float *)t[0]->data)[i] = (float)sin(i * 0.37) * (i % 17 == 3 ? 9 : 1);
    for (int i = 0; i < 32; i++)
        ((int8_t *)t[1]->data)[i] = (int8_t)(i * 9 - 120);
    for (int i = 0; i < 8; i++)
        ((float *)t[2]->data)[i] = (float)i / 8 - 0.5f;
    for (int i = 0; i < 6; i++)
        ((uint16_t *)t[3]->data)[i] = (uint16_t)(0x3c00 + i * 0x100);
    static const float sc[4] = {0.5f, 0.25f, 0.125f, 2};
    static const int32_t zp[4] = {1, 0, -3, 7};
    if (qp_tensor_set_qparams(t[1], 4, sc, zp, 0, 0, err) ||
        qp_tensor_set_layout(t[0], "OI", err))
        return -1;
    return 4;
}

static int write_dump(const char *path, enum qp_dump_format f,
                      struct qp_tensor **t, int n, struct qp_error *err)
{
    struct qp_dump_writer *w;
    if (qp_dump_writer_open(path, f, &w, err))
        return -1;
    for (int i = 0; i < n; i++)
        if (qp_dump_writer_add(w, t[i], err)) {
            qp_dump_writer_abort(w);
            return -1;
        }
    if (qp_dump_writer_set_meta(w, "scheme:w", "w8c", err)) {
        qp_dump_writer_abort(w);
        return -1;
    }
    return qp_dump_writer_commit(w, err) ? -1 : 0;
}

int mut_copy_file(const char *src, const char *dst)
{
    char *bytes;
    size_t len;
    struct qp_error err;
    if (qp_read_file(src, (size_t)1 << 28, &bytes, &len, &err))
        return -1;
    FILE *f = fopen(dst, "wb");
    int ok = f && fwrite(bytes, 1, len, f) == len;
    if (f && fclose(f) != 0)
        ok = 0;
    free(bytes);
    return ok ? 0 : -1;
}

static int write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    int ok = f && fputs(text, f) >= 0;
    if (f && fclose(f) != 0)
        ok = 0;
    return ok ? 0 : -1;
}

/* Copies root/tests/fuzz/seeds/onnx-run/NAME-model.seed to base/NAME.onnx
 * and writes a ramp for its one input as base/in-NAME.npy (and .pb). */
static int model(const char *base, const char *root, const char *name,
                 struct mut_target *t, int *n, struct qp_error *err)
{
    char src[4096], dst[4096];
    snprintf(src, sizeof src, "%s/tests/fuzz/seeds/onnx-run/%s-model.seed", root,
             name);
    snprintf(dst, sizeof dst, "%s/%s.onnx", base, name);
    struct qp_graph *g;
    if (mut_copy_file(src, dst) || qp_model_load_onnx(dst, NULL, &g, err))
        return -1;
    if (g->n_inputs != 1) {
        qp_graph_free(g);
        return qp_fail(err, QP_E_INVAL, "%s: one input expected", dst), -1;
    }
    const struct qp_value *v = &g->values[g->inputs[0]];
    int64_t shape[QP_MAX_DIMS];
    for (int d = 0; d < v->ndim; d++)
        shape[d] = v->shape[d] > 0 ? v->shape[d] : 2;
    struct qp_tensor *x;
    int st = qp_tensor_new(v->name, QP_DTYPE_F32, v->ndim, shape, &x, err) ? -1 : 0;
    qp_graph_free(g);
    if (st)
        return -1;
    for (size_t i = 0; i < qp_tensor_numel(x); i++)
        ((float *)x->data)[i] = (float)(i % 11) * 0.25f - 1;
    static const char *const ext[2] = {"npy", "pb"};
    for (int k = 0; k < 2 && !st; k++) {
        snprintf(dst, sizeof dst, "%s/in-%s.%s", base, name, ext[k]);
        st = (k ? qp_fmt_pb_save(dst, x, err) : qp_fmt_npy_save(dst, x, err)) ? -1 : 0;
        struct mut_target *in = &t[(*n)++];
        *in = (struct mut_target){.kind = KIND_INPUT,
                                  .layout = k ? MUT_BINARY : MUT_NPY};
        snprintf(in->name, sizeof in->name, "in-%s.%s", name, ext[k]);
        snprintf(in->model, sizeof in->model, "%s.onnx", name);
    }
    qp_tensor_free(x);
    struct mut_target *m = &t[(*n)++];
    *m = (struct mut_target){.kind = KIND_MODEL, .layout = MUT_BINARY};
    snprintf(m->name, sizeof m->name, "%s.onnx", name);
    snprintf(m->model, sizeof m->model, "in-%s.npy", name); /* its input */
    return st;
}

int mut_inputs(const char *base, const char *root, struct mut_target *t)
{
    struct qp_error err;
    struct qp_tensor *ts[4] = {NULL};
    int n = 0, nt = tensors(ts, &err), st = nt < 0 ? -1 : 0;
    static const struct {
        const char *name;
        enum qp_dump_format f;
        bool dir;
        enum mut_layout layout;
        int first, count; /* of ts[] */
    } dumps[] = {
        {"t.safetensors", QP_DUMP_SAFETENSORS, false, MUT_SAFETENSORS, 0, 4},
        {"t.npz", QP_DUMP_NPZ, false, MUT_BINARY, 0, 4},
        {"t.h5", QP_DUMP_HDF5, false, MUT_BINARY, 0, 4},
        {"t.npy", QP_DUMP_NPY, false, MUT_NPY, 0, 1},
        {"t.pb", QP_DUMP_PB, false, MUT_BINARY, 0, 1},
        {"t.gguf", QP_DUMP_GGUF, false, MUT_BINARY, 0, 1},
        {"tdir", QP_DUMP_NPY_DIR, true, MUT_NPY, 0, 4},
        {"tpb", QP_DUMP_PB_DIR, true, MUT_BINARY, 0, 4},
        {"traw", QP_DUMP_RAW_DIR, true, MUT_TEXT, 0, 4},
    };
    for (size_t i = 0; !st && i < sizeof dumps / sizeof dumps[0]; i++) {
        char *path = qp_path_join(base, dumps[i].name);
        st = path ? write_dump(path, dumps[i].f, ts + dumps[i].first,
                               dumps[i].count, &err)
                  : -1;
        free(path);
        t[n] = (struct mut_target){.kind = KIND_DUMP, .dir = dumps[i].dir,
                                   .layout = dumps[i].layout};
        snprintf(t[n++].name, sizeof t[0].name, "%s", dumps[i].name);
    }
    for (int i = 0; i < 4; i++)
        qp_tensor_free(ts[i]);
    static const struct {
        const char *name, *text;
        enum mut_kind kind;
    } texts[] = {
        {"recipe.json", "{\"qprobe_recipe\": 1, \"default\": \"w8c\",\n"
                        " \"requant\": \"tflite\",\n"
                        " \"layers\": {\"w\": \"w4g8z\", \"b*\": \"fp32\", "
                        "\"h\": \"w8t\"}}\n", KIND_RECIPE},
        {"map.json", "{\"pairs\": {\"w\": \"w\", \"b\": \"b\"},\n"
                     " \"rules\": [{\"test\": \"^layer\\\\.(.*)$\", \"ref\": "
                     "\"layer.\\\\1\"}], \"_note\": \"x\"}\n", KIND_MAP},
    };
    for (size_t i = 0; !st && i < sizeof texts / sizeof texts[0]; i++) {
        char *path = qp_path_join(base, texts[i].name);
        st = path ? write_text(path, texts[i].text) : -1;
        free(path);
        t[n] = (struct mut_target){.kind = texts[i].kind, .layout = MUT_TEXT};
        snprintf(t[n++].name, sizeof t[0].name, "%s", texts[i].name);
    }
    static const char *const models[] = {"conv", "matmul", "shape"};
    for (size_t i = 0; !st && i < sizeof models / sizeof models[0]; i++)
        st = model(base, root, models[i], t, &n, &err);
    if (st) {
        fprintf(stderr, "qp-mutate: cannot write the inputs: %s\n", err.msg);
        return -1;
    }
    return n;
}
