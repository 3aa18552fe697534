/*
 * vec_tile.c: many weight rows · many tokens' quantized activations, the
 * prefill's integer-dot matmul (ops.c).
 *
 * A token-at-a-time dot (kern_cpu_vec_dot_rows) unpacks each weight block
 * again for every token.  The tile kernels here unpack a block once (quants,
 * scales, the f16 → f32 conversions) and dot it with 4 tokens (AVX2; 8 for
 * Q4_K, Q5_K, Q6_K) or 8 (AVX-512: twice the registers): the K-quants one
 * row at a time (their unpacking is the expensive part), Q4_0, Q4_1, Q5_0,
 * Q5_1 and Q8_0 four rows at a time in vec_dot.c's layout.  The AVX2 bodies
 * come from the templates vec_tile_kq.h, vec_tile_q23k.h and vec_tile_q.h
 * (vpmaddubsw + vpmaddwd); AVX-512 takes vec_tile_q.h with VNNI's vpdpbusd,
 * vec_tile_q23k.h with vpdpwssd, and its own Q4_K/Q5_K/Q6_K kernels on
 * 512-bit vectors (vpmaddubsw + vpdpwssd; faster than 256-bit ones on Q6_K,
 * even on Q4_K, in bench_quant prefill on the busy VM).  A prefill's Q4_K
 * and Q6_K at AVX2 take vec_tile_dealt.h's tiles instead, on activations
 * ops.c has dealt once per matmul (kern_cpu_q8k_deal_rows).  Q5_0, Q5_1, Q2_K
 * and Q3_K have no AVX-512 one-token dot: their AVX-512 tiles equal the AVX2
 * one (the int32 lanes are the same, VNNI or not).
 *
 * Where the CPU has AMX-INT8, Q4_K, Q5_K and Q6_K go to vec_tile_amx.c's
 * 16 rows × 16 tokens tiles first, and only the rows and tokens short of
 * 16 come here.
 *
 * Every (row, token) result equals kern_vec_dot's at the same level bit for
 * bit (the integer sums are exact and the f32 steps the same), so a token's
 * result does not depend on the tile it falls in, and tokens left over after
 * the last whole tile simply take the one-token path.  Types and levels
 * without a tile kernel take the one-token path for every token.
 */
#include <stdint.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/simd.h"

/* tokens per tile: as many accumulators as the level's registers hold (the
 * AVX2 K-quant tiles: 8 int32 sums, the row's unpacked quants and scales) */
#define KERN_TILE_AVX2 4
#define KERN_TILE_AVX2_KQ 8
#define KERN_TILE_AVX512 8
#define KERN_TILE_MAX 8
/* bytes per Q8_K block in vec_tile_dealt.h's dealt form: 256 quants, then
 * 64 of bsums and d */
#define KERN_DEALT_BLOCK_BYTES 320

#if KERN_X86
#include "kernels/cpu/simd_x86.h"

/* The Q8_K scales d_y of block ib of tokens 0..7 (lane k: token k). */
static inline KERN_AVX2_INLINE __m256
kern_avx2_yd8(const struct kern_block_q8_k *const *y, int64_t ib)
{
	return _mm256_setr_ps(y[0][ib].d, y[1][ib].d, y[2][ib].d, y[3][ib].d, y[4][ib].d,
	    y[5][ib].d, y[6][ib].d, y[7][ib].d);
}

/* The int32 totals of 8 tokens' lanes (lane k: token k). */
static inline KERN_AVX2_INLINE __m256i
kern_avx2_totals8(const __m256i v[8])
{
	return _mm256_set_m128i(kern_avx2_hsum4_i32(v[4], v[5], v[6], v[7]),
	    kern_avx2_hsum4_i32(v[0], v[1], v[2], v[3]));
}

/* One super-block of Q4_K/Q5_K's f32 tail (simd_x86.h) for 8 tokens in
 * lanes: the chains *acc (scaled sums) and *accm (mins) one step on. */
