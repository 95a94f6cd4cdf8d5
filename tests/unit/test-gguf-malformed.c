/* tests/unit/test-gguf-malformed.c: every malformed GGUF the reader
 * refuses, each with a message naming the file and what is wrong. */
#include <stdlib.h>
#include <string.h>

#include "formats/gguf.h"
#include "tests/test.h"
#include "tests/unit/gguf-test-util.h"

/* Writes b to a file and checks qp_gguf_load refuses it with status code
 * and a message holding the path and needle. */
static void refused(struct qp_test_ctx *ctx, int line, struct gb *b,
                    enum qp_status code, const char *needle)
{
    char *path = qp_test_path(ctx, "bad.gguf");
    struct qp_gguf *g = NULL;
    struct qp_error err = {0};
    enum qp_status st = QP_OK;
    if (!qp_test_write_file(path, b->p, b->n))
        qp_test_failf(ctx, __FILE__, line, "cannot write %s", path);
    else
        st = qp_gguf_load(path, &g, &err);
    char want[600];
    snprintf(want, sizeof want, "'%s': ", path);
    if (st != code || strncmp(err.msg, want, strlen(want)) ||
        !strstr(err.msg, needle))
        qp_test_failf(ctx, __FILE__, line, "status %d, message \"%s\"; expected "
                      "%d and \"%s\"", (int)st, err.msg, (int)code, needle);
    if (g) {
        qp_test_failf(ctx, __FILE__, line, "a result was returned");
        qp_gguf_free(g);
    }
    free(b->p);
    memset(b, 0, sizeof *b);
    free(path);
}

#define REFUSED(code, needle) refused(ctx, __LINE__, &b, code, needle)
#define BAD(needle) REFUSED(QP_E_FORMAT, needle)

/* A valid file: one KV, one f32 tensor of ne {4, 2} at offset 0. */
static void good(struct gb *b, uint32_t type, const uint64_t *ne, uint64_t off)
{
    gb_header(b, 3, 1, 1);
    gb_str(b, "general.architecture");
    gb_u32(b, QP_GGUF_STRING);
    gb_str(b, "llama");
    gb_tensor(b, "w", 2, ne, type, off);
    gb_pad(b, 32);
    for (int i = 0; i < 8 * 4 * 32; i++)
        gb_u8(b, (uint8_t)i);
}

QP_TEST(gguf_good_base_file_reads)
{
    struct gb b = {0};
    uint64_t ne[2] = {4, 2};
    good(&b, 0, ne, 0);
    struct qp_gguf *g;
    struct qp_error err;
    REQUIRE_OK(qp_gguf_parse(b.p, b.n, "mem", &g, &err), &err);
    CHECK(g->n_tensors == 1 && g->tensors[0].nbytes == 32 && g->version == 3);
    qp_gguf_free(g);
    /* version 2 reads too */
    b.p[4] = 2;
    REQUIRE_OK(qp_gguf_parse(b.p, b.n, "mem", &g, &err), &err);
    CHECK_INT(g->version, 2);
    qp_gguf_free(g);
    free(b.p);
}

QP_TEST(gguf_refuses_bad_headers)
{
    struct gb b = {0};
    gb_bytes(&b, "GGUF", 4);
    gb_u32(&b, 3);
    BAD("not a GGUF file (8 bytes, shorter than the 24-byte header)");
    gb_header(&b, 3, 0, 0);
    b.p[0] = 'g';
    BAD("not a GGUF file (it starts with 67 47 55 46, not 'GGUF')");
    gb_header(&b, 1, 0, 0);
    REFUSED(QP_E_UNSUPPORTED, "GGUF version 1 is not supported (qprobe reads "
            "versions 2 and 3)");
    gb_bytes(&b, "GGUF\0\0\0\3", 8);
    gb_u64(&b, 0);
    gb_u64(&b, 0);
    REFUSED(QP_E_UNSUPPORTED, "a big-endian GGUF file");
    gb_header(&b, 3, 0, 1u << 30);
    BAD("the header claims 1073741824 keys, more than the file can hold");
    gb_header(&b, 3, 1ull << 40, 0);
    BAD("the header claims 1099511627776 tensors");
}

