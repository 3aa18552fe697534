/*
 * cache.h: the KV cache and what decides its contents (engine/cache/): the
 * pool, the eviction policies, Locret's retaining heads, PoD block maps and
 * the pool's PoD layout.
 */
#ifndef ENGINE_CACHE_CACHE_H
#define ENGINE_CACHE_CACHE_H

#include "engine/model/model.h"

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
	float *bias;              /* (rows) a refit cut's logit bias; read only when
	                           * eng_kv.has_bias (engine/cache/refit.c) */
};

struct eng_kv {
	int n_layer, n_head_kv, head_dim;
	float rope_base;
	const float *rope_freqs; /* the model's frequency factors or NULL */
	enum kern_rope_style rope_style;
	enum eng_pos_mode pos_mode;
	int64_t rows;               /* arena rows per layer */
	struct eng_kv_layer *layer; /* (n_layer) */
	struct eng_kv_layer spare;  /* compaction target, swapped in */
	uint32_t next_pos;          /* original position of the next token */
	int has_bias;               /* attention adds layer[].bias (kvzip refit=1) */
	struct eng_kv_pod *pod;     /* PoD layer sharing, or NULL (dense) */
	float *rope_table;          /* kept angles of positions [0, rope_n), or NULL
	                             * (eng_kv_rope_table_keep; a function of the
	                             * RoPE fields above alone) */
	uint32_t rope_n;
};

/* A pool's PoD layout (engine/cache/kv_pod.c). */
struct eng_kv_pod {
	uint8_t *anc;    /* (n_head_kv, n_layer) anchor layer of (m, l) */
	uint32_t n_s, n_r;
	int distant_own; /* distant logits with the own query (experiments) */
};

/* A pool whose layers hold rows_per_head * n_head_kv rows, split evenly. */
int eng_kv_init(struct eng_kv **out, const struct eng_model *m, int64_t rows_per_head);
void eng_kv_free(struct eng_kv *kv);
/* A pool kept from an earlier load taken again (its pages already faulted
 * in: no first touch of fresh memory): 0 and kv cleared (eng_kv_clear, the
 * model's RoPE set) when it has m's shape and at least rows_per_head rows
 * per head (more is headroom, as the spread of free rows is); ENG_ERR_ARG,
 * kv untouched, when not.  eng_kv_bytes: the memory its layers hold (the
 * spare arena, touched only by compaction, left out). */
int eng_kv_reuse(struct eng_kv *kv, const struct eng_model *m, int64_t rows_per_head);
uint64_t eng_kv_bytes(const struct eng_kv *kv);
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
/* The same in parts, for a loader that derives each layer's rotated keys
 * on its own thread (engine/cache/kv_rotate.c): a table of the pool's RoPE
 * angles for positions [0, n_pos) (allocated: free(); filled in any
 * parts, p0 .. p0 + n − 1, from any threads), every key of a layer rotated
 * through it (positions, or slots in slot mode, below the table's n_pos;
 * table NULL: the angles made row by row), then next_pos and the mode set
 * without deriving again.  Equal bit for bit to eng_kv_finish_load's keys.
 * eng_kv_rope_span: the n_pos a pool's units need in a mode (its largest
 * position + 1, or its largest count); eng_kv_rope_table_worth: whether a
 * table of n_pos rows is cheaper than rotating `rows` rows one by one (it
 * bounds the table by the rows, whatever positions a header names). */
float *eng_kv_rope_table_alloc(const struct eng_kv *kv, uint32_t n_pos);
void eng_kv_rope_table_fill(const struct eng_kv *kv, float *table, uint32_t p0, uint32_t n);
void eng_kv_derive_layer(struct eng_kv *kv, int layer, enum eng_pos_mode mode,
    const float *table);
