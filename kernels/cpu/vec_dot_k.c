/*
 * vec_dot_k.c: K-quant rows (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) · Q8_K
 * activations, as llama.cpp's CPU backend pairs them.
 *
 * Every K-quant super-block of 256 is 16 sub-blocks of 16 with an integer
 * scale sc_s (and for Q2_K/Q4_K/Q5_K an integer min mn_s), an f16 d (and
 * dmin), and quants u_j stored unsigned with a type-wide offset o (Q3_K 4,
 * Q6_K 32, else 0).  With Q8_K's f32 d_y, quants y_j and bsums b_s = Σ_s y:
 *     row·x = d·d_y · Σ_s sc_s·(Σ_{j∈s} u_j·y_j − o·b_s)
 *           − dmin·d_y · Σ_s mn_s·b_s
 * where the sums are exact in int32 (|.| < 2^29 for every type).
 *
 * Levels:
 *   scalar  the reference: unpacks a super-block (u, sc, mn) and sums.
 *   avx2    every type straight from the packed bits (u8·s8 pairs with
 *           vpmaddubsw, then vpmaddwd by the sub-block scale, into int32
 *           lanes; mins and offsets by one vpmaddwd against bsums).
 *           AVX-512 runs these too.  Q4_K, Q5_K and Q6_K end each
 *           super-block in the one f32 tail of simd_x86.h (kern_kq_fma:
 *           exact int32 totals, scalar f32 chains), which the tiles and
 *           AMX tiles of vec_tile*.c reproduce bit for bit; Q2_K and Q3_K
 *           keep one f32 FMA per super-block on the 8 int32 lanes.
 * The levels differ from scalar only in the f32 rounding of the sums over
 * super-blocks (see vec_dot.c for the bound the tests use).
 */
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/simd.h"

static inline uint16_t
kern_ld16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

/* One super-block unpacked: quants (offset o added), per-16 scales, mins. */
struct kern_kq {
	uint8_t u[KERN_QK_K];
	int sc[16], mn[16];
	int off;
	float d, dmin;
};

static void
kern_kq_unpack(enum kern_type t, const uint8_t *b, struct kern_kq *k)
{
	int h, q, l, s, e;

	memset(k->mn, 0, sizeof(k->mn));
	k->off = 0;
	k->dmin = 0.0f;
	switch (t) {
	case KERN_TYPE_Q2_K: /* 2 bits at 2q of qs[32h + l] for element 128h + 32q + l */
		for (h = 0; h < 2; h++)
			for (q = 0; q < 4; q++)
				for (l = 0; l < 32; l++)
					k->u[128 * h + 32 * q + l] = (uint8_t)((b[16 + 32 * h + l] >> (2 * q)) & 3);
		for (s = 0; s < 16; s++) {
			k->sc[s] = b[s] & 0xf;
			k->mn[s] = b[s] >> 4;
		}
		k->d = kern_f16_to_f32(kern_ld16(b + 80));
		k->dmin = kern_f16_to_f32(kern_ld16(b + 82));
		break;
	case KERN_TYPE_Q3_K: /* as Q2_K, plus bit 4h + q of hmask[l] (clear: −4) */
		for (h = 0; h < 2; h++)
			for (q = 0; q < 4; q++)
				for (l = 0; l < 32; l++)
					k->u[128 * h + 32 * q + l] = (uint8_t)(((b[32 + 32 * h + l] >> (2 * q)) & 3) |
					    ((b[l] >> (4 * h + q)) & 1) << 2);
		kern_cpu_q3k_scales(b + 96, k->sc);
		for (s = 0; s < 16; s++)
			k->sc[s] -= 32;
		k->off = 4;
		k->d = kern_f16_to_f32(kern_ld16(b + 108));
		break;
	case KERN_TYPE_Q4_K:
	case KERN_TYPE_Q5_K: { /* nibbles of qs[32g + l]: elements 64g + l, 64g + 32 + l */
		const int five = t == KERN_TYPE_Q5_K;
		const uint8_t *qs = b + (five ? 48 : 16), *qh = b + 16;
		for (e = 0; e < KERN_QK_K; e++) {
			int g = e / 64, hi = (e / 32) & 1, byte = qs[32 * g + e % 32];
			int v = hi ? byte >> 4 : byte & 0xf;
			if (five)
				v |= ((qh[e % 32] >> (2 * g + hi)) & 1) << 4;
			k->u[e] = (uint8_t)v;
		}
		for (s = 0; s < 8; s++) {
			int sc, mn;
			kern_cpu_q4k_scale_min(s, b + 4, &sc, &mn);
			k->sc[2 * s] = k->sc[2 * s + 1] = sc;
			k->mn[2 * s] = k->mn[2 * s + 1] = mn;
		}
		k->d = kern_f16_to_f32(kern_ld16(b));
		k->dmin = kern_f16_to_f32(kern_ld16(b + 2));
		break;
	}
	case KERN_TYPE_Q6_K: /* low 4 bits in ql, high 2 in qh (see quant.c) */
		for (e = 0; e < KERN_QK_K; e++) {
			int hh = e / 128, qq = (e % 128) / 32, ll = e % 32;
			int lo = b[64 * hh + ll + 32 * (qq & 1)];
			lo = qq >= 2 ? lo >> 4 : lo & 0xf;
			k->u[e] = (uint8_t)(lo | ((b[128 + 32 * hh + ll] >> (2 * qq)) & 3) << 4);
		}
		for (s = 0; s < 16; s++)
			k->sc[s] = (int8_t)b[192 + s];
		k->off = 32;
		k->d = kern_f16_to_f32(kern_ld16(b + 208));
		break;
	case KERN_TYPE_F32: /* not K-quants: never called with these */
	case KERN_TYPE_F16:
	case KERN_TYPE_BF16:
	case KERN_TYPE_Q4_0:
	case KERN_TYPE_Q4_1:
	case KERN_TYPE_Q5_0:
	case KERN_TYPE_Q5_1:
	case KERN_TYPE_Q8_0:
	case KERN_TYPE_Q8_1:
	case KERN_TYPE_Q8_K:
	case KERN_TYPE_COUNT:
		memset(k, 0, sizeof(*k));
		break;
	}
}

