/* kernels/x86/gemm-s8-tile.h: the body every x86 GEMM micro-kernel shares
 * (kernels/gemm-s8-ukernel.h), instantiated once per instruction set by a
 * file that defines, before including it:
 *
 *   TILE          the function's name
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
 *                 per int32 lane
 *
 * Each K step loads NV vectors of the B panel, broadcasts 4 bytes of each
 * A row and issues MR * NV VDOTs into accumulators that stay in
 * registers. A file may include it twice (a full tile and a one-row tile
 * for the last rows and for matrix-vector products), redefining TILE and
 * MR in between. */
static void TILE(size_t kp, const void *a, const void *b, const int32_t *init,
                 int32_t *c, size_t ldc)
{
    enum { LANES = sizeof(VEC) / 4 };
    const AELEM *pa = a;
    const char *pb = b;
    VEC acc[MR][NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; j++) {
        VEC v = VLOADU(init + LANES * j);
#pragma GCC unroll 16
        for (int r = 0; r < MR; r++)
            acc[r][j] = v;
    }
    for (size_t g = 0; g < kp; g += KR) {
        VEC bv[NV];
#pragma GCC unroll 8
        for (int j = 0; j < NV; j++)
            bv[j] = VLOADB(pb + VBYTES * j);
#pragma GCC unroll 16
        for (int r = 0; r < MR; r++) {
            int32_t w;
            memcpy(&w, pa + r * kp + g, 4);
            VEC av = VSET1(w);
#pragma GCC unroll 8
            for (int j = 0; j < NV; j++)
                acc[r][j] = VDOT(acc[r][j], av, bv[j]);
        }
        pb += VBYTES * NV;
    }
#pragma GCC unroll 16
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 8
        for (int j = 0; j < NV; j++)
            VSTOREU(c + r * ldc + LANES * j, acc[r][j]);
}
