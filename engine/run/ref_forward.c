/*
 * ref_forward.c: the plain reference forward pass (STYLE.md rule 2).
 *
 * Scalar fp32 code written to be read, in the order of spec/model.md §5,
 * with the building blocks the model's architecture (engine/model/arch_*.c)
 * has: every weight row is dequantized with kern_dequant_row and dotted in
 * plain loops, attention is computed over the whole prefix with a causal
 * mask, and nothing is rounded to 8 bits.  The CPU's fast paths (sgemm
 * prefill, SIMD decode) are checked against it in exact mode
 * (eng_ctx_set_exact), where they must agree within a stated tolerance.
 * Slow (O(n²·d) attention, one dequantization per row per token): tests only.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model/arch.h"
#include "engine/run/run.h"
#include "kernels/rope.h"

/* y(rows) = W · x, W dequantized one row at a time. */
static void
ref_matvec(const struct kern_mat *w, const float *x, float *y, float *row)
{
	int64_t r, i;
	for (r = 0; r < w->rows; r++) {
		double acc = 0.0;
		kern_dequant_row(w->type, (const uint8_t *)w->data + (size_t)r * w->row_bytes, row,
		    w->cols);
		for (i = 0; i < w->cols; i++)
			acc += (double)row[i] * x[i];
		y[r] = (float)acc;
	}
}

static void
ref_rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps)
{
	double ss = 0.0;
	float scale;
	int64_t i;
	for (i = 0; i < n; i++)
		ss += (double)x[i] * x[i];
	scale = 1.0f / sqrtf((float)(ss / (double)n) + eps);
	for (i = 0; i < n; i++)
		out[i] = x[i] * scale * w[i];
}

/* x(n) += b, an optional bias (NULL: none). */
static void
ref_add(float *x, const float *b, int64_t n)
{
	int64_t i;
	for (i = 0; b && i < n; i++)
		x[i] += b[i];
}

/* RoPE of one head vector at position p: kernels/rope.h's rotation, the
 * one every path shares (so the angles are not what a comparison tests). */
static void
ref_rope(float *x, int64_t d, uint32_t p, const struct eng_hparams *hp)
{
	kern_rope_head_at(x, x, p, kern_rope_theta_scale(hp->rope_base, d), hp->rope_freqs, d,
	    hp->rope_style);
}

/* Whether query position t scores unit position u with the anchor layer's
 * query and key (spec/pod.md §1.1: u is distant for t). */
static int
ref_pod_distant(const struct eng_kv_pod *pod, int64_t u, int64_t t)
{
	return pod && u >= (int64_t)pod->n_s && u + (int64_t)pod->n_r <= t;
}

int
eng_ref_forward(const struct eng_model *m, const int32_t *ids, int64_t n, float *logits)
{
	return eng_ref_forward_pod(m, ids, n, NULL, logits);
}

