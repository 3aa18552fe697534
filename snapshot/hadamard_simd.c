/*
 * hadamard_simd.c: q4, q4-per-channel and b-bit (2, 3, 5, 6, 8) rows
 * unpacked and rotated back in one pass, the row in registers (hadamard_simd.h), with AVX2 or AVX-512.
 *
 * A row's values are unpacked as qpack_avx2.c does (the AVX2 pieces of
 * qpack_avx2_inline.h) into d/8 vectors of eight floats (AVX2; AVX-512
 * joins two into a vector of sixteen) in natural order, put through
 * hadamard.c's rounds of butterflies in float, span 1 first: the spans
 * below the vector's width inside a vector (its halves of each 2·span
 * block swapped, then a + b where the lane keeps its sum and b + (−a)
 * where it keeps a difference: −a is exact and x − y is x + (−y) in IEEE
 * arithmetic, so each value is hadamard.c's a + b or a − b bit for bit),
 * the wider spans between vectors; then the one product by the scale.  The row length is a constant in each
 * instance and every loop over the row is unrolled (the pragmas: GCC 12 at
 * -O3 leaves the nested rounds a loop through the stack), so that the row
 * stays in registers.  Plain C elsewhere: the functions are then never
 * called.
 */
#include <string.h>

#include "snapshot/hadamard_simd.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include "snapshot/qpack_avx2_inline.h"

#define HD_MAX 128 /* the longest row the kernels are instantiated for */
#define HD_512 "avx2,f16c,avx512f,avx512dq"

int
hd_avx2_dim_ok(int d)
{
	return d == 32 || d == 64 || d == 128;
}

/* 32 values μ + q·δ of the code bytes a (0..15) and b (16..31), with
 * per-value mins and scales, into f[4]. */
static inline __attribute__((target("avx2"), always_inline)) void
hd_group(__m128i a, __m128i b, const __m256 *m, const __m256 *dl, __m256 *f)
{
	f[0] = qp_avx2_deq(a, m[0], dl[0]);
	f[1] = qp_avx2_deq(_mm_srli_si128(a, 8), m[1], dl[1]);
	f[2] = qp_avx2_deq(b, m[2], dl[2]);
	f[3] = qp_avx2_deq(_mm_srli_si128(b, 8), m[3], dl[3]);
}

/* A row of the q4 row form (d/32 groups of 20 bytes at src) into f[d/8];
 * -1 at a pair qpack.c refuses. */
static inline __attribute__((target("avx2,f16c"), always_inline)) int
hd_q4_row(const uint8_t *src, __m256 *f, const int d)
{
	int g;
#pragma GCC unroll 4
	for (g = 0; g < d / 32; g++, src += 20) {
		__m256 dl[4], m[4];
		__m128i a, b;
		if (qp_avx2_pair(src, &dl[0], &m[0]))
			return -1;
		dl[1] = dl[2] = dl[3] = dl[0];
		m[1] = m[2] = m[3] = m[0];
		qp_avx2_nibbles(src + 4, &a, &b);
		hd_group(a, b, m, dl, f + 4 * g);
	}
	return 0;
}

/* A row of the b-bit row form (d/32 groups of 4 + 4·b bytes at src, b = 2
 * to 8; q4 has hd_q4_row) into f[d/8]; -1 at a pair qpack.c refuses.  qp_avx2_run's loads
 * read 16 − b bytes past the row (hd_*_bits_d pads the last rows). */
static inline __attribute__((target("avx2,f16c"), always_inline)) int
hd_bits_row(const uint8_t *src, __m256 *f, const int d, const struct qp_avx2_bits *t)
{
	int g;
#pragma GCC unroll 4
	for (g = 0; g < d / 32; g++, src += 4 + 4 * t->b)
		if (qp_avx2_bits_group(src, t, f + 4 * g))
			return -1;
	return 0;
}

/* A row of a per-channel group (its d/2 code bytes, the group's mins and
 * scales) into f[d/8]. */
static inline __attribute__((target("avx2"), always_inline)) void
hd_q4_ch_row(const uint8_t *codes, const float *mm, const float *dd, __m256 *f, const int d)
{
	int c, k;
#pragma GCC unroll 4
	for (c = 0; c < d; c += 32) {
		__m256 m[4], dl[4];
		__m128i a, b;
		for (k = 0; k < 4; k++) {
			m[k] = _mm256_load_ps(mm + c + 8 * k);
			dl[k] = _mm256_load_ps(dd + c + 8 * k);
		}
		qp_avx2_nibbles(codes + c / 2, &a, &b);
		hd_group(a, b, m, dl, f + c / 8);
	}
}

