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
	/* (head_dim/2) divisors of the RoPE angles (Llama 3.1's rope_freqs.weight,
	 * into the map) or NULL: every rotation uses them (kernels/rope.h). */
	const float *rope_freqs;
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

struct eng_arch; /* an architecture's description (engine/model/arch.h) */

struct eng_model {
	struct eng_gguf *gguf; /* owns the map the weights point into */
	/* the streamed weights' copy on huge pages, or NULL: weight_pages.c */
	void *pages;
	size_t pages_bytes;
	const struct eng_arch *arch; /* the file's architecture */
	struct eng_hparams hp;
	struct kern_mat tok_embd; /* (n_vocab, n_embd) */
	struct kern_mat output;   /* (n_vocab, n_embd); tied to tok_embd if absent */
	const float *output_norm; /* (n_embd) */
	struct eng_layer *layers; /* (n_layer) */
	float *norms_f32;         /* owned copies of vectors stored as f16/bf16 */
	char fingerprint[65];     /* eng_model_fingerprint() */
};

/* Open a model of an enabled architecture (llama, qwen2, qwen3); any other is
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
/* Tokenizer (llama.cpp's byte-level BPE and SentencePiece; tokenizer.c)     */

struct eng_tok;

int eng_tok_init(struct eng_tok **out, const struct eng_gguf *g, char *why, size_t why_len);
void eng_tok_free(struct eng_tok *t);

/* Encode text[0..len) into ids.  parse_special: split out control tokens
 * written literally in the text (as llama.cpp's parse_special).  Returns the
 * number of ids (which may exceed cap: call again with a bigger buffer) or a
 * negative enum eng_err. */
int64_t eng_tok_encode(const struct eng_tok *t, const char *text, size_t len,
    int parse_special, int32_t *ids, int64_t cap);
/* eng_tok_encode for text that continues other text encoded before it, so
 * that the ids of a text cut in pieces are those of the whole text in one
 * call.  *cont says what the text before ended with: 0 (nothing, or a
 * special token: SentencePiece gives the first fragment its leading space),
 * ENG_TOK_CONT_RAW (raw text: no leading space), ENG_TOK_CONT_RSTRIP (a
 * special token that eats the white space after it, Phi-3's: this text's
 * leading white space is dropped).  Start with 0; on success (a count no
 * more than cap) *cont is set for the next piece.  Only where the
 * pre-tokenizer cuts a word boundary between the pieces are the ids exact
 * (see eng_tok_nl_joins_before). */
#define ENG_TOK_CONT_RAW 1
#define ENG_TOK_CONT_RSTRIP 2
int64_t eng_tok_encode_cont(const struct eng_tok *t, const char *text, size_t len,
    int parse_special, int *cont, int32_t *ids, int64_t cap);
/* 1 if the pre-tokenizer keeps a run of line breaks with the text before
 * it (Llama 3's and Qwen2's regexes: ` ?[^\s\p{L}\p{N}]+[\r\n]*` and
 * `\s*[\r\n]+` take "DOC.\n\n" | "Q" and "DOC \n\n" | "Q"): a text is
 * cut exactly AFTER such a run.  0 where line breaks stand apart from the
 * text before them (GPT-2's regex splits "DOC.\n\nQ" as ".", "\n", "\n",
 * "Q"; SentencePiece has no pre-tokenizer and, where no token holds a line
 * break, never merges one): a text is cut exactly BEFORE the run when the
 * text before it ends in a character other than white space. */
int eng_tok_nl_joins_before(const struct eng_tok *t);
/* 1 if a line break never joins the text on either side of it: a
 * SentencePiece vocabulary where no token but a byte token holds one
 * (Llama 2's, Mistral's, Phi-3's), so a cut before or after a line break is
 * exact whatever the text around it.  Scans the vocabulary. */
int eng_tok_nl_apart(const struct eng_tok *t);
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
/* 1 if a prompt starts with BOS, as llama.cpp's add_special: on for
 * SentencePiece and Llama 3, off for other BPE vocabularies, and
 * tokenizer.ggml.add_bos_token decides when present.  (eng_tok_encode never
 * adds it: the caller does.) */
