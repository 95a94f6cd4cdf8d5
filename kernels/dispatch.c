/* kernels/dispatch.c: the table of kernel variants of every family, filled
 * once from the CPU's features and QP_KERNELS (kernels/dispatch.h). */
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
#include "kernels/gemm-qd8-impl.h"
#include "kernels/gemm-s8-ukernel.h"
#include "kernels/lut-s8.h"
#include "kernels/metrics-f32.h"
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

/* True for the instruction sets of this architecture (QP_KERNELS may name
 * them). */
static bool isa_of_this_arch(enum qp_kern_isa isa)
{
#if defined(__x86_64__)
    return isa >= QP_KERN_AVX2 && isa <= QP_KERN_AVX512VNNI;
#elif defined(__aarch64__)
    return isa == QP_KERN_NEON || isa == QP_KERN_NEONDOT;
#else
    (void)isa;
    return false;
#endif
}

/* QP_KERNELS: false when it names nothing this architecture has; else
 * *cap is QP_KERN_REF, the newest instruction set allowed, or
 * QP_KERN_ISA_COUNT for no cap (unset, empty or "auto"). */
static bool env_cap(enum qp_kern_isa *cap)
{
    const char *e = getenv("QP_KERNELS");
    *cap = QP_KERN_ISA_COUNT;
    if (!e || !*e || !strcmp(e, isa_names[QP_KERN_AUTO]))
        return true;
    for (int i = QP_KERN_REF; i < QP_KERN_ISA_COUNT; i++)
        if (!strcmp(e, isa_names[i]) &&
            (i == QP_KERN_REF || isa_of_this_arch((enum qp_kern_isa)i))) {
            *cap = (enum qp_kern_isa)i;
            return true;
        }
    return false;
}

bool qp_kern_isa_allowed(enum qp_kern_isa isa)
{
    if (!qp_kern_isa_available(isa))
        return false;
    if (isa == QP_KERN_AUTO || isa == QP_KERN_REF)
        return true;
    enum qp_kern_isa cap;
    env_cap(&cap);
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

/* The best requantization rows allowed, and the activation quantizer's
 * (x86 rows only: the reference elsewhere). */
static enum qp_rq_isa rq_choice(void)
{
    for (int i = QP_RQ_ISA_COUNT - 1; i > QP_RQ_ISA_REF; i--)
        if (qp_rq_isa_allowed((enum qp_rq_isa)i))
            return (enum qp_rq_isa)i;
    return QP_RQ_ISA_REF;
}

static enum qp_rq_isa qa_choice(enum qp_rq_isa rq)
{
    return rq == QP_RQ_ISA_AVX512 || rq == QP_RQ_ISA_AVX2 ? rq : QP_RQ_ISA_REF;
}

static const struct qp_lut8_variant *lut8_choice(void)
{
#if defined(__x86_64__)
    if (qp_lut8_variant_runs(&qp_lut8_vbmi) &&
        qp_kern_isa_allowed(qp_lut8_vbmi.isa))
        return &qp_lut8_vbmi;
    if (qp_lut8_variant_runs(&qp_lut8_avx2) &&
        qp_kern_isa_allowed(qp_lut8_avx2.isa))
        return &qp_lut8_avx2;
#endif
    return NULL;
}

static const struct qp_metrics_f32_variant *metrics_choice(void)
{
#if defined(__x86_64__)
    const struct qp_metrics_f32_variant *const best[] = {
        &qp_metrics_f32_avx512, &qp_metrics_f32_avx2};
    for (size_t i = 0; i < sizeof best / sizeof best[0]; i++)
        if (qp_kern_isa_allowed(best[i]->isa))
            return best[i];
#endif
    return NULL;
}

static const struct qp_qd8_variant *qd8_choice(void)
{
#if defined(__x86_64__)
    if (qp_kern_isa_allowed(qp_qd8_avx512vnni.isa))
        return &qp_qd8_avx512vnni;
    if (qp_kern_isa_allowed(qp_qd8_avx2.isa))
        return &qp_qd8_avx2;
#endif
    return NULL;
}

static struct qp_kern_table table;
static char describe[352];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Must not call qp_kern_table (pthread_once does not nest). */
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
    table.requant = rq_choice();
    table.quantize_act = qa_choice(table.requant);
    table.lut8 = lut8_choice();
    table.metrics_f32 = metrics_choice();
    table.gemm_qd8 = qd8_choice();
    snprintf(describe, sizeof describe,
             "kernels: gemm-s8=%s depthwise-s8=%s requant=%s "
             "quantize-act=%s lut8=%s eltwise-f32=%s conv-f32=%s metrics=%s "
             "gemm-qd8=%s",
             table.gemm_s8 ? table.gemm_s8->name : "ref",
             table.depthwise_s8 ? table.depthwise_s8->name : "ref",
             qp_rq_isa_name(table.requant), qp_rq_isa_name(table.quantize_act),
             table.lut8 ? table.lut8->name : "ref",
             table.eltwise_f32 ? table.eltwise_f32->name : "ref",
             table.conv_f32 ? table.conv_f32->name : "gemm",
             table.metrics_f32 ? table.metrics_f32->name : "ref",
             table.gemm_qd8 ? table.gemm_qd8->name : "ref");
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

enum qp_status qp_kern_init(struct qp_error *err)
{
    enum qp_kern_isa cap;
    bool ok = env_cap(&cap);
    qp_kern_table();
    if (ok)
        return QP_OK;
    char names[128] = "ref, auto";
    for (int i = QP_KERN_REF + 1; i < QP_KERN_ISA_COUNT; i++)
        if (isa_of_this_arch((enum qp_kern_isa)i)) {
            size_t len = strlen(names);
            snprintf(names + len, sizeof names - len, ", %s", isa_names[i]);
        }
    return qp_fail(err, QP_E_INVAL, "QP_KERNELS='%s' is not a kernel choice "
                   "of this machine; use one of: %s", getenv("QP_KERNELS"),
                   names);
}