static inline KERN_AVX2_INLINE void
kern_avx2_kq45_tail8(__m256 *acc, __m256 *accm, float d, float dmin, __m256 yd,
    const __m256i sumi[8], const __m256i mn[8])
{
	*accm = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(dmin), yd),
	    _mm256_cvtepi32_ps(kern_avx2_totals8(mn)), *accm);
	*acc = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(d), yd),
	    _mm256_cvtepi32_ps(kern_avx2_totals8(sumi)), *acc);
}

/* AVX2 + FMA + F16C (16 vector registers) */
#define KT_TILE KERN_TILE_AVX2
#define KT_ATTR KERN_AVX2
#define KT_FN(name) kern_avx2_tile_##name
#define KT_DOTACC(acc, a, b) _mm256_add_epi32(acc, _mm256_madd_epi16(a, b))
#define KT_U8DOT(lo, yl, hi, yh) _mm256_madd_epi16(_mm256_add_epi16( \
	_mm256_maddubs_epi16(lo, yl), _mm256_maddubs_epi16(hi, yh)), _mm256_set1_epi16(1))
#define KT_S8BIAS(yl, yh) _mm256_setzero_si256()
/* |w|·(x with w's sign), as vec_dot.c's kern_avx2_dot_s8 (the same
 * saturation) */
#define KT_S8ONE(w, x) _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(w, w), \
	_mm256_sign_epi8(x, w)), _mm256_set1_epi16(1))
#define KT_S8DOT(b, wl, yl, wh, yh) ((void)(b), \
	_mm256_add_epi32(KT_S8ONE(wl, yl), KT_S8ONE(wh, yh)))
/* Σ (u − c)·x = Σ u·x − c·Σx, the correction in int16 (vec_dot.c's Q4_0,
 * c = 8, and Q5_0, c = 16) */
#define KT_OBIAS(c, yl, yh) _mm256_add_epi16(_mm256_maddubs_epi16(c, yl), \
	_mm256_maddubs_epi16(c, yh))
#define KT_ODOT(b, lo, yl, hi, yh) _mm256_madd_epi16(_mm256_sub_epi16(_mm256_add_epi16( \
	_mm256_maddubs_epi16(lo, yl), _mm256_maddubs_epi16(hi, yh)), b), _mm256_set1_epi16(1))
#include "kernels/cpu/vec_tile_kq.h"
#include "kernels/cpu/vec_tile_q23k.h"
#include "kernels/cpu/vec_tile_q.h"
#include "kernels/cpu/vec_tile_end.h"
#include "kernels/cpu/vec_tile_dealt.h"

/* AVX-512 VNNI on 256-bit vectors (the K-quants: on 512-bit ones, below):
 * signed Q8_0 weights are dotted as
 * w ^ 0x80 = w + 128 from a start of −128·Σx (as vec_dot.c's AVX-512
 * Q8_0 kernel); 32 vector registers */
#define KT_TILE KERN_TILE_AVX512
#define KT_ATTR KERN_AVX512
#define KT_FN(name) kern_avx512_tile_##name
#define KT_U8DOT(lo, yl, hi, yh) _mm256_dpbusd_epi32(_mm256_dpbusd_epi32( \
	_mm256_setzero_si256(), lo, yl), hi, yh)
#define KT_FLIP _mm256_set1_epi8((char)0x80)
#define KT_S8BIAS(yl, yh) _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_dpbusd_epi32( \
	_mm256_dpbusd_epi32(_mm256_setzero_si256(), KT_FLIP, yl), KT_FLIP, yh))
#define KT_S8DOT(b, wl, yl, wh, yh) _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(b, \
	_mm256_xor_si256(KT_FLIP, wl), yl), _mm256_xor_si256(KT_FLIP, wh), yh)
/* u = q + c (Q4_0's nibbles, c = 8; Q5_0's 5-bit quants, c = 16) from a
 * start of −c·Σx */
