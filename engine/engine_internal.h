/*
 * engine_internal.h: declarations shared between engine/ files only.
 *
 * Nothing outside engine/ includes this header; the public API is engine.h.
 * Each section names the files that define what it declares.
 */
#ifndef ENGINE_INTERNAL_H
#define ENGINE_INTERNAL_H

#include <stddef.h> /* for size_t */
#include <stdint.h> /* for uint32_t */

/* ------------------------------------------------------------------------ */
/* Unicode classes and UTF-8 (engine/model/unicode.c, engine/model/unicode_tables.c)     */

/* Code-point class as the pre-tokenizers see it (llama.cpp unicode flags):
 * \p{L}, \p{N}, \s, \p{P}, \p{M}, \p{S}, or anything else.  eng_ucd_cat
 * folds the last three into OTHER (what the GPT-2 / Llama 3 splitters test);
 * eng_ucd_class keeps them (the regex matcher's \p{P}, \p{M}, \p{S}). */
enum eng_ucat {
	ENG_UCAT_OTHER = 0,  /* control, format, private use, surrogate, unassigned */
	ENG_UCAT_LETTER = 1, /* Lu Ll Lt Lm Lo */
	ENG_UCAT_NUMBER = 2, /* Nd Nl No */
	ENG_UCAT_SPACE = 3,  /* White_Space (spec/model.md section 7.1) */
	ENG_UCAT_PUNCT = 4,  /* Pc Pd Ps Pe Pi Pf Po */
	ENG_UCAT_MARK = 5,   /* Mn Mc Me */
	ENG_UCAT_SYMBOL = 6  /* Sm Sc Sk So */
};

struct eng_ucd_range {
	uint32_t first, last; /* inclusive */
	uint8_t cat;          /* enum eng_ucat */
};

/* Generated table (scripts/gen-unicode-tables.py): sorted, disjoint. */
extern const struct eng_ucd_range eng_ucd_ranges[];
extern const size_t eng_ucd_n_ranges;

/* Class of a code point with P, M and S folded into OTHER; code points past
 * U+10FFFF are ENG_UCAT_OTHER. */
enum eng_ucat eng_ucd_cat(uint32_t cp);
/* Class of a code point, P, M and S kept. */
enum eng_ucat eng_ucd_class(uint32_t cp);

/* Decode one code point from s[0..len) (len >= 1) the way llama.cpp's
 * unicode_cpts_from_utf8 does: lead and continuation bits are checked but
 * overlong forms and surrogates pass; anything else, and any sequence
 * decoding past U+10FFFF (which aborts llama.cpp), yields U+FFFD and
 * consumes one byte.  *adv receives the bytes consumed. */
uint32_t eng_utf8_decode(const uint8_t *s, size_t len, size_t *adv);

/* Encode cp (<= U+10FFFF) into out; returns 1..4. */
size_t eng_utf8_encode(uint32_t cp, uint8_t out[4]);


/* ------------------------------------------------------------------------ */
/* Forward-pass hooks for chunked ingest (engine/run/forward.c)                  */

#include "engine/engine.h" /* for struct eng_kv, struct eng_ctx */

/* What a hook sees after layer l's attention for one chunk. */
struct eng_fwd_layer_info {
	int64_t n_tok;       /* chunk length; its units are the last n_tok of each head */
	uint32_t chunk_end;  /* one past the chunk's last original position */
	/* Σ over chunk queries t >= stat_from of π[t][u], per query head h:
	 * stat[h * stat_stride + u], u indexing KV head h/g's list; NULL if
	 * the hook asked for none. */
	const float *stat;
	int64_t stat_stride;
	const float *qpre;   /* (n_tok, n_head*head_dim) chunk queries, pre-RoPE */
	const float *q;      /* (n_tok, n_head*head_dim) chunk queries, rotated */
	const float *kpre;   /* (n_tok, n_kv*head_dim) chunk keys, pre-RoPE */
	const float *v;      /* (n_tok, n_kv*head_dim) chunk values */
};

