/* kernels/dispatch.h: run-time choice of kernel variants.
 *
 * The table is filled once, from __builtin_cpu_supports (x86-64) or
 * getauxval(AT_HWCAP) (aarch64), the first time a kernel is asked for;
 * QP_KERNELS=ref in the environment forces the portable reference
 * everywhere. QP_KERNELS may also name an instruction set ("avx2",
 * "avx-vnni", "avx512", "avx512-vnni", "neon", "neon-dot"): variants that
 * need a newer one are then skipped (for benchmarks and for reproducing a
 * slower machine). An unknown value is ignored.
 *
 * Every variant of an integer kernel gives the same bytes as its reference
 * in kernels/ref/ (tests/unit/test-kernels*.c check it); the choice only
 * changes the speed. */
#ifndef QP_KERNELS_DISPATCH_H
#define QP_KERNELS_DISPATCH_H

#include <stdbool.h>

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
 * ones). This is what the table below was filled with. */
bool qp_kern_isa_allowed(enum qp_kern_isa isa);

struct qp_gemm_s8_ukernel;
struct qp_dw_s8_ukernel;
struct qp_ew_f32;
struct qp_conv_f32_variant;

/* The variant chosen for each kernel family; NULL means the reference.
 * Filled once (thread-safe), never changed afterwards. */
struct qp_kern_table {
    const struct qp_gemm_s8_ukernel *gemm_s8;    /* GEMM, conv, fc */
    const struct qp_dw_s8_ukernel *depthwise_s8; /* depthwise conv */
    const struct qp_ew_f32 *eltwise_f32;         /* float elementwise */
    const struct qp_conv_f32_variant *conv_f32;  /* float direct conv */
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

/* One line naming the variant chosen for each kernel family, e.g.
 * "kernels: gemm-s8=avx512-vnni depthwise-s8=avx512 requant=avx512".
 * Static storage. */
const char *qp_kern_describe(void);

#endif
