/*
 * tokenizer.c: llama.cpp's tokenizers, bit-compatible: byte-level BPE
 * (tokenizer.ggml.model = "gpt2", with the pre-tokenizer named by
 * tokenizer.ggml.pre) and SentencePiece ("llama": Llama 2, Mistral, Phi-3),
 * spec/model.md section 7.  This file loads the vocabulary and runs the
 * pipeline; tok_pre.c, tok_regex.c, tok_bpe.c and tok_spm.c do the steps,
 * tok_hash.c holds the look-up tables they all read.
 *
 * eng_tok_init() copies the vocabulary out of the GGUF (so the tokenizer
 * outlives the map), applies llama.cpp's token-type overrides, and builds the
 * look-up structures: an open-addressing hash from token text to id, a hash
 * from merge pair ("left" + "right", split point) to rank (BPE) or every
 * token's score rank (SentencePiece), the special-token list sorted longest
 * first, the end-of-generation set, and every token's decoded bytes.
 *
 * eng_tok_encode() runs the pipeline of llama_tokenize(text, add_special =
 * false, parse_special):
 *   1. split out special tokens written literally (longest text first),
 *   2. BPE: decode each remaining fragment to code points (invalid UTF-8 ->
 *      U+FFFD per byte, as llama.cpp's unicode_cpts_from_utf8), pre-tokenize
 *      (tok_pre.c), map each word's UTF-8 bytes through the GPT-2
 *      byte->unicode table, merge (tok_bpe.c), look each symbol up; a symbol
 *      that is not a token falls back to its single bytes, and bytes that are
 *      not tokens are dropped;
 *   3. SentencePiece: a space before the fragment at the start or after a
 *      special token (add_space_prefix), spaces as U+2581, merge by score,
 *      byte fallback to <0xXX> (tok_spm.c).
 * Encoding allocates its scratch per call, so one tokenizer may be shared by
 * threads.  Inputs longer than ENG_TOK_MAX_TEXT are refused (ENG_ERR_ARG).
 *
 * Where llama.cpp has no usable answer we choose one: a 4-byte sequence that
 * decodes past U+10FFFF (which aborts llama.cpp) reads as U+FFFD per byte;
 * a NORMAL token whose text holds a code point outside the byte table keeps
 * that code point's UTF-8 when decoded (llama.cpp writes a debug string);
 * special tokens of equal length are tried in id order (llama.cpp's order is
 * unspecified); several tokens matching one FIM/EOT role text list: lowest
 * id; a SentencePiece byte with no token is dropped (llama.cpp throws).
 */
#include <ctype.h>  /* for tolower */
#include <math.h>   /* for isnan */
#include <stdarg.h> /* for va_list */
#include <stdio.h>  /* for vsnprintf */
#include <stdlib.h> /* for malloc */
#include <string.h> /* for memcmp, memmem */

#include "common/fail.h"
#include "engine/model/tok_internal.h"

/* ------------------------------------------------------------------------ */
/* GPT-2 byte <-> unicode mapping                                            */

/* Code point GPT-2 assigns to byte b: printable Latin-1 maps to itself, the
 * other 68 bytes to U+0100.. in increasing order. */
static uint32_t
eng_tok_byte_cp(unsigned b)
{
	unsigned i, n = 0;

	if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)
		return b;
	for (i = 0; i < b; i++)
		if (!((i >= 0x21 && i <= 0x7E) || (i >= 0xA1 && i <= 0xAC) || i >= 0xAE))
			n++;
	return 0x100 + n;
}

/* Fill the byte -> UTF-8 and code point -> byte tables. */
static void
eng_tok_bytemap_build(struct eng_tok_bytemap map[256], int16_t inv[0x144])
{
	unsigned b;
	uint8_t u[4];

	for (b = 0; b < 0x144; b++)
		inv[b] = -1;
	for (b = 0; b < 256; b++) {
		uint32_t cp = eng_tok_byte_cp(b);
		map[b].n = (uint8_t)eng_utf8_encode(cp, u);
		map[b].s[0] = u[0];
		map[b].s[1] = u[1];
		inv[cp] = (int16_t)b;
	}
}

/* ------------------------------------------------------------------------ */
/* Loading                                                                   */


/* Texts llama.cpp recognises when the GGUF names no such token.  Each
 * role takes the first token found and forces it to CONTROL ("control-looking
 * token" override); llama.cpp's order among several matches is its hash
 * map's, ours is the lowest id.  "\xef\xbd\x9c" is U+FF5C and "\xe2\x96\x81"
 * U+2581 (DeepSeek, CodeLlama spellings). */
static const char *const eng_tok_eot_texts[] = { "<|eot_id|>", "<|im_end|>", "<|end|>",
	"<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>", "_<EOT>",
	"<\xef\xbd\x9c" "end\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c>",
	"<end_of_utterance>" };
static const char *const eng_tok_eom_texts[] = { "<|eom_id|>" };
static const char *const eng_tok_fim_pre_texts[] = { "<|fim_prefix|>", "<fim-prefix>",
	"<fim_prefix>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "begin\xef\xbd\x9c>", "<PRE>",
	"\xe2\x96\x81<PRE>", "<|code_prefix|>" };
static const char *const eng_tok_fim_suf_texts[] = { "<|fim_suffix|>", "<fim-suffix>",
	"<fim_suffix>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "hole\xef\xbd\x9c>", "<SUF>",
	"\xe2\x96\x81<SUF>", "<|code_suffix|>" };