struct eng_fwd_hook {
	/* Called after layer l's attention; may score and compact layer l (the
	 * next reader of that layer's cache is the next chunk). */
	int (*after_attn)(void *arg, struct eng_kv *kv, int layer,
	    const struct eng_fwd_layer_info *info);
	void *arg;
	int64_t stat_from; /* first chunk query of the statistics; -1: none */
	/* KVzip (kern_attn_stats.max): when dom_from is set, `stat` holds the
	 * restricted maxima over the domain [0, n_lead) ∪ [dom_from[l·n_kv + g],
	 * n_kv) of layer l's KV head g instead of the sums. */
	const int64_t *dom_from; /* (n_layer, n_head_kv) or NULL */
	int64_t n_lead;
	int row_norm_w; /* KVzip+: weight query t's maxima by 1/‖h_t‖ (h_t its
	                 * normed attention input) */
	/* positions may run past the model's window (up to twice it): a
	 * scoring pass whose outputs are never read, only its attention */
	int past_window;
};

/* Forward one chunk (n <= max_chunk) with a hook; logits of the last token
 * into last_logits when not NULL. */
int eng_forward_chunk_hooked(struct eng_ctx *c, struct eng_kv *kv, const int32_t *ids,
    int64_t n, float *last_logits, const struct eng_fwd_hook *hook);
int64_t eng_ctx_max_chunk(const struct eng_ctx *c);
const struct eng_model *eng_ctx_model(const struct eng_ctx *c);

/* ------------------------------------------------------------------------ */
/* Architectures (engine/model/arch.c, one engine/arch_NAME.c per architecture)    */

/* The FFN's activation (forward.c, ref_forward.c). */
enum eng_act {
	ENG_ACT_SILU_GATED = 0 /* w_down · (silu(w_gate·x) ⊙ w_up·x): SwiGLU */
};

/* Optional per-layer tensors.  A bit set: every layer has the tensor (the
 * loader requires it, the forward passes apply it); clear: the loader
 * refuses a file that has it, so no tensor is ever silently ignored. */
enum eng_arch_opt {
	ENG_ARCH_BIAS_Q = 1 << 0, /* attention projection biases (blk.N.X.bias) */
	ENG_ARCH_BIAS_K = 1 << 1,
	ENG_ARCH_BIAS_V = 1 << 2,
	ENG_ARCH_BIAS_O = 1 << 3,
	ENG_ARCH_NORM_Q = 1 << 4, /* RMSNorm of every query head before RoPE */
	ENG_ARCH_NORM_K = 1 << 5  /* the same for every key head */
};

/* Tensor names: model-wide tensors by full name; per layer the stem X of
 * "blk.N.X.weight" (and of "blk.N.X.bias" for a bias). */
struct eng_arch_names {
	const char *tok_embd, *output, *output_norm;
	const char *attn_norm, *attn_q, *attn_k, *attn_v, *attn_out;
	const char *attn_q_norm, *attn_k_norm;
	const char *ffn_norm, *ffn_gate, *ffn_up, *ffn_down;
};

/* One architecture as the loader (model.c) and the forward passes
 * (forward.c, ref_forward.c) see it; the building blocks are RMSNorm, the
 * projections with optional biases and head norms, RoPE of a style, causal
 * GQA attention, an FFN of an activation, residuals. */
struct eng_arch {
	const char *name;       /* general.architecture */
	const char *key_prefix; /* hyperparameters: "<key_prefix>.block_count", … */
	const struct eng_arch_names *t; /* tensor names */
	unsigned opt;           /* enum eng_arch_opt bits */
	enum eng_act act;
	enum kern_rope_style rope;
	int enabled;            /* eng_model_open runs it; a disabled one opens
	                         * only with ENG_OPEN_DISABLED_ARCH (tests) */
};

/* llama.cpp's GGUF tensor names (its LLM_TENSOR table), which every
 * architecture described so far uses. */
extern const struct eng_arch_names eng_arch_gguf_names;
extern const struct eng_arch eng_arch_llama;
extern const struct eng_arch eng_arch_qwen2;
extern const struct eng_arch eng_arch_qwen3;

/* The description of architecture name[0..len), or NULL. */
const struct eng_arch *eng_arch_find(const char *name, size_t len);
/* "'a', 'b'": the enabled architectures' names, for refusals. */
void eng_arch_enabled_list(char *buf, size_t cap);

