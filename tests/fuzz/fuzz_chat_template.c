/*
 * fuzz_chat_template.c: libFuzzer target for the chat template reader
 * (engine/model/chat_template.c): arbitrary bytes as a GGUF's
 * tokenizer.chat_template.  A template that is recognized must render a
 * few conversations with the length its size query gave; one that is not
 * must be refused with a reason.  Inputs are capped at 64 KiB.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct eng_chat_msg conv[] = {
		{ "system", "Be brief.", 9 }, { "user", " Hello ", 7 },
		{ "assistant", "Hi.\n", 4 }, { "user", "\xc2\xa0" "Bye\xe3\x80\x80", 8 },
	};
	struct eng_chat *c = NULL;
	char why[512] = "", buf[1024];
	size_t from;
	int64_t n;

	if (size > (64u << 10))
		return 0;
	if (eng_chat_init_text(&c, (const char *)data, size, "<s>", "</s>", NULL, why,
	    sizeof(why))) {
		if (!why[0])
			abort(); /* a refusal says why */
		return 0;
	}
	for (from = 0; from < 4; from++) {
		n = eng_chat_render(c, conv + from, 4 - from, (int)(from & 1), NULL, 0);
		if (n >= 0 && (size_t)n < sizeof(buf) &&
		    eng_chat_render(c, conv + from, 4 - from, (int)(from & 1), buf, sizeof(buf)) != n)
			abort();
		if (n >= 0 && (size_t)n < sizeof(buf) && strlen(buf) != (size_t)n)
			abort();
	}
	eng_chat_free(c);
	return 0;
}
