/* tests/unit/test-sha256.c: SHA-256 against the FIPS 180-4 / NIST example
 * digests, and streaming in any split. */
#include <stdlib.h>
#include <string.h>

#include "core/sha256.h"
#include "tests/test.h"

static void digest_hex(const void *msg, size_t n, char *hex)
{
    struct qp_sha256 h;
    unsigned char d[QP_SHA256_BYTES];
    qp_sha256_init(&h);
    qp_sha256_update(&h, msg, n);
    qp_sha256_final(&h, d);
    qp_sha256_hex(d, hex);
}

QP_TEST(sha256_nist_examples)
{
    char hex[QP_SHA256_HEX];
    digest_hex("", 0, hex);
    CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    digest_hex("abc", 3, hex);
    CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    /* 448 bits: the padding spills into a second block */
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    digest_hex(two, strlen(two), hex);
    CHECK_STR(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    const char *four = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
                       "hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
    digest_hex(four, strlen(four), hex);
    CHECK_STR(hex, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
    /* one million 'a' */
    char *m = malloc(1000000);
    REQUIRE(m);
    memset(m, 'a', 1000000);
    digest_hex(m, 1000000, hex);
    CHECK_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(m);
}

QP_TEST(sha256_streaming_in_any_split)
{
    unsigned char msg[300];
    for (int i = 0; i < 300; i++)
        msg[i] = (unsigned char)(i * 7 + 3);
    char whole[QP_SHA256_HEX], part[QP_SHA256_HEX];
    digest_hex(msg, sizeof msg, whole);
    static const size_t cuts[] = {1, 55, 56, 63, 64, 65, 127, 128, 200};
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
        struct qp_sha256 h;
        unsigned char d[QP_SHA256_BYTES];
        qp_sha256_init(&h);
        qp_sha256_update(&h, msg, cuts[c]);
        qp_sha256_update(&h, msg + cuts[c], 300 - cuts[c] - 17);
        qp_sha256_update(&h, msg + 283, 17);
        qp_sha256_final(&h, d);
        qp_sha256_hex(d, part);
        CHECK_STR(part, whole);
    }
    /* strings carry their terminator: "ab","c" is not "a","bc" */
    struct qp_sha256 a, b;
    unsigned char da[QP_SHA256_BYTES], db[QP_SHA256_BYTES];
    qp_sha256_init(&a);
    qp_sha256_str(&a, "ab");
    qp_sha256_str(&a, "c");
    qp_sha256_init(&b);
    qp_sha256_str(&b, "a");
    qp_sha256_str(&b, "bc");
    qp_sha256_final(&a, da);
    qp_sha256_final(&b, db);
    CHECK(memcmp(da, db, sizeof da) != 0);
}
