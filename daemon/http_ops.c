/*
 * http_ops.c: GET /health, GET /metrics and the request log line
 * (http_ops.h; docs/HTTP.md "Operations").
 *
 * /health answers as llama.cpp's server does for a load balancer or an
 * orchestrator's probe: 200 when requests are served, 503 with the reason
 * otherwise: "loading" (kvsnapd listens at once and loads the model and
 * the store meanwhile) or "draining" (a stop signal came: running jobs
 * finish, new ones are refused).  /metrics is 503 while loading, as every
 * other request.  Neither needs a job or a worker: they are answered on
 * the loop, so a busy daemon still answers its probes.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/daemon_internal.h"
#include "daemon/http.h"
#include "daemon/http_ops.h"

void
http_ops_begin(struct http_ops_req *o, const char *method, const char *uri, uid_t uid)
{
	o->open = 1;
	o->t0 = svc_now();
	o->route = metrics_route_of(uri);
	snprintf(o->method, sizeof(o->method), "%s", method ? method : "?");
	snprintf(o->uri, sizeof(o->uri), "%.200s", uri ? uri : "");
	o->uid = uid;
	o->bytes = 0;
}

void
http_ops_bytes(struct http_ops_req *o, size_t n)
{
	if (o->open)
		o->bytes += n;
}

void
http_ops_end(struct http_ops_req *o, int status)
{
	double s;
	if (!o->open)
		return;
	o->open = 0;
	s = svc_now() - o->t0;
	metrics_http(o->route, status, o->bytes, s);
	/* the probes come every few seconds: their lines only at debug */
	dlog(o->route == MR_HEALTH || o->route == MR_METRICS ? DLOG_DEBUG : DLOG_INFO,
	    "http: uid %d: %s %s %d, %zu bytes, %.3f s", (int)o->uid, o->method, o->uri, status,
	    o->bytes, s);
}

static int
ops_json(struct http_ops_reply *out, int status, json_t *o)
{
	out->status = status;
	out->ctype = "application/json";
	out->body = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(o);
	if (!out->body) {
		out->status = 500;
		out->body = http_error_json(PROTO_E_INTERNAL, 500, "out of memory", &out->len);
	} else {
		out->len = strlen(out->body);
	}
	return 1;
}

int
http_ops_answer(struct daemon *d, const char *method, const char *uri,
    struct http_ops_reply *out)
{
	enum metrics_route r = metrics_route_of(uri);
	char msg[128];

	memset(out, 0, sizeof(*out));
	if (r != MR_HEALTH && r != MR_METRICS)
		return 0;
	if (strcmp(method, "GET")) {
		snprintf(msg, sizeof(msg), "%s takes GET, not %s", metrics_route_name(r), method);
		out->status = 405;
		out->ctype = "application/json";
		out->body = http_error_json(PROTO_E_BAD_REQUEST, 405, msg, &out->len);
		return 1;
	}
	if (r == MR_HEALTH) {
		/* llama.cpp's shapes: {"status":"ok"} / {"error":{...}}; ours names
		 * the state in "status" both ways */
		if (atomic_load(&d->stopping))
			return ops_json(out, 503, json_pack("{s:s, s:{s:i, s:s, s:s}}", "status",
			    "draining", "error", "code", 503, "message", "the daemon is stopping: "
			    "running requests finish, new ones are refused", "type",
			    "unavailable_error"));
		if (!atomic_load(&d->ready))
			return ops_json(out, 503, json_pack("{s:s, s:{s:i, s:s, s:s}}", "status",
			    "loading", "error", "code", 503, "message", "Loading model: kvsnapd "
			    "is loading its model and store", "type", "unavailable_error"));
		return ops_json(out, 200, json_pack("{s:s}", "status", "ready"));
	}
	if (!atomic_load(&d->ready)) { /* the store's gauges are not there yet */
		out->status = 503;
		out->ctype = "application/json";
		out->body = http_error_json(PROTO_E_LOADING, 503, "kvsnapd is loading its model "
		    "and store; try again in a moment", &out->len);
		return 1;
	}
	out->status = 200;
	/* Prometheus' text exposition format, version 0.0.4 */
	out->ctype = "text/plain; version=0.0.4; charset=utf-8";
	if (!(out->body = metrics_render(d, &out->len))) {
		out->status = 500;
		out->ctype = "application/json";
		out->body = http_error_json(PROTO_E_INTERNAL, 500, "out of memory", &out->len);
	}
	return 1;
}
