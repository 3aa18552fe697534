/*
 * vec_tile_dealt.h: the AVX2 Q4_K and Q6_K tiles on dealt quants (one
 * weight row · 8 tokens), included once by vec_tile.c.  Not a normal
 * header: it uses vec_tile.c's helpers and has no include guard, on
 * purpose.
 *
 * Why: vec_tile_kq.h spends a vpmaddubsw, a vpmaddwd (the sub-block's
 * scale) and a vpaddd per 32 products and token, and on Zen 3 the two
 * multiplies share two pipes: ~21 products a cycle at best.  Here the
 * int16 sums of four vpmaddubsw are added before one vpmaddwd, so a
 * super-block costs a token 8 vpmaddubsw, 6 vpaddw, 2 vpmaddwd and a vpaddd
 * (10 multiplies, not 16).  That needs every int16 lane of the four to
 * belong to one sub-block (one scale), so the quants are dealt out by
 * dwords (4 quants) instead of by runs of 32:
 *
 *   the weights: B_g = the 32 bytes of sub-block pair g (low nibbles:
 *   sub-block 2g, high: 2g + 1); per 128-bit half a 4 × 4 dword transpose
 *   of B_0..B_3 gives X_j whose dword p is B_p's dword j (low half) and
 *   j + 4 (high half); X_j & 15 holds sub-block 2·(p mod 4) in dword p, for
 *   every j, and (X_j >> 4) & 15 sub-block 2·(p mod 4) + 1.
 *   the activations: the same transpose of a Q8_K block's runs (run 2g + h
 *   of 32 quants for sub-block 2g + h), done once per matmul when ops.c
 *   quantizes them (kern_cpu_q8k_deal_rows) and read by every row.  The
 *   dealt form keeps the quants apart from the scales, 64-byte aligned: a
 *   token's row is nb × 256 dealt quants, then per block its 16 bsums and
 *   d in 64 bytes (vmovdqu of a Q8_K block's quants, 4 bytes into a 292-byte
 *   block, splits a cache line every other load: 6 % of this tile's time).
 *
 * |int16 lane| ≤ 4 · 2 · 15 · 127 < 2^15, and the products are the same
 * integers in another order, so each super-block's exact int32 totals, and
 * with simd_x86.h's f32 tail each (row, token) result, are kern_vec_dot's
 * bit for bit.
 */

/* The per-128-bit-half 4 × 4 dword transpose of v[0..3], in place. */
static inline KERN_AVX2_INLINE void
kern_avx2_tr4x4(__m256i v[4])
{
	const __m256i t0 = _mm256_unpacklo_epi32(v[0], v[1]), t1 = _mm256_unpackhi_epi32(v[0], v[1]);
	const __m256i t2 = _mm256_unpacklo_epi32(v[2], v[3]), t3 = _mm256_unpackhi_epi32(v[2], v[3]);

	v[0] = _mm256_unpacklo_epi64(t0, t2);
	v[1] = _mm256_unpackhi_epi64(t0, t2);
	v[2] = _mm256_unpacklo_epi64(t1, t3);
	v[3] = _mm256_unpackhi_epi64(t1, t3);
}

/* A Q8_K block's 256 quants qs dealt out to out (32-byte aligned) for the
 * transposed tile: out[32·(4h + j) ..] = the transpose's j-th vector of
 * runs h, 2 + h, 4 + h, 6 + h (sub-blocks 2g + h, g = 0..3). */
static KERN_AVX2 void
kern_avx2_q8k_deal(const int8_t *qs, int8_t *out)
{
	int h, g;

	for (h = 0; h < 2; h++) {
		__m256i v[4];
		for (g = 0; g < 4; g++)
			v[g] = _mm256_loadu_si256((const __m256i *)(const void *)(qs + 64 * g + 32 * h));
		kern_avx2_tr4x4(v);
		for (g = 0; g < 4; g++)
			_mm256_store_si256((__m256i *)(void *)(out + 32 * (4 * h + g)), v[g]);
	}
}

/* The dealt form's parts of block ib of a row of nb blocks (vec_tile.c's
 * KERN_DEALT_BLOCK_BYTES each): the quants, the bsums (and d 32 bytes
 * after them). */
