/*
 * simd_x86.h: the x86 helpers the SIMD dot kernels of kernels/cpu/ share
 * (vec_dot.c, vec_dot_k.c, vec_tile.c): target attributes, the four-row
 * layout of the 32-element quants, horizontal sums, the K-quants' scales
 * and the Q4_K/Q5_K/Q6_K quants unpacked.
 * Static inline only; include on x86 alone.
 */
#ifndef KERNELS_CPU_SIMD_X86_H
#define KERNELS_CPU_SIMD_X86_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#define KERN_AVX2 __attribute__((target("avx2,fma,f16c")))
#define KERN_AVX2_INLINE __attribute__((target("avx2,fma,f16c"), always_inline))
#define KERN_AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
#define KERN_AVX512_INLINE                                                       \
	__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni"), \
	    always_inline))

/* Unaligned little-endian u32. */
static inline uint32_t
kern_x86_ld32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

/* How far ahead of the rows being dotted the decode kernels prefetch
 * weights.  The hardware prefetcher alone leaves one core streaming a model
 * at ~5 GB/s here; asking for the lines 2 KB ahead brought a one-thread
 * decode step of SmolLM2 from 16.2 to 10.5 ms and of Qwen2.5-1.5B Q4_K_M
 * from 157 to 113 ms (thread CPU time, busy VM; 1, 2 and 4 KB measured
 * alike, bench/RESULTS.md "Decode"). */
#define KERN_PREFETCH_BYTES 2048

/* Prefetch the cache lines of [p + ahead, p + ahead + n), cut at end (the
 * end of the matrix: nothing past it is touched). */
static inline void
kern_x86_prefetch(const uint8_t *p, size_t ahead, size_t n, const uint8_t *end)
{
	size_t left = (size_t)(end - p), i;
	if (ahead >= left)
		return;
	p += ahead;
	left -= ahead;
	n = n < left ? n : left;
	if (n == 0)
		return;
	for (i = 0; i < n; i += 64)
		_mm_prefetch((const char *)(p + i), _MM_HINT_T0);
	_mm_prefetch((const char *)(p + n - 1), _MM_HINT_T0);
}

/* The AVX2 four-row decode kernels' prefetch (vec_dot_k.c's K-quants,
 * vec_dot.c's 32-element quants): the next n_pf rows (<= 4, rb bytes
 * apart, so one contiguous region of n_pf·rb bytes at pf), spread evenly
 * over the nb blocks (bb bytes each) of the current rows: block ib
 * prefetches the ib-th nb-th of the region, line by line, a few lines
 * beside each block's compute.  One sequential stream ahead of the four
 * rows' loads: on the 2-core AMD EPYC VM (Zen 3) the 1.5B decoded at 15
 * tok/s this way and at 11 when the same lines were fetched as four per-row
 * runs (16 prefetches a block where 9 lines suffice, four DRAM streams), and
 * SmolLM2's Q8_0 output matrix streamed at ~9 GB/s on one thread, ~5 with
 * kern_x86_prefetch's burst 2 KiB ahead of each group (less than a group);
 * a burst of four whole rows ahead (~50-80 lines) filled the line-fill
 * buffers and stalled decode by ~15 % on two threads (the Intel VM).  Its
 * own loop, not a call of kern_x86_prefetch: written over that, GCC 12 kept
 * no prefetch in the four-row kernels (objdump) and decode fell from ~19 to
 * ~11 tok/s; with no software prefetch at all the AMD VM decodes at ~4-5
 * tok/s. */
struct kern_pf_walk {
	const uint8_t *pf;
	size_t len, nb;
	size_t q, r;     /* len / nb, len % nb */
	size_t end, rem; /* ⌊ib·len/nb⌋ and ib·len mod nb for the next block ib */
};

/* The walk's start: the region of n_pf rows at pf, over the rb / bb blocks
 * of a row.  The block boundaries ⌊ib·len/nb⌋ are then kept by adding len's
 * quotient and remainder: two 64-bit divisions a block (the old form) are
 * off the data's path but not free. */
