/*
 * qpack_avx2_inline.h: the AVX2 pieces of qpack's unpacking that its two
 * kernel files share (qpack_avx2.c: the rows as floats; hadamard_simd.c:
 * the rows rotated back in the same pass).  x86 only, and only included
 * inside their `#if` x86 blocks; each piece computes what qpack.c's scalar
 * code does, bit for bit: x̂ = μ + q·δ, the code widened exactly to float,
 * one product, one sum, never fused (no FMA in the targets).
 */
#ifndef SNAPSHOT_QPACK_AVX2_INLINE_H
#define SNAPSHOT_QPACK_AVX2_INLINE_H

#include <immintrin.h>
#include <stdint.h>

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

/* 1 when a stored (δ, μ) pair, as the 32 bits δ | μ << 16, is one
 * qp_pair_ok (qpack.c) refuses: either infinite or NaN, or δ negative. */
static inline __attribute__((always_inline)) int
qp_avx2_pair_bad(uint32_t dm)
{
	return (dm & 0x7c00u) == 0x7c00u || (dm & 0x7c000000u) == 0x7c000000u || (dm & 0x8000u);
}

static inline __attribute__((always_inline)) uint32_t
qp_avx2_get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A stored (δ, μ) pair: 0 and both widened and broadcast, or -1 when
 * qp_pair_ok would refuse it. */
static inline __attribute__((target("avx2,f16c"), always_inline)) int
qp_avx2_pair(const uint8_t *p, __m256 *d, __m256 *m)
{
	uint32_t dm = qp_avx2_get32(p);
	__m128 f;
	if (qp_avx2_pair_bad(dm))
		return -1;
	f = _mm_cvtph_ps(_mm_cvtsi32_si128((int)dm)); /* (δ, μ, 0, 0) */
	*d = _mm256_broadcastss_ps(f);
	*m = _mm256_broadcastss_ps(_mm_movehdup_ps(f));
	return 0;
}

/* The d (δ, μ) pairs that open a per-channel group (d a multiple of 8),
 * checked and widened (F16C, exact) into dd[d] and mm[d]; -1 at a pair
 * qp_pair_ok refuses. */
static inline __attribute__((target("avx2,f16c"), always_inline)) int
qp_avx2_ch_pairs(const uint8_t *src, int d, float *mm, float *dd)
{
	int c;
	for (c = 0; c < d; c += 4) {
		__m128i raw = _mm_loadu_si128((const __m128i *)(const void *)(src + 4 * c));
		/* four pairs as 32-bit words δ | μ << 16: a field is bad when its
		 * exponent bits are all set, or δ's sign bit is */
		__m128i e = _mm_set1_epi32(0x7c007c00), s = _mm_set1_epi32(0x8000);
		__m128i inf = _mm_cmpeq_epi16(_mm_and_si128(raw, e), e);
		__m128 lo, hi;
		if (!_mm_testz_si128(inf, inf) || !_mm_testz_si128(raw, s))
			return -1;
		lo = _mm_cvtph_ps(raw);                      /* δ0 μ0 δ1 μ1 */
		hi = _mm_cvtph_ps(_mm_unpackhi_epi64(raw, raw)); /* δ2 μ2 δ3 μ3 */
		_mm_storeu_ps(dd + c, _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)));
		_mm_storeu_ps(mm + c, _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1)));
	}
	return 0;
}

/* μ + q·δ for eight codes as 32-bit lanes (qp_avx2_deq's steps) */
static inline __attribute__((target("avx2"), always_inline)) __m256
qp_avx2_deq32(__m256i q, __m256 m, __m256 d)
{
	return _mm256_add_ps(m, _mm256_mul_ps(_mm256_cvtepi32_ps(q), d));
}

/* What unpacks a run of eight b-bit codes (b = 2 to 8), built once per
 * block: code i is bits i·b … i·b + b − 1 of the run's b bytes,
 * little-endian (qpack.h), so 32-bit lane i takes the two bytes that hold
 * its bits (pick: bytes i·b/8 and the next, the lane's upper two bytes
 * zeroed; shift + b <= 7 + 8 < 16), shifted right by i·b mod 8, masked. */
struct qp_avx2_bits {
	__m256i pick, shift, mask;
	int b;
};

static inline __attribute__((target("avx2"), always_inline)) void
qp_avx2_bits_init(struct qp_avx2_bits *t, int b)
{
	int32_t pick[8], shift[8];
	int i;
	for (i = 0; i < 8; i++) {
		pick[i] = i * b / 8 | (i * b / 8 + 1) << 8 | (int32_t)0x80800000u;
		shift[i] = i * b % 8;
	}
	t->pick = _mm256_loadu_si256((const __m256i *)(const void *)pick);
	t->shift = _mm256_loadu_si256((const __m256i *)(const void *)shift);
	t->mask = _mm256_set1_epi32((1 << b) - 1);
	t->b = b;
}

/* One run's eight codes (its b bytes at p) as 32-bit lanes.  16 bytes at
 * p must be readable (qp_avx2_bits_tail says where they are not); the
 * bytes past the run's are masked away. */
static inline __attribute__((target("avx2"), always_inline)) __m256i
qp_avx2_run(const uint8_t *p, const struct qp_avx2_bits *t)
{
	__m256i w = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)p));
	w = _mm256_srlv_epi32(_mm256_shuffle_epi8(w, t->pick), t->shift);
	return _mm256_and_si256(w, t->mask);
}

/* How many of the last units (groups, or rows of whole groups, of
 * unit_bytes each) of a block of the b-bit row form would read past its
 * end with qp_avx2_run's 16-byte loads: a unit's last run starts b bytes
 * before its end, so a unit needs 16 − b readable bytes after it. */
static inline __attribute__((always_inline)) int64_t
qp_avx2_bits_tail(int64_t unit_bytes, int b)
{
	return (16 - b + unit_bytes - 1) / unit_bytes;
}

/* A group of the b-bit row form ((δ, μ), then four runs of b bytes) into
 * f[4]; -1 when qp_pair_ok would refuse its pair. */
static inline __attribute__((target("avx2,f16c"), always_inline)) int
qp_avx2_bits_group(const uint8_t *src, const struct qp_avx2_bits *t, __m256 *f)
{
	const int b = t->b;
	__m256 vd, vm;
	if (qp_avx2_pair(src, &vd, &vm))
		return -1;
	f[0] = qp_avx2_deq32(qp_avx2_run(src + 4, t), vm, vd);
	f[1] = qp_avx2_deq32(qp_avx2_run(src + 4 + b, t), vm, vd);
	f[2] = qp_avx2_deq32(qp_avx2_run(src + 4 + 2 * b, t), vm, vd);
	f[3] = qp_avx2_deq32(qp_avx2_run(src + 4 + 3 * b, t), vm, vd);
	return 0;
}

#endif /* SNAPSHOT_QPACK_AVX2_INLINE_H */
