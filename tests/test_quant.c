/*
 * test_quant.c: tensor types, f16 conversion, dequantization, activation
 * quantization and every SIMD dot-product path of kernels/cpu.
 *
 * Expected values come from the formulas of spec/model.md §3 evaluated here,
 * independently of quant.c, and from ggml itself (tests/fixtures/
 * quant_dequant.bin: gguf-py's reference dequantizers, bit for bit, every
 * type); SIMD paths are compared with the scalar level, which is compared
 * with a double-precision sum of the dequantized row times the (rounded)
 * activations.  Tolerance for every f32 dot: |got − want| ≤ KQ_REL ·
 * Σ|terms| (KQ_REL = 1e-5, about 170 ulps of the term magnitude: the f32
 * sums over ≤ 64 blocks (the real models' rows: ≤ 28 blocks of 32 or 19
 * super-blocks) need ~n_blocks · 2^-24; Q6_K's dequantized (d·sc)·q may
 * itself round once, 2^-24 relative).  Random rows, rows with ±65504 and
 * ±2^-24 scales, all-zero rows (exactly 0), rows of every length the plain
 * types allow (1, 7, 37, ...).  Dequantization by the SIMD paths must be
 * bit-identical to the scalar one.
 * Set KVSNAP_TEST_SLOW=1 to check f32→f16 on all 2^32 inputs against F16C.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/rng.h"
#include "engine/model/gguf.h"
#include "kernels/cpu/cpu_internal.h"
#include "kernels/kernels.h"
#include "tests/helpers.h"
#include "tests/tap.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define KQ_X86 1
#else
#define KQ_X86 0
#endif

#define KQ_REL 1e-5

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

static uint64_t kq_rng_state = 0x9e3779b97f4a7c15ull;

/* xorshift64*: deterministic pseudo-random numbers. */
static uint64_t
kq_rand(void)
{
	return kv_xorshift64s(&kq_rng_state);
}

/* f16 value by the spec formula (§3), in double; non-finite excluded. */
static double
kq_f16_value(uint16_t h)
{
	int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
	double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
	return s ? -v : v;
}

/* f32 → f16 by search over the ordered f16 values: nearest, ties to the
 * even pattern, ≥ 65520 to inf.  Slow and obviously right. */
static uint16_t
kq_ref_f32_to_f16(float f)
{
	uint16_t sign = (uint16_t)(signbit(f) ? 0x8000 : 0);
	double a = fabs((double)f), vlo, vhi;
	int lo = 0, hi = 0x7bff;

	if (isnan(f))
		return (uint16_t)(sign | 0x7e00);
	if (a >= 65520.0)
		return (uint16_t)(sign | 0x7c00);
	if (a >= 65504.0)
		return (uint16_t)(sign | 0x7bff);
	while (hi - lo > 1) { /* invariant: value(lo) <= a < value(hi) */
		int mid = (lo + hi) / 2;
		if (kq_f16_value((uint16_t)mid) <= a)
			lo = mid;
		else
			hi = mid;
	}
	vlo = kq_f16_value((uint16_t)lo);
	vhi = kq_f16_value((uint16_t)hi);
	if (a - vlo < vhi - a)
		return (uint16_t)(sign | lo);
	if (a - vlo > vhi - a)
		return (uint16_t)(sign | hi);
	return (uint16_t)(sign | ((lo & 1) ? hi : lo));
}

/* Levels this CPU can run. */
static int
kq_n_levels(void)
{
	return kern_cpu_simd_detect() + 1;
}

static const char *
kq_level_name(int l)
{
	return l == KERN_CPU_SIMD_AVX512 ? "avx512" : l == KERN_CPU_SIMD_AVX2 ? "avx2" : "scalar";
}

#if KQ_X86
/* Hardware F16C conversions (this machine's ground truth). */
__attribute__((target("f16c"))) static uint16_t
kq_hw_f32_to_f16(float f)
{
	return (uint16_t)_cvtss_sh(f, 0);
}

__attribute__((target("f16c"))) static float
kq_hw_f16_to_f32(uint16_t h)
{
	return _cvtsh_ss(h);
}

static int
kq_have_f16c(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2"); /* every AVX2 CPU has F16C */
}
#endif

/* Random f16 scale with magnitude in [lo, hi). */
static uint16_t
kq_rand_f16(float lo, float hi)
{
	return kern_f32_to_f16(th_uniform(&kq_rng_state, lo, hi));
}

/* Fill n bytes with random data. */
static void
kq_rand_bytes(uint8_t *p, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(kq_rand() >> 56);
}

static void
kq_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

/* What kq_rand_block makes: ordinary blocks, blocks whose every f16 scale
 * is ±65504 (the largest f16) or ±2^-24 (the smallest subnormal), or
 * all-zero blocks (rows that are all zero). */
enum kq_mode { KQ_NORMAL, KQ_HUGE, KQ_TINY, KQ_ZERO };
static enum kq_mode kq_mode = KQ_NORMAL;

/* A random f16 scale in [lo, hi), or the mode's extreme of the same sign. */
static uint16_t
kq_scale(float lo, float hi)
{
	uint16_t h = kq_rand_f16(lo, hi);
	uint16_t sign = h & 0x8000;

	if (kq_mode == KQ_HUGE)
		return (uint16_t)(sign | 0x7bff);
	if (kq_mode == KQ_TINY)
		return (uint16_t)(sign | 0x0001);
	return h;
}

/* One random block of type t at p (valid scales, random quants).  Q8_0
 * quants avoid −128, which ggml's quantizers never emit (see vec_dot.c). */
static void
kq_rand_block(enum kern_type t, uint8_t *p)
{
	size_t bb = kern_type_block_bytes(t);
	int j;

	kq_rand_bytes(p, bb);
	if (kq_mode == KQ_ZERO) {
		memset(p, 0, bb);
		return;
	}
	switch (t) {
	case KERN_TYPE_F32: {
		float f = th_uniform(&kq_rng_state, -1.0f, 1.0f);
		memcpy(p, &f, 4);
		break;
	}
	case KERN_TYPE_F16:
		kq_put16(p, kern_f32_to_f16(th_uniform(&kq_rng_state, -1.0f, 1.0f)));
		break;
	case KERN_TYPE_BF16:
		kq_put16(p, (uint16_t)(kv_f32_bits(th_uniform(&kq_rng_state, -1.0f, 1.0f)) >> 16));
		break;
	case KERN_TYPE_Q4_0:
	case KERN_TYPE_Q5_0:
		kq_put16(p, kq_scale(-0.1f, 0.1f));
		break;
	case KERN_TYPE_Q4_1:
	case KERN_TYPE_Q5_1:
		kq_put16(p, kq_scale(0.001f, 0.05f));
		kq_put16(p + 2, kq_scale(-0.4f, 0.0f));
		break;
	case KERN_TYPE_Q8_0:
		kq_put16(p, kq_scale(-0.01f, 0.01f));
		for (j = 0; j < 32; j++)
			if (p[2 + j] == 0x80)
				p[2 + j] = 0x81;
		break;
	case KERN_TYPE_Q2_K:
		kq_put16(p + 80, kq_scale(0.0f, 0.01f));
		kq_put16(p + 82, kq_scale(0.0f, 0.01f));
		break;
	case KERN_TYPE_Q3_K:
		kq_put16(p + 108, kq_scale(-0.01f, 0.01f));
		break;
	case KERN_TYPE_Q4_K:
	case KERN_TYPE_Q5_K:
		kq_put16(p, kq_scale(0.0f, 0.01f));
		kq_put16(p + 2, kq_scale(0.0f, 0.01f));
		break;
	case KERN_TYPE_Q6_K:
		kq_put16(p + 208, kq_scale(-0.01f, 0.01f));
		break;
	case KERN_TYPE_Q8_1:
	case KERN_TYPE_Q8_K:
	case KERN_TYPE_COUNT:
		break;
	}
}

/* n_rows random rows of n elements, row stride rb, at p. */
static void
kq_rand_rows(enum kern_type t, uint8_t *p, size_t rb, int64_t n_rows, int64_t n)
{
	int64_t r, i;
	int be = kern_type_block_elems(t);
	size_t bb = kern_type_block_bytes(t);

	for (r = 0; r < n_rows; r++)
		for (i = 0; i < n / be; i++)
			kq_rand_block(t, p + (size_t)r * rb + (size_t)i * bb);
}

/* ------------------------------------------------------------------------ */
/* Type table                                                                */

