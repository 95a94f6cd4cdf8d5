/* model/fuse.h: fused elementwise passes, for the executor (model/exec.c).
 *
 * Graphs exported from training frameworks spell activations out as
 * chains of small elementwise nodes (HardSwish as Add, Clip, Mul, Div;
 * affine blocks as Mul, Add), and each node alone reads and writes a
 * whole tensor. A fused pass runs a segment of such nodes in one walk
 * over the output: blocks of FUSE_BLOCK elements, each node's
 * kernels/eltwise-f32.h loop applied to the block in node order, values
 * that only the segment reads kept in per-thread block buffers. Every
 * element goes through the same operations in the same order as when the
 * nodes run one by one, so the results are bit-identical.
 *
 * A segment is a run of nodes consecutive in the topological order, each
 * an f32 elementwise function (qp_op_unary_ew, qp_op_binary_ew), all
 * with one output shape, with at most QP_FUSE_MAX_EXT distinct
 * non-scalar inputs from outside the segment (each broadcasting to that
 * shape), and no captured value but the last. A node's output is
 * "exported" (written to a tensor the executor publishes) when a node
 * outside its segment reads it, it is a graph output or it is captured;
 * the others never exist as tensors. */
#ifndef QP_MODEL_FUSE_H
#define QP_MODEL_FUSE_H

#include <stdbool.h>

#include "model/graph.h"
#include "model/op.h"

#define QP_FUSE_MAX_NODES 32 /* nodes one plan covers */
#define QP_FUSE_MAX_EXT 4    /* non-scalar outside inputs of a segment */

struct qp_fuse_member {
    int node;
    int seg;                 /* segment index in the plan */
    bool exported;
    struct qp_ew_step step;
    struct qp_tdesc desc;    /* of the output */
    int src[2];              /* member computing input k, or -1 (outside) */
};

struct qp_fuse_plan {
    int n;                   /* members planned */
    int n_seg;
    int seg_first[QP_FUSE_MAX_NODES], seg_count[QP_FUSE_MAX_NODES];
    struct qp_fuse_member m[QP_FUSE_MAX_NODES];
};

/* The tensor of value v as the run has it now (a live activation or a
 * constant), or NULL when it does not exist yet. */
typedef const struct qp_tensor *(*qp_fuse_value_fn)(void *ctx, int v);

/* True when node's operator has an f32 elementwise form (its inputs'
 * dtypes are checked when planning). */
bool qp_fuse_candidate(const struct qp_graph *g, int node);

/* Plans nodes[0..len) (len <= QP_FUSE_MAX_NODES, consecutive in g's
 * order, their inputs from before nodes[0] all available through value):
 * members, segments, exports. capture is the executor's capture glob
 * (NULL: none). Planning stops before the first node that cannot be
 * fused (an input of another dtype, Clip bounds computed in the same
 * plan, a shape error the operator will report when run alone); returns
 * the number of nodes planned (p->n, 0 when nodes[0] cannot be fused). */
int qp_fuse_plan(const struct qp_graph *g, const int *nodes, int len,
                 qp_fuse_value_fn value, void *ctx, const char *capture,
                 struct qp_fuse_plan *p);

/* Elements a pass works on at a time: a block buffer per member (32 of
 * 1 KiB) stays in L1. */
#define QP_FUSE_BLOCK 256

/* A segment ready to run over any range of its output. */
struct qp_fuse_opd {
    enum { QP_FUSE_REG, QP_FUSE_ONE, QP_FUSE_EXT } kind;
    int idx;          /* REG: member in the segment; EXT: index in ext */
    const float *one; /* ONE: a single value, read when the pass runs (a
                       * Conv's output is written after the prepare) */
};

/* Steps of a pass run as one loop of kernels/eltwise-f32.h, the same
 * bits, when only the last one's value is read afterwards: from step k,
 *  - HSWISH, 4 steps: HardSwish as Add (x and a single value), Clip, Mul
 *    (x and the Clip), Div or Mul by a single value (hswish_chain);
 *  - AFFINE, 2 steps: Mul (x and a single value), then Add of a single
 *    value (affine). */
enum qp_fuse_chain_kind { QP_FUSE_CHAIN_NONE = 0, QP_FUSE_CHAIN_HSWISH,
                          QP_FUSE_CHAIN_AFFINE };

struct qp_fuse_chain {
    enum qp_fuse_chain_kind kind; /* of the chain starting at this step */
    bool div;         /* HSWISH: the last step divides */
    struct qp_fuse_opd x;
    /* read when the pass runs, as QP_FUSE_ONE: HSWISH the Add's value and
     * the last step's; AFFINE the Mul's and the Add's */
    const float *c0, *c1;
};

struct qp_fuse_pass {
    int n;
    struct qp_ew_step step[QP_FUSE_MAX_NODES];
    struct qp_fuse_opd in[QP_FUSE_MAX_NODES][2];
    float *out[QP_FUSE_MAX_NODES]; /* exported outputs, else NULL */
    int n_ext;
    const float *ext[QP_FUSE_MAX_EXT];
    struct qp_bcast bc;
    struct qp_fuse_chain chain[QP_FUSE_MAX_NODES];
    size_t total;                  /* elements of the output */
    const struct qp_ew_f32 *k;
};

/* Prepares segment s of p: value must give every input from outside the
 * segment by now (with data); out[k] is the tensor for member
 * seg_first[s] + k when it is exported (allocated with its desc), NULL
 * otherwise. An outside input may share its memory with the last
 * member's output (computed in place). */
void qp_fuse_prepare(const struct qp_graph *g, const struct qp_fuse_plan *p,
                     int s, qp_fuse_value_fn value, void *ctx,
                     struct qp_tensor *const *out, struct qp_fuse_pass *pass);

/* Computes the output elements [begin, end) of a prepared pass (every
 * member's value there); safe from several threads on disjoint ranges. */
void qp_fuse_pass_range(const struct qp_fuse_pass *pass, size_t begin,
                        size_t end);

/* Prepares segment s and runs it over its whole output on pool. */
void qp_fuse_run(const struct qp_graph *g, const struct qp_fuse_plan *p, int s,
                 qp_fuse_value_fn value, void *ctx,
                 struct qp_tensor *const *out, struct qp_pool *pool);

#endif
