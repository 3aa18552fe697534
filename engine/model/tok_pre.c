/*
 * tok_pre.c: the pre-tokenizers: which pieces of text BPE sees, exactly as
 * llama.cpp cuts them (llama-vocab.cpp picks the regexes by
 * tokenizer.ggml.pre, unicode.cpp runs them).
 *
 * As in llama.cpp, the GPT-2 and Llama 3 / Qwen2 regexes run as hand-written
 * splitters (the hot path of the models we run); the others run through the
 * regex matcher of tok_regex.c, one regex after another, each cutting the
 * pieces the previous ones left (a match is a piece, and so is each gap).
 * Every cut is over code points; the final pieces go to BPE (tok_bpe.c).
 */
#include <stdio.h>  /* for snprintf */
#include <stdlib.h> /* for realloc */
#include <string.h> /* for strcmp */

#include "engine/model/tok_internal.h"

/* tokenizer.ggml.pre names and their pipelines, as llama.cpp groups them
 * (llama-vocab.cpp: names with the same regexes share a pipeline). */
static const struct {
	const char *name;
	enum eng_tok_pre pre;
} eng_tok_pre_names[] = {
	{ "smollm", ENG_TOK_PRE_DIGITS_GPT2 }, { "starcoder", ENG_TOK_PRE_DIGITS_GPT2 },
	{ "refact", ENG_TOK_PRE_DIGITS_GPT2 }, { "command-r", ENG_TOK_PRE_DIGITS_GPT2 },
	{ "codeshell", ENG_TOK_PRE_DIGITS_GPT2 }, { "exaone", ENG_TOK_PRE_DIGITS_GPT2 },
	{ "minerva-7b", ENG_TOK_PRE_DIGITS_GPT2 },
	{ "gpt-2", ENG_TOK_PRE_GPT2 }, { "phi-2", ENG_TOK_PRE_GPT2 }, { "mpt", ENG_TOK_PRE_GPT2 },
	{ "olmo", ENG_TOK_PRE_GPT2 }, { "jais", ENG_TOK_PRE_GPT2 },
	{ "llama3", ENG_TOK_PRE_LLAMA3 }, { "llama-v3", ENG_TOK_PRE_LLAMA3 },
	{ "llama-bpe", ENG_TOK_PRE_LLAMA3 }, { "falcon3", ENG_TOK_PRE_LLAMA3 },
	{ "qwen2", ENG_TOK_PRE_QWEN2 }, { "deepseek-r1-qwen", ENG_TOK_PRE_QWEN2 },
	{ "stablelm2", ENG_TOK_PRE_QWEN2 }, { "megrez", ENG_TOK_PRE_QWEN2 },
	{ "deepseek-llm", ENG_TOK_PRE_DEEPSEEK_LLM }, { "deepseek-coder", ENG_TOK_PRE_DEEPSEEK_CODER },
	{ "falcon", ENG_TOK_PRE_FALCON },
};

/* The GPT-2 regex, run by the hand-written splitter wherever it is a step
 * (llama.cpp: unicode_regex_split_custom_gpt2). */
#define ENG_TOK_GPT2_RE \
	"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"

/* The regexes of the pre-tokenizers that llama.cpp runs in a row through
 * std::regex (llama-vocab.cpp, llm_tokenizer_bpe), as written there. */
static const struct {
	enum eng_tok_pre pre;
	const char *re[ENG_TOK_MAX_STEPS];
} eng_tok_pre_steps[] = {
	{ ENG_TOK_PRE_DEEPSEEK_LLM, {
		"[\r\n]",
		"\\s?[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293"
		"\u0295-\u02af\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a"
		"\u038c\u038e-\u03a1\u03a3-\u03f5\u03f7-\u0481\u048a-\u052f\u0531-\u0556"
		"\u10a0-\u10c5\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba\u1cbd-\u1cbf\u1d00-\u1d2b"
		"\u1d6b-\u1d77\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45\u1f48-\u1f4d"
		"\u1f50-\u1f57\u1f59\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe"
		"\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4"
		"\u1ff6-\u1ffc\u2102\u2107\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128"
		"\u212a-\u212d\u212f-\u2134\u2139\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184"
		"\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee\u2cf2\u2cf3\ua640-\ua66d\ua680-\ua69b"
		"\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf\ufb00-\ufb06\ufb13-\ufb17"
		"\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f\U000104b0-\U000104d3"
		"\U000104d8-\U000104fb\U00010c80-\U00010cb2\U00010cc0-\U00010cf2"
		"\U000118a0-\U000118df\U0001e900-\U0001e943]+",
		"\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+",
		"\\s+$",
		"[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+",
		"\\p{N}+" } },
	{ ENG_TOK_PRE_DEEPSEEK_CODER, {
		"[\r\n]",
		"\\s?\\p{L}+",
		"\\s?\\p{P}+",
		"[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+",
		"\\p{N}" } },
	{ ENG_TOK_PRE_FALCON, {
		"[\\p{P}\\$\\+<=>\\^~\\|`]+",
		ENG_TOK_GPT2_RE,
		"[0-9][0-9][0-9]" } },
};

