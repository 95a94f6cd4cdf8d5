/* kernels/startup.c: the start of every qprobe program
 * (kernels/startup.h). */
#include "kernels/startup.h"

#include "core/parallel.h"
#include "kernels/blas.h"
#include "kernels/dispatch.h"

enum qp_status qp_kern_startup(char **argv, struct qp_error *err)
{
    qp_blas_startup(argv);
    enum qp_status st = qp_parallel_check_env(err);
    return st ? st : qp_kern_init(err);
}
