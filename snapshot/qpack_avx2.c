/*
 * qpack_avx2.c: qpack's q4, q8 and b-bit (2, 3, 5, 6) unpacking eight values at a time
 * (qpack_avx2.h).  Each value is x̂ = μ + q·δ as qp_dequant computes it:
 * the code widened exactly to float, one product, one sum, in that order
 * and never fused (the target leaves FMA out), so the bits are the scalar
 * ones.  Plain C elsewhere: the functions are then never called.
 */
#include <stdatomic.h>
#include <string.h>

#include "snapshot/qpack_avx2.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include "snapshot/qpack_avx2_inline.h"

static atomic_int qp_level = -1; /* racing first callers store the same value */

static int
qp_simd_detect(void)
{
	__builtin_cpu_init();
	/* F16C is not a __builtin_cpu_supports name in every compiler
	 * (clang 14 refuses it); every CPU with AVX2 and FMA has it, the
	 * rule kern_cpu_simd_detect uses too */
	if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
		return 0;
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") ? 2 : 1;
}

int
qp_simd_force(int level)
{
	int best = qp_simd_detect();
	if (level > best)
		return -1;
	atomic_store_explicit(&qp_level, level < 0 ? best : level, memory_order_relaxed);
	return 0;
}

int
qp_simd_level(void)
{
	int h = atomic_load_explicit(&qp_level, memory_order_relaxed);
	if (h < 0) {
		h = qp_simd_detect();
		atomic_store_explicit(&qp_level, h, memory_order_relaxed);
	}
	return h;
}

int
qp_avx2(void)
{
	return qp_simd_level() >= 1;
}

/* Both row formats: per 32 values a (δ, μ) pair, then the codes: 16 bytes
 * of nibbles (q4, 20-byte groups) or 32 bytes (q8, 36-byte groups).  One
 * loop for both; q4 is a constant in each caller, so each inlines to the
 * straight loop it replaces. */
static inline __attribute__((target("avx2,f16c"), always_inline)) int
qp_avx2_rows(const uint8_t *src, int64_t n, float *x, int q4)
{
	const int64_t step = q4 ? 20 : 36;
	int64_t g;
	for (g = 0; g < n; g++, src += step, x += 32) {
		__m256 vd, vm;
		__m128i a, b;
		if (qp_avx2_pair(src, &vd, &vm))
			return -1;
		if (q4) {
			qp_avx2_nibbles(src + 4, &a, &b);
		} else {
			a = _mm_loadu_si128((const __m128i *)(const void *)(src + 4));
			b = _mm_loadu_si128((const __m128i *)(const void *)(src + 20));
		}
		_mm256_storeu_ps(x, qp_avx2_deq(a, vm, vd));
		_mm256_storeu_ps(x + 8, qp_avx2_deq(_mm_srli_si128(a, 8), vm, vd));
		_mm256_storeu_ps(x + 16, qp_avx2_deq(b, vm, vd));
		_mm256_storeu_ps(x + 24, qp_avx2_deq(_mm_srli_si128(b, 8), vm, vd));
	}
	return 0;
}

__attribute__((target("avx2,f16c"))) int
qp_avx2_q4_rows(const uint8_t *src, int64_t n, float *x)
{
	return qp_avx2_rows(src, n, x, 1);
}

__attribute__((target("avx2,f16c"))) int
qp_avx2_q8_rows(const uint8_t *src, int64_t n, float *x)
{
	return qp_avx2_rows(src, n, x, 0);
}

/* The last few groups (qp_avx2_bits_tail) are copied into a padded
 * buffer first, so that no load reads past src's block. */
__attribute__((target("avx2,f16c"))) int
qp_avx2_bits_rows(const uint8_t *src, int64_t n, int b, float *x)
{
	const int64_t step = 4 + 4 * b, tail = qp_avx2_bits_tail(step, b);
	struct qp_avx2_bits t;
	int64_t g;
	if (b != 2 && b != 3 && b != 5 && b != 6)
		return -1;
	qp_avx2_bits_init(&t, b);
	for (g = 0; g < n; g++, src += step, x += 32) {
		uint8_t pad[4 + 4 * 6 + 16];
		const uint8_t *p = src;
		__m256 f[4];
		if (n - g <= tail) { /* the bytes past the group: read, masked away */
			memcpy(pad, src, (size_t)step);
			memset(pad + step, 0, sizeof(pad) - (size_t)step);
			p = pad;
		}
		if (qp_avx2_bits_group(p, &t, f))
			return -1;
		_mm256_storeu_ps(x, f[0]);
		_mm256_storeu_ps(x + 8, f[1]);
		_mm256_storeu_ps(x + 16, f[2]);
		_mm256_storeu_ps(x + 24, f[3]);
	}
	return 0;
}

__attribute__((target("avx2,f16c"))) int
qp_avx2_q4_ch_group(const uint8_t *src, int64_t gn, int d, float *x)
{
	float mm[QP_AVX2_MAX_DIM] __attribute__((aligned(32)));
	float dd[QP_AVX2_MAX_DIM] __attribute__((aligned(32)));
	const uint8_t *codes = src + 4 * (size_t)d;
	int64_t r;
	int c;
	if (qp_avx2_ch_pairs(src, d, mm, dd))
		return -1;
	for (r = 0; r < gn; r++, codes += d / 2, x += d)
		for (c = 0; c < d; c += 32) { /* d is a multiple of 32 */
			__m128i a, b;
			qp_avx2_nibbles(codes + c / 2, &a, &b);
			_mm256_storeu_ps(x + c, qp_avx2_deq(a, _mm256_load_ps(mm + c),
			    _mm256_load_ps(dd + c)));
			_mm256_storeu_ps(x + c + 8, qp_avx2_deq(_mm_srli_si128(a, 8),
			    _mm256_load_ps(mm + c + 8), _mm256_load_ps(dd + c + 8)));
			_mm256_storeu_ps(x + c + 16, qp_avx2_deq(b, _mm256_load_ps(mm + c + 16),
			    _mm256_load_ps(dd + c + 16)));
			_mm256_storeu_ps(x + c + 24, qp_avx2_deq(_mm_srli_si128(b, 8),
			    _mm256_load_ps(mm + c + 24), _mm256_load_ps(dd + c + 24)));
		}
	return 0;
}

#else

int
qp_avx2(void)
{
	return 0;
}

int
qp_simd_force(int level)
{
	return level > 0 ? -1 : 0;
}

int
qp_simd_level(void)
{
	return 0;
}

int
qp_avx2_q4_ch_group(const uint8_t *src, int64_t gn, int d, float *x)
{
	(void)src, (void)gn, (void)d, (void)x;
	return -1;
}

int
qp_avx2_q4_rows(const uint8_t *src, int64_t n, float *x)
{
	(void)src, (void)n, (void)x;
	return -1;
}

int
qp_avx2_q8_rows(const uint8_t *src, int64_t n, float *x)
{
	(void)src, (void)n, (void)x;
	return -1;
}

int
qp_avx2_bits_rows(const uint8_t *src, int64_t n, int b, float *x)
{
	(void)src, (void)n, (void)b, (void)x;
	return -1;
}

#endif
