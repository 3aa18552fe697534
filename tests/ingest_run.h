/*
 * ingest_run.h: a document read through an eviction policy, for the tests
 * that check what the policy kept (test_pod.c, test_snapshot.c): policy,
 * context and cache pool made, exact mode, eng_ingest; and the PoD block
 * map they give the pod policy for the tiny model.
 */
#ifndef TESTS_INGEST_RUN_H
#define TESTS_INGEST_RUN_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "tests/helpers.h"
#include "tests/tap.h"
#include "tests/tiny_model.h"

struct th_run {
	struct eng_ctx *c;
	struct eng_kv *kv;
	struct eng_policy *p;
	int64_t rph;   /* the pool's rows per head */
	float *logits; /* the last position's logits, when asked for */
};

static inline void
th_run_free(struct th_run *r)
{
	eng_kv_free(r->kv);
	eng_ctx_free(r->c);
	eng_policy_free(r->p);
	free(r->logits);
	memset(r, 0, sizeof(*r));
}

/* Ingest ids[0..n) into m with policy name:opts at budget b, chunk B, the
 * pool with room for extra more tokens; with logits, the last position's
 * logits into r->logits.  0 or the failing call's code (a policy refused
 * is said in a diagnostic). */
static inline int
th_ingest(struct th_run *r, const struct eng_model *m, const char *name, const char *opts,
    int64_t b, const int32_t *ids, int64_t n, int64_t B, int64_t extra, int logits)
{
	char why[256] = "";
	int rc;
	memset(r, 0, sizeof(*r));
	if ((rc = eng_policy_create(&r->p, name, opts, b, why, sizeof(why)))) {
		tap_diag("policy %s:%s: %s", name, opts, why);
		return rc;
	}
	if (logits && !(r->logits = malloc((size_t)m->hp.n_vocab * sizeof(float))))
		return ENG_ERR_NOMEM;
	r->rph = eng_policy_rows_per_head(r->p, n, B, extra);
	if ((rc = eng_ctx_init(&r->c, m, 2, eng_policy_max_chunk(r->p, B))) ||
	    (rc = eng_kv_init(&r->kv, m, r->rph)))
		return rc;
	eng_ctx_set_exact(r->c, 1);
	return eng_ingest(r->c, r->kv, r->p, ids, n, B, r->logits);
}

/* A PoD block map of the tiny model written to a fresh temporary file
 * (path): anc[h·TINY_N_LAYER + l] the layer whose keys KV head h uses at
 * layer l (l itself: not shared), delta 0.5, f the share shared.  0 or
 * -1. */
static inline int
th_pod_map_write(char *path, size_t cap, uint8_t *anc)
{
	struct eng_pod_map pm;
	int i, na = 0;

	memset(&pm, 0, sizeof(pm));
	pm.n_layer = TINY_N_LAYER;
	pm.n_head = TINY_N_HEAD;
	pm.n_head_kv = TINY_N_HEAD_KV;
	pm.anc = anc;
	pm.delta = 0.5;
	for (i = 0; i < TINY_N_HEAD_KV * TINY_N_LAYER; i++)
		na += anc[i] == i % TINY_N_LAYER;
	pm.f = 1.0 - (double)na / (TINY_N_HEAD_KV * TINY_N_LAYER);
	if (th_tmp(path, cap, "podmap"))
		return -1;
	return eng_pod_map_save(&pm, path, NULL, 0);
}

#endif
