/* model/op.h: what an operator implementation provides, and the helpers
 * operator files (model/op-<family>.c) share.
 *
 * An operator has a static definition: name, arity, the attributes it
 * reads with their types (checked once, when the graph is finalized, so
 * the getters below can trust them), an optional check of attribute
 * values, and two functions:
 *
 *   infer: output dtypes and shapes from the inputs. Inputs listed in
 *          data_inputs must carry data (a Reshape's target shape); the
 *          others may be descriptors (data NULL).
 *   run:   computes the outputs, which the executor allocated with the
 *          inferred descriptors, from inputs with data. Output memory is
 *          not initialized: run writes every element of every output.
 *
 * Operators never print; errors go through qp_op_fail, which names the
 * node: "node 'conv1' (Conv): ...". */
#ifndef QP_MODEL_OP_H
#define QP_MODEL_OP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"
#include "kernels/eltwise-f32.h"
#include "quant/qparams.h"
#include "model/graph.h"

/* dtype and shape of a value. */
struct qp_tdesc {
    enum qp_dtype dtype;
    int ndim;
    int64_t shape[QP_MAX_DIMS];
};

struct qp_scratch;

struct qp_op_ctx {
    const struct qp_graph *g;
    int node;                          /* id in g->nodes */
    const struct qp_node *n;
    const struct qp_tensor *const *in; /* n->n_in entries; NULL = absent */
    int n_in;
    struct qp_scratch *scratch;        /* NULL during static inference */
    struct qp_pool *pool;              /* threads for the run; may be NULL */
    /* the run's state for stateful operators (an LLM's KV cache): what
     * qp_exec_opts.state gives; NULL during inference and folding */
    void *state;
};

struct qp_attr_spec {
    const char *name;
    enum qp_attr_type type;
};

#define QP_OP_MAX_IO 64 /* inputs or outputs one node may have */

struct qp_op_def {
    const char *domain; /* "" for ONNX's default domain */
    const char *name;
    int min_in, max_in, min_out, max_out;
    unsigned data_inputs;             /* bit i: infer needs input i's data */
    bool shape_only;                  /* run needs no input data (Shape) */
    bool no_fold;                     /* never constant-folded (Q/DQ) */
    const struct qp_attr_spec *attrs; /* ends with {NULL}; may be NULL */
    enum qp_status (*check)(const struct qp_op_ctx *c, struct qp_error *err);
    enum qp_status (*infer)(const struct qp_op_ctx *c, struct qp_tdesc *out,
                            struct qp_error *err);
    enum qp_status (*run)(const struct qp_op_ctx *c,
                          struct qp_tensor *const *out, struct qp_error *err);
    /* ---- traits, for the planners (zero: none) ---- */
    unsigned traits; /* QP_TRAIT_* */
    /* True when the node only moves input 0's values to output 0 (no
     * arithmetic: a quantized value keeps its parameters through it);
     * NULL: never. qp_op_always for operators that always do. */
    bool (*moves_values)(const struct qp_node *n);
    /* The node reads input 1 as a weight (a constant that weight
     * quantization applies to): its layout (which axis is the output
     * channel, quant/qparams.h); NULL: no weight input. */
    bool (*weight_layout)(const struct qp_node *n, enum qp_wlayout *out);
    /* Multiply-accumulates of the node from its inputs' and first output's
     * descriptors (all known); NULL: none counted. */
    uint64_t (*macs)(const struct qp_node *n, const struct qp_tdesc *const *in,
                     const struct qp_tdesc *out);
};

/* Operator traits. */
enum {
    /* output element i is a function of the inputs' elements at i alone
     * (after broadcasting): a lookup table on quantized inputs computes it */
    QP_TRAIT_ELEMENTWISE = 1u << 0,
    /* runs unchanged on integer tensors (moves them as they are) */
    QP_TRAIT_INT_PASS = 1u << 1,
    /* its weight (input 1) may be an integer tensor with quantization
     * parameters, which the operator dequantizes itself, tile by tile:
     * the quantized modes hand it the integer weight, never a float copy */
    QP_TRAIT_QWEIGHT = 1u << 2,
    /* reads inputs 0 and 2 packed below 8 bits too (DequantizeLinear of
     * int4: the data and its zero point) */
    QP_TRAIT_PACKED_IN = 1u << 3,
};

/* For moves_values: true for every node. */
bool qp_op_always(const struct qp_node *n);

/* The definition for (domain, op_type), or NULL when unsupported. */
const struct qp_op_def *qp_op_find(const char *domain, const char *op_type);

/* The i-th supported definition (for listings and tests), NULL past the
 * last. */
const struct qp_op_def *qp_op_at(size_t i);

/* Checks node's arity, attribute types and the operator's own check. */
enum qp_status qp_op_check(const struct qp_graph *g, int node,
                           struct qp_error *err);

