/*
 * arch_names.c: llama.cpp's GGUF tensor names (its LLM_TENSOR table), which
 * every architecture description so far points at (engine/model/arch_*.c).
 */
#include "engine/model/arch.h"

const struct eng_arch_names eng_arch_gguf_names = {
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
};