static const char *const eng_tok_fim_mid_texts[] = { "<|fim_middle|>", "<fim-middle>",
	"<fim_middle>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "end\xef\xbd\x9c>", "<MID>",
	"\xe2\x96\x81<MID>", "<|code_middle|>" };
static const char *const eng_tok_fim_pad_texts[] = { "<|fim_pad|>", "<fim-pad>",
	"<fim_pad>", "<PAD>" };
static const char *const eng_tok_fim_rep_texts[] = { "<|fim_repo|>", "<|repo_name|>",
	"<fim-repo>", "<REPO>", "<reponame>" };
static const char *const eng_tok_fim_sep_texts[] = { "<|file_sep|>" };

/* Every token with one of these texts ends generation (and is forced to
 * CONTROL), besides EOS, EOT, EOM and the FIM pad/repo/separator tokens. */
static const char *const eng_tok_eog_texts[] = { "<|eot_id|>", "<|im_end|>", "<|end|>",
	"<|return|>", "<|call|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>", "<EOT>",
	"_<EOT>", "<|end_of_text|>", "<end_of_utterance>" };

#define ENG_TOK_NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* Special id from key if present and in range, else dflt (llama.cpp). */
static int32_t
eng_tok_special_id(const struct eng_gguf *g, const char *key, int32_t n_vocab, int32_t dflt)
{
	uint64_t v;
	if (eng_gguf_get_u64(g, key, &v) == 0 && v < (uint64_t)n_vocab)
		return (int32_t)v;
	return dflt;
}

/* Id for a special role: the GGUF key if present and in range, else the
 * lowest token whose text is in list, which is then forced to CONTROL. */
static int32_t
eng_tok_role(struct eng_tok *t, const struct eng_gguf *g, const char *key,
    const char *const *list, size_t n)
{
	int32_t best = -1, id;
	size_t i;

	id = eng_tok_special_id(g, key, t->n_vocab, -1);
	if (id >= 0)
		return id;
	for (i = 0; i < n; i++) {
		id = eng_tok_lookup(t, list[i], strlen(list[i]));
		if (id >= 0 && (best < 0 || id < best))
			best = id;
	}
	if (best >= 0)
		t->type[best] = ENG_TOK_CONTROL;
	return best;
}

/* Read tokens and token types; build the vocab hash. */
static int
eng_tok_load_vocab(struct eng_tok *t, const struct eng_gguf *g, char *why, size_t why_len)
{
	const uint8_t *data, *p, *types = NULL;
	uint64_t n, n_types = 0, i;
	size_t total = 0, off;
	struct eng_gguf_str s;
	int rc;

	rc = eng_gguf_get_array(g, "tokenizer.ggml.tokens", ENG_GGUF_STRING, &data, &n);
	if (rc)
		return eng_fail(why, why_len, ENG_ERR_TOKENIZER,
		    "tokenizer.ggml.tokens is %s", rc == ENG_ERR_NOT_FOUND ? "missing" :
		    "not an array of strings");
	if (n == 0 || n > ENG_TOK_MAX_VOCAB)
		return eng_fail(why, why_len, ENG_ERR_TOKENIZER,
		    "tokenizer.ggml.tokens has %llu entries (1..%d allowed)",
		    (unsigned long long)n, ENG_TOK_MAX_VOCAB);
	rc = eng_gguf_get_array(g, "tokenizer.ggml.token_type", ENG_GGUF_I32, &types, &n_types);
	if (rc == ENG_ERR_FORMAT)
		return eng_fail(why, why_len, ENG_ERR_TOKENIZER,
		    "tokenizer.ggml.token_type is not an array of i32");
	if (rc == 0 && n_types != n)
		return eng_fail(why, why_len, ENG_ERR_TOKENIZER,
		    "tokenizer.ggml.token_type has %llu entries, tokens has %llu",
		    (unsigned long long)n_types, (unsigned long long)n);
	if (rc)
		types = NULL; /* absent: all NORMAL */
	t->n_vocab = (int32_t)n;

	/* first pass: sizes (empty texts become "[EMPTY_<id>]" as in llama.cpp) */
	p = data;
	for (i = 0; i < n; i++) {
		if (eng_gguf_str_array_next(g, &p, &s))
			return eng_fail(why, why_len, ENG_ERR_TOKENIZER,
			    "tokenizer.ggml.tokens: entry %llu runs past the file",
			    (unsigned long long)i);
		total += s.len ? s.len : 20;
	}
	t->text = malloc(total ? total : 1);
	t->text_off = malloc(((size_t)n + 1) * sizeof(*t->text_off));
	t->type = malloc((size_t)n);
	t->flags = calloc((size_t)n, 1);
	if (!t->text || !t->text_off || !t->type || !t->flags)
		return ENG_ERR_NOMEM;
	p = data;
	off = 0;
	for (i = 0; i < n; i++) {
		int32_t ty = ENG_TOK_NORMAL;
		eng_gguf_str_array_next(g, &p, &s);
		t->text_off[i] = off;
		if (s.len) {
			memcpy(t->text + off, s.ptr, s.len);
			off += s.len;
		} else {
			off += (size_t)snprintf(t->text + off, 20, "[EMPTY_%u]", (unsigned)i);
		}
		if (types) {
			memcpy(&ty, types + 4 * i, 4);
			if (ty < ENG_TOK_UNDEFINED || ty > ENG_TOK_BYTE)
				ty = ENG_TOK_UNDEFINED;
		}
		t->type[i] = (uint8_t)ty;
	}
	t->text_off[n] = off;

	t->vocab_mask = eng_tok_ht_size((size_t)n) - 1;
	t->vocab_ht = malloc((t->vocab_mask + 1) * sizeof(*t->vocab_ht));
	if (!t->vocab_ht)
		return ENG_ERR_NOMEM;
	memset(t->vocab_ht, 0xff, (t->vocab_mask + 1) * sizeof(*t->vocab_ht));
	for (i = 0; i < n; i++) {
		const char *tp = t->text + t->text_off[i];
		size_t len = t->text_off[i + 1] - t->text_off[i];
		size_t h = (size_t)eng_tok_hash(tp, len, 0) & t->vocab_mask;
		if (eng_tok_lookup(t, tp, len) >= 0)
			return eng_fail(why, why_len, ENG_ERR_TOKENIZER,
			    "tokenizer.ggml.tokens: token %llu duplicates an earlier text",
			    (unsigned long long)i);
		while (t->vocab_ht[h] >= 0)
			h = (h + 1) & t->vocab_mask;
		t->vocab_ht[h] = (int32_t)i;
	}
	return 0;
}

