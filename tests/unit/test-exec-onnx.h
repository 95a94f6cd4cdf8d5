/* tests/unit/test-exec-onnx.h: ONNX model pieces for the runtime's tests,
 * over tests/unit/pbtest.h (field numbers from onnx.proto). */
#ifndef QP_TESTS_EXEC_ONNX_H
#define QP_TESTS_EXEC_ONNX_H

#include "tests/unit/pbtest.h"

/* A tensor ValueInfoProto (GraphProto field `field`: 11 input, 12
 * output) of element type elem with fixed dims. */
static inline void pb_value(struct pbe *e, unsigned field, const char *name,
                            int elem, const int64_t *dims, int nd)
{
    struct pbe vi = {0}, tp = {0}, tt = {0}, sh = {0};
    pbe_str(&vi, 1, name);
    pbe_int(&tt, 1, elem);
    for (int i = 0; i < nd; i++) {
        struct pbe d = {0};
        pbe_int(&d, 1, dims[i]);
        pbe_msg(&sh, 1, &d);
    }
    pbe_msg(&tt, 2, &sh);
    pbe_msg(&tp, 1, &tt);
    pbe_msg(&vi, 2, &tp);
    pbe_msg(e, field, &vi);
}

#endif
