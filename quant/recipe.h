/* quant/recipe.h: recipe JSON (DESIGN.md §4), a scheme per tensor.
 *
 *   { "qprobe_recipe": 1,
 *     "default": "w4g128",
 *     "requant": "tflite",
 *     "layers": { "model.layers.*.mlp.down_proj": "w8c", "lm_head": "fp32" },
 *     "derived": { ... } }
 *
 * "qprobe_recipe" (the format version, 1) is required; "default",
 * "requant" (a flavor name of kernels/requant.h, or an alias), "layers" and
 * "derived" (free-form: how a searched recipe was found; not read) are
 * optional, keys starting with '_' are comments, and any other key is
 * refused. Keys of "layers" are fnmatch(3) globs ('*' also matches '.' and
 * '/'); a glob matches a name when it matches it whole or without its last
 * component (after the last '.' or '/'), so the layer name "lm_head"
 * matches the tensor "lm_head.weight".
 *
 * A rule's value says something about a layer's weights, its output
 * activation, or both:
 *   "fp32"         weights and output stay float
 *   "w8c"          weights w8c; the output activation as the default's
 *   "w8c+a16t"     weights w8c, output a16t
 *   "w8c+fp32"     weights w8c, output float
 *   "fp32+a8t"     weights float, output a8t
 *   "a16t"         the output activation only (any operator's output,
 *                  weighted or not: Softmax, Add, a norm's pieces)
 * Each part of a layer is decided separately: its weights by the first
 * rule in document order that matches the weight's name and says
 * something about weights, else the default; its output activation by the
 * first rule that matches the output's value name (or, for a weighted
 * layer's first output, its weight's name) and says something about the
 * output, else the default's activation part. "default" takes the scheme
 * or "fp32" forms. A tensor no rule decides and without a default stays
 * unquantized.
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
    bool fp32;               /* "fp32": weights and output float */
    struct qp_scheme scheme; /* weights (w_set), activation (a_set) */
    bool w_said, w_float;    /* the rule decides weights; they stay float */
    bool a_said, a_float;    /* the rule decides the output; it stays float */
    bool a_set;              /* the rule names an activation scheme */
};

/* Which part of a layer a lookup is for. */
enum qp_recipe_part { QP_RECIPE_WEIGHTS = 0, QP_RECIPE_OUTPUT, QP_RECIPE_PART_COUNT };

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

/* Decides one part of a layer known by names[0..n) (e.g. a weight's name;
 * an output value's name and its layer's weight name), as described at
 * the top: *ws (weights) or *as (output) receive the scheme and true is
 * returned, or false when the part stays float. *rule_index gets the
 * deciding rule's index, -1 for the default, -2 when nothing decided (may
 * be NULL). */
bool qp_recipe_weights(const struct qp_recipe *r, const char *const *names,
                       size_t n, struct qp_wscheme *ws, int *rule_index);
bool qp_recipe_output(const struct qp_recipe *r, const char *const *names,
                      size_t n, struct qp_ascheme *as, int *rule_index);

/* r as a recipe JSON document (version, default, requant, layers in
 * order), which qp_recipe_parse reads back into the same rules; *out
 * belongs to the caller (qp_json_free). A caller may add a "derived"
 * object before saving it (formats/json.h). */
struct qp_json;
enum qp_status qp_recipe_to_json(const struct qp_recipe *r,
                                 struct qp_json **out, struct qp_error *err);

/* The rule value text of rule ("fp32", "w8c+a16t", "a16t", "w8c+fp32"...):
 * what qp_recipe_parse reads back into the same rule. */
void qp_recipe_rule_format(const struct qp_recipe_rule *rule, char *buf,
                           size_t size);

/* True when glob matches name or name without its last component. */
bool qp_recipe_glob_match(const char *glob, const char *name);

#endif
