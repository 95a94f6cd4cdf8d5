/* core/hash.h: 64-bit FNV-1a, for the signatures and cache keys that tell
 * whether two configurations (plans, calibrated weights) compute the same
 * thing. Not cryptographic: equal inputs give equal hashes, and unequal
 * ones almost never collide. */
#ifndef QP_CORE_HASH_H
#define QP_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define QP_HASH_INIT 0xcbf29ce484222325ull

/* h extended with the 8 bytes of v, low byte first. */
static inline uint64_t qp_hash_u64(uint64_t h, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        h ^= (v >> (8 * i)) & 0xff;
        h *= 0x100000001b3ull;
    }
    return h;
}

/* h extended with n bytes. */
static inline uint64_t qp_hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

#endif
