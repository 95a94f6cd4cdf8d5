/* tests/unit/kern-test.h: what the integer kernel tests share: a seeded
 * generator, the instruction sets to compare, and golden case loading. */
#ifndef QP_TESTS_KERN_TEST_H
#define QP_TESTS_KERN_TEST_H

#include <stdint.h>
#include <stdlib.h>

#include "kernels/dispatch.h"

/* xorshift64*: reproducible without libc's rand */
static inline uint64_t kt_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1Dull;
}

/* uniform in [lo, hi] */
static inline int32_t kt_range(uint64_t *s, int32_t lo, int32_t hi)
{
    return lo + (int32_t)(kt_next(s) % (uint64_t)((int64_t)hi - lo + 1));
}

/* Bytes of an int8/uint8 array: uniform, or (extreme) only the range ends
 * and their neighbours. */
static inline void kt_fill8(uint64_t *s, uint8_t *p, size_t n, int extreme)
{
    static const uint8_t ends[] = {0x80, 0x81, 0x7f, 0x7e, 0x00, 0xff};
    for (size_t i = 0; i < n; i++)
        p[i] = extreme ? ends[kt_next(s) % 6] : (uint8_t)kt_next(s);
}

/* Every instruction set this machine has a variant for, reference first. */
static inline size_t kt_isas(enum qp_kern_isa *out)
{
    size_t n = 0;
    for (int i = QP_KERN_REF; i < QP_KERN_ISA_COUNT; i++)
        if (qp_kern_isa_available((enum qp_kern_isa)i))
            out[n++] = (enum qp_kern_isa)i;
    return n;
}

#endif
