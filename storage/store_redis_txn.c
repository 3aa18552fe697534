/*
 * store_redis_txn.c: the redis-cluster backend's one way to change a
 * document's metadata: an optimistic transaction on its slot (WATCH the
 * metadata key, read it, edit, MULTI .. EXEC), retried when EXEC reports
 * that another writer changed the key first.  Everything that changes a
 * snapshot's visibility (put's manifest, rm, touch, rename, prune's drops)
 * goes through here, so concurrent hosts never lose each other's updates.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/grow.h"
#include "storage/store_redis.h"

#define RS_MOVING 3 /* the WATCH's connection is not the slot's master's any more */

struct rs_txn {
	int n;
	int64_t cap;
	struct rc_cmd *cmd;
	int del;
};

static void
rs_txn_reset(struct rs_txn *t)
{
	int i, j;
	for (i = 0; i < t->n; i++) {
		for (j = 0; j < t->cmd[i].argc; j++)
			free((void *)(uintptr_t)t->cmd[i].argv[j]);
		free((void *)(uintptr_t)t->cmd[i].argv);
		free((void *)(uintptr_t)t->cmd[i].len);
	}
	t->n = 0;
	t->del = 0;
}

int
rs_txn_add(struct rs_txn *t, int argc, const char **argv, const size_t *len)
{
	struct rc_cmd *c = kv_grow(t->cmd, t->n, &t->cap, 8, sizeof(*c));
	const char **av;
	size_t *lv;
	int j;

	if (!c)
		return STORE_ERR_NOMEM;
	t->cmd = c;
	av = calloc((size_t)argc, sizeof(*av));
	lv = calloc((size_t)argc, sizeof(*lv));
	if (!av || !lv) {
		free(av);
		free(lv);
		return STORE_ERR_NOMEM;
	}
	for (j = 0; j < argc; j++) {
		char *a;
		lv[j] = len ? len[j] : strlen(argv[j]);
		if (!(a = malloc(lv[j] + 1))) {
			while (j--)
				free((void *)(uintptr_t)av[j]);
			free(av);
			free(lv);
			return STORE_ERR_NOMEM;
		}
		memcpy(a, argv[j], lv[j]);
		a[lv[j]] = '\0';
		av[j] = a;
	}
	t->cmd[t->n].argc = argc;
	t->cmd[t->n].argv = av;
	t->cmd[t->n].len = lv;
	t->n++;
	return 0;
}

void
rs_txn_delete(struct rs_txn *t)
{
	t->del = 1;
}

/* MULTI, the metadata write, t's commands, EXEC: 0, RC_AGAIN (watch fired
 * or the connection moved: start over), or an error. */
static int
rs_txn_commit(struct store_redis *s, unsigned slot, const char *mk, size_t mklen,
    const struct st_meta *m, struct rs_txn *t, char *why, size_t why_len)
{
	int n = t->n + 3, i, rc;
	struct rc_cmd *cmd = calloc((size_t)n, sizeof(*cmd));
	redisReply **rep = calloc((size_t)n, sizeof(*rep));
	const char *multi[1] = { "MULTI" }, *exec[1] = { "EXEC" };
	const char *set[3] = { "SET", mk, NULL }, *del[2] = { "DEL", mk };
	size_t set_len[3] = { 3, mklen, 0 }, del_len[2] = { 3, mklen };
	uint8_t *val = NULL;

	if (!cmd || !rep || (!t->del && !(val = malloc(st_meta_size(m))))) {
		rc = store_fail(why, why_len, STORE_ERR_NOMEM, "out of memory");
		goto out;
	}
	cmd[0] = (struct rc_cmd){ 1, multi, NULL };
	if (t->del) {
		cmd[1] = (struct rc_cmd){ 2, del, del_len };
	} else {
		st_meta_encode(m, val);
		set[2] = (const char *)val;
		set_len[2] = st_meta_size(m);
		cmd[1] = (struct rc_cmd){ 3, set, set_len };
	}
	for (i = 0; i < t->n; i++)
		cmd[2 + i] = t->cmd[i];
	cmd[n - 1] = (struct rc_cmd){ 1, exec, NULL };
	if ((rc = rc_exec_txn(s->c, slot, n, cmd, rep, why, why_len)) != 0) {
		if (rc == RC_AGAIN)
			rc = RS_MOVING;
		goto out;
	}
	if (rep[n - 1]->type == REDIS_REPLY_NIL) {
		rc = RC_AGAIN;
	} else if (rep[n - 1]->type != REDIS_REPLY_ARRAY) {
		rc = rc_err(rep[n - 1]->type == REDIS_REPLY_ERROR ? rep[n - 1] : NULL, "EXEC", why,
		    why_len);
		for (i = 1; i < n - 1; i++) /* a queued command's error says more */
			if (rep[i]->type == REDIS_REPLY_ERROR) {
				rc = rc_err(rep[i], "MULTI", why, why_len);
				break;
			}
	} else {
		for (i = 0; i < (int)rep[n - 1]->elements; i++)
			if (rep[n - 1]->element[i]->type == REDIS_REPLY_ERROR) {
				rc = rc_err(rep[n - 1]->element[i], "EXEC", why, why_len);
				break;
			}
	}
	rc_free(rep, n);
out:
	free(val);
	free(cmd);
	free(rep);
	return rc;
}

