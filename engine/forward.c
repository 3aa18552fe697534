/*
 * forward.c: the Llama forward pass for a chunk of tokens against a KV
 * cache (spec/model.md §5), through the op table of kernels.h.
 *
 * Per layer: RMSNorm, Q/K/V projections, keys stored pre-RoPE (for
 * snapshots) and rotated (for attention) in the cache, chunk attention over
 * (cache ∪ causal chunk), output projection, SwiGLU FFN, residuals.  Logits
 * are computed only for the rows asked for.  All buffers are sized for
 * max_chunk tokens at eng_ctx_init; longer inputs are split into chunks.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

struct eng_ctx {
	const struct eng_model *m;
	struct kern_ctx *kern;
	const struct kern_ops *ops;
	int64_t max_chunk;
	float *x;     /* (max_chunk, n_embd) residual stream */
	float *xn;    /* (max_chunk, n_embd) normed input of a block */
	float *q;     /* (max_chunk, n_head*head_dim) */
	float *k;     /* (max_chunk, n_kv*head_dim) */
	float *v;     /* (max_chunk, n_kv*head_dim) */
	float *att;   /* (max_chunk, n_head*head_dim) */
	float *proj;  /* (max_chunk, n_embd) */
	float *gate;  /* (max_chunk, n_ff) */
	float *up;    /* (max_chunk, n_ff) */
	uint32_t *pos; /* (max_chunk) */
	struct kern_attn_head *heads; /* (n_kv) */
};

/* ------------------------------------------------------------------------ */
/* KV cache                                                                  */

int
eng_kv_init(struct eng_kv **out, const struct eng_model *m, int64_t cap)
{
	struct eng_kv *kv;
	size_t nh, units, elems;

	*out = NULL;
	if (cap <= 0)
		return ENG_ERR_ARG;
	kv = calloc(1, sizeof(*kv));
	if (!kv)
		return ENG_ERR_NOMEM;
	kv->n_layer = m->hp.n_layer;
	kv->n_head_kv = m->hp.n_head_kv;
	kv->head_dim = m->hp.head_dim;
	kv->cap = cap;
	nh = (size_t)kv->n_layer * (size_t)kv->n_head_kv;
	if ((size_t)cap > SIZE_MAX / nh / (size_t)kv->head_dim / sizeof(float)) {
		free(kv);
		return ENG_ERR_NOMEM;
	}
	units = nh * (size_t)cap;
	elems = units * (size_t)kv->head_dim;
	kv->n = calloc(nh, sizeof(*kv->n));
	kv->pos = malloc(units * sizeof(*kv->pos));
	kv->k = malloc(elems * sizeof(float));
	kv->kr = malloc(elems * sizeof(float));
	kv->v = malloc(elems * sizeof(float));
	if (!kv->n || !kv->pos || !kv->k || !kv->kr || !kv->v) {
		eng_kv_free(kv);
		return ENG_ERR_NOMEM;
	}
	*out = kv;
	return 0;
}

void
eng_kv_free(struct eng_kv *kv)
{
	if (!kv)
		return;
	free(kv->n);
	free(kv->pos);
	free(kv->k);
	free(kv->kr);
	free(kv->v);
	free(kv);
}

void
eng_kv_clear(struct eng_kv *kv)
{
	memset(kv->n, 0, (size_t)kv->n_layer * (size_t)kv->n_head_kv * sizeof(*kv->n));
	kv->next_pos = 0;
}

/* ------------------------------------------------------------------------ */
/* Context                                                                   */

