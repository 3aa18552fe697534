/*
 * qpack_avx2.c: qpack's q4 and q8 unpacking eight values at a time
 * (qpack_avx2.h).  Each value is x̂ = μ + q·δ as qp_dequant computes it:
 * the code widened exactly to float, one product, one sum, in that order
 * and never fused (the target leaves FMA out), so the bits are the scalar
 * ones.  Plain C elsewhere: the functions are then never called.
 */
#include <stdatomic.h>

#include "snapshot/qpack_avx2.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

int
qp_avx2(void)
{
	static atomic_int have = -1; /* racing first callers store the same value */
	int h = atomic_load_explicit(&have, memory_order_relaxed);
	if (h < 0) {
		__builtin_cpu_init();
		/* F16C is not a __builtin_cpu_supports name in every compiler
		 * (clang 14 refuses it); every CPU with AVX2 and FMA has it, the
		 * rule kern_cpu_simd_detect uses too */
		h = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 1 : 0;
		atomic_store_explicit(&have, h, memory_order_relaxed);
	}
	return h;
}

/* μ + q·δ for eight codes (bytes) */
static inline __attribute__((target("avx2"), always_inline)) __m256
qp_avx2_deq(__m128i q8, __m256 m, __m256 d)
{
	__m256 q = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(q8));
	return _mm256_add_ps(m, _mm256_mul_ps(q, d));
}

/* 16 bytes of nibbles as 32 code bytes in order (2j low, 2j + 1 high) */
static inline __attribute__((target("avx2"), always_inline)) void
qp_avx2_nibbles(const uint8_t *codes, __m128i *a, __m128i *b)
{
	__m128i raw = _mm_loadu_si128((const __m128i *)(const void *)codes);
	__m128i mask = _mm_set1_epi8(15);
	__m128i lo = _mm_and_si128(raw, mask), hi = _mm_and_si128(_mm_srli_epi16(raw, 4), mask);
	*a = _mm_unpacklo_epi8(lo, hi); /* values 0..15 */
	*b = _mm_unpackhi_epi8(lo, hi); /* values 16..31 */
}

/* A stored (δ, μ) pair: 0 and both widened and broadcast, or -1 when
 * qp_pair_ok (qpack.c) would refuse it. */
static inline __attribute__((target("avx2,f16c"), always_inline)) int
qp_avx2_pair(const uint8_t *p, __m256 *d, __m256 *m)
{
	uint32_t dm = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
	__m128 f;
	if ((dm & 0x7c00u) == 0x7c00u || (dm & 0x7c000000u) == 0x7c000000u || (dm & 0x8000u))
		return -1;
	f = _mm_cvtph_ps(_mm_cvtsi32_si128((int)dm)); /* (δ, μ, 0, 0) */
	*d = _mm256_broadcastss_ps(f);
	*m = _mm256_broadcastss_ps(_mm_movehdup_ps(f));
	return 0;
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

__attribute__((target("avx2"))) void
qp_avx2_q4_ch_row(const uint8_t *codes, const float *mm, const float *dd, int d, float *x)
{
	int c;
	for (c = 0; c < d; c += 32) { /* d is a multiple of 32 */
		__m128i a, b;
		qp_avx2_nibbles(codes + c / 2, &a, &b);
		_mm256_storeu_ps(x + c, qp_avx2_deq(a, _mm256_loadu_ps(mm + c),
		    _mm256_loadu_ps(dd + c)));
		_mm256_storeu_ps(x + c + 8, qp_avx2_deq(_mm_srli_si128(a, 8),
		    _mm256_loadu_ps(mm + c + 8), _mm256_loadu_ps(dd + c + 8)));
		_mm256_storeu_ps(x + c + 16, qp_avx2_deq(b, _mm256_loadu_ps(mm + c + 16),
		    _mm256_loadu_ps(dd + c + 16)));
		_mm256_storeu_ps(x + c + 24, qp_avx2_deq(_mm_srli_si128(b, 8),
		    _mm256_loadu_ps(mm + c + 24), _mm256_loadu_ps(dd + c + 24)));
	}
}

#else

int
qp_avx2(void)
{
	return 0;
}

void
qp_avx2_q4_ch_row(const uint8_t *codes, const float *mm, const float *dd, int d, float *x)
{
	(void)codes, (void)mm, (void)dd, (void)d, (void)x;
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

#endif
