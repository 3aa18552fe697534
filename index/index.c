/*
 * index.c: the index file (index.h): open with its schema checked, the
 * rows and the FTS5 table changed together, SQLite's checks.  Every call
 * holds the handle's mutex, so threads sharing a handle never interleave
 * the statements of one change (a put is a lookup, deletes and two
 * inserts; a search holds it from begin to end).
 */
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fail.h"
#include "index/index_internal.h"

static const char idx_schema_sql[] =
    "CREATE VIRTUAL TABLE passages USING fts5(body, tokenize='unicode61 remove_diacritics 2');"
    "CREATE TABLE rows(id INTEGER PRIMARY KEY, doc BLOB NOT NULL, part INTEGER NOT NULL,"
    " sum BLOB NOT NULL, UNIQUE(doc, part));";

int
idx_sqlite_err(struct idx *x, int rc, const char *what, char *why, size_t why_len)
{
	int err;
	switch (rc & 0xff) {
	case SQLITE_OK: case SQLITE_ROW: case SQLITE_DONE: return IDX_OK;
	case SQLITE_NOMEM: err = IDX_ERR_NOMEM; break;
	case SQLITE_CORRUPT: case SQLITE_NOTADB: case SQLITE_FORMAT: case SQLITE_SCHEMA:
		err = IDX_ERR_CORRUPT; break;
	case SQLITE_BUSY: case SQLITE_LOCKED: err = IDX_ERR_BUSY; break;
	case SQLITE_MISUSE: case SQLITE_RANGE: case SQLITE_TOOBIG: err = IDX_ERR_ARG; break;
	case SQLITE_ERROR:
		/* a missing table or column: a file that is not our index */
		err = IDX_ERR_CORRUPT; break;
	default: err = IDX_ERR_IO; break;
	}
	return kv_fail(why, why_len, err, "index %s: %s: %s", x ? x->path : "", what,
	    x && x->db ? sqlite3_errmsg(x->db) : sqlite3_errstr(rc));
}

/* One statement, no rows wanted. */
static int
idx_exec(struct idx *x, const char *sql, char *why, size_t why_len)
{
	int rc = sqlite3_exec(x->db, sql, NULL, NULL, NULL);
	return rc == SQLITE_OK ? 0 : idx_sqlite_err(x, rc, sql, why, why_len);
}

/* One integer from a query (PRAGMA user_version, a count). */
static int
idx_int(struct idx *x, const char *sql, long long *v, char *why, size_t why_len)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(x->db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		*v = sqlite3_column_int64(st, 0);
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_OK ? 0 : idx_sqlite_err(x, rc, sql, why, why_len);
}

/* A new file gets the schema; an existing one must have ours. */
static int
idx_schema(struct idx *x, char *why, size_t why_len)
{
	long long ver = 0, n = 0;
	int rc;

	if ((rc = idx_int(x, "SELECT count(*) FROM sqlite_master", &n, why, why_len)) ||
	    (rc = idx_int(x, "PRAGMA user_version", &ver, why, why_len)))
		return rc;
	if (n == 0 && ver == 0) {
		if (x->read_only)
			return kv_fail(why, why_len, IDX_ERR_STALE, "index %s is empty", x->path);
		rc = idx_exec(x, "BEGIN IMMEDIATE", why, why_len);
		if (!rc && !(rc = idx_exec(x, idx_schema_sql, why, why_len)))
			rc = idx_exec(x, "PRAGMA user_version = " IDX_STR(IDX_SCHEMA) "; COMMIT", why, why_len);
		if (rc)
			sqlite3_exec(x->db, "ROLLBACK", NULL, NULL, NULL);
		return rc;
	}
	if (ver != IDX_SCHEMA)
		return kv_fail(why, why_len, IDX_ERR_STALE, "index %s has schema %lld (this "
		    "program's is %d)", x->path, ver, IDX_SCHEMA);
	if ((rc = idx_int(x, "SELECT count(*) FROM rows WHERE id < 0", &n, why, why_len)))
		return rc;
	return idx_int(x, "SELECT count(*) FROM passages WHERE rowid < 0", &n, why, why_len);
}

