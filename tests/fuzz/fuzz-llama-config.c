/* tests/fuzz/fuzz-llama-config.c: Hugging Face config.json on arbitrary
 * bytes; an accepted config gives positive sizes and finite rotary
 * frequencies. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/llama-config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    struct qp_llama_config c;
    struct qp_error err;
    if (qp_llama_config_parse(s, "fuzz", &c, &err) == QP_OK) {
        if (c.hidden < 1 || c.n_heads < 1 || c.n_kv_heads < 1 || c.head_dim < 2 ||
            c.head_dim % 2 || c.n_heads % c.n_kv_heads || c.vocab < 1)
            abort();
        if (c.head_dim <= 4096) {
            float f[2048];
            qp_llama_inv_freq(&c, f);
            for (int64_t i = 0; i < c.head_dim / 2; i++)
                if (isnan(f[i]))
                    abort();
        }
    }
    free(s);
    return 0;
}
