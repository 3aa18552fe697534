/*
 * test_tok_regex.c: engine/model/tok_regex.c (the pre-tokenizers' regex
 * matcher) and the hand-written splitters of tok_pre.c, against each other.
 *
 * llama.cpp runs the GPT-2 and Llama 3 regexes as hand-written splitters
 * but Qwen2's through std::regex; we run all three hand-written.  So the
 * splitters must cut exactly where the regex matcher (which models
 * std::regex over llama.cpp's collapsed text) cuts, on random text mixing
 * every class the regexes tell apart: ASCII letters, digits, spaces, CR/LF,
 * contractions in both cases, punctuation, non-ASCII letters, digits,
 * spaces, marks, symbols, unassigned and control code points, and invalid
 * UTF-8.  Then the matcher alone on cases with known answers: ECMAScript's
 * first-alternative and greedy-with-backtracking choices, {n,m}, lookahead,
 * $, collapsed \p{..} (llama.cpp's \p{S} lacks '~'), wide-mode literal
 * ranges, the run skip of a leading loop (and time on a 1M-space run), and
 * patterns it must refuse.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/rng.h"
#include "engine/model/tok_internal.h"
#include "tests/tap.h"

/* The regexes as llama.cpp writes them (llama-vocab.cpp). */
#define RE_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
#define RE_LLAMA3                                                                      \
	"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?" \
	"\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_QWEN2                                                                       \
	"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?" \
	"\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

/* Pieces collected by a sink. */
struct rx_cut {
	size_t len[4096];
	size_t n;
};

static void
rx_sink(void *arg, size_t len)
{
	struct rx_cut *c = arg;
	if (c->n < sizeof(c->len) / sizeof(c->len[0]))
		c->len[c->n] = len;
	c->n++;
}

/* Pieces of the text s (UTF-8) under pattern re, as code-point lengths. */
static int
rx_cut_text(const struct eng_rx *rx, const char *s, size_t len, struct rx_cut *out)
{
	uint32_t sym[2048];
	size_t i = 0, n = 0, adv;

	while (i < len && n < 2048) {
		sym[n++] = eng_rx_symbol(rx, eng_utf8_decode((const uint8_t *)s + i, len - i, &adv));
		i += adv;
	}
	out->n = 0;
	return eng_rx_pieces(rx, sym, n, rx_sink, out);
}

/* Pieces of the text under the hand-written splitter of pre. */
static void
rx_cut_splitter(enum eng_tok_pre pre, const char *s, size_t len, struct rx_cut *out)
{
	struct eng_tok t;
	struct eng_tok_enc e;
	size_t i;

	memset(&t, 0, sizeof(t));
	t.model = ENG_TOK_MODEL_BPE;
	t.pre = pre;
	memset(&e, 0, sizeof(e));
	e.t = &t;
	e.cps = malloc((len + 1) * sizeof(*e.cps));
	e.cat = malloc(len + 1);
	e.collect = 1; /* words to e.bnd instead of BPE */
	eng_tok_pre_encode(&e, (const uint8_t *)s, len);
	out->n = 0;
	for (i = 0; i < e.n_bnd; i++)
		rx_sink(out, e.bnd[i]);
	free(e.cps);
	free(e.cat);
	free(e.bnd);
}

/* Random text of up to 40 pieces from a pool that covers every class. */
static size_t
rx_random_text(uint64_t *rng, char *buf, size_t cap)
{
	static const char *const pool[] = { "abc", "XyZ", "q", "0", "12345", " ", "  ", "\t",
		"\n", "\r\n", "\r", "'", "'s", "'S", "'re", "'LL", "'ve", "'d", "'M", "'T", ".",
		",;", "!?", "-_", "()[]", "\"#$%&*+/<=>@\\^`|~", "\xc3\xa9", "\xc3\x9f", "\xce\xa9",
		"\xe4\xb8\xad\xe6\x96\x87", "\xea\xb0\x80", "\xd9\xa3", "\xc2\xb2", "\xe2\x85\xab",
		"\xe3\x80\x80", "\xc2\xa0", "\xc2\x85", "\xe2\x80\x89", "\xe2\x80\xa8", "\xcc\x81",
		"\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xe2\xbf\xbc", "\xcd\xb8", "\x01", "\xe2\x80\x8b",
		"\xee\x80\x80", "\xef\xbc\x81", "\xe3\x80\x82", "\xe2\x80\xa6", "\x80", "\xc3",
		"\xe4\xb8", "\xff" };
	size_t n = 0, k = 1 + kv_xorshift64s(rng) % 40, i;

	for (i = 0; i < k; i++) {
		const char *p = pool[kv_xorshift64s(rng) % (sizeof(pool) / sizeof(pool[0]))];
		size_t l = strlen(p);
		if (n + l >= cap)
			break;
		memcpy(buf + n, p, l);
		n += l;
	}
	buf[n] = '\0';
	return n;
}

