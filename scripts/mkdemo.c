/* scripts/mkdemo.c: writes the demo's sample dumps, deterministically, and
 * small tensors for tests. Built as build/mkdemo by mk/analysis.mk.
 *
 *   mkdemo demo DIR
 *       DIR/ref.h5  the "host reference": float32 activations of a small
 *                   convolutional network, NCHW, PyTorch-style names;
 *                   (4-d tensors carry layout tags, NCHW / NHWC, which
 *                   containers with per-tensor metadata keep)
 *       DIR/device  the "device run", a folder of .raw files with JSON
 *                   metadata: the same tensors as int8 with scale
 *                   and zero point (one per-channel), NHWC, device-style
 *                   names (":0", "_output_0", other spellings), a +-1 LSB
 *                   kernel jitter, one damaged layer (block2.conv1: its
 *                   output scale is 8x too small, so it saturates), a tensor
 *                   only the device has, and one only the reference has.
 *   mkdemo tensor FILE.npy DTYPE SHAPE VALUES
 *       one .npy: DTYPE f32, f64, f16, i8, u8, i16, i32, i64, ...; SHAPE
 *       "2x3" or "scalar"; VALUES comma-separated numbers (nan, inf, -inf
 *       allowed), as many as SHAPE holds.
 *   mkdemo convert SRC DST [FORMAT]
 *       copies every tensor of dump SRC (with its quantization parameters
 *       and layout) into a new dump DST (FORMAT as qprobe names them:
 *       safetensors, npz, h5, npy-dir, pb-dir, raw-dir; default from DST's
 *       extension, else an npy directory).
 *
 *   mkdemo textline FILE.npy SEED
 *       a [1,3,48,320] float32 image in [-1, 1] (PP-OCR's normalisation of
 *       a 48-pixel text line): dark strokes in character cells on a light,
 *       slightly noisy background, different for every SEED. Input and
 *       calibration data for the demo's run of the PP-OCRv4 recognizer.
 *
 * data/README.md describes the data and how the demo uses it. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/tensor.h"
#include "formats/dump.h"
#include "formats/npy.h"

/* ---- deterministic numbers ------------------------------------------------ */

struct rng {
    uint64_t s;
};

static uint32_t rng_u32(struct rng *r) /* PCG-XSH-RR */
{
    uint64_t old = r->s;
    r->s = old * 6364136223846793005ULL + 1442695040888963407ULL;
    uint32_t x = (uint32_t)(((old >> 18) ^ old) >> 27), rot = (uint32_t)(old >> 59);
    return (x >> rot) | (x << ((32 - rot) & 31));
}

static double rng_unit(struct rng *r) /* (0, 1) */
{
    return (rng_u32(r) + 0.5) / 4294967296.0;
}

static double rng_normal(struct rng *r)
{
    return sqrt(-2.0 * log(rng_unit(r))) * cos(6.283185307179586 * rng_unit(r));
}

/* ---- the reference ------------------------------------------------------------ */

struct layer {
    const char *ref_name, *dev_name;
    int ndim;
    int64_t shape[4];  /* NCHW (or [N, F]) */
    int relu;          /* values >= 0 (asymmetric int8 on the device) */
    int per_channel;   /* device scales per channel */
    double damage;     /* device scale divided by this (1: healthy) */
};

static const struct layer layers[] = {
    {"input", "input:0", 4, {4, 3, 16, 16}, 0, 0, 1},
    {"stem.conv", "stem/conv:0", 4, {4, 16, 16, 16}, 0, 0, 1},
    {"stem.relu", "Stem_Relu_output_0", 4, {4, 16, 16, 16}, 1, 0, 1},
    {"block1.conv1", "b1_c1", 4, {4, 32, 8, 8}, 0, 0, 1},
    {"block1.conv2", "b1_c2", 4, {4, 32, 8, 8}, 0, 1, 1},
    {"block2.conv1", "b2_c1", 4, {4, 64, 4, 4}, 0, 0, 8},
    {"block2.conv2", "b2_c2", 4, {4, 64, 4, 4}, 0, 0, 1},
    {"pool", "global_pool", 2, {4, 64}, 1, 0, 1},
    {"logits", "logits", 2, {4, 10}, 0, 0, 1},
};

