/* model/inputs.c: loading and batching a graph's inputs (model/inputs.h). */
#include "model/inputs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/fileio.h"
#include "core/size.h"
#include "formats/dump.h"
#include "model/tflite-import.h"

/* Tensors collected for one graph input. */
struct pile {
    struct qp_tensor **t;
    size_t n;
};

static enum qp_status push(struct pile *p, struct qp_tensor *t,
                           struct qp_error *err)
{
    struct qp_tensor **a = realloc(p->t, (p->n + 1) * sizeof *a);
    if (!a) {
        qp_tensor_free(t);
        return qp_fail(err, QP_E_NOMEM, "out of memory");
    }
    a[p->n++] = t;
    p->t = a;
    return QP_OK;
}

/* Conforms t (from file) to graph input v: dtype, rank and the dims
 * but the batch one. */
static enum qp_status conform(const struct qp_value *v, const char *file,
                              struct qp_tensor **t, struct qp_error *err)
{
    struct qp_tensor *x = *t;
    if (!v->typed)
        return QP_OK;
    if (x->ndim == v->ndim - 1) {
        /* one image for a batched model: a leading batch dim of 1 */
        memmove(x->shape + 1, x->shape, (size_t)x->ndim * sizeof x->shape[0]);
        x->shape[0] = 1;
        x->ndim++;
    }
    if (v->feed_q) {
        /* a float feed of a quantized (TFLite) input, or the reverse */
        enum qp_status st = qp_model_quantize_feed(v, t, err);
        return st ? qp_error_prefix(err, "'%s': ", file) : QP_OK;
    }
    bool fl = qp_dtype_traits(x->dtype)->is_float &&
              qp_dtype_traits(v->dtype)->is_float;
    if (x->dtype != v->dtype &&
        (!fl || x->qp || (v->dtype != QP_DTYPE_F32 && v->dtype != QP_DTYPE_F64)))
        return qp_fail(err, QP_E_SHAPE, "'%s': tensor '%s' is %s, the model's "
                       "input '%s' is %s", file, x->name,
                       qp_dtype_name(x->dtype), v->name,
                       qp_dtype_name(v->dtype));
    /* the batch dim is checked once the files are stacked */
    bool ok = x->ndim == v->ndim;
    for (int d = 1; ok && d < v->ndim; d++)
        ok = v->shape[d] < 0 || v->shape[d] == x->shape[d];
    if (!ok) {
        char s0[128], s1[128];
        qp_shape_str(x->ndim, x->shape, s0, sizeof s0);
        qp_shape_str(v->ndim, v->shape, s1, sizeof s1);
        return qp_fail(err, QP_E_SHAPE, "'%s': tensor '%s' has shape %s, the "
                       "model's input '%s' is %s (-1: any)", file, x->name, s0,
                       v->name, s1);
    }
    if (x->dtype == v->dtype)
        return QP_OK;
    struct qp_tensor *y;
    enum qp_status st = qp_tensor_new(x->name, v->dtype, x->ndim, x->shape, &y,
                                      err);
    if (st)
        return st;
    size_t n = qp_tensor_numel(x);
    float buf[256];
    for (size_t i = 0; i < n; i += 256) {
        size_t k = n - i < 256 ? n - i : 256;
        qp_tensor_read_f32(x, i, k, buf);
        for (size_t j = 0; j < k; j++) {
            if (v->dtype == QP_DTYPE_F32)
                ((float *)y->data)[i + j] = buf[j];
            else
                ((double *)y->data)[i + j] = buf[j];
        }
    }
    qp_tensor_free(x);
    *t = y;
    return QP_OK;
}

static enum qp_status take(struct qp_dump *d, size_t e, const struct qp_value *v,
                           const char *file, struct pile *p,
                           struct qp_error *err)
{
    struct qp_tensor *t;
    enum qp_status st = qp_dump_load(d, e, &t, err);
    if (!st)
        st = conform(v, file, &t, err);
    if (st) {
        qp_tensor_free(t);
        return st;
    }
    return push(p, t, err);
}