/* ------------------------------------------------------------------------ */
/* Eviction policies (engine/cache/policy*.c, engine/run/ingest.c)           */

/* One KV head of one layer at an eviction step. */
struct eng_evict_head {
	int64_t n;            /* units present (kept ∪ chunk), ascending pos */
	const uint32_t *pos;  /* (n) original positions */
	float *score;         /* (n) the stored score; policies update it */
	const float *stat;    /* (n) attention statistic, mean over the GQA group,
	                       * or NULL when the policy asked for none */
	const float *kpre;    /* (n, head_dim) pre-RoPE keys */
	int64_t *keep;        /* out: indices kept, ascending */
	int64_t n_keep;       /* out */
};

struct eng_evict {
	int layer, n_layer, n_head_kv, head_dim;
	int is_last;          /* last chunk of the document */
	uint32_t chunk_end;   /* one past the last position seen */
	int64_t n_tok;        /* chunk length */
	int64_t n_doc;        /* document length (known at ingest) */
	struct eng_evict_head *h; /* (n_head_kv) */
	const struct eng_fwd_layer_info *info;
	int64_t *scratch;     /* (total units of the layer) for policies */
};

struct eng_policy_ops {
	const char *name;
	/* set one option; ENG_ERR_ARG with a reason if unknown or bad */
	int (*set)(struct eng_policy *p, const char *key, const char *val, char *why,
	    size_t why_len);
	/* validate after all options; ENG_ERR_ARG with a reason */
	int (*check)(struct eng_policy *p, char *why, size_t why_len);
	/* append "k=v,…" of every parameter */
	size_t (*describe)(const struct eng_policy *p, char *buf, size_t cap);
	/* first chunk query whose attention the policy needs (-1: none) */
	int64_t (*stat_from)(const struct eng_policy *p, int64_t n_tok);
	/* observation window the last chunk must cover (chunk merge rule) */
	int64_t (*window)(const struct eng_policy *p);
	/* choose the units to keep in every head of e->layer */
	int (*select)(struct eng_policy *p, struct eng_evict *e);
	/* optional: the pool's position mode eng_ingest sets before the first
	 * chunk (NULL: the policy does not care; the pool keeps its mode,
	 * ENG_POS_ORIGINAL unless the caller changed it) */
	enum eng_pos_mode (*pos_mode)(const struct eng_policy *p);
	/* optional: release p->priv (called by eng_policy_free) */
	void (*destroy)(struct eng_policy *p);
	/* optional: check the policy's files against the model that will run
	 * (eng_policy_bind); ENG_ERR_SHAPE / ENG_ERR_ARG with a reason */
	int (*bind)(struct eng_policy *p, const struct eng_model *m, char *why, size_t why_len);
	/* optional: the most units one (layer, KV head) keeps between chunks
	 * of an n_doc-token document, when it is not the budget; −1: every
	 * unit (pool sizing, eng_policy_rows_per_head) */
	int64_t (*kept_per_head)(const struct eng_policy *p, int64_t n_doc);
	/* optional: the options a policy runs with when the caller gave `opts`
	 * for the model at model_path (e.g. Locret's sidecar beside the model);
	 * malloc'd, NULL on allocation failure */
	char *(*default_opts)(const char *opts, const char *model_path);
	/* the policy ignores the budget (full): eng_policy_create takes any */
	int budgetless;
	/* optional, for cross-layer policies (PoD): eng_ingest calls begin
	 * before the first chunk, and layer after every layer's attention in
	 * place of its own select-and-compact step */
	int (*ingest_begin)(struct eng_policy *p, struct eng_kv *kv, const struct eng_model *m);
	int (*ingest_layer)(struct eng_policy *p, struct eng_kv *kv, int layer,
	    const struct eng_fwd_layer_info *info, int is_last, int64_t n_doc);
	/* optional: the option naming the policy's file (NULL: none) and the
	 * file's content fingerprint, which eng_policy_profile prints instead */
	const char *file_key;
	const char *(*file_fingerprint)(const struct eng_policy *p);
	/* optional: rows per KV head the pool needs (eng_policy_rows_per_head)
	 * when the policy's own ingest needs more than kept + chunk */
	int64_t (*rows_per_head)(const struct eng_policy *p, int64_t n_doc, int64_t chunk,
	    int64_t n_extra);
	/* optional: the policy drives the whole ingest itself (KVzip's
	 * segments and reconstruction passes); eng_ingest_cb has checked the
	 * arguments, set the position mode and bound the policy */
	int (*ingest)(struct eng_policy *p, struct eng_ctx *c, struct eng_kv *kv,
	    const int32_t *ids, int64_t n, int64_t chunk, float *last_logits, eng_progress_cb cb,
	    void *arg);
	/* optional: eng_ingest calls it after every chunk has run through all
	 * layers (`seen` of the n ids read), for a selection across layers
	 * (Locret's alloc=global) */
	int (*after_chunk)(struct eng_policy *p, struct eng_kv *kv, const int32_t *ids,
	    int64_t seen, int64_t n);
};

