/*
 * attn_gemm.c: the two products of the chunk attention (ops.c) with our own
 * AVX2 / AVX-512 FMA kernels: the logits q·kᵀ of a block of queries and the
 * output p·v.
 *
 * Why not sgemm: OpenBLAS picks its kernel from the CPU's model number, and
 * a CPU it does not know (this project's Sapphire Rapids VM with OpenBLAS
 * 0.3.21) runs the SSE3 "Prescott" kernel: 31-50 GFLOP/s on two cores,
 * so the attention was half of an 8K prefill.  These kernels do not depend
 * on which BLAS kernel runs, and every element is one chain of FMAs in a
 * fixed order (logit: over the head dimension; output: over the units), so
 * AVX2 and AVX-512 give the same bits, whatever the threads or blocking,
 * and tests can check them against a scalar fmaf loop exactly.  The scalar
 * level (no AVX2) keeps the sgemm call.
 */
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/cpu/cpu_internal.h"
#include "kernels/cpu/simd.h"

#define ATTN_MAX_HD 512 /* kern_cpu_attention refuses larger heads */

#if KERN_X86
/* ---- AVX-512: 16 keys a vector ---------------------------------------- */

/* kt[d·16 + j] = k[(i0 + j)·hd + d] for j < nk (the rest 0). */
static inline __attribute__((always_inline)) void
attn_pack_kt16(float *kt, const float *k, int64_t nk, int64_t hd)
{
	int64_t d, j;
	if (nk < 16)
		memset(kt, 0, (size_t)hd * 16 * sizeof(float));
	for (j = 0; j < nk; j++)
		for (d = 0; d < hd; d++)
			kt[d * 16 + j] = k[j * hd + d];
}

static __attribute__((target("avx512f"))) void
attn_qk_avx512(float *s, const float *q, int64_t ldq, const float *k, int64_t nq,
    int64_t nvis, int64_t hd, float scale)
{
	float kt[2 * ATTN_MAX_HD * 16] __attribute__((aligned(64)));
	float *kt1 = kt + hd * 16;
	const __m512 vs = _mm512_set1_ps(scale);
	int64_t i0, t, d;

	/* 32 keys (two packed blocks) × 8 queries: 16 accumulators */
	for (i0 = 0; i0 < nvis; i0 += 32) {
		int64_t nk = nvis - i0 < 32 ? nvis - i0 : 32;
		int64_t nk0 = nk < 16 ? nk : 16, nk1 = nk - nk0;
		__mmask16 m0 = (__mmask16)((1u << nk0) - 1u);
		__mmask16 m1 = (__mmask16)((1u << nk1) - 1u);
		attn_pack_kt16(kt, k + i0 * hd, nk0, hd);
		attn_pack_kt16(kt1, k + (i0 + 16) * hd, nk1, hd);
		for (t = 0; t < nq; t += 8) {
			int64_t r, nr = nq - t < 8 ? nq - t : 8;
			__m512 a0[8], a1[8];
			for (r = 0; r < 8; r++)
				a0[r] = a1[r] = _mm512_setzero_ps();
			if (nr == 8) {
				for (d = 0; d < hd; d++) {
					__m512 k0 = _mm512_load_ps(kt + d * 16);
					__m512 k1 = _mm512_load_ps(kt1 + d * 16);
#pragma GCC unroll 8
					for (r = 0; r < 8; r++) {
						__m512 b = _mm512_set1_ps(q[(t + r) * ldq + d]);
						a0[r] = _mm512_fmadd_ps(b, k0, a0[r]);
						a1[r] = _mm512_fmadd_ps(b, k1, a1[r]);
					}
				}
			} else {
				for (d = 0; d < hd; d++) {
					__m512 k0 = _mm512_load_ps(kt + d * 16);
					__m512 k1 = _mm512_load_ps(kt1 + d * 16);
					for (r = 0; r < nr; r++) {
						__m512 b = _mm512_set1_ps(q[(t + r) * ldq + d]);
						a0[r] = _mm512_fmadd_ps(b, k0, a0[r]);
						a1[r] = _mm512_fmadd_ps(b, k1, a1[r]);
					}
				}
			}
			for (r = 0; r < nr; r++) {
				float *row = s + (t + r) * nvis + i0;
				_mm512_mask_storeu_ps(row, m0, _mm512_mul_ps(a0[r], vs));
				_mm512_mask_storeu_ps(row + 16, m1, _mm512_mul_ps(a1[r], vs));
			}
		}
	}
}

