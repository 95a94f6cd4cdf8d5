/* bench/bench-requant.c: requantization throughput of the reference and of
 * each SIMD variant for the main flavors, in millions of elements per
 * second, and the SIMD/reference ratio measured in the same process.
 *
 * Shape: 4096 rows x 256 columns of random int32 accumulators, per-channel
 * parameters along the columns, int8 output. Each variant runs for at
 * least QP_BENCH_SECONDS (default 0.2) per flavor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench.h"
#include "kernels/requant.h"

enum { ROWS = 4096, COLS = 256 };

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * UINT64_C(2685821657736338717);
}

/* elements per second of one variant */
static double rate(enum qp_rq_isa isa, const struct qp_rq *rq,
                   const int32_t *acc, int8_t *out, double seconds)
{
    long reps = 0;
    double t0 = now(), t;
    do {
        qp_rq_apply_i32_isa(isa, rq, acc, ROWS, COLS, out);
        reps++;
        t = now() - t0;
    } while (t < seconds);
    return (double)reps * ROWS * COLS / t;
}

int main(int argc, char **argv)
{
    bench_start("bench-requant", argc, argv);
    static const enum qp_rq_flavor flavors[] = {
        QP_RQ_TFLITE_DOUBLE, QP_RQ_TFLITE_SINGLE, QP_RQ_CMSIS_NN_SINGLE,
        QP_RQ_GEMMLOWP, QP_RQ_XNNPACK_FP32, QP_RQ_XNNPACK_RNDNU, QP_RQ_ORT,
        QP_RQ_ONNX_REF};
    const char *e = getenv("QP_BENCH_SECONDS");
    double seconds = e && atof(e) > 0 ? atof(e) : 0.2;
    int32_t *acc = malloc(sizeof *acc * ROWS * COLS);
    int8_t *out = malloc((size_t)ROWS * COLS);
    if (!acc || !out)
        return 1;
    uint64_t s = 42;
    for (size_t i = 0; i < (size_t)ROWS * COLS; i++)
        acc[i] = (int32_t)(rnd(&s) % 200001) - 100000;
    double scale[COLS];
    int32_t m[COLS], sh[COLS];
    for (int c = 0; c < COLS; c++) {
        scale[c] = 1e-4 * (1.0 + (double)(rnd(&s) % 1000) / 1000.0);
        qp_rq_quantize_multiplier(QP_RQ_TFLITE_DOUBLE, scale[c], &m[c], &sh[c]);
    }
    printf("bench-requant: %d x %d int32 -> int8, per-channel, variant in use: %s\n",
           ROWS, COLS, qp_rq_variant());
    printf("%-16s %12s", "flavor", "ref Melem/s");
    for (int isa = 1; isa < QP_RQ_ISA_COUNT; isa++)
        if (qp_rq_isa_available((enum qp_rq_isa)isa))
            printf(" %10s Melem/s  ratio", qp_rq_isa_name((enum qp_rq_isa)isa));
    printf("\n");
    for (size_t k = 0; k < sizeof flavors / sizeof flavors[0]; k++) {
        enum qp_rq_flavor f = flavors[k];
        struct qp_rq rq;
        struct qp_error err;
        enum qp_status st = qp_rq_flavor_fixed(f) && f != QP_RQ_XNNPACK_RNDNU
            ? qp_rq_prepare_fixed(&rq, f, m, sh, COLS, -3, QP_DTYPE_I8, -128, 127, &err)
            : qp_rq_prepare_float(&rq, f, scale, COLS, -3, QP_DTYPE_I8, -128, 127, &err);
        if (st != QP_OK) {
            fprintf(stderr, "bench-requant: %s\n", err.msg);
            return 1;
        }
        double ref = rate(QP_RQ_ISA_REF, &rq, acc, out, seconds);
        printf("%-16s %12.0f", qp_rq_flavor_name(f), ref / 1e6);
        for (int isa = 1; isa < QP_RQ_ISA_COUNT; isa++) {
            if (!qp_rq_isa_available((enum qp_rq_isa)isa))
                continue;
            double r = rate((enum qp_rq_isa)isa, &rq, acc, out, seconds);
            printf(" %18.0f %6.1fx", r / 1e6, r / ref);
        }
        printf("\n");
        qp_rq_release(&rq);
    }
    free(acc);
    free(out);
    return 0;
}
