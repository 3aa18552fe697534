/*
 * model.c: load a model from GGUF through its architecture's description
 * (engine/model/arch_*.c): hyperparameters, and every weight as a kern_mat
 * borrowed from the file's map, except vectors (norms, biases) stored in
 * 16-bit types, which are widened once, and the matrices a decode step
 * streams, which weight_pages.c copies onto huge pages.
 *
 * Every shape is checked against the hyperparameters, so the forward pass
 * can trust them; a file of an architecture that is not enabled, with a
 * tensor its architecture does not use, or with an unsupported tensor type
 * is refused with a reason naming the culprit.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model/model.h"
#include "engine/model/arch.h"
#include "engine/model/weight_pages.h"
#include "engine/fingerprint.h"

/* Read an integer hyperparameter "<prefix>.<key>" into *out (1 .. max). */
static int
model_get_int(const struct eng_gguf *g, const char *arch, const char *key, int required,
    int def, int max, int *out, char *why, size_t why_len)
{
	char name[128];
	uint64_t v;
	int rc;

	snprintf(name, sizeof(name), "%s.%s", arch, key);
	rc = eng_gguf_get_u64(g, name, &v);
	if (rc == ENG_ERR_NOT_FOUND && !required) {
		*out = def;
		return 0;
	}
	if (rc == ENG_ERR_NOT_FOUND)
		return eng_fail(why, why_len, ENG_ERR_FORMAT, "model metadata lacks %s", name);
	if (rc || v == 0 || v > (uint64_t)max)
		return eng_fail(why, why_len, ENG_ERR_FORMAT,
		    "model metadata %s has a bad value", name);
	*out = (int)v;
	return 0;
}

/* Find tensor `name` with shape (cols, rows) and a type matmul supports. */
static int
model_get_mat(const struct eng_gguf *g, const char *name, int64_t cols, int64_t rows,
    struct kern_mat *m, char *why, size_t why_len)
{
	const struct eng_gguf_tensor *t = eng_gguf_find_tensor(g, name);
	if (!t)
		return eng_fail(why, why_len, ENG_ERR_FORMAT, "model lacks tensor %s", name);
	/* every weight type of kernels/ (matmul and get_rows take them all) */
	if (!kern_type_is_weight(t->type))
		return eng_fail(why, why_len, ENG_ERR_TYPE,
		    "tensor %s has type %s (%d), which kvsnap does not support", name,
		    kern_type_name(t->type), (int)t->type);
	if (t->n_dims != 2 || t->ne[0] != cols || t->ne[1] != rows)
		return eng_fail(why, why_len, ENG_ERR_SHAPE,
		    "tensor %s has shape [%lld, %lld], expected [%lld, %lld]", name,
		    (long long)t->ne[0], (long long)t->ne[1], (long long)cols, (long long)rows);
	m->type = t->type;
	m->rows = rows;
	m->cols = cols;
	m->row_bytes = kern_type_row_bytes(t->type, cols);
	m->data = t->data;
	return 0;
}

/* Find a 1-D vector (a norm's weights, a bias) of n elements; widen it to
 * f32 into `spare` when it is not stored as f32. */
static int
model_get_vec(const struct eng_gguf *g, const char *name, int64_t n, const float **out,
    float *spare, char *why, size_t why_len)
{
	const struct eng_gguf_tensor *t = eng_gguf_find_tensor(g, name);
	if (!t)
		return eng_fail(why, why_len, ENG_ERR_FORMAT, "model lacks tensor %s", name);
	if (t->n_dims != 1 || t->ne[0] != n)
		return eng_fail(why, why_len, ENG_ERR_SHAPE,
		    "tensor %s has the wrong shape (expected %lld elements)", name, (long long)n);
	if (t->type == KERN_TYPE_F32) {
		*out = t->data;
		return 0;
	}
	if (t->type != KERN_TYPE_F16 && t->type != KERN_TYPE_BF16)
		return eng_fail(why, why_len, ENG_ERR_TYPE,
		    "vector tensor %s has type %s; expected f32, f16 or bf16", name,
		    kern_type_name(t->type));
	kern_dequant_row(t->type, t->data, spare, n);
	*out = spare;
	return 0;
}

