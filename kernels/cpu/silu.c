/*
 * silu.c: the FFN's gate, g ← silu(g)·u = g / (1 + e^−g) · u, over a run of
 * floats (kern_cpu_silu_mul_run; ops.c's silu_mul splits a chunk's gate
 * over the threads).
 *
 * The AVX2 path takes e = exp(−|g|) from simd_x86.h's kern_avx2_exp_neg
 * (within 2 ulp of expf) and returns g / (1 + e) for g >= 0 and
 * g·e / (1 + e) below, the same value: libm's expf and a division per
 * element were ~3 % of the 1.5B's prefill (`perf record`, n_ff = 8960).
 */
#include <math.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/simd.h"

/* One element: the scalar level, and the AVX2 path's tail. */
static inline float
kern_silu_mul_1(float g, float u)
{
	return g / (1.0f + expf(-g)) * u;
}

#if KERN_X86
#include "kernels/cpu/simd_x86.h"

static KERN_AVX2 void
kern_avx2_silu_mul_run(float *g, const float *u, int64_t n)
{
	const __m256 one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f);
	int64_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		const __m256 x = _mm256_loadu_ps(g + i);
		const __m256 e = kern_avx2_exp_neg(_mm256_or_ps(x, sign)); /* exp(−|x|) */
		const __m256 neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
		const __m256 num = _mm256_blendv_ps(x, _mm256_mul_ps(x, e), neg);
		_mm256_storeu_ps(g + i, _mm256_mul_ps(_mm256_div_ps(num, _mm256_add_ps(one, e)),
		    _mm256_loadu_ps(u + i)));
	}
	for (; i < n; i++)
		g[i] = kern_silu_mul_1(g[i], u[i]);
}
#endif

void
kern_cpu_silu_mul_run(float *g, const float *u, int64_t n)
{
	int64_t i;

#if KERN_X86
	if (kern_cpu_simd_level() >= KERN_CPU_SIMD_AVX2) {
		kern_avx2_silu_mul_run(g, u, n);
		return;
	}
#endif
	for (i = 0; i < n; i++)
		g[i] = kern_silu_mul_1(g[i], u[i]);
}
