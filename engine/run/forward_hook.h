/*
 * forward_hook.h: a forward pass over one chunk with a hook after every
 * layer's attention (engine/run/forward.c), for chunked ingest, KVzip's
 * reconstruction and the training passes; engine/ and its tests only.
 */
#ifndef ENGINE_RUN_FORWARD_HOOK_H
#define ENGINE_RUN_FORWARD_HOOK_H

#include "engine/cache/layer_info.h"
#include "engine/run/run.h"

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

#endif /* ENGINE_RUN_FORWARD_HOOK_H */
