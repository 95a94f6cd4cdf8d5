/* analysis/units.h: the things a mixed-precision decision is made about,
 * under a base plan: every quantized tensor producer. A weighted layer is
 * one unit (its weight and its quantized output activation), named by its
 * weight; every other operator whose output is a quantized activation of
 * its own (not one that only moves its input's values) is a unit named by
 * that value, as are quantized graph inputs. --group globs merge units:
 * a unit whose name has a prefix (cut at '.' or '/') that a glob matches
 * belongs to the group named by the shortest such prefix
 * ("model.layers.*.mlp" puts each layer's gate/up/down in one group).
 *
 * Sensitivity flips one unit's parts (weights, activations, or both) in an
 * assignment: one-in starts from everything float and quantizes the unit
 * as the base does; one-out starts from the base and keeps the unit
 * float. */
#ifndef QP_ANALYSIS_UNITS_H
#define QP_ANALYSIS_UNITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/qassign.h"
#include "model/qplan.h"

enum {
    QP_PART_W = 1u << 0, /* the unit's weights */
    QP_PART_A = 1u << 1, /* its activations */
    QP_PART_WA = QP_PART_W | QP_PART_A
};

struct qp_unit {
    char *name;           /* owned */
    int *nodes;           /* weighted nodes, owned */
    size_t nnodes;
    int *values;          /* quantized activation values, owned */
    size_t nvalues;
    /* costs: weight elements, their bytes in fp32 and at the base scheme
     * (qp_rtn_bytes: data, scales, zero points), the multiply-accumulates
     * of the unit's nodes for the inputs the MACs were counted on */
    uint64_t params;
    size_t bytes_fp32, bytes_base;
    uint64_t macs;
    unsigned wbits, abits; /* at the base (0: float) */
};

struct qp_units {
    struct qp_unit *u;
    size_t n;
};

/* The units of graph g under finished plan base, in model order, merged by
 * groups (may be NULL). macs (g->n_nodes entries, may be NULL) gives each
 * node's multiply-accumulates. out is owned by the caller
 * (qp_units_release), also on failure. */
enum qp_status qp_units_of(const struct qp_graph *g, const struct qp_qplan *base,
                           const char *const *groups, size_t ngroups,
                           const uint64_t *macs, struct qp_units *out,
                           struct qp_error *err);

void qp_units_release(struct qp_units *u);

/* An assignment for unit i's parts: one_in (only them quantized, as in
 * base) or one-out (base without them). *out belongs to the caller. */
enum qp_status qp_units_assign(const struct qp_qassign *base,
                               const struct qp_units *u, size_t i, bool one_in,
                               unsigned parts, struct qp_qassign **out,
                               struct qp_error *err);

/* True when unit i has something in parts (weights, activations). */
bool qp_unit_has(const struct qp_unit *u, unsigned parts);

#endif