int
eng_ref_forward_pod(const struct eng_model *m, const int32_t *ids, int64_t n,
    const struct eng_kv_pod *pod, float *logits)
{
	const struct eng_hparams *hp = &m->hp;
	int64_t E = hp->n_embd, hd = hp->head_dim, H = hp->n_head, KV = hp->n_head_kv;
	int64_t F = hp->n_ff, V = hp->n_vocab, t, u, i, h, l, g = H / KV;
	int64_t widest = E > F ? E : F;
	float *x, *xn, *qall, *kall, *q, *k, *o, *tmp, *gate, *up, *v, *row, *att;
	int rc = ENG_ERR_NOMEM;

	if (n <= 0 || n > hp->n_ctx_train)
		return ENG_ERR_ARG;
	for (t = 0; t < n; t++)
		if (ids[t] < 0 || ids[t] >= V)
			return ENG_ERR_TOKEN;
	x = malloc((size_t)(n * E) * sizeof(float));
	xn = malloc((size_t)E * sizeof(float));
	/* every layer's q and k are kept: PoD's distant logits read the anchor's */
	qall = malloc((size_t)(hp->n_layer * n * H * hd) * sizeof(float));
	o = malloc((size_t)(H * hd) * sizeof(float));
	tmp = malloc((size_t)widest * sizeof(float));
	gate = malloc((size_t)F * sizeof(float));
	up = malloc((size_t)F * sizeof(float));
	kall = malloc((size_t)(hp->n_layer * n * KV * hd) * sizeof(float));
	v = malloc((size_t)(n * KV * hd) * sizeof(float));
	row = malloc((size_t)widest * sizeof(float));
	att = malloc((size_t)n * sizeof(float));
	if (!x || !xn || !qall || !o || !tmp || !gate || !up || !kall || !v || !row || !att)
		goto out;
	for (t = 0; t < n; t++)
		kern_dequant_row(m->tok_embd.type,
		    (const uint8_t *)m->tok_embd.data + (size_t)ids[t] * m->tok_embd.row_bytes,
		    x + t * E, E);
	for (l = 0; l < hp->n_layer; l++) {
		const struct eng_layer *L = &m->layers[l];
		q = qall + l * n * H * hd;
		k = kall + l * n * KV * hd;
		/* projections and RoPE for every token */
		for (t = 0; t < n; t++) {
			ref_rmsnorm(xn, x + t * E, L->attn_norm, E, hp->rms_eps);
			ref_matvec(&L->wq, xn, q + t * H * hd, row);
			ref_matvec(&L->wk, xn, k + t * KV * hd, row);
			ref_matvec(&L->wv, xn, v + t * KV * hd, row);
			ref_add(q + t * H * hd, L->bq, H * hd);
			ref_add(k + t * KV * hd, L->bk, KV * hd);
			ref_add(v + t * KV * hd, L->bv, KV * hd);
			for (h = 0; h < H && L->q_norm; h++)
				ref_rmsnorm(q + (t * H + h) * hd, q + (t * H + h) * hd, L->q_norm, hd,
				    hp->rms_eps);
			for (h = 0; h < KV && L->k_norm; h++)
				ref_rmsnorm(k + (t * KV + h) * hd, k + (t * KV + h) * hd, L->k_norm, hd,
				    hp->rms_eps);
			for (h = 0; h < H; h++)
				ref_rope(q + (t * H + h) * hd, hd, (uint32_t)t, hp);
			for (h = 0; h < KV; h++)
				ref_rope(k + (t * KV + h) * hd, hd, (uint32_t)t, hp);
		}
		/* causal attention, then the rest of the layer, token by token */
		for (t = 0; t < n; t++) {
			for (h = 0; h < H; h++) {
				const float *qh = q + (t * H + h) * hd;
				int64_t kvh = h / g, a = pod ? pod->anc[kvh * hp->n_layer + l] : l;
				const float *qd = pod && !pod->distant_own ?
				    qall + ((a * n + t) * H + h) * hd : qh;
				const float *kd = kall + a * n * KV * hd;
				double mx = -INFINITY, sum = 0.0;
				for (u = 0; u <= t; u++) {
					int dist = ref_pod_distant(pod, u, t);
					const float *qs = dist ? qd : qh, *ks = dist ? kd : k;
					double s = 0.0;
					for (i = 0; i < hd; i++)
						s += (double)qs[i] * ks[(u * KV + kvh) * hd + i];
					att[u] = (float)(s / sqrt((double)hd));
					mx = att[u] > mx ? att[u] : mx;
				}
				for (u = 0; u <= t; u++) {
					att[u] = (float)exp(att[u] - mx);
					sum += att[u];
				}
				for (i = 0; i < hd; i++) {
					double acc = 0.0;
					for (u = 0; u <= t; u++)
						acc += (double)att[u] * v[(u * KV + kvh) * hd + i];
					o[h * hd + i] = (float)(acc / sum);
				}
			}
			ref_matvec(&L->wo, o, tmp, row);
			ref_add(tmp, L->bo, E);
			for (i = 0; i < E; i++)
				x[t * E + i] += tmp[i];
			ref_rmsnorm(xn, x + t * E, L->ffn_norm, E, hp->rms_eps);
			switch (m->arch->act) {
			case ENG_ACT_SILU_GATED:
				ref_matvec(&L->w_gate, xn, gate, row);
				ref_matvec(&L->w_up, xn, up, row);
				for (i = 0; i < F; i++)
					gate[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
				ref_matvec(&L->w_down, gate, tmp, row);
				break;
			}
			for (i = 0; i < E; i++)
				x[t * E + i] += tmp[i];
		}
	}
	for (t = 0; t < n; t++) {
		ref_rmsnorm(xn, x + t * E, m->output_norm, E, hp->rms_eps);
		ref_matvec(&m->output, xn, logits + t * V, row);
	}
	rc = 0;
out:
	free(x);
	free(xn);
	free(qall);
	free(o);
	free(tmp);
	free(gate);
	free(up);
	free(kall);
	free(v);
	free(row);
	free(att);
	return rc;
}
