/*
 * vec_dot.c: dot products of weight rows with activations, the f32 dot, and
 * block dequantization of whole rows; each in plain C plus x86 fast paths.
 *
 * Pairings (as llama.cpp's CPU backend): a Q4_0, Q5_0 or Q8_0 row meets
 * Q8_0 activations, a Q4_1 or Q5_1 row meets Q8_1 activations, and per
 * block of 32
 *     Q4_0, Q5_0, Q8_0: d_w·d_x·Σ q_w·q_x
 *     Q4_1, Q5_1:       d_w·d_x·Σ q_w·q_x + m_w·s_x
 * with Σ exact in integers.  K-quant rows meet Q8_K (vec_dot_k.c).  F16 and
 * BF16 rows meet f32 activations: widened 8 at a time into FMAs (AVX2), or
 * dequantized 256 at a time into a stack buffer and dotted (scalar).
 *
 * Levels (chosen once from the running CPU, overridable for tests):
 *   scalar  the reference; sums blocks in order.
 *   avx2    AVX2 + FMA + F16C; u8·s8 dots with vpmaddubsw + vpmaddwd.
 *   avx512  AVX-512 VNNI on 256-bit vectors: vpdpbusd does the u8·s8 dot
 *           straight into int32.  It needs an unsigned operand, so Q4_0 dots
 *           the raw nibble n = q + 8 and Q8_0 dots q ^ 0x80 = q + 128, with
 *           the accumulator starting at −8·Σx (−128·Σx) per lane, computed
 *           once per activation block.  512-bit vectors only for the f32 dot.
 * Integer sums are exact at every level, so the levels differ from scalar
 * only in the order of the f32 sums over blocks (lanes, then a horizontal
 * add): |simd − scalar| ≤ ~(n/32)·2^-24·Σ_blocks |term|; the tests use
 * 1e-5·Σ|term|.  The AVX2 Q8_0 path saturates (like ggml's) only where both
 * products of a pair are (−128)·(−128), which ggml's quantizers never emit.
 *
 * The hot path is kern_cpu_vec_dot_rows on Q4_1 and Q8_0 during decode.  It
 * takes four rows per pass (layout below), and on this class of machine runs
 * at the memory bandwidth of one core once the matrix is out of L2.
 *
 * Each fast function carries its own target attribute, so this file builds
 * with plain -O2 and runs on any x86-64; elsewhere only scalar exists.
 * kern_cpu_dequant_rows must equal kern_dequant_row bit for bit, so its SIMD
 * code converts, multiplies and adds exactly as quant.c does.
 */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/simd.h"

#define KERN_DEQ_CHUNK 256   /* elements dequantized at a time for f32 dots */

/* Unaligned little-endian loads. */
static inline uint16_t
kern_ld16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t
kern_ld32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

/* ------------------------------------------------------------------------ */
/* SIMD level selection                                                      */

static atomic_int kern_cpu_level = -1; /* -1: not chosen yet */

int
kern_cpu_simd_detect(void)
{
#if KERN_X86
	__builtin_cpu_init();
	/* F16C is not a __builtin_cpu_supports name in every compiler; every
	 * CPU with AVX2 and FMA has it. */
	if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
		return KERN_CPU_SIMD_SCALAR;
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni"))
		return KERN_CPU_SIMD_AVX512;
	return KERN_CPU_SIMD_AVX2;
#else
	return KERN_CPU_SIMD_SCALAR;
#endif
}

int
kern_cpu_simd_level(void)
{
	int l = atomic_load_explicit(&kern_cpu_level, memory_order_relaxed);

	if (l < 0) { /* racing first callers all store the same value */
		l = kern_cpu_simd_detect();
		atomic_store_explicit(&kern_cpu_level, l, memory_order_relaxed);
	}
	return l;
}

int
kern_cpu_force_simd(int level)
{
	if (level == KERN_CPU_SIMD_AUTO)
		level = kern_cpu_simd_detect();
	if (level < KERN_CPU_SIMD_SCALAR || level > kern_cpu_simd_detect())
		return -1;
	atomic_store_explicit(&kern_cpu_level, level, memory_order_relaxed);
	return 0;
}

const char *
kern_simd_name(void)
{
	switch (kern_cpu_simd_level()) {
	case KERN_CPU_SIMD_AVX512:
		return "avx512";
	case KERN_CPU_SIMD_AVX2:
		return "avx2";
	default:
		return "scalar";
	}
}

/* ------------------------------------------------------------------------ */
/* Scalar reference                                                          */

/* One Q4_0 row · Q8_0 activations, nb blocks. */
static float
kern_scalar_q4_0(const uint8_t *x, const struct kern_block_q8_0 *y, int64_t nb)
{
	float sum = 0.0f;
	int64_t ib;
	int j;

	for (ib = 0; ib < nb; ib++, x += sizeof(struct kern_block_q4_0)) {
		const uint8_t *qs = x + 2;
		int isum = 0;
		for (j = 0; j < KERN_QK / 2; j++)
			isum += ((qs[j] & 0xf) - 8) * y[ib].qs[j] +
			    ((qs[j] >> 4) - 8) * y[ib].qs[j + 16];
		sum += kern_f16_to_f32(kern_ld16(x)) * kern_f16_to_f32(y[ib].d) * (float)isum;
	}
	return sum;
}

/* One Q4_1 row · Q8_1 activations. */
static float
kern_scalar_q4_1(const uint8_t *x, const struct kern_block_q8_1 *y, int64_t nb)
{
	float sum = 0.0f;
	int64_t ib;
	int j;

	for (ib = 0; ib < nb; ib++, x += sizeof(struct kern_block_q4_1)) {
		const uint8_t *qs = x + 4;
		int isum = 0;
		for (j = 0; j < KERN_QK / 2; j++)
			isum += (qs[j] & 0xf) * y[ib].qs[j] + (qs[j] >> 4) * y[ib].qs[j + 16];
		sum += kern_f16_to_f32(kern_ld16(x)) * kern_f16_to_f32(y[ib].d) * (float)isum +
		    kern_f16_to_f32(kern_ld16(x + 2)) * kern_f16_to_f32(y[ib].s);
	}
	return sum;
}

