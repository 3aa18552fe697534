/*
 * quant.c: tensor types, f16/bf16 conversion, the scalar dequantizers and
 * the activation quantizers (Q8_1, Q8_0, Q8_K).
 *
 * Everything here is plain C with no SIMD: it is the reference the fast paths
 * in vec_dot.c are checked against.  Each dequantizer evaluates its formula
 * in the same order and with the same f32 roundings as ggml's
 * dequantize_row_* (spec/model.md §3), so results are bit-identical to
 * llama.cpp's for finite inputs.  (Contraction into FMA could not change
 * them either: every product that is followed by an add, q·d, is exact in
 * f32; the pragma in simd.h keeps clang from trying.)
 *
 * The activation quantizers match the code llama.cpp actually runs on an x86
 * CPU with AVX or AVX2 (ggml-cpu arch/x86 quants.c, quantize_row_q8_0 and
 * quantize_row_q8_1), not ggml's scalar *_ref versions (Q8_K: x86 runs
 * quantize_row_q8_K_ref itself, and so do we; see kernels.h).  Per block of 32:
 *     amax = max |x|
 *     d    = amax / 127          (stored as f16, round to nearest even)
 *     id   = amax ? 127 / amax : 0
 *     q    = round-half-EVEN(x * id)       (_mm256_round_ps, _MM_ROUND_NEAREST)
 *     s    = f16(d * (float)Σq)  (Q8_1 only; f32 d, not the f16-rounded one)
 * The _ref versions use id = 1/d and roundf (half away from zero), which
 * can give a different q in the last bit for a few elements per block; the
 * f16 values of d and s are the same in both, both use the f32 d for s.
 * On CPUs with AVX2 the quantizers run an AVX2 twin written the way
 * ggml-cpu's is (25x faster than the scalar loop); both produce identical
 * bytes for finite input, which tests/test_quant.c checks at every level.
 */
#include <math.h>
#include <string.h>

#include "common/bits.h"
#include "kernels/kernels.h"
#include "kernels/cpu/cpu_internal.h" /* for kern_cpu_simd_level */
#include "kernels/cpu/simd.h"

/* ------------------------------------------------------------------------ */
/* Type table                                                                */

int
kern_type_block_elems(enum kern_type t)
{
	switch (t) {
	case KERN_TYPE_F32:
	case KERN_TYPE_F16:
	case KERN_TYPE_BF16:
		return 1;
	case KERN_TYPE_Q4_0:
	case KERN_TYPE_Q4_1:
	case KERN_TYPE_Q5_0:
	case KERN_TYPE_Q5_1:
	case KERN_TYPE_Q8_0:
	case KERN_TYPE_Q8_1:
		return KERN_QK;
	case KERN_TYPE_Q2_K:
	case KERN_TYPE_Q3_K:
	case KERN_TYPE_Q4_K:
	case KERN_TYPE_Q5_K:
	case KERN_TYPE_Q6_K:
	case KERN_TYPE_Q8_K:
		return KERN_QK_K;
	case KERN_TYPE_COUNT:
		break;
	}
	return 0;
}

size_t
kern_type_block_bytes(enum kern_type t)
{
	switch (t) {
	case KERN_TYPE_F32:
		return 4;
	case KERN_TYPE_F16:
	case KERN_TYPE_BF16:
		return 2;
	case KERN_TYPE_Q4_0:
		return sizeof(struct kern_block_q4_0);
	case KERN_TYPE_Q4_1:
		return sizeof(struct kern_block_q4_1);
	case KERN_TYPE_Q5_0:
		return sizeof(struct kern_block_q5_0);
	case KERN_TYPE_Q5_1:
		return sizeof(struct kern_block_q5_1);
	case KERN_TYPE_Q8_0:
		return sizeof(struct kern_block_q8_0);
	case KERN_TYPE_Q8_1:
		return sizeof(struct kern_block_q8_1);
	case KERN_TYPE_Q2_K:
		return sizeof(struct kern_block_q2_k);
	case KERN_TYPE_Q3_K:
		return sizeof(struct kern_block_q3_k);
	case KERN_TYPE_Q4_K:
		return sizeof(struct kern_block_q4_k);
	case KERN_TYPE_Q5_K:
		return sizeof(struct kern_block_q5_k);
	case KERN_TYPE_Q6_K:
		return sizeof(struct kern_block_q6_k);
	case KERN_TYPE_Q8_K:
		return sizeof(struct kern_block_q8_k);
	case KERN_TYPE_COUNT:
		break;
	}
	return 0;
}

