/* kernels/startup.h: what every qprobe program (the CLI, the test runner,
 * the benchmarks, the demo generator) does first in main(). */
#ifndef QP_KERNELS_STARTUP_H
#define QP_KERNELS_STARTUP_H

#include "core/status.h"

/* Before any thread is started or output written, with main's argv:
 * makes OpenBLAS run the kernels this CPU supports (qp_blas_startup,
 * kernels/blas.h; it may re-execute the program), then checks QP_THREADS
 * (core/parallel.h) and QP_KERNELS and fills the kernel dispatch table
 * (kernels/dispatch.h). QP_E_INVAL with a message naming the variable
 * when one of them is malformed: the program should stop with it. */
enum qp_status qp_kern_startup(char **argv, struct qp_error *err);

#endif