static inline KERN_AVX2_INLINE void
kern_avx2_pf_start(struct kern_pf_walk *w, const uint8_t *pf, int n_pf, size_t rb, size_t bb)
{
	w->pf = pf;
	w->len = (size_t)n_pf * rb;
	w->nb = rb / bb;
	if (w->nb == 0) { /* one row and no stride (kern_vec_dot): nothing ahead */
		w->nb = 1;
		w->len = 0;
	}
	w->q = w->len / w->nb;
	w->r = w->len % w->nb;
	w->end = w->rem = 0;
}

/* Block ib's share, [⌊ib·len/nb⌋, ⌊(ib + 1)·len/nb⌋) from its line on;
 * called once per block, in order. */
static inline KERN_AVX2_INLINE void
kern_avx2_pf_block(struct kern_pf_walk *w)
{
	size_t o = w->end & ~(size_t)63, end = w->end + w->q;

	w->rem += w->r;
	if (w->rem >= w->nb) {
		w->rem -= w->nb;
		end++;
	}
	for (; o < end; o += 64)
		_mm_prefetch((const char *)(w->pf + o), _MM_HINT_T0);
	if (end == w->len && w->len) /* the last block: its last line, pf not line-aligned */
		_mm_prefetch((const char *)(w->pf + w->len - 1), _MM_HINT_T0);
	w->end = end;
}

/* ------------------------------------------------------------------------ */
/* x86 layout shared by both SIMD levels                                     */
/*
 * A pass covers four weight rows.  Each 256-bit vector holds 16 bytes of two
 * rows (rows 0 and 1 in one, 2 and 3 in the other, the first row in the low
 * 128 bits), and the activations are broadcast to both halves, so one
 * integer dot serves two rows and leaves row 0's partial sums in lanes 0..3,
 * row 1's in lanes 4..7.  Folding the two vectors gives lanes
 * [r0 r2 r0 r2 | r1 r3 r1 r3], converted to f32 once and scaled by one FMA
 * for all four rows.  The four weight scales are gathered into one vector
 * and converted by one vcvtph2ps.  Per block and row that is about 6 vector
 * uops instead of the 12 of the one-row-per-vector scheme.
 */


/* f16 pair at p (d and m, or d and s) to [f32, f32, 0, 0]. */
static inline KERN_AVX2_INLINE __m128
kern_avx2_f16x2(const uint8_t *p)
{
	return _mm_cvtph_ps(_mm_cvtsi32_si128((int)kern_x86_ld32(p)));
}

/* Lanes 0 and 1 of pair repeated: [p0, p1, p0, p1, p0, p1, p0, p1]. */
static inline KERN_AVX2_INLINE __m256
kern_avx2_bcast_pair(__m128 pair)
{
	return _mm256_castpd_ps(_mm256_broadcastsd_pd(_mm_castps_pd(pair)));
}

/* 16 bytes at p in both halves. */
static inline KERN_AVX2_INLINE __m256i
kern_avx2_bcast128(const uint8_t *p)
{
	return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)p));
}

/* 16 bytes of one row at pa and of another at pb, as [a | b]. */
static inline KERN_AVX2_INLINE __m256i
kern_avx2_load2x128(const uint8_t *pa, const uint8_t *pb)
{
	return _mm256_inserti128_si256(_mm256_castsi128_si256(
	    _mm_loadu_si128((const __m128i *)(const void *)pa)),
	    _mm_loadu_si128((const __m128i *)(const void *)pb), 1);
}

/* The f16 pairs at offset off of the four rows, to f32: [h0, h1] of row 0,
 * then of rows 1..3.  For Q4_0/Q8_0 the second half of each pair is the
 * first quant byte pair: garbage in lanes never used. */
static inline KERN_AVX2_INLINE __m256
kern_avx2_f16x2x4_raw(const uint8_t *const x[4], size_t off)
{
	__m128i h = _mm_cvtsi32_si128((int)kern_x86_ld32(x[0] + off));
	h = _mm_insert_epi32(h, (int)kern_x86_ld32(x[1] + off), 1);
	h = _mm_insert_epi32(h, (int)kern_x86_ld32(x[2] + off), 2);
	h = _mm_insert_epi32(h, (int)kern_x86_ld32(x[3] + off), 3);
	return _mm256_cvtph_ps(h);
}

