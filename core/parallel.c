#include "core/parallel.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

int qp_parallel_threads(void)
{
    const char *e = getenv("QP_THREADS");
    if (e && *e) {
        long v = strtol(e, NULL, 10);
        if (v >= 1 && v <= 1024)
            return (int)v;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n >= 1 ? (int)(n > 1024 ? 1024 : n) : 1;
}

struct job {
    void (*fn)(void *, int, int);
    void *ctx;
    int t, n;
};

static void *job_main(void *arg)
{
    struct job *j = arg;
    j->fn(j->ctx, j->t, j->n);
    return NULL;
}

void qp_parallel_run(void (*fn)(void *ctx, int t, int nthreads), void *ctx,
                     int nthreads)
{
    if (nthreads <= 0)
        nthreads = qp_parallel_threads();
    if (nthreads == 1) {
        fn(ctx, 0, 1);
        return;
    }
    pthread_t *th = calloc((size_t)nthreads, sizeof *th);
    struct job *jobs = calloc((size_t)nthreads, sizeof *jobs);
    char *started = calloc((size_t)nthreads, 1);
    if (!th || !jobs || !started) {
        for (int t = 0; t < nthreads; t++)
            fn(ctx, t, nthreads);
        free(th);
        free(jobs);
        free(started);
        return;
    }
    for (int t = 1; t < nthreads; t++) {
        jobs[t] = (struct job){fn, ctx, t, nthreads};
        started[t] = pthread_create(&th[t], NULL, job_main, &jobs[t]) == 0;
    }
    fn(ctx, 0, nthreads);
    for (int t = 1; t < nthreads; t++) {
        if (started[t])
            pthread_join(th[t], NULL);
        else
            fn(ctx, t, nthreads);
    }
    free(th);
    free(jobs);
    free(started);
}

void qp_parallel_split(size_t n, int t, int nthreads, size_t align,
                       size_t *begin, size_t *end)
{
    size_t blocks = (n + align - 1) / align;
    size_t per = blocks / (size_t)nthreads, extra = blocks % (size_t)nthreads;
    size_t b0 = (size_t)t * per + ((size_t)t < extra ? (size_t)t : extra);
    size_t b1 = b0 + per + ((size_t)t < extra);
    *begin = b0 * align < n ? b0 * align : n;
    *end = b1 * align < n ? b1 * align : n;
}
