/* kernels/dispatch.c: the table of kernel variants, filled once from the
 * CPU's features and QP_KERNELS (kernels/dispatch.h). */
#include "kernels/dispatch.h"

#include <pthread.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/conv-f32-ukernel.h"
#include "kernels/depthwise-s8-ukernel.h"
#include "kernels/eltwise-f32.h"
#include "kernels/gemm-s8-ukernel.h"
#include "kernels/lut-s8.h"
#include "kernels/quantize-act.h"
#include "kernels/requant.h"

#if defined(__aarch64__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1UL << 20) /* Linux arch/arm64 uapi hwcap.h */
#endif
#endif

static const char *const isa_names[QP_KERN_ISA_COUNT] = {
    "auto", "ref", "avx2", "avx-vnni", "avx512", "avx512-vnni", "neon",
    "neon-dot",
};
_Static_assert(sizeof isa_names / sizeof isa_names[0] == QP_KERN_ISA_COUNT,
               "one name per instruction set");

const char *qp_kern_isa_name(enum qp_kern_isa isa)
{
    return isa < QP_KERN_ISA_COUNT ? isa_names[isa] : "?";
}

#if defined(__x86_64__)
/* AVX-VNNI (VEX-encoded vpdpbusd): CPUID.(EAX=7,ECX=1):EAX bit 4, read
 * directly because not every compiler's __builtin_cpu_supports knows it
 * (clang 14 does not). */
static bool cpu_has_avxvnni(void)
{
    unsigned a, b, c, d;
    return __get_cpuid_count(7, 1, &a, &b, &c, &d) && ((a >> 4) & 1);
}
#endif

bool qp_kern_isa_available(enum qp_kern_isa isa)
{
    switch (isa) {
    case QP_KERN_AUTO:
    case QP_KERN_REF:
        return true;
#if defined(__x86_64__)
    case QP_KERN_AVX2:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case QP_KERN_AVXVNNI:
        __builtin_cpu_init();
        return qp_kern_isa_available(QP_KERN_AVX2) && cpu_has_avxvnni();
    case QP_KERN_AVX512:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx512dq") &&
               qp_kern_isa_available(QP_KERN_AVX2);
    case QP_KERN_AVX512VNNI:
        __builtin_cpu_init();
        return qp_kern_isa_available(QP_KERN_AVX512) &&
               __builtin_cpu_supports("avx512vnni");
#endif
#if defined(__aarch64__)
    case QP_KERN_NEON: /* Advanced SIMD is part of the aarch64 base */
        return true;
    case QP_KERN_NEONDOT: /* SDOT/UDOT: Armv8.2 FEAT_DotProd */
        return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#endif
    default:
        return false;
    }
}

/* QP_KERNELS: "ref", or the newest instruction set allowed. */
static enum qp_kern_isa env_cap(void)
{
    const char *e = getenv("QP_KERNELS");
    if (!e || !*e)
        return QP_KERN_ISA_COUNT;
    for (int i = QP_KERN_REF; i < QP_KERN_ISA_COUNT; i++)
        if (!strcmp(e, isa_names[i]))
            return (enum qp_kern_isa)i;
    return QP_KERN_ISA_COUNT;
}

bool qp_kern_isa_allowed(enum qp_kern_isa isa)
{
    if (!qp_kern_isa_available(isa))
        return false;
    if (isa == QP_KERN_AUTO || isa == QP_KERN_REF)
        return true;
    enum qp_kern_isa cap = env_cap();
    if (cap == QP_KERN_REF)
        return false;
    /* x86 sets are ordered; AVX-VNNI sits beside AVX-512, not under it */
    if (cap == QP_KERN_AVXVNNI && isa >= QP_KERN_AVX512)
        return false;
    if (cap >= QP_KERN_AVX512 && cap < QP_KERN_ISA_COUNT &&
        isa == QP_KERN_AVXVNNI)
        return cap == QP_KERN_AVX512VNNI;
    return isa <= cap;
}

/* The newest variant of each family that a CPU with isa runs (AVX-512
 * implies AVX2, but AVX-512 VNNI does not imply AVX-VNNI). */
static const struct qp_gemm_s8_ukernel *gemm_variant(enum qp_kern_isa isa)
{
    switch (isa) {
#if defined(__x86_64__)
    case QP_KERN_AVX512VNNI:
        return &qp_gemm_s8_avx512vnni;
    case QP_KERN_AVXVNNI:
        return &qp_gemm_s8_avxvnni;
    case QP_KERN_AVX512:
    case QP_KERN_AVX2:
        return &qp_gemm_s8_avx2;
#endif
#if defined(__aarch64__)
    case QP_KERN_NEONDOT: /* no GEMM variant for plain NEON: reference */
        return &qp_gemm_s8_neondot;
#endif
    default:
        return NULL;
    }
}

