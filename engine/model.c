/*
 * model.c: load a Llama-family model from GGUF: hyperparameters, and every
 * weight as a kern_mat borrowed from the file's map (never copied, except
 * norm vectors stored in 16-bit types, which are widened once).
 *
 * Every shape is checked against the hyperparameters, so the forward pass
 * can trust them; a file of another architecture or with an unsupported
 * tensor type is refused with a reason naming the culprit.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "engine/engine.h"
#include "engine/engine_internal.h"


/* Read an integer hyperparameter "<arch>.<key>" into *out (1 .. max). */
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
	if (t->type != KERN_TYPE_F32 && t->type != KERN_TYPE_F16 && t->type != KERN_TYPE_BF16 &&
	    t->type != KERN_TYPE_Q4_0 && t->type != KERN_TYPE_Q4_1 && t->type != KERN_TYPE_Q8_0 &&
	    t->type != KERN_TYPE_Q4_K && t->type != KERN_TYPE_Q6_K)
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

/* Find a 1-D norm vector of n elements; widen it to f32 into `spare` when it
 * is not stored as f32. */
static int
model_get_norm(const struct eng_gguf *g, const char *name, int64_t n, const float **out,
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
		    "norm tensor %s has type %s; expected f32, f16 or bf16", name,
		    kern_type_name(t->type));
	kern_dequant_row(t->type, t->data, spare, n);
	*out = spare;
	return 0;
}

static int
model_load_hparams(struct eng_model *m, char *why, size_t why_len)
{
	const struct eng_gguf *g = m->gguf;
	struct eng_hparams *hp = &m->hp;
	struct eng_gguf_str arch;
	const struct eng_gguf_tensor *emb;
	char a[32], key[128];
	int rc, key_len = 0, val_len = 0, rot = 0;

	if (eng_gguf_get_str(g, "general.architecture", &arch))
		return eng_fail(why, why_len, ENG_ERR_FORMAT,
		    "model metadata lacks general.architecture");
	if (!eng_gguf_str_eq(arch, "llama"))
		return eng_fail(why, why_len, ENG_ERR_ARCH,
		    "model architecture '%.*s' is not supported (kvsnap runs 'llama')",
		    (int)(arch.len > 40 ? 40 : arch.len), arch.ptr);
	snprintf(a, sizeof(a), "llama");
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
	emb = eng_gguf_find_tensor(g, "token_embd.weight");
	if (!emb || emb->n_dims != 2)
		return eng_fail(why, why_len, ENG_ERR_FORMAT, "model lacks token_embd.weight");
	if (emb->ne[1] <= 0 || emb->ne[1] > (1 << 24))
		return eng_fail(why, why_len, ENG_ERR_SHAPE, "bad vocabulary size");
	hp->n_vocab = (int)emb->ne[1];
	return 0;
}

/* BLAKE2b-256 of the whole file, as lowercase hex (libsodium). */
static int
model_fingerprint(struct eng_model *m, char *why, size_t why_len)
{
	unsigned char h[32];
	if (sodium_init() < 0 ||
	    crypto_generichash(h, sizeof(h), m->gguf->base, m->gguf->size, NULL, 0))
		return eng_fail(why, why_len, ENG_ERR_NOMEM, "cannot hash the model file");
	sodium_bin2hex(m->fingerprint, sizeof(m->fingerprint), h, sizeof(h));
	return 0;
}

const char *
eng_model_fingerprint(const struct eng_model *m)
{
	return m->fingerprint;
}