#define KT_OBIAS(c, yl, yh) _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_dpbusd_epi32( \
	_mm256_dpbusd_epi32(_mm256_setzero_si256(), c, yl), c, yh))
#define KT_ODOT(b, lo, yl, hi, yh) _mm256_dpbusd_epi32(_mm256_dpbusd_epi32(b, lo, yl), hi, yh)
/* Q2_K/Q3_K on 256-bit vectors too (u ≤ 7: vpdpwssd does vpmaddwd + vpaddd) */
#define KT_DOTACC(acc, a, b) _mm256_dpwssd_epi32(acc, a, b)
#include "kernels/cpu/vec_tile_q.h"
#include "kernels/cpu/vec_tile_q23k.h"
#include "kernels/cpu/vec_tile_end.h"

/* The K-quants on 512-bit vectors (AVX-512 BW + VNNI): a 64-quant step of
 * vec_tile_kq.h's (two 32-quant runs, two scales) is one vpmaddubsw and one
 * vpdpwssd, the runs in the vector's two halves.  At the end of a
 * super-block the lanes are summed to exact int32 totals and the f32 tail
 * (simd_x86.h) runs for the 8 tokens in the lanes of one vector. */

/* Two 256-bit halves as one 512-bit vector [lo | hi]. */
static inline KERN_AVX512_INLINE __m512i
kern_z_cat(__m256i lo, __m256i hi)
{
	return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

/* The int32 lanes of the two halves added. */
static inline KERN_AVX512_INLINE __m256i
kern_z_fold(__m512i v)
{
	return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
}

/* One Q4_K (five 0) or Q5_K (five 1) row · KERN_TILE_AVX512 tokens. */
static KERN_AVX512 void
kern_z_tile_q45k(const uint8_t *x, const struct kern_block_q8_k *const y[KERN_TILE_AVX512],
    int64_t nb, int five, float out[KERN_TILE_AVX512])
{
	enum { NT = KERN_TILE_AVX512 };
	const size_t bb = five ? sizeof(struct kern_block_q5_k) : sizeof(struct kern_block_q4_k);
	__m512i spread[4]; /* [sc(2g) ×16 | sc(2g+1) ×16] from 8 int16 scales per 128 bits */
	__m256 acc = _mm256_setzero_ps(), accm = _mm256_setzero_ps(); /* lane k: token k */
	int64_t ib;
	int g, k;

	for (g = 0; g < 4; g++)
		spread[g] = kern_z_cat(_mm256_set1_epi16((short)(4 * g | (4 * g + 1) << 8)),
		    _mm256_set1_epi16((short)((4 * g + 2) | (4 * g + 3) << 8)));
	for (ib = 0; ib < nb; ib++) {
		const uint8_t *b = x + (size_t)ib * bb, *qs = b + (five ? 48 : 16);
		__m256i qh = five ? _mm256_loadu_si256((const __m256i *)(const void *)(b + 16))
		    : _mm256_setzero_si256();
		const float d = kern_avx2_h2f(b), dmin = kern_avx2_h2f(b + 2);
		__m512i sumi[NT], scales;
		__m256i sm;
		__m256i mdup;
		uint8_t sc[16]; /* scales, then mins */

		kern_avx2_scales_k4(b + 4, sc);
		sm = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(const void *)sc));
		scales = _mm512_broadcast_i32x4(_mm256_castsi256_si128(sm));
		mdup = kern_avx2_mins_dup(sc);
		for (k = 0; k < NT; k++)
			sumi[k] = _mm512_setzero_si512();
		for (g = 0; g < 4; g++) {
			const __m512i s = _mm512_shuffle_epi8(scales, spread[g]);
			__m256i lo, hi;
			__m512i u;

			kern_avx2_q45k_pair(qs, g, five, &qh, &lo, &hi);
			u = kern_z_cat(lo, hi);
			for (k = 0; k < NT; k++)
				sumi[k] = _mm512_dpwssd_epi32(sumi[k], _mm512_maddubs_epi16(u,
				    _mm512_loadu_si512((const void *)(y[k][ib].qs + 64 * g))), s);
		}
		{ /* the tail (simd_x86.h) */
			const __m256 yd = kern_avx2_yd8(y, ib);
			__m256i mn[NT], si[NT];
			for (k = 0; k < NT; k++) {
				mn[k] = _mm256_madd_epi16(_mm256_loadu_si256(
				    (const __m256i *)(const void *)y[k][ib].bsums), mdup);
				si[k] = kern_z_fold(sumi[k]);
			}
			accm = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(dmin), yd),
			    _mm256_cvtepi32_ps(kern_avx2_totals8(mn)), accm);
			acc = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(d), yd),
			    _mm256_cvtepi32_ps(kern_avx2_totals8(si)), acc);
		}
	}
	_mm256_storeu_ps(out, _mm256_sub_ps(acc, accm));
}

