/*
 * rcluster.c: the cluster client's connections and calls (rcluster.h):
 * seeds, the slot map, pipelines routed by slot with MOVED / ASK followed,
 * refresh on redirects and broken connections, timeouts, and backoff
 * bounded by a budget per call.
 *
 * Replies are read with our own loop over redisBufferRead so a reply
 * growing past RC_REPLY_MAX (a node announcing a huge bulk) fails the call
 * instead of growing the buffer without end; every reader gets the element
 * limit of rc_reader_limit.
 *
 * A write to a node that closed its end raises SIGPIPE, which would kill a
 * process that keeps the default action (the CLI): writes run with SIGPIPE
 * blocked in this thread and a SIGPIPE they raise is consumed (libpq's way),
 * so the failure arrives as EPIPE and the caller's signal setup is left
 * alone.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "storage/rcluster.h"
#include "storage/store_backend.h"

struct rc_nopipe {
	sigset_t old;
	int pending; /* a SIGPIPE was pending before: not ours to consume */
};

static void
rc_nopipe_begin(struct rc_nopipe *np)
{
	sigset_t pipe_set, pend;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigemptyset(&pend);
	sigpending(&pend);
	np->pending = sigismember(&pend, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &np->old);
}

static void
rc_nopipe_end(struct rc_nopipe *np)
{
	static const struct timespec zero = { 0, 0 };
	sigset_t pipe_set, pend;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigemptyset(&pend);
	sigpending(&pend);
	if (!np->pending && sigismember(&pend, SIGPIPE))
		while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
			;
	pthread_sigmask(SIG_SETMASK, &np->old, NULL);
}

void
rc_lock(struct rcluster *c)
{
	pthread_mutex_lock(&c->mu);
}

void
rc_unlock(struct rcluster *c)
{
	pthread_mutex_unlock(&c->mu);
}

void
rc_free(redisReply **rep, int n)
{
	int i;
	for (i = 0; i < n; i++) {
		if (rep[i])
			freeReplyObject(rep[i]);
		rep[i] = NULL;
	}
}

int
rc_err(const redisReply *r, const char *what, char *why, size_t why_len)
{
	if (!r)
		return store_fail(why, why_len, STORE_ERR_IO, "%s: no reply", what);
	if (r->type != REDIS_REPLY_ERROR)
		return store_fail(why, why_len, STORE_ERR_IO, "%s: unexpected reply type %d", what,
		    r->type);
	if (r->len >= 3 && memcmp(r->str, "OOM", 3) == 0)
		return store_fail(why, why_len, STORE_ERR_FULL,
		    "%s: the cluster is out of memory (%.200s); nothing was stored", what, r->str);
	return store_fail(why, why_len, STORE_ERR_IO, "%s: node says %.200s", what, r->str);
}

/* ------------------------------------------------------------------------ */
/* Nodes and connections                                                     */

static int
rc_node_find(struct rcluster *c, const struct rc_addr *a)
{
	int i;
	for (i = 0; i < c->n_node; i++)
		if (c->node[i].a.port == a->port && strcmp(c->node[i].a.host, a->host) == 0)
			return i;
	return -1;
}

/* The node at a (added when new); -1 when the table is full. */
static int
rc_node_add(struct rcluster *c, const struct rc_addr *a)
{
	int i = rc_node_find(c, a);
	if (i >= 0 || c->n_node == RC_NODES_MAX)
		return i;
	c->node[c->n_node].a = *a;
	c->node[c->n_node].c = NULL;
	return c->n_node++;
}

static void
rc_drop(struct rcluster *c, int i)
{
	if (c->node[i].c) {
		redisFree(c->node[i].c);
		c->node[i].c = NULL;
	}
}

/* Wait until node i's socket is ready for ev, within the per-read timeout
 * and the call's deadline (c->deadline_ms).  0 ready; else STORE_ERR_IO
 * naming the node and which bound it hit: hiredis's own timeout counts per
 * read(), so a node trickling one byte a second would never trip it, and
 * the deadline bounds the whole reply (issue 26, defect 9). */
