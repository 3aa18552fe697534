/*
 * kvzip_ingest.c: KVzip's ingest (arXiv 2505.23416 §3; docs/KVZIP.md):
 * segments, the reconstruction pass that scores them, and the selection
 * after each.
 *
 * Per segment [lo, hi) of the document:
 *   1. prefill it over the units kept so far (plain chunks, nothing evicted);
 *   2. append the reconstruction input (a user request to repeat the
 *      context, naming the previous segment's last KVZIP_ANCHOR tokens after
 *      the first, the assistant header, then the segment's own tokens
 *      teacher-forced), scoring every unit of the segment by the largest
 *      probability any of those queries and any query head of its GQA group
 *      gives it, the softmax taken over the sinks, the segment and the
 *      repeat's own keys (§3.2; kern_attn_stats.max);
 *   3. drop the reconstruction's own units again (eng_kv_drop_tail);
 *   4. keep, over all layers and heads, the budget of the tokens read so far
 *      (eng_kvzip_select).
 * A segment is at most `seg` tokens and at most what lets its
 * reconstruction end inside the model's window (hi + prompt + (hi − lo) <=
 * n_ctx): RoPE then sees no distance it was not trained on.  A last stretch
 * too short to stand alone joins the segment before it; if the window
 * leaves a segment no room at all, its reconstruction runs past the window
 * (scores only, up to twice the window).
 *
 * Scores stay in the pool's score slot, so units of earlier segments compete
 * with later ones, and a stored snapshot can be shrunk without a model run.
 * tail=N scores the document's last N units +inf like the sinks; demote=F
 * scales the scored segment's structural units (kvzip_demoted) by F before
 * the selection, so the stored scores carry both into a later shrink.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cache/kvzip.h"
#include "engine/run/forward_hook.h"
#include "engine/run/kvzip_ingest.h"

struct kvzip_run {
	struct eng_kv *kv;
	int n_group;
	const float *gram; /* KVzip+: kvzip_prompt.gram, or NULL */
	struct kvzip_refit *refit; /* refit=1: the reconstruction's queries, or NULL */
	int64_t *seg_from; /* (n_layer, n_head_kv) first unit of the segment */
	int64_t seg_len;
};

/* ‖W_O v‖ = sqrt(vᵀ G v). */
static float
kvzip_out_norm(const float *G, const float *v, int hd)
{
	double s = 0.0;
	int a, b;
	for (a = 0; a < hd; a++) {
		double row = 0.0;
		for (b = 0; b < hd; b++)
			row += (double)G[a * hd + b] * (double)v[b];
		s += row * (double)v[a];
	}
	return s > 0.0 ? (float)sqrt(s) : 0.0f;
}

/* Hook: fold the restricted maxima of layer `layer` into the segment's
 * unit scores (max over the GQA group and over chunks). */
static int
kvzip_after_attn(void *arg, struct eng_kv *kv, int layer, const struct eng_fwd_layer_info *info)
{
	struct kvzip_run *r = arg;
	struct eng_kv_layer *L = &kv->layer[layer];
	int H = kv->n_head_kv, g, j;
	int64_t u;

	if (r->refit)
		kvzip_refit_capture(r->refit, layer, info->q, info->n_tok);
	for (g = 0; g < H; g++) {
		int64_t from = r->seg_from[(size_t)layer * (size_t)H + (size_t)g];
		float *score = L->score + L->off[g];
		for (u = from; u < from + r->seg_len; u++) {
			float best = score[u];
			for (j = 0; j < r->n_group; j++) {
				int h = g * r->n_group + j;
				float v = info->stat[(size_t)h * (size_t)info->stat_stride + (size_t)u];
				if (r->gram)
					v *= kvzip_out_norm(r->gram + ((size_t)layer * (size_t)(H *
					    r->n_group) + (size_t)h) * (size_t)(kv->head_dim * kv->head_dim),
					    L->v + (size_t)(L->off[g] + u) * (size_t)kv->head_dim, kv->head_dim);
				best = v > best ? v : best;
			}
			score[u] = best;
		}
	}
	return 0;
}

/* KVzip+: the Gram matrices W_O^(h)ᵀ W_O^(h) of every layer and query head,
 * from the dequantized output projections. */
