/*
 * test_tokenizer.c: engine/model/tokenizer.c.
 *
 * The reference is llama.cpp.  On the bundled model (tap_model_path()) we
 * check the example tokenizations of spec/model.md section 7.3 and every
 * case of tests/fixtures/tokens.txt
 * (written by scripts/make-token-fixtures.py with llama-cpp-python from the
 * inputs of scripts/tokenizer-cases.py); all must be identical.  A missing
 * model or fixture file is a failure, not a skip.
 *
 * Without the model: a synthetic vocabulary built in memory checks merge
 * order, byte fallback, digit splitting, special-token matching and EOG;
 * malformed tokenizer metadata must be rejected with ENG_ERR_TOKENIZER.
 * (The chat template's prompts: tests/test_chat.c.)
 *
 * Hostile input (every lone byte, invalid UTF-8 including what makes
 * llama.cpp abort, 100k whitespace runs, 1 MiB strings) must not crash and
 * must give sane results; normal text must decode back to its bytes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/escape.h"
#include "common/fail.h"
#include "engine/engine.h"
#include "tests/gguf_builder.h"
#include "tests/ids_fmt.h"
#include "tests/tap.h"

#define TOK_FIXTURES "tests/fixtures/tokens.txt"

#if defined(__SANITIZE_ADDRESS__)
#define TOK_SLOW_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TOK_SLOW_BUILD 1
#endif
#endif
#ifndef TOK_SLOW_BUILD
#define TOK_SLOW_BUILD 0
#endif

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

static void tok_byte_table(const struct eng_tok *t);

static struct eng_gguf *tok_gguf;
static struct eng_tok *tok_model;
static int tok_model_tried;
static char tok_model_why[256];

/* The bundled model's tokenizer (loaded once), or NULL with a reason. */
static struct eng_tok *
tok_get(void)
{
	int rc;

	if (tok_model_tried)
		return tok_model;
	tok_model_tried = 1;
	rc = eng_gguf_open(&tok_gguf, tap_model_path(), tok_model_why, sizeof(tok_model_why));
	if (rc)
		return NULL;
	rc = eng_tok_init(&tok_model, tok_gguf, tok_model_why, sizeof(tok_model_why));
	if (rc)
		tok_model = NULL;
	else
		tok_byte_table(tok_model);
	return tok_model;
}

#define TOK_REQUIRE_MODEL(t)                                                         \
	do {                                                                         \
		(t) = tok_get();                                                     \
		TAP_CHECK((t) != NULL, "model %s unusable: %s (run `make model`)", \
		    tap_model_path(), tok_model_why);                                \
	} while (0)

/* Encode into a fresh array; *n receives the count (or the error). */
static int32_t *
tok_enc(const struct eng_tok *t, const char *s, size_t len, int special, int64_t *n)
{
	int64_t m = eng_tok_encode(t, s, len, special, NULL, 0);
	int32_t *ids;

	*n = m;
	if (m < 0)
		return NULL;
	ids = malloc((size_t)(m ? m : 1) * sizeof(*ids));
	if (!ids)
		return NULL;
	*n = eng_tok_encode(t, s, len, special, ids, m);
	return ids;
}

/* Concatenated decode of ids; caller frees; *len receives the length. */
static char *
tok_dec(const struct eng_tok *t, const int32_t *ids, int64_t n, int special, size_t *len)
{
	size_t cap = 64, off = 0, pl;
	char *buf = malloc(cap);
	int64_t i;

	for (i = 0; buf && i < n; i++) {
		if (!eng_tok_piece(t, ids[i], special, &pl)) {
			free(buf);
			return NULL;
		}
		while (off + pl + 1 > cap) {
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				return NULL;
			}
			buf = nb;
			cap *= 2;
		}
		if (eng_tok_decode(t, ids[i], special, buf + off, pl) != (int)pl) {
			free(buf);
			return NULL;
		}
		off += pl;
	}
	*len = off;
	return buf;
}

/* 1 if text encodes (parse_special) to exactly want[0..nw). */
static int
tok_expect(const struct eng_tok *t, const char *text, int special, const int32_t *want,
    int64_t nw)
{
	int64_t n;
	int32_t *ids = tok_enc(t, text, strlen(text), special, &n);
	int ok = ids && n == nw && memcmp(ids, want, (size_t)nw * sizeof(*ids)) == 0;

	if (!ok)
		printf("#   \"%s\": got [%s]\n", text, ids ? ids_fmt(ids, n) : "error");
	free(ids);
	return ok;
}

static int tok_byte_has_token[256];

/* Which bytes have a one-byte NORMAL token (others are dropped by BPE). */
static void
tok_byte_table(const struct eng_tok *t)
{
	int32_t id;
	size_t len;
	const char *p;

	memset(tok_byte_has_token, 0, sizeof(tok_byte_has_token));
	for (id = 0; id < eng_tok_n_vocab(t); id++) {
		p = eng_tok_piece(t, id, 0, &len);
		if (p && len == 1)
			tok_byte_has_token[(uint8_t)p[0]] = 1;
	}
}

/* 1 if encode+decode of s must give s back: valid UTF-8, every byte has a
 * token, and (since specials are parsed) decoding with specials. */
