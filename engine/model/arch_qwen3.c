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
	.t = {
		.tok_embd = "token_embd.weight",
		.output = "output.weight",
		.output_norm = "output_norm.weight",
		.attn_norm = "attn_norm",
		.attn_q = "attn_q",
		.attn_k = "attn_k",
		.attn_v = "attn_v",
		.attn_out = "attn_output",
		.attn_q_norm = "attn_q_norm",
		.attn_k_norm = "attn_k_norm",
		.ffn_norm = "ffn_norm",
		.ffn_gate = "ffn_gate",
		.ffn_up = "ffn_up",
		.ffn_down = "ffn_down",
	},
	.opt = ENG_ARCH_NORM_Q | ENG_ARCH_NORM_K,
	.act = ENG_ACT_SILU_GATED,
	.rope = KERN_ROPE_NEOX,
	.enabled = 0,
};
