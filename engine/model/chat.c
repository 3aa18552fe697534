/*
 * chat.c: the ChatML prompt SmolLM2-Instruct's chat template renders
 * (spec/model.md section 6.2).
 *
 * The GGUF's Jinja template emits a default system turn when the first
 * message is not a system message, then every message as
 * "<|im_start|>{role}\n{content}<|im_end|>\n", then "<|im_start|>assistant\n"
 * for a generation prompt.  eng_chat_render() produces exactly that for one
 * optional system message and one user message, with snprintf semantics;
 * eng_chat_messages_ids() tokenizes it for a whole conversation.
 */
#include <stdlib.h> /* for realloc, free */
#include <string.h> /* for strlen, memcpy */

#include "engine/engine.h"

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

/* Append the ids of text[0..len) to a malloc'd array (grown as needed). */
static int
eng_chat_append(const struct eng_tok *t, const char *text, size_t len, int special,
    int32_t **ids, int64_t *n)
{
	int64_t cap = *n + (int64_t)len + 8, r;
	int32_t *nb = realloc(*ids, (size_t)cap * sizeof(int32_t));
	if (!nb)
		return ENG_ERR_NOMEM;
	*ids = nb;
	r = eng_tok_encode(t, text, len, special, *ids + *n, cap - *n);
	if (r < 0)
		return (int)r;
	if (r > cap - *n)
		return ENG_ERR_TOKENIZER; /* byte-level BPE never yields more ids than bytes */
	*n += r;
	return 0;
}

/* The document sits at the start of the user turn (DESIGN.md §1), so a
 * question can follow it later at positions n, n+1, … */
int64_t
eng_chat_doc_ids(const struct eng_tok *t, const char *doc, size_t len, int32_t **ids)
{
	static const char pre[] = "<|im_start|>system\n" ENG_CHAT_DEFAULT_SYSTEM
	    "<|im_end|>\n<|im_start|>user\n";
	int64_t n = 0;
	int rc;
	*ids = NULL;
	if ((rc = eng_chat_append(t, pre, sizeof(pre) - 1, 1, ids, &n)) ||
	    (rc = eng_chat_append(t, doc, len, 0, ids, &n))) {
		free(*ids);
		*ids = NULL;
		return rc;
	}
	return n;
}

int64_t
eng_chat_question_ids(const struct eng_tok *t, const char *q, size_t len, int32_t **ids)
{
	static const char post[] = "<|im_end|>\n<|im_start|>assistant\n";
	int64_t n = 0;
	int rc;
	*ids = NULL;
	if ((rc = eng_chat_append(t, "\n\n", 2, 0, ids, &n)) ||
	    (rc = eng_chat_append(t, q, len, 0, ids, &n)) ||
	    (rc = eng_chat_append(t, post, sizeof(post) - 1, 1, ids, &n))) {
		free(*ids);
		*ids = NULL;
		return rc;
	}
	return n;
}

int64_t
eng_chat_messages_ids(const struct eng_tok *t, const struct eng_chat_msg *msgs, size_t n,
    int32_t **ids)
{
	static const char sys[] = "<|im_start|>system\n" ENG_CHAT_DEFAULT_SYSTEM "<|im_end|>\n";
	static const char start[] = "<|im_start|>", end[] = "<|im_end|>\n",
	    post[] = "<|im_start|>assistant\n";
	int64_t k = 0;
	size_t i;
	int rc = 0;
	*ids = NULL;
	if (!n || strcmp(msgs[0].role, "system"))
		rc = eng_chat_append(t, sys, sizeof(sys) - 1, 1, ids, &k);
	for (i = 0; !rc && i < n; i++)
		if ((rc = eng_chat_append(t, start, sizeof(start) - 1, 1, ids, &k)) ||
		    (rc = eng_chat_append(t, msgs[i].role, strlen(msgs[i].role), 0, ids, &k)) ||
		    (rc = eng_chat_append(t, "\n", 1, 0, ids, &k)) ||
		    (rc = eng_chat_append(t, msgs[i].content, msgs[i].len, 0, ids, &k)))
			break;
		else
			rc = eng_chat_append(t, end, sizeof(end) - 1, 1, ids, &k);
	if (!rc)
		rc = eng_chat_append(t, post, sizeof(post) - 1, 1, ids, &k);
	if (rc) {
		free(*ids);
		*ids = NULL;
		return rc;
	}
	return k;
}
