/*
 * index_sync.c: the text index (index/) kept in step with the store's text
 * records.  The index is derived data: the store's text records are the
 * truth, and every disagreement is settled in their favour by one merge
 * of the two sorted lists, (doc_id, part) order on both sides: a row
 * without its record goes, a record without its row (or with a row of
 * another checksum) is decoded and indexed.  Only the records' heads are
 * read for rows already in step (their checksums; no decompression).
 *
 * When: kvsnapd's start and `kvsnap search --local` (svc_index_open with
 * sync), after a prune (svc_index_sync); an ingest adds its part as it
 * stores it (ingest.c) and rm takes the document's rows out.  A crash
 * between the snapshot's commit and the index's leaves a record without
 * its row: the next sync adds it.  A file SQLite calls corrupt or of
 * another schema is removed and rebuilt from the records.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fail.h"
#include "index/index.h"
#include "service/service_internal.h"
#include "service/text_record.h"

#define IX_FILE "index.sqlite"

struct svc_index {
	struct idx *x;
	int in_memory;
};

struct ix_row {
	uint8_t doc[SNAP_ID_BYTES];
	unsigned part;
	uint8_t sum[TEXTREC_SUM];
};

/* One merge of the index's rows with the store's text records. */
struct ix_walk {
	struct idx *x;             /* apply changes here; NULL: only compare */
	struct ix_row *rows;
	size_t n, cap, at;
	struct svc_index_sync *sy;
	void (*fn)(void *arg, const uint8_t doc_id[SNAP_ID_BYTES], long part, int problem,
	    const char *why);
	void *arg;
	long problems, texts;
	int check;                 /* decode every record (verify), not only the changed */
	int quiet_missing;         /* no index file: records without rows are no news */
	uint8_t (*docs)[SNAP_ID_BYTES]; /* documents with a text record, sorted */
	size_t n_docs, cap_docs;
	int err;
	char why[256];
};

static int
ix_row_cb(void *arg, const uint8_t doc[IDX_ID_BYTES], unsigned part,
    const uint8_t sum[IDX_SUM_BYTES])
{
	struct ix_walk *w = arg;
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 256;
		struct ix_row *r = realloc(w->rows, cap * sizeof(*r));
		if (!r) {
			w->err = kv_fail(w->why, sizeof(w->why), IDX_ERR_NOMEM, "index: out of memory");
			return 1;
		}
		w->rows = r;
		w->cap = cap;
	}
	memcpy(w->rows[w->n].doc, doc, SNAP_ID_BYTES);
	w->rows[w->n].part = part;
	memcpy(w->rows[w->n].sum, sum, TEXTREC_SUM);
	w->n++;
	return 0;
}

static int
ix_cmp(const uint8_t *da, unsigned pa, const uint8_t *db, unsigned pb)
{
	int c = memcmp(da, db, SNAP_ID_BYTES);
	return c ? c : pa < pb ? -1 : pa > pb;
}

/* A finding: msg, or "its text record: " and detail when detail is set. */
static void
ix_report(struct ix_walk *w, const uint8_t *doc, long part, int problem, const char *msg,
    const char *detail)
{
	char m[400];
	w->problems += problem;
	if (!w->fn)
		return;
	if (detail)
		snprintf(m, sizeof(m), "its text record: %s", detail);
	w->fn(w->arg, doc, part, problem, detail ? m : msg);
}

/* A row whose text record is gone. */
static void
ix_extra(struct ix_walk *w, const struct ix_row *r)
{
	if (!w->x) {
		ix_report(w, r->doc, r->part, 1, "an index row without a text record in the store "
		    "(a removed document)", NULL);
		return;
	}
	if ((w->err = idx_del(w->x, r->doc, r->part, w->why, sizeof(w->why))) == 0 && w->sy)
		w->sy->removed++;
}

static int
ix_doc_seen(struct ix_walk *w, const uint8_t *doc)
{
	if (w->n_docs && !memcmp(w->docs[w->n_docs - 1], doc, SNAP_ID_BYTES))
		return 0;
	if (w->n_docs == w->cap_docs) {
		size_t cap = w->cap_docs ? 2 * w->cap_docs : 256;
		void *d = realloc(w->docs, cap * SNAP_ID_BYTES);
		if (!d)
			return kv_fail(w->why, sizeof(w->why), IDX_ERR_NOMEM, "index: out of memory");
		w->docs = d;
		w->cap_docs = cap;
	}
	memcpy(w->docs[w->n_docs++], doc, SNAP_ID_BYTES);
	return 0;
}

