/*
 * test_vocab.c: the tokenizer against llama.cpp's own tokenizer test set.
 *
 * For every vocabulary below, ggml-vocab-NAME.gguf (vocab only, no weights)
 * is loaded from $KVSNAP_VOCAB_DIR (default build/vocab, filled by
 * scripts/fetch-vocabs.sh from the pinned llama-cpp-python 0.3.16 sdist),
 * each text of its .inp (cases separated by "\n__ggml_vocab_test__\n", as
 * llama.cpp's test-tokenizer-0 reads them) is encoded without adding BOS and
 * without parsing control tokens, exactly as test-tokenizer-0 does, and the
 * ids must equal the matching line of the .out.  Each vocabulary reports
 * "N of M cases equal"; a missing file is a failure (run `make vocabs`).
 * Also per vocabulary: eng_tok_min_tokens never exceeds a case's count, and
 * add_bos is llama.cpp's for that vocabulary.  For the SentencePiece ones:
 * merging word by word (tok_spm.c) gives the ids of one heap over the whole
 * text, on 3000 random texts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "engine/engine.h"
#include "engine/model/tok_internal.h"
#include "tests/helpers.h"
#include "tests/ids_fmt.h"
#include "tests/tap.h"

#define VOC_SEP "\n__ggml_vocab_test__\n"

/* Directory holding the vocabularies. */
static const char *
voc_dir(void)
{
	const char *d = getenv("KVSNAP_VOCAB_DIR");
	return d && *d ? d : "build/vocab";
}

/* Parse one .out line ("id id id", spaces around allowed) into ids. */
static int64_t
voc_parse_ids(const char *line, size_t len, int32_t *ids, int64_t cap)
{
	int64_t n = 0;
	size_t i = 0;

	while (i < len) {
		long v = 0;
		int digits = 0;
		while (i < len && line[i] == ' ')
			i++;
		while (i < len && line[i] >= '0' && line[i] <= '9') {
			v = v * 10 + (line[i++] - '0');
			digits++;
		}
		if (!digits)
			break;
		if (n < cap)
			ids[n] = (int32_t)v;
		n++;
	}
	return n;
}

/* Run one vocabulary's cases; TAP_PASS when every case is equal. */
static enum tap_result
voc_run(const char *name, int add_bos)
{
	char path[1024], why[256];
	char *inp = NULL, *out = NULL, *ip, *op;
	size_t inp_len = 0, out_len = 0;
	struct eng_gguf *g = NULL;
	struct eng_tok *t = NULL;
	int32_t *got = NULL, *want = NULL;
	int64_t cases = 0, equal = 0, shown = 0;
	int ok = 1, rc;

	snprintf(path, sizeof(path), "%s/ggml-vocab-%s.gguf", voc_dir(), name);
	rc = eng_gguf_open(&g, path, why, sizeof(why));
	TAP_EXPECT(rc == 0, "%s: %s (run `make vocabs`)", path, why);
	rc = eng_tok_init(&t, g, why, sizeof(why));
	TAP_EXPECT(rc == 0, "%s: tokenizer refused: %s", name, why);
	snprintf(path, sizeof(path), "%s/ggml-vocab-%s.gguf.inp", voc_dir(), name);
	inp = kv_slurp(path, 0, &inp_len);
	TAP_EXPECT(inp != NULL, "%s unreadable (run `make vocabs`)", path);
	snprintf(path, sizeof(path), "%s/ggml-vocab-%s.gguf.out", voc_dir(), name);
	out = kv_slurp(path, 0, &out_len);
	TAP_EXPECT(out != NULL, "%s unreadable (run `make vocabs`)", path);
	got = malloc(65536 * sizeof(*got));
	want = malloc(65536 * sizeof(*want));
	TAP_EXPECT(got && want, "out of memory");

	ip = inp;
	op = out;
	while (ip < inp + inp_len) {
		char *sep = strstr(ip, VOC_SEP), *nl;
		size_t tl = sep ? (size_t)(sep - ip) : (size_t)(inp + inp_len - ip);
		int64_t nw, ng;

		TAP_EXPECT(op < out + out_len, "%s: .inp has more cases than .out", name);
		nl = memchr(op, '\n', (size_t)(out + out_len - op));
		if (!nl)
			nl = out + out_len;
		nw = voc_parse_ids(op, (size_t)(nl - op), want, 65536);
		ng = eng_tok_encode(t, ip, tl, 0, got, 65536);
		TAP_EXPECT(nw <= 65536 && ng >= 0 && ng <= 65536, "%s: case %lld: encode %lld",
		    name, (long long)cases, (long long)ng);
		TAP_EXPECT(eng_tok_min_tokens(t, ip, tl) <= ng, "%s: case %lld: min_tokens %lld > %lld",
		    name, (long long)cases, (long long)eng_tok_min_tokens(t, ip, tl), (long long)ng);
		cases++;
		if (ng == nw && memcmp(got, want, (size_t)nw * sizeof(*got)) == 0) {
			equal++;
		} else if (shown++ < 3) {
			printf("#   %s case %lld (%zu bytes): \"%.*s\"\n", name, (long long)cases - 1,
			    tl, (int)(tl > 60 ? 60 : tl), ip);
			printf("#     want [%s]\n", ids_fmt(want, nw));
			printf("#     got  [%s]\n", ids_fmt(got, ng));
		}
		op = nl < out + out_len ? nl + 1 : nl;
		if (!sep)
			break;
		ip = sep + strlen(VOC_SEP);
	}
	tap_diag("report: vocab %s: %lld of %lld cases equal (add_bos %d)", name, (long long)equal,
	    (long long)cases, eng_tok_add_bos(t));
	TAP_EXPECT(cases > 0, "%s: no cases", name);
	/* llama.cpp's add_bos: SentencePiece and Llama 3 on, BPE off, the GGUF's
	 * tokenizer.ggml.add_bos_token decides when present */
	TAP_EXPECT(eng_tok_add_bos(t) == add_bos, "%s: add_bos %d, llama.cpp's %d", name,
	    eng_tok_add_bos(t), add_bos);
	TAP_EXPECT(equal == cases, "%s: %lld of %lld cases differ", name,
	    (long long)(cases - equal), (long long)cases);
out:
	free(got);
	free(want);
	free(inp);
	free(out);
	eng_tok_free(t);
	eng_gguf_close(g);
	return ok ? TAP_PASS : TAP_FAIL;
}

