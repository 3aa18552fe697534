/*
 * policy_adakv.c: Ada-KV head-wise budget allocation (spec/adakv.md §2.2,
 * exact mode, GQA-aware) over the SnapKV scorer, or PyramidKV's per-layer
 * budget (`scorer=pyramid`), under chunked prefill with the capacity clamp
 * of §4.2.
 *
 * Per layer: rank every candidate of every head by (score desc, position
 * asc, head asc) and count how many of the first H·b' each head owns (c_m);
 * mix with the uniform share, a_m = (1 − α)·c_m + α·b', integerize exactly
 * (largest fractional parts, lower head first); clamp to what each head has,
 * handing the excess on down the global ranking; each head keeps its a_m
 * best candidates plus its window.
 *
 * Options: SnapKV's plus alpha=0.2 scorer=snapkv|pyramid beta=20.
 * Parameters: i[0..3] as snapkv, i[4] scorer (0 snapkv, 1 pyramid),
 * f[0] beta, f[1] alpha.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cache/snapkv.h"

/* i[4]'s values, by index. */
static const char *const scorers[] = { "snapkv", "pyramid", NULL };

static int
adakv_set(struct eng_policy *p, const char *key, const char *val, char *why, size_t why_len)
{
	if (!key) {
		p->f[0] = 20.0;
		p->f[1] = 0.2;
		p->i[4] = 0;
		return eng_snapkv_set(p, NULL, NULL, why, why_len);
	}
	if (!strcmp(key, "alpha"))
		return eng_policy_parse_float(val, 0.0, 1.0, &p->f[1]);
	if (!strcmp(key, "beta"))
		return eng_policy_parse_float(val, 1.0, 1e6, &p->f[0]);
	if (!strcmp(key, "scorer"))
		return eng_policy_parse_name(val, scorers, &p->i[4]);
	return eng_snapkv_set(p, key, val, why, why_len);
}

static size_t
adakv_describe(const struct eng_policy *p, char *buf, size_t cap)
{
	size_t n = eng_snapkv_describe(p, buf, cap);
	int k = snprintf(n < cap ? buf + n : NULL, n < cap ? cap - n : 0,
	    ",alpha=%g,scorer=%s,beta=%g", p->f[1], scorers[p->i[4]], p->f[0]);
	return n + (k > 0 ? (size_t)k : 0);
}

/* One entry of the layer-wide ranking. */
struct ada_entry {
	float s;
	uint32_t pos;
	int head;
};

static int
ada_entry_cmp(const void *a, const void *b)
{
	const struct ada_entry *x = a, *y = b;
	if (x->s != y->s)
		return x->s > y->s ? -1 : 1;
	if (x->pos != y->pos)
		return x->pos < y->pos ? -1 : 1;
	return (x->head > y->head) - (x->head < y->head);
}

static int
adakv_select(struct eng_policy *p, struct eng_evict *e)
{
	int H = e->n_head_kv, m;
	int64_t b_sel, n_cand[64], a[64], n_rank = 0, tot_cand = 0, *cand[64], i;
	struct ada_entry *rank;
	int64_t *cbuf;

	if (H > 64)
		return ENG_ERR_ARG;
	b_sel = p->i[4] ? eng_pyramid_layer_budget(p, e->layer, e->n_layer, e->n_doc)
	    : p->budget - p->i[0];
	b_sel += e->is_last ? 0 : p->i[3];
	for (m = 0; m < H; m++)
		tot_cand += e->h[m].n;
	cbuf = malloc((size_t)(tot_cand ? tot_cand : 1) * sizeof(int64_t));
	rank = malloc((size_t)(tot_cand ? tot_cand : 1) * sizeof(*rank));
	if (!cbuf || !rank) {
		free(cbuf);
		free(rank);
		return ENG_ERR_NOMEM;
	}
	for (i = 0, m = 0; m < H; m++) {
		cand[m] = cbuf + i;
		n_cand[m] = eng_snapkv_score(p, e, m, cand[m]);
		i += n_cand[m];
	}
	for (m = 0; m < H; m++) {
		int64_t k;
		for (k = 0; k < n_cand[m]; k++) {
			rank[n_rank].s = e->h[m].score[cand[m][k]];
			rank[n_rank].pos = e->h[m].pos[cand[m][k]];
			rank[n_rank].head = m;
			n_rank++;
		}
	}
	qsort(rank, (size_t)n_rank, sizeof(*rank), ada_entry_cmp);
	if (n_rank <= (int64_t)H * b_sel) {
		for (m = 0; m < H; m++)
			a[m] = n_cand[m]; /* nothing to evict */
	} else {
		int64_t work[64];
		double frac[64];
		int *heads = malloc((size_t)n_rank * sizeof(int));
		if (!heads) {
			free(cbuf);
			free(rank);
			return ENG_ERR_NOMEM;
		}
		for (i = 0; i < n_rank; i++)
			heads[i] = rank[i].head;
		eng_adakv_allocate(n_cand, H, b_sel, p->f[1], heads, n_rank, a, work, frac);
		free(heads);
	}
	for (m = 0; m < H; m++)
		eng_snapkv_keep(&e->h[m], cand[m], n_cand[m], a[m]);
	free(cbuf);
	free(rank);
	return 0;
}

static int64_t
adakv_kept_per_head(const struct eng_policy *p, int64_t n_doc)
{
	return eng_snapkv_kept(p, n_doc, p->i[4] == 1);
}

const struct eng_policy_ops eng_policy_adakv = {
	.name = "adakv",
	.set = adakv_set,
	.check = eng_snapkv_check,
	.describe = adakv_describe,
	.stat_from = eng_snapkv_stat_from,
	.window = eng_snapkv_window,
	.select = adakv_select,
	.kept_per_head = adakv_kept_per_head,
};
