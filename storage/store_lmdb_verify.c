/*
 * store_lmdb_verify.c: check every snapshot of the store (or of one
 * document) in one read transaction, against the invariants
 * store_lmdb_write.c keeps and the caller's content check (the codec's:
 * snap_verify):
 *   - the head record is present, and the content check passes on the
 *     snapshot's records (snap_verify: the header decodes, names the key's
 *     profile, every layer 0..n_layer-1 is present and passes its checksums,
 *     and no other layer record exists);
 *   - the document's metadata decodes, lists the snapshot with the bytes
 *     its records take, and lru holds its key at the listed last use;
 *   - (whole store) no records, lru keys, names or text records point at
 *     documents or snapshots that do not exist (a text record's content is
 *     the service's to check: service/index_sync.c).
 * One report per snapshot; problems of a document as a whole (metadata,
 * name) and orphans whose profile is unknown come with an all-zero
 * profile_id.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "storage/store_lmdb.h"

#define SV_WHY 320

struct sv {
	struct store_lmdb *s;
	MDB_txn *t;
	store_check_fn check;
	void *check_arg;
	int (*fn)(void *arg, const uint8_t doc_id[STORE_ID_BYTES],
	    const uint8_t profile_id[STORE_ID_BYTES], const char *why);
	void *arg;
	int64_t n_seen, n_bad;
	int stop;
	struct store_rec *rec; /* records of the snapshot being checked */
	int n_rec;
	int64_t cap_rec;
};

static const uint8_t sv_zero[STORE_ID_BYTES];

static void
sv_report(struct sv *v, const uint8_t *doc, const uint8_t *prof, const char *why)
{
	v->n_seen++;
	if (why)
		v->n_bad++;
	if (v->fn && v->fn(v->arg, doc, prof ? prof : sv_zero, why))
		v->stop = 1;
}

/* Does the lru hold key (stamp, doc, prof)? */
static int
sv_lru_has(struct sv *v, int64_t stamp, const uint8_t *doc, const uint8_t *prof)
{
	uint8_t key[ST_LRU_KEY];
	MDB_val k, d;
	st_lru_key(key, stamp, doc, prof);
	k.mv_data = key;
	k.mv_size = sizeof(key);
	return mdb_get(v->t, v->s->lru, &k, &d) == 0;
}

/* One snapshot: v->rec holds its records (header last, keys being
 * sorted); m its document's metadata or NULL when that is unreadable. */
static void
sv_snapshot(struct sv *v, const uint8_t *doc, const uint8_t *prof, const struct st_meta *m,
    const char *meta_why)
{
	const struct store_rec *hr = v->n_rec ? &v->rec[v->n_rec - 1] : NULL;
	char why[SV_WHY] = "";
	uint64_t bytes = 0;
	int i, bad = 1;

	for (i = 0; i < v->n_rec; i++)
		bytes += v->rec[i].len;
	i = m ? st_meta_find(m, prof) : -1;
	if (!m)
		snprintf(why, sizeof(why), "%s", meta_why);
	else if (!hr || hr->index != STORE_HEAD_RECORD)
		snprintf(why, sizeof(why), "header record missing");
	else if (v->check && v->check(v->check_arg, prof, v->rec, v->n_rec, why, sizeof(why)) != 0)
		;
	else if (i < 0)
		snprintf(why, sizeof(why), "not listed in the document's metadata");
	else if (m->p[i].bytes != bytes)
		snprintf(why, sizeof(why), "metadata says %llu bytes, records take %llu",
		    (unsigned long long)m->p[i].bytes, (unsigned long long)bytes);
	else if (!sv_lru_has(v, m->p[i].last_used_us, doc, prof))
		snprintf(why, sizeof(why), "lru entry missing");
	else
		bad = 0;
	if (bad && !why[0])
		snprintf(why, sizeof(why), "content check failed");
	sv_report(v, doc, prof, bad ? why : NULL);
}

static int
sv_rec_add(struct sv *v, unsigned layer, const MDB_val *d)
{
	struct store_rec *r = kv_grow(v->rec, v->n_rec, &v->cap_rec, 64, sizeof(*r));
	if (!r)
		return STORE_ERR_NOMEM;
	v->rec = r;
	v->rec[v->n_rec].index = layer;
	v->rec[v->n_rec].buf = d->mv_data;
	v->rec[v->n_rec].len = d->mv_size;
	v->n_rec++;
	return 0;
}

/* Walk doc's records grouped by profile and check each group; *n_groups
 * counts them. */
