/* tests/fuzz/fuzz-align-map.c: name-map files (JSON + POSIX regex rules)
 * on arbitrary bytes, then an alignment through the parsed map. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/align.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    struct qp_error err;
    struct qp_align_map *m = NULL;
    if (qp_align_map_parse(text, "fuzz", &m, &err) == QP_OK) {
        static const char *const ref[] = {"input", "block1.conv2", "pool",
                                          "Layer_1", "a.b", "logits"};
        static const char *const test[] = {"input:0", "b1_c2", "global_pool",
                                           "layer/1", "A_B_output_0", "x"};
        struct qp_align a;
        qp_align_names(ref, 6, test, 6, m, &a, &err);
        qp_align_release(&a);
        qp_align_map_free(m);
    }
    /* the same bytes as a tensor name */
    free(qp_align_normalise(text));
    free(text);
    return 0;
}