/* Spans 1, 2 and 4 of the butterflies on eight floats: each lane adds its
 * partner (the halves of the 2·span block swapped) to itself or to its
 * negation (−a is exact: x + (−y) is x − y in IEEE arithmetic). */
static inline __attribute__((target("avx2"), always_inline)) __m256
hd_avx2_spans8(__m256 a)
{
	const __m256 odd = _mm256_castsi256_ps(_mm256_set_epi32(INT32_MIN, 0, INT32_MIN, 0,
	    INT32_MIN, 0, INT32_MIN, 0));
	const __m256 two = _mm256_castsi256_ps(_mm256_set_epi32(INT32_MIN, INT32_MIN, 0, 0,
	    INT32_MIN, INT32_MIN, 0, 0));
	const __m256 high = _mm256_castsi256_ps(_mm256_set_epi32(INT32_MIN, INT32_MIN,
	    INT32_MIN, INT32_MIN, 0, 0, 0, 0));
	a = _mm256_add_ps(_mm256_permute_ps(a, 0xb1), _mm256_xor_ps(a, odd));
	a = _mm256_add_ps(_mm256_permute_ps(a, 0x4e), _mm256_xor_ps(a, two));
	return _mm256_add_ps(_mm256_permute2f128_ps(a, a, 0x01), _mm256_xor_ps(a, high));
}

__attribute__((target("avx2"))) void
hd_avx2_rotate_back_row(float *t, int d, float scale)
{
	const __m256 s = _mm256_set1_ps(scale);
	int i, j, len;
	for (i = 0; i < d; i += 8)
		_mm256_storeu_ps(t + i, hd_avx2_spans8(_mm256_loadu_ps(t + i)));
	for (len = 8; len < d; len <<= 1)
		for (i = 0; i < d; i += len << 1)
			for (j = i; j < i + len; j += 8) {
				__m256 a = _mm256_loadu_ps(t + j), b = _mm256_loadu_ps(t + j + len);
				_mm256_storeu_ps(t + j, _mm256_add_ps(a, b));
				_mm256_storeu_ps(t + j + len, _mm256_sub_ps(a, b));
			}
	for (i = 0; i < d; i += 8)
		_mm256_storeu_ps(t + i, _mm256_mul_ps(_mm256_loadu_ps(t + i), s));
}

/* The row f[d/8] rotated (every round of butterflies in float, then the
 * product by scale) into x, eight floats a vector, spans 1, 2 and 4 inside
 * (hd_avx2_spans8); nt: with streaming stores (x on a 32-byte line). */
static inline __attribute__((target("avx2"), always_inline)) void
hd_avx2_finish(const __m256 *f, const int d, float scale, float *x, const int nt)
{
	const __m256 s = _mm256_set1_ps(scale);
	const int nv = d / 8;
	__m256 t[HD_MAX / 8];
	int v, len, k;
#pragma GCC unroll 16
	for (v = 0; v < nv; v++)
		t[v] = hd_avx2_spans8(f[v]);
#pragma GCC unroll 8
	for (len = 1; len < nv; len <<= 1) /* spans 8·len: pair k is (j, j + len) */
#pragma GCC unroll 16
		for (k = 0; k < nv / 2; k++) {
			int j = k / len * 2 * len + k % len;
			__m256 a = t[j], b = t[j + len];
			t[j] = _mm256_add_ps(a, b);
			t[j + len] = _mm256_sub_ps(a, b);
		}
	if (nt) {
#pragma GCC unroll 16
		for (v = 0; v < nv; v++)
			_mm256_stream_ps(x + 8 * v, _mm256_mul_ps(t[v], s));
		return;
	}
#pragma GCC unroll 16
	for (v = 0; v < nv; v++)
		_mm256_storeu_ps(x + 8 * v, _mm256_mul_ps(t[v], s));
}

/* The same with AVX-512, sixteen floats a vector (two of f joined): spans
 * 1, 2, 4 and 8 inside, the sign of each lane's term applied by the FMA's
 * ±1 factor (the product is exact, so the one rounding is that of a + b
 * or b − a: the AVX2 path's bits with an instruction fewer); nt: x on a
 * 64-byte line. */
