/*
 * arch_llama.c: the Llama architecture (SmolLM2 and the Llama family as
 * llama.cpp writes them to GGUF): no biases, no head norms, SwiGLU FFN,
 * adjacent-pair RoPE.  Llama 3.1+ files carry rope_freqs.weight (llama.cpp's
 * frequency factors: the llama3 RoPE scaling), which model.c loads for any
 * architecture and every rotation applies (kernels/rope.h).
 */
#include "engine/model/arch.h"

const struct eng_arch eng_arch_llama = {
	.name = "llama",
	.key_prefix = "llama",
	.t = &eng_arch_gguf_names,
	.opt = 0,
	.act = ENG_ACT_SILU_GATED,
	.rope = KERN_ROPE_NORM,
	.enabled = 1,
};
