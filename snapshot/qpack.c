/*
 * qpack.c: fp16, q4, q8 and b-bit (2, 3, 5, 6) packing of K / V rows (layouts and the rounding
 * rules in qpack.h).  Pure functions of their arguments: no allocation, no
 * state, safe from any thread.
 */
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"   /* for kern_f32_to_f16, kern_f16_to_f32 */
#include "kernels/rope_rows.h" /* for kern_f16_to_f32_rows */
#include "snapshot/qpack.h"
#include "snapshot/qpack_avx2.h"

#define QP_MAX_DIM 1024 /* the widest row decoded (snapshot.c's head_dim limit) */

#define QP_F16_MAX 65504.0f

/* ------------------------------------------------------------------------ */
/* fp16 helpers                                                              */

static void
qp_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static uint16_t
qp_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

/* The next fp16 above / below h (finite h; ±0 step to the smallest
 * subnormal of the other side's sign). */
static uint16_t
qp_f16_up_step(uint16_t h)
{
	if (h == 0x8000)
		return 0x0001;
	return (h & 0x8000) ? (uint16_t)(h - 1) : (uint16_t)(h + 1);
}

static uint16_t
qp_f16_down_step(uint16_t h)
{
	if (h == 0x0000)
		return 0x8001;
	return (h & 0x8000) ? (uint16_t)(h + 1) : (uint16_t)(h - 1);
}

/* Largest fp16 <= x and smallest fp16 >= x, for |x| <= 65504 (directed
 * rounding keeps every value of a group inside [μ, μ + 15δ]). */
static uint16_t
qp_f16_floor(double x)
{
	uint16_t h = kern_f32_to_f16((float)x);
	while ((double)kern_f16_to_f32(h) > x)
		h = qp_f16_down_step(h);
	return h;
}

static uint16_t
qp_f16_ceil(double x)
{
	uint16_t h = kern_f32_to_f16((float)x);
	while ((double)kern_f16_to_f32(h) < x)
		h = qp_f16_up_step(h);
	return h;
}

static int
qp_f16_finite(uint16_t h)
{
	return (h & 0x7c00) != 0x7c00;
}

static float
qp_sat(float x)
{
	return x > QP_F16_MAX ? QP_F16_MAX : x < -QP_F16_MAX ? -QP_F16_MAX : x;
}

/* ------------------------------------------------------------------------ */
/* q4 / q8 core (levels L = 15 or 255)                                      */

struct qp_q4 {
	uint16_t d16, m16; /* as stored */
	double d, m;       /* their values */
	unsigned levels;   /* L: the largest code */
};

/* Scale and min of n values x[0], x[stride], … (saturated, no NaN). */
static struct qp_q4
qp_fit(const float *x, int64_t n, size_t stride, unsigned levels)
{
	struct qp_q4 q;
	float lo = qp_sat(x[0]), hi = lo;
	int64_t i;
	for (i = 1; i < n; i++) {
		float v = qp_sat(x[(size_t)i * stride]);
		lo = v < lo ? v : lo;
		hi = v > hi ? v : hi;
	}
	q.levels = levels;
	q.m16 = qp_f16_floor(lo);
	q.m = kern_f16_to_f32(q.m16);
	q.d16 = qp_f16_ceil(((double)hi - q.m) / levels);
	while (q.m + (double)levels * kern_f16_to_f32(q.d16) < (double)hi)
		q.d16 = qp_f16_up_step(q.d16); /* the division rounded down */
	q.d = kern_f16_to_f32(q.d16);
	return q;
}

static unsigned
qp_code(const struct qp_q4 *q, float x)
{
	double t;
	if (q->d == 0.0)
		return 0;
	t = floor(((double)qp_sat(x) - q->m) / q->d + 0.5);
	return t < 0.0 ? 0u : t > (double)q->levels ? q->levels : (unsigned)t;
}

/* x̂ = μ + q·δ in float, two statements so no compiler fuses them. */
static float
qp_dequant(float m, float d, unsigned q)
{
	float t = (float)q * d;
	return m + t;
}

/* A stored (δ, μ) pair is usable: both finite, δ not negative. */
static int
qp_pair_ok(uint16_t d16, uint16_t m16)
{
	return qp_f16_finite(d16) && qp_f16_finite(m16) && !(d16 & 0x8000);
}