static int
kvzip_make_gram(struct kvzip_prompt *pr, struct eng_ctx *c, const struct eng_model *m)
{
	const struct eng_hparams *hp = &m->hp;
	struct kern_ctx *kc = eng_ctx_kern(c);
	int64_t E = hp->n_embd, Q = (int64_t)hp->n_head * hp->head_dim, hd = hp->head_dim;
	int32_t *ids = malloc((size_t)E * sizeof(int32_t));
	float *w = malloc((size_t)(E * Q) * sizeof(float));
	float *gram = malloc((size_t)hp->n_layer * (size_t)Q * (size_t)hd * sizeof(float));
	int64_t e, a, b;
	int l, h, rc = 0;

	if (!ids || !w || !gram) {
		rc = ENG_ERR_NOMEM;
		goto out;
	}
	for (e = 0; e < E; e++)
		ids[e] = (int32_t)e;
	for (l = 0; !rc && l < hp->n_layer; l++) {
		if (kern_ctx_ops(kc)->get_rows(kc, w, &m->layers[l].wo, ids, E)) {
			rc = ENG_ERR_KERNEL;
			break;
		}
		for (h = 0; h < hp->n_head; h++) {
			float *G = gram + ((size_t)l * (size_t)hp->n_head + (size_t)h) * (size_t)(hd * hd);
			for (a = 0; a < hd; a++)
				for (b = 0; b <= a; b++) {
					double s = 0.0;
					for (e = 0; e < E; e++)
						s += (double)w[e * Q + h * hd + a] * (double)w[e * Q + h * hd + b];
					G[a * hd + b] = G[b * hd + a] = (float)s;
				}
		}
	}
out:
	free(ids);
	free(w);
	if (rc)
		free(gram);
	else
		pr->gram = gram;
	return rc;
}

/* Progress of a segment [lo, lo + seg): its prefill counts for the first
 * half of its tokens, its reconstruction for the second. */
struct kvzip_progress {
	eng_progress_cb cb;
	void *arg;
	int64_t lo, seg, total;
	int second; /* 0: prefill, 1: reconstruction */
};

/* Run ids[0..n) through the model in chunks of at most `chunk`, reporting
 * progress (and honouring a cancel) after each. */
static int
kvzip_feed(struct eng_ctx *c, struct eng_kv *kv, const int32_t *ids, int64_t n, int64_t chunk,
    float *last_logits, const struct eng_fwd_hook *hook, const struct kvzip_progress *pg)
{
	int64_t s, len;
	int rc;
	for (s = 0; s < n; s += len) {
		len = n - s < chunk ? n - s : chunk;
		rc = eng_forward_chunk_hooked(c, kv, ids + s, len, s + len == n ? last_logits : NULL,
		    hook);
		if (rc)
			return rc;
		if (pg->cb && pg->cb(pg->arg, pg->lo + (pg->seg * pg->second + pg->seg * (s + len) /
		    n) / 2, pg->total))
			return ENG_ERR_CANCELLED;
	}
	return 0;
}

/* Length of the segment starting at lo (see the header). */
static int64_t
kvzip_seg_len(const struct eng_policy *p, int64_t lo, int64_t n, int64_t n_ctx,
    int64_t n_prompt)
{
	int64_t s = p->i[0], fit = (n_ctx - n_prompt - lo) / 2;
	if (fit < s)
		s = fit;
	if (s < KVZIP_MIN_SEG)
		s = KVZIP_MIN_SEG;
	if (n - lo - s < KVZIP_MIN_SEG)
		s = n - lo;
	return s;
}

/* The reconstruction input of segment [lo, hi): prompt, then the segment's
 * tokens from `from`.  *out malloc'd. */
static int64_t
kvzip_repeat_ids(const struct kvzip_prompt *pr, const int32_t *ids, int64_t lo, int64_t from,
    int64_t hi, int32_t **out)
{
	int64_t n = 0, na = lo >= KVZIP_ANCHOR ? KVZIP_ANCHOR : lo;
	int32_t *r = malloc((size_t)(pr->n_pre + na + pr->n_post + pr->n_first + hi - from) *
	    sizeof(int32_t));
	if (!r)
		return ENG_ERR_NOMEM;
	if (lo == 0 || na == 0) {
		memcpy(r, pr->first, (size_t)pr->n_first * sizeof(int32_t));
		n = pr->n_first;
	} else {
		memcpy(r, pr->pre, (size_t)pr->n_pre * sizeof(int32_t));
		n = pr->n_pre;
		memcpy(r + n, ids + lo - na, (size_t)na * sizeof(int32_t));
		n += na;
		memcpy(r + n, pr->post, (size_t)pr->n_post * sizeof(int32_t));
		n += pr->n_post;
	}
	memcpy(r + n, ids + from, (size_t)(hi - from) * sizeof(int32_t));
	*out = r;
	return n + hi - from;
}

