/* tests/fuzz/fuzz-csv.c: the CSV reader on arbitrary bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "formats/csv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct qp_error err;
    struct qp_csv *t = NULL;
    if (qp_csv_parse((const char *)data, size, "fuzz", &t, &err) == QP_OK) {
        /* touch every field */
        size_t sum = 0;
        for (size_t r = 0; r < t->nrows; r++)
            for (size_t c = 0; c < t->ncols; c++) {
                double v;
                const char *f = qp_csv_get(t, r, c);
                sum += strlen(f) + qp_csv_to_num(f, &v);
            }
        (void)qp_csv_column(t, "name");
        (void)sum;
    }
    qp_csv_free(t);
    return 0;
}