/* One Q8_0 row · Q8_0 activations. */
static float
kern_scalar_q8_0(const uint8_t *x, const struct kern_block_q8_0 *y, int64_t nb)
{
	float sum = 0.0f;
	int64_t ib;
	int j;

	for (ib = 0; ib < nb; ib++, x += sizeof(struct kern_block_q8_0)) {
		const int8_t *qs = (const int8_t *)(x + 2);
		int isum = 0;
		for (j = 0; j < KERN_QK; j++)
			isum += qs[j] * y[ib].qs[j];
		sum += kern_f16_to_f32(kern_ld16(x)) * kern_f16_to_f32(y[ib].d) * (float)isum;
	}
	return sum;
}

/* One Q5_0 row · Q8_0 activations (has_min 0) or Q5_1 · Q8_1 (has_min 1):
 * as Q4_0 / Q4_1 with the 5th bit of element j from bit j of qh. */
static float
kern_scalar_q5(const uint8_t *x, const void *act, int64_t nb, int has_min)
{
	const size_t bb = has_min ? sizeof(struct kern_block_q5_1) : sizeof(struct kern_block_q5_0);
	const size_t yb = has_min ? sizeof(struct kern_block_q8_1) : sizeof(struct kern_block_q8_0);
	const size_t qo = has_min ? 4 : 2; /* qh, then qs, after the f16 fields */
	float sum = 0.0f;
	int64_t ib;
	int j;

	for (ib = 0; ib < nb; ib++, x += bb) {
		const uint8_t *y = (const uint8_t *)act + (size_t)ib * yb;
		const int8_t *yq = (const int8_t *)(y + qo);
		const uint8_t *qs = x + qo + 4;
		const uint32_t qh = kern_ld32(x + qo);
		const int off = has_min ? 0 : 16;
		int isum = 0;
		for (j = 0; j < KERN_QK / 2; j++) {
			int q0 = ((qs[j] & 0xf) | (int)((qh >> j) & 1) << 4) - off;
			int q1 = ((qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4) - off;
			isum += q0 * yq[j] + q1 * yq[j + 16];
		}
		sum += kern_f16_to_f32(kern_ld16(x)) * kern_f16_to_f32(kern_ld16(y)) * (float)isum;
		if (has_min)
			sum += kern_f16_to_f32(kern_ld16(x + 2)) * kern_f16_to_f32(kern_ld16(y + 2));
	}
	return sum;
}

/* f32 dot with four partial sums. */
static float
kern_scalar_dot_f32(const float *a, const float *b, int64_t n)
{
	float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
	int64_t i;

	for (i = 0; i + 4 <= n; i += 4) {
		s0 += a[i] * b[i];
		s1 += a[i + 1] * b[i + 1];
		s2 += a[i + 2] * b[i + 2];
		s3 += a[i + 3] * b[i + 3];
	}
	for (; i < n; i++)
		s0 += a[i] * b[i];
	return (s0 + s1) + (s2 + s3);
}

#if KERN_X86
#include "kernels/cpu/simd_x86.h"

/* Driver for the four-row kernels: whole groups of four, then a short last
 * group that repeats its last row, so every row gets the same arithmetic
 * wherever it falls (vec_dot_rows equals vec_dot bit for bit).  The next
 * group's rows (adjacent, one region) are prefetched either spread over the
 * kernel's blocks (spread 1: the kernel walks pf, n_pf, rb with
 * kern_avx2_pf_start + kern_avx2_pf_block; the AVX2 kernels) or, before
 * each group, as one burst of the rows KERN_PREFETCH_BYTES ahead (spread 0:
 * the AVX-512 kernels, measured so on the Intel VM). */
#define KERN_X4_DRIVER(name, kernel, ytype, attr, spread)                      \
	static attr void name(const uint8_t *x, size_t rb, int64_t n_rows,     \
	    const ytype *y, int64_t nb, float *out)                            \
	{                                                                      \
		const uint8_t *p[4], *end = x + (size_t)n_rows * rb;           \
		float o[4];                                                    \
		int64_t r = 0, k;                                              \
		for (; r + 4 <= n_rows; r += 4) {                              \
			const int64_t next = n_rows - r - 4;                   \
			for (k = 0; k < 4; k++)                                \
				p[k] = x + (size_t)(r + k) * rb;               \
			if (!(spread))                                         \
				kern_x86_prefetch(p[0], KERN_PREFETCH_BYTES, 4 * rb, end); \
			kernel(p, y, nb, p[0] + 4 * rb,                        \
			    (spread) ? (int)(next < 4 ? next : 4) : 0, rb, out + r); \
		}                                                              \
		if (r == n_rows)                                               \
			return;                                                \
		for (k = 0; k < 4; k++)                                        \
			p[k] = x + (size_t)(r + k < n_rows ? r + k : n_rows - 1) * rb; \
		kernel(p, y, nb, NULL, 0, rb, o);                              \
		for (k = 0; r + k < n_rows; k++)                               \
			out[r + k] = o[k];                                     \
	}

/* ------------------------------------------------------------------------ */
/* AVX2 + FMA + F16C: u8·s8 dots with vpmaddubsw, then vpmaddwd into int32   */

/* Four Q4_1 rows · Q8_1.  The two vpmaddubsw results (low nibbles · x[0..15],
 * high nibbles · x[16..31]) are added in int16 (|each| ≤ 2·15·128) before
 * one vpmaddwd. */
static inline KERN_AVX2_INLINE void
kern_avx2_q4_1_x4(const uint8_t *const x[4], const struct kern_block_q8_1 *y, int64_t nb,
    const uint8_t *pf, int n_pf, size_t rb, float out[4])
{
	const __m256i m4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
	__m256 acc = _mm256_setzero_ps(), ms = _mm256_setzero_ps();
	float m[8];
	struct kern_pf_walk pw;
	int64_t ib;
	int r;

	kern_avx2_pf_start(&pw, pf, n_pf, rb, sizeof(struct kern_block_q4_1));
	for (ib = 0; ib < nb; ib++) {
		const uint8_t *yb = (const uint8_t *)(y + ib);
		const size_t off = (size_t)ib * sizeof(struct kern_block_q4_1);
		kern_avx2_pf_block(&pw);
		const __m256i ylo = kern_avx2_bcast128(yb + 4), yhi = kern_avx2_bcast128(yb + 20);
		const __m256i v01 = kern_avx2_load2x128(x[0] + off + 4, x[1] + off + 4);
		const __m256i v23 = kern_avx2_load2x128(x[2] + off + 4, x[3] + off + 4);
		const __m256i p01 = _mm256_madd_epi16(_mm256_add_epi16(
		    _mm256_maddubs_epi16(_mm256_and_si256(v01, m4), ylo),
		    _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v01, 4), m4), yhi)), ones);
		const __m256i p23 = _mm256_madd_epi16(_mm256_add_epi16(
		    _mm256_maddubs_epi16(_mm256_and_si256(v23, m4), ylo),
		    _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v23, 4), m4), yhi)), ones);
		/* [d_w·d_x, m_w·s_x] per row */
		const __m256 f = kern_avx2_f16x2x4(x, off, kern_avx2_bcast_pair(kern_avx2_f16x2(yb)));
		ms = _mm256_add_ps(ms, f);
		acc = _mm256_fmadd_ps(kern_avx2_scale4(f), kern_avx2_fold2(p01, p23), acc);
	}
	kern_avx2_unfold(acc, out);
	_mm256_storeu_ps(m, ms);
	for (r = 0; r < 4; r++)
		out[r] += m[2 * r + 1];
}