static inline __attribute__((target(HD_512), always_inline)) void
hd_512_finish(const __m256 *f, const int d, float scale, float *x, const int nt)
{
	const __m512 s1 = _mm512_set_ps(-1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1);
	const __m512 s2 = _mm512_set_ps(-1, -1, 1, 1, -1, -1, 1, 1, -1, -1, 1, 1, -1, -1, 1, 1);
	const __m512 s4 = _mm512_set_ps(-1, -1, -1, -1, 1, 1, 1, 1, -1, -1, -1, -1, 1, 1, 1, 1);
	const __m512 s8 = _mm512_set_ps(-1, -1, -1, -1, -1, -1, -1, -1, 1, 1, 1, 1, 1, 1, 1, 1);
	const __m512 s = _mm512_set1_ps(scale);
	const int nv = d / 16;
	__m512 t[HD_MAX / 16];
	int v, len, k;
#pragma GCC unroll 8
	for (v = 0; v < nv; v++) {
		__m512 a = _mm512_insertf32x8(_mm512_castps256_ps512(f[2 * v]), f[2 * v + 1], 1);
		a = _mm512_fmadd_ps(a, s1, _mm512_permute_ps(a, 0xb1));
		a = _mm512_fmadd_ps(a, s2, _mm512_permute_ps(a, 0x4e));
		a = _mm512_fmadd_ps(a, s4, _mm512_shuffle_f32x4(a, a, 0xb1));
		a = _mm512_fmadd_ps(a, s8, _mm512_shuffle_f32x4(a, a, 0x4e));
		t[v] = a;
	}
#pragma GCC unroll 8
	for (len = 1; len < nv; len <<= 1) /* spans 16·len: pair k is (j, j + len) */
#pragma GCC unroll 8
		for (k = 0; k < nv / 2; k++) {
			int j = k / len * 2 * len + k % len;
			__m512 a = t[j], b = t[j + len];
			t[j] = _mm512_add_ps(a, b);
			t[j + len] = _mm512_sub_ps(a, b);
		}
	if (nt) {
#pragma GCC unroll 8
		for (v = 0; v < nv; v++)
			_mm512_stream_ps(x + 16 * v, _mm512_mul_ps(t[v], s));
		return;
	}
#pragma GCC unroll 8
	for (v = 0; v < nv; v++)
		_mm512_storeu_ps(x + 16 * v, _mm512_mul_ps(t[v], s));
}

/* Whether rows go to x with streaming stores: asked for, and x on a line
 * of the vector's width (each row is 32, 64 or 128 floats: every row is
 * then). */
static inline int
hd_streams(const float *x, int stream, uintptr_t width)
{
	return stream && !((uintptr_t)x & (width - 1));
}

/* Streaming stores are weakly ordered: fenced before the rows are handed
 * on (to another thread, after the kern_parallel that wrote them). */
static inline __attribute__((target("avx2"))) void
hd_stream_end(int nt)
{
	if (nt)
		_mm_sfence();
}

/* The walks over a block, written once and instantiated for each ISA
 * (FINISH: hd_avx2_finish or hd_512_finish), each for d = 32, 64, 128. */
