/*
 * store_lmdb_text.c: the LMDB backend's text records (store.h,
 * store_text): one record per document part in the `texts` database, key
 * doc_id ‖ part (u32 big-endian), value the caller's opaque bytes.  A put
 * writes its part's record in the snapshot's own transaction; rm and the
 * drop of a document's last snapshot remove them all; verify reports
 * records of documents that do not exist.  A store written before text
 * records has no `texts` database: a writable open creates it, a
 * read-only one lists none (s->has_texts 0).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "storage/store_lmdb.h"

void
st_text_key(uint8_t k[ST_TEXT_KEY], const uint8_t *doc, unsigned part)
{
	memcpy(k, doc, STORE_ID_BYTES);
	k[STORE_ID_BYTES] = (uint8_t)(part >> 24);
	k[STORE_ID_BYTES + 1] = (uint8_t)(part >> 16);
	k[STORE_ID_BYTES + 2] = (uint8_t)(part >> 8);
	k[STORE_ID_BYTES + 3] = (uint8_t)part;
}

static unsigned
st_text_part(const uint8_t *k)
{
	const uint8_t *p = k + STORE_ID_BYTES;
	return (unsigned)p[0] << 24 | (unsigned)p[1] << 16 | (unsigned)p[2] << 8 | p[3];
}

int
st_text_put(struct store_lmdb *s, MDB_txn *t, const uint8_t *doc, const struct store_text *x,
    char *why, size_t why_len)
{
	uint8_t key[ST_TEXT_KEY];
	MDB_val k = { sizeof(key), key }, v = { x->len, (void *)(uintptr_t)x->buf };
	int rc;

	if (!s->has_texts)
		return store_fail(why, why_len, STORE_ERR_ARG, "store %s has no text records", s->dir);
	st_text_key(key, doc, x->part);
	rc = mdb_put(t, s->texts, &k, &v, 0);
	return rc ? st_mdb(rc, "write text record", why, why_len) : 0;
}

int
st_del_texts(struct store_lmdb *s, MDB_txn *t, const uint8_t *doc, char *why, size_t why_len)
{
	uint8_t key[ST_TEXT_KEY];
	MDB_cursor *c;
	MDB_val k, v;
	int rc;

	if (!s->has_texts)
		return 0;
	if ((rc = mdb_cursor_open(t, s->texts, &c)) != 0)
		return st_mdb(rc, "cursor", why, why_len);
	st_text_key(key, doc, 0);
	for (;;) { /* seek afresh after every delete (as st_del_records) */
		k.mv_data = key;
		k.mv_size = sizeof(key);
		rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
		if (rc || k.mv_size < STORE_ID_BYTES || memcmp(k.mv_data, doc, STORE_ID_BYTES) != 0)
			break;
		if ((rc = mdb_cursor_del(c, 0)) != 0)
			break;
	}
	mdb_cursor_close(c);
	return st_walk_end(rc, "delete text records", why, why_len);
}

int
stl_texts(struct store *fs, const uint8_t *doc, store_text_fn fn, void *arg, char *why,
    size_t why_len)
{
	struct store_lmdb *s = fs->be;
	uint8_t key[ST_TEXT_KEY];
	MDB_cursor *c;
	MDB_txn *t;
	MDB_val k, v;
	int rc, stop = 0;

	if (!s->has_texts)
		return 0;
	if ((rc = st_begin(s, 0, &t, why, why_len)) != 0)
		return rc;
	if ((rc = mdb_cursor_open(t, s->texts, &c)) != 0) {
		st_abort(s, t);
		return st_mdb(rc, "cursor", why, why_len);
	}
	memset(key, 0, sizeof(key));
	if (doc)
		st_text_key(key, doc, 0);
	k.mv_data = key;
	k.mv_size = sizeof(key);
	for (rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE); rc == 0 && !stop;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		if (doc && (k.mv_size < STORE_ID_BYTES || memcmp(k.mv_data, doc, STORE_ID_BYTES)))
			break;
		if (k.mv_size != ST_TEXT_KEY)
			continue; /* verify reports it */
		stop = fn(arg, k.mv_data, st_text_part(k.mv_data), v.mv_data, v.mv_size);
	}
	mdb_cursor_close(c);
	st_abort(s, t);
	return st_walk_end(rc, "read text records", why, why_len);
}
