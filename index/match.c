/*
 * match.c: the user's question as an FTS5 MATCH expression that can only
 * mean "any of these words" (index.h, idx_match).  Nothing of the input
 * reaches FTS5 as syntax: a word holds only ASCII letters and digits and
 * whole, valid non-ASCII UTF-8 characters, so it can never hold a double
 * quote (the one character that would end its string), and every word is
 * a quoted string, so AND, OR, NOT, NEAR, column filters, '^', '*', '+',
 * parentheses and ':' are separators or plain text.  tests/fuzz/fuzz_match.c
 * runs every expression against a real FTS5 table.
 */
#include <string.h>

#include "index/index.h"

/* Question words that would match nearly every part (a query of nothing
 * else keeps them). */
static const char *const idx_stop[] = {
	"a", "about", "an", "and", "are", "as", "at", "be", "by", "can", "could", "did", "do",
	"does", "for", "from", "had", "has", "have", "how", "i", "if", "in", "into", "is", "it",
	"its", "me", "my", "of", "on", "or", "our", "should", "so", "tell", "than", "that", "the",
	"their", "them", "then", "there", "these", "they", "this", "to", "was", "we", "were",
	"what", "when", "where", "which", "who", "whom", "whose", "why", "will", "with", "would",
	"you", "your",
};

static int
idx_is_stop(const char *w, size_t n)
{
	size_t i;
	for (i = 0; i < sizeof(idx_stop) / sizeof(idx_stop[0]); i++)
		if (strlen(idx_stop[i]) == n && memcmp(idx_stop[i], w, n) == 0)
			return 1;
	return 0;
}

/* The length of the valid UTF-8 character (of 2 to 4 bytes) at p[0..n),
 * or 0: overlong forms, surrogates and values past U+10FFFF are invalid. */
static size_t
idx_utf8_len(const unsigned char *p, size_t n)
{
	size_t need, i;
	unsigned cp;
	if (p[0] >= 0xC2 && p[0] <= 0xDF)
		need = 2, cp = p[0] & 0x1Fu;
	else if (p[0] >= 0xE0 && p[0] <= 0xEF)
		need = 3, cp = p[0] & 0x0Fu;
	else if (p[0] >= 0xF0 && p[0] <= 0xF4)
		need = 4, cp = p[0] & 0x07u;
	else
		return 0;
	if (n < need)
		return 0;
	for (i = 1; i < need; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3Fu);
	}
	if ((need == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
	    (need == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
		return 0;
	return need;
}

int
idx_words(const char *query, size_t len, struct idx_word words[IDX_TERMS_MAX])
{
	const unsigned char *q = (const unsigned char *)query;
	size_t i = 0;
	int n = 0, k, j, cap, first = 1;

	while (i < len && n < IDX_TERMS_MAX) {
		struct idx_word *w = &words[n];
		w->n = 0;
		cap = q[i] >= 'A' && q[i] <= 'Z';
		/* one word: letters, digits, whole non-ASCII characters */
		while (i < len) {
			size_t c = 0;
			if ((q[i] >= 'a' && q[i] <= 'z') || (q[i] >= '0' && q[i] <= '9'))
				c = 1;
			else if (q[i] >= 'A' && q[i] <= 'Z')
				c = 1;
			else if (q[i] >= 0x80)
				c = idx_utf8_len(q + i, len - i);
			if (!c)
				break;
			if (w->n + c <= IDX_TERM_MAX) /* past it the word is cut, the rest skipped */
				for (j = 0; j < (int)c; j++)
					w->w[w->n++] = (char)(q[i + (size_t)j] >= 'A' && q[i + (size_t)j] <= 'Z' ?
					    q[i + (size_t)j] + 32 : q[i + (size_t)j]);
			i += c;
		}
		if (w->n == 0) {
			i++; /* a separator (or an invalid byte) */
			continue;
		}
		w->w[w->n] = '\0';
		cap = cap && !first;
		first = 0;
		for (k = 0; k < n; k++)
			if (words[k].n == w->n && memcmp(words[k].w, w->w, w->n) == 0)
				break;
		if (k < n) { /* a repeat */
			words[k].name |= cap;
			continue;
		}
		w->stop = idx_is_stop(w->w, w->n);
		w->name = cap && !w->stop;
		n++;
	}
	return n;
}

int
idx_match(const char *query, size_t len, char out[IDX_MATCH_MAX])
{
	struct idx_word words[IDX_TERMS_MAX];
	size_t o = 0;
	int n, n_keep = 0, k;

	out[0] = '\0';
	n = idx_words(query, len, words);
	for (k = 0; k < n; k++)
		n_keep += !words[k].stop;
	for (k = 0; k < n; k++) {
		if (n_keep && words[k].stop)
			continue;
		if (o) {
			memcpy(out + o, " OR ", 4);
			o += 4;
		}
		out[o++] = '"';
		memcpy(out + o, words[k].w, words[k].n);
		o += words[k].n;
		out[o++] = '"';
	}
	out[o] = '\0';
	return n_keep ? n_keep : n;
}