/* Four Q4_0 rows · Q8_0: Σ (n − 8)·q = Σ n·q − 8·Σ q, the correction taken
 * in int16 once per activation block. */
static inline KERN_AVX2_INLINE void
kern_avx2_q4_0_x4(const uint8_t *const x[4], const struct kern_block_q8_0 *y, int64_t nb,
    const uint8_t *pf, int n_pf, size_t rb, float out[4])
{
	const __m256i m4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
	const __m256i eight = _mm256_set1_epi8(8);
	const __m128 dmask = _mm_castsi128_ps(_mm_setr_epi32(-1, 0, 0, 0));
	__m256 acc = _mm256_setzero_ps();
	struct kern_pf_walk pw;
	int64_t ib;

	kern_avx2_pf_start(&pw, pf, n_pf, rb, sizeof(struct kern_block_q4_0));
	for (ib = 0; ib < nb; ib++) {
		const uint8_t *yb = (const uint8_t *)(y + ib);
		const size_t off = (size_t)ib * sizeof(struct kern_block_q4_0);
		kern_avx2_pf_block(&pw);
		const __m256i ylo = kern_avx2_bcast128(yb + 2), yhi = kern_avx2_bcast128(yb + 18);
		const __m256i corr = _mm256_add_epi16(_mm256_maddubs_epi16(eight, ylo),
		    _mm256_maddubs_epi16(eight, yhi));
		const __m256i v01 = kern_avx2_load2x128(x[0] + off + 2, x[1] + off + 2);
		const __m256i v23 = kern_avx2_load2x128(x[2] + off + 2, x[3] + off + 2);
		const __m256i p01 = _mm256_madd_epi16(_mm256_sub_epi16(_mm256_add_epi16(
		    _mm256_maddubs_epi16(_mm256_and_si256(v01, m4), ylo),
		    _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v01, 4), m4), yhi)),
		    corr), ones);
		const __m256i p23 = _mm256_madd_epi16(_mm256_sub_epi16(_mm256_add_epi16(
		    _mm256_maddubs_epi16(_mm256_and_si256(v23, m4), ylo),
		    _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v23, 4), m4), yhi)),
		    corr), ones);
		const __m256 f = kern_avx2_f16x2x4(x, off,
		    kern_avx2_bcast_pair(_mm_and_ps(kern_avx2_f16x2(yb), dmask)));
		acc = _mm256_fmadd_ps(kern_avx2_scale4(f), kern_avx2_fold2(p01, p23), acc);
	}
	kern_avx2_unfold(acc, out);
}

/* Σ over 16 byte pairs of w·x (both signed), as |w| · (x with w's sign) in
 * int32 lanes, each half of the vector separately.  Saturates only if both
 * products of a pair are (−128)·(−128), as in ggml. */
static inline KERN_AVX2_INLINE __m256i
kern_avx2_dot_s8(__m256i w, __m256i x)
{
	return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(w, w),
	    _mm256_sign_epi8(x, w)), _mm256_set1_epi16(1));
}

/* Four Q8_0 rows · Q8_0. */
static inline KERN_AVX2_INLINE void
kern_avx2_q8_0_x4(const uint8_t *const x[4], const struct kern_block_q8_0 *y, int64_t nb,
    const uint8_t *pf, int n_pf, size_t rb, float out[4])
{
	const __m128 dmask = _mm_castsi128_ps(_mm_setr_epi32(-1, 0, 0, 0));
	__m256 acc = _mm256_setzero_ps();
	struct kern_pf_walk pw;
	int64_t ib;

	kern_avx2_pf_start(&pw, pf, n_pf, rb, sizeof(struct kern_block_q8_0));
	for (ib = 0; ib < nb; ib++) {
		const uint8_t *yb = (const uint8_t *)(y + ib);
		const size_t off = (size_t)ib * sizeof(struct kern_block_q8_0);
		kern_avx2_pf_block(&pw);
		const __m256i ylo = kern_avx2_bcast128(yb + 2), yhi = kern_avx2_bcast128(yb + 18);
		const __m256i p01 = _mm256_add_epi32(
		    kern_avx2_dot_s8(kern_avx2_load2x128(x[0] + off + 2, x[1] + off + 2), ylo),
		    kern_avx2_dot_s8(kern_avx2_load2x128(x[0] + off + 18, x[1] + off + 18), yhi));
		const __m256i p23 = _mm256_add_epi32(
		    kern_avx2_dot_s8(kern_avx2_load2x128(x[2] + off + 2, x[3] + off + 2), ylo),
		    kern_avx2_dot_s8(kern_avx2_load2x128(x[2] + off + 18, x[3] + off + 18), yhi));
		const __m256 f = kern_avx2_f16x2x4(x, off,
		    kern_avx2_bcast_pair(_mm_and_ps(kern_avx2_f16x2(yb), dmask)));
		acc = _mm256_fmadd_ps(kern_avx2_scale4(f), kern_avx2_fold2(p01, p23), acc);
	}
	kern_avx2_unfold(acc, out);
}

KERN_X4_DRIVER(kern_avx2_q4_1_rows, kern_avx2_q4_1_x4, struct kern_block_q8_1, KERN_AVX2, 1)
KERN_X4_DRIVER(kern_avx2_q4_0_rows, kern_avx2_q4_0_x4, struct kern_block_q8_0, KERN_AVX2, 1)
KERN_X4_DRIVER(kern_avx2_q8_0_rows, kern_avx2_q8_0_x4, struct kern_block_q8_0, KERN_AVX2, 1)