static int
sv_records(struct sv *v, const uint8_t *doc, const struct st_meta *m, const char *meta_why,
    int *n_groups, char *why, size_t why_len)
{
	uint8_t key[ST_SNAP_KEY], prof[STORE_ID_BYTES];
	MDB_cursor *c;
	MDB_val k, d;
	int rc, err = 0;

	*n_groups = 0;
	memset(key, 0, sizeof(key));
	memcpy(key, doc, STORE_ID_BYTES);
	k.mv_data = key;
	k.mv_size = sizeof(key);
	v->n_rec = 0;
	if ((rc = mdb_cursor_open(v->t, v->s->snaps, &c)) != 0)
		return st_mdb(rc, "cursor", why, why_len);
	for (rc = mdb_cursor_get(c, &k, &d, MDB_SET_RANGE); rc == 0 && !err && !v->stop;
	     rc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
		const uint8_t *kb = k.mv_data;
		if (k.mv_size < STORE_ID_BYTES || memcmp(kb, doc, STORE_ID_BYTES) != 0)
			break;
		if (k.mv_size != ST_SNAP_KEY) {
			sv_report(v, doc, NULL, "snaps key of the wrong size");
			continue;
		}
		if (v->n_rec && memcmp(prof, kb + STORE_ID_BYTES, STORE_ID_BYTES) != 0) {
			sv_snapshot(v, doc, prof, m, meta_why);
			++*n_groups;
			v->n_rec = 0;
		}
		memcpy(prof, kb + STORE_ID_BYTES, STORE_ID_BYTES);
		err = sv_rec_add(v, (unsigned)kb[ST_PREFIX] << 8 | kb[ST_PREFIX + 1], &d);
	}
	mdb_cursor_close(c);
	if (err)
		return store_fail(why, why_len, err, "out of memory");
	if (rc != 0 && rc != MDB_NOTFOUND)
		return st_mdb(rc, "scan records", why, why_len);
	if (v->n_rec && !v->stop) {
		sv_snapshot(v, doc, prof, m, meta_why);
		++*n_groups;
	}
	return 0;
}

/* Has doc ‖ prof any record at all? */
static int
sv_has_records(struct sv *v, const uint8_t *doc, const uint8_t *prof)
{
	uint8_t key[ST_SNAP_KEY];
	MDB_cursor *c;
	MDB_val k, d;
	int rc;

	st_snap_key(key, doc, prof, 0);
	k.mv_data = key;
	k.mv_size = sizeof(key);
	if (mdb_cursor_open(v->t, v->s->snaps, &c) != 0)
		return 1; /* cannot tell; the record walk reports real trouble */
	rc = mdb_cursor_get(c, &k, &d, MDB_SET_RANGE);
	rc = rc == 0 && k.mv_size >= ST_PREFIX && memcmp(k.mv_data, key, ST_PREFIX) == 0;
	mdb_cursor_close(c);
	return rc;
}

/* A document: its metadata, name, records, and listed snapshots that have
 * no records at all. */
static int
sv_doc(struct sv *v, const uint8_t *doc, char *why, size_t why_len)
{
	struct st_meta m;
	char mw[SV_WHY] = "", w[SV_WHY];
	MDB_val k, d;
	int rc, mrc, i, groups;

	mrc = st_meta_get(v->s, v->t, doc, &m, mw, sizeof(mw));
	if (mrc != 0 && mrc != STORE_ERR_CORRUPT && mrc != STORE_ERR_NOT_FOUND)
		return store_fail(why, why_len, mrc, "%s", mw);
	rc = sv_records(v, doc, mrc == 0 ? &m : NULL, mw, &groups, why, why_len);
	if (rc || mrc != 0) {
		/* Unreadable metadata and not one record to pin it on. */
		if (!rc && mrc == STORE_ERR_CORRUPT && !groups)
			sv_report(v, doc, NULL, mw);
		if (mrc == 0)
			st_meta_free(&m);
		return rc;
	}
	for (i = 0; i < m.n && !v->stop; i++)
		if (!sv_has_records(v, doc, m.p[i].id))
			sv_report(v, doc, m.p[i].id, "listed in metadata, but no records");
	if (m.d.name[0] && !v->stop) {
		k.mv_data = m.d.name;
		k.mv_size = strlen(m.d.name);
		if (mdb_get(v->t, v->s->names, &k, &d) != 0 || d.mv_size != STORE_ID_BYTES ||
		    memcmp(d.mv_data, doc, STORE_ID_BYTES) != 0) {
			snprintf(w, sizeof(w), "name '%s' does not lead back to the document", m.d.name);
			sv_report(v, doc, NULL, w);
		}
	}
	st_meta_free(&m);
	return 0;
}