/* The packed layouts of kernels.h must have exactly ggml's sizes. */
_Static_assert(sizeof(struct kern_block_q4_0) == 18, "q4_0 block size");
_Static_assert(sizeof(struct kern_block_q4_1) == 20, "q4_1 block size");
_Static_assert(sizeof(struct kern_block_q5_0) == 22, "q5_0 block size");
_Static_assert(sizeof(struct kern_block_q5_1) == 24, "q5_1 block size");
_Static_assert(sizeof(struct kern_block_q8_0) == 34, "q8_0 block size");
_Static_assert(sizeof(struct kern_block_q8_1) == 36, "q8_1 block size");
_Static_assert(sizeof(struct kern_block_q2_k) == 84, "q2_k block size");
_Static_assert(sizeof(struct kern_block_q3_k) == 110, "q3_k block size");
_Static_assert(sizeof(struct kern_block_q4_k) == 144, "q4_k block size");
_Static_assert(sizeof(struct kern_block_q5_k) == 176, "q5_k block size");
_Static_assert(sizeof(struct kern_block_q6_k) == 210, "q6_k block size");
_Static_assert(sizeof(struct kern_block_q8_k) == 292, "q8_k block size");

int
kern_type_is_weight(enum kern_type t)
{
	return kern_type_block_elems(t) > 0 && t != KERN_TYPE_Q8_1 && t != KERN_TYPE_Q8_K;
}

size_t
kern_type_row_bytes(enum kern_type t, int64_t n)
{
	int be = kern_type_block_elems(t);
	size_t bb = kern_type_block_bytes(t);

	if (be <= 0 || n < 0 || n % be != 0)
		return 0;
	if ((uint64_t)(n / be) > SIZE_MAX / bb)
		return 0;
	return (size_t)(n / be) * bb;
}

const char *
kern_type_name(enum kern_type t)
{
	switch (t) {
	case KERN_TYPE_F32:
		return "f32";
	case KERN_TYPE_F16:
		return "f16";
	case KERN_TYPE_Q4_0:
		return "q4_0";
	case KERN_TYPE_Q4_1:
		return "q4_1";
	case KERN_TYPE_Q5_0:
		return "q5_0";
	case KERN_TYPE_Q5_1:
		return "q5_1";
	case KERN_TYPE_Q8_0:
		return "q8_0";
	case KERN_TYPE_Q8_1:
		return "q8_1";
	case KERN_TYPE_Q2_K:
		return "q2_K";
	case KERN_TYPE_Q3_K:
		return "q3_K";
	case KERN_TYPE_Q4_K:
		return "q4_K";
	case KERN_TYPE_Q5_K:
		return "q5_K";
	case KERN_TYPE_Q6_K:
		return "q6_K";
	case KERN_TYPE_Q8_K:
		return "q8_K";
	case KERN_TYPE_BF16:
		return "bf16";
	case KERN_TYPE_COUNT:
		break;
	}
	return "unknown";
}

/* ------------------------------------------------------------------------ */
/* f16 / bf16                                                                */

/* Exact widening.  NaNs keep sign and payload with the quiet bit set, as
 * F16C's vcvtph2ps does. */
float
kern_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t e = (h >> 10) & 0x1f;
	uint32_t m = h & 0x3ff;

	if (e == 0x1f) /* inf, nan */
		return kv_bits_f32(sign | 0x7f800000u | (m << 13) |
		    (m ? 0x00400000u : 0));
	if (e != 0) /* normal */
		return kv_bits_f32(sign | ((e + 112) << 23) | (m << 13));
	if (m == 0)
		return kv_bits_f32(sign);
	/* subnormal: normalise; value = m * 2^-24 */
	e = 113;
	while (!(m & 0x400)) {
		m <<= 1;
		e--;
	}
	return kv_bits_f32(sign | (e << 23) | ((m & 0x3ff) << 13));
}