static enum tap_result
test_type_table(void)
{
	TAP_CHECK(kern_type_block_bytes(KERN_TYPE_Q4_0) == 18, "q4_0");
	TAP_CHECK(kern_type_block_bytes(KERN_TYPE_Q4_1) == 20, "q4_1");
	TAP_CHECK(kern_type_block_bytes(KERN_TYPE_Q8_0) == 34, "q8_0");
	TAP_CHECK(kern_type_block_bytes(KERN_TYPE_Q8_1) == 36, "q8_1");
	TAP_CHECK(kern_type_block_bytes(KERN_TYPE_Q4_K) == 144, "q4_K");
	TAP_CHECK(kern_type_block_bytes(KERN_TYPE_Q6_K) == 210, "q6_K");
	TAP_CHECK(kern_type_block_elems(KERN_TYPE_Q6_K) == 256, "q6_K elems");
	TAP_CHECK(kern_type_block_elems(KERN_TYPE_BF16) == 1, "bf16 elems");
	TAP_CHECK(kern_type_block_bytes(KERN_TYPE_Q5_0) == 22, "q5_0");
	TAP_CHECK(kern_type_block_bytes(KERN_TYPE_Q5_1) == 24, "q5_1");
	TAP_CHECK(kern_type_block_bytes(KERN_TYPE_Q2_K) == 84, "q2_K");
	TAP_CHECK(kern_type_block_bytes(KERN_TYPE_Q3_K) == 110, "q3_K");
	TAP_CHECK(kern_type_block_bytes(KERN_TYPE_Q5_K) == 176, "q5_K");
	TAP_CHECK(kern_type_block_elems(KERN_TYPE_Q2_K) == 256, "q2_K elems");
	TAP_CHECK(kern_type_block_elems(KERN_TYPE_Q5_1) == 32, "q5_1 elems");
	TAP_CHECK(kern_type_block_elems((enum kern_type)16) == 0, "iq2_xxs unsupported");
	TAP_CHECK(kern_type_row_bytes(KERN_TYPE_Q4_1, 576) == 360, "q4_1 row");
	TAP_CHECK(kern_type_row_bytes(KERN_TYPE_Q8_0, 576) == 612, "q8_0 row");
	TAP_CHECK(kern_type_row_bytes(KERN_TYPE_F16, 7) == 14, "f16 row");
	TAP_CHECK(kern_type_row_bytes(KERN_TYPE_Q4_K, 576) == 0, "q4_K needs n %% 256");
	TAP_CHECK(kern_type_row_bytes(KERN_TYPE_Q4_0, 33) == 0, "partial block");
	TAP_CHECK(kern_type_row_bytes((enum kern_type)20, 32) == 0, "iq4_nl unsupported");
	TAP_CHECK(kern_type_row_bytes(KERN_TYPE_Q5_K, 1536) == 6 * 176, "q5_K row");
	TAP_CHECK(strcmp(kern_type_name(KERN_TYPE_Q4_1), "q4_1") == 0, "name");
	TAP_CHECK(strcmp(kern_type_name((enum kern_type)99), "unknown") == 0, "unknown name");
	TAP_CHECK(kern_vec_dot_act_type(KERN_TYPE_Q4_1) == KERN_TYPE_Q8_1, "act q4_1");
	TAP_CHECK(kern_vec_dot_act_type(KERN_TYPE_Q4_0) == KERN_TYPE_Q8_0, "act q4_0");
	TAP_CHECK(kern_vec_dot_act_type(KERN_TYPE_Q8_0) == KERN_TYPE_Q8_0, "act q8_0");
	TAP_CHECK(kern_vec_dot_act_type(KERN_TYPE_Q5_0) == KERN_TYPE_Q8_0, "act q5_0");
	TAP_CHECK(kern_vec_dot_act_type(KERN_TYPE_Q5_1) == KERN_TYPE_Q8_1, "act q5_1");
	TAP_CHECK(strcmp(kern_type_name(KERN_TYPE_Q3_K), "q3_K") == 0, "name q3_K");
	tap_diag("simd level: %s", kern_simd_name());
	return TAP_PASS;
}

/* ------------------------------------------------------------------------ */
/* f16 / bf16                                                                */

static enum tap_result
test_f16_all_patterns(void)
{
	uint32_t h;

	for (h = 0; h < 65536; h++) {
		float f = kern_f16_to_f32((uint16_t)h);
		int e = (h >> 10) & 31;
		if (e == 31) {
			if (h & 1023) {
				TAP_CHECK(isnan(f) && !!signbit(f) == !!(h & 0x8000), "nan %04x", h);
			} else {
				TAP_CHECK(isinf(f) && !!signbit(f) == !!(h & 0x8000), "inf %04x", h);
				TAP_CHECK(kern_f32_to_f16(f) == h, "inf round trip %04x", h);
			}
		} else {
			TAP_CHECK((double)f == kq_f16_value((uint16_t)h), "value %04x: %g", h, f);
			TAP_CHECK(!!signbit(f) == !!(h & 0x8000), "sign %04x", h);
			TAP_CHECK(kern_f32_to_f16(f) == h, "round trip %04x -> %04x", h,
			    kern_f32_to_f16(f));
		}
#if KQ_X86
		if (kq_have_f16c()) {
			float g = kq_hw_f16_to_f32((uint16_t)h);
			TAP_CHECK(kv_f32_bits(f) == kv_f32_bits(g), "vs F16C %04x: %08x %08x", h,
			    kv_f32_bits(f), kv_f32_bits(g));
		}
#endif
	}
	TAP_CHECK(kern_bf16_to_f32(0x3f80) == 1.0f, "bf16 1");
	TAP_CHECK(kern_bf16_to_f32(0xc0a0) == -5.0f, "bf16 -5");
	TAP_CHECK(isinf(kern_bf16_to_f32(0x7f80)), "bf16 inf");
	return TAP_PASS;
}

static enum tap_result
test_f32_to_f16(void)
{
	static const float edges[] = {
		0.0f, 1.0f, 65504.0f, 65519.99f, 65520.0f, 65536.0f, 1e10f,
		6.103515625e-05f,      /* smallest normal */
		6.097555160522461e-05f, /* largest subnormal */
		5.960464477539063e-08f, /* smallest subnormal 2^-24 */
		2.9802322387695312e-08f, /* 2^-25: tie to 0 */
		2.9802326e-08f,        /* just above 2^-25: to 2^-24 */
		8.940697e-08f,         /* 1.5 * 2^-24: tie to 2 * 2^-24 */
		1.00048828125f,        /* 1 + 2^-11: tie to even (1) */
		1.00146484375f,        /* 1 + 3·2^-11: tie to even (1 + 2^-9) */
		2047.5f, 2048.5f, 4095.0f, 1e-30f, 3.14159265f, 0.1f, 1.0f / 3.0f,
	};
	size_t i;
	uint64_t k, step;
	int slow = getenv("KVSNAP_TEST_SLOW") != NULL;

	for (i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
		int s;
		for (s = 0; s < 2; s++) {
			float f = s ? -edges[i] : edges[i];
			TAP_CHECK(kern_f32_to_f16(f) == kq_ref_f32_to_f16(f), "%.10g: %04x want %04x",
			    (double)f, kern_f32_to_f16(f), kq_ref_f32_to_f16(f));
		}
	}
	TAP_CHECK(kern_f32_to_f16(INFINITY) == 0x7c00, "inf");
	TAP_CHECK(kern_f32_to_f16(-INFINITY) == 0xfc00, "-inf");
	TAP_CHECK((kern_f32_to_f16(NAN) & 0x7c00) == 0x7c00 && (kern_f32_to_f16(NAN) & 0x3ff),
	    "nan");
	/* random patterns against the search reference */
	for (k = 0; k < 300000; k++) {
		float f = kv_bits_f32((uint32_t)(kq_rand() >> 32));
		if (isnan(f))
			continue;
		TAP_CHECK(kern_f32_to_f16(f) == kq_ref_f32_to_f16(f), "%08x: %04x want %04x",
		    kv_f32_bits(f), kern_f32_to_f16(f), kq_ref_f32_to_f16(f));
	}
	/* dense band around the f16 range against the reference */
	for (k = 0x33000000u - 4096; k < 0x47800000u + 4096; k += 97) {
		float f = kv_bits_f32((uint32_t)k);
		TAP_CHECK(kern_f32_to_f16(f) == kq_ref_f32_to_f16(f), "%08x: %04x want %04x",
		    (unsigned)k, kern_f32_to_f16(f), kq_ref_f32_to_f16(f));
	}
#if KQ_X86
	/* the hardware on every (slow) or every 61st (default) bit pattern,
	 * NaNs included */
	if (kq_have_f16c()) {
		step = slow ? 1 : 61;
		for (k = 0; k < (1ull << 32); k += step) {
			float f = kv_bits_f32((uint32_t)k);
			if (kern_f32_to_f16(f) != kq_hw_f32_to_f16(f))
				TAP_CHECK(0, "%08x: %04x F16C %04x", (unsigned)k, kern_f32_to_f16(f),
				    kq_hw_f32_to_f16(f));
		}
		tap_diag("f32->f16 equals F16C on %s bit patterns", slow ? "all 2^32" : "1/61 of the");
	}
#else
	(void)step;
	(void)slow;
#endif
	return TAP_PASS;
}

/* ------------------------------------------------------------------------ */
/* Dequantization of hand-built blocks                                       */

/* kern_dequant_row of `blk` (type t, n elements) must equal want[]. */
static int
kq_check_deq(enum kern_type t, const uint8_t *blk, const double *want, int n)
{
	float got[512];
	int i, l;

	kern_dequant_row(t, blk, got, n);
	for (i = 0; i < n; i++)
		if ((double)got[i] != want[i]) {
			printf("#   %s element %d: got %.9g want %.9g\n", kern_type_name(t), i,
			    (double)got[i], want[i]);
			return 0;
		}
	/* and every SIMD dequantizer */
	for (l = 0; l < kq_n_levels(); l++) {
		float got2[512];
		kern_cpu_force_simd(l);
		kern_cpu_dequant_rows(t, blk, 0, 1, n, got2);
		kern_cpu_force_simd(KERN_CPU_SIMD_AUTO);
		if (memcmp(got, got2, (size_t)n * sizeof(float)) != 0) {
			printf("#   %s: dequant_rows at %s differs\n", kern_type_name(t),
			    kq_level_name(l));
			return 0;
		}
	}
	return 1;
}

