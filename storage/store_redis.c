/*
 * store_redis.c: the redis-cluster backend's table, open and close, key
 * builders and the reads every other file shares (store_redis.h).
 *
 * Address: "HOST:PORT[,HOST:PORT...][/PREFIX]" after "redis-cluster:", or
 * the same after "redis://".  PREFIX (1..64 bytes of [A-Za-z0-9._:-]) goes
 * before every key, so several libraries can share one cluster.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/store_redis.h"

static int srd_open(struct store *fs, const char *where, const struct store_opts *o, char *why,
    size_t why_len);
static void srd_close(struct store *fs);

#define SRD_OPS(NAME) { \
	NAME, srd_open, srd_close, srd_put, srd_resolve, srd_read_begin, srd_read_record, \
	srd_read_end, srd_touch, srd_info, srd_ls, srd_profiles, srd_rm, srd_rename, srd_prune, \
	srd_verify, srd_stats, NULL /* texts: none kept yet (docs/STORAGE.md) */, \
	NULL /* rm_snapshot: one snapshot out is not written yet (rm removes the document) */ }
const struct store_ops store_redis_ops = SRD_OPS("redis-cluster");
const struct store_ops store_redis_url_ops = SRD_OPS("redis");

static int
srd_open(struct store *fs, const char *where, const struct store_opts *o, char *why,
    size_t why_len)
{
	struct store_redis *s;
	const char *slash;
	char nodes[512];
	size_t i, n;
	int rc;

	if (strncmp(where, "//", 2) == 0) /* redis://HOST:PORT */
		where += 2;
	if (strlen(where) >= sizeof(nodes))
		return store_fail(why, why_len, STORE_ERR_ARG, "redis-cluster: address too long");
	if (!(s = calloc(1, sizeof(*s))))
		return store_fail(why, why_len, STORE_ERR_NOMEM, "out of memory");
	snprintf(s->addr, sizeof(s->addr), "%s", where);
	snprintf(nodes, sizeof(nodes), "%s", where);
	if ((slash = strchr(where, '/')) != NULL) {
		nodes[slash - where] = '\0';
		n = strlen(slash + 1);
		for (i = 0; i < n; i++) {
			char c = slash[1 + i];
			if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			    c == '.' || c == '_' || c == '-' || c == ':'))
				break;
		}
		if (n == 0 || n > RS_PREFIX_MAX || i < n) {
			free(s);
			return store_fail(why, why_len, STORE_ERR_ARG,
			    "redis-cluster: key prefix '%s' must be 1 to %d of A-Z a-z 0-9 . _ - :",
			    slash + 1, RS_PREFIX_MAX);
		}
		snprintf(s->prefix, sizeof(s->prefix), "%s:", slash + 1);
	}
	s->read_only = o ? o->read_only : 0;
	rc = rc_open(&s->c, nodes, o ? o->user : NULL, o ? o->password : NULL,
	    o ? o->timeout_ms : 0, o ? o->budget_ms : 0, why, why_len);
	if (rc != 0) {
		free(s);
		return rc;
	}
	fs->be = s;
	return 0;
}

static void
srd_close(struct store *fs)
{
	struct store_redis *s = fs->be;
	rc_close(s->c);
	free(s);
	fs->be = NULL;
}

/* ------------------------------------------------------------------------ */
/* Keys                                                                      */

size_t
rs_key_meta(const struct store_redis *s, char *k, const uint8_t *doc)
{
	char d[65];
	store_hex(doc, STORE_ID_BYTES, d);
	return (size_t)snprintf(k, RS_KEY_MAX, "%skvsnap:{%s}:meta", s->prefix, d);
}

size_t
rs_key_manifest(const struct store_redis *s, char *k, const uint8_t *doc, const uint8_t *prof)
{
	char d[65], p[65];
	store_hex(doc, STORE_ID_BYTES, d);
	store_hex(prof, STORE_ID_BYTES, p);
	return (size_t)snprintf(k, RS_KEY_MAX, "%skvsnap:{%s}:%s:manifest", s->prefix, d, p);
}

size_t
rs_key_record(const struct store_redis *s, char *k, const uint8_t *doc, const uint8_t *prof,
    uint64_t gen, unsigned index)
{
	char d[65], p[65];
	store_hex(doc, STORE_ID_BYTES, d);
	store_hex(prof, STORE_ID_BYTES, p);
	return (size_t)snprintf(k, RS_KEY_MAX, "%skvsnap:{%s}:%s:%016llx:r:%u", s->prefix, d, p,
	    (unsigned long long)gen, index);
}