/* Llama 3.1's RoPE frequency factors (llama.cpp's convert script writes
 * the llama3 rope scaling as this F32 tensor, not as rope.scaling.*
 * metadata): head_dim/2 finite positive divisors, or none. */
static int
model_load_rope_freqs(struct eng_model *m, char *why, size_t why_len)
{
	const struct eng_gguf_tensor *t = eng_gguf_find_tensor(m->gguf, "rope_freqs.weight");
	const float *f;
	int64_t i;

	m->hp.rope_freqs = NULL;
	if (!t)
		return 0;
	if (t->type != KERN_TYPE_F32 || t->n_dims != 1 || t->ne[0] != m->hp.head_dim / 2)
		return eng_fail(why, why_len, ENG_ERR_SHAPE,
		    "rope_freqs.weight must be F32 of %d values", m->hp.head_dim / 2);
	f = t->data;
	for (i = 0; i < t->ne[0]; i++)
		if (!(f[i] > 0.0f) || !isfinite(f[i]))
			return eng_fail(why, why_len, ENG_ERR_FORMAT,
			    "rope_freqs.weight[%lld] is not a positive number", (long long)i);
	m->hp.rope_freqs = f;
	return 0;
}

/* The architecture of the file, if kvsnap runs it (or describes it and the
 * caller allows disabled ones). */
static int
model_find_arch(struct eng_model *m, unsigned flags, char *why, size_t why_len)
{
	struct eng_gguf_str name;
	const struct eng_arch *a;
	char runs[128];

	if (eng_gguf_get_str(m->gguf, "general.architecture", &name))
		return eng_fail(why, why_len, ENG_ERR_FORMAT,
		    "model metadata lacks general.architecture");
	a = eng_arch_find(name.ptr, name.len);
	if (!a || (!a->enabled && !(flags & ENG_OPEN_DISABLED_ARCH))) {
		eng_arch_enabled_list(runs, sizeof(runs));
		return eng_fail(why, why_len, ENG_ERR_ARCH,
		    "model architecture '%.*s' is not supported (kvsnap runs %s)",
		    (int)(name.len > 40 ? 40 : name.len), name.ptr, runs);
	}
	m->arch = a;
	return 0;
}

