/* bench/bench-peak.c: this CPU's arithmetic peak per core, the ceiling
 * that dense kernels (sgemm, the GPTQ Hessian's SYRK) are judged against.
 * Twelve independent 512-bit accumulator chains of one instruction each:
 *
 *   fp32 FMA (vfmadd), bf16 pair dot products (vdpbf16ps), int8 quad dot
 *   products (vpdpbusd), in GFLOP/s (GOP/s) per second of this thread's
 *   CPU time, so a busy machine lowers the count of runs, not the figure.
 *
 * It then prints the GPTQ bench case's bound: the SYRK of 128 x 2048
 * tokens over 4096 columns (n(n+1)k FLOPs) at that peak on the threads
 * qprobe uses, against issue 10's 5x goal (38 s / 5).
 *
 *   build/bench/bench-peak
 * x86-64 with AVX-512 only; elsewhere it says so and exits 0. */
#include <stdio.h>
#include <time.h>

#include "core/parallel.h"

#define CHAINS 12

static double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#if defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx512f"))) static double fma_peak(long n)
{
    __m512 a[CHAINS];
    __m512 b = _mm512_set1_ps(0.999f), c = _mm512_set1_ps(0.001f);
    for (int i = 0; i < CHAINS; i++)
        a[i] = _mm512_set1_ps((float)i);
    double t = cpu_seconds();
    for (long k = 0; k < n; k++)
#pragma GCC unroll 12
        for (int i = 0; i < CHAINS; i++)
            a[i] = _mm512_fmadd_ps(a[i], b, c);
    t = cpu_seconds() - t;
    float s = 0;
    for (int i = 0; i < CHAINS; i++)
        s += _mm512_reduce_add_ps(a[i]);
    __asm__ volatile("" : : "x"(s));
    return (double)n * CHAINS * 16 * 2 / t / 1e9;
}

__attribute__((target("avx512f,avx512bf16"))) static double bf16_peak(long n)
{
    __m512 d[CHAINS];
    __m512bh x = (__m512bh)_mm512_set1_epi16(0x3f80);
    for (int i = 0; i < CHAINS; i++)
        d[i] = _mm512_setzero_ps();
    double t = cpu_seconds();
    for (long k = 0; k < n; k++)
#pragma GCC unroll 12
        for (int i = 0; i < CHAINS; i++)
            d[i] = _mm512_dpbf16_ps(d[i], x, x);
    t = cpu_seconds() - t;
    float s = 0;
    for (int i = 0; i < CHAINS; i++)
        s += _mm512_reduce_add_ps(d[i]);
    __asm__ volatile("" : : "x"(s));
    return (double)n * CHAINS * 32 * 2 / t / 1e9;
}

__attribute__((target("avx512f,avx512vnni"))) static double int8_peak(long n)
{
    __m512i e[CHAINS];
    __m512i u = _mm512_set1_epi8(1);
    for (int i = 0; i < CHAINS; i++)
        e[i] = _mm512_setzero_si512();
    double t = cpu_seconds();
    for (long k = 0; k < n; k++)
#pragma GCC unroll 12
        for (int i = 0; i < CHAINS; i++)
            e[i] = _mm512_dpbusd_epi32(e[i], u, u);
    t = cpu_seconds() - t;
    int s = 0;
    for (int i = 0; i < CHAINS; i++)
        s += _mm512_reduce_add_epi32(e[i]);
    __asm__ volatile("" : : "r"(s));
    return (double)n * CHAINS * 64 * 2 / t / 1e9;
}

/* The GPTQ bench case's SYRK at a peak of g GFLOP/s per core. */
static void bound(const char *what, double g, int threads)
{
    const double flops = 4096.0 * 4097.0 * 128 * 2048, goal = 38.0 / 5;
    double s = flops / (g * threads * 1e9);
    printf("  %-5s hessian at %d x peak: %6.2f s = %.2f x the 5x goal's %.1f s\n",
           what, threads, s, s / goal, goal);
}

int main(void)
{
    if (!__builtin_cpu_supports("avx512f")) {
        printf("bench-peak: no AVX-512 on this CPU; skipped\n");
        return 0;
    }
    const long n = 100000000;
    int threads = qp_parallel_threads();
    double f = fma_peak(n);
    printf("bench-peak: fp32 fma  %7.1f GFLOP/s per core\n", f);
    bound("fp32", f, threads);
    if (__builtin_cpu_supports("avx512bf16")) {
        double b = bf16_peak(n / 2);
        printf("bench-peak: bf16 dot  %7.1f GFLOP/s per core\n", b);
        bound("bf16", b, threads);
    }
    if (__builtin_cpu_supports("avx512vnni")) {
        double i = int8_peak(n / 2);
        printf("bench-peak: int8 dot  %7.1f GOP/s per core\n", i);
        bound("int8", i, threads);
    }
    return 0;
}
#else
int main(void)
{
    (void)cpu_seconds;
    printf("bench-peak: x86-64 only; skipped\n");
    return 0;
}
#endif