static const struct qp_dw_s8_ukernel *dw_variant(enum qp_kern_isa isa)
{
    switch (isa) {
#if defined(__x86_64__)
    case QP_KERN_AVX512VNNI:
    case QP_KERN_AVX512:
        return &qp_dw_s8_avx512;
    case QP_KERN_AVXVNNI:
    case QP_KERN_AVX2:
        return &qp_dw_s8_avx2;
#endif
#if defined(__aarch64__)
    case QP_KERN_NEONDOT:
    case QP_KERN_NEON:
        return &qp_dw_s8_neon;
#endif
    default:
        return NULL;
    }
}

static const struct qp_ew_f32 *ew_variant(enum qp_kern_isa isa)
{
    switch (isa) {
#if defined(__x86_64__)
    case QP_KERN_AVX512VNNI:
    case QP_KERN_AVX512:
        return &qp_ew_f32_avx512;
    case QP_KERN_AVXVNNI:
    case QP_KERN_AVX2:
        return &qp_ew_f32_avx2;
#endif
    default:
        return NULL;
    }
}

static const struct qp_conv_f32_variant *conv_f32_variant(enum qp_kern_isa isa)
{
    switch (isa) {
#if defined(__x86_64__)
    case QP_KERN_AVX512VNNI:
    case QP_KERN_AVX512:
        return &qp_conv_f32_avx512;
#endif
    default:
        return NULL;
    }
}

static const enum qp_kern_isa preference[] = {
#if defined(__aarch64__)
    QP_KERN_NEONDOT, QP_KERN_NEON,
#endif
    QP_KERN_AVX512VNNI, QP_KERN_AVXVNNI, QP_KERN_AVX512, QP_KERN_AVX2,
};

static struct qp_kern_table table;
static char describe[256];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void fill(void)
{
    /* the first allowed set in order of preference; a family's variant
     * for it is the newest that set runs */
    size_t n = sizeof preference / sizeof preference[0];
    for (size_t i = 0; i < n && !table.gemm_s8; i++)
        if (qp_kern_isa_allowed(preference[i]))
            table.gemm_s8 = gemm_variant(preference[i]);
    for (size_t i = 0; i < n && !table.depthwise_s8; i++)
        if (qp_kern_isa_allowed(preference[i]))
            table.depthwise_s8 = dw_variant(preference[i]);
    for (size_t i = 0; i < n && !table.eltwise_f32; i++)
        if (qp_kern_isa_allowed(preference[i]))
            table.eltwise_f32 = ew_variant(preference[i]);
    for (size_t i = 0; i < n && !table.conv_f32; i++)
        if (qp_kern_isa_allowed(preference[i]))
            table.conv_f32 = conv_f32_variant(preference[i]);
    snprintf(describe, sizeof describe,
             "kernels: gemm-s8=%s depthwise-s8=%s requant=%s "
             "quantize-act=%s lut8=%s eltwise-f32=%s conv-f32=%s",
             table.gemm_s8 ? table.gemm_s8->name : "ref",
             table.depthwise_s8 ? table.depthwise_s8->name : "ref",
             qp_rq_variant(), qp_qa_variant(), qp_lut8_variant(),
             table.eltwise_f32 ? table.eltwise_f32->name : "ref",
             table.conv_f32 ? table.conv_f32->name : "ref");
}

const struct qp_kern_table *qp_kern_table(void)
{
    pthread_once(&once, fill);
    return &table;
}

const struct qp_gemm_s8_ukernel *qp_kern_gemm_s8(enum qp_kern_isa isa,
                                                 bool *ok)
{
    *ok = qp_kern_isa_available(isa);
    if (isa == QP_KERN_AUTO)
        return qp_kern_table()->gemm_s8;
    return *ok ? gemm_variant(isa) : NULL;
}

const struct qp_dw_s8_ukernel *qp_kern_depthwise_s8(enum qp_kern_isa isa,
                                                    bool *ok)
{
    *ok = qp_kern_isa_available(isa);
    if (isa == QP_KERN_AUTO)
        return qp_kern_table()->depthwise_s8;
    return *ok ? dw_variant(isa) : NULL;
}

const char *qp_kern_describe(void)
{
    qp_kern_table();
    return describe;
}