static int
model_load_hparams(struct eng_model *m, char *why, size_t why_len)
{
	const struct eng_gguf *g = m->gguf;
	struct eng_hparams *hp = &m->hp;
	const struct eng_gguf_tensor *emb;
	const char *a = m->arch->key_prefix;
	char key[128];
	int rc, key_len = 0, val_len = 0, rot = 0;

	if ((rc = model_get_int(g, a, "block_count", 1, 0, 1024, &hp->n_layer, why, why_len)) ||
	    (rc = model_get_int(g, a, "embedding_length", 1, 0, 1 << 16, &hp->n_embd, why, why_len)) ||
	    (rc = model_get_int(g, a, "feed_forward_length", 1, 0, 1 << 18, &hp->n_ff, why, why_len)) ||
	    (rc = model_get_int(g, a, "attention.head_count", 1, 0, 1024, &hp->n_head, why, why_len)) ||
	    (rc = model_get_int(g, a, "context_length", 1, 0, 1 << 24, &hp->n_ctx_train, why, why_len)))
		return rc;
	if ((rc = model_get_int(g, a, "attention.head_count_kv", 0, hp->n_head, 1024,
	    &hp->n_head_kv, why, why_len)))
		return rc;
	if (hp->n_embd % hp->n_head || hp->n_head % hp->n_head_kv)
		return eng_fail(why, why_len, ENG_ERR_SHAPE,
		    "head counts (%d, %d) do not divide the embedding (%d)", hp->n_head,
		    hp->n_head_kv, hp->n_embd);
	hp->head_dim = hp->n_embd / hp->n_head;
	if ((rc = model_get_int(g, a, "attention.key_length", 0, hp->head_dim, 1024, &key_len,
	    why, why_len)) ||
	    (rc = model_get_int(g, a, "attention.value_length", 0, hp->head_dim, 1024, &val_len,
	    why, why_len)) ||
	    (rc = model_get_int(g, a, "rope.dimension_count", 0, hp->head_dim, 1024, &rot,
	    why, why_len)))
		return rc;
	if (key_len != hp->head_dim || val_len != hp->head_dim || rot != hp->head_dim ||
	    hp->head_dim % 2 || hp->head_dim > 512)
		return eng_fail(why, why_len, ENG_ERR_SHAPE,
		    "unsupported head layout (head_dim %d, key %d, value %d, rope dims %d)",
		    hp->head_dim, key_len, val_len, rot);
	snprintf(key, sizeof(key), "%s.attention.layer_norm_rms_epsilon", a);
	if (eng_gguf_get_f32(g, key, &hp->rms_eps) || !(hp->rms_eps > 0.0f))
		return eng_fail(why, why_len, ENG_ERR_FORMAT, "model metadata lacks %s", key);
	snprintf(key, sizeof(key), "%s.rope.freq_base", a);
	if (eng_gguf_get_f32(g, key, &hp->rope_base))
		hp->rope_base = 10000.0f;
	if (!(hp->rope_base > 1.0f))
		return eng_fail(why, why_len, ENG_ERR_FORMAT, "bad %s", key);
	snprintf(key, sizeof(key), "%s.rope.scaling.type", a);
	{
		struct eng_gguf_str st;
		if (!eng_gguf_get_str(g, key, &st) && !eng_gguf_str_eq(st, "none") &&
		    !eng_gguf_str_eq(st, "linear"))
			return eng_fail(why, why_len, ENG_ERR_ARCH,
			    "RoPE scaling '%.*s' is not supported", (int)(st.len > 20 ? 20 : st.len),
			    st.ptr);
		/* linear scaling with factor != 1 is not supported either */
		snprintf(key, sizeof(key), "%s.rope.scaling.factor", a);
		{
			float f;
			if (!eng_gguf_get_f32(g, key, &f) && f != 1.0f && f != 0.0f)
				return eng_fail(why, why_len, ENG_ERR_ARCH,
				    "RoPE scaling factor %g is not supported", (double)f);
		}
	}
	hp->rope_style = m->arch->rope;
	emb = eng_gguf_find_tensor(g, m->arch->t->tok_embd);
	if (!emb || emb->n_dims != 2)
		return eng_fail(why, why_len, ENG_ERR_FORMAT, "model lacks %s", m->arch->t->tok_embd);
	if (emb->ne[1] <= 0 || emb->ne[1] > (1 << 24))
		return eng_fail(why, why_len, ENG_ERR_SHAPE, "bad vocabulary size");
	hp->n_vocab = (int)emb->ne[1];
	return model_load_rope_freqs(m, why, why_len);
}

/* BLAKE2b-256 of the whole file, as lowercase hex (remembered between runs:
 * engine/fingerprint_cache.c). */
static int
model_fingerprint(struct eng_model *m, char *why, size_t why_len)
{
	if (eng_fingerprint_file(m->gguf->fd, m->gguf->base, m->gguf->size, m->fingerprint))
		return eng_fail(why, why_len, ENG_ERR_NOMEM, "cannot hash the model file");
	return 0;
}

const char *
eng_model_fingerprint(const struct eng_model *m)
{
	return m->fingerprint;
}

/* The optional per-layer vectors (enum eng_arch_opt), in loading order. */
static const unsigned model_opt_bits[] = {
	ENG_ARCH_BIAS_Q, ENG_ARCH_BIAS_K, ENG_ARCH_BIAS_V, ENG_ARCH_BIAS_O,
	ENG_ARCH_NORM_Q, ENG_ARCH_NORM_K,
};