/* Next 32-byte prefix after id (0 when id was the last possible). */
static int
sv_next_id(uint8_t id[STORE_ID_BYTES])
{
	int i;
	for (i = STORE_ID_BYTES - 1; i >= 0; i--)
		if (++id[i] != 0)
			return 1;
	return 0;
}

static int
sv_has_doc(struct sv *v, const uint8_t *doc)
{
	MDB_val k = { STORE_ID_BYTES, (void *)(uintptr_t)doc }, d;
	return mdb_get(v->t, v->s->docs, &k, &d) == 0;
}

/* Records of documents that have no metadata at all: visit each distinct
 * doc prefix in snaps, skipping to the next prefix. */
static int
sv_orphan_records(struct sv *v, char *why, size_t why_len)
{
	uint8_t at[STORE_ID_BYTES] = { 0 };
	MDB_cursor *c;
	MDB_val k, d;
	int rc, err = 0, groups;

	if ((rc = mdb_cursor_open(v->t, v->s->snaps, &c)) != 0)
		return st_mdb(rc, "cursor", why, why_len);
	for (;;) {
		k.mv_data = at;
		k.mv_size = STORE_ID_BYTES;
		if ((rc = mdb_cursor_get(c, &k, &d, MDB_SET_RANGE)) != 0 || v->stop)
			break;
		if (k.mv_size < STORE_ID_BYTES) {
			sv_report(v, sv_zero, NULL, "snaps key of the wrong size");
			memset(at, 0, sizeof(at));
			memcpy(at, k.mv_data, k.mv_size);
		} else {
			memcpy(at, k.mv_data, STORE_ID_BYTES);
			if (!sv_has_doc(v, at) &&
			    (err = sv_records(v, at, NULL, "records without document metadata", &groups, why,
			        why_len)) != 0)
				break;
		}
		if (!sv_next_id(at))
			break;
	}
	mdb_cursor_close(c);
	if (err)
		return err;
	return st_walk_end(rc, "scan records", why, why_len);
}

/* lru keys and names that lead nowhere. */
static int
sv_orphan_index(struct sv *v, MDB_dbi db, int is_lru, char *why, size_t why_len)
{
	MDB_cursor *c;
	MDB_val k, d;
	char w[SV_WHY];
	int rc;

	if ((rc = mdb_cursor_open(v->t, db, &c)) != 0)
		return st_mdb(rc, "cursor", why, why_len);
	for (rc = mdb_cursor_get(c, &k, &d, MDB_FIRST); rc == 0 && !v->stop;
	     rc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
		struct st_meta m;
		const uint8_t *kb = k.mv_data, *doc = is_lru ? kb + 8 : d.mv_data;
		int ok;
		if ((is_lru && k.mv_size != ST_LRU_KEY) || (!is_lru && d.mv_size != STORE_ID_BYTES)) {
			sv_report(v, sv_zero, NULL, is_lru ? "lru key of the wrong size"
							   : "names value of the wrong size");
			continue;
		}
		if (st_meta_get(v->s, v->t, doc, &m, NULL, 0) != 0)
			continue; /* reported with the document, or an orphan below */
		if (is_lru) {
			int i = st_meta_find(&m, kb + 8 + STORE_ID_BYTES);
			ok = i >= 0 && m.p[i].last_used_us == st_lru_stamp(kb);
		} else {
			ok = strlen(m.d.name) == k.mv_size && memcmp(m.d.name, kb, k.mv_size) == 0;
		}
		st_meta_free(&m);
		if (ok)
			continue;
		if (is_lru)
			sv_report(v, doc, kb + 8 + STORE_ID_BYTES, "stale lru entry");
		else {
			snprintf(w, sizeof(w), "name '%.*s' leads to a document of another name",
			    (int)(k.mv_size > 200 ? 200 : k.mv_size), (const char *)kb);
			sv_report(v, doc, NULL, w);
		}
	}
	mdb_cursor_close(c);
	return st_walk_end(rc, "scan index", why, why_len);
}

/* lru keys and names whose document is missing entirely. */
static int
sv_dangling(struct sv *v, MDB_dbi db, int is_lru, char *why, size_t why_len)
{
	MDB_cursor *c;
	MDB_val k, d;
	int rc;

	if ((rc = mdb_cursor_open(v->t, db, &c)) != 0)
		return st_mdb(rc, "cursor", why, why_len);
	for (rc = mdb_cursor_get(c, &k, &d, MDB_FIRST); rc == 0 && !v->stop;
	     rc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
		const uint8_t *doc = is_lru ? (const uint8_t *)k.mv_data + 8 : d.mv_data;
		if ((is_lru && k.mv_size != ST_LRU_KEY) || (!is_lru && d.mv_size != STORE_ID_BYTES))
			continue; /* sv_orphan_index reported it */
		if (!sv_has_doc(v, doc))
			sv_report(v, doc, is_lru ? doc + STORE_ID_BYTES : NULL,
			    is_lru ? "lru entry of a missing document" : "name of a missing document");
	}
	mdb_cursor_close(c);
	return st_walk_end(rc, "scan index", why, why_len);
}