int eng_tok_add_bos(const struct eng_tok *t);
/* 1 if id ends generation (EOS, end-of-text, or another EOG token). */
int eng_tok_is_eog(const struct eng_tok *t, int32_t id);

/* The chat template (engine/model/chat.c, chat_template.c): the GGUF's
 * tokenizer.chat_template, recognized as one of the families kvsnap renders
 * (ChatML/Qwen, Llama 3, Mistral [INST], Gemma, Phi-3; none: ChatML with no
 * system turn) or refused with ENG_ERR_ARG and the reason.  The object
 * borrows t, which must outlive it. */
struct eng_chat;
int eng_chat_init(struct eng_chat **out, const struct eng_gguf *g, const struct eng_tok *t,
    char *why, size_t why_len);
/* The same from template text (NULL: none), with the texts bos_token and
 * eos_token render (NULL: t's BOS and EOS, empty without t); t may be NULL
 * for rendering text only. */
int eng_chat_init_text(struct eng_chat **out, const char *tpl, size_t len, const char *bos,
    const char *eos, const struct eng_tok *t, char *why, size_t why_len);
void eng_chat_free(struct eng_chat *c);
/* The family's name: "chatml", "llama3", "mistral", "gemma", "phi3". */
const char *eng_chat_name(const struct eng_chat *c);

struct eng_chat_msg {
	const char *role;        /* "system", "user", "assistant" */
	const char *content;
	size_t len;
};
/* msgs[0..n) as the template renders them, with the generation prompt when
 * gen: a NUL-terminated string into buf, snprintf semantics (the length
 * needed); a negative enum eng_err when the template refuses the
 * conversation (a role it does not take, roles that do not alternate). */
int64_t eng_chat_render(const struct eng_chat *c, const struct eng_chat_msg *msgs, size_t n,
    int gen, char *buf, size_t cap);
/* A whole conversation's ids with the generation prompt (control tokens
 * parsed only in the template, never in content).  *ids is malloc'd;
 * returns the count or a negative enum eng_err. */
int64_t eng_chat_messages_ids(const struct eng_chat *c, const struct eng_chat_msg *msgs,
    size_t n, int32_t **ids);
/* kvsnap's prompt, the conversation [user: DOC "\n\n" QUESTION] in two
 * halves: the document as the start of the user turn (with the template's
 * default system turn before it), and later QUESTION, the end of the turn
 * and the generation prompt; the "\n\n" between them ends the document
 * half where the tokenizer keeps line breaks with the text before them
 * (Llama 3, Qwen2), else begins the question half (chat.c: where the cut
 * is exact).  An empty document gives the template prefix alone.  *ids is
 * malloc'd; returns the count or a negative enum eng_err. */
int64_t eng_chat_doc_ids(const struct eng_chat *c, const char *doc, size_t len,
    int32_t **ids);
int64_t eng_chat_question_ids(const struct eng_chat *c, const char *q, size_t len,
    int32_t **ids);
/* The question half of a conversation about the document, as the template
 * renders [user: DOC, msgs...] with the generation prompt: when msgs[0] is
 * the user's it continues the document's turn after "\n\n" (one question:
 * eng_chat_question_ids); when it is not (a system message first: the
 * snapshot's own system turn is fixed, so the caller's follows the
 * document; or an assistant's) the document's turn ends after the
 * document and every message is a turn of its own.  ENG_ERR_ARG when the
 * template refuses the conversation (Gemma, Mistral: a system turn there,
 * turns that do not alternate). */
int64_t eng_chat_followup_ids(const struct eng_chat *c, const struct eng_chat_msg *msgs,
    size_t n, int32_t **ids);
/* What follows the user's content: the end of the turn and the generation
 * prompt (kvzip's reconstruction request ends with it). */
int64_t eng_chat_turn_end_ids(const struct eng_chat *c, int32_t **ids);

#endif /* ENGINE_MODEL_MODEL_H */
