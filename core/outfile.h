/* core/outfile.h: output files that appear whole or not at all.
 *
 * qp_outfile_open creates "<dir>/.<base>.tmp.XXXXXX" beside the final path;
 * the writer fills it (through fp or tmp_path); qp_outfile_commit flushes,
 * fsyncs and renames it into place; qp_outfile_abort removes it. An
 * interrupted run therefore never leaves a half-written output. */
#ifndef QP_CORE_OUTFILE_H
#define QP_CORE_OUTFILE_H

#include <stdio.h>

#include "core/status.h"

struct qp_outfile {
    char *path;     /* final path, owned */
    char *tmp_path; /* temporary path, owned */
    FILE *fp;       /* open for writing ("wb") on tmp_path */
};

/* Opens a temporary file beside path. *of belongs to the caller until
 * commit or abort. QP_E_IO names the path when the directory is not
 * writable. */
enum qp_status qp_outfile_open(const char *path, struct qp_outfile **of,
                               struct qp_error *err);

/* Closes, fsyncs and renames into place; frees of. On failure the temporary
 * file is removed and of is freed too. */
enum qp_status qp_outfile_commit(struct qp_outfile *of, struct qp_error *err);

/* Removes the temporary file and frees of. NULL is ignored. */
void qp_outfile_abort(struct qp_outfile *of);

/* A temporary directory beside path for outputs that are directories
 * (dump folders, report folders): created as "<dir>/.<base>.tmp.XXXXXX";
 * qp_outdir_commit renames it to path. An existing directory at path is
 * moved aside first and removed once the new one is in place. */
struct qp_outdir {
    char *path;
    char *tmp_path;
};

enum qp_status qp_outdir_open(const char *path, struct qp_outdir **od,
                              struct qp_error *err);
enum qp_status qp_outdir_commit(struct qp_outdir *od, struct qp_error *err);
void qp_outdir_abort(struct qp_outdir *od);

/* Removes a directory tree (used for aborts); ignores errors. */
void qp_rmtree(const char *path);

#endif
