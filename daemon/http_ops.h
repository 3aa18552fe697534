/*
 * http_ops.h: the operator's side of kvsnapd's HTTP front end
 * (http_ops.c; docs/HTTP.md "Operations"): GET /health, GET /metrics, and
 * the one line each answered request leaves in the log (and in the
 * metrics).  http.c calls these from the loop thread.
 */
#ifndef DAEMON_HTTP_OPS_H
#define DAEMON_HTTP_OPS_H

#include <stddef.h>
#include <sys/types.h>

#include "daemon/metrics.h"

struct daemon;

/* A request from its arrival to its reply's end: one per connection
 * (evhttp answers a connection's requests one at a time). */
struct http_ops_req {
	int open;                  /* begun, not yet ended */
	double t0;                 /* arrival (CLOCK_MONOTONIC seconds) */
	enum metrics_route route;
	char method[12];
	char uri[208];             /* the first 200 bytes of the URI */
	uid_t uid;
	size_t bytes;              /* of the reply's body, so far */
};

void http_ops_begin(struct http_ops_req *o, const char *method, const char *uri, uid_t uid);
/* Reply body bytes handed to the socket (a chunk, a whole body). */
void http_ops_bytes(struct http_ops_req *o, size_t n);
/* The reply's end (status as sent; 499 when the client left first): one
 * log line "http: uid U: METHOD URI STATUS, N bytes, S s" and the request's
 * metrics.  Does nothing for a request not open. */
void http_ops_end(struct http_ops_req *o, int status);

/* An answer http.c sends as it is. */
struct http_ops_reply {
	int status;
	const char *ctype;
	char *body;                /* malloc'd */
	size_t len;
};
/* GET /health and GET /metrics: 1 with *out filled when the request is
 * one of these (any method: 405 for another), 0 when it is not ours. */
int http_ops_answer(struct daemon *d, const char *method, const char *uri,
    struct http_ops_reply *out);

#endif /* DAEMON_HTTP_OPS_H */