int
eng_ctx_init(struct eng_ctx **out, const struct eng_model *m, int n_threads,
    int64_t max_chunk)
{
	const struct eng_hparams *hp = &m->hp;
	struct eng_ctx *c;
	size_t T, E, Q, KV, F;
	int rc;

	*out = NULL;
	if (max_chunk <= 0)
		max_chunk = 512;
	c = calloc(1, sizeof(*c));
	if (!c)
		return ENG_ERR_NOMEM;
	c->m = m;
	c->max_chunk = max_chunk;
	rc = kern_ctx_init(&c->kern, n_threads);
	if (rc) {
		free(c);
		return rc == KERN_ERR_NOMEM ? ENG_ERR_NOMEM : ENG_ERR_KERNEL;
	}
	c->ops = kern_ctx_ops(c->kern);
	T = (size_t)max_chunk;
	E = (size_t)hp->n_embd;
	Q = (size_t)hp->n_head * (size_t)hp->head_dim;
	KV = (size_t)hp->n_head_kv * (size_t)hp->head_dim;
	F = (size_t)hp->n_ff;
	c->x = malloc(T * E * sizeof(float));
	c->xn = malloc(T * E * sizeof(float));
	c->q = malloc(T * Q * sizeof(float));
	c->k = malloc(T * KV * sizeof(float));
	c->v = malloc(T * KV * sizeof(float));
	c->att = malloc(T * Q * sizeof(float));
	c->proj = malloc(T * E * sizeof(float));
	c->gate = malloc(T * F * sizeof(float));
	c->up = malloc(T * F * sizeof(float));
	c->pos = malloc(T * sizeof(uint32_t));
	c->heads = calloc((size_t)hp->n_head_kv, sizeof(*c->heads));
	if (!c->x || !c->xn || !c->q || !c->k || !c->v || !c->att || !c->proj || !c->gate ||
	    !c->up || !c->pos || !c->heads) {
		eng_ctx_free(c);
		return ENG_ERR_NOMEM;
	}
	*out = c;
	return 0;
}

void
eng_ctx_free(struct eng_ctx *c)
{
	if (!c)
		return;
	kern_ctx_free(c->kern);
	free(c->x);
	free(c->xn);
	free(c->q);
	free(c->k);
	free(c->v);
	free(c->att);
	free(c->proj);
	free(c->gate);
	free(c->up);
	free(c->pos);
	free(c->heads);
	free(c);
}

struct kern_ctx *
eng_ctx_kern(struct eng_ctx *c)
{
	return c->kern;
}

/* ------------------------------------------------------------------------ */
/* Forward                                                                   */

#define FWD_CHECK(expr)                       \
	do {                                  \
		int rc_ = (expr);             \
		if (rc_)                      \
			return kern_to_eng(rc_); \
	} while (0)

static int
kern_to_eng(int rc)
{
	return rc == KERN_ERR_NOMEM ? ENG_ERR_NOMEM : ENG_ERR_KERNEL;
}

/* Append the chunk's keys (pre-RoPE and rotated) and values of layer l. */
static void
fwd_kv_append(struct eng_ctx *c, struct eng_kv *kv, int l, int64_t n)
{
	const struct eng_hparams *hp = &c->m->hp;
	int64_t hd = hp->head_dim, nkv = hp->n_head_kv, g, t;

	for (g = 0; g < nkv; g++) {
		size_t slot = (size_t)l * (size_t)nkv + (size_t)g;
		int64_t base = kv->n[slot];
		size_t off = (slot * (size_t)kv->cap + (size_t)base) * (size_t)hd;
		for (t = 0; t < n; t++) {
			memcpy(kv->k + off + (size_t)(t * hd), c->k + (t * nkv + g) * hd,
			    (size_t)hd * sizeof(float));
			memcpy(kv->v + off + (size_t)(t * hd), c->v + (t * nkv + g) * hd,
			    (size_t)hd * sizeof(float));
			kv->pos[slot * (size_t)kv->cap + (size_t)(base + t)] = c->pos[t];
		}
	}
	/* rotate the keys now that the pre-RoPE copies are stored */
	c->ops->rope(c->kern, c->k, c->pos, n, nkv, hd, hp->rope_base);
	for (g = 0; g < nkv; g++) {
		size_t slot = (size_t)l * (size_t)nkv + (size_t)g;
		int64_t base = kv->n[slot];
		size_t off = (slot * (size_t)kv->cap + (size_t)base) * (size_t)hd;
		for (t = 0; t < n; t++)
			memcpy(kv->kr + off + (size_t)(t * hd), c->k + (t * nkv + g) * hd,
			    (size_t)hd * sizeof(float));
		kv->n[slot] = base + n;
		c->heads[g].k = kv->kr + slot * (size_t)kv->cap * (size_t)hd;
		c->heads[g].v = kv->v + slot * (size_t)kv->cap * (size_t)hd;
		c->heads[g].n_kv = base + n;
	}
}

/* One chunk of n <= max_chunk tokens. */
enum fwd_want { FWD_WANT_NONE, FWD_WANT_LAST, FWD_WANT_LIST };

