/* formats/onnx.h: ONNX models (.onnx), parsed into a plain C tree from
 * which model/ builds its graph IR, and the read-only dump of a model's
 * weights (its initializers and Constant values).
 *
 * The tree mirrors onnx.proto: a model has opset imports, metadata, a main
 * graph and model-local functions; a graph has nodes (in file order, which
 * ONNX requires to be topological), inputs, outputs, value_info and
 * initializers; a node has op_type, domain, name, inputs and outputs (an
 * empty name "" marks an omitted optional input or output and is kept, so
 * positions are preserved) and attributes of every type, subgraphs (If,
 * Loop, Scan bodies) converted recursively. Every string is owned by the
 * tree; absent strings are "" (never NULL) unless documented otherwise.
 *
 * Tensors (initializers, TENSOR(S) attributes, Constant values) are
 * struct qp_tensor, converted as formats/tensorproto.h describes: every
 * numeric ONNX type; STRING and other types qprobe cannot hold are refused,
 * as are sparse initializers and sparse Constant values.
 *
 * Memory. The file is mapped read-only. Before protobuf-c sees the model,
 * every raw_data field is replaced by a reference into the mapping
 * (formats/pbwire.h), so the weights are never copied by the parser. A
 * tensor whose bytes in the file are aligned for its element type (always
 * for 1-byte types) borrows them from the mapping; others, and tensors
 * stored in typed fields, are copied into memory the tensor owns. External
 * data files are mapped and borrowed or copied the same way. The protobuf
 * is freed before qp_onnx_load returns: peak memory is the structure plus
 * the copied tensors, and the resident size afterwards is the copied
 * tensors plus the pages of the mappings that are touched (which the
 * kernel can drop and reread). stats tells how much was borrowed and
 * copied. A borrowed tensor keeps its mapping alive, so tensors may be
 * handed out (qp_tensor_wrap on t->data with t->map) and outlive the model.
 * A model over 2 GiB must use external data, as protobuf limits messages
 * to 2 GiB; external data has no size limit here. */
#ifndef QP_FORMATS_ONNX_H
#define QP_FORMATS_ONNX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"
#include "formats/tensorproto.h"

/* AttributeProto.AttributeType values. */
enum qp_onnx_attr_type {
    QP_ONNX_ATTR_UNDEFINED = 0,
    QP_ONNX_ATTR_FLOAT = 1,
    QP_ONNX_ATTR_INT = 2,
    QP_ONNX_ATTR_STRING = 3,
    QP_ONNX_ATTR_TENSOR = 4,
    QP_ONNX_ATTR_GRAPH = 5,
    QP_ONNX_ATTR_FLOATS = 6,
    QP_ONNX_ATTR_INTS = 7,
    QP_ONNX_ATTR_STRINGS = 8,
    QP_ONNX_ATTR_TENSORS = 9,
    QP_ONNX_ATTR_GRAPHS = 10,
    QP_ONNX_ATTR_SPARSE_TENSOR = 11,  /* kept as a type only, no value */
    QP_ONNX_ATTR_SPARSE_TENSORS = 12, /* kept as a type only, no value */
    QP_ONNX_ATTR_TYPE_PROTO = 13,
    QP_ONNX_ATTR_TYPE_PROTOS = 14,
    QP_ONNX_ATTR_COUNT
};

/* "FLOAT", "INTS", ... */
const char *qp_onnx_attr_type_name(enum qp_onnx_attr_type t);

enum qp_onnx_kind {
    QP_ONNX_KIND_NONE = 0, /* no type given */
    QP_ONNX_KIND_TENSOR,
    QP_ONNX_KIND_SPARSE_TENSOR,
    QP_ONNX_KIND_SEQUENCE,
    QP_ONNX_KIND_MAP,
    QP_ONNX_KIND_OPTIONAL,
    QP_ONNX_KIND_COUNT
};

struct qp_onnx_dim {
    int64_t value; /* -1 when not a known value */
    char *param;   /* symbolic name ("batch"), or NULL */
};

/* A value's type (TypeProto). */
struct qp_onnx_valtype {
    enum qp_onnx_kind kind;
    int32_t elem_type;          /* TENSOR, SPARSE_TENSOR: an ONNX data type
                                   (enum qp_onnx_type), 0 when not given;
                                   MAP: the key type */
    int ndim;                   /* TENSOR, SPARSE_TENSOR: -1 when the shape
                                   is unknown, else dims[ndim] */
    struct qp_onnx_dim *dims;
    struct qp_onnx_valtype *elem;  /* SEQUENCE, OPTIONAL: element type; MAP:
                                   value type; else NULL */
};

/* A graph input, output or value_info entry. */
struct qp_onnx_value {
    char *name;
    struct qp_onnx_valtype type;
};

struct qp_onnx_graph;

struct qp_onnx_attr {
    char *name;
    char *ref_attr_name;          /* in functions: the caller's attribute
                                     this one stands for; NULL otherwise */
    enum qp_onnx_attr_type type;
    float f;                      /* FLOAT */
    int64_t i;                    /* INT */
    char *s;                      /* STRING: NUL-terminated, s_len bytes */
    size_t s_len;
    struct qp_tensor *t;          /* TENSOR */
    struct qp_onnx_graph *g;      /* GRAPH */
    struct qp_onnx_valtype *tp;      /* TYPE_PROTO */
    size_t n;                     /* element count of the list types */
    float *floats;                /* FLOATS */
    int64_t *ints;                /* INTS */
    char **strings;               /* STRINGS, with their lengths */
    size_t *string_lens;
    struct qp_tensor **tensors;   /* TENSORS */
    struct qp_onnx_graph **graphs; /* GRAPHS */
    struct qp_onnx_valtype *tps;     /* TYPE_PROTOS */
};

