/* core/status.h: status codes and error messages.
 *
 * Fallible functions return enum qp_status and take an optional
 * struct qp_error *err last. Library code never prints; it fills err and
 * returns the code, and only cli/ shows the message to the user. */
#ifndef QP_CORE_STATUS_H
#define QP_CORE_STATUS_H

#include <stdarg.h>
#include <stddef.h>

enum qp_status {
    QP_OK = 0,
    QP_E_IO,          /* a file could not be opened, read, written or renamed */
    QP_E_FORMAT,      /* a file's content is malformed */
    QP_E_NOMEM,       /* an allocation failed */
    QP_E_INVAL,       /* an argument or option value is invalid */
    QP_E_OVERFLOW,    /* a size computation overflowed */
    QP_E_UNSUPPORTED, /* valid input that qprobe does not handle */
    QP_E_NOTFOUND,    /* a named item does not exist */
    QP_E_SHAPE,       /* shapes or dtypes do not agree */
    QP_E_COUNT
};

#define QP_ERROR_MSG_MAX 1024

struct qp_error {
    enum qp_status status;
    char msg[QP_ERROR_MSG_MAX];
};

/* Sets err (if non-NULL) to status and the printf-formatted message; returns
 * status so callers can write `return qp_fail(err, QP_E_FORMAT, "...")`. */
enum qp_status qp_fail(struct qp_error *err, enum qp_status status,
                       const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends a printf-formatted prefix to err's message (e.g. the file name)
 * and returns err->status (QP_OK when err is NULL). */
enum qp_status qp_error_prefix(struct qp_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Makes err's message name the file path: prefixes "'path': " unless the
 * message already names it (or a file below it, for a folder) in quotes. For the boundary that knows which
 * file a failure came from (tensor-level messages do not). Returns
 * err->status (QP_OK when err is NULL). */
enum qp_status qp_error_in_file(struct qp_error *err, const char *path);

/* Replaces the first occurrence of from in err's message by to (e.g. a
 * temporary folder's name by the output's). Returns err->status (QP_OK
 * when err is NULL). */
enum qp_status qp_error_rename(struct qp_error *err, const char *from,
                               const char *to);

/* Clears err to QP_OK with an empty message. */
void qp_error_clear(struct qp_error *err);

/* A short lower-case name for a status ("format error", ...). */
const char *qp_status_name(enum qp_status status);

#endif