/* Map tokenizer.ggml.pre to a pipeline; 0 if unsupported. */
enum eng_tok_pre
eng_tok_pre_from_name(struct eng_gguf_str s)
{
	size_t i;

	for (i = 0; i < sizeof(eng_tok_pre_names) / sizeof(eng_tok_pre_names[0]); i++)
		if (eng_gguf_str_eq(s, eng_tok_pre_names[i].name))
			return eng_tok_pre_names[i].pre;
	return (enum eng_tok_pre)0;
}

/* Every supported pre name, comma-separated, into buf. */
const char *
eng_tok_pre_list(char *buf, size_t cap)
{
	size_t i, o = 0;

	buf[0] = '\0';
	for (i = 0; i < sizeof(eng_tok_pre_names) / sizeof(eng_tok_pre_names[0]) && o < cap; i++)
		o += (size_t)snprintf(buf + o, cap - o, "%s%s", i ? ", " : "",
		    eng_tok_pre_names[i].name);
	return buf;
}

/* Compile the pre's regexes into t->steps (the GPT-2 one stays the
 * hand-written splitter: a NULL step). */
int
eng_tok_pre_build(struct eng_tok *t, char *why, size_t why_len)
{
	size_t i;
	int k, rc;

	for (i = 0; i < sizeof(eng_tok_pre_steps) / sizeof(eng_tok_pre_steps[0]); i++) {
		if (eng_tok_pre_steps[i].pre != t->pre)
			continue;
		for (k = 0; k < ENG_TOK_MAX_STEPS && eng_tok_pre_steps[i].re[k]; k++) {
			t->n_steps = k + 1;
			if (strcmp(eng_tok_pre_steps[i].re[k], ENG_TOK_GPT2_RE) == 0)
				continue;
			rc = eng_rx_compile(eng_tok_pre_steps[i].re[k], &t->steps[k], why, why_len);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* Free the compiled steps. */
void
eng_tok_pre_free(struct eng_tok *t)
{
	int k;

	for (k = 0; k < ENG_TOK_MAX_STEPS; k++) {
		eng_rx_free(t->steps[k]);
		t->steps[k] = NULL;
	}
}

/* Append a piece length to the collected list. */
static void
eng_tok_bound(void *arg, size_t len)
{
	struct eng_tok_enc *e = arg;

	if (e->err)
		return;
	if (e->n_bnd == e->cap_bnd) {
		size_t nc = e->cap_bnd ? 2 * e->cap_bnd : 64;
		size_t *nb = realloc(e->bnd, nc * sizeof(*nb));
		if (!nb) {
			e->err = ENG_ERR_NOMEM;
			return;
		}
		e->bnd = nb;
		e->cap_bnd = nc;
	}
	e->bnd[e->n_bnd++] = len;
}

/* A word the splitters found at cps[start..start+len): to BPE, or to the
 * list when a later step cuts further. */
static void
eng_tok_word(struct eng_tok_enc *e, size_t start, size_t len)
{
	if (e->collect)
		eng_tok_bound(e, len);
	else
		eng_tok_bpe(e, e->cps + start, len);
}

/* Class at pos, or ENG_TOK_OUT past the piece (llama.cpp's empty flags). */
#define ENG_TOK_OUT 0xFF
#define ENG_TOK_CAT(pos) ((pos) < hi ? cat[pos] : ENG_TOK_OUT)

/* The GPT-2 regex over cps[lo..hi), as llama.cpp's hand-written
 * unicode_regex_split_custom_gpt2:
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * Each word goes straight to BPE. */
static void
eng_tok_split_gpt2(struct eng_tok_enc *e, size_t lo, size_t hi)
{
	const uint32_t *cps = e->cps;
	const uint8_t *cat = e->cat;
	size_t pos = lo;

	while (pos < hi) {
		size_t start = pos, nws = 0;
		uint32_t cp = cps[pos];
		uint8_t f2;

		if (cp == '\'' && pos + 1 < hi) {
			uint32_t c1 = cps[pos + 1];
			if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') {
				eng_tok_word(e, pos, 2);
				pos += 2;
				continue;
			}
			if (pos + 2 < hi) {
				uint32_t c2 = cps[pos + 2];
				if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') ||
				    (c1 == 'l' && c2 == 'l')) {
					eng_tok_word(e, pos, 3);
					pos += 3;
					continue;
				}
			}
		}

		f2 = cp == ' ' ? ENG_TOK_CAT(pos + 1) : cat[pos];
		if (f2 == ENG_UCAT_LETTER || f2 == ENG_UCAT_NUMBER || f2 == ENG_UCAT_OTHER) {
			/* ' ?' then a run of one class */
			pos += cp == ' ';
			while (ENG_TOK_CAT(pos) == f2)
				pos++;
			eng_tok_word(e, start, pos - start);
			continue;
		}

		while (ENG_TOK_CAT(pos + nws) == ENG_UCAT_SPACE)
			nws++;
		if (nws > 1 && pos + nws < hi) {
			pos += nws - 1; /* \s+(?!\S): leave the last space to the next word */
		} else if (nws > 0) {
			pos += nws; /* \s+ */
		} else {
			pos++; /* no match: one code point */
		}
		eng_tok_word(e, start, pos - start);
	}
}

/* ASCII lower case (Llama 3's contractions are case-insensitive; no code
 * point outside ASCII lowers to s, t, m, d, r, e, v or l). */
#define ENG_TOK_LOWER(c) ((c) >= 'A' && (c) <= 'Z' ? (c) + 32 : (c))
#define ENG_TOK_CR_LF(c) ((c) == '\r' || (c) == '\n')

/* Llama 3's regex over cps[lo..hi), digits: 3 (Llama 3) or 1 (Qwen2):
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,digits}|
 *   ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * llama.cpp runs Llama 3's with a hand-written splitter and Qwen2's through
 * std::regex over one byte per code point (its class); both amount to this. */
static void
eng_tok_split_llama3(struct eng_tok_enc *e, size_t lo, size_t hi, size_t digits)
{
	const uint32_t *cps = e->cps;
	const uint8_t *cat = e->cat;
	size_t pos = lo;

	while (pos < hi) {
		size_t start = pos, nws = 0, last_nl = 0;
		uint32_t cp = cps[pos];
		uint8_t f2;

		if (cp == '\'' && pos + 1 < hi) {
			uint32_t c1 = ENG_TOK_LOWER(cps[pos + 1]);
			if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') {
				eng_tok_word(e, pos, 2);
				pos += 2;
				continue;
			}
			if (pos + 2 < hi) {
				uint32_t c2 = ENG_TOK_LOWER(cps[pos + 2]);
				if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') ||
				    (c1 == 'l' && c2 == 'l')) {
					eng_tok_word(e, pos, 3);
					pos += 3;
					continue;
				}
			}
		}

		/* [^\r\n\p{L}\p{N}]?\p{L}+ */
		if (!ENG_TOK_CR_LF(cp) && cat[pos] != ENG_UCAT_NUMBER &&
		    (cat[pos] == ENG_UCAT_LETTER || ENG_TOK_CAT(pos + 1) == ENG_UCAT_LETTER)) {
			pos++;
			while (ENG_TOK_CAT(pos) == ENG_UCAT_LETTER)
				pos++;
			eng_tok_word(e, start, pos - start);
			continue;
		}

		/* \p{N}{1,digits} */
		if (cat[pos] == ENG_UCAT_NUMBER) {
			while (ENG_TOK_CAT(pos) == ENG_UCAT_NUMBER && pos - start < digits)
				pos++;
			eng_tok_word(e, start, pos - start);
			continue;
		}

		/* ' ?[^\s\p{L}\p{N}]+[\r\n]*' */
		f2 = cp == ' ' ? ENG_TOK_CAT(pos + 1) : cat[pos];
		if (f2 == ENG_UCAT_OTHER) {
			pos += cp == ' ';
			while (ENG_TOK_CAT(pos) == ENG_UCAT_OTHER)
				pos++;
			while (pos < hi && ENG_TOK_CR_LF(cps[pos]))
				pos++;
			eng_tok_word(e, start, pos - start);
			continue;
		}

		while (ENG_TOK_CAT(pos + nws) == ENG_UCAT_SPACE) {
			if (ENG_TOK_CR_LF(cps[pos + nws]))
				last_nl = nws + 1;
			nws++;
		}
		if (last_nl) {
			pos += last_nl; /* \s*[\r\n]+: up to the run's last CR or LF */
		} else if (nws > 1 && pos + nws < hi) {
			pos += nws - 1; /* \s+(?!\S) */
		} else if (nws > 0) {
			pos += nws; /* \s+ */
		} else {
			pos++; /* no match: one code point */
		}
		eng_tok_word(e, start, pos - start);
	}
}

