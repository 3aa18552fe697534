/*
 * rope_rows.c: rotation of many head rows through a table of angles, and
 * fp16 rows widened (contract in kernels/rope_rows.h).
 *
 * The AVX2 code does per element what kern_rope_rotate_pair does, in the
 * same order: NORM's even lane a·c − b·s and odd lane b·c + a·s (the
 * scalar a·s + b·c: one IEEE addition, which commutes), NEOX's the same on
 * the two halves.  Its target leaves out FMA so no multiply and add can be
 * fused: the bits must be the scalar ones (tests/test_snapshot_load.c).
 */
#include <string.h>

#include "kernels/cpu/cpu_internal.h" /* for kern_cpu_simd_level */
#include "kernels/rope.h"
#include "kernels/rope_rows.h"
#include "kernels/cpu/simd.h"

/* The largest head_dim a NEOX row is built through a stack copy of
 * kern_rope_angles for; wider ones take kern_rope_theta pair by pair. */
#define ROWS_STACK_DIM 1024

void
kern_rope_table_fill(float *table, uint32_t p0, int64_t n, float theta_scale,
    const float *ff, int64_t head_dim, enum kern_rope_style style)
{
	int64_t r, i, h = head_dim / 2;
	float cs[ROWS_STACK_DIM];

	for (r = 0; r < n; r++) {
		float *row = table + r * KERN_ROPE_TABLE_ROW(head_dim);
		uint32_t p = p0 + (uint32_t)r;
		if (style != KERN_ROPE_NEOX) {
			kern_rope_angles(row, p, theta_scale, ff, head_dim);
			continue;
		}
		if (head_dim <= ROWS_STACK_DIM) {
			kern_rope_angles(cs, p, theta_scale, ff, head_dim);
			for (i = 0; i < h; i++) {
				row[i] = cs[2 * i];
				row[h + i] = cs[2 * i + 1];
			}
			continue;
		}
		for (i = 0; i < h; i++) { /* the same angle, bit for bit (rope.h) */
			float t = kern_rope_theta(p, theta_scale, ff, i);
			row[i] = cosf(t);
			row[h + i] = sinf(t);
		}
	}
}

/* One row with the scalar definition (rope.h's pair rotation). */
static void
rows_rotate_scalar(float *dst, const float *src, const float *cs, int64_t head_dim,
    enum kern_rope_style style, int64_t from)
{
	int64_t h = head_dim / 2, i;
	if (style == KERN_ROPE_NEOX)
		for (i = from; i < h; i++)
			kern_rope_rotate_pair(dst, src, i, i + h, cs[i], cs[h + i]);
	else
		for (i = from; i < h; i++)
			kern_rope_rotate_pair(dst, src, 2 * i, 2 * i + 1, cs[2 * i], cs[2 * i + 1]);
}

#if KERN_X86
/* Eight floats to p: a streaming store (p on a 32-byte line) when nt. */
static inline __attribute__((target("avx2"), always_inline)) void
rows_put(float *p, __m256 x, int nt)
{
	if (nt)
		_mm256_stream_ps(p, x);
	else
		_mm256_storeu_ps(p, x);
}

static __attribute__((target("avx2"))) void
rows_rotate_avx2(float *dst, const float *src, const float *cs, int64_t head_dim,
    enum kern_rope_style style, int nt)
{
	int64_t h = head_dim / 2, i;
	if (style == KERN_ROPE_NEOX) {
		for (i = 0; i + 8 <= h; i += 8) {
			__m256 a = _mm256_loadu_ps(src + i), b = _mm256_loadu_ps(src + h + i);
			__m256 c = _mm256_loadu_ps(cs + i), s = _mm256_loadu_ps(cs + h + i);
			__m256 da = _mm256_sub_ps(_mm256_mul_ps(a, c), _mm256_mul_ps(b, s));
			__m256 db = _mm256_add_ps(_mm256_mul_ps(b, c), _mm256_mul_ps(a, s));
			rows_put(dst + i, da, nt);
			rows_put(dst + h + i, db, nt);
		}
		rows_rotate_scalar(dst, src, cs, head_dim, style, i);
		return;
	}
	for (i = 0; i + 8 <= head_dim; i += 8) {
		/* x = a0 b0 a1 b1 …, cs = c0 s0 c1 s1 … */
		__m256 x = _mm256_loadu_ps(src + i), t = _mm256_loadu_ps(cs + i);
		__m256 c = _mm256_moveldup_ps(t), s = _mm256_movehdup_ps(t);
		__m256 sw = _mm256_permute_ps(x, 0xb1); /* b0 a0 b1 a1 … */
		rows_put(dst + i, _mm256_addsub_ps(_mm256_mul_ps(x, c), _mm256_mul_ps(sw, s)), nt);
	}
	rows_rotate_scalar(dst, src, cs, head_dim, style, i / 2);
}

static __attribute__((target("avx2,f16c"))) void
rows_f16_avx2(const uint8_t *src, float *dst, int64_t n)
{
	int64_t i;
	for (i = 0; i + 8 <= n; i += 8)
		_mm256_storeu_ps(dst + i,
		    _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(src + 2 * i))));
	for (; i < n; i++)
		dst[i] = kern_f16_to_f32((uint16_t)(src[2 * i] | src[2 * i + 1] << 8));
}
#endif

void
kern_rope_rows(float *dst, const float *src, int64_t n, const uint32_t *pos,
    const float *table, int64_t head_dim, enum kern_rope_style style, int stream)
{
	int64_t r, d = head_dim;
#if KERN_X86
	int simd = kern_cpu_simd_level() >= KERN_CPU_SIMD_AVX2;
	/* every row's stores whole vectors on 32-byte lines, none in place */
	int nt = simd && stream && dst != src && d % 16 == 0 && !((uintptr_t)dst & 31);
#endif
	(void)stream; /* plain C: no streaming stores */
	for (r = 0; r < n; r++) {
		const float *cs = table + (int64_t)(pos ? pos[r] : (uint32_t)r) * KERN_ROPE_TABLE_ROW(d);
#if KERN_X86
		if (simd) {
			rows_rotate_avx2(dst + r * d, src + r * d, cs, d, style, nt);
			continue;
		}
#endif
		rows_rotate_scalar(dst + r * d, src + r * d, cs, d, style, 0);
	}
#if KERN_X86
	if (nt) /* streaming stores are weakly ordered: fenced before handed on */
		_mm_sfence();
#endif
}

void
kern_f16_to_f32_rows(const uint8_t *src, float *dst, int64_t n)
{
	int64_t i;
#if KERN_X86
	if (kern_cpu_simd_level() >= KERN_CPU_SIMD_AVX2) {
		rows_f16_avx2(src, dst, n);
		return;
	}
#endif
	for (i = 0; i < n; i++)
		dst[i] = kern_f16_to_f32((uint16_t)(src[2 * i] | src[2 * i + 1] << 8));
}
