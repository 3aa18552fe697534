/*
 * test_attn_stats.c: the CPU attention op (kern_cpu_attention) and its
 * statistics (kernels.h, struct kern_attn_stats): the output, the summed
 * probabilities `sum` and KVzip's context-reconstruction score `max`,
 * against a reference computed here in double straight from the
 * definitions (the full causal softmax over every unit a query sees, then
 * renormalised over the domain [0, n_lead) ∪ [dom_from[g], n_kv)).
 *
 * Inputs: random q, k, v (fixed seed), 3 KV heads × 3 query heads each,
 * head_dim 64, ragged heads (n_kv = base[g] + n_tok), n_tok 1, 5 and 70 (70
 * spans three of the CPU's 32-query blocks, so the per-block statistics are
 * reduced), row_from 0 and n_tok / 3, n_lead 4, per-query weights row_w.
 *
 * Tolerances: error bounds of the f32 computation, evaluated per element
 * from the data (U = 2^-24, the f32 unit roundoff), so they hold for any
 * OpenBLAS kernel (any summation order, FMA or not):
 *   logits   |δ| ≤ Δ_t = (hd + 4) · U · A_t, A_t = max_u scale · Σ_d |q_d k_d|:
 *            an f32 dot of hd terms in any order (γ_hd), the scale (1
 *            rounding, alpha of sgemm or a multiply) and s − max (|s − m| ≤
 *            2 A_t, 1 rounding);
 *   probs    relative ε_t = 2 Δ_t + 8 U: softmax moves by at most e^{±2Δ}
 *            under logit errors ≤ Δ; expf (≤ 2 ulp), the double sum of the
 *            f32 exponentials and the rounding of the quotient to f32 add a
 *            few U (8 U covers them with slack);
 *   output   (ε_t + (vis + 2) U)(1 + ε_t) · Σ_u p_u |v_u|: the probabilities'
 *            error plus an f32 sum of vis products in any order;
 *   sum      (ε + (rows + 1) U)(1 + ε) · sum, ε the largest ε_t of the
 *            contributing rows: an f32 sum of `rows` terms, blocked or not;
 *   max      max_t (2 ε_t + 4 U) · w_t p_t / D_t: p and the domain sum D
 *            each carry ε_t (D is a sum of the same probabilities, in
 *            double), then 1/D rounded to f32, · w, · p (3 roundings); a
 *            max moves by no more than its largest argument.
 * Measured errors are a small fraction of these bounds (each check prints
 * its largest error / bound as a diagnostic); a domain off by one unit, a
 * missing row or a wrong head moves a value by far more (≥ 1e-3 relative).
 * Units outside the domain (and past a head's n_kv) must be exactly 0.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "kernels/kernels.h"
#include "tests/helpers.h"
#include "tests/tap.h"

#define TA_H 9     /* query heads */
#define TA_G 3     /* KV heads */
#define TA_HD 64   /* head_dim */
#define TA_LEAD 4  /* n_lead */
#define TA_SCALE 0.125f
#define TA_U (1.0 / 16777216.0) /* f32 unit roundoff, 2^-24 */

/* ------------------------------------------------------------------------ */
/* Data and reference                                                        */

struct ta_case {
	int64_t n_tok, row_from;
	int64_t base[TA_G], dom_from[TA_G];
	int weighted; /* row_w random in [0.5, 1.5), else NULL */
};

struct ta_data {
	struct ta_case c;
	int64_t stride;
	float *q, *kv[TA_G][2], *w;
	struct kern_attn_head heads[TA_G];
	/* reference values and their error bounds */
	double *out, *sum, *max, *b_out, *b_sum, *b_max;
	/* kernel results */
	float *g_out, *g_sum, *g_max;
};

static uint64_t ta_rng_state;

static float *
ta_randv(size_t n, float lo, float hi)
{
	float *v = malloc(n * sizeof(float));
	size_t i;
	if (v)
		for (i = 0; i < n; i++)
			v[i] = th_uniform(&ta_rng_state, lo, hi);
	return v;
}

static void
ta_free(struct ta_data *d)
{
	int g;
	free(d->q);
	for (g = 0; g < TA_G; g++) {
		free(d->kv[g][0]);
		free(d->kv[g][1]);
	}
	free(d->w);
	free(d->out);
	free(d->sum);
	free(d->max);
	free(d->b_out);
	free(d->b_sum);
	free(d->b_max);
	free(d->g_out);
	free(d->g_sum);
	free(d->g_max);
	memset(d, 0, sizeof(*d));
}

