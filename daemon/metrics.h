/*
 * metrics.h: kvsnapd's counters, all of them in one place (metrics.c),
 * kept with atomics so any thread may count, and written out in
 * Prometheus' text exposition format for GET /metrics (docs/HTTP.md,
 * "Operations").  Gauges (the queue, the store) are read when scraped.
 */
#ifndef DAEMON_METRICS_H
#define DAEMON_METRICS_H

#include <stddef.h>

#include <jansson.h>

#include "daemon/daemon.h"

struct daemon;

/* HTTP routes as /metrics labels them (a path's template, never the
 * document reference or id a path holds, so the label set stays small). */
enum metrics_route {
	MR_MODELS = 0,       /* /v1/models */
	MR_MODEL,            /* /v1/models/{id} */
	MR_CHAT,             /* /v1/chat/completions */
	MR_COMPLETIONS,      /* /v1/completions */
	MR_DOCS,             /* /v1/documents */
	MR_DOC,              /* /v1/documents/{ref} */
	MR_HEALTH,           /* /health */
	MR_METRICS,          /* /metrics */
	MR_OTHER,            /* anything else (404) */
	MR_N
};
/* The route of a request URI (its path; a query string is ignored). */
enum metrics_route metrics_route_of(const char *uri);
const char *metrics_route_name(enum metrics_route r);

/* One HTTP request answered (status: what was sent; 499 when the client
 * left first), its body's bytes and its seconds from a whole request to
 * its last byte handed to the socket. */
void metrics_http(enum metrics_route r, int status, size_t bytes, double seconds);
/* A job's last event, socket protocol or HTTP (jobs.c): a result (its body
 * read for tokens, seconds and the tier answered from), or an error. */
void metrics_job_result(enum proto_op op, const json_t *body);
void metrics_job_error(enum proto_op op, enum proto_code code);

/* The whole exposition (malloc'd, *len set), gauges read now: the job
 * queue (jobs.c), the store (one pass over its documents' metadata), the
 * shared tier's counters.  NULL when out of memory. */
char *metrics_render(struct daemon *d, size_t *len);

#endif /* DAEMON_METRICS_H */
