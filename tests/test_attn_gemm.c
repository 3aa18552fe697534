/*
 * test_attn_gemm.c: the chunk attention's own products (kernels/cpu/
 * attn_gemm.c) at AVX2 and AVX-512 give exactly what one scalar chain of
 * fmaf in the documented order gives (logit: Σ over d, then × scale;
 * output: Σ over the units), so the two levels agree bit for bit and no
 * BLAS kernel is involved.  Shapes cover partial key blocks, query counts
 * no multiple of the register tiles, head sizes no multiple of a vector,
 * and strided rows; what lies outside the outputs is left untouched.
 * The logits read a packed kᵀ panel twice: holding exactly the visible
 * keys, and shared as ops.c shares it (more keys than the queries see,
 * packed in ranges, in no particular order), its layout checked too.
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
#define AG_MORE_KEYS 45 /* keys the shared panel holds past the visible ones */

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

/* The panel of k's nk keys, packed in ranges of 64 from the last (as
 * threads might), checked against the documented layout; NULL on OOM or a
 * difference (said). */
static float *
ag_panel(const float *k, int64_t nk, int64_t hd)
{
	size_t n = kern_cpu_attn_kt_floats(nk, hd);
	int64_t i0, j, d, np = n / (size_t)hd;
	void *p = NULL;
	float *kt;
	if (n < (size_t)(nk * hd) || posix_memalign(&p, 64, n * sizeof(float)))
		return NULL;
	kt = p;
	for (i0 = (nk - 1) / 64 * 64; i0 >= 0; i0 -= 64)
		kern_cpu_attn_kt_pack(kt, k, nk, i0, nk - i0 < 64 ? nk : i0 + 64, hd);
	for (j = 0; j < np; j++)
		for (d = 0; d < hd; d++) {
			float got = kt[(j / 16) * 16 * hd + d * 16 + j % 16];
			float want = j < nk ? k[j * hd + d] : 0.0f;
			if (memcmp(&got, &want, sizeof(got))) {
				tap_diag("panel of %lld keys × %lld: key %lld d %lld is %.9g, not %.9g",
				    (long long)nk, (long long)hd, (long long)j, (long long)d,
				    (double)got, (double)want);
				free(kt);
				return NULL;
			}
		}
	return kt;
}

/* s from kt against the fmaf chain over k's first nvis keys, and nothing
 * past s's nq·nvis floats written: 0 exact, 1 a difference (said). */
static int
ag_check_qk(int lvl, const char *what, const float *q, int64_t ldq, const float *k,
    const float *kt, int64_t nq, int64_t nvis, int64_t hd, float *s)
{
	const float scale = 0.0883883476f; /* 1/√128 */
	int64_t t, i, d;
	for (i = 0; i < nq * nvis + 16; i++)
		s[i] = AG_SENTINEL;
	kern_cpu_attn_qk(s, q, ldq, k, kt, nq, nvis, hd, scale);
	for (t = 0; t < nq; t++)
		for (i = 0; i < nvis; i++) {
			float acc = 0.0f;
			for (d = 0; d < hd; d++)
				acc = fmaf(q[t * ldq + d], k[i * hd + d], acc);
			acc *= scale;
			if (ag_differs(what, lvl, nq, nvis, hd, t, i, s[t * nvis + i], acc))
				return 1;
		}
	for (i = nq * nvis; i < nq * nvis + 16; i++)
		if (ag_differs(what, lvl, nq, nvis, hd, -1, i, s[i], AG_SENTINEL))
			return 1;
	return 0;
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
				int64_t nk = nvis + AG_MORE_KEYS; /* the shared panel's */
				int64_t ldq = 3 * hd + 5, ldo = 2 * hd + 3, t, i, d;
				float *q = malloc((size_t)(nq * ldq) * sizeof(float));
				float *k = malloc((size_t)(nk * hd) * sizeof(float));
				float *v = malloc((size_t)(nvis * hd) * sizeof(float));
				float *s = malloc((size_t)(nq * nvis + 16) * sizeof(float));
				float *o = malloc((size_t)(nq * ldo) * sizeof(float));
				float *kt = NULL, *kts = NULL;
				int bad = !q || !k || !v || !s || !o;
				if (!bad) {
					ag_fill(q, (size_t)(nq * ldq));
					ag_fill(k, (size_t)(nk * hd));
					ag_fill(v, (size_t)(nvis * hd));
					for (i = 0; i < nq * ldo; i++)
						o[i] = AG_SENTINEL;
					kt = ag_panel(k, nvis, hd);
					kts = ag_panel(k, nk, hd);
					bad = !kt || !kts ||
					    ag_check_qk(lvl, "qk shared panel", q, ldq, k, kts, nq,
					    nvis, hd, s) ||
					    ag_check_qk(lvl, "qk", q, ldq, k, kt, nq, nvis, hd, s);
				}
				if (!bad) {
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
				free(kt);
				free(kts);
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