struct qp_onnx_node {
    char *name, *op_type, *domain; /* domain "" or "ai.onnx": standard ops */
    char **inputs;                 /* "" = omitted optional input */
    size_t n_inputs;
    char **outputs;
    size_t n_outputs;
    struct qp_onnx_attr *attrs;
    size_t n_attrs;
    /* Constant nodes (standard domain): the value, named outputs[0], from
     * value, value_float(s) (f32, scalar or 1-D) or value_int(s) (i64).
     * It shares the memory of the `value` attribute's tensor. NULL for
     * other nodes. */
    struct qp_tensor *value;
};

struct qp_onnx_graph {
    char *name;
    struct qp_onnx_node *nodes;
    size_t n_nodes;
    struct qp_onnx_value *inputs, *outputs, *value_info;
    size_t n_inputs, n_outputs, n_value_info;
    struct qp_tensor **initializers; /* named; names unique in the graph */
    size_t n_initializers;
};

struct qp_onnx_opset {
    char *domain; /* "" (or "ai.onnx") is the standard domain */
    int64_t version;
};

struct qp_onnx_kv {
    char *key, *value;
};

/* A model-local function (FunctionProto). */
struct qp_onnx_function {
    char *name, *domain;
    char **inputs, **outputs, **attributes;
    size_t n_inputs, n_outputs, n_attributes;
    struct qp_onnx_node *nodes;
    size_t n_nodes;
    struct qp_onnx_opset *opsets;
    size_t n_opsets;
};

struct qp_onnx_stats {
    size_t tensors;        /* every tensor converted */
    size_t borrowed;       /* of which borrowed from a mapping */
    size_t bytes_borrowed; /* their bytes */
    size_t bytes_copied;   /* bytes of the others */
};

struct qp_onnx_model {
    char *path;            /* the file, or the `what` of qp_onnx_parse */
    int64_t ir_version;    /* 0 when absent */
    char *producer_name, *producer_version, *domain, *doc_string;
    int64_t model_version;
    struct qp_onnx_opset *opsets;
    size_t n_opsets;
    struct qp_onnx_kv *metadata;
    size_t n_metadata;
    struct qp_onnx_graph *graph; /* never NULL: a model without one is refused */
    struct qp_onnx_function *functions;
    size_t n_functions;
    struct qp_onnx_stats stats;
};

/* Maps path and parses the model; external data is relative to the
 * model's directory. *out belongs to the caller (qp_onnx_model_free).
 * QP_E_IO when the file cannot be read, QP_E_FORMAT for malformed models
 * (the message names the file and the element), QP_E_UNSUPPORTED for valid
 * content qprobe cannot hold (string tensors, sparse initializers, ...). */
enum qp_status qp_onnx_load(const char *path, struct qp_onnx_model **out,
                            struct qp_error *err);

/* Parses the serialized model buf[0..len), named `what` in messages. When
 * map is non-NULL and holds buf, tensors may borrow from it. dir is the
 * root for external data (NULL refuses external data). */
enum qp_status qp_onnx_parse(const char *what, const void *buf, size_t len,
                             struct qp_mmap *map, const char *dir,
                             struct qp_onnx_model **out, struct qp_error *err);

/* Frees the model and everything it owns. NULL is ignored. */
void qp_onnx_model_free(struct qp_onnx_model *m);

/* True for "" and "ai.onnx". */
bool qp_onnx_domain_is_default(const char *domain);

/* The imported opset version of domain ("" and "ai.onnx" are the same), or
 * -1 when the model does not import it. */
int64_t qp_onnx_opset_version(const struct qp_onnx_model *m,
                              const char *domain);

/* True when node n is the standard operator op_type. */
bool qp_onnx_node_is(const struct qp_onnx_node *n, const char *op_type);

/* The attribute called name, or NULL. */
const struct qp_onnx_attr *qp_onnx_attr_find(const struct qp_onnx_node *n,
                                             const char *name);

/* Typed attribute getters: *out = the attribute's value, or def when the
 * node has no such attribute. QP_E_FORMAT when it has another type, e.g.
 * "node 'c1' (Conv): attribute 'group' is FLOAT, expected INT". */
enum qp_status qp_onnx_attr_int(const struct qp_onnx_node *n, const char *name,
                                int64_t def, int64_t *out,
                                struct qp_error *err);
enum qp_status qp_onnx_attr_float(const struct qp_onnx_node *n,
                                  const char *name, float def, float *out,
                                  struct qp_error *err);
/* *out is borrowed from the node (def when absent). */
enum qp_status qp_onnx_attr_string(const struct qp_onnx_node *n,
                                   const char *name, const char *def,
                                   const char **out, struct qp_error *err);
/* *out and *count are borrowed from the node; NULL and 0 when absent. */
enum qp_status qp_onnx_attr_ints(const struct qp_onnx_node *n,
                                 const char *name, const int64_t **out,
                                 size_t *count, struct qp_error *err);
enum qp_status qp_onnx_attr_floats(const struct qp_onnx_node *n,
                                   const char *name, const float **out,
                                   size_t *count, struct qp_error *err);

/* The initializer of g called name, or NULL (linear search). */
const struct qp_tensor *qp_onnx_graph_initializer(const struct qp_onnx_graph *g,
                                                  const char *name);

#endif