int
rs_records_cmd(const struct store_redis *s, const char *verb, const uint8_t *doc,
    const uint8_t *prof, const struct rs_manifest *mf, struct rs_records_cmd *rc)
{
	int k;

	rc->argv = calloc((size_t)mf->n + 1, sizeof(*rc->argv));
	rc->len = calloc((size_t)mf->n + 1, sizeof(*rc->len));
	rc->keys = malloc((size_t)mf->n * RS_KEY_MAX + 1);
	if (!rc->argv || !rc->len || !rc->keys) {
		rs_records_cmd_free(rc);
		return -1;
	}
	rc->argv[0] = verb;
	rc->len[0] = strlen(verb);
	for (k = 0; k < mf->n; k++) {
		char *key = rc->keys + (size_t)k * RS_KEY_MAX;
		rc->argv[k + 1] = key;
		rc->len[k + 1] = rs_key_record(s, key, doc, prof, mf->gen,
		    k == 0 ? STORE_HEAD_RECORD : (unsigned)k - 1);
	}
	rc->cmd.argc = mf->n + 1;
	rc->cmd.argv = rc->argv;
	rc->cmd.len = rc->len;
	return 0;
}

void
rs_records_cmd_free(struct rs_records_cmd *rc)
{
	free(rc->argv);
	free(rc->len);
	free(rc->keys);
	rc->argv = NULL;
	rc->len = NULL;
	rc->keys = NULL;
}

size_t
rs_key_name(const struct store_redis *s, char *k, const char *name)
{
	return (size_t)snprintf(k, RS_KEY_MAX, "%skvsnap:name:{%s}", s->prefix, name);
}

unsigned
rs_doc_slot(const struct store_redis *s, const uint8_t *doc)
{
	char k[RS_KEY_MAX];
	size_t n = rs_key_meta(s, k, doc);
	return rc_slot(k, n);
}

void
rs_what(char *out, size_t n, const uint8_t *doc, const uint8_t *prof)
{
	char d[13], p[13];
	st_short(doc, d);
	if (prof) {
		st_short(prof, p);
		snprintf(out, n, "snapshot %s/%s", d, p);
	} else {
		snprintf(out, n, "document %s", d);
	}
}

/* ------------------------------------------------------------------------ */
/* Shared reads                                                              */

int
rs_get(struct store_redis *s, const char *key, size_t klen, redisReply **r, char *why,
    size_t why_len)
{
	const char *argv[2] = { "GET", key };
	size_t len[2] = { 3, klen };
	int rc;

	*r = NULL;
	if ((rc = rc_exec1(s->c, 1, 2, argv, len, r, why, why_len)) != 0)
		return rc;
	if ((*r)->type != REDIS_REPLY_STRING && (*r)->type != REDIS_REPLY_NIL) {
		rc = (*r)->type == REDIS_REPLY_ERROR ? rc_err(*r, "GET", why, why_len)
		    : store_fail(why, why_len, STORE_ERR_IO, "GET: reply of type %d", (*r)->type);
		freeReplyObject(*r);
		*r = NULL;
	}
	return rc;
}

int
rs_meta_get(struct store_redis *s, const uint8_t *doc, struct st_meta *m, char *why,
    size_t why_len)
{
	char k[RS_KEY_MAX], w[256], what[64];
	redisReply *r;
	int rc;

	memset(m, 0, sizeof(*m));
	if ((rc = rs_get(s, k, rs_key_meta(s, k, doc), &r, why, why_len)) != 0)
		return rc;
	rs_what(what, sizeof(what), doc, NULL);
	if (r->type == REDIS_REPLY_NIL)
		rc = store_fail(why, why_len, STORE_ERR_NOT_FOUND, "no %s", what);
	else if ((rc = st_meta_decode((const uint8_t *)r->str, r->len, m, w, sizeof(w))) != 0)
		rc = store_fail(why, why_len, STORE_ERR_CORRUPT, "%s: metadata: %s", what, w);
	else
		memcpy(m->d.doc_id, doc, STORE_ID_BYTES); /* the key holds it, not the value */
	freeReplyObject(r);
	return rc;
}

int
rs_manifest_get(struct store_redis *s, const uint8_t *doc, const uint8_t *prof,
    struct rs_manifest *mf, char *why, size_t why_len)
{
	char k[RS_KEY_MAX], w[256], what[64];
	redisReply *r;
	int rc;

	memset(mf, 0, sizeof(*mf));
	if ((rc = rs_get(s, k, rs_key_manifest(s, k, doc, prof), &r, why, why_len)) != 0)
		return rc;
	rs_what(what, sizeof(what), doc, prof);
	if (r->type == REDIS_REPLY_NIL)
		rc = store_fail(why, why_len, STORE_ERR_NOT_FOUND, "no %s", what);
	else if ((rc = rs_manifest_decode((const uint8_t *)r->str, r->len, mf, w, sizeof(w))) != 0)
		rc = store_fail(why, why_len, STORE_ERR_CORRUPT, "%s: manifest: %s", what, w);
	freeReplyObject(r);
	return rc;
}

void
rs_records_unlink(struct store_redis *s, const uint8_t *doc, const uint8_t *prof,
    const struct rs_manifest *mf)
{
	struct rs_records_cmd rc;
	redisReply *r = NULL;

	if (mf->n < 1 || rs_records_cmd(s, "UNLINK", doc, prof, mf, &rc))
		return;
	if (rc_exec(s->c, rs_doc_slot(s, doc), 1, &rc.cmd, &r, NULL, 0) == 0)
		freeReplyObject(r);
	rs_records_cmd_free(&rc);
}
