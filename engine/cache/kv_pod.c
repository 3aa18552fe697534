/*
 * kv_pod.c: a cache pool's PoD layout (spec/pod.md §3.3): which layer is
 * each (layer, KV head)'s anchor, the proximal windows, and the trimming of
 * non-anchor keys that no future query will read.
 *
 * The arena keeps a row for every unit in every layer (one layout for all
 * policies); a non-anchor layer's keys of units that have left the windows
 * are overwritten with NaN instead of being freed.  Attention discards
 * those logits (kernels.h), so a NaN that reached an output would show a
 * read that must not happen, and snapshots store only the k_prefix +
 * k_suffix rows that remain (spec/pod.md §3.6).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cache/kv_pod.h"

int
eng_kv_set_pod(struct eng_kv *kv, const uint8_t *anc, uint32_t n_s, uint32_t n_r,
    int distant_own)
{
	struct eng_kv_pod *pod;
	size_t n = (size_t)kv->n_head_kv * (size_t)kv->n_layer;
	int m, l;

	if (!anc || n_r < 1 || kv->pos_mode != ENG_POS_ORIGINAL)
		return ENG_ERR_ARG;
	for (m = 0; m < kv->n_head_kv; m++)
		for (l = 0; l < kv->n_layer; l++) {
			int a = anc[m * kv->n_layer + l];
			if (l == 0 ? a != 0 : a != l && a != anc[m * kv->n_layer + l - 1])
				return ENG_ERR_ARG; /* not a block map */
		}
	pod = calloc(1, sizeof(*pod));
	if (!pod || !(pod->anc = malloc(n))) {
		free(pod);
		return ENG_ERR_NOMEM;
	}
	memcpy(pod->anc, anc, n);
	pod->n_s = n_s;
	pod->n_r = n_r;
	pod->distant_own = distant_own != 0;
	eng_kv_drop_pod(kv);
	kv->pod = pod;
	return 0;
}

void
eng_kv_drop_pod(struct eng_kv *kv)
{
	if (kv->pod)
		free(kv->pod->anc);
	free(kv->pod);
	kv->pod = NULL;
}

int
eng_kv_pod_anchor(const struct eng_kv *kv, int layer, int head)
{
	return kv->pod ? kv->pod->anc[head * kv->n_layer + layer] : layer;
}

/* First position of the recent window of a query at position e. */
static uint32_t
pod_recent_from(const struct eng_kv *kv, uint32_t e)
{
	uint32_t lo = kv->pod->n_s;
	uint32_t r = e + 1 > kv->pod->n_r ? e + 1 - kv->pod->n_r : 0;
	return r > lo ? r : lo;
}

/* eng_kv_pod_key_rows for a next query at position e. */
static void
pod_key_rows(const struct eng_kv *kv, int layer, int head, uint32_t e, int64_t *k_prefix,
    int64_t *k_suffix)
{
	const struct eng_kv_layer *L = &kv->layer[layer];
	const uint32_t *pos = L->pos + L->off[head];
	int64_t n = L->len[head], a = 0, b = n;
	uint32_t from;

	if (eng_kv_pod_anchor(kv, layer, head) == layer) {
		*k_prefix = n;
		*k_suffix = 0;
		return;
	}
	from = pod_recent_from(kv, e);
	while (a < n && pos[a] < kv->pod->n_s)
		a++;
	while (b > a && pos[b - 1] >= from)
		b--;
	*k_prefix = a;
	*k_suffix = n - b;
}

void
eng_kv_pod_key_rows(const struct eng_kv *kv, int layer, int head, int64_t *k_prefix,
    int64_t *k_suffix)
{
	pod_key_rows(kv, layer, head, kv->next_pos, k_prefix, k_suffix);
}

void
eng_kv_pod_trim(struct eng_kv *kv, int layer, int head, uint32_t e)
{
	struct eng_kv_layer *L = &kv->layer[layer];
	int64_t kp, ks, u, d, hd = kv->head_dim;

	pod_key_rows(kv, layer, head, e, &kp, &ks);
	for (u = L->off[head] + kp; u < L->off[head] + L->len[head] - ks; u++)
		for (d = 0; d < hd; d++) {
			L->k[u * hd + d] = NAN;
			L->kr[u * hd + d] = NAN;
		}
}
