/*
 * ground.c: what the library's grounding check asks of the index (index.h;
 * service/ground.c decides): how many parts hold a word, whether one part
 * does, and how many parts there are.  A word is matched as a prefix (FTS5's "word" *): the
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

/* One grounding query: sql with ?1 bound to text (the MATCH expression,
 * len < 0) or to a blob of len bytes, or unbound when NULL; then the
 * integers a and b as ?2 and ?3 when n_int says so.  Its one integer is the
 * answer; miss when it returns no row. */
struct ground_q {
	const char *sql;
	const void *p1;
	int len;
	int n_int;
	sqlite3_int64 a, b;
	long miss;
};

static int
ground_int(struct idx *x, const struct ground_q *q, long *out, char *why, size_t why_len)
{
	sqlite3_stmt *st = NULL;
	int rc;

	*out = q->miss;
	pthread_mutex_lock(&x->mu);
	rc = sqlite3_prepare_v2(x->db, q->sql, -1, &st, NULL);
	if (rc == SQLITE_OK && q->p1)
		rc = q->len < 0 ? sqlite3_bind_text(st, 1, q->p1, -1, SQLITE_TRANSIENT) :
		    sqlite3_bind_blob(st, 1, q->p1, q->len, SQLITE_STATIC);
	if (rc == SQLITE_OK && q->n_int > 0)
		rc = sqlite3_bind_int64(st, 2, q->a);
	if (rc == SQLITE_OK && q->n_int > 1)
		rc = sqlite3_bind_int64(st, 3, q->b);
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
	/* the LIMIT stops the scan at cap distinct parts */
	struct ground_q q = { "SELECT count(*) FROM (SELECT DISTINCT rowid >> "
	    IDX_STR(IDX_PASSAGE_BITS) " FROM passages WHERE passages MATCH ?1 LIMIT ?2)", expr, -1,
	    1, cap < 1 ? 1 : cap, 0, 0 };
	int rc;
	if ((rc = ground_expr(word, expr, sizeof(expr), why, why_len)))
		return rc;
	return ground_int(x, &q, n, why, why_len);
}

int
idx_part_has(struct idx *x, const uint8_t doc[IDX_ID_BYTES], unsigned part, const char *word,
    int *yes, char *why, size_t why_len)
{
	char expr[IDX_TERM_MAX + 8];
	struct ground_q row = { "SELECT id FROM rows WHERE doc = ?1 AND part = ?2", doc,
	    IDX_ID_BYTES, 1, (sqlite3_int64)part, 0, -1 };
	/* the part's passages: rowids id << IDX_PASSAGE_BITS and on */
	struct ground_q q = { "SELECT count(*) FROM (SELECT 1 FROM passages WHERE passages "
	    "MATCH ?1 AND rowid >= ?2 AND rowid < ?3 LIMIT 1)", expr, -1, 2, 0, 0, 0 };
	long id, n;
	int rc;

	*yes = 0;
	if ((rc = ground_expr(word, expr, sizeof(expr), why, why_len)))
		return rc;
	if ((rc = ground_int(x, &row, &id, why, why_len)) || id < 0)
		return rc;
	q.a = (sqlite3_int64)id << IDX_PASSAGE_BITS;
	q.b = ((sqlite3_int64)id + 1) << IDX_PASSAGE_BITS;
	if ((rc = ground_int(x, &q, &n, why, why_len)))
		return rc;
	*yes = n > 0;
	return 0;
}

int
idx_n_parts(struct idx *x, long *n, char *why, size_t why_len)
{
	struct ground_q q = { "SELECT count(*) FROM rows", NULL, 0, 0, 0, 0, 0 };
	return ground_int(x, &q, n, why, why_len);
}
