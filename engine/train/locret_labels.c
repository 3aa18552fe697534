/*
 * locret_labels.c: the label pass of retaining-head training (spec/locret.md
 * §2, §4.2, §7.1): one forward of the frozen model over P ++ A that keeps,
 * per layer, the heads' input for the prompt tokens and the CIS labels.
 *
 * A hook after every layer's attention sees the chunk's pre-RoPE q/k/v and
 * rotated queries, and the cache holds every earlier token's rotated key at
 * its true position (original position mode, nothing evicted).  For chunk
 * tokens at positions < n_p it copies u_t = [q | k | v] into the example;
 * for answer tokens (positions >= n_p) it computes, per KV head m, the
 * scaled logits of the g queries of m's group against the n_p prompt keys
 * (one sgemm per block of answer tokens) and folds them into the running
 * max S[l][m][k].  Answer→answer logits are never computed.  Chunks may mix
 * prompt and answer tokens, and the chunk size does not change the labels
 * beyond float summation order (the sgemm over a block).
 *
 * Self-answered examples (answer == NULL): the prompt is prefilled with the
 * hook, then each greedy token is fed back with the hook (so its logits
 * count) until gen_max tokens or an end-of-generation token, which is fed
 * too; one prefill serves both the answer and the labels (spec §4.2).
 */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/run/forward_hook.h"
#include "engine/train/train.h"

#define LAB_BLOCK 64 /* answer tokens per logit sgemm */

struct lab {
	struct eng_train_example *ex;
	int H, KV, hd;
	float scale;
	float *qb;    /* (LAB_BLOCK·g, hd) gathered queries of one group */
	float *logit; /* (LAB_BLOCK·g, n_p) */
};

/* Features of prompt tokens, label maxima from answer tokens. */
static int
lab_after_attn(void *arg, struct eng_kv *kv, int layer, const struct eng_fwd_layer_info *info)
{
	struct lab *lb = arg;
	struct eng_train_example *ex = lb->ex;
	const struct eng_kv_layer *Ly = &kv->layer[layer];
	int64_t n_p = ex->n_p, d_in = ex->d_in, p0 = kv->next_pos, t, t0, r, k;
	int64_t nq = (int64_t)lb->H * lb->hd, nk = (int64_t)lb->KV * lb->hd;
	int g = lb->H / lb->KV, m, j;

	for (t = 0; t < info->n_tok && p0 + t < n_p; t++) {
		float *u = ex->u + ((size_t)layer * (size_t)n_p + (size_t)(p0 + t)) * (size_t)d_in;
		memcpy(u, info->qpre + t * nq, (size_t)nq * sizeof(float));
		memcpy(u + nq, info->kpre + t * nk, (size_t)nk * sizeof(float));
		memcpy(u + nq + nk, info->v + t * nk, (size_t)nk * sizeof(float));
	}
	for (t0 = n_p > p0 ? n_p - p0 : 0; t0 < info->n_tok; t0 += LAB_BLOCK) {
		int64_t nb = info->n_tok - t0 < LAB_BLOCK ? info->n_tok - t0 : LAB_BLOCK;
		for (m = 0; m < lb->KV; m++) {
			float *s = ex->s + ((size_t)layer * (size_t)lb->KV + (size_t)m) * (size_t)n_p;
			const float *kr = Ly->kr + Ly->off[m] * lb->hd; /* row = position */
			for (r = 0; r < nb; r++)
				for (j = 0; j < g; j++)
					memcpy(lb->qb + (r * g + j) * lb->hd,
					    info->q + (t0 + r) * nq + (int64_t)(m * g + j) * lb->hd,
					    (size_t)lb->hd * sizeof(float));
			/* logit (nb·g, n_p) = scale · Q · Krᵀ */
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)(nb * g), (int)n_p,
			    lb->hd, lb->scale, lb->qb, lb->hd, kr, lb->hd, 0.0f, lb->logit, (int)n_p);
			for (r = 0; r < nb * g; r++) {
				const float *row = lb->logit + r * n_p;
				for (k = 0; k < n_p; k++)
					s[k] = row[k] > s[k] ? row[k] : s[k];
			}
		}
	}
	return 0;
}

void
eng_train_example_free(struct eng_train_example *ex)
{
	if (!ex)
		return;
	free(ex->u);
	free(ex->s);
	free(ex->answer);
	free(ex);
}

/* Feed ids[0..n) through the model with the hook, in chunks. */
static int
lab_feed(struct eng_ctx *c, struct eng_kv *kv, const int32_t *ids, int64_t n, float *logits,
    const struct eng_fwd_hook *hook)
{
	int64_t s = 0, chunk = eng_ctx_max_chunk(c);
	int rc;
	while (s < n) {
		int64_t len = n - s < chunk ? n - s : chunk;
		rc = eng_forward_chunk_hooked(c, kv, ids + s, len, s + len == n ? logits : NULL, hook);
		if (rc)
			return rc;
		s += len;
	}
	return 0;
}

int
eng_train_collect(struct eng_ctx *c, const int32_t *prompt, int64_t n_p,
    const int32_t *answer, int64_t n_a, int64_t gen_max, const struct eng_tok *tok,
    struct eng_train_example **out)
{
	const struct eng_model *m = eng_ctx_model(c);
	const struct eng_hparams *hp = &m->hp;
	struct eng_train_example *ex = NULL;
	struct eng_kv *kv = NULL;
	struct lab lb;
	struct eng_fwd_hook hook;
	float *logits = NULL;
	int64_t n_cap = answer ? n_a : gen_max, i;
	int g = hp->n_head / hp->n_head_kv, rc;