static int
tok_roundtrips(const uint8_t *s, size_t n)
{
	size_t i;

	if (!kv_utf8_valid((const char *)s, n))
		return 0;
	for (i = 0; i < n; i++)
		if (!tok_byte_has_token[s[i]])
			return 0;
	return 1;
}

/* Check encode -> decode(special) == input; prints on failure. */
static int
tok_check_roundtrip(const struct eng_tok *t, const char *s, size_t n)
{
	int64_t m;
	size_t dl = 0;
	int32_t *ids = tok_enc(t, s, n, 1, &m);
	char *d = ids ? tok_dec(t, ids, m, 1, &dl) : NULL;
	int ok = d && dl == n && memcmp(d, s, n) == 0;

	if (!ok)
		printf("#   round trip failed for %zu bytes \"%.*s\" (decoded %zu bytes)\n", n,
		    (int)(n > 60 ? 60 : n), s, dl);
	free(ids);
	free(d);
	return ok;
}

/* ------------------------------------------------------------------------ */
/* On the bundled model                                                      */

/* spec/model.md section 7.3. */
static enum tap_result
test_spec_examples(void)
{
	static const struct {
		const char *text;
		int32_t ids[20];
		int n;
	} ex[] = {
		{ "<|im_start|>system\n", { 1, 9690, 198 }, 3 },
		{ "<|im_start|>user\n", { 1, 4093, 198 }, 3 },
		{ "<|im_start|>assistant\n", { 1, 520, 9531, 198 }, 4 },
		{ "<|im_end|>\n", { 2, 198 }, 2 },
		{ "What is the capital of France?", { 1780, 314, 260, 3575, 282, 4649, 47 }, 7 },
		{ "The capital of France is", { 504, 3575, 282, 4649, 314 }, 5 },
		{ " Paris.", { 7042, 30 }, 2 },
		{ "hello world", { 28120, 905 }, 2 },
		{ "Hello", { 19556 }, 1 },
		{ "Hello! How can I help you today?",
		    { 19556, 17, 1073, 416, 339, 724, 346, 1834, 47 }, 9 },
		{ "You are a helpful AI assistant.", { 2683, 359, 253, 5356, 5646, 11173, 30 }, 7 },
		{ "You are a helpful AI assistant named SmolLM, trained by Hugging Face",
		    { 2683, 359, 253, 5356, 5646, 11173, 3365, 3511, 308, 34519, 28, 7018, 411, 407,
			19712, 8182 }, 16 },
		{ "Explain in three short sentences why plants need sunlight.",
		    { 36971, 281, 1296, 1890, 8545, 1701, 2109, 737, 8118, 30 }, 10 },
		{ "hi", { 6004 }, 1 },
		{ "!", { 17 }, 1 },
		{ ",", { 28 }, 1 },
		{ ".", { 30 }, 1 },
		{ "?", { 47 }, 1 },
		{ "\n", { 198 }, 1 },
	};
	const struct eng_tok *t;
	size_t i;
	int bad = 0;

	TOK_REQUIRE_MODEL(t);
	for (i = 0; i < sizeof(ex) / sizeof(ex[0]); i++)
		bad += !tok_expect(t, ex[i].text, 1, ex[i].ids, ex[i].n);
	TAP_CHECK(bad == 0, "%d of %zu examples differ", bad, sizeof(ex) / sizeof(ex[0]));
	return TAP_PASS;
}

/* Vocabulary facts, specials and the EOG set as llama.cpp reports them. */
static enum tap_result
test_specials(void)
{
	static const int32_t im_end_plain[] = { 44, 108, 306, 79, 486, 108, 46 };
	const struct eng_tok *t;
	char buf[64];
	size_t len;
	const char *p;
	int32_t id, n_eog = 0;

	TOK_REQUIRE_MODEL(t);
	TAP_CHECK(eng_tok_n_vocab(t) == 49152, "n_vocab %d", eng_tok_n_vocab(t));
	TAP_CHECK(eng_tok_bos(t) == 1 && eng_tok_eos(t) == 2, "bos %d eos %d", eng_tok_bos(t),
	    eng_tok_eos(t));
	/* llama.cpp (llama-cpp-python 0.3.16): EOG = {0, 2, 4} (4 = <reponame>,
	 * its FIM repo token) */
	for (id = 0; id < eng_tok_n_vocab(t); id++)
		n_eog += eng_tok_is_eog(t, id);
	TAP_CHECK(n_eog == 3 && eng_tok_is_eog(t, 0) && eng_tok_is_eog(t, 2) &&
	    eng_tok_is_eog(t, 4), "EOG set has %d ids", n_eog);
	TAP_CHECK(!eng_tok_is_eog(t, 1) && !eng_tok_is_eog(t, -1) && !eng_tok_is_eog(t, 49152),
	    "non-EOG ids");
	/* without parse_special the text is ordinary characters */
	{
		int64_t n;
		int32_t *ids = tok_enc(t, "<|im_end|>", 10, 0, &n);
		size_t dl;
		char *d = ids ? tok_dec(t, ids, n, 0, &dl) : NULL;
		TAP_CHECK(d && dl == 10 && memcmp(d, "<|im_end|>", 10) == 0,
		    "plain <|im_end|> does not round trip: [%s]", ids ? ids_fmt(ids, n) : "");
		TAP_CHECK(n == 7 && memcmp(ids, im_end_plain, sizeof(im_end_plain)) == 0,
		    "plain <|im_end|> = [%s]", ids_fmt(ids, n));
		free(ids);
		free(d);
	}
	/* control pieces only on request */
	p = eng_tok_piece(t, 2, 0, &len);
	TAP_CHECK(p && len == 0, "control piece without special has %zu bytes", len);
	p = eng_tok_piece(t, 2, 1, &len);
	TAP_CHECK(p && len == 10 && memcmp(p, "<|im_end|>", 10) == 0, "control piece");
	TAP_CHECK(eng_tok_decode(t, 198, 0, buf, sizeof(buf)) == 1 && buf[0] == '\n', "LF");
	TAP_CHECK(eng_tok_decode(t, 19556, 0, buf, 3) == 3 && memcmp(buf, "Hel", 3) == 0,
	    "truncated decode");
	TAP_CHECK(eng_tok_decode(t, -1, 1, buf, sizeof(buf)) == ENG_ERR_TOKEN, "id -1");
	TAP_CHECK(eng_tok_decode(t, 49152, 1, buf, sizeof(buf)) == ENG_ERR_TOKEN, "id n_vocab");
	TAP_CHECK(eng_tok_piece(t, 49152, 1, &len) == NULL, "piece out of range");
	return TAP_PASS;
}

