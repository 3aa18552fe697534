/*
 * tok_internal.h: what the tokenizer's files share (engine/model/tokenizer.c,
 * tok_hash.c, tok_pre.c, tok_bpe.c, tok_spm.c, tok_regex.c); nothing else
 * includes it.
 *
 * tokenizer.c loads the vocabulary and runs the pipeline; tok_pre.c is the
 * pre-tokenizers (which text pieces BPE sees), tok_regex.c the small regex
 * matcher some of them use, tok_bpe.c the merge loop shared by byte-level
 * BPE and SentencePiece, tok_spm.c SentencePiece's text handling, tok_hash.c
 * the look-up tables from a token's text and a merge pair.
 */
#ifndef ENGINE_MODEL_TOK_INTERNAL_H
#define ENGINE_MODEL_TOK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "engine/model/model.h"
#include "engine/model/unicode.h"

/* GGUF token types (tokenizer.ggml.token_type). */
enum eng_tok_type {
	ENG_TOK_UNDEFINED = 0,
	ENG_TOK_NORMAL = 1,
	ENG_TOK_UNKNOWN = 2,
	ENG_TOK_CONTROL = 3,
	ENG_TOK_USER_DEFINED = 4,
	ENG_TOK_UNUSED = 5,
	ENG_TOK_BYTE = 6
};

/* Tokenizer models (tokenizer.ggml.model). */
enum eng_tok_model {
	ENG_TOK_MODEL_BPE = 1, /* "gpt2": byte-level BPE with merges */
	ENG_TOK_MODEL_SPM = 2  /* "llama": SentencePiece BPE by score, byte fallback */
};

/* Pre-tokenizer pipelines we implement (tok_pre.c). */
enum eng_tok_pre {
	ENG_TOK_PRE_NONE = 0,        /* SentencePiece: no pre-tokenizer */
	ENG_TOK_PRE_DIGITS_GPT2 = 1, /* \p{N} split, then the GPT-2 regex */
	ENG_TOK_PRE_GPT2 = 2,        /* the GPT-2 regex alone */
	ENG_TOK_PRE_LLAMA3 = 3,      /* Llama 3's regex, numbers in threes; whole-word tokens */
	ENG_TOK_PRE_QWEN2 = 4,       /* Llama 3's regex with single-digit numbers */
	ENG_TOK_PRE_DEEPSEEK_LLM = 5,
	ENG_TOK_PRE_DEEPSEEK_CODER = 6,
	ENG_TOK_PRE_FALCON = 7,
	ENG_TOK_PRE_DEFAULT = 8 /* llama.cpp's "default" (also when the key is missing) */
};

/* Most regexes a pre-tokenizer runs in a row. */
#define ENG_TOK_MAX_STEPS 6

#define ENG_TOK_MAX_VOCAB (1 << 26)        /* sanity bound on tokens and merges */
#define ENG_TOK_MAX_TEXT ((size_t)1 << 26) /* longest input eng_tok_encode takes */

/* Token flag bits (struct eng_tok.flags). */
#define ENG_TOK_F_SPECIAL 0x01 /* piece shown only when specials are requested */
#define ENG_TOK_F_EOG 0x02     /* ends generation */
#define ENG_TOK_F_RSTRIP 0x04  /* spaces after it are dropped (Phi-3's specials) */

/* UTF-8 of the code point GPT-2 assigns to a byte (1 or 2 bytes). */
struct eng_tok_bytemap {
	uint8_t s[2];
	uint8_t n;
};

struct eng_rx;

struct eng_tok {
	int32_t n_vocab;
	int32_t bos, eos; /* -1 when absent */
	enum eng_tok_model model;
	enum eng_tok_pre pre;
	struct eng_rx *steps[ENG_TOK_MAX_STEPS]; /* the pre's regexes (tok_pre.c) */
	int n_steps;
	int add_space_prefix; /* SentencePiece: ' ' before text at the start or after a special */
	int add_bos;          /* a prompt starts with BOS (llama.cpp's add_bos) */

	int32_t *spm_rank; /* SentencePiece: (n_vocab) dense rank of score, 0 = highest */
	int spm_words;     /* SentencePiece: no token has U+2581 after another character
	                    * (tok_spm.c merges word by word) */

	char *text;        /* every token's text (byte-mapped form), back to back */
	size_t *text_off;  /* (n_vocab + 1) */
	uint8_t *type;     /* (n_vocab) enum eng_tok_type after llama.cpp overrides */
	uint8_t *flags;    /* (n_vocab) ENG_TOK_F_* */
	char *piece;       /* decoded bytes of every token, back to back */
	size_t *piece_off; /* (n_vocab + 1) */

	int32_t *vocab_ht; /* (vocab_mask + 1) token ids, -1 empty */
	size_t vocab_mask;

	int32_t n_merges;
	char *merge_text;      /* "left" "right" without the space, back to back */
	size_t *merge_off;     /* (n_merges + 1) */
	uint32_t *merge_split; /* (n_merges) length of "left" */
	int32_t *merge_ht;     /* (merge_mask + 1) merge ranks, -1 empty */
	size_t merge_mask;

