/*
 * vec_tile_amx.c: the prefill's Q4_K/Q5_K/Q6_K matmul on AMX-INT8 tiles
 * (Intel Sapphire Rapids and later): 16 weight rows × 16 tokens per tile.
 *
 * TDPBSUD multiplies a tile of int8 A (16 tokens × 64 quants of their Q8_K
 * blocks, read in place) by a tile of uint8 B (64 quants × 16 rows in the
 * VNNI layout: 4 consecutive quants of a row per dword) into 16 × 16 int32.
 * The sub-block scales (6 bits) are folded into B so that a whole
 * super-block sums inside the tile unit: with sc = 8·sh + sl (sl, sh ≤ 7)
 * and u ≤ 31, u·sl and u·sh fit a byte, so two tiles of sums C1 = Σ u·sl·y
 * and C2 = Σ u·sh·y give each (token, row) the exact super-block total
 * sumi = C1 + 8·C2 = Σ_s sc_s·Σ u·y.  The mins' total Σ_s mn_s·b_s is four
 * vpdpwssd over the token's bsums, and from there the f32 tail is
 * simd_x86.h's (kern_kq_fma) with the 16 rows in the lanes of one vector:
 * every (row, token) result equals kern_vec_dot's at AVX-512 bit for bit.
 * Q6_K's signed 8-bit scales become three base-8 digits in −3..4, and
 * TDPBSSD sums (u − 32)·digit (an int8) into three tiles, C0 + 8·C1 +
 * 64·C2 the super-block's total with its offset; no mins.
 *
 * A group of 16 rows is unpacked once (quants × scale parts, transposed to
 * the VNNI layout; d, dmin and mins per row) into a per-thread buffer of
 * KERN_AMX_BLK bytes per super-block, and every 16-token tile of the call
 * runs over it.  Tile configuration is per-thread state: each call loads
 * it (pool threads and callers alike) and releases the tiles at its end.
 *
 * AMX is used when the CPU has AMX-TILE and AMX-INT8 (CPUID.(7,0):EDX bits
 * 24, 25), Linux grants this process the tile data state
 * (arch_prctl(ARCH_REQ_XCOMP_PERM), asked once; refused: no AMX) and the
 * SIMD level is AVX-512; kern_cpu_force_amx switches it off for the tests.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/simd.h"

#if KERN_X86 && defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kernels/cpu/simd_x86.h"

#define KERN_AMX_ATTR \
	__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni,amx-tile,amx-int8")))

#define KERN_ARCH_REQ_XCOMP_PERM 0x1023 /* <asm/prctl.h> */
#define KERN_XFEATURE_XTILEDATA 18

/* One super-block of 16 rows unpacked: B tiles [sl, sh][64-quant step g]
 * (16 dword rows of 4 quants × 16 weight rows), d, dmin and the mins in
 * int16 pairs (mp[j][n]: mn_2j | mn_2j+1 << 16 of row n). */
struct kern_amx_blk {
	uint8_t b[2][4][1024];
	float d[16], dmin[16];
	int32_t mp[4][16];
};
/* One super-block of 16 Q6_K rows unpacked: B tiles [digit i][step g] of
 * (u − 32)·d_i (int8), and d. */
struct kern_amx_blk6 {
	int8_t b[3][4][1024];
	float d[16];
};
/* 8576 and 12352 bytes, multiples of 64 */
#define KERN_AMX_BLK(t) ((t) == KERN_TYPE_Q6_K ? sizeof(struct kern_amx_blk6) \
	: sizeof(struct kern_amx_blk))

/* -1 not yet known, 0 no AMX, 1 AMX usable */
static atomic_int kern_amx_avail = -1;
/* kern_cpu_force_amx's choice: -1 auto, 0 off, 1 on */
static atomic_int kern_amx_forced = -1;

static pthread_once_t kern_amx_once = PTHREAD_ONCE_INIT;
static pthread_key_t kern_amx_key;
static __thread uint8_t *kern_amx_buf; /* the unpacked rows, 64-byte aligned */
static __thread size_t kern_amx_cap;

