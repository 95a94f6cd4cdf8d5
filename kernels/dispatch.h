/* kernels/dispatch.h: run-time choice of kernel variants, for every
 * family in one table (kernels/README.md).
 *
 * The table is filled once, from __builtin_cpu_supports (x86-64) or
 * getauxval(AT_HWCAP) (aarch64), by qp_kern_init or the first time a
 * kernel is asked for. QP_KERNELS=ref in the environment forces the
 * portable reference everywhere. QP_KERNELS may also name an instruction
 * set of this architecture ("avx2", "avx-vnni", "avx512", "avx512-vnni";
 * "neon", "neon-dot"): variants that need a newer one are then skipped
 * (for benchmarks and for reproducing a slower machine); "auto" or an
 * empty value is no cap. Any other value is an error of qp_kern_init
 * (programs call it through qp_kern_startup, kernels/startup.h); code
 * that never called it treats such a value as no cap.
 *
 * Every variant of an integer kernel gives the same bytes as its reference
 * in kernels/ref/ (tests/unit/test-kernels*.c check it); the choice only
 * changes the speed. */
#ifndef QP_KERNELS_DISPATCH_H
#define QP_KERNELS_DISPATCH_H

#include <stdbool.h>

#include "core/status.h"
#include "kernels/requant.h"

/* Instruction sets a variant may need, in increasing order of preference
 * within one architecture (qp_kern_isa_allowed compares them). Only grows;
 * names in qp_kern_isa_name(). The numbers are never stored: QP_KERNELS
 * and --version use the names. */
enum qp_kern_isa {
    QP_KERN_AUTO = 0,   /* whatever the dispatch table chose */
    QP_KERN_REF,        /* portable C, the specification */
    QP_KERN_AVX2,       /* AVX2 + FMA */
    QP_KERN_AVXVNNI,    /* AVX2 + AVX-VNNI (VEX vpdpbusd on ymm) */
    QP_KERN_AVX512,     /* AVX-512 F, BW, VL, DQ */
    QP_KERN_AVX512VNNI, /* AVX-512 above + VNNI */
    QP_KERN_NEON,       /* aarch64 Advanced SIMD (baseline on aarch64) */
    QP_KERN_NEONDOT,    /* aarch64 NEON + dot product (SDOT/UDOT) */
    QP_KERN_ISA_COUNT
};

/* "auto", "ref", "avx2", "avx-vnni", "avx512", "avx512-vnni", "neon",
 * "neon-dot". */
const char *qp_kern_isa_name(enum qp_kern_isa isa);

/* True when variants for isa are compiled in and this CPU runs them
 * (QP_KERN_REF and QP_KERN_AUTO always). QP_KERNELS is not consulted, so
 * tests can compare every variant the machine has with the reference. */
bool qp_kern_isa_available(enum qp_kern_isa isa);

/* True when isa is available and QP_KERNELS allows it (QP_KERNELS=ref
 * allows only QP_KERN_REF; QP_KERNELS=<isa> allows that set and older
 * ones). Reads QP_KERNELS at every call (tests change it); the table below
 * was filled with what it said then. */
bool qp_kern_isa_allowed(enum qp_kern_isa isa);

/* Checks QP_KERNELS and fills the table. QP_E_INVAL naming the variable
 * and the values it takes when it holds anything else (an instruction set
 * of another architecture included); the table is then filled as without
 * a cap. */
enum qp_status qp_kern_init(struct qp_error *err);

struct qp_gemm_s8_ukernel;
struct qp_dw_s8_ukernel;
struct qp_ew_f32;
struct qp_conv_f32_variant;
struct qp_lut8_variant;
struct qp_metrics_f32_variant;
struct qp_qd8_variant;

/* The variant chosen for each kernel family; NULL (or QP_RQ_ISA_REF)
 * means the reference (for conv-f32: the im2col + sgemm path). Filled
 * once (thread-safe), never changed afterwards. */
struct qp_kern_table {
    const struct qp_gemm_s8_ukernel *gemm_s8;    /* GEMM, conv, fc */
    const struct qp_dw_s8_ukernel *depthwise_s8; /* depthwise conv */
    enum qp_rq_isa requant;                      /* requantization rows */
    enum qp_rq_isa quantize_act;                 /* activation quantizer rows */
    const struct qp_lut8_variant *lut8;          /* byte lookup tables */
    const struct qp_ew_f32 *eltwise_f32;         /* float elementwise */
    const struct qp_conv_f32_variant *conv_f32;  /* float direct conv */
    const struct qp_metrics_f32_variant *metrics_f32; /* diff metrics pass */
    const struct qp_qd8_variant *gemm_qd8;       /* 8da4w linear layers */
};
const struct qp_kern_table *qp_kern_table(void);

/* The GEMM micro-kernel for one instruction set: QP_KERN_AUTO gives the
 * table's choice, QP_KERN_REF and sets without a GEMM variant give NULL
 * (the reference). *ok is false when isa is not available here. */
const struct qp_gemm_s8_ukernel *qp_kern_gemm_s8(enum qp_kern_isa isa,
                                                 bool *ok);
/* Same for the depthwise kernel. */
const struct qp_dw_s8_ukernel *qp_kern_depthwise_s8(enum qp_kern_isa isa,
                                                    bool *ok);

/* One line naming the variant chosen for every family of the table, e.g.
 * "kernels: gemm-s8=avx512-vnni depthwise-s8=avx512 requant=avx512 ...
 * metrics=avx512". Static storage. */
const char *qp_kern_describe(void);

#endif