static int
ix_text_cb(void *arg, const uint8_t doc[STORE_ID_BYTES], unsigned part, const uint8_t *buf,
    size_t len)
{
	struct ix_walk *w = arg;
	uint8_t sum[TEXTREC_SUM];
	char why[256], *text = NULL;
	unsigned got = part;
	size_t tlen;
	int changed = 0;

	while (w->at < w->n && !w->err &&
	    ix_cmp(w->rows[w->at].doc, w->rows[w->at].part, doc, part) < 0)
		ix_extra(w, &w->rows[w->at++]);
	if (w->err || (w->err = ix_doc_seen(w, doc)))
		return 1;
	w->texts++;
	if (textrec_peek(buf, len, &got, sum, why, sizeof(why)) || got != part) {
		if (w->sy)
			w->sy->bad++;
		ix_report(w, doc, part, 1, NULL, got != part ? "names another part" : why);
		if (w->at < w->n && !ix_cmp(w->rows[w->at].doc, w->rows[w->at].part, doc, part))
			w->at++; /* its row stays until the record is sound again */
		return 0;
	}
	if (w->check) {
		if (textrec_decode(buf, len, &got, sum, &text, &tlen, why, sizeof(why))) {
			ix_report(w, doc, part, 1, NULL, why);
			if (w->at < w->n && !ix_cmp(w->rows[w->at].doc, w->rows[w->at].part, doc, part))
				w->at++;
			return 0;
		}
		free(text);
		text = NULL;
	}
	if (w->at < w->n && !ix_cmp(w->rows[w->at].doc, w->rows[w->at].part, doc, part)) {
		changed = memcmp(w->rows[w->at].sum, sum, TEXTREC_SUM) != 0;
		w->at++;
		if (!changed) {
			if (w->sy)
				w->sy->kept++;
			return 0;
		}
	}
	if (!w->x) {
		if (!w->quiet_missing)
			ix_report(w, doc, part, 1, changed ? "its index row is stale (another text)" :
			    "not in the index", NULL);
		return 0;
	}
	if (textrec_decode(buf, len, &got, sum, &text, &tlen, why, sizeof(why))) {
		if (w->sy)
			w->sy->bad++;
		ix_report(w, doc, part, 1, NULL, why);
		return 0;
	}
	w->err = idx_put(w->x, doc, part, sum, text, tlen, w->why, sizeof(w->why));
	free(text);
	if (!w->err && w->sy) {
		if (changed)
			w->sy->updated++;
		else
			w->sy->added++;
	}
	return w->err != 0;
}

/* The merge; x NULL compares only (w->problems counts the differences). */
static int
ix_walk_run(struct ix_walk *w, struct store *s, struct idx *rows_of, char *why, size_t why_len)
{
	char swhy[256];
	int rc;

	if ((rc = idx_rows(rows_of, ix_row_cb, w, why, why_len)))
		return rc;
	if (w->err)
		return kv_fail(why, why_len, w->err, "%s", w->why);
	if (w->x && (rc = idx_begin(w->x, why, why_len)))
		return rc;
	rc = store_texts(s, NULL, ix_text_cb, w, swhy, sizeof(swhy));
	if (rc)
		rc = kv_fail(why, why_len, IDX_ERR_IO, "the store's text records: %s", swhy);
	while (!rc && !w->err && w->at < w->n)
		ix_extra(w, &w->rows[w->at++]);
	if (!rc && w->err)
		rc = kv_fail(why, why_len, w->err, "%s", w->why);
	if (w->x) {
		if (rc)
			idx_rollback(w->x);
		else
			rc = idx_commit(w->x, why, why_len);
	}
	return rc;
}

static void
ix_walk_free(struct ix_walk *w)
{
	free(w->rows);
	free(w->docs);
}

static int
ix_sync(struct idx *x, struct store *s, struct svc_index_sync *sy, char *why, size_t why_len)
{
	struct ix_walk w;
	int rc;
	memset(&w, 0, sizeof(w));
	w.x = x;
	w.sy = sy;
	rc = ix_walk_run(&w, s, x, why, why_len);
	ix_walk_free(&w);
	return rc;
}