#define KERN_DEALT_QS(row, ib) ((row) + 256 * (size_t)(ib))
#define KERN_DEALT_META(row, nb, ib) ((row) + 256 * (size_t)(nb) + 64 * (size_t)(ib))

/* One Q4_K row · 8 tokens' rows a of nb blocks in the dealt form. */
static KERN_AVX2 void
kern_avx2_tile_q4k_t(const uint8_t *x, const uint8_t *const a[8], int64_t nb, float out[8])
{
	const __m256i m4 = _mm256_set1_epi8(0x0f);
	const __m128i even = _mm_setr_epi8(0, 0, 2, 2, 4, 4, 6, 6, 0, 0, 2, 2, 4, 4, 6, 6);
	const __m128i odd = _mm_setr_epi8(1, 1, 3, 3, 5, 5, 7, 7, 1, 1, 3, 3, 5, 5, 7, 7);
	__m256 acc = _mm256_setzero_ps(), accm = _mm256_setzero_ps(); /* lane k: token k */
	int64_t ib;
	int j, k;

	for (ib = 0; ib < nb; ib++) {
		const uint8_t *b = x + (size_t)ib * sizeof(struct kern_block_q4_k), *qs = b + 16;
		const float d = kern_avx2_h2f(b), dmin = kern_avx2_h2f(b + 2);
		__m256i w[4], lo[4], hi[4], sumi[8], mn[8], slo, shi, mdup;
		__m128i scv;
		float yd[8];
		uint8_t sc[16]; /* scales, then mins */

		kern_avx2_scales_k4(b + 4, sc);
		scv = _mm_loadu_si128((const __m128i *)(const void *)sc);
		slo = _mm256_cvtepu8_epi16(_mm_shuffle_epi8(scv, even));
		shi = _mm256_cvtepu8_epi16(_mm_shuffle_epi8(scv, odd));
		mdup = kern_avx2_mins_dup(sc);
		for (j = 0; j < 4; j++)
			w[j] = _mm256_loadu_si256((const __m256i *)(const void *)(qs + 32 * j));
		kern_avx2_tr4x4(w);
		for (j = 0; j < 4; j++) {
			lo[j] = _mm256_and_si256(w[j], m4);
			hi[j] = _mm256_and_si256(_mm256_srli_epi16(w[j], 4), m4);
		}
		for (k = 0; k < 8; k++) {
			const __m256i *q = (const __m256i *)(const void *)KERN_DEALT_QS(a[k], ib);
			const uint8_t *meta = KERN_DEALT_META(a[k], nb, ib);
			const __m256i l = _mm256_add_epi16(
			    _mm256_add_epi16(_mm256_maddubs_epi16(lo[0], _mm256_load_si256(q)),
			    _mm256_maddubs_epi16(lo[1], _mm256_load_si256(q + 1))),
			    _mm256_add_epi16(_mm256_maddubs_epi16(lo[2], _mm256_load_si256(q + 2)),
			    _mm256_maddubs_epi16(lo[3], _mm256_load_si256(q + 3))));
			const __m256i h = _mm256_add_epi16(
			    _mm256_add_epi16(_mm256_maddubs_epi16(hi[0], _mm256_load_si256(q + 4)),
			    _mm256_maddubs_epi16(hi[1], _mm256_load_si256(q + 5))),
			    _mm256_add_epi16(_mm256_maddubs_epi16(hi[2], _mm256_load_si256(q + 6)),
			    _mm256_maddubs_epi16(hi[3], _mm256_load_si256(q + 7))));
			sumi[k] = _mm256_add_epi32(_mm256_madd_epi16(l, slo), _mm256_madd_epi16(h, shi));
			mn[k] = _mm256_madd_epi16(_mm256_load_si256((const __m256i *)(const void *)meta),
			    mdup);
			memcpy(&yd[k], meta + 32, sizeof(float));
		}
		kern_avx2_kq45_tail8(&acc, &accm, d, dmin, _mm256_loadu_ps(yd), sumi, mn);
	}
	_mm256_storeu_ps(out, _mm256_sub_ps(acc, accm));
}