/* o[t·ldo + c] = Σ_i p[t·nvis + i]·v[i·hd + c]: blocks of ATTN_PV_UNITS
 * units (their rows of v stay in L1 while every query passes), 4 queries ×
 * 64 channels a pass (16 accumulators, carried in o from one block to the
 * next: a float stored and loaded again is the same float, so the chain is
 * unbroken); channels past the last multiple of 16 scalar. */
#define ATTN_PV_UNITS 64
static __attribute__((target("avx512f"))) void
attn_pv_avx512(float *o, int64_t ldo, const float *p, const float *v, int64_t nq,
    int64_t nvis, int64_t hd)
{
	int64_t i0, t, c0, i, r, c, hd16 = hd & ~(int64_t)15;

	for (i0 = 0; i0 < nvis; i0 += ATTN_PV_UNITS) {
		int64_t i1 = nvis - i0 < ATTN_PV_UNITS ? nvis : i0 + ATTN_PV_UNITS;
		for (t = 0; t < nq; t += 4) {
			int64_t nr = nq - t < 4 ? nq - t : 4;
			for (c0 = 0; c0 < hd16; c0 += 64) {
				int64_t nc = (hd16 - c0 < 64 ? hd16 - c0 : 64) / 16;
				__m512 a[4][4];
				for (r = 0; r < nr; r++)
					for (c = 0; c < nc; c++)
						a[r][c] = i0 ? _mm512_loadu_ps(o + (t + r) * ldo + c0 + 16 * c)
						    : _mm512_setzero_ps();
				if (nr == 1 && nc == 4) { /* decode: one query */
					for (i = i0; i < i1; i++) {
						const float *vi = v + i * hd + c0;
						__m512 b = _mm512_set1_ps(p[t * nvis + i]);
						a[0][0] = _mm512_fmadd_ps(b, _mm512_loadu_ps(vi), a[0][0]);
						a[0][1] = _mm512_fmadd_ps(b, _mm512_loadu_ps(vi + 16), a[0][1]);
						a[0][2] = _mm512_fmadd_ps(b, _mm512_loadu_ps(vi + 32), a[0][2]);
						a[0][3] = _mm512_fmadd_ps(b, _mm512_loadu_ps(vi + 48), a[0][3]);
					}
				} else if (nr == 4 && nc == 4) {
					for (i = i0; i < i1; i++) {
						const float *vi = v + i * hd + c0;
						__m512 v0 = _mm512_loadu_ps(vi), v1 = _mm512_loadu_ps(vi + 16);
						__m512 v2 = _mm512_loadu_ps(vi + 32);
						__m512 v3 = _mm512_loadu_ps(vi + 48);
#pragma GCC unroll 4
						for (r = 0; r < 4; r++) {
							__m512 b = _mm512_set1_ps(p[(t + r) * nvis + i]);
							a[r][0] = _mm512_fmadd_ps(b, v0, a[r][0]);
							a[r][1] = _mm512_fmadd_ps(b, v1, a[r][1]);
							a[r][2] = _mm512_fmadd_ps(b, v2, a[r][2]);
							a[r][3] = _mm512_fmadd_ps(b, v3, a[r][3]);
						}
					}
				} else {
					for (i = i0; i < i1; i++)
						for (r = 0; r < nr; r++) {
							__m512 b = _mm512_set1_ps(p[(t + r) * nvis + i]);
							for (c = 0; c < nc; c++)
								a[r][c] = _mm512_fmadd_ps(b, _mm512_loadu_ps(
								    v + i * hd + c0 + 16 * c), a[r][c]);
						}
				}
				for (r = 0; r < nr; r++)
					for (c = 0; c < nc; c++)
						_mm512_storeu_ps(o + (t + r) * ldo + c0 + 16 * c, a[r][c]);
			}
			for (r = 0; r < nr; r++)
				for (c = hd16; c < hd; c++) {
					float acc = i0 ? o[(t + r) * ldo + c] : 0.0f;
					for (i = i0; i < i1; i++)
						acc = fmaf(p[(t + r) * nvis + i], v[i * hd + c], acc);
					o[(t + r) * ldo + c] = acc;
				}
		}
	}
}