/* The same times ab: [a·h0, b·h1] of row 0, then of rows 1..3. */
static inline KERN_AVX2_INLINE __m256
kern_avx2_f16x2x4(const uint8_t *const x[4], size_t off, __m256 ab)
{
	return _mm256_mul_ps(kern_avx2_f16x2x4_raw(x, off), ab);
}

/* Lanes [r0 r2 r0 r2 | r1 r3 r1 r3] of the per-row scales held in the even
 * lanes of f (as kern_avx2_f16x2x4 returns them). */
static inline KERN_AVX2_INLINE __m256
kern_avx2_scale4(__m256 f)
{
	return _mm256_permutevar8x32_ps(f, _mm256_setr_epi32(0, 4, 0, 4, 2, 6, 2, 6));
}

/* [r0 ×4 | r1 ×4] and [r2 ×4 | r3 ×4] int32 partial sums to f32 lanes
 * [r0 r2 r0 r2 | r1 r3 r1 r3] (the integer adds are exact). */
static inline KERN_AVX2_INLINE __m256
kern_avx2_fold2(__m256i p01, __m256i p23)
{
	return _mm256_cvtepi32_ps(_mm256_add_epi32(_mm256_unpacklo_epi32(p01, p23),
	    _mm256_unpackhi_epi32(p01, p23)));
}

/* acc lanes [r0 r2 r0 r2 | r1 r3 r1 r3] to out[0..3]. */
static inline KERN_AVX2_INLINE void
kern_avx2_unfold(__m256 acc, float out[4])
{
	float a[8];

	_mm256_storeu_ps(a, acc);
	out[0] = a[0] + a[2];
	out[1] = a[4] + a[6];
	out[2] = a[1] + a[3];
	out[3] = a[5] + a[7];
}

/* Q5 blocks, four rows at a time in the Q4 layout (vec_dot.c, vec_tile.c): byte j of each
 * 128-bit half gets 0x10 where the row's qh has bit j (part 0: the low
 * nibbles, elements 0..15) or bit 16 + j (part 1).  h holds the row pair's
 * qh words as [a a a a | b b b b]. */
static inline KERN_AVX2_INLINE __m256i
kern_avx2_q5_hi(__m256i h, int part)
{
	const __m256i sel = part ? _mm256_setr_epi64x(0x0202020202020202LL, 0x0303030303030303LL,
	    0x0202020202020202LL, 0x0303030303030303LL)
	    : _mm256_setr_epi64x(0, 0x0101010101010101LL, 0, 0x0101010101010101LL);
	const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
	const __m256i v = _mm256_and_si256(_mm256_shuffle_epi8(h, sel), bit);
	return _mm256_and_si256(_mm256_cmpeq_epi8(v, bit), _mm256_set1_epi8(0x10));
}

/* The qh words at offset off of rows a and b as [a a a a | b b b b]. */
static inline KERN_AVX2_INLINE __m256i
kern_avx2_q5_qh2(const uint8_t *a, const uint8_t *b, size_t off)
{
	return _mm256_inserti128_si256(_mm256_castsi128_si256(
	    _mm_set1_epi32((int)kern_x86_ld32(a + off))), _mm_set1_epi32((int)kern_x86_ld32(b + off)), 1);
}

/* The 5-bit quants u = nibble | 5th bit (≤ 31) of a row pair's block: the
 * 16 quant bytes at qa and qb, their qh words h (kern_avx2_q5_qh2); *lo
 * gets elements 0..15 of each row (the low nibbles), *hi elements 16..31. */
static inline KERN_AVX2_INLINE void
kern_avx2_q5_unpack(const uint8_t *qa, const uint8_t *qb, __m256i h, __m256i *lo, __m256i *hi)
{
	const __m256i m4 = _mm256_set1_epi8(0x0f);
	const __m256i v = kern_avx2_load2x128(qa, qb);

	*lo = _mm256_or_si256(_mm256_and_si256(v, m4), kern_avx2_q5_hi(h, 0));
	*hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4), kern_avx2_q5_hi(h, 1));
}