#undef ENG_TOK_LOWER
#undef ENG_TOK_CR_LF
#undef ENG_TOK_CAT

/* Run the regex steps over cps[0..n): each step cuts every piece of the
 * last; then every piece goes to BPE. */
static void
eng_tok_pre_steps_run(struct eng_tok_enc *e, size_t n)
{
	const struct eng_tok *t = e->t;
	size_t *cur = NULL, n_cur = 1, i, off;
	int k;

	cur = malloc(sizeof(*cur));
	if (!cur) {
		e->err = ENG_ERR_NOMEM;
		return;
	}
	cur[0] = n;
	for (k = 0; k < t->n_steps && !e->err; k++) {
		const struct eng_rx *rx = t->steps[k];
		e->n_bnd = 0;
		e->collect = 1;
		if (rx)
			for (i = 0; i < n; i++)
				e->rsym[i] = eng_rx_symbol(rx, e->cps[i]);
		for (i = 0, off = 0; i < n_cur && !e->err; off += cur[i], i++) {
			if (!rx)
				eng_tok_split_gpt2(e, off, off + cur[i]);
			else if (eng_rx_pieces(rx, e->rsym + off, cur[i], eng_tok_bound, e))
				e->err = ENG_ERR_NOMEM;
		}
		e->collect = 0;
		/* the new list becomes the current one */
		{
			size_t *tmp = cur;
			size_t tcap = n_cur;
			cur = e->bnd;
			n_cur = e->n_bnd;
			e->bnd = tmp;
			e->cap_bnd = tcap;
			e->n_bnd = 0;
		}
	}
	for (i = 0, off = 0; i < n_cur && !e->err; off += cur[i], i++)
		eng_tok_bpe(e, e->cps + off, cur[i]);
	free(cur);
}

