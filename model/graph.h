/* model/graph.h: the graph IR every model builder produces and the
 * executor runs.
 *
 * A graph is a list of nodes (an operator type, attributes, input and
 * output values) over named values. Values are SSA: each is a graph
 * input, a constant (a weight, borrowed from the loaded file when it can
 * be) or the output of exactly one node. Names are the model's own (the
 * ONNX value names), so captured tensors carry them.
 *
 * Building: qp_graph_new, then add inputs, constants and nodes in any
 * order (a value is created the first time its name is used), mark the
 * outputs, and call qp_graph_finalize, which checks the graph (one
 * producer per value, every input defined, no cycle, every operator known
 * with a valid arity and attributes) and computes a topological order and
 * each value's consumers. Nothing may be added after finalize, except
 * through the rewriting helpers below.
 *
 * Static information (dtype, shape with -1 for dims unknown until run
 * time) comes from qp_graph_infer (model/infer.h). */
#ifndef QP_MODEL_GRAPH_H
#define QP_MODEL_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"

struct qp_op_def;

/* Attribute types (ONNX's, minus sparse tensors and type protos). */
enum qp_attr_type {
    QP_ATTR_INT = 0,
    QP_ATTR_FLOAT,
    QP_ATTR_STRING,
    QP_ATTR_INTS,
    QP_ATTR_FLOATS,
    QP_ATTR_STRINGS,
    QP_ATTR_TENSOR,
    QP_ATTR_COUNT
};

struct qp_attr {
    char *name;
    enum qp_attr_type type;
    int64_t i;
    float f;
    char *s;              /* STRING */
    int64_t *ints;        /* INTS, count entries */
    float *floats;        /* FLOATS */
    char **strings;       /* STRINGS */
    size_t count;
    struct qp_tensor *t;  /* TENSOR, owned */
};

struct qp_node {
    char *name;           /* never NULL; "" when the model gave none */
    char *op_type;        /* "Conv" */
    char *domain;         /* "" for the default ONNX domain */
    int opset;            /* version of the domain the model imports */
    int *in;              /* value ids; -1 for an absent optional input */
    int n_in;
    int *out;             /* value ids; -1 for an unused optional output */
    int n_out;
    struct qp_attr *attrs;
    int n_attrs;
    const struct qp_op_def *def; /* set by finalize */
    /* what an importer prepared for the node's operator (TFLite ops:
     * requantization parameters, packed weights), freed with the graph by
     * state_free; NULL for most nodes */
    void *state;
    void (*state_free)(void *state);
};

struct qp_value {
    char *name;
    int producer;         /* node id, or -1 (graph input or constant) */
    struct qp_tensor *konst; /* constant data (owned), or NULL */
    bool is_input, is_output;
    int *consumers;       /* node ids, each once, in topological order */
    int n_consumers;
    /* static information (qp_graph_infer, or declared for inputs) */
    bool typed;           /* dtype and ndim known */
    enum qp_dtype dtype;
    int ndim;
    int64_t shape[QP_MAX_DIMS]; /* -1 where unknown */
    /* graph inputs of quantized models (TFLite): a descriptor carrying the
     * input's quantization, with which a float feed is quantized
     * (qp_model_quantize_feed); owned, NULL otherwise */
    struct qp_tensor *feed_q;
};

struct qp_graph {
    struct qp_value *values;
    int n_values, cap_values;
    struct qp_node *nodes;
    int n_nodes, cap_nodes;
    int *inputs, n_inputs;     /* graph inputs (not constants), in order */
    int *outputs, n_outputs;
    int *order;                /* node ids in topological order (finalize) */
    bool finalized;
    char *name;                /* for messages: the model path */
    void *names;               /* name -> value id table (private) */
    struct qp_graph_keep *keep;/* resources constants borrow from */
};

/* New empty graph; name (may be NULL) prefixes nothing but is kept for
 * messages. *out belongs to the caller (qp_graph_free). */
enum qp_status qp_graph_new(const char *name, struct qp_graph **out,
                            struct qp_error *err);

