/*
 * softmax.c: the attention softmax of one row, in place (kern_cpu_softmax_row).
 *
 * Max-subtracted, exponentials summed in double, each divided by the sum.
 * The AVX2 path evaluates exp with simd_x86.h's kern_avx2_exp_neg (within 2
 * ulp of expf over the inputs a max-subtracted row has, x <= 0): ~8x
 * faster than calling expf per element, and the softmax is the attention
 * op's largest scalar cost at long contexts.
 */
#include <math.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/simd.h"
#if KERN_X86
#include "kernels/cpu/simd_x86.h"
#endif

static void
kern_scalar_softmax_row(float *s, int64_t n)
{
	float mx = -INFINITY;
	double sum = 0.0;
	int64_t i;
	for (i = 0; i < n; i++)
		mx = s[i] > mx ? s[i] : mx;
	for (i = 0; i < n; i++) {
		s[i] = expf(s[i] - mx);
		sum += s[i];
	}
	for (i = 0; i < n; i++)
		s[i] = (float)(s[i] / sum);
}

#if KERN_X86
static KERN_AVX2 void
kern_avx2_softmax_row(float *s, int64_t n)
{
	__m256 vmx = _mm256_set1_ps(-INFINITY);
	__m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
	float mx, tail[8];
	double sum, inv;
	int64_t i, n8 = n & ~(int64_t)7;

	for (i = 0; i < n8; i += 8)
		vmx = _mm256_max_ps(vmx, _mm256_loadu_ps(s + i));
	_mm256_storeu_ps(tail, vmx);
	mx = tail[0];
	for (i = 1; i < 8; i++)
		mx = tail[i] > mx ? tail[i] : mx;
	for (i = n8; i < n; i++)
		mx = s[i] > mx ? s[i] : mx;
	vmx = _mm256_set1_ps(mx);
	for (i = 0; i < n8; i += 8) {
		__m256 e = kern_avx2_exp_neg(_mm256_sub_ps(_mm256_loadu_ps(s + i), vmx));
		_mm256_storeu_ps(s + i, e);
		acc0 = _mm256_add_pd(acc0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
		acc1 = _mm256_add_pd(acc1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
	}
	if (i < n) { /* the tail through the same exp, padded with −inf */
		int64_t k;
		for (k = 0; k < 8; k++)
			tail[k] = i + k < n ? s[i + k] - mx : -INFINITY;
		_mm256_storeu_ps(tail, kern_avx2_exp_neg(_mm256_loadu_ps(tail)));
		for (k = 0; i + k < n; k++)
			s[i + k] = tail[k];
		for (k = 0; k < 8; k++)
			if (i + k >= n)
				tail[k] = 0.0f;
		acc0 = _mm256_add_pd(acc0, _mm256_cvtps_pd(_mm_loadu_ps(tail)));
		acc1 = _mm256_add_pd(acc1, _mm256_cvtps_pd(_mm_loadu_ps(tail + 4)));
	}
	{
		double d[4];
		_mm256_storeu_pd(d, _mm256_add_pd(acc0, acc1));
		sum = (d[0] + d[1]) + (d[2] + d[3]);
	}
	inv = 1.0 / sum;
	for (i = 0; i < n8; i += 8) {
		__m256 e = _mm256_loadu_ps(s + i);
		__m256d vinv = _mm256_set1_pd(inv);
		__m128 lo4 = _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(e)),
		    vinv));
		__m128 hi4 = _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)),
		    vinv));
		_mm256_storeu_ps(s + i, _mm256_set_m128(hi4, lo4));
	}
	for (; i < n; i++)
		s[i] = (float)((double)s[i] * inv);
}
#endif

void
kern_cpu_softmax_row(float *s, int64_t n)
{
#if KERN_X86
	if (kern_cpu_simd_level() >= KERN_CPU_SIMD_AVX2 && n >= 8) {
		kern_avx2_softmax_row(s, n);
		return;
	}
#endif
	kern_scalar_softmax_row(s, n);
}
