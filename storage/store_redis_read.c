/*
 * store_redis_read.c: the redis-cluster backend's reads: resolve, readers,
 * info, ls, profiles, verify, stats (store_redis.h).
 *
 * A reader takes one consistent view without locks on the cluster: it
 * reads the manifest, then every record of that generation in one MGET
 * (one slot, one atomic command).  Records are only removed after a newer
 * manifest is in place, so a record missing under an unchanged manifest is
 * corruption, and under a changed one a replace raced us: read again.
 * Every record is checked against the manifest's length and BLAKE2b-128
 * before it is handed out; a bad one is STORE_ERR_CORRUPT naming it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/store_redis.h"

#define RS_READ_TRIES 8

static int
rs_id_cmp(const void *a, const void *b)
{
	return memcmp(a, b, STORE_ID_BYTES);
}

/* The doc id in a meta key "P kvsnap:{HEX}:meta"; -1 if it is not one. */
static int
rs_meta_key_doc(const struct store_redis *s, const char *k, uint8_t doc[STORE_ID_BYTES])
{
	size_t pl = strlen(s->prefix), i;
	int hi, lo;
	if (strlen(k) != pl + 8 + 64 + 6 || strncmp(k, s->prefix, pl) != 0 ||
	    strncmp(k + pl, "kvsnap:{", 8) != 0 || strcmp(k + pl + 72, "}:meta") != 0)
		return -1;
	for (i = 0; i < STORE_ID_BYTES; i++) {
		hi = kv_hex_value((unsigned char)k[pl + 8 + 2 * i]);
		lo = kv_hex_value((unsigned char)k[pl + 8 + 2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		doc[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

/* The documents whose meta key matches "P kvsnap:{HEXPFX*}:meta". */
static int
rs_docs_match(struct store_redis *s, const char *hexpfx, uint8_t (**docs)[STORE_ID_BYTES],
    size_t *n, char *why, size_t why_len)
{
	char pat[RS_KEY_MAX], **keys = NULL;
	size_t nk = 0, i, j;
	int rc;

	*docs = NULL;
	*n = 0;
	snprintf(pat, sizeof(pat), "%skvsnap:{%s*}:meta", s->prefix, hexpfx);
	if ((rc = rc_scan(s->c, pat, &keys, &nk, why, why_len)) != 0)
		return rc;
	if (nk && !(*docs = malloc(nk * STORE_ID_BYTES))) {
		kv_strv_free(keys, nk);
		return store_fail(why, why_len, STORE_ERR_NOMEM, "out of memory");
	}
	for (i = 0; i < nk; i++)
		if (rs_meta_key_doc(s, keys[i], (*docs)[*n]) == 0)
			(*n)++;
	kv_strv_free(keys, nk);
	if (*n > 1) {
		qsort(*docs, *n, STORE_ID_BYTES, rs_id_cmp);
		for (i = 1, j = 1; i < *n; i++)
			if (memcmp((*docs)[i], (*docs)[j - 1], STORE_ID_BYTES) != 0)
				memmove((*docs)[j++], (*docs)[i], STORE_ID_BYTES);
		*n = j;
	}
	return 0;
}

int
rs_docs(struct store_redis *s, uint8_t (**docs)[STORE_ID_BYTES], size_t *n, char *why,
    size_t why_len)
{
	return rs_docs_match(s, "", docs, n, why, why_len);
}

/* ------------------------------------------------------------------------ */
/* Resolve                                                                   */

static int
rs_resolve_name(struct store_redis *s, const struct st_ref *ref, uint8_t doc[STORE_ID_BYTES],
    char *why, size_t why_len)
{
	char nk[RS_KEY_MAX];
	struct st_meta m;
	redisReply *r;
	int rc;

	if (ref->len == 0 || ref->len > ST_NAME_MAX)
		return store_fail(why, why_len, STORE_ERR_NOT_FOUND, "no document matches '%s'",
		    ref->text);
	if ((rc = rs_get(s, nk, rs_key_name(s, nk, ref->text), &r, why, why_len)) != 0)
		return rc;
	if (r->type == REDIS_REPLY_NIL) {
		freeReplyObject(r);
		return store_fail(why, why_len, STORE_ERR_NOT_FOUND, "no document matches '%s'",
		    ref->text);
	}
	if (r->len != STORE_ID_BYTES) {
		rc = store_fail(why, why_len, STORE_ERR_CORRUPT, "name '%s': stored id of %zu bytes",
		    ref->text, r->len);
		freeReplyObject(r);
		return rc;
	}
	memcpy(doc, r->str, STORE_ID_BYTES);
	freeReplyObject(r);
	/* the metadata is the truth: a name key its document does not carry is
	 * a leftover of an interrupted put or rename (verify removes it) */
	if ((rc = rs_meta_get(s, doc, &m, why, why_len)) == STORE_ERR_NOT_FOUND ||
	    (rc == 0 && strcmp(m.d.name, ref->text) != 0)) {
		if (rc == 0)
			st_meta_free(&m);
		return store_fail(why, why_len, STORE_ERR_NOT_FOUND, "no document matches '%s'",
		    ref->text);
	}
	if (rc == 0)
		st_meta_free(&m);
	return rc;
}

int
srd_resolve(struct store *fs, const struct st_ref *ref, uint8_t doc_id[STORE_ID_BYTES],
    char *why, size_t why_len)
{
	struct store_redis *s = fs->be;
	uint8_t (*docs)[STORE_ID_BYTES] = NULL;
	char hex[65];
	struct st_meta m;
	size_t n = 0, i;
	int rc;

	rc_lock(s->c);
	if (ref->kind == ST_REF_ID) {
		memcpy(doc_id, ref->key, STORE_ID_BYTES);
		rc = rs_meta_get(s, doc_id, &m, why, why_len);
		if (rc == 0)
			st_meta_free(&m);
		else if (rc == STORE_ERR_NOT_FOUND)
			rc = store_fail(why, why_len, STORE_ERR_NOT_FOUND, "no document %s", ref->text);
		goto out;
	}
	if (ref->kind == ST_REF_PREFIX) {
		for (i = 0; i < ref->n_digits; i++)
			hex[i] = "0123456789abcdef"[kv_hex_value((unsigned char)ref->text[i])];
		hex[ref->n_digits] = '\0';
		if ((rc = rs_docs_match(s, hex, &docs, &n, why, why_len)) != 0)
			goto out;
		if (n > 1) {
			rc = store_fail(why, why_len, STORE_ERR_AMBIGUOUS,
			    "prefix %s names several documents; give more digits", ref->text);
			goto out;
		}
		if (n == 1) {
			memcpy(doc_id, docs[0], STORE_ID_BYTES);
			goto out;
		}
	}
	rc = rs_resolve_name(s, ref, doc_id, why, why_len);
out:
	rc_unlock(s->c);
	free(docs);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Readers                                                                   */

struct rs_reader {
	struct rs_manifest mf;
	redisReply *rec; /* MGET of every record, head first */
	char what[64];
};

/* MGET every record of mf: *r the array reply. */
static int
rs_mget(struct store_redis *s, const uint8_t *doc, const uint8_t *prof,
    const struct rs_manifest *mf, redisReply **r, char *why, size_t why_len)
{
	struct rs_records_cmd rcmd;
	int rc;

	*r = NULL;
	if (rs_records_cmd(s, "MGET", doc, prof, mf, &rcmd))
		return store_fail(why, why_len, STORE_ERR_NOMEM, "out of memory");
	if ((rc = rc_exec(s->c, rs_doc_slot(s, doc), 1, &rcmd.cmd, r, why, why_len)) != 0)
		goto out;
	if ((*r)->type != REDIS_REPLY_ARRAY || (*r)->elements != (size_t)mf->n) {
		rc = (*r)->type == REDIS_REPLY_ERROR ? rc_err(*r, "MGET", why, why_len)
		    : store_fail(why, why_len, STORE_ERR_IO, "MGET: reply of the wrong shape");
		freeReplyObject(*r);
		*r = NULL;
	}
out:
	rs_records_cmd_free(&rcmd);
	return rc;
}

/* One consistent snapshot: its manifest and every record (see the top). */
static int
rs_fetch(struct store_redis *s, const uint8_t *doc, const uint8_t *prof, struct rs_reader *rd,
    char *why, size_t why_len)
{
	struct rs_manifest again;
	int tries, k, rc = 0, missing;

	rs_what(rd->what, sizeof(rd->what), doc, prof);
	for (tries = 0; tries < RS_READ_TRIES; tries++) {
		if ((rc = rs_manifest_get(s, doc, prof, &rd->mf, why, why_len)) != 0)
			return rc;
		if ((rc = rs_mget(s, doc, prof, &rd->mf, &rd->rec, why, why_len)) != 0)
			break;
		for (missing = -1, k = 0; k < rd->mf.n && missing < 0; k++)
			if (rd->rec->element[k]->type != REDIS_REPLY_STRING)
				missing = k;
		if (missing < 0)
			return 0;
		freeReplyObject(rd->rec);
		rd->rec = NULL;
		rc = rs_manifest_get(s, doc, prof, &again, NULL, 0);
		if (rc == 0 && again.gen == rd->mf.gen) {
			rs_manifest_free(&again);
			rc = rs_record_check(&rd->mf, missing, NULL, 0, rd->what, why, why_len);
			break;
		}
		if (rc == 0)
			rs_manifest_free(&again);
		rs_manifest_free(&rd->mf);
		/* replaced (or removed) while we read: again */
	}
	if (rc == 0)
		rc = store_fail(why, why_len, STORE_ERR_BUSY, "%s: replaced %d times while read",
		    rd->what, RS_READ_TRIES);
	rs_manifest_free(&rd->mf);
	return rc;
}

static void
rs_reader_free(struct rs_reader *rd)
{
	if (!rd)
		return;
	if (rd->rec)
		freeReplyObject(rd->rec);
	rs_manifest_free(&rd->mf);
	free(rd);
}

int
srd_read_begin(struct store_reader *r, char *why, size_t why_len)
{
	struct store_redis *s = r->s->be;
	struct rs_reader *rd = calloc(1, sizeof(*rd));
	int rc;
	if (!rd)
		return store_fail(why, why_len, STORE_ERR_NOMEM, "out of memory");
	rc_lock(s->c);
	rc = rs_fetch(s, r->doc, r->prof, rd, why, why_len);
	rc_unlock(s->c);
	if (rc != 0) {
		rs_reader_free(rd);
		return rc;
	}
	r->be = rd;
	return 0;
}

int
srd_read_record(struct store_reader *r, unsigned index, const uint8_t **buf, size_t *len,
    char *why, size_t why_len)
{
	struct rs_reader *rd = r->be;
	int k = index == STORE_HEAD_RECORD ? 0 : (int)index + 1, rc;
	redisReply *e;

	if (k >= rd->mf.n)
		return store_fail(why, why_len, STORE_ERR_CORRUPT, "%s: no record %u (it has %d)",
		    rd->what, index, rd->mf.n - 1);
	e = rd->rec->element[k];
	if ((rc = rs_record_check(&rd->mf, k, (const uint8_t *)e->str, e->len, rd->what, why,
	    why_len)) != 0)
		return rc;
	*buf = (const uint8_t *)e->str;
	*len = e->len;
	return 0;
}

void
srd_read_end(struct store_reader *r)
{
	rs_reader_free(r->be);
	r->be = NULL;
}

/* ------------------------------------------------------------------------ */
/* Info, ls, profiles, stats                                                 */

int
srd_info(struct store *fs, const uint8_t *doc, struct store_doc *d, char *why, size_t why_len)
{
	struct store_redis *s = fs->be;
	struct st_meta m;
	int rc;
	rc_lock(s->c);
	rc = rs_meta_get(s, doc, &m, why, why_len);
	rc_unlock(s->c);
	if (rc == 0) {
		*d = m.d;
		st_meta_free(&m);
	}
	return rc;
}

int
srd_ls(struct store *fs, int (*fn)(void *arg, const struct store_doc *d), store_bad_fn bad,
    void *arg, char *why, size_t why_len)
{
	struct store_redis *s = fs->be;
	uint8_t (*docs)[STORE_ID_BYTES] = NULL;
	char w[256];
	struct st_meta m;
	size_t n = 0, i;
	int rc;

	rc_lock(s->c);
	rc = rs_docs(s, &docs, &n, why, why_len);
	for (i = 0; rc == 0 && i < n; i++) {
		rc = rs_meta_get(s, docs[i], &m, w, sizeof(w));
		if (rc == STORE_ERR_NOT_FOUND) { /* removed since the scan */
			rc = 0;
			continue;
		}
		if (rc == STORE_ERR_CORRUPT) { /* named ("document 78e9...: metadata: ...") */
			rc = bad(arg, docs[i], w) ? 1 : 0;
			if (rc)
				break;
			continue;
		}
		if (rc != 0) {
			snprintf(why, why_len, "%s", w);
			break;
		}
		rc = fn(arg, &m.d) ? 1 : 0;
		st_meta_free(&m);
		if (rc)
			break;
	}
	rc_unlock(s->c);
	free(docs);
	return rc == 1 ? 0 : rc;
}

int
srd_profiles(struct store *fs, const uint8_t *doc,
    int (*fn)(void *arg, const uint8_t profile_id[STORE_ID_BYTES], uint64_t bytes,
        const uint8_t *head, size_t head_len, const char *why, int64_t last_used_us),
    void *arg, char *why, size_t why_len)
{
	struct store_redis *s = fs->be;
	struct st_meta m;
	char w[256];
	int rc, i;

	rc_lock(s->c);
	if ((rc = rs_meta_get(s, doc, &m, why, why_len)) != 0)
		goto out;
	for (i = 0; i < m.n; i++) {
		struct rs_reader rd;
		memset(&rd, 0, sizeof(rd));
		if (rs_fetch(s, doc, m.p[i].id, &rd, w, sizeof(w)) == 0 &&
		    rs_record_check(&rd.mf, 0, (const uint8_t *)rd.rec->element[0]->str,
		    rd.rec->element[0]->len, rd.what, w, sizeof(w)) == 0)
			rc = fn(arg, m.p[i].id, m.p[i].bytes, (const uint8_t *)rd.rec->element[0]->str,
			    rd.rec->element[0]->len, NULL, m.p[i].last_used_us);
		else
			rc = fn(arg, m.p[i].id, m.p[i].bytes, NULL, 0, w, m.p[i].last_used_us);
		if (rd.rec)
			freeReplyObject(rd.rec);
		rs_manifest_free(&rd.mf);
		if (rc) {
			rc = 0;
			break;
		}
	}
	st_meta_free(&m);
out:
	rc_unlock(s->c);
	return rc;
}

int
srd_stats(struct store *fs, struct store_stats *st, char *why, size_t why_len)
{
	struct store_redis *s = fs->be;
	uint8_t (*docs)[STORE_ID_BYTES] = NULL;
	struct st_meta m;
	size_t n = 0, i;
	int rc;

	rc_lock(s->c);
	rc = rs_docs(s, &docs, &n, why, why_len);
	for (i = 0; rc == 0 && i < n; i++) {
		if (rs_meta_get(s, docs[i], &m, NULL, 0) != 0)
			continue;
		st->n_docs++;
		st->n_snapshots += (uint64_t)m.n;
		st->stored_bytes += m.d.stored_bytes;
		st_meta_free(&m);
	}
	rc_unlock(s->c);
	free(docs);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Verify                                                                    */

static const uint8_t rs_zero[STORE_ID_BYTES];

/* One snapshot: every record against the manifest, then the content check
 * (records in index order, the head last).  0 or the reason in w. */
static int
rs_verify_snap(struct store_redis *s, const uint8_t *doc, const uint8_t *prof,
    store_check_fn check, void *check_arg, char *w, size_t wl)
{
	struct rs_reader rd;
	struct store_rec *rec = NULL;
	int k, rc;

	memset(&rd, 0, sizeof(rd));
	if ((rc = rs_fetch(s, doc, prof, &rd, w, wl)) != 0)
		return rc;
	for (k = 0; k < rd.mf.n && rc == 0; k++)
		rc = rs_record_check(&rd.mf, k, (const uint8_t *)rd.rec->element[k]->str,
		    rd.rec->element[k]->len, rd.what, w, wl);
	if (rc == 0 && check) {
		if (!(rec = calloc((size_t)rd.mf.n, sizeof(*rec)))) {
			rc = store_fail(w, wl, STORE_ERR_NOMEM, "out of memory");
		} else {
			for (k = 1; k <= rd.mf.n; k++) {
				int e = k == rd.mf.n ? 0 : k;
				rec[k - 1].index = e == 0 ? STORE_HEAD_RECORD : (unsigned)e - 1;
				rec[k - 1].buf = (const uint8_t *)rd.rec->element[e]->str;
				rec[k - 1].len = rd.rec->element[e]->len;
			}
			if (check(check_arg, prof, rec, rd.mf.n, w, wl) != 0)
				rc = STORE_ERR_CORRUPT;
		}
	}
	free(rec);
	if (rd.rec)
		freeReplyObject(rd.rec);
	rs_manifest_free(&rd.mf);
	return rc;
}

/* Name keys that lead nowhere (their document does not carry the name):
 * removed, and reported. */
static int
rs_verify_names(struct store_redis *s,
    int (*fn)(void *arg, const uint8_t doc_id[STORE_ID_BYTES],
        const uint8_t profile_id[STORE_ID_BYTES], const char *why),
    void *arg, int *failed, char *why, size_t why_len)
{
	char pat[RS_KEY_MAX], **keys = NULL, name[ST_NAME_MAX + 1], w[512];
	size_t nk = 0, i, pl, kl;
	uint8_t doc[STORE_ID_BYTES];
	struct st_meta m;
	redisReply *r;
	int rc, live;

	pl = (size_t)snprintf(pat, sizeof(pat), "%skvsnap:name:{", s->prefix);
	snprintf(pat + pl, sizeof(pat) - pl, "*");
	if ((rc = rc_scan(s->c, pat, &keys, &nk, why, why_len)) != 0)
		return rc;
	for (i = 0; i < nk; i++) {
		kl = strlen(keys[i]);
		if (kl < pl + 2 || kl - pl - 1 > ST_NAME_MAX || keys[i][kl - 1] != '}')
			continue;
		memcpy(name, keys[i] + pl, kl - pl - 1);
		name[kl - pl - 1] = '\0';
		if (rs_get(s, keys[i], kl, &r, NULL, 0) != 0)
			continue;
		live = 0;
		memset(doc, 0, sizeof(doc));
		if (r->type == REDIS_REPLY_STRING && r->len == STORE_ID_BYTES) {
			memcpy(doc, r->str, STORE_ID_BYTES);
			if (rs_meta_get(s, doc, &m, NULL, 0) == 0) {
				live = strcmp(m.d.name, name) == 0;
				st_meta_free(&m);
			}
		}
		freeReplyObject(r);
		if (live)
			continue;
		if (!s->read_only)
			rs_name_release(s, name, doc);
		snprintf(w, sizeof(w), "name '%s' leads to no document that carries it (%s)", name,
		    s->read_only ? "not removed: the store is open read-only" : "removed");
		*failed = 1;
		fn(arg, doc, rs_zero, w);
	}
	kv_strv_free(keys, nk);
	return 0;
}

int
srd_verify(struct store *fs, const uint8_t *doc, store_check_fn check, void *check_arg,
    int (*fn)(void *arg, const uint8_t doc_id[STORE_ID_BYTES],
        const uint8_t profile_id[STORE_ID_BYTES], const char *why),
    void *arg, char *why, size_t why_len)
{
	struct store_redis *s = fs->be;
	uint8_t (*docs)[STORE_ID_BYTES] = NULL;
	char w[512], nk[RS_KEY_MAX];
	struct st_meta m;
	redisReply *r;
	size_t n = 0, i;
	int rc = 0, j, failed = 0;

	rc_lock(s->c);
	if (doc) {
		if (!(docs = malloc(STORE_ID_BYTES))) {
			rc = store_fail(why, why_len, STORE_ERR_NOMEM, "out of memory");
			goto out;
		}
		memcpy(docs[0], doc, STORE_ID_BYTES);
		n = 1;
	} else if ((rc = rs_docs(s, &docs, &n, why, why_len)) != 0) {
		goto out;
	}
	for (i = 0; i < n; i++) {
		rc = rs_meta_get(s, docs[i], &m, w, sizeof(w));
		if (rc == STORE_ERR_NOT_FOUND && !doc)
			continue; /* removed since the scan */
		if (rc == STORE_ERR_CORRUPT) {
			rc = 0;
			failed = 1;
			fn(arg, docs[i], rs_zero, w);
			continue;
		}
		if (rc != 0) {
			snprintf(why, why_len, "%s", w);
			goto out;
		}
		/* the name index leads back to the document (repaired if not) */
		if (m.d.name[0] && rs_get(s, nk, rs_key_name(s, nk, m.d.name), &r, NULL, 0) == 0) {
			int good = r->type == REDIS_REPLY_STRING && r->len == STORE_ID_BYTES &&
			    memcmp(r->str, docs[i], STORE_ID_BYTES) == 0;
			freeReplyObject(r);
			if (!good) {
				int fixed = !s->read_only &&
				    rs_name_claim(s, m.d.name, docs[i], NULL, 0) == 0;
				snprintf(w, sizeof(w), "name '%s' does not lead to the document (%s)",
				    m.d.name, fixed ? "repaired" : s->read_only ?
				    "not repaired: the store is open read-only" : "held by another");
				failed = 1;
				fn(arg, docs[i], rs_zero, w);
			}
		}
		for (j = 0; j < m.n; j++) {
			int bad = rs_verify_snap(s, docs[i], m.p[j].id, check, check_arg, w, sizeof(w));
			failed |= bad != 0;
			fn(arg, docs[i], m.p[j].id, bad ? w : NULL);
		}
		st_meta_free(&m);
	}
	if (!doc)
		rc = rs_verify_names(s, fn, arg, &failed, why, why_len);
	if (rc == 0 && failed)
		rc = store_fail(why, why_len, STORE_ERR_CORRUPT, "verify found problems");
out:
	rc_unlock(s->c);
	free(docs);
	return rc;
}
