/*
 * ground.c: what the library's grounding check asks of the index (index.h;
 * service/ground.c decides): how many parts hold a word, and whether one
 * part does.  A word is matched as a prefix (FTS5's "word" *): the
 * unicode61 tokenizer does not stem, and a question's "weigh" must find a
 * text's "weighs".  idx_words' words hold only letters, digits and whole
 * non-ASCII characters, never a double quote, so the quoted form is safe.
 */
#include <stdio.h>
#include <string.h>

#include "common/fail.h"
#include "index/index_internal.h"

/* "word" * into out (IDX_TERM_MAX + 5 bytes). */
static int
ground_expr(const char *word, char *out, size_t cap, char *why, size_t why_len)
{
	size_t n = strlen(word);
	if (!n || n > IDX_TERM_MAX || strchr(word, '"'))
		return kv_fail(why, why_len, IDX_ERR_ARG, "grounding: not a word");
	snprintf(out, cap, "\"%s\" *", word);
	return 0;
}

/* Run sql (MATCH ?1, then the integers a and b bound as ?2 and ?3 when
 * there) and take its one integer. */
static int
ground_int(struct idx *x, const char *sql, const char *expr, int n_int, sqlite3_int64 a,
    sqlite3_int64 b, long *out, char *why, size_t why_len)
{
	sqlite3_stmt *st = NULL;
	int rc;

	*out = 0;
	pthread_mutex_lock(&x->mu);
	rc = sqlite3_prepare_v2(x->db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK && expr)
		rc = sqlite3_bind_text(st, 1, expr, -1, SQLITE_TRANSIENT);
	if (rc == SQLITE_OK && n_int > 0)
		rc = sqlite3_bind_int64(st, 2, a);
	if (rc == SQLITE_OK && n_int > 1)
		rc = sqlite3_bind_int64(st, 3, b);
	if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		*out = (long)sqlite3_column_int64(st, 0);
		rc = SQLITE_OK;
	} else if (rc == SQLITE_DONE)
		rc = SQLITE_OK;
	if (rc != SQLITE_OK)
		rc = idx_sqlite_err(x, rc, "grounding", why, why_len);
	sqlite3_finalize(st);
	pthread_mutex_unlock(&x->mu);
	return rc;
}

int
idx_parts_with(struct idx *x, const char *word, long cap, long *n, char *why, size_t why_len)
{
	char expr[IDX_TERM_MAX + 8];
	int rc;
	if ((rc = ground_expr(word, expr, sizeof(expr), why, why_len)))
		return rc;
	/* the LIMIT stops the scan at cap distinct parts */
	return ground_int(x, "SELECT count(*) FROM (SELECT DISTINCT rowid >> "
	    IDX_STR(IDX_PASSAGE_BITS) " FROM passages WHERE passages MATCH ?1 LIMIT ?2)", expr, 1,
	    cap < 1 ? 1 : cap, 0, n, why, why_len);
}

int
idx_part_has(struct idx *x, const uint8_t doc[IDX_ID_BYTES], unsigned part, const char *word,
    int *yes, char *why, size_t why_len)
{
	char expr[IDX_TERM_MAX + 8];
	sqlite3_stmt *st = NULL;
	sqlite3_int64 id = -1;
	long n;
	int rc;

	*yes = 0;
	if ((rc = ground_expr(word, expr, sizeof(expr), why, why_len)))
		return rc;
	pthread_mutex_lock(&x->mu);
	rc = sqlite3_prepare_v2(x->db, "SELECT id FROM rows WHERE doc = ?1 AND part = ?2", -1, &st,
	    NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_blob(st, 1, doc, IDX_ID_BYTES, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 2, (sqlite3_int64)part);
	if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		id = sqlite3_column_int64(st, 0);
		rc = SQLITE_OK;
	} else if (rc == SQLITE_DONE)
		rc = SQLITE_OK;
	if (rc != SQLITE_OK)
		rc = idx_sqlite_err(x, rc, "grounding", why, why_len);
	sqlite3_finalize(st);
	pthread_mutex_unlock(&x->mu);
	if (rc || id < 0)
		return rc;
	/* the part's passages: rowids id << IDX_PASSAGE_BITS and on */
	if ((rc = ground_int(x, "SELECT count(*) FROM (SELECT 1 FROM passages WHERE passages "
	    "MATCH ?1 AND rowid >= ?2 AND rowid < ?3 LIMIT 1)", expr, 2,
	    id << IDX_PASSAGE_BITS, (id + 1) << IDX_PASSAGE_BITS, &n, why, why_len)))
		return rc;
	*yes = n > 0;
	return 0;
}

int
idx_n_parts(struct idx *x, long *n, char *why, size_t why_len)
{
	return ground_int(x, "SELECT count(*) FROM rows", NULL, 0, 0, 0, n, why, why_len);
}