/* demote=F: which positions of ids[0..n) are structural (kvpress PR #288):
 * a token of no letter or digit, used at least KVZIP_STRUCT_REPEATS times
 * in the document's text (from tpl on), and not glued between a token
 * ending and one starting with a word character ("3.3", "a/b").  *out
 * malloc'd (n flags), NULL when the option is off. */
static int
kvzip_demoted(const struct kvzip_prompt *pr, const int32_t *ids, int64_t n, int64_t tpl,
    uint8_t **out)
{
	uint32_t *uses;
	uint8_t *d;
	int64_t i;
	*out = NULL;
	if (!pr->cls)
		return 0;
	uses = calloc((size_t)pr->n_cls, sizeof(*uses));
	d = calloc((size_t)(n > 0 ? n : 1), 1);
	if (!uses || !d) {
		free(uses);
		free(d);
		return ENG_ERR_NOMEM;
	}
	for (i = tpl; i < n; i++)
		if (ids[i] >= 0 && ids[i] < pr->n_cls && uses[ids[i]] < UINT32_MAX)
			uses[ids[i]]++;
	for (i = tpl; i < n; i++) {
		int32_t id = ids[i];
		if (id < 0 || id >= pr->n_cls || !(pr->cls[id] & KVZIP_CLS_STRUCT) ||
		    uses[id] < KVZIP_STRUCT_REPEATS)
			continue;
		if (i > tpl && i + 1 < n && ids[i - 1] >= 0 && ids[i - 1] < pr->n_cls &&
		    ids[i + 1] >= 0 && ids[i + 1] < pr->n_cls &&
		    (pr->cls[ids[i - 1]] & KVZIP_CLS_TAIL) && (pr->cls[ids[i + 1]] & KVZIP_CLS_HEAD))
			continue; /* inside a word, a number, a path */
		d[i] = 1;
	}
	free(uses);
	*out = d;
	return 0;
}

/* Sinks: `sinks`, or with auto the template prefix when ids start with it. */
static int64_t
kvzip_sinks(const struct eng_policy *p, const struct kvzip_prompt *pr, const int32_t *ids,
    int64_t n, int64_t *tpl)
{
	*tpl = eng_doc_template_len(pr->tpl, pr->n_tpl, ids, n);
	return eng_doc_sinks(p->i[2], *tpl, n);
}