static enum tap_result
test_dequant_q4_0(void)
{
	uint8_t b[2 * 18];
	double want[64];
	int j, k;

	for (k = 0; k < 2; k++) {
		uint8_t *p = b + 18 * k;
		double d = k ? -0.5 : 0.375;
		kq_put16(p, k ? 0xb800 : 0x3600); /* -0.5, 0.375 */
		for (j = 0; j < 16; j++)
			p[2 + j] = (uint8_t)(((j * 7 + k) & 15) | ((15 - j) << 4));
		for (j = 0; j < 16; j++) {
			want[32 * k + j] = (double)(((j * 7 + k) & 15) - 8) * d;
			want[32 * k + 16 + j] = (double)((15 - j) - 8) * d;
		}
	}
	TAP_CHECK(kq_check_deq(KERN_TYPE_Q4_0, b, want, 64), "q4_0");
	return TAP_PASS;
}

static enum tap_result
test_dequant_q4_1(void)
{
	uint8_t b[20];
	double want[32];
	int j;

	kq_put16(b, 0x3400);     /* d = 0.25 */
	kq_put16(b + 2, 0xbe00); /* m = -1.5 */
	for (j = 0; j < 16; j++)
		b[4 + j] = (uint8_t)(j | ((j ^ 5) << 4));
	for (j = 0; j < 16; j++) {
		want[j] = j * 0.25 - 1.5;
		want[16 + j] = (j ^ 5) * 0.25 - 1.5;
	}
	TAP_CHECK(kq_check_deq(KERN_TYPE_Q4_1, b, want, 32), "q4_1");
	/* d·q is exact in f32 (at most 15 significant bits); only the + m rounds */
	kq_put16(b, 0x2e66);     /* d = 0.0999755859375 */
	kq_put16(b + 2, 0x3c01); /* m = 1.0009765625 */
	for (j = 0; j < 16; j++) {
		want[j] = (double)((float)((float)j * 0.0999755859375f) + 1.0009765625f);
		want[16 + j] = (double)((float)((float)(j ^ 5) * 0.0999755859375f) + 1.0009765625f);
	}
	TAP_CHECK(kq_check_deq(KERN_TYPE_Q4_1, b, want, 32), "q4_1 rounding");
	return TAP_PASS;
}

static enum tap_result
test_dequant_q8_0(void)
{
	uint8_t b[34];
	double want[32];
	int j;

	kq_put16(b, 0x3000); /* 0.125 */
	for (j = 0; j < 32; j++) {
		int q = j * 8 - 128;
		b[2 + j] = (uint8_t)(int8_t)q;
		want[j] = q * 0.125;
	}
	TAP_CHECK(kq_check_deq(KERN_TYPE_Q8_0, b, want, 32), "q8_0");
	return TAP_PASS;
}

static enum tap_result
test_dequant_q4_k(void)
{
	uint8_t b[144];
	double want[256];
	int sc[8], mn[8], k, g, l;
	uint8_t q[256];

	memset(b, 0, sizeof(b));
	kq_put16(b, 0x3c00);     /* d = 1 */
	kq_put16(b + 2, 0x3800); /* dmin = 0.5 */
	for (k = 0; k < 8; k++) { /* 6-bit values exercising the high bits */
		sc[k] = (k * 9 + 5) & 63;
		mn[k] = (63 - k * 7) & 63;
	}
	/* pack per the spec: k < 4 in the low 6 bits of bytes k and k+4; k >= 4
	 * as low nibbles in byte k+4 plus the top 2 bits of bytes k-4 and k */
	for (k = 0; k < 4; k++) {
		b[4 + k] = (uint8_t)((sc[k] & 63) | ((sc[k + 4] >> 4) << 6));
		b[4 + k + 4] = (uint8_t)((mn[k] & 63) | ((mn[k + 4] >> 4) << 6));
		b[4 + k + 8] = (uint8_t)((sc[k + 4] & 15) | ((mn[k + 4] & 15) << 4));
	}
	for (k = 0; k < 256; k++)
		q[k] = (uint8_t)((k * 5 + k / 64) & 15);
	for (g = 0; g < 4; g++)
		for (l = 0; l < 32; l++)
			b[16 + 32 * g + l] = (uint8_t)(q[64 * g + l] | (q[64 * g + 32 + l] << 4));
	for (k = 0; k < 256; k++)
		want[k] = 1.0 * sc[k / 32] * q[k] - 0.5 * mn[k / 32];
	TAP_CHECK(kq_check_deq(KERN_TYPE_Q4_K, b, want, 256), "q4_K");
	return TAP_PASS;
}

static enum tap_result
test_dequant_q6_k(void)
{
	uint8_t b[2 * 210];
	double want[512];
	int e, blk;

	memset(b, 0, sizeof(b));
	for (blk = 0; blk < 2; blk++) {
		uint8_t *p = b + 210 * blk;
		int8_t scales[16];
		uint8_t q[256];
		kq_put16(p + 208, blk ? 0x2c00 : 0xac00); /* ±0.0625 */
		for (e = 0; e < 16; e++) {
			scales[e] = (int8_t)(e * 17 - 128 + blk);
			p[192 + e] = (uint8_t)scales[e];
		}
		for (e = 0; e < 256; e++)
			q[e] = (uint8_t)((e * 13 + blk * 7) & 63);
		/* element e = 128h + 32k + l: low nibble in ql[64h + l (+32 for odd k)]
		 * (high half of the byte for k >= 2), high 2 bits at bit 2k of
		 * qh[32h + l] */
		for (e = 0; e < 256; e++) {
			int h = e / 128, k = (e % 128) / 32, l = e % 32;
			int qli = 64 * h + l + (k & 1) * 32;
			p[qli] |= (uint8_t)((q[e] & 15) << (k >= 2 ? 4 : 0));
			p[128 + 32 * h + l] |= (uint8_t)((q[e] >> 4) << (2 * k));
		}
		for (e = 0; e < 256; e++)
			want[256 * blk + e] = (blk ? 0.0625 : -0.0625) * scales[e / 16] * (q[e] - 32);
	}
	TAP_CHECK(kq_check_deq(KERN_TYPE_Q6_K, b, want, 512), "q6_K");
	return TAP_PASS;
}

static enum tap_result
test_dequant_plain(void)
{
	uint8_t b[64 * 4];
	double want[64];
	int i;

	for (i = 0; i < 37; i++) {
		uint16_t h = (uint16_t)(i * 1777 % 0x7c00); /* finite, both signs */
		if (i & 1)
			h |= 0x8000;
		kq_put16(b + 2 * i, h);
		want[i] = kq_f16_value(h);
	}
	TAP_CHECK(kq_check_deq(KERN_TYPE_F16, b, want, 37), "f16");
	for (i = 0; i < 37; i++) {
		float f = th_uniform(&kq_rng_state, -100.0f, 100.0f);
		uint16_t h = (uint16_t)(kv_f32_bits(f) >> 16);
		kq_put16(b + 2 * i, h);
		want[i] = (double)kv_bits_f32((uint32_t)h << 16);
	}
	TAP_CHECK(kq_check_deq(KERN_TYPE_BF16, b, want, 37), "bf16");
	for (i = 0; i < 37; i++) {
		float f = th_uniform(&kq_rng_state, -100.0f, 100.0f);
		memcpy(b + 4 * i, &f, 4);
		want[i] = (double)f;
	}
	TAP_CHECK(kq_check_deq(KERN_TYPE_F32, b, want, 37), "f32");
	return TAP_PASS;
}

/* ------------------------------------------------------------------------ */
/* Activation quantization                                                   */

/* Round half to even, written out. */
static float
kq_round_even(float v)
{
	float f = floorf(v), diff = v - f;
	if (diff > 0.5f)
		return f + 1.0f;
	if (diff < 0.5f)
		return f;
	return fmodf(f, 2.0f) == 0.0f ? f : f + 1.0f;
}

/* The straightforward version of the AVX2 arithmetic of ggml-cpu. */
static void
kq_ref_quant_block(const float *x, uint16_t *d16, uint16_t *s16, int8_t *q)
{
	float amax = 0.0f, d, id;
	int j, sum = 0;

	for (j = 0; j < 32; j++)
		amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
	d = amax / 127.0f;
	id = amax != 0.0f ? 127.0f / amax : 0.0f;
	for (j = 0; j < 32; j++) {
		q[j] = (int8_t)kq_round_even(x[j] * id);
		sum += q[j];
	}
	*d16 = kern_f32_to_f16(d);
	*s16 = kern_f32_to_f16(d * (float)sum);
}

#if KQ_X86
/* One block the way ggml-cpu's quantize_row_q8_1 does it with AVX2, written
 * out with intrinsics: the machine's own rounding instruction decides ties. */
