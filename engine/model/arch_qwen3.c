/*
 * arch_qwen3.c: the Qwen3 shape (llama.cpp's GGUF names): Llama's blocks
 * plus an RMSNorm of every query and key head before RoPE (weights of
 * head_dim), no biases, NeoX-style (halves) RoPE.
 *
 * Not enabled, like arch_qwen2.c: the tests open it to prove the per-head
 * norms against the reference pass (tests/test_arch.c).
 */
#include "engine/engine_internal.h"

const struct eng_arch eng_arch_qwen3 = {
	.name = "qwen3",
	.key_prefix = "qwen3",
	.t = &eng_arch_gguf_names,
	.opt = ENG_ARCH_NORM_Q | ENG_ARCH_NORM_K,
	.act = ENG_ACT_SILU_GATED,
	.rope = KERN_ROPE_NEOX,
	.enabled = 0,
};
