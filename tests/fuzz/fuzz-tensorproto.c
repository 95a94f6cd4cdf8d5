/* tests/fuzz/fuzz-tensorproto.c: the TensorProto (.pb) parser on arbitrary
 * bytes, header-only and full, every element read back. Seeds in
 * tests/fuzz/seeds/tensorproto/ are small TensorProtos of several types and
 * data fields, encoded by hand (tests/unit/pbtest.h). */
#include <stdint.h>
#include <stdlib.h>

#include "formats/tensorproto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct qp_error err;
    struct qp_tensor *t = NULL;
    for (int header_only = 1; header_only >= 0; header_only--) {
        if (qp_fmt_pb_parse("fuzz", data, size, NULL, NULL, "x",
                            header_only, &t, &err) == QP_OK && t->data) {
            size_t n = qp_tensor_numel(t);
            float buf[64];
            for (size_t i = 0; i < n; i += 64)
                qp_tensor_read_f32(t, i, n - i < 64 ? n - i : 64, buf);
        }
        qp_tensor_free(t);
        t = NULL;
    }
    return 0;
}