/* Round to nearest, ties to even, on the bits; gives the same result as
 * F16C's vcvtps2ph with imm 0 (what ggml uses on x86) for every input: over-
 * flow to inf, gradual underflow, NaN kept quiet with its top payload bits.
 * (ggml's portable fallback differs only in returning 0x7e00 for NaN.) */
uint16_t
kern_f32_to_f16(float f)
{
	uint32_t x = kv_f32_bits(f);
	uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
	uint32_t e, m, h, rem, half, shift;

	x &= 0x7fffffffu;
	if (x > 0x7f800000u) /* nan */
		return (uint16_t)(sign | 0x7e00 | ((x >> 13) & 0x3ff));
	if (x >= 0x477ff000u) /* >= 65520 (incl. inf) rounds to inf */
		return (uint16_t)(sign | 0x7c00);
	e = x >> 23;
	m = x & 0x7fffffu;
	if (x >= 0x38800000u) { /* f16 normal range: >= 2^-14 */
		h = ((e - 112) << 10) | (m >> 13);
		rem = m & 0x1fff;
		if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
			h++; /* a carry into the exponent is still right */
		return (uint16_t)(sign | h);
	}
	if (e < 102) /* below 2^-25: rounds to zero */
		return sign;
	/* f16 subnormal (or rounds up to the smallest normal): units of 2^-24 */
	m |= 0x800000u;
	shift = 126 - e; /* 14..24 */
	h = m >> shift;
	rem = m & ((1u << shift) - 1);
	half = 1u << (shift - 1);
	if (rem > half || (rem == half && (h & 1)))
		h++;
	return (uint16_t)(sign | h);
}

/* bf16 is the top half of an f32. */
float
kern_bf16_to_f32(uint16_t h)
{
	return kv_bits_f32((uint32_t)h << 16);
}

/* ------------------------------------------------------------------------ */
/* Dequantization (spec/model.md §3; expression order as ggml)               */

/* Little-endian u16 at p (block fields may sit at any alignment). */
static uint16_t
kern_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

/* The 6-bit scale and min of sub-block j of a Q4_K super-block. */
void
kern_cpu_q4k_scale_min(int j, const uint8_t *s, int *sc, int *mn)
{
	if (j < 4) {
		*sc = s[j] & 63;
		*mn = s[j + 4] & 63;
	} else {
		*sc = (s[j + 4] & 0xf) | ((s[j - 4] >> 6) << 4);
		*mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
	}
}

static void
kern_dequant_q4_0(const uint8_t *src, float *dst, int64_t nb)
{
	int64_t i;
	int j;

	for (i = 0; i < nb; i++, src += sizeof(struct kern_block_q4_0), dst += KERN_QK) {
		const float d = kern_f16_to_f32(kern_le16(src));
		const uint8_t *qs = src + 2;
		for (j = 0; j < KERN_QK / 2; j++) {
			dst[j] = (float)((qs[j] & 0xf) - 8) * d;
			dst[j + 16] = (float)((qs[j] >> 4) - 8) * d;
		}
	}
}

static void
kern_dequant_q4_1(const uint8_t *src, float *dst, int64_t nb)
{
	int64_t i;
	int j;

	for (i = 0; i < nb; i++, src += sizeof(struct kern_block_q4_1), dst += KERN_QK) {
		const float d = kern_f16_to_f32(kern_le16(src));
		const float m = kern_f16_to_f32(kern_le16(src + 2));
		const uint8_t *qs = src + 4;
		for (j = 0; j < KERN_QK / 2; j++) {
			dst[j] = (float)(qs[j] & 0xf) * d + m;
			dst[j + 16] = (float)(qs[j] >> 4) * d + m;
		}
	}
}

/* Q5_0 / Q5_1: the 5th bit of element j is bit j of qh (elements 0..15 are
 * the low nibbles of qs, 16..31 the high ones).  With m == NULL (Q5_0) the
 * value is (q - 16)·d, else q·d + m: ggml's expressions. */
