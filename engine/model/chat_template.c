/*
 * chat_template.c: which chat template a GGUF carries.
 *
 * kvsnap does not run Jinja.  It recognizes the template families people
 * download (ChatML/Qwen, Llama 3, Mistral [INST], Gemma, Phi-3) by the
 * markers and literals their real templates contain, takes what varies
 * inside a family from the template text itself (ChatML's default system
 * prompt, Llama 3.1's knowledge-date line and date), and refuses any other
 * template naming what it found.  chat.c renders each family exactly as
 * its Jinja template does (tests/test_chat.c checks that against jinja2
 * over the real templates, tests/fixtures/chat/).  Why not a Jinja subset:
 * docs/ARCHITECTURE.md, "Chat templates".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model/model.h"
#include "engine/model/chat_internal.h"

/* Find needle in hay[0..len); NULL if absent. */
static const char *
tpl_find(const char *hay, size_t len, const char *needle)
{
	size_t nl = strlen(needle), i;
	if (nl > len)
		return NULL;
	for (i = 0; i + nl <= len; i++)
		if (hay[i] == needle[0] && !memcmp(hay + i, needle, nl))
			return hay + i;
	return NULL;
}

/* s[0..n) with Jinja's string escapes (\n \t \r \\ \' \") resolved, as a
 * malloc'd string; a real newline (SmolLM2's GGUF has them inside its
 * literals) stays as it is.  NULL when out of memory. */
static char *
tpl_unescape(const char *s, size_t n)
{
	char *out = malloc(n + 1), *o = out;
	size_t i;
	if (!out)
		return NULL;
	for (i = 0; i < n; i++) {
		if (s[i] == '\\' && i + 1 < n) {
			i++;
			*o++ = s[i] == 'n' ? '\n' : s[i] == 't' ? '\t' : s[i] == 'r' ? '\r' : s[i];
		} else
			*o++ = s[i];
	}
	*o = '\0';
	return out;
}

/* The literal text after `head` up to the first `stop`, when it holds no
 * quote or brace (so it is template text, not an expression); unescaped
 * into *out (malloc'd), or *out = NULL when no occurrence qualifies. */
static int
tpl_text_after(const char *t, size_t len, const char *head, int newline, const char *stop,
    char **out)
{
	const char *end = t + len, *p = t, *s, *e;
	size_t k;
	*out = NULL;
	while ((p = tpl_find(p, (size_t)(end - p), head))) {
		s = p + strlen(head);
		p = s;
		if (newline) { /* a real newline or the escape "\n" */
			if (s < end && *s == '\n')
				s++;
			else if (end - s >= 2 && s[0] == '\\' && s[1] == 'n')
				s += 2;
			else
				continue;
		}
		if (!(e = tpl_find(s, (size_t)(end - s), stop)))
			continue;
		for (k = 0; k < (size_t)(e - s); k++)
			if (strchr("'\"{}", s[k]))
				break;
		if (k < (size_t)(e - s))
			continue;
		return (*out = tpl_unescape(s, (size_t)(e - s))) ? 0 : ENG_ERR_NOMEM;
	}
	return 0;
}

/* Llama 3.1+: the system turn's fixed lines, "Cutting Knowledge Date: …\n"
 * then "Today Date: " DATE "\n\n" with the template's own default date (it
 * falls back to it when no clock is given; kvsnap gives none, so a prompt,
 * and a snapshot, does not change with the day). */
static int
tpl_llama3_head(struct eng_chat *c, const char *t, size_t len, char *why, size_t why_len)
{
	char *know = NULL, *date = NULL;
	int rc;
	if ((rc = tpl_text_after(t, len, "\"Cutting Knowledge Date:", 0, "\"", &know)) ||
	    (rc = tpl_text_after(t, len, "set date_string = \"", 0, "\"", &date)))
		goto out;
	if (!know || !date || !tpl_find(t, len, "\"Today Date: \" + date_string + \"\\n\\n\"")) {
		rc = eng_fail(why, why_len, ENG_ERR_ARG, "chat template: a Llama 3.1 system "
		    "turn kvsnap cannot read (Cutting Knowledge Date, Today Date, date_string)");
		goto out;
	}
	rc = ENG_ERR_NOMEM;
	if (!(c->head = malloc(strlen(know) + strlen(date) + 64)))
		goto out;
	sprintf(c->head, "Cutting Knowledge Date:%sToday Date: %s\n\n", know, date);
	rc = 0;
out:
	free(know);
	free(date);
	return rc;
}