/* Optional vector `bit` of a layer: its slot in L, its tensor's name in
 * layer l (into name), its length. */
static const float **
model_opt_slot(const struct eng_model *m, struct eng_layer *L, int l, unsigned bit,
    char *name, size_t name_len, int64_t *len)
{
	const struct eng_arch_names *tn = m->arch->t;
	const struct eng_hparams *hp = &m->hp;
	int64_t Q = (int64_t)hp->n_head * hp->head_dim, KV = (int64_t)hp->n_head_kv * hp->head_dim;
	const char *stem, *kind = "bias";
	const float **slot;

	switch (bit) {
	case ENG_ARCH_BIAS_Q: slot = &L->bq; stem = tn->attn_q; *len = Q; break;
	case ENG_ARCH_BIAS_K: slot = &L->bk; stem = tn->attn_k; *len = KV; break;
	case ENG_ARCH_BIAS_V: slot = &L->bv; stem = tn->attn_v; *len = KV; break;
	case ENG_ARCH_BIAS_O: slot = &L->bo; stem = tn->attn_out; *len = hp->n_embd; break;
	case ENG_ARCH_NORM_Q:
		slot = &L->q_norm;
		stem = tn->attn_q_norm;
		kind = "weight";
		*len = hp->head_dim;
		break;
	default:
		slot = &L->k_norm;
		stem = tn->attn_k_norm;
		kind = "weight";
		*len = hp->head_dim;
		break;
	}
	snprintf(name, name_len, "blk.%d.%s.%s", l, stem, kind);
	return slot;
}

/* Load layer l's optional vectors that the architecture has (widened
 * copies at *spare), and refuse any that it does not have. */
static int
model_load_opt(struct eng_model *m, int l, struct eng_layer *L, float **spare, char *why,
    size_t why_len)
{
	char name[96];
	size_t i;
	int rc;

	for (i = 0; i < sizeof(model_opt_bits) / sizeof(model_opt_bits[0]); i++) {
		int64_t len;
		const float **slot = model_opt_slot(m, L, l, model_opt_bits[i], name, sizeof(name),
		    &len);
		*slot = NULL;
		if (!(m->arch->opt & model_opt_bits[i])) {
			/* it would change the math: refuse rather than ignore it */
			if (eng_gguf_find_tensor(m->gguf, name))
				return eng_fail(why, why_len, ENG_ERR_ARCH,
				    "model has tensor %s, which architecture '%s' does not use", name,
				    m->arch->name);
			continue;
		}
		if ((rc = model_get_vec(m->gguf, name, len, slot, *spare, why, why_len)))
			return rc;
		*spare += len;
	}
	return 0;
}

/* Floats of widened vector copies a model may need: the output norm, and
 * per layer its two norms and the optional vectors. */
static size_t
model_vec_floats(const struct eng_model *m)
{
	const struct eng_hparams *hp = &m->hp;
	size_t per = 2 * (size_t)hp->n_embd;
	if (m->arch->opt & ENG_ARCH_BIAS_Q)
		per += (size_t)hp->n_head * (size_t)hp->head_dim;
	if (m->arch->opt & ENG_ARCH_BIAS_K)
		per += (size_t)hp->n_head_kv * (size_t)hp->head_dim;
	if (m->arch->opt & ENG_ARCH_BIAS_V)
		per += (size_t)hp->n_head_kv * (size_t)hp->head_dim;
	if (m->arch->opt & ENG_ARCH_BIAS_O)
		per += (size_t)hp->n_embd;
	if (m->arch->opt & ENG_ARCH_NORM_Q)
		per += (size_t)hp->head_dim;
	if (m->arch->opt & ENG_ARCH_NORM_K)
		per += (size_t)hp->head_dim;
	return (size_t)hp->n_embd + (size_t)hp->n_layer * per;
}