/* One Q6_K row · KERN_TILE_AVX512 tokens: runs 0|1 and 2|3 of each half. */
static KERN_AVX512 void
kern_z_tile_q6k(const uint8_t *x, const struct kern_block_q8_k *const y[KERN_TILE_AVX512],
    int64_t nb, float out[KERN_TILE_AVX512])
{
	enum { NT = KERN_TILE_AVX512 };
	__m256i pick[4];
	__m256 acc = _mm256_setzero_ps(); /* lane k: token k */
	int64_t ib;
	int h, k;

	kern_avx2_picks(pick);
	for (ib = 0; ib < nb; ib++) {
		const uint8_t *b = x + (size_t)ib * sizeof(struct kern_block_q6_k);
		const __m256i sc16 = _mm256_cvtepi8_epi16(
		    _mm_loadu_si128((const __m128i *)(const void *)(b + 192)));
		const float dw = kern_avx2_h2f(b + 208);
		__m512i sumi[NT];
		__m256i si[NT];

		for (k = 0; k < NT; k++)
			sumi[k] = _mm512_setzero_si512();
		for (h = 0; h < 2; h++) {
			const __m256i sch = h ? _mm256_permute2x128_si256(sc16, sc16, 0x11)
			    : _mm256_permute2x128_si256(sc16, sc16, 0x00);
			const __m512i s01 = kern_z_cat(_mm256_shuffle_epi8(sch, pick[0]),
			    _mm256_shuffle_epi8(sch, pick[1]));
			const __m512i s23 = kern_z_cat(_mm256_shuffle_epi8(sch, pick[2]),
			    _mm256_shuffle_epi8(sch, pick[3]));
			__m256i u[4];
			__m512i u01, u23;

			kern_avx2_q6k_half(b, h, u);
			u01 = kern_z_cat(u[0], u[1]);
			u23 = kern_z_cat(u[2], u[3]);
			for (k = 0; k < NT; k++) {
				const int8_t *q8 = y[k][ib].qs + 128 * h;
				sumi[k] = _mm512_dpwssd_epi32(sumi[k], _mm512_maddubs_epi16(u01,
				    _mm512_loadu_si512((const void *)q8)), s01);
				sumi[k] = _mm512_dpwssd_epi32(sumi[k], _mm512_maddubs_epi16(u23,
				    _mm512_loadu_si512((const void *)(q8 + 64))), s23);
			}
		}
		for (k = 0; k < NT; k++) /* the offset: − 32·Σ sc·bsums */
			si[k] = _mm256_sub_epi32(kern_z_fold(sumi[k]), _mm256_slli_epi32(
			    _mm256_madd_epi16(sc16, _mm256_loadu_si256(
			    (const __m256i *)(const void *)y[k][ib].bsums)), 5));
		acc = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(dw), kern_avx2_yd8(y, ib)),
		    _mm256_cvtepi32_ps(kern_avx2_totals8(si)), acc);
	}
	_mm256_storeu_ps(out, acc);
}