/* FNV-1a 64 of (u32 length LE, bytes) of every token's piece, as
 * scripts/make-token-fixtures.py computes it from llama_token_to_piece. */
static uint64_t
tok_pieces_fnv(const struct eng_tok *t, int special)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	int32_t id;
	size_t len, i;

	for (id = 0; id < eng_tok_n_vocab(t); id++) {
		const char *p = eng_tok_piece(t, id, special, &len);
		uint8_t l4[4] = { (uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16),
			(uint8_t)(len >> 24) };
		for (i = 0; i < 4; i++)
			h = (h ^ l4[i]) * 0x100000001b3ULL;
		for (i = 0; i < len; i++)
			h = (h ^ (uint8_t)p[i]) * 0x100000001b3ULL;
	}
	return h;
}

/* Every case of tests/fixtures/tokens.txt, identical to llama.cpp. */
static enum tap_result
test_fixtures(void)
{
	const struct eng_tok *t;
	const char *path = getenv("KVSNAP_TOKEN_FIXTURES");
	FILE *f;
	char *line = NULL, *in = NULL;
	size_t lcap = 0, incap = 0;
	ssize_t ll;
	int32_t *want = NULL, *got = NULL;
	size_t wcap = 0;
	int64_t gcap = 0;
	long total = 0, bad = 0, lineno = 0, rt_total = 0, rt_bad = 0, n_pieces = 0;
	int pieces_bad = 0;

	TOK_REQUIRE_MODEL(t);
	if (!path)
		path = TOK_FIXTURES;
	f = fopen(path, "r");
	TAP_CHECK(f != NULL, "%s is missing: generate it with "
	    "`.venv-fixtures/bin/python scripts/make-token-fixtures.py`", path);
	while ((ll = getline(&line, &lcap, f)) > 0) {
		char *tab, *q, *end;
		size_t hl, n, i, nw = 0;
		int64_t m;

		lineno++;
		if (strncmp(line, "#! pieces ", 10) == 0) {
			int sp;
			long nv;
			unsigned long long want_h;
			uint64_t got_h;
			if (sscanf(line + 10, "%d %ld %llx", &sp, &nv, &want_h) != 3) {
				printf("#   %s:%ld: bad pieces line\n", path, lineno);
				pieces_bad++;
				continue;
			}
			got_h = tok_pieces_fnv(t, sp);
			n_pieces++;
			if (nv != eng_tok_n_vocab(t) || got_h != (uint64_t)want_h) {
				printf("#   %s:%ld: token pieces (special=%d) differ: %ld tokens "
				    "%016llx, ours %d tokens %016llx\n", path, lineno, sp, nv,
				    want_h, eng_tok_n_vocab(t), (unsigned long long)got_h);
				pieces_bad++;
			}
			continue;
		}
		if (line[0] == '#' || line[0] == '\n')
			continue;
		tab = strchr(line, '\t');
		if (!tab) {
			printf("#   %s:%ld: no tab\n", path, lineno);
			bad++;
			continue;
		}
		hl = (size_t)(tab - line);
		n = hl / 2;
		if (n + 1 > incap) {
			incap = 2 * (n + 1);
			in = realloc(in, incap);
		}
		for (i = 0; i < n; i++)
			in[i] = (char)(kv_hex_value(line[2 * i]) * 16 + kv_hex_value(line[2 * i + 1]));
		q = tab + 1;
		for (;;) {
			long v = strtol(q, &end, 10);
			if (end == q)
				break;
			if (nw == wcap) {
				wcap = wcap ? 2 * wcap : 256;
				want = realloc(want, wcap * sizeof(*want));
			}
			want[nw++] = (int32_t)v;
			q = end;
		}
		m = eng_tok_encode(t, in, n, 1, got, gcap);
		if (m > gcap) {
			gcap = 2 * m;
			got = realloc(got, (size_t)gcap * sizeof(*got));
			m = eng_tok_encode(t, in, n, 1, got, gcap);
		}
		total++;
		if (m != (int64_t)nw || (nw && memcmp(got, want, nw * sizeof(*want)) != 0)) {
			if (bad < 10) {
				printf("#   %s:%ld: input %.*s\n#     want [%s]\n", path, lineno,
				    (int)(hl > 120 ? 120 : hl), line, ids_fmt(want, (int64_t)nw));
				printf("#     got  [%s]\n", m >= 0 ? ids_fmt(got, m) : "error");
			}
			bad++;
		}
		if (tok_roundtrips((const uint8_t *)in, n)) {
			rt_total++;
			rt_bad += !tok_check_roundtrip(t, in, n);
		}
	}
	fclose(f);
	free(line);
	free(in);
	free(want);
	free(got);
	tap_diag("report: tokenizer fixtures: %ld of %ld strings identical to llama.cpp "
	    "(%s)", total - bad, total, path);
	tap_diag("report: tokenizer round trip: %ld of %ld valid-UTF-8 fixture strings",
	    rt_total - rt_bad, rt_total);
	tap_diag("report: tokenizer pieces: %ld of 2 vocabulary fingerprints match llama.cpp",
	    n_pieces - pieces_bad);
	TAP_CHECK(total >= 300, "only %ld fixture strings in %s", total, path);
	TAP_CHECK(bad == 0, "%ld of %ld fixture strings differ from llama.cpp", bad, total);
	TAP_CHECK(rt_bad == 0, "%ld round trips failed", rt_bad);
	TAP_CHECK(n_pieces == 2 && pieces_bad == 0, "token pieces: %ld fingerprints, %d bad",
	    n_pieces, pieces_bad);
	return TAP_PASS;
}

