/* model/inputs.h: a graph's input tensors from the files a user names
 * (`qprobe run --input`, calibration and evaluation sets). */
#ifndef QP_MODEL_INPUTS_H
#define QP_MODEL_INPUTS_H

#include "core/tensor.h"
#include "model/graph.h"

/* Builds one tensor per graph input of g from specs "[NAME=]FILE": FILE is
 * an .npy or .pb file or any dump (formats/dump.h). Without NAME, a file
 * feeds every graph input it holds a tensor of that name for, or, when
 * the model has one input and the file one tensor, that input. A tensor
 * one rank short of the declared rank gets a leading batch dim; floats
 * convert to the declared float dtype. Several tensors for one input are
 * stacked along axis 0 (a batch); they must agree in the other dims.
 * *feed (g->n_inputs tensors named after the inputs) belongs to the
 * caller: qp_run_inputs_free. Errors name the file. */
enum qp_status qp_inputs_load(const struct qp_graph *g,
                              const char *const *specs, int n,
                              struct qp_tensor ***feed, struct qp_error *err);

void qp_inputs_free(const struct qp_graph *g, struct qp_tensor **feed);

/* The input files of a set: every .npy and .pb file of dir (sorted by
 * name), or path itself when it is a file. *files (n entries, each
 * malloc'd) belongs to the caller (qp_inputs_files_free). QP_E_NOTFOUND
 * when path does not exist ("no such file or directory") or a folder has
 * no input file. */
enum qp_status qp_inputs_files(const char *path, char ***files, size_t *n,
                               struct qp_error *err);
void qp_inputs_files_free(char **files, size_t n);

/* Input sets, one per file of a folder (or the one file). */
struct qp_input_sets {
    struct qp_tensor ***set; /* [n], each g->n_inputs tensors */
    size_t n;
};

/* Loads every input file of path (qp_inputs_files) as one set of g's
 * inputs. out is owned by the caller (qp_input_sets_release), also on
 * failure. Errors name the file. */
enum qp_status qp_input_sets_load(const struct qp_graph *g, const char *path,
                                  struct qp_input_sets *out, struct qp_error *err);
void qp_input_sets_release(const struct qp_graph *g, struct qp_input_sets *s);

#endif
