/*
 * kv_rotate.c: the pool's rotated keys derived from the pre-RoPE ones
 * through a table of angles per position (kernels/rope_rows.h), instead of
 * a cosine and a sine per pair of every row: a loaded pool's units share
 * next_pos positions at most, a layer × head × unit's worth of rows.  The
 * table holds kern_rope_angles' values, so the keys are those
 * kern_rope_head_at gives, bit for bit (contract in cache.h).  A table is
 * built only when it has no more positions than there are rows to rotate
 * (eng_kv_rope_table_worth), so a pool of few units at large positions (a
 * hostile snapshot header's next_pos) costs what it did row by row, never
 * a table of next_pos rows.
 */
#include <stdlib.h>

#include "engine/cache/cache.h"
#include "kernels/rope.h"
#include "kernels/rope_rows.h"

uint32_t
eng_kv_rope_span(const struct eng_kv *kv, enum eng_pos_mode mode)
{
	uint64_t most = 0;
	int64_t i;
	int l, m;
	for (l = 0; l < kv->n_layer; l++)
		for (m = 0; m < kv->n_head_kv; m++) {
			const struct eng_kv_layer *L = &kv->layer[l];
			if (mode == ENG_POS_SLOT) {
				most = (uint64_t)L->len[m] > most ? (uint64_t)L->len[m] : most;
				continue;
			}
			for (i = 0; i < L->len[m]; i++) /* ascending, but no need to rely on it */
				if ((uint64_t)L->pos[L->off[m] + i] + 1 > most)
					most = (uint64_t)L->pos[L->off[m] + i] + 1;
		}
	return most > UINT32_MAX ? UINT32_MAX : (uint32_t)most;
}

float *
eng_kv_rope_table_alloc(const struct eng_kv *kv, uint32_t n_pos)
{
	size_t n = (size_t)(n_pos ? n_pos : 1) * (size_t)KERN_ROPE_TABLE_ROW(kv->head_dim);
	return malloc(n * sizeof(float));
}

float *
eng_kv_rope_table_keep(struct eng_kv *kv, uint32_t n_pos, int *fill)
{
	*fill = 0;
	if (kv->rope_table && kv->rope_n >= n_pos)
		return kv->rope_table;
	free(kv->rope_table);
	kv->rope_n = 0; /* valid again once filled */
	if (!(kv->rope_table = eng_kv_rope_table_alloc(kv, n_pos)))
		return NULL;
	*fill = 1;
	return kv->rope_table;
}

void
eng_kv_rope_table_filled(struct eng_kv *kv, uint32_t n_pos)
{
	kv->rope_n = n_pos;
}

void
eng_kv_rope_table_fill(const struct eng_kv *kv, float *table, uint32_t p0, uint32_t n)
{
	kern_rope_table_fill(table + (size_t)p0 * (size_t)KERN_ROPE_TABLE_ROW(kv->head_dim), p0,
	    (int64_t)n, kern_rope_theta_scale(kv->rope_base, kv->head_dim), kv->rope_freqs,
	    kv->head_dim, kv->rope_style);
}

void
eng_kv_derive_layer(struct eng_kv *kv, int layer, enum eng_pos_mode mode, const float *table)
{
	struct eng_kv_layer *L = &kv->layer[layer];
	float ts = kern_rope_theta_scale(kv->rope_base, kv->head_dim);
	size_t hd = (size_t)kv->head_dim;
	int64_t i;
	int m;
	for (m = 0; m < kv->n_head_kv; m++) {
		size_t r = (size_t)L->off[m];
		if (table) {
			kern_rope_rows(L->kr + r * hd, L->k + r * hd, L->len[m],
			    mode == ENG_POS_SLOT ? NULL : L->pos + r, table, kv->head_dim,
			    kv->rope_style, 1);
			continue;
		}
		for (i = 0; i < L->len[m]; i++, r++) /* the angles made row by row */
			kern_rope_head_at(L->kr + r * hd, L->k + r * hd,
			    mode == ENG_POS_SLOT ? (uint32_t)i : L->pos[r], ts, kv->rope_freqs,
			    kv->head_dim, kv->rope_style);
	}
}

int
eng_kv_rope_table_worth(uint32_t n_pos, int64_t rows)
{
	return (int64_t)n_pos <= rows;
}

int
eng_kv_set_loaded(struct eng_kv *kv, uint32_t next_pos, enum eng_pos_mode mode)
{
	if (mode != ENG_POS_ORIGINAL && mode != ENG_POS_SLOT)
		return ENG_ERR_ARG;
	kv->next_pos = next_pos;
	kv->pos_mode = mode;
	return 0;
}