/* Reference activations: per-channel spread like a real network's. */
static enum qp_status make_ref(const struct layer *l, struct rng *r,
                               struct qp_tensor **out, struct qp_error *err)
{
    enum qp_status st = qp_tensor_new(l->ref_name, QP_DTYPE_F32, l->ndim,
                                      l->shape, out, err);
    if (st)
        return st;
    float *x = (*out)->data;
    size_t n = qp_tensor_numel(*out), c = (size_t)l->shape[1];
    size_t inner = n / ((size_t)l->shape[0] * c);
    for (size_t i = 0; i < n; i++) {
        size_t ch = i / inner % c;
        double v = rng_normal(r) * (0.5 + (double)(ch % 7) * 0.25);
        if (!strcmp(l->ref_name, "logits"))
            v = rng_normal(r) * 2.0 + (ch == (i / c) % c ? 4.0 : 0.0);
        x[i] = (float)(l->relu && v < 0 ? 0 : v);
    }
    /* containers with per-tensor metadata (raw sidecars, HDF5) keep it */
    return l->ndim == 4 ? qp_tensor_set_layout(*out, "NCHW", err) : QP_OK;
}

/* ---- the device run ------------------------------------------------------------- */

static int clamp8(double q)
{
    return q < -128 ? -128 : q > 127 ? 127 : (int)q;
}

/* The device's tensor: x quantized to int8 with the layer's scheme (scale
 * divided by l->damage), +-1 LSB jitter, in NHWC for 4-d tensors. */
static enum qp_status make_device(const struct layer *l, const struct qp_tensor *x,
                                  struct rng *r, struct qp_tensor **out,
                                  struct qp_error *err)
{
    int64_t shape[4];
    int perm[4] = {0, 2, 3, 1}; /* NCHW -> NHWC */
    int nd = l->ndim, caxis = nd == 4 ? 3 : 1;
    for (int i = 0; i < nd; i++)
        shape[i] = nd == 4 ? l->shape[perm[i]] : l->shape[i];
    enum qp_status st = qp_tensor_new(l->dev_name, QP_DTYPE_I8, nd, shape, out, err);
    if (st)
        return st;
    size_t n = qp_tensor_numel(x), c = (size_t)l->shape[1];
    size_t inner = n / ((size_t)l->shape[0] * c);
    size_t nscale = l->per_channel ? c : 1;
    float scale[64];
    int32_t zp[64];
    const float *xs = x->data;
    for (size_t k = 0; k < nscale; k++) {
        double lo = 0, hi = 0;
        for (size_t i = 0; i < n; i++)
            if (!l->per_channel || i / inner % c == k) {
                lo = xs[i] < lo ? xs[i] : lo;
                hi = xs[i] > hi ? xs[i] : hi;
            }
        if (l->relu) { /* asymmetric: [0, hi] onto [-128, 127] */
            scale[k] = (float)(hi / 255.0 / l->damage);
            zp[k] = -128;
        } else {
            double am = fabs(lo) > hi ? fabs(lo) : hi;
            scale[k] = (float)(am / 127.0 / l->damage);
            zp[k] = 0;
        }
    }
    int8_t *q = (*out)->data;
    for (size_t i = 0; i < n; i++) {
        /* i indexes NCHW (or [N, F]); j is the same element in the output */
        size_t ch = i / inner % c, j = i;
        if (nd == 4) {
            size_t hw = i % inner, b = i / (inner * c);
            j = (b * inner + hw) * c + ch;
        }
        size_t k = l->per_channel ? ch : 0;
        double v = round(xs[i] / scale[k]) + zp[k];
        uint32_t u = rng_u32(r) % 16; /* kernel rounding jitter: 1/8 of values */
        v += u == 0 ? 1 : u == 1 ? -1 : 0;
        q[j] = (int8_t)clamp8(v);
    }
    st = qp_tensor_set_qparams(*out, nscale, scale, zp,
                               l->per_channel ? caxis : -1, 0, err);
    return !st && nd == 4 ? qp_tensor_set_layout(*out, "NHWC", err) : st;
}

static enum qp_status add_extra(struct qp_dump_writer *w, const char *name,
                                struct rng *r, struct qp_error *err)
{
    int64_t shape[2] = {1, 8};
    struct qp_tensor *t;
    enum qp_status st = qp_tensor_new(name, QP_DTYPE_F32, 2, shape, &t, err);
    for (int i = 0; !st && i < 8; i++)
        ((float *)t->data)[i] = (float)rng_normal(r);
    if (!st)
        st = qp_dump_writer_add(w, t, err);
    qp_tensor_free(t);
    return st;
}