/* Read the merges ("left right", split at the first space after index 0);
 * the index is the rank, and a repeated pair keeps its first rank. */
static int
eng_tok_load_merges(struct eng_tok *t, const struct eng_gguf *g, char *why, size_t why_len)
{
	const uint8_t *data, *p;
	uint64_t n, i;
	size_t total = 0, off = 0;
	struct eng_gguf_str s;
	int rc;

	rc = eng_gguf_get_array(g, "tokenizer.ggml.merges", ENG_GGUF_STRING, &data, &n);
	if (rc)
		return eng_fail(why, why_len, ENG_ERR_TOKENIZER,
		    "tokenizer.ggml.merges is %s", rc == ENG_ERR_NOT_FOUND ? "missing" :
		    "not an array of strings");
	if (n > ENG_TOK_MAX_VOCAB)
		return eng_fail(why, why_len, ENG_ERR_TOKENIZER,
		    "tokenizer.ggml.merges has %llu entries (at most %d allowed)",
		    (unsigned long long)n, ENG_TOK_MAX_VOCAB);
	p = data;
	for (i = 0; i < n; i++) {
		const char *sp;
		if (eng_gguf_str_array_next(g, &p, &s))
			return eng_fail(why, why_len, ENG_ERR_TOKENIZER,
			    "tokenizer.ggml.merges: entry %llu runs past the file",
			    (unsigned long long)i);
		sp = s.len > 1 ? memchr(s.ptr + 1, ' ', s.len - 1) : NULL;
		if (!sp)
			return eng_fail(why, why_len, ENG_ERR_TOKENIZER,
			    "tokenizer.ggml.merges: entry %llu has no space separating two parts",
			    (unsigned long long)i);
		total += s.len - 1;
	}
	t->n_merges = (int32_t)n;
	t->merge_text = malloc(total ? total : 1);
	t->merge_off = malloc(((size_t)n + 1) * sizeof(*t->merge_off));
	t->merge_split = malloc(((size_t)n ? (size_t)n : 1) * sizeof(*t->merge_split));
	t->merge_mask = eng_tok_ht_size((size_t)n) - 1;
	t->merge_ht = malloc((t->merge_mask + 1) * sizeof(*t->merge_ht));
	if (!t->merge_text || !t->merge_off || !t->merge_split || !t->merge_ht)
		return ENG_ERR_NOMEM;
	memset(t->merge_ht, 0xff, (t->merge_mask + 1) * sizeof(*t->merge_ht));
	p = data;
	for (i = 0; i < n; i++) {
		size_t split, len, h;
		char *dst = t->merge_text + off;
		eng_gguf_str_array_next(g, &p, &s);
		split = (size_t)((const char *)memchr(s.ptr + 1, ' ', s.len - 1) - s.ptr);
		memcpy(dst, s.ptr, split);
		memcpy(dst + split, s.ptr + split + 1, s.len - split - 1);
		len = s.len - 1;
		t->merge_off[i] = off;
		t->merge_off[i + 1] = off + len;
		t->merge_split[i] = (uint32_t)split;
		off += len;
		if (eng_tok_merge_rank(t, dst, split, len - split) >= 0)
			continue; /* duplicate pair: the first rank stands */
		h = (size_t)eng_tok_hash(dst, len, split) & t->merge_mask;
		while (t->merge_ht[h] >= 0)
			h = (h + 1) & t->merge_mask;
		t->merge_ht[h] = (int32_t)i;
	}
	t->merge_off[n] = off;
	return 0;
}

/* Apply llama.cpp's text-based type overrides, then pick the special ids and
 * the end-of-generation set. */
