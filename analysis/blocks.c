#include "analysis/blocks.h"

#include "core/parallel.h"

struct walk {
    const struct qp_tensor *const *ts;
    int nt;
    size_t numel;
    qp_block_fn fn;
    void *ctx;
};

static void walk_share(void *arg, int t, int nthreads)
{
    const struct walk *w = arg;
    size_t begin, end;
    qp_parallel_split(w->numel, t, nthreads, 64, &begin, &end);
    if (begin >= end)
        return;
    float buf[2][QP_BLOCK_ELEMS];
    bool direct = true;
    for (int k = 0; k < w->nt; k++)
        direct = direct && w->ts[k]->dtype == QP_DTYPE_F32;
    if (direct) {
        const float *x[2];
        for (int k = 0; k < w->nt; k++)
            x[k] = (const float *)w->ts[k]->data + begin;
        w->fn(w->ctx, t, x, begin, end - begin);
        return;
    }
    for (size_t s = begin; s < end; s += QP_BLOCK_ELEMS) {
        size_t n = end - s < QP_BLOCK_ELEMS ? end - s : QP_BLOCK_ELEMS;
        const float *x[2];
        for (int k = 0; k < w->nt; k++) {
            const struct qp_tensor *tk = w->ts[k];
            if (tk->dtype == QP_DTYPE_F32) {
                x[k] = (const float *)tk->data + s;
            } else {
                qp_tensor_read_f32(tk, s, n, buf[k]);
                x[k] = buf[k];
            }
        }
        w->fn(w->ctx, t, x, s, n);
    }
}

int qp_blocks_threads(size_t numel)
{
    if (numel < QP_BLOCK_PARALLEL_MIN)
        return 1;
    int n = qp_parallel_threads();
    size_t most = numel / (QP_BLOCK_PARALLEL_MIN / 4); /* >= 64K per thread */
    return (size_t)n > most ? (int)most : n;
}

void qp_blocks_run(const struct qp_tensor *const *ts, int nt, size_t numel,
                   int nthreads, qp_block_fn fn, void *ctx)
{
    struct walk w = {ts, nt, numel, fn, ctx};
    qp_parallel_run(walk_share, &w, nthreads < 1 ? 1 : nthreads);
}
