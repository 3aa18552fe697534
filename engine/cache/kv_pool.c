/*
 * kv_pool.c: the KV cache pool: per layer, one arena of ragged head
 * segments (layout in cache.h), compaction after eviction, position modes.
 *
 * Memory is allocated once at init: n_layer arenas plus one spare arena for
 * compaction, so eviction never allocates.  Compaction writes the survivors
 * of every head of one layer into the spare arena, in order, then swaps the
 * spare with the layer: the free rows are spread evenly over the heads so
 * each regains room for the next chunk.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cache/kv_pod.h"
#include "kernels/rope.h"

static void
kv_layer_free(struct eng_kv_layer *L)
{
	free(L->off);
	free(L->len);
	free(L->cap);
	free(L->pos);
	free(L->score);
	free(L->k);
	free(L->kr);
	free(L->v);
	free(L->bias);
	memset(L, 0, sizeof(*L));
}

/* Rows on 64-byte lines (a snapshot load writes them with streaming
 * stores, kernels/rope_rows.h); NULL when out of memory. */
static float *
kv_rows_alloc(size_t floats)
{
	void *p = NULL;
	if (posix_memalign(&p, 64, (floats ? floats : 1) * sizeof(float)))
		return NULL;
	return p;
}

static int
kv_layer_alloc(struct eng_kv_layer *L, int n_head, int64_t rows, int head_dim)
{
	size_t r = (size_t)rows, e = r * (size_t)head_dim;
	L->off = calloc((size_t)n_head, sizeof(int64_t));
	L->len = calloc((size_t)n_head, sizeof(int64_t));
	L->cap = calloc((size_t)n_head, sizeof(int64_t));
	L->pos = malloc(r * sizeof(uint32_t));
	L->score = malloc(r * sizeof(float));
	L->k = kv_rows_alloc(e);
	L->kr = kv_rows_alloc(e);
	L->v = kv_rows_alloc(e);
	L->bias = calloc(r ? r : 1, sizeof(float));
	if (!L->off || !L->len || !L->cap || !L->pos || !L->score || !L->k || !L->kr || !L->v ||
	    !L->bias)
		return ENG_ERR_NOMEM;
	return 0;
}

/* Even split of the layer's rows into head segments, all empty. */
static void
kv_layer_reset(struct eng_kv_layer *L, int n_head, int64_t rows)
{
	int64_t per = rows / n_head;
	int m;
	for (m = 0; m < n_head; m++) {
		L->off[m] = m * per;
		L->len[m] = 0;
		L->cap[m] = m == n_head - 1 ? rows - m * per : per;
	}
}

int
eng_kv_init(struct eng_kv **out, const struct eng_model *m, int64_t rows_per_head)
{
	struct eng_kv *kv;
	int l;

	*out = NULL;
	if (rows_per_head <= 0 || rows_per_head > (INT64_C(1) << 32) / m->hp.n_head_kv)
		return ENG_ERR_ARG;
	kv = calloc(1, sizeof(*kv));
	if (!kv)
		return ENG_ERR_NOMEM;
	kv->n_layer = m->hp.n_layer;
	kv->n_head_kv = m->hp.n_head_kv;
	kv->head_dim = m->hp.head_dim;
	kv->rope_base = m->hp.rope_base;
	kv->rope_freqs = m->hp.rope_freqs;
	kv->rope_style = m->hp.rope_style;
	kv->rows = rows_per_head * m->hp.n_head_kv;
	kv->layer = calloc((size_t)kv->n_layer, sizeof(*kv->layer));
	if (!kv->layer)
		goto oom;
	for (l = 0; l < kv->n_layer; l++)
		if (kv_layer_alloc(&kv->layer[l], kv->n_head_kv, kv->rows, kv->head_dim))
			goto oom;
	if (kv_layer_alloc(&kv->spare, kv->n_head_kv, kv->rows, kv->head_dim))
		goto oom;
	eng_kv_clear(kv);
	*out = kv;
	return 0;
oom:
	eng_kv_free(kv);
	return ENG_ERR_NOMEM;
}

