/* kernels/x86/gemm-s8-tile-body.h: one micro-kernel function, included
 * by kernels/x86/gemm-s8-tile.h once per tile height with TILE (the
 * function's name) and TILE_MR (its rows) defined. Each K step loads NV
 * vectors of the B panel, broadcasts 4 bytes of each A row and issues
 * TILE_MR * NV VDOTs into accumulators that stay in registers. */
static void TILE(size_t kp, const void *a, const void *b, const int32_t *init,
                 int32_t *c, size_t ldc)
{
    enum { LANES = sizeof(VEC) / 4 };
    const AELEM *pa = a;
    const char *pb = b;
    VEC acc[TILE_MR][NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; j++) {
        VEC v = VLOADU(init + LANES * j);
#pragma GCC unroll 16
        for (int r = 0; r < TILE_MR; r++)
            acc[r][j] = v;
    }
    for (size_t g = 0; g < kp; g += KR) {
        VEC bv[NV];
#pragma GCC unroll 8
        for (int j = 0; j < NV; j++)
            bv[j] = VLOADB(pb + VBYTES * j);
#pragma GCC unroll 16
        for (int r = 0; r < TILE_MR; r++) {
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
    for (int r = 0; r < TILE_MR; r++)
#pragma GCC unroll 8
        for (int j = 0; j < NV; j++)
            VSTOREU(c + r * ldc + LANES * j, acc[r][j]);
}
