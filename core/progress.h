/* core/progress.h: progress reporting from long work.
 *
 * Library code calls qp_progress_report; only cli/ decides whether and how
 * to show it (stderr, when it is a terminal, unless --quiet). */
#ifndef QP_CORE_PROGRESS_H
#define QP_CORE_PROGRESS_H

#include <stdint.h>

struct qp_progress {
    void (*fn)(void *ctx, const char *label, uint64_t done, uint64_t total);
    void *ctx;
};

/* Reports done of total units of work under label; p may be NULL. */
static inline void qp_progress_report(const struct qp_progress *p,
                                      const char *label, uint64_t done,
                                      uint64_t total)
{
    if (p && p->fn)
        p->fn(p->ctx, label, done, total);
}

#endif