int
eng_kv_reuse(struct eng_kv *kv, const struct eng_model *m, int64_t rows_per_head)
{
	if (!kv || kv->n_layer != m->hp.n_layer || kv->n_head_kv != m->hp.n_head_kv ||
	    kv->head_dim != m->hp.head_dim || rows_per_head <= 0 ||
	    rows_per_head > kv->rows / kv->n_head_kv)
		return ENG_ERR_ARG;
	/* the model's RoPE, as eng_kv_init takes it (the same model, or one of
	 * its shape: nothing else of the old contents is read again); the
	 * kept angles only while it is the same */
	if (kv->rope_base != m->hp.rope_base || kv->rope_freqs != m->hp.rope_freqs ||
	    kv->rope_style != m->hp.rope_style) {
		free(kv->rope_table);
		kv->rope_table = NULL;
		kv->rope_n = 0;
	}
	kv->rope_base = m->hp.rope_base;
	kv->rope_freqs = m->hp.rope_freqs;
	kv->rope_style = m->hp.rope_style;
	eng_kv_clear(kv);
	return 0;
}

uint64_t
eng_kv_bytes(const struct eng_kv *kv)
{
	uint64_t row;
	if (!kv)
		return 0;
	row = 3 * (uint64_t)kv->head_dim * sizeof(float) + sizeof(uint32_t) +
	    2 * sizeof(float); /* k, kr, v; pos, score, bias */
	return (uint64_t)kv->n_layer * (uint64_t)kv->rows * row;
}

void
eng_kv_free(struct eng_kv *kv)
{
	int l;
	if (!kv)
		return;
	if (kv->layer)
		for (l = 0; l < kv->n_layer; l++)
			kv_layer_free(&kv->layer[l]);
	kv_layer_free(&kv->spare);
	eng_kv_drop_pod(kv);
	free(kv->rope_table);
	free(kv->layer);
	free(kv);
}

void
eng_kv_clear(struct eng_kv *kv)
{
	int l;
	for (l = 0; l < kv->n_layer; l++)
		kv_layer_reset(&kv->layer[l], kv->n_head_kv, kv->rows);
	kv->next_pos = 0;
	kv->has_bias = 0;
	eng_kv_drop_pod(kv);
}

int64_t
eng_kv_len(const struct eng_kv *kv, int layer, int head)
{
	return kv->layer[layer].len[head];
}

int64_t
eng_kv_layer_units(const struct eng_kv *kv, int layer)
{
	int64_t n = 0;
	int m;
	for (m = 0; m < kv->n_head_kv; m++)
		n += kv->layer[layer].len[m];
	return n;
}

uint32_t
eng_kv_rope_pos(const struct eng_kv *kv, int layer, int head)
{
	if (kv->pos_mode == ENG_POS_SLOT)
		return (uint32_t)kv->layer[layer].len[head];
	return kv->next_pos;
}

/* Rotate one pre-RoPE key to position p (kernels/rope.h, with the model's
 * base, frequency factors and style, as the forward pass's rope op does). */
static void
kv_rotate(const struct eng_kv *kv, float *dst, const float *src, uint32_t p)
{
	kern_rope_head_at(dst, src, p, kern_rope_theta_scale(kv->rope_base, kv->head_dim),
	    kv->rope_freqs, kv->head_dim, kv->rope_style);
}

int
eng_kv_drop_tail(struct eng_kv *kv, int64_t n)
{
	int l, m;
	if (n < 0 || (int64_t)kv->next_pos < n)
		return ENG_ERR_ARG;
	for (l = 0; l < kv->n_layer; l++)
		for (m = 0; m < kv->n_head_kv; m++)
			if (kv->layer[l].len[m] < n)
				return ENG_ERR_ARG;
	/* appended units are always the last of each head segment */
	for (l = 0; l < kv->n_layer; l++)
		for (m = 0; m < kv->n_head_kv; m++)
			kv->layer[l].len[m] -= n;
	kv->next_pos -= (uint32_t)n;
	return 0;
}