static enum qp_status make_demo(const char *dir, struct qp_error *err)
{
    char ref_path[4096], dev_path[4096];
    snprintf(ref_path, sizeof ref_path, "%s/ref.h5", dir);
    snprintf(dev_path, sizeof dev_path, "%s/device", dir);
    struct qp_dump_writer *wr = NULL, *wd = NULL;
    struct rng rng = {20240601};
    mkdir(dir, 0755); /* the writers need the parent; it may exist */
    enum qp_status st = qp_dump_writer_open(ref_path, QP_DUMP_HDF5, &wr, err);
    if (!st)
        st = qp_dump_writer_open(dev_path, QP_DUMP_RAW_DIR, &wd, err);
    for (size_t i = 0; !st && i < sizeof layers / sizeof layers[0]; i++) {
        struct qp_tensor *x = NULL, *q = NULL;
        st = make_ref(&layers[i], &rng, &x, err);
        if (!st)
            st = make_device(&layers[i], x, &rng, &q, err);
        if (!st)
            st = qp_dump_writer_add(wr, x, err);
        if (!st)
            st = qp_dump_writer_add(wd, q, err);
        qp_tensor_free(x);
        qp_tensor_free(q);
        if (!st && i == 3) /* a debug tap only the reference has */
            st = add_extra(wr, "debug.block1_in", &rng, err);
    }
    if (!st) /* scratch memory only the device dumps */
        st = add_extra(wd, "scratch/arena:0", &rng, err);
    if (st) {
        qp_dump_writer_abort(wr);
        qp_dump_writer_abort(wd);
        return st;
    }
    st = qp_dump_writer_commit(wr, err);
    enum qp_status s2 = qp_dump_writer_commit(wd, err);
    return st ? st : s2;
}

/* ---- single tensors for tests ------------------------------------------------------ */

static int parse_shape(const char *s, int64_t *shape)
{
    if (!strcmp(s, "scalar"))
        return 0;
    int n = 0;
    for (const char *p = s; *p && n < QP_MAX_DIMS; n++) {
        char *end;
        shape[n] = strtoll(p, &end, 10);
        if (end == p || (*end && *end != 'x'))
            return -1;
        p = *end ? end + 1 : end;
    }
    return n;
}

static enum qp_status store(struct qp_tensor *t, size_t i, double v)
{
    switch (t->dtype) {
    case QP_DTYPE_F32: ((float *)t->data)[i] = (float)v; break;
    case QP_DTYPE_F64: ((double *)t->data)[i] = v; break;
    case QP_DTYPE_I8: ((int8_t *)t->data)[i] = (int8_t)v; break;
    case QP_DTYPE_U8: ((uint8_t *)t->data)[i] = (uint8_t)v; break;
    case QP_DTYPE_I16: ((int16_t *)t->data)[i] = (int16_t)v; break;
    case QP_DTYPE_I32: ((int32_t *)t->data)[i] = (int32_t)v; break;
    case QP_DTYPE_I64: ((int64_t *)t->data)[i] = (int64_t)v; break;
    default: return QP_E_UNSUPPORTED;
    }
    return QP_OK;
}

static int make_tensor(char **argv, struct qp_error *err)
{
    enum qp_dtype dt;
    int64_t shape[QP_MAX_DIMS];
    int nd = parse_shape(argv[2], shape);
    if (!qp_dtype_from_name(argv[1], &dt) || nd < 0) {
        fprintf(stderr, "mkdemo: bad dtype '%s' or shape '%s'\n", argv[1], argv[2]);
        return 2;
    }
    const char *slash = strrchr(argv[0], '/');
    char name[256];
    snprintf(name, sizeof name, "%s", slash ? slash + 1 : argv[0]);
    struct qp_tensor *t;
    if (qp_tensor_new(name, dt, nd, shape, &t, err))
        return 1;
    size_t n = qp_tensor_numel(t), k = 0;
    char *vals = strdup(argv[3]);
    for (char *tok = strtok(vals, ","); tok && k < n; tok = strtok(NULL, ","))
        if (store(t, k++, strtod(tok, NULL))) {
            fprintf(stderr, "mkdemo: dtype '%s' not supported\n", argv[1]);
            k = n + 1;
        }
    free(vals);
    int rc = 0;
    if (k != n) {
        fprintf(stderr, "mkdemo: %zu values for %zu elements\n", k, n);
        rc = 2;
    } else if (qp_fmt_npy_save(argv[0], t, err)) {
        rc = 1;
    }
    qp_tensor_free(t);
    return rc;
}

/* ---- a synthetic text line ---------------------------------------------------- */

