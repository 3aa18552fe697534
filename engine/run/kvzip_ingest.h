/*
 * kvzip_ingest.h: KVzip's ingest (engine/run/kvzip_ingest.c), which
 * eng_ingest_cb (engine/run/ingest.c) runs for a kvzip policy; engine/ and
 * its tests only.
 */
#ifndef ENGINE_RUN_KVZIP_INGEST_H
#define ENGINE_RUN_KVZIP_INGEST_H

#include "engine/run/run.h"

/* Segments, reconstruction passes and selections over ids[0..n); eng_ingest_cb
 * has checked the arguments, set the position mode and bound the policy. */
int eng_kvzip_ingest(struct eng_policy *p, struct eng_ctx *c, struct eng_kv *kv,
    const int32_t *ids, int64_t n, int64_t chunk, float *last_logits, eng_progress_cb cb,
    void *arg);

#endif /* ENGINE_RUN_KVZIP_INGEST_H */