/* The quants of a 32-element block of a row pair a, b (the block's start),
 * the 16 quant bytes at offset q: Q4_* nibbles (five 0), or Q5_* 5-bit
 * quants (five 1, the qh word just before them); *lo gets elements 0..15
 * of each row, *hi elements 16..31. */
static inline KERN_AVX2_INLINE void
kern_avx2_q45_pair(const uint8_t *a, const uint8_t *b, size_t q, int five, __m256i *lo,
    __m256i *hi)
{
	const __m256i m4 = _mm256_set1_epi8(0x0f);
	__m256i v;

	if (five) {
		kern_avx2_q5_unpack(a + q, b + q, kern_avx2_q5_qh2(a, b, q - 4), lo, hi);
		return;
	}
	v = kern_avx2_load2x128(a + q, b + q);
	*lo = _mm256_and_si256(v, m4);
	*hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
}

/* Sum of 8 lanes. */
static inline KERN_AVX2_INLINE float
kern_avx2_hsum(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

/* The int32 totals of four vectors' lanes: lane k = Σ of v[k]'s 8 lanes
 * (exact: integer adds in any order give the same total). */
static inline KERN_AVX2_INLINE __m128i
kern_avx2_hsum4_i32(__m256i v0, __m256i v1, __m256i v2, __m256i v3)
{
	const __m256i c = _mm256_hadd_epi32(_mm256_hadd_epi32(v0, v1), _mm256_hadd_epi32(v2, v3));

	return _mm_add_epi32(_mm256_castsi256_si128(c), _mm256_extracti128_si256(c, 1));
}

/* The int32 total of one vector's 8 lanes. */
static inline KERN_AVX2_INLINE int32_t
kern_avx2_hsum_i32(__m256i v)
{
	__m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));

	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
	return _mm_cvtsi128_si32(s);
}

/*
 * The K-quants' f32 tail (Q4_K, Q5_K, Q6_K at AVX2 and AVX-512: the
 * one-token dots, the tiles and the AMX tiles alike).  Per super-block the
 * integer sums are exact int32 totals, sumi = Σ_s sc_s·Σ u·y (Q6_K:
 * Σ_s sc_s·Σ (u − 32)·y, its offset included; |sumi| ≤ 256·63·31·128 <
 * 2^26 for Q5_K, 256·128·32·128 = 2^28 for Q6_K) and summ = Σ_s mn_s·b_s
 * (Q4_K/Q5_K; ≤ 8·63·32·128 < 2^21), and per (row, token) two f32
 * chains run in block order:
 *     acc  = fma(d·d_y,    (float)sumi, acc)
 *     accm = fma(dmin·d_y, (float)summ, accm)     (Q6_K: none)
 * the result acc − accm (Q6_K: acc).  A kernel may run the chains for
 * several rows or tokens in vector lanes: each lane takes these steps, so
 * every kernel gives the same bits.  kern_kq_fma is one step of a chain.
 */
static inline KERN_AVX2_INLINE float
kern_kq_fma(float dd, int32_t sum, float acc)
{
	return _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(dd), _mm_set_ss((float)sum), _mm_set_ss(acc)));
}

/* f16 at p to f32 with F16C. */
static inline KERN_AVX2_INLINE float
kern_avx2_h2f(const uint8_t *p)
{
	return _cvtsh_ss((unsigned short)(p[0] | (p[1] << 8)));
}

/* Q4_K/Q5_K's 8 six-bit scales (sc[0..7]) and mins (sc[8..15]) from the
 * 12 packed bytes s, four at a time: j < 4 is the low 6 bits of byte j
 * (mins: j + 4); j >= 4 is the low (mins: high) nibble of byte j + 4 with
 * the top 2 bits of byte j - 4 (mins: j) above it. */
static inline KERN_AVX2_INLINE void
kern_avx2_scales_k4(const uint8_t *s, uint8_t sc[16])
{
	uint32_t a[3], o[4];

	memcpy(a, s, 12);
	o[0] = a[0] & 0x3f3f3f3fu;
	o[1] = (a[2] & 0x0f0f0f0fu) | ((a[0] >> 6) & 0x03030303u) << 4;
	o[2] = a[1] & 0x3f3f3f3fu;
	o[3] = ((a[2] >> 4) & 0x0f0f0f0fu) | ((a[1] >> 6) & 0x03030303u) << 4;
	memcpy(sc, o, 16);
}