#define VOC_TEST(fn, name, bos)            \
	static enum tap_result fn(void)    \
	{                                  \
		return voc_run(name, bos); \
	}

VOC_TEST(test_qwen2, "qwen2", 0)
VOC_TEST(test_llama_bpe, "llama-bpe", 1)
VOC_TEST(test_gpt2, "gpt-2", 0)
VOC_TEST(test_starcoder, "starcoder", 0)
VOC_TEST(test_refact, "refact", 0)
VOC_TEST(test_command_r, "command-r", 1)
VOC_TEST(test_mpt, "mpt", 0)
VOC_TEST(test_llama_spm, "llama-spm", 1)
VOC_TEST(test_phi3, "phi-3", 1)
VOC_TEST(test_deepseek_llm, "deepseek-llm", 1)
VOC_TEST(test_deepseek_coder, "deepseek-coder", 1)
VOC_TEST(test_falcon, "falcon", 0)

/* SentencePiece word by word == one merge heap, on random text. */
static enum tap_result
voc_spm_words(const char *name)
{
	static const char *const pool[] = { "a", "the", "Hello", " ", "  ", "   ", "\n", "\t",
		"1", "2024", "'s", ".", "!", "\xc3\xa9", "\xe4\xb8\xad", "\xf0\x9f\x98\x80", "\xff",
		"\xe2\x96\x81", "\xe2\x96", "<s>", "</s>", "<|user|>", "\xc3" };
	char path[1024], why[256], buf[1024];
	struct eng_gguf *g = NULL;
	struct eng_tok *t = NULL;
	int32_t a[4096], b[4096];
	uint64_t rng = 42;
	int ok = 1, i, differ = 0;

	snprintf(path, sizeof(path), "%s/ggml-vocab-%s.gguf", voc_dir(), name);
	TAP_EXPECT(eng_gguf_open(&g, path, why, sizeof(why)) == 0, "%s: %s", path, why);
	TAP_EXPECT(eng_tok_init(&t, g, why, sizeof(why)) == 0, "%s", why);
	TAP_EXPECT(t->spm_words == 1, "%s: word-by-word merging not enabled", name);
	for (i = 0; i < 3000; i++) {
		size_t n = 0, k, parts = 1 + kv_xorshift64s(&rng) % 60;
		int64_t na, nb;
		int special = (int)(kv_xorshift64s(&rng) & 1);
		for (k = 0; k < parts; k++) {
			const char *p = pool[kv_xorshift64s(&rng) % (sizeof(pool) / sizeof(pool[0]))];
			if (n + strlen(p) >= sizeof(buf))
				break;
			memcpy(buf + n, p, strlen(p));
			n += strlen(p);
		}
		t->spm_words = 1;
		na = eng_tok_encode(t, buf, n, special, a, 4096);
		t->spm_words = 0;
		nb = eng_tok_encode(t, buf, n, special, b, 4096);
		if (na != nb || na < 0 || na > 4096 || memcmp(a, b, (size_t)na * sizeof(*a)) != 0)
			differ++;
	}
	TAP_EXPECT(differ == 0, "%s: %d of 3000 texts differ", name, differ);
out:
	eng_tok_free(t);
	eng_gguf_close(g);
	return ok ? TAP_PASS : TAP_FAIL;
}

static enum tap_result
test_spm_words_llama(void)
{
	return voc_spm_words("llama-spm");
}

static enum tap_result
test_spm_words_phi3(void)
{
	return voc_spm_words("phi-3");
}

static const struct tap_test tests[] = {
	{ "qwen2", test_qwen2 },
	{ "llama_bpe", test_llama_bpe },
	{ "gpt2", test_gpt2 },
	{ "starcoder", test_starcoder },
	{ "refact", test_refact },
	{ "command_r", test_command_r },
	{ "mpt", test_mpt },
	{ "llama_spm", test_llama_spm },
	{ "phi3", test_phi3 },
	{ "deepseek_llm", test_deepseek_llm },
	{ "deepseek_coder", test_deepseek_coder },
	{ "falcon", test_falcon },
	{ "spm_words_llama", test_spm_words_llama },
	{ "spm_words_phi3", test_spm_words_phi3 },
};

TAP_MAIN(NULL, NULL)
