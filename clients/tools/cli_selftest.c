/*
 * cli_selftest.c: `kvsnap selftest [--backend cpu|cuda]`: check a compute
 * backend against the CPU table in exact mode, on the bundled model.
 *
 * Three levels, each a row of a pass/fail table with its error and the
 * tolerance it is held to:
 *   ops      every op of kernels.h on random inputs and on the model's own
 *            weights (matmul per weight type, exact and fast paths);
 *   forward  a whole forward pass (logits of a prompt);
 *   policies an ingest with every policy (the retained units) and a query
 *            over the compressed cache (question logits, greedy tokens).
 * Errors are relative to the reference's largest magnitude unless a row says
 * otherwise.  The reference is always the CPU table in exact mode (f32
 * activations, sgemm), so `--backend cpu` measures the CPU's fast paths.
 * Helpers here are self_ (st_ is storage/'s own prefix).
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clients/cli.h"
#include "clients/tools/tools.h"
#include "engine/engine.h"
#include "kernels/kernels.h"

struct self_run {
	const char *backend;
	int json, fails, rows;
	struct kern_ctx *ref, *dev; /* CPU exact, backend under test */
	uint64_t rng;
};

static void
self_row(struct self_run *r, const char *level, const char *what, double err, double tol,
    const char *unit)
{
	int ok = err <= tol && !isnan(err);
	r->rows++;
	r->fails += !ok;
	if (r->json)
		printf("{\"event\":\"check\",\"level\":\"%s\",\"check\":\"%s\",\"error\":%.3g,\"tolerance\":%.3g,"
		    "\"unit\":\"%s\",\"pass\":%s}\n", level, what, isnan(err) ? -1.0 : err, tol,
		    unit, ok ? "true" : "false");
	else
		printf("%-9s %-50s %10.3g %10.3g  %-8s %s\n", level, what, err, tol, unit,
		    ok ? "pass" : "FAIL");
	fflush(stdout);
}

static float
self_rand(struct self_run *r)
{
	r->rng ^= r->rng << 13;
	r->rng ^= r->rng >> 7;
	r->rng ^= r->rng << 17;
	return (float)((double)(r->rng >> 11) / 9007199254740992.0) * 2.0f - 1.0f;
}

static float *
self_randv(struct self_run *r, size_t n, float scale)
{
	float *v = malloc(n * sizeof(float));
	size_t i;
	if (v)
		for (i = 0; i < n; i++)
			v[i] = self_rand(r) * scale;
	return v;
}

/* max |a - b| / max |b| (NaN anywhere → NaN). */
static double
self_relerr(const float *a, const float *b, size_t n)
{
	double mx = 0.0, mb = 0.0;
	size_t i;
	for (i = 0; i < n; i++) {
		double d = fabs((double)a[i] - (double)b[i]);
		if (isnan(a[i]) || isnan(b[i]))
			return NAN;
		mx = d > mx ? d : mx;
		mb = fabs((double)b[i]) > mb ? fabs((double)b[i]) : mb;
	}
	return mb > 0.0 ? mx / mb : mx;
}

/* ------------------------------------------------------------------------ */
/* Ops                                                                       */

/* One matmul case on both tables; exact selects the backend's exact path. */
static void
self_matmul(struct self_run *r, const char *name, const struct kern_mat *w, int64_t n_tok,
    int exact)
{
	const struct kern_ops *ro = kern_ctx_ops(r->ref), *d = kern_ctx_ops(r->dev);
	float *x = self_randv(r, (size_t)(n_tok * w->cols), 1.0f);
	float *a = malloc((size_t)(n_tok * w->rows) * sizeof(float));
	float *b = malloc((size_t)(n_tok * w->rows) * sizeof(float));
	char what[96];
	double err = NAN;

	snprintf(what, sizeof(what), "matmul %s %s %lldx%lld x%lld", name,
	    exact ? "exact" : "fast", (long long)w->rows, (long long)w->cols, (long long)n_tok);
	kern_ctx_set_exact(r->dev, exact);
	if (x && a && b && !ro->matmul(r->ref, b, w, x, n_tok) && !d->matmul(r->dev, a, w, x, n_tok))
		err = self_relerr(a, b, (size_t)(n_tok * w->rows));
	/* exact: the same f32 sums in another order; fast: 8- or 16-bit activations */
	self_row(r, "ops", what, err, exact ? 1e-5 : 2e-2, "rel");
	kern_ctx_set_exact(r->dev, 0);
	free(x);
	free(a);
	free(b);
}

