/* kernels/ref/lut-s8.c: byte lookup tables, the reference and the choice
 * of variant (kernels/lut-s8.h). */
#include "kernels/lut-s8.h"

#include <pthread.h>
#include <string.h>

#include "kernels/dispatch.h"

typedef void (*lut_fn)(const uint8_t *table, const uint8_t *x, size_t n,
                       uint8_t *y);

#if defined(__x86_64__)
/* kernels/x86/lut-s8-avx512.c */
void qp_lut8_apply_vbmi(const uint8_t *table, const uint8_t *x, size_t n,
                        uint8_t *y);
#endif

void qp_lut8_apply_ref(const uint8_t table[256], const uint8_t *x, size_t n,
                       uint8_t *y)
{
    for (size_t i = 0; i < n; i++)
        y[i] = table[x[i]];
}

#if defined(__x86_64__)
static bool vbmi_available(void)
{
    __builtin_cpu_init();
    return qp_kern_isa_available(QP_KERN_AVX512) &&
           __builtin_cpu_supports("avx512vbmi");
}
#endif

static pthread_once_t once = PTHREAD_ONCE_INIT;
static lut_fn chosen = qp_lut8_apply_ref;

static void choose(void)
{
#if defined(__x86_64__)
    if (vbmi_available() && qp_kern_isa_allowed(QP_KERN_AVX512))
        chosen = qp_lut8_apply_vbmi;
#endif
}

const char *qp_lut8_variant(void)
{
    pthread_once(&once, choose);
    return chosen == qp_lut8_apply_ref ? "ref" : "avx512-vbmi";
}

void qp_lut8_apply(const uint8_t table[256], const uint8_t *x, size_t n,
                   uint8_t *y)
{
    pthread_once(&once, choose);
    chosen(table, x, n, y);
}

bool qp_lut8_apply_variant(const char *name, const uint8_t table[256],
                           const uint8_t *x, size_t n, uint8_t *y)
{
    if (!strcmp(name, "ref")) {
        qp_lut8_apply_ref(table, x, n, y);
        return true;
    }
#if defined(__x86_64__)
    if (!strcmp(name, "avx512-vbmi") && vbmi_available()) {
        qp_lut8_apply_vbmi(table, x, n, y);
        return true;
    }
#endif
    return false;
}
