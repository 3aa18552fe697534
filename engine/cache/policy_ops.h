/*
 * policy_ops.h: what an eviction policy is inside engine/: its ops table, the
 * eviction step's view of a layer, and the helpers policies share
 * (engine/cache/policy_object.c, policy_helpers.c; called by
 * engine/run/ingest.c); engine/ and its tests only.
 */
#ifndef ENGINE_CACHE_POLICY_OPS_H
#define ENGINE_CACHE_POLICY_OPS_H

#include "engine/cache/layer_info.h"
#include "engine/cache/cache.h"

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

/* A policy of the table ops (engine/cache/policy_object.c): its defaults,
 * then opts ("k=v,…"), then its check; eng_policy_create is this after the
 * registry's look-up by name. */
int eng_policy_new(struct eng_policy **out, const struct eng_policy_ops *ops, const char *opts,
    int64_t budget, char *why, size_t why_len);

/* Helpers shared by policies (engine/cache/policy_helpers.c). */
/* Sort idx[0..n) of head h by score desc, then by position asc (Ada-KV's
 * per-head tie rule) or desc (Locret/NaCl's) when newer_first. */
void eng_policy_rank(const struct eng_evict_head *h, const float *key, int64_t *idx,
    int64_t n, int newer_first);
/* Sort an index list ascending. */
void eng_policy_sort_idx(int64_t *idx, int64_t n);
/* Parse a non-negative integer / a float option value. */
int eng_policy_parse_int(const char *val, int64_t lo, int64_t hi, int64_t *out);
int eng_policy_parse_float(const char *val, double lo, double hi, double *out);
/* Parse an option value that names one of names[] (NULL-terminated): *out
 * is its index; ENG_ERR_ARG (*out untouched) for any other value. */
int eng_policy_parse_name(const char *val, const char *const *names, int64_t *out);
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
/* Keep every unit of every head. */
void eng_policy_keep_all(struct eng_evict *e);
/* A head holding at most b units keeps them all: 1; else 0, nothing kept
 * yet (h->n_keep 0) for the policy to choose. */
int eng_policy_keep_if_fits(struct eng_evict_head *h, int64_t b);
/* ENG_ERR_ARG with "WHAT (v) must be below the budget (b)" in why when
 * v >= the budget, else 0: the check of a count the budget must exceed. */
int eng_policy_below_budget(const struct eng_policy *p, int64_t v, const char *what, char *why,
    size_t why_len);
/* Ops shared by the policies they fit: no attention statistics (stat_from
 * -1), no observation window (0), and a select that keeps every unit. */
int64_t eng_policy_no_stat(const struct eng_policy *p, int64_t n_tok);
int64_t eng_policy_no_window(const struct eng_policy *p);
int eng_policy_select_all(struct eng_policy *p, struct eng_evict *e);
/* Ada-KV's allocation (spec/adakv.md §2.2 exact mode + the §4.2 capacity
 * clamp) of H·b_sel units over heads with n_cand[m] candidates each, given
 * the head of every candidate in global ranking order; a[0..H) out.
 * work: H int64, frac: H doubles (scratch). */
void eng_adakv_allocate(const int64_t *n_cand, int H, int64_t b_sel, double alpha,
    const int *rank_head, int64_t n_rank, int64_t *a, int64_t *work, double *frac);

/* Each policy's ops table (eng_policy_NAME, in its own file) is declared
 * where it is listed, the registry in engine/cache/policy.c, and again in a
 * header where another file names it: NaCl's here (PoD's bases are NaCl
 * policies, policy_pod.c; its test), kvzip's in kvzip.h (run/ingest.c). */
extern const struct eng_policy_ops eng_policy_nacl;

/* Entry points of single policies that the tests reach. */
/* NaCl's Gumbel noise G(seed, layer, KV head, pos, stream), spec/nacl.md §2.6
 * (engine/cache/policy_nacl.c). */
double eng_nacl_gumbel(uint64_t seed, int layer, int head, uint32_t pos, uint64_t stream);
/* Locret's test hook (engine/cache/policy_locret.c; spec/locret.md §8):
 * replaces the retaining heads' score of the unit of (layer, KV head) whose
 * token has original position pos.  Token ids are not visible at eviction
 * time; a test maps pos to its document's token itself (through arg).
 * fn == NULL restores the heads.  ENG_ERR_ARG if p is not a locret policy. */
typedef float (*eng_locret_score_fn)(void *arg, int layer, int head, uint32_t pos);
int eng_locret_set_score_fn(struct eng_policy *p, eng_locret_score_fn fn, void *arg);

#endif /* ENGINE_CACHE_POLICY_OPS_H */
