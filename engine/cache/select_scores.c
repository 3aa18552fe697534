/*
 * select_scores.c: one selection over every layer and head of a pool by the
 * scores its units carry (KVzip's after a segment, docs/KVZIP.md; Locret's
 * with alloc=global, docs/POLICIES.md).
 *
 * The pool is cut to `target` units per head on average, sinks included;
 * sinks (each head's leading units below position n_sink) are always kept,
 * and so are units at positions >= keep_from (Locret's stabilizers), which
 * are not counted.  Three ways to spend the budget B = (target − sinks) per
 * head:
 *   global  one ranking of every unit of every layer and head (the paper's
 *           non-uniform default, §3.3), after a floor of ⌊floor·B⌋ units that
 *           every head keeps first; no layer above cap_layer units;
 *   uniform each head keeps its B best;
 *   adakv   per layer, Ada-KV's allocation (eng_adakv_allocate) of H·B over
 *           the heads by the layer's ranking, uniform share alpha.
 * Ties: score desc, then position asc, then layer, then head.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cache/policy_ops.h"
#include "engine/cache/select.h"

struct kz_ent {
	float score;
	uint32_t pos;
	int layer, head;
	int64_t idx; /* index in the head's list */
};

static int
kz_cmp(const void *a, const void *b)
{
	const struct kz_ent *x = a, *y = b;
	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	if (x->pos != y->pos)
		return x->pos < y->pos ? -1 : 1;
	if (x->layer != y->layer)
		return x->layer < y->layer ? -1 : 1;
	return (x->head > y->head) - (x->head < y->head);
}

/* Sinks of a head: its leading units with positions below n_sink. */
static int64_t
kz_head_sinks(const struct eng_kv_layer *L, int m, int64_t n_sink)
{
	int64_t s = 0;
	while (s < L->len[m] && L->pos[L->off[m] + s] < (uint32_t)n_sink)
		s++;
	return s;
}

/* Units of a head at positions >= keep_from: its trailing ones. */
static int64_t
kz_head_tail(const struct eng_kv_layer *L, int m, int64_t from, uint32_t keep_from)
{
	int64_t t = 0;
	while (L->len[m] - t > from && L->pos[L->off[m] + L->len[m] - t - 1] >= keep_from)
		t++;
	return t;
}

/* Mark, for alloc=adakv, each head's allocation in layer l: a[m] of the
 * layer's entries (ent[lo..hi), already ranked) per head. */
static void
kz_adakv(double alpha, const struct kz_ent *ent, int64_t lo, int64_t hi, int H,
    int64_t b, const int64_t *n_cand, uint8_t *take, int *rank_head, int64_t *a,
    int64_t *work, double *frac)
{
	int64_t i, seen[64] = { 0 };
	for (i = lo; i < hi; i++)
		rank_head[i - lo] = ent[i].head;
	eng_adakv_allocate(n_cand, H, b, alpha, rank_head, hi - lo, a, work, frac);
	for (i = lo; i < hi; i++)
		if (seen[ent[i].head] < a[ent[i].head]) {
			seen[ent[i].head]++;
			take[i] = 1;
		}
}