int
eng_model_open(struct eng_model **out, const char *path, char *why, size_t why_len)
{
	return eng_model_open_flags(out, path, 0, why, why_len);
}

int
eng_model_open_flags(struct eng_model **out, const char *path, unsigned flags, char *why,
    size_t why_len)
{
	struct eng_model *m;
	const struct eng_arch_names *tn;
	struct eng_hparams *hp;
	int rc, l;
	int64_t E, Q, KV, F;
	char name[96];
	float *spare;

	*out = NULL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return eng_fail(why, why_len, ENG_ERR_NOMEM, "out of memory");
	rc = eng_gguf_open(&m->gguf, path, why, why_len);
	if (rc)
		goto fail;
	if ((rc = model_find_arch(m, flags, why, why_len)))
		goto fail;
	rc = model_load_hparams(m, why, why_len);
	if (rc)
		goto fail;
	if ((rc = model_fingerprint(m, why, why_len)))
		goto fail;
	hp = &m->hp;
	tn = m->arch->t;
	E = hp->n_embd;
	Q = (int64_t)hp->n_head * hp->head_dim;
	KV = (int64_t)hp->n_head_kv * hp->head_dim;
	F = hp->n_ff;

	m->layers = calloc((size_t)hp->n_layer, sizeof(*m->layers));
	m->norms_f32 = calloc(model_vec_floats(m), sizeof(float));
	if (!m->layers || !m->norms_f32) {
		rc = eng_fail(why, why_len, ENG_ERR_NOMEM, "out of memory");
		goto fail;
	}
	spare = m->norms_f32;
	if ((rc = model_get_mat(m->gguf, tn->tok_embd, E, hp->n_vocab, &m->tok_embd,
	    why, why_len)))
		goto fail;
	if (eng_gguf_find_tensor(m->gguf, tn->output)) {
		if ((rc = model_get_mat(m->gguf, tn->output, E, hp->n_vocab, &m->output,
		    why, why_len)))
			goto fail;
	} else {
		m->output = m->tok_embd; /* tied embeddings */
	}
	if ((rc = model_get_vec(m->gguf, tn->output_norm, E, &m->output_norm, spare,
	    why, why_len)))
		goto fail;
	spare += E;
	for (l = 0; l < hp->n_layer; l++) {
		struct eng_layer *L = &m->layers[l];
#define MAT(field, nm, cols, rows)                                                   \
	snprintf(name, sizeof(name), "blk.%d.%s.weight", l, nm);                     \
	if ((rc = model_get_mat(m->gguf, name, cols, rows, &L->field, why, why_len))) \
		goto fail;
		MAT(wq, tn->attn_q, E, Q)
		MAT(wk, tn->attn_k, E, KV)
		MAT(wv, tn->attn_v, E, KV)
		MAT(wo, tn->attn_out, Q, E)
		MAT(w_gate, tn->ffn_gate, E, F)
		MAT(w_up, tn->ffn_up, E, F)
		MAT(w_down, tn->ffn_down, F, E)
#undef MAT
		snprintf(name, sizeof(name), "blk.%d.%s.weight", l, tn->attn_norm);
		if ((rc = model_get_vec(m->gguf, name, E, &L->attn_norm, spare, why, why_len)))
			goto fail;
		spare += E;
		snprintf(name, sizeof(name), "blk.%d.%s.weight", l, tn->ffn_norm);
		if ((rc = model_get_vec(m->gguf, name, E, &L->ffn_norm, spare, why, why_len)))
			goto fail;
		spare += E;
		if ((rc = model_load_opt(m, l, L, &spare, why, why_len)))
			goto fail;
	}
	if ((rc = model_weights_to_pages(m, why, why_len)))
		goto fail;
	*out = m;
	return 0;
fail:
	eng_model_close(m);
	return rc;
}

void
eng_model_close(struct eng_model *m)
{
	if (!m)
		return;
	model_weights_pages_free(m);
	eng_gguf_close(m->gguf);
	free(m->layers);
	free(m->norms_f32);
	free(m);
}
