/* tests/fuzz/fuzz-recipe.c: recipe JSON on arbitrary bytes; an accepted
 * recipe is looked up with a few names. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quant/recipe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    struct qp_recipe *r;
    struct qp_error err;
    if (qp_recipe_parse(s, "fuzz", &r, &err) == QP_OK) {
        static const char *const names[] = {"lm_head.weight", "a/b/c", "", "x.",
                                            "model.layers.0.mlp.down_proj.weight"};
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            const struct qp_recipe_rule *m = qp_recipe_lookup(r, names[i]);
            /* a rule that quantizes weights has a real width; "fp32+a8t"
             * and "a16t" leave the weights alone */
            if (m && m->w_said && !m->w_float &&
                (m->scheme.w.f.bits < 2 || m->scheme.w.f.bits > 16))
                abort();
        }
        qp_recipe_free(r);
    }
    free(s);
    return 0;
}