/* Whether unit u of KV head g is in the domain (clipping to what a query
 * sees is the caller's u < vis). */
static int
ta_in_domain(const struct ta_case *c, int64_t g, int64_t u)
{
	return u < TA_LEAD || u >= c->dom_from[g];
}

/* The double reference and bounds (see the file comment). */
static void
ta_reference(struct ta_data *d)
{
	const struct ta_case *c = &d->c;
	int64_t T = c->n_tok, S = d->stride, h, t, u, i;
	double *s = malloc((size_t)S * sizeof(double));
	double *p = malloc((size_t)S * sizeof(double));

	if (!s || !p)
		abort();
	for (h = 0; h < TA_H; h++) {
		int64_t g = h / (TA_H / TA_G), base = c->base[g];
		const float *K = d->kv[g][0], *V = d->kv[g][1];
		double eps_rows = 0.0;
		int64_t rows = 0;
		for (t = 0; t < T; t++) {
			int64_t vis = base + t + 1;
			const float *qt = d->q + (t * TA_H + h) * TA_HD;
			double mx = -INFINITY, z = 0.0, a_max = 0.0, delta, eps, dom = 0.0, wt;
			for (u = 0; u < vis; u++) {
				double acc = 0.0, aabs = 0.0;
				for (i = 0; i < TA_HD; i++) {
					double x = (double)qt[i] * (double)K[u * TA_HD + i];
					acc += x;
					aabs += fabs(x);
				}
				s[u] = acc * TA_SCALE;
				a_max = fmax(a_max, aabs * TA_SCALE);
				mx = fmax(mx, s[u]);
			}
			for (u = 0; u < vis; u++) {
				p[u] = exp(s[u] - mx);
				z += p[u];
			}
			for (u = 0; u < vis; u++)
				p[u] /= z;
			delta = (TA_HD + 4) * TA_U * a_max;
			eps = 2.0 * delta + 8.0 * TA_U;
			for (i = 0; i < TA_HD; i++) {
				double o = 0.0, oabs = 0.0;
				size_t at = (size_t)((t * TA_H + h) * TA_HD + i);
				for (u = 0; u < vis; u++) {
					o += p[u] * V[u * TA_HD + i];
					oabs += p[u] * fabs((double)V[u * TA_HD + i]);
				}
				d->out[at] = o;
				d->b_out[at] = (eps + (double)(vis + 2) * TA_U) * (1.0 + eps) * oabs;
			}
			if (t < c->row_from)
				continue;
			rows++;
			eps_rows = fmax(eps_rows, eps);
			for (u = 0; u < vis; u++) {
				d->sum[h * S + u] += p[u];
				if (ta_in_domain(c, g, u))
					dom += p[u];
			}
			if (!(dom > 0.0))
				continue;
			wt = c->weighted ? (double)d->w[t] : 1.0;
			for (u = 0; u < vis; u++) {
				double val = wt * p[u] / dom;
				if (!ta_in_domain(c, g, u))
					continue;
				d->max[h * S + u] = fmax(d->max[h * S + u], val);
				d->b_max[h * S + u] = fmax(d->b_max[h * S + u],
				    (2.0 * eps + 4.0 * TA_U) * val);
			}
		}
		for (u = 0; u < S; u++)
			d->b_sum[h * S + u] = (eps_rows + (double)(rows + 1) * TA_U) *
			    (1.0 + eps_rows) * d->sum[h * S + u];
	}
	free(s);
	free(p);
}

/* Random inputs for case c (the seed depends only on c's shape) and the
 * reference; 0 or -1 (out of memory). */
