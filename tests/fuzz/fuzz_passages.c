/*
 * fuzz_passages.c: libFuzzer target for the index's cutting of a part's
 * text into passages and its search (index/index.c, index/search.c): any
 * bytes as a document's text are indexed (an in-memory index, the real
 * schema), and then: FTS5's and the index's own checks pass; the passages
 * are the text's own bytes, the first from byte 0, each starting inside
 * the one before (no gap), the last ending where the text ends, at most
 * IDX_PASSAGE_WORDS words each (words: runs between ASCII white space);
 * a search of the text's first words finds the part exactly once, with a
 * positive score and a one-line snippet within its cap; after the delete
 * nothing is left.
 */
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "index/index.h"
#include "index/index_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct idx *x;

static int
sp(uint8_t c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static unsigned
words(const uint8_t *p, size_t n)
{
	unsigned w = 0;
	size_t i;
	for (i = 0; i < n; i++)
		w += !sp(p[i]) && (i == 0 || sp(p[i - 1]));
	return w;
}

/* The start of word k of t[0..n) (n when it has fewer words). */
static size_t
word_start(const uint8_t *t, size_t n, size_t k)
{
	size_t i, w = 0;
	for (i = 0; i < n; i++)
		if (!sp(t[i]) && (i == 0 || sp(t[i - 1])) && w++ == k)
			return i;
	return n;
}

/* The passages against the text (through the handle's own connection):
 * passage j is exactly the bytes from word j*STEP (the first from byte 0)
 * to word j*STEP + WORDS (the last to the end).  Compared at the place
 * the words say, not found by a search: a repeating text holds a
 * passage's bytes at several places. */
static void
check_passages(const uint8_t *t, size_t n)
{
	sqlite3_stmt *st;
	size_t count = 0, len, from, end;
	const uint8_t *b;
	int ended = 0;
	if (sqlite3_prepare_v2(x->db, "SELECT body FROM passages ORDER BY rowid", -1, &st, NULL))
		abort();
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (ended)
			abort(); /* a passage after the one that reached the end */
		b = sqlite3_column_blob(st, 0);
		len = (size_t)sqlite3_column_bytes(st, 0);
		from = count ? word_start(t, n, count * IDX_PASSAGE_STEP) : 0;
		end = word_start(t, n, count * IDX_PASSAGE_STEP + IDX_PASSAGE_WORDS);
		if (from > n || len != end - from || (len && memcmp(b, t + from, len)) ||
		    words(b ? b : (const uint8_t *)"", len) > IDX_PASSAGE_WORDS)
			abort();
		ended = end == n;
		count++;
	}
	sqlite3_finalize(st);
	/* one passage at least; the last ends where the text does */
	if (count == 0 || !ended)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t doc[IDX_ID_BYTES] = { 1 }, got[IDX_ID_BYTES], sum[IDX_SUM_BYTES] = { 2 };
	char expr[IDX_MATCH_MAX], snip[64], why[256];
	struct idx_search *q;
	unsigned part;
	double score;
	int rc, hits = 0;

	if (!x && idx_open(&x, ":memory:", 0, why, sizeof(why)))
		abort();
	if (idx_put(x, doc, 3, sum, (const char *)data, size, why, sizeof(why)) ||
	    idx_check(x, why, sizeof(why)))
		abort();
	check_passages(data, size);
	if (idx_match((const char *)data, size < 200 ? size : 200, expr) > 0 &&
	    idx_search_begin(x, expr, &q, why, sizeof(why)) == 0) {
		while ((rc = idx_search_next(q, got, &part, &score, why, sizeof(why))) == 1) {
			if (memcmp(got, doc, sizeof(doc)) || part != 3 || !(score > 0) || ++hits > 1)
				abort();
			if (idx_search_snippet(q, snip, sizeof(snip), why, sizeof(why)) ||
			    strlen(snip) >= sizeof(snip) || strchr(snip, '\n'))
				abort();
		}
		idx_search_end(q);
		if (rc != 0)
			abort();
	}
	if (idx_del(x, doc, -1, why, sizeof(why)) || idx_check(x, why, sizeof(why)))
		abort();
	return 0;
}
