/*
 * test_refit.c: Attention Matching's refit of a cut head
 * (engine/cache/refit.c, eng_refit_head) against double-precision
 * references computed here, on seeded random heads (no BLAS, no model).
 *
 *   keep_all      every unit kept: the full head is its own best fit, so
 *                 the biases are 0 and the values the originals
 *   one_unit      one unit kept: the closed forms of the NNLS weight
 *                 (Σ a / Σ a²) and of the ridge fit ((Σ o + λ v) / (t + λ))
 *   beats_evict   a cut to 1/8: the refit head's outputs (by half at
 *                 least) and attention mass match the full head's better
 *                 than plain eviction's (bias 0, the kept values), on the
 *                 fitted queries and on other queries of the same
 *                 distribution
 *   bad_input     unsorted or out-of-range kept units, no queries, m > n
 *   kernel_bias   the CPU attention op with per-unit biases (how a refit
 *                 cut is read) against the same attention in double:
 *                 causal chunks of 1 and 37 queries over ragged GQA heads
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "engine/engine.h"
#include "engine/cache/refit.h"
#include "kernels/kernels.h"
#include "tests/tap.h"

/* A uniform double in [-1, 1). */
static double
unif(uint64_t *s)
{
	return (double)(kv_xorshift64s(s) >> 11) / 4503599627370496.0 - 1.0;
}

struct head {
	int64_t n, t;
	int d;
	float *k, *v, *q, *q2; /* q2: t queries not fitted on */
};

/* Keys around a few directions (so attention is peaked), values and
 * queries near those directions. */
static int
head_make(struct head *h, int64_t n, int d, int64_t t, uint64_t seed)
{
	uint64_t s = seed;
	int64_t i;
	int e;
	double dir[4][64];
	h->n = n;
	h->d = d;
	h->t = t;
	h->k = malloc((size_t)(n * d) * sizeof(float));
	h->v = malloc((size_t)(n * d) * sizeof(float));
	h->q = malloc((size_t)(t * d) * sizeof(float));
	h->q2 = malloc((size_t)(t * d) * sizeof(float));
	if (!h->k || !h->v || !h->q || !h->q2 || d > 64)
		return -1;
	for (i = 0; i < 4; i++)
		for (e = 0; e < d; e++)
			dir[i][e] = 3.0 * unif(&s);
	for (i = 0; i < n; i++)
		for (e = 0; e < d; e++) {
			h->k[i * d + e] = (float)(dir[i % 4][e] + 0.8 * unif(&s));
			h->v[i * d + e] = (float)unif(&s);
		}
	for (i = 0; i < t; i++)
		for (e = 0; e < d; e++) {
			h->q[i * d + e] = (float)(dir[(i * 7) % 4][e] + 0.5 * unif(&s));
			h->q2[i * d + e] = (float)(dir[(i * 5 + 1) % 4][e] + 0.5 * unif(&s));
		}
	return 0;
}

static void
head_free(struct head *h)
{
	free(h->k);
	free(h->v);
	free(h->q);
	free(h->q2);
}

/* In double, over queries q (t of them): Σ_i ‖out_i − full_i‖² of the cut
 * head (keep, bias, values vk) against the full head, and the mass error
 * Σ_i (Σ_{j∈S} exp(z_ij + β_j) / Σ_j exp(z_ij) − 1)². */
static void
head_errors(const struct head *h, const float *q, const int64_t *keep, int64_t m,
    const float *bias, const float *vk, float scale, double *out_err, double *mass_err)
{
	int64_t i, j;
	int e, d = h->d;
	double *z = malloc((size_t)h->n * sizeof(double)), full[64], cut[64];
	*out_err = *mass_err = 0.0;
	for (i = 0; i < h->t; i++) {
		double c = -INFINITY, M = 0.0, Mc = 0.0;
		for (j = 0; j < h->n; j++) {
			double dot = 0.0;
			for (e = 0; e < d; e++)
				dot += (double)q[i * d + e] * (double)h->k[j * d + e];
			z[j] = scale * dot;
			c = z[j] > c ? z[j] : c;
		}
		memset(full, 0, sizeof(full));
		memset(cut, 0, sizeof(cut));
		for (j = 0; j < h->n; j++) {
			double p = exp(z[j] - c);
			M += p;
			for (e = 0; e < d; e++)
				full[e] += p * (double)h->v[j * d + e];
		}
		for (j = 0; j < m; j++) {
			double p = exp(z[keep[j]] - c + (double)bias[j]);
			Mc += p;
			for (e = 0; e < d; e++)
				cut[e] += p * (double)vk[j * d + e];
		}
		for (e = 0; e < d; e++) {
			double diff = cut[e] / Mc - full[e] / M;
			*out_err += diff * diff;
		}
		*mass_err += (Mc / M - 1.0) * (Mc / M - 1.0);
	}
	free(z);
}

