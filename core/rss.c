/* core/rss.c: peak resident memory from /proc (core/rss.h). */
#include "core/rss.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

bool qp_rss_reset_peak(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f)
        return false;
    bool ok = fputs("5", f) >= 0;
    return (fclose(f) == 0) && ok;
}

size_t qp_rss_peak_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    size_t kb = 0;
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f))
        found = sscanf(line, "VmHWM: %zu kB", &kb) == 1;
    if (f)
        fclose(f);
    if (found)
        return kb * 1024;
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? (size_t)ru.ru_maxrss * 1024 : 0;
}