/* Normal text decodes back to its bytes. */
static enum tap_result
test_roundtrip(void)
{
	static const char *const texts[] = {
		"The quick brown fox jumps over the lazy dog.",
		"It's 2024: we've got 3.14159 reasons, don't we?",
		"#include <stdio.h>\nint main(void) { return 0; }\n",
		"def f(x):\n\treturn x ** 2  # square\n\n\n",
		"{\"a\": [1, 2, 3], \"b\": null}",
		"naïve café, Straße, Ελληνικά, Привет, 你好世界, こんにちは, 한국어",
		"emoji: 😀 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🇫🇷",
		"   leading and trailing   \n\n",
		"<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
		"\xc2\xa0\xe3\x80\x80\xe2\x80\xa8 unicode spaces",
	};
	const struct eng_tok *t;
	size_t i;
	int bad = 0;

	TOK_REQUIRE_MODEL(t);
	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		bad += !tok_check_roundtrip(t, texts[i], strlen(texts[i]));
	TAP_CHECK(bad == 0, "%d round trips failed", bad);
	return TAP_PASS;
}

/* Lone bytes, invalid UTF-8, argument errors, cap handling. */
static enum tap_result
test_hostile(void)
{
	const struct eng_tok *t;
	int32_t ids[16], fffd4_ids[16];
	int64_t n, nf;
	unsigned b;
	char c;

	TOK_REQUIRE_MODEL(t);
	TAP_CHECK(eng_tok_encode(t, "", 0, 1, ids, 16) == 0, "empty string");
	TAP_CHECK(eng_tok_encode(t, NULL, 0, 1, NULL, 0) == 0, "NULL empty string");
	TAP_CHECK(eng_tok_encode(t, NULL, 3, 1, ids, 16) == ENG_ERR_ARG, "NULL text");
	TAP_CHECK(eng_tok_encode(t, "a", 1, 1, NULL, 4) == ENG_ERR_ARG, "NULL ids");
	TAP_CHECK(eng_tok_encode(t, "a", 1, 1, ids, -1) == ENG_ERR_ARG, "negative cap");
	TAP_CHECK(eng_tok_encode(NULL, "a", 1, 1, ids, 16) == ENG_ERR_ARG, "NULL tokenizer");

	/* cap smaller than the result: full count, nothing written past cap */
	ids[3] = -7;
	n = eng_tok_encode(t, "Hello world 2024!", 17, 1, ids, 3);
	TAP_CHECK(n == 8 && ids[0] == 19556 && ids[3] == -7, "cap 3 gave %lld", (long long)n);

	for (b = 0; b < 256; b++) {
		c = (char)b;
		n = eng_tok_encode(t, &c, 1, 1, ids, 16);
		/* a byte >= 0x80 alone is U+FFFD: 3 bytes, at most 3 tokens */
		TAP_CHECK(n >= 0 && n <= 3, "byte %02x gave %lld", b, (long long)n);
		if (b < 0x80 && tok_byte_has_token[b])
			TAP_CHECK(n == 1, "byte %02x has a token but gave %lld", b, (long long)n);
	}
	/* sequences past U+10FFFF abort llama.cpp; we read U+FFFD per byte */
	nf = eng_tok_encode(t, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 12, 1,
	    fffd4_ids, 16);
	n = eng_tok_encode(t, "\xf7\xbf\xbf\xbf", 4, 1, ids, 16);
	TAP_CHECK(nf > 0 && n == nf && memcmp(ids, fffd4_ids, (size_t)n * 4) == 0,
	    "F7 BF BF BF: [%s]", ids_fmt(ids, n));
	n = eng_tok_encode(t, "\xf4\x90\x80\x80", 4, 1, ids, 16);
	TAP_CHECK(n == nf && memcmp(ids, fffd4_ids, (size_t)n * 4) == 0,
	    "F4 90 80 80: [%s]", ids_fmt(ids, n));
	/* overlong NUL is NUL, as in llama.cpp */
	n = eng_tok_encode(t, "A\xc0\x80" "A", 4, 1, ids, 16);
	TAP_CHECK(n == 3 && ids[0] == 49 && ids[1] == 190 && ids[2] == 49, "C0 80: [%s]",
	    ids_fmt(ids, n));
	/* a special token splits an invalid sequence into two fragments */
	n = eng_tok_encode(t, "A\xe2<|im_end|>\x82\xac", 14, 1, ids, 16);
	TAP_CHECK(n == 5 && ids[0] == 49 && ids[1] == 24211 && ids[2] == 2 && ids[3] == 24211 &&
	    ids[4] == 24211, "split invalid: [%s]", ids_fmt(ids, n));
	return TAP_PASS;
}

