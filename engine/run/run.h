/*
 * run.h: running the model over a cache (engine/run/): the forward pass and
 * its reference, chunked ingest with a policy, sampling and generation.
 */
#ifndef ENGINE_RUN_RUN_H
#define ENGINE_RUN_RUN_H

#include "engine/cache/cache.h"

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

/* Keep this ctx's op buffers and kv's keys and values on the backend's
 * device from one eng_forward to the next (kernels.h, device residency):
 * a token's forward pass then waits for the device once, for its logits.
 * Until eng_ctx_resident_end, kv's rows may change only through
 * eng_forward with this ctx (a hooked pass is refused); the end brings
 * kv's host copy up to date, and must come before kv is freed (eng_ctx_free
 * ends it too).  Nothing changes on the CPU.  generate.c brackets a
 * question's prefill and its answer with these.  begin: 1 when this call
 * began it, 0 when kv already was resident (the caller's bracket), or an
 * ENG_ERR (ENG_ERR_ARG: another kv is). */
int eng_ctx_resident_begin(struct eng_ctx *c, struct eng_kv *kv);
int eng_ctx_resident_end(struct eng_ctx *c);

/* Exact mode (tests, reference checks): matmuls keep activations in f32
 * instead of rounding them to llama.cpp's 8-bit grid. */
void eng_ctx_set_exact(struct eng_ctx *c, int exact);

/* The plain scalar reference forward pass (engine/run/ref_forward.c): logits
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
/* Chunked ingest (the policies: engine/cache/cache.h)                       */

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

/* log p(id) under logits (n_vocab): the model's own distribution, no
 * temperature. */
double eng_logprob(const float *logits, int32_t n_vocab, int32_t id);
/* Called for every sampled token with its log-probability (eng_logprob)
 * and eog 1 for the end of generation (the last call: it is not counted
 * in *n_out); return non-zero to stop (the token counted, unless eog). */
typedef int (*eng_token_lp_cb)(void *arg, int32_t id, double logprob, int eog);
/* eng_generate with each token's log-probability (the library's
 * confidence, service/emit.c).  first: the logits after a prompt already
 * prefilled on kv (then prompt NULL and n_prompt 0); else NULL. */
int eng_generate_lp(struct eng_ctx *c, struct eng_kv *kv, const struct eng_tok *tok,
    const int32_t *prompt, int64_t n_prompt, const float *first, int64_t n_max,
    struct eng_sampler *s, eng_token_lp_cb cb, void *arg, int64_t *n_out);

#endif /* ENGINE_RUN_RUN_H */
