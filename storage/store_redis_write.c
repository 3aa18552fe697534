/*
 * store_redis_write.c: the redis-cluster backend's writes: put, touch,
 * rename, rm, prune, and the name index (store_redis.h, docs/STORAGE.md).
 *
 * Order of a put, each step safe to die after:
 *   1. claim the name key (another slot) if a name is given;
 *   2. the records under a fresh generation, pipelined (invisible: no
 *      manifest names that generation yet);
 *   3. one MULTI/EXEC on the document's slot, under WATCH of its metadata:
 *      the manifest and the metadata (this is the moment it becomes
 *      visible, all of it);
 *   4. UNLINK the replaced generation's records; release an old name.
 * A put's text record (store_snapshot.text) is not kept here yet: text
 * records are the LMDB backend's only (docs/STORAGE.md, "Text records").
 * A crash after 1 leaves a name key whose document does not carry the
 * name (resolve ignores it, a claim takes it over, verify removes it);
 * after 2, records no manifest names (invisible; rm and verify sweep them);
 * after 3, the old generation's records (the same).  The metadata is the
 * truth about names: the name key is an index to it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "storage/store_redis.h"

#define RS_SKIP 2 /* an edit's "nothing to do" (prune: the snapshot changed) */

/* 0, or STORE_ERR_ARG naming the write `op` when the store was opened
 * read-only. */
static int
sp_writable(const struct store_redis *s, const char *op, char *why, size_t why_len)
{
	if (!s->read_only)
		return 0;
	return store_fail(why, why_len, STORE_ERR_ARG, "%s: the store was opened read-only", op);
}

/* ------------------------------------------------------------------------ */
/* The name index                                                            */

int
rs_name_claim(struct store_redis *s, const char *name, const uint8_t *doc, char *why,
    size_t why_len)
{
	char nk[RS_KEY_MAX], other[13];
	size_t nklen = rs_key_name(s, nk, name);
	unsigned slot = rc_slot(nk, nklen);
	const char *watch[2] = { "WATCH", nk }, *get[2] = { "GET", nk };
	const char *multi[1] = { "MULTI" }, *exec[1] = { "EXEC" }, *unwatch[1] = { "UNWATCH" };
	const char *set[3] = { "SET", nk, (const char *)doc };
	size_t wl[2] = { 5, nklen }, gl[2] = { 3, nklen }, sl[3] = { 3, nklen, STORE_ID_BYTES };
	struct rc_cmd first[2] = { { 2, watch, wl }, { 2, get, gl } };
	struct rc_cmd txn[3] = { { 1, multi, NULL }, { 3, set, sl }, { 1, exec, NULL } };
	struct rc_cmd unw = { 1, unwatch, NULL };
	redisReply *rep[3] = { NULL, NULL, NULL }, *r;
	uint8_t holder[STORE_ID_BYTES];
	int tries, rc, held, same;
	struct st_meta m;

	for (tries = 0; tries < RS_TXN_TRIES; tries++) {
		/* who holds it, and does that document still carry the name?  (read
		 * before the WATCH: the holder's metadata may live on another node) */
		if ((rc = rs_get(s, nk, nklen, &r, why, why_len)) != 0)
			return rc;
		held = r->type == REDIS_REPLY_STRING && r->len == STORE_ID_BYTES;
		if (held)
			memcpy(holder, r->str, STORE_ID_BYTES);
		freeReplyObject(r);
		if (held && memcmp(holder, doc, STORE_ID_BYTES) == 0)
			return 0;
		if (held && rs_meta_get(s, holder, &m, NULL, 0) == 0) {
			int live = strcmp(m.d.name, name) == 0;
			st_meta_free(&m);
			if (live) {
				st_short(holder, other);
				return store_fail(why, why_len, STORE_ERR_EXISTS,
				    "name '%s' belongs to document %s", name, other);
			}
		}
		/* free or stale: take it, unless it changed since we looked */
		if ((rc = rc_exec(s->c, slot, 2, first, rep, why, why_len)) != 0)
			return rc;
		same = held ? rep[1]->type == REDIS_REPLY_STRING && rep[1]->len == STORE_ID_BYTES &&
		    memcmp(rep[1]->str, holder, STORE_ID_BYTES) == 0
		            : rep[1]->type == REDIS_REPLY_NIL;
		rc_free(rep, 2);
		if (!same) {
			if (rc_exec(s->c, slot, 1, &unw, rep, NULL, 0) == 0)
				rc_free(rep, 1);
			continue;
		}
		rc = rc_exec_txn(s->c, slot, 3, txn, rep, why, why_len);
		if (rc == RC_AGAIN)
			continue;
		if (rc != 0)
			return rc;
		if (rep[2]->type == REDIS_REPLY_ARRAY) {
			rc_free(rep, 3);
			return 0;
		}
		rc = rep[2]->type == REDIS_REPLY_NIL ? RC_AGAIN : rc_err(rep[2], "claim name", why,
		    why_len);
		rc_free(rep, 3);
		if (rc != RC_AGAIN)
			return rc;
	}
	return store_fail(why, why_len, STORE_ERR_BUSY, "name '%s': contended; try again", name);
}

