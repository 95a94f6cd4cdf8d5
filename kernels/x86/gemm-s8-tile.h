/* kernels/x86/gemm-s8-tile.h: what every x86 GEMM micro-kernel shares
 * (kernels/gemm-s8-ukernel.h): a full tile and a one-row tile (for the
 * last rows and for matrix-vector products) from one body, and the
 * descriptor. A variant file defines, before including it:
 *
 *   UKERNEL       the descriptor's symbol; NAME its name, ISA its set
 *   MR            tile rows
 *   NV            vectors per tile row (NR = NV * lanes)
 *   VEC           the int32 vector type
 *   VBYTES        bytes of packed B per vector and K step
 *   KR            K elements per step (one 4-byte broadcast of A)
 *   AELEM         packed A element type (uint8_t or uint16_t)
 *   VLOADU(p)     unaligned int32 load, VLOADB(p) aligned load of packed B
 *   VSTOREU(p, v) unaligned store
 *   VSET1(x)      broadcast of an int32
 *   VDOT(c, a, b) c + the products of a (unsigned) and b (signed), summed
 *                 per int32 lane */
#include <string.h>

#include "kernels/gemm-s8-ukernel.h"

#define TILE tile
#define TILE_MR MR
#include "kernels/x86/gemm-s8-tile-body.h"
#undef TILE
#undef TILE_MR
#define TILE tile1
#define TILE_MR 1
#include "kernels/x86/gemm-s8-tile-body.h"
#undef TILE
#undef TILE_MR

const struct qp_gemm_s8_ukernel UKERNEL = {
    .name = NAME,
    .isa = ISA,
    .mr = MR,
    .nr = NV * (sizeof(VEC) / 4),
    .kr = KR,
    .a_elem = sizeof(AELEM),
    .b_elem = VBYTES / (sizeof(VEC) / 4 * KR), /* lanes x KR elements */
    .tile = tile,
    .tile1 = tile1,
};
