/*
 * vec_tile_kq.h: the body of the K-quant tile kernels (one weight row ·
 * KERN_TILE_AVX2_KQ = 8 tokens' Q8_K activations), included by vec_tile.c
 * for AVX2 (a template, so that a 256-bit VNNI level could share it) with
 *   KT_ATTR              the level's target attribute,
 *   KT_FN(name)          the level's function name,
 *   KT_DOTACC(acc, a, b) acc + vpmaddwd(a, b) in int32 lanes (vpmaddwd +
 *                        vpaddd; VNNI's vpdpwssd is the same sum).
 * A super-block's quants and scales are unpacked once and dotted with every
 * token.  The integer sums are exact int32 totals per super-block and the
 * f32 tail is simd_x86.h's (kern_kq_fma, the 8 tokens in the lanes of
 * one vector), so each (row, token) result equals kern_vec_dot's at the
 * same level bit for bit.  8 tokens, not vec_tile_q.h's 4: the 8 sums, a
 * pair's unpacked quants and its two scales fill the 16 registers, and the
 * unpacking and the tail (one 256-bit vector for the 8 tokens) are spread
 * over twice the tokens (`bench_quant 0.25 prefill q4_K`, one thread, the
 * best of 8 turns each on the AMD VM: 6.99 → 6.32 ms; q6_K 7.43 → 6.72).
 * Not a normal header: no include guard, on purpose.
 */

/* One Q4_K (five 0) or Q5_K (five 1) row · 8 tokens (see kern_avx2_q45k in
 * vec_dot_k.c for the layout). */
static KT_ATTR void
KT_FN(q45k)(const uint8_t *x, const struct kern_block_q8_k *const y[KERN_TILE_AVX2_KQ],
    int64_t nb, int five, float out[KERN_TILE_AVX2_KQ])
{
	enum { NT = KERN_TILE_AVX2_KQ };
	const size_t bb = five ? sizeof(struct kern_block_q5_k) : sizeof(struct kern_block_q4_k);
	__m256 acc = _mm256_setzero_ps(), accm = _mm256_setzero_ps(); /* lane k: token k */
	int64_t ib;
	int g, k;

	for (ib = 0; ib < nb; ib++) {
		const uint8_t *b = x + (size_t)ib * bb, *qs = b + (five ? 48 : 16);
		__m256i qh = five ? _mm256_loadu_si256((const __m256i *)(const void *)(b + 16))
		    : _mm256_setzero_si256();
		const float d = kern_avx2_h2f(b), dmin = kern_avx2_h2f(b + 2);
		__m256i sumi[NT], sm, scales;
		__m256i mdup;
		uint8_t sc[16]; /* scales, then mins */

		kern_avx2_scales_k4(b + 4, sc);
		sm = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(const void *)sc));
		scales = _mm256_broadcastsi128_si256(_mm256_castsi256_si128(sm));
		mdup = kern_avx2_mins_dup(sc);
		for (k = 0; k < NT; k++)
			sumi[k] = _mm256_setzero_si256();
		for (g = 0; g < 4; g++) {
			const __m256i slo = _mm256_shuffle_epi8(scales,
			    _mm256_set1_epi16((short)(4 * g | (4 * g + 1) << 8)));
			const __m256i shi = _mm256_shuffle_epi8(scales,
			    _mm256_set1_epi16((short)((4 * g + 2) | (4 * g + 3) << 8)));
			__m256i lo, hi;

			kern_avx2_q45k_pair(qs, g, five, &qh, &lo, &hi);
			for (k = 0; k < NT; k++) {
				const int8_t *q8 = y[k][ib].qs + 64 * g;
				sumi[k] = KT_DOTACC(sumi[k], _mm256_maddubs_epi16(lo,
				    _mm256_loadu_si256((const __m256i *)(const void *)q8)), slo);
				sumi[k] = KT_DOTACC(sumi[k], _mm256_maddubs_epi16(hi,
				    _mm256_loadu_si256((const __m256i *)(const void *)(q8 + 32))), shi);
			}
		}
		{ /* the tail (simd_x86.h) for the 8 tokens in lanes */
			const __m256 yd = kern_avx2_yd8(y, ib);
			__m256i mn[NT];
			for (k = 0; k < NT; k++)
				mn[k] = _mm256_madd_epi16(_mm256_loadu_si256(
				    (const __m256i *)(const void *)y[k][ib].bsums), mdup);
			kern_avx2_kq45_tail8(&acc, &accm, d, dmin, yd, sumi, mn);
		}
	}
	_mm256_storeu_ps(out, _mm256_sub_ps(acc, accm));
}

/* One Q6_K row · 8 tokens (see kern_avx2_q6k in vec_dot_k.c). */
static KT_ATTR void
KT_FN(q6k)(const uint8_t *x, const struct kern_block_q8_k *const y[KERN_TILE_AVX2_KQ],
    int64_t nb, float out[KERN_TILE_AVX2_KQ])
{
	enum { NT = KERN_TILE_AVX2_KQ };
	__m256i pick[4];
	__m256 acc = _mm256_setzero_ps(); /* lane k: token k */
	int64_t ib;
	int h, j, k;

	kern_avx2_picks(pick);
	for (ib = 0; ib < nb; ib++) {
		const uint8_t *b = x + (size_t)ib * sizeof(struct kern_block_q6_k);
		const __m256i sc16 = _mm256_cvtepi8_epi16(
		    _mm_loadu_si128((const __m128i *)(const void *)(b + 192)));
		const float dw = kern_avx2_h2f(b + 208);
		__m256i sumi[NT];

		for (k = 0; k < NT; k++)
			sumi[k] = _mm256_setzero_si256();
		for (h = 0; h < 2; h++) {
			const __m256i sch = h ? _mm256_permute2x128_si256(sc16, sc16, 0x11)
			    : _mm256_permute2x128_si256(sc16, sc16, 0x00);
			__m256i u[4];

			kern_avx2_q6k_half(b, h, u);
			for (j = 0; j < 4; j++) {
				const __m256i s = _mm256_shuffle_epi8(sch, pick[j]);
				for (k = 0; k < NT; k++)
					sumi[k] = KT_DOTACC(sumi[k], _mm256_maddubs_epi16(u[j],
					    _mm256_loadu_si256((const __m256i *)(const void *)
					    (y[k][ib].qs + 128 * h + 32 * j))), s);
			}
		}
		for (k = 0; k < NT; k++) /* the offset: − 32·Σ sc·bsums */
			sumi[k] = _mm256_sub_epi32(sumi[k], _mm256_slli_epi32(_mm256_madd_epi16(sc16,
			    _mm256_loadu_si256((const __m256i *)(const void *)y[k][ib].bsums)), 5));
		acc = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(dw), kern_avx2_yd8(y, ib)),
		    _mm256_cvtepi32_ps(kern_avx2_totals8(sumi)), acc);
	}
	_mm256_storeu_ps(out, acc);
}
