/*
 * store_lmdb_prune.c: drop snapshots least recently used first until the
 * limits hold (age, count, bytes), in one write transaction; or, for a dry
 * run, only say which would go.  The lru database is ordered by last use,
 * so the victims are a prefix of it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/store_lmdb.h"

struct sw_prune {
	const struct store_prune *p;
	struct st_victims *v;
};

/* Stored bytes of the whole store (decodable documents); a document
 * whose metadata does not decode is skipped and reported (damaged: it
 * costs only itself, issue 26). */
static int
sw_total_bytes(struct store_lmdb *s, MDB_txn *t, struct st_victims *vs, uint64_t *total,
    char *why, size_t why_len)
{
	MDB_cursor *c;
	MDB_val k, v;
	int rc, err = 0;

	*total = 0;
	if ((rc = mdb_cursor_open(t, s->docs, &c)) != 0)
		return st_mdb(rc, "cursor", why, why_len);
	for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0 && !err;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		struct st_meta m;
		char w[150], id[13], msg[200];
		if (k.mv_size != STORE_ID_BYTES)
			continue; /* verify reports it */
		if (st_meta_decode(v.mv_data, v.mv_size, &m, w, sizeof(w)) == 0) {
			*total += m.d.stored_bytes;
			st_meta_free(&m);
			continue;
		}
		st_short(k.mv_data, id);
		snprintf(msg, sizeof(msg), "metadata of document %s: %s", id, w);
		if (st_victims_damaged(vs, k.mv_data, msg) != 0)
			err = store_fail(why, why_len, STORE_ERR_NOMEM, "out of memory");
	}
	mdb_cursor_close(c);
	if (err)
		return err;
	return st_walk_end(rc, "sum documents", why, why_len);
}

#define SW_DAMAGED 1 /* sw_lru_bytes: the document's metadata does not decode */

/* Size of the snapshot an lru key names, from its document's table. */
static int
sw_lru_bytes(struct store_lmdb *s, MDB_txn *t, const uint8_t *key, uint64_t *bytes, char *why,
    size_t why_len)
{
	struct st_meta m;
	char id[13];
	int rc, i;

	st_short(key + 8, id);
	rc = st_meta_get(s, t, key + 8, &m, why, why_len);
	if (rc == STORE_ERR_CORRUPT)
		return SW_DAMAGED; /* skipped (sw_total_bytes reported it) */
	if (rc == STORE_ERR_NOT_FOUND)
		return store_fail(why, why_len, STORE_ERR_CORRUPT,
		    "lru names document %s, which is missing (run verify)", id);
	if (rc)
		return rc;
	i = st_meta_find(&m, key + 8 + STORE_ID_BYTES);
	if (i >= 0)
		*bytes = m.p[i].bytes;
	st_meta_free(&m);
	if (i < 0)
		return store_fail(why, why_len, STORE_ERR_CORRUPT,
		    "lru names a snapshot document %s does not list (run verify)", id);
	return 0;
}

/* Walk lru from the oldest use and collect victims while any limit is
 * broken (st_prune_more: the walk stops at the first keeper). */
static int
sw_prune_walk(struct store_lmdb *s, MDB_txn *t, struct sw_prune *a, char *why, size_t why_len)
{
	const struct store_prune *p = a->p;
	int64_t cutoff = st_prune_cutoff(p);
	uint64_t n_left = 0, b_left = 0, bytes = 0;
	MDB_cursor *c;
	MDB_stat ms;
	MDB_val k, v;
	int rc, err = 0;

	a->v->n = 0; /* a retried transaction walks again */
	a->v->bytes = 0;
	a->v->n_bad = 0;
	if ((rc = mdb_stat(t, s->lru, &ms)) != 0)
		return st_mdb(rc, "lru stats", why, why_len);
	n_left = ms.ms_entries;
	if ((rc = sw_total_bytes(s, t, a->v, &b_left, why, why_len)) != 0)
		return rc;
	if ((rc = mdb_cursor_open(t, s->lru, &c)) != 0)
		return st_mdb(rc, "cursor", why, why_len);
	for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0 && err == 0;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		if (k.mv_size != ST_LRU_KEY)
			err = store_fail(why, why_len, STORE_ERR_CORRUPT, "lru key of %zu bytes", k.mv_size);
		else
			err = sw_lru_bytes(s, t, k.mv_data, &bytes, why, why_len);
		if (err == SW_DAMAGED) { /* outside the prune: neither dropped nor counted */
			err = 0;
			n_left--;
			continue;
		}
		if (err)
			break;
		if (!st_prune_more(p, cutoff, st_lru_stamp(k.mv_data), n_left, b_left))
			break;
		if (st_victims_add(a->v, (const uint8_t *)k.mv_data + 8,
		        (const uint8_t *)k.mv_data + 8 + STORE_ID_BYTES, bytes,
		        st_lru_stamp(k.mv_data)) != 0)
			err = store_fail(why, why_len, STORE_ERR_NOMEM, "out of memory");
		n_left--;
		b_left = b_left > bytes ? b_left - bytes : 0;
	}
	mdb_cursor_close(c);
	if (err)
		return err;
	return st_walk_end(rc, "walk lru", why, why_len);
}

static int
sw_prune_op(struct store_lmdb *s, MDB_txn *t, void *arg, char *why, size_t why_len)
{
	struct sw_prune *a = arg;
	struct st_meta m;
	int64_t j;
	int rc, i;

	if ((rc = sw_prune_walk(s, t, a, why, why_len)) != 0)
		return rc;
	for (j = 0; j < a->v->n; j++) {
		if ((rc = st_meta_get(s, t, a->v->v[j].doc, &m, why, why_len)) != 0)
			return rc;
		i = st_meta_find(&m, a->v->v[j].prof);
		rc = i >= 0 ? st_drop(s, t, &m, i, why, why_len) : 0;
		st_meta_free(&m);
		if (rc)
			return rc;
	}
	return 0;
}

int
stl_prune(struct store *fs, const struct store_prune *p, struct st_victims *v, char *why,
    size_t why_len)
{
	struct store_lmdb *s = fs->be;
	struct sw_prune a = { p, v };
	MDB_txn *t;
	int rc;

	if (!p->dry_run)
		return st_write(s, sw_prune_op, &a, 0, why, why_len);
	if ((rc = st_begin(s, 0, &t, why, why_len)) != 0)
		return rc;
	rc = sw_prune_walk(s, t, &a, why, why_len);
	st_abort(s, t);
	return rc;
}