/* Σ u·x per row pair as int16 pairs: u = nibble | 5th bit (≤ 31), the low
 * nibbles against x[0..15], the high ones against x[16..31]; |each
 * vpmaddubsw lane| ≤ 2·31·128, the two added ≤ 15872. */
static inline KERN_AVX2_INLINE __m256i
kern_avx2_q5_pair(const uint8_t *qa, const uint8_t *qb, __m256i h, __m256i ylo, __m256i yhi)
{
	__m256i lo, hi;

	kern_avx2_q5_unpack(qa, qb, h, &lo, &hi);
	return _mm256_add_epi16(_mm256_maddubs_epi16(lo, ylo), _mm256_maddubs_epi16(hi, yhi));
}

/* Four Q5_0 rows · Q8_0: Σ (u − 16)·x = Σ u·x − 16·Σ x, the correction in
 * int16 once per activation block (the difference stays within ±24064). */
static inline KERN_AVX2_INLINE void
kern_avx2_q5_0_x4(const uint8_t *const x[4], const struct kern_block_q8_0 *y, int64_t nb,
    const uint8_t *pf, int n_pf, size_t rb, float out[4])
{
	const __m256i ones = _mm256_set1_epi16(1), sixteen = _mm256_set1_epi8(16);
	const __m128 dmask = _mm_castsi128_ps(_mm_setr_epi32(-1, 0, 0, 0));
	__m256 acc = _mm256_setzero_ps();
	struct kern_pf_walk pw;
	int64_t ib;

	kern_avx2_pf_start(&pw, pf, n_pf, rb, sizeof(struct kern_block_q5_0));
	for (ib = 0; ib < nb; ib++) {
		const uint8_t *yb = (const uint8_t *)(y + ib);
		const size_t off = (size_t)ib * sizeof(struct kern_block_q5_0);
		kern_avx2_pf_block(&pw);
		const __m256i ylo = kern_avx2_bcast128(yb + 2), yhi = kern_avx2_bcast128(yb + 18);
		const __m256i corr = _mm256_add_epi16(_mm256_maddubs_epi16(sixteen, ylo),
		    _mm256_maddubs_epi16(sixteen, yhi));
		const __m256i p01 = _mm256_madd_epi16(_mm256_sub_epi16(kern_avx2_q5_pair(x[0] + off + 6,
		    x[1] + off + 6, kern_avx2_q5_qh2(x[0], x[1], off + 2), ylo, yhi), corr), ones);
		const __m256i p23 = _mm256_madd_epi16(_mm256_sub_epi16(kern_avx2_q5_pair(x[2] + off + 6,
		    x[3] + off + 6, kern_avx2_q5_qh2(x[2], x[3], off + 2), ylo, yhi), corr), ones);
		const __m256 f = kern_avx2_f16x2x4(x, off,
		    kern_avx2_bcast_pair(_mm_and_ps(kern_avx2_f16x2(yb), dmask)));
		acc = _mm256_fmadd_ps(kern_avx2_scale4(f), kern_avx2_fold2(p01, p23), acc);
	}
	kern_avx2_unfold(acc, out);
}

/* Four Q5_1 rows · Q8_1: d_w·d_x·Σ u·x + m_w·s_x, as Q4_1. */
static inline KERN_AVX2_INLINE void
kern_avx2_q5_1_x4(const uint8_t *const x[4], const struct kern_block_q8_1 *y, int64_t nb,
    const uint8_t *pf, int n_pf, size_t rb, float out[4])
{
	const __m256i ones = _mm256_set1_epi16(1);
	__m256 acc = _mm256_setzero_ps(), ms = _mm256_setzero_ps();
	float m[8];
	struct kern_pf_walk pw;
	int64_t ib;
	int r;

	kern_avx2_pf_start(&pw, pf, n_pf, rb, sizeof(struct kern_block_q5_1));
	for (ib = 0; ib < nb; ib++) {
		const uint8_t *yb = (const uint8_t *)(y + ib);
		const size_t off = (size_t)ib * sizeof(struct kern_block_q5_1);
		kern_avx2_pf_block(&pw);
		const __m256i ylo = kern_avx2_bcast128(yb + 4), yhi = kern_avx2_bcast128(yb + 20);
		const __m256i p01 = _mm256_madd_epi16(kern_avx2_q5_pair(x[0] + off + 8, x[1] + off + 8,
		    kern_avx2_q5_qh2(x[0], x[1], off + 4), ylo, yhi), ones);
		const __m256i p23 = _mm256_madd_epi16(kern_avx2_q5_pair(x[2] + off + 8, x[3] + off + 8,
		    kern_avx2_q5_qh2(x[2], x[3], off + 4), ylo, yhi), ones);
		const __m256 f = kern_avx2_f16x2x4(x, off, kern_avx2_bcast_pair(kern_avx2_f16x2(yb)));
		ms = _mm256_add_ps(ms, f);
		acc = _mm256_fmadd_ps(kern_avx2_scale4(f), kern_avx2_fold2(p01, p23), acc);
	}
	kern_avx2_unfold(acc, out);
	_mm256_storeu_ps(m, ms);
	for (r = 0; r < 4; r++)
		out[r] += m[2 * r + 1];
}

KERN_X4_DRIVER(kern_avx2_q5_0_rows, kern_avx2_q5_0_x4, struct kern_block_q8_0, KERN_AVX2, 1)
KERN_X4_DRIVER(kern_avx2_q5_1_rows, kern_avx2_q5_1_x4, struct kern_block_q8_1, KERN_AVX2, 1)

/* f32 dot, 32 lanes in flight. */
static KERN_AVX2 float
kern_avx2_dot_f32(const float *a, const float *b, int64_t n)
{
	__m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
	int64_t i = 0;
	float sum;

	for (; i + 32 <= n; i += 32) {
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
		s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
		s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
		s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
	}
	for (; i + 8 <= n; i += 8)
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
	sum = kern_avx2_hsum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
	for (; i < n; i++)
		sum += a[i] * b[i];
	return sum;
}

/* An F16 (bf 0) or BF16 (bf 1) row · f32 x without a dequantized copy:
 * 8 elements widened per step (vcvtph2ps, or a 16-bit shift), 32 in flight. */
static inline KERN_AVX2_INLINE __m256
kern_avx2_widen8(const uint8_t *p, int bf)
{
	const __m128i h = _mm_loadu_si128((const __m128i *)(const void *)p);
	return bf ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16))
	    : _mm256_cvtph_ps(h);
}