/* Q3_K's 16 scales as bytes (before the -32), four at a time: the low
 * nibbles of bytes 0..7, then their high nibbles, each with 2 bits of bytes
 * 8..11 above (kern_cpu_q3k_scales one by one). */
static inline KERN_AVX2_INLINE __m128i
kern_avx2_scales_k3(const uint8_t *p)
{
	uint32_t a[3], o[4];

	memcpy(a, p, 12);
	o[0] = (a[0] & 0x0f0f0f0fu) | (a[2] & 0x03030303u) << 4;
	o[1] = (a[1] & 0x0f0f0f0fu) | ((a[2] >> 2) & 0x03030303u) << 4;
	o[2] = ((a[0] >> 4) & 0x0f0f0f0fu) | ((a[2] >> 4) & 0x03030303u) << 4;
	o[3] = ((a[1] >> 4) & 0x0f0f0f0fu) | ((a[2] >> 6) & 0x03030303u) << 4;
	return _mm_loadu_si128((const __m128i *)(const void *)o);
}

/* Q2_K's (three 0) or Q3_K's (three 1) 16 scales of block b as int16
 * lanes (*sc16: Q2_K's low nibbles, Q3_K's six bits minus 32), and what
 * meets the bsums (*off16: Q2_K's mins, the high nibbles; Q3_K's scales,
 * for its offset 4·Σ sc·bsums). */
static inline KERN_AVX2_INLINE void
kern_avx2_q23k_scales(const uint8_t *b, int three, __m256i *sc16, __m256i *off16)
{
	const __m128i m4 = _mm_set1_epi8(0x0f);
	__m128i raw;

	if (three) {
		*sc16 = _mm256_cvtepi8_epi16(_mm_sub_epi8(kern_avx2_scales_k3(b + 96), _mm_set1_epi8(32)));
		*off16 = *sc16;
		return;
	}
	raw = _mm_loadu_si128((const __m128i *)(const void *)b);
	*off16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(raw, 4), m4));
	*sc16 = _mm256_cvtepu8_epi16(_mm_and_si128(raw, m4));
}

/* Run q (of 4) of half h of the Q2_K/Q3_K block b: the 2-bit quants at
 * bits 2q of the half's 32 qs bytes, Q3_K (three 1) with bit 4h + q of
 * hmask (b's first 32 bytes) as the third (u ≤ 7). */
static inline KERN_AVX2_INLINE __m256i
kern_avx2_q23k_run(const uint8_t *b, int h, int q, int three)
{
	const __m256i qv = _mm256_loadu_si256((const __m256i *)(const void *)
	    (b + (three ? 32 : 16) + 32 * h));
	const __m256i u = _mm256_and_si256(_mm256_srli_epi16(qv, 2 * q), _mm256_set1_epi8(3));
	__m256i hm;

	if (!three)
		return u;
	hm = _mm256_loadu_si256((const __m256i *)(const void *)b);
	return _mm256_or_si256(u, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hm, 4 * h + q),
	    _mm256_set1_epi8(1)), 2));
}

/* The mins of kern_avx2_scales_k4's sc[8..15], each twice, as 16 int16
 * lanes: one vpmaddwd with a Q8_K block's 16 bsums gives mn_j · (Σ of the
 * 32 quants of sub-block j) in int32 lane j. */
static inline KERN_AVX2_INLINE __m256i
kern_avx2_mins_dup(const uint8_t sc[16])
{
	return _mm256_cvtepu8_epi16(_mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)sc),
	    _mm_setr_epi8(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15)));
}

/* Pair g (sub-blocks 2g, 2g + 1) of the Q4_K (five 0) or Q5_K (five 1)
 * quants qs: the low (*lo) and high (*hi) nibbles of its 32 bytes, with
 * Q5_K's 5th bits from bits 0 and 1 of *qh, which then moves on to the next
 * pair (u <= 31). */
