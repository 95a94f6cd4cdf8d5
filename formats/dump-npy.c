/* formats/dump-npy.c: dumps made of .npy files: a single .npy file, or a
 * directory tree of them (formats/dump-files.h does the directory work:
 * names, order, companions, metadata). */
#include "formats/dump-files.h"
#include "formats/npy.h"

static enum qp_status npy_dir_open(struct qp_dump *d, struct qp_error *err)
{
    return qp_dump_files_read(d, true, "npy", qp_fmt_npy_load, err);
}

static enum qp_status npy_open(struct qp_dump *d, struct qp_error *err)
{
    return qp_dump_files_read(d, false, "npy", qp_fmt_npy_load, err);
}

const struct qp_dump_ops qp_dump_ops_npy_dir = {
    "npy-dir", npy_dir_open, qp_dump_files_load, qp_dump_files_close,
};

const struct qp_dump_ops qp_dump_ops_npy = {
    "npy", npy_open, qp_dump_files_load, qp_dump_files_close,
};

static enum qp_status npy_dir_w_open(struct qp_dump_writer *w,
                                     struct qp_error *err)
{
    return qp_dump_files_open(w, true, "npy", qp_fmt_npy_write, err);
}

static enum qp_status npy_w_open(struct qp_dump_writer *w, struct qp_error *err)
{
    return qp_dump_files_open(w, false, "npy", qp_fmt_npy_write, err);
}

const struct qp_dump_writer_ops qp_dump_writer_ops_npy_dir = {
    "npy-dir", npy_dir_w_open, qp_dump_files_add, qp_dump_files_commit,
    qp_dump_files_abort,
};

const struct qp_dump_writer_ops qp_dump_writer_ops_npy = {
    "npy", npy_w_open, qp_dump_files_add, qp_dump_files_commit,
    qp_dump_files_abort,
};
