/*
 * policy_pyramidkv.c: PyramidKV (spec/adakv.md §1.4): SnapKV's scorer with a
 * per-layer selectable budget b'_l that falls linearly from the first layer
 * to the last, with the same average b − w, computed from the document
 * length (known at ingest) and integerized exactly so the layers sum to
 * L·(b − w) (eng_pyramid_layer_budget, in policy_snapkv.c with the rest of
 * the family's shared pieces: adakv's pyramid mode and snapkv's pool sizing
 * use it too).
 *
 * Options: SnapKV's plus beta=20.  Parameters: i[0..3] as snapkv, f[0] beta.
 */
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
