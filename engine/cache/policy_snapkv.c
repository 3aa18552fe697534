/*
 * policy_snapkv.c: SnapKV under chunked prefill (spec/adakv.md §1.3, §4.2),
 * and the pieces it shares with pyramidkv and adakv: the scorer, the options,
 * and PyramidKV's per-layer budget.
 *
 * At each eviction the last w queries of the chunk are the observation
 * window: every candidate unit (those before the window) is scored by the
 * attention those queries pay it (mean over the GQA group), max- or
 * avg-pooled over present units within ±⌊kernel/2⌋ positions; each head keeps
 * its b − w best candidates plus the window.  Intermediate evictions may
 * keep `slack` extra candidates per head.
 *
 * Options: window=32 kernel=7 pool=max|avg slack=0.
 * Parameters: i[0] window, i[1] kernel, i[2] pool (0 max, 1 avg), i[3] slack.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/cache/snapkv.h"

/* i[2]'s values, by index. */
static const char *const pools[] = { "max", "avg", NULL };

int
eng_snapkv_set(struct eng_policy *p, const char *key, const char *val, char *why,
    size_t why_len)
{
	if (!key) {
		p->i[0] = 32;
		p->i[1] = 7;
		p->i[2] = 0;
		p->i[3] = 0;
		return 0;
	}
	if (!strcmp(key, "window"))
		return eng_policy_parse_int(val, 1, 1 << 16, &p->i[0]);
	if (!strcmp(key, "kernel"))
		return eng_policy_parse_int(val, 1, 1023, &p->i[1]);
	if (!strcmp(key, "slack"))
		return eng_policy_parse_int(val, 0, 1 << 24, &p->i[3]);
	if (!strcmp(key, "pool"))
		return eng_policy_parse_name(val, pools, &p->i[2]);
	return eng_fail(why, why_len, ENG_ERR_ARG,
	    "policy %s has no option '%s' (window, kernel, pool, slack)",
	    p->ops->name, key);
}

int
eng_snapkv_check(struct eng_policy *p, char *why, size_t why_len)
{
	if (p->budget <= p->i[0])
		return eng_fail(why, why_len, ENG_ERR_ARG,
		    "%s: the budget (%lld) must exceed the window (%lld)",
		    p->ops->name, (long long)p->budget, (long long)p->i[0]);
	if (p->i[1] % 2 == 0)
		return eng_fail(why, why_len, ENG_ERR_ARG,
		    "%s: the pooling kernel must be odd (got %lld)",
		    p->ops->name, (long long)p->i[1]);
	return 0;
}

size_t
eng_snapkv_describe(const struct eng_policy *p, char *buf, size_t cap)
{
	int n = snprintf(buf, cap, ",window=%lld,kernel=%lld,pool=%s,slack=%lld",
	    (long long)p->i[0], (long long)p->i[1], pools[p->i[2]], (long long)p->i[3]);
	return n > 0 ? (size_t)n : 0;
}

int64_t
eng_snapkv_stat_from(const struct eng_policy *p, int64_t n_tok)
{
	return n_tok > p->i[0] ? n_tok - p->i[0] : 0;
}

int64_t
eng_snapkv_window(const struct eng_policy *p)
{
	return p->i[0];
}

int64_t
eng_snapkv_score(const struct eng_policy *p, struct eng_evict *e, int m, int64_t *cand)
{
	struct eng_evict_head *h = &e->h[m];
	uint32_t w = (uint32_t)p->i[0], r = (uint32_t)(p->i[1] / 2);
	uint32_t win_from = e->chunk_end > w ? e->chunk_end - w : 0;
	int64_t n_cand = 0, i, q, rows = e->n_tok - eng_snapkv_stat_from(p, e->n_tok);
	/* the statistic is a sum over the window's queries: store the mean A */
	float inv = rows > 0 ? 1.0f / (float)rows : 0.0f;

	while (n_cand < h->n && h->pos[n_cand] < win_from)
		n_cand++;
	for (i = 0; i < n_cand; i++) {
		float acc = p->i[2] ? 0.0f : -1.0f;
		/* pool over present candidates within ±r positions (list is sorted) */
		for (q = i; q >= 0 && h->pos[i] - h->pos[q] <= r; q--) {
			float s = h->stat ? h->stat[q] * inv : 0.0f;
			acc = p->i[2] ? acc + s : (s > acc ? s : acc);
		}
		for (q = i + 1; q < n_cand && h->pos[q] - h->pos[i] <= r; q++) {
			float s = h->stat ? h->stat[q] * inv : 0.0f;
			acc = p->i[2] ? acc + s : (s > acc ? s : acc);
		}
		h->score[i] = p->i[2] ? acc / (float)p->i[1] : acc;
	}
	for (i = n_cand; i < h->n; i++)
		h->score[i] = h->stat ? h->stat[i] * inv : 0.0f; /* window: unpooled, for inspection */
	for (i = 0; i < n_cand; i++)
		cand[i] = i;
	return n_cand;
}

