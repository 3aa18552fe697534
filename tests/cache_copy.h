/*
 * cache_copy.h: a copy of the tiny model's cache pool (tests/tiny_model.h's
 * shape), head by head, that the policy tests (test_policy.c,
 * test_locret.c) keep of a run to compare runs and check retained sets.
 */
#ifndef TESTS_CACHE_COPY_H
#define TESTS_CACHE_COPY_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "tests/tiny_model.h"

struct cache_copy {
	int64_t len[TINY_N_LAYER][TINY_N_HEAD_KV];
	uint32_t *pos[TINY_N_LAYER][TINY_N_HEAD_KV];
	float *score[TINY_N_LAYER][TINY_N_HEAD_KV];
	float *k[TINY_N_LAYER][TINY_N_HEAD_KV];  /* pre-RoPE keys */
	float *kr[TINY_N_LAYER][TINY_N_HEAD_KV]; /* rotated */
	float *v[TINY_N_LAYER][TINY_N_HEAD_KV];
};

/* Head m of layer l of kv into s (aborts on no memory). */
static inline void
cache_copy_head(struct cache_copy *s, const struct eng_kv *kv, int l, int m)
{
	const struct eng_kv_layer *L = &kv->layer[l];
	int64_t n = L->len[m];
	size_t e = (size_t)n * TINY_HEAD_DIM, one = e ? e : 1;

	s->len[l][m] = n;
	s->pos[l][m] = malloc((size_t)(n ? n : 1) * sizeof(uint32_t));
	s->score[l][m] = malloc((size_t)(n ? n : 1) * sizeof(float));
	s->k[l][m] = malloc(one * sizeof(float));
	s->kr[l][m] = malloc(one * sizeof(float));
	s->v[l][m] = malloc(one * sizeof(float));
	if (!s->pos[l][m] || !s->score[l][m] || !s->k[l][m] || !s->kr[l][m] || !s->v[l][m])
		abort();
	memcpy(s->pos[l][m], L->pos + L->off[m], (size_t)n * sizeof(uint32_t));
	memcpy(s->score[l][m], L->score + L->off[m], (size_t)n * sizeof(float));
	memcpy(s->k[l][m], L->k + L->off[m] * TINY_HEAD_DIM, e * sizeof(float));
	memcpy(s->kr[l][m], L->kr + L->off[m] * TINY_HEAD_DIM, e * sizeof(float));
	memcpy(s->v[l][m], L->v + L->off[m] * TINY_HEAD_DIM, e * sizeof(float));
}

static inline void
cache_copy_free(struct cache_copy *s)
{
	int l, m;
	for (l = 0; l < TINY_N_LAYER; l++)
		for (m = 0; m < TINY_N_HEAD_KV; m++) {
			free(s->pos[l][m]);
			free(s->score[l][m]);
			free(s->k[l][m]);
			free(s->kr[l][m]);
			free(s->v[l][m]);
			s->pos[l][m] = NULL;
			s->score[l][m] = NULL;
			s->k[l][m] = NULL;
			s->kr[l][m] = NULL;
			s->v[l][m] = NULL;
		}
}

#endif /* TESTS_CACHE_COPY_H */
