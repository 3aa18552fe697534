/*
 * chat.c: the ChatML prompt SmolLM2-Instruct's chat template renders
 * (spec/model.md section 6.2).
 *
 * The GGUF's Jinja template emits a default system turn when the first
 * message is not a system message, then every message as
 * "<|im_start|>{role}\n{content}<|im_end|>\n", then "<|im_start|>assistant\n"
 * for a generation prompt.  eng_chat_render() produces exactly that for one
 * optional system message and one user message, with snprintf semantics.
 */
#include <string.h> /* for strlen, memcpy */

#include "engine.h"

#define ENG_CHAT_DEFAULT_SYSTEM \
	"You are a helpful AI assistant named SmolLM, trained by Hugging Face"

/* Output cursor: writes what fits, counts everything. */
struct eng_chat_out {
	char *buf;
	size_t cap, n;
};

/* Append s[0..len) (truncating to leave room for the NUL). */
static void
eng_chat_put(struct eng_chat_out *o, const char *s, size_t len)
{
	if (o->n < o->cap) {
		size_t room = o->cap - 1 - o->n;
		memcpy(o->buf + o->n, s, len < room ? len : room);
	}
	o->n += len;
}

/* Append a NUL-terminated string. */
static void
eng_chat_puts(struct eng_chat_out *o, const char *s)
{
	eng_chat_put(o, s, strlen(s));
}

/* One turn: <|im_start|>role\ncontent<|im_end|>\n */
static void
eng_chat_turn(struct eng_chat_out *o, const char *role, const char *content)
{
	eng_chat_puts(o, "<|im_start|>");
	eng_chat_puts(o, role);
	eng_chat_puts(o, "\n");
	eng_chat_puts(o, content);
	eng_chat_puts(o, "<|im_end|>\n");
}

/* Render system (default when NULL) + user (+ assistant header) as ChatML. */
size_t
eng_chat_render(const char *system, const char *user, int add_assistant, char *buf,
    size_t cap)
{
	struct eng_chat_out o;

	o.buf = buf;
	o.cap = buf ? cap : 0;
	o.n = 0;
	eng_chat_turn(&o, "system", system ? system : ENG_CHAT_DEFAULT_SYSTEM);
	eng_chat_turn(&o, "user", user ? user : "");
	if (add_assistant)
		eng_chat_puts(&o, "<|im_start|>assistant\n");
	if (o.cap)
		o.buf[o.n < o.cap ? o.n : o.cap - 1] = '\0';
	return o.n;
}
