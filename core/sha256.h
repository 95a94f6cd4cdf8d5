/* core/sha256.h: SHA-256 (FIPS 180-4), for content hashes that name what
 * a result was computed from (sweep rows: the recipe, the model, the
 * calibration and evaluation data, the qprobe version).
 *
 *   struct qp_sha256 h; qp_sha256_init(&h);
 *   qp_sha256_update(&h, data, n); ...; qp_sha256_final(&h, digest);
 *
 * Streaming: any split of the message into updates gives the same digest. */
#ifndef QP_CORE_SHA256_H
#define QP_CORE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

#define QP_SHA256_BYTES 32
#define QP_SHA256_HEX (2 * QP_SHA256_BYTES + 1) /* with the NUL */

struct qp_sha256 {
    uint32_t h[8];
    uint64_t len;       /* message bytes so far */
    unsigned char buf[64];
    size_t fill;        /* bytes in buf */
};

void qp_sha256_init(struct qp_sha256 *s);
void qp_sha256_update(struct qp_sha256 *s, const void *data, size_t n);
/* Writes the 32-byte digest; s must be initialised again before reuse. */
void qp_sha256_final(struct qp_sha256 *s, unsigned char out[QP_SHA256_BYTES]);

/* A string and its terminating NUL, so that consecutive strings cannot run
 * into each other ("ab","c" and "a","bc" hash differently). */
void qp_sha256_str(struct qp_sha256 *s, const char *str);

/* A 64-bit value as 8 little-endian bytes. */
void qp_sha256_u64(struct qp_sha256 *s, uint64_t v);

/* Lower-case hex of a digest into hex[QP_SHA256_HEX]. */
void qp_sha256_hex(const unsigned char d[QP_SHA256_BYTES], char *hex);

/* Adds the bytes of the file at path (read in blocks). QP_E_IO names the
 * file when it cannot be read. */
enum qp_status qp_sha256_file(struct qp_sha256 *s, const char *path,
                              struct qp_error *err);

#endif