static int
qp_has_nan(const float *x, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		if (isnan(x[i]))
			return 1;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Schemes                                                                   */

int
qp_row_bits(enum qp_scheme s)
{
	switch (s) {
	case QP_Q4:
		return 4;
	case QP_Q8:
		return 8;
	case QP_B2:
		return 2;
	case QP_B3:
		return 3;
	case QP_B5:
		return 5;
	case QP_B6:
		return 6;
	case QP_F16:
	case QP_Q4_CH:
		break;
	}
	return 0;
}

uint64_t
qp_bytes(enum qp_scheme s, uint64_t n, int d)
{
	uint64_t du = (uint64_t)d;
	if (s == QP_F16)
		return 2 * n * du;
	if (s == QP_Q4_CH)
		return (n + QP_GROUP - 1) / QP_GROUP * 4 * du + n * du / 2;
	/* along the row: per group of 32, δ and μ, then 4·b bytes of codes */
	return n * (du / QP_GROUP) * (4 + 4 * (uint64_t)qp_row_bits(s));
}

static void
qp_f16_encode(const float *src, size_t n, uint8_t *dst)
{
	size_t i;
	for (i = 0; i < n; i++)
		qp_put16(dst + 2 * i, kern_f32_to_f16(src[i]));
}

/* b-bit codes (b <= 8) along the row: a group's 32 codes are 4 runs of 8,
 * each run b bytes holding its codes little-endian (qpack.h's layout; q4
 * and q8 are it at b = 4 and 8). */
static void
qp_bits_row_encode(const float *src, int64_t n, int d, int b, uint8_t *dst)
{
	int64_t r;
	int g, k, i;
	for (r = 0; r < n; r++)
		for (g = 0; g < d / QP_GROUP; g++) {
			const float *x = src + (size_t)r * (size_t)d + (size_t)g * QP_GROUP;
			struct qp_q4 q = qp_fit(x, QP_GROUP, 1, (1u << b) - 1);
			qp_put16(dst, q.d16);
			qp_put16(dst + 2, q.m16);
			for (k = 0; k < QP_GROUP / 8; k++) {
				uint64_t w = 0;
				for (i = 0; i < 8; i++)
					w |= (uint64_t)qp_code(&q, x[8 * k + i]) << (i * b);
				for (i = 0; i < b; i++)
					dst[4 + k * b + i] = (uint8_t)(w >> (8 * i));
			}
			dst += 4 + 4 * b;
		}
}

/* A stored (δ, μ) pair read back, as the decoder will see it. */
static struct qp_q4
qp_pair_read(const uint8_t *p)
{
	struct qp_q4 q;
	q.d16 = qp_get16(p);
	q.m16 = qp_get16(p + 2);
	q.d = kern_f16_to_f32(q.d16);
	q.m = kern_f16_to_f32(q.m16);
	q.levels = 15;
	return q;
}

/* One group of gn <= 32 rows: d (δ, μ) pairs, then gn rows of codes. */
static uint8_t *
qp_q4_ch_group_encode(const float *src, int64_t gn, int d, uint8_t *dst)
{
	uint8_t *codes = dst + 4 * (size_t)d;
	int64_t r;
	int c;
	for (c = 0; c < d; c++) {
		struct qp_q4 q = qp_fit(src + c, gn, (size_t)d, 15);
		qp_put16(dst + 4 * c, q.d16);
		qp_put16(dst + 4 * c + 2, q.m16);
	}
	for (c = 0; c < d; c += 2) {
		struct qp_q4 q0 = qp_pair_read(dst + 4 * c), q1 = qp_pair_read(dst + 4 * c + 4);
		for (r = 0; r < gn; r++) {
			const float *x = src + (size_t)r * (size_t)d + (size_t)c;
			codes[(size_t)r * (size_t)(d / 2) + (size_t)(c / 2)] =
			    (uint8_t)(qp_code(&q0, x[0]) | qp_code(&q1, x[1]) << 4);
		}
	}
	return codes + (size_t)gn * (size_t)(d / 2);
}

int
qp_encode(enum qp_scheme s, const float *src, int64_t n, int d, uint8_t *dst)
{
	int64_t g;
	if (s == QP_F16) {
		qp_f16_encode(src, (size_t)n * (size_t)d, dst);
		return 0;
	}
	if (qp_has_nan(src, (size_t)n * (size_t)d))
		return -1;
	if (s != QP_Q4_CH) {
		qp_bits_row_encode(src, n, d, qp_row_bits(s), dst);
		return 0;
	}
	for (g = 0; g < n; g += QP_GROUP)
		dst = qp_q4_ch_group_encode(src + (size_t)g * (size_t)d,
		    n - g < QP_GROUP ? n - g : QP_GROUP, d, dst);
	return 0;
}


/* Scalar (every row scheme where qpack_avx2.c does not run, and their
 * validation): a run of 8 codes is read as one little-endian word of b
 * bytes; the definition qpack_avx2.c's kernels equal bit for bit
 * (tests/test_qpack_simd.c; speeds in bench/RESULTS.md, "SIMD unpacking
 * of the b-bit forms"). */
static int
qp_bits_row_decode(const uint8_t *src, int64_t n, int d, int b, float *dst)
{
	const unsigned mask = (1u << b) - 1;
	int64_t r;
	int g, k, i;
	for (r = 0; r < n; r++)
		for (g = 0; g < d / QP_GROUP; g++, src += 4 + 4 * b) {
			uint16_t d16 = qp_get16(src), m16 = qp_get16(src + 2);
			float dd, mm, *x;
			if (!qp_pair_ok(d16, m16))
				return -1;
			if (!dst)
				continue;
			dd = kern_f16_to_f32(d16);
			mm = kern_f16_to_f32(m16);
			x = dst + (size_t)r * (size_t)d + (size_t)g * QP_GROUP;
			for (k = 0; k < QP_GROUP / 8; k++) {
				const uint8_t *c = src + 4 + k * b;
				uint64_t w = 0;
				for (i = 0; i < b; i++)
					w |= (uint64_t)c[i] << (8 * i);
				for (i = 0; i < 8; i++)
					x[8 * k + i] = qp_dequant(mm, dd, (unsigned)(w >> (i * b)) & mask);
			}
		}
	return 0;
}

static int
qp_q4_ch_group_decode(const uint8_t *src, int64_t gn, int d, float *dst)
{
	const uint8_t *codes = src + 4 * (size_t)d;
	float mm[QP_MAX_DIM], dd[QP_MAX_DIM];
	int64_t r;
	int c;
	if (dst && d % QP_GROUP == 0 && d <= QP_MAX_DIM && qp_avx2()) /* the group in one loop */
		return qp_avx2_q4_ch_group(src, gn, d, dst);
	for (c = 0; c < d; c++)
		if (!qp_pair_ok(qp_get16(src + 4 * c), qp_get16(src + 4 * c + 2)))
			return -1;
	if (!dst)
		return 0;
	if (d > QP_MAX_DIM) { /* never from snapshot.c; each scale converted in place */
		for (r = 0; r < gn; r++)
			for (c = 0; c < d; c++) {
				unsigned b = codes[(size_t)r * (size_t)(d / 2) + (size_t)(c / 2)];
				dst[(size_t)r * (size_t)d + (size_t)c] =
				    qp_dequant(kern_f16_to_f32(qp_get16(src + 4 * c + 2)),
					kern_f16_to_f32(qp_get16(src + 4 * c)), (c & 1) ? b >> 4 : b & 15u);
			}
		return 0;
	}
	for (c = 0; c < d; c++) {
		dd[c] = kern_f16_to_f32(qp_get16(src + 4 * c));
		mm[c] = kern_f16_to_f32(qp_get16(src + 4 * c + 2));
	}
	for (r = 0; r < gn; r++) {
		const uint8_t *row = codes + (size_t)r * (size_t)(d / 2);
		float *x = dst + (size_t)r * (size_t)d;
		for (c = 0; c < d; c++)
			x[c] = qp_dequant(mm[c], dd[c], (c & 1) ? (unsigned)row[c / 2] >> 4 :
			    row[c / 2] & 15u);
	}
	return 0;
}

int
qp_decode(enum qp_scheme s, const uint8_t *src, int64_t n, int d, float *dst)
{
	int64_t g;
	if (s == QP_F16) {
		if (dst) /* kern_f16_to_f32 of each, SIMD where the CPU has it */
			kern_f16_to_f32_rows(src, dst, n * d);
		return 0;
	}
	if (dst && s == QP_Q4 && qp_avx2()) /* the whole block in one loop */
		return qp_avx2_q4_rows(src, n * (d / QP_GROUP), dst);
	if (dst && s == QP_Q8 && qp_avx2())
		return qp_avx2_q8_rows(src, n * (d / QP_GROUP), dst);
	if (dst && s >= QP_B2 && s <= QP_B6 && qp_avx2())
		return qp_avx2_bits_rows(src, n * (d / QP_GROUP), qp_row_bits(s), dst);
	if (s != QP_Q4_CH)
		return qp_bits_row_decode(src, n, d, qp_row_bits(s), dst);
	for (g = 0; g < n; g += QP_GROUP) {
		int64_t gn = n - g < QP_GROUP ? n - g : QP_GROUP;
		if (qp_q4_ch_group_decode(src, gn, d, dst ? dst + (size_t)g * (size_t)d : NULL))
			return -1;
		src += qp_bytes(QP_Q4_CH, (uint64_t)gn, d);
	}
	return 0;
}