static int
ta_build_data(struct ta_data *d, const struct ta_case *c)
{
	int64_t T = c->n_tok, g, S = 0;
	size_t nq = (size_t)(T * TA_H * TA_HD), ns;

	memset(d, 0, sizeof(*d));
	d->c = *c;
	ta_rng_state = 0x9e3779b97f4a7c15ull ^ ((uint64_t)T * 0x100000001b3ull) ^
	    ((uint64_t)c->base[0] << 20);
	for (g = 0; g < TA_G; g++)
		S = c->base[g] + T > S ? c->base[g] + T : S;
	S += 3; /* stride beyond every n_kv: those entries must come back 0 */
	d->stride = S;
	ns = (size_t)(TA_H * S);
	/* q in [-3, 3): logits up to a few units, so the softmax rows are far
	 * from uniform and the domain sums differ from row to row */
	d->q = ta_randv(nq, -3.0f, 3.0f);
	d->w = ta_randv((size_t)T, 0.5f, 1.5f);
	for (g = 0; g < TA_G; g++) {
		int64_t n = c->base[g] + T;
		d->kv[g][0] = ta_randv((size_t)(n * TA_HD), -1.0f, 1.0f);
		d->kv[g][1] = ta_randv((size_t)(n * TA_HD), -1.0f, 1.0f);
		d->heads[g].k = d->kv[g][0];
		d->heads[g].v = d->kv[g][1];
		d->heads[g].n_kv = n;
		if (!d->kv[g][0] || !d->kv[g][1])
			return -1;
	}
	d->out = calloc(nq, sizeof(double));
	d->b_out = calloc(nq, sizeof(double));
	d->sum = calloc(ns, sizeof(double));
	d->b_sum = calloc(ns, sizeof(double));
	d->max = calloc(ns, sizeof(double));
	d->b_max = calloc(ns, sizeof(double));
	d->g_out = malloc(nq * sizeof(float));
	d->g_sum = malloc(ns * sizeof(float));
	d->g_max = malloc(ns * sizeof(float));
	if (!d->q || !d->w || !d->out || !d->b_out || !d->sum || !d->b_sum || !d->max ||
	    !d->b_max || !d->g_out || !d->g_sum || !d->g_max)
		return -1;
	ta_reference(d);
	return 0;
}

/* ta_build_data, and on failure d freed with the caller's ctx (may be
 * NULL): a test checks `ta_build(...) == 0` and returns at once. */
static int
ta_build(struct ta_data *d, const struct ta_case *c, struct kern_ctx *ctx)
{
	if (ta_build_data(d, c) == 0)
		return 0;
	ta_free(d);
	kern_ctx_free(ctx);
	return -1;
}

/* The op on ctx into out / sum / max (each may be NULL: st->sum, st->max
 * NULL; all three of st NULL when sum and max are). */
static int
ta_run(struct kern_ctx *ctx, const struct ta_data *d, float *out, float *sum, float *max)
{
	struct kern_attn_stats st;
	memset(&st, 0, sizeof(st));
	st.sum = sum;
	st.max = max;
	st.stride = d->stride;
	st.row_from = d->c.row_from;
	st.n_lead = TA_LEAD;
	st.dom_from = d->c.dom_from;
	st.row_w = d->c.weighted ? d->w : NULL;
	/* poison, so that an entry the op forgets to write shows */
	if (sum)
		memset(sum, 0xff, (size_t)(TA_H * d->stride) * sizeof(float));
	if (max)
		memset(max, 0xff, (size_t)(TA_H * d->stride) * sizeof(float));
	return kern_ctx_ops(ctx)->attention(ctx, out, d->q, d->c.n_tok, TA_H, TA_G, TA_HD,
	    d->heads, TA_SCALE, sum || max ? &st : NULL);
}

/* |got - want| <= bound for n values; the worst error / bound in *ratio
 * (NaN anywhere fails).  Returns the first failing index or -1. */
static int64_t
ta_within(const float *got, const double *want, const double *bound, int64_t n,
    double *ratio)
{
	int64_t i;
	for (i = 0; i < n; i++) {
		double e = fabs((double)got[i] - want[i]);
		if (!(e <= bound[i]))
			return i;
		if (bound[i] > 0.0 && e / bound[i] > *ratio)
			*ratio = e / bound[i];
	}
	return -1;
}

static const struct ta_case ta_main_base = {
	0, 0, { 300, 37, 9 }, { 150, 20, 6 }, 1
};

/* ------------------------------------------------------------------------ */
/* Tests                                                                     */

/* Output, sum and max on every case, against the double reference; outside
 * the domain exactly 0. */
