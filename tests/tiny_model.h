/*
 * tiny_model.h: a tiny random Llama GGUF for mechanics tests (eviction
 * policies, the cache pool), written with tests/gguf_builder.h.
 *
 * Shape (spec/adakv.md §6, spec/locret.md §8): 2 layers, n_embd 32, n_ff 64,
 * 4 query heads, 2 KV heads (head_dim 8, GQA group 2), vocabulary 64,
 * context 4096, rms eps 1e-5, RoPE base 10000.  Every tensor is F32 with
 * deterministic values from the seed (xorshift64* + Box-Muller): matrices
 * ~N(0, TINY_STD²), norm weights ~1 + N(0, 0.1²), the embedding ~N(0, 1).
 * No tokenizer metadata (eng_model_open does not need it).  The data section
 * is aligned to 32 bytes and every tensor is padded to 32.
 *
 *   char path[64];
 *   if (tiny_model_tmp(path, sizeof(path), seed) == 0) { ...; tiny_model_remove(path); }
 *
 * Other shapes (tests/test_arch.c): tiny_model_write_shape() with a struct
 * tiny_shape names another architecture (its name is also the key prefix)
 * and adds q/k/v biases ~N(0, bias_std²) and per-head q/k norm weights
 * ~1 + N(0, 0.1²), written after every other tensor: one seed gives every
 * shape the same values for the tensors they share.  The llama file is
 * byte for byte what it was.
 */
#ifndef TESTS_TINY_MODEL_H
#define TESTS_TINY_MODEL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/rng.h"
#include "engine/engine.h"
#include "tests/gguf_builder.h"

#ifndef TINY_N_LAYER
#define TINY_N_LAYER 2
#endif
#define TINY_N_EMBD 32
#define TINY_N_FF 64
#define TINY_N_HEAD 4
#define TINY_N_HEAD_KV 2
#define TINY_HEAD_DIM (TINY_N_EMBD / TINY_N_HEAD)
#define TINY_N_VOCAB 64
#define TINY_N_CTX 4096
#define TINY_STD 0.35 /* matrices: attention stays spread, not one-hot */
#define TINY_ALIGN 32

struct tiny_rng {
	uint64_t s;
};

static inline uint64_t
tiny_rng_next(struct tiny_rng *r)
{
	return kv_xorshift64s(&r->s);
}