/* Tokens per tile of type t at level lvl. */
static int
kern_tile_n(enum kern_type t, int lvl)
{
	if (lvl >= KERN_CPU_SIMD_AVX512)
		return KERN_TILE_AVX512;
	return t == KERN_TYPE_Q4_K || t == KERN_TYPE_Q5_K || t == KERN_TYPE_Q6_K ?
	    KERN_TILE_AVX2_KQ : KERN_TILE_AVX2;
}

/* One K-quant row · kern_tile_n(t, lvl) tokens at level lvl. */
static void
kern_tile_kq(enum kern_type t, int lvl, const uint8_t *x,
    const struct kern_block_q8_k *const y[KERN_TILE_MAX], int64_t nb, float o[KERN_TILE_MAX])
{
	if (t == KERN_TYPE_Q2_K || t == KERN_TYPE_Q3_K) {
		if (lvl >= KERN_CPU_SIMD_AVX512)
			kern_avx512_tile_q23k(x, y, nb, t == KERN_TYPE_Q3_K, o);
		else
			kern_avx2_tile_q23k(x, y, nb, t == KERN_TYPE_Q3_K, o);
	} else if (t == KERN_TYPE_Q6_K) {
		if (lvl >= KERN_CPU_SIMD_AVX512)
			kern_z_tile_q6k(x, y, nb, o);
		else
			kern_avx2_tile_q6k(x, y, nb, o);
	} else {
		if (lvl >= KERN_CPU_SIMD_AVX512)
			kern_z_tile_q45k(x, y, nb, t == KERN_TYPE_Q5_K, o);
		else
			kern_avx2_tile_q45k(x, y, nb, t == KERN_TYPE_Q5_K, o);
	}
}

/* Four Q4_0, Q4_1, Q5_0, Q5_1 or Q8_0 rows · kern_tile_n(t, lvl) tokens at level
 * lvl: o[4k + r]. */
static void
kern_tile_q(enum kern_type t, int lvl, const uint8_t *const x[4],
    const void *const y[KERN_TILE_MAX], int64_t nb, float o[4 * KERN_TILE_MAX])
{
	const int z = lvl >= KERN_CPU_SIMD_AVX512;

	if (t == KERN_TYPE_Q4_1 || t == KERN_TYPE_Q5_1) {
		const struct kern_block_q8_1 *const *y1 = (const struct kern_block_q8_1 *const *)y;
		(z ? kern_avx512_tile_q45_1 : kern_avx2_tile_q45_1)(x, y1, nb, t == KERN_TYPE_Q5_1, o);
	} else {
		const struct kern_block_q8_0 *const *y0 = (const struct kern_block_q8_0 *const *)y;
		if (t == KERN_TYPE_Q8_0)
			(z ? kern_avx512_tile_q8_0 : kern_avx2_tile_q8_0)(x, y0, nb, o);
		else
			(z ? kern_avx512_tile_q45_0 : kern_avx2_tile_q45_0)(x, y0, nb,
			    t == KERN_TYPE_Q5_0, o);
	}
}

/* kern_tile_n(t, lvl) tokens (act, as bytes apart) · n_rows rows: the K-quants
 * row by row, the others four rows at a time, a short last group repeating
 * its last row (its results dropped). */
static void
kern_tile_group(enum kern_type t, int lvl, const uint8_t *rows, size_t rb, int64_t n_rows,
    const uint8_t *act, size_t as, int64_t n, float *out, size_t os)
{
	const void *y[KERN_TILE_MAX];
	float o[4 * KERN_TILE_MAX];
	const int nt = kern_tile_n(t, lvl);
	int64_t r;
	int k, i;

	for (k = 0; k < nt; k++)
		y[k] = act + (size_t)k * as;
	if (kern_vec_dot_act_type(t) == KERN_TYPE_Q8_K) {
		for (r = 0; r < n_rows; r++) {
			kern_tile_kq(t, lvl, rows + (size_t)r * rb,
			    (const struct kern_block_q8_k *const *)y, n / KERN_QK_K, o);
			for (k = 0; k < nt; k++)
				out[(size_t)k * os + (size_t)r] = o[k];
		}
		return;
	}
	for (r = 0; r < n_rows; r += 4) {
		const uint8_t *x[4];
		for (i = 0; i < 4; i++)
			x[i] = rows + (size_t)(r + i < n_rows ? r + i : n_rows - 1) * rb;
		kern_tile_q(t, lvl, x, y, n / KERN_QK, o);
		for (k = 0; k < nt; k++)
			for (i = 0; i < 4 && r + i < n_rows; i++)
				out[(size_t)k * os + (size_t)(r + i)] = o[4 * k + i];
	}
}
/* Q4_K or Q6_K rows · every token, 8 at a time on vec_tile_dealt.h's tiles
 * (the activations in the dealt form): a short last group repeats its last
 * token (its results dropped). */
