/*
 * arch_llama.c: the Llama architecture (SmolLM2 and the Llama family as
 * llama.cpp writes them to GGUF): no biases, no head norms, SwiGLU FFN,
 * adjacent-pair RoPE.  The one architecture kvsnap runs.
 */
#include "engine/engine_internal.h"

const struct eng_arch eng_arch_llama = {
	.name = "llama",
	.key_prefix = "llama",
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
	.opt = 0,
	.act = ENG_ACT_SILU_GATED,
	.rope = KERN_ROPE_NORM,
	.enabled = 1,
};