/* One Q6_K row · 8 tokens' rows a of nb blocks in the dealt form: the same
 * dealing of the weights' runs (32 six-bit quants, kern_avx2_q6k_half;
 * run r = sub-blocks 2r, 2r + 1 of 16, in the vector's two halves), so
 * dword p of group h holds sub-block 4p + 2h (low half) or 4p + 2h + 1
 * (high half).  Six-bit quants let only two vpmaddubsw add in int16
 * (|lane| ≤ 2 · 2 · 63 · 127 < 2^15): 8 vpmaddubsw, 4 vpaddw, 4 vpmaddwd a
 * super-block and token, against 8 vpmaddwd in vec_tile_kq.h. */
static KERN_AVX2 void
kern_avx2_tile_q6k_t(const uint8_t *x, const uint8_t *const a[8], int64_t nb, float out[8])
{
	const __m128i pick0 = _mm_setr_epi8(0, 0, 4, 4, 8, 8, 12, 12, 1, 1, 5, 5, 9, 9, 13, 13);
	const __m128i pick1 = _mm_setr_epi8(2, 2, 6, 6, 10, 10, 14, 14, 3, 3, 7, 7, 11, 11, 15, 15);
	__m256 acc = _mm256_setzero_ps(); /* lane k: token k */
	int64_t ib;
	int k;

	for (ib = 0; ib < nb; ib++) {
		const uint8_t *b = x + (size_t)ib * sizeof(struct kern_block_q6_k);
		const __m128i raw = _mm_loadu_si128((const __m128i *)(const void *)(b + 192));
		const __m256i sc16 = _mm256_cvtepi8_epi16(raw);
		const __m256i s0 = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(raw, pick0));
		const __m256i s1 = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(raw, pick1));
		const float dw = kern_avx2_h2f(b + 208);
		__m256i u0[4], u1[4], w0[4], w1[4], sumi[8];
		float yd[8];

		kern_avx2_q6k_half(b, 0, u0);
		kern_avx2_q6k_half(b, 1, u1);
		w0[0] = u0[0], w0[1] = u0[2], w0[2] = u1[0], w0[3] = u1[2]; /* runs 0, 2, 4, 6 */
		w1[0] = u0[1], w1[1] = u0[3], w1[2] = u1[1], w1[3] = u1[3]; /* runs 1, 3, 5, 7 */
		kern_avx2_tr4x4(w0);
		kern_avx2_tr4x4(w1);
		for (k = 0; k < 8; k++) {
			const __m256i *q = (const __m256i *)(const void *)KERN_DEALT_QS(a[k], ib);
			const uint8_t *meta = KERN_DEALT_META(a[k], nb, ib);
			const __m256i p0 = _mm256_add_epi16(_mm256_maddubs_epi16(w0[0], _mm256_load_si256(q)),
			    _mm256_maddubs_epi16(w0[1], _mm256_load_si256(q + 1)));
			const __m256i p1 = _mm256_add_epi16(_mm256_maddubs_epi16(w0[2], _mm256_load_si256(q + 2)),
			    _mm256_maddubs_epi16(w0[3], _mm256_load_si256(q + 3)));
			const __m256i p2 = _mm256_add_epi16(_mm256_maddubs_epi16(w1[0], _mm256_load_si256(q + 4)),
			    _mm256_maddubs_epi16(w1[1], _mm256_load_si256(q + 5)));
			const __m256i p3 = _mm256_add_epi16(_mm256_maddubs_epi16(w1[2], _mm256_load_si256(q + 6)),
			    _mm256_maddubs_epi16(w1[3], _mm256_load_si256(q + 7)));
			const __m256i s = _mm256_add_epi32(
			    _mm256_add_epi32(_mm256_madd_epi16(p0, s0), _mm256_madd_epi16(p1, s0)),
			    _mm256_add_epi32(_mm256_madd_epi16(p2, s1), _mm256_madd_epi16(p3, s1)));
			/* the offset: − 32·Σ sc·bsums */
			sumi[k] = _mm256_sub_epi32(s, _mm256_slli_epi32(_mm256_madd_epi16(sc16,
			    _mm256_load_si256((const __m256i *)(const void *)meta)), 5));
			memcpy(&yd[k], meta + 32, sizeof(float));
		}
		acc = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(dw), _mm256_loadu_ps(yd)),
		    _mm256_cvtepi32_ps(kern_avx2_totals8(sumi)), acc);
	}
	_mm256_storeu_ps(out, acc);
}