QP_TEST(gguf_refuses_bad_keys_and_values)
{
    struct gb b = {0};
    gb_header(&b, 3, 0, 1);
    gb_u64(&b, 70000);
    for (int i = 0; i < 8; i++)
        gb_u64(&b, 0);
    BAD("key 0: name of 70000 bytes (at most 65535)");
    gb_header(&b, 3, 0, 1);
    gb_u64(&b, 60);
    gb_bytes(&b, "general.name", 12);
    BAD("key 0: name of 60 bytes runs past the end of the file (12 bytes left)");
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "");
    gb_u32(&b, QP_GGUF_U8);
    gb_u8(&b, 1);
    gb_u8(&b, 0);
    BAD("key 0 has an empty name");
    gb_header(&b, 3, 0, 1);
    gb_u64(&b, 3);
    gb_bytes(&b, "a\0b", 3);
    gb_u32(&b, QP_GGUF_U8);
    gb_u8(&b, 1);
    BAD("key 0 holds a NUL byte");
    gb_header(&b, 3, 0, 2);
    gb_str(&b, "a.b");
    gb_u32(&b, QP_GGUF_U8);
    gb_u8(&b, 1);
    gb_str(&b, "a.b");
    gb_u32(&b, QP_GGUF_U8);
    gb_u8(&b, 2);
    BAD("key 'a.b' appears twice");
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "a.b");
    gb_u32(&b, 13);
    gb_u64(&b, 0);
    BAD("key 'a.b': unknown value type 13");
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "a.b");
    gb_u32(&b, QP_GGUF_BOOL);
    gb_u8(&b, 2);
    BAD("key 'a.b': bool value 2 (must be 0 or 1)");
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "a.b");
    gb_u32(&b, QP_GGUF_U64);
    gb_u32(&b, 7);
    BAD("key 'a.b': the file ends inside its u64 value");
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "a.b");
    gb_u32(&b, QP_GGUF_STRING);
    gb_u64(&b, 1ull << 62);
    BAD("key 'a.b': string of 4611686018427387904 bytes runs past the end");
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "tokenizer.ggml.tokens");
    gb_u32(&b, QP_GGUF_ARRAY);
    gb_u32(&b, QP_GGUF_STRING);
    gb_u64(&b, 1ull << 60);
    gb_u64(&b, 0);
    BAD("key 'tokenizer.ggml.tokens': array of 1152921504606846976 string elements needs "
        "more than the 8 bytes left");
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "a.b");
    gb_u32(&b, QP_GGUF_ARRAY);
    gb_u32(&b, 77);
    gb_u64(&b, 0);
    BAD("key 'a.b': unknown array element type 77");
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "a.b");
    gb_u32(&b, QP_GGUF_ARRAY);
    gb_u32(&b, QP_GGUF_BOOL);
    gb_u64(&b, 3);
    gb_bytes(&b, "\1\0\5", 3);
    BAD("key 'a.b': element 2 is bool 5 (must be 0 or 1)");
    /* arrays of arrays nested 9 deep */
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "a.deep");
    gb_u32(&b, QP_GGUF_ARRAY);
    for (int d = 0; d < 9; d++) {
        gb_u32(&b, QP_GGUF_ARRAY);
        gb_u64(&b, 1);
    }
    gb_u32(&b, QP_GGUF_U8);
    gb_u64(&b, 0);
    BAD("key 'a.deep': arrays nested deeper than 8");
    /* a string inside a nested array runs past the end */
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "a.n");
    gb_u32(&b, QP_GGUF_ARRAY);
    gb_u32(&b, QP_GGUF_ARRAY);
    gb_u64(&b, 1);
    gb_u32(&b, QP_GGUF_STRING);
    gb_u64(&b, 1);
    gb_u64(&b, 99);
    BAD("key 'a.n': string of 99 bytes runs past the end of the file");
}

QP_TEST(gguf_refuses_bad_alignment)
{
    struct gb b = {0};
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "general.alignment");
    gb_u32(&b, QP_GGUF_U64);
    gb_u64(&b, 32);
    BAD("key 'general.alignment' is u64, must be u32");
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "general.alignment");
    gb_u32(&b, QP_GGUF_U32);
    gb_u32(&b, 48);
    BAD("key 'general.alignment' is 48, not a power of two");
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "general.alignment");
    gb_u32(&b, QP_GGUF_U32);
    gb_u32(&b, 0);
    BAD("key 'general.alignment' is 0, not a power of two");
}