static struct eng_refit_in
refit_in(const struct head *h, const int64_t *keep, int64_t m)
{
	struct eng_refit_in in;
	memset(&in, 0, sizeof(in));
	in.k = h->k;
	in.v = h->v;
	in.n = h->n;
	in.d = h->d;
	in.keep = keep;
	in.m = m;
	in.q = h->q;
	in.t = h->t;
	in.scale = 1.0f / sqrtf((float)h->d);
	in.ridge = 1e-3;
	in.sweeps = 50;
	return in;
}

static enum tap_result
test_keep_all(void)
{
	struct head h;
	int64_t keep[48], j;
	float bias[48], vo[48 * 8];
	struct eng_refit_in in;
	int e;
	TAP_CHECK(!head_make(&h, 48, 8, 40, 11), "head");
	for (j = 0; j < 48; j++)
		keep[j] = j;
	in = refit_in(&h, keep, 48);
	TAP_CHECK(!eng_refit_head(&in, bias, vo), "refit");
	for (j = 0; j < 48; j++) {
		/* exact in exact arithmetic (w = 1 zeroes the NNLS gradient); the
		 * tolerances are float rounding of the inputs and outputs and the
		 * conditioning of PᵀP + λI at λ = 1e-3 of its mean diagonal */
		TAP_CHECK(fabsf(bias[j]) < 1e-5f, "unit %lld: bias %g", (long long)j, bias[j]);
		for (e = 0; e < 8; e++)
			TAP_CHECK(fabsf(vo[j * 8 + e] - h.v[j * 8 + e]) < 1e-3f, "unit %lld value %d: "
			    "%g, was %g", (long long)j, e, vo[j * 8 + e], h.v[j * 8 + e]);
	}
	head_free(&h);
	return TAP_PASS;
}

static enum tap_result
test_one_unit(void)
{
	struct head h;
	int64_t keep[1] = { 5 }, i, j;
	float bias[1], vo[8];
	struct eng_refit_in in;
	double sa = 0.0, sa2 = 0.0, so[8] = { 0 }, w, lam;
	int e;
	TAP_CHECK(!head_make(&h, 32, 8, 24, 23), "head");
	in = refit_in(&h, keep, 1);
	TAP_CHECK(!eng_refit_head(&in, bias, vo), "refit");
	for (i = 0; i < h.t; i++) { /* a_i5 and o_i, in double */
		double z[32], c = -INFINITY, M = 0.0;
		for (j = 0; j < h.n; j++) {
			double dot = 0.0;
			for (e = 0; e < 8; e++)
				dot += (double)h.q[i * 8 + e] * (double)h.k[j * 8 + e];
			z[j] = (double)in.scale * dot;
			c = z[j] > c ? z[j] : c;
		}
		for (j = 0; j < h.n; j++)
			M += exp(z[j] - c);
		sa += exp(z[5] - c) / M;
		sa2 += exp(z[5] - c) / M * (exp(z[5] - c) / M);
		for (j = 0; j < h.n; j++)
			for (e = 0; e < 8; e++)
				so[e] += exp(z[j] - c) / M * (double)h.v[j * 8 + e];
	}
	w = sa / sa2;
	if (w < exp(ENG_REFIT_BIAS_MIN))
		w = exp(ENG_REFIT_BIAS_MIN);
	/* one kept unit: p_i = 1, PᵀP = t, λ = 1e-3 · t */
	lam = 1e-3 * (double)h.t;
	/* tolerances: float outputs of O(1) values */
	TAP_CHECK(fabs((double)bias[0] - log(w)) < 1e-5, "bias %g, closed form %g", bias[0],
	    log(w));
	for (e = 0; e < 8; e++) {
		double want = (so[e] + lam * (double)h.v[5 * 8 + e]) / ((double)h.t + lam);
		TAP_CHECK(fabs((double)vo[e] - want) < 1e-5, "value %d: %g, closed form %g", e, vo[e],
		    want);
	}
	head_free(&h);
	return TAP_PASS;
}