void
rs_name_release(struct store_redis *s, const char *name, const uint8_t *doc)
{
	char nk[RS_KEY_MAX];
	size_t nklen;
	unsigned slot;
	const char *watch[2], *get[2], *del[2];
	const char *multi[1] = { "MULTI" }, *exec[1] = { "EXEC" }, *unwatch[1] = { "UNWATCH" };
	size_t wl[2], gl[2], dl[2];
	redisReply *rep[3] = { NULL, NULL, NULL };
	int mine;

	if (!name[0])
		return;
	nklen = rs_key_name(s, nk, name);
	slot = rc_slot(nk, nklen);
	watch[0] = "WATCH", get[0] = "GET", del[0] = "DEL";
	watch[1] = get[1] = del[1] = nk;
	wl[0] = 5, gl[0] = 3, dl[0] = 3;
	wl[1] = gl[1] = dl[1] = nklen;
	{
		struct rc_cmd first[2] = { { 2, watch, wl }, { 2, get, gl } };
		struct rc_cmd txn[3] = { { 1, multi, NULL }, { 2, del, dl }, { 1, exec, NULL } };
		struct rc_cmd unw = { 1, unwatch, NULL };
		if (rc_exec(s->c, slot, 2, first, rep, NULL, 0) != 0)
			return;
		mine = rep[1]->type == REDIS_REPLY_STRING && rep[1]->len == STORE_ID_BYTES &&
		    memcmp(rep[1]->str, doc, STORE_ID_BYTES) == 0;
		rc_free(rep, 2);
		if (rc_exec_txn(s->c, slot, mine ? 3 : 1, mine ? txn : &unw, rep, NULL, 0) == 0)
			rc_free(rep, mine ? 3 : 1);
	}
}

/* ------------------------------------------------------------------------ */
/* Put                                                                       */

struct sp_put {
	const struct store_doc *d;
	const struct store_snapshot *snap;
	uint64_t payload;
	struct rs_manifest mf;   /* the new one */
	struct rs_manifest old;  /* the replaced one (n 0: none) */
	char old_name[256];
};