#define ENG_POLICY_MAX_PARAMS 16

struct eng_policy {
	const struct eng_policy_ops *ops;
	int64_t budget; /* units per KV head; with a ratio, resolved per document */
	double ratio;   /* share of the document's units kept (0: budget form) */
	/* parameters, interpreted by each policy (named in its file) */
	int64_t i[ENG_POLICY_MAX_PARAMS];
	double f[ENG_POLICY_MAX_PARAMS];
	void *priv; /* policy-owned state (freed by ops->destroy), or NULL */
};

/* Helpers shared by policies (engine/cache/policy.c). */
/* Sort idx[0..n) of head h by score desc, then by position asc (Ada-KV's
 * per-head tie rule) or desc (Locret/NaCl's) when newer_first. */
void eng_policy_rank(const struct eng_evict_head *h, const float *key, int64_t *idx,
    int64_t n, int newer_first);
/* Sort an index list ascending. */
void eng_policy_sort_idx(int64_t *idx, int64_t n);
/* Parse a non-negative integer / a float option value. */
int eng_policy_parse_int(const char *val, int64_t lo, int64_t hi, int64_t *out);
int eng_policy_parse_float(const char *val, double lo, double hi, double *out);
/* The ids a document starts with when it is read in the chat template
 * (eng_chat_doc_ids's prefix: system turn, user header), tokenized by the
 * model's tokenizer; and their count if ids[0..n) starts with them, else 0.
 * Policies keep them as sinks. */
int eng_doc_template_ids(const struct eng_model *m, int32_t **ids, int64_t *n, char *why,
    size_t why_len);
int64_t eng_doc_template_len(const int32_t *tpl, int64_t n_tpl, const int32_t *ids, int64_t n);
/* Sinks of an n-token document: the option's count (opt >= 0), else its
 * template prefix of tpl ids, else 4 (sinks=auto of kvzip and Locret). */
int64_t eng_doc_sinks(int64_t opt, int64_t tpl, int64_t n);
/* A file's content fingerprint (engine/fingerprint.c): BLAKE2b-256 of
 * p[0..n) as lowercase hex into hex[ENG_FINGERPRINT_HEX + 1]; ENG_ERR_NOMEM
 * if libsodium cannot start.  And 1 if s[0..len) is at most max hex digits
 * (either case; empty counts), the form a file's recorded fingerprint must
 * have. */
#define ENG_FINGERPRINT_HEX 64
int eng_fingerprint(const void *p, size_t n, char hex[ENG_FINGERPRINT_HEX + 1]);
int eng_is_hex(const char *s, size_t len, size_t max);
/* The same for the whole of file fd mapped at p[0..n), remembered between
 * runs in the user's cache directory by the file's identity, size, mtime
 * and ctime (engine/fingerprint_cache.c): a 1 GB model is hashed once. */
