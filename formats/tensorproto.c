/* formats/tensorproto.c: placeholder until the backend is written. */
#include "formats/dump-stub.h"

QP_DUMP_STUB_READER(qp_dump_ops_pb, "pb");
QP_DUMP_STUB_WRITER(qp_dump_writer_ops_pb, "pb");
QP_DUMP_STUB_READER(qp_dump_ops_pb_dir, "pb-dir");
QP_DUMP_STUB_WRITER(qp_dump_writer_ops_pb_dir, "pb-dir");