int
eng_kv_compact(struct eng_kv *kv, int layer, const int64_t *const *keep,
    const int64_t *n_keep)
{
	struct eng_kv_layer *L = &kv->layer[layer], *S = &kv->spare, tmp;
	int64_t total = 0, free_rows, at = 0, i;
	int H = kv->n_head_kv, hd = kv->head_dim, m;
	size_t row = (size_t)hd * sizeof(float);

	for (m = 0; m < H; m++) {
		if (n_keep[m] < 0 || n_keep[m] > L->len[m])
			return ENG_ERR_ARG;
		for (i = 0; i < n_keep[m]; i++)
			if (keep[m][i] < 0 || keep[m][i] >= L->len[m] ||
			    (i && keep[m][i] <= keep[m][i - 1]))
				return ENG_ERR_ARG; /* indices must ascend */
		total += n_keep[m];
	}
	free_rows = kv->rows - total;
	for (m = 0; m < H; m++) {
		int64_t extra = free_rows / H + (m < free_rows % H);
		S->off[m] = at;
		S->len[m] = n_keep[m];
		S->cap[m] = n_keep[m] + extra;
		for (i = 0; i < n_keep[m]; i++) {
			int64_t src = L->off[m] + keep[m][i], dst = at + i;
			S->pos[dst] = L->pos[src];
			S->score[dst] = L->score[src];
			S->bias[dst] = L->bias[src];
			memcpy(S->k + dst * hd, L->k + src * hd, row);
			memcpy(S->v + dst * hd, L->v + src * hd, row);
			if (kv->pos_mode == ENG_POS_SLOT)
				kv_rotate(kv, S->kr + dst * hd, S->k + dst * hd, (uint32_t)i);
			else
				memcpy(S->kr + dst * hd, L->kr + src * hd, row);
		}
		at += S->cap[m];
	}
	tmp = *L;
	*L = *S;
	*S = tmp;
	return 0;
}

int
eng_kv_prepare_layer(struct eng_kv *kv, int layer, const int64_t *counts)
{
	struct eng_kv_layer *L;
	int64_t total = 0, free_rows, at = 0;
	int H = kv->n_head_kv, m;

	if (layer < 0 || layer >= kv->n_layer)
		return ENG_ERR_ARG;
	for (m = 0; m < H; m++) {
		if (counts[m] < 0 || counts[m] > kv->rows)
			return ENG_ERR_ARG;
		total += counts[m];
	}
	if (total > kv->rows)
		return ENG_ERR_ARG;
	L = &kv->layer[layer];
	free_rows = kv->rows - total;
	for (m = 0; m < H; m++) {
		L->off[m] = at;
		L->len[m] = counts[m];
		L->cap[m] = counts[m] + free_rows / H + (m < free_rows % H);
		at += L->cap[m];
	}
	return 0;
}

/* Rotated keys from the pre-RoPE ones: at the unit's position, or its slot;
 * through a table of angles (kv_rotate.c) when that is cheaper and there
 * is memory for it, else row by row (the same bits). */
static void
kv_derive_rotated(struct eng_kv *kv)
{
	uint32_t span = eng_kv_rope_span(kv, kv->pos_mode);
	int64_t rows = 0;
	float *table = NULL;
	int l;
	for (l = 0; l < kv->n_layer; l++)
		rows += eng_kv_layer_units(kv, l);
	if (eng_kv_rope_table_worth(span, rows) && (table = eng_kv_rope_table_alloc(kv, span)))
		eng_kv_rope_table_fill(kv, table, 0, span);
	for (l = 0; l < kv->n_layer; l++)
		eng_kv_derive_layer(kv, l, kv->pos_mode, table);
	free(table);
}

int
eng_kv_finish_load(struct eng_kv *kv, uint32_t next_pos, enum eng_pos_mode mode)
{
	int rc = eng_kv_set_loaded(kv, next_pos, mode);
	if (!rc)
		kv_derive_rotated(kv);
	return rc;
}

void
eng_kv_round_fp16(struct eng_kv *kv)
{
	int hd = kv->head_dim, l, m;
	int64_t i;
	for (l = 0; l < kv->n_layer; l++) {
		struct eng_kv_layer *L = &kv->layer[l];
		for (m = 0; m < kv->n_head_kv; m++)
			for (i = L->off[m] * hd; i < (L->off[m] + L->len[m]) * hd; i++) {
				L->k[i] = kern_f16_to_f32(kern_f32_to_f16(L->k[i]));
				L->v[i] = kern_f16_to_f32(kern_f32_to_f16(L->v[i]));
			}
	}
	kv_derive_rotated(kv);
}