static void
kern_amx_init(void)
{
	unsigned a, b, c, d;
	int ok = 0;

	pthread_key_create(&kern_amx_key, free);
	if (__get_cpuid_count(7, 0, &a, &b, &c, &d) && (d >> 24 & 1) && (d >> 25 & 1))
		ok = syscall(SYS_arch_prctl, KERN_ARCH_REQ_XCOMP_PERM, KERN_XFEATURE_XTILEDATA) == 0;
	atomic_store(&kern_amx_avail, ok);
}

static int
kern_amx_detect(void)
{
	pthread_once(&kern_amx_once, kern_amx_init);
	return atomic_load(&kern_amx_avail);
}

/* This thread's tile configuration: palette 1, the 8 tiles 16 rows × 64
 * bytes; loaded at the start of each call (the call ends with
 * TILERELEASE). */
static KERN_AMX_ATTR void
kern_amx_config(void)
{
	struct {
		uint8_t palette, start_row, reserved[14];
		uint16_t colsb[16];
		uint8_t rows[16];
	} __attribute__((aligned(64))) cfg;
	int i;

	memset(&cfg, 0, sizeof(cfg));
	cfg.palette = 1;
	for (i = 0; i < 8; i++) {
		cfg.colsb[i] = 64;
		cfg.rows[i] = 16;
	}
	/* gcc's ldtilecfg names 8 bytes of cfg as its operand: the rest must
	 * not look dead to the compiler */
	__asm__ __volatile__("" : : "r"(&cfg) : "memory");
	_tile_loadconfig(&cfg);
}

/* This thread's tiles back to their initial state (TILERELEASE). */
static KERN_AMX_ATTR void
kern_amx_release(void)
{
	_tile_release();
}

/* This thread's buffer of at least `bytes`, 64-byte aligned; NULL when out
 * of memory.  Freed when the thread ends (the key's destructor). */
static uint8_t *
kern_amx_scratch(size_t bytes)
{
	void *p;

	if (bytes <= kern_amx_cap)
		return kern_amx_buf;
	if (posix_memalign(&p, 64, bytes))
		return NULL;
	free(kern_amx_buf);
	kern_amx_buf = p;
	kern_amx_cap = bytes;
	pthread_setspecific(kern_amx_key, p);
	return p;
}

/* The 16 × 16 dwords of r transposed in place (r[j] dword i ← r[i] dword j). */
static inline KERN_AVX512_INLINE void
kern_amx_transpose(__m512i r[16])
{
	__m512i t[16], u[16];
	int k, q, e;

	for (k = 0; k < 8; k++) {
		t[2 * k] = _mm512_unpacklo_epi32(r[2 * k], r[2 * k + 1]);
		t[2 * k + 1] = _mm512_unpackhi_epi32(r[2 * k], r[2 * k + 1]);
	}
	/* u[4q + e], 128-bit lane L: dword 4L + e of rows 4q .. 4q + 3 */
	for (q = 0; q < 4; q++) {
		u[4 * q] = _mm512_unpacklo_epi64(t[4 * q], t[4 * q + 2]);
		u[4 * q + 1] = _mm512_unpackhi_epi64(t[4 * q], t[4 * q + 2]);
		u[4 * q + 2] = _mm512_unpacklo_epi64(t[4 * q + 1], t[4 * q + 3]);
		u[4 * q + 3] = _mm512_unpackhi_epi64(t[4 * q + 1], t[4 * q + 3]);
	}
	/* column 4L + e: lane q from u[4q + e]'s lane L */
	for (e = 0; e < 4; e++) {
		const __m512i x0 = _mm512_shuffle_i32x4(u[e], u[4 + e], 0x44);
		const __m512i x1 = _mm512_shuffle_i32x4(u[e], u[4 + e], 0xee);
		const __m512i x2 = _mm512_shuffle_i32x4(u[8 + e], u[12 + e], 0x44);
		const __m512i x3 = _mm512_shuffle_i32x4(u[8 + e], u[12 + e], 0xee);
		r[e] = _mm512_shuffle_i32x4(x0, x2, 0x88);
		r[4 + e] = _mm512_shuffle_i32x4(x0, x2, 0xdd);
		r[8 + e] = _mm512_shuffle_i32x4(x1, x3, 0x88);
		r[12 + e] = _mm512_shuffle_i32x4(x1, x3, 0xdd);
	}
}

