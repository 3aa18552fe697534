/*
 * kvzip.h: what KVzip's files share (engine/cache/policy_kvzip.c: options,
 * the reconstruction prompt, the selection; engine/cache/kvzip_refit.c:
 * refit=1; engine/run/kvzip_ingest.c: the ingest, which runs the forward pass
 * and so sits in run/); engine/ and its tests only.
 */
#ifndef ENGINE_CACHE_KVZIP_H
#define ENGINE_CACHE_KVZIP_H

#include "engine/cache/policy_ops.h"

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
/* The policy's ops table (engine/run/ingest.c hands a kvzip ingest to
 * engine/run/kvzip_ingest.c by it). */
extern const struct eng_policy_ops eng_policy_kvzip;

#endif /* ENGINE_CACHE_KVZIP_H */
