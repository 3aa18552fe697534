/*
 * store_lmdb_write.c: what changes the LMDB store, prune aside
 * (store_lmdb_prune.c): put, rm, rename, touch.  Each is an op run by
 * st_write() in one write transaction, so it happens entirely or not at
 * all, and is retried once on a grown map.  An op keeps no state across attempts except what it
 * recomputes.
 *
 * Invariants every op keeps (store_lmdb_verify.c checks them):
 *   - a snapshot (doc, prof) has records doc‖prof‖0..n_layer-1 and
 *     doc‖prof‖FFFF, is listed in doc's metadata table with its stored
 *     bytes and last use, and has exactly one lru key at that last use;
 *   - a document has at least one snapshot, and its name (if any) maps
 *     back to it in `names`;
 *   - text records (`texts`) belong to a document that exists.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/store_lmdb.h"

/* ------------------------------------------------------------------------ */
/* Shared steps                                                              */

/* A time for a new lru key: now, but after the newest key in the store, so
 * stamps are unique and ordered even when the clock steps back or two
 * writes fall in one microsecond. */
static int
sw_stamp(struct store_lmdb *s, MDB_txn *t, int64_t *stamp, char *why, size_t why_len)
{
	MDB_cursor *c;
	MDB_val k, v;
	int rc;

	*stamp = st_now_us();
	if ((rc = mdb_cursor_open(t, s->lru, &c)) != 0)
		return st_mdb(rc, "cursor", why, why_len);
	rc = mdb_cursor_get(c, &k, &v, MDB_LAST);
	if (rc == 0 && k.mv_size == ST_LRU_KEY && st_lru_stamp(k.mv_data) >= *stamp)
		*stamp = st_lru_stamp(k.mv_data) + 1;
	mdb_cursor_close(c);
	return st_walk_end(rc, "read lru", why, why_len);
}

static int
sw_lru(struct store_lmdb *s, MDB_txn *t, int add, int64_t stamp, const uint8_t *doc,
    const uint8_t *prof, char *why, size_t why_len)
{
	uint8_t key[ST_LRU_KEY];
	MDB_val k, v = { 0, NULL };
	int rc;

	st_lru_key(key, stamp, doc, prof);
	k.mv_data = key;
	k.mv_size = sizeof(key);
	rc = add ? mdb_put(t, s->lru, &k, &v, 0) : mdb_del(t, s->lru, &k, NULL);
	if (rc == MDB_NOTFOUND)
		return 0; /* already gone: verify reports the inconsistency */
	return rc ? st_mdb(rc, add ? "write lru" : "delete lru", why, why_len) : 0;
}

/* Drop name from `names` if it points at doc. */
static int
sw_unname(struct store_lmdb *s, MDB_txn *t, const char *name, const uint8_t *doc, char *why,
    size_t why_len)
{
	MDB_val k, v;
	int rc;

	if (!name[0])
		return 0;
	k.mv_data = (void *)(uintptr_t)name;
	k.mv_size = strlen(name);
	rc = mdb_get(t, s->names, &k, &v);
	if (rc == MDB_NOTFOUND ||
	    (rc == 0 && (v.mv_size != STORE_ID_BYTES || memcmp(v.mv_data, doc, STORE_ID_BYTES))))
		return 0;
	if (rc == 0)
		rc = mdb_del(t, s->names, &k, NULL);
	return rc ? st_mdb(rc, "delete name", why, why_len) : 0;
}

/* Give m's document the name `name` ("" removes it): refused when another
 * document holds it; the old name is released. */
static int
sw_name(struct store_lmdb *s, MDB_txn *t, struct st_meta *m, const char *name, char *why,
    size_t why_len)
{
	char other[13];
	MDB_val k, v;
	int rc;

	if (strcmp(name, m->d.name) == 0)
		return 0;
	if (name[0]) {
		k.mv_data = (void *)(uintptr_t)name;
		k.mv_size = strlen(name);
		rc = mdb_get(t, s->names, &k, &v);
		if (rc == 0 && v.mv_size == STORE_ID_BYTES &&
		    memcmp(v.mv_data, m->d.doc_id, STORE_ID_BYTES) != 0) {
			st_short(v.mv_data, other);
			return store_fail(why, why_len, STORE_ERR_EXISTS,
			    "name '%s' belongs to document %s", name, other);
		}
		if (rc != 0 && rc != MDB_NOTFOUND)
			return st_mdb(rc, "look up name", why, why_len);
		v.mv_data = m->d.doc_id;
		v.mv_size = STORE_ID_BYTES;
		if ((rc = mdb_put(t, s->names, &k, &v, 0)) != 0)
			return st_mdb(rc, "write name", why, why_len);
	}
	if ((rc = sw_unname(s, t, m->d.name, m->d.doc_id, why, why_len)) != 0)
		return rc;
	snprintf(m->d.name, sizeof(m->d.name), "%s", name);
	return 0;
}

