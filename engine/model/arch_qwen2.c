/*
 * arch_qwen2.c: the Qwen2 shape (llama.cpp's GGUF names): Llama's blocks
 * plus q/k/v projection biases, with NeoX-style (halves) RoPE.
 *
 * Not enabled: nothing but the tests opens it (ENG_OPEN_DISABLED_ARCH).  It
 * proves the architecture seam on a tiny synthetic model checked against
 * the reference pass (tests/test_arch.c); running real Qwen2 files would
 * also need their tokenizer's pre-tokenizer and chat template.
 */
#include "engine/engine_internal.h"

const struct eng_arch eng_arch_qwen2 = {
	.name = "qwen2",
	.key_prefix = "qwen2",
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
	.opt = ENG_ARCH_BIAS_Q | ENG_ARCH_BIAS_K | ENG_ARCH_BIAS_V,
	.act = ENG_ACT_SILU_GATED,
	.rope = KERN_ROPE_NEOX,
	.enabled = 0,
};