/* Synthetic weights of a type we can build here (F32, F16, Q8_0). */
static int
self_make_weights(struct self_run *r, enum kern_type t, int64_t rows, int64_t cols,
    struct kern_mat *w, void **buf)
{
	size_t rb = kern_type_row_bytes(t, cols);
	float *src = self_randv(r, (size_t)(rows * cols), 0.5f);
	uint8_t *dst = malloc(rb * (size_t)rows);
	int64_t i, j;

	if (!src || !dst) {
		free(src);
		free(dst);
		return -1;
	}
	for (i = 0; i < rows; i++) {
		float *s = src + i * cols;
		uint8_t *o = dst + (size_t)i * rb;
		if (t == KERN_TYPE_F32)
			memcpy(o, s, rb);
		else if (t == KERN_TYPE_F16)
			for (j = 0; j < cols; j++) {
				uint16_t h = kern_f32_to_f16(s[j]);
				memcpy(o + 2 * j, &h, 2);
			}
		else
			kern_quant_row_q8_0(s, (struct kern_block_q8_0 *)(void *)o, cols);
	}
	free(src);
	w->type = t;
	w->rows = rows;
	w->cols = cols;
	w->row_bytes = rb;
	w->data = dst;
	*buf = dst;
	return 0;
}

static void
self_ops_matmul(struct self_run *r, const struct eng_model *m)
{
	static const enum kern_type syn[] = { KERN_TYPE_F32, KERN_TYPE_F16, KERN_TYPE_Q8_0 };
	static const int64_t ntok[] = { 1, 5, 64 };
	void *bufs[3] = { NULL, NULL, NULL };
	struct kern_mat w[3];
	size_t i, k;
	int e;

	for (i = 0; i < 3; i++) {
		if (self_make_weights(r, syn[i], 96, 256, &w[i], &bufs[i]))
			continue;
		for (k = 0; k < 3; k++)
			for (e = 1; e >= 0; e--)
				self_matmul(r, kern_type_name(syn[i]), &w[i], ntok[k], e);
	}
	for (k = 0; k < 3; k++)
		for (e = 1; e >= 0; e--) {
			self_matmul(r, "wq", &m->layers[0].wq, ntok[k], e);
			self_matmul(r, "w_down", &m->layers[0].w_down, ntok[k], e);
		}
	for (e = 1; e >= 0; e--) {
		self_matmul(r, "output", &m->output, 1, e);
		self_matmul(r, "output", &m->output, 8, e);
	}
	for (i = 0; i < 3; i++)
		free(bufs[i]);
}

static void
self_ops_rows(struct self_run *r, const struct eng_model *m)
{
	const struct kern_mat *w = &m->tok_embd;
	int32_t ids[7] = { 0, 1, 2, 17, 1000, 0, 0 };
	float *a = malloc((size_t)(7 * w->cols) * sizeof(float));
	float *b = malloc((size_t)(7 * w->cols) * sizeof(float));
	double err = NAN;

	ids[5] = (int32_t)(w->rows / 2);
	ids[6] = (int32_t)(w->rows - 1);
	if (a && b && !kern_ctx_ops(r->ref)->get_rows(r->ref, b, w, ids, 7) &&
	    !kern_ctx_ops(r->dev)->get_rows(r->dev, a, w, ids, 7))
		err = self_relerr(a, b, (size_t)(7 * w->cols));
	self_row(r, "ops", "get_rows token_embd (exact)", err, 0.0, "rel");
	free(a);
	free(b);
}

