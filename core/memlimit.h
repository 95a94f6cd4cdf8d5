/* core/memlimit.h: the largest single buffer qprobe allocates or processes.
 *
 * A hostile or corrupt file can declare a tensor of terabytes in a few
 * bytes (a shape, a sparse file, a compressed chunk). Every tensor qprobe
 * allocates (core/tensor.h), every buffer of a model run and every scratch
 * area of an operator, and every mapped tensor it is asked to process, is
 * checked here first, so such a file fails at once with the tensor's name
 * and size instead of an allocation that fails, overcommits or runs for
 * hours.
 *
 * The limit is the environment variable QP_MAX_ALLOC when set: a byte count
 * with an optional suffix k, M, G or T (powers of 1024; "512M", "2G",
 * "1048576"); otherwise the machine's physical memory (asked once per
 * process). The variable is read at every check, so a test or a caller
 * can change it. */
#ifndef QP_CORE_MEMLIMIT_H
#define QP_CORE_MEMLIMIT_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

#define QP_MAX_ALLOC_ENV "QP_MAX_ALLOC"

/* The limit in bytes (SIZE_MAX when the machine's memory is unknown). An
 * invalid QP_MAX_ALLOC fails with QP_E_INVAL naming the variable. */
enum qp_status qp_mem_limit(size_t *limit, struct qp_error *err);

/* QP_OK when one buffer of `bytes` bytes is within the limit. Otherwise
 * QP_E_NOMEM: "<what>: needs 4.29 GB (4294967296 bytes), more than the
 * 2.15 GB limit (QP_MAX_ALLOC)" (or "... this machine's memory; set
 * QP_MAX_ALLOC to change it"). `what` names the buffer, e.g.
 * "tensor 'x' f32 [2,3]". */
enum qp_status qp_mem_check(const char *what, size_t bytes,
                            struct qp_error *err);

/* Parses a size as QP_MAX_ALLOC takes it; false when s is not one. */
bool qp_mem_parse_size(const char *s, size_t *out);

#endif
