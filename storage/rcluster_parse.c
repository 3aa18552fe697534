/*
 * rcluster_parse.c: the cluster client's pure parts (rcluster.h): key
 * slots, redirect texts, the CLUSTER SLOTS reply, and the reader's element
 * limit.  Everything a node sends passes through here before it is trusted,
 * so every field is checked for type, range and length
 * (tests/fuzz/fuzz_redis_reply.c drives it with arbitrary bytes).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/read.h>

#include "storage/rcluster.h"
#include "storage/store_backend.h"

uint16_t
rc_crc16(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint16_t crc = 0;
	size_t i;
	int b;
	for (i = 0; i < len; i++) {
		crc ^= (uint16_t)(p[i] << 8);
		for (b = 0; b < 8; b++)
			crc = crc & 0x8000 ? (uint16_t)(crc << 1 ^ 0x1021) : (uint16_t)(crc << 1);
	}
	return crc;
}

unsigned
rc_slot(const void *key, size_t len)
{
	const char *k = key, *open = memchr(k, '{', len), *close;
	if (open) {
		close = memchr(open + 1, '}', len - (size_t)(open + 1 - k));
		if (close && close > open + 1)
			return rc_crc16(open + 1, (size_t)(close - open - 1)) & (RC_SLOTS - 1);
	}
	return rc_crc16(k, len) & (RC_SLOTS - 1);
}

/* A decimal number of at most 5 digits in [lo, hi]; -1 otherwise. */
static long
rc_num(const char *s, size_t len, long lo, long hi)
{
	long v = 0;
	size_t i;
	if (len == 0 || len > 5)
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v < lo || v > hi ? -1 : v;
}

/* Host characters we accept from a node: names, IPv4, IPv6 (no spaces,
 * no control bytes, nothing that could be an option or a path). */
static int
rc_host_ok(const char *h, size_t len)
{
	size_t i;
	if (len >= RC_HOST_MAX)
		return 0;
	for (i = 0; i < len; i++) {
		char ch = h[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		    ch == '.' || ch == '-' || ch == ':' || ch == '_'))
			return 0;
	}
	return 1;
}

int
rc_parse_redirect(const char *s, size_t len, unsigned *slot, struct rc_addr *a)
{
	const char *p, *end = s + len, *sp, *colon;
	long v, port;
	int kind;

	if (len > 6 && memcmp(s, "MOVED ", 6) == 0)
		kind = RC_REDIR_MOVED, p = s + 6;
	else if (len > 4 && memcmp(s, "ASK ", 4) == 0)
		kind = RC_REDIR_ASK, p = s + 4;
	else
		return RC_REDIR_NONE;
	if (!(sp = memchr(p, ' ', (size_t)(end - p))))
		return -1;
	if ((v = rc_num(p, (size_t)(sp - p), 0, RC_SLOTS - 1)) < 0)
		return -1;
	p = sp + 1;
	/* the port follows the last ':' (an IPv6 host has several) */
	for (colon = end; colon > p && colon[-1] != ':'; colon--)
		;
	if (colon == p)
		return -1;
	if ((port = rc_num(colon, (size_t)(end - colon), 1, 65535)) < 0)
		return -1;
	if (!rc_host_ok(p, (size_t)(colon - 1 - p)))
		return -1;
	memcpy(a->host, p, (size_t)(colon - 1 - p));
	a->host[colon - 1 - p] = '\0';
	a->port = (int)port;
	*slot = (unsigned)v;
	return kind;
}

int
rc_retryable(const char *s, size_t len)
{
	static const char *const words[] = { "TRYAGAIN", "CLUSTERDOWN", "LOADING", "MASTERDOWN",
		"READONLY" };
	size_t i, n;
	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		n = strlen(words[i]);
		if (len >= n && memcmp(s, words[i], n) == 0 && (len == n || s[n] == ' '))
			return 1;
	}
	return 0;
}

/* The node entry [host, port, id, ...] of a CLUSTER SLOTS range: its
 * index in m (added if new), or -1. */