static void
kern_dequant_q5(const uint8_t *src, float *dst, int64_t nb, int has_min)
{
	const size_t bb = has_min ? sizeof(struct kern_block_q5_1) : sizeof(struct kern_block_q5_0);
	int64_t i;
	int j;

	for (i = 0; i < nb; i++, src += bb, dst += KERN_QK) {
		const float d = kern_f16_to_f32(kern_le16(src));
		const float m = has_min ? kern_f16_to_f32(kern_le16(src + 2)) : 0.0f;
		const uint8_t *h = src + (has_min ? 4 : 2), *qs = h + 4;
		const uint32_t qh = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 |
		    (uint32_t)h[3] << 24;
		for (j = 0; j < KERN_QK / 2; j++) {
			int q0 = (qs[j] & 0xf) | (int)((qh >> j) & 1) << 4;
			int q1 = (qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
			if (has_min) {
				dst[j] = (float)q0 * d + m;
				dst[j + 16] = (float)q1 * d + m;
			} else {
				dst[j] = (float)(q0 - 16) * d;
				dst[j + 16] = (float)(q1 - 16) * d;
			}
		}
	}
}

static void
kern_dequant_q8_0(const uint8_t *src, float *dst, int64_t nb)
{
	int64_t i;
	int j;

	for (i = 0; i < nb; i++, src += sizeof(struct kern_block_q8_0), dst += KERN_QK) {
		const float d = kern_f16_to_f32(kern_le16(src));
		const int8_t *qs = (const int8_t *)(src + 2);
		for (j = 0; j < KERN_QK; j++)
			dst[j] = (float)qs[j] * d;
	}
}

/* Q4_K (five 0) and Q5_K (five 1): 8 sub-blocks of 32, pair g the low and
 * high nibbles of qs[32g..32g+32); Q5_K's 5th bit is bit 2g (low nibbles)
 * or 2g + 1 (high nibbles) of qh[l]. */
static void
kern_dequant_q45_k(const uint8_t *src, float *dst, int64_t nb, int five)
{
	const size_t bb = five ? sizeof(struct kern_block_q5_k) : sizeof(struct kern_block_q4_k);
	int64_t i;
	int g, l, sc, mn;

	for (i = 0; i < nb; i++, src += bb) {
		const float d = kern_f16_to_f32(kern_le16(src));
		const float dmin = kern_f16_to_f32(kern_le16(src + 2));
		const uint8_t *scales = src + 4, *qh = src + 16, *qs = src + (five ? 48 : 16);
		for (g = 0; g < 4; g++, qs += 32) {
			float d1, m1, d2, m2;
			kern_cpu_q4k_scale_min(2 * g, scales, &sc, &mn);
			d1 = d * (float)sc;
			m1 = dmin * (float)mn;
			kern_cpu_q4k_scale_min(2 * g + 1, scales, &sc, &mn);
			d2 = d * (float)sc;
			m2 = dmin * (float)mn;
			for (l = 0; l < 32; l++) {
				const int h1 = five ? (qh[l] >> (2 * g)) & 1 : 0;
				*dst++ = d1 * (float)((qs[l] & 0xf) | h1 << 4) - m1;
			}
			for (l = 0; l < 32; l++) {
				const int h2 = five ? (qh[l] >> (2 * g + 1)) & 1 : 0;
				*dst++ = d2 * (float)((qs[l] >> 4) | h2 << 4) - m2;
			}
		}
	}
}

/* Q2_K: 16 sub-blocks of 16; sub-block s has scale d·(sc & 15) and min
 * dmin·(sc >> 4).  Element 128h + 32k + l (l < 32) is bits 2k..2k+1 of
 * qs[32h + l]; its sub-block is 8h + 2k + l/16. */
static void
kern_dequant_q2_k(const uint8_t *src, float *dst, int64_t nb)
{
	int64_t i;
	int h, k, l;

	for (i = 0; i < nb; i++, src += sizeof(struct kern_block_q2_k)) {
		const uint8_t *sc = src, *qs = src + 16;
		const float d = kern_f16_to_f32(kern_le16(src + 80));
		const float dmin = kern_f16_to_f32(kern_le16(src + 82));
		for (h = 0; h < 2; h++, qs += 32)
			for (k = 0; k < 4; k++)
				for (l = 0; l < 32; l++) {
					const int s = sc[8 * h + 2 * k + l / 16];
					const float dl = d * (float)(s & 0xf), ml = dmin * (float)(s >> 4);
					*dst++ = dl * (float)((qs[l] >> (2 * k)) & 3) - ml;
				}
	}
}

/* The 16 6-bit scales of a Q3_K super-block, unpacked (before the -32):
 * the low 4 bits of scale s are the low nibble of byte s (s < 8) or the high
 * nibble of byte s - 8; its top 2 bits are bits 2(s / 4).. of byte 8 + s % 4. */
void
kern_cpu_q3k_scales(const uint8_t *p, int sc[16])
{
	int s;

	for (s = 0; s < 16; s++) {
		int lo = s < 8 ? p[s] & 0xf : p[s - 8] >> 4;
		int hi = (p[8 + s % 4] >> (2 * (s / 4))) & 3;
		sc[s] = lo | hi << 4;
	}
}

/* Q3_K: like Q2_K's bit layout for the low 2 bits; bit k + 4h of
 * hmask[l] (l < 32) is the high bit of element 128h + 32k + l, and the
 * value is (q2 - (high ? 0 : 4)) · d·(scale - 32). */
static void
kern_dequant_q3_k(const uint8_t *src, float *dst, int64_t nb)
{
	int64_t i;
	int h, k, l, sc[16];

	for (i = 0; i < nb; i++, src += sizeof(struct kern_block_q3_k)) {
		const uint8_t *hm = src, *qs = src + 32;
		const float d = kern_f16_to_f32(kern_le16(src + 108));
		kern_cpu_q3k_scales(src + 96, sc);
		for (h = 0; h < 2; h++, qs += 32)
			for (k = 0; k < 4; k++)
				for (l = 0; l < 32; l++) {
					const float dl = d * (float)(sc[8 * h + 2 * k + l / 16] - 32);
					const int q = ((qs[l] >> (2 * k)) & 3) -
					    ((hm[l] >> (4 * h + k)) & 1 ? 0 : 4);
					*dst++ = dl * (float)q;
				}
	}
}

static void
kern_dequant_q6_k(const uint8_t *src, float *dst, int64_t nb)
{
	int64_t i;
	int half, l;

	for (i = 0; i < nb; i++, src += sizeof(struct kern_block_q6_k)) {
		const uint8_t *ql = src, *qh = src + 128;
		const int8_t *sc = (const int8_t *)(src + 192);
		const float d = kern_f16_to_f32(kern_le16(src + 208));
		for (half = 0; half < 2; half++, ql += 64, qh += 32, sc += 8, dst += 128) {
			for (l = 0; l < 32; l++) {
				int s = l / 16;
				int q1 = ((ql[l] & 0xf) | (((qh[l] >> 0) & 3) << 4)) - 32;
				int q2 = ((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4)) - 32;
				int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
				int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
				dst[l] = d * (float)sc[s] * (float)q1;
				dst[l + 32] = d * (float)sc[s + 2] * (float)q2;
				dst[l + 64] = d * (float)sc[s + 4] * (float)q3;
				dst[l + 96] = d * (float)sc[s + 6] * (float)q4;
			}
		}
	}
}

void
kern_dequant_row(enum kern_type t, const void *src, float *dst, int64_t n)
{
	const uint8_t *p = src;
	int be = kern_type_block_elems(t);
	int64_t i, nb;

	if (be <= 0 || n <= 0 || n % be != 0)
		return;
	nb = n / be;
	switch (t) {
	case KERN_TYPE_F32:
		memcpy(dst, src, (size_t)n * sizeof(float));
		break;
	case KERN_TYPE_F16:
		for (i = 0; i < n; i++)
			dst[i] = kern_f16_to_f32(kern_le16(p + 2 * i));
		break;
	case KERN_TYPE_BF16:
		for (i = 0; i < n; i++)
			dst[i] = kern_bf16_to_f32(kern_le16(p + 2 * i));
		break;
	case KERN_TYPE_Q4_0:
		kern_dequant_q4_0(p, dst, nb);
		break;
	case KERN_TYPE_Q4_1:
		kern_dequant_q4_1(p, dst, nb);
		break;
	case KERN_TYPE_Q5_0:
		kern_dequant_q5(p, dst, nb, 0);
		break;
	case KERN_TYPE_Q5_1:
		kern_dequant_q5(p, dst, nb, 1);
		break;
	case KERN_TYPE_Q8_0:
		kern_dequant_q8_0(p, dst, nb);
		break;
	case KERN_TYPE_Q8_1: /* same values as Q8_0, 2 bytes further on */
		for (i = 0; i < nb; i++, p += sizeof(struct kern_block_q8_1)) {
			const float d = kern_f16_to_f32(kern_le16(p));
			int j;
			for (j = 0; j < KERN_QK; j++)
				dst[i * KERN_QK + j] = (float)(int8_t)p[4 + j] * d;
		}
		break;
	case KERN_TYPE_Q2_K:
		kern_dequant_q2_k(p, dst, nb);
		break;
	case KERN_TYPE_Q3_K:
		kern_dequant_q3_k(p, dst, nb);
		break;
	case KERN_TYPE_Q4_K:
		kern_dequant_q45_k(p, dst, nb, 0);
		break;
	case KERN_TYPE_Q5_K:
		kern_dequant_q45_k(p, dst, nb, 1);
		break;
	case KERN_TYPE_Q6_K:
		kern_dequant_q6_k(p, dst, nb);
		break;
	case KERN_TYPE_Q8_K: /* d·q, d an f32 */
		for (i = 0; i < nb; i++, p += sizeof(struct kern_block_q8_k)) {
			float d;
			int j;
			memcpy(&d, p, sizeof(d));
			for (j = 0; j < KERN_QK_K; j++)
				dst[i * KERN_QK_K + j] = d * (float)(int8_t)p[4 + j];
		}
		break;
	case KERN_TYPE_COUNT:
		break;
	}
}

/* ------------------------------------------------------------------------ */
/* Activation quantization (ggml-cpu's AVX2 arithmetic, see the top)         */

/* One block of 32: scale d, quants q[], and Σq. */
static int
kern_quant_block_8(const float *x, float *d_out, int8_t *q)
{
	float amax = 0.0f, d, id;
	int j, sum = 0;

	for (j = 0; j < KERN_QK; j++) {
		float a = fabsf(x[j]);
		if (a > amax)
			amax = a;
	}
	d = amax / 127.0f;
	id = amax != 0.0f ? 127.0f / amax : 0.0f;
	for (j = 0; j < KERN_QK; j++) {
		/* rintf rounds half to even in the default rounding mode, like
		 * _mm256_round_ps(_MM_ROUND_NEAREST).  |x*id| <= 127 for finite
		 * input; the clamp only keeps NaN/inf input free of UB (the
		 * SIMD code gives -128 there too). */
		float v = rintf(x[j] * id);
		int qi = (v >= -128.0f && v <= 127.0f) ? (int)v : -128;
		q[j] = (int8_t)qi;
		sum += qi;
	}
	*d_out = d;
	return sum;
}

#if KERN_X86
/* One block of 32 with AVX2: writes the quants to qs, returns Σq; *d_out
 * gets the f32 scale.  The same steps as the scalar version, eight lanes at
 * a time; vroundps with imm 0 rounds half to even. */
static inline __attribute__((target("avx2,f16c"), always_inline)) int
kern_quant_block_8_avx2(const float *x, float *d_out, int8_t *qs)
{
	const __m256 sign = _mm256_set1_ps(-0.0f);
	__m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
	__m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
	__m256 mx = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v0), _mm256_andnot_ps(sign, v1)),
	    _mm256_max_ps(_mm256_andnot_ps(sign, v2), _mm256_andnot_ps(sign, v3)));
	__m128 m4 = _mm_max_ps(_mm256_extractf128_ps(mx, 1), _mm256_castps256_ps128(mx));
	__m256i i0, i1, i2, i3, s;
	__m128i s4;
	__m256 id;
	float amax;

	m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
	m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
	amax = _mm_cvtss_f32(m4);
	*d_out = amax / 127.0f;
	id = _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
	i0 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v0, id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
	i1 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v1, id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
	i2 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v2, id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
	i3 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v3, id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
	s = _mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3));
	s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
	s4 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
	s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 1));
	/* int32 → int8 with saturation; the packs work per 128-bit half, the
	 * permute puts the dwords back in order */
	i0 = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
	i0 = _mm256_permutevar8x32_epi32(i0, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
	_mm256_storeu_si256((__m256i *)(void *)qs, i0);
	return _mm_cvtsi128_si32(s4);
}

