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
	.t = &eng_arch_gguf_names,
	.opt = ENG_ARCH_BIAS_Q | ENG_ARCH_BIAS_K | ENG_ARCH_BIAS_V,
	.act = ENG_ACT_SILU_GATED,
	.rope = KERN_ROPE_NEOX,
	.enabled = 0,
};
