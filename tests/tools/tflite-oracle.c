/* tests/tools/tflite-oracle.c: runs a .tflite model in TensorFlow Lite
 * itself (its C library, loaded with dlopen from the path given: the one
 * scripts/tflite-setup.sh fetches) and keeps every operator's output, for
 * comparing qprobe's run with the runtime bit for bit.
 *
 *   tflite-oracle LIB.so MODEL.tflite [options] INPUT.npy...
 *     --dump DIR       write every operator output (and the inputs) to DIR
 *                      as .npy files with their scales (npy-dir dump)
 *     --compare DUMP   compare every operator output with DUMP's tensor of
 *                      the same name, byte for byte; prints one line per
 *                      differing tensor and "compared N tensors, M
 *                      bit-exact"; exit 3 when one differs
 *     --time N         invoke N more times and print "invoke: X ms" (the
 *                      median)
 *     --threads N      interpreter threads (default 1)
 *
 * The model's subgraph outputs are replaced by the outputs of all its
 * operators (formats/tflite-edit.c) so the interpreter keeps them, and
 * the quantized_dimension fields TFLite 2.9 refuses on 1-D biases are set
 * to 0. The interpreter runs with one thread (--threads) and no delegate added: for
 * models without float tensors TFLite applies no default delegate, so its
 * builtin kernels run (a float model would meet the XNNPACK delegate;
 * the tool says so). Inputs are given in the model's input order with
 * the input's byte size. */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "formats/dump.h"
#include "formats/npy.h"
#include "formats/tflite.h"

typedef struct { float scale; int32_t zero_point; } tfl_qparams;

struct api {
    void *(*model_create)(const void *, size_t);
    void (*model_delete)(void *);
    void *(*options_create)(void);
    void (*options_threads)(void *, int32_t);
    void (*options_delete)(void *);
    void *(*interp_create)(const void *, const void *);
    void (*interp_delete)(void *);
    int (*allocate)(void *);
    int (*invoke)(void *);
    int32_t (*n_inputs)(const void *);
    void *(*input)(const void *, int32_t);
    int32_t (*n_outputs)(const void *);
    const void *(*output)(const void *, int32_t);
    int (*type)(const void *);
    int32_t (*ndim)(const void *);
    int32_t (*dim)(const void *, int32_t);
    size_t (*nbytes)(const void *);
    void *(*data)(const void *);
    tfl_qparams (*qparams)(const void *);
    int (*copy_from)(void *, const void *, size_t);
    const char *(*version)(void);
};

static int die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tflite-oracle: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    return 1;
}

static bool load_api(const char *path, struct api *a)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        die("cannot load '%s': %s", path, dlerror());
        return false;
    }
#define SYM(field, name)                                                       \
    if (!(*(void **)&a->field = dlsym(h, name))) {                             \
        die("'%s' lacks %s", path, name);                                      \
        return false;                                                          \
    }
    SYM(model_create, "TfLiteModelCreate");
    SYM(model_delete, "TfLiteModelDelete");
    SYM(options_create, "TfLiteInterpreterOptionsCreate");
    SYM(options_threads, "TfLiteInterpreterOptionsSetNumThreads");
    SYM(options_delete, "TfLiteInterpreterOptionsDelete");
    SYM(interp_create, "TfLiteInterpreterCreate");
    SYM(interp_delete, "TfLiteInterpreterDelete");
    SYM(allocate, "TfLiteInterpreterAllocateTensors");
    SYM(invoke, "TfLiteInterpreterInvoke");
    SYM(n_inputs, "TfLiteInterpreterGetInputTensorCount");
    SYM(input, "TfLiteInterpreterGetInputTensor");
    SYM(n_outputs, "TfLiteInterpreterGetOutputTensorCount");
    SYM(output, "TfLiteInterpreterGetOutputTensor");
    SYM(type, "TfLiteTensorType");
    SYM(ndim, "TfLiteTensorNumDims");
    SYM(dim, "TfLiteTensorDim");
    SYM(nbytes, "TfLiteTensorByteSize");
    SYM(data, "TfLiteTensorData");
    SYM(qparams, "TfLiteTensorQuantizationParams");
    SYM(copy_from, "TfLiteTensorCopyFromBuffer");
    SYM(version, "TfLiteVersion");
#undef SYM
    return true;
}

