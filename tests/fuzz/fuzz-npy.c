/* tests/fuzz/fuzz-npy.c: the .npy parser on arbitrary bytes. */
#include <stdint.h>
#include <stdlib.h>

#include "formats/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct qp_error err;
    struct qp_tensor *t = NULL;
    if (qp_fmt_npy_parse("fuzz", data, size, "x", NULL, false, &t, &err) ==
        QP_OK) {
        /* touch every element through the generic reader */
        size_t n = qp_tensor_numel(t);
        float buf[64];
        for (size_t i = 0; i < n; i += 64)
            qp_tensor_read_f32(t, i, n - i < 64 ? n - i : 64, buf);
    }
    qp_tensor_free(t);
    return 0;
}