int
eng_select_scores(struct eng_kv *kv, const struct eng_select *sel, int64_t target)
{
	int NL = kv->n_layer, H = kv->n_head_kv, l, m;
	int64_t n_sink = sel->n_sink, cap_layer = sel->cap_layer;
	int64_t b = target > n_sink ? target - n_sink : 0, n_ent = 0, i, *ns = NULL, *nt = NULL;
	int64_t *per_head = NULL, *per_layer = NULL, *keep = NULL, **keep_ptr = NULL, *n_keep = NULL;
	int64_t floor_b = (int64_t)floor(sel->floor * (double)b), total;
	struct kz_ent *ent = NULL;
	uint8_t *take = NULL;
	int *rank_head = NULL;
	int rc = ENG_ERR_NOMEM;

	if (H > 64)
		return ENG_ERR_ARG;
	for (l = 0; l < NL; l++)
		n_ent += eng_kv_layer_units(kv, l);
	ent = malloc((size_t)(n_ent + 1) * sizeof(*ent));
	take = calloc((size_t)(n_ent + 1), 1);
	rank_head = malloc((size_t)(n_ent + 1) * sizeof(int));
	ns = malloc((size_t)NL * (size_t)H * sizeof(int64_t));
	nt = malloc((size_t)NL * (size_t)H * sizeof(int64_t));
	per_head = calloc((size_t)NL * (size_t)H, sizeof(int64_t));
	per_layer = calloc((size_t)NL, sizeof(int64_t));
	keep = malloc((size_t)(kv->rows + 1) * sizeof(int64_t));
	keep_ptr = malloc((size_t)H * sizeof(*keep_ptr));
	n_keep = malloc((size_t)H * sizeof(int64_t));
	if (!ent || !take || !rank_head || !ns || !nt || !per_head || !per_layer || !keep ||
	    !keep_ptr || !n_keep)
		goto out;
	/* candidates: every unit but the sinks and the tail, ranked per layer
	 * then overall */
	n_ent = 0;
	for (l = 0; l < NL; l++) {
		const struct eng_kv_layer *L = &kv->layer[l];
		for (m = 0; m < H; m++) {
			int64_t s = kz_head_sinks(L, m, n_sink);
			int64_t t = kz_head_tail(L, m, s, sel->keep_from);
			ns[(size_t)l * (size_t)H + (size_t)m] = s;
			nt[(size_t)l * (size_t)H + (size_t)m] = t;
			for (i = s; i < L->len[m] - t; i++) {
				struct kz_ent *e = &ent[n_ent++];
				e->score = L->score[L->off[m] + i];
				e->pos = L->pos[L->off[m] + i];
				e->layer = l;
				e->head = m;
				e->idx = i;
			}
		}
	}
	if (sel->alloc == ENG_ALLOC_ADAKV) {
		int64_t lo = 0, hi, a[64], work[64], n_cand[64];
		double frac[64];
		for (l = 0; l < NL; l++) {
			for (m = 0; m < H; m++)
				n_cand[m] = kv->layer[l].len[m] - ns[(size_t)l * (size_t)H + (size_t)m] -
				    nt[(size_t)l * (size_t)H + (size_t)m];
			for (hi = lo; hi < n_ent && ent[hi].layer == l; hi++)
				;
			qsort(ent + lo, (size_t)(hi - lo), sizeof(*ent), kz_cmp);
			kz_adakv(sel->alpha, ent, lo, hi, H, b, n_cand, take, rank_head, a, work, frac);
			lo = hi;
		}
	} else {
		qsort(ent, (size_t)n_ent, sizeof(*ent), kz_cmp);
		/* uniform: every head its b best; global: its floor first */
		int64_t first = sel->alloc == ENG_ALLOC_UNIFORM ? b : floor_b;
		total = (int64_t)NL * (int64_t)H * b;
		for (i = 0; i < n_ent; i++) {
			int64_t *c = &per_head[(size_t)ent[i].layer * (size_t)H + (size_t)ent[i].head];
			if (*c < first) {
				(*c)++;
				per_layer[ent[i].layer]++;
				take[i] = 1;
				total--;
			}
		}
		for (i = 0; sel->alloc == ENG_ALLOC_GLOBAL && i < n_ent && total > 0; i++) {
			if (take[i] || per_layer[ent[i].layer] + (int64_t)H * n_sink >= cap_layer)
				continue;
			take[i] = 1;
			per_layer[ent[i].layer]++;
			total--;
		}
	}
	/* keep lists per layer: sinks + taken + tail, ascending; compact */
	rc = 0;
	for (l = 0; !rc && l < NL; l++) {
		int64_t at = 0;
		for (m = 0; m < H; m++) {
			keep_ptr[m] = keep + at;
			n_keep[m] = ns[(size_t)l * (size_t)H + (size_t)m];
			for (i = 0; i < n_keep[m]; i++)
				keep[at + i] = i;
			at += kv->layer[l].len[m];
		}
		for (i = 0; i < n_ent; i++)
			if (take[i] && ent[i].layer == l) {
				m = ent[i].head;
				keep_ptr[m][n_keep[m]++] = ent[i].idx;
			}
		for (m = 0; m < H; m++) {
			int64_t t = nt[(size_t)l * (size_t)H + (size_t)m];
			for (i = kv->layer[l].len[m] - t; i < kv->layer[l].len[m]; i++)
				keep_ptr[m][n_keep[m]++] = i;
			eng_policy_sort_idx(keep_ptr[m], n_keep[m]);
		}
		if (sel->before_compact)
			rc = sel->before_compact(sel->arg, kv, l, (const int64_t *const *)keep_ptr, n_keep);
		if (!rc)
			rc = eng_kv_compact(kv, l, (const int64_t *const *)keep_ptr, n_keep);
	}
out:
	free(ent);
	free(take);
	free(rank_head);
	free(ns);
	free(nt);
	free(per_head);
	free(per_layer);
	free(keep);
	free(keep_ptr);
	free(n_keep);
	return rc;
}

