/* quant/recipe.h: recipe JSON (DESIGN.md §4), a scheme per tensor.
 *
 *   { "qprobe_recipe": 1,
 *     "default": "w4g128",
 *     "requant": "tflite",
 *     "layers": { "model.layers.*.mlp.down_proj": "w8c", "lm_head": "fp32" } }
 *
 * "qprobe_recipe" (the format version, 1) is required; "default",
 * "requant" (a flavor name of kernels/requant.h, or an alias) and "layers"
 * are optional, and any other key is refused.
 * Values of "default" and "layers" are scheme strings or "fp32" (keep the
 * tensor unquantized). Keys of "layers" are fnmatch(3) globs ('*' also
 * matches '.' and '/'); a glob matches a tensor when it matches its name or
 * its name without the last component (after the last '.' or '/'), so the
 * layer name "lm_head" matches the tensor "lm_head.weight". Rules are tried
 * in document order and the first match wins; a tensor no rule matches
 * gets the default, and stays unquantized when there is none.
 *
 * Parsing goes through formats/json.h; every error names the file and the
 * key (and, for a bad scheme, points at the character). */
#ifndef QP_QUANT_RECIPE_H
#define QP_QUANT_RECIPE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"
#include "kernels/requant.h"
#include "quant/scheme.h"

struct qp_recipe_rule {
    char *glob;              /* owned */
    bool fp32;               /* keep unquantized; scheme unused */
    struct qp_scheme scheme;
};

struct qp_recipe {
    struct qp_recipe_rule def; /* glob NULL; valid when has_default */
    bool has_default;
    char *requant;           /* owned, as written; NULL when absent */
    enum qp_rq_flavor flavor; /* the flavor requant names */
    struct qp_recipe_rule *rules;
    size_t nrules;
};

/* Parses recipe text; `what` names it in messages ("'r.json'"). *out
 * belongs to the caller (qp_recipe_free). QP_E_FORMAT for invalid JSON and
 * every validation error. */
enum qp_status qp_recipe_parse(const char *text, const char *what,
                               struct qp_recipe **out, struct qp_error *err);

/* Reads and parses a recipe file. */
enum qp_status qp_recipe_load(const char *path, struct qp_recipe **out,
                              struct qp_error *err);

void qp_recipe_free(struct qp_recipe *r);

/* The rule for tensor `name`: the first matching rule, else the default,
 * else NULL (stay unquantized). Borrowed from r. */
const struct qp_recipe_rule *qp_recipe_lookup(const struct qp_recipe *r,
                                              const char *name);

/* True when glob matches name or name without its last component. */
bool qp_recipe_glob_match(const char *glob, const char *name);

#endif