/* qp_fail with the node's label in front of the message. */
enum qp_status qp_op_fail(struct qp_error *err, const struct qp_op_ctx *c,
                          enum qp_status status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- attributes (types already checked) -------------------------------- */

int64_t qp_attr_int(const struct qp_node *n, const char *name, int64_t def);
float qp_attr_float(const struct qp_node *n, const char *name, float def);
const char *qp_attr_str(const struct qp_node *n, const char *name,
                        const char *def);
/* NULL (and *count 0) when absent. */
const int64_t *qp_attr_ints(const struct qp_node *n, const char *name,
                            size_t *count);
const float *qp_attr_floats(const struct qp_node *n, const char *name,
                            size_t *count);

/* ---- inputs ------------------------------------------------------------ */

/* Input i or NULL when absent or beyond n_in. */
static inline const struct qp_tensor *qp_op_in(const struct qp_op_ctx *c,
                                               int i)
{
    return i >= 0 && i < c->n_in ? c->in[i] : NULL;
}

/* Normalizes axis (negative counts from the end) for rank ndim; fails
 * naming the attribute when outside [-ndim, ndim). */
enum qp_status qp_op_axis(const struct qp_op_ctx *c, const char *what,
                          int64_t axis, int ndim, int *out,
                          struct qp_error *err);

/* Reads an integer tensor (i32 or i64, any shape) into out[max]; fails
 * when it is another dtype or longer than max. */
enum qp_status qp_op_read_ints(const struct qp_op_ctx *c, const char *what,
                               const struct qp_tensor *t, int64_t *out,
                               size_t max, size_t *count,
                               struct qp_error *err);

/* Reads a float tensor (f32, f64 or f16) of n elements into out. */
enum qp_status qp_op_read_floats(const struct qp_op_ctx *c, const char *what,
                                 const struct qp_tensor *t, float *out,
                                 size_t max, size_t *count,
                                 struct qp_error *err);

/* Requires input i to have dtype f32 (the float path). */
enum qp_status qp_op_want_f32(const struct qp_op_ctx *c, int i,
                              struct qp_error *err);

/* Copies dtype and shape of t into d. */
void qp_tdesc_of(const struct qp_tensor *t, struct qp_tdesc *d);

/* Product of dims [from, to) of d (clamped to its rank). */
uint64_t qp_tdesc_dims(const struct qp_tdesc *d, int from, int to);

/* Element count of a descriptor. */
size_t qp_tdesc_numel(const struct qp_tdesc *d);

/* Same dtype and shape. */
bool qp_tdesc_equal(const struct qp_tdesc *a, const struct qp_tdesc *b);

/* Bytes per element (1 for bool; packed types are not supported by the
 * runtime and give 0). */
size_t qp_elem_size(enum qp_dtype dt);

/* Numpy broadcasting of n shapes into out (rank = the largest rank). */
enum qp_status qp_op_broadcast(const struct qp_op_ctx *c,
                               const struct qp_tensor *const *ts, int n,
                               struct qp_tdesc *out, struct qp_error *err);

/* Batch dims of a matrix product: ab and bb become descriptors of a's and
 * b's dims but the last two (none for rank <= 2), batch their numpy
 * broadcast. */
enum qp_status qp_op_batch_dims(const struct qp_op_ctx *c,
                                const struct qp_tensor *a,
                                const struct qp_tensor *b, struct qp_tensor *ab,
                                struct qp_tensor *bb, struct qp_tdesc *batch,
                                struct qp_error *err);

/* Checks that t broadcasts to exactly the shape of d (what names t). */
enum qp_status qp_op_broadcasts_to(const struct qp_op_ctx *c, const char *what,
                                   const struct qp_tensor *t,
                                   const struct qp_tdesc *d,
                                   struct qp_error *err);

/* Iteration over a broadcast: the output's dims coalesced, with each
 * operand's element strides (0 along broadcast dims). The innermost
 * stride of every operand is 0 or 1. */
struct qp_bcast {
    int nd;
    int nops;
    int64_t shape[QP_MAX_DIMS];
    int64_t stride[4][QP_MAX_DIMS];
    size_t total, inner;  /* elements; length of the innermost dim */
};

/* ops[i] (nops <= 4) broadcast to out; absent operands are not allowed. */
void qp_bcast_init(struct qp_bcast *b, const struct qp_tdesc *out,
                   const struct qp_tensor *const *ops, int nops);

/* Element offsets of every operand at the start of row `row` (the output
 * element row * inner). */
void qp_bcast_row(const struct qp_bcast *b, size_t row, int64_t *off);

/* Element offsets of every operand at output element o. */
void qp_bcast_at(const struct qp_bcast *b, size_t o, int64_t *off);

/* Scratch memory for one run of the node, valid until it returns; NULL
 * when out of memory or beyond the allocation limit (core/memlimit.h).
 * The executor reuses and accounts it. */
void *qp_op_scratch(const struct qp_op_ctx *c, size_t bytes);

/* The same, failing with the node and the size: QP_E_NOMEM when bytes is
 * beyond the allocation limit (core/memlimit.h) or cannot be allocated. */
enum qp_status qp_op_scratch_get(const struct qp_op_ctx *c, size_t bytes,
                                 void **out, struct qp_error *err);

/* A new tensor named name of d's dtype and shape, its data uninitialized,
 * from the buffers of c's run when there is one (as the executor
 * allocates node outputs); *out belongs to the caller, who frees it with
 * qp_op_free_tensor (or qp_tensor_free) or hands it to the executor. */
enum qp_status qp_op_new_tensor(const struct qp_op_ctx *c, const char *name,
                                const struct qp_tdesc *d,
                                struct qp_tensor **out, struct qp_error *err);

/* Frees t (NULL: nothing), keeping its buffer for c's run. */
void qp_op_free_tensor(const struct qp_op_ctx *c, struct qp_tensor *t);

/* Element access in any runtime dtype, as double or int64 (bool reads
 * 0/1; float -> int truncates toward zero and saturates, NaN -> 0). */
double qp_elem_get_f64(enum qp_dtype dt, const void *data, size_t i);
int64_t qp_elem_get_i64(enum qp_dtype dt, const void *data, size_t i);
void qp_elem_set_f64(enum qp_dtype dt, void *data, size_t i, double v);
void qp_elem_set_i64(enum qp_dtype dt, void *data, size_t i, int64_t v);

/* Elements of a simple pass over memory below which a second thread costs
 * more than it saves (waking a sleeping worker takes microseconds, and
 * tens of them on a busy machine). */
#define QP_OP_PAR_MIN ((size_t)1 << 16)

/* Items of per_item elements each that make QP_OP_PAR_MIN (at least 1). */
static inline size_t qp_op_par_items(size_t per_item)
{
    return per_item >= QP_OP_PAR_MIN ? 1 : QP_OP_PAR_MIN / (per_item ? per_item : 1);
}

/* Runs fn over [0, n) on c's pool when n is large (each thread gets a
 * contiguous range, aligned to 16 items, of at least min_per_thread). */
void qp_op_parallel_for(const struct qp_op_ctx *c, size_t n,
                        size_t min_per_thread,
                        void (*fn)(void *ctx, size_t begin, size_t end),
                        void *ctx);

/* The same for n coarse items (planes, blocks): ranges of any length. */
void qp_op_parallel_items(const struct qp_op_ctx *c, size_t n,
                          size_t min_per_thread,
                          void (*fn)(void *ctx, size_t begin, size_t end),
                          void *ctx);

/* ---- elementwise forms (for fusion, model/fuse.c) ---------------------- */

/* What a node computes per element in f32: unary (input 0, with alpha
 * and beta) or binary (inputs 0 and 1, numpy broadcasting). */
struct qp_ew_step {
    bool binary;
    enum qp_ew_unary unary;
    float alpha, beta;
    enum qp_ew_binary op;
};

/* True when node c->n is an f32 unary function or Clip (model/op-unary.c),
 * or a two-input Add, Sub, Mul, Div, Pow, Max or Min (model/op-binary.c),
 * and then *s describes it: the node's run gives exactly the bits of
 * the matching kernels/eltwise-f32.h loop. With c->in NULL only the
 * operator is looked at (s is not written); otherwise the inputs may be
 * descriptors (data NULL) but for Clip's bounds, which need data, and a
 * dtype other than f32 gives false. */
bool qp_op_unary_ew(const struct qp_op_ctx *c, struct qp_ew_step *s);
bool qp_op_binary_ew(const struct qp_op_ctx *c, struct qp_ew_step *s);

/* Operator families (model/op-<family>.c), each ending with a NULL name. */
extern const struct qp_op_def qp_ops_binary[];
extern const struct qp_op_def qp_ops_unary[];
extern const struct qp_op_def qp_ops_conv[];
extern const struct qp_op_def qp_ops_pool[];
extern const struct qp_op_def qp_ops_matmul[];
extern const struct qp_op_def qp_ops_norm[];
extern const struct qp_op_def qp_ops_shape[];
extern const struct qp_op_def qp_ops_layout[];
extern const struct qp_op_def qp_ops_resize[];
extern const struct qp_op_def qp_ops_reduce[];
extern const struct qp_op_def qp_ops_quant[];
extern const struct qp_op_def qp_ops_tflite[]; /* model/op-tflite.c */
extern const struct qp_op_def qp_ops_llm[];   /* model/op-llm*.c */

#endif
