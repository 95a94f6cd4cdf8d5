/* analysis/sweep-grid.h: the configurations a sweep evaluates (`qprobe
 * sweep --grid`, `--grid-file`), one row each.
 *
 * A grid spec is a list of entries separated by top-level commas; braces
 * make products, expanded left to right with the leftmost choice varying
 * slowest, and may nest or hold an empty choice:
 *
 *   w{4,8}g{32,128}           w4g32, w4g128, w8g32, w8g128
 *   w4g128{,@gptq}+a8t        w4g128+a8t, w4g128@gptq+a8t
 *   fp32,w8c,int:w8c+a8t      three entries
 *
 * An entry is "fp32" (the float reference), a scheme (quant/scheme.h) or
 * a recipe file ending in ".json" (quant/recipe.h; a path relative to the
 * working directory), optionally prefixed by the mode it runs in, "fake:"
 * or "int:" (default: the grid's mode). A grid file holds entries or specs,
 * one or more a line; '#' starts a comment, blank lines are skipped.
 *
 * Each configuration has a canonical name (what an entry written back
 * into --grid means again: the canonical scheme, "int:" before it in the
 * int mode, the recipe path as given) and a canonical recipe document:
 * the scheme as the default of a recipe, or the recipe as loaded, with
 * "requant" the flavor the row runs with (--requant, else the recipe's,
 * else tflite-double), printed compact by qp_recipe_to_json. Two entries
 * meaning the same (w8c+a8t and w8c+a8t:minmax, or a recipe whose only
 * content is that default) are one configuration: the second is dropped.
 * The control rows (fp32, then w8c in the fake mode) come first unless
 * left out. */
#ifndef QP_ANALYSIS_SWEEP_GRID_H
#define QP_ANALYSIS_SWEEP_GRID_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels/requant.h"
#include "model/qplan.h"
#include "quant/recipe.h"
#include "quant/scheme.h"

/* Most entries one spec may expand to. */
#define QP_SWEEP_GRID_MAX 4096

enum qp_sweep_kind {
    QP_SWEEP_FP32 = 0,  /* the float reference */
    QP_SWEEP_SCHEME,    /* one scheme for the whole model */
    QP_SWEEP_RECIPE,    /* a recipe file */
    QP_SWEEP_KIND_COUNT
};

/* "fp32", "scheme", "recipe". */
const char *qp_sweep_kind_name(enum qp_sweep_kind k);

struct qp_sweep_cfg {
    char *name;                 /* canonical entry (owned) */
    enum qp_sweep_kind kind;
    enum qp_run_mode mode;      /* QP_MODE_FP32 for the fp32 row */
    struct qp_scheme scheme;    /* QP_SWEEP_SCHEME */
    struct qp_recipe *recipe;   /* QP_SWEEP_RECIPE (owned) */
    enum qp_rq_flavor flavor;   /* the flavor the row runs with */
    bool flavor_given;          /* by the grid's options (--requant) */
    bool control;               /* one of the control rows */
    char scheme_text[QP_SCHEME_MAX + 8]; /* the scheme, the recipe's
                                            default, or "fp32" */
    char *recipe_json;          /* canonical recipe document (owned) */
};

struct qp_sweep_grid {
    struct qp_sweep_cfg *c;
    size_t n, cap;
    size_t dropped;             /* entries that repeated a configuration */
};

struct qp_sweep_grid_opts {
    enum qp_run_mode mode;      /* of entries without a prefix: fake or int */
    enum qp_rq_flavor flavor;
    bool flavor_given;
};

/* Expands spec (commas and braces, above) into *items (n entries, each
 * malloc'd and trimmed of surrounding blanks; empty entries are refused).
 * The caller frees them (qp_sweep_items_free). QP_E_INVAL naming `what`
 * for unbalanced braces or more than QP_SWEEP_GRID_MAX entries. */
enum qp_status qp_sweep_expand(const char *spec, const char *what,
                               char ***items, size_t *n, struct qp_error *err);
void qp_sweep_items_free(char **items, size_t n);

/* Adds the control rows (fp32, then w8c in the fake mode). */
enum qp_status qp_sweep_grid_controls(struct qp_sweep_grid *g,
                                      const struct qp_sweep_grid_opts *o,
                                      struct qp_error *err);

/* Adds every entry of spec; `what` names the spec in messages ("--grid",
 * "'grid.txt' line 3"). Errors: QP_E_INVAL for a malformed entry (a bad
 * scheme with its caret, a mode prefix on fp32), a recipe file's own
 * errors naming the file. */
enum qp_status qp_sweep_grid_add(struct qp_sweep_grid *g, const char *spec,
                                 const char *what,
                                 const struct qp_sweep_grid_opts *o,
                                 struct qp_error *err);

/* Adds every line of a grid file. Errors name the file and line. */
enum qp_status qp_sweep_grid_add_file(struct qp_sweep_grid *g, const char *path,
                                      const struct qp_sweep_grid_opts *o,
                                      struct qp_error *err);

void qp_sweep_grid_release(struct qp_sweep_grid *g);

#endif