	*out = NULL;
	memset(&lb, 0, sizeof(lb));
	/* answer == NULL with gen_max == 0: the prompt's features only */
	if (!prompt || n_p < 1 || n_cap < 0 || (answer && n_a < 1))
		return ENG_ERR_ARG;
	if (n_p + n_cap > hp->n_ctx_train)
		return ENG_ERR_CONTEXT;
	ex = calloc(1, sizeof(*ex));
	if (!ex)
		return ENG_ERR_NOMEM;
	ex->n_layer = hp->n_layer;
	ex->n_head_kv = hp->n_head_kv;
	ex->d_in = (int64_t)(hp->n_head + 2 * hp->n_head_kv) * hp->head_dim;
	ex->n_p = n_p;
	ex->u = malloc((size_t)hp->n_layer * (size_t)n_p * (size_t)ex->d_in * sizeof(float));
	ex->s = malloc((size_t)hp->n_layer * (size_t)hp->n_head_kv * (size_t)n_p * sizeof(float));
	ex->answer = malloc((size_t)(n_cap > 0 ? n_cap : 1) * sizeof(int32_t));
	lb.qb = malloc((size_t)LAB_BLOCK * (size_t)g * (size_t)hp->head_dim * sizeof(float));
	lb.logit = malloc((size_t)LAB_BLOCK * (size_t)g * (size_t)n_p * sizeof(float));
	logits = answer || !n_cap ? NULL : malloc((size_t)hp->n_vocab * sizeof(float));
	rc = eng_kv_init(&kv, m, n_p + n_cap + 1);
	if (rc || !ex->u || !ex->s || !ex->answer || !lb.qb || !lb.logit ||
	    (!answer && n_cap && !logits)) {
		rc = rc ? rc : ENG_ERR_NOMEM;
		goto out;
	}
	for (i = 0; i < (int64_t)hp->n_layer * hp->n_head_kv * n_p; i++)
		ex->s[i] = -INFINITY;
	lb.ex = ex;
	lb.H = hp->n_head;
	lb.KV = hp->n_head_kv;
	lb.hd = hp->head_dim;
	lb.scale = 1.0f / sqrtf((float)hp->head_dim);
	memset(&hook, 0, sizeof(hook));
	hook.after_attn = lab_after_attn;
	hook.arg = &lb;
	hook.stat_from = -1;

	if (answer) {
		/* teacher forcing: P ++ A as one stream */
		int32_t *seq = malloc((size_t)(n_p + n_a) * sizeof(int32_t));
		if (!seq) {
			rc = ENG_ERR_NOMEM;
			goto out;
		}
		memcpy(seq, prompt, (size_t)n_p * sizeof(int32_t));
		memcpy(seq + n_p, answer, (size_t)n_a * sizeof(int32_t));
		memcpy(ex->answer, answer, (size_t)n_a * sizeof(int32_t));
		ex->n_a = n_a;
		rc = lab_feed(c, kv, seq, n_p + n_a, NULL, &hook);
		free(seq);
		if (rc)
			goto out;
	} else {
		struct eng_sampler smp;
		eng_sampler_init(&smp, 0.0f, 1.0f, 0);
		if ((rc = lab_feed(c, kv, prompt, n_p, logits, &hook)))
			goto out;
		while (ex->n_a < gen_max) {
			int32_t id = eng_sample(&smp, logits, hp->n_vocab);
			int stop = tok && eng_tok_is_eog(tok, id);
			ex->answer[ex->n_a++] = id;
			if ((rc = lab_feed(c, kv, &id, 1, stop ? NULL : logits, &hook)))
				goto out;
			if (stop)
				break;
		}
	}
	*out = ex;
	ex = NULL;
out:
	eng_kv_free(kv);
	free(lb.qb);
	free(lb.logit);
	free(logits);
	eng_train_example_free(ex);
	return rc;
}

/* kvzip's score of every unit, as it stores them: ingest ids with the
 * kvzip policy p at ratio 1 (every unit kept, every segment scored by its
 * reconstruction) and read the pool's scores back by position. */
int
eng_train_label_kvzip(struct eng_ctx *c, struct eng_policy *p, const int32_t *ids, int64_t n,
    int64_t chunk, struct eng_train_example *ex)
{
	const struct eng_model *m = eng_ctx_model(c);
	struct eng_kv *kv = NULL;
	int64_t u, kept = 0;
	int l, g, rc;

	if (!ex || ex->n_p != n || strcmp(eng_policy_name(p), "kvzip") ||
	    eng_policy_ratio(p) != 1.0)
		return ENG_ERR_ARG;
	if ((rc = eng_kv_init(&kv, m, eng_policy_rows_per_head(p, n, chunk, 0))))
		return rc;
	if ((rc = eng_ingest(c, kv, p, ids, n, chunk, NULL)))
		goto out;
	for (l = 0; l < kv->n_layer; l++)
		for (g = 0; g < kv->n_head_kv; g++) {
			const struct eng_kv_layer *L = &kv->layer[l];
			float *s = ex->s + ((size_t)l * (size_t)kv->n_head_kv + (size_t)g) * (size_t)n;
			for (u = 0; u < L->len[g]; u++) {
				uint32_t pos = L->pos[L->off[g] + u];
				float sc = L->score[L->off[g] + u];
				if (pos >= (uint64_t)n) {
					rc = ENG_ERR_SHAPE;
					goto out;
				}
				/* sinks carry +inf (always kept): the largest probability */
				s[pos] = sc >= 1.0f ? 0.0f : logf(sc > ENG_KVZIP_LABEL_FLOOR ? sc :
				    ENG_KVZIP_LABEL_FLOOR);
				kept++;
			}
		}
	if (kept != (int64_t)kv->n_layer * kv->n_head_kv * n)
		rc = ENG_ERR_SHAPE; /* ratio 1 keeps every unit */
out:
	eng_kv_free(kv);
	return rc;
}