/* Why a template is refused: its first characters, printable. */
static int
tpl_refuse(const char *t, size_t len, const char *what, char *why, size_t why_len)
{
	char head[61];
	size_t i, n = len < sizeof(head) - 1 ? len : sizeof(head) - 1;
	for (i = 0; i < n; i++)
		head[i] = (t[i] >= 0x20 && t[i] < 0x7f) ? t[i] : ' ';
	head[n] = '\0';
	return eng_fail(why, why_len, ENG_ERR_ARG, "the model's chat template (%s) is not one "
	    "kvsnap renders; it knows ChatML/Qwen, Llama 3, Mistral [INST], Gemma and Phi-3 "
	    "(docs/ARCHITECTURE.md); the template begins \"%s%s\"", what, head,
	    len > n ? "..." : "");
}

int
eng_chat_recognize(struct eng_chat *c, const char *t, size_t len, char *why, size_t why_len)
{
	c->fam = ENG_CHAT_CHATML;
	if (!t) /* no template: llama.cpp's fallback, ChatML with no system turn */
		return 0;
	c->alternate = tpl_find(t, len, "must alternate") != NULL;
	if (tpl_find(t, len, "<think>"))
		return tpl_refuse(t, len, "a reasoning template with <think>", why, why_len);
	if (tpl_find(t, len, "<|im_start|>"))
		return tpl_text_after(t, len, "<|im_start|>system", 1, "<|im_end|>", &c->sys);
	if (tpl_find(t, len, "<|start_header_id|>") && tpl_find(t, len, "<|eot_id|>")) {
		c->fam = ENG_CHAT_LLAMA3;
		if (tpl_find(t, len, "Cutting Knowledge Date"))
			return tpl_llama3_head(c, t, len, why, why_len);
		return 0;
	}
	if (tpl_find(t, len, "<start_of_turn>")) {
		c->fam = ENG_CHAT_GEMMA;
		if (!tpl_find(t, len, "System role not supported"))
			return tpl_refuse(t, len, "Gemma with a system turn (Gemma 3)", why,
			    why_len);
		c->no_system = 1;
		return 0;
	}
	if (tpl_find(t, len, "<|user|>") && tpl_find(t, len, "<|end|>")) {
		c->fam = ENG_CHAT_PHI3;
		c->variant = tpl_find(t, len, "<|system|>") != NULL; /* Phi-3.5: system, gen */
		return 0;
	}
	if (tpl_find(t, len, "[INST]")) {
		c->fam = ENG_CHAT_INST;
		if (tpl_find(t, len, "'[INST] ' + message['content'] + ' [/INST]'") &&
		    !tpl_find(t, len, "<<SYS>>")) {
			c->no_system = 1; /* Mistral v0.1 / Mixtral */
			c->variant = tpl_find(t, len, "eos_token + ' '") != NULL;
			return 0;
		}
		if (tpl_find(t, len, "\"[INST]\" + message[\"content\"] + \"[/INST]\"") &&
		    tpl_find(t, len, "\"[INST]\" + system_message + \"\\n\\n\" + "
		    "message[\"content\"] + \"[/INST]\"")) {
			c->variant = 2; /* Mistral Nemo (tekken): system in the last user turn */
			return 0;
		}
		return tpl_refuse(t, len, "an [INST] variant other than Mistral v0.1/Mixtral "
		    "or Mistral Nemo", why, why_len);
	}
	return tpl_refuse(t, len, "no known family's markers", why, why_len);
}