/* ---- AVX2: 8 keys a vector --------------------------------------------- */

static inline __attribute__((always_inline)) void
attn_pack_kt8(float *kt, const float *k, int64_t nk, int64_t hd)
{
	int64_t d, j;
	if (nk < 8)
		memset(kt, 0, (size_t)hd * 8 * sizeof(float));
	for (j = 0; j < nk; j++)
		for (d = 0; d < hd; d++)
			kt[d * 8 + j] = k[j * hd + d];
}

static __attribute__((target("avx2,fma"))) void
attn_qk_avx2(float *s, const float *q, int64_t ldq, const float *k, int64_t nq,
    int64_t nvis, int64_t hd, float scale)
{
	float kt[3 * ATTN_MAX_HD * 8] __attribute__((aligned(32)));
	const __m256 vs = _mm256_set1_ps(scale);
	int64_t i0, t, d, b, c;

	/* 24 keys (three packed blocks) × 4 queries: 12 accumulators */
	for (i0 = 0; i0 < nvis; i0 += 24) {
		int64_t nk = nvis - i0 < 24 ? nvis - i0 : 24;
		for (b = 0; b < 3; b++) {
			int64_t nb = nk - 8 * b;
			attn_pack_kt8(kt + b * hd * 8, k + (i0 + 8 * b) * hd,
			    nb < 0 ? 0 : nb > 8 ? 8 : nb, hd);
		}
		for (t = 0; t < nq; t += 4) {
			int64_t r, nr = nq - t < 4 ? nq - t : 4;
			__m256 a[4][3];
			for (r = 0; r < 4; r++)
				a[r][0] = a[r][1] = a[r][2] = _mm256_setzero_ps();
			if (nr == 4) {
				for (d = 0; d < hd; d++) {
					__m256 k0 = _mm256_load_ps(kt + d * 8);
					__m256 k1 = _mm256_load_ps(kt + (hd + d) * 8);
					__m256 k2 = _mm256_load_ps(kt + (2 * hd + d) * 8);
#pragma GCC unroll 4
					for (r = 0; r < 4; r++) {
						__m256 bq = _mm256_set1_ps(q[(t + r) * ldq + d]);
						a[r][0] = _mm256_fmadd_ps(bq, k0, a[r][0]);
						a[r][1] = _mm256_fmadd_ps(bq, k1, a[r][1]);
						a[r][2] = _mm256_fmadd_ps(bq, k2, a[r][2]);
					}
				}
			} else {
				for (d = 0; d < hd; d++)
					for (r = 0; r < nr; r++) {
						__m256 bq = _mm256_set1_ps(q[(t + r) * ldq + d]);
						for (c = 0; c < 3; c++)
							a[r][c] = _mm256_fmadd_ps(bq,
							    _mm256_load_ps(kt + (c * hd + d) * 8), a[r][c]);
					}
			}
			for (r = 0; r < nr; r++) {
				float tmp[24];
				for (c = 0; c < 3; c++)
					_mm256_storeu_ps(tmp + 8 * c, _mm256_mul_ps(a[r][c], vs));
				memcpy(s + (t + r) * nvis + i0, tmp, (size_t)nk * sizeof(float));
			}
		}
	}
}