/* Decode, pre-tokenize and BPE one raw-text fragment. */
void
eng_tok_pre_encode(struct eng_tok_enc *e, const uint8_t *s, size_t len)
{
	size_t i = 0, n = 0, adv, lo;

	while (i < len) {
		uint32_t cp = eng_utf8_decode(s + i, len - i, &adv);
		e->cps[n] = cp;
		e->cat[n] = (uint8_t)eng_ucd_cat(cp);
		n++;
		i += adv;
	}
	switch (e->t->pre) {
	case ENG_TOK_PRE_GPT2:
		eng_tok_split_gpt2(e, 0, n);
		return;
	case ENG_TOK_PRE_LLAMA3:
		eng_tok_split_llama3(e, 0, n, 3);
		return;
	case ENG_TOK_PRE_QWEN2:
		eng_tok_split_llama3(e, 0, n, 1);
		return;
	case ENG_TOK_PRE_DIGITS_GPT2:
		/* \p{N}: every number code point is a piece; the text between too */
		for (lo = 0; lo < n && !e->err;) {
			size_t hi = lo + 1;
			if (e->cat[lo] != ENG_UCAT_NUMBER)
				while (hi < n && e->cat[hi] != ENG_UCAT_NUMBER)
					hi++;
			eng_tok_split_gpt2(e, lo, hi);
			lo = hi;
		}
		return;
	case ENG_TOK_PRE_DEEPSEEK_LLM:
	case ENG_TOK_PRE_DEEPSEEK_CODER:
	case ENG_TOK_PRE_FALCON:
	case ENG_TOK_PRE_NONE:
	default:
		eng_tok_pre_steps_run(e, n);
		return;
	}
}
