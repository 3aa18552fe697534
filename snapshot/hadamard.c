/*
 * hadamard.c: the orthonormal Walsh-Hadamard rotation of rows (contract in
 * hadamard.h).  Pure function of its arguments, safe from any thread.
 *
 * The AVX2 path does the same double operations per value as the scalar
 * one (each butterfly's a + b and a − b, the widening, the one product by
 * the scale and the rounding to float), four values at a time, so its rows
 * are the scalar rows bit for bit (tests/test_snapshot_load.c).  The
 * loader's rotation back (hd_rotate_back_rows, and hadamard_simd.c's
 * fused kernels) is the same transform in float: hd_row_f_scalar, and
 * hadamard_simd.c's hd_avx2_rotate_back_row.
 */
#include <math.h>
#include <stddef.h>

#include "snapshot/hadamard.h"
#include "snapshot/hadamard_simd.h"
#include "snapshot/qpack_avx2.h" /* for qp_avx2 */

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HD_X86 1
#else
#define HD_X86 0
#endif

int
hd_dim_ok(int d)
{
	return d >= 2 && d <= HD_MAX_DIM && (d & (d - 1)) == 0;
}

/* The k rounds of butterflies on t[d] in type T (double: the encoder's,
 * float: the loader's): after the round of span len, t holds the row's
 * transforms over blocks of 2·len. */
#define HD_BUTTERFLIES(T, t, d)                                                  \
	do {                                                                     \
		int i_, j_, len_;                                                \
		for (len_ = 1; len_ < (d); len_ <<= 1)                           \
			for (i_ = 0; i_ < (d); i_ += len_ << 1)                  \
				for (j_ = i_; j_ < i_ + len_; j_++) {            \
					T a_ = (t)[j_], b_ = (t)[j_ + len_];     \
					(t)[j_] = a_ + b_;                       \
					(t)[j_ + len_] = a_ - b_;                \
				}                                                \
	} while (0)

static void
hd_row_scalar(float *row, int d, double scale)
{
	double t[HD_MAX_DIM];
	int i;
	for (i = 0; i < d; i++)
		t[i] = row[i];
	HD_BUTTERFLIES(double, t, d);
	for (i = 0; i < d; i++)
		row[i] = (float)(t[i] * scale);
}

#if HD_X86
/* d >= 4.  Spans 1 and 2 inside a vector of four (blends of the sums and
 * differences), wider spans between vectors. */
static __attribute__((target("avx2"))) void
hd_row_avx2(float *row, int d, double scale)
{
	double t[HD_MAX_DIM] __attribute__((aligned(32)));
	__m256d s = _mm256_set1_pd(scale);
	int i, j, len;
	for (i = 0; i < d; i += 4) {
		__m256d a = _mm256_cvtps_pd(_mm_loadu_ps(row + i)), p;
		/* span 1: (t0 + t1, t0 − t1, t2 + t3, t2 − t3) */
		a = _mm256_blend_pd(_mm256_hadd_pd(a, a), _mm256_hsub_pd(a, a), 0xa);
		/* span 2: (t0 + t2, t1 + t3, t0 − t2, t1 − t3) */
		p = _mm256_permute2f128_pd(a, a, 0x01);
		a = _mm256_blend_pd(_mm256_add_pd(a, p), _mm256_sub_pd(p, a), 0xc);
		_mm256_store_pd(t + i, a);
	}
	for (len = 4; len < d; len <<= 1)
		for (i = 0; i < d; i += len << 1)
			for (j = i; j < i + len; j += 4) {
				__m256d a = _mm256_load_pd(t + j), b = _mm256_load_pd(t + j + len);
				_mm256_store_pd(t + j, _mm256_add_pd(a, b));
				_mm256_store_pd(t + j + len, _mm256_sub_pd(a, b));
			}
	for (i = 0; i < d; i += 4)
		_mm_storeu_ps(row + i, _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_load_pd(t + i), s)));
}
#endif

/* The scale of the loader's transform, rounded to float once: 1/sqrt(d). */
static float
hd_scale_f(int d)
{
	return (float)(1.0 / sqrt((double)d));
}

/* The loader's rotation of one row, in float: the same butterflies, each
 * a + b and a − b rounded to float, then the product by scale. */
static void
hd_row_f_scalar(float *t, int d, float scale)
{
	int i;
	HD_BUTTERFLIES(float, t, d);
	for (i = 0; i < d; i++)
		t[i] *= scale;
}

/* n rows rotated one by one: in double (the encoder's) or, back, in float
 * (the loader's). */
static void
hd_rows(float *x, int64_t n, int d, int back)
{
	double scale;
	float scale_f;
	int64_t r;
#if HD_X86
	int simd = d >= (back ? 8 : 4) && qp_avx2();
#endif

	if (!hd_dim_ok(d))
		return;
	scale = 1.0 / sqrt((double)d);
	scale_f = hd_scale_f(d);
	for (r = 0; r < n; r++) {
		float *row = x + (size_t)r * (size_t)d;
#if HD_X86
		if (simd) {
			if (back)
				hd_avx2_rotate_back_row(row, d, scale_f);
			else
				hd_row_avx2(row, d, scale);
			continue;
		}
#endif
		if (back)
			hd_row_f_scalar(row, d, scale_f);
		else
			hd_row_scalar(row, d, scale);
	}
}

void
hd_rotate_rows(float *x, int64_t n, int d)
{
	hd_rows(x, n, d, 0);
}

void
hd_rotate_back_rows(float *x, int64_t n, int d)
{
	hd_rows(x, n, d, 1);
}

int
hd_unpack_rows(enum qp_scheme s, const uint8_t *src, int64_t n, int d, float *dst, int stream)
{
	float scale = hd_dim_ok(d) ? hd_scale_f(d) : 1.0f; /* hd_rotate_back_rows' */
	int level = dst && hd_dim_ok(d) && hd_avx2_dim_ok(d) ? qp_simd_level() : 0;
	if (level && s == QP_Q4_CH)
		return level >= 2 ? hd_512_q4_ch_rows(src, n, d, scale, dst, stream) :
		    hd_avx2_q4_ch_rows(src, n, d, scale, dst, stream);
	if (level && s != QP_F16 && s != QP_Q4_CH) /* the row forms: q4, q8, b-bit */
		return level >= 2 ? hd_512_bits_rows(src, n, d, qp_row_bits(s), scale, dst, stream) :
		    hd_avx2_bits_rows(src, n, d, qp_row_bits(s), scale, dst, stream);
	if (qp_decode(s, src, n, d, dst))
		return -1;
	if (dst)
		hd_rotate_back_rows(dst, n, d);
	return 0;
}