/* Differences between x and the store (a read-only index's freshness). */
static int
ix_differs(struct idx *x, struct store *s, long *n, char *why, size_t why_len)
{
	struct ix_walk w;
	int rc;
	memset(&w, 0, sizeof(w));
	rc = ix_walk_run(&w, s, x, why, why_len);
	*n = w.problems;
	ix_walk_free(&w);
	return rc;
}

static int
ix_path(const char *state, char *path, size_t cap, char *why, size_t why_len)
{
	const char *dir = store_lmdb_dir(state);
	if (!dir)
		return kv_fail(why, why_len, -1, "the store %s keeps no text records (a text index "
		    "is kept beside an LMDB store only)", state);
	if ((size_t)snprintf(path, cap, "%s/%s", dir, IX_FILE) >= cap)
		return kv_fail(why, why_len, -1, "state directory name too long");
	return 0;
}

/* Open the file, rebuilding it when it is damaged or of another schema,
 * and bring it in step. */
static int
ix_open_sync(struct store *s, const char *path, struct idx **out,
    struct svc_index_sync *sy, char *why, size_t why_len)
{
	int had = access(path, F_OK) == 0, rc, tries;

	for (tries = 0;; tries++) {
		rc = idx_open(out, path, 0, why, why_len);
		if (rc == 0) {
			if (!had && !sy->rebuilt) {
				sy->rebuilt = 1;
				snprintf(sy->rebuilt_why, sizeof(sy->rebuilt_why), "there was none");
			}
			if ((rc = ix_sync(*out, s, sy, why, why_len)) == 0)
				return 0;
			idx_close(*out);
			*out = NULL;
		}
		if ((rc != IDX_ERR_CORRUPT && rc != IDX_ERR_STALE) || tries > 0)
			return -1;
		/* derived data: made again from the store's text records */
		sy->rebuilt = 1;
		snprintf(sy->rebuilt_why, sizeof(sy->rebuilt_why), "%s", why);
		memset(sy, 0, offsetof(struct svc_index_sync, rebuilt));
		if (idx_unlink(path, why, why_len))
			return -1;
	}
}

int
svc_index_open(struct store *s, const char *state, int read_only, int sync,
    struct svc_index **out, struct svc_index_sync *sy, char *why, size_t why_len)
{
	struct svc_index_sync dummy;
	struct svc_index *ix;
	struct idx *x = NULL;
	char path[1100];
	long diff = 0;
	int rc;

	*out = NULL;
	if (!sy)
		sy = &dummy;
	memset(sy, 0, sizeof(*sy));
	if (ix_path(state, path, sizeof(path), why, why_len))
		return -1;
	if (!sync) {
		if (access(path, F_OK) != 0)
			return 0; /* none: nothing to keep in step */
		if (idx_open(&x, path, read_only, why, why_len))
			return -1;
	} else if (!read_only) {
		if (ix_open_sync(s, path, &x, sy, why, why_len))
			return -1;
	} else {
		/* read-only: the file as it is when in step, else one in memory */
		if (idx_open(&x, path, 1, why, why_len) == 0 &&
		    (ix_differs(x, s, &diff, why, why_len) || diff)) {
			idx_close(x);
			x = NULL;
		}
		if (!x) {
			if ((rc = idx_open(&x, ":memory:", 0, why, why_len)) ||
			    (rc = ix_sync(x, s, sy, why, why_len))) {
				idx_close(x);
				return -1;
			}
			sy->in_memory = 1;
		}
	}
	if (!(ix = calloc(1, sizeof(*ix)))) {
		idx_close(x);
		return kv_fail(why, why_len, -1, "index: out of memory");
	}
	ix->x = x;
	ix->in_memory = sy->in_memory;
	*out = ix;
	return 0;
}

void
svc_index_close(struct svc_index *ix)
{
	if (!ix)
		return;
	idx_close(ix->x);
	free(ix);
}

int
svc_index_sync(struct svc_index *ix, struct store *s, struct svc_index_sync *sy, char *why,
    size_t why_len)
{
	struct svc_index_sync dummy;
	if (!sy)
		sy = &dummy;
	memset(sy, 0, sizeof(*sy));
	if (!ix)
		return 0;
	return ix_sync(ix->x, s, sy, why, why_len) ? -1 : 0;
}