/* Σ_s sc_s·o·b_s and Σ_s mn_s·b_s of one super-block. */
static void
kern_kq_bias(const struct kern_kq *k, const struct kern_block_q8_k *y, int *off, int *mins)
{
	int s, o = 0, m = 0;

	for (s = 0; s < 16; s++) {
		o += k->sc[s] * k->off * y->bsums[s];
		m += k->mn[s] * y->bsums[s];
	}
	*off = o;
	*mins = m;
}

static float
kern_scalar_kq(enum kern_type t, const uint8_t *x, const struct kern_block_q8_k *y, int64_t nb)
{
	const size_t bb = kern_type_block_bytes(t);
	struct kern_kq k;
	float sum = 0.0f;
	int64_t ib;
	int s, j;

	for (ib = 0; ib < nb; ib++) {
		int sumi = 0, off, mins;
		kern_kq_unpack(t, x + (size_t)ib * bb, &k);
		for (s = 0; s < 16; s++) {
			int dot = 0;
			for (j = 0; j < 16; j++)
				dot += k.u[16 * s + j] * y[ib].qs[16 * s + j];
			sumi += k.sc[s] * dot;
		}
		kern_kq_bias(&k, &y[ib], &off, &mins);
		sum += k.d * y[ib].d * (float)(sumi - off) - k.dmin * y[ib].d * (float)mins;
	}
	return sum;
}

#if KERN_X86
#include "kernels/cpu/simd_x86.h"

/* Q2_K (three 0) or Q3_K (three 1) straight from the packed block: per half
 * h, the 32 bytes of qs hold four runs of 32 two-bit quants (bits 2q), Q3_K
 * adds bit 4h + q of hmask as the third (u ≤ 7; its quant is u − 4).  The
 * per-16 scales (Q2_K: low nibbles, mins the high ones; Q3_K: six bits
 * minus 32) go to int16 lanes once per block, spread as for Q6_K; mins and
 * Q3_K's offset 4·Σ sc·bsums are one vpmaddwd each, kept as a vector. */
