/* Byte lookup tables (kernels/lut-s8.h): every variant this machine has
 * gives the reference's bytes on every length up to 200 (all tails) and
 * a long random run, with a table whose halves differ (the top bit's
 * blend) and in place; the pair tables the same, their last entries
 * included. */
#include <string.h>

#include "kernels/lut-s8.h"
#include "tests/test.h"
#include "tests/unit/kern-test.h"

QP_TEST(lut8_variants_match_the_reference)
{
    uint8_t table[256], x[5000], want[5000], got[5000];
    uint64_t r = 11;
    for (int i = 0; i < 256; i++)
        table[i] = (uint8_t)(i * 37 + 11) ^ (i >= 128 ? 0xA5 : 0);
    kt_fill8(&r, x, sizeof x, 0);
    const char *names[2] = {"ref", "avx512-vbmi"};
    int ran = 0, bad = 0;
    for (int v = 0; v < 2; v++)
        for (size_t n = 0; n <= 5000; n = n < 200 ? n + 1 : n + 4800) {
            memset(got, 0xEE, sizeof got);
            if (!qp_lut8_apply_variant(names[v], table, x, n, got))
                break;
            qp_lut8_apply_ref(table, x, n, want);
            bad += memcmp(want, got, n) != 0 || (n < 5000 && got[n] != 0xEE);
            ran++;
        }
    CHECK(ran >= 202);
    CHECK_INT(bad, 0);
    /* hand values, in place */
    uint8_t v[4] = {0, 127, 128, 255};
    qp_lut8_apply(table, v, 4, v);
    CHECK_INT(v[0], 11);
    CHECK_INT(v[1], (uint8_t)(127 * 37 + 11));
    CHECK_INT(v[2], (uint8_t)((128 * 37 + 11) ^ 0xA5));
    CHECK_INT(v[3], (uint8_t)((255 * 37 + 11) ^ 0xA5));
    printf("lut8: variant %s\n", qp_lut8_variant());
}

QP_TEST(lut16_variants_match_the_reference)
{
    static uint8_t table[65536], a[3000], b[3000], want[3000], got[3000];
    uint64_t r = 5;
    for (size_t i = 0; i < 65536; i++)
        table[i] = (uint8_t)((i * 2654435761u) >> 13);
    kt_fill8(&r, a, sizeof a, 0);
    kt_fill8(&r, b, sizeof b, 0);
    a[7] = b[7] = 255; /* the table's last entry, at its end */
    a[8] = 255;
    b[8] = 252;
    const char *names[2] = {"ref", "avx512-vbmi"};
    int ran = 0, bad = 0;
    for (int v = 0; v < 2; v++)
        for (size_t n = 0; n <= 3000; n = n < 70 ? n + 1 : n + 2930) {
            memset(got, 0xEE, sizeof got);
            if (!qp_lut16_apply_variant(names[v], table, a, b, n, got))
                break;
            qp_lut16_apply_ref(table, a, b, n, want);
            bad += memcmp(want, got, n) != 0 || (n < 3000 && got[n] != 0xEE);
            ran++;
        }
    CHECK(ran >= 72);
    CHECK_INT(bad, 0);
    /* hand values, in place over b */
    uint8_t x[3] = {0, 1, 255}, y[3] = {0, 2, 255};
    qp_lut16_apply(table, x, y, 3, y);
    CHECK_INT(y[0], table[0]);
    CHECK_INT(y[1], table[258]);
    CHECK_INT(y[2], table[65535]);
}
