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

#if KERN_X86
/* ---- AVX-512: 16 keys a vector ---------------------------------------- */

/* s[t·nvis + i] for i < nvis from the panel: 32 keys (two blocks) × 8
 * queries a pass, 16 accumulators.  Lanes past nvis (the padding, or keys
 * another query block sees) are computed and not stored. */
static __attribute__((target("avx512f"))) void
attn_qk_avx512(float *s, const float *q, int64_t ldq, const float *kt, int64_t nq,
    int64_t nvis, int64_t hd, float scale)
{
	const __m512 vs = _mm512_set1_ps(scale);
	int64_t i0, t, d;

	for (i0 = 0; i0 < nvis; i0 += 32) {
		const float *kt0 = kt + i0 * hd, *kt1 = kt0 + 16 * hd; /* blocks i0/16, +1 */
		int64_t nk = nvis - i0 < 32 ? nvis - i0 : 32;
		int64_t nk0 = nk < 16 ? nk : 16, nk1 = nk - nk0;
		__mmask16 m0 = (__mmask16)((1u << nk0) - 1u);
		__mmask16 m1 = (__mmask16)((1u << nk1) - 1u);
		for (t = 0; t < nq; t += 8) {
			int64_t r, nr = nq - t < 8 ? nq - t : 8;
			__m512 a0[8], a1[8];
			for (r = 0; r < 8; r++)
				a0[r] = a1[r] = _mm512_setzero_ps();
			if (nr == 8) {
				for (d = 0; d < hd; d++) {
					__m512 k0 = _mm512_loadu_ps(kt0 + d * 16);
					__m512 k1 = _mm512_loadu_ps(kt1 + d * 16);
#pragma GCC unroll 8
					for (r = 0; r < 8; r++) {
						__m512 b = _mm512_set1_ps(q[(t + r) * ldq + d]);
						a0[r] = _mm512_fmadd_ps(b, k0, a0[r]);
						a1[r] = _mm512_fmadd_ps(b, k1, a1[r]);
					}
				}
			} else {
				for (d = 0; d < hd; d++) {
					__m512 k0 = _mm512_loadu_ps(kt0 + d * 16);
					__m512 k1 = _mm512_loadu_ps(kt1 + d * 16);
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

/* As attn_qk_avx512, 24 keys (three half blocks) × 4 queries a pass, 12
 * accumulators.  A half block that starts at or past nvis is read from the
 * first one instead (in the panel; its sums are not stored). */
static __attribute__((target("avx2,fma"))) void
attn_qk_avx2(float *s, const float *q, int64_t ldq, const float *kt, int64_t nq,
    int64_t nvis, int64_t hd, float scale)
{
	const __m256 vs = _mm256_set1_ps(scale);
	int64_t i0, t, d, c;

	for (i0 = 0; i0 < nvis; i0 += 24) {
		int64_t nk = nvis - i0 < 24 ? nvis - i0 : 24;
		const float *kc[3];
		for (c = 0; c < 3; c++) {
			int64_t j = i0 + 8 * c < nvis ? i0 + 8 * c : i0;
			kc[c] = kt + (j / 16) * 16 * hd + j % 16;
		}
		/* the next group's blocks of the panel, a share per query group */
		const int64_t pf_k0 = (i0 + 24) / 16 * 16, pf_k1 = (i0 + 48 + 15) / 16 * 16;
		const int64_t pad = (nvis + KERN_CPU_ATTN_KT_ALIGN - 1) / KERN_CPU_ATTN_KT_ALIGN *
		    KERN_CPU_ATTN_KT_ALIGN; /* the panel's keys, at least */
		const char *pf = (const char *)(kt + pf_k0 * hd);
		const int64_t pf_len = i0 + 24 < nvis ?
		    ((pf_k1 < pad ? pf_k1 : pad) - pf_k0) * hd * (int64_t)sizeof(float) : 0;
		const int64_t n_tg = (nq + 3) / 4;
		for (t = 0; t < nq; t += 4) {
			int64_t r, nr = nq - t < 4 ? nq - t : 4;
			__m256 a[4][3];
			int64_t o0 = pf_len * (t / 4) / n_tg, o1 = pf_len * (t / 4 + 1) / n_tg;
			for (o0 &= ~(int64_t)63; o0 < o1; o0 += 64)
				_mm_prefetch(pf + o0, _MM_HINT_T0);
			for (r = 0; r < 4; r++)
				a[r][0] = a[r][1] = a[r][2] = _mm256_setzero_ps();
			if (nr == 4) {
				for (d = 0; d < hd; d++) {
					__m256 k0 = _mm256_loadu_ps(kc[0] + d * 16);
					__m256 k1 = _mm256_loadu_ps(kc[1] + d * 16);
					__m256 k2 = _mm256_loadu_ps(kc[2] + d * 16);
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
							    _mm256_loadu_ps(kc[c] + d * 16), a[r][c]);
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

/* Units [i0, i1) of nr (a constant once inlined) queries' rows of p into
 * their 16 channels' accumulators a[r][0..1], v at the pass's channels. */
static inline __attribute__((always_inline, target("avx2,fma"))) void
attn_pv_avx2_run(__m256 a[][2], int nr, const float *p, int64_t nvis, const float *v,
    int64_t hd, int64_t i0, int64_t i1)
{
	int64_t i;
	int r;

	for (i = i0; i < i1; i++) {
		const float *vi = v + i * hd;
		__m256 v0 = _mm256_loadu_ps(vi), v1 = _mm256_loadu_ps(vi + 8);
#pragma GCC unroll 6
		for (r = 0; r < nr; r++) {
			__m256 b = _mm256_set1_ps(p[r * nvis + i]);
			a[r][0] = _mm256_fmadd_ps(b, v0, a[r][0]);
			a[r][1] = _mm256_fmadd_ps(b, v1, a[r][1]);
		}
	}
}

/* As attn_pv_avx512, 6 queries × 16 channels a pass (12 accumulators: an
 * FMA's 4-cycle latency at two a cycle wants more than 8 chains), 4 for
 * the last 4-8 queries of a block (32 = 6 + 6 + 6 + 6 + 4 + 4; bench_quant
 * attn, one thread, head size 128: 52.4 / 51.8 / 48.9 → 56.5 / 54.6 / 50.6
 * GFLOP/s at 512 / 2K / 8K keys). */
static __attribute__((target("avx2,fma"))) void
attn_pv_avx2(float *o, int64_t ldo, const float *p, const float *v, int64_t nq,
    int64_t nvis, int64_t hd)
{
	int64_t i0, t, c0, i, r, c, nr, hd8 = hd & ~(int64_t)7;

	for (i0 = 0; i0 < nvis; i0 += ATTN_PV_UNITS) {
		int64_t i1 = nvis - i0 < ATTN_PV_UNITS ? nvis : i0 + ATTN_PV_UNITS;
		for (t = 0; t < nq; t += nr) {
			nr = nq - t >= 10 || nq - t == 6 ? 6 : (nq - t < 4 ? nq - t : 4);
			for (c0 = 0; c0 < hd8; c0 += 16) {
				int64_t nc = (hd8 - c0 < 16 ? hd8 - c0 : 16) / 8;
				__m256 a[6][2];
				/* the next block's rows of v, a share per (query group,
				 * channel block) pass */
				{
					int64_t nch = (hd8 + 15) / 16, npass = nq * nch;
					int64_t k = t * nch + c0 / 16 * nr;
					int64_t len = i1 < nvis ? ((nvis - i1 < ATTN_PV_UNITS ? nvis - i1 : ATTN_PV_UNITS) *
					    hd * (int64_t)sizeof(float)) : 0;
					int64_t o0 = (len * k / npass) & ~(int64_t)63, o1 = len * (k + nr) / npass;
					for (; o0 < o1; o0 += 64)
						_mm_prefetch((const char *)(v + i1 * hd) + o0, _MM_HINT_T0);
				}
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
				} else if (nr == 6 && nc == 2) {
					attn_pv_avx2_run(a, 6, p + t * nvis, nvis, v + c0, hd, i0, i1);
				} else if (nr == 4 && nc == 2) {
					attn_pv_avx2_run(a, 4, p + t * nvis, nvis, v + c0, hd, i0, i1);
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

size_t
kern_cpu_attn_kt_floats(int64_t nk, int64_t hd)
{
#if KERN_X86
	if (kern_cpu_simd_level() >= KERN_CPU_SIMD_AVX2)
		return (size_t)((nk + KERN_CPU_ATTN_KT_ALIGN - 1) / KERN_CPU_ATTN_KT_ALIGN *
		    KERN_CPU_ATTN_KT_ALIGN) * (size_t)hd;
#endif
	(void)nk;
	(void)hd;
	return 0;
}

void
kern_cpu_attn_kt_pack(float *kt, const float *k, int64_t nk, int64_t i0, int64_t i1, int64_t hd)
{
	int64_t j, d, end = i1;
	if (i1 == nk) /* the padding up to the panel's end: zeros */
		end = (nk + KERN_CPU_ATTN_KT_ALIGN - 1) / KERN_CPU_ATTN_KT_ALIGN *
		    KERN_CPU_ATTN_KT_ALIGN;
	for (j = i0; j < end; j++) {
		float *dst = kt + (j / 16) * 16 * hd + j % 16;
		if (j < i1)
			for (d = 0; d < hd; d++)
				dst[d * 16] = k[j * hd + d];
		else
			for (d = 0; d < hd; d++)
				dst[d * 16] = 0.0f;
	}
}

void
kern_cpu_attn_qk(float *s, const float *q, int64_t ldq, const float *k, const float *kt,
    int64_t nq, int64_t nvis, int64_t hd, float scale)
{
#if KERN_X86
	int lvl = kern_cpu_simd_level();
	if (kt && lvl >= KERN_CPU_SIMD_AVX512) {
		attn_qk_avx512(s, q, ldq, kt, nq, nvis, hd, scale);
		return;
	}
	if (kt && lvl >= KERN_CPU_SIMD_AVX2) {
		attn_qk_avx2(s, q, ldq, kt, nq, nvis, hd, scale);
		return;
	}
#else
	(void)kt;
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
