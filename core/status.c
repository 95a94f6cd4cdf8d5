#include "core/status.h"

#include <stdio.h>
#include <string.h>

static const char *const status_names[] = {
    [QP_OK] = "ok",
    [QP_E_IO] = "i/o error",
    [QP_E_FORMAT] = "format error",
    [QP_E_NOMEM] = "out of memory",
    [QP_E_INVAL] = "invalid argument",
    [QP_E_OVERFLOW] = "size overflow",
    [QP_E_UNSUPPORTED] = "unsupported",
    [QP_E_NOTFOUND] = "not found",
    [QP_E_SHAPE] = "shape mismatch",
};
_Static_assert(sizeof status_names / sizeof status_names[0] == QP_E_COUNT,
               "status_names must cover every status");

enum qp_status qp_fail(struct qp_error *err, enum qp_status status,
                       const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->status = status;
    }
    return status;
}

enum qp_status qp_error_prefix(struct qp_error *err, const char *fmt, ...)
{
    if (!err)
        return QP_OK;
    char prefix[QP_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    if (n < 0)
        return err->status;
    size_t plen = strlen(prefix);
    if (plen >= sizeof err->msg)
        plen = sizeof err->msg - 1;
    size_t mlen = strlen(err->msg);
    if (plen + mlen >= sizeof err->msg)
        mlen = sizeof err->msg - 1 - plen;
    memmove(err->msg + plen, err->msg, mlen);
    memcpy(err->msg, prefix, plen);
    err->msg[plen + mlen] = '\0';
    return err->status;
}

enum qp_status qp_error_in_file(struct qp_error *err, const char *path)
{
    if (!err)
        return QP_OK;
    size_t n = strlen(path);
    for (const char *p = err->msg; (p = strchr(p, '\'')); p++)
        if (!strncmp(p + 1, path, n) &&
            (p[n + 1] == '\'' || (p[n + 1] == '/' && n && path[n - 1] != '/')))
            return err->status;
    return qp_error_prefix(err, "'%s': ", path);
}

enum qp_status qp_error_rename(struct qp_error *err, const char *from,
                               const char *to)
{
    if (!err)
        return QP_OK;
    char *at = *from ? strstr(err->msg, from) : NULL;
    if (!at)
        return err->status;
    char rest[QP_ERROR_MSG_MAX];
    snprintf(rest, sizeof rest, "%s", at + strlen(from));
    snprintf(at, sizeof err->msg - (size_t)(at - err->msg), "%s%s", to, rest);
    return err->status;
}

void qp_error_clear(struct qp_error *err)
{
    if (err) {
        err->status = QP_OK;
        err->msg[0] = '\0';
    }
}

const char *qp_status_name(enum qp_status status)
{
    if ((unsigned)status >= QP_E_COUNT)
        return "unknown status";
    return status_names[status];
}
