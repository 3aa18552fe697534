/*
 * store_lmdb_read.c: the LMDB backend's read side: resolve a document
 * reference, read a snapshot record by record, info, ls, profiles, stats.
 * Every call runs in one read transaction (a consistent view; never blocks
 * a writer).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/store_lmdb.h"

/* ------------------------------------------------------------------------ */
/* Resolve                                                                   */

/* Documents whose id starts with the prefix: a range scan from the
 * prefix padded with zeros; stops at the second match. */
static int
st_resolve_prefix(struct store_lmdb *s, MDB_txn *t, const struct st_ref *ref,
    uint8_t doc_id[STORE_ID_BYTES], int *matches, char *why, size_t why_len)
{
	MDB_cursor *c;
	MDB_val k, v;
	int rc;

	*matches = 0;
	if ((rc = mdb_cursor_open(t, s->docs, &c)) != 0)
		return st_mdb(rc, "cursor", why, why_len);
	k.mv_data = (void *)(uintptr_t)ref->key;
	k.mv_size = STORE_ID_BYTES;
	for (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0 && *matches < 2;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		if (k.mv_size != STORE_ID_BYTES || !st_ref_match(ref, k.mv_data))
			break;
		if ((*matches)++ == 0)
			memcpy(doc_id, k.mv_data, STORE_ID_BYTES);
	}
	mdb_cursor_close(c);
	return st_walk_end(rc, "scan documents", why, why_len);
}

static int
st_resolve_txn(struct store_lmdb *s, MDB_txn *t, const struct st_ref *ref,
    uint8_t doc_id[STORE_ID_BYTES], char *why, size_t why_len)
{
	MDB_val k, v;
	int rc, matches;

	if (ref->kind == ST_REF_ID) {
		memcpy(doc_id, ref->key, STORE_ID_BYTES);
		k.mv_data = doc_id;
		k.mv_size = STORE_ID_BYTES;
		rc = mdb_get(t, s->docs, &k, &v);
		if (rc == MDB_NOTFOUND)
			return store_fail(why, why_len, STORE_ERR_NOT_FOUND, "no document %s", ref->text);
		return rc ? st_mdb(rc, "look up document", why, why_len) : 0;
	}
	if (ref->kind == ST_REF_PREFIX) {
		if ((rc = st_resolve_prefix(s, t, ref, doc_id, &matches, why, why_len)) != 0)
			return rc;
		if (matches > 1)
			return store_fail(why, why_len, STORE_ERR_AMBIGUOUS,
			    "prefix %s names several documents; give more digits", ref->text);
		if (matches == 1)
			return 0;
	}
	/* A name (hex-looking names are refused, so no prefix shadows one). */
	k.mv_data = (void *)(uintptr_t)ref->text;
	k.mv_size = ref->len;
	rc = ref->len && ref->len <= ST_NAME_MAX ? mdb_get(t, s->names, &k, &v) : MDB_NOTFOUND;
	if (rc == MDB_NOTFOUND)
		return store_fail(why, why_len, STORE_ERR_NOT_FOUND, "no document matches '%s'",
		    ref->text);
	if (rc)
		return st_mdb(rc, "look up name", why, why_len);
	if (v.mv_size != STORE_ID_BYTES)
		return store_fail(why, why_len, STORE_ERR_CORRUPT, "name '%s': stored id of %zu bytes",
		    ref->text, v.mv_size);
	memcpy(doc_id, v.mv_data, STORE_ID_BYTES);
	return 0;
}