static void
kern_tile_dealt(enum kern_type t, const uint8_t *rows, size_t rb, int64_t n_rows,
    const uint8_t *act, size_t as, int64_t n_tok, int64_t n, float *out, size_t os)
{
	const uint8_t *a[8];
	float o[8];
	int64_t k0, r;
	int k;

	for (k0 = 0; k0 < n_tok; k0 += 8) {
		const int nk = n_tok - k0 < 8 ? (int)(n_tok - k0) : 8;
		for (k = 0; k < 8; k++)
			a[k] = act + (size_t)(k0 + (k < nk ? k : nk - 1)) * as;
		for (r = 0; r < n_rows; r++) {
			if (t == KERN_TYPE_Q6_K)
				kern_avx2_tile_q6k_t(rows + (size_t)r * rb, a, n / KERN_QK_K, o);
			else
				kern_avx2_tile_q4k_t(rows + (size_t)r * rb, a, n / KERN_QK_K, o);
			for (k = 0; k < nk; k++)
				out[(size_t)(k0 + k) * os + (size_t)r] = o[k];
		}
	}
}

/* Whether level lvl has a tile kernel for type t. */
static int
kern_tile_has(enum kern_type t, int lvl)
{
	if (lvl < KERN_CPU_SIMD_AVX2)
		return 0;
	return t == KERN_TYPE_Q2_K || t == KERN_TYPE_Q3_K || t == KERN_TYPE_Q4_K ||
	    t == KERN_TYPE_Q5_K || t == KERN_TYPE_Q6_K ||
	    t == KERN_TYPE_Q4_0 || t == KERN_TYPE_Q4_1 || t == KERN_TYPE_Q5_0 ||
	    t == KERN_TYPE_Q5_1 || t == KERN_TYPE_Q8_0;
}
#endif /* KERN_X86 */

int
kern_cpu_vec_dot_tile_dealt(enum kern_type t)
{
#if KERN_X86
	const int lvl = kern_cpu_simd_level();

	return (t == KERN_TYPE_Q4_K || t == KERN_TYPE_Q6_K) && lvl >= KERN_CPU_SIMD_AVX2 &&
	    lvl < KERN_CPU_SIMD_AVX512;
#else
	(void)t;
	return 0;
#endif
}

size_t
kern_cpu_q8k_dealt_row_bytes(int64_t n)
{
	return (size_t)(n / KERN_QK_K) * KERN_DEALT_BLOCK_BYTES;
}

void
kern_cpu_q8k_deal_rows(const void *src, size_t src_stride, void *dst, size_t dst_stride,
    int64_t n_tok, int64_t n)
{
#if KERN_X86
	const int64_t nb = n / KERN_QK_K;
	int64_t k, ib;

	for (k = 0; k < n_tok; k++) {
		const struct kern_block_q8_k *y = (const struct kern_block_q8_k *)(const void *)
		    ((const uint8_t *)src + (size_t)k * src_stride);
		uint8_t *row = (uint8_t *)dst + (size_t)k * dst_stride;
		for (ib = 0; ib < nb; ib++) {
			uint8_t *meta = KERN_DEALT_META(row, nb, ib);
			kern_avx2_q8k_deal(y[ib].qs, (int8_t *)(void *)KERN_DEALT_QS(row, ib));
			memcpy(meta, y[ib].bsums, sizeof(y[ib].bsums));
			memcpy(meta + 32, &y[ib].d, sizeof(float));
			memset(meta + 36, 0, 28);
		}
	}
#else
	(void)src;
	(void)src_stride;
	(void)dst;
	(void)dst_stride;
	(void)n_tok;
	(void)n;
#endif
}

