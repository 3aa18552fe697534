/*
 * hadamard_simd.c: q4 and q4-per-channel rows unpacked and rotated back in
 * one pass, the row in registers (hadamard_simd.h), with AVX2 or AVX-512.
 * A row of d doubles is d/4 vectors of four (AVX2) or d/8 of eight
 * (AVX-512) in natural order: the spans below the vector's width are
 * inside a vector (its halves of each 2·span block swapped, then a + b
 * where the lane keeps its sum and b + (−a) where it keeps a difference:
 * −a is exact and x − y is x + (−y) in IEEE arithmetic, so each value is
 * hadamard.c's a + b or a − b bit for bit), the wider spans between
 * vectors.  The q4 unpacking is the AVX2 one either way (qpack_avx2_inline.h).  The row length is a constant in each
 * instance and every loop over the row is unrolled (the pragmas: GCC 12
 * at -O3 leaves the nested rounds a loop through the stack), so that the
 * row stays in registers.
 * Plain C elsewhere: the functions are then never called.
 */
#include "snapshot/hadamard_simd.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include "snapshot/qpack_avx2_inline.h"

#define HD_AVX2_MAX 128 /* the longest row the kernels are instantiated for */

int
hd_avx2_dim_ok(int d)
{
	return d == 32 || d == 64 || d == 128;
}

/* Eight floats widened (exactly) into two vectors of doubles. */
static inline __attribute__((target("avx2"), always_inline)) void
hd_avx2_widen(__m256 f, __m256d *t)
{
	t[0] = _mm256_cvtps_pd(_mm256_castps256_ps128(f));
	t[1] = _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1));
}

/* The row t[nv] (4·nv doubles) through every round of butterflies, times
 * s, rounded to float into x. */
static inline __attribute__((target("avx2"), always_inline)) void
hd_avx2_finish(__m256d *t, int nv, __m256d s, float *x)
{
	const __m256d odd = _mm256_set_pd(-0.0, 0.0, -0.0, 0.0);  /* lanes 1, 3 */
	const __m256d high = _mm256_set_pd(-0.0, -0.0, 0.0, 0.0); /* lanes 2, 3 */
	int v, len, i, j;
#pragma GCC unroll 32
	for (v = 0; v < nv; v++) {
		__m256d a = t[v];
		/* span 1: (t1 + t0, t0 + (−t1), t3 + t2, t2 + (−t3)) */
		a = _mm256_add_pd(_mm256_permute_pd(a, 0x5), _mm256_xor_pd(a, odd));
		/* span 2: (t2 + t0, t3 + t1, t0 + (−t2), t1 + (−t3)) */
		a = _mm256_add_pd(_mm256_permute2f128_pd(a, a, 0x01), _mm256_xor_pd(a, high));
		t[v] = a;
	}
#pragma GCC unroll 8
	for (len = 1; len < nv; len <<= 1) /* spans 4·len */
#pragma GCC unroll 32
		for (i = 0; i < nv; i += len << 1)
#pragma GCC unroll 32
			for (j = i; j < i + len; j++) {
				__m256d a = t[j], b = t[j + len];
				t[j] = _mm256_add_pd(a, b);
				t[j + len] = _mm256_sub_pd(a, b);
			}
#pragma GCC unroll 32
	for (v = 0; v < nv; v++)
		_mm_storeu_ps(x + 4 * v, _mm256_cvtpd_ps(_mm256_mul_pd(t[v], s)));
}

/* 32 values μ + q·δ of 32 code bytes a (0..15), b (16..31), with per-value
 * scales and mins, into t[8]. */
static inline __attribute__((target("avx2"), always_inline)) void
hd_avx2_group(__m128i a, __m128i b, const __m256 *m, const __m256 *d, __m256d *t)
{
	hd_avx2_widen(qp_avx2_deq(a, m[0], d[0]), t);
	hd_avx2_widen(qp_avx2_deq(_mm_srli_si128(a, 8), m[1], d[1]), t + 2);
	hd_avx2_widen(qp_avx2_deq(b, m[2], d[2]), t + 4);
	hd_avx2_widen(qp_avx2_deq(_mm_srli_si128(b, 8), m[3], d[3]), t + 6);
}

static inline __attribute__((target("avx2,f16c"), always_inline)) int
hd_avx2_q4_rows_d(const uint8_t *src, int64_t n, double scale, float *x, const int d)
{
	const __m256d s = _mm256_set1_pd(scale);
	int64_t r;
	int g;
	for (r = 0; r < n; r++, x += d) {
		__m256d t[HD_AVX2_MAX / 4];
#pragma GCC unroll 4
		for (g = 0; g < d / 32; g++, src += 20) {
			__m256 vd[4], vm[4];
			__m128i a, b;
			if (qp_avx2_pair(src, &vd[0], &vm[0]))
				return -1;
			vd[1] = vd[2] = vd[3] = vd[0];
			vm[1] = vm[2] = vm[3] = vm[0];
			qp_avx2_nibbles(src + 4, &a, &b);
			hd_avx2_group(a, b, vm, vd, t + 8 * g);
		}
		hd_avx2_finish(t, d / 4, s, x);
	}
	return 0;
}

