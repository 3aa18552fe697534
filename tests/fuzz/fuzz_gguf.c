/*
 * fuzz_gguf.c: libFuzzer target for the GGUF reader and the model and
 * tokenizer loaders on top of it.  Input is capped at 1 MiB; the reader must
 * refuse or accept without reading out of bounds (ASan) or leaking (LSan).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct eng_gguf *g = NULL;
	struct eng_tok *tok = NULL;
	uint8_t *copy;
	char why[256];
	uint64_t i, v;
	float f;

	if (size > (1u << 20))
		return 0;
	copy = malloc(size ? size : 1); /* exact size, so overreads are caught */
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	if (eng_gguf_open_mem(&g, copy, size, why, sizeof(why)) == 0) {
		/* touch everything the parser claims is there */
		for (i = 0; i < g->n_kv; i++) {
			(void)eng_gguf_get_u64(g, "general.alignment", &v);
			(void)eng_gguf_get_f32(g, "llama.rope.freq_base", &f);
		}
		for (i = 0; i < g->n_tensors; i++) {
			const struct eng_gguf_tensor *t = &g->tensors[i];
			volatile uint8_t sink = 0;
			if (t->n_bytes)
				sink ^= ((const uint8_t *)t->data)[t->n_bytes - 1];
			(void)sink;
		}
		if (eng_tok_init(&tok, g, why, sizeof(why)) == 0) {
			int32_t ids[64];
			/* spaces, digits, non-ASCII and a special: every pre-tokenizer
			 * and SentencePiece's prefix and byte fallback get work */
			static const char txt[] = "Hello world 2024! <|im_end|>  caf\xc3\xa9 \xe4\xb8\xad"
			    "\t\n\n<|user|> x'S \xff";
			(void)eng_tok_encode(tok, "Hello world 2024! <|im_end|>", 28, 1, ids, 64);
			(void)eng_tok_encode(tok, txt, sizeof(txt) - 1, 0, ids, 64);
			eng_tok_free(tok);
		}
		eng_gguf_close(g);
	}
	free(copy);
	return 0;
}