/* Q8_1 rows into y1, or Q8_0 rows into y0 (y1 NULL), with AVX2. */
static __attribute__((target("avx2,f16c"))) void
kern_quant_row_8_avx2(const float *x, struct kern_block_q8_1 *y1, struct kern_block_q8_0 *y0,
    int64_t nb)
{
	int64_t i;

	for (i = 0; i < nb; i++) {
		float d;
		if (y1) {
			int sum = kern_quant_block_8_avx2(x + i * KERN_QK, &d, y1[i].qs);
			y1[i].d = (uint16_t)_cvtss_sh(d, 0);
			y1[i].s = (uint16_t)_cvtss_sh(d * (float)sum, 0);
		} else {
			(void)kern_quant_block_8_avx2(x + i * KERN_QK, &d, y0[i].qs);
			y0[i].d = (uint16_t)_cvtss_sh(d, 0);
		}
	}
}
#endif

void
kern_quant_row_q8_1(const float *x, struct kern_block_q8_1 *dst, int64_t n)
{
	int64_t i;

#if KERN_X86
	if (kern_cpu_simd_level() >= KERN_CPU_SIMD_AVX2) {
		kern_quant_row_8_avx2(x, dst, NULL, n / KERN_QK);
		return;
	}
#endif
	for (i = 0; i < n / KERN_QK; i++) {
		float d;
		int sum = kern_quant_block_8(x + i * KERN_QK, &d, dst[i].qs);
		dst[i].d = kern_f32_to_f16(d);
		dst[i].s = kern_f32_to_f16(d * (float)sum);
	}
}