static void
self_ops_elementwise(struct self_run *r, const struct eng_model *m)
{
	const struct kern_ops *ro = kern_ctx_ops(r->ref), *d = kern_ctx_ops(r->dev);
	int64_t T = 64, E = m->hp.n_embd, H = m->hp.n_head, hd = m->hp.head_dim;
	size_t n = (size_t)(T * (H * hd > E ? H * hd : E));
	float *x = self_randv(r, n, 2.0f), *y = self_randv(r, n, 2.0f), *w = self_randv(r, n, 1.0f);
	float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
	uint32_t pos[64];
	double err;
	int64_t t;

	if (!x || !y || !w || !a || !b)
		goto out;
	err = ro->rmsnorm(r->ref, b, x, w, T, E, m->hp.rms_eps) ||
	    d->rmsnorm(r->dev, a, x, w, T, E, m->hp.rms_eps) ? NAN :
	    self_relerr(a, b, (size_t)(T * E));
	self_row(r, "ops", "rmsnorm", err, 1e-6, "rel");
	for (t = 0; t < T; t++)
		pos[t] = (uint32_t)(t * 131 % 8192);
	memcpy(a, x, (size_t)(T * H * hd) * sizeof(float));
	memcpy(b, x, (size_t)(T * H * hd) * sizeof(float));
	err = ro->rope(r->ref, b, pos, T, H, hd, m->hp.rope_base, m->hp.rope_freqs, m->hp.rope_style) ||
	    d->rope(r->dev, a, pos, T, H, hd, m->hp.rope_base, m->hp.rope_freqs, m->hp.rope_style) ? NAN :
	    self_relerr(a, b, (size_t)(T * H * hd));
	self_row(r, "ops", "rope (positions up to 8191)", err, 1e-5, "rel");
	memcpy(a, x, n * sizeof(float));
	memcpy(b, x, n * sizeof(float));
	err = ro->silu_mul(r->ref, b, y, (int64_t)n) || d->silu_mul(r->dev, a, y, (int64_t)n) ?
	    NAN : self_relerr(a, b, n);
	self_row(r, "ops", "silu_mul", err, 1e-6, "rel");
	memcpy(a, x, n * sizeof(float));
	memcpy(b, x, n * sizeof(float));
	err = ro->add(r->ref, b, y, (int64_t)n) || d->add(r->dev, a, y, (int64_t)n) ? NAN :
	    self_relerr(a, b, n);
	self_row(r, "ops", "add", err, 0.0, "rel");
out:
	free(x);
	free(y);
	free(w);
	free(a);
	free(b);
}

/* Chunk attention over ragged heads, with statistics; pod adds layer
 * sharing with NaN in every key row that is distant for all queries. */
