/* formats/onnx-write.h: writing ONNX models, and building the tree
 * formats/onnx.h reads them into, so that a model read, changed and
 * written round-trips through qp_onnx_load.
 *
 * Writing (formats/onnx-write.c) serializes a struct qp_onnx_model with the
 * protobuf-c code generated from libonnx-dev's onnx.proto, the same code
 * the reader uses: every field the tree has (model metadata, opset
 * imports, graphs and subgraphs, nodes, attributes of every type the tree
 * keeps values for, value types with symbolic dims, initializers,
 * functions). Tensors are written as TensorProto raw_data, little-endian
 * (4- and 2-bit types packed low bits first, as ONNX packs them); their
 * quantization parameters are not written (ONNX carries scales and zero
 * points as tensors of their own). A SPARSE_TENSOR(S) attribute has no
 * value in the tree and is refused; so are 3-bit tensors, which ONNX has
 * no type for.
 *
 * External data (onnx.proto's TensorProto.external_data): initializers of
 * at least ext_min bytes go to one side file in the model's folder, each
 * at an offset that is a multiple of 4096 (what onnx.proto recommends, so
 * runtimes can map them), with "location" (the file's base name),
 * "offset" and "length" entries. It is used when asked, and always when
 * the initializers would take protobuf past its 2 GiB message limit. Both
 * files are written under temporary names and renamed into place only
 * when complete (core/outfile.h): an error leaves neither behind.
 *
 * Building (formats/onnx-build.c): a new model with a graph, then nodes,
 * attributes, initializers and typed values appended one by one; every
 * string is copied and owned by the tree, which qp_onnx_model_free frees
 * as it frees a model read from a file. */
#ifndef QP_FORMATS_ONNX_WRITE_H
#define QP_FORMATS_ONNX_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"
#include "formats/onnx.h"

struct qp_onnx_save_opts {
    bool external;     /* put initializers of >= ext_min bytes in a side file */
    size_t ext_min;    /* 0: 1024 bytes */
    /* the side file's base name (no '/'); NULL: "<model base name>.data" */
    const char *data_name;
    /* embedded initializers above this many bytes switch to external data
     * (0: 2 GiB minus 64 MiB for the rest of the message) */
    size_t ext_auto;
};

struct qp_onnx_save_stats {
    size_t model_bytes;    /* the .onnx file */
    size_t external_bytes; /* the side file (0 when none) */
    size_t external_tensors;
    bool external;         /* a side file was written */
    char data_name[256];   /* its base name */
};

/* Writes m to path (and, with external data, the side file beside it).
 * o and stats may be NULL. QP_E_UNSUPPORTED names the tensor or attribute
 * that has no ONNX form; QP_E_IO names the file that could not be
 * written; QP_E_INVAL for a data_name with a '/' or an initializer
 * without a name. */
enum qp_status qp_onnx_save(const struct qp_onnx_model *m, const char *path,
                            const struct qp_onnx_save_opts *o,
                            struct qp_onnx_save_stats *stats,
                            struct qp_error *err);

/* ---- building --------------------------------------------------------- */

/* A new model with an empty graph named graph_name, IR version ir and one
 * opset import of the standard domain at version opset. *out belongs to
 * the caller (qp_onnx_model_free). */
enum qp_status qp_onnx_model_new(int64_t ir, int64_t opset,
                                 const char *graph_name,
                                 struct qp_onnx_model **out,
                                 struct qp_error *err);

/* Sets (adds, or replaces the version of) the opset import of domain. */
enum qp_status qp_onnx_model_set_opset(struct qp_onnx_model *m,
                                       const char *domain, int64_t version,
                                       struct qp_error *err);

/* Appends a metadata_props entry. */
enum qp_status qp_onnx_model_add_meta(struct qp_onnx_model *m, const char *key,
                                      const char *value, struct qp_error *err);

/* Appends node op_type (domain "" standard) named name with inputs
 * in[0..n_in) ("" an omitted optional input) and outputs out[0..n_out).
 * *node (may be NULL) points at it until the next node is added. */
enum qp_status qp_onnx_graph_add_node(struct qp_onnx_graph *g,
                                      const char *op_type, const char *domain,
                                      const char *name, const char *const *in,
                                      size_t n_in, const char *const *out,
                                      size_t n_out, struct qp_onnx_node **node,
                                      struct qp_error *err);

/* Attributes of node n (values copied; t is taken, also on failure). */
enum qp_status qp_onnx_node_add_int(struct qp_onnx_node *n, const char *name,
                                    int64_t v, struct qp_error *err);
enum qp_status qp_onnx_node_add_float(struct qp_onnx_node *n, const char *name,
                                      float v, struct qp_error *err);
enum qp_status qp_onnx_node_add_string(struct qp_onnx_node *n, const char *name,
                                       const char *v, size_t len,
                                       struct qp_error *err);
enum qp_status qp_onnx_node_add_ints(struct qp_onnx_node *n, const char *name,
                                     const int64_t *v, size_t count,
                                     struct qp_error *err);
enum qp_status qp_onnx_node_add_floats(struct qp_onnx_node *n, const char *name,
                                       const float *v, size_t count,
                                       struct qp_error *err);
enum qp_status qp_onnx_node_add_strings(struct qp_onnx_node *n, const char *name,
                                        const char *const *v, size_t count,
                                        struct qp_error *err);
enum qp_status qp_onnx_node_add_tensor(struct qp_onnx_node *n, const char *name,
                                       struct qp_tensor *t, struct qp_error *err);

/* Appends initializer t (named; the graph takes it, also on failure). */
enum qp_status qp_onnx_graph_add_initializer(struct qp_onnx_graph *g,
                                             struct qp_tensor *t,
                                             struct qp_error *err);

/* Which list of g a value goes to. */
enum qp_onnx_value_list {
    QP_ONNX_LIST_INPUT = 0,
    QP_ONNX_LIST_OUTPUT,
    QP_ONNX_LIST_VALUE_INFO,
    QP_ONNX_LIST_COUNT
};

/* Appends a tensor value name of ONNX element type elem_type (0: not
 * given) to list: ndim -1 for an unknown shape, else dims[i].value (-1
 * unknown) and dims[i].param (NULL, or a symbolic name, copied). */
enum qp_status qp_onnx_graph_add_value(struct qp_onnx_graph *g,
                                       enum qp_onnx_value_list list,
                                       const char *name, int32_t elem_type,
                                       int ndim, const struct qp_onnx_dim *dims,
                                       struct qp_error *err);

/* Copies value type src into dst (dst is overwritten, not released). */
enum qp_status qp_onnx_valtype_copy(const struct qp_onnx_valtype *src,
                                    struct qp_onnx_valtype *dst,
                                    struct qp_error *err);

#endif