static int
sp_put_edit(struct store_redis *s, struct rs_txn *t, struct st_meta *m, int found, void *arg,
    char *why, size_t why_len)
{
	struct sp_put *a = arg;
	const struct store_doc *d = a->d;
	const uint8_t *prof = a->snap->profile_id;
	int64_t stamp = st_now_us();
	char mk[RS_KEY_MAX];
	const char *argv[3];
	size_t len[3];
	uint8_t *val;
	int i, rc;

	if (found < 0)
		return STORE_ERR_CORRUPT; /* the reason names the document; rm clears it */
	rs_manifest_free(&a->old);
	if (found == 0) {
		memset(m, 0, sizeof(*m));
		m->d = *d;
		m->d.name[0] = '\0';
		m->d.n_owners = 0;
		m->d.n_profiles = 0;
		m->d.stored_bytes = 0;
		m->d.last_used_us = 0; /* set from the stamp below */
		m->d.created_us = d->created_us > 0 ? d->created_us : stamp;
	} else {
		if (st_meta_find(m, prof) >= 0 &&
		    rs_manifest_get(s, d->doc_id, prof, &a->old, NULL, 0) != 0)
			memset(&a->old, 0, sizeof(a->old));
		if (a->old.n && a->old.gen == a->mf.gen) /* a retry after our own EXEC */
			rs_manifest_free(&a->old);
	}
	if ((rc = st_doc_merge(&m->d, d, why, why_len)) != 0)
		return rc;
	snprintf(a->old_name, sizeof(a->old_name), "%s", m->d.name);
	if (d->name[0])
		snprintf(m->d.name, sizeof(m->d.name), "%s", d->name);
	/* stamps: unique per document and ordered (a later put or touch is later) */
	if (stamp <= m->d.last_used_us)
		stamp = m->d.last_used_us + 1;
	for (i = 0; i < m->n; i++)
		if (stamp <= m->p[i].last_used_us)
			stamp = m->p[i].last_used_us + 1;
	if (st_meta_set(m, prof, stamp, a->payload) != 0)
		return store_fail(why, why_len, STORE_ERR_NOMEM, "out of memory");
	m->d.last_used_us = stamp;
	a->mf.stamp = stamp;
	if (!(val = malloc(rs_manifest_size(a->mf.n))))
		return store_fail(why, why_len, STORE_ERR_NOMEM, "out of memory");
	rs_manifest_encode(&a->mf, val);
	argv[0] = "SET";
	argv[1] = mk;
	argv[2] = (const char *)val;
	len[0] = 3;
	len[1] = rs_key_manifest(s, mk, d->doc_id, prof);
	len[2] = rs_manifest_size(a->mf.n);
	rc = rs_txn_add(t, 3, argv, len);
	free(val);
	return rc ? store_fail(why, why_len, rc, "out of memory") : 0;
}

