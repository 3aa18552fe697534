/*
 * rcluster.h: a small Redis Cluster client over hiredis 0.14 (which speaks
 * RESP but not cluster): key slots (CRC16 of the hash tag), the slot map
 * from CLUSTER SLOTS, MOVED and ASK redirections, a timeout on every
 * connect and command, and reconnects with backoff inside a bounded time
 * per call.  Used by the redis-cluster store backend (store_redis*.c);
 * nothing here knows about snapshots.
 *
 * Threads: one mutex per cluster handle (rc_lock / rc_unlock), held by the
 * caller around a whole operation, so a WATCH .. MULTI .. EXEC sequence owns
 * its node connection; one connection per node.  Calls are serialized per
 * handle: the daemon's store calls are short next to a model pass, and a
 * caller wanting parallel transfers opens a second handle.
 *
 * Errors: 0 or a negative enum store_err (store.h) with a one-line reason
 * naming the node (host:port) and what failed.
 */
#ifndef STORAGE_RCLUSTER_H
#define STORAGE_RCLUSTER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "common/strv.h" /* kv_strv_free: rc_scan's keys */

#define RC_SLOTS 16384
#define RC_NODES_MAX 64      /* masters + replicas a handle keeps */
#define RC_HOST_MAX 64       /* bytes of a host name or address, NUL included */
#define RC_SEEDS_MAX 16
#define RC_REPLY_MAX (1ull << 30) /* a reply larger than this is refused */
#define RC_ELEMENTS_MAX (1 << 20) /* elements of one array reply */
#define RC_REDIRECTS_MAX 16  /* MOVED / ASK hops of one call */

/* ------------------------------------------------------------------------ */
/* Parsing (rcluster_parse.c): pure functions over bytes and replies, the
 * part a malicious or broken node reaches (tests/fuzz/fuzz_redis_reply.c). */

/* Redis's key slot: CRC16 (XMODEM) of the hash tag (the bytes between the
 * first '{' and the next '}', when not empty) or of the whole key, mod 16384. */
uint16_t rc_crc16(const void *buf, size_t len);
unsigned rc_slot(const void *key, size_t len);

struct rc_addr {
	char host[RC_HOST_MAX];
	int port;
};

/* "MOVED 3999 127.0.0.1:6381" / "ASK ...": 1 (MOVED) or 2 (ASK) with slot
 * and address; 0 for any other error text; -1 for a malformed redirect.
 * An empty host ("MOVED 1 :6380") means the node that answered: host "". */
enum { RC_REDIR_NONE = 0, RC_REDIR_MOVED = 1, RC_REDIR_ASK = 2 };
int rc_parse_redirect(const char *s, size_t len, unsigned *slot, struct rc_addr *a);

/* Error replies worth a retry after a pause (TRYAGAIN, CLUSTERDOWN,
 * LOADING, MASTERDOWN, READONLY): 1, else 0. */
int rc_retryable(const char *s, size_t len);

/* The slot map of a CLUSTER SLOTS reply: node[] lists masters and
 * replicas (deduplicated); slot[i] is the master's index + 1 (0: not
 * covered).  asked_host fills empty host fields.  0, or STORE_ERR_IO with
 * the reason for a reply of the wrong shape. */
struct rc_map {
	int n;
	struct rc_addr node[RC_NODES_MAX];
	uint16_t slot[RC_SLOTS];
};
int rc_parse_slots(const redisReply *r, const char *asked_host, struct rc_map *m, char *why,
    size_t why_len);

/* Install the element limit on a reader (hiredis 0.14 would calloc any
 * array length a node announces): arrays over RC_ELEMENTS_MAX fail the
 * read.  Called on every connection's reader and by the fuzz target. */
void rc_reader_limit(redisReader *r);

/* ------------------------------------------------------------------------ */
/* The client (rcluster.c)                                                   */