int eng_kv_set_loaded(struct eng_kv *kv, uint32_t next_pos, enum eng_pos_mode mode);
/* The pool's own table of positions [0, n_pos), kept for the loads after
 * (a pool taken again by eng_kv_reuse keeps it while the model's RoPE is
 * the same): the kept one when it covers n_pos (*fill 0), else a new one
 * in its place (*fill 1: the caller fills rows [0, n_pos) with
 * eng_kv_rope_table_fill, then says so with eng_kv_rope_table_filled;
 * until then the pool keeps none).  NULL when out of memory.  Freed with
 * the pool, never by the caller; like the table it replaces, at most
 * n_pos × head_dim floats. */
float *eng_kv_rope_table_keep(struct eng_kv *kv, uint32_t n_pos, int *fill);
void eng_kv_rope_table_filled(struct eng_kv *kv, uint32_t n_pos);
uint32_t eng_kv_rope_span(const struct eng_kv *kv, enum eng_pos_mode mode);
int eng_kv_rope_table_worth(uint32_t n_pos, int64_t rows);
/* Drop the last n units of every (layer, head) and move next_pos back by
 * n: undoes eng_forward of n tokens (a question and its answer, a
 * reconstruction pass).  ENG_ERR_ARG if some head holds fewer than n. */
int eng_kv_drop_tail(struct eng_kv *kv, int64_t n);
/* Several pools side by side in a new one (engine/cache/kv_concat.c):
 * parts[0]'s units as they are, then each next part's units at positions
 * >= skip[i] (its template prefix left out) re-laid to follow the part
 * before (position p of part i becomes p - skip[i] + the positions before
 * it), rotated keys derived again; next_pos is the sum.  Room for n_extra
 * more tokens per head.  ENG_ERR_ARG for slot positions or a PoD layout. */
int eng_kv_concat(struct eng_kv **out, const struct eng_model *m, struct eng_kv *const *parts,
    const uint32_t *skip, int n, int64_t n_extra);
/* Round every key and value to fp16 in place and re-derive the rotated
 * keys: the in-memory twin of an fp16 snapshot (tests compare the two). */
void eng_kv_round_fp16(struct eng_kv *kv);
/* Position a new unit of (layer, head) would be rotated at: next_pos in
 * original mode, the head's count in slot mode. */
uint32_t eng_kv_rope_pos(const struct eng_kv *kv, int layer, int head);

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
 * Names: the registry (engine/cache/policy.c); each policy's options in its
 * file (engine/cache/policy_NAME.c) and docs/POLICIES.md.                  */

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
/* The most tokens a document may have for eng_ingest with this policy:
 * the model's window where units keep their positions (a longer one fails
 * with ENG_ERR_CONTEXT once a window has been prefilled), the position
 * limit where the policy renumbers them (slot positions). */
int64_t eng_policy_max_doc(const struct eng_policy *p, const struct eng_model *m);
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

/* Shrink a pool that kvzip made (every unit scored; sinks +inf) to p's
 * budget for a document of n_doc tokens by the stored scores, with p's
 * selection and no model run (kvsnap shrink).  ENG_ERR_ARG with a reason if
 * p is not kvzip or the pool already holds no more than the budget. */
int eng_kvzip_shrink(struct eng_policy *p, struct eng_kv *kv, int64_t n_doc, char *why,
    size_t why_len);

/* ------------------------------------------------------------------------ */
/* Retaining heads (Locret; engine/cache/locret_heads.c, engine/cache/policy_locret.c)
 *
 * One MLP per layer maps a token's pre-RoPE [Q, K, V] to one importance
 * score per KV head (spec/locret.md §1).  They live in a GGUF sidecar whose
 * layout is written at the top of engine/cache/locret_heads.c.  A handle is
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
/* PoD layer sharing (spec/pod.md; engine/cache/pod_map.c, engine/train/pod_calibrate.c,
 * engine/cache/kv_pod.c, engine/cache/policy_pod.c)
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

#endif /* ENGINE_CACHE_CACHE_H */
