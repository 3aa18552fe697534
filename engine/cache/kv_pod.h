/*
 * kv_pod.h: a pool's PoD layout as the ingest, the forward pass and PoD's
 * policy change and read it (engine/cache/kv_pod.c); engine/ and its tests
 * only.
 */
#ifndef ENGINE_CACHE_KV_POD_H
#define ENGINE_CACHE_KV_POD_H

#include "engine/cache/cache.h"

/* Remove a pool's PoD layout (the pool attends densely again). */
void eng_kv_drop_pod(struct eng_kv *kv);
/* Anchor layer of (layer, head): layer itself without a PoD layout. */
int eng_kv_pod_anchor(const struct eng_kv *kv, int layer, int head);
/* Poison (NaN) the keys of a non-anchor (layer, head) that no query at a
 * position >= e reads as proximal; a no-op at an anchor. */
void eng_kv_pod_trim(struct eng_kv *kv, int layer, int head, uint32_t e);

#endif /* ENGINE_CACHE_KV_POD_H */
