/*
 * policy_h2o.c: H2O under chunked prefill (spec/adakv.md §1.2, §4.2): every
 * unit accumulates the attention probability it receives from every chunk
 * query (mean over the GQA group) into its score, across chunks; the most
 * recent r positions are protected and the b − r heaviest others are kept.
 *
 * Options: recent=N (default ⌊b/2⌋).  Parameters: i[0] = recent.
 */
#include <stdio.h>
#include <string.h>

#include "engine/cache/policy_ops.h"

static int
h2o_set(struct eng_policy *p, const char *key, const char *val, char *why, size_t why_len)
{
	if (!key) {
		p->i[0] = p->budget / 2;
		return 0;
	}
	if (!strcmp(key, "recent"))
		return eng_policy_parse_int(val, 0, 1 << 24, &p->i[0]);
	return eng_fail(why, why_len, ENG_ERR_ARG, "policy h2o has no option '%s' (recent)", key);
}

static int
h2o_check(struct eng_policy *p, char *why, size_t why_len)
{
	return eng_policy_below_budget(p, p->i[0], "h2o: recent", why, why_len);
}

static size_t
h2o_describe(const struct eng_policy *p, char *buf, size_t cap)
{
	int n = snprintf(buf, cap, ",recent=%lld", (long long)p->i[0]);
	return n > 0 ? (size_t)n : 0;
}

static int64_t
h2o_stat_from(const struct eng_policy *p, int64_t n_tok)
{
	(void)p;
	(void)n_tok;
	return 0; /* every chunk query */
}

static int
h2o_select(struct eng_policy *p, struct eng_evict *e)
{
	int64_t b = p->budget, r = p->i[0], i;
	int m;

	for (m = 0; m < e->n_head_kv; m++) {
		struct eng_evict_head *h = &e->h[m];
		int64_t n_cand = 0, heavy = b - r;
		uint32_t recent_from = e->chunk_end > (uint32_t)r ? e->chunk_end - (uint32_t)r : 0;
		for (i = 0; i < h->n; i++)
			h->score[i] += h->stat ? h->stat[i] : 0.0f;
		if (eng_policy_keep_if_fits(h, b))
			continue;
		for (i = 0; i < h->n; i++)
			if (h->pos[i] < recent_from)
				e->scratch[n_cand++] = i;
		eng_policy_rank(h, h->score, e->scratch, n_cand, 0);
		if (heavy > n_cand)
			heavy = n_cand;
		for (i = 0; i < heavy; i++)
			h->keep[h->n_keep++] = e->scratch[i];
		for (i = 0; i < h->n; i++)
			if (h->pos[i] >= recent_from)
				h->keep[h->n_keep++] = i;
		eng_policy_sort_idx(h->keep, h->n_keep);
	}
	return 0;
}

const struct eng_policy_ops eng_policy_h2o = {
	.name = "h2o",
	.set = h2o_set,
	.check = h2o_check,
	.describe = h2o_describe,
	.stat_from = h2o_stat_from,
	.window = eng_policy_no_window,
	.select = h2o_select,
};
