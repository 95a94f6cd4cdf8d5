/* tests/unit/gguf-test-util.h: a byte builder for hand-made GGUF files
 * (the reader's malformed-file tests). Header-only: static functions used
 * by the GGUF tests. */
#ifndef QP_TESTS_GGUF_TEST_UTIL_H
#define QP_TESTS_GGUF_TEST_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/pbtest.h"

/* the protobuf tests' growing byte buffer */
#define gb pbe

static inline void gb_bytes(struct gb *b, const void *p, size_t n)
{
    pbe_raw(b, p, n);
}

static inline void gb_u8(struct gb *b, uint8_t v) { gb_bytes(b, &v, 1); }
static inline void gb_u32(struct gb *b, uint32_t v) { gb_bytes(b, &v, 4); }
static inline void gb_u64(struct gb *b, uint64_t v) { gb_bytes(b, &v, 8); }

static inline void gb_str(struct gb *b, const char *s)
{
    gb_u64(b, strlen(s));
    gb_bytes(b, s, strlen(s));
}

/* "GGUF", version, counts. */
static inline void gb_header(struct gb *b, uint32_t version, uint64_t nt,
                             uint64_t nkv)
{
    gb_bytes(b, "GGUF", 4);
    gb_u32(b, version);
    gb_u64(b, nt);
    gb_u64(b, nkv);
}

/* A tensor info with ndim dims from ne. */
static inline void gb_tensor(struct gb *b, const char *name, uint32_t ndim,
                             const uint64_t *ne, uint32_t type, uint64_t off)
{
    gb_str(b, name);
    gb_u32(b, ndim);
    for (uint32_t k = 0; k < ndim; k++)
        gb_u64(b, ne[k]);
    gb_u32(b, type);
    gb_u64(b, off);
}

/* Zeros up to a multiple of a. */
static inline void gb_pad(struct gb *b, size_t a)
{
    while (b->n % a)
        gb_u8(b, 0);
}

#endif