/* Text records of documents that do not exist (whole store). */
static int
sv_orphan_texts(struct sv *v, char *why, size_t why_len)
{
	MDB_cursor *c;
	MDB_val k, d;
	char w[SV_WHY];
	int rc;

	if (!v->s->has_texts)
		return 0;
	if ((rc = mdb_cursor_open(v->t, v->s->texts, &c)) != 0)
		return st_mdb(rc, "cursor", why, why_len);
	for (rc = mdb_cursor_get(c, &k, &d, MDB_FIRST); rc == 0 && !v->stop;
	     rc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
		const uint8_t *kb = k.mv_data;
		if (k.mv_size != ST_TEXT_KEY) {
			sv_report(v, sv_zero, NULL, "texts key of the wrong size");
			continue;
		}
		if (sv_has_doc(v, kb))
			continue;
		snprintf(w, sizeof(w), "text record of part %u of a missing document",
		    (unsigned)kb[32] << 24 | (unsigned)kb[33] << 16 | (unsigned)kb[34] << 8 | kb[35]);
		sv_report(v, kb, NULL, w);
	}
	mdb_cursor_close(c);
	return st_walk_end(rc, "scan text records", why, why_len);
}

static int
sv_all(struct sv *v, char *why, size_t why_len)
{
	MDB_cursor *c;
	MDB_val k, d;
	int rc, err = 0;

	if ((rc = mdb_cursor_open(v->t, v->s->docs, &c)) != 0)
		return st_mdb(rc, "cursor", why, why_len);
	for (rc = mdb_cursor_get(c, &k, &d, MDB_FIRST); rc == 0 && !err && !v->stop;
	     rc = mdb_cursor_get(c, &k, &d, MDB_NEXT)) {
		if (k.mv_size != STORE_ID_BYTES)
			sv_report(v, sv_zero, NULL, "docs key of the wrong size");
		else
			err = sv_doc(v, k.mv_data, why, why_len);
	}
	mdb_cursor_close(c);
	if (err)
		return err;
	if (rc != 0 && rc != MDB_NOTFOUND)
		return st_mdb(rc, "scan documents", why, why_len);
	if (!v->stop)
		err = sv_orphan_records(v, why, why_len);
	if (!err && !v->stop)
		err = sv_orphan_index(v, v->s->lru, 1, why, why_len);
	if (!err && !v->stop)
		err = sv_orphan_index(v, v->s->names, 0, why, why_len);
	if (!err && !v->stop)
		err = sv_dangling(v, v->s->lru, 1, why, why_len);
	if (!err && !v->stop)
		err = sv_dangling(v, v->s->names, 0, why, why_len);
	if (!err && !v->stop)
		err = sv_orphan_texts(v, why, why_len);
	return err;
}

int
stl_verify(struct store *fs, const uint8_t *doc_id, store_check_fn check, void *check_arg,
    int (*fn)(void *arg, const uint8_t doc_id[STORE_ID_BYTES],
        const uint8_t profile_id[STORE_ID_BYTES], const char *why),
    void *arg, char *why, size_t why_len)
{
	struct store_lmdb *s = fs->be;
	struct sv v;
	char id[13];
	int rc;

	memset(&v, 0, sizeof(v));
	v.s = s;
	v.check = check;
	v.check_arg = check_arg;
	v.fn = fn;
	v.arg = arg;
	if ((rc = st_begin(s, 0, &v.t, why, why_len)) != 0)
		return rc;
	rc = doc_id ? sv_doc(&v, doc_id, why, why_len) : sv_all(&v, why, why_len);
	st_abort(s, v.t);
	free(v.rec);
	if (rc)
		return rc;
	if (doc_id && v.n_seen == 0) {
		st_short(doc_id, id);
		return store_fail(why, why_len, STORE_ERR_NOT_FOUND, "no document %s", id);
	}
	if (v.n_bad)
		return store_fail(why, why_len, STORE_ERR_CORRUPT, "%lld of %lld snapshot reports failed",
		    (long long)v.n_bad, (long long)v.n_seen);
	return 0;
}
