/*
 * ingest_run.h: a document read through an eviction policy, for the tests
 * that check what the policy kept (test_pod.c, test_snapshot.c): policy,
 * context and cache pool made, exact mode, eng_ingest.
 */
#ifndef TESTS_INGEST_RUN_H
#define TESTS_INGEST_RUN_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "tests/tap.h"

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

#endif
