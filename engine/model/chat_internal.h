/*
 * chat_internal.h: what chat_template.c (which family a template is) and
 * chat.c (rendering it) share.
 */
#ifndef ENGINE_MODEL_CHAT_INTERNAL_H
#define ENGINE_MODEL_CHAT_INTERNAL_H

#include <stddef.h>

enum eng_chat_family {
	ENG_CHAT_CHATML, /* SmolLM2, Qwen2/2.5: <|im_start|>role\n...<|im_end|>\n */
	ENG_CHAT_LLAMA3, /* <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|> */
	ENG_CHAT_INST,   /* Mistral: [INST] ... [/INST] */
	ENG_CHAT_GEMMA,  /* <start_of_turn>role\n...<end_of_turn>\n */
	ENG_CHAT_PHI3,   /* <|user|>\n...<|end|>\n */
};

struct eng_chat {
	enum eng_chat_family fam;
	/* ChatML: the default system prompt the template renders when the
	 * first message is not a system one (NULL: none) */
	char *sys;
	/* Llama 3.1+: the system turn's fixed lines before the system message
	 * (NULL: Llama 3.0, no system turn of its own) */
	char *head;
	int no_system; /* the template raises on a system message */
	int alternate; /* ... and unless user/assistant alternate */
	/* PHI3: 1 = Phi-3.5 (system turns, explicit generation prompt);
	 * INST: 0 = Mistral v0.1 (eos), 1 = Mixtral-style eos + ' ', 2 = Nemo */
	int variant;
	char *bos, *eos; /* the tokens' texts, as bos_token / eos_token render */
	const struct eng_tok *tok;
};

/* Fill c->fam and the family's details from template text t[0..len) (t
 * NULL: no template).  ENG_ERR_ARG with the reason for a template kvsnap
 * does not render. */
int eng_chat_recognize(struct eng_chat *c, const char *t, size_t len, char *why,
    size_t why_len);

#endif /* ENGINE_MODEL_CHAT_INTERNAL_H */
