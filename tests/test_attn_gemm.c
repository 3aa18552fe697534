/*
 * test_attn_gemm.c: the chunk attention's own products (kernels/cpu/
 * attn_gemm.c) at AVX2 and AVX-512 give exactly what one scalar chain of
 * fmaf in the documented order gives (logit: Σ over d, then × scale;
 * output: Σ over the units), so the two levels agree bit for bit and no
 * BLAS kernel is involved.  Shapes cover partial key blocks, query counts
 * no multiple of the register tiles, head sizes no multiple of a vector,
 * and strided rows; what lies outside the outputs is left untouched.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "kernels/kernels.h"
#include "kernels/cpu/cpu_internal.h"
#include "tests/tap.h"

static uint64_t ag_rng = 0x51ed27a4c0ffee11ull;

static float
ag_rand(void)
{
	return (float)((int)(kv_xorshift64s(&ag_rng) >> 40) - (1 << 23)) / (float)(1 << 23);
}

static void
ag_fill(float *p, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		p[i] = ag_rand();
}

static const int64_t ag_nq[] = { 1, 3, 4, 8, 13, 32, 33 };
static const int64_t ag_nvis[] = { 1, 7, 16, 17, 24, 31, 33, 100, 257 };
static const int64_t ag_hd[] = { 8, 24, 64, 80, 128 };
#define AG_N(a) (sizeof(a) / sizeof((a)[0]))
#define AG_SENTINEL 12345.0f

/* 1, said, when got is not want's bits. */
static int
ag_differs(const char *what, int lvl, int64_t nq, int64_t nvis, int64_t hd, int64_t a,
    int64_t b, float got, float want)
{
	if (!memcmp(&got, &want, sizeof(got)))
		return 0;
	tap_diag("level %d %s nq %lld nvis %lld hd %lld [%lld][%lld]: %.9g vs %.9g", lvl, what,
	    (long long)nq, (long long)nvis, (long long)hd, (long long)a, (long long)b,
	    (double)got, (double)want);
	return 1;
}

/* Every shape at the forced level: 0 all exact, 1 a difference (said). */
static int
ag_check_level(int lvl)
{
	size_t a, b, c;
	for (a = 0; a < AG_N(ag_nq); a++)
		for (b = 0; b < AG_N(ag_nvis); b++)
			for (c = 0; c < AG_N(ag_hd); c++) {
				int64_t nq = ag_nq[a], nvis = ag_nvis[b], hd = ag_hd[c];
				int64_t ldq = 3 * hd + 5, ldo = 2 * hd + 3, t, i, d;
				float *q = malloc((size_t)(nq * ldq) * sizeof(float));
				float *k = malloc((size_t)(nvis * hd) * sizeof(float));
				float *v = malloc((size_t)(nvis * hd) * sizeof(float));
				float *s = malloc((size_t)(nq * nvis) * sizeof(float));
				float *o = malloc((size_t)(nq * ldo) * sizeof(float));
				int bad = !q || !k || !v || !s || !o;
				const float scale = 0.0883883476f; /* 1/√128 */
				if (!bad) {
					ag_fill(q, (size_t)(nq * ldq));
					ag_fill(k, (size_t)(nvis * hd));
					ag_fill(v, (size_t)(nvis * hd));
					for (i = 0; i < nq * ldo; i++)
						o[i] = AG_SENTINEL;
					kern_cpu_attn_qk(s, q, ldq, k, nq, nvis, hd, scale);
					for (t = 0; t < nq && !bad; t++)
						for (i = 0; i < nvis && !bad; i++) {
							float acc = 0.0f;
							for (d = 0; d < hd; d++)
								acc = fmaf(q[t * ldq + d], k[i * hd + d], acc);
							acc *= scale;
							bad = ag_differs("qk", lvl, nq, nvis, hd, t, i,
							    s[t * nvis + i], acc);
						}
					/* the logits as probabilities-like weights: any
					 * floats do, the chain is what is checked */
					kern_cpu_attn_pv(o, ldo, s, v, nq, nvis, hd);
					for (t = 0; t < nq && !bad; t++)
						for (d = 0; d < ldo && !bad; d++) {
							float acc = AG_SENTINEL;
							if (d < hd) {
								acc = 0.0f;
								for (i = 0; i < nvis; i++)
									acc = fmaf(s[t * nvis + i], v[i * hd + d],
									    acc);
							}
							bad = ag_differs("pv", lvl, nq, nvis, hd, t, d,
							    o[t * ldo + d], acc);
						}
				}
				free(q);
				free(k);
				free(v);
				free(s);
				free(o);
				if (bad)
					return 1;
			}
	return 0;
}

static enum tap_result
ag_level(int lvl)
{
	int bad;
	if (kern_cpu_force_simd(lvl) != 0)
		return TAP_SKIP; /* this CPU lacks the level */
	bad = ag_check_level(lvl);
	kern_cpu_force_simd(KERN_CPU_SIMD_AUTO);
	TAP_CHECK(!bad, "level %d differs from the fmaf chain", lvl);
	return TAP_PASS;
}

static enum tap_result
test_avx2(void)
{
	return ag_level(KERN_CPU_SIMD_AVX2);
}

static enum tap_result
test_avx512(void)
{
	return ag_level(KERN_CPU_SIMD_AVX512);
}

static const struct tap_test tests[] = {
	{ "avx2_exact", test_avx2 },
	{ "avx512_exact", test_avx512 },
};

TAP_MAIN(NULL, NULL)
