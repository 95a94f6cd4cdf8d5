/* core/size.h: overflow-checked size arithmetic.
 * Each returns true on overflow and leaves *out unspecified then. */
#ifndef QP_CORE_SIZE_H
#define QP_CORE_SIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline bool qp_size_mul(size_t a, size_t b, size_t *out)
{
    return __builtin_mul_overflow(a, b, out);
}

static inline bool qp_size_add(size_t a, size_t b, size_t *out)
{
    return __builtin_add_overflow(a, b, out);
}

static inline bool qp_u64_mul(uint64_t a, uint64_t b, uint64_t *out)
{
    return __builtin_mul_overflow(a, b, out);
}

static inline bool qp_u64_add(uint64_t a, uint64_t b, uint64_t *out)
{
    return __builtin_add_overflow(a, b, out);
}

#endif