static int
rc_wait(struct rcluster *c, int i, short ev, char *why, size_t why_len)
{
	struct pollfd pf = { c->node[i].c->fd, ev, 0 };
	int64_t left = c->deadline_ms - kv_now_ms(), wait;
	int n;

	for (;;) {
		if (left <= 0)
			return store_fail(why, why_len, STORE_ERR_IO,
			    "node %s:%d: no whole reply within the call's %d ms", c->node[i].a.host,
			    c->node[i].a.port, c->budget_ms);
		wait = left < c->timeout_ms ? left : c->timeout_ms;
		n = poll(&pf, 1, (int)wait);
		if (n > 0)
			return 0;
		if (n == 0 && wait == c->timeout_ms)
			return store_fail(why, why_len, STORE_ERR_IO, "node %s:%d: no reply within %d ms",
			    c->node[i].a.host, c->node[i].a.port, c->timeout_ms);
		if (n < 0 && errno != EINTR)
			return store_fail(why, why_len, STORE_ERR_IO, "node %s:%d: poll: %s",
			    c->node[i].a.host, c->node[i].a.port, strerror(errno));
		left = c->deadline_ms - kv_now_ms();
	}
}

/* Write node i's output buffer and read n replies into rep[] (NULL first),
 * bounded by rc_wait.  0, or STORE_ERR_IO with the connection dropped. */
static int
rc_io(struct rcluster *c, int i, int n, redisReply **rep, char *why, size_t why_len)
{
	struct rc_node *nd = &c->node[i];
	int k, done = 0, rc;
	void *r;

	for (k = 0; k < n; k++)
		rep[k] = NULL;
	{
		struct rc_nopipe np;
		int wrc = REDIS_OK;
		rc = 0;
		rc_nopipe_begin(&np);
		while (!done && (rc = rc_wait(c, i, POLLOUT, why, why_len)) == 0 &&
		    (wrc = redisBufferWrite(nd->c, &done)) == REDIS_OK)
			;
		rc_nopipe_end(&np);
		if (rc)
			goto late;
		if (wrc != REDIS_OK)
			goto broken;
	}
	for (k = 0; k < n; k++) {
		r = NULL;
		if (redisGetReplyFromReader(nd->c, &r) != REDIS_OK)
			goto broken;
		while (!r) {
			if ((rc = rc_wait(c, i, POLLIN, why, why_len)) != 0)
				goto late;
			if (redisBufferRead(nd->c) != REDIS_OK)
				goto broken;
			if (nd->c->reader->len > RC_REPLY_MAX) {
				rc_free(rep, k);
				rc_drop(c, i);
				return store_fail(why, why_len, STORE_ERR_IO,
				    "node %s:%d: a reply over %llu bytes; refused", nd->a.host,
				    nd->a.port, (unsigned long long)RC_REPLY_MAX);
			}
			if (redisGetReplyFromReader(nd->c, &r) != REDIS_OK)
				goto broken;
		}
		rep[k] = r;
	}
	return 0;
late:
	rc_free(rep, n);
	rc_drop(c, i);
	return rc;
broken:
	rc_free(rep, n);
	if (nd->c->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK))
		rc = store_fail(why, why_len, STORE_ERR_IO, "node %s:%d: no reply within %d ms",
		    nd->a.host, nd->a.port, c->timeout_ms);
	else if (nd->c->err == REDIS_ERR_OOM)
		rc = store_fail(why, why_len, STORE_ERR_IO,
		    "node %s:%d: reply refused (an array over %d elements, or out of memory)",
		    nd->a.host, nd->a.port, RC_ELEMENTS_MAX);
	else
		rc = store_fail(why, why_len, STORE_ERR_IO, "node %s:%d: %s", nd->a.host, nd->a.port,
		    nd->c->errstr[0] ? nd->c->errstr : "connection lost");
	rc_drop(c, i);
	return rc;
}

/* AUTH on a fresh connection: 0, STORE_ERR_IO (broken; the connection
 * dropped), or STORE_ERR_ARG (refused: no retry helps, the credentials are
 * wrong). */
