/* kernels/ref/conv-geom.h: the 3-D form of struct qp_conv_nd shared by
 * the float conv and pooling kernels (internal to kernels/). */
#ifndef QP_KERNELS_REF_CONV_GEOM_H
#define QP_KERNELS_REF_CONV_GEOM_H

#include "kernels/conv-f32.h"

struct qp_conv3 {
    int64_t in[3], out[3], k[3], s[3], d[3], p[3], pe[3];
    size_t sin, sout, kvol; /* input / output positions, kernel volume */
};

/* Leading spatial axes of extent 1 for nsp < 3. */
void qp_conv3_from_geom(const struct qp_conv_nd *g, struct qp_conv3 *c);

/* [*lo, *hi): the i in [0, n) with 0 <= i*s + off < len (s >= 1). */
void qp_conv3_range(int64_t n, int64_t s, int64_t off, int64_t len,
                    int64_t *lo, int64_t *hi);

#endif