static KERN_AVX2 float
kern_avx2_dot_half(const uint8_t *w, const float *x, int64_t n, int bf)
{
	__m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
	int64_t i = 0;
	float sum;

	for (; i + 32 <= n; i += 32) {
		s0 = _mm256_fmadd_ps(kern_avx2_widen8(w + 2 * i, bf), _mm256_loadu_ps(x + i), s0);
		s1 = _mm256_fmadd_ps(kern_avx2_widen8(w + 2 * i + 16, bf), _mm256_loadu_ps(x + i + 8), s1);
		s2 = _mm256_fmadd_ps(kern_avx2_widen8(w + 2 * i + 32, bf), _mm256_loadu_ps(x + i + 16), s2);
		s3 = _mm256_fmadd_ps(kern_avx2_widen8(w + 2 * i + 48, bf), _mm256_loadu_ps(x + i + 24), s3);
	}
	for (; i + 8 <= n; i += 8)
		s0 = _mm256_fmadd_ps(kern_avx2_widen8(w + 2 * i, bf), _mm256_loadu_ps(x + i), s0);
	sum = kern_avx2_hsum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
	for (; i < n; i++)
		sum += (bf ? kern_bf16_to_f32(kern_ld16(w + 2 * i)) : kern_f16_to_f32(kern_ld16(w + 2 * i))) *
		    x[i];
	return sum;
}

/* Store (float)q·d for 8 int32 q; with m: (float)q·d + m (mul, then add). */
static inline KERN_AVX2_INLINE void
kern_avx2_st8(float *dst, __m256i q, __m256 d)
{
	_mm256_storeu_ps(dst, _mm256_mul_ps(_mm256_cvtepi32_ps(q), d));
}

static inline KERN_AVX2_INLINE void
kern_avx2_st8m(float *dst, __m256i q, __m256 d, __m256 m)
{
	_mm256_storeu_ps(dst, _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(q), d), m));
}

/* 32 bytes of nibbles (Q4_K's or Q5_K's qs for one pair of sub-blocks)
 * plus, for Q5_K, the 5th bits at bit lb (low nibbles) and lb + 1 of qh:
 * dst[0..32) = d1·lo − m1, dst[32..64) = d2·hi − m2, as quant.c: products
 * exact, one rounding in the subtraction. */
static inline KERN_AVX2_INLINE void
kern_avx2_deq_k45(const uint8_t *qs, const uint8_t *qh, int lb, float d1, float m1, float d2,
    float m2, float *dst)
{
	__m256i h = qh ? _mm256_loadu_si256((const __m256i *)(const void *)qh) : _mm256_setzero_si256();
	__m256i lo, hi;
	__m128i parts[4];
	int k;

	h = _mm256_srli_epi16(h, lb); /* pair lb / 2's bits at 0 and 1 */
	kern_avx2_q45k_pair(qs, 0, qh != NULL, &h, &lo, &hi);
	parts[0] = _mm256_castsi256_si128(lo);
	parts[1] = _mm256_extracti128_si256(lo, 1);
	parts[2] = _mm256_castsi256_si128(hi);
	parts[3] = _mm256_extracti128_si256(hi, 1);
	for (k = 0; k < 4; k++) {
		const __m256 d = _mm256_set1_ps(k < 2 ? d1 : d2), m = _mm256_set1_ps(k < 2 ? m1 : m2);
		_mm256_storeu_ps(dst + 16 * k, _mm256_sub_ps(_mm256_mul_ps(
		    _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(parts[k])), d), m));
		_mm256_storeu_ps(dst + 16 * k + 8, _mm256_sub_ps(_mm256_mul_ps(
		    _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(parts[k], 8))), d), m));
	}
}

