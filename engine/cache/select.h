/*
 * select.h: one selection over every layer and head of a pool by its units'
 * stored scores (engine/cache/select_scores.c), for KVzip and Locret's
 * alloc=global; engine/ and its tests only.
 */
#ifndef ENGINE_CACHE_SELECT_H
#define ENGINE_CACHE_SELECT_H

#include "engine/cache/cache.h"

/* How the units kept are shared among heads. */
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
/* Keep `target` units per head on average, sinks included; compacts every
 * layer. */
int eng_select_scores(struct eng_kv *kv, const struct eng_select *sel, int64_t target);
#define ENG_SELECT_LAYER_CAP 2 /* global: a layer keeps at most this times the mean */

#endif /* ENGINE_CACHE_SELECT_H */