/* Build a deterministic mixed text of exactly n bytes (valid UTF-8). */
static char *
tok_mixed_text(size_t n)
{
	static const char *const parts[] = { "The ", "model ", "caches ", "keys", " and ",
		"values", ". ", "It's ", "2024", "-", "11", "-", "22", "; ", "naïve ", "café ",
		"東京 ", "😀 ", "\n", "\n\n", "    ", "\t", "x = f(y) + 3.5;", " <|im_end|> ",
		"don't ", "WE'LL ", "(", ")", "[1, 2, 3]", "'quoted' ", "α+β=γ " };
	char *s = malloc(n + 64);
	size_t off = 0, k = 0;
	uint32_t r = 12345;

	if (!s)
		return NULL;
	while (off < n) {
		const char *p;
		size_t l;
		r = r * 1103515245u + 12345u;
		p = parts[(r >> 16) % (sizeof(parts) / sizeof(parts[0]))];
		l = strlen(p);
		memcpy(s + off, p, l);
		off += l;
		k++;
	}
	/* cut at n, backing up to a character boundary, pad with spaces */
	off = n;
	while (off > 0 && ((uint8_t)s[off] & 0xC0) == 0x80)
		off--;
	while (off < n)
		s[off++] = ' ';
	s[n] = '\0';
	(void)k;
	return s;
}

/* Long whitespace runs, 1 MiB inputs and the 10 KB speed bound. */
static enum tap_result
test_long_inputs(void)
{
	const struct eng_tok *t;
	const size_t mib = 1 << 20;
	char *s;
	int32_t *ids;
	int64_t n;
	size_t i;
	double t0, best = 1e9, bound = TOK_SLOW_BUILD ? 0.2 : 0.010;
	int rep;

	TOK_REQUIRE_MODEL(t);
	s = malloc(mib + 1);
	TAP_CHECK(s != NULL, "malloc");

	/* 100k spaces, then 100k mixed whitespace followed by a letter */
	memset(s, ' ', 100000);
	TAP_CHECK(tok_check_roundtrip(t, s, 100000), "100k spaces");
	for (i = 0; i < 100000; i++)
		s[i] = " \t\n\r"[i % 4];
	s[100000] = 'x';
	TAP_CHECK(tok_check_roundtrip(t, s, 100001), "100k mixed whitespace");

	/* 1 MiB of one letter: one word of a million symbols */
	memset(s, 'a', mib);
	t0 = eng_now();
	ids = tok_enc(t, s, mib, 1, &n);
	tap_diag("1 MiB of 'a': %lld tokens in %.1f ms", (long long)n, (eng_now() - t0) * 1e3);
	TAP_CHECK(ids && n > 0 && n < (int64_t)mib, "1 MiB 'a' gave %lld", (long long)n);
	free(ids);
	TAP_CHECK(tok_check_roundtrip(t, s, mib), "1 MiB 'a'");

	/* 1 MiB of special tokens */
	for (i = 0; i + 10 <= mib; i += 10)
		memcpy(s + i, "<|im_end|>", 10);
	n = eng_tok_encode(t, s, i, 1, NULL, 0);
	TAP_CHECK(n == (int64_t)(i / 10), "1 MiB of <|im_end|> gave %lld", (long long)n);

	/* 1 MiB of random bytes: no crash, a sane count */
	{
		uint32_t r = 777;
		for (i = 0; i < mib; i++) {
			r = r * 1664525u + 1013904223u;
			s[i] = (char)(r >> 24);
		}
		n = eng_tok_encode(t, s, mib, 1, NULL, 0);
		TAP_CHECK(n > 0 && n <= 3 * (int64_t)mib, "1 MiB random gave %lld", (long long)n);
	}
	free(s);

	/* 1 MiB of mixed text round trips */
	s = tok_mixed_text(mib);
	TAP_CHECK(s != NULL, "malloc");
	t0 = eng_now();
	n = eng_tok_encode(t, s, mib, 1, NULL, 0);
	tap_diag("1 MiB mixed text: %lld tokens in %.1f ms", (long long)n, (eng_now() - t0) * 1e3);
	TAP_CHECK(tok_check_roundtrip(t, s, mib), "1 MiB mixed text");
	free(s);

	/* speed: 10 KB of mixed text */
	s = tok_mixed_text(10240);
	TAP_CHECK(s != NULL, "malloc");
	ids = malloc(10240 * sizeof(*ids));
	for (rep = 0; rep < 5; rep++) {
		double dt;
		t0 = eng_now();
		n = eng_tok_encode(t, s, 10240, 1, ids, 10240);
		dt = eng_now() - t0;
		if (dt < best)
			best = dt;
	}
	free(ids);
	free(s);
	tap_diag("metric: tokenizer encode 10 KiB: %.2f ms (%lld tokens)", best * 1e3,
	    (long long)n);
	TAP_CHECK(best < bound, "encoding 10 KiB took %.2f ms (bound %.0f ms)", best * 1e3,
	    bound * 1e3);
	return TAP_PASS;
}