/* Step 2: every record, pipelined, under the new generation. */
static int
sp_put_records(struct store_redis *s, const uint8_t *doc, const struct store_snapshot *sn,
    uint64_t gen, char *why, size_t why_len)
{
	int n = sn->n_layer + 1, k, rc;
	struct rc_cmd *cmd = calloc((size_t)n, sizeof(*cmd));
	redisReply **rep = calloc((size_t)n, sizeof(*rep));
	const char **argv = calloc((size_t)n * 3, sizeof(*argv));
	size_t *len = calloc((size_t)n * 3, sizeof(*len));
	char *keys = malloc((size_t)n * RS_KEY_MAX);

	if (!cmd || !rep || !argv || !len || !keys) {
		rc = store_fail(why, why_len, STORE_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (k = 0; k < n; k++) {
		argv[3 * k] = "SET";
		len[3 * k] = 3;
		argv[3 * k + 1] = keys + (size_t)k * RS_KEY_MAX;
		len[3 * k + 1] = rs_key_record(s, keys + (size_t)k * RS_KEY_MAX, doc, sn->profile_id,
		    gen, k == 0 ? STORE_HEAD_RECORD : (unsigned)k - 1);
		argv[3 * k + 2] = (const char *)(k == 0 ? sn->header : sn->layer[k - 1]);
		len[3 * k + 2] = k == 0 ? sn->header_len : sn->layer_len[k - 1];
		cmd[k] = (struct rc_cmd){ 3, argv + 3 * k, len + 3 * k };
	}
	if ((rc = rc_exec(s->c, rs_doc_slot(s, doc), n, cmd, rep, why, why_len)) != 0)
		goto out;
	for (k = 0; k < n && rc == 0; k++)
		if (rep[k]->type == REDIS_REPLY_ERROR)
			rc = rc_err(rep[k], "write record", why, why_len);
	rc_free(rep, n);
out:
	free(cmd);
	free(rep);
	free(argv);
	free(len);
	free(keys);
	return rc;
}

int
srd_put(struct store *fs, const struct store_doc *d, const struct store_snapshot *snap,
    uint64_t payload, char *why, size_t why_len)
{
	struct store_redis *s = fs->be;
	struct sp_put a;
	int k, rc;

	if ((rc = sp_writable(s, "put", why, why_len)) != 0)
		return rc;
	memset(&a, 0, sizeof(a));
	a.d = d;
	a.snap = snap;
	a.payload = payload;
	a.mf.n = snap->n_layer + 1;
	randombytes_buf(&a.mf.gen, sizeof(a.mf.gen));
	a.mf.len = malloc((size_t)a.mf.n * sizeof(*a.mf.len));
	a.mf.sum = malloc((size_t)a.mf.n * sizeof(*a.mf.sum));
	if (!a.mf.len || !a.mf.sum) {
		rs_manifest_free(&a.mf);
		return store_fail(why, why_len, STORE_ERR_NOMEM, "out of memory");
	}
	for (k = 0; k < a.mf.n; k++) {
		const uint8_t *b = k == 0 ? snap->header : snap->layer[k - 1];
		a.mf.len[k] = k == 0 ? snap->header_len : snap->layer_len[k - 1];
		rs_sum(b, a.mf.len[k], a.mf.sum[k]);
	}
	rc_lock(s->c);
	rc = d->name[0] ? rs_name_claim(s, d->name, d->doc_id, why, why_len) : 0;
	if (rc == 0)
		rc = sp_put_records(s, d->doc_id, snap, a.mf.gen, why, why_len);
	if (rc == 0)
		rc = rs_txn(s, d->doc_id, sp_put_edit, &a, why, why_len);
	if (rc != 0) {
		rs_records_unlink(s, d->doc_id, snap->profile_id, &a.mf); /* best effort */
	} else {
		if (a.old.n)
			rs_records_unlink(s, d->doc_id, snap->profile_id, &a.old);
		if (d->name[0] && a.old_name[0] && strcmp(a.old_name, d->name) != 0)
			rs_name_release(s, a.old_name, d->doc_id);
	}
	rc_unlock(s->c);
	rs_manifest_free(&a.old);
	rs_manifest_free(&a.mf);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Touch, rename                                                             */

struct sp_ids {
	const uint8_t *doc, *prof;
	const char *name;
	char old_name[256];
	int64_t stamp; /* prune: the stamp it saw */
	uint64_t bytes;
	struct rs_manifest old;
	char **keys;   /* rm: every key of the document */
	size_t n_keys;
};

static int
sp_need(int found, const uint8_t *doc, char *why, size_t why_len)
{
	char what[64];
	if (found > 0)
		return 0;
	if (found < 0)
		return STORE_ERR_CORRUPT;
	rs_what(what, sizeof(what), doc, NULL);
	return store_fail(why, why_len, STORE_ERR_NOT_FOUND, "no %s", what);
}

static int
sp_touch_edit(struct store_redis *s, struct rs_txn *t, struct st_meta *m, int found, void *arg,
    char *why, size_t why_len)
{
	struct sp_ids *a = arg;
	int64_t stamp = st_now_us();
	char what[64];
	int i, rc;

	(void)s;
	(void)t;
	if ((rc = sp_need(found, a->doc, why, why_len)) != 0)
		return rc;
	if ((i = st_meta_find(m, a->prof)) < 0) {
		rs_what(what, sizeof(what), a->doc, a->prof);
		return store_fail(why, why_len, STORE_ERR_NOT_FOUND, "no %s", what);
	}
	if (stamp <= m->d.last_used_us)
		stamp = m->d.last_used_us + 1;
	m->p[i].last_used_us = stamp;
	m->d.last_used_us = stamp;
	return 0;
}

int
srd_touch(struct store *fs, const uint8_t *doc, const uint8_t *prof, char *why, size_t why_len)
{
	struct store_redis *s = fs->be;
	struct sp_ids a = { doc, prof, NULL, "", 0, 0, { 0, 0, 0, NULL, NULL }, NULL, 0 };
	int rc;
	if ((rc = sp_writable(s, "touch", why, why_len)) != 0)
		return rc;
	rc_lock(s->c);
	rc = rs_txn(s, doc, sp_touch_edit, &a, why, why_len);
	rc_unlock(s->c);
	return rc;
}

static int
sp_rename_edit(struct store_redis *s, struct rs_txn *t, struct st_meta *m, int found, void *arg,
    char *why, size_t why_len)
{
	struct sp_ids *a = arg;
	int rc;
	(void)s;
	(void)t;
	if ((rc = sp_need(found, a->doc, why, why_len)) != 0)
		return rc;
	snprintf(a->old_name, sizeof(a->old_name), "%s", m->d.name);
	snprintf(m->d.name, sizeof(m->d.name), "%s", a->name);
	return 0;
}

int
srd_rename(struct store *fs, const uint8_t *doc, const char *name, char *why, size_t why_len)
{
	struct store_redis *s = fs->be;
	struct sp_ids a = { doc, NULL, name, "", 0, 0, { 0, 0, 0, NULL, NULL }, NULL, 0 };
	struct st_meta m;
	int rc;

	if ((rc = sp_writable(s, "rename", why, why_len)) != 0)
		return rc;
	rc_lock(s->c);
	/* the document first (no name claimed for a missing one) */
	rc = rs_meta_get(s, doc, &m, why, why_len);
	if (rc == 0) {
		st_meta_free(&m);
		rc = name[0] ? rs_name_claim(s, name, doc, why, why_len) : 0;
	}
	if (rc == 0)
		rc = rs_txn(s, doc, sp_rename_edit, &a, why, why_len);
	if (rc == 0 && a.old_name[0] && strcmp(a.old_name, name) != 0)
		rs_name_release(s, a.old_name, doc);
	rc_unlock(s->c);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Rm: every key of the document's slot under its tag, in one EXEC           */

/* Every key in doc's slot that belongs to doc (CLUSTER GETKEYSINSLOT:
 * the slot holds this document and whatever else hashes there). */
static int
sp_doc_keys(struct store_redis *s, const uint8_t *doc, char ***keys, size_t *n, char *why,
    size_t why_len)
{
	char slot_s[16], pfx[RS_KEY_MAX], d[65];
	unsigned slot = rs_doc_slot(s, doc);
	const char *argv[4] = { "CLUSTER", "GETKEYSINSLOT", slot_s, "1000000" };
	redisReply *r = NULL;
	size_t i, plen, cap = 0;
	int rc;

	*keys = NULL;
	*n = 0;
	snprintf(slot_s, sizeof(slot_s), "%u", slot);
	store_hex(doc, STORE_ID_BYTES, d);
	plen = (size_t)snprintf(pfx, sizeof(pfx), "%skvsnap:{%s}:", s->prefix, d);
	if ((rc = rc_exec(s->c, slot, 1, (struct rc_cmd[]){ { 4, argv, NULL } }, &r, why,
	    why_len)) != 0)
		return rc;
	if (r->type != REDIS_REPLY_ARRAY) {
		rc = rc_err(r->type == REDIS_REPLY_ERROR ? r : NULL, "GETKEYSINSLOT", why, why_len);
		freeReplyObject(r);
		return rc;
	}
	for (i = 0; i < r->elements; i++) {
		redisReply *e = r->element[i];
		if (e->type != REDIS_REPLY_STRING || e->len < plen || memcmp(e->str, pfx, plen) != 0)
			continue;
		if (*n == cap) {
			char **k = realloc(*keys, (cap = cap ? 2 * cap : 16) * sizeof(*k));
			if (!k)
				break;
			*keys = k;
		}
		if (!((*keys)[*n] = strndup(e->str, e->len)))
			break;
		(*n)++;
	}
	rc = i < r->elements ? store_fail(why, why_len, STORE_ERR_NOMEM, "out of memory") : 0;
	freeReplyObject(r);
	return rc;
}

static int
sp_rm_edit(struct store_redis *s, struct rs_txn *t, struct st_meta *m, int found, void *arg,
    char *why, size_t why_len)
{
	struct sp_ids *a = arg;
	const char **argv;
	size_t i;
	int rc;

	if (found == 0)
		return sp_need(found, a->doc, why, why_len);
	snprintf(a->old_name, sizeof(a->old_name), "%s", found > 0 ? m->d.name : "");
	kv_strv_free(a->keys, a->n_keys);
	a->keys = NULL;
	if ((rc = sp_doc_keys(s, a->doc, &a->keys, &a->n_keys, why, why_len)) != 0)
		return rc;
	rs_txn_delete(t);
	if (a->n_keys == 0)
		return 0;
	if (!(argv = calloc(a->n_keys + 1, sizeof(*argv))))
		return store_fail(why, why_len, STORE_ERR_NOMEM, "out of memory");
	argv[0] = "UNLINK";
	for (i = 0; i < a->n_keys; i++)
		argv[i + 1] = a->keys[i];
	rc = rs_txn_add(t, (int)a->n_keys + 1, argv, NULL);
	free(argv);
	return rc ? store_fail(why, why_len, rc, "out of memory") : 0;
}

int
srd_rm(struct store *fs, const uint8_t *doc, char *why, size_t why_len)
{
	struct store_redis *s = fs->be;
	struct sp_ids a = { doc, NULL, NULL, "", 0, 0, { 0, 0, 0, NULL, NULL }, NULL, 0 };
	int rc;
	if ((rc = sp_writable(s, "rm", why, why_len)) != 0)
		return rc;
	rc_lock(s->c);
	rc = rs_txn(s, doc, sp_rm_edit, &a, why, why_len);
	if (rc == 0)
		rs_name_release(s, a.old_name, doc);
	rc_unlock(s->c);
	kv_strv_free(a.keys, a.n_keys);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Prune                                                                     */

struct sp_cand {
	int64_t stamp;
	uint8_t doc[STORE_ID_BYTES], prof[STORE_ID_BYTES];
	uint64_t bytes;
};

static int
sp_cand_cmp(const void *x, const void *y)
{
	const struct sp_cand *a = x, *b = y;
	int c;
	if (a->stamp != b->stamp)
		return a->stamp < b->stamp ? -1 : 1;
	if ((c = memcmp(a->doc, b->doc, STORE_ID_BYTES)) != 0)
		return c;
	return memcmp(a->prof, b->prof, STORE_ID_BYTES);
}

/* Drop one snapshot if it is still the one the walk saw (same stamp). */
static int
sp_drop_edit(struct store_redis *s, struct rs_txn *t, struct st_meta *m, int found, void *arg,
    char *why, size_t why_len)
{
	struct sp_ids *a = arg;
	char mk[RS_KEY_MAX];
	const char *argv[2] = { "DEL", mk };
	size_t len[2] = { 3, 0 };
	int i;

	if (found <= 0 || (i = st_meta_find(m, a->prof)) < 0 || m->p[i].last_used_us != a->stamp)
		return RS_SKIP;
	rs_manifest_free(&a->old);
	if (rs_manifest_get(s, a->doc, a->prof, &a->old, NULL, 0) != 0)
		memset(&a->old, 0, sizeof(a->old));
	snprintf(a->old_name, sizeof(a->old_name), "%s", m->d.name);
	st_meta_del(m, i);
	if (m->n == 0)
		rs_txn_delete(t);
	len[1] = rs_key_manifest(s, mk, a->doc, a->prof);
	return rs_txn_add(t, 2, argv, len) ? store_fail(why, why_len, STORE_ERR_NOMEM,
	    "out of memory") : 0;
}

int
srd_prune(struct store *fs, const struct store_prune *p, struct st_victims *v, char *why,
    size_t why_len)
{
	struct store_redis *s = fs->be;
	uint8_t (*docs)[STORE_ID_BYTES] = NULL;
	struct sp_cand *c = NULL, *x;
	size_t n_docs = 0, n = 0, cap = 0, i;
	uint64_t b_left = 0;
	int64_t cutoff = st_prune_cutoff(p);
	struct st_meta m;
	int rc, j;

	if (!p->dry_run && (rc = sp_writable(s, "prune", why, why_len)) != 0)
		return rc;
	rc_lock(s->c);
	if ((rc = rs_docs(s, &docs, &n_docs, why, why_len)) != 0)
		goto out;
	for (i = 0; i < n_docs && rc == 0; i++) {
		char w[256];
		if ((rc = rs_meta_get(s, docs[i], &m, w, sizeof(w))) == STORE_ERR_NOT_FOUND) {
			rc = 0; /* removed meanwhile */
			continue;
		}
		if (rc == STORE_ERR_CORRUPT) { /* skipped and reported: it costs only itself */
			if ((rc = st_victims_damaged(v, docs[i], w)) != 0)
				rc = store_fail(why, why_len, rc, "out of memory");
			continue;
		}
		if (rc != 0) {
			snprintf(why, why_len, "%s", w);
			break;
		}
		for (j = 0; rc == 0 && j < m.n; j++) {
			if (n == cap) {
				cap = cap ? 2 * cap : 64;
				if (!(x = realloc(c, cap * sizeof(*c)))) {
					rc = store_fail(why, why_len, STORE_ERR_NOMEM, "out of memory");
					break;
				}
				c = x;
			}
			c[n].stamp = m.p[j].last_used_us;
			memcpy(c[n].doc, docs[i], STORE_ID_BYTES);
			memcpy(c[n].prof, m.p[j].id, STORE_ID_BYTES);
			c[n].bytes = m.p[j].bytes;
			b_left += m.p[j].bytes;
			n++;
		}
		st_meta_free(&m);
	}
	if (rc != 0)
		goto out;
	if (n)
		qsort(c, n, sizeof(*c), sp_cand_cmp);
	for (i = 0; i < n; i++) {
		struct sp_ids a = { c[i].doc, c[i].prof, NULL, "", c[i].stamp, 0,
			{ 0, 0, 0, NULL, NULL }, NULL, 0 };
		if (!st_prune_more(p, cutoff, c[i].stamp, n - i, b_left))
			break;
		b_left -= c[i].bytes;
		if (!p->dry_run) {
			rc = rs_txn(s, c[i].doc, sp_drop_edit, &a, why, why_len);
			if (rc == RS_SKIP) { /* used or replaced since the walk: a keeper now */
				rc = 0;
				continue;
			}
			if (rc == 0) {
				if (a.old.n)
					rs_records_unlink(s, c[i].doc, c[i].prof, &a.old);
				/* the last snapshot took the document (and its name) */
				if (rs_meta_get(s, c[i].doc, &m, NULL, 0) == STORE_ERR_NOT_FOUND)
					rs_name_release(s, a.old_name, c[i].doc);
				else
					st_meta_free(&m);
			}
			rs_manifest_free(&a.old);
			if (rc != 0)
				break;
		}
		if (st_victims_add(v, c[i].doc, c[i].prof, c[i].bytes, c[i].stamp) != 0) {
			rc = store_fail(why, why_len, STORE_ERR_NOMEM, "out of memory");
			break;
		}
	}
out:
	rc_unlock(s->c);
	free(docs);
	free(c);
	return rc;
}