static enum tap_result
test_reference(void)
{
	static const int64_t ntok[] = { 1, 5, 70 };
	struct kern_ctx *ctx = NULL;
	double r_out = 0.0, r_sum = 0.0, r_max = 0.0;
	size_t k;
	int from;

	TAP_CHECK(kern_ctx_init(&ctx, 2) == 0, "kern_ctx_init");
	for (k = 0; k < sizeof(ntok) / sizeof(ntok[0]); k++)
		for (from = 0; from < 2; from++) {
			struct ta_case c = ta_main_base;
			struct ta_data d;
			int64_t T = ntok[k], i, h, u, S;
			int rc;

			c.n_tok = T;
			c.row_from = from ? T / 3 : 0;
			if (from && c.row_from == 0)
				continue; /* n_tok 1: the same case */
			TAP_CHECK(ta_build(&d, &c, ctx) == 0, "out of memory");
			S = d.stride;
			rc = ta_run(ctx, &d, d.g_out, d.g_sum, d.g_max);
			if (rc) {
				ta_free(&d);
				kern_ctx_free(ctx);
			}
			TAP_CHECK(rc == 0, "attention: %s", kern_strerror(rc));
			i = ta_within(d.g_out, d.out, d.b_out, T * TA_H * TA_HD, &r_out);
			if (i >= 0)
				tap_diag("n_tok %lld row_from %lld: out[%lld] = %.9g, want %.9g ± %.3g",
				    (long long)T, (long long)c.row_from, (long long)i,
				    (double)d.g_out[i], d.out[i], d.b_out[i]);
			if (i < 0) {
				i = ta_within(d.g_sum, d.sum, d.b_sum, TA_H * S, &r_sum);
				if (i >= 0)
					tap_diag("n_tok %lld row_from %lld: sum[%lld] = %.9g, want "
					    "%.9g ± %.3g", (long long)T, (long long)c.row_from,
					    (long long)i, (double)d.g_sum[i], d.sum[i], d.b_sum[i]);
			}
			if (i < 0) {
				i = ta_within(d.g_max, d.max, d.b_max, TA_H * S, &r_max);
				if (i >= 0)
					tap_diag("n_tok %lld row_from %lld: max[%lld] = %.9g, want "
					    "%.9g ± %.3g", (long long)T, (long long)c.row_from,
					    (long long)i, (double)d.g_max[i], d.max[i], d.b_max[i]);
			}
			/* exact zeros: outside the domain, past n_kv; inside, > 0 */
			for (h = 0; i < 0 && h < TA_H; h++) {
				int64_t g = h / (TA_H / TA_G), n = c.base[g] + T;
				for (u = 0; u < S; u++) {
					float m = d.g_max[h * S + u];
					int inside = u < n && ta_in_domain(&c, g, u);
					if (inside ? !(m > 0.0f) :
					    (m != 0.0f || (u >= n && d.g_sum[h * S + u] != 0.0f))) {
						tap_diag("n_tok %lld row_from %lld: head %lld unit %lld "
						    "(n_kv %lld, domain %s): max %.9g sum %.9g",
						    (long long)T, (long long)c.row_from, (long long)h,
						    (long long)u, (long long)n, inside ? "in" : "out",
						    (double)m, (double)d.g_sum[h * S + u]);
						i = h * S + u;
						break;
					}
				}
			}
			ta_free(&d);
			if (i >= 0)
				kern_ctx_free(ctx);
			TAP_CHECK(i < 0, "n_tok %lld row_from %lld", (long long)T,
			    (long long)c.row_from);
		}
	kern_ctx_free(ctx);
	tap_diag("largest error / bound: output %.3g, sum %.3g, max %.3g", r_out, r_sum, r_max);
	return TAP_PASS;
}

/* Domains clipped by the kernel: dom_from below n_lead (the whole head),
 * past n_kv (the sinks alone), a head shorter than n_lead for early queries
 * (lead = min(n_lead, vis)); row_w NULL (weight 1). */