static void
eng_tok_load_specials(struct eng_tok *t, const struct eng_gguf *g)
{
	int32_t eot, eom, fim_pad, fim_rep, fim_sep, id;
	int32_t n = t->n_vocab;
	size_t i;

	/* llama.cpp's defaults: 11 for BOS and EOS (gpt2), 1 and 2 (llama) */
	if (t->model == ENG_TOK_MODEL_SPM) {
		t->bos = eng_tok_special_id(g, "tokenizer.ggml.bos_token_id", n, n > 1 ? 1 : -1);
		t->eos = eng_tok_special_id(g, "tokenizer.ggml.eos_token_id", n, n > 2 ? 2 : -1);
	} else {
		t->bos = eng_tok_special_id(g, "tokenizer.ggml.bos_token_id", n, n > 11 ? 11 : -1);
		t->eos = eng_tok_special_id(g, "tokenizer.ggml.eos_token_id", n, n > 11 ? 11 : -1);
	}
	eot = eng_tok_role(t, g, "tokenizer.ggml.eot_token_id", eng_tok_eot_texts,
	    ENG_TOK_NELEM(eng_tok_eot_texts));
	eom = eng_tok_role(t, g, "tokenizer.ggml.eom_token_id", eng_tok_eom_texts,
	    ENG_TOK_NELEM(eng_tok_eom_texts));
	/* prefix/suffix/middle only matter for the CONTROL override; the
	 * deprecated key names are also read, as llama.cpp does */
	if (eng_tok_special_id(g, "tokenizer.ggml.prefix_token_id", n, -1) < 0)
		eng_tok_role(t, g, "tokenizer.ggml.fim_pre_token_id", eng_tok_fim_pre_texts,
		    ENG_TOK_NELEM(eng_tok_fim_pre_texts));
	if (eng_tok_special_id(g, "tokenizer.ggml.suffix_token_id", n, -1) < 0)
		eng_tok_role(t, g, "tokenizer.ggml.fim_suf_token_id", eng_tok_fim_suf_texts,
		    ENG_TOK_NELEM(eng_tok_fim_suf_texts));
	if (eng_tok_special_id(g, "tokenizer.ggml.middle_token_id", n, -1) < 0)
		eng_tok_role(t, g, "tokenizer.ggml.fim_mid_token_id", eng_tok_fim_mid_texts,
		    ENG_TOK_NELEM(eng_tok_fim_mid_texts));
	fim_pad = eng_tok_role(t, g, "tokenizer.ggml.fim_pad_token_id", eng_tok_fim_pad_texts,
	    ENG_TOK_NELEM(eng_tok_fim_pad_texts));
	fim_rep = eng_tok_role(t, g, "tokenizer.ggml.fim_rep_token_id", eng_tok_fim_rep_texts,
	    ENG_TOK_NELEM(eng_tok_fim_rep_texts));
	fim_sep = eng_tok_role(t, g, "tokenizer.ggml.fim_sep_token_id", eng_tok_fim_sep_texts,
	    ENG_TOK_NELEM(eng_tok_fim_sep_texts));

	for (i = 0; i < ENG_TOK_NELEM(eng_tok_eog_texts); i++) {
		id = eng_tok_lookup(t, eng_tok_eog_texts[i], strlen(eng_tok_eog_texts[i]));
		if (id >= 0) {
			t->flags[id] |= ENG_TOK_F_EOG;
			t->type[id] = ENG_TOK_CONTROL;
		}
	}
	if (t->eos >= 0)
		t->flags[t->eos] |= ENG_TOK_F_EOG;
	if (eot >= 0)
		t->flags[eot] |= ENG_TOK_F_EOG;
	if (eom >= 0)
		t->flags[eom] |= ENG_TOK_F_EOG;
	if (fim_pad >= 0)
		t->flags[fim_pad] |= ENG_TOK_F_EOG;
	if (fim_rep >= 0)
		t->flags[fim_rep] |= ENG_TOK_F_EOG;
	if (fim_sep >= 0)
		t->flags[fim_sep] |= ENG_TOK_F_EOG;
}

/* Sort key of a special token. */
struct eng_tok_skey {
	size_t len;
	int32_t id;
};