/* TfLiteType -> dtype */
static bool dtype_of(int t, enum qp_dtype *dt)
{
    static const enum qp_dtype map[] = {
        [1] = QP_DTYPE_F32, [2] = QP_DTYPE_I32, [3] = QP_DTYPE_U8,
        [4] = QP_DTYPE_I64, [6] = QP_DTYPE_BOOL, [7] = QP_DTYPE_I16,
        [9] = QP_DTYPE_I8, [10] = QP_DTYPE_F16, [11] = QP_DTYPE_F64,
    };
    if (t < 1 || t > 11 || (t != 1 && !map[t]))
        return false;
    *dt = map[t];
    return true;
}

/* Output k of the interpreter as a tensor named name (data copied). */
static struct qp_tensor *grab(const struct api *a, const void *t,
                              const char *name)
{
    enum qp_dtype dt;
    int64_t shape[QP_MAX_DIMS];
    int nd = a->ndim(t);
    if (!dtype_of(a->type(t), &dt) || nd > QP_MAX_DIMS) {
        die("output '%s': type %d, rank %d", name, a->type(t), nd);
        return NULL;
    }
    for (int i = 0; i < nd; i++)
        shape[i] = a->dim(t, i);
    struct qp_tensor *x;
    struct qp_error err;
    if (qp_tensor_new(name, dt, nd, shape, &x, &err)) {
        die("%s", err.msg);
        return NULL;
    }
    if (x->nbytes != a->nbytes(t)) {
        die("output '%s': %zu bytes, expected %zu", name, a->nbytes(t),
            x->nbytes);
        qp_tensor_free(x);
        return NULL;
    }
    memcpy(x->data, a->data(t), x->nbytes);
    tfl_qparams q = a->qparams(t);
    if (qp_dtype_is_int(dt) && q.scale > 0)
        qp_tensor_set_qparams(x, 1, &q.scale, &q.zero_point, -1, 0, &err);
    return x;
}

/* Compares x with the tensor of the same name in d; prints a line when
 * they differ. */
