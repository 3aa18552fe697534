/*
 * forward.c: the forward pass for a chunk of tokens against a KV cache
 * (spec/model.md §5), through the op table of kernels.h, over the building
 * blocks an architecture's description (engine/model/arch_*.c) picks.
 *
 * Per layer: RMSNorm, Q/K/V projections (with the architecture's optional
 * biases and per-head norms), keys stored pre-RoPE (for snapshots) and
 * rotated (for attention) in the cache, chunk attention over (cache ∪
 * causal chunk), output projection (optional bias), the FFN of the
 * architecture's activation (llama: SwiGLU), residuals.  Logits
 * are computed only for the rows asked for.  All buffers are sized for
 * max_chunk tokens at eng_ctx_init; longer inputs are split into chunks.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cache/kv_pod.h"
#include "engine/model/arch.h"
#include "engine/run/forward_hook.h"

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
	float *qpre;  /* (max_chunk, n_head*head_dim) pre-RoPE q, for hooks */
	float *kpre;  /* (max_chunk, n_kv*head_dim) pre-RoPE k, for hooks */
	float *qa;    /* (max_chunk, n_head*head_dim) PoD: each group's anchor-layer
		       * queries (rotated), allocated on first use */
	uint32_t *pos; /* (max_chunk) original positions */
	uint32_t *rpos; /* (max_chunk) RoPE positions (slot mode differs) */
	struct kern_attn_head *heads; /* (n_kv) */
	float *stat;  /* (n_head, stat_stride) attention statistics for hooks */
	float *rw;    /* (T) per-query weights of the statistics (KVzip+) */
	int64_t stat_stride;
	/* the pool whose K/V (with the op buffers) are resident on the
	 * device, or NULL */
	const struct eng_kv *resident_kv;
};

/* ------------------------------------------------------------------------ */
/* Context                                                                   */

static char fwd_backend[16] = "cpu"; /* set once by eng_use_backend */

static int kern_to_eng(int rc);

int
eng_use_backend(const char *name, char *why, size_t why_len)
{
	struct kern_ctx *k;
	int rc;

	if (strlen(name) >= sizeof(fwd_backend))
		return eng_fail(why, why_len, ENG_ERR_BACKEND, "unknown backend '%s' (cpu, cuda, simdev)",
		    name);
	if ((rc = kern_ctx_init(&k, 1)))
		return eng_fail(why, why_len, ENG_ERR_BACKEND, "%s", kern_strerror(rc));
	rc = kern_ctx_set_backend(k, name);
	if (rc)
		eng_fail(why, why_len, ENG_ERR_BACKEND, "%s", kern_ctx_error(k));
	kern_ctx_free(k);
	if (rc)
		return ENG_ERR_BACKEND;
	strcpy(fwd_backend, name);
	return 0;
}

int
eng_use_backend_env(char *why, size_t why_len)
{
	const char *name = getenv("KVSNAP_BACKEND");
	if (!name || !*name || !strcmp(name, "cpu"))
		return 0;
	return eng_use_backend(name, why, why_len);
}

