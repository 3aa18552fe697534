/*
 * vec_tile_q.h: the body of the Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 tile kernels (four
 * weight rows · KT_TILE tokens), included by vec_tile.c once per SIMD level
 * with
 *   KT_TILE, KT_ATTR, KT_FN    as for vec_tile_kq.h,
 *   KT_U8DOT(lo, yl, hi, yh)   int32 lanes of Σ lo·yl + hi·yh over each 4
 *                              bytes (lo, hi unsigned, ≤ 31),
 *   KT_S8BIAS(yl, yh)          what KT_S8DOT needs per activation block,
 *   KT_S8DOT(b, wl, yl, wh, yh) the same for signed weights,
 *   KT_OBIAS(c, yl, yh)        what KT_ODOT needs per activation block (c:
 *                              the offset in every byte),
 *   KT_ODOT(b, lo, yl, hi, yh) the same for unsigned u = q + c (Q4_0's
 *                              nibbles, c = 8; Q5_0's 5-bit quants, c = 16).
 * The layout is vec_dot.c's four-row one (simd_x86.h): the weights of a
 * block are loaded, unpacked and their scales converted once, then dotted
 * with every token; the integer sums land in the same lanes and the f32
 * steps are those of vec_dot.c's four-row kernels, so each (row, token)
 * result equals kern_vec_dot's at the same level bit for bit.
 * Not a normal header: no include guard, on purpose.
 */

/* Four Q4_1 (five 0) or Q5_1 (five 1) rows · KT_TILE tokens' Q8_1:
 * out[4k + r]. */
static KT_ATTR void
KT_FN(q45_1)(const uint8_t *const x[4], const struct kern_block_q8_1 *const y[KT_TILE],
    int64_t nb, int five, float out[4 * KT_TILE])
{
	const size_t bb = five ? sizeof(struct kern_block_q5_1) : sizeof(struct kern_block_q4_1);
	const size_t qo = five ? 8 : 4; /* the quant bytes (Q5_1: after qh) */
	__m256 acc[KT_TILE], ms[KT_TILE];
	float m[8];
	int64_t ib;
	int k, r;

	for (k = 0; k < KT_TILE; k++) {
		acc[k] = _mm256_setzero_ps();
		ms[k] = _mm256_setzero_ps();
	}
	for (ib = 0; ib < nb; ib++) {
		const size_t off = (size_t)ib * bb;
		const __m256 wf = kern_avx2_f16x2x4_raw(x, off);
		__m256i lo01, hi01, lo23, hi23;

		kern_avx2_q45_pair(x[0] + off, x[1] + off, qo, five, &lo01, &hi01);
		kern_avx2_q45_pair(x[2] + off, x[3] + off, qo, five, &lo23, &hi23);
		for (k = 0; k < KT_TILE; k++) {
			const uint8_t *yb = (const uint8_t *)(y[k] + ib);
			const __m256i ylo = kern_avx2_bcast128(yb + 4), yhi = kern_avx2_bcast128(yb + 20);
			const __m256i p01 = KT_U8DOT(lo01, ylo, hi01, yhi);
			const __m256i p23 = KT_U8DOT(lo23, ylo, hi23, yhi);
			/* [d_w·d_x, m_w·s_x] per row */
			const __m256 f = _mm256_mul_ps(wf, kern_avx2_bcast_pair(kern_avx2_f16x2(yb)));
			ms[k] = _mm256_add_ps(ms[k], f);
			acc[k] = _mm256_fmadd_ps(kern_avx2_scale4(f), kern_avx2_fold2(p01, p23), acc[k]);
		}
	}
	for (k = 0; k < KT_TILE; k++) {
		kern_avx2_unfold(acc[k], out + 4 * k);
		_mm256_storeu_ps(m, ms[k]);
		for (r = 0; r < 4; r++)
			out[4 * k + r] += m[2 * r + 1];
	}
}