static KERN_AVX2 float
kern_avx2_q23k(const uint8_t *x, const struct kern_block_q8_k *y, int64_t nb, int three)
{
	const size_t bb = three ? sizeof(struct kern_block_q3_k) : sizeof(struct kern_block_q2_k);
	__m256i pick[4];
	__m256 acc = _mm256_setzero_ps(), acco = _mm256_setzero_ps();
	int64_t ib;
	int h, q;

	kern_avx2_picks(pick);
	for (ib = 0; ib < nb; ib++) {
		const uint8_t *b = x + (size_t)ib * bb;
		const int8_t *q8 = y[ib].qs;
		const __m256i bs = _mm256_loadu_si256((const __m256i *)(const void *)y[ib].bsums);
		const float d = kern_avx2_h2f(b + (three ? 108 : 80)) * y[ib].d;
		__m256i sc16, off16, sumi = _mm256_setzero_si256();

		kern_avx2_q23k_scales(b, three, &sc16, &off16);
		acco = _mm256_fmadd_ps(_mm256_set1_ps(three ? 4.0f * d : kern_avx2_h2f(b + 82) * y[ib].d),
		    _mm256_cvtepi32_ps(_mm256_madd_epi16(off16, bs)), acco);
		for (h = 0; h < 2; h++) {
			const __m256i sch = h ? _mm256_permute2x128_si256(sc16, sc16, 0x11)
			    : _mm256_permute2x128_si256(sc16, sc16, 0x00);
			for (q = 0; q < 4; q++) {
				const __m256i u = kern_avx2_q23k_run(b, h, q, three);
				sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(_mm256_maddubs_epi16(u,
				    _mm256_loadu_si256((const __m256i *)(const void *)(q8 + 128 * h + 32 * q))),
				    _mm256_shuffle_epi8(sch, pick[q])));
			}
		}
		acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
	}
	return kern_avx2_hsum(acc) - kern_avx2_hsum(acco);
}

/* Q4_K (five 0) or Q5_K (five 1) straight from the packed block: for each
 * 64 quants, the low nibbles (sub-block 2g) and the high ones (2g + 1) of 32
 * bytes, the 5th bits from qh (shifted down 2 per pair); u ≤ 31 so no int16
 * saturation.
 * The scales go to int16 lanes once per block and each sub-block's is
 * spread by a byte shuffle; the mins, each twice, meet the bsums in one
 * vpmaddwd (lane j: sub-block j's min · its 32 quants' sum); both end the
 * super-block as exact int32 totals in the f32 tail (kern_kq_fma). */
/* Super-block b of a Q4_K/Q5_K row · y: *sumi the scaled sums' lanes,
 * *mn the mins' (lane j: mn_j·b_j), *d and *dmin the block's scales. */
static inline KERN_AVX2_INLINE void
kern_avx2_q45k_block(const uint8_t *b, int five, const struct kern_block_q8_k *y,
    const __m256i spread[8], __m256i *sumi, __m256i *mn, float *d, float *dmin)
{
	const uint8_t *qs = b + (five ? 48 : 16);
	const int8_t *q8 = y->qs;
	/* the 5th bits of pair g at bits 0 (low) and 1 (high) of each byte */
	__m256i qh = five ? _mm256_loadu_si256((const __m256i *)(const void *)(b + 16))
	    : _mm256_setzero_si256();
	const __m256i bs = _mm256_loadu_si256((const __m256i *)(const void *)y->bsums);
	__m256i acc = _mm256_setzero_si256(), sm, scales;
	uint8_t sc[16]; /* scales, then mins */
	int g;

	kern_avx2_scales_k4(b + 4, sc);
	sm = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(const void *)sc));
	scales = _mm256_broadcastsi128_si256(_mm256_castsi256_si128(sm));
	*mn = _mm256_madd_epi16(bs, kern_avx2_mins_dup(sc));
	for (g = 0; g < 4; g++) {
		__m256i lo, hi;

		kern_avx2_q45k_pair(qs, g, five, &qh, &lo, &hi);
		lo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo,
		    _mm256_loadu_si256((const __m256i *)(const void *)(q8 + 64 * g))),
		    _mm256_shuffle_epi8(scales, spread[2 * g]));
		hi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi,
		    _mm256_loadu_si256((const __m256i *)(const void *)(q8 + 64 * g + 32))),
		    _mm256_shuffle_epi8(scales, spread[2 * g + 1]));
		acc = _mm256_add_epi32(acc, _mm256_add_epi32(lo, hi));
	}
	*sumi = acc;
	*d = kern_avx2_h2f(b);
	*dmin = kern_avx2_h2f(b + 2);
}

/* int16 lane j of 8 into every lane, for kern_avx2_q45k_block */
static inline KERN_AVX2_INLINE void
kern_avx2_spread8(__m256i spread[8])
{
	int g;

	for (g = 0; g < 8; g++)
		spread[g] = _mm256_set1_epi16((short)(2 * g | (2 * g + 1) << 8));
}