static enum tap_result
test_beats_evict(void)
{
	struct head h;
	int64_t keep[16], j, m = 16, n = 128;
	float bias[16], zero[16] = { 0 }, vo[16 * 16], vs[16 * 16];
	double best[128];
	struct eng_refit_in in;
	double oe_cut, me_cut, oe_fit, me_fit, oe_cut2, me_cut2, oe_fit2, me_fit2;
	int64_t i;
	int e;
	TAP_CHECK(!head_make(&h, n, 16, 96, 37), "head");
	/* keep the 16 units of the largest attention any fitted query pays
	 * (kvzip's rule in small), in ascending order */
	for (j = 0; j < n; j++)
		best[j] = -INFINITY;
	for (i = 0; i < h.t; i++)
		for (j = 0; j < n; j++) {
			double dot = 0.0;
			for (e = 0; e < 16; e++)
				dot += (double)h.q[i * 16 + e] * (double)h.k[j * 16 + e];
			best[j] = dot > best[j] ? dot : best[j];
		}
	for (i = 0; i < m; i++) {
		int64_t arg = -1;
		for (j = 0; j < n; j++)
			if (best[j] > -INFINITY && (arg < 0 || best[j] > best[arg]))
				arg = j;
		keep[i] = arg;
		best[arg] = -INFINITY;
	}
	for (i = 1; i < m; i++) /* ascending */
		for (j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int64_t tmp = keep[j];
			keep[j] = keep[j - 1];
			keep[j - 1] = tmp;
		}
	for (j = 0; j < m; j++)
		memcpy(vs + j * 16, h.v + keep[j] * 16, 16 * sizeof(float));
	in = refit_in(&h, keep, m);
	TAP_CHECK(!eng_refit_head(&in, bias, vo), "refit");
	head_errors(&h, h.q, keep, m, zero, vs, in.scale, &oe_cut, &me_cut);
	head_errors(&h, h.q, keep, m, bias, vo, in.scale, &oe_fit, &me_fit);
	head_errors(&h, h.q2, keep, m, zero, vs, in.scale, &oe_cut2, &me_cut2);
	head_errors(&h, h.q2, keep, m, bias, vo, in.scale, &oe_fit2, &me_fit2);
	tap_diag("fitted queries: output error %.4g (evicted %.4g), mass error %.4g (%.4g); "
	    "other queries: %.4g (%.4g), %.4g (%.4g)", oe_fit, oe_cut, me_fit, me_cut, oe_fit2,
	    oe_cut2, me_fit2, me_cut2);
	/* the mass error is the NNLS objective, which the fit only lowers from
	 * its start at plain eviction (w = 1); the 16 units kept here hold
	 * little of some queries' mass, so no weights bring it near 0, while
	 * the values can take the outputs most of the way */
	TAP_CHECK(oe_fit < 0.5 * oe_cut && me_fit < me_cut, "fitted queries: output %g vs %g, "
	    "mass %g vs %g", oe_fit, oe_cut, me_fit, me_cut);
	TAP_CHECK(oe_fit2 < oe_cut2 && me_fit2 < me_cut2, "other queries: output %g vs %g, mass %g "
	    "vs %g", oe_fit2, oe_cut2, me_fit2, me_cut2);
	head_free(&h);
	return TAP_PASS;
}

static enum tap_result
test_bad_input(void)
{
	struct head h;
	int64_t keep[4] = { 1, 3, 2, 7 }, ok[4] = { 1, 2, 3, 40 };
	float bias[64], vo[64 * 8];
	struct eng_refit_in in;
	TAP_CHECK(!head_make(&h, 32, 8, 8, 5), "head");
	in = refit_in(&h, keep, 4);
	TAP_CHECK(eng_refit_head(&in, bias, vo) == ENG_ERR_ARG, "unsorted");
	in = refit_in(&h, ok, 4);
	TAP_CHECK(eng_refit_head(&in, bias, vo) == ENG_ERR_ARG, "unit 40 of 32");
	in = refit_in(&h, ok, 3);
	in.t = 0;
	TAP_CHECK(eng_refit_head(&in, bias, vo) == ENG_ERR_ARG, "no queries");
	in = refit_in(&h, ok, 33);
	TAP_CHECK(eng_refit_head(&in, bias, vo) == ENG_ERR_ARG, "m > n");
	head_free(&h);
	return TAP_PASS;
}