int
st_del_records(struct store_lmdb *s, MDB_txn *t, const uint8_t *doc, const uint8_t *prof,
    uint64_t *bytes, char *why, size_t why_len)
{
	uint8_t key[ST_SNAP_KEY];
	size_t plen = prof ? ST_PREFIX : STORE_ID_BYTES;
	MDB_cursor *c;
	MDB_val k, v;
	int rc;

	memset(key, 0, sizeof(key));
	memcpy(key, doc, STORE_ID_BYTES);
	if (prof)
		memcpy(key + STORE_ID_BYTES, prof, STORE_ID_BYTES);
	if (bytes)
		*bytes = 0;
	if ((rc = mdb_cursor_open(t, s->snaps, &c)) != 0)
		return st_mdb(rc, "cursor", why, why_len);
	/* Seek afresh after every delete: simpler than trusting where a cursor
	 * lands after mdb_cursor_del at a page's end. */
	for (;;) {
		k.mv_data = key;
		k.mv_size = sizeof(key);
		rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
		if (rc || k.mv_size < plen || memcmp(k.mv_data, key, plen) != 0)
			break;
		if (bytes)
			*bytes += v.mv_size;
		if ((rc = mdb_cursor_del(c, 0)) != 0)
			break;
	}
	mdb_cursor_close(c);
	return st_walk_end(rc, "delete records", why, why_len);
}

/* One snapshot out (contract in store_lmdb.h). */
int
st_drop(struct store_lmdb *s, MDB_txn *t, struct st_meta *m, int i, char *why, size_t why_len)
{
	MDB_val k;
	int rc;

	rc = st_del_records(s, t, m->d.doc_id, m->p[i].id, NULL, why, why_len);
	if (rc == 0)
		rc = sw_lru(s, t, 0, m->p[i].last_used_us, m->d.doc_id, m->p[i].id, why, why_len);
	if (rc)
		return rc;
	st_meta_del(m, i);
	if (m->n > 0)
		return st_meta_put(s, t, m, why, why_len);
	if ((rc = sw_unname(s, t, m->d.name, m->d.doc_id, why, why_len)) != 0 ||
	    (rc = st_del_texts(s, t, m->d.doc_id, why, why_len)) != 0)
		return rc;
	k.mv_data = m->d.doc_id;
	k.mv_size = STORE_ID_BYTES;
	rc = mdb_del(t, s->docs, &k, NULL);
	return rc ? st_mdb(rc, "delete document", why, why_len) : 0;
}

/* ------------------------------------------------------------------------ */
/* Put                                                                       */

struct sw_put {
	const struct store_doc *d;
	const struct store_snapshot *snap;
	uint64_t payload;
};

/* Metadata for the put: a new document from d, or the stored one with d's
 * non-empty fields, d's owners added and shared if d is (the name is
 * handled by sw_name). */
static int
sw_put_meta(struct store_lmdb *s, MDB_txn *t, const struct store_doc *d, int64_t stamp,
    struct st_meta *m, char *why, size_t why_len)
{
	int rc = st_meta_get(s, t, d->doc_id, m, why, why_len);
	if (rc == STORE_ERR_NOT_FOUND) {
		memset(m, 0, sizeof(*m));
		m->d = *d;
		m->d.name[0] = '\0';
		m->d.n_owners = 0;
		m->d.created_us = d->created_us > 0 ? d->created_us : stamp;
	} else if (rc) {
		return rc; /* a corrupt one's reason names the document; rm clears it */
	}
	if ((rc = st_doc_merge(&m->d, d, why, why_len)) != 0)
		st_meta_free(m);
	return rc;
}

static int
sw_put_records(struct store_lmdb *s, MDB_txn *t, const uint8_t *doc,
    const struct store_snapshot *sn, char *why, size_t why_len)
{
	uint8_t key[ST_SNAP_KEY];
	MDB_val k, v;
	int i, rc;

	k.mv_data = key;
	k.mv_size = sizeof(key);
	for (i = -1; i < sn->n_layer; i++) {
		unsigned layer = i < 0 ? STORE_HEAD_RECORD : (unsigned)i;
		st_snap_key(key, doc, sn->profile_id, layer);
		v.mv_data = (void *)(uintptr_t)(i < 0 ? sn->header : sn->layer[i]);
		v.mv_size = i < 0 ? sn->header_len : sn->layer_len[i];
		if ((rc = mdb_put(t, s->snaps, &k, &v, 0)) != 0)
			return st_mdb(rc, "write record", why, why_len);
	}
	return 0;
}