/* Super-block ib of the 16 Q4_K/Q5_K rows x (rb bytes apart) into o. */
static KERN_AVX512 void
kern_amx_unpack(const uint8_t *x, size_t rb, int64_t ib, int five, struct kern_amx_blk *o)
{
	const size_t bb = five ? sizeof(struct kern_block_q5_k) : sizeof(struct kern_block_q4_k);
	__m512i w[2][4][16]; /* [sl, sh][g][row]: the row's 64 quants × the scale part */
	int n, g, p;

	for (n = 0; n < 16; n++) {
		const uint8_t *b = x + (size_t)n * rb + (size_t)ib * bb, *qs = b + (five ? 48 : 16);
		__m256i qh = five ? _mm256_loadu_si256((const __m256i *)(const void *)(b + 16))
		    : _mm256_setzero_si256();
		uint8_t sc[16]; /* scales, then mins */

		kern_avx2_scales_k4(b + 4, sc);
		o->d[n] = kern_avx2_h2f(b);
		o->dmin[n] = kern_avx2_h2f(b + 2);
		for (g = 0; g < 4; g++) {
			__m256i lo, hi;

			o->mp[g][n] = sc[8 + 2 * g] | sc[9 + 2 * g] << 16;
			kern_avx2_q45k_pair(qs, g, five, &qh, &lo, &hi);
			/* u·s ≤ 31·7 < 256 in each byte: an int16 product has no carry
			 * out of its low byte, so its two bytes are the two products */
			w[0][g][n] = _mm512_inserti64x4(_mm512_castsi256_si512(
			    _mm256_mullo_epi16(lo, _mm256_set1_epi16((short)(sc[2 * g] & 7)))),
			    _mm256_mullo_epi16(hi, _mm256_set1_epi16((short)(sc[2 * g + 1] & 7))), 1);
			w[1][g][n] = _mm512_inserti64x4(_mm512_castsi256_si512(
			    _mm256_mullo_epi16(lo, _mm256_set1_epi16((short)(sc[2 * g] >> 3)))),
			    _mm256_mullo_epi16(hi, _mm256_set1_epi16((short)(sc[2 * g + 1] >> 3))), 1);
		}
	}
	for (p = 0; p < 2; p++)
		for (g = 0; g < 4; g++) {
			kern_amx_transpose(w[p][g]);
			for (n = 0; n < 16; n++)
				_mm512_store_si512((void *)(o->b[p][g] + 64 * n), w[p][g][n]);
		}
}

/* One super-block's tail (simd_x86.h) for one token y, the 16 rows in
 * lanes: sumi = C1 + 8·C2 from the tile sums c1, c2 (the token's row of
 * them), summ = Σ_j the mins pairs m[j] · the token's bsums pairs. */
static inline KERN_AVX512_INLINE void
kern_amx_tail_q45k(const int32_t *c1, const int32_t *c2, const struct kern_block_q8_k *y,
    const __m512i m[4], __m512 d, __m512 dmin, __m512 *acc, __m512 *accm)
{
	/* the token's 32-quant sums b_s as int16 pairs (b_2j, b_2j+1) */
	const __m256i b32 = _mm256_madd_epi16(_mm256_loadu_si256(
	    (const __m256i *)(const void *)y->bsums), _mm256_set1_epi16(1));
	const __m128i bp = _mm_packs_epi32(_mm256_castsi256_si128(b32),
	    _mm256_extracti128_si256(b32, 1));
	const __m512i sumi = _mm512_add_epi32(_mm512_load_si512((const void *)c1),
	    _mm512_slli_epi32(_mm512_load_si512((const void *)c2), 3));
	const __m512 yd = _mm512_set1_ps(y->d);
	__m512i summ;

	summ = _mm512_dpwssd_epi32(_mm512_setzero_si512(), m[0],
	    _mm512_set1_epi32(_mm_extract_epi32(bp, 0)));
	summ = _mm512_dpwssd_epi32(summ, m[1], _mm512_set1_epi32(_mm_extract_epi32(bp, 1)));
	summ = _mm512_dpwssd_epi32(summ, m[2], _mm512_set1_epi32(_mm_extract_epi32(bp, 2)));
	summ = _mm512_dpwssd_epi32(summ, m[3], _mm512_set1_epi32(_mm_extract_epi32(bp, 3)));
	*acc = _mm512_fmadd_ps(_mm512_mul_ps(d, yd), _mm512_cvtepi32_ps(sumi), *acc);
	*accm = _mm512_fmadd_ps(_mm512_mul_ps(dmin, yd), _mm512_cvtepi32_ps(summ), *accm);
}