static enum tap_result
test_kernel_bias(void)
{
	enum { H = 4, G = 2, HD = 16 };
	static const int64_t base[G] = { 50, 9 };
	static const int64_t toks[2] = { 1, 37 };
	struct kern_ctx *ctx = NULL;
	uint64_t s = 99;
	int c;
	TAP_CHECK(kern_ctx_init(&ctx, 2) == 0, "kern_ctx_init");
	for (c = 0; c < 2; c++) {
		int64_t T = toks[c], t, u, g, h, e;
		struct kern_attn_head heads[G];
		float *q = malloc((size_t)(T * H * HD) * sizeof(float));
		float *out = malloc((size_t)(T * H * HD) * sizeof(float));
		float *out0 = malloc((size_t)(T * H * HD) * sizeof(float));
		float *kv[G][3];
		double worst = 0.0, moved = 0.0;
		memset(heads, 0, sizeof(heads));
		TAP_CHECK(q && out && out0, "memory");
		for (e = 0; e < T * H * HD; e++)
			q[e] = (float)(2.0 * unif(&s));
		for (g = 0; g < G; g++) {
			int64_t n = base[g] + T;
			kv[g][0] = malloc((size_t)(n * HD) * sizeof(float));
			kv[g][1] = malloc((size_t)(n * HD) * sizeof(float));
			kv[g][2] = malloc((size_t)n * sizeof(float));
			TAP_CHECK(kv[g][0] && kv[g][1] && kv[g][2], "memory");
			for (e = 0; e < n * HD; e++) {
				kv[g][0][e] = (float)unif(&s);
				kv[g][1][e] = (float)unif(&s);
			}
			for (u = 0; u < n; u++)
				kv[g][2][u] = (float)(3.0 * unif(&s));
			heads[g].k = kv[g][0];
			heads[g].v = kv[g][1];
			heads[g].n_kv = n;
			heads[g].bias = kv[g][2];
		}
		TAP_CHECK(kern_ctx_ops(ctx)->attention(ctx, out, q, T, H, G, HD, heads, 0.25f,
		    NULL) == 0, "attention with bias");
		for (g = 0; g < G; g++)
			heads[g].bias = NULL;
		TAP_CHECK(kern_ctx_ops(ctx)->attention(ctx, out0, q, T, H, G, HD, heads, 0.25f,
		    NULL) == 0, "attention without");
		for (t = 0; t < T; t++)
			for (h = 0; h < H; h++) {
				int64_t gg = h / (H / G), vis = base[gg] + t + 1;
				double z[128], mx = -INFINITY, sum = 0.0, o[HD] = { 0 };
				for (u = 0; u < vis; u++) {
					double dot = 0.0;
					for (e = 0; e < HD; e++)
						dot += (double)q[(t * H + h) * HD + e] * (double)kv[gg][0][u * HD + e];
					z[u] = 0.25 * dot + (double)kv[gg][2][u];
					mx = z[u] > mx ? z[u] : mx;
				}
				for (u = 0; u < vis; u++) {
					z[u] = exp(z[u] - mx);
					sum += z[u];
				}
				for (u = 0; u < vis; u++)
					for (e = 0; e < HD; e++)
						o[e] += z[u] / sum * (double)kv[gg][1][u * HD + e];
				for (e = 0; e < HD; e++) {
					double got = out[(t * H + h) * HD + e];
					double d0 = fabs((double)out0[(t * H + h) * HD + e] - got);
					worst = fabs(got - o[e]) > worst ? fabs(got - o[e]) : worst;
					moved = d0 > moved ? d0 : moved;
				}
			}
		/* f32 logits, softmax and sums over at most 87 units of values in
		 * [-1, 1]: a few 1e-7 relative per step; 1e-5 leaves a wide margin
		 * whichever sgemm kernel runs */
		TAP_CHECK(worst < 1e-5, "%lld queries: worst error %g against double",
		    (long long)T, worst);
		TAP_CHECK(moved > 1e-2, "%lld queries: the biases move the output (%g)", (long long)T,
		    moved);
		for (g = 0; g < G; g++) {
			free(kv[g][0]);
			free(kv[g][1]);
			free(kv[g][2]);
		}
		free(q);
		free(out);
		free(out0);
	}
	kern_ctx_free(ctx);
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "keep_all", test_keep_all },
	{ "one_unit", test_one_unit },
	{ "beats_evict", test_beats_evict },
	{ "bad_input", test_bad_input },
	{ "kernel_bias", test_kernel_bias },
};

TAP_MAIN(NULL, NULL)
