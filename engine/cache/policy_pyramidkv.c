/*
 * policy_pyramidkv.c: PyramidKV (spec/adakv.md §1.4): SnapKV's scorer with a
 * per-layer selectable budget b'_l that falls linearly from the first layer
 * to the last, with the same average b − w, computed from the document
 * length (known at ingest) and integerized exactly so the layers sum to
 * L·(b − w).  Also used by adakv's pyramid mode.
 *
 * Options: SnapKV's plus beta=20.  Parameters: i[0..3] as snapkv, f[0] beta.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cache/snapkv.h"

static int
pyramid_set(struct eng_policy *p, const char *key, const char *val, char *why, size_t why_len)
{
	if (!key) {
		p->f[0] = 20.0;
		return eng_snapkv_set(p, NULL, NULL, why, why_len);
	}
	if (!strcmp(key, "beta"))
		return eng_policy_parse_float(val, 1.0, 1e6, &p->f[0]);
	return eng_snapkv_set(p, key, val, why, why_len);
}

static size_t
pyramid_describe(const struct eng_policy *p, char *buf, size_t cap)
{
	size_t n = eng_snapkv_describe(p, buf, cap);
	int k = snprintf(n < cap ? buf + n : NULL, n < cap ? cap - n : 0, ",beta=%g", p->f[0]);
	return n + (k > 0 ? (size_t)k : 0);
}

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

static int
pyramid_select(struct eng_policy *p, struct eng_evict *e)
{
	int64_t b_sel = eng_pyramid_layer_budget(p, e->layer, e->n_layer, e->n_doc) +
	    (e->is_last ? 0 : p->i[3]);
	int m;
	for (m = 0; m < e->n_head_kv; m++) {
		int64_t n_cand = eng_snapkv_score(p, e, m, e->scratch);
		eng_snapkv_keep(&e->h[m], e->scratch, n_cand, b_sel);
	}
	return 0;
}

static int64_t
pyramid_kept_per_head(const struct eng_policy *p, int64_t n_doc)
{
	return eng_snapkv_kept(p, n_doc, 1);
}

const struct eng_policy_ops eng_policy_pyramidkv = {
	.name = "pyramidkv",
	.set = pyramid_set,
	.check = eng_snapkv_check,
	.describe = pyramid_describe,
	.stat_from = eng_snapkv_stat_from,
	.window = eng_snapkv_window,
	.select = pyramid_select,
	.kept_per_head = pyramid_kept_per_head,
};
