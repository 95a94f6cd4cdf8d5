/* quant/pack.h: storing int32 quantized values into integer tensor data,
 * and reading them back, for every integer storage dtype a scheme uses
 * (I8/U8/I16/U16 and the packed I4/U4/I3/U3/I2/U2).
 *
 * The packed bit order is core/dtype.h's: element k occupies bits
 * [k*b, k*b + b) of a little-endian bit stream, so for 4 bits element 2k is
 * the low nibble of byte k and 2k+1 the high nibble; 3-bit elements
 * straddle bytes (8 elements fill 3 bytes). These functions are the fast
 * equivalent of qp_packed_set / qp_packed_get over runs. */
#ifndef QP_QUANT_PACK_H
#define QP_QUANT_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"

/* Elements per aligned unit: a run starting at a multiple of this element
 * index starts on a byte boundary (8 for packed types, 1 otherwise). */
size_t qp_pack_align(enum qp_dtype dt);

/* Stores q[0..n) as elements [start, start + n) of data (dtype dt). start
 * must be a multiple of qp_pack_align(dt). Values must already lie in dt's
 * range. Bits of data beyond element start + n in the last byte are
 * cleared (the zero padding of core/dtype.h). */
void qp_pack_store(enum qp_dtype dt, const int32_t *q, size_t n, void *data,
                   size_t start);

/* Loads elements [start, start + n) of data into q (sign-extended for
 * signed types). Any start. */
void qp_pack_load(enum qp_dtype dt, const void *data, size_t start, size_t n,
                  int32_t *q);

#endif
