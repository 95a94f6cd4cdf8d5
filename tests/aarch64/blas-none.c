/* tests/aarch64/blas-none.c: the cross-compiled kernel test binary (make
 * test-aarch64) has no OpenBLAS (kernels/blas.c is left out), so there is
 * no BLAS core to choose: this stands in for qp_blas_startup, which
 * kernels/startup.c calls. Never part of libqprobe. */
#include "kernels/blas.h"

void qp_blas_startup(char **argv)
{
    (void)argv;
}