/* Dequantize nb blocks of one row; 0 if the type has no AVX2 code. */
static KERN_AVX2 int
kern_avx2_dequant_row(enum kern_type t, const uint8_t *x, float *dst, int64_t n)
{
	if (t == KERN_TYPE_Q4_K || t == KERN_TYPE_Q5_K) {
		const int five = t == KERN_TYPE_Q5_K;
		const size_t bb = five ? sizeof(struct kern_block_q5_k) : sizeof(struct kern_block_q4_k);
		int64_t i;
		int g, sc, mn;
		for (i = 0; i < n / KERN_QK_K; i++, x += bb) {
			const float d = kern_f16_to_f32(kern_ld16(x)), dmin = kern_f16_to_f32(kern_ld16(x + 2));
			const uint8_t *qs = x + (five ? 48 : 16);
			for (g = 0; g < 4; g++, dst += 64) {
				float d1, m1;
				kern_cpu_q4k_scale_min(2 * g, x + 4, &sc, &mn);
				d1 = d * (float)sc;
				m1 = dmin * (float)mn;
				kern_cpu_q4k_scale_min(2 * g + 1, x + 4, &sc, &mn);
				kern_avx2_deq_k45(qs + 32 * g, five ? x + 16 : NULL, 2 * g, d1, m1,
				    d * (float)sc, dmin * (float)mn, dst);
			}
		}
		return 1;
	}
	if (t == KERN_TYPE_Q6_K) {
		const __m256i c32 = _mm256_set1_epi8(32);
		int64_t i;
		int h, k, j;
		for (i = 0; i < n / KERN_QK_K; i++, x += sizeof(struct kern_block_q6_k)) {
			const float d = kern_f16_to_f32(kern_ld16(x + 208));
			const int8_t *sc = (const int8_t *)(x + 192);
			for (h = 0; h < 2; h++, dst += 128) {
				__m256i q[4];

				kern_avx2_q6k_half(x, h, q);
				for (k = 0; k < 4; k++) {
					/* run k: elements 32k.., sub-blocks 8h + 2k (+1);
					 * (d·sc)·q as quant.c, two roundings */
					const __m256i v = _mm256_sub_epi8(q[k], c32);
					for (j = 0; j < 4; j++) {
						const __m128i b8 = j < 2 ? _mm256_castsi256_si128(v)
						    : _mm256_extracti128_si256(v, 1);
						const __m256 ds = _mm256_set1_ps(d * (float)sc[8 * h + 2 * k + j / 2]);
						_mm256_storeu_ps(dst + 32 * k + 8 * j, _mm256_mul_ps(ds,
						    _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
						    (j & 1) ? _mm_srli_si128(b8, 8) : b8))));
					}
				}
			}
		}
		return 1;
	}
	const __m128i m4 = _mm_set1_epi8(0x0f);
	int64_t i, nb = n / KERN_QK;

	if (t == KERN_TYPE_Q4_1) {
		for (i = 0; i < nb; i++, x += sizeof(struct kern_block_q4_1), dst += KERN_QK) {
			const __m256 d = _mm256_set1_ps(kern_f16_to_f32(kern_ld16(x)));
			const __m256 m = _mm256_set1_ps(kern_f16_to_f32(kern_ld16(x + 2)));
			const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(x + 4));
			const __m128i lo = _mm_and_si128(v, m4);
			const __m128i hi = _mm_and_si128(_mm_srli_epi16(v, 4), m4);
			kern_avx2_st8m(dst, _mm256_cvtepu8_epi32(lo), d, m);
			kern_avx2_st8m(dst + 8, _mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8)), d, m);
			kern_avx2_st8m(dst + 16, _mm256_cvtepu8_epi32(hi), d, m);
			kern_avx2_st8m(dst + 24, _mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8)), d, m);
		}
		return 1;
	}
	if (t == KERN_TYPE_Q4_0) {
		const __m128i off = _mm_set1_epi8(8);
		for (i = 0; i < nb; i++, x += sizeof(struct kern_block_q4_0), dst += KERN_QK) {
			const __m256 d = _mm256_set1_ps(kern_f16_to_f32(kern_ld16(x)));
			const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(x + 2));
			const __m128i lo = _mm_sub_epi8(_mm_and_si128(v, m4), off);
			const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(v, 4), m4), off);
			kern_avx2_st8(dst, _mm256_cvtepi8_epi32(lo), d);
			kern_avx2_st8(dst + 8, _mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)), d);
			kern_avx2_st8(dst + 16, _mm256_cvtepi8_epi32(hi), d);
			kern_avx2_st8(dst + 24, _mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)), d);
		}
		return 1;
	}
	if (t == KERN_TYPE_Q8_0) {
		for (i = 0; i < nb; i++, x += sizeof(struct kern_block_q8_0), dst += KERN_QK) {
			const __m256 d = _mm256_set1_ps(kern_f16_to_f32(kern_ld16(x)));
			const __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(x + 2));
			const __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(x + 18));
			kern_avx2_st8(dst, _mm256_cvtepi8_epi32(a), d);
			kern_avx2_st8(dst + 8, _mm256_cvtepi8_epi32(_mm_srli_si128(a, 8)), d);
			kern_avx2_st8(dst + 16, _mm256_cvtepi8_epi32(b), d);
			kern_avx2_st8(dst + 24, _mm256_cvtepi8_epi32(_mm_srli_si128(b, 8)), d);
		}
		return 1;
	}
	if (t == KERN_TYPE_F16 || t == KERN_TYPE_BF16) {
		for (i = 0; i + 8 <= n; i += 8) {
			const __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(x + 2 * i));
			if (t == KERN_TYPE_F16)
				_mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
			else
				_mm256_storeu_ps(dst + i, _mm256_castsi256_ps(
				    _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)));
		}
		for (; i < n; i++)
			dst[i] = t == KERN_TYPE_F16 ? kern_f16_to_f32(kern_ld16(x + 2 * i))
			    : kern_bf16_to_f32(kern_ld16(x + 2 * i));
		return 1;
	}
	return 0;
}
/* ------------------------------------------------------------------------ */
/* AVX-512 VNNI (on 256-bit vectors): vpdpbusd, u8·s8 straight into int32    */

/* Four Q4_1 rows · Q8_1: low nibbles · x[0..15], then high nibbles ·
 * x[16..31] into the same int32 lanes. */
static inline KERN_AVX512_INLINE void
kern_avx512_q4_1_x4(const uint8_t *const x[4], const struct kern_block_q8_1 *y, int64_t nb,
    const uint8_t *pf, int n_pf, size_t rb, float out[4])
{
	const __m256i m4 = _mm256_set1_epi8(0x0f);
	__m256 acc = _mm256_setzero_ps(), ms = _mm256_setzero_ps();
	float m[8];
	int64_t ib;
	int r;
	(void)pf; /* the driver prefetches (spread 0) */
	(void)n_pf;
	(void)rb;

	for (ib = 0; ib < nb; ib++) {
		const uint8_t *yb = (const uint8_t *)(y + ib);
		const size_t off = (size_t)ib * sizeof(struct kern_block_q4_1);
		const __m256i ylo = kern_avx2_bcast128(yb + 4), yhi = kern_avx2_bcast128(yb + 20);
		const __m256i v01 = kern_avx2_load2x128(x[0] + off + 4, x[1] + off + 4);
		const __m256i v23 = kern_avx2_load2x128(x[2] + off + 4, x[3] + off + 4);
		__m256i p01 = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_and_si256(v01, m4), ylo);
		__m256i p23 = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_and_si256(v23, m4), ylo);
		__m256 f;
		p01 = _mm256_dpbusd_epi32(p01, _mm256_and_si256(_mm256_srli_epi16(v01, 4), m4), yhi);
		p23 = _mm256_dpbusd_epi32(p23, _mm256_and_si256(_mm256_srli_epi16(v23, 4), m4), yhi);
		f = kern_avx2_f16x2x4(x, off, kern_avx2_bcast_pair(kern_avx2_f16x2(yb)));
		ms = _mm256_add_ps(ms, f);
		acc = _mm256_fmadd_ps(kern_avx2_scale4(f), kern_avx2_fold2(p01, p23), acc);
	}
	kern_avx2_unfold(acc, out);
	_mm256_storeu_ps(m, ms);
	for (r = 0; r < 4; r++)
		out[r] += m[2 * r + 1];
}

/* −c·Σx per int32 lane of [x[0..15] | x[0..15]] · bytes, plus the same for
 * x[16..31]: the start value that turns a dot of unsigned n = q + c into a
 * dot of q.  Once per activation block. */
static inline KERN_AVX512_INLINE __m256i
kern_avx512_neg_bias(__m256i c, __m256i ylo, __m256i yhi)
{
	const __m256i zero = _mm256_setzero_si256();
	return _mm256_sub_epi32(zero, _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(zero, c, ylo), c, yhi));
}

/* Four Q4_0 rows · Q8_0: dots the raw nibbles n = q + 8, starting from
 * −8·Σx. */