static int
idx_files_check(const char *path, char *why, size_t why_len)
{
	static const char *const sfx[3] = { "", "-wal", "-shm" };
	struct stat st;
	char p[1100];
	int i;
	for (i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s%s", path, sfx[i]);
		if (lstat(p, &st) != 0)
			continue;
		if (!S_ISREG(st.st_mode) || st.st_nlink > 1)
			return kv_fail(why, why_len, IDX_ERR_IO, "index file %s is %s, not a plain file: "
			    "refused (remove it if you did not put it there)", p, S_ISLNK(st.st_mode) ?
			    "a symbolic link" : S_ISREG(st.st_mode) ? "a hard link" : "a special file");
	}
	return 0;
}

int
idx_open(struct idx **out, const char *path, int read_only, char *why, size_t why_len)
{
	struct idx *x;
	int flags = (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
	    SQLITE_OPEN_FULLMUTEX | SQLITE_OPEN_NOFOLLOW;
	int mem = strcmp(path, ":memory:") == 0, rc;

	*out = NULL;
	if (!(x = calloc(1, sizeof(*x))))
		return kv_fail(why, why_len, IDX_ERR_NOMEM, "index: out of memory");
	snprintf(x->path, sizeof(x->path), "%s", path);
	x->read_only = read_only;
	pthread_mutex_init(&x->mu, NULL);
	/* refuse what is not a plain file of its own (a planted link, a FIFO)
	 * before SQLite opens or writes it: the file, its WAL and its
	 * shared-memory file (as the store's files, storage/store_lmdb.c) */
	if (!mem && (rc = idx_files_check(path, why, why_len)) != 0) {
		idx_close(x);
		return rc;
	}
	if (!mem && read_only && access(path, F_OK) != 0) {
		idx_close(x);
		return kv_fail(why, why_len, IDX_ERR_IO, "no index %s", path);
	}
	rc = sqlite3_open_v2(path, &x->db, flags, NULL);
	if (rc != SQLITE_OK) {
		rc = idx_sqlite_err(x, rc, "open", why, why_len);
		idx_close(x);
		return rc;
	}
	sqlite3_busy_timeout(x->db, 5000);
	sqlite3_extended_result_codes(x->db, 0);
	rc = 0;
	if (!mem && !read_only)
		rc = idx_exec(x, "PRAGMA journal_mode = WAL", why, why_len);
	if (!rc)
		rc = idx_schema(x, why, why_len);
	if (rc) {
		idx_close(x);
		return rc;
	}
	*out = x;
	return 0;
}

void
idx_close(struct idx *x)
{
	if (!x)
		return;
	sqlite3_close_v2(x->db);
	pthread_mutex_destroy(&x->mu);
	free(x);
}

int
idx_unlink(const char *path, char *why, size_t why_len)
{
	static const char *const sfx[3] = { "", "-wal", "-shm" };
	char p[1100];
	int i;
	for (i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s%s", path, sfx[i]);
		if (unlink(p) != 0 && errno != ENOENT)
			return kv_fail(why, why_len, IDX_ERR_IO, "remove %s: %s", p, strerror(errno));
	}
	return 0;
}

int
idx_begin(struct idx *x, char *why, size_t why_len)
{
	int rc;
	pthread_mutex_lock(&x->mu);
	if ((rc = idx_exec(x, "BEGIN IMMEDIATE", why, why_len)))
		pthread_mutex_unlock(&x->mu);
	else {
		x->in_txn = 1;
		x->owner = pthread_self();
	}
	return rc;
}

int
idx_commit(struct idx *x, char *why, size_t why_len)
{
	int rc = idx_exec(x, "COMMIT", why, why_len);
	if (rc)
		sqlite3_exec(x->db, "ROLLBACK", NULL, NULL, NULL);
	x->in_txn = 0;
	pthread_mutex_unlock(&x->mu);
	return rc;
}

void
idx_rollback(struct idx *x)
{
	sqlite3_exec(x->db, "ROLLBACK", NULL, NULL, NULL);
	x->in_txn = 0;
	pthread_mutex_unlock(&x->mu);
}

/* Inside this thread's transaction the mutex is held already (in_txn and
 * owner are written only under it, so a thread that does not hold it never
 * sees itself as the owner). */
static int
idx_mine(struct idx *x)
{
	return x->in_txn && pthread_equal(x->owner, pthread_self());
}

static void
idx_lock(struct idx *x)
{
	if (!idx_mine(x))
		pthread_mutex_lock(&x->mu);
}

static void
idx_unlock(struct idx *x)
{
	if (!idx_mine(x))
		pthread_mutex_unlock(&x->mu);
}

/* Run sql with (doc, part) bound (part < 0: unbound), no rows wanted. */
static int
idx_run(struct idx *x, const char *sql, const uint8_t *doc, long part, sqlite3_int64 id,
    char *why, size_t why_len)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(x->db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK && doc)
		rc = sqlite3_bind_blob(st, 1, doc, IDX_ID_BYTES, SQLITE_STATIC);
	if (rc == SQLITE_OK && part >= 0)
		rc = sqlite3_bind_int64(st, 2, part);
	if (rc == SQLITE_OK && id >= 0)
		rc = sqlite3_bind_int64(st, doc ? 3 : 1, id);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE || rc == SQLITE_OK ? 0 : idx_sqlite_err(x, rc, sql, why, why_len);
}

