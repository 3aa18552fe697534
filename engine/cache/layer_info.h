/*
 * layer_info.h: what a forward pass shows of one layer's attention over a
 * chunk (filled by engine/run/forward.c; read by the policies and by the
 * forward hooks of engine/run/ and engine/train/); engine/ and its tests
 * only.
 */
#ifndef ENGINE_CACHE_LAYER_INFO_H
#define ENGINE_CACHE_LAYER_INFO_H

#include <stdint.h> /* for int64_t */

/* What a hook sees after layer l's attention for one chunk. */
struct eng_fwd_layer_info {
	int64_t n_tok;       /* chunk length; its units are the last n_tok of each head */
	uint32_t chunk_end;  /* one past the chunk's last original position */
	/* Σ over chunk queries t >= stat_from of π[t][u], per query head h:
	 * stat[h * stat_stride + u], u indexing KV head h/g's list; NULL if
	 * the hook asked for none. */
	const float *stat;
	int64_t stat_stride;
	const float *qpre;   /* (n_tok, n_head*head_dim) chunk queries, pre-RoPE */
	const float *q;      /* (n_tok, n_head*head_dim) chunk queries, rotated */
	const float *kpre;   /* (n_tok, n_kv*head_dim) chunk keys, pre-RoPE */
	const float *v;      /* (n_tok, n_kv*head_dim) chunk values */
};

#endif /* ENGINE_CACHE_LAYER_INFO_H */