int
eng_kvzip_ingest(struct eng_policy *p, struct eng_ctx *c, struct eng_kv *kv,
    const int32_t *ids, int64_t n, int64_t chunk, float *last_logits, eng_progress_cb cb,
    void *arg)
{
	const struct eng_model *m = eng_ctx_model(c);
	struct kvzip_prompt *pr = p->priv;
	int H = kv->n_head_kv, NL = kv->n_layer, l, g;
	int64_t n_ctx = m->hp.n_ctx_train, lo = 0, n_sink, tpl, rows = kv->rows / H;
	int64_t prompt_max;
	struct kvzip_run run;
	struct kvzip_progress pg = { cb, arg, 0, 0, n, 0 };
	struct eng_fwd_hook hook;
	int32_t *rep = NULL;
	uint8_t *demoted = NULL;
	int64_t tail_from;
	int rc = 0;

	if (!pr)
		return ENG_ERR_ARG; /* eng_ingest_cb binds first */
	if (p->f[2] > 0.0 || p->i[4] > 0)
		return ENG_ERR_ARG; /* from= names a shrunk snapshot: made, not ingested */
	if (kv->pos_mode != ENG_POS_ORIGINAL)
		return ENG_ERR_ARG;
	prompt_max = (pr->n_pre + KVZIP_ANCHOR + pr->n_post > pr->n_first ?
	    pr->n_pre + KVZIP_ANCHOR + pr->n_post : pr->n_first);
	n_sink = kvzip_sinks(p, pr, ids, n, &tpl);
	tail_from = p->i[5] > 0 && p->i[5] < n ? n - p->i[5] : (p->i[5] > 0 ? 0 : n);
	if (p->f[3] < 1.0 && (rc = kvzip_demoted(pr, ids, n, tpl, &demoted)))
		return rc;
	memset(&run, 0, sizeof(run));
	run.kv = kv;
	run.n_group = m->hp.n_head / m->hp.n_head_kv;
	run.seg_from = malloc((size_t)NL * (size_t)H * sizeof(int64_t));
	if (!run.seg_from || (p->i[6] && kvzip_refit_new(&run.refit, NL, m->hp.n_head,
	    kv->head_dim))) {
		free(run.seg_from);
		free(demoted);
		return ENG_ERR_NOMEM;
	}
	memset(&hook, 0, sizeof(hook));
	hook.after_attn = kvzip_after_attn;
	hook.arg = &run;
	hook.stat_from = 0;
	hook.dom_from = run.seg_from;
	hook.n_lead = n_sink;
	hook.past_window = 1;
	if (p->i[3] == 1) { /* norm=plus */
		if (!pr->gram && (rc = kvzip_make_gram(pr, c, m))) {
			free(run.seg_from);
			free(demoted);
			kvzip_refit_free(run.refit);
			return rc;
		}
		run.gram = pr->gram;
		hook.row_norm_w = 1;
	}
	while (lo < n) {
		int64_t s = kvzip_seg_len(p, lo, n, n_ctx, prompt_max), hi = lo + s, n_rep, u;
		int64_t from = lo > tpl ? lo : tpl, target = eng_kvzip_keep(p, hi, n_sink);
		int64_t room = 2 * (p->i[0] + KVZIP_MIN_SEG) + prompt_max; /* the next segment's */
		for (l = 0; l < NL; l++)
			for (g = 0; g < H; g++)
				run.seg_from[(size_t)l * (size_t)H + (size_t)g] = kv->layer[l].len[g];
		pg.lo = lo;
		pg.seg = s;
		pg.second = 0;
		if ((rc = kvzip_feed(c, kv, ids + lo, s, chunk, hi == n ? last_logits : NULL, NULL,
		    &pg)))
			break;
		/* scores of the new units start at 0 (maxima of probabilities);
		 * sinks and the tail are kept */
		for (l = 0; l < NL; l++)
			for (g = 0; g < H; g++) {
				struct eng_kv_layer *L = &kv->layer[l];
				for (u = run.seg_from[(size_t)l * (size_t)H + (size_t)g]; u < L->len[g]; u++) {
					uint32_t at = L->pos[L->off[g] + u];
					L->score[L->off[g] + u] = at < (uint32_t)n_sink ||
					    (int64_t)at >= tail_from ? INFINITY : 0.0f;
				}
			}
		run.seg_len = s;
		if (run.refit)
			kvzip_refit_begin(run.refit, 0); /* no queries until a reconstruction */
		if (from < hi) {
			n_rep = kvzip_repeat_ids(pr, ids, lo, from, hi, &rep);
			if (n_rep < 0) {
				rc = (int)n_rep;
				break;
			}
			pg.second = 1;
			if (run.refit)
				kvzip_refit_begin(run.refit, n_rep);
			rc = kvzip_feed(c, kv, rep, n_rep, chunk, NULL, &hook, &pg);
			free(rep);
			rep = NULL;
			if (!rc)
				rc = eng_kv_drop_tail(kv, n_rep);
			if (rc)
				break;
		}
		if (demoted) /* the segment's structural units, before they compete */
			for (l = 0; l < NL; l++)
				for (g = 0; g < H; g++) {
					struct eng_kv_layer *L = &kv->layer[l];
					for (u = run.seg_from[(size_t)l * (size_t)H + (size_t)g]; u < L->len[g];
					    u++) {
						uint32_t at = L->pos[L->off[g] + u];
						float *sc = &L->score[L->off[g] + u];
						if ((int64_t)at < n && demoted[at] && isfinite(*sc))
							*sc *= (float)p->f[3]; /* never a kept sink's +inf */
					}
				}
		if (target < hi) {
			int64_t cap = (int64_t)H * (rows - (hi < n ? room : 0) - 1);
			if ((rc = eng_kvzip_select(p, kv, n_sink, target, cap, run.refit ?
			    kvzip_refit_compact : NULL, run.refit)))
				break;
		}
		lo = hi;
	}
	free(run.seg_from);
	free(demoted);
	kvzip_refit_free(run.refit);
	return rc;
}
