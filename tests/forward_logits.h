/*
 * forward_logits.h: every position's logits of a token run through
 * eng_forward, fed in chunks: the engine's output the model tests compare
 * against a reference or against another path; and the KL divergence of
 * two such rows.
 */
#ifndef TESTS_FORWARD_LOGITS_H
#define TESTS_FORWARD_LOGITS_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

/* How the run is fed: threads and max_chunk for eng_ctx_init, chunk tokens
 * per eng_forward call, exact mode or not, the prefill path. */
struct th_fwd {
	int threads;
	int64_t max_chunk;
	int64_t chunk;
	int exact;
	enum kern_prefill how;
};

/* ids[0..n) in a fresh context and cache; the logits of every position in
 * out[n * n_vocab].  0 or the engine's error. */
static inline int
th_forward_logits(const struct eng_model *m, const int32_t *ids, int64_t n,
    const struct th_fwd *o, float *out)
{
	struct eng_ctx *c = NULL;
	struct eng_kv *kv = NULL;
	uint8_t *want = malloc((size_t)n);
	int64_t s;
	int rc;

	if (!want)
		return ENG_ERR_NOMEM;
	memset(want, 1, (size_t)n);
	rc = eng_ctx_init(&c, m, o->threads, o->max_chunk);
	if (!rc)
		rc = eng_kv_init(&kv, m, n + 1);
	if (!rc) {
		eng_ctx_set_exact(c, o->exact);
		if (o->how != KERN_PREFILL_AUTO) /* AUTO: the context's own choice */
			kern_ctx_set_prefill(eng_ctx_kern(c), o->how);
		for (s = 0; s < n && !rc; s += o->chunk) {
			int64_t len = n - s < o->chunk ? n - s : o->chunk;
			rc = eng_forward(c, kv, ids + s, len, want + s, out + s * m->hp.n_vocab);
		}
	}
	eng_kv_free(kv);
	eng_ctx_free(c);
	free(want);
	return rc;
}

/* KL(softmax(a) || softmax(b)) over n logits, in double. */
static inline double
th_kl_logits(const float *a, const float *b, int64_t n)
{
	double ma = -INFINITY, mb = -INFINITY, sa = 0.0, sb = 0.0, kl = 0.0;
	int64_t i;
	for (i = 0; i < n; i++) {
		ma = a[i] > ma ? a[i] : ma;
		mb = b[i] > mb ? b[i] : mb;
	}
	for (i = 0; i < n; i++) {
		sa += exp(a[i] - ma);
		sb += exp(b[i] - mb);
	}
	for (i = 0; i < n; i++) {
		double la = a[i] - ma - log(sa), lb = b[i] - mb - log(sb);
		kl += exp(la) * (la - lb);
	}
	return kl;
}

#endif /* TESTS_FORWARD_LOGITS_H */
