/*
 * store_lmdb_meta.c: a document's metadata in the LMDB backend: read and
 * decode its `docs` record, encode and write it in place (the codec is
 * store_meta.c's).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "storage/store_lmdb.h"

int
st_meta_get(struct store_lmdb *s, MDB_txn *t, const uint8_t *doc, struct st_meta *m, char *why,
    size_t why_len)
{
	char id[13], w[200];
	MDB_val k, v;
	int rc;

	memset(m, 0, sizeof(*m));
	k.mv_data = (void *)(uintptr_t)doc;
	k.mv_size = STORE_ID_BYTES;
	st_short(doc, id);
	rc = mdb_get(t, s->docs, &k, &v);
	if (rc == MDB_NOTFOUND)
		return store_fail(why, why_len, STORE_ERR_NOT_FOUND, "no document %s", id);
	if (rc)
		return st_mdb(rc, "read document metadata", why, why_len);
	if ((rc = st_meta_decode(v.mv_data, v.mv_size, m, w, sizeof(w))) != 0)
		return store_fail(why, why_len, rc, "metadata of document %s: %s", id, w);
	memcpy(m->d.doc_id, doc, STORE_ID_BYTES);
	return 0;
}

/* Written in place (MDB_RESERVE): no temporary copy. */
int
st_meta_put(struct store_lmdb *s, MDB_txn *t, const struct st_meta *m, char *why,
    size_t why_len)
{
	MDB_val k, v;
	int rc;

	if (m->n < 1 || m->n > 65535)
		return store_fail(why, why_len, STORE_ERR_ARG, "%d profiles for one document", m->n);
	k.mv_data = (void *)(uintptr_t)m->d.doc_id;
	k.mv_size = STORE_ID_BYTES;
	v.mv_data = NULL;
	v.mv_size = st_meta_size(m);
	if ((rc = mdb_put(t, s->docs, &k, &v, MDB_RESERVE)) != 0)
		return st_mdb(rc, "write document metadata", why, why_len);
	st_meta_encode(m, v.mv_data);
	return 0;
}
