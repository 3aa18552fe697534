/*
 * pod_calibrate.c: PoD's offline layer grouping (spec/pod.md §1.2, §3.2).
 *
 * Each text runs once through the dense model.  After every layer's
 * attention a hook recomputes, for the last q queries of the text, the
 * attention rows of every query head over all preceding tokens (softmax in
 * double, from the rotated queries and the cached rotated keys: what the
 * kernel computed, kept whole).  Then, per layer pair (la < lb) and query
 * head, the JS divergences of matching rows are summed in text and row
 * order into double accumulators (one per pair and head, one writer each),
 * so the map does not depend on the thread count.  The rows of a text are
 * dropped before the next; memory is q·n·L·h floats.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/run/forward_hook.h"
#include "engine/train/train.h"

struct calib {
	const struct eng_model *m;
	int L, H, KV, hd, q;
	int64_t n, n_max;     /* this text's length; the longest */
	int64_t q0;           /* first recorded query (n − q_eff) */
	int64_t q_eff;        /* rows recorded for this text */
	float *rows;          /* (L, H, q, n_max) */
	double *acc;          /* (L, L, H): Σ JS over rows, la < lb */
	double *logit;        /* (n_max) scratch */
};

static float *
calib_row(const struct calib *cb, int l, int h, int64_t r)
{
	return cb->rows + (((size_t)l * (size_t)cb->H + (size_t)h) * (size_t)cb->q + (size_t)r) *
	    (size_t)cb->n_max;
}

/* Record the attention rows of the chunk's queries that are among the
 * text's last q (positions from kv->next_pos). */
static int
calib_after_attn(void *arg, struct eng_kv *kv, int layer, const struct eng_fwd_layer_info *info)
{
	struct calib *cb = arg;
	const struct eng_kv_layer *Ly = &kv->layer[layer];
	int64_t ld = (int64_t)cb->H * cb->hd, t, u, d;
	double scale = 1.0 / sqrt((double)cb->hd);
	int h;

	for (t = 0; t < info->n_tok; t++) {
		int64_t i = (int64_t)kv->next_pos + t; /* query position */
		if (i < cb->q0)
			continue;
		for (h = 0; h < cb->H; h++) {
			int m = h / (cb->H / cb->KV);
			const float *qv = info->q + t * ld + (int64_t)h * cb->hd;
			const float *k = Ly->kr + Ly->off[m] * cb->hd;
			float *row = calib_row(cb, layer, h, i - cb->q0);
			double mx = -INFINITY, sum = 0.0;
			for (u = 0; u <= i; u++) {
				double s = 0.0;
				for (d = 0; d < cb->hd; d++)
					s += (double)qv[d] * k[u * cb->hd + d];
				cb->logit[u] = s * scale;
				mx = cb->logit[u] > mx ? cb->logit[u] : mx;
			}
			for (u = 0; u <= i; u++) {
				cb->logit[u] = exp(cb->logit[u] - mx);
				sum += cb->logit[u];
			}
			for (u = 0; u <= i; u++)
				row[u] = (float)(cb->logit[u] / sum);
			for (; u < cb->n_max; u++)
				row[u] = 0.0f;
		}
	}
	return 0;
}

/* Σ JS for pair tasks split over the pool's threads. */
static void
calib_js_worker(void *arg, int ith, int nth)
{
	struct calib *cb = arg;
	int64_t n_pairs = (int64_t)cb->L * cb->L * cb->H, task, r;
	for (task = ith; task < n_pairs; task += nth) {
		int h = (int)(task % cb->H), lb = (int)(task / cb->H % cb->L);
		int la = (int)(task / cb->H / cb->L);
		double s = 0.0;
		if (la >= lb)
			continue;
		for (r = 0; r < cb->q_eff; r++)
			s += eng_pod_js(calib_row(cb, la, h, r), calib_row(cb, lb, h, r), cb->n);
		cb->acc[task] += s;
	}
}

/* One text through the dense model, rows recorded, JS accumulated. */
static int
calib_text(struct eng_ctx *c, struct eng_kv *kv, struct calib *cb, const int32_t *ids,
    int64_t n)
{
	struct eng_fwd_hook hook = { .after_attn = calib_after_attn, .arg = cb, .stat_from = -1 };
	int64_t s = 0, chunk = eng_ctx_max_chunk(c);
	int rc;

	eng_kv_clear(kv);
	cb->n = n;
	cb->q_eff = n < cb->q ? n : cb->q;
	cb->q0 = n - cb->q_eff;
	while (s < n) {
		int64_t len = n - s < chunk ? n - s : chunk;
		if ((rc = eng_forward_chunk_hooked(c, kv, ids + s, len, NULL, &hook)))
			return rc;
		s += len;
	}
	kern_parallel(eng_ctx_kern(c), calib_js_worker, cb);
	return 0;
}