static enum qp_status load_spec(const struct qp_graph *g, const char *spec,
                                struct pile *piles, struct qp_error *err)
{
    /* NAME=FILE when the part before '=' names a graph input */
    const char *file = spec;
    int only = -1;
    const char *eq = strchr(spec, '=');
    for (int i = 0; eq && i < g->n_inputs; i++) {
        const char *name = g->values[g->inputs[i]].name;
        if (strlen(name) == (size_t)(eq - spec) && !strncmp(spec, name, strlen(name))) {
            only = i;
            file = eq + 1;
        }
    }
    struct stat sb;
    if (eq && only < 0 && stat(spec, &sb) != 0) {
        /* NAME=FILE whose NAME is no input (and no file of that name) */
        char names[512] = "";
        size_t len = 0;
        for (int i = 0; i < g->n_inputs && len < sizeof names; i++)
            len += (size_t)snprintf(names + len, sizeof names - len, "%s'%s'",
                                    i ? ", " : "", g->values[g->inputs[i]].name);
        return qp_fail(err, QP_E_NOTFOUND, "--input '%s': the model has no "
                       "input named '%.*s' (its inputs: %s)", spec,
                       (int)(eq - spec), spec, names);
    }
    struct qp_dump *d;
    enum qp_status st = qp_dump_open(file, QP_DUMP_AUTO, &d, err);
    if (st)
        return st;
    int used = 0;
    for (int i = 0; !st && i < g->n_inputs; i++) {
        if (only >= 0 && i != only)
            continue;
        const struct qp_value *v = &g->values[g->inputs[i]];
        long e = qp_dump_find(d, v->name);
        if (e < 0 && qp_dump_count(d) == 1 && (only >= 0 || g->n_inputs == 1))
            e = 0;
        if (e < 0)
            continue;
        st = take(d, (size_t)e, v, file, &piles[i], err);
        used++;
    }
    if (!st && !used)
        st = qp_fail(err, QP_E_NOTFOUND, "'%s': no tensor for the model's "
                     "input%s (%zu tensors, none named after an input)", file,
                     g->n_inputs > 1 ? "s" : "", qp_dump_count(d));
    qp_dump_close(d);
    return st;
}

/* Stacks p's tensors along axis 0 into one tensor named name. */
static enum qp_status stack(const struct pile *p, const char *name,
                            struct qp_tensor **out, struct qp_error *err)
{
    const struct qp_tensor *t0 = p->t[0];
    int64_t shape[QP_MAX_DIMS];
    if (t0->ndim < 1 && p->n > 1)
        return qp_fail(err, QP_E_SHAPE, "input '%s': scalars cannot form a "
                       "batch", name);
    memcpy(shape, t0->shape, sizeof shape);
    for (size_t k = 1; k < p->n; k++) {
        const struct qp_tensor *t = p->t[k];
        bool ok = t->ndim == t0->ndim && t->dtype == t0->dtype;
        for (int d = 1; ok && d < t->ndim; d++)
            ok = t->shape[d] == t0->shape[d];
        if (!ok) {
            char s0[128], s1[128];
            qp_shape_str(t0->ndim, t0->shape, s0, sizeof s0);
            qp_shape_str(t->ndim, t->shape, s1, sizeof s1);
            return qp_fail(err, QP_E_SHAPE, "input '%s': cannot batch %s %s "
                           "with %s %s", name, qp_dtype_name(t0->dtype), s0,
                           qp_dtype_name(t->dtype), s1);
        }
        shape[0] += t->shape[0];
    }
    enum qp_status st = qp_tensor_new(name, t0->dtype, t0->ndim, shape, out, err);
    if (!st && t0->qp && t0->qp->count == 1) /* per-tensor parameters stay */
        st = qp_tensor_set_qparams(*out, 1, t0->qp->scale, t0->qp->zero_point,
                                   -1, 0, err);
    if (st)
        return st;
    size_t at = 0;
    for (size_t k = 0; k < p->n; k++) {
        memcpy((char *)(*out)->data + at, p->t[k]->data, p->t[k]->nbytes);
        at += p->t[k]->nbytes;
    }
    return QP_OK;
}

