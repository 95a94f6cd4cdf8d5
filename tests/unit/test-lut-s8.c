/* Byte lookup tables (kernels/lut-s8.h): every variant this machine has
 * gives the reference's bytes on every length up to 200 (all tails) and
 * a long random run holding every index, with a table whose halves differ
 * (the top bit's blend) and random tables, apart and in place, and the
 * variant the dispatch chose is among them; the pair tables the same,
 * their last entries included. */
#include <string.h>

#include "kernels/lut-s8.h"
#include "tests/test.h"
#include "tests/unit/kern-test.h"

QP_TEST(lut8_variants_match_the_reference)
{
    static uint8_t table[256], x[5000], want[5000], got[5000];
    uint64_t r = 11;
    kt_fill8(&r, x, sizeof x, 0);
    for (int i = 0; i < 256; i++) /* every index, in order, first */
        x[i] = (uint8_t)i;
    const char *names[3] = {"ref", "avx2", "avx512-vbmi"};
    int ran = 0, bad = 0;
    bool chosen_ran = !strcmp(qp_lut8_variant(), "ref");
    /* a table whose halves differ, then random ones (every row and
     * every nibble of the AVX2 variant's differences matters) */
    for (int t = 0; t < 4; t++) {
        for (int i = 0; i < 256; i++)
            table[i] = t ? (uint8_t)kt_next(&r)
                         : (uint8_t)(i * 37 + 11) ^ (i >= 128 ? 0xA5 : 0);
        for (int v = 0; v < 3; v++)
            for (size_t n = 0; n <= 5000; n = n < 200 ? n + 1 : n + 4800) {
                memset(got, 0xEE, sizeof got);
                if (!qp_lut8_apply_variant(names[v], table, x, n, got))
                    break;
                qp_lut8_apply_ref(table, x, n, want);
                bad += memcmp(want, got, n) != 0 || (n < 5000 && got[n] != 0xEE);
                memcpy(got, x, n); /* in place */
                qp_lut8_apply_variant(names[v], table, got, n, got);
                bad += memcmp(want, got, n) != 0;
                ran++;
                chosen_ran |= !strcmp(names[v], qp_lut8_variant());
            }
    }
    CHECK(ran >= 4 * 202);
    CHECK(chosen_ran);
    CHECK_INT(bad, 0);
    for (int i = 0; i < 256; i++)
        table[i] = (uint8_t)(i * 37 + 11) ^ (i >= 128 ? 0xA5 : 0);
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
    const char *names[3] = {"ref", "avx2", "avx512-vbmi"};
    int ran = 0, bad = 0;
    for (int v = 0; v < 3; v++)
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

/* Table sums: tables whose ranges need 1, 3, 5 and 8 bytes (negative
 * values, the whole int64 range wrapping) and the int mode's kind, values
 * of uint8 and int8 codes rounded to float (linear in the code but for a
 * byte of rounding: the VBMI variant's slope with and without the top
 * bit flipped), on planes of every length past the 64-byte steps,
 * against the reference; then sums by hand. */
QP_TEST(lutsum_variants_match_the_reference)
{
    static uint8_t x[3 * 1000];
    static int64_t table[256], want[3], got[4];
    uint64_t r = 17;
    kt_fill8(&r, x, sizeof x, 0);
    const int64_t spans[6] = {200, 1 << 20, INT64_C(1) << 36, 0, -1, -2};
    const char *names[3] = {"ref", "avx2", "avx512-vbmi"};
    int ran = 0, bad = 0;
    for (int t = 0; t < 6; t++) {
        for (int k = 0; k < 256; k++)
            table[k] =
                spans[t] == -1 ? (int64_t)(float)((k - 77) * 12345679.0)
                : spans[t] == -2 ? (int64_t)(float)(((int8_t)k + 3) * -9876543.0)
                : spans[t] ? (int64_t)(kt_next(&r) % (uint64_t)spans[t]) - spans[t] / 3
                           : (int64_t)kt_next(&r);
        for (int v = 0; v < 3; v++)
            for (size_t area = 0; area <= 1000; area = area < 200 ? area + 1 : area + 800) {
                got[3] = 0x5EED;
                if (!qp_lutsum_planes_variant(names[v], table, x, area, 3, got))
                    break;
                qp_lutsum_planes_ref(table, x, area, 3, want);
                bad += memcmp(want, got, sizeof want) != 0 || got[3] != 0x5EED;
                ran++;
            }
    }
    CHECK(ran >= 6 * 202);
    CHECK_INT(bad, 0);
    /* by hand: table[k] = k * 10^9 - 5000, one plane of codes 0, 1, 255
     * and one of 128 x 128 */
    for (int k = 0; k < 256; k++)
        table[k] = (int64_t)k * 1000000000 - 5000;
    uint8_t y[6] = {0, 1, 255, 128, 128, 128};
    qp_lutsum_planes(table, y, 3, 2, got);
    CHECK(got[0] == INT64_C(256000000000) - 15000);
    CHECK(got[1] == INT64_C(384000000000) - 15000);
}