static KERN_AVX2 float
kern_avx2_q45k(const uint8_t *x, const struct kern_block_q8_k *y, int64_t nb, int five)
{
	const size_t bb = five ? sizeof(struct kern_block_q5_k) : sizeof(struct kern_block_q4_k);
	__m256i spread[8];
	float acc = 0.0f, accm = 0.0f;
	int64_t ib;

	kern_avx2_spread8(spread);
	for (ib = 0; ib < nb; ib++) {
		__m256i sumi, mn;
		float d, dmin;

		kern_avx2_q45k_block(x + (size_t)ib * bb, five, &y[ib], spread, &sumi, &mn, &d, &dmin);
		accm = kern_kq_fma(dmin * y[ib].d, kern_avx2_hsum_i32(mn), accm);
		acc = kern_kq_fma(d * y[ib].d, kern_avx2_hsum_i32(sumi), acc);
	}
	return acc - accm;
}

/* Four Q4_K/Q5_K rows (rb bytes apart) · y: the tail's chains of the four
 * in the lanes of one vector, one horizontal sum for all (decode: a
 * row's own tail cost ~18 % of its time). */
static KERN_AVX2 void
kern_avx2_q45k_x4(const uint8_t *x, size_t rb, const struct kern_block_q8_k *y, int64_t nb,
    int five, int n_pf, float out[4])
{
	const size_t bb = five ? sizeof(struct kern_block_q5_k) : sizeof(struct kern_block_q4_k);
	__m256i spread[8];
	__m128 acc = _mm_setzero_ps(), accm = _mm_setzero_ps(); /* lane r: row r */
	struct kern_pf_walk pw;
	int64_t ib;
	int r;

	kern_avx2_spread8(spread);
	kern_avx2_pf_start(&pw, x + 4 * rb, n_pf, rb, bb);
	for (ib = 0; ib < nb; ib++) {
		__m256i sumi[4], mn[4];
		float d[4], dmin[4];
		__m128 yd = _mm_set1_ps(y[ib].d);

		kern_avx2_pf_block(&pw);
		for (r = 0; r < 4; r++)
			kern_avx2_q45k_block(x + (size_t)r * rb + (size_t)ib * bb, five, &y[ib], spread,
			    &sumi[r], &mn[r], &d[r], &dmin[r]);
		accm = _mm_fmadd_ps(_mm_mul_ps(_mm_loadu_ps(dmin), yd), _mm_cvtepi32_ps(
		    kern_avx2_hsum4_i32(mn[0], mn[1], mn[2], mn[3])), accm);
		acc = _mm_fmadd_ps(_mm_mul_ps(_mm_loadu_ps(d), yd), _mm_cvtepi32_ps(
		    kern_avx2_hsum4_i32(sumi[0], sumi[1], sumi[2], sumi[3])), acc);
	}
	_mm_storeu_ps(out, _mm_sub_ps(acc, accm));
}

/* Q6_K straight from the packed block: per half h, the 4 runs of 32 quants
 * from ql (low nibbles / high nibbles of two 32-byte rows) and qh (2 bits
 * at 0, 2, 4, 6); u ≤ 63, |y| ≤ 127, so the pair sums fit int16.  The 16
 * int8 scales go to int16 lanes once per block; run k of half h takes
 * [sc(8h+2k) ×8 | sc(8h+2k+1) ×8] by a byte shuffle of half h; the offset
 * 32·Σ sc·bsums is one vpmaddwd, taken off the lanes before the tail. */
/* Super-block b of a Q6_K row · y: the lanes of Σ_s sc_s·Σ (u − 32)·y
 * (the offset taken off), *d the block's scale. */
static inline KERN_AVX2_INLINE __m256i
kern_avx2_q6k_block(const uint8_t *b, const struct kern_block_q8_k *y, const __m256i pick[4],
    float *d)
{
	const int8_t *q8 = y->qs;
	const __m256i sc16 = _mm256_cvtepi8_epi16(
	    _mm_loadu_si128((const __m128i *)(const void *)(b + 192)));
	const __m256i bs = _mm256_loadu_si256((const __m256i *)(const void *)y->bsums);
	__m256i sumi = _mm256_setzero_si256();
	int h, k;

	for (h = 0; h < 2; h++) {
		const __m256i sch = h ? _mm256_permute2x128_si256(sc16, sc16, 0x11)
		    : _mm256_permute2x128_si256(sc16, sc16, 0x00);
		__m256i u[4];

		kern_avx2_q6k_half(b, h, u);
		for (k = 0; k < 4; k++) {
			const __m256i q = _mm256_loadu_si256(
			    (const __m256i *)(const void *)(q8 + 128 * h + 32 * k));
			sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(_mm256_maddubs_epi16(u[k], q),
			    _mm256_shuffle_epi8(sch, pick[k])));
		}
	}
	*d = kern_avx2_h2f(b + 208);
	/* the offset: sumi − 32·Σ sc·bsums */
	return _mm256_sub_epi32(sumi, _mm256_slli_epi32(_mm256_madd_epi16(sc16, bs), 5));
}