/* Longer text first; equal lengths by id (llama.cpp leaves that order open). */
static int
eng_tok_special_cmp(const void *a, const void *b)
{
	const struct eng_tok_skey *x = a, *y = b;

	if (x->len != y->len)
		return x->len > y->len ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

/* Special-token list, decoded pieces and the single-byte token table. */
static int
eng_tok_build_caches(struct eng_tok *t)
{
	struct eng_tok_skey *keys;
	int16_t inv[0x144];
	int32_t id, n = t->n_vocab;
	size_t total = 0, off = 0;
	unsigned b;

	eng_tok_bytemap_build(t->map, inv);

	t->special = malloc((size_t)n * sizeof(*t->special));
	keys = malloc((size_t)n * sizeof(*keys));
	if (!t->special || !keys) {
		free(keys);
		return ENG_ERR_NOMEM;
	}
	t->n_special = 0;
	for (id = 0; id < n; id++)
		if (t->type[id] == ENG_TOK_CONTROL || t->type[id] == ENG_TOK_USER_DEFINED ||
		    t->type[id] == ENG_TOK_UNKNOWN) {
			keys[t->n_special].len = t->text_off[id + 1] - t->text_off[id];
			keys[t->n_special++].id = id;
		}
	qsort(keys, (size_t)t->n_special, sizeof(*keys), eng_tok_special_cmp);
	for (id = 0; id < t->n_special; id++)
		t->special[id] = keys[id].id;
	free(keys);

	/* a decoded NORMAL token is never longer than its text */
	total = t->text_off[n];
	t->piece = malloc(total ? total : 1);
	t->piece_off = malloc(((size_t)n + 1) * sizeof(*t->piece_off));
	if (!t->piece || !t->piece_off)
		return ENG_ERR_NOMEM;
	for (id = 0; id < n; id++) {
		const uint8_t *s = (const uint8_t *)t->text + t->text_off[id];
		size_t len = t->text_off[id + 1] - t->text_off[id], i = 0, adv;

		t->piece_off[id] = off;
		switch ((enum eng_tok_type)t->type[id]) {
		case ENG_TOK_CONTROL:
		case ENG_TOK_UNKNOWN:
			t->flags[id] |= ENG_TOK_F_SPECIAL;
			/* fall through */
		case ENG_TOK_USER_DEFINED:
			memcpy(t->piece + off, s, len);
			off += len;
			break;
		case ENG_TOK_NORMAL:
			if (t->model == ENG_TOK_MODEL_SPM) {
				/* U+2581 reads as a space */
				while (i < len) {
					if (i + 3 <= len && memcmp(s + i, "\xe2\x96\x81", 3) == 0) {
						t->piece[off++] = ' ';
						i += 3;
					} else {
						t->piece[off++] = (char)s[i++];
					}
				}
				break;
			}
			/* code point -> GPT-2 byte; a code point outside the table
			 * is kept as its UTF-8 (llama.cpp writes a debug string) */
			while (i < len) {
				uint32_t cp = eng_utf8_decode(s + i, len - i, &adv);
				if (cp < 0x144 && inv[cp] >= 0) {
					t->piece[off++] = (char)inv[cp];
				} else {
					memcpy(t->piece + off, s + i, adv);
					off += adv;
				}
				i += adv;
			}
			break;
		case ENG_TOK_BYTE:
			/* SentencePiece "<0xXX>": that byte (BPE: no text) */
			if (t->model == ENG_TOK_MODEL_SPM && len >= 5 &&
			    kv_hex_value((char)s[3]) >= 0 && kv_hex_value((char)s[4]) >= 0)
				t->piece[off++] = (char)(kv_hex_value((char)s[3]) * 16 +
				    kv_hex_value((char)s[4]));
			break;
		case ENG_TOK_UNDEFINED:
		case ENG_TOK_UNUSED:
		default:
			break; /* no text, as llama.cpp */
		}
	}
	t->piece_off[n] = off;

	for (b = 0; b < 256; b++) {
		char c = (char)b, hex[7];
		t->byte_tok[b] = -1;
		if (t->model == ENG_TOK_MODEL_SPM) {
			/* llama.cpp's byte_to_token: "<0xXX>", else the raw byte */
			snprintf(hex, sizeof(hex), "<0x%02X>", b);
			t->byte_tok[b] = eng_tok_lookup(t, hex, 6);
		}
		if (t->byte_tok[b] < 0)
			t->byte_tok[b] = eng_tok_lookup(t, &c, 1);
	}
	return 0;
}

/* bound_text and bound_byte for eng_tok_min_tokens (after the caches). */
static void
eng_tok_build_bound(struct eng_tok *t)
{
	size_t most = 0, len;
	int32_t i;
	int b;

	for (i = 0; i < t->n_merges; i++)
		if (eng_tok_lookup(t, t->merge_text + t->merge_off[i],
		    t->merge_off[i + 1] - t->merge_off[i]) < 0)
			return; /* no bound: bound_text stays 0 */
	for (i = 0; i < t->n_vocab; i++)
		if ((len = t->text_off[i + 1] - t->text_off[i]) > most)
			most = len;
	for (b = 0; b < 0x80; b++)
		t->bound_byte[b] = t->model == ENG_TOK_MODEL_SPM ? t->byte_tok[b] >= 0 :
		    eng_tok_lookup(t, (const char *)t->map[b].s, t->map[b].n) >= 0;
	t->bound_text = most;
}

/* Sort key of a score. */
struct eng_tok_score {
	float score;
	int32_t id;
};

/* Higher score first (NaN last, as the lowest); then by id. */
static int
eng_tok_score_cmp(const void *a, const void *b)
{
	const struct eng_tok_score *x = a, *y = b;
	int xn = isnan(x->score), yn = isnan(y->score);

	if (xn != yn)
		return xn - yn;
	if (!xn && x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

/* SentencePiece: every token's score as a dense rank (0 = highest; equal
 * scores share a rank), so the merge loop's order is llama.cpp's (higher
 * score first, then leftmost).  Scores are optional (all 0) as in llama.cpp. */
static int
eng_tok_load_scores(struct eng_tok *t, const struct eng_gguf *g, char *why, size_t why_len)
{
	const uint8_t *data = NULL;
	uint64_t n = 0;
	struct eng_tok_score *k;
	int32_t i, rank = 0;
	int rc;

	rc = eng_gguf_get_array(g, "tokenizer.ggml.scores", ENG_GGUF_F32, &data, &n);
	if (rc == ENG_ERR_FORMAT)
		return eng_fail(why, why_len, ENG_ERR_TOKENIZER,
		    "tokenizer.ggml.scores is not an array of f32");
	if (rc == 0 && n != (uint64_t)t->n_vocab)
		return eng_fail(why, why_len, ENG_ERR_TOKENIZER,
		    "tokenizer.ggml.scores has %llu entries, tokens has %d",
		    (unsigned long long)n, t->n_vocab);
	if (rc)
		data = NULL;
	k = malloc((size_t)t->n_vocab * sizeof(*k));
	t->spm_rank = malloc((size_t)t->n_vocab * sizeof(*t->spm_rank));
	if (!k || !t->spm_rank) {
		free(k);
		return ENG_ERR_NOMEM;
	}
	for (i = 0; i < t->n_vocab; i++) {
		k[i].score = 0.0f;
		if (data)
			memcpy(&k[i].score, data + 4 * (size_t)i, 4);
		k[i].id = i;
	}
	qsort(k, (size_t)t->n_vocab, sizeof(*k), eng_tok_score_cmp);
	for (i = 0; i < t->n_vocab; i++) {
		if (i > 0 && eng_tok_score_cmp(&(struct eng_tok_score){ k[i].score, 0 },
		    &(struct eng_tok_score){ k[i - 1].score, 0 }) != 0)
			rank++;
		t->spm_rank[k[i].id] = rank;
	}
	free(k);
	return 0;
}

/* llama.cpp's per-model token attributes: Phi-3's special tokens (but
 * <unk>, <s>, <|endoftext|>) drop the spaces after them; keyed on
 * general.name. */
static void
eng_tok_load_attrs(struct eng_tok *t, const struct eng_gguf *g)
{
	static const char *const keep[] = { "<unk>", "<s>", "<|endoftext|>" };
	struct eng_gguf_str s;
	char name[256];
	size_t i, n;
	int32_t id;

	if (eng_gguf_get_str(g, "general.name", &s) != 0)
		return;
	n = s.len < sizeof(name) - 1 ? s.len : sizeof(name) - 1;
	for (i = 0; i < n; i++)
		name[i] = (char)tolower((unsigned char)s.ptr[i]);
	name[n] = '\0';
	if (!strstr(name, "phi-3") && !strstr(name, "phi3"))
		return;
	for (id = 0; id < t->n_vocab; id++)
		if (t->type[id] == ENG_TOK_CONTROL || t->type[id] == ENG_TOK_USER_DEFINED ||
		    t->type[id] == ENG_TOK_UNKNOWN)
			t->flags[id] |= ENG_TOK_F_RSTRIP;
	if ((id = eng_tok_lookup(t, "</s>", 4)) >= 0)
		t->flags[id] |= ENG_TOK_F_RSTRIP;
	for (i = 0; i < ENG_TOK_NELEM(keep); i++)
		if ((id = eng_tok_lookup(t, keep[i], strlen(keep[i]))) >= 0)
			t->flags[id] &= (uint8_t)~ENG_TOK_F_RSTRIP;
}

/* Build a tokenizer from the GGUF's tokenizer.ggml.* keys. */
int
eng_tok_init(struct eng_tok **out, const struct eng_gguf *g, char *why, size_t why_len)
{
	struct eng_tok *t;
	struct eng_gguf_str s;
	int rc, flag;

	if (!out || !g)
		return eng_fail(why, why_len, ENG_ERR_ARG, "eng_tok_init: NULL argument");
	*out = NULL;
	rc = eng_gguf_get_str(g, "tokenizer.ggml.model", &s);
	if (rc)
		return eng_fail(why, why_len, ENG_ERR_TOKENIZER,
		    "tokenizer.ggml.model is %s", rc == ENG_ERR_NOT_FOUND ? "missing" :
		    "not a string");
	t = calloc(1, sizeof(*t));
	if (!t)
		return ENG_ERR_NOMEM;
	if (eng_gguf_str_eq(s, "gpt2")) {
		t->model = ENG_TOK_MODEL_BPE;
	} else if (eng_gguf_str_eq(s, "llama")) {
		t->model = ENG_TOK_MODEL_SPM;
	} else {
		rc = eng_fail(why, why_len, ENG_ERR_TOKENIZER,
		    "tokenizer.ggml.model '%.*s' is not supported ('gpt2': byte-level BPE, "
		    "'llama': SentencePiece are)", (int)(s.len > 64 ? 64 : s.len), s.ptr);
		goto fail;
	}
	if (t->model == ENG_TOK_MODEL_BPE) {
		/* only BPE has pre-tokenizers (llama.cpp ignores the key otherwise) */
		rc = eng_gguf_get_str(g, "tokenizer.ggml.pre", &s);
		if (rc == ENG_ERR_NOT_FOUND) {
			/* llama.cpp: "default", with a warning that old conversions
			 * lacking the key may tokenize worse than their model expects */
			s.ptr = "default";
			s.len = 7;
		} else if (rc) {
			rc = eng_fail(why, why_len, ENG_ERR_TOKENIZER,
			    "tokenizer.ggml.pre is not a string");
			goto fail;
		}
		t->pre = eng_tok_pre_from_name(s);
		if (!t->pre) {
			char list[512];
			rc = eng_fail(why, why_len, ENG_ERR_TOKENIZER,
			    "tokenizer.ggml.pre '%.*s' is not supported (supported: %s)",
			    (int)(s.len > 64 ? 64 : s.len), s.ptr,
			    eng_tok_pre_list(list, sizeof(list)));
			goto fail;
		}
		if ((rc = eng_tok_pre_build(t, why, why_len)) != 0)
			goto fail;
	}
	/* llama.cpp: on for SentencePiece unless the GGUF says otherwise */
	t->add_space_prefix = t->model == ENG_TOK_MODEL_SPM;
	if (eng_gguf_get_bool(g, "tokenizer.ggml.add_space_prefix", &flag) == 0)
		t->add_space_prefix = flag != 0;
	t->add_bos = t->model == ENG_TOK_MODEL_SPM || t->pre == ENG_TOK_PRE_LLAMA3;
	if (eng_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &flag) == 0)
		t->add_bos = flag != 0;
	if ((rc = eng_tok_load_vocab(t, g, why, why_len)) != 0)
		goto fail;
	if (t->model == ENG_TOK_MODEL_BPE)
		rc = eng_tok_load_merges(t, g, why, why_len);
	else
		rc = eng_tok_load_scores(t, g, why, why_len);
	if (rc)
		goto fail;
	eng_tok_load_specials(t, g);
	if ((rc = eng_tok_build_caches(t)) != 0)
		goto fail;
	eng_tok_load_attrs(t, g);
	eng_tok_build_bound(t);
	if (t->model == ENG_TOK_MODEL_SPM)
		t->spm_words = eng_tok_spm_words(t);
	*out = t;
	return 0;
fail:
	if (rc == ENG_ERR_NOMEM)
		eng_fail(why, why_len, rc, "out of memory loading the tokenizer");
	eng_tok_free(t);
	return rc;
}

/* Release everything eng_tok_init built; NULL and partial objects are fine. */
void
eng_tok_free(struct eng_tok *t)
{
	if (!t)
		return;
	free(t->text);
	free(t->text_off);
	free(t->type);
	free(t->flags);
	free(t->piece);
	free(t->piece_off);
	free(t->vocab_ht);
	free(t->merge_text);
	free(t->merge_off);
	free(t->merge_split);
	free(t->merge_ht);
	free(t->special);
	free(t->spm_rank);
	eng_tok_pre_free(t);
	free(t);
}

/* ------------------------------------------------------------------------ */
/* Encoding                                                                  */

/* A slice of the input: raw text (id < 0) or a special token. */
struct eng_tok_frag {
	size_t off, len;
	int32_t id;
};

/* Append a fragment to *v (growing it). */
static int
eng_tok_frag_push(struct eng_tok_frag **v, size_t *n, size_t *cap, size_t off, size_t len,
    int32_t id)
{
	if (*n == *cap) {
		size_t nc = *cap ? 2 * *cap : 16;
		struct eng_tok_frag *p = realloc(*v, nc * sizeof(*p));
		if (!p)
			return ENG_ERR_NOMEM;
		*v = p;
		*cap = nc;
	}
	(*v)[*n].off = off;
	(*v)[*n].len = len;
	(*v)[*n].id = id;
	(*n)++;
	return 0;
}

/* Split text into raw fragments and special tokens, as llama.cpp's
 * tokenizer_st_partition: for each special (longest first) every raw
 * fragment is cut at each literal occurrence, left to right. */
static int
eng_tok_partition(const struct eng_tok *t, const char *text, size_t len, int parse_special,
    struct eng_tok_frag **out, size_t *n_out)
{
	struct eng_tok_frag *a = NULL, *b = NULL, *tmp;
	size_t na = 0, ca = 0, nb = 0, cb = 0, i, ctmp;
	int32_t k;
	int rc = 0;

	if (len && (rc = eng_tok_frag_push(&a, &na, &ca, 0, len, -1)) != 0)
		goto out;
	for (k = 0; k < t->n_special && na; k++) {
		int32_t id = t->special[k];
		const char *st = t->text + t->text_off[id];
		size_t sl = t->text_off[id + 1] - t->text_off[id];

		if (!parse_special && t->type[id] != ENG_TOK_USER_DEFINED)
			continue;
		if (sl > len)
			continue;
		nb = 0;
		for (i = 0; i < na; i++) {
			size_t off = a[i].off, end = a[i].off + a[i].len;
			if (a[i].id >= 0) {
				rc = eng_tok_frag_push(&b, &nb, &cb, a[i].off, a[i].len, a[i].id);
				if (rc)
					goto out;
				continue;
			}
			while (off < end) {
				const char *m = memmem(text + off, end - off, st, sl);
				size_t mo;
				if (!m) {
					rc = eng_tok_frag_push(&b, &nb, &cb, off, end - off, -1);
					break;
				}
				mo = (size_t)(m - text);
				if (mo > off)
					rc = eng_tok_frag_push(&b, &nb, &cb, off, mo - off, -1);
				if (rc)
					break;
				if ((rc = eng_tok_frag_push(&b, &nb, &cb, mo, sl, id)))
					break;
				off = mo + sl;
				if (t->flags[id] & ENG_TOK_F_RSTRIP) /* C isspace, as llama.cpp */
					while (off < end && (text[off] == ' ' ||
					    (text[off] >= '\t' && text[off] <= '\r')))
						off++;
			}
			if (rc)
				goto out;
		}
		tmp = a, a = b, b = tmp;
		ctmp = ca, ca = cb, cb = ctmp;
		na = nb;
	}
out:
	free(b);
	if (rc) {
		free(a);
		return rc;
	}
	*out = a;
	*n_out = na;
	return 0;
}

/* Encode text (see model.h); *cont as eng_tok_encode_cont's. */
static int64_t
eng_tok_encode_at(const struct eng_tok *t, const char *text, size_t len, int parse_special,
    int *cont, int32_t *ids, int64_t cap)
{
	struct eng_tok_frag *frags = NULL;
	struct eng_tok_enc e;
	size_t n_frags = 0, i, max_raw = 0;
	int rc;

	if (!t || (!text && len) || cap < 0 || (cap > 0 && !ids))
		return ENG_ERR_ARG;
	if (len > ENG_TOK_MAX_TEXT)
		return ENG_ERR_ARG;
	/* the white space an RSTRIP special before this text would have eaten
	 * (C isspace, as the partition's) */
	while ((*cont & ENG_TOK_CONT_RSTRIP) && len && (*text == ' ' ||
	    (*text >= '\t' && *text <= '\r')))
		text++, len--;
	memset(&e, 0, sizeof(e));
	e.t = t;
	e.ids = ids;
	e.cap = cap;

	rc = eng_tok_partition(t, text, len, parse_special, &frags, &n_frags);
	if (rc)
		return rc;
	for (i = 0; i < n_frags; i++)
		if (frags[i].id < 0 && frags[i].len > max_raw)
			max_raw = frags[i].len;
	if (max_raw && t->model == ENG_TOK_MODEL_BPE) {
		e.cps = malloc(max_raw * sizeof(*e.cps));
		e.cat = malloc(max_raw);
		if (t->n_steps)
			e.rsym = malloc(max_raw * sizeof(*e.rsym));
		if (!e.cps || !e.cat || (t->n_steps && !e.rsym))
			e.err = ENG_ERR_NOMEM;
	}
	for (i = 0; i < n_frags && !e.err; i++) {
		const char *frag = text + frags[i].off;
		if (frags[i].id >= 0)
			eng_tok_emit(&e, frags[i].id);
		else if (t->model == ENG_TOK_MODEL_SPM)
			/* a space first at the start and after a special token */
			eng_tok_spm_encode(&e, frag, frags[i].len, t->add_space_prefix &&
			    (i ? frags[i - 1].id >= 0 : !(*cont & ENG_TOK_CONT_RAW)));
		else
			eng_tok_pre_encode(&e, (const uint8_t *)frag, frags[i].len);
	}
	if (n_frags) /* what the next text continues */
		*cont = frags[n_frags - 1].id < 0 ? ENG_TOK_CONT_RAW :
		    t->flags[frags[n_frags - 1].id] & ENG_TOK_F_RSTRIP ? ENG_TOK_CONT_RSTRIP : 0;
	free(frags);
	free(e.cps);
	free(e.cat);
	free(e.rsym);
	free(e.bnd);
	free(e.buf);
	free(e.sym);
	free(e.heap);
	return e.err ? e.err : e.n;
}

int64_t
eng_tok_encode(const struct eng_tok *t, const char *text, size_t len, int parse_special,
    int32_t *ids, int64_t cap)
{
	int cont = 0;
	return eng_tok_encode_at(t, text, len, parse_special, &cont, ids, cap);
}

int64_t
eng_tok_encode_cont(const struct eng_tok *t, const char *text, size_t len, int parse_special,
    int *cont, int32_t *ids, int64_t cap)
{
	int64_t r;
	int c = *cont;
	r = eng_tok_encode_at(t, text, len, parse_special, &c, ids, cap);
	if (r >= 0 && r <= cap) /* a call to retry with more room leaves it as it was */
		*cont = (int)c;
	return r;
}

int
eng_tok_nl_joins_before(const struct eng_tok *t)
{
	return t && (t->pre == ENG_TOK_PRE_LLAMA3 || t->pre == ENG_TOK_PRE_QWEN2);
}

int
eng_tok_nl_apart(const struct eng_tok *t)
{
	int32_t id;
	if (!t || t->model != ENG_TOK_MODEL_SPM)
		return 0;
	for (id = 0; id < t->n_vocab; id++)
		if (t->type[id] != ENG_TOK_BYTE && memchr(t->text + t->text_off[id], '\n',
		    t->text_off[id + 1] - t->text_off[id]))
			return 0;
	return 1;
}

/* A lower bound on a text's token count without BPE (see model.h).  A
 * token stands for one vocabulary text: a special split out of the text
 * (its own bytes), or a BPE symbol, whose text maps each byte of the word
 * to one or two characters, so no token covers more bytes than the longest
 * text has (bound_text).  Only ASCII bytes are counted: each reads as
 * itself (never part of another UTF-8 sequence), and one whose symbol is
 * in the vocabulary always ends up in an emitted token as long as every
 * merge's result is in the vocabulary too (else BPE's byte fallback may
 * emit nothing for a symbol).  Bytes without a symbol (SmolLM2 has none
 * for some control bytes) may vanish and are not counted. */
int64_t
eng_tok_min_tokens(const struct eng_tok *t, const char *text, size_t len)
{
	size_t i, counted = 0;

	if (!t || !text || !t->bound_text)
		return 0;
	for (i = 0; i < len; i++)
		counted += t->bound_byte[(uint8_t)text[i]];
	return (int64_t)(counted / t->bound_text);
}

/* ------------------------------------------------------------------------ */
/* Decoding and queries                                                      */

/* Decoded bytes of token id (see model.h). */
const char *
eng_tok_piece(const struct eng_tok *t, int32_t id, int special, size_t *len)
{
	const char *p;

	if (!t || id < 0 || id >= t->n_vocab) {
		if (len)
			*len = 0;
		return NULL;
	}
	p = t->piece + t->piece_off[id];
	if (len)
		*len = (!special && (t->flags[id] & ENG_TOK_F_SPECIAL)) ? 0 :
		    t->piece_off[id + 1] - t->piece_off[id];
	return p;
}

/* Copy token id's bytes into buf, truncated to cap. */
int
eng_tok_decode(const struct eng_tok *t, int32_t id, int special, char *buf, size_t cap)
{
	size_t n;
	const char *p;

	if (!t || (!buf && cap))
		return ENG_ERR_ARG;
	p = eng_tok_piece(t, id, special, &n);
	if (!p)
		return ENG_ERR_TOKEN;
	if (n > cap)
		n = cap;
	if (n > (size_t)INT32_MAX)
		n = (size_t)INT32_MAX;
	memcpy(buf, p, n);
	return (int)n;
}

/* Number of tokens. */
int32_t
eng_tok_n_vocab(const struct eng_tok *t)
{
	return t ? t->n_vocab : 0;
}

/* Beginning-of-sequence id, or -1. */
int32_t
eng_tok_bos(const struct eng_tok *t)
{
	return t ? t->bos : -1;
}

/* 1 if a prompt starts with BOS (see model.h). */
int
eng_tok_add_bos(const struct eng_tok *t)
{
	return t ? t->add_bos : 0;
}

/* End-of-sequence id, or -1. */
int32_t
eng_tok_eos(const struct eng_tok *t)
{
	return t ? t->eos : -1;
}

/* 1 if id is in llama.cpp's end-of-generation set. */
int
eng_tok_is_eog(const struct eng_tok *t, int32_t id)
{
	if (!t || id < 0 || id >= t->n_vocab)
		return 0;
	return (t->flags[id] & ENG_TOK_F_EOG) != 0;
}