/* sim[m][la][lb] = 1 − mean JS over texts, rows and m's query heads. */
static void
calib_sim(const struct calib *cb, int64_t n_rows, float *sim)
{
	int g = cb->H / cb->KV, m, la, lb, j;
	for (m = 0; m < cb->KV; m++)
		for (la = 0; la < cb->L; la++)
			for (lb = 0; lb < cb->L; lb++) {
				int x = la < lb ? la : lb, y = la < lb ? lb : la;
				double js = 0.0;
				for (j = 0; j < g; j++)
					js += cb->acc[((size_t)x * (size_t)cb->L + (size_t)y) *
					    (size_t)cb->H + (size_t)(m * g + j)];
				js /= (double)g * (double)n_rows;
				sim[((size_t)m * (size_t)cb->L + (size_t)la) * (size_t)cb->L + (size_t)lb] =
				    la == lb ? 1.0f : (float)(1.0 - js);
			}
}

int
eng_pod_calibrate(struct eng_ctx *c, const int32_t *const *texts, const int64_t *lens,
    int n_texts, int q, double delta, double target_saving, struct eng_pod_map **out,
    void (*progress)(void *arg, int done, int total), void *arg, char *why, size_t why_len)
{
	const struct eng_model *m = eng_ctx_model(c);
	struct calib cb;
	struct eng_kv *kv = NULL;
	float *sim = NULL;
	int64_t n_rows = 0;
	int i, rc;

	*out = NULL;
	memset(&cb, 0, sizeof(cb));
	if (n_texts <= 0 || q <= 0)
		return eng_fail(why, why_len, ENG_ERR_ARG, "pod-calibrate: no texts, or q <= 0");
	for (i = 0; i < n_texts; i++) {
		if (lens[i] < 2 || lens[i] > m->hp.n_ctx_train)
			return eng_fail(why, why_len, ENG_ERR_ARG,
			    "pod-calibrate: text %d has %lld tokens (need 2..%d)", i,
			    (long long)lens[i], m->hp.n_ctx_train);
		cb.n_max = lens[i] > cb.n_max ? lens[i] : cb.n_max;
	}
	cb.m = m;
	cb.L = m->hp.n_layer;
	cb.H = m->hp.n_head;
	cb.KV = m->hp.n_head_kv;
	cb.hd = m->hp.head_dim;
	cb.q = q;
	cb.rows = malloc((size_t)cb.L * (size_t)cb.H * (size_t)q * (size_t)cb.n_max * sizeof(float));
	cb.acc = calloc((size_t)cb.L * (size_t)cb.L * (size_t)cb.H, sizeof(double));
	cb.logit = malloc((size_t)cb.n_max * sizeof(double));
	sim = malloc((size_t)cb.KV * (size_t)cb.L * (size_t)cb.L * sizeof(float));
	rc = eng_kv_init(&kv, m, cb.n_max + 1);
	if (rc || !cb.rows || !cb.acc || !cb.logit || !sim) {
		rc = eng_fail(why, why_len, ENG_ERR_NOMEM, "pod-calibrate: out of memory");
		goto out;
	}
	for (i = 0; i < n_texts; i++) {
		if ((rc = calib_text(c, kv, &cb, texts[i], lens[i]))) {
			eng_fail(why, why_len, rc, "pod-calibrate: text %d: %s", i, eng_strerror(rc));
			goto out;
		}
		n_rows += cb.q_eff;
		if (progress)
			progress(arg, i + 1, n_texts);
	}
	calib_sim(&cb, n_rows, sim);
	rc = eng_pod_map_from_sim(out, sim, cb.L, cb.H, cb.KV, delta, target_saving);
	if (rc) {
		eng_fail(why, why_len, rc, "pod-calibrate: grouping failed: %s", eng_strerror(rc));
		goto out;
	}
	(*out)->n_texts = n_texts;
	(*out)->q = q;
	(*out)->n_cal = (int)cb.n_max;
	memcpy((*out)->model_fp, eng_model_fingerprint(m), sizeof((*out)->model_fp));
out:
	eng_kv_free(kv);
	free(cb.rows);
	free(cb.acc);
	free(cb.logit);
	free(sim);
	return rc;
}
