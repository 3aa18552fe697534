/*
 * engine.h: the public face of kvsnap's inference engine.
 *
 * Lifecycle: eng_model_open() maps a GGUF and borrows its weights;
 * eng_tok_init() builds the tokenizer from the same file; eng_kv_init()
 * allocates a KV cache for that model; eng_forward() runs any chunk of tokens
 * against a cache; eng_generate() decodes.  Close in reverse order.
 *
 * Errors: every function returns 0 or a negative enum eng_err and never
 * prints, exits or aborts on bad input.  Functions that can fail for reasons
 * a person must read take `char *why, size_t why_len` and write one line.
 *
 * Threads: a model is read-only after open and may be shared; a kv cache,
 * a tokenizer's scratch and a kern_ctx belong to one thread at a time.
 */
#ifndef ENGINE_H
#define ENGINE_H

#include <stddef.h> /* for size_t */
#include <stdint.h> /* for int32_t */

#include "kernels/kernels.h" /* for struct kern_ctx, struct kern_mat */
#include "engine/gguf.h"               /* for struct eng_gguf */

/* Status codes (grouped by family in tens; never renumber). */
enum eng_err {
	ENG_OK = 0,
	ENG_ERR_NOMEM = -1,
	ENG_ERR_IO = -10,        /* open/stat/mmap failed */
	ENG_ERR_FORMAT = -11,    /* malformed or hostile file */
	ENG_ERR_VERSION = -12,   /* unsupported file version */
	ENG_ERR_NOT_FOUND = -13, /* key or tensor missing */
	ENG_ERR_ARCH = -20,      /* architecture we do not run */
	ENG_ERR_TYPE = -21,      /* unsupported tensor type */
	ENG_ERR_SHAPE = -22,     /* tensor shape does not fit the model */
	ENG_ERR_TOKENIZER = -23, /* tokenizer data missing or inconsistent */
	ENG_ERR_CONTEXT = -30,   /* more tokens than the context window */
	ENG_ERR_TOKEN = -31,     /* token id out of range */
	ENG_ERR_ARG = -32,       /* bad argument */
	ENG_ERR_CANCELLED = -33, /* a progress callback asked to stop */
	ENG_ERR_KERNEL = -40,    /* a kernel failed (see kern_strerror) */
	ENG_ERR_BACKEND = -41    /* the compute backend asked for is not usable */
};
const char *eng_strerror(int err);
/* Write a one-line human reason into why (when given) and return err: the
 * shape of every failure path that explains itself (engine and storage). */