static enum tap_result
test_clipped_domains(void)
{
	struct ta_case c = { 5, 1, { 2, 37, 9 }, { 0, 1000, 3 }, 0 };
	struct kern_ctx *ctx = NULL;
	struct ta_data d;
	double r = 0.0;
	int64_t i = 0, S, h, u;
	int rc;

	TAP_CHECK(kern_ctx_init(&ctx, 1) == 0, "kern_ctx_init");
	TAP_CHECK(ta_build(&d, &c, ctx) == 0, "out of memory");
	S = d.stride;
	rc = ta_run(ctx, &d, d.g_out, NULL, d.g_max);
	kern_ctx_free(ctx);
	if (!rc) {
		i = ta_within(d.g_max, d.max, d.b_max, TA_H * S, &r);
		if (i >= 0)
			tap_diag("max[%lld] = %.9g, want %.9g ± %.3g", (long long)i,
			    (double)d.g_max[i], d.max[i], d.b_max[i]);
		for (h = 0; i < 0 && h < TA_H; h++)
			for (u = 0; u < S; u++)
				if ((d.max[h * S + u] == 0.0) != (d.g_max[h * S + u] == 0.0f)) {
					tap_diag("head %lld unit %lld: max %.9g, want %.9g",
					    (long long)h, (long long)u, (double)d.g_max[h * S + u],
					    d.max[h * S + u]);
					i = h * S + u;
					break;
				}
	}
	/* KV head 1 (query heads 3..5) scores the sinks alone: every query's
	 * scores there sum to 1 (weight 1), so the maxima sum to at least 1 */
	for (h = 3; !rc && i < 0 && h < 6; h++) {
		double tot = 0.0;
		for (u = 0; u < TA_LEAD; u++)
			tot += d.g_max[h * S + u];
		if (!(tot >= 1.0 - 1e-5)) {
			tap_diag("sinks-only head %lld: the maxima sum to %.9g", (long long)h, tot);
			i = h * S;
		}
	}
	ta_free(&d);
	TAP_CHECK(rc == 0, "attention: %s", kern_strerror(rc));
	TAP_CHECK(i < 0, "clipped domains");
	tap_diag("largest error / bound: max %.3g", r);
	return TAP_PASS;
}

/* Either statistic alone, and no statistics: the same bits as with both. */
static enum tap_result
test_optional_outputs(void)
{
	struct ta_case c = ta_main_base;
	struct kern_ctx *ctx = NULL;
	struct kern_attn_stats st;
	struct ta_data d;
	float *o2 = NULL, *s2 = NULL, *m2 = NULL;
	size_t no, ns;
	int rc1, rc2, rc3, rc4, same_max, same_sum, same_out, same_plain;

	c.n_tok = 70;
	c.row_from = 23;
	TAP_CHECK(kern_ctx_init(&ctx, 2) == 0, "kern_ctx_init");
	TAP_CHECK(ta_build(&d, &c, ctx) == 0, "out of memory");
	no = (size_t)(c.n_tok * TA_H * TA_HD) * sizeof(float);
	ns = (size_t)(TA_H * d.stride) * sizeof(float);
	o2 = malloc(no);
	s2 = malloc(ns);
	m2 = malloc(ns);
	rc1 = ta_run(ctx, &d, d.g_out, d.g_sum, d.g_max);
	/* max alone (sum NULL) */
	rc2 = o2 && s2 && m2 ? ta_run(ctx, &d, o2, NULL, m2) : KERN_ERR_NOMEM;
	same_max = !rc1 && !rc2 && !memcmp(m2, d.g_max, ns) && !memcmp(o2, d.g_out, no);
	/* sum alone (max NULL): the old behaviour, and the KVzip fields are
	 * not looked at (dom_from NULL and n_lead < 0 are fine) */
	memset(&st, 0, sizeof(st));
	st.sum = s2;
	st.stride = d.stride;
	st.row_from = c.row_from;
	st.n_lead = -1;
	rc3 = o2 && s2 ? kern_ctx_ops(ctx)->attention(ctx, o2, d.q, c.n_tok, TA_H, TA_G, TA_HD,
	    d.heads, TA_SCALE, &st) : KERN_ERR_NOMEM;
	same_sum = !rc1 && !rc3 && !memcmp(s2, d.g_sum, ns);
	same_out = !rc1 && !rc3 && !memcmp(o2, d.g_out, no);
	/* no statistics at all */
	rc4 = o2 ? ta_run(ctx, &d, o2, NULL, NULL) : KERN_ERR_NOMEM;
	same_plain = !rc1 && !rc4 && !memcmp(o2, d.g_out, no);
	kern_ctx_free(ctx);
	ta_free(&d);
	free(o2);
	free(s2);
	free(m2);
	TAP_CHECK(rc1 == 0 && rc2 == 0 && rc3 == 0 && rc4 == 0, "rc %d %d %d %d", rc1, rc2,
	    rc3, rc4);
	TAP_CHECK(same_max, "max (and output) with sum NULL differ from both set");
	TAP_CHECK(same_sum, "sum with max NULL differs from both set");
	TAP_CHECK(same_out, "output with max NULL differs from both set");
	TAP_CHECK(same_plain, "output without statistics differs");
	return TAP_PASS;
}

