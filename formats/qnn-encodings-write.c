/* formats/qnn-encodings-write.c: AIMET / QNN encodings JSON, written
 * (formats/qnn-encodings.h). */
#include "formats/qnn-encodings.h"

#include <math.h>
#include <stdio.h>

#include "core/strmap.h"
#include "formats/json.h"

static enum qp_status check(const struct qp_qnn_enc_entry *e, struct qp_error *err)
{
    if (e->bitwidth < 1 || e->bitwidth > 32)
        return qp_fail(err, QP_E_INVAL, "encoding '%s': bitwidth %d is outside "
                       "1..32", e->name, e->bitwidth);
    if (e->is_float)
        return QP_OK;
    if (!e->count)
        return qp_fail(err, QP_E_INVAL, "encoding '%s' has no values", e->name);
    double top = ldexp(1.0, e->bitwidth) - 1;
    for (size_t c = 0; c < e->count; c++) {
        if (!(e->scale[c] > 0) || !isfinite(e->scale[c]))
            return qp_fail(err, QP_E_INVAL, "encoding '%s' channel %zu: scale %g "
                           "is not finite and positive", e->name, c,
                           (double)e->scale[c]);
        if (e->zero_point[c] < 0 || e->zero_point[c] > top)
            return qp_fail(err, QP_E_INVAL, "encoding '%s' channel %zu: zero "
                           "point %d is outside the grid [0, %.0f]", e->name, c,
                           (int)e->zero_point[c], top);
    }
    return QP_OK;
}

/* One encoding object of channel c (or the float form) appended to list. */
static bool add_one(struct qp_json *list, const struct qp_qnn_enc_entry *e, size_t c)
{
    struct qp_json *o = qp_json_add_object(list, NULL);
    if (!o || !qp_json_add_num(o, "bitwidth", e->bitwidth) ||
        !qp_json_add_str(o, "dtype", e->is_float ? "float" : "int"))
        return false;
    if (e->is_float)
        return true;
    double s = e->scale[c], off = -(double)e->zero_point[c];
    double lo = off * s, hi = (off + ldexp(1.0, e->bitwidth) - 1) * s;
    return qp_json_add_str(o, "is_symmetric", e->symmetric ? "True" : "False") &&
           qp_json_add_num(o, "max", hi) && qp_json_add_num(o, "min", lo) &&
           qp_json_add_num(o, "offset", off) && qp_json_add_num(o, "scale", s);
}

enum qp_status qp_qnn_encodings_save(const char *path,
                                     const struct qp_qnn_enc_entry *e, size_t n,
                                     struct qp_error *err)
{
    struct qp_json *root = qp_json_new_object(), *grp[2];
    struct qp_strmap seen[2];
    qp_strmap_init(&seen[0]);
    qp_strmap_init(&seen[1]);
    enum qp_status st = QP_OK;
    if (!root || !qp_json_add_str(root, "version", "0.6.1") ||
        !(grp[0] = qp_json_add_object(root, "activation_encodings")) ||
        !(grp[1] = qp_json_add_object(root, "param_encodings")))
        st = qp_fail(err, QP_E_NOMEM, "'%s': out of memory", path);
    for (size_t i = 0; !st && i < n; i++) {
        struct qp_json *g = grp[e[i].param];
        if ((st = check(&e[i], err)))
            break;
        bool twice = false;
        if ((st = qp_strmap_put(&seen[e[i].param], e[i].name, i, &twice, err)))
            break;
        if (twice) {
            st = qp_fail(err, QP_E_INVAL, "encoding '%s' appears twice in %s",
                         e[i].name, e[i].param ? "param_encodings"
                                               : "activation_encodings");
            break;
        }
        struct qp_json *list = qp_json_add_array(g, e[i].name);
        size_t count = e[i].is_float ? 1 : e[i].count;
        for (size_t c = 0; list && c < count; c++)
            if (!add_one(list, &e[i], c))
                list = NULL;
        if (!list)
            st = qp_fail(err, QP_E_NOMEM, "'%s': out of memory", path);
    }
    if (!st)
        st = qp_json_save(path, root, true, err);
    qp_json_free(root);
    qp_strmap_release(&seen[0]);
    qp_strmap_release(&seen[1]);
    return st;
}