/* Uniform in (0, 1). */
static inline double
tiny_rng_unif(struct tiny_rng *r)
{
	return ((double)(tiny_rng_next(r) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static inline double
tiny_rng_normal(struct tiny_rng *r)
{
	double u = tiny_rng_unif(r), v = tiny_rng_unif(r);
	return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* ids[0..n): random token ids below vocab, the same for a seed: the
 * xorshift64* stream from seed * 2654435761 + salt (each caller keeps its
 * own salt, so its documents stay the ones its checks were written for). */
static inline void
tiny_ids_fill(int32_t *ids, int64_t n, uint64_t seed, uint64_t salt, uint64_t vocab)
{
	uint64_t s = seed * 2654435761u + salt;
	int64_t i;
	for (i = 0; i < n; i++)
		ids[i] = (int32_t)(kv_xorshift64s(&s) % vocab);
}

/* n random token ids of the tiny vocabulary, the same for a seed
 * (malloc'd, the caller frees; aborts on no memory). */
static inline int32_t *
tiny_doc(int64_t n, uint64_t seed)
{
	int32_t *d = malloc((size_t)(n ? n : 1) * sizeof(*d));
	if (!d)
		abort();
	tiny_ids_fill(d, n, seed, 77, TINY_N_VOCAB);
	return d;
}

struct tiny_tensor {
	char name[48];
	int n_dims;
	int64_t ne[2];
	int kind; /* 0 matrix, 1 norm, 2 embedding, 3 bias, 4 rope factors */
};

/* A real tokenizer to carry: its tokenizer.* metadata entries, serialized
 * as GGUF key-value pairs (count n_kv), and its vocabulary size. */
struct tiny_vocab {
	int64_t n_vocab;
	const void *kv;
	size_t kv_len;
	uint64_t n_kv;
};

/* A model's shape: llama's is { "llama", 0, 0.0, 0, 0.0f, NULL, NULL }. */
struct tiny_shape {
	const char *arch; /* general.architecture and the key prefix */
	int qkv_bias;     /* blk.N.attn_{q,k,v}.bias */
	double bias_std;  /* their values' std (0: zeros, the same draws consumed) */
	int qk_norm;      /* blk.N.attn_{q,k}_norm.weight (head_dim) */
	float rope_base;  /* rope.freq_base; 0: 10000 */
	const float *rope_freqs; /* rope_freqs.weight (head_dim/2 values) or NULL */
	const struct tiny_vocab *vocab; /* NULL: TINY_N_VOCAB tokens, no tokenizer */
};

static const struct tiny_shape tiny_llama = { "llama", 0, 0.0, 0, 0.0f, NULL, NULL };

/* The model's tensor list in file order; returns the count. */
static inline int
tiny_model_tensors(struct tiny_tensor *t, int cap, const struct tiny_shape *sh)
{
	static const struct {
		const char *nm;
		int64_t ne0, ne1;
		int opt; /* 0 always, 1 with qkv_bias (a bias), 2 with qk_norm */
	} per_layer[] = {
		{ "attn_norm", TINY_N_EMBD, 0, 0 },
		{ "attn_q", TINY_N_EMBD, TINY_N_HEAD * TINY_HEAD_DIM, 0 },
		{ "attn_k", TINY_N_EMBD, TINY_N_HEAD_KV * TINY_HEAD_DIM, 0 },
		{ "attn_v", TINY_N_EMBD, TINY_N_HEAD_KV * TINY_HEAD_DIM, 0 },
		{ "attn_q", TINY_N_HEAD * TINY_HEAD_DIM, 0, 1 },
		{ "attn_k", TINY_N_HEAD_KV * TINY_HEAD_DIM, 0, 1 },
		{ "attn_v", TINY_N_HEAD_KV * TINY_HEAD_DIM, 0, 1 },
		{ "attn_q_norm", TINY_HEAD_DIM, 0, 2 },
		{ "attn_k_norm", TINY_HEAD_DIM, 0, 2 },
		{ "attn_output", TINY_N_HEAD * TINY_HEAD_DIM, TINY_N_EMBD, 0 },
		{ "ffn_norm", TINY_N_EMBD, 0, 0 },
		{ "ffn_gate", TINY_N_EMBD, TINY_N_FF, 0 },
		{ "ffn_up", TINY_N_EMBD, TINY_N_FF, 0 },
		{ "ffn_down", TINY_N_FF, TINY_N_EMBD, 0 },
	};
	int n = 0, l, pass;
	size_t i;

	if (cap < 3 + TINY_N_LAYER * (int)(sizeof(per_layer) / sizeof(per_layer[0])))
		return -1;
	snprintf(t[n].name, sizeof(t[n].name), "token_embd.weight");
	t[n].n_dims = 2;
	t[n].ne[0] = TINY_N_EMBD;
	t[n].ne[1] = sh->vocab ? sh->vocab->n_vocab : TINY_N_VOCAB;
	t[n].kind = 2;
	n++;
	snprintf(t[n].name, sizeof(t[n].name), "output_norm.weight");
	t[n].n_dims = 1;
	t[n].ne[0] = TINY_N_EMBD;
	t[n].ne[1] = 1;
	t[n].kind = 1;
	n++;
	/* the optional tensors last, so every shape of one seed draws the same
	 * values for the tensors they share */
	for (pass = 0; pass < 2; pass++) {
		for (l = 0; l < TINY_N_LAYER; l++) {
			for (i = 0; i < sizeof(per_layer) / sizeof(per_layer[0]); i++) {
				int opt = per_layer[i].opt;
				if ((opt != 0) != pass || (opt == 1 && !sh->qkv_bias) ||
				    (opt == 2 && !sh->qk_norm))
					continue;
				snprintf(t[n].name, sizeof(t[n].name), "blk.%d.%s.%s", l,
				    per_layer[i].nm, opt == 1 ? "bias" : "weight");
				t[n].n_dims = per_layer[i].ne1 ? 2 : 1;
				t[n].ne[0] = per_layer[i].ne0;
				t[n].ne[1] = per_layer[i].ne1 ? per_layer[i].ne1 : 1;
				t[n].kind = per_layer[i].ne1 ? 0 : opt == 1 ? 3 : 1;
				n++;
			}
		}
	}
	/* Llama 3.1's RoPE frequency factors: given, not drawn */
	if (sh->rope_freqs) {
		snprintf(t[n].name, sizeof(t[n].name), "rope_freqs.weight");
		t[n].n_dims = 1;
		t[n].ne[0] = TINY_HEAD_DIM / 2;
		t[n].ne[1] = 1;
		t[n].kind = 4;
		n++;
	}
	return n;
}

/* Write a model of shape sh to `path`; 0 or -1. */
static inline int
tiny_model_write_shape(const char *path, uint64_t seed, const struct tiny_shape *sh)
{
	struct tiny_tensor t[64];
	uint64_t n_extra = sh->vocab ? sh->vocab->n_kv : 0;
	struct tiny_rng rng;
	struct gb b = { 0 };
	uint64_t off = 0;
	int n = tiny_model_tensors(t, 64, sh), i;
	int64_t j;
	char key[96];

	if (n < 0)
		return -1;
	rng.s = seed * UINT64_C(0x9E3779B97F4A7C15) + UINT64_C(0x1234567);
	if (!rng.s)
		rng.s = 1;
	gb_put(&b, "GGUF", 4);
	gb_u32(&b, 3);
	gb_u64(&b, (uint64_t)n); /* tensors */
	gb_u64(&b, 11 + n_extra); /* metadata keys */
#define TINY_KEY(k) (snprintf(key, sizeof(key), "%s.%s", sh->arch, k), key)
	gb_kv_str(&b, "general.architecture", sh->arch);
	gb_kv_u32(&b, "general.alignment", TINY_ALIGN);
	gb_kv_u32(&b, TINY_KEY("block_count"), TINY_N_LAYER);
	gb_kv_u32(&b, TINY_KEY("embedding_length"), TINY_N_EMBD);
	gb_kv_u32(&b, TINY_KEY("feed_forward_length"), TINY_N_FF);
	gb_kv_u32(&b, TINY_KEY("attention.head_count"), TINY_N_HEAD);
	gb_kv_u32(&b, TINY_KEY("attention.head_count_kv"), TINY_N_HEAD_KV);
	gb_kv_u32(&b, TINY_KEY("context_length"), TINY_N_CTX);
	gb_kv_f32(&b, TINY_KEY("attention.layer_norm_rms_epsilon"), 1e-5f);
	gb_kv_f32(&b, TINY_KEY("rope.freq_base"), sh->rope_base > 0 ? sh->rope_base : 10000.0f);
	gb_kv_u32(&b, TINY_KEY("rope.dimension_count"), TINY_HEAD_DIM);
#undef TINY_KEY
	if (sh->vocab)
		gb_put(&b, sh->vocab->kv, sh->vocab->kv_len);
	for (i = 0; i < n; i++) {
		uint64_t bytes = (uint64_t)(t[i].ne[0] * t[i].ne[1]) * 4;
		gb_tensor_info(&b, t[i].name, t[i].n_dims, t[i].ne, 0 /* F32 */, off);
		off += (bytes + TINY_ALIGN - 1) / TINY_ALIGN * TINY_ALIGN;
	}
	gb_align(&b, TINY_ALIGN);
	for (i = 0; i < n; i++) {
		int64_t cnt = t[i].ne[0] * t[i].ne[1];
		for (j = 0; j < cnt; j++) {
			double x;
			if (t[i].kind == 4) {
				gb_f32(&b, sh->rope_freqs[j]);
				continue;
			}
			x = tiny_rng_normal(&rng);
			float v = t[i].kind == 0 ? (float)(TINY_STD * x)
			    : t[i].kind == 1   ? (float)(1.0 + 0.1 * x)
			    : t[i].kind == 3   ? (float)(sh->bias_std * x)
			                       : (float)x;
			gb_f32(&b, v);
		}
		gb_align(&b, TINY_ALIGN);
	}
	return gb_save(&b, path);
}

/* Write the llama model to `path`; 0 or -1. */
static inline int
tiny_model_write(const char *path, uint64_t seed)
{
	return tiny_model_write_shape(path, seed, &tiny_llama);
}

/* Create a fresh temporary file (mkstemp) and write a model of shape sh
 * into it; the path goes to path[0..cap) (cap >= 32).  0 or -1. */
static inline int
tiny_model_tmp_shape(char *path, size_t cap, uint64_t seed, const struct tiny_shape *sh)
{
	if (th_tmp(path, cap, "tiny"))
		return -1;
	if (tiny_model_write_shape(path, seed, sh)) {
		unlink(path);
		return -1;
	}
	return 0;
}

/* The same for the llama model. */
static inline int
tiny_model_tmp(char *path, size_t cap, uint64_t seed)
{
	return tiny_model_tmp_shape(path, cap, seed, &tiny_llama);
}

static inline void
tiny_model_remove(const char *path)
{
	if (path && *path)
		unlink(path);
}

/* A model shell with only the hyperparameters eng_kv_init reads (no
 * weights): what the pool and snapshot tests build caches for. */
static inline void
tiny_shell(struct eng_model *m, int n_layer, int n_head, int n_kv, int hd)
{
	memset(m, 0, sizeof(*m));
	m->hp.n_layer = n_layer;
	m->hp.n_head = n_head;
	m->hp.n_head_kv = n_kv;
	m->hp.head_dim = hd;
	m->hp.rope_base = 10000.0f;
}

/* The header of a retaining-heads sidecar for the tiny model: rank d_r,
 * no base fingerprint, the given recipe, no training data. */
static inline struct eng_heads_info
tiny_heads_info(int d_r, const char *recipe)
{
	struct eng_heads_info in;
	memset(&in, 0, sizeof(in));
	in.n_layer = TINY_N_LAYER;
	in.n_head = TINY_N_HEAD;
	in.n_head_kv = TINY_N_HEAD_KV;
	in.head_dim = TINY_HEAD_DIM;
	in.d_r = d_r;
	in.base_fingerprint = "";
	in.recipe = recipe;
	in.data = "none";
	return in;
}

/* The llama model written to a fresh temporary file (its path in
 * path[0..cap)) and opened: the model a test program keeps for its whole
 * run.  0, or -1 with the reason in why and nothing left behind. */
static inline int
tiny_model_tmp_open(struct eng_model **m, char *path, size_t cap, uint64_t seed, char *why,
    size_t why_len)
{
	*m = NULL;
	if (tiny_model_tmp(path, cap, seed)) {
		snprintf(why, why_len, "cannot write the tiny model");
		return -1;
	}
	if (eng_model_open(m, path, why, why_len)) {
		tiny_model_remove(path);
		return -1;
	}
	return 0;
}

/* Closes and removes what tiny_model_tmp_open made. */
static inline void
tiny_model_tmp_close(struct eng_model *m, const char *path)
{
	eng_model_close(m);
	tiny_model_remove(path);
}

#endif /* TESTS_TINY_MODEL_H */
