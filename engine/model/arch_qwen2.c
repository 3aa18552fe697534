/*
 * arch_qwen2.c: the Qwen2 architecture (Qwen2 and Qwen2.5, as llama.cpp
 * writes them to GGUF): Llama's blocks plus q/k/v projection biases, with
 * NeoX-style (halves) RoPE.  Checked on the real Qwen2.5-Coder-1.5B-Instruct
 * against llama.cpp (tests/sh/qwen.sh) and on a tiny synthetic model
 * against the reference pass (tests/test_arch.c).
 *
 * Everything else comes from the file: the window (qwen2.context_length,
 * 32768), the RoPE base (1e6), GQA (12 query heads over 2 KV heads in the
 * 1.5B), tied output embeddings when there is no output.weight (the 0.5B
 * and smaller), the end-of-generation tokens (<|im_end|>, <|endoftext|>).
 */
#include "engine/model/arch.h"

const struct eng_arch eng_arch_qwen2 = {
	.name = "qwen2",
	.key_prefix = "qwen2",
	.t = &eng_arch_gguf_names,
	.opt = ENG_ARCH_BIAS_Q | ENG_ARCH_BIAS_K | ENG_ARCH_BIAS_V,
	.act = ENG_ACT_SILU_GATED,
	.rope = KERN_ROPE_NEOX,
	.enabled = 1,
};