/* max set without dom_from, or with n_lead < 0: KERN_ERR_SHAPE. */
static enum tap_result
test_bad_domain(void)
{
	struct ta_case c = ta_main_base;
	struct kern_ctx *ctx = NULL;
	struct kern_attn_stats st;
	struct ta_data d;
	int rc1, rc2, rc3;

	c.n_tok = 5;
	TAP_CHECK(kern_ctx_init(&ctx, 1) == 0, "kern_ctx_init");
	TAP_CHECK(ta_build(&d, &c, ctx) == 0, "out of memory");
	memset(&st, 0, sizeof(st));
	st.sum = d.g_sum;
	st.max = d.g_max;
	st.stride = d.stride;
	st.n_lead = TA_LEAD;
	st.dom_from = NULL;
	rc1 = kern_ctx_ops(ctx)->attention(ctx, d.g_out, d.q, c.n_tok, TA_H, TA_G, TA_HD,
	    d.heads, TA_SCALE, &st);
	st.sum = NULL;
	rc2 = kern_ctx_ops(ctx)->attention(ctx, d.g_out, d.q, c.n_tok, TA_H, TA_G, TA_HD,
	    d.heads, TA_SCALE, &st);
	st.dom_from = c.dom_from;
	st.n_lead = -1;
	rc3 = kern_ctx_ops(ctx)->attention(ctx, d.g_out, d.q, c.n_tok, TA_H, TA_G, TA_HD,
	    d.heads, TA_SCALE, &st);
	kern_ctx_free(ctx);
	ta_free(&d);
	TAP_CHECK(rc1 == KERN_ERR_SHAPE, "dom_from NULL (with sum): %d", rc1);
	TAP_CHECK(rc2 == KERN_ERR_SHAPE, "dom_from NULL (sum NULL): %d", rc2);
	TAP_CHECK(rc3 == KERN_ERR_SHAPE, "n_lead -1: %d", rc3);
	return TAP_PASS;
}

/* 1 and 2 threads: the same bits (per-block statistics reduced in block
 * order; a max is exact in any order). */
static enum tap_result
test_threads(void)
{
	struct ta_case c = ta_main_base;
	struct kern_ctx *c1 = NULL, *c2 = NULL;
	struct ta_data d;
	float *o2 = NULL, *s2 = NULL, *m2 = NULL;
	size_t no, ns;
	int rc1 = KERN_ERR_NOMEM, rc2 = KERN_ERR_NOMEM, same = 0;

	c.n_tok = 70;
	c.row_from = 23;
	TAP_CHECK(ta_build(&d, &c, NULL) == 0, "out of memory");
	no = (size_t)(c.n_tok * TA_H * TA_HD) * sizeof(float);
	ns = (size_t)(TA_H * d.stride) * sizeof(float);
	o2 = malloc(no);
	s2 = malloc(ns);
	m2 = malloc(ns);
	if (o2 && s2 && m2 && !kern_ctx_init(&c1, 1) && !kern_ctx_init(&c2, 2)) {
		rc1 = ta_run(c1, &d, d.g_out, d.g_sum, d.g_max);
		rc2 = ta_run(c2, &d, o2, s2, m2);
		same = !rc1 && !rc2 && !memcmp(o2, d.g_out, no) && !memcmp(s2, d.g_sum, ns) &&
		    !memcmp(m2, d.g_max, ns);
	}
	if (c1)
		kern_ctx_free(c1);
	if (c2)
		kern_ctx_free(c2);
	ta_free(&d);
	free(o2);
	free(s2);
	free(m2);
	TAP_CHECK(rc1 == 0 && rc2 == 0, "rc %d %d", rc1, rc2);
	TAP_CHECK(same, "1 and 2 threads differ");
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "reference", test_reference },
	{ "clipped_domains", test_clipped_domains },
	{ "optional_outputs", test_optional_outputs },
	{ "bad_domain", test_bad_domain },
	{ "threads", test_threads },
};

TAP_MAIN(NULL, NULL)
