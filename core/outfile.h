/* core/outfile.h: output files that appear whole or not at all.
 *
 * qp_outfile_open creates "<dir>/.<base>.tmp.XXXXXX" beside the final path;
 * the writer fills it (through fp or tmp_path); qp_outfile_commit flushes,
 * fsyncs and renames it into place; qp_outfile_abort removes it. An
 * interrupted run therefore never leaves a half-written output under the
 * final name (even after SIGKILL: a rename is all or nothing).
 *
 * Every temporary file and folder is recorded from its creation to its
 * rename or removal. After qp_outfile_cleanup_install, a process ended by
 * SIGINT, SIGTERM, SIGHUP (and the other signals whose default is to end
 * it, listed in outfile.c) or by exit() with outputs still open removes
 * them, so nothing is left beside the output either. */
#ifndef QP_CORE_OUTFILE_H
#define QP_CORE_OUTFILE_H

#include <stdbool.h>
#include <stdio.h>

#include "core/status.h"

struct qp_outfile {
    char *path;     /* final path, owned */
    char *tmp_path; /* temporary path, owned (path itself when direct) */
    FILE *fp;       /* open for writing ("wb") on tmp_path */
    bool direct;    /* path is a device or FIFO, written in place */
    int slot;       /* in the registry of temporaries; -1 none */
};

/* Opens a temporary file beside path. An existing path that is not a
 * regular file or a folder (/dev/null, /dev/full, a FIFO) is opened for
 * writing itself (direct). *of belongs to the caller until commit or
 * abort. QP_E_IO names the path when the directory is not writable or
 * path is a folder. */
enum qp_status qp_outfile_open(const char *path, struct qp_outfile **of,
                               struct qp_error *err);

/* Closes, fsyncs and renames into place; frees of. On failure (of any
 * write so far, of the flush, fsync or close: "'PATH': write failed: No
 * space left on device", naming the final path) the temporary file is
 * removed and of is freed too. */
enum qp_status qp_outfile_commit(struct qp_outfile *of, struct qp_error *err);

/* Removes the temporary file and frees of. NULL is ignored. */
void qp_outfile_abort(struct qp_outfile *of);

/* The path after which the temporaries of output path are named (the
 * folder of an npz, the data of a safetensors file): path itself, or for
 * a device or FIFO, which is written in place, TMPDIR (or /tmp) joined
 * with its last component, so nothing is created in /dev. malloc'd; NULL
 * on no memory. */
char *qp_outfile_temp_home(const char *path);

/* Puts the finished file src (written by a library under a temporary
 * name of its own, inside a qp_outdir) at path: a rename, or for a device
 * or FIFO at path (see qp_outfile_open) a copy of its bytes. */
enum qp_status qp_outfile_place(const char *src, const char *path,
                                struct qp_error *err);

/* A temporary directory beside path for outputs that are directories
 * (dump folders, report folders): created as "<dir>/.<base>.tmp.XXXXXX";
 * qp_outdir_commit renames it to path. An existing directory at path is
 * moved aside first and removed once the new one is in place. */
struct qp_outdir {
    char *path;     /* without trailing '/' */
    char *tmp_path;
    int slot;
};

enum qp_status qp_outdir_open(const char *path, struct qp_outdir **od,
                              struct qp_error *err);
enum qp_status qp_outdir_commit(struct qp_outdir *od, struct qp_error *err);
void qp_outdir_abort(struct qp_outdir *od);

/* Removes a directory tree (used for aborts); ignores errors. */
void qp_rmtree(const char *path);

/* For main(): removes every live temporary when the process is ended by a
 * signal whose default action is to end it (the signal is then raised
 * again, so the exit status still tells which) or by exit(); ignores
 * SIGXFSZ, so a write beyond RLIMIT_FSIZE fails (EFBIG) and is reported
 * like any other. Signals ignored at start (nohup) stay ignored. Once per
 * process; the handlers only unlink, remove folders and re-raise. */
void qp_outfile_cleanup_install(void);

#endif