/* Four Q8_0 rows · KT_TILE tokens' Q8_0: out[4k + r]. */
static KT_ATTR void
KT_FN(q8_0)(const uint8_t *const x[4], const struct kern_block_q8_0 *const y[KT_TILE],
    int64_t nb, float out[4 * KT_TILE])
{
	const __m128 dmask = _mm_castsi128_ps(_mm_setr_epi32(-1, 0, 0, 0));
	__m256 acc[KT_TILE];
	int64_t ib;
	int k;

	for (k = 0; k < KT_TILE; k++)
		acc[k] = _mm256_setzero_ps();
	for (ib = 0; ib < nb; ib++) {
		const size_t off = (size_t)ib * sizeof(struct kern_block_q8_0);
		const __m256i w01l = kern_avx2_load2x128(x[0] + off + 2, x[1] + off + 2);
		const __m256i w01h = kern_avx2_load2x128(x[0] + off + 18, x[1] + off + 18);
		const __m256i w23l = kern_avx2_load2x128(x[2] + off + 2, x[3] + off + 2);
		const __m256i w23h = kern_avx2_load2x128(x[2] + off + 18, x[3] + off + 18);
		const __m256 wf = kern_avx2_f16x2x4_raw(x, off);
		for (k = 0; k < KT_TILE; k++) {
			const uint8_t *yb = (const uint8_t *)(y[k] + ib);
			const __m256i ylo = kern_avx2_bcast128(yb + 2), yhi = kern_avx2_bcast128(yb + 18);
			const __m256i bias = KT_S8BIAS(ylo, yhi);
			const __m256i p01 = KT_S8DOT(bias, w01l, ylo, w01h, yhi);
			const __m256i p23 = KT_S8DOT(bias, w23l, ylo, w23h, yhi);
			const __m256 f = _mm256_mul_ps(wf,
			    kern_avx2_bcast_pair(_mm_and_ps(kern_avx2_f16x2(yb), dmask)));
			acc[k] = _mm256_fmadd_ps(kern_avx2_scale4(f), kern_avx2_fold2(p01, p23), acc[k]);
		}
	}
	for (k = 0; k < KT_TILE; k++)
		kern_avx2_unfold(acc[k], out + 4 * k);
}

/* Four Q4_0 (five 0) or Q5_0 (five 1) rows · KT_TILE tokens' Q8_0:
 * out[4k + r]; the quants are dotted as u = q + 8 (Q5_0: q + 16). */
static KT_ATTR void
KT_FN(q45_0)(const uint8_t *const x[4], const struct kern_block_q8_0 *const y[KT_TILE],
    int64_t nb, int five, float out[4 * KT_TILE])
{
	const size_t bb = five ? sizeof(struct kern_block_q5_0) : sizeof(struct kern_block_q4_0);
	const size_t qo = five ? 6 : 2; /* the quant bytes (Q5_0: after qh) */
	const __m256i c = _mm256_set1_epi8(five ? 16 : 8);
	const __m128 dmask = _mm_castsi128_ps(_mm_setr_epi32(-1, 0, 0, 0));
	__m256 acc[KT_TILE];
	int64_t ib;
	int k;

	for (k = 0; k < KT_TILE; k++)
		acc[k] = _mm256_setzero_ps();
	for (ib = 0; ib < nb; ib++) {
		const size_t off = (size_t)ib * bb;
		const __m256 wf = kern_avx2_f16x2x4_raw(x, off);
		__m256i lo01, hi01, lo23, hi23;

		kern_avx2_q45_pair(x[0] + off, x[1] + off, qo, five, &lo01, &hi01);
		kern_avx2_q45_pair(x[2] + off, x[3] + off, qo, five, &lo23, &hi23);
		for (k = 0; k < KT_TILE; k++) {
			const uint8_t *yb = (const uint8_t *)(y[k] + ib);
			const __m256i ylo = kern_avx2_bcast128(yb + 2), yhi = kern_avx2_bcast128(yb + 18);
			const __m256i bias = KT_OBIAS(c, ylo, yhi);
			const __m256i p01 = KT_ODOT(bias, lo01, ylo, hi01, yhi);
			const __m256i p23 = KT_ODOT(bias, lo23, ylo, hi23, yhi);
			const __m256 f = _mm256_mul_ps(wf,
			    kern_avx2_bcast_pair(_mm_and_ps(kern_avx2_f16x2(yb), dmask)));
			acc[k] = _mm256_fmadd_ps(kern_avx2_scale4(f), kern_avx2_fold2(p01, p23), acc[k]);
		}
	}
	for (k = 0; k < KT_TILE; k++)
		kern_avx2_unfold(acc[k], out + 4 * k);
}