int eng_fingerprint_file(int fd, const void *p, size_t n, char hex[ENG_FINGERPRINT_HEX + 1]);
/* Keep every unit of every head. */
void eng_policy_keep_all(struct eng_evict *e);
/* Ada-KV's allocation (spec/adakv.md §2.2 exact mode + the §4.2 capacity
 * clamp) of H·b_sel units over heads with n_cand[m] candidates each, given
 * the head of every candidate in global ranking order; a[0..H) out.
 * work: H int64, frac: H doubles (scratch). */
void eng_adakv_allocate(const int64_t *n_cand, int H, int64_t b_sel, double alpha,
    const int *rank_head, int64_t n_rank, int64_t *a, int64_t *work, double *frac);

/* The SnapKV family's shared pieces (engine/cache/policy_snapkv.c): options
 * i[0..3] = window, kernel, pool, slack. */
int eng_snapkv_set(struct eng_policy *p, const char *key, const char *val, char *why,
    size_t why_len);
int eng_snapkv_check(struct eng_policy *p, char *why, size_t why_len);
size_t eng_snapkv_describe(const struct eng_policy *p, char *buf, size_t cap);
int64_t eng_snapkv_stat_from(const struct eng_policy *p, int64_t n_tok);
int64_t eng_snapkv_window(const struct eng_policy *p);
/* Units per head kept between chunks: the budget (or a pyramid schedule's
 * first layer) plus the family's `slack`. */
int64_t eng_snapkv_kept(const struct eng_policy *p, int64_t n_doc, int pyramid);
/* Pool head m's window statistics into its candidates' scores; the
 * candidates (units before the window) are the first n returned, listed in
 * cand[0..n). */
int64_t eng_snapkv_score(const struct eng_policy *p, struct eng_evict *e, int m, int64_t *cand);
/* Keep head h's `a` best candidates (score desc, position asc) + window. */
void eng_snapkv_keep(struct eng_evict_head *h, int64_t *cand, int64_t n_cand, int64_t a);

/* PyramidKV's selectable budget b'_l of a layer (engine/cache/policy_pyramidkv.c),
 * for a policy with SnapKV parameters and f[0] = beta. */
int64_t eng_pyramid_layer_budget(const struct eng_policy *p, int layer, int n_layer,
    int64_t n_doc);

/* Each policy's ops table (eng_policy_NAME, in its own file) is declared
 * where it is listed: the registry in engine/cache/policy.c. */
/* NaCl's Gumbel noise G(seed, layer, KV head, pos, stream), spec/nacl.md §2.6
 * (engine/cache/policy_nacl.c). */
double eng_nacl_gumbel(uint64_t seed, int layer, int head, uint32_t pos, uint64_t stream);

/* ------------------------------------------------------------------------ */
/* KVzip (engine/cache/policy_kvzip.c, kvzip_ingest.c, select_scores.c)           */

/* One selection over every layer and head of a pool by its units' stored
 * scores (engine/cache/select_scores.c): keep `target` units per head on average,
 * sinks included; compacts every layer. */
enum eng_alloc { ENG_ALLOC_GLOBAL = 0, ENG_ALLOC_UNIFORM = 1, ENG_ALLOC_ADAKV = 2 };
struct eng_select {
	enum eng_alloc alloc;
	double floor;       /* global: share of the per-head budget every head keeps first */
	double alpha;       /* adakv: Ada-KV's uniform share */
	int64_t n_sink;     /* each head's leading units below this position: always kept */
	uint32_t keep_from; /* units at positions >= this: always kept, not counted */
	int64_t cap_layer;  /* most units one layer keeps, sinks included */
	/* called with each layer's keep lists just before it is compacted, or
	 * NULL (kvzip's refit=1: engine/cache/kvzip_refit.c) */
	int (*before_compact)(void *arg, struct eng_kv *kv, int layer,
	    const int64_t *const *keep, const int64_t *n_keep);
	void *arg;
};
int eng_select_scores(struct eng_kv *kv, const struct eng_select *sel, int64_t target);
#define ENG_SELECT_LAYER_CAP 2 /* global: a layer keeps at most this times the mean */

/* Parameters: i[0] seg, i[1] alloc (enum kvzip_alloc), i[2] sinks (-1:
 * the chat template's prefix when the document starts with it, else 4),
 * i[3] norm (0 prob, 1 plus), f[0] floor, f[1] alpha; a shrunk snapshot's
 * origin f[2] (ratio) or i[4] (budget), 0 when ingested. */