static enum qp_status make_textline(const char *path, unsigned long seed,
                                    struct qp_error *err)
{
    enum { H = 48, W = 320 };
    int64_t shape[4] = {1, 3, H, W};
    struct qp_tensor *t;
    enum qp_status st = qp_tensor_new("x", QP_DTYPE_F32, 4, shape, &t, err);
    if (st)
        return st;
    float *img = t->data; /* channel 0; copied to 1 and 2 at the end */
    struct rng r = {0x5eed0000ULL + seed * 0x9e3779b97f4a7c15ULL};
    for (int i = 0; i < H * W; i++)
        img[i] = (float)(0.85 + 0.05 * rng_normal(&r));
    /* characters: cells 14..22 px wide on the middle 32 rows, each a few
     * strokes (vertical, horizontal, diagonal) of 2-3 px */
    int x = 4 + (int)(rng_u32(&r) % 8);
    while (x < W - 24) {
        int cw = 14 + (int)(rng_u32(&r) % 9), strokes = 2 + (int)(rng_u32(&r) % 3);
        for (int s = 0; s < strokes; s++) {
            int kind = (int)(rng_u32(&r) % 3), th = 2 + (int)(rng_u32(&r) % 2);
            int a = (int)(rng_u32(&r) % (unsigned)(cw - th));
            for (int y = 8; y < 40; y++)
                for (int dx = 0; dx < cw; dx++) {
                    int on = kind == 0 ? (dx >= a && dx < a + th)
                           : kind == 1 ? (y >= 8 + a && y < 8 + a + th)
                                       : abs(dx - (y - 8) * cw / 32) < th;
                    if (on)
                        img[y * W + x + dx] = (float)(-0.8 + 0.05 * rng_normal(&r));
                }
        }
        x += cw + 2 + (int)(rng_u32(&r) % 6);
        if (rng_u32(&r) % 7 == 0)
            x += 10; /* a space between words */
    }
    for (int i = 0; i < H * W; i++) {
        img[i] = img[i] > 1.0f ? 1.0f : img[i] < -1.0f ? -1.0f : img[i];
        img[H * W + i] = img[2 * H * W + i] = img[i];
    }
    st = qp_fmt_npy_save(path, t, err);
    qp_tensor_free(t);
    return st;
}

/* ---- converting dumps --------------------------------------------------------------- */

static enum qp_status convert(const char *src, const char *dst,
                              const char *fmt_name, struct qp_error *err)
{
    enum qp_dump_format fmt = QP_DUMP_AUTO;
    if (fmt_name && !qp_dump_format_from_name(fmt_name, &fmt))
        return qp_fail(err, QP_E_INVAL, "unknown format '%s'", fmt_name);
    struct qp_dump *d;
    struct qp_dump_writer *w;
    enum qp_status st = qp_dump_open(src, QP_DUMP_AUTO, &d, err);
    if (st)
        return st;
    st = qp_dump_writer_open(dst, fmt, &w, err);
    for (size_t i = 0; !st && i < qp_dump_count(d); i++) {
        struct qp_tensor *t;
        st = qp_dump_load(d, i, &t, err);
        if (!st)
            st = qp_dump_writer_add(w, t, err);
        qp_tensor_free(t);
    }
    if (!st)
        st = qp_dump_writer_commit(w, err);
    else if (w)
        qp_dump_writer_abort(w);
    qp_dump_close(d);
    return st;
}

int main(int argc, char **argv)
{
    struct qp_error err = {0};
    if (argc == 3 && !strcmp(argv[1], "demo")) {
        if (make_demo(argv[2], &err) == QP_OK)
            return 0;
    } else if (argc == 6 && !strcmp(argv[1], "tensor")) {
        int rc = make_tensor(argv + 2, &err);
        if (rc != 1)
            return rc;
    } else if (argc == 4 && !strcmp(argv[1], "textline")) {
        if (make_textline(argv[2], strtoul(argv[3], NULL, 10), &err) == QP_OK)
            return 0;
    } else if ((argc == 4 || argc == 5) && !strcmp(argv[1], "convert")) {
        if (convert(argv[2], argv[3], argc == 5 ? argv[4] : NULL, &err) == QP_OK)
            return 0;
    } else {
        fprintf(stderr, "usage: mkdemo demo DIR\n"
                        "       mkdemo tensor FILE.npy DTYPE SHAPE V1,V2,...\n"
                        "       mkdemo convert SRC DST [FORMAT]\n"
                        "       mkdemo textline FILE.npy SEED\n");
        return 2;
    }
    fprintf(stderr, "mkdemo: %s\n", err.msg);
    return 1;
}