static KERN_AVX2 float
kern_avx2_q6k(const uint8_t *x, const struct kern_block_q8_k *y, int64_t nb)
{
	__m256i pick[4];
	float acc = 0.0f;
	int64_t ib;

	kern_avx2_picks(pick);
	for (ib = 0; ib < nb; ib++) {
		float d;
		const __m256i sumi = kern_avx2_q6k_block(x + (size_t)ib * sizeof(struct kern_block_q6_k),
		    &y[ib], pick, &d);
		acc = kern_kq_fma(d * y[ib].d, kern_avx2_hsum_i32(sumi), acc);
	}
	return acc;
}

/* Four Q6_K rows (rb bytes apart) · y, as kern_avx2_q45k_x4. */
static KERN_AVX2 void
kern_avx2_q6k_x4(const uint8_t *x, size_t rb, const struct kern_block_q8_k *y, int64_t nb,
    int n_pf, float out[4])
{
	__m256i pick[4];
	__m128 acc = _mm_setzero_ps(); /* lane r: row r */
	struct kern_pf_walk pw;
	int64_t ib;
	int r;

	kern_avx2_picks(pick);
	kern_avx2_pf_start(&pw, x + 4 * rb, n_pf, rb, sizeof(struct kern_block_q6_k));
	for (ib = 0; ib < nb; ib++) {
		__m256i sumi[4];
		float d[4];

		kern_avx2_pf_block(&pw);
		for (r = 0; r < 4; r++)
			sumi[r] = kern_avx2_q6k_block(x + (size_t)r * rb +
			    (size_t)ib * sizeof(struct kern_block_q6_k), &y[ib], pick, &d[r]);
		acc = _mm_fmadd_ps(_mm_mul_ps(_mm_loadu_ps(d), _mm_set1_ps(y[ib].d)), _mm_cvtepi32_ps(
		    kern_avx2_hsum4_i32(sumi[0], sumi[1], sumi[2], sumi[3])), acc);
	}
	_mm_storeu_ps(out, acc);
}
#endif /* KERN_X86 */

void
kern_cpu_kq_dot_rows(enum kern_type t, int lvl, const uint8_t *rows, size_t row_bytes,
    int64_t n_rows, const struct kern_block_q8_k *y, int64_t nb, float *out)
{
	int64_t r;

	for (r = 0; r < n_rows; r++) {
		const uint8_t *x = rows + (size_t)r * row_bytes;
#if KERN_X86
		/* Q4_K, Q5_K, Q6_K four rows at a time (the same bits as one) */
		if (lvl >= KERN_CPU_SIMD_AVX2 && r + 4 <= n_rows && (t == KERN_TYPE_Q4_K ||
		    t == KERN_TYPE_Q5_K || t == KERN_TYPE_Q6_K)) {
			/* the next four rows (at most the rows there are),
			 * prefetched a slice a block */
			const int n_pf = n_rows - (r + 4) < 4 ? (int)(n_rows - (r + 4)) : 4;
			if (t == KERN_TYPE_Q6_K)
				kern_avx2_q6k_x4(x, row_bytes, y, nb, n_pf, out + r);
			else
				kern_avx2_q45k_x4(x, row_bytes, y, nb, t == KERN_TYPE_Q5_K, n_pf, out + r);
			r += 3;
			continue;
		}
		if (lvl >= KERN_CPU_SIMD_AVX2) {
			/* the row KERN_PREFETCH_BYTES ahead (at least the next) */
			if (r + 1 < n_rows)
				kern_x86_prefetch(x, (KERN_PREFETCH_BYTES / row_bytes + 1) *
				    row_bytes, row_bytes, rows + (size_t)n_rows * row_bytes);
			if (t == KERN_TYPE_Q4_K || t == KERN_TYPE_Q5_K)
				out[r] = kern_avx2_q45k(x, y, nb, t == KERN_TYPE_Q5_K);
			else if (t == KERN_TYPE_Q6_K)
				out[r] = kern_avx2_q6k(x, y, nb);
			else
				out[r] = kern_avx2_q23k(x, y, nb, t == KERN_TYPE_Q3_K);
			continue;
		}
#else
		(void)lvl;
#endif
		out[r] = kern_scalar_kq(t, x, y, nb);
	}
}