/* Rows [0, 16) of the unpacked blocks u (nb super-blocks) · tokens [0, 16)
 * of act (as bytes apart), or [0, 32) with two: out[k·os + n].  Two token
 * tiles share each load of the weights' tiles (C1, C2 in tiles 0, 1 and
 * 6, 7; A in 2 and 5; B1, B2 in 3, 4). */
static KERN_AMX_ATTR void
kern_amx_tile_q45k(const struct kern_amx_blk *u, int64_t nb, const uint8_t *act, size_t as,
    float *out, size_t os, int two)
{
	int32_t c[2][2][16][16] __attribute__((aligned(64))); /* [tile][C1, C2][token][row] */
	__m512 acc[32], accm[32]; /* [token], lane n: row n */
	const size_t qo = offsetof(struct kern_block_q8_k, qs);
	const int nt = two ? 32 : 16;
	int64_t ib;
	int k, g;

	for (k = 0; k < nt; k++) {
		acc[k] = _mm512_setzero_ps();
		accm[k] = _mm512_setzero_ps();
	}
	for (ib = 0; ib < nb; ib++) {
		const struct kern_amx_blk *bl = &u[ib];
		const uint8_t *a = act + (size_t)ib * sizeof(struct kern_block_q8_k);
		const __m512 d = _mm512_load_ps(bl->d), dmin = _mm512_load_ps(bl->dmin);
		__m512i m[4];

		for (g = 0; g < 4; g++)
			m[g] = _mm512_load_si512((const void *)bl->mp[g]);
		_tile_zero(0);
		_tile_zero(1);
		if (two) {
			_tile_zero(6);
			_tile_zero(7);
		}
		for (g = 0; g < 4; g++) {
			_tile_loadd(3, bl->b[0][g], 64);
			_tile_loadd(4, bl->b[1][g], 64);
			_tile_loadd(2, a + qo + 64 * g, as);
			_tile_dpbsud(0, 2, 3);
			_tile_dpbsud(1, 2, 4);
			if (two) {
				_tile_loadd(5, a + 16 * as + qo + 64 * g, as);
				_tile_dpbsud(6, 5, 3);
				_tile_dpbsud(7, 5, 4);
			}
		}
		_tile_stored(0, c[0][0], 64);
		_tile_stored(1, c[0][1], 64);
		if (two) {
			_tile_stored(6, c[1][0], 64);
			_tile_stored(7, c[1][1], 64);
		}
		for (k = 0; k < nt; k++)
			kern_amx_tail_q45k(c[k >> 4][0][k & 15], c[k >> 4][1][k & 15],
			    (const struct kern_block_q8_k *)(const void *)(a + (size_t)k * as), m, d, dmin,
			    &acc[k], &accm[k]);
	}
	for (k = 0; k < nt; k++)
		_mm512_storeu_ps(out + (size_t)k * os, _mm512_sub_ps(acc[k], accm[k]));
}

/* The Q6_K scale sc (−128..127) as 3 digits of base 8 from {−3, …, 4}
 * (sc = d0 + 8·d1 + 64·d2): with u − 32 in −32..31, every (u − 32)·d is
 * an int8, so B holds the quants times one digit. */