static inline KERN_AVX512_INLINE void
kern_avx512_q4_0_x4(const uint8_t *const x[4], const struct kern_block_q8_0 *y, int64_t nb,
    const uint8_t *pf, int n_pf, size_t rb, float out[4])
{
	const __m256i m4 = _mm256_set1_epi8(0x0f);
	const __m128 dmask = _mm_castsi128_ps(_mm_setr_epi32(-1, 0, 0, 0));
	__m256 acc = _mm256_setzero_ps();
	int64_t ib;
	(void)pf; /* the driver prefetches (spread 0) */
	(void)n_pf;
	(void)rb;

	for (ib = 0; ib < nb; ib++) {
		const uint8_t *yb = (const uint8_t *)(y + ib);
		const size_t off = (size_t)ib * sizeof(struct kern_block_q4_0);
		const __m256i ylo = kern_avx2_bcast128(yb + 2), yhi = kern_avx2_bcast128(yb + 18);
		const __m256i bias = kern_avx512_neg_bias(_mm256_set1_epi8(8), ylo, yhi);
		const __m256i v01 = kern_avx2_load2x128(x[0] + off + 2, x[1] + off + 2);
		const __m256i v23 = kern_avx2_load2x128(x[2] + off + 2, x[3] + off + 2);
		__m256i p01 = _mm256_dpbusd_epi32(bias, _mm256_and_si256(v01, m4), ylo);
		__m256i p23 = _mm256_dpbusd_epi32(bias, _mm256_and_si256(v23, m4), ylo);
		__m256 f;
		p01 = _mm256_dpbusd_epi32(p01, _mm256_and_si256(_mm256_srli_epi16(v01, 4), m4), yhi);
		p23 = _mm256_dpbusd_epi32(p23, _mm256_and_si256(_mm256_srli_epi16(v23, 4), m4), yhi);
		f = kern_avx2_f16x2x4(x, off,
		    kern_avx2_bcast_pair(_mm_and_ps(kern_avx2_f16x2(yb), dmask)));
		acc = _mm256_fmadd_ps(kern_avx2_scale4(f), kern_avx2_fold2(p01, p23), acc);
	}
	kern_avx2_unfold(acc, out);
}

/* Four Q8_0 rows · Q8_0: dots q ^ 0x80 = q + 128 (unsigned), starting from
 * −128·Σx. */
static inline KERN_AVX512_INLINE void
kern_avx512_q8_0_x4(const uint8_t *const x[4], const struct kern_block_q8_0 *y, int64_t nb,
    const uint8_t *pf, int n_pf, size_t rb, float out[4])
{
	const __m256i flip = _mm256_set1_epi8((char)0x80);
	const __m128 dmask = _mm_castsi128_ps(_mm_setr_epi32(-1, 0, 0, 0));
	__m256 acc = _mm256_setzero_ps();
	int64_t ib;
	(void)pf; /* the driver prefetches (spread 0) */
	(void)n_pf;
	(void)rb;

	for (ib = 0; ib < nb; ib++) {
		const uint8_t *yb = (const uint8_t *)(y + ib);
		const size_t off = (size_t)ib * sizeof(struct kern_block_q8_0);
		const __m256i ylo = kern_avx2_bcast128(yb + 2), yhi = kern_avx2_bcast128(yb + 18);
		const __m256i bias = kern_avx512_neg_bias(flip, ylo, yhi);
		__m256i p01 = _mm256_dpbusd_epi32(bias, _mm256_xor_si256(flip,
		    kern_avx2_load2x128(x[0] + off + 2, x[1] + off + 2)), ylo);
		__m256i p23 = _mm256_dpbusd_epi32(bias, _mm256_xor_si256(flip,
		    kern_avx2_load2x128(x[2] + off + 2, x[3] + off + 2)), ylo);
		__m256 f;
		p01 = _mm256_dpbusd_epi32(p01, _mm256_xor_si256(flip,
		    kern_avx2_load2x128(x[0] + off + 18, x[1] + off + 18)), yhi);
		p23 = _mm256_dpbusd_epi32(p23, _mm256_xor_si256(flip,
		    kern_avx2_load2x128(x[2] + off + 18, x[3] + off + 18)), yhi);
		f = kern_avx2_f16x2x4(x, off,
		    kern_avx2_bcast_pair(_mm_and_ps(kern_avx2_f16x2(yb), dmask)));
		acc = _mm256_fmadd_ps(kern_avx2_scale4(f), kern_avx2_fold2(p01, p23), acc);
	}
	kern_avx2_unfold(acc, out);
}

KERN_X4_DRIVER(kern_avx512_q4_1_rows, kern_avx512_q4_1_x4, struct kern_block_q8_1, KERN_AVX512, 0)
KERN_X4_DRIVER(kern_avx512_q4_0_rows, kern_avx512_q4_0_x4, struct kern_block_q8_0, KERN_AVX512, 0)
KERN_X4_DRIVER(kern_avx512_q8_0_rows, kern_avx512_q8_0_x4, struct kern_block_q8_0, KERN_AVX512, 0)

/* f32 dot, 64 lanes in flight, masked tail. */
static KERN_AVX512 float
kern_avx512_dot_f32(const float *a, const float *b, int64_t n)
{
	__m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
	int64_t i = 0;

	for (; i + 64 <= n; i += 64) {
		s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
		s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
		s2 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 32), _mm512_loadu_ps(b + i + 32), s2);
		s3 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 48), _mm512_loadu_ps(b + i + 48), s3);
	}
	for (; i + 16 <= n; i += 16)
		s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
	if (i < n) {
		const __mmask16 k = (__mmask16)((1u << (n - i)) - 1);
		s1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, a + i), _mm512_maskz_loadu_ps(k, b + i), s1);
	}
	return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}
#endif /* KERN_X86 */

/* ------------------------------------------------------------------------ */
/* Dispatch                                                                  */

/* dst = one row of n elements dequantized, SIMD where level lvl has it. */
static void
kern_dequant_one(int lvl, enum kern_type t, const uint8_t *row, int64_t n, float *dst)
{
#if KERN_X86
	if (lvl >= KERN_CPU_SIMD_AVX2 && kern_avx2_dequant_row(t, row, dst, n))
		return;
#else
	(void)lvl;
#endif
	kern_dequant_row(t, row, dst, n);
}

float
kern_cpu_dot_f32(const float *a, const float *b, int64_t n)
{
#if KERN_X86
	int lvl = kern_cpu_simd_level();
	if (lvl >= KERN_CPU_SIMD_AVX512)
		return kern_avx512_dot_f32(a, b, n);
	if (lvl >= KERN_CPU_SIMD_AVX2)
		return kern_avx2_dot_f32(a, b, n);
#endif
	return kern_scalar_dot_f32(a, b, n);
}