	int32_t *special; /* CONTROL / USER_DEFINED / UNKNOWN ids, longest first */
	int32_t n_special;

	int32_t byte_tok[256]; /* token whose text is that single raw byte, or -1;
	                        * SentencePiece: "<0xXX>", else the raw byte */
	struct eng_tok_bytemap map[256]; /* byte -> its GPT-2 code point in UTF-8 */

	/* eng_tok_min_tokens: the longest text (0: no bound), and the ASCII
	 * bytes that always yield a token */
	size_t bound_text;
	uint8_t bound_byte[256];
};

/* One BPE / SentencePiece symbol: bytes [start, start+n) of the word
 * buffer, in a list. */
struct eng_tok_sym {
	int32_t start, n, prev, next;
};

/* A candidate merge of symbol left with its right neighbour; stale once
 * either side changed, detected by their summed length (see tok_bpe). */
struct eng_tok_bigram {
	int32_t rank, left, size;
};

/* Per-call state of eng_tok_encode. */
struct eng_tok_enc {
	const struct eng_tok *t;
	int32_t *ids;
	int64_t cap, n;
	uint32_t *cps; /* (fragment length) code points */
	uint8_t *cat;  /* (fragment length) enum eng_ucat */
	char *buf;     /* byte-mapped word (BPE), escaped text (SentencePiece) */
	size_t buf_cap;
	struct eng_tok_sym *sym;
	size_t sym_cap;
	struct eng_tok_bigram *heap;
	size_t heap_n, heap_cap;
	uint32_t *rsym; /* (fragment length) code points as a regex sees them */
	size_t *bnd;    /* piece lengths collected by a pre-tokenizer step */
	size_t n_bnd, cap_bnd;
	int collect; /* the splitters' words go to bnd, not to BPE */
	int err;
};

/* Append one id (counted even past cap). */
static inline void
eng_tok_emit(struct eng_tok_enc *e, int32_t id)
{
	if (e->n < e->cap)
		e->ids[e->n] = id;
	e->n++;
}


/* tok_hash.c: id of the token whose text is p[0..n), or -1; rank of merging
 * p[0..llen) with p[llen..llen+rlen), or -1; the tables' hash (FNV-1a over n
 * bytes, finished with a multiply-xorshift mix) and size (the smallest power
 * of two >= 2n, n <= ENG_TOK_MAX_VOCAB), for tokenizer.c to fill them. */
int32_t eng_tok_lookup(const struct eng_tok *t, const char *p, size_t n);
int32_t eng_tok_merge_rank(const struct eng_tok *t, const char *p, size_t llen, size_t rlen);
uint64_t eng_tok_hash(const char *p, size_t n, uint64_t seed);
size_t eng_tok_ht_size(size_t n);

/* tok_pre.c: the pipeline for a tokenizer.ggml.pre name (0 if unknown), the
 * supported names for an error message, building and freeing the pre's
 * regexes, and one raw-text fragment through the pre-tokenizer into BPE. */
enum eng_tok_pre eng_tok_pre_from_name(struct eng_gguf_str s);
const char *eng_tok_pre_list(char *buf, size_t cap);
int eng_tok_pre_build(struct eng_tok *t, char *why, size_t why_len);
void eng_tok_pre_free(struct eng_tok *t);
void eng_tok_pre_encode(struct eng_tok_enc *e, const uint8_t *s, size_t len);

/* tok_bpe.c: byte-map one pre-tokenized word, run BPE on it and emit its
 * ids; make room for a word of n bytes; run the merge loop over the symbols
 * e->sym[lo..hi) (linked in order), ranked by merges (BPE) or scores (SPM). */
void eng_tok_bpe(struct eng_tok_enc *e, const uint32_t *cps, size_t n_cps);
int eng_tok_reserve(struct eng_tok_enc *e, size_t n_bytes);
void eng_tok_merge(struct eng_tok_enc *e, int32_t lo, int32_t hi);

/* tok_spm.c: one raw-text fragment through SentencePiece (prefix: put a
 * space before it). */
void eng_tok_spm_encode(struct eng_tok_enc *e, const char *s, size_t len, int prefix);
/* tok_spm.c: 1 if the vocabulary lets SentencePiece merge word by word. */
int eng_tok_spm_words(const struct eng_tok *t);

/* tok_regex.c: a compiled pattern, with llama.cpp's std::regex semantics
 * (see there).  eng_rx_symbol: what the pattern sees for a code point;
 * eng_rx_pieces: cut sym[0..n) (symbols) into matches and the gaps between
 * them, each piece's length to sink; 0 or ENG_ERR_NOMEM. */
int eng_rx_compile(const char *pattern, struct eng_rx **out, char *why, size_t why_len);
void eng_rx_free(struct eng_rx *rx);
uint32_t eng_rx_symbol(const struct eng_rx *rx, uint32_t cp);
int eng_rx_pieces(const struct eng_rx *rx, const uint32_t *sym, size_t n,
    void (*sink)(void *arg, size_t len), void *arg);

#endif /* ENGINE_MODEL_TOK_INTERNAL_H */
