/*
 * kvzip_refit.c: kvzip's refit=1 (issue 28, item 3): the reference queries
 * of a segment's reconstruction, and at the cut after it the refit of every
 * (layer, KV head) by them (eng_refit_head: a bias per kept key and
 * least-squares values, engine/cache/refit.c).
 *
 * Queries: of the n_rep reconstruction tokens, every ⌈n_rep / Q⌉-th one's
 * rotated query of every query head, Q = KVZIP_REFIT_QUERIES, so at most
 * n_layer · n_head · Q · head_dim floats (17.7 MB for SmolLM2-135M) beside
 * the pool.  A KV head is refit on the queries of its GQA group.  The cut
 * then compacts the refit units; from the first refit on the pool's
 * attention adds the biases (eng_kv.has_bias).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cache/kvzip.h"
#include "engine/cache/refit.h"

struct kvzip_refit {
	int n_layer, n_head, head_dim;
	float *q;        /* (n_layer, n_head, KVZIP_REFIT_QUERIES, head_dim) */
	int64_t *n_q;    /* (n_layer) queries kept in this segment */
	int64_t *seen;   /* (n_layer) reconstruction tokens seen in this segment */
	int64_t every;   /* keep every every-th token */
	float *tq, *tb, *tv; /* scratch: a group's queries, a head's bias and values */
	int64_t tb_cap;
};

int
kvzip_refit_new(struct kvzip_refit **out, int n_layer, int n_head, int head_dim)
{
	struct kvzip_refit *r = calloc(1, sizeof(*r));
	size_t nq = (size_t)n_layer * (size_t)n_head * KVZIP_REFIT_QUERIES * (size_t)head_dim;
	*out = NULL;
	if (!r)
		return ENG_ERR_NOMEM;
	r->n_layer = n_layer;
	r->n_head = n_head;
	r->head_dim = head_dim;
	r->every = 1;
	r->q = malloc(nq * sizeof(float));
	r->n_q = calloc((size_t)n_layer, sizeof(int64_t));
	r->seen = calloc((size_t)n_layer, sizeof(int64_t));
	r->tq = malloc((size_t)n_head * KVZIP_REFIT_QUERIES * (size_t)head_dim * sizeof(float));
	if (!r->q || !r->n_q || !r->seen || !r->tq) {
		kvzip_refit_free(r);
		return ENG_ERR_NOMEM;
	}
	*out = r;
	return 0;
}

void
kvzip_refit_free(struct kvzip_refit *r)
{
	if (!r)
		return;
	free(r->q);
	free(r->n_q);
	free(r->seen);
	free(r->tq);
	free(r->tb);
	free(r->tv);
	free(r);
}

void
kvzip_refit_begin(struct kvzip_refit *r, int64_t n_rep)
{
	r->every = (n_rep + KVZIP_REFIT_QUERIES - 1) / KVZIP_REFIT_QUERIES;
	if (r->every < 1)
		r->every = 1;
	memset(r->n_q, 0, (size_t)r->n_layer * sizeof(int64_t));
	memset(r->seen, 0, (size_t)r->n_layer * sizeof(int64_t));
}

void
kvzip_refit_capture(struct kvzip_refit *r, int layer, const float *q, int64_t n_tok)
{
	int64_t t, hd = r->head_dim, ld = (int64_t)r->n_head * hd;
	int h;
	for (t = 0; t < n_tok; t++) {
		int64_t i = r->n_q[layer];
		if ((r->seen[layer] + t) % r->every || i >= KVZIP_REFIT_QUERIES)
			continue;
		for (h = 0; h < r->n_head; h++)
			memcpy(r->q + (((size_t)layer * (size_t)r->n_head + (size_t)h) *
			    KVZIP_REFIT_QUERIES + (size_t)i) * (size_t)hd, q + t * ld + h * hd,
			    (size_t)hd * sizeof(float));
		r->n_q[layer] = i + 1;
	}
	r->seen[layer] += n_tok;
}

int
kvzip_refit_compact(void *arg, struct eng_kv *kv, int layer, const int64_t *const *keep,
    const int64_t *n_keep)
{
	struct kvzip_refit *r = arg;
	struct eng_kv_layer *L = &kv->layer[layer];
	int H = kv->n_head_kv, G = r->n_head / H, hd = kv->head_dim, m, j;
	int64_t nq = r->n_q[layer], u;
	int rc;

	if (!nq)
		return 0; /* no reconstruction this segment: nothing to fit on */
	for (m = 0; m < H; m++) {
		struct eng_refit_in in;
		int64_t off = L->off[m];
		if (n_keep[m] < 1 || n_keep[m] == L->len[m])
			continue; /* nothing cut here */
		if (n_keep[m] > r->tb_cap) {
			free(r->tb);
			free(r->tv);
			r->tb = malloc((size_t)n_keep[m] * sizeof(float));
			r->tv = malloc((size_t)n_keep[m] * (size_t)hd * sizeof(float));
			r->tb_cap = r->tb && r->tv ? n_keep[m] : 0;
			if (!r->tb_cap)
				return ENG_ERR_NOMEM;
		}
		for (j = 0; j < G; j++) /* the group's queries, contiguous */
			memcpy(r->tq + (size_t)j * (size_t)nq * (size_t)hd, r->q + (((size_t)layer *
			    (size_t)r->n_head + (size_t)(m * G + j)) * KVZIP_REFIT_QUERIES) *
			    (size_t)hd, (size_t)nq * (size_t)hd * sizeof(float));
		memset(&in, 0, sizeof(in));
		in.k = L->kr + off * hd;
		in.v = L->v + off * hd;
		in.bias_in = kv->has_bias ? L->bias + off : NULL;
		in.n = L->len[m];
		in.d = hd;
		in.keep = keep[m];
		in.m = n_keep[m];
		in.q = r->tq;
		in.t = (int64_t)G * nq;
		in.scale = 1.0f / sqrtf((float)hd);
		in.ridge = 1e-3;
		in.sweeps = 50;
		if ((rc = eng_refit_head(&in, r->tb, r->tv)))
			return rc;
		for (u = 0; u < n_keep[m]; u++) {
			L->bias[off + keep[m][u]] = r->tb[u];
			memcpy(L->v + (off + keep[m][u]) * hd, r->tv + u * hd, (size_t)hd * sizeof(float));
		}
	}
	if (!kv->has_bias) { /* every unit appended so far carries bias 0 */
		int l, g;
		for (l = 0; l < kv->n_layer; l++)
			if (l != layer)
				for (g = 0; g < H; g++)
					memset(kv->layer[l].bias + kv->layer[l].off[g], 0,
					    (size_t)kv->layer[l].len[g] * sizeof(float));
	}
	kv->has_bias = 1;
	return 0;
}