static void
self_ops_attention(struct self_run *r, int64_t n_tok, int pod)
{
	enum { H = 9, G = 3, HD = 64 };
	static const int64_t base[G] = { 700, 321, 5 };
	const struct kern_ops *ro = kern_ctx_ops(r->ref), *d = kern_ctx_ops(r->dev);
	struct kern_attn_head heads[G];
	struct kern_attn_stats sa, sb;
	float *kv[G][3] = { { NULL } };
	uint32_t *pos[G] = { NULL }, *qpos = malloc((size_t)n_tok * sizeof(uint32_t));
	float *q = self_randv(r, (size_t)(n_tok * H * HD), 1.0f);
	float *qa = self_randv(r, (size_t)(n_tok * H * HD), 1.0f);
	float *oa = malloc((size_t)(n_tok * H * HD) * sizeof(float));
	float *ob = malloc((size_t)(n_tok * H * HD) * sizeof(float));
	int64_t stride = base[0] + n_tok, g, u, t;
	float *suma = malloc((size_t)(H * stride) * sizeof(float));
	float *sumb = malloc((size_t)(H * stride) * sizeof(float));
	float *mxa = malloc((size_t)(H * stride) * sizeof(float));
	float *mxb = malloc((size_t)(H * stride) * sizeof(float));
	float *mxc = malloc((size_t)(H * stride) * sizeof(float));
	float *roww = malloc((size_t)n_tok * sizeof(float));
	int64_t dom_from[G];
	char what[96];
	double e1 = NAN, e2 = NAN, e3 = NAN, e4 = NAN;
	int ok = qpos && q && qa && oa && ob && suma && sumb && mxa && mxb && mxc && roww;

	memset(heads, 0, sizeof(heads));
	for (g = 0; ok && g < G; g++) {
		int64_t n = base[g] + n_tok;
		kv[g][0] = self_randv(r, (size_t)(n * HD), 1.0f);
		kv[g][1] = self_randv(r, (size_t)(n * HD), 1.0f);
		kv[g][2] = self_randv(r, (size_t)(n * HD), 1.0f);
		pos[g] = malloc((size_t)n * sizeof(uint32_t));
		if (!kv[g][0] || !kv[g][1] || !kv[g][2] || !pos[g]) {
			ok = 0;
			break;
		}
		/* kept units at scattered positions, then the chunk in order */
		for (u = 0; u < base[g]; u++)
			pos[g][u] = (uint32_t)(u * 3 + (u % 2));
		for (t = 0; t < n_tok; t++)
			pos[g][base[g] + t] = 4000 + (uint32_t)t;
		heads[g].k = kv[g][0];
		heads[g].v = kv[g][1];
		heads[g].n_kv = n;
		if (pod) {
			heads[g].ka = kv[g][2];
			heads[g].qa = qa;
			heads[g].pos = pos[g];
			heads[g].qpos = qpos;
			heads[g].n_s = 4;
			heads[g].n_r = 64;
			for (u = 0; u < n; u++)
				if (pos[g][u] >= 4 && pos[g][u] + 64 <= 4000)
					for (t = 0; t < HD; t++)
						kv[g][0][u * HD + t] = NAN;
		}
	}
	for (t = 0; ok && t < n_tok; t++) {
		qpos[t] = 4000 + (uint32_t)t;
		roww[t] = 1.0f + 0.5f * self_rand(r); /* KVzip's per-query weights: positive */
	}
	for (g = 0; g < G; g++)
		dom_from[g] = base[g] / 2; /* a partial domain: sinks, the upper half, the chunk */
	memset(&sa, 0, sizeof(sa));
	memset(&sb, 0, sizeof(sb));
	if (ok) {
		sa.sum = suma;
		sb.sum = sumb;
		sa.stride = sb.stride = stride;
		sa.row_from = sb.row_from = n_tok / 3;
		sa.max = mxa;
		sb.max = mxb;
		sa.n_lead = sb.n_lead = 4;
		sa.dom_from = sb.dom_from = dom_from;
		sa.row_w = sb.row_w = roww;
		if (!ro->attention(r->ref, ob, q, n_tok, H, G, HD, heads, 0.125f, &sb) &&
		    !d->attention(r->dev, oa, q, n_tok, H, G, HD, heads, 0.125f, &sa)) {
			e1 = self_relerr(oa, ob, (size_t)(n_tok * H * HD));
			e2 = self_relerr(suma, sumb, (size_t)(H * stride));
			e3 = self_relerr(mxa, mxb, (size_t)(H * stride));
			/* the backend again without sum: the same max */
			sa.sum = NULL;
			sa.max = mxc;
			if (!d->attention(r->dev, oa, q, n_tok, H, G, HD, heads, 0.125f, &sa))
				e4 = self_relerr(mxc, mxa, (size_t)(H * stride));
		}
	}
	snprintf(what, sizeof(what), "attention%s ragged x%lld: output", pod ? " pod" : "",
	    (long long)n_tok);
	self_row(r, "ops", what, e1, 1e-5, "rel");
	snprintf(what, sizeof(what), "attention%s ragged x%lld: statistics", pod ? " pod" : "",
	    (long long)n_tok);
	self_row(r, "ops", what, e2, 1e-5, "rel");
	/* Both are the f32 softmax probabilities the statistics row compares,
	 * divided by a domain sum taken in double and rounded once to f32 (and
	 * times row_w): a few ulp on top of the probabilities' own error; a max
	 * is exact in any order. */
	snprintf(what, sizeof(what), "attention%s ragged x%lld: reconstruction max",
	    pod ? " pod" : "", (long long)n_tok);
	self_row(r, "ops", what, e3, 1e-5, "rel");
	/* the same kernels on the same inputs: only sum == NULL differs */
	snprintf(what, sizeof(what), "attention%s ragged x%lld: max without sum",
	    pod ? " pod" : "", (long long)n_tok);
	self_row(r, "ops", what, e4, 0.0, "rel");
	for (g = 0; g < G; g++) {
		free(kv[g][0]);
		free(kv[g][1]);
		free(kv[g][2]);
		free(pos[g]);
	}
	free(qpos);
	free(q);
	free(qa);
	free(oa);
	free(ob);
	free(suma);
	free(sumb);
	free(mxa);
	free(mxb);
	free(mxc);
	free(roww);
}

/* ------------------------------------------------------------------------ */
/* Forward pass and policies                                                 */

/* A deterministic haystack with a pass key: plain words the tokenizer
 * splits into many tokens. */
