/* model/qassign.h: which scheme each layer's weights and each activation
 * of a graph gets, resolved once from a uniform scheme or a recipe
 * (quant/recipe.h), and editable entry by entry: sensitivity and the
 * recipe search quantize one layer at a time by flipping entries, and a
 * plan (model/qplan.h) is built from an assignment.
 *
 * A weighted node is one whose operator reads input 1 as a weight
 * (model/op.h's weight_layout trait) and whose input 1 is a float constant
 * of rank >= 2. Its rule name is the weight's name, without the ":bn"
 * suffix of a weight folded with a BatchNormalization.
 *
 * Activations: every value that is a graph input or a node output may get
 * an activation scheme; the plan quantizes it when calibration sees it as
 * a float tensor. A uniform scheme with an activation part gives it to
 * every value; a recipe decides each value by its name and, for a
 * weighted node's first output, by its weight's name (quant/recipe.h). */
#ifndef QP_MODEL_QASSIGN_H
#define QP_MODEL_QASSIGN_H

#include <stdbool.h>
#include <stddef.h>

#include "model/graph.h"
#include "quant/ckpt.h"
#include "quant/qparams.h"
#include "quant/recipe.h"
#include "quant/scheme.h"

struct qp_qassign {
    int n_nodes, n_values;
    bool *wq;              /* [n_nodes] the node's weight is quantized */
    struct qp_wscheme *ws; /* [n_nodes] its scheme, when wq */
    bool *aq;              /* [n_values] the value gets an activation scheme */
    struct qp_ascheme *as; /* [n_values] that scheme, when aq */
    /* the recipe rule that decided each entry: its index, -1 for the
     * default, -2 when none did or no recipe was used */
    int *w_rule, *a_rule;
};

/* True when node i is a weighted node; *layout (may be NULL) gets the
 * weight's layout. */
bool qp_node_weighted(const struct qp_graph *g, int i, enum qp_wlayout *layout);

/* The rule name of weighted node i's weight into buf ("W" for "W:bn"). */
void qp_node_weight_name(const struct qp_graph *g, int i, char *buf,
                         size_t size);

/* An assignment where everything stays float. *out belongs to the caller
 * (qp_qassign_free). */
enum qp_status qp_qassign_new(const struct qp_graph *g, struct qp_qassign **out,
                              struct qp_error *err);

/* Scheme s for every weighted node, and its activation part (when it has
 * one) for every value. */
enum qp_status qp_qassign_uniform(const struct qp_graph *g,
                                  const struct qp_scheme *s,
                                  struct qp_qassign **out, struct qp_error *err);

/* Recipe r resolved for every weighted node and value. used (r->nrules
 * entries, may be NULL) receives whether each rule decided anything: a
 * rule that matches nothing is a likely typo the caller should report. */
enum qp_status qp_qassign_recipe(const struct qp_graph *g,
                                 const struct qp_recipe *r,
                                 struct qp_qassign **out, bool *used,
                                 struct qp_error *err);

/* The weights quantize's checkpoint options o pick (qp_ckpt_pick: a scheme
 * per weight tensor), on an assignment where activations stay float. */
enum qp_status qp_qassign_ckpt(const struct qp_graph *g,
                               const struct qp_ckpt_opts *o,
                               struct qp_qassign **out, struct qp_error *err);

enum qp_status qp_qassign_clone(const struct qp_qassign *a,
                                struct qp_qassign **out, struct qp_error *err);

void qp_qassign_free(struct qp_qassign *a);

/* True when anything is quantized (a weight or an activation). */
bool qp_qassign_any(const struct qp_qassign *a);

#endif
