/* kernels/lut-s8.h: byte lookup tables, y[i] = table[x[i]], the way NPUs
 * run elementwise functions of 8-bit activations (the int mode's
 * activations, x + c, x * c, ...). The reference is the plain loop; the
 * AVX-512 VBMI variant looks up 64 bytes at a time (two 128-entry
 * permutes and a blend on the index's top bit), the AVX2 one 32 at a time
 * (16 vpshufb lookups of 16 entries, kernels/x86/lut-s8-avx2.c; single
 * tables only, the pair tables and sums run the reference there); both
 * give the same bytes (tests/unit/test-lut-s8.c). Chosen once; QP_KERNELS
 * caps it like every kernel family (kernels/dispatch.h). */
#ifndef QP_KERNELS_LUT_S8_H
#define QP_KERNELS_LUT_S8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/dispatch.h"

/* y[i] = table[x[i]] for i < n; y may be x. */
void qp_lut8_apply(const uint8_t table[256], const uint8_t *x, size_t n,
                   uint8_t *y);

/* The reference, and the variant by name ("ref", "avx2" or
 * "avx512-vbmi"; false when this machine lacks it), for tests. */
void qp_lut8_apply_ref(const uint8_t table[256], const uint8_t *x, size_t n,
                       uint8_t *y);
bool qp_lut8_apply_variant(const char *name, const uint8_t table[256],
                           const uint8_t *x, size_t n, uint8_t *y);

/* Pair tables: y[i] = table[a[i] * 256 + b[i]] for i < n (65536
 * entries; the int mode's tables of two quantized inputs, x + y, x * y).
 * The AVX-512 variant gathers 16 entries at a time (each the aligned
 * 32-bit word holding it, never past the table's end, then shifted). y
 * may be a or b. */
void qp_lut16_apply(const uint8_t *table, const uint8_t *a, const uint8_t *b,
                    size_t n, uint8_t *y);
void qp_lut16_apply_ref(const uint8_t *table, const uint8_t *a,
                        const uint8_t *b, size_t n, uint8_t *y);
/* The pair variant by name, as qp_lut8_apply_variant (false also for a
 * variant without pair tables). */
bool qp_lut16_apply_variant(const char *name, const uint8_t *table,
                            const uint8_t *a, const uint8_t *b, size_t n,
                            uint8_t *y);

/* Table sums over planes: s[p] = the sum of table[x[p * area + i]] for i
 * < area, for each p < planes, modulo 2^64 (so exact wherever the true
 * sum fits int64). The int mode's GlobalAveragePool on codes
 * (model/qexec-int.c), whose table holds each code's value as an integer
 * multiple of one power of two. The VBMI variant writes the table as a
 * slope times the code (the byte, or the byte with its top bit flipped:
 * int8 codes) plus a residual, which it takes apart into byte planes
 * (mostly one); it adds the codes and each plane's lookups (64 codes at a
 * time, as qp_lut8_apply) with vpsadbw. */
void qp_lutsum_planes(const int64_t table[256], const uint8_t *x, size_t area,
                      size_t planes, int64_t *s);
void qp_lutsum_planes_ref(const int64_t table[256], const uint8_t *x,
                          size_t area, size_t planes, int64_t *s);
/* The sum variant by name, as qp_lut8_apply_variant (false also for a
 * variant without table sums). */
bool qp_lutsum_planes_variant(const char *name, const int64_t table[256],
                              const uint8_t *x, size_t area, size_t planes,
                              int64_t *s);

/* "ref", "avx2" or "avx512-vbmi": the variant qp_lut8_apply uses. */
const char *qp_lut8_variant(void);

/* A SIMD variant, for the dispatch table (kernels/dispatch.c): it needs
 * the instruction set isa and, when supported is not NULL, what that
 * function checks. */
struct qp_lut8_variant {
    const char *name;
    enum qp_kern_isa isa;
    bool (*supported)(void);
    void (*apply)(const uint8_t *table, const uint8_t *x, size_t n,
                  uint8_t *y);
    void (*apply2)(const uint8_t *table, const uint8_t *a, const uint8_t *b,
                   size_t n, uint8_t *y); /* pair tables */
    void (*sum)(const int64_t *table, const uint8_t *x, size_t area,
                size_t planes, int64_t *s); /* table sums */
};
#if defined(__x86_64__)
extern const struct qp_lut8_variant qp_lut8_vbmi; /* AVX-512 VBMI */
extern const struct qp_lut8_variant qp_lut8_avx2; /* AVX2, single tables */
#endif
/* True when this CPU runs v (QP_KERNELS not consulted). */
bool qp_lut8_variant_runs(const struct qp_lut8_variant *v);

#endif
