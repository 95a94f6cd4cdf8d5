/* core/memlimit.c: the single-buffer limit (core/memlimit.h). */
#include "core/memlimit.h"

#include <ctype.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

bool qp_mem_parse_size(const char *s, size_t *out)
{
    if (!s || !isdigit((unsigned char)*s))
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return false;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end || v > (SIZE_MAX >> shift))
        return false;
    *out = (size_t)v << shift;
    return true;
}

/* Physical memory in bytes, or SIZE_MAX when unknown, asked once per
 * process: sysconf(_SC_PHYS_PAGES) is a sysinfo() system call, and the
 * model runtime checks every buffer it takes (hundreds per forward). The
 * machine's memory does not change while we run; QP_MAX_ALLOC is still
 * read at every check. */
static size_t physical_bytes(void)
{
    static _Atomic size_t known; /* 0: not asked yet */
    size_t v = atomic_load_explicit(&known, memory_order_relaxed);
    if (v)
        return v;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0)
        v = SIZE_MAX;
    else
        v = (size_t)pages > SIZE_MAX / (size_t)page ? SIZE_MAX
                                                    : (size_t)pages * (size_t)page;
    atomic_store_explicit(&known, v, memory_order_relaxed);
    return v;
}

enum qp_status qp_mem_limit(size_t *limit, struct qp_error *err)
{
    const char *e = getenv(QP_MAX_ALLOC_ENV);
    if (e && *e) {
        if (!qp_mem_parse_size(e, limit))
            return qp_fail(err, QP_E_INVAL, "%s='%s' is not a size (bytes, or "
                           "a number with k, M, G or T)", QP_MAX_ALLOC_ENV, e);
        return QP_OK;
    }
    *limit = physical_bytes();
    return QP_OK;
}

enum qp_status qp_mem_check(const char *what, size_t bytes,
                            struct qp_error *err)
{
    size_t limit;
    enum qp_status st = qp_mem_limit(&limit, err);
    if (st || bytes <= limit)
        return st;
    const char *e = getenv(QP_MAX_ALLOC_ENV);
    if (e && *e)
        return qp_fail(err, QP_E_NOMEM, "%s needs %.3g GB (%zu bytes), more "
                       "than the %.3g GB limit of %s", what, (double)bytes / 1e9,
                       bytes, (double)limit / 1e9, QP_MAX_ALLOC_ENV);
    return qp_fail(err, QP_E_NOMEM, "%s needs %.3g GB (%zu bytes), more than "
                   "this machine's %.3g GB of memory (%s sets another limit)",
                   what, (double)bytes / 1e9, bytes, (double)limit / 1e9,
                   QP_MAX_ALLOC_ENV);
}