static inline KERN_AVX2_INLINE void
kern_avx2_q45k_pair(const uint8_t *qs, int g, int five, __m256i *qh, __m256i *lo, __m256i *hi)
{
	const __m256i m4 = _mm256_set1_epi8(0x0f), one = _mm256_set1_epi8(1), two = _mm256_set1_epi8(2);
	const __m256i q = _mm256_loadu_si256((const __m256i *)(const void *)(qs + 32 * g));

	*lo = _mm256_and_si256(q, m4);
	*hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
	if (five) {
		*lo = _mm256_or_si256(*lo, _mm256_slli_epi16(_mm256_and_si256(*qh, one), 4));
		*hi = _mm256_or_si256(*hi, _mm256_slli_epi16(_mm256_and_si256(*qh, two), 3));
		*qh = _mm256_srli_epi16(*qh, 2);
	}
}

/* The 128 six-bit quants (u <= 63, before Q6_K's -32) of half h of the
 * Q6_K block b, four runs of 32: u[k] is the low (k < 2) or high (k >= 2)
 * nibbles of ql row k & 1 with the 2 bits of qh at bit 2k above them. */
static inline KERN_AVX2_INLINE void
kern_avx2_q6k_half(const uint8_t *b, int h, __m256i u[4])
{
	const __m256i m4 = _mm256_set1_epi8(0x0f), m3 = _mm256_set1_epi8(3);
	const __m256i l0 = _mm256_loadu_si256((const __m256i *)(const void *)(b + 64 * h));
	const __m256i l1 = _mm256_loadu_si256((const __m256i *)(const void *)(b + 64 * h + 32));
	const __m256i qh = _mm256_loadu_si256((const __m256i *)(const void *)(b + 128 + 32 * h));

	u[0] = _mm256_or_si256(_mm256_and_si256(l0, m4),
	    _mm256_slli_epi16(_mm256_and_si256(qh, m3), 4));
	u[1] = _mm256_or_si256(_mm256_and_si256(l1, m4),
	    _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m3), 4));
	u[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
	    _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m3), 4));
	u[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
	    _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m3), 4));
}

/* The byte shuffles that put [sc(2k) ×8 | sc(2k+1) ×8] in int16 lanes from
 * a vector holding 8 int16 scales in each 128-bit half. */
static inline KERN_AVX2_INLINE void
kern_avx2_picks(__m256i pick[4])
{
	int k;

	for (k = 0; k < 4; k++)
		pick[k] = _mm256_set_m128i(_mm_set1_epi16((short)((4 * k + 2) | (4 * k + 3) << 8)),
		    _mm_set1_epi16((short)(4 * k | (4 * k + 1) << 8)));
}

/* exp of 8 floats <= 0: the Cephes single-precision polynomial (range
 * reduction by ln 2 in two parts, degree-6 polynomial, exponent by bit
 * shift), within 2 ulp of the correctly rounded expf; inputs below −87.3
 * give 0 where libm gives a subnormal (< 1.2e−38).  The softmax's and the
 * SiLU's exp (softmax.c, silu.c). */
static inline KERN_AVX2_INLINE __m256
kern_avx2_exp_neg(__m256 x)
{
	const __m256 lo = _mm256_set1_ps(-87.33654f);
	__m256 under = _mm256_cmp_ps(x, lo, _CMP_LT_OQ), fx, y, z;
	__m256i e;

	x = _mm256_max_ps(x, lo);
	fx = _mm256_floor_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f),
	    _mm256_set1_ps(0.5f)));
	x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
	x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
	z = _mm256_mul_ps(x, x);
	y = _mm256_set1_ps(1.9875691500e-4f);
	y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507e-3f));
	y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073e-3f));
	y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894e-2f));
	y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459e-1f));
	y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201e-1f));
	y = _mm256_fmadd_ps(y, z, _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
	e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(fx), _mm256_set1_epi32(127)),
	    23);
	y = _mm256_mul_ps(y, _mm256_castsi256_ps(e));
	return _mm256_andnot_ps(under, y);
}

#endif /* KERNELS_CPU_SIMD_X86_H */