static int
rc_slots_node(const redisReply *e, const char *asked_host, struct rc_map *m)
{
	const char *host;
	size_t hlen;
	int i;

	if (e->type != REDIS_REPLY_ARRAY || e->elements < 2 ||
	    e->element[0]->type != REDIS_REPLY_STRING || e->element[1]->type != REDIS_REPLY_INTEGER ||
	    e->element[1]->integer < 1 || e->element[1]->integer > 65535)
		return -1;
	host = e->element[0]->str;
	hlen = e->element[0]->len;
	if (hlen == 0 || (hlen == 1 && host[0] == '?')) { /* "" or "?": the node we asked */
		host = asked_host;
		hlen = strlen(asked_host);
	}
	if (!rc_host_ok(host, hlen) || hlen == 0)
		return -1;
	for (i = 0; i < m->n; i++)
		if (m->node[i].port == (int)e->element[1]->integer && strlen(m->node[i].host) == hlen &&
		    memcmp(m->node[i].host, host, hlen) == 0)
			return i;
	if (m->n == RC_NODES_MAX)
		return -1;
	memcpy(m->node[m->n].host, host, hlen);
	m->node[m->n].host[hlen] = '\0';
	m->node[m->n].port = (int)e->element[1]->integer;
	return m->n++;
}

int
rc_parse_slots(const redisReply *r, const char *asked_host, struct rc_map *m, char *why,
    size_t why_len)
{
	size_t i, j;
	long long lo, hi, s;
	int master, covered = 0;

	memset(m, 0, sizeof(*m));
	if (!r || r->type != REDIS_REPLY_ARRAY)
		return store_fail(why, why_len, STORE_ERR_IO, "CLUSTER SLOTS: not an array reply");
	for (i = 0; i < r->elements; i++) {
		const redisReply *e = r->element[i];
		if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
		    e->element[0]->type != REDIS_REPLY_INTEGER ||
		    e->element[1]->type != REDIS_REPLY_INTEGER)
			return store_fail(why, why_len, STORE_ERR_IO,
			    "CLUSTER SLOTS: range %zu is not [start, end, node...]", i);
		lo = e->element[0]->integer;
		hi = e->element[1]->integer;
		if (lo < 0 || hi < lo || hi >= RC_SLOTS)
			return store_fail(why, why_len, STORE_ERR_IO,
			    "CLUSTER SLOTS: range %zu has slots %lld..%lld", i, lo, hi);
		if ((master = rc_slots_node(e->element[2], asked_host, m)) < 0)
			return store_fail(why, why_len, STORE_ERR_IO,
			    "CLUSTER SLOTS: range %zu has a bad master entry", i);
		for (j = 3; j < e->elements; j++) /* replicas: known for failover */
			if (rc_slots_node(e->element[j], asked_host, m) < 0)
				return store_fail(why, why_len, STORE_ERR_IO,
				    "CLUSTER SLOTS: range %zu has a bad replica entry", i);
		for (s = lo; s <= hi; s++) {
			covered += m->slot[s] == 0;
			m->slot[s] = (uint16_t)(master + 1);
		}
	}
	if (covered == 0)
		return store_fail(why, why_len, STORE_ERR_IO, "CLUSTER SLOTS: no slot is served");
	return 0;
}

/* ------------------------------------------------------------------------ */
/* The reader's element limit                                                */

/* hiredis keeps its default functions static: a throwaway reader lends us
 * its table once, and ours forwards to it. */
static redisReplyObjectFunctions rc_fn, *rc_base;
static pthread_once_t rc_fn_once = PTHREAD_ONCE_INIT;

static void *
rc_create_array(const redisReadTask *task, int elements)
{
	if (elements < 0 || elements > RC_ELEMENTS_MAX)
		return NULL; /* the reader fails ("out of memory"); the caller names the node */
	return rc_base->createArray(task, elements);
}

static void
rc_fn_init(void)
{
	redisReader *r = redisReaderCreate();
	if (!r || !r->fn) {
		if (r)
			redisReaderFree(r);
		return;
	}
	rc_base = r->fn; /* hiredis's static defaultFunctions: outlives the reader */
	rc_fn = *rc_base;
	rc_fn.createArray = rc_create_array;
	redisReaderFree(r);
}

void
rc_reader_limit(redisReader *r)
{
	pthread_once(&rc_fn_once, rc_fn_init);
	if (r && rc_base && r->fn == rc_base)
		r->fn = &rc_fn;
}