static int
rc_auth(struct rcluster *c, int i, char *why, size_t why_len)
{
	const char *argv[3] = { "AUTH", c->user[0] ? c->user : c->pass, c->pass };
	redisReply *r;
	int rc = 0;

	if (!c->pass[0])
		return 0;
	if (redisAppendCommandArgv(c->node[i].c, c->user[0] ? 3 : 2, argv, NULL) != REDIS_OK) {
		rc_drop(c, i);
		return store_fail(why, why_len, STORE_ERR_NOMEM, "out of memory");
	}
	if ((rc = rc_io(c, i, 1, &r, why, why_len)) != 0)
		return rc;
	if (r->type == REDIS_REPLY_ERROR)
		rc = store_fail(why, why_len, STORE_ERR_ARG,
		    "node %s:%d refused the credentials (%.120s): check the user and password "
		    "in the credentials file", c->node[i].a.host, c->node[i].a.port, r->str);
	freeReplyObject(r);
	return rc;
}

static int
rc_connect(struct rcluster *c, int i, char *why, size_t why_len)
{
	int64_t left = c->deadline_ms - kv_now_ms(), ms = c->timeout_ms;
	struct timeval tv = { c->timeout_ms / 1000, (c->timeout_ms % 1000) * 1000 };
	struct timeval ctv;
	struct rc_node *n = &c->node[i];
	int rc;

	if (n->c)
		return 0;
	if (left <= 0)
		return store_fail(why, why_len, STORE_ERR_IO,
		    "node %s:%d: no time left in the call's %d ms", n->a.host, n->a.port, c->budget_ms);
	if (left < ms)
		ms = left;
	ctv.tv_sec = (time_t)(ms / 1000);
	ctv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
	n->c = redisConnectWithTimeout(n->a.host, n->a.port, ctv);
	if (!n->c)
		return store_fail(why, why_len, STORE_ERR_NOMEM, "out of memory");
	if (n->c->err) {
		rc = store_fail(why, why_len, STORE_ERR_IO, "node %s:%d: connect: %s", n->a.host,
		    n->a.port, n->c->errstr);
		rc_drop(c, i);
		return rc;
	}
	if (redisSetTimeout(n->c, tv) != REDIS_OK) {
		rc_drop(c, i);
		return store_fail(why, why_len, STORE_ERR_IO, "node %s:%d: cannot set the timeout",
		    n->a.host, n->a.port);
	}
	rc_reader_limit(n->c->reader);
	c->n_reconnect++;
	if ((rc = rc_auth(c, i, why, why_len)) != 0)
		rc_drop(c, i);
	return rc;
}

/* Send n commands (each after an ASKING when asking) on node i and read
 * their replies (the ASKINGs' dropped).  A broken connection is dropped:
 * STORE_ERR_IO naming the node. */
