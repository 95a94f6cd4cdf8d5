/* analysis/sweep-backend.c: the table of sweep backends
 * (analysis/sweep-backend.h). */
#include "analysis/sweep-backend.h"

#include <stdbool.h>
#include <string.h>

#include "analysis/sweep-onnx.h"
#include "core/fileio.h"

struct backend_kind {
    const char *name;
    bool (*accepts)(const char *model);
    enum qp_status (*open)(const struct qp_sweep_src *src,
                           struct qp_sweep_backend **out, struct qp_error *err);
};

static bool any_file(const char *model)
{
    return !qp_is_dir(model);
}

/* First match wins. */
static const struct backend_kind kinds[] = {
    {"llm", qp_is_dir, qp_sweep_llm_open},
    {"onnx", any_file, qp_sweep_onnx_open},
};

void qp_sweep_session_cfg(const struct qp_sweep_cfg *c, struct qp_session_cfg *out)
{
    *out = (struct qp_session_cfg){
        .mode = c->mode,
        .scheme = c->kind == QP_SWEEP_SCHEME ? &c->scheme : NULL,
        .recipe = c->kind == QP_SWEEP_RECIPE ? c->recipe : NULL,
        .flavor = c->flavor,
        .flavor_given = c->kind == QP_SWEEP_SCHEME || c->flavor_given};
}

const char *qp_sweep_backend_for(const char *model)
{
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (kinds[i].accepts(model))
            return kinds[i].name;
    return "onnx";
}

enum qp_status qp_sweep_backend_open(const struct qp_sweep_src *src,
                                     struct qp_sweep_backend **out,
                                     struct qp_error *err)
{
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (kinds[i].accepts(src->model))
            return kinds[i].open(src, out, err);
    return qp_sweep_onnx_open(src, out, err);
}
