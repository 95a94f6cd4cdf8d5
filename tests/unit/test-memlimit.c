/* The single-buffer limit (core/memlimit.h): its variable, and the places
 * that must consult it (tensors, mapped tensors, run buffers, scratch). */
#include <stdlib.h>
#include <time.h>

#include "core/memlimit.h"
#include "tests/unit/test-graph-util.h"

/* Sets QP_MAX_ALLOC for one test; restore with limit_restore. */
static char *limit_set(const char *v)
{
    const char *old = getenv(QP_MAX_ALLOC_ENV);
    char *saved = old ? strdup(old) : NULL;
    if (v)
        setenv(QP_MAX_ALLOC_ENV, v, 1);
    else
        unsetenv(QP_MAX_ALLOC_ENV);
    return saved;
}

static void limit_restore(char *saved)
{
    if (saved)
        setenv(QP_MAX_ALLOC_ENV, saved, 1);
    else
        unsetenv(QP_MAX_ALLOC_ENV);
    free(saved);
}

QP_TEST(memlimit_parse_sizes)
{
    size_t v = 0;
    CHECK(qp_mem_parse_size("1048576", &v) && v == 1048576);
    CHECK(qp_mem_parse_size("512M", &v) && v == (size_t)512 << 20);
    CHECK(qp_mem_parse_size("2G", &v) && v == (size_t)2 << 30);
    CHECK(qp_mem_parse_size("3k", &v) && v == 3072);
    CHECK(qp_mem_parse_size("1TB", &v) && v == (size_t)1 << 40);
    CHECK(!qp_mem_parse_size("", &v));
    CHECK(!qp_mem_parse_size("-1", &v));
    CHECK(!qp_mem_parse_size("12X", &v));
    CHECK(!qp_mem_parse_size("G", &v));
    CHECK(!qp_mem_parse_size("99999999999999999999", &v));
    CHECK(!qp_mem_parse_size("17000000000000T", &v)); /* overflows size_t */
}

QP_TEST(memlimit_check_names_the_buffer_and_the_limit)
{
    char *saved = limit_set("1M");
    struct qp_error err;
    CHECK_OK(qp_mem_check("tensor 'a'", (size_t)1 << 20, &err), &err);
    CHECK_FAILS(qp_mem_check("tensor 'a'", ((size_t)1 << 20) + 1, &err),
                QP_E_NOMEM, &err,
                "tensor 'a' needs 0.00105 GB (1048577 bytes), more than the "
                "0.00105 GB limit of QP_MAX_ALLOC");
    setenv(QP_MAX_ALLOC_ENV, "lots", 1);
    CHECK_FAILS(qp_mem_check("x", 1, &err), QP_E_INVAL, &err,
                "QP_MAX_ALLOC='lots' is not a size");
    unsetenv(QP_MAX_ALLOC_ENV); /* the machine's memory: 1 TiB is beyond it */
    size_t lim;
    CHECK_OK(qp_mem_limit(&lim, &err), &err);
    CHECK(lim > ((size_t)1 << 20));
    CHECK_FAILS(qp_mem_check("y", (size_t)1 << 50, &err), QP_E_NOMEM, &err,
                "more than this machine's");
    limit_restore(saved);
}

QP_TEST(memlimit_tensors_owned_and_mapped)
{
    char *saved = limit_set("1M");
    struct qp_error err;
    struct qp_tensor *t = NULL;
    /* 512 x 512 floats = exactly 1 MiB: allowed; one row more is not */
    CHECK_OK(qp_tensor_new("ok", QP_DTYPE_F32, 2, SHAPE(512, 512), &t, &err),
             &err);
    qp_tensor_free(t);
    t = NULL;
    CHECK_FAILS(qp_tensor_new("big", QP_DTYPE_F32, 2, SHAPE(513, 512), &t, &err),
                QP_E_NOMEM, &err, "tensor 'big' f32 [513,512] needs");
    CHECK(t == NULL);
    /* mapped data is refused the same way (a sparse file can declare
     * terabytes; nothing here is read) */
    static const char byte = 0;
    CHECK_FAILS(qp_tensor_wrap("huge", QP_DTYPE_U8, 1, SHAPE((int64_t)1 << 40),
                               &byte, (size_t)1 << 40, NULL, &t, &err),
                QP_E_NOMEM, &err, "tensor 'huge' u8 [1099511627776] needs");
    CHECK(t == NULL);
    limit_restore(saved);
}

QP_TEST(memlimit_resize_empty_output_with_a_huge_dim)
{
    /* the fuzzer's model: scales [2.68e8, 1.0037, 2, 1.4e-45] on [1,2,4,4]
     * give an output [268000000, 2, 8, 0] with no element; its scratch used
     * to be sized from the largest dim (268e6 taps, 13 GB) */
    char *saved = limit_set("16M");
    for (int mode = 0; mode < 2; mode++) {
        struct qp_tensor *in[3] = {TF32("x", 4, SHAPE(1, 2, 4, 4), NULL),
                                   TF32("roi", 1, SHAPE(0), NULL),
                                   TF32("s", 1, SHAPE(4),
                                        VALS(2.68e8, 1.0037, 2, 1.4e-45))};
        RUN("Resize", 11, 3, in, 1,
            qp_node_set_string(n, "mode", mode ? "linear" : "nearest", &err));
        CHECK_TENSOR(o.out[0], 4, SHAPE(268000000, 2, 8, 0), VALS(0), 0);
        one_end(&o);
    }
    /* a small output whose intermediate is beyond the limit fails naming
     * the node and the size: linear [1,1,1024,1] -> [1,1,1,2048] resizes
     * the last axis first, through [1,1,1024,2048] (two 8 MiB buffers) */
    {
        struct qp_tensor *in[3] = {TF32("x", 4, SHAPE(1, 1, 1024, 1), NULL),
                                   TF32("roi", 1, SHAPE(0), NULL),
                                   TF32("s", 1, SHAPE(4),
                                        VALS(1, 1, 1.0 / 1024, 2048))};
        setenv(QP_MAX_ALLOC_ENV, "8M", 1);
        RUN_FAILS("Resize", 11, 3, in,
                  qp_node_set_string(n, "mode", "linear", &err), QP_E_NOMEM,
                  "scratch needs");
        one_end(&o);
    }
    limit_restore(saved);
}

QP_TEST(memlimit_empty_outputs_are_not_computed)
{
    /* libFuzzer's model: a legacy Softmax over [2^31, 0] looped over 2^31
     * empty rows (seconds; minutes under ASan) */
    struct qp_tensor *in[1] = {TF32("x", 2, SHAPE((int64_t)1 << 31, 0), NULL)};
    clock_t t0 = clock();
    RUN("Softmax", 11, 1, in, 1, qp_node_set_int(n, "axis", 1, &err));
    CHECK_TENSOR(o.out[0], 2, SHAPE((int64_t)1 << 31, 0), VALS(0), 0);
    CHECK((double)(clock() - t0) / CLOCKS_PER_SEC < 0.5);
    one_end(&o);
}