/* eng_tok_min_tokens is a sound lower bound: no text, hostile ones
 * included, has fewer tokens (svc_ingest refuses a document by it without
 * tokenizing; issue 15); on plain text it is not vacuous. */
static enum tap_result
test_min_tokens(void)
{
	static const char *const units[] = { "a", " ", "\x04", "\xc0\x84", "\xc0\x80",
		"\xe0\x80\x80", "\xf0\x80\x80\x80", "\xff", "<|im_end|>", "================",
		"東京", "\xf7\xbf\xbf\xbf", "\n\n", "0123456789", "\r\n", "\x7f" };
	const size_t n_units = sizeof(units) / sizeof(units[0]), len = 1 << 16;
	const struct eng_tok *t;
	size_t i, j, l;
	char *s;
	int64_t n, lo;
	uint32_t r = 4242;

	TOK_REQUIRE_MODEL(t);
	s = malloc(len);
	TAP_CHECK(s != NULL, "malloc");
	/* each unit repeated, then random bytes, then random units */
	for (i = 0; i <= n_units + 1; i++) {
		for (j = 0; j < len; j += l) {
			const char *u;
			r = r * 1664525u + 1013904223u;
			u = i < n_units ? units[i] : units[(r >> 16) % n_units];
			l = strlen(u) < len - j ? strlen(u) : len - j;
			if (i == n_units) {
				s[j] = (char)(r >> 24);
				l = 1;
			} else {
				memcpy(s + j, u, l);
			}
		}
		n = eng_tok_encode(t, s, len, 0, NULL, 0);
		lo = eng_tok_min_tokens(t, s, len);
		TAP_CHECK(n >= 0 && lo <= n, "text %zu: %lld tokens, bound %lld", i, (long long)n,
		    (long long)lo);
	}
	free(s);
	s = tok_mixed_text(len);
	TAP_CHECK(s != NULL, "malloc");
	n = eng_tok_encode(t, s, len, 0, NULL, 0);
	lo = eng_tok_min_tokens(t, s, len);
	free(s);
	tap_diag("64 KiB mixed text: %lld tokens, at least %lld by its bytes", (long long)n,
	    (long long)lo);
	TAP_CHECK(lo > 0 && lo <= n, "mixed text: %lld tokens, bound %lld", (long long)n,
	    (long long)lo);
	return TAP_PASS;
}

/* ------------------------------------------------------------------------ */
/* Synthetic vocabularies (no model needed)                                  */

/* Array of strings as a metadata value. */
static void
tok_gb_strs(struct gb *b, const char *k, const char *const *v, size_t n)
{
	size_t i;
	gb_str(b, k);
	gb_u32(b, 9);
	gb_u32(b, 8);
	gb_u64(b, n);
	for (i = 0; i < n; i++)
		gb_str(b, v[i]);
}

/* Array of i32 (or f32 when as_f32) as a metadata value. */
static void
tok_gb_i32s(struct gb *b, const char *k, const int32_t *v, size_t n, int as_f32)
{
	size_t i;
	gb_str(b, k);
	gb_u32(b, 9);
	gb_u32(b, as_f32 ? 6 : 5);
	gb_u64(b, n);
	for (i = 0; i < n; i++) {
		if (as_f32)
			gb_f32(b, (float)v[i]);
		else
			gb_u32(b, (uint32_t)v[i]);
	}
}

/* What to break in the synthetic file. */
struct tok_variant {
	const char *model;     /* NULL: omit the key */
	const char *pre;       /* NULL: omit the key */
	int types_short;       /* token_type one entry short */
	int types_f32;         /* token_type as f32 */
	const char *bad_merge; /* replaces the last merge */
	int dup_token;         /* last token duplicates the first */
	int tokens_i32;        /* tokens as an i32 array */
	int no_merges;
};

static const char *const tok_syn_tokens[] = {
	"<|endoftext|>", "<|im_start|>", "<|im_end|>", "a", "b", "c", "ab", "bc", "abc",
	"\xc4\xa0" /* Ġ */, "\304\240a" /* Ġa */, "1", "2", "12", "aa", "<u>", "\xc4\x8a" /* Ċ */,
};
static const int32_t tok_syn_types[] = { 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4, 1 };
static const char *const tok_syn_merges[] = { "a b", "b c", "ab c", "\xc4\xa0 a", "1 2",
	"a a", "c a" };

