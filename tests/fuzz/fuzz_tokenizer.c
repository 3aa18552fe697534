/*
 * fuzz_tokenizer.c: libFuzzer target for the tokenizer: arbitrary bytes are
 * encoded (with and without special-token parsing) by the real model's
 * tokenizer, then decoded.  The model is loaded once (KVSNAP_MODEL or the
 * bundled one); inputs are capped at 64 KiB.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct eng_gguf *fz_gguf;
static struct eng_tok *fz_tok;

static int
fz_init(void)
{
	const char *p = getenv("KVSNAP_MODEL");
	char why[256];
	if (fz_tok)
		return 0;
	if (eng_gguf_open(&fz_gguf, p ? p : "models/SmolLM2-135M-Instruct.Q4_1.gguf", why,
	    sizeof(why)) || eng_tok_init(&fz_tok, fz_gguf, why, sizeof(why)))
		abort(); /* the harness needs the model: fail loudly, not silently */
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int32_t ids[4096];
	char buf[512];
	int64_t n, i;
	int special;

	if (size > (64u << 10))
		return 0;
	fz_init();
	for (special = 0; special < 2; special++) {
		n = eng_tok_encode(fz_tok, (const char *)data, size, special, ids, 4096);
		if (n < 0 || n > 4096)
			continue;
		for (i = 0; i < n; i++)
			if (eng_tok_decode(fz_tok, ids[i], special, buf, sizeof(buf)) < 0)
				abort(); /* an id we produced must decode */
	}
	return 0;
}