/* Remove the passages of the row id (a range of rowids, index.h). */
static int
idx_del_passages(struct idx *x, sqlite3_int64 id, char *why, size_t why_len)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(x->db, "DELETE FROM passages WHERE rowid >= ?1 AND rowid <= ?2",
	    -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 1, id << IDX_PASSAGE_BITS);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 2, (id << IDX_PASSAGE_BITS) | (IDX_PASSAGES_MAX - 1));
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : idx_sqlite_err(x, rc, "remove passages", why, why_len);
}

static int
idx_del_locked(struct idx *x, const uint8_t *doc, long part, char *why, size_t why_len)
{
	/* the FTS5 passages first (found through rows), then the rows */
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(x->db, part < 0 ? "SELECT id FROM rows WHERE doc = ?1" :
	    "SELECT id FROM rows WHERE doc = ?1 AND part = ?2", -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_blob(st, 1, doc, IDX_ID_BYTES, SQLITE_STATIC);
	if (rc == SQLITE_OK && part >= 0)
		rc = sqlite3_bind_int64(st, 2, part);
	while (rc == SQLITE_OK || rc == SQLITE_ROW) {
		if ((rc = sqlite3_step(st)) != SQLITE_ROW)
			break;
		int e = idx_del_passages(x, sqlite3_column_int64(st, 0), why, why_len);
		if (e) {
			sqlite3_finalize(st);
			return e;
		}
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return idx_sqlite_err(x, rc, "find rows", why, why_len);
	return idx_run(x, part < 0 ? "DELETE FROM rows WHERE doc = ?1" :
	    "DELETE FROM rows WHERE doc = ?1 AND part = ?2", doc, part, -1, why, why_len);
}

int
idx_del(struct idx *x, const uint8_t doc[IDX_ID_BYTES], long part, char *why, size_t why_len)
{
	int rc;
	if (x->read_only)
		return kv_fail(why, why_len, IDX_ERR_ARG, "index %s is open read-only", x->path);
	idx_lock(x);
	if (!(rc = idx_exec(x, "SAVEPOINT del", why, why_len))) {
		if ((rc = idx_del_locked(x, doc, part, why, why_len)) != 0)
			sqlite3_exec(x->db, "ROLLBACK TO del", NULL, NULL, NULL);
		sqlite3_exec(x->db, "RELEASE del", NULL, NULL, NULL);
	}
	idx_unlock(x);
	return rc;
}

/* Does the row (doc, part) hold sum?  1 yes, 0 no (or no row), < 0 error. */
static int
idx_same(struct idx *x, const uint8_t *doc, unsigned part, const uint8_t *sum, char *why,
    size_t why_len)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(x->db, "SELECT sum FROM rows WHERE doc = ?1 AND part = ?2", -1,
	    &st, NULL), same = 0;
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_blob(st, 1, doc, IDX_ID_BYTES, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 2, part);
	if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		same = sqlite3_column_bytes(st, 0) == IDX_SUM_BYTES &&
		    memcmp(sqlite3_column_blob(st, 0), sum, IDX_SUM_BYTES) == 0;
		rc = SQLITE_DONE;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? same : idx_sqlite_err(x, rc, "look up a row", why, why_len);
}

/* A word, for cutting passages: a run of bytes other than ASCII white
 * space (FTS5's tokenizer splits finer; a cut never falls inside a run). */
static int
idx_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/* The start of the next word at or after i (len when none). */
static size_t
idx_next_word(const char *t, size_t len, size_t i)
{
	while (i < len && idx_space(t[i]))
		i++;
	return i;
}

/* The start of the word n words after the one starting at i (len when the
 * text ends first). */
static size_t
idx_skip_words(const char *t, size_t len, size_t i, unsigned n)
{
	for (; n && i < len; n--) {
		while (i < len && !idx_space(t[i]))
			i++;
		i = idx_next_word(t, len, i);
	}
	return i;
}

/* Index text as row id's passages (index.h): passage j is the bytes from
 * the start of word j*IDX_PASSAGE_STEP (the first from byte 0) to the
 * start of word j*IDX_PASSAGE_STEP + IDX_PASSAGE_WORDS (the last to the
 * end), so every word is in two passages and passage j's first half is
 * exactly the text up to passage j+1.  An empty text is one empty passage:
 * every row has at least one. */
static int
idx_insert_passages(struct idx *x, sqlite3_int64 id, const char *text, size_t len, char *why,
    size_t why_len)
{
	sqlite3_stmt *st;
	size_t from = 0, next, end;
	sqlite3_int64 j;
	int rc = sqlite3_prepare_v2(x->db, "INSERT INTO passages(rowid, body) VALUES(?1, ?2)", -1,
	    &st, NULL);

	for (j = 0; rc == SQLITE_OK; j++) {
		next = idx_skip_words(text, len, from == 0 ? idx_next_word(text, len, 0) : from,
		    IDX_PASSAGE_STEP);
		end = idx_skip_words(text, len, next, IDX_PASSAGE_WORDS - IDX_PASSAGE_STEP);
		if (j == IDX_PASSAGES_MAX - 1) /* never reached by a part's text: bounded anyway */
			end = len;
		sqlite3_reset(st);
		rc = sqlite3_bind_int64(st, 1, (id << IDX_PASSAGE_BITS) | j);
		if (rc == SQLITE_OK)
			rc = sqlite3_bind_text64(st, 2, len ? text + from : "", end - from, SQLITE_STATIC,
			    SQLITE_UTF8);
		if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_DONE)
			rc = SQLITE_OK;
		if (end >= len)
			break;
		from = next;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_OK ? 0 : idx_sqlite_err(x, rc, "index the text", why, why_len);
}

static int
idx_insert(struct idx *x, const uint8_t *doc, unsigned part, const uint8_t *sum,
    const char *text, size_t len, char *why, size_t why_len)
{
	sqlite3_stmt *st;
	sqlite3_int64 id;
	int rc = sqlite3_prepare_v2(x->db, "INSERT INTO rows(doc, part, sum) VALUES(?1, ?2, ?3)",
	    -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_blob(st, 1, doc, IDX_ID_BYTES, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(st, 2, part);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_blob(st, 3, sum, IDX_SUM_BYTES, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return idx_sqlite_err(x, rc, "insert a row", why, why_len);
	id = sqlite3_last_insert_rowid(x->db);
	return idx_insert_passages(x, id, text, len, why, why_len);
}

int
idx_put(struct idx *x, const uint8_t doc[IDX_ID_BYTES], unsigned part,
    const uint8_t sum[IDX_SUM_BYTES], const char *text, size_t len, char *why, size_t why_len)
{
	int rc;
	if (x->read_only)
		return kv_fail(why, why_len, IDX_ERR_ARG, "index %s is open read-only", x->path);
	idx_lock(x);
	if ((rc = idx_exec(x, "SAVEPOINT put", why, why_len))) {
		idx_unlock(x);
		return rc;
	}
	rc = idx_same(x, doc, part, sum, why, why_len);
	if (rc == 0 && !(rc = idx_del_locked(x, doc, (long)part, why, why_len)))
		rc = idx_insert(x, doc, part, sum, text, len, why, why_len);
	if (rc < 0)
		sqlite3_exec(x->db, "ROLLBACK TO put", NULL, NULL, NULL);
	sqlite3_exec(x->db, "RELEASE put", NULL, NULL, NULL);
	idx_unlock(x);
	return rc < 0 ? rc : 0;
}

int
idx_rows(struct idx *x, idx_row_fn fn, void *arg, char *why, size_t why_len)
{
	sqlite3_stmt *st;
	int rc, stop = 0;

	idx_lock(x);
	rc = sqlite3_prepare_v2(x->db, "SELECT doc, part, sum FROM rows ORDER BY doc, part", -1,
	    &st, NULL);
	while (rc == SQLITE_OK || rc == SQLITE_ROW) {
		if ((rc = sqlite3_step(st)) != SQLITE_ROW || stop)
			break;
		if (sqlite3_column_bytes(st, 0) != IDX_ID_BYTES ||
		    sqlite3_column_bytes(st, 2) != IDX_SUM_BYTES || sqlite3_column_int64(st, 1) < 0 ||
		    sqlite3_column_int64(st, 1) > 0xFFFFFFFFLL) {
			rc = SQLITE_CORRUPT;
			break;
		}
		stop = fn(arg, sqlite3_column_blob(st, 0), (unsigned)sqlite3_column_int64(st, 1),
		    sqlite3_column_blob(st, 2));
	}
	sqlite3_finalize(st);
	idx_unlock(x);
	if (rc == SQLITE_CORRUPT)
		return kv_fail(why, why_len, IDX_ERR_CORRUPT, "index %s: a row of the wrong shape",
		    x->path);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 :
	    idx_sqlite_err(x, rc, "list rows", why, why_len);
}

int
idx_check(struct idx *x, char *why, size_t why_len)
{
	sqlite3_stmt *st;
	long long a = 0, b = 0;
	char res[200] = "";
	int rc;

	idx_lock(x);
	rc = sqlite3_prepare_v2(x->db, "PRAGMA quick_check", -1, &st, NULL);
	if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		snprintf(res, sizeof(res), "%s", (const char *)sqlite3_column_text(st, 0));
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	if (rc == SQLITE_OK && strcmp(res, "ok") != 0)
		rc = kv_fail(why, why_len, IDX_ERR_CORRUPT, "index %s: %s", x->path, res);
	else if (rc != SQLITE_OK)
		rc = idx_sqlite_err(x, rc, "quick_check", why, why_len);
	/* FTS5's own check of its index against the text it holds */
	if (!rc && x->read_only == 0)
		rc = idx_exec(x, "INSERT INTO passages(passages) VALUES('integrity-check')", why,
		    why_len);
	/* every row has its passages, every passage its row */
	if (!rc)
		rc = idx_int(x, "SELECT count(*) FROM rows r WHERE NOT EXISTS (SELECT 1 FROM passages "
		    "WHERE rowid >= r.id << " IDX_STR(IDX_PASSAGE_BITS) " AND rowid < (r.id + 1) << "
		    IDX_STR(IDX_PASSAGE_BITS) ")", &a, why, why_len);
	if (!rc && a)
		rc = kv_fail(why, why_len, IDX_ERR_CORRUPT, "index %s: %lld rows without their text",
		    x->path, a);
	if (!rc)
		rc = idx_int(x, "SELECT count(*) FROM passages WHERE rowid >> " IDX_STR(IDX_PASSAGE_BITS)
		    " NOT IN (SELECT id FROM rows)", &b, why, why_len);
	if (!rc && b)
		rc = kv_fail(why, why_len, IDX_ERR_CORRUPT, "index %s: %lld passages without their "
		    "row", x->path, b);
	idx_unlock(x);
	return rc;
}