/* The splitter of pre cuts like the regex re on 20000 random texts. */
static enum tap_result
rx_agree(enum eng_tok_pre pre, const char *re)
{
	static struct rx_cut a, b;
	struct eng_rx *rx = NULL;
	uint64_t rng = 0x9e3779b97f4a7c15ULL;
	char why[256], buf[512];
	int i, differ = 0;

	TAP_CHECK(eng_rx_compile(re, &rx, why, sizeof(why)) == 0, "compile: %s", why);
	for (i = 0; i < 20000; i++) {
		size_t len = rx_random_text(&rng, buf, sizeof(buf));
		rx_cut_splitter(pre, buf, len, &a);
		if (rx_cut_text(rx, buf, len, &b) != 0)
			break;
		if (a.n != b.n || memcmp(a.len, b.len, a.n * sizeof(a.len[0])) != 0) {
			if (differ++ < 3)
				printf("#   differ on \"%s\" (%zu vs %zu pieces)\n", buf, a.n, b.n);
		}
	}
	eng_rx_free(rx);
	TAP_CHECK(i == 20000, "matcher failed at case %d", i);
	TAP_CHECK(differ == 0, "%d of 20000 texts cut differently", differ);
	return TAP_PASS;
}

static enum tap_result
test_gpt2_splitter(void)
{
	return rx_agree(ENG_TOK_PRE_GPT2, RE_GPT2);
}

static enum tap_result
test_llama3_splitter(void)
{
	return rx_agree(ENG_TOK_PRE_LLAMA3, RE_LLAMA3);
}

static enum tap_result
test_qwen2_splitter(void)
{
	return rx_agree(ENG_TOK_PRE_QWEN2, RE_QWEN2);
}

/* "3 1 2" of a cut. */
static const char *
rx_fmt(const struct rx_cut *c)
{
	static char buf[256];
	size_t i, o = 0;

	buf[0] = '\0';
	for (i = 0; i < c->n && o + 12 < sizeof(buf); i++)
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%zu", i ? " " : "", c->len[i]);
	return buf;
}

