/* tests/fuzz/fuzz-scheme.c: the scheme parser on arbitrary bytes, and the
 * printer's round trip on everything it accepts: format(parse(s)) must
 * parse to the same scheme and print the same text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quant/scheme.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    struct qp_scheme a, b;
    struct qp_error err;
    int pos;
    if (qp_scheme_parse(s, &a, &pos, &err) == QP_OK) {
        char t[QP_SCHEME_MAX + 1], u[QP_SCHEME_MAX + 1];
        qp_scheme_format(&a, t, sizeof t);
        if (qp_scheme_parse(t, &b, NULL, &err) != QP_OK)
            abort();
        qp_scheme_format(&b, u, sizeof u);
        if (strcmp(t, u))
            abort();
    } else if (pos < 0 || (size_t)pos > strlen(s) || !strchr(err.msg, '^')) {
        abort();
    }
    free(s);
    return 0;
}