/* The reconstruction prompt's pieces, tokenized at bind (policy->priv). */
struct kvzip_prompt {
	int32_t *first;    /* "\n\nRepeat the previous context exactly." + turn end */
	int64_t n_first;
	int32_t *pre;      /* "\n\nRepeat the part of ... starting with " */
	int64_t n_pre;
	int32_t *post;     /* end of turn + assistant header */
	int64_t n_post;
	int32_t *tpl;      /* eng_chat_doc_ids's prefix (system turn, user header) */
	int64_t n_tpl;
	/* KVzip+ (norm=plus): per layer and query head the Gram matrix W_Oᵀ W_O
	 * of the head's slice of the output projection, (head_dim)², so that
	 * ‖W_O v‖² = vᵀ G v; made at the first ingest */
	float *gram; /* (n_layer, n_head, head_dim, head_dim) or NULL */
	/* demote=F: per vocabulary id KVZIP_CLS_* bits of its text, or NULL */
	uint8_t *cls;
	int32_t n_cls;
};

#define KVZIP_CLS_STRUCT 1 /* no letter or digit (punctuation, space, symbols) */
#define KVZIP_CLS_HEAD 2   /* its text starts with a letter or digit */
#define KVZIP_CLS_TAIL 4   /* its text ends with one */
#define KVZIP_STRUCT_REPEATS 4 /* a structural token is demoted from this many uses */

#define KVZIP_ANCHOR 8      /* ids of the previous segment named in the prompt */
#define KVZIP_PROMPT_MAX 96 /* bound on a prompt's ids (pool sizing before bind) */
#define KVZIP_MIN_SEG 64    /* a shorter remainder joins the previous segment */

/* Attention Matching's refit of one cut head (engine/cache/refit.c): a bias
 * per kept key and least-squares values so that the cut head's attention
 * matches the full head's on reference queries.  Not yet wired into an
 * ingest, the pool, the snapshot or the attention kernels (issue 28). */
#define ENG_REFIT_BIAS_MIN (-12.0) /* log of the smallest weight a kept key gets */
struct eng_refit_in {
	const float *k, *v;  /* (n, d) the head's keys as attention sees them, values */
	const float *bias_in; /* (n) biases the head carries already (an earlier refit), or NULL */
	int64_t n;
	int d;
	const int64_t *keep; /* (m) kept units, ascending */
	int64_t m;
	const float *q;      /* (t, d) reference queries */
	int64_t t;
	float scale;         /* of q·k (1/sqrt(d)) */
	double ridge;        /* λ over the mean diagonal of PᵀP (1e-3) */
	int sweeps;          /* NNLS coordinate-descent sweeps (50) */
};
/* bias (m) and v_out (m, d); 0, ENG_ERR_ARG (bad input), ENG_ERR_NOMEM. */
int eng_refit_head(const struct eng_refit_in *in, float *bias, float *v_out);

/* kvzip's refit=1 (engine/cache/kvzip_refit.c): a segment's reconstruction
 * queries, and the refit of every cut head by them at the selection. */
#define KVZIP_REFIT_QUERIES 256 /* reconstruction queries kept per query head */
struct kvzip_refit;
int kvzip_refit_new(struct kvzip_refit **out, int n_layer, int n_head, int head_dim);
void kvzip_refit_free(struct kvzip_refit *r);
/* A reconstruction of n_rep tokens follows: forget the last segment's. */
void kvzip_refit_begin(struct kvzip_refit *r, int64_t n_rep);
/* Layer `layer`'s rotated chunk queries (n_tok, n_head · head_dim). */
void kvzip_refit_capture(struct kvzip_refit *r, int layer, const float *q, int64_t n_tok);
/* eng_select.before_compact: refit the layer's cut heads; sets has_bias. */
int kvzip_refit_compact(void *arg, struct eng_kv *kv, int layer, const int64_t *const *keep,
    const int64_t *n_keep);

/* The per-segment selection: eng_select_scores with kvzip's options
 * (alloc, floor, alpha), no tail. */
