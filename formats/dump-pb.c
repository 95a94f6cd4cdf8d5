/* formats/dump-pb.c: dumps of ONNX TensorProto `.pb` files: a single file
 * (one tensor) or a directory of them, like ONNX's test_data_set_N/.
 *
 * Directory entries are named by their TensorProto names, or by their
 * paths relative to the directory (without ".pb", %XX escapes decoded)
 * when a name is empty; they are listed in the order of ".qprobe-order"
 * when present, then in natural file order (input_2 before input_10).
 * Writers name files after their tensors (escaped, formats/dump.h), record
 * the order tensors were added in ".qprobe-order", write the quantization
 * parameters of integer tensors as NAME.scale / NAME.zero_point companion
 * tensors, and appear whole or not at all. */
#include "formats/dump-files.h"
#include "formats/tensorproto.h"

static enum qp_status pb_dir_open(struct qp_dump *d, struct qp_error *err)
{
    return qp_dump_files_read(d, true, "pb", qp_fmt_pb_read, err);
}

static enum qp_status pb_open(struct qp_dump *d, struct qp_error *err)
{
    return qp_dump_files_read(d, false, "pb", qp_fmt_pb_read, err);
}

const struct qp_dump_ops qp_dump_ops_pb_dir = {
    "pb-dir", pb_dir_open, qp_dump_files_load, qp_dump_files_close,
};

const struct qp_dump_ops qp_dump_ops_pb = {
    "pb", pb_open, qp_dump_files_load, qp_dump_files_close,
};

/* ---- writers ------------------------------------------------------------ */

static enum qp_status pb_dir_w_open(struct qp_dump_writer *w,
                                    struct qp_error *err)
{
    return qp_dump_files_open(w, true, "pb", qp_fmt_pb_write, err);
}

static enum qp_status pb_w_open(struct qp_dump_writer *w, struct qp_error *err)
{
    return qp_dump_files_open(w, false, "pb", qp_fmt_pb_write, err);
}

const struct qp_dump_writer_ops qp_dump_writer_ops_pb_dir = {
    "pb-dir", pb_dir_w_open, qp_dump_files_add, qp_dump_files_commit,
    qp_dump_files_abort,
};

const struct qp_dump_writer_ops qp_dump_writer_ops_pb = {
    "pb", pb_w_open, qp_dump_files_add, qp_dump_files_commit,
    qp_dump_files_abort,
};