int
stl_resolve(struct store *fs, const struct st_ref *ref, uint8_t doc_id[STORE_ID_BYTES],
    char *why, size_t why_len)
{
	struct store_lmdb *s = fs->be;
	MDB_txn *t;
	int rc;
	if ((rc = st_begin(s, 0, &t, why, why_len)) != 0)
		return rc;
	rc = st_resolve_txn(s, t, ref, doc_id, why, why_len);
	st_abort(s, t);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Readers: r->be is the read transaction                                    */

int
stl_read_begin(struct store_reader *r, char *why, size_t why_len)
{
	MDB_txn *t;
	int rc;
	if ((rc = st_begin(r->s->be, 0, &t, why, why_len)) != 0)
		return rc;
	r->be = t;
	return 0;
}

int
stl_read_record(struct store_reader *r, unsigned index, const uint8_t **buf, size_t *len,
    char *why, size_t why_len)
{
	struct store_lmdb *s = r->s->be;
	uint8_t key[ST_SNAP_KEY];
	char d[13], p[13];
	MDB_val k, v;
	int rc;

	st_snap_key(key, r->doc, r->prof, index);
	k.mv_data = key;
	k.mv_size = sizeof(key);
	rc = mdb_get(r->be, s->snaps, &k, &v);
	if (rc == 0) {
		*buf = v.mv_data;
		*len = v.mv_size;
		return 0;
	}
	st_short(r->doc, d);
	st_short(r->prof, p);
	if (rc == MDB_NOTFOUND && index == STORE_HEAD_RECORD)
		return store_fail(why, why_len, STORE_ERR_NOT_FOUND,
		    "no snapshot of document %s for profile %s", d, p);
	if (rc == MDB_NOTFOUND)
		return store_fail(why, why_len, STORE_ERR_CORRUPT,
		    "document %s profile %s: layer %u record missing", d, p, index);
	return st_mdb(rc, "read record", why, why_len);
}

void
stl_read_end(struct store_reader *r)
{
	st_abort(r->s->be, r->be);
}

/* ------------------------------------------------------------------------ */
/* Metadata queries                                                          */

int
stl_info(struct store *fs, const uint8_t *doc_id, struct store_doc *d, char *why,
    size_t why_len)
{
	struct store_lmdb *s = fs->be;
	struct st_meta m;
	MDB_txn *t;
	int rc;
	if ((rc = st_begin(s, 0, &t, why, why_len)) != 0)
		return rc;
	rc = st_meta_get(s, t, doc_id, &m, why, why_len);
	st_abort(s, t);
	if (rc == 0) {
		*d = m.d;
		st_meta_free(&m);
	}
	return rc;
}

/* Documents whose metadata does not decode are skipped and counted; the
 * call then ends STORE_ERR_CORRUPT naming the first (after listing the
 * others: one bad record must not hide the rest of the store). */
int
stl_ls(struct store *fs, int (*fn)(void *arg, const struct store_doc *d), store_bad_fn bad,
    void *arg, char *why, size_t why_len)
{
	struct store_lmdb *s = fs->be;
	static const uint8_t zero[STORE_ID_BYTES];
	MDB_txn *t;
	MDB_cursor *c;
	MDB_val k, v;
	int rc;

	if ((rc = st_begin(s, 0, &t, why, why_len)) != 0)
		return rc;
	if ((rc = mdb_cursor_open(t, s->docs, &c)) != 0) {
		st_abort(s, t);
		return st_mdb(rc, "cursor", why, why_len);
	}
	for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		struct st_meta m;
		char w[200], id[13], msg[300];
		int err;
		if (k.mv_size != STORE_ID_BYTES) {
			snprintf(msg, sizeof(msg), "a docs key of %zu bytes", k.mv_size);
			err = bad(arg, zero, msg);
		} else if (st_meta_decode(v.mv_data, v.mv_size, &m, w, sizeof(w)) != 0) {
			/* one damaged document costs only itself: named, and the rest listed */
			st_short(k.mv_data, id);
			snprintf(msg, sizeof(msg), "metadata of document %s: %s", id, w);
			err = bad(arg, k.mv_data, msg);
		} else {
			memcpy(m.d.doc_id, k.mv_data, STORE_ID_BYTES);
			err = fn(arg, &m.d);
			st_meta_free(&m);
		}
		if (err)
			break;
	}
	mdb_cursor_close(c);
	st_abort(s, t);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return st_mdb(rc, "list documents", why, why_len);
	return 0;
}

int
stl_profiles(struct store *fs, const uint8_t *doc_id,
    int (*fn)(void *arg, const uint8_t profile_id[STORE_ID_BYTES], uint64_t bytes,
        const uint8_t *head, size_t head_len, const char *why, int64_t last_used_us),
    void *arg, char *why, size_t why_len)
{
	struct store_lmdb *s = fs->be;
	struct st_meta m;
	MDB_txn *t;
	int rc, i, stop = 0;

	if ((rc = st_begin(s, 0, &t, why, why_len)) != 0)
		return rc;
	if ((rc = st_meta_get(s, t, doc_id, &m, why, why_len)) != 0) {
		st_abort(s, t);
		return rc;
	}
	for (i = 0; i < m.n && !stop; i++) {
		uint8_t key[ST_SNAP_KEY];
		char hw[256] = "";
		MDB_val k, v;
		int hr;

		st_snap_key(key, doc_id, m.p[i].id, STORE_HEAD_RECORD);
		k.mv_data = key;
		k.mv_size = sizeof(key);
		hr = mdb_get(t, s->snaps, &k, &v);
		if (hr != 0)
			snprintf(hw, sizeof(hw), "header record: %s", mdb_strerror(hr));
		stop = fn(arg, m.p[i].id, m.p[i].bytes, hr == 0 ? v.mv_data : NULL,
		    hr == 0 ? v.mv_size : 0, hr == 0 ? NULL : hw, m.p[i].last_used_us);
	}
	st_meta_free(&m);
	st_abort(s, t);
	return 0;
}

/* Counts from the databases' own statistics; stored bytes by summing the
 * documents' profile tables (one pass over docs). */
int
stl_stats(struct store *fs, struct store_stats *st, char *why, size_t why_len)
{
	struct store_lmdb *s = fs->be;
	MDB_envinfo info;
	MDB_stat ms;
	MDB_txn *t;
	MDB_cursor *c;
	MDB_val k, v;
	int rc;

	if ((rc = st_begin(s, 0, &t, why, why_len)) != 0)
		return rc;
	if ((rc = mdb_stat(t, s->docs, &ms)) == 0)
		st->n_docs = ms.ms_entries;
	if (rc == 0 && (rc = mdb_stat(t, s->lru, &ms)) == 0)
		st->n_snapshots = ms.ms_entries;
	if (rc == 0 && (rc = mdb_cursor_open(t, s->docs, &c)) == 0) {
		for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
		     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
			struct st_meta m;
			if (st_meta_decode(v.mv_data, v.mv_size, &m, NULL, 0) != 0)
				continue; /* verify reports it; stats stay usable */
			st->stored_bytes += m.d.stored_bytes;
			st_meta_free(&m);
		}
		mdb_cursor_close(c);
		if (rc == MDB_NOTFOUND)
			rc = 0;
	}
	mdb_env_info(s->env, &info);
	mdb_env_stat(s->env, &ms);
	st->map_size = info.me_mapsize;
	st->map_used = ((uint64_t)info.me_last_pgno + 1) * ms.ms_psize;
	st_abort(s, t);
	return rc ? st_mdb(rc, "stats", why, why_len) : 0;
}
