/* analysis/export-opset.h: writing a node of qprobe's graph IR (which
 * keeps each node in the form of the opset its model imports) into an
 * ONNX tree at a newer opset, for exports that need operators of a later
 * opset than the model's (per-axis QuantizeLinear / DequantizeLinear need
 * 13, 4- and 16-bit ones 21).
 *
 * What changed in ONNX between opsets, for the operators qprobe runs
 * (ONNX's Changelog.md / Operators.md, operator by operator):
 *   attributes that became inputs: Clip min/max (11), Slice starts/ends/
 *   axes (10), Pad pads/value (11), Squeeze/Unsqueeze axes (13), Split
 *   split (13, and num_outputs at 18 when split is absent), ReduceSum axes
 *   (13), the other Reduce* axes (18), Reshape shape (5): the values
 *   become constant initializers of the same content;
 *   Softmax / LogSoftmax before 13 work on the input flattened to 2-D at
 *   axis: the same as the one-axis form of 13 when axis is the last one
 *   (kept), refused otherwise;
 *   attributes that were removed: Dropout ratio (an input since 12, not
 *   used at inference) and is_test, BatchNormalization spatial (9; only
 *   spatial = 1 is kept), the legacy broadcast flag of the binary
 *   operators and Gemm (7; numpy broadcasting covers it when no axis is
 *   given), consumed_inputs (6): dropped, or refused when they changed the
 *   result; Concat's axis (required since 4) gets its old default 1;
 *   Resize at opset 10 (11 changed its coordinate rules) and Upsample
 *   (gone at 10) are refused.
 * Every other operator of qprobe's table has the same attributes and
 * inputs from its first opset to 21.
 *
 * New names (constants made from attributes, and every name an export
 * adds) come from a set of used names, so that they never collide with
 * the model's. */
#ifndef QP_ANALYSIS_EXPORT_OPSET_H
#define QP_ANALYSIS_EXPORT_OPSET_H

#include "core/strmap.h"
#include "formats/onnx-write.h"
#include "model/graph.h"

struct qp_export_names {
    struct qp_strmap used;
};

/* Every value name of g is used. */
enum qp_status qp_export_names_init(struct qp_export_names *nm,
                                    const struct qp_graph *g,
                                    struct qp_error *err);
void qp_export_names_release(struct qp_export_names *nm);

/* A name not used yet into buf: base, else base_1, base_2, ...; it is
 * used from now on. QP_E_INVAL when buf is too small for it. */
enum qp_status qp_export_name(struct qp_export_names *nm, const char *base,
                              char *buf, size_t size, struct qp_error *err);

/* Adds initializer t to tg under a new name made from base (t is taken,
 * also on failure); *name (may be NULL) points at t's name. */
enum qp_status qp_export_add_const(struct qp_export_names *nm,
                                   struct qp_onnx_graph *tg, const char *base,
                                   struct qp_tensor *t, const char **name,
                                   struct qp_error *err);

/* Writes node i of g into tg as an opset-`target` node (target >= the
 * node's opset) reading inputs in[0..n_in) and writing outputs
 * out[0..n_out) (names in the new model; "" for absent ones). rank0 is the
 * rank of input 0 (-1 unknown), which Softmax needs. Constants made from
 * attributes are added to tg. QP_E_UNSUPPORTED names the node when it has
 * no form at target. */
enum qp_status qp_export_node(const struct qp_graph *g, int i,
                              const char *const *in, int n_in,
                              const char *const *out, int n_out, int target,
                              int rank0, struct qp_export_names *nm,
                              struct qp_onnx_graph *tg, struct qp_error *err);

#endif
