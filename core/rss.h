/* core/rss.h: the peak resident memory of this process, per piece of work.
 *
 * Linux keeps the high-water mark of the resident set (VmHWM) and lets a
 * process reset it (writing "5" to /proc/self/clear_refs, Linux 4.0+), so
 * that the peak of each sweep row is its own. Where the reset is refused,
 * the peak is the process's since it started (getrusage), which only
 * grows; qp_rss_reset_peak says which. */
#ifndef QP_CORE_RSS_H
#define QP_CORE_RSS_H

#include <stdbool.h>
#include <stddef.h>

/* Resets the high-water mark; false when the kernel refuses (the peak then
 * counts from the process's start). */
bool qp_rss_reset_peak(void);

/* The peak resident set in bytes since the last reset (or the start); 0
 * when it cannot be read. */
size_t qp_rss_peak_bytes(void);

#endif
