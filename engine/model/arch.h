/*
 * arch.h: an architecture's description, as the loader and the forward passes
 * read it (engine/model/arch.c, one engine/model/arch_NAME.c per
 * architecture); engine/ and its tests only.
 */
#ifndef ENGINE_MODEL_ARCH_H
#define ENGINE_MODEL_ARCH_H

#include <stddef.h> /* for size_t */

#include "kernels/kernels.h" /* for enum kern_rope_style */

/* The FFN's activation (forward.c, ref_forward.c). */
enum eng_act {
	ENG_ACT_SILU_GATED = 0 /* w_down · (silu(w_gate·x) ⊙ w_up·x): SwiGLU */
};

/* Optional per-layer tensors.  A bit set: every layer has the tensor (the
 * loader requires it, the forward passes apply it); clear: the loader
 * refuses a file that has it, so no tensor is ever silently ignored. */
enum eng_arch_opt {
	ENG_ARCH_BIAS_Q = 1 << 0, /* attention projection biases (blk.N.X.bias) */
	ENG_ARCH_BIAS_K = 1 << 1,
	ENG_ARCH_BIAS_V = 1 << 2,
	ENG_ARCH_BIAS_O = 1 << 3,
	ENG_ARCH_NORM_Q = 1 << 4, /* RMSNorm of every query head before RoPE */
	ENG_ARCH_NORM_K = 1 << 5  /* the same for every key head */
};

/* Tensor names: model-wide tensors by full name; per layer the stem X of
 * "blk.N.X.weight" (and of "blk.N.X.bias" for a bias). */
struct eng_arch_names {
	const char *tok_embd, *output, *output_norm;
	const char *attn_norm, *attn_q, *attn_k, *attn_v, *attn_out;
	const char *attn_q_norm, *attn_k_norm;
	const char *ffn_norm, *ffn_gate, *ffn_up, *ffn_down;
};

/* One architecture as the loader (model.c) and the forward passes
 * (forward.c, ref_forward.c) see it; the building blocks are RMSNorm, the
 * projections with optional biases and head norms, RoPE of a style, causal
 * GQA attention, an FFN of an activation, residuals. */
struct eng_arch {
	const char *name;       /* general.architecture */
	const char *key_prefix; /* hyperparameters: "<key_prefix>.block_count", … */
	const struct eng_arch_names *t; /* tensor names */
	unsigned opt;           /* enum eng_arch_opt bits */
	enum eng_act act;
	enum kern_rope_style rope;
	int enabled;            /* eng_model_open runs it; a disabled one opens
	                         * only with ENG_OPEN_DISABLED_ARCH (tests) */
};

/* llama.cpp's GGUF tensor names (its LLM_TENSOR table), which every
 * architecture described so far uses (engine/model/arch_names.c). */
extern const struct eng_arch_names eng_arch_gguf_names;
extern const struct eng_arch eng_arch_llama;
extern const struct eng_arch eng_arch_qwen2;
extern const struct eng_arch eng_arch_qwen3;

/* The description of architecture name[0..len), or NULL. */
const struct eng_arch *eng_arch_find(const char *name, size_t len);
/* "'a', 'b'": the enabled architectures' names, for refusals. */
void eng_arch_enabled_list(char *buf, size_t cap);

#endif /* ENGINE_MODEL_ARCH_H */