enum qp_status qp_inputs_load(const struct qp_graph *g,
                              const char *const *specs, int n,
                              struct qp_tensor ***feed, struct qp_error *err)
{
    size_t ni = (size_t)(g->n_inputs ? g->n_inputs : 1);
    struct pile *piles = calloc(ni, sizeof *piles);
    *feed = calloc(ni, sizeof **feed);
    enum qp_status st = QP_OK;
    if (!piles || !*feed)
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    for (int k = 0; !st && k < n; k++)
        st = load_spec(g, specs[k], piles, err);
    for (int i = 0; !st && i < g->n_inputs; i++) {
        const char *name = g->values[g->inputs[i]].name;
        if (!piles[i].n)
            st = qp_fail(err, QP_E_INVAL, "no file gives the model's input "
                         "'%s' (use --input %s=FILE)", name, name);
        else
            st = stack(&piles[i], name, &(*feed)[i], err);
    }
    for (size_t i = 0; piles && i < ni; i++) {
        for (size_t k = 0; k < piles[i].n; k++)
            qp_tensor_free(piles[i].t[k]);
        free(piles[i].t);
    }
    free(piles);
    if (st) {
        qp_inputs_free(g, *feed);
        *feed = NULL;
    }
    return st;
}

void qp_inputs_free(const struct qp_graph *g, struct qp_tensor **feed)
{
    for (int i = 0; feed && i < g->n_inputs; i++)
        qp_tensor_free(feed[i]);
    free(feed);
}

void qp_inputs_files_free(char **files, size_t n)
{
    for (size_t i = 0; files && i < n; i++)
        free(files[i]);
    free(files);
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

enum qp_status qp_inputs_files(const char *path, char ***files, size_t *n,
                               struct qp_error *err)
{
    *files = NULL;
    *n = 0;
    struct stat sb;
    if (stat(path, &sb) != 0)
        return qp_fail(err, errno == ENOENT ? QP_E_NOTFOUND : QP_E_IO,
                       "'%s': %s", path, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) {
        *files = calloc(1, sizeof **files);
        if (!*files || !((*files)[0] = strdup(path))) {
            free(*files);
            *files = NULL;
            return qp_fail(err, QP_E_NOMEM, "out of memory");
        }
        *n = 1;
        return QP_OK;
    }
    char **npy = NULL, **pb = NULL;
    size_t nn = 0, np = 0;
    enum qp_status st = qp_dump_scan_dir(path, ".npy", &npy, &nn, err);
    if (!st)
        st = qp_dump_scan_dir(path, ".pb", &pb, &np, err);
    char **all = st ? NULL : calloc(nn + np + 1, sizeof *all);
    if (!st && !all)
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    size_t k = 0;
    for (size_t i = 0; !st && i < nn + np; i++)
        if (!(all[k++] = qp_path_join(path, i < nn ? npy[i] : pb[i - nn])))
            st = qp_fail(err, QP_E_NOMEM, "out of memory");
    qp_inputs_files_free(npy, nn);
    qp_inputs_files_free(pb, np);
    if (!st && !k)
        st = qp_fail(err, QP_E_NOTFOUND, "'%s': no .npy or .pb input files",
                     path);
    if (st) {
        qp_inputs_files_free(all, k);
        return st;
    }
    qsort(all, k, sizeof *all, cmp_names);
    *files = all;
    *n = k;
    return QP_OK;
}

enum qp_status qp_input_sets_load(const struct qp_graph *g, const char *path,
                                  struct qp_input_sets *out, struct qp_error *err)
{
    *out = (struct qp_input_sets){0};
    char **files;
    size_t n;
    enum qp_status st = qp_inputs_files(path, &files, &n, err);
    if (st)
        return st;
    if (!(out->set = calloc(n + 1, sizeof *out->set)))
        st = qp_fail(err, QP_E_NOMEM, "out of memory");
    for (size_t i = 0; !st && i < n; i++) {
        const char *spec[1] = {files[i]};
        if (!(st = qp_inputs_load(g, spec, 1, &out->set[i], err)))
            out->n++;
    }
    qp_inputs_files_free(files, n);
    return st;
}

void qp_input_sets_release(const struct qp_graph *g, struct qp_input_sets *s)
{
    for (size_t i = 0; i < s->n; i++)
        qp_inputs_free(g, s->set[i]);
    free(s->set);
    *s = (struct qp_input_sets){0};
}