#define HD_WALKS(ISA, TARGET, FINISH, WIDTH)                                                     \
	static inline __attribute__((target(TARGET), always_inline)) int                \
	hd_##ISA##_q4_ch_d(const uint8_t *src, int64_t n, float scale, float *x,        \
	    const int d, const int nt)                                                   \
	{                                                                                \
		float mm[HD_MAX] __attribute__((aligned(32)));                           \
		float dd[HD_MAX] __attribute__((aligned(32)));                           \
		int64_t g0, r;                                                           \
		for (g0 = 0; g0 < n; g0 += 32) {                                         \
			int64_t gn = n - g0 < 32 ? n - g0 : 32;                          \
			if (qp_avx2_ch_pairs(src, d, mm, dd))                            \
				return -1;                                               \
			src += 4 * d;                                                    \
			for (r = 0; r < gn; r++, src += d / 2, x += d) {                 \
				__m256 f[HD_MAX / 8];                                    \
				hd_q4_ch_row(src, mm, dd, f, d);                         \
				FINISH(f, d, scale, x, nt);                              \
			}                                                                \
		}                                                                        \
		return 0;                                                                \
	}                                                                                \
	static inline __attribute__((target(TARGET), always_inline)) int                \
	hd_##ISA##_bits_d(const uint8_t *src, int64_t n, float scale, float *x,         \
	    const int d, int b, const int nt)                                            \
	{                                                                                \
		/* q4's nibble kernel reads inside its group: no tail */                \
		const int64_t rb = d / 32 * (4 + 4 * b);                                 \
		const int64_t tail = b == 4 ? 0 : qp_avx2_bits_tail(rb, b);              \
		struct qp_avx2_bits t;                                                   \
		int64_t r;                                                               \
		qp_avx2_bits_init(&t, b);                                                \
		for (r = 0; r < n; r++, src += rb, x += d) {                             \
			uint8_t pad[HD_MAX / 32 * (4 + 4 * 8) + 16];                     \
			const uint8_t *p = src;                                          \
			__m256 f[HD_MAX / 8];                                            \
			if (n - r <= tail) { /* its loads would pass the block's end */  \
				memcpy(pad, src, (size_t)rb);                            \
				memset(pad + rb, 0, sizeof(pad) - (size_t)rb);           \
				p = pad;                                                 \
			}                                                                \
			if (b == 4 ? hd_q4_row(p, f, d) : hd_bits_row(p, f, d, &t))      \
				return -1;                                               \
			FINISH(f, d, scale, x, nt);                                      \
		}                                                                        \
		return 0;                                                                \
	}                                                                                \
	__attribute__((target(TARGET))) int                                              \
	hd_##ISA##_bits_rows(const uint8_t *src, int64_t n, int d, int b, float scale,  \
	    float *x, int stream)                                                        \
	{                                                                                \
		const int nt = hd_streams(x, stream, WIDTH);                                    \
		int rc;                                                                  \
		if (b < 2 || b > 8 || b == 7)                                            \
			return -1;                                                       \
		rc = d == 32 ? hd_##ISA##_bits_d(src, n, scale, x, 32, b, nt) :          \
		    d == 64  ? hd_##ISA##_bits_d(src, n, scale, x, 64, b, nt) :          \
		    d == 128 ? hd_##ISA##_bits_d(src, n, scale, x, 128, b, nt) : -1;     \
		hd_stream_end(nt);                                                       \
		return rc;                                                               \
	}                                                                                \
	__attribute__((target(TARGET))) int                                              \
	hd_##ISA##_q4_ch_rows(const uint8_t *src, int64_t n, int d, float scale,        \
	    float *x, int stream)                                                        \
	{                                                                                \
		const int nt = hd_streams(x, stream, WIDTH);                                    \
		int rc = d == 32 ? hd_##ISA##_q4_ch_d(src, n, scale, x, 32, nt) :        \
		    d == 64      ? hd_##ISA##_q4_ch_d(src, n, scale, x, 64, nt) :        \
		    d == 128     ? hd_##ISA##_q4_ch_d(src, n, scale, x, 128, nt) : -1;   \
		hd_stream_end(nt);                                                       \
		return rc;                                                               \
	}

HD_WALKS(avx2, "avx2,f16c", hd_avx2_finish, 32)
HD_WALKS(512, HD_512, hd_512_finish, 64)

#else

int
hd_avx2_dim_ok(int d)
{
	(void)d;
	return 0;
}

/* never called: hadamard.c has no x86 path here */
void
hd_avx2_rotate_back_row(float *t, int d, float scale)
{
	(void)t, (void)d, (void)scale;
}

/* never called: hd_avx2_dim_ok is 0 */
#define HD_ABSENT(NAME)                                                               \
	int NAME(const uint8_t *src, int64_t n, int d, float scale, float *x,          \
	    int stream)                                                                 \
	{                                                                               \
		(void)src, (void)n, (void)d, (void)scale, (void)x, (void)stream;        \
		return -1;                                                              \
	}
HD_ABSENT(hd_avx2_q4_ch_rows)
HD_ABSENT(hd_512_q4_ch_rows)

int
hd_avx2_bits_rows(const uint8_t *src, int64_t n, int d, int b, float scale, float *x,
    int stream)
{
	(void)src, (void)n, (void)d, (void)b, (void)scale, (void)x, (void)stream;
	return -1;
}

int
hd_512_bits_rows(const uint8_t *src, int64_t n, int d, int b, float scale, float *x,
    int stream)
{
	(void)src, (void)n, (void)d, (void)b, (void)scale, (void)x, (void)stream;
	return -1;
}

#endif