static bool same(struct qp_dump *d, const struct qp_tensor *x)
{
    struct qp_error err;
    long i = qp_dump_find(d, x->name);
    if (i < 0) {
        printf("missing  %s\n", x->name);
        return false;
    }
    struct qp_tensor *y;
    if (qp_dump_load(d, (size_t)i, &y, &err)) {
        printf("unreadable %s: %s\n", x->name, err.msg);
        return false;
    }
    bool ok = y->dtype == x->dtype &&
              qp_shape_equal(x->ndim, x->shape, y->ndim, y->shape);
    if (!ok) {
        printf("differs  %s: %s vs %s or another shape\n", x->name,
               qp_dtype_name(x->dtype), qp_dtype_name(y->dtype));
    } else if (memcmp(x->data, y->data, x->nbytes)) {
        size_t n = qp_tensor_numel(x), bad = 0, first = 0;
        double worst = 0;
        for (size_t k = 0; k < n; k++) {
            float fa, fb;
            qp_tensor_read_f32(x, k, 1, &fa);
            qp_tensor_read_f32(y, k, 1, &fb);
            if (memcmp((const char *)x->data + k * (x->nbytes / n),
                       (const char *)y->data + k * (x->nbytes / n),
                       x->nbytes / n)) {
                if (!bad++)
                    first = k;
                double dd = fa > fb ? fa - fb : fb - fa;
                worst = dd > worst ? dd : worst;
            }
        }
        printf("differs  %s: %zu of %zu elements (first at %zu), max |diff| "
               "%g\n", x->name, bad, n, first, worst);
        ok = false;
    }
    qp_tensor_free(y);
    return ok;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    const char *dump = NULL, *compare = NULL;
    int times = 0, threads = 1;
    const char *inputs[64];
    int n_in = 0;
    if (argc < 3)
        return die("usage: tflite-oracle LIB.so MODEL.tflite [--dump DIR] "
                   "[--compare DUMP] [--time N] INPUT.npy...");
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--dump") && i + 1 < argc)
            dump = argv[++i];
        else if (!strcmp(argv[i], "--compare") && i + 1 < argc)
            compare = argv[++i];
        else if (!strcmp(argv[i], "--time") && i + 1 < argc)
            times = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (n_in < 64)
            inputs[n_in++] = argv[i];
    }
    struct api a;
    if (!load_api(argv[1], &a))
        return 1;
    struct qp_error err;
    struct qp_tfl_model *m;
    if (qp_tfl_load(argv[2], &m, &err))
        return die("%s", err.msg);
    /* every operator output, in operator order, each once */
    int *outs = calloc(m->n_tensors + 1, sizeof *outs), n_outs = 0;
    bool *seen = calloc(m->n_tensors + 1, 1);
    for (size_t i = 0; i < m->n_ops; i++)
        for (int k = 0; k < m->ops[i].n_out; k++) {
            int t = m->ops[i].out[k];
            if (t >= 0 && !seen[t]) {
                seen[t] = true;
                outs[n_outs++] = t;
            }
        }
    uint8_t *buf;
    size_t len, fixed;
    if (qp_tfl_with_outputs(m, outs, n_outs, &buf, &len, &err) ||
        qp_tfl_fix_quant_dims(m, buf, len, &fixed, &err))
        return die("%s", err.msg);
    if (fixed)
        fprintf(stderr, "tflite-oracle: %zu quantized_dimension fields set to 0 "
                "for TFLite\n", fixed);
    bool has_float = false;
    for (size_t i = 0; i < m->n_tensors; i++)
        has_float |= m->tensors[i].dtype == QP_DTYPE_F32;
    if (has_float)
        fprintf(stderr, "tflite-oracle: the model has float tensors: TFLite "
                "may apply its default XNNPACK delegate to them\n");
    void *model = a.model_create(buf, len);
    void *opts = a.options_create();
    a.options_threads(opts, threads);
    void *it = model ? a.interp_create(model, opts) : NULL;
    if (!it || a.allocate(it))
        return die("TFLite %s cannot load '%s'", a.version(), argv[2]);
    if (a.n_inputs(it) != n_in)
        return die("the model has %d inputs, %d given", a.n_inputs(it), n_in);
    struct qp_dump_writer *w = NULL;
    if (dump && qp_dump_writer_open(dump, QP_DUMP_NPY_DIR, &w, &err))
        return die("%s", err.msg);
    for (int i = 0; i < n_in; i++) {
        struct qp_tensor *x;
        void *t = a.input(it, i);
        if (qp_fmt_npy_load(inputs[i], NULL, false, &x, &err))
            return die("%s", err.msg);
        if (x->nbytes != a.nbytes(t) || a.copy_from(t, x->data, x->nbytes))
            return die("'%s': %zu bytes, input %d takes %zu", inputs[i],
                       x->nbytes, i, a.nbytes(t));
        qp_tensor_free(x);
        struct qp_tensor *in = grab(&a, t, qp_tfl_tensor_name(m, (size_t)m->inputs[i]));
        if (!in || (w && qp_dump_writer_add(w, in, &err)))
            return die("%s", in ? err.msg : "input");
        qp_tensor_free(in);
    }
    if (a.invoke(it))
        return die("invoke failed");
    if (a.n_outputs(it) != n_outs)
        return die("%d outputs, expected %d", a.n_outputs(it), n_outs);
    struct qp_dump *d = NULL;
    if (compare && qp_dump_open(compare, QP_DUMP_AUTO, &d, &err))
        return die("%s", err.msg);
    int exact = 0;
    for (int k = 0; k < n_outs; k++) {
        struct qp_tensor *y = grab(&a, a.output(it, k),
                                   qp_tfl_tensor_name(m, (size_t)outs[k]));
        if (!y)
            return 1;
        if (w && qp_dump_writer_add(w, y, &err))
            return die("%s", err.msg);
        if (d)
            exact += same(d, y);
        qp_tensor_free(y);
    }
    if (w && qp_dump_writer_commit(w, &err))
        return die("%s", err.msg);
    if (d) {
        printf("compared %d tensors, %d bit-exact\n", n_outs, exact);
        qp_dump_close(d);
    }
    if (times > 0) {
        double *ms = calloc((size_t)times, sizeof *ms);
        for (int r = 0; r < times; r++) {
            double t0 = now_ms();
            a.invoke(it);
            ms[r] = now_ms() - t0;
        }
        qsort(ms, (size_t)times, sizeof *ms, cmp_double);
        printf("invoke: %.4f ms (median of %d, TFLite %s)\n", ms[times / 2],
               times, a.version());
        free(ms);
    }
    a.interp_delete(it);
    a.options_delete(opts);
    a.model_delete(model);
    free(buf);
    free(outs);
    free(seen);
    qp_tfl_model_free(m);
    return d && exact != n_outs ? 3 : 0;
}