static int
fwd_chunk(struct eng_ctx *c, struct eng_kv *kv, const int32_t *ids, int64_t n, int mode,
    const uint8_t *want, float *logits)
{
	const struct eng_model *m = c->m;
	const struct eng_hparams *hp = &m->hp;
	const struct kern_ops *ops = c->ops;
	struct kern_ctx *kc = c->kern;
	int64_t E = hp->n_embd, t, j;
	float scale = 1.0f / sqrtf((float)hp->head_dim);
	int l;

	for (t = 0; t < n; t++)
		c->pos[t] = kv->next_pos + (uint32_t)t;
	FWD_CHECK(ops->get_rows(kc, c->x, &m->tok_embd, ids, n));
	for (l = 0; l < hp->n_layer; l++) {
		const struct eng_layer *L = &m->layers[l];
		ops->rmsnorm(kc, c->xn, c->x, L->attn_norm, n, E, hp->rms_eps);
		FWD_CHECK(ops->matmul(kc, c->q, &L->wq, c->xn, n));
		FWD_CHECK(ops->matmul(kc, c->k, &L->wk, c->xn, n));
		FWD_CHECK(ops->matmul(kc, c->v, &L->wv, c->xn, n));
		ops->rope(kc, c->q, c->pos, n, hp->n_head, hp->head_dim, hp->rope_base);
		fwd_kv_append(c, kv, l, n);
		FWD_CHECK(ops->attention(kc, c->att, c->q, n, hp->n_head, hp->n_head_kv,
		    hp->head_dim, c->heads, scale));
		FWD_CHECK(ops->matmul(kc, c->proj, &L->wo, c->att, n));
		ops->add(kc, c->x, c->proj, n * E);
		ops->rmsnorm(kc, c->xn, c->x, L->ffn_norm, n, E, hp->rms_eps);
		FWD_CHECK(ops->matmul(kc, c->gate, &L->w_gate, c->xn, n));
		FWD_CHECK(ops->matmul(kc, c->up, &L->w_up, c->xn, n));
		ops->silu_mul(kc, c->gate, c->up, n * hp->n_ff);
		FWD_CHECK(ops->matmul(kc, c->proj, &L->w_down, c->gate, n));
		ops->add(kc, c->x, c->proj, n * E);
	}
	kv->next_pos += (uint32_t)n;

	/* Gather the rows whose logits are wanted, norm them, project. */
	j = 0;
	for (t = 0; t < n; t++) {
		if (mode == FWD_WANT_LIST ? want[t] != 0 : mode == FWD_WANT_LAST && t == n - 1) {
			if (j != t)
				memcpy(c->x + j * E, c->x + t * E, (size_t)E * sizeof(float));
			j++;
		}
	}
	if (j == 0)
		return 0;
	if (!logits)
		return ENG_ERR_ARG;
	ops->rmsnorm(kc, c->xn, c->x, m->output_norm, j, E, hp->rms_eps);
	FWD_CHECK(ops->matmul(kc, logits, &m->output, c->xn, j));
	return 0;
}

int
eng_forward(struct eng_ctx *c, struct eng_kv *kv, const int32_t *ids, int64_t n,
    const uint8_t *want_logits, float *logits)
{
	const struct eng_hparams *hp = &c->m->hp;
	int64_t done = 0, i, g;

	if (n <= 0)
		return n == 0 ? 0 : ENG_ERR_ARG;
	if (kv->n_layer != hp->n_layer || kv->n_head_kv != hp->n_head_kv ||
	    kv->head_dim != hp->head_dim)
		return ENG_ERR_ARG;
	for (i = 0; i < n; i++)
		if (ids[i] < 0 || ids[i] >= hp->n_vocab)
			return ENG_ERR_TOKEN;
	if ((int64_t)kv->next_pos + n > hp->n_ctx_train)
		return ENG_ERR_CONTEXT;
	for (g = 0; g < (int64_t)kv->n_layer * kv->n_head_kv; g++)
		if (kv->n[g] + n > kv->cap)
			return ENG_ERR_CONTEXT;
	while (done < n) {
		int64_t len = n - done < c->max_chunk ? n - done : c->max_chunk;
		int last = done + len == n;
		int rc, mode;
		if (want_logits)
			mode = FWD_WANT_LIST;
		else
			mode = last ? FWD_WANT_LAST : FWD_WANT_NONE;
		rc = fwd_chunk(c, kv, ids + done, len, mode,
		    want_logits ? want_logits + done : NULL, logits);
		if (rc)
			return rc;
		if (want_logits && logits) {
			int64_t n_want = 0;
			for (i = 0; i < len; i++)
				n_want += want_logits[done + i] != 0;
			logits += n_want * hp->n_vocab;
		}
		done += len;
	}
	return 0;
}