static char *
self_document(int64_t sentences)
{
	static const char *s[] = { "The grass is green. ", "The sky is blue. ",
		"The sun is yellow. ", "Here we go. ", "There and back again. " };
	size_t cap = (size_t)sentences * 24 + 128, len = 0;
	char *d = malloc(cap);
	int64_t i;
	if (!d)
		return NULL;
	for (i = 0; i < sentences; i++) {
		if (i == sentences / 3)
			len += (size_t)snprintf(d + len, cap - len, "The pass key is 71432. Remember it. ");
		len += (size_t)snprintf(d + len, cap - len, "%s", s[(i * 7 + i / 5) % 5]);
	}
	return d;
}

struct self_engine {
	const struct eng_model *m;
	const int32_t *doc, *qst;
	int64_t n_doc, n_q;
};

/* Ingest with policy `name` on the backend eng_use_backend chose last; the
 * compressed cache, the
 * logits after the question and 7 greedy tokens, and the 8 tokens. */
static int
self_ingest_query(const struct self_engine *e, const char *name, struct eng_kv **kvo,
    float *logits, int32_t *toks)
{
	struct eng_policy *p = NULL;
	struct eng_ctx *c = NULL;
	struct eng_kv *kv = NULL;
	struct eng_sampler s;
	char why[256];
	int64_t i;
	int rc;

	if ((rc = eng_policy_create(&p, name, "", 128, why, sizeof(why))))
		return rc;
	rc = eng_ctx_init(&c, e->m, 0, eng_policy_max_chunk(p, 256));
	if (!rc) {
		eng_ctx_set_exact(c, 1);
		rc = eng_kv_init(&kv, e->m, eng_policy_rows_per_head(p, e->n_doc, 256, e->n_q + 16));
	}
	if (!rc)
		rc = eng_ingest(c, kv, p, e->doc, e->n_doc, 256, NULL);
	/* the question and its answer with the pool on the device, as
	 * eng_generate runs them (a no-op on the CPU) */
	if (!rc && (rc = eng_ctx_resident_begin(c, kv)) > 0)
		rc = 0;
	if (!rc)
		rc = eng_forward(c, kv, e->qst, e->n_q, NULL, logits);
	eng_sampler_init(&s, 0.0f, 1.0f, 0);
	for (i = 0; !rc && i < 8; i++) {
		toks[i] = eng_sample(&s, logits, e->m->hp.n_vocab);
		if (i < 7)
			rc = eng_forward(c, kv, &toks[i], 1, NULL, logits);
	}
	if (c) {
		int rc_end = eng_ctx_resident_end(c);
		rc = rc ? rc : rc_end;
	}
	eng_ctx_free(c);
	eng_policy_free(p);
	*kvo = kv;
	return rc;
}

/* Fraction of units (over all layers and heads) in one cache and not the
 * other, by position. */
static double
self_kept_diff(const struct eng_kv *a, const struct eng_kv *b)
{
	int64_t same = 0, total = 0;
	int l, g;
	for (l = 0; l < a->n_layer; l++)
		for (g = 0; g < a->n_head_kv; g++) {
			const struct eng_kv_layer *A = &a->layer[l], *B = &b->layer[l];
			int64_t i = 0, j = 0, na = A->len[g], nb = B->len[g];
			const uint32_t *pa = A->pos + A->off[g], *pb = B->pos + B->off[g];
			total += na > nb ? na : nb;
			while (i < na && j < nb) {
				if (pa[i] == pb[j]) {
					same++;
					i++;
					j++;
				} else if (pa[i] < pb[j]) {
					i++;
				} else {
					j++;
				}
			}
		}
	return total ? 1.0 - (double)same / (double)total : 0.0;
}

