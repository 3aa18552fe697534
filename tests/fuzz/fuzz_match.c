/*
 * fuzz_match.c: libFuzzer target for idx_match (index/match.c), the one
 * function that turns a user's question into FTS5 syntax.  Any bytes give
 * an expression that is "" or quoted words of letters, digits and valid
 * UTF-8 joined by " OR " (checked here), within IDX_MATCH_MAX, and that a
 * real FTS5 table (in memory, the tokenizer of the index's passages)
 * accepts as a MATCH without a syntax error: the question can never be
 * read as FTS5 operators, column filters or prefixes.
 */
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "index/index.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static sqlite3 *db;
static sqlite3_stmt *st;

static void
setup(void)
{
	if (db)
		return;
	if (sqlite3_open(":memory:", &db) != SQLITE_OK ||
	    sqlite3_exec(db, "CREATE VIRTUAL TABLE parts USING fts5(body, tokenize='unicode61 "
	    "remove_diacritics 2'); INSERT INTO parts(body) VALUES('the quick brown fox'), "
	    "('NEAR AND OR NOT body: \"quoted\" prefix* ^start'), ('caf\xc3\xa9 na\xc3\xafve')",
	    NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT rowid, bm25(parts), snippet(parts, 0, '', '', '...', "
	    "16) FROM parts WHERE parts MATCH ?1 ORDER BY rank", -1, &st, NULL) != SQLITE_OK)
		abort();
}

/* "" or "w" OR "w" ... with no quote, control byte or ASCII punctuation
 * inside a word. */
static void
check_shape(const char *e)
{
	size_t i = 0, n = strlen(e);
	if (n >= IDX_MATCH_MAX)
		abort();
	while (i < n) {
		size_t w = 0;
		if (e[i++] != '"')
			abort();
		while (i < n && e[i] != '"') {
			unsigned char c = (unsigned char)e[i++];
			if (c < 0x80 && !((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
				abort();
			w++;
		}
		if (i >= n || w == 0 || w > IDX_TERM_MAX)
			abort();
		i++; /* the closing quote */
		if (i < n) {
			if (strncmp(e + i, " OR ", 4) != 0)
				abort();
			i += 4;
			if (i >= n)
				abort();
		}
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char expr[IDX_MATCH_MAX];
	int n, rc;

	setup();
	n = idx_match((const char *)data, size, expr);
	check_shape(expr);
	if ((n == 0) != (expr[0] == '\0') || n > IDX_TERMS_MAX)
		abort();
	if (!n)
		return 0;
	sqlite3_reset(st);
	if (sqlite3_bind_text(st, 1, expr, -1, SQLITE_STATIC) != SQLITE_OK)
		abort();
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		;
	if (rc != SQLITE_DONE)
		abort(); /* FTS5 refused the expression: it was syntax, not words */
	return 0;
}