/* As attn_pv_avx512, 4 queries × 16 channels a pass (8 accumulators). */
static __attribute__((target("avx2,fma"))) void
attn_pv_avx2(float *o, int64_t ldo, const float *p, const float *v, int64_t nq,
    int64_t nvis, int64_t hd)
{
	int64_t i0, t, c0, i, r, c, hd8 = hd & ~(int64_t)7;

	for (i0 = 0; i0 < nvis; i0 += ATTN_PV_UNITS) {
		int64_t i1 = nvis - i0 < ATTN_PV_UNITS ? nvis : i0 + ATTN_PV_UNITS;
		for (t = 0; t < nq; t += 4) {
			int64_t nr = nq - t < 4 ? nq - t : 4;
			for (c0 = 0; c0 < hd8; c0 += 16) {
				int64_t nc = (hd8 - c0 < 16 ? hd8 - c0 : 16) / 8;
				__m256 a[4][2];
				for (r = 0; r < nr; r++)
					for (c = 0; c < nc; c++)
						a[r][c] = i0 ? _mm256_loadu_ps(o + (t + r) * ldo + c0 + 8 * c)
						    : _mm256_setzero_ps();
				if (nr == 1 && nc == 2) { /* decode: one query */
					for (i = i0; i < i1; i++) {
						const float *vi = v + i * hd + c0;
						__m256 b = _mm256_set1_ps(p[t * nvis + i]);
						a[0][0] = _mm256_fmadd_ps(b, _mm256_loadu_ps(vi), a[0][0]);
						a[0][1] = _mm256_fmadd_ps(b, _mm256_loadu_ps(vi + 8), a[0][1]);
					}
				} else if (nr == 4 && nc == 2) {
					for (i = i0; i < i1; i++) {
						const float *vi = v + i * hd + c0;
						__m256 v0 = _mm256_loadu_ps(vi), v1 = _mm256_loadu_ps(vi + 8);
#pragma GCC unroll 4
						for (r = 0; r < 4; r++) {
							__m256 b = _mm256_set1_ps(p[(t + r) * nvis + i]);
							a[r][0] = _mm256_fmadd_ps(b, v0, a[r][0]);
							a[r][1] = _mm256_fmadd_ps(b, v1, a[r][1]);
						}
					}
				} else {
					for (i = i0; i < i1; i++)
						for (r = 0; r < nr; r++) {
							__m256 b = _mm256_set1_ps(p[(t + r) * nvis + i]);
							for (c = 0; c < nc; c++)
								a[r][c] = _mm256_fmadd_ps(b, _mm256_loadu_ps(
								    v + i * hd + c0 + 8 * c), a[r][c]);
						}
				}
				for (r = 0; r < nr; r++)
					for (c = 0; c < nc; c++)
						_mm256_storeu_ps(o + (t + r) * ldo + c0 + 8 * c, a[r][c]);
			}
			for (r = 0; r < nr; r++)
				for (c = hd8; c < hd; c++) {
					float acc = i0 ? o[(t + r) * ldo + c] : 0.0f;
					for (i = i0; i < i1; i++)
						acc = fmaf(p[(t + r) * nvis + i], v[i * hd + c], acc);
					o[(t + r) * ldo + c] = acc;
				}
		}
	}
}
#endif /* KERN_X86 */

void
kern_cpu_attn_qk(float *s, const float *q, int64_t ldq, const float *k, int64_t nq,
    int64_t nvis, int64_t hd, float scale)
{
#if KERN_X86
	int lvl = kern_cpu_simd_level();
	if (hd <= ATTN_MAX_HD && lvl >= KERN_CPU_SIMD_AVX512) {
		attn_qk_avx512(s, q, ldq, k, nq, nvis, hd, scale);
		return;
	}
	if (hd <= ATTN_MAX_HD && lvl >= KERN_CPU_SIMD_AVX2) {
		attn_qk_avx2(s, q, ldq, k, nq, nvis, hd, scale);
		return;
	}
#endif
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nq, (int)nvis, (int)hd,
	    scale, q, (int)ldq, k, (int)hd, 0.0f, s, (int)nvis);
}

void
kern_cpu_attn_pv(float *o, int64_t ldo, const float *p, const float *v, int64_t nq,
    int64_t nvis, int64_t hd)
{
#if KERN_X86
	int lvl = kern_cpu_simd_level();
	if (lvl >= KERN_CPU_SIMD_AVX512) {
		attn_pv_avx512(o, ldo, p, v, nq, nvis, hd);
		return;
	}
	if (lvl >= KERN_CPU_SIMD_AVX2) {
		attn_pv_avx2(o, ldo, p, v, nq, nvis, hd);
		return;
	}
#endif
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nq, (int)hd, (int)nvis,
	    1.0f, p, (int)nvis, v, (int)hd, 0.0f, o, (int)ldo);
}