int eng_fail(char *why, size_t why_len, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Seconds on the monotonic clock (engine/clock.c): the one timer of the
 * engine, the daemon, the CLI, the benches and the tests. */
double eng_now(void);

/* ------------------------------------------------------------------------ */
/* Model                                                                     */

struct eng_hparams {
	int n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim, n_vocab, n_ctx_train;
	float rms_eps, rope_base;
	enum kern_rope_style rope_style; /* the architecture's (kernels/rope.h) */
};

/* One layer's weights; the optional vectors are NULL when the model's
 * architecture (engine/arch_*.c) has none. */
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

/* Open a model of an enabled architecture (today: llama); any other is
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

/* ------------------------------------------------------------------------ */
/* KV cache pool (DESIGN.md §3, spec/adakv.md §3.2).
 *
 * Per layer one arena of `rows` rows holding the n_head_kv head segments:
 * head m owns rows [off[m], off[m] + cap[m]) and uses the first len[m].
 * Rows of a segment are in ascending original position.  Per row: original
 * position, pre-RoPE key (for snapshots), rotated key (derived: what
 * attention reads), value, and the policy's score.  Heads of one layer may
 * hold different counts (Ada-KV); eviction compacts a layer into the spare
 * arena and swaps, spreading the free rows over the heads as headroom.     */

enum eng_pos_mode {
	ENG_POS_ORIGINAL = 0, /* a unit keeps its token position */
	ENG_POS_SLOT = 1      /* units renumbered 0..C-1 after each eviction (Locret) */
};

struct eng_kv_layer {
	int64_t *off, *len, *cap; /* (n_head_kv) */
	uint32_t *pos;            /* (rows) original positions */
	float *score;             /* (rows) */
	float *k;                 /* (rows, head_dim) pre-RoPE keys */
	float *kr;                /* (rows, head_dim) rotated keys */
	float *v;                 /* (rows, head_dim) */
};

struct eng_kv {
	int n_layer, n_head_kv, head_dim;
	float rope_base;
	enum kern_rope_style rope_style;
	enum eng_pos_mode pos_mode;
	int64_t rows;               /* arena rows per layer */
	struct eng_kv_layer *layer; /* (n_layer) */
	struct eng_kv_layer spare;  /* compaction target, swapped in */
	uint32_t next_pos;          /* original position of the next token */
	struct eng_kv_pod *pod;     /* PoD layer sharing, or NULL (dense) */
};

/* A pool's PoD layout (engine/kv_pod.c). */
struct eng_kv_pod {
	uint8_t *anc;    /* (n_head_kv, n_layer) anchor layer of (m, l) */
	uint32_t n_s, n_r;
	int distant_own; /* distant logits with the own query (experiments) */
};

/* A pool whose layers hold rows_per_head * n_head_kv rows, split evenly. */
int eng_kv_init(struct eng_kv **out, const struct eng_model *m, int64_t rows_per_head);
void eng_kv_free(struct eng_kv *kv);
void eng_kv_clear(struct eng_kv *kv);
/* Units held by (layer, head); total units of a layer. */
int64_t eng_kv_len(const struct eng_kv *kv, int layer, int head);
int64_t eng_kv_layer_units(const struct eng_kv *kv, int layer);
/* Keep, in layer `layer`, for each head m the n_keep[m] units whose indices
 * (ascending, into the head's current list) are keep[m][0..n_keep[m]); the
 * rest are dropped and the layer is compacted.  In slot mode keys are
 * re-rotated to their new slots. */
int eng_kv_compact(struct eng_kv *kv, int layer, const int64_t *const *keep,
    const int64_t *n_keep);
/* Loading a snapshot (storage/ writes the rows): lay out layer `layer` for
 * counts[m] units per head, the free rows spread as headroom as compaction
 * does (ENG_ERR_ARG if they do not fit); then, after every layer, set the
 * next position and mode and derive the rotated keys (NaN rows stay NaN). */
int eng_kv_prepare_layer(struct eng_kv *kv, int layer, const int64_t *counts);
int eng_kv_finish_load(struct eng_kv *kv, uint32_t next_pos, enum eng_pos_mode mode);
/* Drop the last n units of every (layer, head) and move next_pos back by
 * n: undoes eng_forward of n tokens (a question and its answer, a
 * reconstruction pass).  ENG_ERR_ARG if some head holds fewer than n. */
int eng_kv_drop_tail(struct eng_kv *kv, int64_t n);
/* Round every key and value to fp16 in place and re-derive the rotated
 * keys: the in-memory twin of an fp16 snapshot (tests compare the two). */
void eng_kv_round_fp16(struct eng_kv *kv);
/* Position a new unit of (layer, head) would be rotated at: next_pos in
 * original mode, the head's count in slot mode. */
uint32_t eng_kv_rope_pos(const struct eng_kv *kv, int layer, int head);

/* ------------------------------------------------------------------------ */
/* Forward pass                                                              */

struct eng_ctx; /* scratch buffers + the kern_ctx; one per thread */

int eng_ctx_init(struct eng_ctx **out, const struct eng_model *m, int n_threads,
    int64_t max_chunk);
void eng_ctx_free(struct eng_ctx *c);
struct kern_ctx *eng_ctx_kern(struct eng_ctx *c);

/* The compute backend of every eng_ctx made after this call: "cpu" (the
 * default) or "cuda".  Opens the device once to check it: ENG_ERR_BACKEND
 * with the reason in why ("no CUDA device: ...", "this build has no CUDA
 * backend ...") if it cannot be used.  Call before starting threads. */
int eng_use_backend(const char *name, char *why, size_t why_len);
const char *eng_ctx_backend(const struct eng_ctx *c);
/* eng_use_backend($KVSNAP_BACKEND) when it is set and not "cpu"; 0 otherwise. */
int eng_use_backend_env(char *why, size_t why_len);

/* Exact mode (tests, reference checks): matmuls keep activations in f32
 * instead of rounding them to llama.cpp's 8-bit grid. */
void eng_ctx_set_exact(struct eng_ctx *c, int exact);

/* The plain scalar reference forward pass (engine/ref_forward.c): logits
 * (n, n_vocab) for every token of ids[0..n) from an empty cache, exact f32
 * (f64 accumulation), no rounding.  Slow; for tests. */
int eng_ref_forward(const struct eng_model *m, const int32_t *ids, int64_t n, float *logits);
/* The same with PoD layer sharing (spec/pod.md §1.3, straight from the
 * formula: every layer's q and k kept); pod == NULL is eng_ref_forward. */
struct eng_kv_pod;
int eng_ref_forward_pod(const struct eng_model *m, const int32_t *ids, int64_t n,
    const struct eng_kv_pod *pod, float *logits);

/* Run tokens ids[0..n) at positions kv->next_pos.. through every layer,
 * appending their K/V to kv.  For each i with want_logits[i] != 0 (or only
 * the last token when want_logits == NULL) write n_vocab logits to
 * logits + j*n_vocab, j counting the requested rows in order.  logits may be
 * NULL when none are requested.  Chunks larger than the ctx's max_chunk are
 * split internally. */
int eng_forward(struct eng_ctx *c, struct eng_kv *kv, const int32_t *ids, int64_t n,
    const uint8_t *want_logits, float *logits);

/* ------------------------------------------------------------------------ */
/* Eviction policies and chunked ingest (DESIGN.md §3; spec/ files)
 *
 * A policy is created by name with "key=value,key=value" options and a
 * budget b (units per KV head per layer, on average).  eng_ingest() reads a
 * document chunk by chunk: every layer attends to (kept cache ∪ causal
 * chunk), then the policy scores the units and the layer is compacted to its
 * budget, so a layer never holds more than n_kv·(b + chunk + w) units
 * (pyramidkv: its first layer's larger budget in place of b).
 * The query path ("continue") is eng_forward() on the compressed cache: it
 * appends at positions n, n+1, … and never evicts.
 *
 * Names: full, streaming, h2o, snapkv, pyramidkv, adakv, nacl, locret, pod, kvzip (options in
 * engine/policy_*.c and docs/POLICIES.md).                                  */

struct eng_policy;

int eng_policy_create(struct eng_policy **out, const char *name, const char *opts,
    int64_t budget, char *why, size_t why_len);
/* The same with the budget as a share of each document's units (0 < ratio
 * <= 1): the budget becomes ⌈ratio·n⌉ units per KV head for a document of
 * n tokens (eng_policy_resolve, done by eng_ingest and
 * eng_policy_rows_per_head); the description says ratio=R. */
int eng_policy_create_ratio(struct eng_policy **out, const char *name, const char *opts,
    double ratio, char *why, size_t why_len);
/* Parse a ratio written as a decimal ("0.25") or a fraction ("1/4"); 0 if
 * it is in (0, 1], ENG_ERR_ARG if not. */
int eng_parse_ratio(const char *s, double *out);
/* The ratio (0 for the budget form). */
double eng_policy_ratio(const struct eng_policy *p);
/* Resolve a ratio's budget for a document of n_doc tokens and re-check the
 * options against it (a no-op for the budget form); ENG_ERR_ARG with a
 * reason. */
int eng_policy_resolve(struct eng_policy *p, int64_t n_doc, char *why, size_t why_len);
void eng_policy_free(struct eng_policy *p);
const char *eng_policy_name(const struct eng_policy *p);
/* Canonical "name:k=v,…" with every parameter (defaults included), for
 * profile ids.  Returns the length (snprintf semantics). */
size_t eng_policy_describe(const struct eng_policy *p, char *buf, size_t cap);
/* The description with the policy's file (Locret heads, PoD map) named by
 * its content fingerprint instead of its path: what profile ids hash.
 * snprintf semantics. */
size_t eng_policy_profile(const struct eng_policy *p, char *buf, size_t cap);
/* Rows per KV head the pool needs to ingest with chunk size `chunk` and then
 * append `n_extra` tokens (question + answer) without eviction. */
int64_t eng_policy_rows_per_head(struct eng_policy *p, int64_t n_doc, int64_t chunk,
    int64_t n_extra);
/* Check the policy's own files (Locret heads, PoD block map) against the
 * model that will run; ENG_ERR_SHAPE / ENG_ERR_ARG with a reason.
 * eng_ingest binds too, without the reason. */
int eng_policy_bind(struct eng_policy *p, const struct eng_model *m, char *why, size_t why_len);
/* opts with the defaults that come from the model file: for locret without
 * heads=, heads=<model path minus .gguf>.locret.gguf when that file exists
 * (where `make heads` puts the bundled model's sidecar).  malloc'd; NULL on
 * OOM. */
char *eng_policy_default_opts(const char *name, const char *opts, const char *model_path);
/* The chunk length eng_ctx_init must allow for ingest with `chunk`. */
int64_t eng_policy_max_chunk(const struct eng_policy *p, int64_t chunk);

/* Chunked prefill of ids[0..n) with eviction into kv (which must be empty
 * and sized by eng_policy_rows_per_head).  last_logits (n_vocab, may be
 * NULL) receives the logits after the last token. */
int eng_ingest(struct eng_ctx *c, struct eng_kv *kv, struct eng_policy *p,
    const int32_t *ids, int64_t n, int64_t chunk, float *last_logits);
/* Called after each chunk with the tokens done so far and the total;
 * return non-zero to stop (the ingest then returns ENG_ERR_CANCELLED and
 * the pool holds a partial cache the caller must not store). */
typedef int (*eng_progress_cb)(void *arg, int64_t done, int64_t total);
/* eng_ingest with an optional progress/cancel callback (cb may be NULL). */
int eng_ingest_cb(struct eng_ctx *c, struct eng_kv *kv, struct eng_policy *p,
    const int32_t *ids, int64_t n, int64_t chunk, float *last_logits, eng_progress_cb cb,
    void *arg);

/* Shrink a pool that kvzip made (every unit scored; sinks +inf) to p's
 * budget for a document of n_doc tokens by the stored scores, with p's
 * selection and no model run (kvsnap shrink).  ENG_ERR_ARG with a reason if
 * p is not kvzip or the pool already holds no more than the budget. */
int eng_kvzip_shrink(struct eng_policy *p, struct eng_kv *kv, int64_t n_doc, char *why,
    size_t why_len);

/* ------------------------------------------------------------------------ */
/* Sampling and generation                                                   */

struct eng_sampler {
	float temp;    /* 0 = greedy */
	float top_p;   /* 1 = off */
	uint64_t seed;
	uint64_t state; /* xorshift state, set from seed by eng_sampler_init */
};

void eng_sampler_init(struct eng_sampler *s, float temp, float top_p, uint64_t seed);
/* Pick a token from logits (n_vocab).  Greedy picks the lowest id on ties. */
int32_t eng_sample(struct eng_sampler *s, const float *logits, int32_t n_vocab);

/* Called for every generated token; return non-zero to stop. */
typedef int (*eng_token_cb)(void *arg, int32_t id);

/* Prefill prompt ids (all but logits of the last) and decode up to n_max
 * tokens, stopping at an end-of-generation token (not reported).  *n_out
 * receives the number generated. */
int eng_generate(struct eng_ctx *c, struct eng_kv *kv, const struct eng_tok *tok,
    const int32_t *prompt, int64_t n_prompt, int64_t n_max, struct eng_sampler *s,
    eng_token_cb cb, void *arg, int64_t *n_out);

/* ------------------------------------------------------------------------ */
/* Retaining heads (Locret; engine/locret_heads.c, engine/policy_locret.c)
 *
 * One MLP per layer maps a token's pre-RoPE [Q, K, V] to one importance
 * score per KV head (spec/locret.md §1).  They live in a GGUF sidecar whose
 * layout is written at the top of engine/locret_heads.c.  A handle is
 * read-only after open and may be shared by threads.                        */

struct eng_heads;

struct eng_heads_info {
	int n_layer, n_head, n_head_kv, head_dim;
	int d_r;                      /* hidden width of every head */
	const char *base_fingerprint; /* hex of the base model; "" = unbound */
	const char *recipe;           /* free text: how they were trained */
	const char *data;             /* free text: what they were trained on */
	const char *labels;           /* what they predict: "cis" or "kvzip" */
};

/* Open a sidecar.  With m != NULL every dimension must match the model
 * (ENG_ERR_SHAPE and a reason naming both otherwise); with m == NULL only
 * the file's own consistency is checked.  Errors: ENG_ERR_IO, _FORMAT,
 * _ARCH (not a sidecar, or an activation other than silu), _NOT_FOUND (a
 * tensor is missing), _TYPE (not f32/f16), _SHAPE, _NOMEM. */
int eng_heads_open(struct eng_heads **out, const char *path, const struct eng_model *m,
    char *why, size_t why_len);
void eng_heads_close(struct eng_heads *h);
/* BLAKE2b-256 hex of the sidecar file's bytes: what profile ids record. */
const char *eng_heads_fingerprint(const struct eng_heads *h);
/* The sidecar's metadata; strings live as long as the handle. */
const struct eng_heads_info *eng_heads_get_info(const struct eng_heads *h);
/* ENG_ERR_SHAPE (with a reason) unless the heads fit model m. */
int eng_heads_check_model(const struct eng_heads *h, const struct eng_model *m, char *why,
    size_t why_len);
/* Fingerprint binding: compares (case-insensitively) only when both the
 * sidecar's base_fingerprint and model_fp are non-empty; ENG_ERR_ARG with a
 * reason on a mismatch, else 0.  The engine has no model fingerprint yet:
 * the caller passes the one it computed (or NULL to skip). */
int eng_heads_check_fingerprint(const struct eng_heads *h, const char *model_fp, char *why,
    size_t why_len);
/* Layer weights as f32: W1ᵀ (d_r, D_in) and W2ᵀ (n_head_kv, d_r), i.e.
 * PyTorch's fc1.weight / fc2.weight; NULL for a bad layer. */
const float *eng_heads_w1(const struct eng_heads *h, int layer);
const float *eng_heads_w2(const struct eng_heads *h, int layer);
/* Write a sidecar (type KERN_TYPE_F32 or KERN_TYPE_F16) from w1[l] (d_r,
 * D_in) and w2[l] (n_head_kv, d_r), D_in = (n_head + 2·n_head_kv)·head_dim.
 * Written to PATH.tmp and renamed, so a reader never sees half a file. */
int eng_heads_write(const char *path, const struct eng_heads_info *info,
    const float *const *w1, const float *const *w2, enum kern_type type, char *why,
    size_t why_len);
/* CIS of n_tok tokens of layer `layer`: out (n_tok, n_head_kv) from
 * qpre (n_tok, n_head·head_dim), kpre and v (n_tok, n_head_kv·head_dim),
 * all pre-RoPE.  Errors: ENG_ERR_ARG, ENG_ERR_NOMEM. */
int eng_heads_score(const struct eng_heads *h, int layer, const float *qpre, const float *kpre,
    const float *v, int64_t n_tok, float *out);

/* Check a `locret` policy's heads against the model they will run with
 * (n_head included, which eviction alone cannot see).  ENG_ERR_ARG if p is
 * not a locret policy; ENG_ERR_SHAPE with a reason on a mismatch. */
int eng_locret_bind(struct eng_policy *p, const struct eng_model *m, char *why, size_t why_len);

/* ------------------------------------------------------------------------ */
/* Retaining-head training (spec/locret.md §2–§4, §7.1–7.2;
 * engine/locret_labels.c, engine/locret_train.c)
 *
 * One example = (prompt P, answer A).  eng_train_collect() runs the frozen
 * model once over P ++ A and keeps, per layer, the prompt tokens' pre-RoPE
 * [Q|K|V] (the heads' input) and the CIS labels: the largest scaled
 * pre-softmax logit of any answer query of the KV head's GQA group against
 * each prompt key.  eng_train_step() then takes one AdamW step of every
 * layer's head (Smooth-L1 + α·adjacent smoothness, clip by value, the
 * reference schedule scaled to the step count).  Weights and moments are
 * fp32; a trainer is deterministic for its seed whatever the thread count,
 * and a checkpoint resumes bit-identically.  One thread at a time.          */

struct eng_train_opts {
	int d_r;          /* hidden width (256) */
	uint64_t seed;    /* initialization seed (0) */
	int64_t n_steps;  /* schedule length: optimizer steps of the run */
	int64_t warmup;   /* linear warmup steps (round(2/3 n_steps)) */
	double lr;        /* peak learning rate (5e-4) */
	double beta1, beta2, eps, wd; /* AdamW (0.9, 0.95, 1e-8, 0.01) */
	double clip;      /* gradient clip by value (0.5) */
	double alpha;     /* smoothness weight α (0.0025) */
	double sigma;     /* init N(0, σ²) (SmolLM2 initializer_range 1/24) */
	int64_t t_max;    /* prompt tokens trained on (10240) */
};

/* One collected example: features and labels of its first n_p tokens. */
struct eng_train_example {
	int n_layer, n_head_kv;
	int64_t d_in, n_p, n_a;
	float *u;          /* (n_layer, n_p, d_in) pre-RoPE [q | k | v] per token */
	float *s;          /* (n_layer, n_head_kv, n_p) CIS labels */
	int32_t *answer;   /* (n_a) the answer tokens that were fed */
};

struct eng_train_stats {
	double loss;       /* L_reg + α·L_smooth (spec §3) */
	double reg;        /* L_reg (mean over layers, heads, tokens) */
	double smooth;     /* L_smooth (per-layer MSEs summed over layers) */
	double overlap;    /* top-10 % overlap of predictions and labels */
	double lr;         /* the learning rate of this step */
	int64_t t;         /* tokens trained on */
};

struct eng_train;

/* Defaults for a run of n_steps steps. */
void eng_train_opts_default(struct eng_train_opts *o, int64_t n_steps);
/* lr(s) after s steps: lr·s/warmup during warmup, then linear to 0 at
 * n_steps (spec §4.1, 3000/2000 being the reference). */
double eng_train_lr(const struct eng_train_opts *o, int64_t s);
/* A fresh trainer for model m (weights drawn from opts->seed).  ENG_ERR_ARG
 * for bad options, ENG_ERR_NOMEM. */
int eng_train_init(struct eng_train **out, const struct eng_model *m,
    const struct eng_train_opts *opts);
void eng_train_free(struct eng_train *t);
int64_t eng_train_steps_done(const struct eng_train *t);
const struct eng_train_opts *eng_train_get_opts(const struct eng_train *t);
/* Layer weights: fc1.weight (d_r, d_in) and fc2.weight (n_head_kv, d_r). */
float *eng_train_w1(struct eng_train *t, int layer);
float *eng_train_w2(struct eng_train *t, int layer);

/* Label pass (spec §2, §7.1).  With answer != NULL the n_a answer tokens
 * are teacher-forced; with answer == NULL the model answers greedily from
 * the full prompt, up to gen_max tokens, the end-of-generation token (tok
 * given) included and fed (gen_max 0: the prompt's features only, no
 * labels).  Errors: ENG_ERR_ARG, ENG_ERR_CONTEXT (P ++ A
 * longer than the window), ENG_ERR_NOMEM, forward errors. */
int eng_train_collect(struct eng_ctx *c, const int32_t *prompt, int64_t n_p,
    const int32_t *answer, int64_t n_a, int64_t gen_max, const struct eng_tok *tok,
    struct eng_train_example **out);
void eng_train_example_free(struct eng_train_example *ex);
/* kvzip labels (issue 19): replace ex's labels by log of the score our
 * kvzip policy gives each unit of ids[0..n) (n == ex->n_p; ex collected
 * with answer NULL, gen_max 0: features only): p is a bound kvzip policy at
 * ratio 1, so nothing is evicted and every unit keeps its score; sinks get
 * log 1 = 0, scores under ENG_KVZIP_LABEL_FLOOR the floor's log.  One
 * implementation of the score: the policy's own ingest. */
#define ENG_KVZIP_LABEL_FLOOR 1e-12f
int eng_train_label_kvzip(struct eng_ctx *c, struct eng_policy *p, const int32_t *ids, int64_t n,
    int64_t chunk, struct eng_train_example *ex);

/* Loss and overlap on ex (update == 0), or the same plus one optimizer step
 * (update != 0; the stats are those before the step).  Threads: c's pool,
 * one layer per task. */
int eng_train_step(struct eng_train *t, struct eng_ctx *c, const struct eng_train_example *ex,
    int update, struct eng_train_stats *st);

/* Checkpoint: weights, moments, step, options and the model fingerprint,
 * with a BLAKE2b-256 trailer; written to PATH.tmp, synced and renamed.  Load
 * refuses another model (ENG_ERR_ARG), a bad file (ENG_ERR_FORMAT) and
 * ENG_ERR_IO / ENG_ERR_NOMEM, with a reason. */
int eng_train_save(const struct eng_train *t, const char *path, char *why, size_t why_len);
int eng_train_load(struct eng_train **out, const char *path, const struct eng_model *m,
    char *why, size_t why_len);
/* The sidecar (f16 tensors, base fingerprint = the model's) for --policy
 * locret heads=PATH; labels "cis" or "kvzip" (what the heads learned). */
int eng_train_write_heads(const struct eng_train *t, const char *path, const char *labels,
    const char *recipe, const char *data, char *why, size_t why_len);

/* ------------------------------------------------------------------------ */
/* PoD layer sharing (spec/pod.md; engine/pod_map.c, engine/pod_calibrate.c,
 * engine/kv_pod.c, engine/policy_pod.c)
 *
 * Layers are grouped per KV head into blocks of consecutive layers; a
 * block's lowest layer is its anchor.  In a non-anchor layer a query at
 * position i scores the units at positions n_s <= p <= i − n_r ("distant")
 * with the anchor layer's query and key, the others ("proximal") with its
 * own, in one softmax over its own values (spec/pod.md §1.3).  The block
 * map comes from an offline calibration (kvsnap pod-calibrate) and lives in
 * a small JSON file bound to the model's fingerprint.                      */

struct eng_pod_map {
	int n_layer, n_head, n_head_kv;
	uint8_t *anc;       /* (n_head_kv, n_layer): anchor layer of (m, l), <= l */
	double delta;       /* the δ the grouping used */
	double f;           /* fraction of (layer, KV head) pairs that are not anchors */
	int n_texts, q, n_cal; /* calibration samples, rows per sample, tokens per sample */
	float *sim;         /* (n_head_kv, n_layer, n_layer) 1 − JS, or NULL */
	char model_fp[65];  /* hex fingerprint of the calibrated model; "" = unbound */
	char hash[65];      /* BLAKE2b-256 hex of the file's bytes (set by load/save) */
};

/* Jensen–Shannon divergence of two distributions p, q (n entries) with
 * base-2 logs: in [0, 1], 0·log 0 = 0 (spec/pod.md §1.2). */
double eng_pod_js(const float *p, const float *q, int64_t n);
/* Greedy bottom-up grouping of one head (spec/pod.md §1.2 step 3): layer l
 * joins the current block iff sim[l·L + x] >= delta for every x in it;
 * anc[0..L) receives the anchors. */
void eng_pod_group(const float *sim, int n_layer, double delta, uint8_t *anc);
/* A map from per-KV-head similarity matrices sim (n_head_kv, L, L): group
 * with delta, or, when target_saving >= 0, with the δ whose non-anchor
 * fraction f is closest to 2·target_saving among all reachable maps
 * (ties: the larger δ).  Sets anc, delta, f; takes a copy of sim. */
int eng_pod_map_from_sim(struct eng_pod_map **out, const float *sim, int n_layer, int n_head,
    int n_head_kv, double delta, double target_saving);
/* Check that anc is a valid block map (anc[m][0] = 0; each anc[m][l] is l
 * or anc[m][l−1]); ENG_ERR_FORMAT with a reason otherwise. */
int eng_pod_map_check(const struct eng_pod_map *pm, char *why, size_t why_len);
/* Load / save the JSON block-map file (format at the top of pod_map.c).
 * Save recomputes f from the anchors, writes PATH.tmp and renames (one
 * writer per path at a time).  Load checks everything (ENG_ERR_IO,
 * ENG_ERR_FORMAT, ENG_ERR_VERSION, ENG_ERR_NOMEM, with a reason) and, with
 * m != NULL, the model's shape and fingerprint (ENG_ERR_SHAPE / _ARG). */
int eng_pod_map_load(struct eng_pod_map **out, const char *path, const struct eng_model *m,
    char *why, size_t why_len);
int eng_pod_map_save(struct eng_pod_map *pm, const char *path, char *why, size_t why_len);
void eng_pod_map_free(struct eng_pod_map *pm);

/* Calibrate (spec/pod.md §3.2): run the dense model over n_texts token
 * sequences (2 <= length <= the model's window; chunked by the ctx's max
 * chunk), record the attention rows of the last q queries per layer and
 * query head, average 1 − JS over texts, rows and each GQA group, and group
 * with delta (or target_saving >= 0).  progress (may be NULL) is called
 * after each text. */
int eng_pod_calibrate(struct eng_ctx *c, const int32_t *const *texts, const int64_t *lens,
    int n_texts, int q, double delta, double target_saving, struct eng_pod_map **out,
    void (*progress)(void *arg, int done, int total), void *arg, char *why, size_t why_len);

/* PoD layout of a cache: the pool attends with layer sharing wherever a
 * layout is installed (ingest installs the pod policy's).  eng_kv_clear()
 * removes it. */
int eng_kv_set_pod(struct eng_kv *kv, const uint8_t *anc, uint32_t n_s, uint32_t n_r,
    int distant_own);
/* Key rows a non-anchor (layer, head) still holds: the k_prefix units with
 * pos < n_s and the k_suffix units with pos >= max(n_s, next_pos − n_r + 1)
 * (spec/pod.md §3.3); an anchor (or a dense pool) holds all its units. */
void eng_kv_pod_key_rows(const struct eng_kv *kv, int layer, int head, int64_t *k_prefix,
    int64_t *k_suffix);

#endif /* ENGINE_H */