static int
sw_put_op(struct store_lmdb *s, MDB_txn *t, void *arg, char *why, size_t why_len)
{
	struct sw_put *a = arg;
	const uint8_t *doc = a->d->doc_id, *prof = a->snap->profile_id;
	struct st_meta m;
	int64_t stamp;
	int rc, i;

	if ((rc = sw_stamp(s, t, &stamp, why, why_len)) != 0)
		return rc;
	if ((rc = sw_put_meta(s, t, a->d, stamp, &m, why, why_len)) != 0)
		return rc;
	if (a->d->name[0])
		rc = sw_name(s, t, &m, a->d->name, why, why_len);
	/* A replaced snapshot: its records and lru key go first (it may have
	 * had more layers than the new one). */
	if (rc == 0)
		rc = st_del_records(s, t, doc, prof, NULL, why, why_len);
	if (rc == 0 && (i = st_meta_find(&m, prof)) >= 0)
		rc = sw_lru(s, t, 0, m.p[i].last_used_us, doc, prof, why, why_len);
	if (rc == 0)
		rc = sw_put_records(s, t, doc, a->snap, why, why_len);
	if (rc == 0 && a->snap->text)
		rc = st_text_put(s, t, doc, a->snap->text, why, why_len);
	if (rc == 0)
		rc = sw_lru(s, t, 1, stamp, doc, prof, why, why_len);
	if (rc == 0 && st_meta_set(&m, prof, stamp, a->payload) != 0)
		rc = store_fail(why, why_len, STORE_ERR_NOMEM, "out of memory");
	/* shrink --replace: the snapshot it was cut from goes in this same
	 * transaction (the new one is listed, so the document stays) */
	if (rc == 0 && a->snap->replaces && memcmp(a->snap->replaces, prof, STORE_ID_BYTES)) {
		if ((i = st_meta_find(&m, a->snap->replaces)) < 0)
			rc = store_fail(why, why_len, STORE_ERR_NOT_FOUND,
			    "put: the snapshot to replace is not stored");
		else
			rc = st_drop(s, t, &m, i, why, why_len);
	}
	if (rc == 0) {
		m.d.last_used_us = stamp;
		rc = st_meta_put(s, t, &m, why, why_len);
	}
	st_meta_free(&m);
	return rc;
}

int
stl_put(struct store *fs, const struct store_doc *d, const struct store_snapshot *snap,
    uint64_t payload, char *why, size_t why_len)
{
	struct sw_put a = { d, snap, payload };
	return st_write(fs->be, sw_put_op, &a, (size_t)payload, why, why_len);
}

/* ------------------------------------------------------------------------ */
/* Touch, rename                                                             */

struct sw_ids {
	const uint8_t *doc, *prof;
	const char *name;
};

static int
sw_touch_op(struct store_lmdb *s, MDB_txn *t, void *arg, char *why, size_t why_len)
{
	struct sw_ids *a = arg;
	struct st_meta m;
	char d[13], p[13];
	int64_t stamp;
	int rc, i;

	if ((rc = sw_stamp(s, t, &stamp, why, why_len)) != 0)
		return rc;
	if ((rc = st_meta_get(s, t, a->doc, &m, why, why_len)) != 0)
		return rc;
	if ((i = st_meta_find(&m, a->prof)) < 0) {
		st_short(a->doc, d);
		st_short(a->prof, p);
		rc = store_fail(why, why_len, STORE_ERR_NOT_FOUND,
		    "no snapshot of document %s for profile %s", d, p);
	}
	if (rc == 0)
		rc = sw_lru(s, t, 0, m.p[i].last_used_us, a->doc, a->prof, why, why_len);
	if (rc == 0)
		rc = sw_lru(s, t, 1, stamp, a->doc, a->prof, why, why_len);
	if (rc == 0) {
		m.p[i].last_used_us = m.d.last_used_us = stamp;
		rc = st_meta_put(s, t, &m, why, why_len);
	}
	st_meta_free(&m);
	return rc;
}

int
stl_touch(struct store *fs, const uint8_t *doc, const uint8_t *prof, char *why, size_t why_len)
{
	struct sw_ids a = { doc, prof, NULL };
	return st_write(fs->be, sw_touch_op, &a, 0, why, why_len);
}

static int
sw_rename_op(struct store_lmdb *s, MDB_txn *t, void *arg, char *why, size_t why_len)
{
	struct sw_ids *a = arg;
	struct st_meta m;
	int rc;

	if ((rc = st_meta_get(s, t, a->doc, &m, why, why_len)) != 0)
		return rc;
	rc = sw_name(s, t, &m, a->name, why, why_len);
	if (rc == 0)
		rc = st_meta_put(s, t, &m, why, why_len);
	st_meta_free(&m);
	return rc;
}

int
stl_rename(struct store *fs, const uint8_t *doc, const char *name, char *why, size_t why_len)
{
	struct sw_ids a = { doc, NULL, name };
	return st_write(fs->be, sw_rename_op, &a, 0, why, why_len);
}