/* Known cuts (piece lengths in code points) of single patterns. */
static enum tap_result
test_matcher_cases(void)
{
	static const struct {
		const char *re, *text, *want;
	} cases[] = {
		{ "a|ab", "ab", "1 1" },                    /* first alternative wins */
		{ "ab|a", "ab", "2" },
		{ "\\s*[\\r\\n]+", "  \n \n  x", "5 3" },   /* greedy, backtracks to the last LF */
		{ "\\p{N}{1,3}", "1234567", "3 3 1" },
		{ "\\d{2}", "12345", "2 2 1" },
		{ "[0-9][0-9][0-9]", "12345", "3 2" },
		{ "\\s+(?!\\S)", "a   b", "1 2 2" },        /* the last space stays with b */
		{ "x(?=y)", "xyxz", "1 3" },
		{ "\\s+$", "a  b  ", "4 2" },
		{ "\\s+$", "      x", "7" },                /* the run skip: no match anywhere */
		{ "\\p{S}+", "$+~|", "2 1 1" },             /* llama.cpp's \p{S} lacks '~' */
		{ "\\p{P}+", "!\"#%&'()*,-./:;?@[\\]_{}$", "23 1" },
		{ "\\p{L}+", "ab\xc3\xa9\xe4\xb8\xad" "1", "4 1" }, /* collapsed: any letter */
		{ "\\p{M}", "e\xcc\x81", "1 1" },
		{ "[\xe4\xb8\x80-\xe9\xbe\xa5]+", "a\xe4\xb8\xad\xe6\x96\x87!", "1 2 1" }, /* wide */
		{ "\\s", "\xe3\x80\x80x", "1 1" },          /* U+3000 reads as \s */
		{ "[\xe3\x80\x80-\xe3\x80\x82]", "\xe3\x80\x80\xe3\x80\x81", "1 1" }, /* but not as itself */
		{ "(?:ab)+c?", "ababcab", "5 2" },
		{ "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+", " ab\ncd", "3 1 2" },
	};
	static struct rx_cut c;
	size_t i;
	char why[256];

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct eng_rx *rx = NULL;
		int rc = eng_rx_compile(cases[i].re, &rx, why, sizeof(why));
		TAP_CHECK(rc == 0, "case %zu: /%s/ refused: %s", i, cases[i].re, why);
		rc = rx_cut_text(rx, cases[i].text, strlen(cases[i].text), &c);
		eng_rx_free(rx);
		TAP_CHECK(rc == 0 && strcmp(rx_fmt(&c), cases[i].want) == 0,
		    "case %zu: /%s/ on \"%s\": got \"%s\", want \"%s\"", i, cases[i].re,
		    cases[i].text, rx_fmt(&c), cases[i].want);
	}
	return TAP_PASS;
}

/* A leading loop that fails everywhere stays linear: "\s+$" over a million
 * spaces and one letter (quadratic without the run skip: ~10^12 steps). */
static enum tap_result
test_matcher_linear(void)
{
	size_t n = 1000000, i;
	uint32_t *sym = malloc((n + 1) * sizeof(*sym));
	struct eng_rx *rx = NULL;
	struct rx_cut *c = calloc(1, sizeof(*c));
	char why[256];
	clock_t t0;
	double secs;
	int rc;

	TAP_CHECK(sym && c, "out of memory");
	TAP_CHECK(eng_rx_compile("\\s+$", &rx, why, sizeof(why)) == 0, "%s", why);
	for (i = 0; i < n; i++)
		sym[i] = ' ';
	sym[n] = 'x';
	t0 = clock();
	rc = eng_rx_pieces(rx, sym, n + 1, rx_sink, c);
	secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
	eng_rx_free(rx);
	free(sym);
	TAP_CHECK(rc == 0 && c->n == 1 && c->len[0] == n + 1, "one gap piece (got %zu)", c->n);
	free(c);
	/* 2 s: a linear pass is milliseconds even under ASan on a busy machine */
	TAP_CHECK(secs < 2.0, "took %.2f s", secs);
	return TAP_PASS;
}

/* Patterns outside the supported syntax are refused with a reason. */
static enum tap_result
test_matcher_refuses(void)
{
	static const char *const bad[] = { "", "a.b", "(a", "a)", "[a", "a{2,1}", "a*?", "\\p{Han}+",
		"\\p{L}\xc3\xa9", "(?<=a)b", "a||b", "[\\S]", "\\q", "^a" };
	size_t i;
	char why[256];

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct eng_rx *rx = NULL;
		int rc = eng_rx_compile(bad[i], &rx, why, sizeof(why));
		eng_rx_free(rx);
		TAP_CHECK(rc == ENG_ERR_TOKENIZER && rx == NULL, "/%s/ accepted (rc %d)", bad[i], rc);
		TAP_CHECK(strstr(why, "pre-tokenizer regex") != NULL, "/%s/: reason '%s'", bad[i], why);
	}
	return TAP_PASS;
}

static const struct tap_test tests[] = {
	{ "gpt2_splitter", test_gpt2_splitter },
	{ "llama3_splitter", test_llama3_splitter },
	{ "qwen2_splitter", test_qwen2_splitter },
	{ "matcher_cases", test_matcher_cases },
	{ "matcher_linear", test_matcher_linear },
	{ "matcher_refuses", test_matcher_refuses },
};

TAP_MAIN(NULL, NULL)