static int
rc_run(struct rcluster *c, int i, int n, const struct rc_cmd *cmd, int asking, redisReply **rep,
    char *why, size_t why_len)
{
	static const char asking_cmd[] = "*1\r\n$6\r\nASKING\r\n";
	redisReply **all = rep, *two[2];
	int k, rc;

	for (k = 0; k < n; k++)
		rep[k] = NULL;
	if ((rc = rc_connect(c, i, why, why_len)) != 0)
		return rc;
	for (k = 0; k < n; k++) {
		if (asking)
			redisAppendFormattedCommand(c->node[i].c, asking_cmd, sizeof(asking_cmd) - 1);
		if (redisAppendCommandArgv(c->node[i].c, cmd[k].argc, cmd[k].argv, cmd[k].len) !=
		    REDIS_OK) {
			rc_drop(c, i);
			return store_fail(why, why_len, STORE_ERR_NOMEM, "out of memory");
		}
	}
	if (!asking)
		return rc_io(c, i, n, rep, why, why_len);
	/* an ASKING reply before each: read in pairs, keep the second */
	if (n == 1)
		all = two;
	else if (!(all = calloc(2 * (size_t)n, sizeof(*all)))) {
		rc_drop(c, i);
		return store_fail(why, why_len, STORE_ERR_NOMEM, "out of memory");
	}
	if ((rc = rc_io(c, i, 2 * n, all, why, why_len)) == 0)
		for (k = 0; k < n; k++) {
			freeReplyObject(all[2 * k]);
			rep[k] = all[2 * k + 1];
		}
	if (all != two)
		free(all);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* The slot map                                                              */

int
rc_refresh(struct rcluster *c, char *why, size_t why_len)
{
	const char *argv[2] = { "CLUSTER", "SLOTS" };
	struct rc_cmd cmd = { 2, argv, NULL };
	struct rc_map *m;
	redisReply *r = NULL;
	int k, i, j, rc = STORE_ERR_IO, n_try;
	unsigned start = c->refresh_start++; /* spreads refreshes over the nodes */

	if (!(m = malloc(sizeof(*m))))
		return store_fail(why, why_len, STORE_ERR_NOMEM, "out of memory");
	c->n_refresh++;
	n_try = c->n_node;
	for (k = 0; k < n_try; k++) {
		i = (int)((start + (unsigned)k) % (unsigned)n_try);
		if ((rc = rc_run(c, i, 1, &cmd, 0, &r, why, why_len)) != 0) {
			if (rc == STORE_ERR_ARG)
				break; /* credentials refused: every node will say so */
			continue;
		}
		if (r->type == REDIS_REPLY_ERROR)
			rc = rc_err(r, "CLUSTER SLOTS", why, why_len);
		else
			rc = rc_parse_slots(r, c->node[i].a.host, m, why, why_len);
		freeReplyObject(r);
		r = NULL;
		if (rc == 0)
			break;
	}
	if (rc == 0) {
		uint16_t idx[RC_NODES_MAX];
		int fresh = 0;
		for (j = 0; j < m->n; j++)
			fresh += rc_node_find(c, &m->node[j]) < 0;
		if (c->n_node + fresh > RC_NODES_MAX) {
			/* nodes come and go: forget every learned one, keep the seeds */
			for (j = c->n_seed; j < c->n_node; j++)
				rc_drop(c, j);
			c->n_node = c->n_seed;
			c->last_node = -1;
		}
		for (j = 0; j < m->n; j++)
			idx[j] = (uint16_t)(rc_node_add(c, &m->node[j]) + 1);
		for (j = 0; j < RC_SLOTS; j++)
			c->slot[j] = m->slot[j] ? idx[m->slot[j] - 1] : 0;
	}
	free(m);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Calls                                                                     */

static int
rc_call(struct rcluster *c, unsigned slot, int n, const struct rc_cmd *cmd, redisReply **rep,
    int pinned, char *why, size_t why_len)
{
	int64_t deadline = c->deadline_ms = kv_now_ms() + c->budget_ms, pause = 25;
	char last[256] = "no node serves the slot";
	struct rc_addr a;
	unsigned rslot;
	int i, k, rc, hops = 0, asking = 0, ask_node = -1, again;

	slot &= RC_SLOTS - 1;
	if (pinned && (c->last_asking || c->last_node < 0 || c->slot[slot] - 1 != c->last_node))
		return RC_AGAIN; /* the WATCH went elsewhere (a migration, a new map) */
	for (;;) {
		i = asking ? ask_node : c->slot[slot] - 1;
		if (i < 0) {
			if (pinned)
				return RC_AGAIN;
			rc = rc_refresh(c, last, sizeof(last));
			if (rc == STORE_ERR_ARG)
				return store_fail(why, why_len, rc, "%s", last);
			i = c->slot[slot] - 1;
		}
		if (i >= 0) {
			if (pinned && !c->node[i].c)
				return RC_AGAIN;
			rc = rc_run(c, i, n, cmd, asking, rep, last, sizeof(last));
			if (rc == STORE_ERR_ARG || rc == STORE_ERR_NOMEM)
				return store_fail(why, why_len, rc, "%s", last);
			if (rc == 0) {
				again = 0;
				for (k = 0; k < n && !again; k++) {
					if (rep[k]->type != REDIS_REPLY_ERROR)
						continue;
					switch (rc_parse_redirect(rep[k]->str, rep[k]->len, &rslot, &a)) {
					case RC_REDIR_MOVED:
					case RC_REDIR_ASK:
						again = 1;
						break;
					case -1: /* no retry makes a garbage address usable */
						rc = store_fail(why, why_len, STORE_ERR_IO,
						    "node %s:%d: malformed redirect '%.80s'", c->node[i].a.host,
						    c->node[i].a.port, rep[k]->str);
						rc_free(rep, n);
						return rc;
					default:
						if (rc_retryable(rep[k]->str, rep[k]->len)) {
							snprintf(last, sizeof(last), "node %s:%d: %.120s",
							    c->node[i].a.host, c->node[i].a.port, rep[k]->str);
							again = 2;
						}
						break;
					}
				}
				if (!again) {
					c->last_node = i;
					c->last_asking = asking;
					return 0;
				}
				k--;
				if (pinned) {
					rc_free(rep, n);
					return RC_AGAIN;
				}
				if (again == 1) {
					int kind = rc_parse_redirect(rep[k]->str, rep[k]->len, &rslot, &a);
					if (!a.host[0])
						snprintf(a.host, sizeof(a.host), "%s", c->node[i].a.host);
					snprintf(last, sizeof(last), "node %s:%d: redirected to %s:%d",
					    c->node[i].a.host, c->node[i].a.port, a.host, a.port);
					rc_free(rep, n);
					if (++hops > RC_REDIRECTS_MAX)
						return store_fail(why, why_len, STORE_ERR_IO,
						    "%d redirections in one call; last: %s", hops - 1, last);
					if ((k = rc_node_add(c, &a)) < 0)
						return store_fail(why, why_len, STORE_ERR_IO,
						    "%s: more than %d nodes", last, RC_NODES_MAX);
					if (kind == RC_REDIR_MOVED) {
						c->n_moved++;
						c->slot[rslot] = (uint16_t)(k + 1);
						asking = 0;
						/* the map is stale: learn the rest of it (a failed refresh
						 * leaves the redirect's entry, which is enough here) */
						rc_refresh(c, NULL, 0);
						c->slot[rslot] = (uint16_t)(k + 1);
					} else {
						c->n_ask++;
						asking = 1;
						ask_node = k;
					}
					continue;
				}
				rc_free(rep, n);
			} else if (pinned) {
				return RC_AGAIN;
			}
		}
		/* a broken node, a retryable error or no map: pause, refresh, retry */
		asking = 0;
		if (kv_now_ms() + pause > deadline)
			return store_fail(why, why_len, STORE_ERR_IO,
			    "redis-cluster: gave up after %d ms: %s", c->budget_ms, last);
		kv_sleep_ms(pause);
		pause = pause * 2 > 1000 ? 1000 : pause * 2;
		if ((rc = rc_refresh(c, NULL, 0)) == STORE_ERR_ARG)
			return store_fail(why, why_len, STORE_ERR_IO, "%s", last);
	}
}

int
rc_exec(struct rcluster *c, unsigned slot, int n, const struct rc_cmd *cmd, redisReply **rep,
    char *why, size_t why_len)
{
	return rc_call(c, slot, n, cmd, rep, 0, why, why_len);
}

int
rc_exec_txn(struct rcluster *c, unsigned slot, int n, const struct rc_cmd *cmd,
    redisReply **rep, char *why, size_t why_len)
{
	return rc_call(c, slot, n, cmd, rep, 1, why, why_len);
}

int
rc_exec1(struct rcluster *c, int key_arg, int argc, const char **argv, const size_t *len,
    redisReply **rep, char *why, size_t why_len)
{
	struct rc_cmd cmd = { argc, argv, len };
	size_t klen = len ? len[key_arg] : strlen(argv[key_arg]);
	return rc_exec(c, rc_slot(argv[key_arg], klen), 1, &cmd, rep, why, why_len);
}

/* ------------------------------------------------------------------------ */
/* SCAN over every master                                                    */

static int
rc_keys_add(char ***keys, size_t *n, size_t *cap, const char *s, size_t len)
{
	char **k;
	if (*n == *cap) {
		size_t nc = *cap ? 2 * *cap : 64;
		if (!(k = realloc(*keys, nc * sizeof(*k))))
			return STORE_ERR_NOMEM;
		*keys = k;
		*cap = nc;
	}
	if (!((*keys)[*n] = malloc(len + 1)))
		return STORE_ERR_NOMEM;
	memcpy((*keys)[*n], s, len);
	(*keys)[*n][len] = '\0';
	(*n)++;
	return 0;
}

/* One master's keys matching pattern. */
static int
rc_scan_node(struct rcluster *c, int i, const char *pattern, char ***keys, size_t *n,
    size_t *cap, char *why, size_t why_len)
{
	char cursor[32] = "0";
	const char *argv[6] = { "SCAN", cursor, "MATCH", pattern, "COUNT", "1000" };
	struct rc_cmd cmd = { 6, argv, NULL };
	redisReply *r = NULL, *ks;
	size_t j;
	int rc;

	do {
		if ((rc = rc_run(c, i, 1, &cmd, 0, &r, why, why_len)) != 0)
			return rc;
		if (r->type == REDIS_REPLY_ERROR) {
			rc = rc_err(r, "SCAN", why, why_len);
			freeReplyObject(r);
			return rc;
		}
		if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
		    r->element[0]->type != REDIS_REPLY_STRING || r->element[0]->len >= sizeof(cursor) ||
		    r->element[1]->type != REDIS_REPLY_ARRAY) {
			freeReplyObject(r);
			return store_fail(why, why_len, STORE_ERR_IO, "node %s:%d: SCAN: malformed reply",
			    c->node[i].a.host, c->node[i].a.port);
		}
		memcpy(cursor, r->element[0]->str, r->element[0]->len);
		cursor[r->element[0]->len] = '\0';
		ks = r->element[1];
		for (j = 0; j < ks->elements; j++)
			if (ks->element[j]->type == REDIS_REPLY_STRING &&
			    (rc = rc_keys_add(keys, n, cap, ks->element[j]->str, ks->element[j]->len)) != 0) {
				freeReplyObject(r);
				return store_fail(why, why_len, rc, "out of memory");
			}
		freeReplyObject(r);
		r = NULL;
	} while (strcmp(cursor, "0") != 0);
	return 0;
}

int
rc_scan(struct rcluster *c, const char *pattern, char ***keys, size_t *n, char *why,
    size_t why_len)
{
	int64_t deadline = c->deadline_ms = kv_now_ms() + c->budget_ms, pause = 25;
	char last[256] = "";
	size_t cap;
	int i, s, rc, seen[RC_NODES_MAX];

	for (;;) {
		*keys = NULL;
		*n = cap = 0;
		rc = rc_refresh(c, last, sizeof(last));
		if (rc == STORE_ERR_ARG)
			return store_fail(why, why_len, rc, "%s", last);
		memset(seen, 0, sizeof(seen));
		for (s = 0; rc == 0 && s < RC_SLOTS; s++) {
			if (!c->slot[s] || seen[i = c->slot[s] - 1])
				continue;
			seen[i] = 1;
			rc = rc_scan_node(c, i, pattern, keys, n, &cap, last, sizeof(last));
		}
		if (rc == 0)
			return 0;
		kv_strv_free(*keys, *n);
		*keys = NULL;
		*n = 0;
		if (rc == STORE_ERR_NOMEM || rc == STORE_ERR_ARG)
			return store_fail(why, why_len, rc, "%s", last);
		if (kv_now_ms() + pause > deadline)
			return store_fail(why, why_len, STORE_ERR_IO,
			    "redis-cluster: gave up after %d ms: %s", c->budget_ms, last);
		kv_sleep_ms(pause);
		pause = pause * 2 > 1000 ? 1000 : pause * 2;
	}
}

/* ------------------------------------------------------------------------ */
/* Open and close                                                            */

/* "HOST:PORT" or "[V6]:PORT" of len bytes into a. */
static int
rc_addr_parse(const char *s, size_t len, struct rc_addr *a)
{
	const char *colon = NULL, *h = s;
	size_t hlen, i;
	long port = 0;

	for (i = len; i > 0; i--)
		if (s[i - 1] == ':') {
			colon = s + i - 1;
			break;
		}
	if (!colon || colon == s || colon + 1 == s + len || s + len - colon - 1 > 5)
		return -1;
	for (i = 1; colon + i < s + len; i++) {
		if (colon[i] < '0' || colon[i] > '9')
			return -1;
		port = port * 10 + (colon[i] - '0');
	}
	hlen = (size_t)(colon - s);
	if (h[0] == '[' && hlen >= 2 && h[hlen - 1] == ']')
		h++, hlen -= 2;
	if (port < 1 || port > 65535 || hlen == 0 || hlen >= RC_HOST_MAX)
		return -1;
	memcpy(a->host, h, hlen);
	a->host[hlen] = '\0';
	a->port = (int)port;
	return 0;
}

int
rc_open(struct rcluster **out, const char *addrs, const char *user, const char *pass,
    int timeout_ms, int budget_ms, char *why, size_t why_len)
{
	struct rcluster *c;
	const char *p = addrs, *comma;
	struct rc_addr a;
	int rc;

	*out = NULL;
	if ((user && strlen(user) >= sizeof(c->user)) || (pass && strlen(pass) >= 256))
		return store_fail(why, why_len, STORE_ERR_ARG, "redis-cluster: user or password too long");
	if (!(c = calloc(1, sizeof(*c))))
		return store_fail(why, why_len, STORE_ERR_NOMEM, "out of memory");
	{
		/* recursive: a callback the store calls under the lock (ls's fn,
		 * verify's check) may call the store again */
		pthread_mutexattr_t ma;
		pthread_mutexattr_init(&ma);
		pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
		pthread_mutex_init(&c->mu, &ma);
		pthread_mutexattr_destroy(&ma);
	}
	snprintf(c->user, sizeof(c->user), "%s", user ? user : "");
	snprintf(c->pass, sizeof(c->pass), "%s", pass ? pass : "");
	c->timeout_ms = timeout_ms > 0 ? timeout_ms : 2000;
	c->last_node = -1;
	c->budget_ms = budget_ms > 0 ? budget_ms : 15000;
	for (;;) {
		comma = strchr(p, ',');
		if (!comma)
			comma = p + strlen(p);
		if (rc_addr_parse(p, (size_t)(comma - p), &a) != 0 || c->n_node == RC_SEEDS_MAX) {
			rc_close(c);
			return store_fail(why, why_len, STORE_ERR_ARG,
			    "redis-cluster: bad node address '%.*s' in '%s' (want HOST:PORT[,HOST:PORT...],"
			    " at most %d)", (int)(comma - p), p, addrs, RC_SEEDS_MAX);
		}
		if (rc_node_find(c, &a) < 0)
			rc_node_add(c, &a);
		if (!*comma)
			break;
		p = comma + 1; /* "h:p," leaves "" for the next round: refused */
	}
	c->n_seed = c->n_node;
	rc_lock(c);
	c->deadline_ms = kv_now_ms() + c->budget_ms;
	rc = rc_refresh(c, why, why_len);
	rc_unlock(c);
	if (rc != 0) {
		char w[256];
		snprintf(w, sizeof(w), "%s", why ? why : "");
		rc_close(c);
		return store_fail(why, why_len, rc == STORE_ERR_ARG ? STORE_ERR_ARG : STORE_ERR_IO,
		    "redis-cluster %s: no node gave the slot map (last: %s)", addrs, w);
	}
	*out = c;
	return 0;
}

void
rc_close(struct rcluster *c)
{
	int i;
	if (!c)
		return;
	for (i = 0; i < c->n_node; i++)
		rc_drop(c, i);
	pthread_mutex_destroy(&c->mu);
	free(c);
}
