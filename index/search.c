/*
 * search.c: a MATCH over the passages, each part once, best first by its
 * best passage (index.h).  FTS5's bm25() is negative (lower is better);
 * the score handed out is its negation.  The snippet is
 * FTS5's (the 16-token window with the most matched terms), made one line
 * (runs of white space and control characters become one space), and
 * asked for the hits the caller keeps only.
 */
#include <stdlib.h>
#include <string.h>

#include "common/fail.h"
#include "index/index_internal.h"

struct idx_search {
	struct idx *x;
	sqlite3_stmt *hits, *snip;
	sqlite3_int64 at; /* the last hit's best passage's rowid */
};

int
idx_search_begin(struct idx *x, const char *expr, struct idx_search **out, char *why,
    size_t why_len)
{
	struct idx_search *q;
	int rc;

	*out = NULL;
	if (!expr[0])
		return kv_fail(why, why_len, IDX_ERR_ARG, "search: no words");
	if (!(q = calloc(1, sizeof(*q))))
		return kv_fail(why, why_len, IDX_ERR_NOMEM, "search: out of memory");
	q->x = x;
	pthread_mutex_lock(&x->mu);
	/* the ranking alone: a snippet for every match would cost more than the
	 * ranking itself (610 ms against 25 ms over 510 documents).  Each part's
	 * best passage: SQLite takes a bare column (pid) from the row min()
	 * chose; bm25() works only in the MATCH's own scan, hence the
	 * materialized h (not folded into the GROUP BY); a passage without its row is dropped by the join (idx_check
	 * reports it). */
	rc = sqlite3_prepare_v2(x->db, "WITH h AS MATERIALIZED (SELECT rowid AS pid, "
	    "bm25(passages) AS s FROM passages WHERE passages MATCH ?1), b AS (SELECT pid >> "
	    IDX_STR(IDX_PASSAGE_BITS) " AS rid, pid, min(s) AS s FROM h GROUP BY rid) "
	    "SELECT r.doc, r.part, b.pid, b.s FROM b JOIN rows r ON r.id = b.rid "
	    "ORDER BY b.s, b.rid", -1, &q->hits, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_text(q->hits, 1, expr, -1, SQLITE_TRANSIENT);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(x->db, "SELECT snippet(passages, 0, '', '', '...', 16) FROM "
		    "passages WHERE passages MATCH ?1 AND rowid = ?2", -1, &q->snip, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_text(q->snip, 1, expr, -1, SQLITE_TRANSIENT);
	if (rc != SQLITE_OK) {
		rc = idx_sqlite_err(x, rc, "search", why, why_len);
		idx_search_end(q);
		return rc;
	}
	*out = q;
	return 0;
}

/* src as one line into dst[0..cap), cut on a UTF-8 character boundary. */
static void
idx_one_line(const char *src, char *dst, size_t cap)
{
	size_t n = 0;
	int space = 0;
	if (!cap)
		return;
	for (; src && *src; src++) {
		unsigned char c = (unsigned char)*src;
		if (c <= ' ' || c == 0x7f) {
			space = n > 0;
			continue;
		}
		if (space) {
			if (n + 1 >= cap)
				break;
			dst[n++] = ' ';
			space = 0;
		}
		if (n + 1 >= cap)
			break;
		dst[n++] = (char)c;
	}
	/* a character cut in the middle: drop its start */
	if (n && ((unsigned char)dst[n - 1] & 0x80)) {
		size_t k = n;
		while (k > 0 && ((unsigned char)dst[k - 1] & 0xC0) == 0x80)
			k--;
		if (k > 0) {
			unsigned char lead = (unsigned char)dst[k - 1];
			size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
			if (n - (k - 1) < need)
				n = k - 1;
		}
	}
	dst[n] = '\0';
}

int
idx_search_next(struct idx_search *q, uint8_t doc[IDX_ID_BYTES], unsigned *part,
    double *score, char *why, size_t why_len)
{
	int rc;
	for (;;) {
		if ((rc = sqlite3_step(q->hits)) != SQLITE_ROW)
			return rc == SQLITE_DONE ? 0 : idx_sqlite_err(q->x, rc, "search", why, why_len);
		if (sqlite3_column_bytes(q->hits, 0) != IDX_ID_BYTES)
			continue; /* a row of the wrong shape: idx_rows reports it */
		memcpy(doc, sqlite3_column_blob(q->hits, 0), IDX_ID_BYTES);
		*part = (unsigned)sqlite3_column_int64(q->hits, 1);
		q->at = sqlite3_column_int64(q->hits, 2);
		*score = -sqlite3_column_double(q->hits, 3);
		return 1;
	}
}

int
idx_search_snippet(struct idx_search *q, char *snippet, size_t cap, char *why, size_t why_len)
{
	int rc;
	if (cap)
		snippet[0] = '\0';
	sqlite3_reset(q->snip);
	if ((rc = sqlite3_bind_int64(q->snip, 2, q->at)) != SQLITE_OK)
		return idx_sqlite_err(q->x, rc, "snippet", why, why_len);
	rc = sqlite3_step(q->snip);
	if (rc == SQLITE_ROW)
		idx_one_line((const char *)sqlite3_column_text(q->snip, 0), snippet, cap);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 :
	    idx_sqlite_err(q->x, rc, "snippet", why, why_len);
}

void
idx_search_end(struct idx_search *q)
{
	if (!q)
		return;
	sqlite3_finalize(q->hits);
	sqlite3_finalize(q->snip);
	pthread_mutex_unlock(&q->x->mu);
	free(q);
}