const char *
eng_ctx_backend(const struct eng_ctx *c)
{
	return kern_ctx_backend(c->kern);
}

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
	if (strcmp(fwd_backend, "cpu") && kern_ctx_set_backend(c->kern, fwd_backend)) {
		kern_ctx_free(c->kern);
		free(c);
		return ENG_ERR_BACKEND;
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
	c->rpos = malloc(T * sizeof(uint32_t));
	c->qpre = malloc(T * Q * sizeof(float));
	c->kpre = malloc(T * KV * sizeof(float));
	c->rw = malloc(T * sizeof(float));
	c->heads = calloc((size_t)hp->n_head_kv, sizeof(*c->heads));
	if (!c->x || !c->xn || !c->q || !c->k || !c->v || !c->att || !c->proj || !c->gate ||
	    !c->up || !c->pos || !c->rpos || !c->qpre || !c->kpre || !c->rw || !c->heads) {
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
	eng_ctx_resident_end(c);
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
	free(c->rpos);
	free(c->qpre);
	free(c->kpre);
	free(c->rw);
	free(c->heads);
	free(c->stat);
	free(c->qa);
	free(c);
}

void
eng_ctx_set_exact(struct eng_ctx *c, int exact)
{
	kern_ctx_set_exact(c->kern, exact);
}

struct kern_ctx *
eng_ctx_kern(struct eng_ctx *c)
{
	return c->kern;
}

int
eng_ctx_resident_begin(struct eng_ctx *c, struct eng_kv *kv)
{
	const struct eng_hparams *hp = &c->m->hp;
	size_t T = (size_t)c->max_chunk * sizeof(float), E = (size_t)hp->n_embd,
	       Q = (size_t)hp->n_head * (size_t)hp->head_dim,
	       KV = (size_t)hp->n_head_kv * (size_t)hp->head_dim, F = (size_t)hp->n_ff;
	size_t rows = (size_t)kv->rows * (size_t)kv->head_dim * sizeof(float);
	/* the op buffers a question's forward passes touch (qpre, qa, stat
	 * and rw belong to hooks and PoD: on the host) */
	struct {
		void *p;
		size_t bytes;
	} buf[] = { { c->x, T * E }, { c->xn, T * E }, { c->q, T * Q }, { c->k, T * KV },
		{ c->v, T * KV }, { c->att, T * Q }, { c->proj, T * E }, { c->gate, T * F },
		{ c->up, T * F }, { c->kpre, T * KV } };
	size_t i;
	int l, rc = 0;

	if (c->resident_kv)
		return c->resident_kv == kv ? 0 : ENG_ERR_ARG;
	c->resident_kv = kv;
	for (i = 0; !rc && i < sizeof(buf) / sizeof(buf[0]); i++)
		rc = kern_ctx_resident_add(c->kern, buf[i].p, buf[i].bytes);
	for (l = 0; !rc && l < kv->n_layer; l++) {
		float *arr[3] = { kv->layer[l].k, kv->layer[l].kr, kv->layer[l].v };
		for (i = 0; !rc && i < 3; i++)
			rc = kern_ctx_resident_add(c->kern, arr[i], rows);
	}
	if (rc) {
		eng_ctx_resident_end(c);
		return kern_to_eng(rc);
	}
	return 1;
}

int
eng_ctx_resident_end(struct eng_ctx *c)
{
	int rc;
	if (!c->resident_kv)
		return 0;
	c->resident_kv = NULL;
	rc = kern_ctx_resident_end(c->kern);
	return rc ? kern_to_eng(rc) : 0;
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

/* Append the chunk's keys (pre-RoPE and rotated) and values of layer l to
 * every head, and point the attention views at the heads' segments. */
static int
fwd_kv_append(struct eng_ctx *c, struct eng_kv *kv, int l, int64_t n)
{
	const struct eng_hparams *hp = &c->m->hp;
	struct eng_kv_layer *L = &kv->layer[l];
	int64_t hd = hp->head_dim, nkv = hp->n_head_kv, g, t;

	FWD_CHECK(c->ops->copy_rows(c->kern, c->kpre, 0, c->k, 0, 1, n * nkv * hd));
	FWD_CHECK(c->ops->rope(c->kern, c->k, c->rpos, n, nkv, hd, hp->rope_base,
	    hp->rope_freqs, hp->rope_style));
	for (g = 0; g < nkv; g++) {
		int64_t base = L->off[g] + L->len[g];
		/* token t's head g (row t * nkv + g of the chunk) to row base + t */
		FWD_CHECK(c->ops->copy_rows(c->kern, L->k + base * hd, hd, c->kpre + g * hd,
		    nkv * hd, n, hd));
		FWD_CHECK(c->ops->copy_rows(c->kern, L->kr + base * hd, hd, c->k + g * hd,
		    nkv * hd, n, hd));
		FWD_CHECK(c->ops->copy_rows(c->kern, L->v + base * hd, hd, c->v + g * hd,
		    nkv * hd, n, hd));
		for (t = 0; t < n; t++) {
			L->pos[base + t] = c->pos[t];
			L->score[base + t] = 0.0f;
			L->bias[base + t] = 0.0f;
		}
		L->len[g] += n;
		c->heads[g].k = L->kr + L->off[g] * hd;
		c->heads[g].v = L->v + L->off[g] * hd;
		c->heads[g].n_kv = L->len[g];
		c->heads[g].bias = kv->has_bias ? L->bias + L->off[g] : NULL;
	}
	return 0;
}

/* RoPE positions of the chunk at layer l: original positions, or in slot
 * mode the slots after the heads' current count (which must be equal). */
static int
fwd_rope_positions(struct eng_ctx *c, const struct eng_kv *kv, int l, int64_t n)
{
	const struct eng_kv_layer *L = &kv->layer[l];
	int64_t t;
	int g;
	if (kv->pos_mode != ENG_POS_SLOT) {
		memcpy(c->rpos, c->pos, (size_t)n * sizeof(uint32_t));
		return 0;
	}
	for (g = 1; g < kv->n_head_kv; g++)
		if (L->len[g] != L->len[0])
			return ENG_ERR_ARG; /* slot mode needs uniform head counts */
	for (t = 0; t < n; t++)
		c->rpos[t] = (uint32_t)(L->len[0] + t);
	return 0;
}

/* PoD (spec/pod.md §3.4 step 2): at a KV head's anchor layer keep its
 * group's rotated chunk queries; at a non-anchor layer point the head at the
 * anchor's keys and queries.  The block's layers hold the same units. */
static int
fwd_pod_setup(struct eng_ctx *c, struct eng_kv *kv, int l, int64_t n)
{
	const struct eng_hparams *hp = &c->m->hp;
	const struct eng_kv_layer *L = &kv->layer[l];
	int64_t hd = hp->head_dim, g = hp->n_head / hp->n_head_kv, ld = hp->n_head * hd;
	int m;

	for (m = 0; m < hp->n_head_kv; m++) {
		struct kern_attn_head *kh = &c->heads[m];
		int a = eng_kv_pod_anchor(kv, l, m);
		kh->ka = NULL;
		if (!kv->pod)
			continue;
		if (!c->qa && !(c->qa = malloc((size_t)(c->max_chunk * ld) * sizeof(float))))
			return ENG_ERR_NOMEM;
		if (a == l) {
			FWD_CHECK(c->ops->copy_rows(c->kern, c->qa + m * g * hd, ld,
			    c->q + m * g * hd, ld, n, g * hd));
			continue;
		}
		if (kv->layer[a].len[m] != L->len[m])
			return ENG_ERR_ARG; /* a block's layers must hold the same units */
		kh->ka = kv->layer[a].kr + kv->layer[a].off[m] * hd;
		kh->qa = kv->pod->distant_own ? c->q : c->qa;
		kh->pos = L->pos + L->off[m];
		kh->qpos = c->pos;
		kh->n_s = kv->pod->n_s;
		kh->n_r = kv->pod->n_r;
	}
	return 0;
}

/* x(n, len) += b on every row: an optional bias (NULL: none). */
static int
fwd_bias(struct eng_ctx *c, float *x, const float *b, int64_t n, int64_t len)
{
	int64_t t;
	if (!b)
		return 0;
	for (t = 0; t < n; t++)
		FWD_CHECK(c->ops->add(c->kern, x + t * len, b, len));
	return 0;
}

/* Layer L's q, k, v from the normed input c->xn: projections, then the
 * architecture's optional biases and per-head norms (before RoPE). */
static int
fwd_qkv(struct eng_ctx *c, const struct eng_layer *L, int64_t n)
{
	const struct eng_hparams *hp = &c->m->hp;
	int64_t hd = hp->head_dim, Q = hp->n_head * hd, KV = hp->n_head_kv * hd;
	float *const dst[3] = { c->q, c->k, c->v };
	const struct kern_mat *const w[3] = { &L->wq, &L->wk, &L->wv };
	int rc;

	FWD_CHECK(c->ops->matmul_n(c->kern, 3, dst, w, c->xn, n));
	if ((rc = fwd_bias(c, c->q, L->bq, n, Q)) || (rc = fwd_bias(c, c->k, L->bk, n, KV)) ||
	    (rc = fwd_bias(c, c->v, L->bv, n, KV)))
		return rc;
	if (L->q_norm)
		FWD_CHECK(c->ops->rmsnorm(c->kern, c->q, c->q, L->q_norm, n * hp->n_head, hd,
		    hp->rms_eps));
	if (L->k_norm)
		FWD_CHECK(c->ops->rmsnorm(c->kern, c->k, c->k, L->k_norm, n * hp->n_head_kv, hd,
		    hp->rms_eps));
	return 0;
}

/* The FFN of the normed input c->xn into c->proj (n, n_embd), by the
 * architecture's activation. */
static int
fwd_ffn(struct eng_ctx *c, const struct eng_layer *L, int64_t n)
{
	const struct eng_hparams *hp = &c->m->hp;
	float *const dst[2] = { c->gate, c->up };
	const struct kern_mat *const w[2] = { &L->w_gate, &L->w_up };

	switch (c->m->arch->act) {
	case ENG_ACT_SILU_GATED:
		FWD_CHECK(c->ops->matmul_n(c->kern, 2, dst, w, c->xn, n));
		FWD_CHECK(c->ops->silu_mul(c->kern, c->gate, c->up, n * hp->n_ff));
		FWD_CHECK(c->ops->matmul(c->kern, c->proj, &L->w_down, c->gate, n));
		return 0;
	}
	return ENG_ERR_ARCH;
}

/* w[t] = 1 / ‖x_t‖ for the n rows of x (E wide); 0 for a zero row. */
static void
fwd_row_inv_norms(float *w, const float *x, int64_t n, int64_t E)
{
	int64_t t, i;
	for (t = 0; t < n; t++) {
		double s = 0.0;
		for (i = 0; i < E; i++)
			s += (double)x[t * E + i] * (double)x[t * E + i];
		w[t] = s > 0.0 ? (float)(1.0 / sqrt(s)) : 0.0f;
	}
}

/* Make sure the statistics buffer holds (n_head, stride) floats. */
static int
fwd_stat_reserve(struct eng_ctx *c, int64_t stride)
{
	if (stride <= c->stat_stride)
		return 0;
	free(c->stat);
	c->stat = malloc((size_t)c->m->hp.n_head * (size_t)stride * sizeof(float));
	c->stat_stride = c->stat ? stride : 0;
	return c->stat ? 0 : ENG_ERR_NOMEM;
}

enum fwd_want { FWD_WANT_NONE, FWD_WANT_LAST, FWD_WANT_LIST };

/* Whether a chunk wants no logits: then the last layer's output is read by
 * nothing (its keys and values are, and a hook's view of its attention), so
 * its output projection and FFN are skipped, and its attention when no
 * statistics are asked of it: every prefill chunk but the last, and kvzip's
 * reconstruction (which keeps the attention, for its scores). */
static int
fwd_no_logits(int mode, const uint8_t *want, int64_t n)
{
	int64_t t;
	if (mode == FWD_WANT_LAST)
		return 0;
	for (t = 0; mode == FWD_WANT_LIST && t < n; t++)
		if (want[t])
			return 0;
	return 1;
}

/* Move the rows whose logits are wanted to the front of the attention
 * output and the residual stream; *rows their count.  At the last layer only
 * those rows are read on (llama.cpp's inp_out_ids), so the output
 * projection and the FFN skip the rest. */
static int
fwd_gather_wanted(struct eng_ctx *c, int mode, const uint8_t *want, int64_t n, int64_t *rows)
{
	const struct eng_hparams *hp = &c->m->hp;
	int64_t E = hp->n_embd, A = (int64_t)hp->n_head * hp->head_dim, t, j = 0;
	for (t = 0; t < n; t++) {
		if (mode == FWD_WANT_LIST ? want[t] != 0 : mode == FWD_WANT_LAST && t == n - 1) {
			if (j != t) {
				FWD_CHECK(c->ops->copy_rows(c->kern, c->x + j * E, 0, c->x + t * E, 0,
				    1, E));
				FWD_CHECK(c->ops->copy_rows(c->kern, c->att + j * A, 0,
				    c->att + t * A, 0, 1, A));
			}
			j++;
		}
	}
	*rows = j;
	return 0;
}

static int
fwd_chunk(struct eng_ctx *c, struct eng_kv *kv, const int32_t *ids, int64_t n, int mode,
    const uint8_t *want, float *logits, const struct eng_fwd_hook *hook)
{
	const struct eng_model *m = c->m;
	const struct eng_hparams *hp = &m->hp;
	const struct kern_ops *ops = c->ops;
	struct kern_ctx *kc = c->kern;
	int64_t E = hp->n_embd, t, rows = n;
	float scale = 1.0f / sqrtf((float)hp->head_dim);
	int l, rc, dead = fwd_no_logits(mode, want, n);

	for (t = 0; t < n; t++)
		c->pos[t] = kv->next_pos + (uint32_t)t;
	FWD_CHECK(ops->get_rows(kc, c->x, &m->tok_embd, ids, n));
	for (l = 0; l < hp->n_layer; l++) {
		const struct eng_layer *L = &m->layers[l];
		int last_dead = dead && l == hp->n_layer - 1; /* its output unread */
		FWD_CHECK(ops->rmsnorm(kc, c->xn, c->x, L->attn_norm, n, E, hp->rms_eps));
		if ((rc = fwd_qkv(c, L, n)))
			return rc;
		if ((rc = fwd_rope_positions(c, kv, l, n)))
			return rc;
		if (hook)
			memcpy(c->qpre, c->q, (size_t)(n * hp->n_head * hp->head_dim) * sizeof(float));
		FWD_CHECK(ops->rope(kc, c->q, c->rpos, n, hp->n_head, hp->head_dim, hp->rope_base,
		    hp->rope_freqs, hp->rope_style));
		if ((rc = fwd_kv_append(c, kv, l, n)))
			return rc;
		if ((rc = fwd_pod_setup(c, kv, l, n)))
			return rc;
		if (hook && hook->stat_from >= 0) {
			struct kern_attn_stats st;
			int64_t mx = 0;
			int g;
			memset(&st, 0, sizeof(st));
			for (g = 0; g < hp->n_head_kv; g++)
				mx = c->heads[g].n_kv > mx ? c->heads[g].n_kv : mx;
			if ((rc = fwd_stat_reserve(c, mx)))
				return rc;
			st.stride = c->stat_stride;
			st.row_from = hook->stat_from < n ? hook->stat_from : n;
			if (hook->dom_from) { /* KVzip: restricted maxima in place of sums */
				st.max = c->stat;
				st.n_lead = hook->n_lead;
				st.dom_from = hook->dom_from + (size_t)l * (size_t)hp->n_head_kv;
				if (hook->row_norm_w) {
					fwd_row_inv_norms(c->rw, c->xn, n, E);
					st.row_w = c->rw;
				}
			} else {
				st.sum = c->stat;
			}
			FWD_CHECK(ops->attention(kc, c->att, c->q, n, hp->n_head, hp->n_head_kv,
			    hp->head_dim, c->heads, scale, &st));
		} else if (!last_dead) {
			FWD_CHECK(ops->attention(kc, c->att, c->q, n, hp->n_head, hp->n_head_kv,
			    hp->head_dim, c->heads, scale, NULL));
		}
		if (hook) {
			struct eng_fwd_layer_info info;
			info.n_tok = n;
			info.chunk_end = kv->next_pos + (uint32_t)n;
			info.stat = hook->stat_from >= 0 ? c->stat : NULL;
			info.stat_stride = c->stat_stride;
			info.qpre = c->qpre;
			info.q = c->q;
			info.kpre = c->kpre;
			info.v = c->v;
			if ((rc = hook->after_attn(hook->arg, kv, l, &info)))
				return rc;
		}
		if (last_dead)
			break;
		if (l == hp->n_layer - 1 && (rc = fwd_gather_wanted(c, mode, want, n, &rows)))
			return rc;
		FWD_CHECK(ops->matmul(kc, c->proj, &L->wo, c->att, rows));
		if ((rc = fwd_bias(c, c->proj, L->bo, rows, E)))
			return rc;
		FWD_CHECK(ops->add(kc, c->x, c->proj, rows * E));
		FWD_CHECK(ops->rmsnorm(kc, c->xn, c->x, L->ffn_norm, rows, E, hp->rms_eps));
		if ((rc = fwd_ffn(c, L, rows)))
			return rc;
		FWD_CHECK(ops->add(kc, c->x, c->proj, rows * E));
	}
	kv->next_pos += (uint32_t)n;

	/* The wanted rows (gathered at the last layer): norm them, project. */
	if (dead)
		return 0;
	if (!logits)
		return ENG_ERR_ARG;
	FWD_CHECK(ops->rmsnorm(kc, c->xn, c->x, m->output_norm, rows, E, hp->rms_eps));
	FWD_CHECK(ops->matmul(kc, logits, &m->output, c->xn, rows));
	return 0;
}

/* Refuse a chunk that would overflow a head segment or (in original mode)
 * a window of n_ctx positions. */
static int
fwd_check_room(const struct eng_ctx *c, const struct eng_kv *kv, int64_t n, int64_t n_ctx)
{
	int l, g;
	if (kv->pos_mode == ENG_POS_ORIGINAL && (int64_t)kv->next_pos + n > n_ctx)
		return ENG_ERR_CONTEXT;
	if ((int64_t)kv->next_pos + n > (int64_t)UINT32_MAX)
		return ENG_ERR_CONTEXT;
	for (l = 0; l < kv->n_layer; l++)
		for (g = 0; g < kv->n_head_kv; g++) {
			const struct eng_kv_layer *L = &kv->layer[l];
			if (L->len[g] + n > L->cap[g])
				return ENG_ERR_CONTEXT;
			if (kv->pos_mode == ENG_POS_SLOT && L->len[g] + n > c->m->hp.n_ctx_train)
				return ENG_ERR_CONTEXT;
		}
	return 0;
}

int
eng_forward_chunk_hooked(struct eng_ctx *c, struct eng_kv *kv, const int32_t *ids,
    int64_t n, float *last_logits, const struct eng_fwd_hook *hook)
{
	int64_t i;
	int rc;
	if (n <= 0 || n > c->max_chunk || (hook && c->resident_kv))
		return ENG_ERR_ARG; /* a hook reads the op buffers on the host */
	for (i = 0; i < n; i++)
		if (ids[i] < 0 || ids[i] >= c->m->hp.n_vocab)
			return ENG_ERR_TOKEN;
	/* a scoring pass may run past the window, up to twice it */
	if ((rc = fwd_check_room(c, kv, n, (hook && hook->past_window ? 2 : 1) *
	    (int64_t)c->m->hp.n_ctx_train)))
		return rc;
	return fwd_chunk(c, kv, ids, n, last_logits ? FWD_WANT_LAST : FWD_WANT_NONE, NULL,
	    last_logits, hook);
}

int64_t
eng_ctx_max_chunk(const struct eng_ctx *c)
{
	return c->max_chunk;
}

const struct eng_model *
eng_ctx_model(const struct eng_ctx *c)
{
	return c->m;
}

int
eng_forward(struct eng_ctx *c, struct eng_kv *kv, const int32_t *ids, int64_t n,
    const uint8_t *want_logits, float *logits)
{
	const struct eng_hparams *hp = &c->m->hp;
	int64_t done = 0, i;
	int rc;

	if (n <= 0)
		return n == 0 ? 0 : ENG_ERR_ARG;
	if (kv->n_layer != hp->n_layer || kv->n_head_kv != hp->n_head_kv ||
	    kv->head_dim != hp->head_dim)
		return ENG_ERR_ARG;
	for (i = 0; i < n; i++)
		if (ids[i] < 0 || ids[i] >= hp->n_vocab)
			return ENG_ERR_TOKEN;
	if ((rc = fwd_check_room(c, kv, n, c->m->hp.n_ctx_train)))
		return rc;
	while (done < n) {
		int64_t len = n - done < c->max_chunk ? n - done : c->max_chunk;
		int last = done + len == n;
		int mode;
		if (want_logits)
			mode = FWD_WANT_LIST;
		else
			mode = last ? FWD_WANT_LAST : FWD_WANT_NONE;
		rc = fwd_chunk(c, kv, ids + done, len, mode,
		    want_logits ? want_logits + done : NULL, logits, NULL);
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
