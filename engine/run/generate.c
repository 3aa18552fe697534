/*
 * generate.c: token sampling (greedy, temperature, top-p) and the decode
 * loop on top of eng_forward.
 *
 * Sampling is deterministic for a seed: a xorshift64* generator, and ties in
 * greedy choice go to the lowest id.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "engine/run/run.h"

void
eng_sampler_init(struct eng_sampler *s, float temp, float top_p, uint64_t seed)
{
	s->temp = temp > 0.0f ? temp : 0.0f;
	s->top_p = top_p > 0.0f && top_p < 1.0f ? top_p : 1.0f;
	s->seed = seed;
	/* splitmix64 of the seed, so seed 0 still gives a non-zero state */
	seed += 0x9E3779B97F4A7C15ull;
	seed = (seed ^ (seed >> 30)) * 0xBF58476D1CE4E5B9ull;
	seed = (seed ^ (seed >> 27)) * 0x94D049BB133111EBull;
	s->state = (seed ^ (seed >> 31)) | 1;
}

/* Uniform double in [0, 1). */
static double
sampler_uniform(struct eng_sampler *s)
{
	return (double)(kv_xorshift64s(&s->state) >> 11) * (1.0 / 9007199254740992.0);
}

static int32_t
sampler_argmax(const float *logits, int32_t n)
{
	int32_t i, best = 0;
	for (i = 1; i < n; i++)
		if (logits[i] > logits[best])
			best = i;
	return best;
}

struct sampler_cand {
	int32_t id;
	float p;
};

static int
sampler_cand_cmp(const void *a, const void *b)
{
	const struct sampler_cand *x = a, *y = b;
	if (x->p != y->p)
		return x->p < y->p ? 1 : -1;
	return x->id < y->id ? -1 : x->id > y->id;
}

int32_t
eng_sample(struct eng_sampler *s, const float *logits, int32_t n_vocab)
{
	struct sampler_cand *c;
	double sum = 0.0, r, acc;
	float mx;
	int32_t i, n_keep;

	if (s->temp <= 0.0f)
		return sampler_argmax(logits, n_vocab);
	c = malloc((size_t)n_vocab * sizeof(*c));
	if (!c)
		return sampler_argmax(logits, n_vocab); /* degrade, never fail */
	mx = logits[sampler_argmax(logits, n_vocab)];
	for (i = 0; i < n_vocab; i++) {
		c[i].id = i;
		c[i].p = expf((logits[i] - mx) / s->temp);
		sum += c[i].p;
	}
	qsort(c, (size_t)n_vocab, sizeof(*c), sampler_cand_cmp);
	n_keep = n_vocab;
	if (s->top_p < 1.0f) {
		acc = 0.0;
		for (i = 0; i < n_vocab; i++) {
			acc += c[i].p / sum;
			if (acc >= s->top_p) {
				n_keep = i + 1;
				break;
			}
		}
		sum = 0.0;
		for (i = 0; i < n_keep; i++)
			sum += c[i].p;
	}
	r = sampler_uniform(s) * sum;
	acc = 0.0;
	for (i = 0; i < n_keep - 1; i++) {
		acc += c[i].p;
		if (r < acc)
			break;
	}
	{
		int32_t id = c[i].id;
		free(c);
		return id;
	}
}

double
eng_logprob(const float *logits, int32_t n_vocab, int32_t id)
{
	double mx = logits[0], sum = 0.0;
	int32_t i;
	for (i = 1; i < n_vocab; i++)
		if (logits[i] > mx)
			mx = logits[i];
	for (i = 0; i < n_vocab; i++)
		sum += exp((double)logits[i] - mx);
	return (double)logits[id] - mx - log(sum);
}

/* The one decode loop: lp (with each token's log-probability, the end
 * of generation too) or cb (without, and not the end). */
static int
generate(struct eng_ctx *c, struct eng_kv *kv, const struct eng_tok *tok,
    const int32_t *prompt, int64_t n_prompt, const float *first, int64_t n_max,
    struct eng_sampler *s, eng_token_cb cb, eng_token_lp_cb lp, void *arg, int64_t *n_out)
{
	int32_t n_vocab = eng_tok_n_vocab(tok), id;
	float *logits;
	int64_t n = 0;
	int rc = 0, eog, began;

	*n_out = 0;
	if (first ? n_prompt != 0 : n_prompt <= 0)
		return ENG_ERR_ARG;
	logits = malloc((size_t)n_vocab * sizeof(float));
	if (!logits)
		return ENG_ERR_NOMEM;
	began = eng_ctx_resident_begin(c, kv);
	/* a device without room for the pool's copy answers on the host path
	 * (each op copying in and out) rather than not at all */
	if (began < 0 && began != ENG_ERR_ARG)
		began = 0;
	rc = began < 0 ? began : 0;
	if (!rc && first)
		memcpy(logits, first, (size_t)n_vocab * sizeof(float));
	else if (!rc)
		rc = eng_forward(c, kv, prompt, n_prompt, NULL, logits);
	while (!rc && n < n_max) {
		id = eng_sample(s, logits, n_vocab);
		eog = eng_tok_is_eog(tok, id);
		if (lp && lp(arg, id, eng_logprob(logits, n_vocab, id), eog))
			eog = -1; /* stop, counting the token unless it ended the turn */
		if (eog > 0)
			break;
		n++;
		if (eog < 0 || (cb && cb(arg, id)))
			break;
		if (n == n_max)
			break;
		rc = eng_forward(c, kv, &id, 1, NULL, logits);
	}
	if (began > 0) {
		int rc_end = eng_ctx_resident_end(c);
		rc = rc ? rc : rc_end;
	}
	free(logits);
	*n_out = n;
	return rc;
}

int
eng_generate(struct eng_ctx *c, struct eng_kv *kv, const struct eng_tok *tok,
    const int32_t *prompt, int64_t n_prompt, int64_t n_max, struct eng_sampler *s,
    eng_token_cb cb, void *arg, int64_t *n_out)
{
	return generate(c, kv, tok, prompt, n_prompt, NULL, n_max, s, cb, NULL, arg, n_out);
}

int
eng_generate_lp(struct eng_ctx *c, struct eng_kv *kv, const struct eng_tok *tok,
    const int32_t *prompt, int64_t n_prompt, const float *first, int64_t n_max,
    struct eng_sampler *s, eng_token_lp_cb cb, void *arg, int64_t *n_out)
{
	return generate(c, kv, tok, prompt, n_prompt, first, n_max, s, NULL, cb, arg, n_out);
}
