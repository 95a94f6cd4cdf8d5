/* formats/onnx.c: placeholder until the backend is written. */
#include "formats/dump-stub.h"

QP_DUMP_STUB_READER(qp_dump_ops_onnx, "onnx");
