/* kernels/ref/lut-s8.c: byte lookup tables, the reference
 * (kernels/lut-s8.h). */
#include "kernels/lut-s8.h"

void qp_lut8_apply_ref(const uint8_t table[256], const uint8_t *x, size_t n,
                       uint8_t *y)
{
    for (size_t i = 0; i < n; i++)
        y[i] = table[x[i]];
}

void qp_lut16_apply_ref(const uint8_t *table, const uint8_t *a,
                        const uint8_t *b, size_t n, uint8_t *y)
{
    for (size_t i = 0; i < n; i++)
        y[i] = table[(size_t)a[i] << 8 | b[i]];
}

void qp_lutsum_planes_ref(const int64_t table[256], const uint8_t *x,
                          size_t area, size_t planes, int64_t *s)
{
    for (size_t p = 0; p < planes; p++, x += area) {
        uint64_t t = 0;
        for (size_t i = 0; i < area; i++)
            t += (uint64_t)table[x[i]];
        s[p] = (int64_t)t;
    }
}