int
kern_cpu_vec_dot_tile_tokens(enum kern_type t)
{
#if KERN_X86
	const int lvl = kern_cpu_simd_level();

	return kern_tile_has(t, lvl) ? kern_tile_n(t, lvl) : 0;
#else
	(void)t;
	return 0;
#endif
}

/* kern_cpu_vec_dot_tile without AMX: whole tiles of kern_tile_n(t, lvl)
 * tokens, the tokens left over one at a time. */
static void
kern_tile_rows(enum kern_type t, int lvl, const uint8_t *rows, size_t row_bytes, int64_t n_rows,
    const uint8_t *a, size_t act_stride, int64_t n_tok, int64_t n, float *out, size_t out_stride)
{
	const int be = kern_type_block_elems(t);
	int64_t k = 0;

#if KERN_X86
	if (n_rows > 0 && be > 0 && n > 0 && n % be == 0 && kern_tile_has(t, lvl))
		for (; k + kern_tile_n(t, lvl) <= n_tok; k += kern_tile_n(t, lvl))
			kern_tile_group(t, lvl, rows, row_bytes, n_rows, a + (size_t)k * act_stride,
			    act_stride, n, out + (size_t)k * out_stride, out_stride);
#else
	(void)lvl;
	(void)be;
#endif
	for (; k < n_tok; k++)
		kern_cpu_vec_dot_rows(t, rows, row_bytes, n_rows, a + (size_t)k * act_stride, n,
		    out + (size_t)k * out_stride);
}

void
kern_cpu_vec_dot_tile(enum kern_type t, const void *rows, size_t row_bytes, int64_t n_rows,
    const void *act, size_t act_stride, int64_t n_tok, int64_t n, float *out, size_t out_stride,
    int dealt)
{
	const uint8_t *w = rows, *a = act;
	const int lvl = kern_cpu_simd_level();

#if KERN_X86
	if (dealt) {
		if (n_rows > 0 && n_tok > 0 && n > 0 && n % KERN_QK_K == 0 &&
		    kern_cpu_vec_dot_tile_dealt(t))
			kern_tile_dealt(t, w, row_bytes, n_rows, a, act_stride, n_tok, n, out,
			    out_stride);
		return;
	}
#endif

	/* Q4_K/Q5_K/Q6_K on AMX tiles: whole groups of 16 rows × 16 tokens
	 * there, the rows and tokens left over here (the same bits either way) */
	if ((t == KERN_TYPE_Q4_K || t == KERN_TYPE_Q5_K || t == KERN_TYPE_Q6_K) && n_rows >= 16 &&
	    n_tok >= 16 && n > 0 && n % KERN_QK_K == 0 && kern_cpu_amx_on()) {
		const int64_t r16 = n_rows & ~(int64_t)15, t16 = n_tok & ~(int64_t)15;
		if (kern_cpu_amx_kq(t, w, row_bytes, r16, a, act_stride, t16, n / KERN_QK_K, out,
		    out_stride) == 0) {
			kern_tile_rows(t, lvl, w + (size_t)r16 * row_bytes, row_bytes, n_rows - r16,
			    a, act_stride, n_tok, n, out + r16, out_stride);
			kern_tile_rows(t, lvl, w, row_bytes, r16, a + (size_t)t16 * act_stride,
			    act_stride, n_tok - t16, n, out + (size_t)t16 * out_stride, out_stride);
			return;
		}
	}
	kern_tile_rows(t, lvl, w, row_bytes, n_rows, a, act_stride, n_tok, n, out, out_stride);
}