int
svc_index_forget(struct svc_index *ix, const uint8_t doc_id[SNAP_ID_BYTES], char *why,
    size_t why_len)
{
	if (!ix)
		return 0;
	return idx_del(ix->x, doc_id, -1, why, why_len) ? -1 : 0;
}

int
index_put_text(struct svc_index *ix, const uint8_t doc_id[SNAP_ID_BYTES], unsigned part,
    const uint8_t *rec, size_t rec_len, const char *text, size_t len, char *why,
    size_t why_len)
{
	uint8_t sum[TEXTREC_SUM];
	unsigned got;
	if (!ix)
		return 0;
	if (textrec_peek(rec, rec_len, &got, sum, why, why_len))
		return -1;
	return idx_put(ix->x, doc_id, part, sum, text, len, why, why_len) ? -1 : 0;
}

/* ------------------------------------------------------------------------ */
/* verify                                                                    */

struct ix_nodoc {
	struct ix_walk *w;
	long n;
};

static int
ix_bsearch_doc(const struct ix_walk *w, const uint8_t *doc)
{
	size_t lo = 0, hi = w->n_docs;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = memcmp(w->docs[mid], doc, SNAP_ID_BYTES);
		if (!c)
			return 1;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

static int
ix_nodoc_cb(void *arg, const struct store_doc *d)
{
	struct ix_nodoc *a = arg;
	if (ix_bsearch_doc(a->w, d->doc_id))
		return 0;
	a->n++;
	if (a->w->fn)
		a->w->fn(a->w->arg, d->doc_id, -1, 0, "no text record (stored before text records): "
		    "not searchable until ingested again with --force");
	return 0;
}

int
svc_index_verify(struct store *s, const char *state,
    void (*fn)(void *arg, const uint8_t doc_id[SNAP_ID_BYTES], long part, int problem,
        const char *why),
    void *arg, struct svc_index_verified *out, char *why, size_t why_len)
{
	static const uint8_t zero[SNAP_ID_BYTES];
	struct ix_nodoc nd;
	struct ix_walk w;
	struct idx *x = NULL, *mem = NULL;
	char path[1100], iwhy[400];
	int rc;

	memset(out, 0, sizeof(*out));
	memset(&w, 0, sizeof(w));
	w.fn = fn;
	w.arg = arg;
	w.check = 1;
	if (ix_path(state, path, sizeof(path), why, why_len))
		return -1;
	out->exists = access(path, F_OK) == 0;
	/* writable when it may be: FTS5's integrity-check is an INSERT (it
	 * writes nothing, but SQLite refuses it on a read-only connection) */
	if (out->exists && (rc = idx_open(&x, path, access(path, W_OK) != 0, iwhy,
	    sizeof(iwhy))) != 0) {
		ix_report(&w, zero, -1, 1, iwhy, NULL);
		x = NULL;
	}
	if (x && idx_check(x, iwhy, sizeof(iwhy)))
		ix_report(&w, zero, -1, 1, iwhy, NULL);
	/* without a readable file, against an empty one in memory: every text
	 * record is still read and checked, and a missing row is no news when
	 * there is no file at all (the next search or kvsnapd start builds it) */
	if (!x && (rc = idx_open(&mem, ":memory:", 0, why, why_len)))
		return -1;
	w.quiet_missing = !out->exists;
	rc = ix_walk_run(&w, s, x ? x : mem, why, why_len);
	out->rows = (long)w.n;
	out->texts = w.texts;
	if (!rc) {
		nd.w = &w;
		nd.n = 0;
		rc = store_ls(s, ix_nodoc_cb, &nd, iwhy, sizeof(iwhy));
		out->docs_without_text = nd.n;
		if (rc == STORE_ERR_CORRUPT)
			rc = 0; /* damaged metadata: the store's verify reports it */
		else if (rc)
			rc = kv_fail(why, why_len, -1, "%s", iwhy);
	}
	out->problems = w.problems;
	ix_walk_free(&w);
	idx_close(x);
	idx_close(mem);
	return rc ? -1 : 0;
}

struct idx *
index_idx(struct svc_index *ix)
{
	return ix->x;
}