#define TOK_NSYN (sizeof(tok_syn_tokens) / sizeof(tok_syn_tokens[0]))

/* Write a GGUF holding only tokenizer metadata. */
static void
tok_build(struct gb *out, const struct tok_variant *v)
{
	struct gb kv = { 0 };
	const char *toks[TOK_NSYN];
	const char *merges[7];
	uint64_t n_kv = 0;

	memcpy(toks, tok_syn_tokens, sizeof(toks));
	memcpy(merges, tok_syn_merges, sizeof(merges));
	if (v->dup_token)
		toks[TOK_NSYN - 1] = toks[3];
	if (v->bad_merge)
		merges[6] = v->bad_merge;
	if (v->model) {
		gb_kv_str(&kv, "tokenizer.ggml.model", v->model);
		n_kv++;
	}
	if (v->pre) {
		gb_kv_str(&kv, "tokenizer.ggml.pre", v->pre);
		n_kv++;
	}
	if (v->tokens_i32)
		tok_gb_i32s(&kv, "tokenizer.ggml.tokens", tok_syn_types, TOK_NSYN, 0);
	else
		tok_gb_strs(&kv, "tokenizer.ggml.tokens", toks, TOK_NSYN);
	tok_gb_i32s(&kv, "tokenizer.ggml.token_type", tok_syn_types,
	    TOK_NSYN - (v->types_short ? 1 : 0), v->types_f32);
	n_kv += 2;
	if (!v->no_merges) {
		tok_gb_strs(&kv, "tokenizer.ggml.merges", merges, 7);
		n_kv++;
	}
	gb_kv_u32(&kv, "tokenizer.ggml.bos_token_id", 1);
	gb_kv_u32(&kv, "tokenizer.ggml.eos_token_id", 2);
	n_kv += 2;

	gb_put(out, "GGUF", 4);
	gb_u32(out, 3);
	gb_u64(out, 0);
	gb_u64(out, n_kv);
	gb_put(out, kv.p, kv.len);
	gb_align(out, 32);
	free(kv.p);
}

/* Open a synthetic file and init a tokenizer; returns eng_tok_init's code. */
static int
tok_open_syn(const struct tok_variant *v, struct gb *b, struct eng_gguf **g,
    struct eng_tok **t, char *why, size_t why_len)
{
	int rc;

	memset(b, 0, sizeof(*b));
	tok_build(b, v);
	why[0] = '\0';
	*t = NULL;
	rc = eng_gguf_open_mem(g, b->p, b->len, why, why_len);
	if (rc)
		return 1000 + rc;
	return eng_tok_init(t, *g, why, why_len);
}

/* Merge order, byte fallback, digits, specials, EOG on a tiny vocabulary. */
static enum tap_result
test_synthetic_bpe(void)
{
	struct tok_variant v = { "gpt2", "smollm", 0, 0, NULL, 0, 0, 0 };
	struct gb b;
	struct eng_gguf *g = NULL;
	struct eng_tok *t = NULL;
	char why[256];
	int rc, ok = 1;
	size_t len;
	const char *p;

	rc = tok_open_syn(&v, &b, &g, &t, why, sizeof(why));
	TAP_CHECK(rc == 0, "init failed (%d): %s", rc, why);
	ok &= tok_expect(t, "abc", 1, (const int32_t[]){ 8 }, 1);        /* a b, then ab c */
	ok &= tok_expect(t, "bca", 1, (const int32_t[]){ 7, 3 }, 2);     /* b c; c a ranks lower */
	ok &= tok_expect(t, "aaa", 1, (const int32_t[]){ 14, 3 }, 2);    /* leftmost on ties */
	/* the bound holds where bytes have no symbol (the fallback drops them) */
	TAP_CHECK(eng_tok_min_tokens(t, "zzzz", 4) <= eng_tok_encode(t, "zzzz", 4, 0, NULL, 0) &&
	    eng_tok_min_tokens(t, "abcabc", 6) <= eng_tok_encode(t, "abcabc", 6, 0, NULL, 0),
	    "bound above the count");
	ok &= tok_expect(t, "ca", 1, (const int32_t[]){ 5, 3 }, 2);      /* "ca" no token: bytes */
	ok &= tok_expect(t, "d", 1, (const int32_t[]){ 0 }, 0);          /* no token: dropped */
	ok &= tok_expect(t, "12", 1, (const int32_t[]){ 11, 12 }, 2);    /* digits split */
	ok &= tok_expect(t, " a", 1, (const int32_t[]){ 10 }, 1);        /* Ġa */
	ok &= tok_expect(t, "a\n\n", 1, (const int32_t[]){ 3, 16, 16 }, 3);
	ok &= tok_expect(t, "a<|im_end|>b", 1, (const int32_t[]){ 3, 2, 4 }, 3);
	ok &= tok_expect(t, "a<|im_end|>b", 0, (const int32_t[]){ 3, 4 }, 2); /* '<' etc dropped */
	ok &= tok_expect(t, "a<u>b", 0, (const int32_t[]){ 3, 15, 4 }, 3); /* USER_DEFINED always */
	TAP_CHECK(ok, "synthetic encodings differ");
	TAP_CHECK(eng_tok_is_eog(t, 0) && eng_tok_is_eog(t, 2) && !eng_tok_is_eog(t, 1),
	    "EOG");
	TAP_CHECK(eng_tok_bos(t) == 1 && eng_tok_eos(t) == 2, "bos/eos");
	p = eng_tok_piece(t, 10, 0, &len);
	TAP_CHECK(p && len == 2 && memcmp(p, " a", 2) == 0, "piece of Ġa");
	p = eng_tok_piece(t, 15, 0, &len);
	TAP_CHECK(p && len == 3 && memcmp(p, "<u>", 3) == 0, "user-defined piece");
	eng_tok_free(t);
	eng_gguf_close(g);
	free(b.p);

	/* pre "gpt-2": no digit split, so "12" merges */
	v.pre = "gpt-2";
	rc = tok_open_syn(&v, &b, &g, &t, why, sizeof(why));
	TAP_CHECK(rc == 0, "init (gpt-2) failed (%d): %s", rc, why);
	ok = tok_expect(t, "12", 1, (const int32_t[]){ 13 }, 1);
	eng_tok_free(t);
	eng_gguf_close(g);
	free(b.p);
	TAP_CHECK(ok, "gpt-2 pre-tokenizer");

	/* no pre key: llama.cpp's "default" (\p{N}+ keeps "12" whole) */
	v.pre = NULL;
	rc = tok_open_syn(&v, &b, &g, &t, why, sizeof(why));
	TAP_CHECK(rc == 0, "init (no pre) failed (%d): %s", rc, why);
	ok = tok_expect(t, "12", 1, (const int32_t[]){ 13 }, 1);
	eng_tok_free(t);
	eng_gguf_close(g);
	free(b.p);
	TAP_CHECK(ok, "default pre-tokenizer");
	return TAP_PASS;
}