/* ------------------------------------------------------------------------ */
/* Remove                                                                    */

/* Delete every key of `db` whose key bytes 8..40 (lru) or value (names)
 * are doc: the slow path for a document whose metadata is lost. */
static int
sw_scrub(MDB_txn *t, MDB_dbi db, int in_key, const uint8_t *doc,
    int *found, char *why, size_t why_len)
{
	MDB_cursor *c;
	MDB_val k, v;
	int rc;

	if ((rc = mdb_cursor_open(t, db, &c)) != 0)
		return st_mdb(rc, "cursor", why, why_len);
	for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		const MDB_val *x = in_key ? &k : &v;
		size_t off = in_key ? 8 : 0;
		if (x->mv_size < off + STORE_ID_BYTES ||
		    memcmp((const uint8_t *)x->mv_data + off, doc, STORE_ID_BYTES) != 0)
			continue;
		if ((rc = mdb_cursor_del(c, 0)) != 0)
			break;
		*found = 1;
	}
	mdb_cursor_close(c);
	return st_walk_end(rc, "scrub", why, why_len);
}

static int
sw_rm_op(struct store_lmdb *s, MDB_txn *t, void *arg, char *why, size_t why_len)
{
	struct sw_ids *a = arg;
	struct st_meta m;
	uint64_t bytes = 0;
	char id[13];
	MDB_val k;
	int rc, i, found = 0;

	rc = st_meta_get(s, t, a->doc, &m, why, why_len);
	if (rc == 0) {
		found = 1;
		for (i = 0; i < m.n && rc == 0; i++)
			rc = sw_lru(s, t, 0, m.p[i].last_used_us, a->doc, m.p[i].id, why, why_len);
		if (rc == 0)
			rc = sw_unname(s, t, m.d.name, a->doc, why, why_len);
		st_meta_free(&m);
	} else if (rc == STORE_ERR_CORRUPT || rc == STORE_ERR_NOT_FOUND) {
		/* Unreadable or missing metadata: find the rest by scanning. */
		found = rc == STORE_ERR_CORRUPT;
		rc = sw_scrub(t, s->lru, 1, a->doc, &found, why, why_len);
		if (rc == 0)
			rc = sw_scrub(t, s->names, 0, a->doc, &found, why, why_len);
	}
	if (rc == 0)
		rc = st_del_records(s, t, a->doc, NULL, &bytes, why, why_len);
	if (rc == 0)
		rc = st_del_texts(s, t, a->doc, why, why_len);
	if (rc)
		return rc;
	k.mv_data = (void *)(uintptr_t)a->doc;
	k.mv_size = STORE_ID_BYTES;
	rc = mdb_del(t, s->docs, &k, NULL);
	if (rc && rc != MDB_NOTFOUND)
		return st_mdb(rc, "delete document", why, why_len);
	if (!found && !bytes) {
		st_short(a->doc, id);
		return store_fail(why, why_len, STORE_ERR_NOT_FOUND, "no document %s", id);
	}
	return 0;
}

int
stl_rm(struct store *fs, const uint8_t *doc, char *why, size_t why_len)
{
	struct sw_ids a = { doc, NULL, NULL };
	return st_write(fs->be, sw_rm_op, &a, 0, why, why_len);
}

struct sw_rm1 {
	const uint8_t *doc, *prof;
	int gone;
};

static int
sw_rm_snapshot_op(struct store_lmdb *s, MDB_txn *t, void *arg, char *why, size_t why_len)
{
	struct sw_rm1 *a = arg;
	struct st_meta m;
	char id[13], pid[13];
	int rc, i;

	if ((rc = st_meta_get(s, t, a->doc, &m, why, why_len)) != 0) {
		if (rc == STORE_ERR_NOT_FOUND) {
			st_short(a->doc, id);
			return store_fail(why, why_len, rc, "no document %s", id);
		}
		return rc;
	}
	if ((i = st_meta_find(&m, a->prof)) < 0) {
		st_short(a->doc, id);
		st_short(a->prof, pid);
		st_meta_free(&m);
		return store_fail(why, why_len, STORE_ERR_NOT_FOUND,
		    "document %s has no snapshot %s", id, pid);
	}
	a->gone = m.n == 1;
	rc = st_drop(s, t, &m, i, why, why_len);
	st_meta_free(&m);
	return rc;
}

int
stl_rm_snapshot(struct store *fs, const uint8_t *doc, const uint8_t *prof, int *doc_gone,
    char *why, size_t why_len)
{
	struct sw_rm1 a = { doc, prof, 0 };
	int rc = st_write(fs->be, sw_rm_snapshot_op, &a, 0, why, why_len);
	*doc_gone = !rc && a.gone;
	return rc;
}
