/*
 * kv_concat.c: several pools placed side by side in one (library
 * questions over several documents' snapshots, service/library.c): each
 * part's units follow the part before it, their positions re-laid one
 * after another, and the rotated keys derived again at the new positions
 * from the pre-RoPE keys every pool keeps (as a snapshot's load does), so
 * one question prefilled after them attends to every part at once.
 *
 * Every part's snapshot begins with the same template prefix (the system
 * turn and the user header: kvzip keeps it as its sinks); only the first
 * part's is kept, the others' units before skip[i] are left out, so the
 * cache reads as one user turn holding the documents one after another.
 * The parts were read apart: a unit of one never attended to another
 * part (nothing is recomputed; no text is read again).
 */
#include <stdlib.h>
#include <string.h>

#include "engine/cache/cache.h"

int
eng_kv_concat(struct eng_kv **out, const struct eng_model *m, struct eng_kv *const *parts,
    const uint32_t *skip, int n, int64_t n_extra)
{
	struct eng_kv *kv = NULL;
	int64_t *counts = NULL, per_head = 0, need;
	uint32_t base, next = 0;
	int H, hd, L, i, l, h, rc;

	*out = NULL;
	if (n < 1 || n_extra < 0)
		return ENG_ERR_ARG;
	H = m->hp.n_head_kv;
	hd = m->hp.head_dim;
	L = m->hp.n_layer;
	for (i = 0; i < n; i++) {
		const struct eng_kv *p = parts[i];
		if (p->n_layer != L || p->n_head_kv != H || p->head_dim != hd || p->pod ||
		    p->pos_mode != ENG_POS_ORIGINAL || skip[i] > p->next_pos)
			return ENG_ERR_ARG; /* slot positions and PoD layouts do not concatenate */
		next += p->next_pos - (i ? skip[i] : 0);
	}
	counts = calloc((size_t)H, sizeof(*counts));
	if (!counts)
		return ENG_ERR_NOMEM;
	/* rows per head: the fullest layer's units spread over its heads, plus
	 * n_extra free rows for every head (prepare_layer spreads the rest) */
	for (l = 0; l < L; l++) {
		int64_t tot = 0;
		for (i = 0; i < n; i++)
			for (h = 0; h < H; h++) {
				const struct eng_kv_layer *S = &parts[i]->layer[l];
				int64_t k;
				for (k = 0; k < S->len[h]; k++)
					tot += !i || S->pos[S->off[h] + k] >= skip[i];
			}
		need = (tot + H - 1) / H;
		if (need > per_head)
			per_head = need;
	}
	if ((rc = eng_kv_init(&kv, m, per_head + n_extra)))
		goto out;
	for (l = 0; l < L; l++) {
		struct eng_kv_layer *D = &kv->layer[l];
		for (h = 0; h < H; h++) {
			counts[h] = 0;
			for (i = 0; i < n; i++) {
				const struct eng_kv_layer *S = &parts[i]->layer[l];
				int64_t k;
				for (k = 0; k < S->len[h]; k++)
					counts[h] += !i || S->pos[S->off[h] + k] >= skip[i];
			}
		}
		if ((rc = eng_kv_prepare_layer(kv, l, counts)))
			goto out;
		for (h = 0; h < H; h++) {
			int64_t at = D->off[h];
			base = 0;
			for (i = 0; i < n; i++) {
				const struct eng_kv_layer *S = &parts[i]->layer[l];
				uint32_t drop = i ? skip[i] : 0;
				int64_t k;
				for (k = 0; k < S->len[h]; k++) {
					int64_t r = S->off[h] + k;
					if (S->pos[r] < drop)
						continue;
					/* positions ascend within a head, part after part */
					D->pos[at] = S->pos[r] - drop + base;
					D->score[at] = S->score[r];
					/* a refit part's biases go along (0: a part without) */
					D->bias[at] = parts[i]->has_bias ? S->bias[r] : 0.0f;
					memcpy(D->k + at * hd, S->k + r * hd, (size_t)hd * sizeof(float));
					memcpy(D->v + at * hd, S->v + r * hd, (size_t)hd * sizeof(float));
					at++;
				}
				base += parts[i]->next_pos - drop;
			}
		}
	}
	if ((rc = eng_kv_finish_load(kv, next, ENG_POS_ORIGINAL)))
		goto out;
	for (i = 0; i < n; i++)
		kv->has_bias |= parts[i]->has_bias != 0;
	*out = kv;
	kv = NULL;
out:
	free(counts);
	eng_kv_free(kv);
	return rc;
}
