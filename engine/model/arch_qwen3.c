/*
 * arch_qwen3.c: the Qwen3 shape (llama.cpp's GGUF names): Llama's blocks
 * plus an RMSNorm of every query and key head before RoPE (weights of
 * head_dim), no biases, NeoX-style (halves) RoPE.
 *
 * Enabled: both forward passes norm each head before RoPE, as llama.cpp
 * does, and the engine matches the reference pass on a tiny synthetic
 * model (tests/test_arch.c).  No Qwen3 weights are on PyPI, so no real file
 * is checked against llama.cpp here.  Real files also need the tokenizer's
 * 'qwen2' pre-tokenizer, a head_dim equal to n_embd / n_head (model.c
 * refuses other head layouts, e.g. Qwen3-0.6B's and 4B's, by name) and a
 * chat template kvsnap renders (Qwen3's <think> template is refused).
 */
#include "engine/model/arch.h"

const struct eng_arch eng_arch_qwen3 = {
	.name = "qwen3",
	.key_prefix = "qwen3",
	.t = &eng_arch_gguf_names,
	.opt = ENG_ARCH_NORM_Q | ENG_ARCH_NORM_K,
	.act = ENG_ACT_SILU_GATED,
	.rope = KERN_ROPE_NEOX,
	.enabled = 1,
};