int
eng_model_open(struct eng_model **out, const char *path, char *why, size_t why_len)
{
	struct eng_model *m;
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
	rc = model_load_hparams(m, why, why_len);
	if (rc)
		goto fail;
	if ((rc = model_fingerprint(m, why, why_len)))
		goto fail;
	hp = &m->hp;
	E = hp->n_embd;
	Q = (int64_t)hp->n_head * hp->head_dim;
	KV = (int64_t)hp->n_head_kv * hp->head_dim;
	F = hp->n_ff;

	m->layers = calloc((size_t)hp->n_layer, sizeof(*m->layers));
	m->norms_f32 = calloc((size_t)(2 * hp->n_layer + 1) * (size_t)E, sizeof(float));
	if (!m->layers || !m->norms_f32) {
		rc = eng_fail(why, why_len, ENG_ERR_NOMEM, "out of memory");
		goto fail;
	}
	spare = m->norms_f32;
	if ((rc = model_get_mat(m->gguf, "token_embd.weight", E, hp->n_vocab, &m->tok_embd,
	    why, why_len)))
		goto fail;
	if (eng_gguf_find_tensor(m->gguf, "output.weight")) {
		if ((rc = model_get_mat(m->gguf, "output.weight", E, hp->n_vocab, &m->output,
		    why, why_len)))
			goto fail;
	} else {
		m->output = m->tok_embd; /* tied embeddings */
	}
	if ((rc = model_get_norm(m->gguf, "output_norm.weight", E, &m->output_norm, spare,
	    why, why_len)))
		goto fail;
	spare += E;
	for (l = 0; l < hp->n_layer; l++) {
		struct eng_layer *L = &m->layers[l];
#define MAT(field, nm, cols, rows)                                                   \
	snprintf(name, sizeof(name), "blk.%d.%s.weight", l, nm);                     \
	if ((rc = model_get_mat(m->gguf, name, cols, rows, &L->field, why, why_len))) \
		goto fail;
		MAT(wq, "attn_q", E, Q)
		MAT(wk, "attn_k", E, KV)
		MAT(wv, "attn_v", E, KV)
		MAT(wo, "attn_output", Q, E)
		MAT(w_gate, "ffn_gate", E, F)
		MAT(w_up, "ffn_up", E, F)
		MAT(w_down, "ffn_down", F, E)
#undef MAT
		snprintf(name, sizeof(name), "blk.%d.attn_norm.weight", l);
		if ((rc = model_get_norm(m->gguf, name, E, &L->attn_norm, spare, why, why_len)))
			goto fail;
		spare += E;
		snprintf(name, sizeof(name), "blk.%d.ffn_norm.weight", l);
		if ((rc = model_get_norm(m->gguf, name, E, &L->ffn_norm, spare, why, why_len)))
			goto fail;
		spare += E;
		/* Biases would change the math; refuse rather than ignore them. */
		snprintf(name, sizeof(name), "blk.%d.attn_q.bias", l);
		if (eng_gguf_find_tensor(m->gguf, name)) {
			rc = eng_fail(why, why_len, ENG_ERR_ARCH,
			    "attention biases are not supported yet");
			goto fail;
		}
	}
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
	eng_gguf_close(m->gguf);
	free(m->layers);
	free(m->norms_f32);
	free(m);
}

const char *
eng_strerror(int err)
{
	switch (err) {
	case ENG_OK: return "ok";
	case ENG_ERR_NOMEM: return "out of memory";
	case ENG_ERR_IO: return "cannot read file";
	case ENG_ERR_FORMAT: return "malformed file";
	case ENG_ERR_VERSION: return "unsupported file version";
	case ENG_ERR_NOT_FOUND: return "not found";
	case ENG_ERR_ARCH: return "unsupported model architecture";
	case ENG_ERR_TYPE: return "unsupported tensor type";
	case ENG_ERR_SHAPE: return "tensor shape does not fit the model";
	case ENG_ERR_TOKENIZER: return "tokenizer data missing or inconsistent";
	case ENG_ERR_CONTEXT: return "more tokens than the context window";
	case ENG_ERR_TOKEN: return "token id out of range";
	case ENG_ERR_ARG: return "bad argument";
	case ENG_ERR_CANCELLED: return "cancelled";
	case ENG_ERR_KERNEL: return "kernel failure";
	case ENG_ERR_BACKEND: return "compute backend not usable";
	default: return "unknown engine error";
	}
}
