/*
 * vec_tile_q23k.h: the body of the Q2_K and Q3_K tile kernel (one weight
 * row · KT_TILE tokens' Q8_K), included by vec_tile.c once per SIMD level
 * with KT_TILE, KT_ATTR, KT_FN and KT_DOTACC as for vec_tile_kq.h.
 * A super-block's quants (eight runs of 32), scales and mins are unpacked
 * once and dotted with every token; the integer sums land in the lanes of
 * vec_dot_k.c's kern_avx2_q23k and the f32 steps are its own, so each
 * (row, token) result equals kern_vec_dot's bit for bit (at AVX-512 too,
 * where the one-token dot is that AVX2 kernel).
 * Not a normal header: no include guard, on purpose.
 */

/* One Q2_K (three 0) or Q3_K (three 1) row · KT_TILE tokens (see
 * kern_avx2_q23k in vec_dot_k.c for the layout). */
static KT_ATTR void
KT_FN(q23k)(const uint8_t *x, const struct kern_block_q8_k *const y[KT_TILE], int64_t nb,
    int three, float out[KT_TILE])
{
	const size_t bb = three ? sizeof(struct kern_block_q3_k) : sizeof(struct kern_block_q2_k);
	__m256i pick[4];
	__m256 acc[KT_TILE], acco[KT_TILE];
	int64_t ib;
	int h, q, k;

	kern_avx2_picks(pick);
	for (k = 0; k < KT_TILE; k++) {
		acc[k] = _mm256_setzero_ps();
		acco[k] = _mm256_setzero_ps();
	}
	for (ib = 0; ib < nb; ib++) {
		const uint8_t *b = x + (size_t)ib * bb;
		const float dw = kern_avx2_h2f(b + (three ? 108 : 80));
		const float mw = three ? 0.0f : kern_avx2_h2f(b + 82);
		__m256i sc16, off16, sumi[KT_TILE];

		kern_avx2_q23k_scales(b, three, &sc16, &off16);
		for (k = 0; k < KT_TILE; k++) {
			const struct kern_block_q8_k *yk = &y[k][ib];
			const __m256i bs = _mm256_loadu_si256((const __m256i *)(const void *)yk->bsums);
			const float o = three ? 4.0f * (dw * yk->d) : mw * yk->d;
			acco[k] = _mm256_fmadd_ps(_mm256_set1_ps(o),
			    _mm256_cvtepi32_ps(_mm256_madd_epi16(off16, bs)), acco[k]);
			sumi[k] = _mm256_setzero_si256();
		}
		for (h = 0; h < 2; h++) {
			const __m256i sch = h ? _mm256_permute2x128_si256(sc16, sc16, 0x11)
			    : _mm256_permute2x128_si256(sc16, sc16, 0x00);
			for (q = 0; q < 4; q++) {
				const __m256i s = _mm256_shuffle_epi8(sch, pick[q]);
				const __m256i u = kern_avx2_q23k_run(b, h, q, three);
				for (k = 0; k < KT_TILE; k++)
					sumi[k] = KT_DOTACC(sumi[k], _mm256_maddubs_epi16(u,
					    _mm256_loadu_si256((const __m256i *)(const void *)
					    (y[k][ib].qs + 128 * h + 32 * q))), s);
			}
		}
		for (k = 0; k < KT_TILE; k++)
			acc[k] = _mm256_fmadd_ps(_mm256_set1_ps(dw * y[k][ib].d),
			    _mm256_cvtepi32_ps(sumi[k]), acc[k]);
	}
	for (k = 0; k < KT_TILE; k++)
		out[k] = kern_avx2_hsum(acc[k]) - kern_avx2_hsum(acco[k]);
}