struct rc_node {
	struct rc_addr a;
	redisContext *c; /* NULL: not connected */
};

struct rcluster {
	pthread_mutex_t mu;
	int n_seed;            /* node[0..n_seed) came from the address */
	int n_node;
	struct rc_node node[RC_NODES_MAX];
	uint16_t slot[RC_SLOTS]; /* node index + 1; 0: unknown */
	char user[128], pass[256];
	int timeout_ms;        /* each connect and each command */
	int budget_ms;         /* a whole call, retries and backoff included */
	int64_t deadline_ms;   /* the running call's end (CLOCK_MONOTONIC ms): every
	                        * connect, write and whole reply is bounded by it */
	unsigned refresh_start; /* the node a refresh asks first, rotating */
	int last_node, last_asking; /* where the last rc_exec ran (rc_exec_txn follows it) */
	/* counters (tests and logs read them under the lock) */
	uint64_t n_moved, n_ask, n_refresh, n_reconnect;
};

/* Parse "HOST:PORT[,HOST:PORT...]" (IPv6 hosts in brackets), connect to a
 * seed and read the slot map.  user may be "" (AUTH with the password
 * only) and pass "" (no AUTH).  timeout_ms / budget_ms 0: 2000 / 15000. */
int rc_open(struct rcluster **out, const char *addrs, const char *user, const char *pass,
    int timeout_ms, int budget_ms, char *why, size_t why_len);
void rc_close(struct rcluster *c);
void rc_lock(struct rcluster *c);
void rc_unlock(struct rcluster *c);

/* A command: argc arguments, binary-safe. */
struct rc_cmd {
	int argc;
	const char **argv;
	const size_t *len;
};

/* Run n commands as one pipeline on the master of slot, following MOVED
 * (map updated, refreshed) and ASK (ASKING, the same pipeline on that node,
 * no map update), pausing and refreshing on retryable errors and broken
 * connections, until every reply is neither or the call's budget is spent
 * (STORE_ERR_IO naming the node and the last failure).  rep[0..n) get the
 * replies (freeReplyObject each, or rc_free); an error reply other than a
 * redirect is left for the caller (rc_err).  Lock held. */
int rc_exec(struct rcluster *c, unsigned slot, int n, const struct rc_cmd *cmd, redisReply **rep,
    char *why, size_t why_len);
/* The second half of a WATCH transaction (MULTI .. EXEC after a WATCH
 * sent by rc_exec on the same slot): it runs on the connection the last
 * rc_exec used, and follows no redirect and remakes no connection, since
 * the WATCH lives on that connection; any of those (or a WATCH that went
 * through ASK) returns RC_AGAIN and the caller starts over from its WATCH.
 * A nil EXEC (a watched key changed) is the caller's to see. */
#define RC_AGAIN 1
int rc_exec_txn(struct rcluster *c, unsigned slot, int n, const struct rc_cmd *cmd,
    redisReply **rep, char *why, size_t why_len);
/* One command keyed by argv[key_arg]. */
int rc_exec1(struct rcluster *c, int key_arg, int argc, const char **argv, const size_t *len,
    redisReply **rep, char *why, size_t why_len);
void rc_free(redisReply **rep, int n);

/* An error reply as a store error: OOM -> STORE_ERR_FULL, else
 * STORE_ERR_IO; "what: node says ...". */
int rc_err(const redisReply *r, const char *what, char *why, size_t why_len);

/* Every key matching pattern on every master (SCAN MATCH .. COUNT 1000),
 * into a malloc'd array of malloc'd strings (*keys, *n; kv_strv_free).
 * Lock held. */
int rc_scan(struct rcluster *c, const char *pattern, char ***keys, size_t *n, char *why,
    size_t why_len);

/* Refresh the slot map from any reachable node.  Lock held. */
int rc_refresh(struct rcluster *c, char *why, size_t why_len);

#endif /* STORAGE_RCLUSTER_H */
