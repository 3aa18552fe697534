/*
 * store_prune.c: drop snapshots least recently used first until the
 * limits hold (age, count, bytes), in one write transaction; or, for a dry
 * run, only say which would go.  The lru database is ordered by last use,
 * so the victims are a prefix of it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/store_internal.h"

struct sw_victim {
	uint8_t doc[STORE_ID_BYTES], prof[STORE_ID_BYTES];
	uint64_t bytes;
	int64_t last_used_us;
};

struct sw_prune {
	const struct store_prune *p;
	struct sw_victim *v;
	int64_t nv, cap;
	uint64_t bytes;
};

/* Stored bytes of the whole store (decodable documents). */
static int
sw_total_bytes(struct store *s, MDB_txn *t, uint64_t *total, char *why, size_t why_len)
{
	MDB_cursor *c;
	MDB_val k, v;
	int rc;

	*total = 0;
	if ((rc = mdb_cursor_open(t, s->docs, &c)) != 0)
		return st_mdb(rc, "cursor", why, why_len);
	for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		struct st_meta m;
		if (st_meta_decode(v.mv_data, v.mv_size, &m, NULL, 0) == 0) {
			*total += m.d.stored_bytes;
			st_meta_free(&m);
		}
	}
	mdb_cursor_close(c);
	return rc == MDB_NOTFOUND ? 0 : st_mdb(rc, "sum documents", why, why_len);
}

/* Size of the snapshot an lru key names, from its document's table. */
static int
sw_lru_bytes(struct store *s, MDB_txn *t, const uint8_t *key, uint64_t *bytes, char *why,
    size_t why_len)
{
	struct st_meta m;
	char id[13];
	int rc, i;

	st_short(key + 8, id);
	rc = st_meta_get(s, t, key + 8, &m, why, why_len);
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

static int
sw_victim_add(struct sw_prune *a, const uint8_t *key, uint64_t bytes)
{
	struct sw_victim *x;
	if (a->nv == a->cap) {
		int64_t cap = a->cap ? 2 * a->cap : 64;
		if (!(x = realloc(a->v, (size_t)cap * sizeof(*x))))
			return STORE_ERR_NOMEM;
		a->v = x;
		a->cap = cap;
	}
	x = &a->v[a->nv++];
	memcpy(x->doc, key + 8, STORE_ID_BYTES);
	memcpy(x->prof, key + 8 + STORE_ID_BYTES, STORE_ID_BYTES);
	x->bytes = bytes;
	x->last_used_us = st_lru_stamp(key);
	a->bytes += bytes;
	return 0;
}

/* Walk lru from the oldest use and collect victims while any limit is
 * broken.  Each limit, once met, stays met further along (ages only grow,
 * counts and bytes only shrink), so the walk stops at the first keeper. */
static int
sw_prune_walk(struct store *s, MDB_txn *t, struct sw_prune *a, char *why, size_t why_len)
{
	const struct store_prune *p = a->p;
	int64_t cutoff = p->older_than_us > 0 ? st_now_us() - p->older_than_us : INT64_MIN;
	uint64_t n_left = 0, b_left = 0, bytes = 0;
	MDB_cursor *c;
	MDB_stat ms;
	MDB_val k, v;
	int rc, err = 0;

	a->nv = 0;
	a->bytes = 0;
	if ((rc = mdb_stat(t, s->lru, &ms)) != 0)
		return st_mdb(rc, "lru stats", why, why_len);
	n_left = ms.ms_entries;
	if (p->max_bytes > 0 && (rc = sw_total_bytes(s, t, &b_left, why, why_len)) != 0)
		return rc;
	if ((rc = mdb_cursor_open(t, s->lru, &c)) != 0)
		return st_mdb(rc, "cursor", why, why_len);
	for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0 && err == 0;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		if (k.mv_size != ST_LRU_KEY)
			err = store_fail(why, why_len, STORE_ERR_CORRUPT, "lru key of %zu bytes", k.mv_size);
		else
			err = sw_lru_bytes(s, t, k.mv_data, &bytes, why, why_len);
		if (err)
			break;
		if (!(st_lru_stamp(k.mv_data) < cutoff || (p->keep >= 0 && n_left > (uint64_t)p->keep) ||
		        (p->max_bytes > 0 && b_left > p->max_bytes)))
			break;
		if (sw_victim_add(a, k.mv_data, bytes) != 0)
			err = store_fail(why, why_len, STORE_ERR_NOMEM, "out of memory");
		n_left--;
		b_left = b_left > bytes ? b_left - bytes : 0;
	}
	mdb_cursor_close(c);
	if (err)
		return err;
	return rc == 0 || rc == MDB_NOTFOUND ? 0 : st_mdb(rc, "walk lru", why, why_len);
}

static int
sw_prune_op(struct store *s, MDB_txn *t, void *arg, char *why, size_t why_len)
{
	struct sw_prune *a = arg;
	struct st_meta m;
	int64_t j;
	int rc, i;

	if ((rc = sw_prune_walk(s, t, a, why, why_len)) != 0)
		return rc;
	for (j = 0; j < a->nv; j++) {
		if ((rc = st_meta_get(s, t, a->v[j].doc, &m, why, why_len)) != 0)
			return rc;
		i = st_meta_find(&m, a->v[j].prof);
		rc = i >= 0 ? st_drop(s, t, &m, i, why, why_len) : 0;
		st_meta_free(&m);
		if (rc)
			return rc;
	}
	return 0;
}

int
store_prune(struct store *s, const struct store_prune *p,
    int (*fn)(void *arg, const uint8_t doc_id[STORE_ID_BYTES],
        const uint8_t profile_id[STORE_ID_BYTES], uint64_t bytes, int64_t last_used_us),
    void *arg, int64_t *n_dropped, uint64_t *bytes_dropped, char *why, size_t why_len)
{
	struct sw_prune a = { p, NULL, 0, 0, 0 };
	MDB_txn *t;
	int64_t j;
	int rc;

	if (n_dropped)
		*n_dropped = 0;
	if (bytes_dropped)
		*bytes_dropped = 0;
	if (!s || !p)
		return store_fail(why, why_len, STORE_ERR_ARG, "prune: missing argument");
	if (p->dry_run) {
		if ((rc = st_begin(s, 0, &t, why, why_len)) != 0)
			return rc;
		rc = sw_prune_walk(s, t, &a, why, why_len);
		st_abort(s, t);
	} else {
		rc = st_write(s, sw_prune_op, &a, 0, why, why_len);
	}
	/* Report only what is gone (or would go): after the commit. */
	for (j = 0; rc == 0 && fn && j < a.nv; j++)
		fn(arg, a.v[j].doc, a.v[j].prof, a.v[j].bytes, a.v[j].last_used_us);
	if (rc == 0 && n_dropped)
		*n_dropped = a.nv;
	if (rc == 0 && bytes_dropped)
		*bytes_dropped = a.bytes;
	free(a.v);
	return rc;
}