static inline __attribute__((target("avx2,f16c"), always_inline)) int
hd_avx2_q4_ch_rows_d(const uint8_t *src, int64_t n, double scale, float *x, const int d)
{
	const __m256d s = _mm256_set1_pd(scale);
	float mm[HD_AVX2_MAX] __attribute__((aligned(32)));
	float dd[HD_AVX2_MAX] __attribute__((aligned(32)));
	int64_t g0, r;
	int c;
	for (g0 = 0; g0 < n; g0 += 32) {
		int64_t gn = n - g0 < 32 ? n - g0 : 32;
		const uint8_t *codes = src + 4 * d;
		if (qp_avx2_ch_pairs(src, d, mm, dd))
			return -1;
		for (r = 0; r < gn; r++, codes += d / 2, x += d) {
			__m256d t[HD_AVX2_MAX / 4];
#pragma GCC unroll 4
			for (c = 0; c < d; c += 32) {
				__m256 vm[4], vd[4];
				__m128i a, b;
				int k;
				for (k = 0; k < 4; k++) {
					vm[k] = _mm256_load_ps(mm + c + 8 * k);
					vd[k] = _mm256_load_ps(dd + c + 8 * k);
				}
				qp_avx2_nibbles(codes + c / 2, &a, &b);
				hd_avx2_group(a, b, vm, vd, t + c / 4);
			}
			hd_avx2_finish(t, d / 4, s, x);
		}
		src = codes;
	}
	return 0;
}

/* The same with AVX-512: the row t[nv] of 8·nv doubles. */
#define HD_512 "avx2,f16c,avx512f,avx512dq"

static inline __attribute__((target(HD_512), always_inline)) void
hd_512_finish(__m512d *t, int nv, __m512d s, float *x)
{
	const __m512d s1 = _mm512_set_pd(-0.0, 0.0, -0.0, 0.0, -0.0, 0.0, -0.0, 0.0);
	const __m512d s2 = _mm512_set_pd(-0.0, -0.0, 0.0, 0.0, -0.0, -0.0, 0.0, 0.0);
	const __m512d s4 = _mm512_set_pd(-0.0, -0.0, -0.0, -0.0, 0.0, 0.0, 0.0, 0.0);
	int v, len, i, j;
#pragma GCC unroll 16
	for (v = 0; v < nv; v++) {
		__m512d a = t[v];
		/* span 1: pairs swapped; span 2: pairs of pairs; span 4: halves */
		a = _mm512_add_pd(_mm512_permute_pd(a, 0x55), _mm512_xor_pd(a, s1));
		a = _mm512_add_pd(_mm512_permutex_pd(a, 0x4e), _mm512_xor_pd(a, s2));
		a = _mm512_add_pd(_mm512_shuffle_f64x2(a, a, 0x4e), _mm512_xor_pd(a, s4));
		t[v] = a;
	}
#pragma GCC unroll 8
	for (len = 1; len < nv; len <<= 1) /* spans 8·len */
#pragma GCC unroll 16
		for (i = 0; i < nv; i += len << 1)
#pragma GCC unroll 16
			for (j = i; j < i + len; j++) {
				__m512d a = t[j], b = t[j + len];
				t[j] = _mm512_add_pd(a, b);
				t[j + len] = _mm512_sub_pd(a, b);
			}
#pragma GCC unroll 16
	for (v = 0; v < nv; v++)
		_mm256_storeu_ps(x + 8 * v, _mm512_cvtpd_ps(_mm512_mul_pd(t[v], s)));
}

/* 32 values μ + q·δ (as hd_avx2_group) into t[4]. */
static inline __attribute__((target(HD_512), always_inline)) void
hd_512_group(__m128i a, __m128i b, const __m256 *m, const __m256 *d, __m512d *t)
{
	t[0] = _mm512_cvtps_pd(qp_avx2_deq(a, m[0], d[0]));
	t[1] = _mm512_cvtps_pd(qp_avx2_deq(_mm_srli_si128(a, 8), m[1], d[1]));
	t[2] = _mm512_cvtps_pd(qp_avx2_deq(b, m[2], d[2]));
	t[3] = _mm512_cvtps_pd(qp_avx2_deq(_mm_srli_si128(b, 8), m[3], d[3]));
}

