#include "kernels/dispatch.h"

const char *qp_kern_describe(void)
{
    return "kernels: ref";
}