static void
kern_amx_digits(int sc, int d[3])
{
	int i;

	for (i = 0; i < 3; i++) {
		d[i] = ((sc + 3) & 7) - 3;
		sc = (sc - d[i]) / 8;
	}
}

/* Super-block ib of the 16 Q6_K rows x (rb bytes apart) into o. */
static KERN_AVX512 void
kern_amx_unpack_q6k(const uint8_t *x, size_t rb, int64_t ib, struct kern_amx_blk6 *o)
{
	__m512i w[3][4][16]; /* [digit][g][row] */
	int n, h, k, i, g;

	for (n = 0; n < 16; n++) {
		const uint8_t *b = x + (size_t)n * rb + (size_t)ib * sizeof(struct kern_block_q6_k);
		int dg[16][3];
		__m256i u[4];

		for (k = 0; k < 16; k++)
			kern_amx_digits((int8_t)b[192 + k], dg[k]);
		o->d[n] = kern_avx2_h2f(b + 208);
		for (h = 0; h < 2; h++) {
			kern_avx2_q6k_half(b, h, u);
			for (i = 0; i < 3; i++) {
				__m256i v[4];
				for (k = 0; k < 4; k++) { /* sub-blocks 8h + 2k, 8h + 2k + 1 */
					const int da = dg[8 * h + 2 * k][i], db = dg[8 * h + 2 * k + 1][i];
					const int aa = da < 0 ? -da : da, ab = db < 0 ? -db : db;
					/* (u − 32)·|d| (u·|d| ≤ 252: no carry out of a byte
					 * of the int16 product), then d's sign */
					const __m256i m = _mm256_mullo_epi16(u[k], _mm256_set_m128i(
					    _mm_set1_epi16((short)ab), _mm_set1_epi16((short)aa)));
					const __m256i off = _mm256_set_m128i(_mm_set1_epi8((char)(32 * ab)),
					    _mm_set1_epi8((char)(32 * aa)));
					v[k] = _mm256_sign_epi8(_mm256_sub_epi8(m, off), _mm256_set_m128i(
					    _mm_set1_epi8((char)db), _mm_set1_epi8((char)da)));
				}
				w[i][2 * h][n] = _mm512_inserti64x4(_mm512_castsi256_si512(v[0]), v[1], 1);
				w[i][2 * h + 1][n] = _mm512_inserti64x4(_mm512_castsi256_si512(v[2]), v[3], 1);
			}
		}
	}
	for (i = 0; i < 3; i++)
		for (g = 0; g < 4; g++) {
			kern_amx_transpose(w[i][g]);
			for (n = 0; n < 16; n++)
				_mm512_store_si512((void *)(o->b[i][g] + 64 * n), w[i][g][n]);
		}
}

/* Rows [0, 16) of the unpacked Q6_K blocks u (nb super-blocks) · tokens
 * [0, 16) of act (as bytes apart): out[k·os + n]. */