static inline __attribute__((target(HD_512), always_inline)) int
hd_512_q4_rows_d(const uint8_t *src, int64_t n, double scale, float *x, const int d)
{
	const __m512d s = _mm512_set1_pd(scale);
	int64_t r;
	int g;
	for (r = 0; r < n; r++, x += d) {
		__m512d t[HD_AVX2_MAX / 8];
#pragma GCC unroll 4
		for (g = 0; g < d / 32; g++, src += 20) {
			__m256 vd[4], vm[4];
			__m128i a, b;
			if (qp_avx2_pair(src, &vd[0], &vm[0]))
				return -1;
			vd[1] = vd[2] = vd[3] = vd[0];
			vm[1] = vm[2] = vm[3] = vm[0];
			qp_avx2_nibbles(src + 4, &a, &b);
			hd_512_group(a, b, vm, vd, t + 4 * g);
		}
		hd_512_finish(t, d / 8, s, x);
	}
	return 0;
}

static inline __attribute__((target(HD_512), always_inline)) int
hd_512_q4_ch_rows_d(const uint8_t *src, int64_t n, double scale, float *x, const int d)
{
	const __m512d s = _mm512_set1_pd(scale);
	float mm[HD_AVX2_MAX] __attribute__((aligned(32)));
	float dd[HD_AVX2_MAX] __attribute__((aligned(32)));
	int64_t g0, r;
	int c;
	for (g0 = 0; g0 < n; g0 += 32) {
		int64_t gn = n - g0 < 32 ? n - g0 : 32;
		const uint8_t *codes = src + 4 * d;
		if (qp_avx2_ch_pairs(src, d, mm, dd))
			return -1;
		for (r = 0; r < gn; r++, codes += d / 2, x += d) {
			__m512d t[HD_AVX2_MAX / 8];
#pragma GCC unroll 4
			for (c = 0; c < d; c += 32) {
				__m256 vm[4], vd[4];
				__m128i a, b;
				int k;
				for (k = 0; k < 4; k++) {
					vm[k] = _mm256_load_ps(mm + c + 8 * k);
					vd[k] = _mm256_load_ps(dd + c + 8 * k);
				}
				qp_avx2_nibbles(codes + c / 2, &a, &b);
				hd_512_group(a, b, vm, vd, t + c / 8);
			}
			hd_512_finish(t, d / 8, s, x);
		}
		src = codes;
	}
	return 0;
}

__attribute__((target(HD_512))) int
hd_512_q4_rows(const uint8_t *src, int64_t n, int d, double scale, float *x)
{
	switch (d) {
	case 32:
		return hd_512_q4_rows_d(src, n, scale, x, 32);
	case 64:
		return hd_512_q4_rows_d(src, n, scale, x, 64);
	case 128:
		return hd_512_q4_rows_d(src, n, scale, x, 128);
	}
	return -1;
}

__attribute__((target(HD_512))) int
hd_512_q4_ch_rows(const uint8_t *src, int64_t n, int d, double scale, float *x)
{
	switch (d) {
	case 32:
		return hd_512_q4_ch_rows_d(src, n, scale, x, 32);
	case 64:
		return hd_512_q4_ch_rows_d(src, n, scale, x, 64);
	case 128:
		return hd_512_q4_ch_rows_d(src, n, scale, x, 128);
	}
	return -1;
}

__attribute__((target("avx2,f16c"))) int
hd_avx2_q4_rows(const uint8_t *src, int64_t n, int d, double scale, float *x)
{
	switch (d) {
	case 32:
		return hd_avx2_q4_rows_d(src, n, scale, x, 32);
	case 64:
		return hd_avx2_q4_rows_d(src, n, scale, x, 64);
	case 128:
		return hd_avx2_q4_rows_d(src, n, scale, x, 128);
	}
	return -1;
}

__attribute__((target("avx2,f16c"))) int
hd_avx2_q4_ch_rows(const uint8_t *src, int64_t n, int d, double scale, float *x)
{
	switch (d) {
	case 32:
		return hd_avx2_q4_ch_rows_d(src, n, scale, x, 32);
	case 64:
		return hd_avx2_q4_ch_rows_d(src, n, scale, x, 64);
	case 128:
		return hd_avx2_q4_ch_rows_d(src, n, scale, x, 128);
	}
	return -1;
}

#else

int
hd_512_q4_rows(const uint8_t *src, int64_t n, int d, double scale, float *x)
{
	(void)src, (void)n, (void)d, (void)scale, (void)x;
	return -1;
}

int
hd_512_q4_ch_rows(const uint8_t *src, int64_t n, int d, double scale, float *x)
{
	(void)src, (void)n, (void)d, (void)scale, (void)x;
	return -1;
}

int
hd_avx2_dim_ok(int d)
{
	(void)d;
	return 0;
}

int
hd_avx2_q4_rows(const uint8_t *src, int64_t n, int d, double scale, float *x)
{
	(void)src, (void)n, (void)d, (void)scale, (void)x;
	return -1;
}

int
hd_avx2_q4_ch_rows(const uint8_t *src, int64_t n, int d, double scale, float *x)
{
	(void)src, (void)n, (void)d, (void)scale, (void)x;
	return -1;
}

#endif