static void
self_policies(struct self_run *r, const struct self_engine *e)
{
	static const char *names[] = { "full", "streaming", "h2o", "snapkv", "pyramidkv", "adakv",
		"nacl", "kvzip" };
	int32_t nv = e->m->hp.n_vocab, ta[8], tb[8];
	float *la = malloc((size_t)nv * sizeof(float)), *lb = malloc((size_t)nv * sizeof(float));
	size_t i;

	for (i = 0; la && lb && i < sizeof(names) / sizeof(names[0]); i++) {
		struct eng_kv *ka = NULL, *kb = NULL;
		char what[96];
		int ra, rb, k, same = 0;
		eng_use_backend("cpu", NULL, 0);
		rb = self_ingest_query(e, names[i], &kb, lb, tb);
		eng_use_backend(r->backend, NULL, 0);
		ra = self_ingest_query(e, names[i], &ka, la, ta);
		snprintf(what, sizeof(what), "ingest %s b=128: units kept differently", names[i]);
		self_row(r, "policy", what, ra || rb ? NAN : self_kept_diff(ka, kb), 0.01, "fraction");
		for (k = 0; !ra && !rb && k < 8; k++)
			same += ta[k] == tb[k];
		snprintf(what, sizeof(what), "query %s: greedy tokens that differ (of 8)", names[i]);
		self_row(r, "policy", what, ra || rb ? NAN : 8 - same, 0, "tokens");
		snprintf(what, sizeof(what), "query %s: logits after 8 tokens", names[i]);
		self_row(r, "policy", what, ra || rb || same < 8 ? NAN : self_relerr(la, lb, (size_t)nv),
		    1e-3, "rel");
		eng_kv_free(ka);
		eng_kv_free(kb);
	}
	free(la);
	free(lb);
}

static void
self_forward(struct self_run *r, const struct self_engine *e)
{
	int32_t nv = e->m->hp.n_vocab;
	float *la = malloc((size_t)nv * sizeof(float)), *lb = malloc((size_t)nv * sizeof(float));
	int pass;

	for (pass = 0; la && lb && pass < 2; pass++) {
		struct eng_ctx *ca = NULL, *cb = NULL;
		struct eng_kv *ka = NULL, *kb = NULL;
		char what[96];
		double err = NAN;
		int64_t i, am = 0, bm = 0;
		eng_use_backend("cpu", NULL, 0);
		if (!eng_ctx_init(&cb, e->m, 0, 256) && !eng_kv_init(&kb, e->m, e->n_doc + 1)) {
			eng_ctx_set_exact(cb, 1);
			eng_use_backend(r->backend, NULL, 0);
			if (!eng_ctx_init(&ca, e->m, 1, 256) && !eng_kv_init(&ka, e->m, e->n_doc + 1)) {
				eng_ctx_set_exact(ca, pass == 0);
				if (!eng_forward(cb, kb, e->doc, e->n_doc, NULL, lb) &&
				    !eng_forward(ca, ka, e->doc, e->n_doc, NULL, la))
					err = self_relerr(la, lb, (size_t)nv);
			}
		}
		for (i = 1; i < nv; i++) {
			am = la[i] > la[am] ? i : am;
			bm = lb[i] > lb[bm] ? i : bm;
		}
		snprintf(what, sizeof(what), "forward %lld tokens, %s: logits",
		    (long long)e->n_doc, pass == 0 ? "exact" : "fast");
		/* fast: fp16 (or 8-bit) activations through 30 layers */
		self_row(r, "forward", what, err, pass == 0 ? 1e-3 : 5e-2, "rel");
		snprintf(what, sizeof(what), "forward %s: top-1 token differs",
		    pass == 0 ? "exact" : "fast");
		self_row(r, "forward", what, isnan(err) ? NAN : (double)(am != bm), 0, "tokens");
		eng_ctx_free(ca);
		eng_ctx_free(cb);
		eng_kv_free(ka);
		eng_kv_free(kb);
	}
	free(la);
	free(lb);
}

/* ------------------------------------------------------------------------ */

static void
self_usage(FILE *f, const char *cmd)
{
	(void)cmd;
	fprintf(f, "usage: kvsnap selftest [--backend cpu|cuda|simdev] [-m GGUF] [--json]\n\n"
	    "Compare a compute backend with the CPU table in exact mode on the bundled\n"
	    "model: every op, a whole forward pass, an ingest with each policy and a\n"
	    "query.  Prints one row per check: error, tolerance, pass/FAIL.\n\n"
	    "  --backend NAME   cpu (default), cuda, or simdev (the CPU's ops behind a\n"
	    "                   simulated device memory: checks that the engine keeps\n"
	    "                   the ranges it puts on a device coherent)\n"
	    "  -m GGUF          model (default $KVSNAP_MODEL or the bundled one)\n"
	    "  --json           one JSON object per check\n\n"
	    "exit: 0 all pass, 5 a check failed, %d the backend is not available\n"
	    "      (no CUDA device, or a build without CUDA)\n", CLI_EXIT_NO_BACKEND);
}