/* Malformed tokenizer metadata is rejected with a reason. */
static enum tap_result
test_init_rejects(void)
{
	static const struct {
		struct tok_variant v;
		const char *needle; /* must appear in why */
	} cases[] = {
		{ { "rwkv", "smollm", 0, 0, NULL, 0, 0, 0 }, "'rwkv'" },
		{ { NULL, "smollm", 0, 0, NULL, 0, 0, 0 }, "tokenizer.ggml.model" },
		{ { "gpt2", "", 0, 0, NULL, 0, 0, 0 }, "tokenizer.ggml.pre ''" },
		{ { "gpt2", "no-such-pre", 0, 0, NULL, 0, 0, 0 }, "'no-such-pre'" },
		{ { "gpt2", "smollm", 1, 0, NULL, 0, 0, 0 }, "token_type" },
		{ { "gpt2", "smollm", 0, 1, NULL, 0, 0, 0 }, "token_type" },
		{ { "gpt2", "smollm", 0, 0, "ab", 0, 0, 0 }, "merges" },
		{ { "gpt2", "smollm", 0, 0, " ab", 0, 0, 0 }, "merges" },
		{ { "gpt2", "smollm", 0, 0, "", 0, 0, 0 }, "merges" },
		{ { "gpt2", "smollm", 0, 0, NULL, 1, 0, 0 }, "duplicate" },
		{ { "gpt2", "smollm", 0, 0, NULL, 0, 1, 0 }, "tokens" },
		{ { "gpt2", "smollm", 0, 0, NULL, 0, 0, 1 }, "merges" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gb b;
		struct eng_gguf *g = NULL;
		struct eng_tok *t = NULL;
		char why[256];
		int rc = tok_open_syn(&cases[i].v, &b, &g, &t, why, sizeof(why));
		eng_tok_free(t);
		eng_gguf_close(g);
		free(b.p);
		TAP_CHECK(rc == ENG_ERR_TOKENIZER, "case %zu: rc %d (%s)", i, rc, why);
		TAP_CHECK(t == NULL, "case %zu: tokenizer returned", i);
		TAP_CHECK(strstr(why, cases[i].needle) != NULL, "case %zu: reason '%s' lacks '%s'",
		    i, why, cases[i].needle);
	}
	TAP_CHECK(eng_tok_init(NULL, NULL, NULL, 0) == ENG_ERR_ARG, "NULL arguments");
	eng_tok_free(NULL);
	return TAP_PASS;
}

/* ------------------------------------------------------------------------ */
/* Chat rendering                                                            */

/* Exact ChatML strings and snprintf-style truncation. */
/* ------------------------------------------------------------------------ */

static const struct tap_test tests[] = {
	{ "spec_examples", test_spec_examples },
	{ "specials", test_specials },
	{ "fixtures", test_fixtures },
	{ "roundtrip", test_roundtrip },
	{ "hostile", test_hostile },
	{ "long_inputs", test_long_inputs },
	{ "min_tokens", test_min_tokens },
	{ "synthetic_bpe", test_synthetic_bpe },
	{ "init_rejects", test_init_rejects },
};

/* Run the tests, then release the shared model tokenizer. */
static int
teardown(void)
{
	eng_tok_free(tok_model);
	eng_gguf_close(tok_gguf);
	return 0;
}

TAP_MAIN(NULL, teardown)