__attribute__((target("avx2,f16c"))) static void
kq_simd_quant_block(const float *x, uint16_t *d16, uint16_t *s16, int8_t *q)
{
	const __m256 sign = _mm256_set1_ps(-0.0f);
	__m256 v[4], mx = _mm256_setzero_ps();
	__m128 m4;
	int32_t iv[32];
	float amax, d, id;
	int j, sum = 0;

	for (j = 0; j < 4; j++) {
		v[j] = _mm256_loadu_ps(x + 8 * j);
		mx = _mm256_max_ps(mx, _mm256_andnot_ps(sign, v[j]));
	}
	m4 = _mm_max_ps(_mm256_extractf128_ps(mx, 1), _mm256_castps256_ps128(mx));
	m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
	m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
	amax = _mm_cvtss_f32(m4);
	d = amax / 127.0f;
	id = amax != 0.0f ? 127.0f / amax : 0.0f;
	for (j = 0; j < 4; j++) {
		__m256 r = _mm256_round_ps(_mm256_mul_ps(v[j], _mm256_set1_ps(id)),
		    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
		_mm256_storeu_si256((__m256i *)(void *)(iv + 8 * j), _mm256_cvtps_epi32(r));
	}
	for (j = 0; j < 32; j++) {
		q[j] = (int8_t)iv[j];
		sum += iv[j];
	}
	*d16 = (uint16_t)_cvtss_sh(d, 0);
	*s16 = (uint16_t)_cvtss_sh(d * (float)sum, 0);
}
#endif

/* Fill 32 floats with a test pattern of the given kind. */
static void
kq_fill_block(float *x, int kind)
{
	int j;
	for (j = 0; j < 32; j++) {
		switch (kind % 5) {
		case 0:
			x[j] = th_uniform(&kq_rng_state, -3.0f, 3.0f);
			break;
		case 1:
			x[j] = th_uniform(&kq_rng_state, -1e-3f, 1e-3f) * (j == 7 ? 1000.0f : 1.0f);
			break;
		case 2: /* integers with amax 127: id = 1, many exact ties */
			x[j] = j == 0 ? 127.0f : (float)((int)(kq_rand() % 255) - 127) / 2.0f;
			break;
		case 3:
			x[j] = 0.0f;
			break;
		default:
			x[j] = th_uniform(&kq_rng_state, -60000.0f, 60000.0f);
			break;
		}
	}
}

/* Q8_1 and Q8_0 quantization at the current level against the test's own
 * versions; returns the number of exact ties met, or -1 on a mismatch. */
static int
kq_check_quant(void)
{
	float x[32 * 64];
	struct kern_block_q8_1 b1[64];
	struct kern_block_q8_0 b0[64];
	int i, j, n_ties = 0;
	static const float tie[32] = { 127.0f, 2.5f, -3.5f, 0.5f, -0.5f, 1.5f, 126.5f };

	/* ties go to even: 2.5 → 2, −3.5 → −4, 0.5 → 0, 1.5 → 2 */
	kern_quant_row_q8_1(tie, b1, 32);
	if (!(b1[0].qs[0] == 127 && b1[0].qs[1] == 2 && b1[0].qs[2] == -4 && b1[0].qs[3] == 0 &&
	    b1[0].qs[4] == 0 && b1[0].qs[5] == 2 && b1[0].qs[6] == 126) ||
	    b1[0].d != kern_f32_to_f16(1.0f) ||
	    b1[0].s != kern_f32_to_f16(127.0f + 2 - 4 + 0 + 0 + 2 + 126)) {
		printf("#   ties: %d %d %d %d %d %d %d\n", b1[0].qs[0], b1[0].qs[1], b1[0].qs[2],
		    b1[0].qs[3], b1[0].qs[4], b1[0].qs[5], b1[0].qs[6]);
		return -1;
	}
	kq_rng_state = 42;
	for (i = 0; i < 64; i++)
		kq_fill_block(x + 32 * i, i);
	kern_quant_row_q8_1(x, b1, 32 * 64);
	kern_quant_row_q8_0(x, b0, 32 * 64);
	for (i = 0; i < 64; i++) {
		uint16_t d16, s16;
		int8_t q[32];
		kq_ref_quant_block(x + 32 * i, &d16, &s16, q);
		if (b1[i].d != d16 || b0[i].d != d16 || b1[i].s != s16 ||
		    memcmp(b1[i].qs, q, 32) != 0 || memcmp(b0[i].qs, q, 32) != 0) {
			printf("#   block %d: d %04x/%04x s %04x want d %04x s %04x\n", i, b1[i].d,
			    b0[i].d, b1[i].s, d16, s16);
			return -1;
		}
		for (j = 0; j < 32; j++) /* kind 2 has id = 1: halves are ties */
			n_ties += i % 5 == 2 && fabsf(x[32 * i + j] - truncf(x[32 * i + j])) == 0.5f;
#if KQ_X86
		if (kq_have_f16c()) {
			kq_simd_quant_block(x + 32 * i, &d16, &s16, q);
			if (b1[i].d != d16 || b1[i].s != s16 || memcmp(b1[i].qs, q, 32) != 0) {
				printf("#   block %d differs from the AVX2 formulation\n", i);
				return -1;
			}
		}
#endif
	}
	if (b1[3].d != 0 || b1[3].s != 0 || b1[3].qs[5] != 0) {
		printf("#   zero block\n");
		return -1;
	}
	return n_ties;
}

static enum tap_result
test_quant_q8(void)
{
	int l, ties;

	for (l = 0; l < kq_n_levels(); l++) {
		kern_cpu_force_simd(l);
		ties = kq_check_quant();
		kern_cpu_force_simd(KERN_CPU_SIMD_AUTO);
		TAP_CHECK(ties >= 0, "quantization at %s", kq_level_name(l));
		tap_diag("%s: %d exact ties checked", kq_level_name(l), ties);
	}
	return TAP_PASS;
}

/* Q8_K by ggml's quantize_row_q8_K_ref as its text reads, written apart
 * from quant.c (rintf for nearest_int: both round half to even). */
static void
kq_ref_quant_q8_k(const float *x, struct kern_block_q8_k *y)
{
	float amax = 0.0f, max = 0.0f, iscale;
	int j;

	memset(y, 0, sizeof(*y));
	for (j = 0; j < 256; j++)
		if (fabsf(x[j]) > amax) {
			amax = fabsf(x[j]);
			max = x[j];
		}
	if (amax == 0.0f)
		return;
	iscale = -127.0f / max;
	for (j = 0; j < 256; j++) {
		float v = rintf(iscale * x[j]);
		y->qs[j] = (int8_t)(v > 127.0f ? 127 : (int)v);
		y->bsums[j / 16] = (int16_t)(y->bsums[j / 16] + y->qs[j]);
	}
	y->d = 1.0f / iscale;
}

/* Blocks of every kind kq_fill_block makes, a zero block, a block whose
 * largest |x| is negative and one with ±max ties, and exact half-way
 * products; the bytes must equal the reference's. */
static enum tap_result
test_quant_q8_k(void)
{
	float x[256];
	struct kern_block_q8_k got, want;
	int kind, j, rep, ties = 0;

	for (kind = 0; kind < 12; kind++)
		for (rep = 0; rep < 20; rep++) {
			for (j = 0; j < 256; j += 32)
				kq_fill_block(x + j, (kind + j / 32) % 8);
			if (kind == 8)
				memset(x, 0, sizeof(x));
			if (kind == 9)
				x[17] = -50.0f;
			if (kind == 10) { /* ±127 ties: the first decides the sign */
				x[3] = 127.0f;
				x[200] = -127.0f;
			}
			if (kind == 11) { /* iscale = -1: x = k + 0.5 are exact ties */
				for (j = 0; j < 256; j++)
					x[j] = (float)((j % 254) - 127) + (j & 1 ? 0.5f : 0.0f);
				x[0] = 127.0f;
				x[255] = 0.0f;
				ties += 128;
			}
			kern_quant_row_q8_k(x, &got, 256);
			kq_ref_quant_q8_k(x, &want);
			TAP_CHECK(memcmp(&got, &want, sizeof(got)) == 0, "kind %d rep %d", kind, rep);
		}
	tap_diag("q8_K: %d exact ties checked", ties);
	return TAP_PASS;
}

/* ------------------------------------------------------------------------ */
/* Dot products                                                              */

/* Exact (double) value of row · act for the pairings of kern_vec_dot, and
 * Σ|terms| for the tolerance. */
static double
kq_exact_dot(enum kern_type t, const uint8_t *row, const void *act, int64_t n, double *mag)
{
	float *w = malloc((size_t)n * sizeof(float));
	double s = 0.0, m = 0.0;
	int64_t i, ib;

	if (!w) {
		*mag = 0.0;
		return NAN;
	}
	kern_dequant_row(t, row, w, n);
	if (t == KERN_TYPE_Q4_1 || t == KERN_TYPE_Q5_1) {
		const struct kern_block_q8_1 *y = act;
		const int five = t == KERN_TYPE_Q5_1;
		for (ib = 0; ib < n / 32; ib++) {
			const uint8_t *b = row + (five ? 24 : 20) * ib, *qs = b + (five ? 8 : 4);
			double dw = kern_f16_to_f32((uint16_t)(b[0] | b[1] << 8));
			double mw = kern_f16_to_f32((uint16_t)(b[2] | b[3] << 8));
			double dy = kern_f16_to_f32(y[ib].d), sy = kern_f16_to_f32(y[ib].s);
			long isum = 0;
			for (i = 0; i < 32; i++) {
				int qw = i < 16 ? qs[i] & 15 : qs[i - 16] >> 4;
				if (five) /* bit i of the little-endian qh at b + 4 */
					qw |= ((b[4 + i / 8] >> (i % 8)) & 1) << 4;
				isum += (long)qw * y[ib].qs[i];
			}
			s += dw * dy * (double)isum + mw * sy;
			m += fabs(dw * dy * (double)isum) + fabs(mw * sy);
		}
	} else if (t == KERN_TYPE_Q4_0 || t == KERN_TYPE_Q5_0 || t == KERN_TYPE_Q8_0) {
		/* w = q·d_w exactly (dequantization of these types is exact) */
		const struct kern_block_q8_0 *y = act;
		for (i = 0; i < n; i++) {
			double v = (double)w[i] * kern_f16_to_f32(y[i / 32].d) * y[i / 32].qs[i % 32];
			s += v;
			m += fabs(v);
		}
	} else if (kern_vec_dot_act_type(t) == KERN_TYPE_Q8_K) {
		/* Σ w·d_y·q_y with w as dequantized: exact but for Q6_K's
		 * (d·sc)·q, which may round once (a relative 2^-24) */
		const struct kern_block_q8_k *y = act;
		for (i = 0; i < n; i++) {
			double v = (double)w[i] * y[i / 256].d * y[i / 256].qs[i % 256];
			s += v;
			m += fabs(v);
		}
	} else {
		const float *y = act;
		for (i = 0; i < n; i++) {
			s += (double)w[i] * y[i];
			m += fabs((double)w[i] * y[i]);
		}
	}
	free(w);
	*mag = m;
	return s;
}

/* Activation buffer for type t's pairing, from f32 x. */
static void
kq_make_act(enum kern_type t, const float *x, int64_t n, void *act)
{
	kern_quant_row_act(kern_vec_dot_act_type(t), x, act, n);
}

/* The rows copied to an exact-size heap buffer with no padding between
 * them, and the activations likewise, so ASan catches any read past the last
 * block; results must equal want[] (vec_dot) and the padded run's
 * dequantization. */
static int
kq_check_tight(enum kern_type t, const uint8_t *rows, size_t rb, int64_t n_rows,
    const void *act, int64_t n, const float *want)
{
	size_t tb = kern_type_row_bytes(t, n);
	enum kern_type at = kern_vec_dot_act_type(t);
	size_t ab = at == KERN_TYPE_F32 ? (size_t)n * sizeof(float) : kern_type_row_bytes(at, n);
	uint8_t *tight = malloc(tb * (size_t)n_rows);
	void *tact = malloc(ab);
	float *got = malloc((size_t)n_rows * sizeof(float));
	float *deq = malloc((size_t)n * (size_t)n_rows * sizeof(float));
	float *ref = malloc((size_t)n * sizeof(float));
	int64_t r;
	int ok = 1;

	for (r = 0; r < n_rows; r++)
		memcpy(tight + r * tb, rows + r * rb, tb);
	memcpy(tact, act, ab);
	kern_cpu_vec_dot_rows(t, tight, tb, n_rows, tact, n, got);
	kern_cpu_dequant_rows(t, tight, tb, n_rows, n, deq);
	for (r = 0; r < n_rows; r++) {
		kern_dequant_row(t, rows + r * rb, ref, n);
		ok &= memcmp(&got[r], &want[r], sizeof(float)) == 0;
		ok &= memcmp(deq + r * n, ref, (size_t)n * sizeof(float)) == 0;
	}
	free(tight);
	free(tact);
	free(got);
	free(deq);
	free(ref);
	return ok;
}

/* Rows of type t with n elements: each level against scalar and the exact
 * value; vec_dot_rows against single-row vec_dot; dequant_rows against
 * dequant_row.  Rows are stored unaligned (+1 byte) with a padded stride. */
static int
kq_check_type(enum kern_type t, int64_t n)
{
	enum { NR = 13 };
	size_t rb = kern_type_row_bytes(t, n) + 6;
	uint8_t *buf = malloc(rb * NR + 1), *rows = buf + 1;
	float *x = malloc((size_t)n * sizeof(float));
	void *act = malloc((size_t)n * sizeof(float) + 64);
	float *deq = malloc((size_t)n * NR * sizeof(float));
	float *deq_ref = malloc((size_t)n * sizeof(float));
	float scalar[NR], got[NR];
	static const int64_t counts[] = { 1, 2, 3, 4, 5, 7, 8, 13 };
	int64_t i, r;
	int l, c, ok = 0;

	kq_rand_rows(t, rows, rb, NR, n);
	for (i = 0; i < n; i++)
		x[i] = th_uniform(&kq_rng_state, -2.0f, 2.0f);
	kq_make_act(t, x, n, act);

	kern_cpu_force_simd(KERN_CPU_SIMD_SCALAR);
	for (r = 0; r < NR; r++) {
		double mag, want = kq_exact_dot(t, rows + r * rb, act, n, &mag);
		scalar[r] = kern_vec_dot(t, rows + r * rb, act, n);
		if (!(fabs(scalar[r] - want) <= KQ_REL * mag)) {
			printf("#   %s n=%lld row %lld scalar %.9g exact %.9g (mag %g)\n",
			    kern_type_name(t), (long long)n, (long long)r, (double)scalar[r], want, mag);
			goto out;
		}
	}
	for (l = 0; l < kq_n_levels(); l++) {
		kern_cpu_force_simd(l);
		for (r = 0; r < NR; r++) {
			double mag;
			float v = kern_vec_dot(t, rows + r * rb, act, n);
			(void)kq_exact_dot(t, rows + r * rb, act, n, &mag);
			if (!(fabs(v - scalar[r]) <= KQ_REL * mag)) {
				printf("#   %s n=%lld %s row %lld: %.9g scalar %.9g (mag %g)\n",
				    kern_type_name(t), (long long)n, kq_level_name(l), (long long)r,
				    (double)v, (double)scalar[r], mag);
				goto out;
			}
			got[r] = v;
		}
		for (c = 0; c < (int)(sizeof(counts) / sizeof(counts[0])); c++) {
			float multi[NR];
			kern_cpu_vec_dot_rows(t, rows, rb, counts[c], act, n, multi);
			if (memcmp(multi, got, (size_t)counts[c] * sizeof(float)) != 0) {
				printf("#   %s n=%lld %s: vec_dot_rows(%lld rows) != vec_dot\n",
				    kern_type_name(t), (long long)n, kq_level_name(l),
				    (long long)counts[c]);
				goto out;
			}
		}
		kern_cpu_dequant_rows(t, rows, rb, NR, n, deq);
		for (r = 0; r < NR; r++) {
			kern_dequant_row(t, rows + r * rb, deq_ref, n);
			if (memcmp(deq + r * n, deq_ref, (size_t)n * sizeof(float)) != 0) {
				printf("#   %s n=%lld %s: dequant_rows row %lld differs\n",
				    kern_type_name(t), (long long)n, kq_level_name(l), (long long)r);
				goto out;
			}
		}
		if (!kq_check_tight(t, rows, rb, NR, act, n, got)) {
			printf("#   %s n=%lld %s: tight buffers differ\n", kern_type_name(t),
			    (long long)n, kq_level_name(l));
			goto out;
		}
	}
	ok = 1;
out:
	kern_cpu_force_simd(KERN_CPU_SIMD_AUTO);
	free(buf);
	free(x);
	free(act);
	free(deq);
	free(deq_ref);
	return ok;
}

static enum tap_result
test_vec_dot_q4_1(void)
{
	TAP_CHECK(kq_check_type(KERN_TYPE_Q4_1, 32), "n=32");
	TAP_CHECK(kq_check_type(KERN_TYPE_Q4_1, 576), "n=576");
	TAP_CHECK(kq_check_type(KERN_TYPE_Q4_1, 1536), "n=1536");
	return TAP_PASS;
}

static enum tap_result
test_vec_dot_q4_0(void)
{
	TAP_CHECK(kq_check_type(KERN_TYPE_Q4_0, 32), "n=32");
	TAP_CHECK(kq_check_type(KERN_TYPE_Q4_0, 576), "n=576");
	TAP_CHECK(kq_check_type(KERN_TYPE_Q4_0, 1536), "n=1536");
	return TAP_PASS;
}

static enum tap_result
test_vec_dot_q8_0(void)
{
	TAP_CHECK(kq_check_type(KERN_TYPE_Q8_0, 32), "n=32");
	TAP_CHECK(kq_check_type(KERN_TYPE_Q8_0, 576), "n=576");
	TAP_CHECK(kq_check_type(KERN_TYPE_Q8_0, 1536), "n=1536");
	return TAP_PASS;
}

static enum tap_result
test_vec_dot_q5(void)
{
	TAP_CHECK(kq_check_type(KERN_TYPE_Q5_0, 32), "q5_0 n=32");
	TAP_CHECK(kq_check_type(KERN_TYPE_Q5_0, 576), "q5_0 n=576");
	TAP_CHECK(kq_check_type(KERN_TYPE_Q5_0, 1536), "q5_0 n=1536");
	TAP_CHECK(kq_check_type(KERN_TYPE_Q5_1, 32), "q5_1 n=32");
	TAP_CHECK(kq_check_type(KERN_TYPE_Q5_1, 576), "q5_1 n=576");
	TAP_CHECK(kq_check_type(KERN_TYPE_Q5_1, 1536), "q5_1 n=1536");
	return TAP_PASS;
}

/* Every quantized type on rows with extreme scales (±65504, ±2^-24) and on
 * all-zero rows (the dot must be exactly 0: the tolerance is 0 there). */
static enum tap_result
test_vec_dot_edges(void)
{
	static const enum kern_type ts[] = { KERN_TYPE_Q4_0, KERN_TYPE_Q4_1, KERN_TYPE_Q5_0,
		KERN_TYPE_Q5_1, KERN_TYPE_Q8_0, KERN_TYPE_Q2_K, KERN_TYPE_Q3_K, KERN_TYPE_Q4_K,
		KERN_TYPE_Q5_K, KERN_TYPE_Q6_K, KERN_TYPE_F16, KERN_TYPE_BF16 };
	static const enum kq_mode modes[] = { KQ_HUGE, KQ_TINY, KQ_ZERO };
	static const char *const names[] = { "huge scales", "tiny scales", "zero rows" };
	size_t i, m;
	int ok;

	for (m = 0; m < sizeof(modes) / sizeof(modes[0]); m++)
		for (i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
			kq_mode = modes[m];
			ok = kq_check_type(ts[i], 512);
			kq_mode = KQ_NORMAL;
			TAP_CHECK(ok, "%s %s", kern_type_name(ts[i]), names[m]);
		}
	return TAP_PASS;
}

static enum tap_result
test_vec_dot_kquants(void)
{
	TAP_CHECK(kq_check_type(KERN_TYPE_Q2_K, 256), "q2_K n=256");
	TAP_CHECK(kq_check_type(KERN_TYPE_Q2_K, 1536), "q2_K n=1536");
	TAP_CHECK(kq_check_type(KERN_TYPE_Q3_K, 256), "q3_K n=256");
	TAP_CHECK(kq_check_type(KERN_TYPE_Q3_K, 1536), "q3_K n=1536");
	TAP_CHECK(kq_check_type(KERN_TYPE_Q5_K, 256), "q5_K n=256");
	TAP_CHECK(kq_check_type(KERN_TYPE_Q5_K, 1536), "q5_K n=1536");
	TAP_CHECK(kq_check_type(KERN_TYPE_Q4_K, 256), "q4_K n=256");
	TAP_CHECK(kq_check_type(KERN_TYPE_Q4_K, 512), "q4_K n=512");
	TAP_CHECK(kq_check_type(KERN_TYPE_Q4_K, 1536), "q4_K n=1536");
	TAP_CHECK(kq_check_type(KERN_TYPE_Q6_K, 256), "q6_K n=256");
	TAP_CHECK(kq_check_type(KERN_TYPE_Q6_K, 512), "q6_K n=512");
	TAP_CHECK(kq_check_type(KERN_TYPE_Q6_K, 1536), "q6_K n=1536");
	return TAP_PASS;
}

/* kern_cpu_vec_dot_tile (the prefill's matmul) of type t, n elements: at
 * every level, every (row, token) bit for bit kern_vec_dot's at that level
 * (the tile kernels share the one-token kernels' integer sums and f32
 * steps), so within KQ_REL·Σ|terms| of the exact value; at AVX-512 with
 * AMX off and, where the CPU has it, on (Q4_K/Q5_K: 16 rows × 16 tokens);
 * token counts and row counts around the tile sizes (4 tokens at AVX2, 8 for
 * its K-quants and at AVX-512, 16 on AMX; 4 rows for Q4_0/Q4_1/Q5_0/Q5_1/
 * Q8_0, 16 on AMX), odd strides, and nothing written outside the rows and
 * tokens asked for; where the tile takes dealt quants (Q4_K at AVX2), those
 * too, every token on the tile. */
static int
kq_check_tile(enum kern_type t, int64_t n)
{
	enum { NR = 35, NT = 34, OS = NR + 3 };
	static const int64_t row_counts[] = { 1, 3, 4, 5, 8, 13, 15, 16, 17, 33, 35 };
	static const int64_t tok_counts[] = { 1, 3, 4, 5, 7, 8, 11, 15, 16, 17, 32, 34 };
	enum kern_type at = kern_vec_dot_act_type(t);
	size_t rb = kern_type_row_bytes(t, n) + 6;
	size_t ab = (at == KERN_TYPE_F32 ? (size_t)n * sizeof(float) : kern_type_row_bytes(at, n)) + 4;
	uint8_t *buf = malloc(rb * NR + 1), *rows = buf + 1;
	size_t db = kern_cpu_q8k_dealt_row_bytes(n);
	uint8_t *acts = malloc(ab * NT), *dealt = aligned_alloc(64, db * NT + 64);
	float *x = malloc((size_t)n * sizeof(float));
	float *out = malloc((size_t)OS * NT * sizeof(float));
	float want[NT][NR];
	int64_t i, r, k;
	int l, amx, a, b, ok = 0;

	kq_rand_rows(t, rows, rb, NR, n);
	for (k = 0; k < NT; k++) {
		for (i = 0; i < n; i++)
			x[i] = th_uniform(&kq_rng_state, -2.0f, 2.0f);
		kq_make_act(t, x, n, acts + (size_t)k * ab);
	}
	for (l = 0; l < kq_n_levels(); l++) {
		kern_cpu_force_simd(l);
		for (k = 0; k < NT; k++)
			for (r = 0; r < NR; r++) {
				double mag, ex = kq_exact_dot(t, rows + r * rb, acts + (size_t)k * ab, n, &mag);
				want[k][r] = kern_vec_dot(t, rows + r * rb, acts + (size_t)k * ab, n);
				if (!(fabs(want[k][r] - ex) <= KQ_REL * mag)) {
					printf("#   %s n=%lld %s: vec_dot %.9g exact %.9g\n", kern_type_name(t),
					    (long long)n, kq_level_name(l), (double)want[k][r], ex);
					goto out;
				}
			}
		/* the dealt form for the tiles that take it (Q4_K at AVX2) */
		if (kern_cpu_vec_dot_tile_dealt(t))
			kern_cpu_q8k_deal_rows(acts, ab, dealt, db, NT, n);
		/* amx 0: off; 1: on, at AVX-512 where the CPU has it; 2: the
		 * dealt quants */
		for (amx = 0; amx < 3; amx++) {
			if (amx == 2 ? !kern_cpu_vec_dot_tile_dealt(t) :
			    kern_cpu_force_amx(amx) != 0 || (amx && !kern_cpu_amx_on()))
				continue;
			if (amx == 2)
				kern_cpu_force_amx(0);
			for (a = 0; a < (int)(sizeof(row_counts) / sizeof(row_counts[0])); a++)
				for (b = 0; b < (int)(sizeof(tok_counts) / sizeof(tok_counts[0])); b++) {
					int64_t nr = row_counts[a], nt = tok_counts[b];
					for (i = 0; i < (int64_t)OS * NT; i++)
						out[i] = -12345.0f;
					kern_cpu_vec_dot_tile(t, rows, rb, nr, amx == 2 ? dealt : acts,
					    amx == 2 ? db : ab, nt, n, out, OS, amx == 2);
					for (k = 0; k < NT; k++)
						for (r = 0; r < OS; r++) {
							float g = out[k * OS + r];
							int inside = k < nt && r < nr;
							if (inside ? memcmp(&g, &want[k][r], sizeof(g)) != 0
							    : g != -12345.0f) {
								printf("#   %s n=%lld %s%s: %lld rows x %lld tokens: "
								    "[tok %lld][row %lld] %.9g want %.9g\n",
								    kern_type_name(t), (long long)n, kq_level_name(l),
								    amx == 2 ? " dealt" : amx ? " amx" : "",
								    (long long)nr, (long long)nt,
								    (long long)k, (long long)r, (double)g,
								    inside ? (double)want[k][r] : -12345.0);
								goto out;
							}
						}
				}
		}
	}
	ok = 1;
out:
	kern_cpu_force_amx(-1);
	kern_cpu_force_simd(KERN_CPU_SIMD_AUTO);
	free(buf);
	free(acts);
	free(dealt);
	free(x);
	free(out);
	return ok;
}

static enum tap_result
test_vec_dot_tile(void)
{
	static const enum kern_type ts[] = { KERN_TYPE_Q4_1, KERN_TYPE_Q8_0, KERN_TYPE_Q4_K,
		KERN_TYPE_Q5_K, KERN_TYPE_Q6_K, KERN_TYPE_Q4_0, KERN_TYPE_Q5_0, KERN_TYPE_Q5_1,
		KERN_TYPE_Q2_K, KERN_TYPE_Q3_K, KERN_TYPE_F16 };
	/* the types with tile kernels at AVX2 and AVX-512: their check above
	 * compares the tiles, not the one-token path with itself */
	static const enum kern_type tiled[] = { KERN_TYPE_Q4_0, KERN_TYPE_Q4_1, KERN_TYPE_Q5_0,
		KERN_TYPE_Q5_1, KERN_TYPE_Q8_0, KERN_TYPE_Q2_K, KERN_TYPE_Q3_K, KERN_TYPE_Q4_K,
		KERN_TYPE_Q5_K, KERN_TYPE_Q6_K };
	size_t i;
	int l;

	for (l = KERN_CPU_SIMD_AVX2; l < kq_n_levels(); l++)
		for (i = 0; i < sizeof(tiled) / sizeof(tiled[0]); i++) {
			int nt;
			kern_cpu_force_simd(l);
			nt = kern_cpu_vec_dot_tile_tokens(tiled[i]);
			kern_cpu_force_simd(KERN_CPU_SIMD_AUTO);
			/* AVX2: 8 for the K-quants with a 256-bit tail (Q4_K, Q5_K, Q6_K) */
			TAP_CHECK(nt == (l >= KERN_CPU_SIMD_AVX512 || tiled[i] == KERN_TYPE_Q4_K ||
			    tiled[i] == KERN_TYPE_Q5_K || tiled[i] == KERN_TYPE_Q6_K ? 8 : 4),
			    "%s %s: %d tokens per tile",
			    kern_type_name(tiled[i]), kq_level_name(l), nt);
		}
	/* AMX: on by default where the CPU and OS have it, never below AVX-512 */
	if (kern_cpu_force_amx(1) != 0) {
		printf("# no AMX-INT8 here (CPU or OS): the AMX tiles not checked\n");
	} else {
		TAP_CHECK(kern_cpu_force_amx(-1) == 0 && kern_cpu_amx_on(), "AMX on by default");
		kern_cpu_force_simd(KERN_CPU_SIMD_AVX2);
		TAP_CHECK(!kern_cpu_amx_on(), "AMX off at AVX2");
		kern_cpu_force_simd(KERN_CPU_SIMD_AUTO);
		TAP_CHECK(kern_cpu_force_amx(0) == 0 && !kern_cpu_amx_on(), "AMX forced off");
		kern_cpu_force_amx(-1);
	}
	for (i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
		TAP_CHECK(kq_check_tile(ts[i], 256), "%s n=256", kern_type_name(ts[i]));
		TAP_CHECK(kq_check_tile(ts[i], 1536), "%s n=1536", kern_type_name(ts[i]));
	}
	return TAP_PASS;
}

static enum tap_result
test_vec_dot_plain(void)
{
	static const int64_t ns[] = { 1, 7, 32, 37, 576, 1536, 1000 };
	size_t i;
	for (i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		TAP_CHECK(kq_check_type(KERN_TYPE_F16, ns[i]), "f16 n=%lld", (long long)ns[i]);
		TAP_CHECK(kq_check_type(KERN_TYPE_BF16, ns[i]), "bf16 n=%lld", (long long)ns[i]);
	}
	return TAP_PASS;
}

/* F32 rows need 4-byte alignment, so they get their own check. */
static enum tap_result
test_dot_f32(void)
{
	static const int64_t ns[] = { 0, 1, 7, 15, 16, 17, 63, 64, 65, 576, 1536, 1001 };
	float a[1536], b[1536];
	size_t k;
	int l;

	for (k = 0; k < 1536; k++) {
		a[k] = th_uniform(&kq_rng_state, -1.0f, 1.0f);
		b[k] = th_uniform(&kq_rng_state, -1.0f, 1.0f);
	}
	for (k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
		double want = 0.0, mag = 0.0;
		int64_t i;
		for (i = 0; i < ns[k]; i++) {
			want += (double)a[i] * b[i];
			mag += fabs((double)a[i] * b[i]);
		}
		for (l = 0; l < kq_n_levels(); l++) {
			float got, got_vd;
			kern_cpu_force_simd(l);
			got = kern_cpu_dot_f32(a, b, ns[k]);
			got_vd = ns[k] ? kern_vec_dot(KERN_TYPE_F32, a, b, ns[k]) : 0.0f;
			kern_cpu_force_simd(KERN_CPU_SIMD_AUTO);
			TAP_CHECK(fabs(got - want) <= KQ_REL * mag, "%s n=%lld: %.9g want %.9g",
			    kq_level_name(l), (long long)ns[k], (double)got, want);
			TAP_CHECK(ns[k] == 0 || got_vd == got, "vec_dot f32");
		}
	}
	return TAP_PASS;
}

static enum tap_result
test_levels(void)
{
	int l;
	TAP_CHECK(kern_cpu_force_simd(kern_cpu_simd_detect() + 1) == -1, "unsupported level");
	TAP_CHECK(kern_cpu_force_simd(-7) == -1, "bad level");
	for (l = 0; l < kq_n_levels(); l++) {
		TAP_CHECK(kern_cpu_force_simd(l) == 0 && kern_cpu_simd_level() == l, "force %d", l);
		TAP_CHECK(strcmp(kern_simd_name(), kq_level_name(l)) == 0, "name %s", kern_simd_name());
	}
	kern_cpu_force_simd(KERN_CPU_SIMD_AUTO);
	tap_diag("levels: %d (best %s)", kq_n_levels(), kern_simd_name());
	return TAP_PASS;
}

/* ------------------------------------------------------------------------ */
/* The real model                                                            */

/* One weight matrix of the model: all levels agree on the first rows. */
static int
kq_check_tensor(const struct eng_gguf_tensor *w, int64_t n_rows)
{
	int64_t n = w->ne[0], r;
	size_t rb = kern_type_row_bytes(w->type, n);
	float *x = malloc((size_t)n * sizeof(float)), *deq = malloc((size_t)n * sizeof(float));
	void *act = malloc((size_t)n * sizeof(float) + 64);
	float *ref = malloc((size_t)n_rows * sizeof(float)), *got = malloc((size_t)n_rows * sizeof(float));
	float *deq_rows = malloc((size_t)n * 4 * sizeof(float));
	int l, ok = 0;

	for (r = 0; r < n; r++)
		x[r] = th_uniform(&kq_rng_state, -1.0f, 1.0f);
	kq_make_act(w->type, x, n, act);
	kern_cpu_force_simd(KERN_CPU_SIMD_SCALAR);
	kern_cpu_vec_dot_rows(w->type, w->data, rb, n_rows, act, n, ref);
	for (r = 0; r < n_rows; r++) {
		double mag, want = kq_exact_dot(w->type, (const uint8_t *)w->data + r * rb, act, n, &mag);
		if (!(fabs(ref[r] - want) <= KQ_REL * mag)) {
			printf("#   %.*s row %lld scalar %.9g exact %.9g\n", (int)w->name.len,
			    w->name.ptr, (long long)r, (double)ref[r], want);
			goto out;
		}
	}
	for (l = 1; l < kq_n_levels(); l++) {
		kern_cpu_force_simd(l);
		kern_cpu_vec_dot_rows(w->type, w->data, rb, n_rows, act, n, got);
		for (r = 0; r < n_rows; r++) {
			double mag;
			(void)kq_exact_dot(w->type, (const uint8_t *)w->data + r * rb, act, n, &mag);
			if (!(fabs(got[r] - ref[r]) <= KQ_REL * mag)) {
				printf("#   %.*s row %lld %s: %.9g scalar %.9g\n", (int)w->name.len,
				    w->name.ptr, (long long)r, kq_level_name(l), (double)got[r],
				    (double)ref[r]);
				goto out;
			}
		}
		kern_cpu_dequant_rows(w->type, w->data, rb, 4, n, deq_rows);
		for (r = 0; r < 4; r++) {
			kern_dequant_row(w->type, (const uint8_t *)w->data + r * rb, deq, n);
			if (memcmp(deq, deq_rows + r * n, (size_t)n * sizeof(float)) != 0) {
				printf("#   %.*s: dequant_rows differs\n", (int)w->name.len, w->name.ptr);
				goto out;
			}
		}
	}
	ok = 1;
out:
	kern_cpu_force_simd(KERN_CPU_SIMD_AUTO);
	free(x);
	free(deq);
	free(act);
	free(ref);
	free(got);
	free(deq_rows);
	return ok;
}

static enum tap_result
test_real_model(void)
{
	struct eng_gguf *g = NULL;
	const struct eng_gguf_tensor *t;
	char why[256] = "";
	float row[576];
	double ss = 0.0;
	int i;

	if (eng_gguf_open(&g, tap_model_path(), why, sizeof(why)) != 0) {
		tap_diag("no model (%s)", why);
		return TAP_SKIP;
	}
	t = eng_gguf_find_tensor(g, "token_embd.weight");
	TAP_CHECK(t && t->type == KERN_TYPE_Q8_0 && t->ne[0] == 576, "token_embd");
	/* a token's embedding row: finite and of plausible size */
	kern_dequant_row(t->type, (const uint8_t *)t->data + 1000 * kern_type_row_bytes(t->type, 576),
	    row, 576);
	for (i = 0; i < 576; i++) {
		TAP_CHECK(isfinite(row[i]) && fabsf(row[i]) < 10.0f, "embd[%d] = %g", i, row[i]);
		ss += (double)row[i] * row[i];
	}
	TAP_CHECK(ss > 1e-3 && ss < 1e4, "embedding norm² %g", ss);
	TAP_CHECK(kq_check_tensor(t, 301), "token_embd rows");
	t = eng_gguf_find_tensor(g, "blk.0.ffn_down.weight");
	TAP_CHECK(t && t->type == KERN_TYPE_Q4_1 && t->ne[0] == 1536, "ffn_down");
	TAP_CHECK(kq_check_tensor(t, 67), "ffn_down rows");
	t = eng_gguf_find_tensor(g, "blk.29.attn_q.weight");
	TAP_CHECK(t && t->type == KERN_TYPE_Q4_1 && t->ne[0] == 576, "attn_q");
	TAP_CHECK(kq_check_tensor(t, 576), "attn_q rows");
	eng_gguf_close(g);
	return TAP_PASS;
}

/* The Qwen2.5 GGUFs scripts/fetch-model.sh brings (skipped when absent):
 * real blocks from llama.cpp's quantizers.  For each tensor type in the
 * file, the first 2-D tensor of that type: scalar against the exact dot,
 * every level against scalar, dequant_rows against dequant_row. */
static enum tap_result
test_real_qwen(void)
{
	static const char *const files[] = { "models/Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf",
		"models/Qwen2.5-Coder-0.5B-Instruct.gguf" };
	size_t f;
	int64_t i;
	int found = 0;

	for (f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		struct eng_gguf *g = NULL;
		char why[256] = "", types[128] = "";
		int seen[KERN_TYPE_COUNT] = { 0 };
		if (access(files[f], R_OK) != 0)
			continue;
		TAP_CHECK(eng_gguf_open(&g, files[f], why, sizeof(why)) == 0, "%s: %s", files[f], why);
		found++;
		for (i = 0; i < (int64_t)g->n_tensors; i++) {
			const struct eng_gguf_tensor *t = &g->tensors[i];
			if (t->n_dims != 2 || (int)t->type >= KERN_TYPE_COUNT || seen[t->type]++)
				continue;
			TAP_CHECK(kq_check_tensor(t, t->ne[1] < 64 ? t->ne[1] : 64), "%s: %.*s (%s)",
			    files[f], (int)t->name.len, t->name.ptr, kern_type_name(t->type));
			snprintf(types + strlen(types), sizeof(types) - strlen(types), " %s",
			    kern_type_name(t->type));
		}
		tap_diag("%s: checked%s", files[f], types);
		eng_gguf_close(g);
	}
	if (!found) {
		tap_diag("no Qwen2.5 GGUF in models/ (scripts/fetch-model.sh)");
		return TAP_SKIP;
	}
	return TAP_PASS;
}

/* The attention softmax at every SIMD level against exp in double: each
 * probability within |x|·2^-24 + 8·2^-24 relative (x = logit − max is
 * rounded to f32 before exp, which scales its error by |x|; the AVX2
 * polynomial is within 2 ulp of expf; one double sum and one rounding) and
 * 1e-37 absolute (AVX2 flushes exp below e^-87.3 to 0 where libm is
 * subnormal); rows of every tail length, logits spanning 100 below the max. */
static enum tap_result
test_softmax(void)
{
	static float row[1031], ref[1031], x[1031];
	double worst = 0.0;
	int l, n, i;
	uint64_t st = 12345;

	for (l = KERN_CPU_SIMD_SCALAR; l <= kern_cpu_simd_detect(); l++) {
		for (n = 1; n <= 1031; n += n < 40 ? 1 : 97) {
			double mx = -INFINITY, z = 0.0;
			for (i = 0; i < n; i++) {
				st = st * 6364136223846793005ULL + 1442695040888963407ULL;
				row[i] = (float)((double)(st >> 40) / (double)(1 << 24) * 110.0 - 100.0);
				mx = row[i] > mx ? row[i] : mx;
			}
			for (i = 0; i < n; i++)
				z += exp((double)row[i] - mx);
			for (i = 0; i < n; i++) {
				ref[i] = (float)(exp((double)row[i] - mx) / z);
				x[i] = (float)fabs((double)row[i] - mx);
			}
			kern_cpu_force_simd(l);
			kern_cpu_softmax_row(row, n);
			kern_cpu_force_simd(KERN_CPU_SIMD_AUTO);
			for (i = 0; i < n; i++) {
				double e = fabs((double)row[i] - (double)ref[i]);
				TAP_CHECK(e <= (x[i] + 8.0) * 0x1p-24 * ref[i] + 1e-37,
				    "%s n=%d [%d]: %.9g, want %.9g",
				    kq_level_name(l), n, i, row[i], ref[i]);
				if (ref[i] > 1e-30 && e / ref[i] > worst)
					worst = e / ref[i];
			}
		}
	}
	tap_diag("softmax: worst relative error %.2g", worst);
	return TAP_PASS;
}

/* The FFN's gate silu(g)·u at every SIMD level against the same in double:
 * within 16·2^-24 relative (the AVX2 exp is within 2 ulp of expf, then an
 * add, a product, a division and the product with u, each rounded once)
 * and 1e-35 absolute (AVX2 flushes e^-|g| below e^-87.3 to 0, so a gate
 * below −87.3 gives 0 where the exact value is ~1e-36); runs of every tail
 * length, gates from −100 to 40 and the edges. */
static enum tap_result
test_silu(void)
{
	static const float edge[] = { 0.0f, -0.0f, 1e-30f, -1e-30f, -87.0f, -87.5f, -88.0f, 88.0f,
		-1.0f, 1.0f, 15.0f, -15.0f };
	static float g[203], u[203], ref[203];
	double worst = 0.0;
	int l, n, i;
	uint64_t st = 777;

	for (l = KERN_CPU_SIMD_SCALAR; l <= kern_cpu_simd_detect(); l++) {
		for (n = 1; n <= 203; n += n < 40 ? 1 : 41) {
			for (i = 0; i < n; i++) {
				g[i] = i < (int)(sizeof(edge) / sizeof(edge[0])) ? edge[i] :
				    th_uniform(&st, -100.0f, 40.0f);
				u[i] = th_uniform(&st, -2.0f, 2.0f);
				ref[i] = (float)((double)g[i] / (1.0 + exp(-(double)g[i])) * (double)u[i]);
			}
			kern_cpu_force_simd(l);
			kern_cpu_silu_mul_run(g, u, n);
			kern_cpu_force_simd(KERN_CPU_SIMD_AUTO);
			for (i = 0; i < n; i++) {
				double e = fabs((double)g[i] - (double)ref[i]);
				TAP_CHECK(e <= 16.0 * 0x1p-24 * fabs((double)ref[i]) + 1e-35,
				    "%s n=%d [%d]: %.9g, want %.9g", kq_level_name(l), n, i, g[i], ref[i]);
				if (fabs((double)ref[i]) > 1e-30 && e / fabs((double)ref[i]) > worst)
					worst = e / fabs((double)ref[i]);
			}
		}
	}
	tap_diag("silu: worst relative error %.2g", worst);
	return TAP_PASS;
}

/* ------------------------------------------------------------------------ */
/* Dequantization against ggml's reference (committed fixture)               */

#define KQ_GGML_FIXTURE "tests/fixtures/quant_dequant.bin"

static uint32_t
kq_get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Every entry of the fixture (scripts/make-quant-fixtures.py: blocks and
 * the values gguf-py's dequantize, ggml's reference, gives them) must
 * dequantize bit for bit the same here, by the scalar code and by
 * kern_cpu_dequant_rows at every SIMD level.  Values compare as bit
 * patterns, so -0 and +0 count as different. */
static enum tap_result
test_dequant_ggml(void)
{
	static uint8_t buf[1 << 16];
	float got[1024];
	uint32_t want_bits, got_bits;
	FILE *f = fopen(KQ_GGML_FIXTURE, "rb");
	size_t len, off = 12;
	uint32_t count, e, i;
	int types_seen[KERN_TYPE_COUNT] = { 0 }, l, n_types = 0;

	TAP_CHECK(f != NULL, "cannot open %s (scripts/make-quant-fixtures.sh)", KQ_GGML_FIXTURE);
	len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	TAP_CHECK(len >= 12 && len < sizeof(buf) && memcmp(buf, "KVQF", 4) == 0 &&
	    kq_get32(buf + 4) == 1, "fixture header");
	count = kq_get32(buf + 8);
	for (e = 0; e < count; e++) {
		enum kern_type t;
		uint32_t n, nbytes;
		TAP_CHECK(off + 12 <= len, "entry %u header", e);
		t = (enum kern_type)kq_get32(buf + off);
		n = kq_get32(buf + off + 4);
		nbytes = kq_get32(buf + off + 8);
		off += 12;
		TAP_CHECK(n <= 1024 && off + nbytes + 4 * (size_t)n <= len, "entry %u size", e);
		TAP_CHECK(kern_type_row_bytes(t, n) == nbytes, "entry %u: %s row of %u is %u bytes",
		    e, kern_type_name(t), n, nbytes);
		for (l = -1; l < kq_n_levels(); l++) {
			if (l < 0) {
				kern_dequant_row(t, buf + off, got, n);
			} else {
				kern_cpu_force_simd(l);
				kern_cpu_dequant_rows(t, buf + off, nbytes, 1, n, got);
				kern_cpu_force_simd(KERN_CPU_SIMD_AUTO);
			}
			for (i = 0; i < n; i++) {
				want_bits = kq_get32(buf + off + nbytes + 4 * i);
				got_bits = kv_f32_bits(got[i]);
				TAP_CHECK(want_bits == got_bits, "%s element %u (%s): got %.9g want %.9g",
				    kern_type_name(t), i, l < 0 ? "kern_dequant_row" : kq_level_name(l),
				    (double)got[i], (double)kv_bits_f32(want_bits));
			}
		}
		if ((int)t < KERN_TYPE_COUNT && !types_seen[t]++)
			n_types++;
		off += nbytes + 4 * (size_t)n;
	}
	TAP_CHECK(off == len, "fixture has trailing bytes");
	TAP_CHECK(n_types == 13, "fixture covers %d types, want 13", n_types);
	tap_diag("ggml reference: %u rows of %d types bit-identical", count, n_types);
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "softmax", test_softmax },
	{ "silu", test_silu },
	{ "type_table", test_type_table },
	{ "f16_all_patterns", test_f16_all_patterns },
	{ "f32_to_f16", test_f32_to_f16 },
	{ "dequant_q4_0", test_dequant_q4_0 },
	{ "dequant_q4_1", test_dequant_q4_1 },
	{ "dequant_q8_0", test_dequant_q8_0 },
	{ "dequant_q4_k", test_dequant_q4_k },
	{ "dequant_q6_k", test_dequant_q6_k },
	{ "dequant_plain", test_dequant_plain },
	{ "dequant_ggml", test_dequant_ggml },
	{ "quant_q8", test_quant_q8 },
	{ "quant_q8_k", test_quant_q8_k },
	{ "levels", test_levels },
	{ "dot_f32", test_dot_f32 },
	{ "vec_dot_q4_1", test_vec_dot_q4_1 },
	{ "vec_dot_q4_0", test_vec_dot_q4_0 },
	{ "vec_dot_q8_0", test_vec_dot_q8_0 },
	{ "vec_dot_q5", test_vec_dot_q5 },
	{ "vec_dot_kquants", test_vec_dot_kquants },
	{ "vec_dot_edges", test_vec_dot_edges },
	{ "vec_dot_plain", test_vec_dot_plain },
	{ "vec_dot_tile", test_vec_dot_tile },
	{ "real_model", test_real_model },
	{ "real_qwen", test_real_qwen },
};

TAP_MAIN(NULL, NULL)