int eng_kvzip_select(const struct eng_policy *p, struct eng_kv *kv, int64_t n_sink,
    int64_t target, int64_t cap_layer,
    int (*before_compact)(void *, struct eng_kv *, int, const int64_t *const *, const int64_t *),
    void *arg);
/* Units per head kvzip keeps of the first `seen` tokens, n_sink of them the
 * sinks: under a ratio R, ceil(R x the document's tokens) plus the sinks,
 * which KVzip's reference keeps outside the pruned range; a budget is the
 * total, sinks included. */
int64_t eng_kvzip_keep(const struct eng_policy *p, int64_t seen, int64_t n_sink);
/* Pool rows per head kvzip's ingest needs (segments + reconstruction). */
int64_t eng_kvzip_rows(const struct eng_policy *p, int64_t n_doc, int64_t chunk,
    int64_t n_extra);
int eng_kvzip_ingest(struct eng_policy *p, struct eng_ctx *c, struct eng_kv *kv,
    const int32_t *ids, int64_t n, int64_t chunk, float *last_logits, eng_progress_cb cb,
    void *arg);

/* ------------------------------------------------------------------------ */
/* Locret (engine/cache/policy_locret.c; spec/locret.md §5.3, §8)                  */

/* Test hook (spec/locret.md §8): replaces the retaining heads' score of the
 * unit of (layer, KV head) whose token has original position pos.  Token
 * ids are not visible at eviction time; a test maps pos to its document's
 * token itself (through arg).  fn == NULL restores the heads.  ENG_ERR_ARG
 * if p is not a locret policy. */
typedef float (*eng_locret_score_fn)(void *arg, int layer, int head, uint32_t pos);
int eng_locret_set_score_fn(struct eng_policy *p, eng_locret_score_fn fn, void *arg);

/* ------------------------------------------------------------------------ */
/* Retaining-head training, one layer (engine/train/locret_train.c; spec §3)       */

/* One layer's share of the loss and its gradients.  u (T, d_in) features,
 * s labels of head m at s[m·ld_s + t], w1 (d_r, d_in), w2 (n_kv, d_r).
 * Out: *reg = (1/(L·n_kv·T))·Σ SL1 (this layer's part of L_reg), *smooth =
 * the layer's adjacent MSE (unweighted), *overlap = its top-10 % overlap;
 * g1, g2 (shapes of w1, w2) the gradients of reg + α·smooth (unclipped).
 * ENG_ERR_NOMEM or 0. */
int eng_train_layer_grad(const float *u, const float *s, int64_t ld_s, int64_t T,
    int64_t d_in, int d_r, int n_kv, int n_layer, double alpha, const float *w1,
    const float *w2, float *g1, float *g2, double *reg, double *smooth, double *overlap);
/* The same in double with plain loops (tests: finite differences); returns
 * reg + α·smooth; g1/g2 may be NULL (loss only). */
double eng_train_layer_grad_d(const double *u, const double *s, int64_t ld_s, int64_t T,
    int64_t d_in, int d_r, int n_kv, int n_layer, double alpha, const double *w1,
    const double *w2, double *g1, double *g2);
/* Top-k overlap of pred[t·stride] and lab[t] (t < T), k = max(1, ⌊0.1·T⌋);
 * ties broken towards the lower index.  idx: scratch of 2·T int64. */
double eng_train_overlap(const float *pred, int64_t stride, const float *lab, int64_t T,
    int64_t *idx);

/* ------------------------------------------------------------------------ */
/* PoD cache layout (engine/cache/kv_pod.c)                                        */

/* Remove a pool's PoD layout (the pool attends densely again). */
void eng_kv_drop_pod(struct eng_kv *kv);
/* Anchor layer of (layer, head): layer itself without a PoD layout. */
int eng_kv_pod_anchor(const struct eng_kv *kv, int layer, int head);
/* Poison (NaN) the keys of a non-anchor (layer, head) that no query at a
 * position >= e reads as proximal; a no-op at an anchor. */
void eng_kv_pod_trim(struct eng_kv *kv, int layer, int head, uint32_t e);

#endif /* ENGINE_INTERNAL_H */