void
kern_quant_row_q8_0(const float *x, struct kern_block_q8_0 *dst, int64_t n)
{
	int64_t i;

#if KERN_X86
	if (kern_cpu_simd_level() >= KERN_CPU_SIMD_AVX2) {
		kern_quant_row_8_avx2(x, NULL, dst, n / KERN_QK);
		return;
	}
#endif
	for (i = 0; i < n / KERN_QK; i++) {
		float d;
		(void)kern_quant_block_8(x + i * KERN_QK, &d, dst[i].qs);
		dst[i].d = kern_f32_to_f16(d);
	}
}

/* ggml's nearest_int: the magic-number rounding (half to even in the
 * default rounding mode), on the bits, so even NaN input is defined. */
static int
kern_nearest_int(float v)
{
	float t = v + 12582912.0f;
	int32_t i;

	memcpy(&i, &t, sizeof(i));
	return (i & 0x007fffff) - 0x00400000;
}

void
kern_quant_row_q8_k(const float *x, struct kern_block_q8_k *dst, int64_t n)
{
	int64_t i;
	int j, g;

	for (i = 0; i < n / KERN_QK_K; i++, x += KERN_QK_K) {
		struct kern_block_q8_k *y = &dst[i];
		float amax = 0.0f, max = 0.0f, iscale;
		for (j = 0; j < KERN_QK_K; j++) {
			float a = fabsf(x[j]);
			if (a > amax) {
				amax = a;
				max = x[j];
			}
		}
		if (amax == 0.0f) {
			memset(y, 0, sizeof(*y));
			continue;
		}
		iscale = -127.0f / max;
		for (j = 0; j < KERN_QK_K; j++) {
			int v = kern_nearest_int(iscale * x[j]);
			y->qs[j] = (int8_t)(v < 127 ? v : 127);
		}
		for (g = 0; g < KERN_QK_K / 16; g++) {
			int sum = 0;
			for (j = 0; j < 16; j++)
				sum += y->qs[16 * g + j];
			y->bsums[g] = (int16_t)sum;
		}
		y->d = 1.0f / iscale;
	}
}

void
kern_quant_row_act(enum kern_type at, const float *x, void *dst, int64_t n)
{
	if (at == KERN_TYPE_Q8_0)
		kern_quant_row_q8_0(x, dst, n);
	else if (at == KERN_TYPE_Q8_1)
		kern_quant_row_q8_1(x, dst, n);
	else if (at == KERN_TYPE_Q8_K)
		kern_quant_row_q8_k(x, dst, n);
	else
		memcpy(dst, x, (size_t)n * sizeof(float));
}