/* A row of a type without an integer kernel · f32 activations: dequantize
 * KERN_DEQ_CHUNK elements at a time and dot in f32. */
static float
kern_dot_via_f32(int lvl, enum kern_type t, const uint8_t *row, const float *x, int64_t n)
{
	float buf[KERN_DEQ_CHUNK];
	const int be = kern_type_block_elems(t);
	const size_t bb = kern_type_block_bytes(t);
	float sum = 0.0f;
	int64_t i;

	if (t == KERN_TYPE_F32)
		return kern_cpu_dot_f32((const float *)(const void *)row, x, n);
#if KERN_X86
	if (lvl >= KERN_CPU_SIMD_AVX2 && (t == KERN_TYPE_F16 || t == KERN_TYPE_BF16))
		return kern_avx2_dot_half(row, x, n, t == KERN_TYPE_BF16);
#endif
	for (i = 0; i < n; i += KERN_DEQ_CHUNK) {
		int64_t m = n - i < KERN_DEQ_CHUNK ? n - i : KERN_DEQ_CHUNK;
		kern_dequant_one(lvl, t, row + (size_t)(i / be) * bb, m, buf);
		sum += kern_cpu_dot_f32(buf, x + i, m);
	}
	return sum;
}

enum kern_type
kern_vec_dot_act_type(enum kern_type t)
{
	if (t == KERN_TYPE_Q4_0 || t == KERN_TYPE_Q5_0 || t == KERN_TYPE_Q8_0)
		return KERN_TYPE_Q8_0;
	if (t == KERN_TYPE_Q4_1 || t == KERN_TYPE_Q5_1)
		return KERN_TYPE_Q8_1;
	if (t == KERN_TYPE_Q2_K || t == KERN_TYPE_Q3_K || t == KERN_TYPE_Q4_K ||
	    t == KERN_TYPE_Q5_K || t == KERN_TYPE_Q6_K)
		return KERN_TYPE_Q8_K;
	return KERN_TYPE_F32;
}

void
kern_cpu_vec_dot_rows(enum kern_type t, const void *rows, size_t row_bytes, int64_t n_rows,
    const void *act, int64_t n, float *out)
{
	const uint8_t *x = rows;
	const int be = kern_type_block_elems(t);
	const int lvl = kern_cpu_simd_level();
	int64_t r, nb;

	if (n_rows <= 0)
		return;
	if (be <= 0 || n < 0 || n % be != 0 || (KERN_DEQ_CHUNK % be != 0)) {
		for (r = 0; r < n_rows; r++) /* unsupported: make it loud */
			out[r] = NAN;
		return;
	}
	nb = n / KERN_QK;
	if (t == KERN_TYPE_Q4_1) {
		const struct kern_block_q8_1 *y = act;
#if KERN_X86
		if (lvl >= KERN_CPU_SIMD_AVX512) {
			kern_avx512_q4_1_rows(x, row_bytes, n_rows, y, nb, out);
			return;
		}
		if (lvl >= KERN_CPU_SIMD_AVX2) {
			kern_avx2_q4_1_rows(x, row_bytes, n_rows, y, nb, out);
			return;
		}
#endif
		for (r = 0; r < n_rows; r++)
			out[r] = kern_scalar_q4_1(x + (size_t)r * row_bytes, y, nb);
	} else if (t == KERN_TYPE_Q4_0) {
		const struct kern_block_q8_0 *y = act;
#if KERN_X86
		if (lvl >= KERN_CPU_SIMD_AVX512) {
			kern_avx512_q4_0_rows(x, row_bytes, n_rows, y, nb, out);
			return;
		}
		if (lvl >= KERN_CPU_SIMD_AVX2) {
			kern_avx2_q4_0_rows(x, row_bytes, n_rows, y, nb, out);
			return;
		}
#endif
		for (r = 0; r < n_rows; r++)
			out[r] = kern_scalar_q4_0(x + (size_t)r * row_bytes, y, nb);
	} else if (t == KERN_TYPE_Q8_0) {
		const struct kern_block_q8_0 *y = act;
#if KERN_X86
		if (lvl >= KERN_CPU_SIMD_AVX512) {
			kern_avx512_q8_0_rows(x, row_bytes, n_rows, y, nb, out);
			return;
		}
		if (lvl >= KERN_CPU_SIMD_AVX2) {
			kern_avx2_q8_0_rows(x, row_bytes, n_rows, y, nb, out);
			return;
		}
#endif
		for (r = 0; r < n_rows; r++)
			out[r] = kern_scalar_q8_0(x + (size_t)r * row_bytes, y, nb);
	} else if (kern_vec_dot_act_type(t) == KERN_TYPE_Q8_K) {
		kern_cpu_kq_dot_rows(t, lvl, x, row_bytes, n_rows, act, n / KERN_QK_K, out);
	} else if (t == KERN_TYPE_Q5_0 || t == KERN_TYPE_Q5_1) {
#if KERN_X86
		if (lvl >= KERN_CPU_SIMD_AVX2) {
			if (t == KERN_TYPE_Q5_0)
				kern_avx2_q5_0_rows(x, row_bytes, n_rows, act, nb, out);
			else
				kern_avx2_q5_1_rows(x, row_bytes, n_rows, act, nb, out);
			return;
		}
#endif
		for (r = 0; r < n_rows; r++)
			out[r] = kern_scalar_q5(x + (size_t)r * row_bytes, act, nb, t == KERN_TYPE_Q5_1);
	} else {
		for (r = 0; r < n_rows; r++)
			out[r] = kern_dot_via_f32(lvl, t, x + (size_t)r * row_bytes, act, n);
	}
}

float
kern_vec_dot(enum kern_type t, const void *row, const void *act, int64_t n)
{
	float out;

	kern_cpu_vec_dot_rows(t, row, 0, 1, act, n, &out);
	return out;
}

void
kern_cpu_dequant_rows(enum kern_type t, const void *rows, size_t row_bytes, int64_t n_rows,
    int64_t n, float *dst)
{
	const uint8_t *x = rows;
	const int be = kern_type_block_elems(t);
	const int lvl = kern_cpu_simd_level();
	int64_t r;

	if (be <= 0 || n <= 0 || n % be != 0)
		return; /* unsupported type or shape: dst untouched */
	for (r = 0; r < n_rows; r++)
		kern_dequant_one(lvl, t, x + (size_t)r * row_bytes, n, dst + r * n);
}