int
rs_txn(struct store_redis *s, const uint8_t *doc, rs_edit_fn edit, void *arg, char *why,
    size_t why_len)
{
	char mk[RS_KEY_MAX], w[256], what[64];
	size_t mklen = rs_key_meta(s, mk, doc);
	unsigned slot = rc_slot(mk, mklen);
	const char *watch[2] = { "WATCH", mk }, *get[2] = { "GET", mk };
	const char *unwatch[1] = { "UNWATCH" };
	size_t wlen[2] = { 5, mklen }, glen[2] = { 3, mklen };
	struct rc_cmd first[2] = { { 2, watch, wlen }, { 2, get, glen } };
	struct rs_txn t = { 0, 0, NULL, 0 };
	redisReply *rep[2] = { NULL, NULL }, *ur = NULL;
	struct st_meta m;
	int tries, rc = 0, found, moving = 0;

	rs_what(what, sizeof(what), doc, NULL);
	for (tries = 0; tries < RS_TXN_TRIES; tries++) {
		if ((rc = rc_exec(s->c, slot, 2, first, rep, why, why_len)) != 0)
			break;
		memset(&m, 0, sizeof(m));
		if (rep[0]->type == REDIS_REPLY_ERROR || rep[1]->type == REDIS_REPLY_ERROR) {
			rc = rc_err(rep[rep[0]->type == REDIS_REPLY_ERROR ? 0 : 1], "WATCH", why, why_len);
			rc_free(rep, 2);
			break;
		}
		if (rep[1]->type == REDIS_REPLY_NIL) {
			found = 0;
		} else if (rep[1]->type != REDIS_REPLY_STRING) {
			found = -1;
			store_fail(why, why_len, STORE_ERR_CORRUPT, "%s: metadata of type %d", what,
			    rep[1]->type);
		} else if (st_meta_decode((const uint8_t *)rep[1]->str, rep[1]->len, &m, w,
		    sizeof(w)) != 0) {
			found = -1;
			memset(&m, 0, sizeof(m));
			store_fail(why, why_len, STORE_ERR_CORRUPT, "%s: metadata: %s", what, w);
		} else {
			found = 1;
			memcpy(m.d.doc_id, doc, STORE_ID_BYTES);
		}
		rc_free(rep, 2);
		rs_txn_reset(&t);
		if ((rc = edit(s, &t, &m, found, arg, why, why_len)) != 0) {
			st_meta_free(&m);
			if (rc_exec(s->c, slot, 1, (struct rc_cmd[]){ { 1, unwatch, NULL } }, &ur, NULL,
			    0) == 0)
				freeReplyObject(ur);
			break;
		}
		rc = rs_txn_commit(s, slot, mk, mklen, &m, &t, why, why_len);
		st_meta_free(&m);
		moving = rc == RS_MOVING;
		if (moving)
			rc = RC_AGAIN;
		if (rc != RC_AGAIN)
			break;
		if (tries >= 4) /* contended or mid-migration: pause a little */
			nanosleep(&(struct timespec){ 0, 10000000L * (tries - 3) }, NULL);
	}
	if (rc == RC_AGAIN && moving)
		rc = store_fail(why, why_len, STORE_ERR_BUSY,
		    "%s: its slot is moving between nodes (a resharding or a failover); "
		    "try again when that is done", what);
	else if (rc == RC_AGAIN)
		rc = store_fail(why, why_len, STORE_ERR_BUSY,
		    "%s: changed by other writers %d times in a row; try again", what, RS_TXN_TRIES);
	rs_txn_reset(&t);
	free(t.cmd);
	return rc;
}
