/*
 * ingest.c: chunked prefill with eviction (DESIGN.md §1 ingest path).
 *
 * The document is cut into chunks of B tokens (a remainder shorter than the
 * policy's observation window is merged into the previous chunk, so the
 * final eviction always sees a full window: spec/adakv.md §4.2).  Each chunk
 * runs through every layer; right after layer l's attention a hook hands the
 * layer's units and the chunk's attention statistics to the policy, which
 * chooses what to keep, and the layer is compacted.  The evicted cache is
 * first read by the next chunk, so evicting layer by layer is exact and the
 * pool never holds more than n_kv·(b + chunk) units per layer.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/cache/kv_pod.h"
#include "engine/cache/kvzip.h" /* for eng_policy_kvzip */
#include "engine/cache/policy_ops.h"
#include "engine/run/forward_hook.h"
#include "engine/run/kvzip_ingest.h"

struct ingest {
	struct eng_policy *p;
	const struct eng_model *m;
	int64_t n_doc;
	int is_last;
	struct eng_evict_head *heads; /* (n_kv) */
	int64_t *keep;                /* (n_kv, rows) */
	int64_t *scratch;             /* (rows of a layer) */
	const int64_t **keep_ptr;     /* (n_kv) */
	int64_t *n_keep;              /* (n_kv) */
	float *stat;                  /* (n_kv, rows): group-mean statistics */
	int64_t rows;
};

/* The hook: score and compact layer `layer` after its attention. */
static int
ingest_after_attn(void *arg, struct eng_kv *kv, int layer, const struct eng_fwd_layer_info *info)
{
	struct ingest *in = arg;
	struct eng_kv_layer *L = &kv->layer[layer];
	const struct eng_hparams *hp = &in->m->hp;
	int H = hp->n_head_kv, g = hp->n_head / hp->n_head_kv, hd = hp->head_dim, m, j, rc;
	struct eng_evict e;
	int64_t u;

	if (in->p->ops->ingest_layer) /* cross-layer eviction (PoD) */
		return in->p->ops->ingest_layer(in->p, kv, layer, info, in->is_last, in->n_doc);
	for (m = 0; m < H; m++) {
		struct eng_evict_head *h = &in->heads[m];
		h->n = L->len[m];
		h->pos = L->pos + L->off[m];
		h->score = L->score + L->off[m];
		h->kpre = L->k + L->off[m] * hd;
		h->keep = in->keep + (size_t)m * (size_t)in->rows;
		h->n_keep = 0;
		h->stat = NULL;
		if (info->stat) {
			float *s = in->stat + (size_t)m * (size_t)in->rows;
			for (u = 0; u < h->n; u++) {
				float acc = 0.0f;
				for (j = 0; j < g; j++)
					acc += info->stat[(size_t)(m * g + j) * (size_t)info->stat_stride +
					    (size_t)u];
				s[u] = acc / (float)g;
			}
			h->stat = s;
		}
	}
	memset(&e, 0, sizeof(e));
	e.layer = layer;
	e.n_layer = hp->n_layer;
	e.n_head_kv = H;
	e.head_dim = hd;
	e.is_last = in->is_last;
	e.chunk_end = info->chunk_end;
	e.n_tok = info->n_tok;
	e.n_doc = in->n_doc;
	e.h = in->heads;
	e.info = info;
	e.scratch = in->scratch;
	rc = in->p->ops->select(in->p, &e);
	if (rc)
		return rc;
	for (m = 0; m < H; m++) {
		in->keep_ptr[m] = in->heads[m].keep;
		in->n_keep[m] = in->heads[m].n_keep;
	}
	/* Always re-lay out the layer, even when nothing was evicted, so every
	 * head regains room for the next chunk. */
	return eng_kv_compact(kv, layer, in->keep_ptr, in->n_keep);
}

int
eng_ingest(struct eng_ctx *c, struct eng_kv *kv, struct eng_policy *p, const int32_t *ids,
    int64_t n, int64_t chunk, float *last_logits)
{
	return eng_ingest_cb(c, kv, p, ids, n, chunk, last_logits, NULL, NULL);
}

int
eng_ingest_cb(struct eng_ctx *c, struct eng_kv *kv, struct eng_policy *p, const int32_t *ids,
    int64_t n, int64_t chunk, float *last_logits, eng_progress_cb cb, void *arg)
{
	const struct eng_model *m = eng_ctx_model(c);
	struct ingest in;
	struct eng_fwd_hook hook;
	int64_t s = 0, w = p->ops->window(p), H = m->hp.n_head_kv;
	int rc = 0;

	if (n <= 0 || chunk <= 0 || eng_policy_max_chunk(p, chunk) > eng_ctx_max_chunk(c))
		return ENG_ERR_ARG;
	if (kv->next_pos != 0 || eng_kv_layer_units(kv, 0) != 0)
		return ENG_ERR_ARG; /* ingest starts from an empty cache */
	if (p->ops->pos_mode)
		kv->pos_mode = p->ops->pos_mode(p); /* e.g. Locret's slot positions */
	/* Locret's heads and PoD's block map must match the model that runs
	 * (query-head count included); binding twice is harmless. */
	if ((rc = eng_policy_bind(p, m, NULL, 0)) || (rc = eng_policy_resolve(p, n, NULL, 0)))
		return rc;
	eng_kv_drop_pod(kv); /* dense unless the policy installs a PoD layout */
	/* KVzip reads the document its own way: segments and reconstruction
	 * passes, driven from run/ since they run the forward pass */
	if (p->ops == &eng_policy_kvzip)
		return eng_kvzip_ingest(p, c, kv, ids, n, chunk, last_logits, cb, arg);
	if (p->ops->ingest_begin && (rc = p->ops->ingest_begin(p, kv, m)))
		return rc;
	memset(&in, 0, sizeof(in));
	in.p = p;
	in.m = m;
	in.n_doc = n;
	in.rows = kv->rows;
	in.heads = calloc((size_t)H, sizeof(*in.heads));
	in.keep = malloc((size_t)H * (size_t)kv->rows * sizeof(int64_t));
	in.scratch = malloc((size_t)kv->rows * sizeof(int64_t) * 2);
	in.keep_ptr = calloc((size_t)H, sizeof(*in.keep_ptr));
	in.n_keep = calloc((size_t)H, sizeof(int64_t));
	in.stat = malloc((size_t)H * (size_t)kv->rows * sizeof(float));
	if (!in.heads || !in.keep || !in.scratch || !in.keep_ptr || !in.n_keep || !in.stat) {
		rc = ENG_ERR_NOMEM;
		goto out;
	}
	memset(&hook, 0, sizeof(hook));
	hook.after_attn = ingest_after_attn;
	hook.arg = &in;
	while (s < n) {
		int64_t len = n - s < chunk ? n - s : chunk;
		if (s + len < n && n - (s + len) < w)
			len = n - s; /* merge a short remainder: full final window */
		in.is_last = s + len == n;
		hook.stat_from = p->ops->stat_from(p, len);
		rc = eng_forward_chunk_hooked(c, kv, ids + s, len, in.is_last ? last_logits : NULL,
		    &hook);
		if (!rc && p->ops->after_chunk)
			rc = p->ops->after_chunk(p, kv, ids, s + len, n);
		if (rc)
			goto out;
		s += len;
		if (cb && cb(arg, s, n)) {
			rc = ENG_ERR_CANCELLED;
			goto out;
		}
	}
out:
	free(in.heads);
	free(in.keep);
	free(in.scratch);
	free(in.keep_ptr);
	free(in.n_keep);
	free(in.stat);
	return rc;
}
