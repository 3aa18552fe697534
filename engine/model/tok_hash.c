/*
 * tok_hash.c: the tokenizer's look-up tables, which loading (tokenizer.c)
 * fills and every step reads (tok_bpe.c, tok_spm.c, the pipeline): open
 * addressing from a token's text to its id, and from a merge pair ("left" +
 * "right", split point) to its rank.
 */
#include <string.h> /* for memcmp */

#include "engine/model/tok_internal.h"

uint64_t
eng_tok_hash(const char *p, size_t n, uint64_t seed)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ seed;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= (uint8_t)p[i];
		h *= 0x100000001b3ULL;
	}
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 32;
	return h;
}

int32_t
eng_tok_lookup(const struct eng_tok *t, const char *p, size_t n)
{
	size_t i = (size_t)eng_tok_hash(p, n, 0) & t->vocab_mask;
	int32_t id;

	while ((id = t->vocab_ht[i]) >= 0) {
		size_t off = t->text_off[id], len = t->text_off[id + 1] - off;
		if (len == n && memcmp(t->text + off, p, n) == 0)
			return id;
		i = (i + 1) & t->vocab_mask;
	}
	return -1;
}

int32_t
eng_tok_merge_rank(const struct eng_tok *t, const char *p, size_t llen, size_t rlen)
{
	size_t n = llen + rlen;
	size_t i = (size_t)eng_tok_hash(p, n, llen) & t->merge_mask;
	int32_t r;

	while ((r = t->merge_ht[i]) >= 0) {
		size_t off = t->merge_off[r];
		if (t->merge_split[r] == llen && t->merge_off[r + 1] - off == n &&
		    memcmp(t->merge_text + off, p, n) == 0)
			return r;
		i = (i + 1) & t->merge_mask;
	}
	return -1;
}

size_t
eng_tok_ht_size(size_t n)
{
	size_t c = 16;
	while (c < 2 * n)
		c <<= 1;
	return c;
}