/* Frees the graph, its constants and kept resources. NULL is ignored. */
void qp_graph_free(struct qp_graph *g);

/* Keeps ptr alive as long as the graph: free_fn(ptr) runs in
 * qp_graph_free, after the constants are freed. For constants that borrow
 * memory from a loaded model. */
enum qp_status qp_graph_keep(struct qp_graph *g, void *ptr,
                             void (*free_fn)(void *), struct qp_error *err);

/* Id of the value named name, or -1. */
int qp_graph_find(const struct qp_graph *g, const char *name);

/* Id of the value named name, created when new. */
enum qp_status qp_graph_value(struct qp_graph *g, const char *name, int *id,
                              struct qp_error *err);

/* Declares a graph input with its dtype and shape (dims -1 unknown; ndim
 * -1 when even the rank is unknown: then nothing is checked). */
enum qp_status qp_graph_add_input(struct qp_graph *g, const char *name,
                                  enum qp_dtype dtype, int ndim,
                                  const int64_t *shape, struct qp_error *err);

/* Makes t the constant value named t->name; the graph takes ownership of
 * t (also on failure). A name defined twice is refused. */
enum qp_status qp_graph_add_const(struct qp_graph *g, struct qp_tensor *t,
                                  struct qp_error *err);

/* Adds a node. Input names "" or NULL are absent optional inputs; output
 * names "" or NULL are unused optional outputs. *id (may be NULL) gets the
 * node id. Attributes are added with qp_node_set_* on g->nodes[*id]. */
enum qp_status qp_graph_add_node(struct qp_graph *g, const char *op_type,
                                 const char *domain, int opset,
                                 const char *name, int n_in,
                                 const char *const *in, int n_out,
                                 const char *const *out, int *id,
                                 struct qp_error *err);

/* Marks the value named name as a graph output. */
enum qp_status qp_graph_add_output(struct qp_graph *g, const char *name,
                                   struct qp_error *err);

/* Attribute setters (copy their arguments). Setting a name twice
 * replaces the earlier value. */
enum qp_status qp_node_set_int(struct qp_node *n, const char *name, int64_t v,
                               struct qp_error *err);
enum qp_status qp_node_set_float(struct qp_node *n, const char *name, float v,
                                 struct qp_error *err);
enum qp_status qp_node_set_string(struct qp_node *n, const char *name,
                                  const char *v, struct qp_error *err);
enum qp_status qp_node_set_ints(struct qp_node *n, const char *name,
                                const int64_t *v, size_t count,
                                struct qp_error *err);
enum qp_status qp_node_set_floats(struct qp_node *n, const char *name,
                                  const float *v, size_t count,
                                  struct qp_error *err);
enum qp_status qp_node_set_strings(struct qp_node *n, const char *name,
                                   const char *const *v, size_t count,
                                   struct qp_error *err);
/* Takes ownership of t (also on failure). */
enum qp_status qp_node_set_tensor(struct qp_node *n, const char *name,
                                  struct qp_tensor *t, struct qp_error *err);

/* The attribute named name, or NULL. */
const struct qp_attr *qp_node_attr(const struct qp_node *n, const char *name);

/* Checks and orders the graph (see the top of this file). Errors name the
 * node and its operator: "node 'conv1' (Conv): ...". */
enum qp_status qp_graph_finalize(struct qp_graph *g, struct qp_error *err);

/* "node 'NAME' (OP)", or for an unnamed node "the OP node making 'OUT'",
 * into buf. */
const char *qp_node_label(const struct qp_graph *g, int node, char *buf,
                          size_t size);

/* ---- rewriting (model/fold.c and importers) --------------------------- */

/* Removes nodes marked in dead[] (n_nodes entries) and values nothing
 * refers to any more, then finalizes again. Ids change. */
enum qp_status qp_graph_compact(struct qp_graph *g, const bool *dead,
                                struct qp_error *err);

/* Turns value id into a constant holding t (owned by the graph; also on
 * failure); its producer node, if any, no longer writes it. */
enum qp_status qp_graph_set_const(struct qp_graph *g, int id,
                                  struct qp_tensor *t, struct qp_error *err);

#endif