void
eng_snapkv_keep(struct eng_evict_head *h, int64_t *cand, int64_t n_cand, int64_t a)
{
	int64_t i;
	eng_policy_rank(h, h->score, cand, n_cand, 0);
	if (a > n_cand)
		a = n_cand;
	h->n_keep = 0;
	for (i = 0; i < a; i++)
		h->keep[h->n_keep++] = cand[i];
	eng_policy_sort_idx(h->keep, h->n_keep);
	for (i = n_cand; i < h->n; i++)
		h->keep[h->n_keep++] = i; /* the window, already in order after candidates */
}

static int
snapkv_select(struct eng_policy *p, struct eng_evict *e)
{
	int64_t b_sel = p->budget - p->i[0] + (e->is_last ? 0 : p->i[3]);
	int m;
	for (m = 0; m < e->n_head_kv; m++) {
		int64_t n_cand = eng_snapkv_score(p, e, m, e->scratch);
		eng_snapkv_keep(&e->h[m], e->scratch, n_cand, b_sel);
	}
	return 0;
}

/* The family keeps `slack` more at intermediate evictions, and pyramid
 * schedules give the first layer the most (layers share one arena size, so
 * size it for the largest). */
int64_t
eng_snapkv_kept(const struct eng_policy *p, int64_t n_doc, int pyramid)
{
	int64_t kept = p->budget;
	if (pyramid)
		kept = eng_pyramid_layer_budget(p, 0, 1024, n_doc) + p->i[0] + 1;
	if (kept < p->budget)
		kept = p->budget;
	return kept + p->i[3];
}

static int64_t
snapkv_kept_per_head(const struct eng_policy *p, int64_t n_doc)
{
	return eng_snapkv_kept(p, n_doc, 0);
}

const struct eng_policy_ops eng_policy_snapkv = {
	.name = "snapkv",
	.set = eng_snapkv_set,
	.check = eng_snapkv_check,
	.describe = eng_snapkv_describe,
	.stat_from = eng_snapkv_stat_from,
	.window = eng_snapkv_window,
	.select = snapkv_select,
	.kept_per_head = snapkv_kept_per_head,
};

/* PyramidKV's layer budget (policy_pyramidkv.c; adakv's pyramid mode). */
int64_t
eng_pyramid_layer_budget(const struct eng_policy *p, int layer, int n_layer, int64_t n_doc)
{
	double base = (double)(p->budget - p->i[0]), mn, mx, step, x[1024], frac_best;
	int64_t w = p->i[0], total = 0, a[1024], target;
	int l, k, L = n_layer > 1024 ? 1024 : n_layer;

	if (L <= 1)
		return (int64_t)base;
	mn = base / p->f[0];
	mx = 2.0 * base - mn;
	if (mx >= (double)(n_doc - w)) {
		mx = (double)(n_doc - w);
		mn = 2.0 * base - mx;
	}
	step = (mx - mn) / (double)(L - 1);
	for (l = 0; l < L; l++) {
		x[l] = mx - (double)l * step;
		if (x[l] < 0.0)
			x[l] = 0.0;
		a[l] = (int64_t)floor(x[l]);
		total += a[l];
	}
	/* hand the remainder to the largest fractional parts, lower layer first */
	target = (int64_t)llround(base * (double)L);
	while (total < target) {
		int best = -1;
		frac_best = -1.0;
		for (k = 0; k < L; k++) {
			double fr = x[k] - (double)a[k];
			if (fr > frac_best && fr < 1.0 + 1e-9) {
				frac_best = fr;
				best = k;
			}
		}
		if (best < 0)
			break;
		a[best]++;
		x[best] = (double)a[best]; /* used: no fraction left */
		total++;
	}
	return a[layer < L ? layer : L - 1];
}
