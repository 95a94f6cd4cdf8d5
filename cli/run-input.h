/* cli/run-input.h: the input tensors of `qprobe run` from the files the
 * user names. */
#ifndef QP_CLI_RUN_INPUT_H
#define QP_CLI_RUN_INPUT_H

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
enum qp_status qp_run_inputs_load(const struct qp_graph *g,
                                  const char *const *specs, int n,
                                  struct qp_tensor ***feed,
                                  struct qp_error *err);

void qp_run_inputs_free(const struct qp_graph *g, struct qp_tensor **feed);

#endif