QP_TEST(gguf_refuses_bad_tensor_infos)
{
    struct gb b = {0};
    uint64_t ne[5] = {4, 2, 1, 1, 1};
    gb_header(&b, 3, 1, 0);
    gb_tensor(&b, "", 2, ne, 0, 0);
    BAD("tensor 0 has an empty name");
    gb_header(&b, 3, 2, 0);
    gb_tensor(&b, "w", 2, ne, 0, 0);
    gb_tensor(&b, "w", 2, ne, 0, 32);
    BAD("tensor 'w' appears twice");
    gb_header(&b, 3, 1, 0);
    gb_tensor(&b, "w", 5, ne, 0, 0);
    BAD("tensor 'w' has 5 dims (at most 4)");
    uint64_t neg[2] = {4, 1ull << 63};
    gb_header(&b, 3, 1, 0);
    gb_tensor(&b, "w", 2, neg, 0, 0);
    BAD("tensor 'w': dim 1 (9223372036854775808) makes the tensor too large");
    uint64_t big[3] = {1ull << 32, 1ull << 31, 16};
    gb_header(&b, 3, 1, 0);
    gb_tensor(&b, "w", 3, big, 0, 0);
    BAD("tensor 'w': dim 2 (16) makes the tensor too large");
    uint64_t ok[2] = {1ull << 40, 1ull << 22};
    gb_header(&b, 3, 1, 0);
    gb_tensor(&b, "w", 2, ok, 0, 0);
    BAD("tensor 'w' is too large");
    gb_header(&b, 3, 1, 0);
    gb_tensor(&b, "blk.0.w", 2, ne, 99, 0);
    BAD("tensor 'blk.0.w' has unknown ggml type 99");
    uint64_t kne[2] = {256, 2};
    gb_header(&b, 3, 1, 0);
    gb_tensor(&b, "blk.0.ffn_down.weight", 2, kne, 13, 0);
    REFUSED(QP_E_UNSUPPORTED, "tensor 'blk.0.ffn_down.weight' has ggml type "
            "q5_K (13), which qprobe does not read");
    gb_header(&b, 3, 1, 0);
    gb_tensor(&b, "w", 2, ne, 4, 0);
    BAD("tensor 'w' has unknown ggml type 4");
    gb_header(&b, 3, 1, 0);
    gb_tensor(&b, "w", 2, ne, 2, 0);
    BAD("tensor 'w': q4_0 rows of 4 values are not a multiple of its block of "
        "32");
    gb_header(&b, 3, 1, 0);
    gb_tensor(&b, "w", 2, ne, 0, 16);
    BAD("tensor 'w': offset 16 is not a multiple of the alignment 32");
    gb_header(&b, 3, 1, 0);
    gb_str(&b, "w");
    gb_u32(&b, 3);
    gb_u64(&b, 4);
    gb_u64(&b, 4);
    BAD("tensor 'w': the file ends inside its dims");
}

QP_TEST(gguf_refuses_bad_data_placement)
{
    struct gb b = {0};
    uint64_t ne[2] = {4, 2};
    good(&b, 0, ne, 1024);
    BAD("tensor 'w': its 32 bytes at offset 1024 run past the end of the data "
        "section (1024 bytes)");
    gb_header(&b, 3, 1, 0);
    gb_tensor(&b, "w", 2, ne, 0, 0);
    BAD("the data section would start at 96, past the end of the file (65 "
        "bytes)");
    uint64_t ne2[1] = {16};
    gb_header(&b, 3, 2, 0);
    gb_tensor(&b, "a", 1, ne2, 0, 0);
    gb_tensor(&b, "b", 1, ne2, 0, 32);
    gb_pad(&b, 32);
    for (int i = 0; i < 128; i++)
        gb_u8(&b, 0);
    BAD("tensors 'a' and 'b' overlap");
    /* a truncated copy of a good file */
    good(&b, 0, ne, 0);
    b.n = 115;
    BAD("the data section would start at 128, past the end of the file (115 "
        "bytes)");
}

/* qp_gguf_parse over memory names `what`; refusals leave *out NULL. */
QP_TEST(gguf_parse_names_what)
{
    struct qp_gguf *g = (struct qp_gguf *)1;
    struct qp_error err;
    CHECK_FAILS(qp_gguf_parse("GGUF", 4, "model.gguf", &g, &err), QP_E_FORMAT,
                &err, "'model.gguf': not a GGUF file");
    CHECK(g == NULL);
    CHECK_FAILS(qp_gguf_load("/nonexistent/x.gguf", &g, &err), QP_E_IO, &err,
                "'/nonexistent/x.gguf'");
}
