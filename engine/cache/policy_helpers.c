/*
 * policy_helpers.c: what the policy_*.c files share: option values parsed,
 * the document's chat-template prefix and sinks, ranking with the specs'
 * tie rules, and Ada-KV's allocation (also the selection's, select_scores.c).
 * Apart from the registry (policy.c), so that a policy calling them and the
 * registry listing it do not call each other.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/sort.h"
#include "engine/cache/policy_ops.h"

/* ------------------------------------------------------------------------ */
/* Option values                                                             */

int
eng_policy_parse_int(const char *val, int64_t lo, int64_t hi, int64_t *out)
{
	char *end;
	long long v;
	if (!val || !*val)
		return ENG_ERR_ARG;
	errno = 0;
	v = strtoll(val, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return ENG_ERR_ARG;
	*out = v;
	return 0;
}

int
eng_policy_parse_float(const char *val, double lo, double hi, double *out)
{
	char *end;
	double v;
	if (!val || !*val)
		return ENG_ERR_ARG;
	errno = 0;
	v = strtod(val, &end);
	if (errno || *end || !(v >= lo && v <= hi))
		return ENG_ERR_ARG;
	*out = v;
	return 0;
}

int
eng_policy_parse_name(const char *val, const char *const *names, int64_t *out)
{
	int64_t i;
	for (i = 0; val && names[i]; i++)
		if (!strcmp(val, names[i])) {
			*out = i;
			return 0;
		}
	return ENG_ERR_ARG;
}

int
eng_parse_ratio(const char *s, double *out)
{
	const char *slash = s ? strchr(s, '/') : NULL;
	double num, den = 1.0;
	char head[64];
	if (!s || !*s)
		return ENG_ERR_ARG;
	if (slash) {
		if ((size_t)(slash - s) >= sizeof(head))
			return ENG_ERR_ARG;
		memcpy(head, s, (size_t)(slash - s));
		head[slash - s] = 0;
		if (eng_policy_parse_float(head, 0.0, 1e9, &num) ||
		    eng_policy_parse_float(slash + 1, 1e-9, 1e9, &den))
			return ENG_ERR_ARG;
	} else if (eng_policy_parse_float(s, 0.0, 1.0, &num)) {
		return ENG_ERR_ARG;
	}
	if (!(num / den > 0.0 && num / den <= 1.0))
		return ENG_ERR_ARG;
	*out = num / den;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* The document's template prefix and sinks                                  */

int64_t
eng_doc_template_len(const int32_t *tpl, int64_t n_tpl, const int32_t *ids, int64_t n)
{
	if (n_tpl > 0 && n_tpl < n && !memcmp(ids, tpl, (size_t)n_tpl * sizeof(int32_t)))
		return n_tpl;
	return 0;
}

int64_t
eng_doc_sinks(int64_t opt, int64_t tpl, int64_t n)
{
	if (opt >= 0)
		return opt < n ? opt : n;
	return tpl ? tpl : (n < 4 ? n : 4);
}

int
eng_doc_template_ids(const struct eng_model *m, int32_t **ids, int64_t *n, char *why,
    size_t why_len)
{
	struct eng_tok *tok = NULL;
	struct eng_chat *chat = NULL;
	int64_t r;
	int rc;
	if ((rc = eng_tok_init(&tok, m->gguf, why, why_len)))
		return rc;
	if ((rc = eng_chat_init(&chat, m->gguf, tok, why, why_len))) {
		eng_tok_free(tok);
		return rc;
	}
	r = eng_chat_doc_ids(chat, "", 0, ids);
	eng_chat_free(chat);
	eng_tok_free(tok);
	if (r < 0)
		return eng_fail(why, why_len, (int)r, "cannot tokenize the chat template");
	*n = r;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Ranking                                                                   */

/* qsort has no context argument: the key array and tie rule go through
 * thread-local state (policies may run on several threads later). */
static _Thread_local const float *rank_key;
static _Thread_local const uint32_t *rank_pos;
static _Thread_local int rank_newer_first;

static int
policy_rank_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	float kx = rank_key[x], ky = rank_key[y];
	if (kx != ky)
		return kx > ky ? -1 : 1;
	if (rank_pos[x] != rank_pos[y]) {
		int older = rank_pos[x] < rank_pos[y] ? -1 : 1;
		return rank_newer_first ? -older : older;
	}
	return 0;
}

void
eng_policy_rank(const struct eng_evict_head *h, const float *key, int64_t *idx, int64_t n,
    int newer_first)
{
	rank_key = key;
	rank_pos = h->pos;
	rank_newer_first = newer_first;
	qsort(idx, (size_t)n, sizeof(*idx), policy_rank_cmp);
}

void
eng_policy_sort_idx(int64_t *idx, int64_t n)
{
	qsort(idx, (size_t)n, sizeof(*idx), kv_cmp_int64);
}

void
eng_policy_keep_all(struct eng_evict *e)
{
	int m;
	int64_t i;
	for (m = 0; m < e->n_head_kv; m++) {
		struct eng_evict_head *h = &e->h[m];
		for (i = 0; i < h->n; i++)
			h->keep[i] = i;
		h->n_keep = h->n;
	}
}

int
eng_policy_keep_if_fits(struct eng_evict_head *h, int64_t b)
{
	int64_t i;
	h->n_keep = 0;
	if (h->n > b)
		return 0;
	for (i = 0; i < h->n; i++)
		h->keep[h->n_keep++] = i;
	return 1;
}

int
eng_policy_below_budget(const struct eng_policy *p, int64_t v, const char *what, char *why,
    size_t why_len)
{
	if (v < p->budget)
		return 0;
	return eng_fail(why, why_len, ENG_ERR_ARG,
	    "%s (%lld) must be below the budget (%lld)", what,
	    (long long)v, (long long)p->budget);
}

int64_t
eng_policy_no_stat(const struct eng_policy *p, int64_t n_tok)
{
	(void)p;
	(void)n_tok;
	return -1;
}

int64_t
eng_policy_no_window(const struct eng_policy *p)
{
	(void)p;
	return 0;
}

int
eng_policy_select_all(struct eng_policy *p, struct eng_evict *e)
{
	(void)p;
	eng_policy_keep_all(e);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Ada-KV allocation                                                         */

void
eng_adakv_allocate(const int64_t *n_cand, int H, int64_t b_sel, double alpha,
    const int *rank_head, int64_t n_rank, int64_t *a, int64_t *work, double *frac)
{
	int64_t total = (int64_t)H * b_sel, sum = 0, excess = 0, i, R, *c = work;
	int m, best;

	/* 1. how many of the global top H·b_sel each head owns */
	for (m = 0; m < H; m++)
		c[m] = 0;
	for (i = 0; i < n_rank && i < total; i++)
		c[rank_head[i]]++;
	/* 2-3. mix with the uniform share, integerize exactly */
	for (m = 0; m < H; m++) {
		double x = (1.0 - alpha) * (double)c[m] + alpha * (double)b_sel;
		a[m] = (int64_t)floor(x + 1e-9);
		frac[m] = x - (double)a[m];
		sum += a[m];
	}
	for (R = total - sum; R > 0; R--) {
		best = 0;
		for (m = 1; m < H; m++)
			if (frac[m] > frac[best])
				best = m;
		a[best]++;
		frac[best] = -2.0;
	}
	/* capacity clamp: hand the excess on down the global ranking */
	for (m = 0; m < H; m++) {
		if (a[m] > n_cand[m]) {
			excess += a[m] - n_cand[m];
			a[m] = n_cand[m];
		}
		c[m] = 0; /* now: entries of head m seen in the walk */
	}
	for (i = 0; i < n_rank && excess > 0; i++) {
		m = rank_head[i];
		if (c[m]++ == a[m] && a[m] < n_cand[m]) {
			a[m]++;
			excess--;
		}
	}
}