static KERN_AMX_ATTR void
kern_amx_tile16_q6k(const struct kern_amx_blk6 *u, int64_t nb, const uint8_t *act, size_t as,
    float *out, size_t os)
{
	int32_t c[3][16][16] __attribute__((aligned(64)));
	__m512 acc[16]; /* [token], lane n: row n */
	int64_t ib;
	int k, g;

	for (k = 0; k < 16; k++)
		acc[k] = _mm512_setzero_ps();
	for (ib = 0; ib < nb; ib++) {
		const struct kern_amx_blk6 *bl = &u[ib];
		const uint8_t *a = act + (size_t)ib * sizeof(struct kern_block_q8_k);
		const __m512 d = _mm512_load_ps(bl->d);

		_tile_zero(0);
		_tile_zero(1);
		_tile_zero(2);
		for (g = 0; g < 4; g++) {
			_tile_loadd(3, a + offsetof(struct kern_block_q8_k, qs) + 64 * g, as);
			_tile_loadd(4, bl->b[0][g], 64);
			_tile_loadd(5, bl->b[1][g], 64);
			_tile_loadd(6, bl->b[2][g], 64);
			_tile_dpbssd(0, 3, 4);
			_tile_dpbssd(1, 3, 5);
			_tile_dpbssd(2, 3, 6);
		}
		_tile_stored(0, c[0], 64);
		_tile_stored(1, c[1], 64);
		_tile_stored(2, c[2], 64);
		for (k = 0; k < 16; k++) {
			const struct kern_block_q8_k *y = (const struct kern_block_q8_k *)(const void *)
			    (a + (size_t)k * as);
			/* Σ_s sc_s·Σ (u − 32)·y = C0 + 8·C1 + 64·C2 */
			const __m512i sumi = _mm512_add_epi32(_mm512_load_si512((const void *)c[0][k]),
			    _mm512_add_epi32(_mm512_slli_epi32(_mm512_load_si512((const void *)c[1][k]), 3),
			    _mm512_slli_epi32(_mm512_load_si512((const void *)c[2][k]), 6)));

			acc[k] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(y->d)),
			    _mm512_cvtepi32_ps(sumi), acc[k]);
		}
	}
	for (k = 0; k < 16; k++)
		_mm512_storeu_ps(out + (size_t)k * os, acc[k]);
}

int
kern_cpu_amx_kq(enum kern_type t, const uint8_t *rows, size_t rb, int64_t n_rows,
    const uint8_t *act, size_t as, int64_t n_tok, int64_t nb, float *out, size_t os)
{
	const size_t bs = KERN_AMX_BLK(t);
	uint8_t *buf = kern_amx_scratch((size_t)nb * bs);
	int64_t r, k, ib;

	if (!buf)
		return -1;
	kern_amx_config();
	for (r = 0; r + 16 <= n_rows; r += 16) {
		const uint8_t *x = rows + (size_t)r * rb;
		for (ib = 0; ib < nb; ib++) {
			void *o = buf + (size_t)ib * bs;
			if (t == KERN_TYPE_Q6_K)
				kern_amx_unpack_q6k(x, rb, ib, o);
			else
				kern_amx_unpack(x, rb, ib, t == KERN_TYPE_Q5_K, o);
		}
		for (k = 0; k + 16 <= n_tok; k += 16) {
			const void *u = buf;
			if (t == KERN_TYPE_Q6_K) {
				kern_amx_tile16_q6k(u, nb, act + (size_t)k * as, as,
				    out + (size_t)k * os + r, os);
			} else {
				const int two = k + 32 <= n_tok;
				kern_amx_tile_q45k(u, nb, act + (size_t)k * as, as,
				    out + (size_t)k * os + r, os, two);
				k += two ? 16 : 0;
			}
		}
	}
	/* the tiles back to their initial state: a thread holding tile data
	 * pays for it in every context switch (8 KB more to save) and, on
	 * this VM, decode after a prefill ran ~10 % slower */
	kern_amx_release();
	return 0;
}
#else

static int
kern_amx_detect(void)
{
	return 0;
}

int
kern_cpu_amx_kq(enum kern_type t, const uint8_t *rows, size_t rb, int64_t n_rows,
    const uint8_t *act, size_t as, int64_t n_tok, int64_t nb, float *out, size_t os)
{
	(void)t, (void)rows, (void)rb, (void)n_rows, (void)act, (void)as;
	(void)n_tok, (void)nb, (void)out, (void)os;
	return -1;
}

static atomic_int kern_amx_forced = -1;
#endif

int
kern_cpu_amx_on(void)
{
	return atomic_load_explicit(&kern_amx_forced, memory_order_relaxed) != 0 &&
	    kern_cpu_simd_level() >= KERN_CPU_SIMD_AVX512 && kern_amx_detect();
}

int
kern_cpu_force_amx(int on)
{
	if (on > 0 && !(kern_amx_detect() && kern_cpu_simd_detect() >= KERN_CPU_SIMD_AVX512))
		return -1;
	atomic_store_explicit(&kern_amx_forced, on < 0 ? -1 : on > 0, memory_order_relaxed);
	return 0;
}