int
cli_selftest(int argc, char **argv)
{
	static const struct option opts[] = { { NULL, 0, NULL, 0 } };
	struct cli_opts o = { .longopts = opts,
		.globals = CLI_G_MODEL | CLI_G_BACKEND | CLI_G_JSON, .usage = self_usage,
		.backend_own = 1 }; /* the backend under test: checked below, after the CPU */
	struct self_run r;
	struct self_engine e;
	struct eng_model *m = NULL;
	struct eng_tok *tok = NULL;
	struct eng_chat *chat = NULL;
	const char *model_path;
	char why[512], *doc = NULL;
	int32_t *ids = NULL, *qids = NULL;
	int c, rc, ret = CLI_EXIT_FAILURE;

	memset(&r, 0, sizeof(r));
	r.backend = "cpu";
	r.rng = 0x9e3779b97f4a7c15ull;
	while ((c = cli_getopt(&o, argc, argv)) != -1)
		return CLI_EXIT_USAGE; /* it has no options of its own: cli_getopt said why */
	if ((rc = cli_operands(&o, argc, argv, 0, 0)))
		return rc;
	r.backend = cli_g.backend ? cli_g.backend : "cpu";
	r.json = cli_g.json;
	model_path = cli_model();
	if (eng_use_backend(r.backend, why, sizeof(why))) {
		cli_err("selftest: backend '%s' is not available: %s", r.backend, why);
		return CLI_EXIT_NO_BACKEND;
	}
	if (!model_path)
		return cli_model_missing();
	eng_use_backend("cpu", NULL, 0);
	if ((rc = eng_model_open(&m, model_path, why, sizeof(why))) ||
	    (rc = eng_tok_init(&tok, m->gguf, why, sizeof(why))) ||
	    (rc = eng_chat_init(&chat, m->gguf, tok, why, sizeof(why)))) {
		cli_err("%s", why);
		ret = cli_exit_for_engine(rc);
		goto out;
	}
	if (kern_ctx_init(&r.ref, 0) || kern_ctx_init(&r.dev, 1) ||
	    kern_ctx_set_backend(r.dev, r.backend)) {
		cli_err("selftest: cannot open backend '%s': %s", r.backend,
		    r.dev ? kern_ctx_error(r.dev) : "out of memory");
		goto out;
	}
	kern_ctx_set_exact(r.ref, 1);
	if (!r.json)
		printf("kvsnap selftest: backend %s against cpu (exact), model %s\n\n"
		    "%-9s %-50s %10s %10s  %-8s %s\n", r.backend, model_path, "level", "check",
		    "error", "tolerance", "unit", "result");
	self_ops_matmul(&r, m);
	self_ops_rows(&r, m);
	self_ops_elementwise(&r, m);
	self_ops_attention(&r, 64, 0);
	self_ops_attention(&r, 1, 0);
	self_ops_attention(&r, 64, 1);
	self_ops_attention(&r, 1, 1);

	memset(&e, 0, sizeof(e));
	e.m = m;
	doc = self_document(160);
	e.n_doc = doc ? eng_chat_doc_ids(chat, doc, strlen(doc), &ids) : -1;
	e.n_q = e.n_doc < 0 ? -1 :
	    eng_chat_question_ids(chat, "What is the pass key?", 21, &qids);
	if (e.n_doc < 0 || e.n_q < 0) {
		cli_err("selftest: cannot tokenize the test document");
		goto out;
	}
	e.doc = ids;
	e.qst = qids;
	self_forward(&r, &e);
	self_policies(&r, &e);
	eng_use_backend("cpu", NULL, 0);
	if (r.json)
		printf("{\"event\":\"result\",\"summary\":true,\"backend\":\"%s\",\"checks\":%d,\"failed\":%d}\n",
		    r.backend, r.rows, r.fails);
	else
		printf("\n%d checks, %d passed, %d failed\n", r.rows, r.rows - r.fails, r.fails);
	ret = r.fails ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
out:
	kern_ctx_free(r.ref);
	kern_ctx_free(r.dev);
	free(doc);
	free(ids);
	free(qids);
	eng_chat_free(chat);
	eng_tok_free(tok);
	eng_model_close(m);
	return ret;
}
