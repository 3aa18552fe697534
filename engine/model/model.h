/*
 * model.h: the model and its words: a GGUF file opened through its
 * architecture's description (engine/model/arch*.c), its weights, the
 * tokenizer, and kvsnap's chat prompt (engine/model/).
 */
#ifndef ENGINE_MODEL_MODEL_H
#define ENGINE_MODEL_MODEL_H

#include "engine/base.h"
#include "engine/model/gguf.h" /* for struct eng_gguf */
#include "kernels/kernels.h"  /* for struct kern_mat */

/* ------------------------------------------------------------------------ */
/* Model                                                                     */

struct eng_hparams {
	int n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim, n_vocab, n_ctx_train;
	float rms_eps, rope_base;
	enum kern_rope_style rope_style; /* the architecture's (kernels/rope.h) */
};

/* One layer's weights; the optional vectors are NULL when the model's
 * architecture (engine/model/arch_*.c) has none. */
struct eng_layer {
	const float *attn_norm; /* (n_embd) */
	const float *ffn_norm;  /* (n_embd) */
	const float *bq;        /* (n_head*head_dim) or NULL: q projection bias */
	const float *bk;        /* (n_head_kv*head_dim) or NULL */
	const float *bv;        /* (n_head_kv*head_dim) or NULL */
	const float *bo;        /* (n_embd) or NULL: output projection bias */
	const float *q_norm;    /* (head_dim) or NULL: RMSNorm of each query head */
	const float *k_norm;    /* (head_dim) or NULL: the same for key heads */
	struct kern_mat wq;     /* (n_head*head_dim, n_embd) */
	struct kern_mat wk;     /* (n_head_kv*head_dim, n_embd) */
	struct kern_mat wv;     /* (n_head_kv*head_dim, n_embd) */
	struct kern_mat wo;     /* (n_embd, n_head*head_dim) */
	struct kern_mat w_gate; /* (n_ff, n_embd) */
	struct kern_mat w_up;   /* (n_ff, n_embd) */
	struct kern_mat w_down; /* (n_embd, n_ff) */
};

struct eng_arch; /* an architecture's description (engine_internal.h) */

struct eng_model {
	struct eng_gguf *gguf; /* owns the map the weights point into */
	const struct eng_arch *arch; /* the file's architecture */
	struct eng_hparams hp;
	struct kern_mat tok_embd; /* (n_vocab, n_embd) */
	struct kern_mat output;   /* (n_vocab, n_embd); tied to tok_embd if absent */
	const float *output_norm; /* (n_embd) */
	struct eng_layer *layers; /* (n_layer) */
	float *norms_f32;         /* owned copies of vectors stored as f16/bf16 */
	char fingerprint[65];     /* eng_model_fingerprint() */
};

/* Open a model of an enabled architecture (llama, qwen2); any other is
 * ENG_ERR_ARCH "model architecture 'X' is not supported (kvsnap runs ...)". */
int eng_model_open(struct eng_model **out, const char *path, char *why, size_t why_len);
/* The same with flags: ENG_OPEN_DISABLED_ARCH also opens an architecture
 * kvsnap describes but does not enable (tests prove the architecture seam
 * with one; nothing else should run it). */
#define ENG_OPEN_DISABLED_ARCH 1u
int eng_model_open_flags(struct eng_model **out, const char *path, unsigned flags, char *why,
    size_t why_len);
void eng_model_close(struct eng_model *m);
/* The model's fingerprint: BLAKE2b-256 of the GGUF file's bytes, 64 lowercase
 * hex digits (computed at open).  Binds sidecars, block maps and snapshots. */
const char *eng_model_fingerprint(const struct eng_model *m);

/* ------------------------------------------------------------------------ */
/* Tokenizer (GPT-2 byte-level BPE as GGUF stores it)                        */

struct eng_tok;

int eng_tok_init(struct eng_tok **out, const struct eng_gguf *g, char *why, size_t why_len);
void eng_tok_free(struct eng_tok *t);

/* Encode text[0..len) into ids.  parse_special: split out control tokens
 * written literally in the text (as llama.cpp's parse_special).  Returns the
 * number of ids (which may exceed cap: call again with a bigger buffer) or a
 * negative enum eng_err. */
int64_t eng_tok_encode(const struct eng_tok *t, const char *text, size_t len,
    int parse_special, int32_t *ids, int64_t cap);
/* Bytes of one token's text (specials only if `special`); NULL if out of
 * range.  *len receives the length.  Not NUL-terminated. */
const char *eng_tok_piece(const struct eng_tok *t, int32_t id, int special, size_t *len);
/* Decode one token into buf (raw bytes, may be a partial UTF-8 sequence).
 * Returns bytes written (truncated to cap) or a negative error. */
int eng_tok_decode(const struct eng_tok *t, int32_t id, int special, char *buf, size_t cap);
int32_t eng_tok_n_vocab(const struct eng_tok *t);
/* A lower bound on eng_tok_encode's count for text[0..len), from one pass
 * over the bytes (no BPE): a document too long for the window is refused
 * without tokenizing it.  0 when the vocabulary gives no bound. */
int64_t eng_tok_min_tokens(const struct eng_tok *t, const char *text, size_t len);
int32_t eng_tok_bos(const struct eng_tok *t);
int32_t eng_tok_eos(const struct eng_tok *t);
/* 1 if id ends generation (EOS, end-of-text, or another EOG token). */
int eng_tok_is_eog(const struct eng_tok *t, int32_t id);

/* ChatML rendering of one user turn, as the model's template does it (with
 * the default system turn when system == NULL).  Writes a NUL-terminated
 * string into buf; returns its length, or the length needed if >= cap. */
size_t eng_chat_render(const char *system, const char *user, int add_assistant,
    char *buf, size_t cap);
/* kvsnap's prompt, in two parts: the document as the start of the user
 * turn (default system turn before it; specials parsed only in the
 * template), and later the question that ends the turn ("\n\n" QUESTION,
 * end of turn, assistant header).  *ids is malloc'd; returns the count or a
 * negative enum eng_err. */
int64_t eng_chat_doc_ids(const struct eng_tok *t, const char *doc, size_t len, int32_t **ids);
int64_t eng_chat_question_ids(const struct eng_tok *t, const char *q, size_t len,
    int32_t **ids);
/* A whole conversation as the template renders it: the default system turn
 * unless the first message is one, every message as a turn (specials parsed
 * only in the template, never in content), then the assistant header.
 * *ids is malloc'd; returns the count or a negative enum eng_err. */
struct eng_chat_msg {
	const char *role;        /* "system", "user", "assistant" */
	const char *content;
	size_t len;
};
int64_t eng_chat_messages_ids(const struct eng_tok *t, const struct eng_chat_msg *msgs,
    size_t n, int32_t **ids);

#endif /* ENGINE_MODEL_MODEL_H */
