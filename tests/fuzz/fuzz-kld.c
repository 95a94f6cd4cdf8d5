/* tests/fuzz/fuzz-kld.c: llama.cpp --kl-divergence-base files on arbitrary
 * bytes; an accepted file has every row compared with a few logit rows. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/kld.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct qp_kld_file f = {0};
    struct qp_error err;
    if (qp_kld_file_check(&f, data, size, "fuzz", &err) != QP_OK)
        return 0;
    if (f.n_vocab > 4096)
        return 0;
    float *logits = malloc((size_t)f.n_vocab * sizeof *logits);
    struct qp_kld_acc a = {0};
    for (int i = 0; logits && i < f.n_vocab; i++)
        logits[i] = (float)(i % 7) - 3.0f;
    for (int c = 0; logits && c < f.n_chunk && c < 8; c++)
        for (int r = 0; r < qp_kld_rows(f.n_ctx) && r < 64; r++) {
            /* the stored token, when it is an id of the vocabulary */
            int tok = f.tokens[(size_t)c * (size_t)f.n_ctx + (size_t)r + 1];
            tok = tok >= 0 && tok < f.n_vocab ? tok : 0;
            if (qp_kld_add(&a, logits, f.n_vocab, qp_kld_file_row(&f, c, r), tok,
                           &err))
                abort();
        }
    struct qp_kld_stats s;
    qp_kld_stats(&a, &s);
    if (s.count != a.count)
        abort();
    qp_kld_acc_release(&a);
    free(logits);
    return 0;
}
