/*
 * http.c: the OpenAI-compatible HTTP endpoint (kvsnapd --http ADDR;
 * docs/HTTP.md), libevent's evhttp on the daemon's own event loop: the
 * listener (a Unix socket made like the main one, or a loopback TCP port),
 * the caller's uid per request (http_peer.c), limits, routing to the same
 * jobs the socket protocol runs (http_parse.c makes their request), and
 * the job sink that turns their events into OpenAI's replies
 * (http_reply.c).
 *
 * Threads as in server.c: only the loop touches an evhttp_request.
 * Workers post each reply piece (headers of a stream, a chunk, the end, or
 * a whole reply) to one first-in-first-out queue and wake the loop
 * (event_active), which sends them with evhttp_send_reply_start / _chunk /
 * _end or evhttp_send_reply.  A request (struct hreq) is refcounted: the
 * loop's reference until its reply ends or its client leaves, the job's,
 * and one per queued piece; once it is gone, posts for it are dropped.
 *
 * A client that leaves cancels its job: evhttp tells us when a write
 * fails or it reads end of stream (the connection's close callback); while
 * a job runs without writing (a non-streamed answer, a queued job), a
 * timer looks at the socket every second (POLLRDHUP).
 *
 * A connection is admitted when it is accepted, before a byte of its
 * request is read (issue 26): evhttp makes each connection's bufferevent
 * through our callback (http_bev_cb), which queues it for http_admit_cb,
 * run by the loop right after the accept.  There the caller is identified
 * while its socket is certainly live (http_peer.c), checked against
 * http-allow, and counted against --max-connections and
 * --max-connections-per-user, so a connection that never completes a
 * request holds a slot; refusals get a short reply and are closed at
 * once.  An admitted connection has until its deadline (--request-timeout
 * from its accept, and again from the end of each reply) to deliver a
 * whole request, headers and body, however slowly its bytes trickle in;
 * then it is closed.  Out of descriptors (EMFILE), accepting pauses for a
 * moment instead of spinning, and HTTP leaves the last file descriptors
 * below the limit to the socket protocol and the store.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>

#include "daemon/daemon_internal.h"
#include "daemon/http.h"
#include "daemon/http_ops.h"
#include "daemon/loop_queue.h"

#define HTTP_HUP_CHECK_S 1     /* a running job's client still there? */
#define HTTP_HEADERS_MAX 65536
#define HTTP_ACCEPT_PAUSE_MS 250 /* out of descriptors: accept again after */
/* Descriptors below the limit HTTP leaves to the rest of the daemon (the
 * socket protocol's connections, the store, passed files): the larger of
 * this and an eighth of the limit. */
#define HTTP_FD_RESERVE 32

struct hreq;

/* An admitted connection (counted against the connection limits from
 * its accept on). */
struct hconn {
	struct evhttp_connection *evcon;
	uid_t uid;
	struct hreq *cur;          /* the request it waits on, or NULL */
	struct event *tev;         /* the deadline for a whole request */
	struct http_ops_req ops;   /* its request now: the log line, the metrics */
	struct hconn *prev, *next;
};

struct hreq {
	pthread_mutex_t mu;
	int refs;                  /* under mu */
	int gone;                  /* under mu: answered or the client left */
	/* the loop's */
	struct evhttp_request *req;
	struct hconn *hc;
	struct event *tev;         /* the client-left check */
	int fd;
	uint64_t serial;
	/* the job's (one job per request) */
	enum http_route route;
	int stream, include_usage, started;
	struct http_shape shape;
	char model[PROTO_REF_MAX + 1]; /* the replies' "model" */
	char *text;                /* the answer so far (not streamed) */
	size_t n_text, cap_text;
};

enum hpost_kind { HP_START, HP_CHUNK, HP_END, HP_REPLY };

struct hpost {
	struct loopq_item q;       /* first: the queue's link */
	struct hreq *h;            /* a reference */
	enum hpost_kind kind;
	int status;
	size_t len;
	char data[];
};

static struct {
	struct daemon *d;
	struct event_base *base;
	struct evhttp *http;
	struct evhttp_bound_socket *bound;
	char unix_path[108];       /* to unlink at the end; "" for TCP */
	struct hconn *conns;
	int n_conns, n_open;       /* connections; requests not yet answered */
	uint64_t serial;
	char model[128];
	int64_t created;
	/* admission (loop thread) */
	struct http_allow allow;
	gid_t sock_gid;            /* the main socket's group */
	struct bufferevent **fresh; /* accepted, not yet admitted (a reference each) */
	size_t n_fresh, cap_fresh;
	struct event *admit_ev, *resume_ev;
	int fd_room, fd_limit;     /* a connection's fd must be below fd_room */
	struct timeval io_timeout; /* evhttp's read and write timeout (evhttp_set_timeout) */
	struct dlog_limit lim_ident, lim_allow, lim_caps, lim_fds, lim_accept, lim_slow;
} hs;

static void hpost_run(struct loopq_item *it);
/* The reply pieces workers post (lock order: a request's mu, then its). */
static struct loopq hposts = LOOPQ_INIT(hpost_run);

/* ------------------------------------------------------------------------ */
/* Requests: references, posting (any thread)                                */

static void
hreq_unref(struct hreq *h)
{
	if (loopq_unref(&h->mu, &h->refs)) {
		pthread_mutex_destroy(&h->mu);
		free(h->text);
		free(h);
	}
}

/* Queue a reply piece for the loop; dropped if the request is gone. */
static void
hpost(struct hreq *h, enum hpost_kind kind, int status, const char *data, size_t len)
{
	struct hpost *p = malloc(sizeof(*p) + len);
	if (!p)
		return;
	p->h = h;
	p->kind = kind;
	p->status = status;
	p->len = len;
	if (len)
		memcpy(p->data, data, len);
	if (loopq_push_ref(&hposts, &p->q, &h->mu, &h->refs, &h->gone))
		free(p);
}

/* A JSON value as a post: a whole reply, or an SSE chunk. */
static void
hpost_json(struct hreq *h, enum hpost_kind kind, int status, json_t *o)
{
	size_t n = 0;
	char *s;
	if (kind == HP_CHUNK)
		s = http_sse(o, &n);
	else {
		s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
		json_decref(o);
		n = s ? strlen(s) : 0;
	}
	if (s)
		hpost(h, kind, status, s, n);
	else if (kind == HP_REPLY) {
		static const char oom[] = "{\"error\":{\"message\":\"out of memory\",\"type\":"
		    "\"server_error\",\"code\":\"internal\",\"param\":null}}";
		hpost(h, kind, 500, oom, sizeof(oom) - 1);
	}
	free(s);
}

static void
hpost_error(struct hreq *h, enum proto_code code, const char *msg)
{
	int status = http_status_of(code);
	size_t n;
	char *s = http_error_json(code, status, msg, &n);
	if (!s)
		return;
	if (h->started) { /* mid-stream: an error event, then the end */
		char *e = malloc(n + 9);
		if (e) {
			memcpy(e, "data: ", 6);
			memcpy(e + 6, s, n);
			memcpy(e + 6 + n, "\n\n", 2);
			hpost(h, HP_CHUNK, 0, e, n + 8);
			free(e);
		}
		hpost(h, HP_END, 0, NULL, 0);
	} else {
		hpost(h, HP_REPLY, status, s, n);
	}
	free(s);
}

/* The stream's headers, once. */
static void
hreq_start(struct hreq *h)
{
	if (!h->started) {
		h->started = 1;
		hpost(h, HP_START, 200, NULL, 0);
	}
}

/* ------------------------------------------------------------------------ */
/* The job sink (the job's thread)                                           */

static void
http_sink_event(struct job *j, const char *event, json_t *body)
{
	struct hreq *h = j->owner;
	const char *text;
	size_t n;
	int first;

	if (!strcmp(event, "token") && (h->route == HTTP_R_CHAT || h->route == HTTP_R_COMPLETIONS)) {
		text = json_string_value(json_object_get(body, "text"));
		n = json_string_length(json_object_get(body, "text"));
		if (!text || (!n && h->started))
			goto out;
		if (h->stream) {
			first = !h->started;
			hreq_start(h);
			hpost_json(h, HP_CHUNK, 0, http_chunk(&h->shape, text, n, first, NULL, NULL));
		} else if (n) {
			if (h->n_text + n + 1 > h->cap_text) {
				size_t cap = (h->n_text + n + 1) * 2;
				char *nb = realloc(h->text, cap);
				if (!nb)
					goto out;
				h->text = nb;
				h->cap_text = cap;
			}
			memcpy(h->text + h->n_text, text, n);
			h->n_text += n;
		}
	} else if (!strcmp(event, "progress") && h->stream) {
		hreq_start(h);
		json_object_set_new(body, "object", json_string("document.progress"));
		hpost_json(h, HP_CHUNK, 0, json_incref(body));
	} else if (!strcmp(event, "result")) {
		if (h->route == HTTP_R_CHAT || h->route == HTTP_R_COMPLETIONS) {
			const char *finish = http_finish_reason(json_string_value(json_object_get(body,
			    "stop")));
			json_int_t pt = json_integer_value(json_object_get(body, "prompt_tokens"));
			json_int_t ct = json_integer_value(json_object_get(body, "tokens"));
			if (h->stream) {
				first = !h->started;
				hreq_start(h);
				hpost_json(h, HP_CHUNK, 0, http_library_reply(http_chunk(&h->shape,
				    first ? "" : NULL, 0, first, finish, NULL), body));
				if (h->include_usage)
					hpost_json(h, HP_CHUNK, 0, http_chunk(&h->shape, NULL, 0, 0, NULL,
					    http_usage(pt, ct)));
				hpost(h, HP_CHUNK, 0, "data: [DONE]\n\n", 14);
				hpost(h, HP_END, 0, NULL, 0);
			} else {
				hpost_json(h, HP_REPLY, 200, http_library_reply(http_completion(&h->shape,
				    h->text, h->n_text, finish, http_usage(pt, ct)), body));
			}
		} else if (h->route == HTTP_R_MODELS || h->route == HTTP_R_MODEL) {
			hpost_json(h, HP_REPLY, 200, http_models_reply(h->route, body, hs.model,
			    hs.created));
		} else if (h->stream) {
			hreq_start(h);
			hpost_json(h, HP_CHUNK, 0, http_doc_reply(h->route, body));
			hpost(h, HP_CHUNK, 0, "data: [DONE]\n\n", 14);
			hpost(h, HP_END, 0, NULL, 0);
		} else {
			hpost_json(h, HP_REPLY, 200, http_doc_reply(h->route, body));
		}
	}
	/* "queued": a streamed reply starts with the first token or progress */
out:
	json_decref(body);
}

static void
http_sink_error(struct job *j, enum proto_code code, const char *msg)
{
	size_t n;
	char *s;
	if (j->model_missing && !((struct hreq *)j->owner)->started &&
	    (s = http_model_error_json(msg, &n))) { /* OpenAI's own shape for it */
		hpost(j->owner, HP_REPLY, 404, s, n);
		free(s);
		return;
	}
	hpost_error(j->owner, code, msg);
}

static void
http_sink_release(struct job *j)
{
	hreq_unref(j->owner);
}

static const struct job_sink http_sink = { http_sink_event, http_sink_error,
	http_sink_release };

/* ------------------------------------------------------------------------ */
/* Sending (loop thread)                                                     */

/* The connection's deadline for its next whole request: --request-timeout
 * from now (its accept, or the end of its last reply). */
static void
hconn_arm(struct hconn *hc)
{
	struct timeval tv = { hs.d->cfg.request_timeout, 0 };
	if (hc->tev && hs.d->cfg.request_timeout > 0)
		evtimer_add(hc->tev, &tv);
}

/* The request's end on our side: answered, or its client left. */
static void
hreq_detach(struct hreq *h)
{
	pthread_mutex_lock(&h->mu);
	h->gone = 1;
	pthread_mutex_unlock(&h->mu);
	h->req = NULL;
	if (h->hc) {
		h->hc->cur = NULL;
		hconn_arm(h->hc); /* for its next request */
	}
	h->hc = NULL;
	if (h->tev)
		event_free(h->tev);
	h->tev = NULL;
	hs.n_open--;
	hreq_unref(h); /* the loop's reference */
}

static void
http_headers(struct evhttp_request *req, const char *ctype)
{
	struct evkeyvalq *out = evhttp_request_get_output_headers(req);
	evhttp_add_header(out, "Content-Type", ctype);
	evhttp_add_header(out, "Cache-Control", "no-cache");
	evhttp_add_header(out, "Server", "kvsnapd");
}

static const char *
http_reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 413: return "Payload Too Large";
	case 429: return "Too Many Requests";
	case 503: return "Service Unavailable";
	default: return status >= 500 ? "Internal Server Error" : "Error";
	}
}

static struct hconn *hconn_find(struct evhttp_connection *evcon);

/* The log line and metrics of req's connection's request (NULL: a
 * connection never admitted). */
static struct http_ops_req *
http_ops_of(struct evhttp_request *req)
{
	struct hconn *hc = req ? hconn_find(evhttp_request_get_connection(req)) : NULL;
	return hc ? &hc->ops : NULL;
}

/* A whole reply to a request no job holds (loop thread). */
static void
http_reply_typed(struct evhttp_request *req, int status, const char *ctype, const char *body,
    size_t len, int close)
{
	struct evbuffer *b = evbuffer_new();
	struct http_ops_req *o = http_ops_of(req);
	http_headers(req, ctype);
	if (close)
		evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
	if (b)
		evbuffer_add(b, body, len);
	evhttp_send_reply(req, status, http_reason(status), b);
	if (b)
		evbuffer_free(b);
	if (o) {
		http_ops_bytes(o, b ? len : 0);
		http_ops_end(o, status);
	}
}

static void
http_reply_now(struct evhttp_request *req, int status, const char *json, size_t len, int close)
{
	http_reply_typed(req, status, "application/json", json, len, close);
}

static void
http_error_now(struct evhttp_request *req, enum proto_code code, int status, const char *msg,
    int close)
{
	size_t n;
	char *s = http_error_json(code, status, msg, &n);
	dlog(DLOG_DEBUG, "http: %d %s: %s", status, proto_code_name(code), msg);
	if (s)
		http_reply_now(req, status, s, n, close);
	else {
		struct http_ops_req *o = http_ops_of(req);
		evhttp_send_error(req, 500, NULL);
		if (o)
			http_ops_end(o, 500);
	}
	free(s);
}

/* A streamed reply has evhttp read from its connection, only to see the
 * client leave, under the connection's read timeout (evhttp_write_buffer
 * enables EV_READ, and each chunk restarts the timer): a job silent for
 * longer than that between two events (an ingest's scoring after its last
 * progress event, a slow first chunk on a busy machine) had its stream cut
 * by evhttp, taken for a client that left, and cancelled.  So no read
 * timeout while a stream is written: the client's leaving is seen by its
 * end of stream (the close callback) and hreq_check_cb; the write timeout
 * stays (a client that reads nothing of a pending reply for that long is
 * dropped).  The end of the stream puts the read timeout back, for the
 * connection's next request. */
static void
hstream_timeouts(struct evhttp_request *req, int streaming)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
	if (bev)
		bufferevent_set_timeouts(bev, streaming ? NULL : &hs.io_timeout, &hs.io_timeout);
}

static void
hpost_send(struct hpost *p)
{
	struct hreq *h = p->h;
	struct evhttp_request *req = h->req;
	struct evbuffer *b;

	if (!req)
		return;
	switch (p->kind) {
	case HP_START:
		http_headers(req, "text/event-stream");
		evhttp_send_reply_start(req, 200, "OK");
		hstream_timeouts(req, 1);
		return;
	case HP_CHUNK:
		if ((b = evbuffer_new())) {
			evbuffer_add(b, p->data, p->len);
			evhttp_send_reply_chunk(req, b);
			evbuffer_free(b);
			if (h->hc)
				http_ops_bytes(&h->hc->ops, p->len);
		}
		return;
	case HP_END:
		if (h->hc)
			http_ops_end(&h->hc->ops, 200);
		hreq_detach(h);
		hstream_timeouts(req, 0);
		evhttp_send_reply_end(req);
		return;
	case HP_REPLY:
		hreq_detach(h);
		http_reply_now(req, p->status, p->data, p->len, 0);
		return;
	}
}

/* A posted piece, sent (loop thread; the queue keeps their order). */
static void
hpost_run(struct loopq_item *it)
{
	struct hpost *p = (struct hpost *)it;
	hpost_send(p);
	hreq_unref(p->h);
	free(p);
}

/* ------------------------------------------------------------------------ */
/* Clients leaving (loop thread)                                             */

/* evhttp closes the connection (the client left, a write failed, or the
 * reply said close): its request, if one waits, is gone. */
static void
hconn_close_cb(struct evhttp_connection *evcon, void *arg)
{
	struct hconn *hc = arg;
	struct hreq *h = hc->cur;
	(void)evcon;
	if (h) {
		dlog(DLOG_INFO, "http %llu: client left; cancelling its request",
		    (unsigned long long)h->serial);
		/* a request evhttp has let go of (end of stream while we held it)
		 * is ours to free; one still on the connection goes with it */
		if (h->req && !evhttp_request_get_connection(h->req))
			evhttp_request_free(h->req);
		h->req = NULL;
		hreq_detach(h);
		jobs_cancel_owner(h);
	}
	http_ops_end(&hc->ops, 499); /* a request it left unanswered: nginx's "client closed" */
	if (hc->prev)
		hc->prev->next = hc->next;
	else
		hs.conns = hc->next;
	if (hc->next)
		hc->next->prev = hc->prev;
	hs.n_conns--;
	if (hc->tev)
		event_free(hc->tev);
	free(hc);
}

/* The deadline: no whole request since the accept or the last reply. */
static void
hconn_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct hconn *hc = arg;
	struct bufferevent *bev = evhttp_connection_get_bufferevent(hc->evcon);
	(void)fd;
	(void)what;
	if (hc->cur)
		return; /* a request is being answered (not armed then) */
	if (bev && evbuffer_get_length(bufferevent_get_output(bev))) {
		hconn_arm(hc); /* its last reply is still being written */
		return;
	}
	dlog_limited(&hs.lim_slow, DLOG_INFO, "http: uid %d: no whole request within %ld s "
	    "(--request-timeout); connection closed", (int)hc->uid, hs.d->cfg.request_timeout);
	evhttp_connection_free(hc->evcon); /* hconn_close_cb frees hc */
}

/* While a job runs: is its client still there? */
static void
hreq_check_cb(evutil_socket_t fd, short what, void *arg)
{
	struct hreq *h = arg;
	struct pollfd p = { .fd = h->fd, .events = POLLRDHUP };
	(void)fd;
	(void)what;
	if (!h->req || !h->hc)
		return;
	if (poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
		evhttp_connection_free(h->hc->evcon); /* hconn_close_cb does the rest */
}

/* ------------------------------------------------------------------------ */
/* Requests (loop thread)                                                    */

static struct hconn *
hconn_find(struct evhttp_connection *evcon)
{
	struct hconn *c;
	for (c = hs.conns; c; c = c->next)
		if (c->evcon == evcon)
			return c;
	return NULL;
}

static enum job_kind
http_kind(enum proto_op op)
{
	return op == PROTO_OP_INGEST ? JOB_INGEST :
	    op == PROTO_OP_QUERY || op == PROTO_OP_CHAT ? JOB_QUERY : JOB_ADMIN;
}

static const char *
http_method(struct evhttp_request *req)
{
	switch (evhttp_request_get_command(req)) {
	case EVHTTP_REQ_GET: return "GET";
	case EVHTTP_REQ_POST: return "POST";
	case EVHTTP_REQ_DELETE: return "DELETE";
	case EVHTTP_REQ_HEAD: return "HEAD";
	case EVHTTP_REQ_PUT: return "PUT";
	case EVHTTP_REQ_OPTIONS: return "OPTIONS";
	case EVHTTP_REQ_TRACE: return "TRACE";
	case EVHTTP_REQ_CONNECT: return "CONNECT";
	case EVHTTP_REQ_PATCH: return "PATCH";
	}
	return "?";
}

/* ------------------------------------------------------------------------ */
/* Admission, when a connection is accepted (loop thread)                    */

/* Refuse a connection before any request: a short reply written straight
 * to the socket (evhttp writes nothing yet), what the client already sent
 * read off (so that closing does not reset the reply away), then closed. */
static void
http_refuse(struct evhttp_connection *evcon, int fd, struct dlog_limit *lim, int status,
    enum proto_code code, const char *msg)
{
	char head[256], sink[4096];
	size_t n = 0, got = 0;
	char *body = http_error_json(code, status, msg, &n);
	ssize_t r;
	int hn;

	dlog_limited(lim, DLOG_WARN, "http: refused a connection: %s", msg);
	hn = snprintf(head, sizeof(head), "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\nServer: kvsnapd\r\n\r\n", status,
	    http_reason(status), body ? n : 0);
	if (send(fd, head, (size_t)hn, MSG_DONTWAIT | MSG_NOSIGNAL) == hn && body &&
	    send(fd, body, n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* best effort: the client may be gone already */
	}
	free(body);
	shutdown(fd, SHUT_WR);
	while (got < 65536 && (r = recv(fd, sink, sizeof(sink), MSG_DONTWAIT)) > 0)
		got += (size_t)r;
	evhttp_connection_free(evcon);
}

static void
http_accept_resume(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	if (hs.bound)
		evconnlistener_enable(evhttp_bound_socket_get_listener(hs.bound));
}

/* Stop accepting for a moment: the next connections wait in the listen
 * backlog instead of costing an accept and a refusal each. */
static void
http_accept_pause(void)
{
	struct timeval tv = { 0, HTTP_ACCEPT_PAUSE_MS * 1000 };
	if (hs.bound) {
		evconnlistener_disable(evhttp_bound_socket_get_listener(hs.bound));
		evtimer_add(hs.resume_ev, &tv);
	}
}

/* Who is calling, may they, and is there room: the connection is an
 * hconn from now on, or refused. */
static void
http_admit(struct evhttp_connection *evcon, int fd)
{
	const struct dcfg *cfg = &hs.d->cfg;
	struct hconn *hc, *c;
	char why[400], msg[512];
	uid_t uid;
	int mine = 0;

	if (fd >= hs.fd_room) {
		snprintf(msg, sizeof(msg), "too many connections: the daemon is near its limit of "
		    "open files (descriptor %d; HTTP leaves the last %d of %d to the socket "
		    "protocol and the store); try again later", fd, hs.fd_limit - hs.fd_room,
		    hs.fd_limit);
		http_refuse(evcon, fd, &hs.lim_fds, 429, PROTO_E_TOO_MANY_CONNS, msg);
		http_accept_pause();
		return;
	}
	if (http_peer_uid(fd, &uid, why, sizeof(why))) {
		snprintf(msg, sizeof(msg), "cannot identify the caller (%s); nobody is served as "
		    "an unknown user", why);
		http_refuse(evcon, fd, &hs.lim_ident, 403, PROTO_E_DENIED, msg);
		return;
	}
	if (http_allow_check(&hs.allow, hs.sock_gid, uid, msg, sizeof(msg))) {
		http_refuse(evcon, fd, &hs.lim_allow, 403, PROTO_E_DENIED, msg);
		return;
	}
	for (c = hs.conns; c; c = c->next)
		mine += c->uid == uid;
	if (hs.n_conns >= cfg->max_conns || mine >= cfg->max_conns_user) {
		if (hs.n_conns >= cfg->max_conns)
			snprintf(msg, sizeof(msg), "too many HTTP connections (%d open, "
			    "--max-connections %ld)", hs.n_conns, cfg->max_conns);
		else
			snprintf(msg, sizeof(msg), "too many HTTP connections from uid %d (%d open, "
			    "--max-connections-per-user %ld)", (int)uid, mine, cfg->max_conns_user);
		http_refuse(evcon, fd, &hs.lim_caps, 429, PROTO_E_TOO_MANY_CONNS, msg);
		return;
	}
	if (!(hc = calloc(1, sizeof(*hc))) ||
	    !(hc->tev = evtimer_new(hs.base, hconn_deadline_cb, hc))) {
		free(hc);
		http_refuse(evcon, fd, &hs.lim_caps, 500, PROTO_E_INTERNAL, "out of memory");
		return;
	}
	hc->evcon = evcon;
	hc->uid = uid;
	/* a token is a small write: send it now, not after the last one's ACK
	 * (Nagle); a Unix socket refuses this harmlessly */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
	hc->next = hs.conns;
	if (hs.conns)
		hs.conns->prev = hc;
	hs.conns = hc;
	hs.n_conns++;
	evhttp_connection_set_closecb(evcon, hconn_close_cb, hc);
	hconn_arm(hc);
	dlog(DLOG_DEBUG, "http: uid %d connected (%d HTTP connections)", (int)uid, hs.n_conns);
}

/* evhttp makes an accepted connection's bufferevent: note it for
 * admission, which runs as soon as this accept is done, before the loop
 * polls again (so before any of the request is read).  Our reference keeps
 * it valid until then even if evhttp drops the connection. */
static struct bufferevent *
http_bev_cb(struct event_base *base, void *arg)
{
	struct bufferevent *bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	(void)arg;
	if (!bev)
		return NULL; /* evhttp makes one itself; never admitted, refused at its request */
	if (hs.n_fresh == hs.cap_fresh) {
		size_t cap = hs.cap_fresh ? hs.cap_fresh * 2 : 16;
		struct bufferevent **nf = realloc(hs.fresh, cap * sizeof(*nf));
		if (!nf)
			return bev;
		hs.fresh = nf;
		hs.cap_fresh = cap;
	}
	bufferevent_incref(bev);
	hs.fresh[hs.n_fresh++] = bev;
	event_active(hs.admit_ev, EV_READ, 0);
	return bev;
}

/* The connections just accepted.  evhttp's connection is the argument of
 * its bufferevent's callbacks (libevent 2.1: evhttp sets them so); a
 * connection it already freed has none. */
static void
http_admit_cb(evutil_socket_t fd, short what, void *arg)
{
	size_t i, n = hs.n_fresh;
	void *cbarg;
	(void)fd;
	(void)what;
	(void)arg;
	hs.n_fresh = 0;
	for (i = 0; i < n; i++) {
		struct bufferevent *bev = hs.fresh[i];
		cbarg = NULL;
		bufferevent_getcb(bev, NULL, NULL, NULL, &cbarg);
		if (cbarg && evhttp_connection_get_bufferevent(cbarg) == bev)
			http_admit(cbarg, bufferevent_getfd(bev));
		bufferevent_decref(bev);
	}
}

/* accept() failed.  Out of descriptors or memory, the listening socket
 * stays readable: pause instead of spinning on it (and logging each
 * failure, gigabytes a minute), as memcached does. */
static void
http_accept_error_cb(struct evconnlistener *lis, void *arg)
{
	int e = EVUTIL_SOCKET_ERROR();
	(void)arg;
	(void)lis;
	dlog_limited(&hs.lim_accept, DLOG_WARN, "http: cannot accept a connection: %s; not "
	    "accepting for %d ms (%d HTTP connections open)", strerror(e), HTTP_ACCEPT_PAUSE_MS,
	    hs.n_conns);
	http_accept_pause();
}

/* Hand the parsed request to a job. */
static void
http_submit(struct evhttp_request *req, struct hconn *hc, int fd, uid_t uid, struct http_req *r)
{
	struct hreq *h;
	struct job *j;
	struct timeval tv = { HTTP_HUP_CHECK_S, 0 };
	int code;

	if (!(h = calloc(1, sizeof(*h))) || !(j = calloc(1, sizeof(*j)))) {
		free(h);
		http_error_now(req, PROTO_E_INTERNAL, 500, "out of memory", 0);
		return;
	}
	pthread_mutex_init(&h->mu, NULL);
	h->refs = 2; /* the loop's and the job's */
	h->req = req;
	h->hc = hc;
	h->fd = fd;
	h->serial = ++hs.serial;
	h->route = r->route;
	h->stream = r->stream;
	h->include_usage = r->include_usage;
	h->shape.chat = r->route == HTTP_R_CHAT;
	snprintf(h->shape.id, sizeof(h->shape.id), "%s-kvsnap-%llu",
	    h->shape.chat ? "chatcmpl" : "cmpl", (unsigned long long)h->serial);
	h->shape.created = (int64_t)time(NULL);
	/* the model asked for: a document's id, echoed as OpenAI echoes it */
	snprintf(h->model, sizeof(h->model), "%s", r->pr.doc_model ? r->model : hs.model);
	h->shape.model = h->model;
	hc->cur = h;
	hs.n_open++;

	j->kind = http_kind(r->pr.op);
	j->req = r->pr; /* the job owns the request now */
	memset(&r->pr, 0, sizeof(r->pr));
	j->fd = -1;
	j->sink = &http_sink;
	j->owner = h;
	snprintf(j->label, sizeof(j->label), "http %llu", (unsigned long long)h->serial);
	j->who.uid = (uint32_t)uid;
	j->who.all = uid == 0 || uid == geteuid(); /* root and the service user */
	if ((h->tev = event_new(hs.base, -1, EV_PERSIST, hreq_check_cb, h)))
		event_add(h->tev, &tv);
	if ((code = jobs_submit(j))) {
		hreq_detach(h);
		http_error_now(req, (enum proto_code)code, http_status_of((enum proto_code)code),
		    code == PROTO_E_BUSY ? "the job queue is full (--max-jobs); try again later" :
		    "the daemon is stopping", 0);
		job_free(j); /* drops the job's reference */
	}
}

static void
http_request_cb(struct evhttp_request *req, void *arg)
{
	struct evkeyvalq *in_h = evhttp_request_get_input_headers(req);
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct http_req r;
	struct hconn *hc = hconn_find(evcon);
	const char *method = http_method(req), *uri = evhttp_request_get_uri(req);
	char msg[512], *body;
	size_t len = evbuffer_get_length(in);
	int fd = bufferevent_getfd(evhttp_connection_get_bufferevent(evcon)), status, code;
	uid_t uid;
	json_t *o;
	struct http_ops_reply ops;

	(void)arg;
	memset(&r, 0, sizeof(r));
	if (!hc) { /* not admitted (out of memory when it came) */
		http_error_now(req, PROTO_E_DENIED, 403, "cannot identify the caller: the "
		    "connection was not admitted", 1);
		return;
	}
	evtimer_del(hc->tev); /* the request is whole */
	uid = hc->uid;
	dlog(DLOG_DEBUG, "http: uid %d: %s %.200s: begun", (int)uid, method, uri);
	http_ops_begin(&hc->ops, method, uri, uid);
	if (!atomic_load(&hs.d->ready)) /* every answer while loading is a 503 */
		evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", "1");
	if (http_ops_answer(hs.d, method, uri, &ops)) { /* /health, /metrics */
		if (ops.body)
			http_reply_typed(req, ops.status, ops.ctype, ops.body, ops.len, 0);
		else
			http_error_now(req, PROTO_E_INTERNAL, 500, "out of memory", 0);
		free(ops.body);
		goto out;
	}
	if (atomic_load(&hs.d->stopping)) {
		http_error_now(req, PROTO_E_SHUTTING_DOWN, 503, "the daemon is stopping", 1);
		goto out;
	}
	if (!atomic_load(&hs.d->ready)) { /* as llama.cpp's server: 503 until loaded */
		http_error_now(req, PROTO_E_LOADING, 503, "kvsnapd is loading its model and "
		    "store; try again in a moment", 0);
		goto out;
	}
	body = len ? (char *)evbuffer_pullup(in, -1) : NULL;
	code = http_parse(method, uri, evhttp_find_header(in_h, "Content-Type"),
	    evhttp_find_header(in_h, "Accept"), body, len, hs.model, &r, &status, msg,
	    sizeof(msg));
	if (code) {
		http_error_now(req, (enum proto_code)code, status, msg, 0);
		goto out;
	}
	if ((r.route == HTTP_R_MODELS || r.route == HTTP_R_MODEL) &&
	    (code = http_models_route(&r, hs.model)) != 0) { /* else the caller's documents: a job */
		o = code > 0 ? http_model(code == 2 ? HTTP_LIBRARY_MODEL : hs.model, hs.created) :
		    NULL;
		if ((body = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL))
			http_reply_now(req, 200, body, strlen(body), 0);
		else
			http_error_now(req, PROTO_E_INTERNAL, 500, "out of memory", 0);
		free(body);
		json_decref(o);
		goto out;
	}
	/* a bad name is refused now, not after the whole ingest */
	if (r.pr.op == PROTO_OP_INGEST && r.pr.name &&
	    svc_name_check(r.pr.name, msg, sizeof(msg))) {
		http_error_now(req, PROTO_E_BAD_REQUEST, 400, msg, 0);
		goto out;
	}
	if (r.pr.op == PROTO_OP_INGEST && !r.pr.source && !(r.pr.source = strdup("(HTTP)"))) {
		http_error_now(req, PROTO_E_INTERNAL, 500, "out of memory", 0);
		goto out;
	}
	http_submit(req, hc, fd, uid, &r);
out:
	if (!hc->cur)
		hconn_arm(hc); /* answered now: the next request's deadline */
	http_req_free(&r);
}

/* ------------------------------------------------------------------------ */
/* Start and stop (loop thread)                                              */

/* The model's name, as users know it: the GGUF file's name up to its
 * first dot ("SmolLM2-135M-Instruct"). */
static void
http_model_name(const struct daemon *d)
{
	const char *base = strrchr(d->cfg.model, '/');
	size_t n;
	base = base ? base + 1 : d->cfg.model;
	n = strcspn(base, ".");
	if (n >= sizeof(hs.model))
		n = sizeof(hs.model) - 1;
	memcpy(hs.model, base, n);
	hs.model[n] = '\0';
	if (!n)
		snprintf(hs.model, sizeof(hs.model), "kvsnap");
}

/* Who may call, in the log: the main socket's group (what socket-group
 * means) and the limit on descriptors. */
static int
http_start_admission(struct daemon *d, int listen_fd)
{
	struct sockaddr_un sa;
	socklen_t sl = sizeof(sa);
	struct stat sb;
	struct rlimit rl;
	struct group *g;
	char msg[512];

	if (http_allow_parse(d->cfg.http_allow ? d->cfg.http_allow : "socket-group", &hs.allow,
	    msg, sizeof(msg))) {
		dlog(DLOG_ERROR, "http-allow: %s", msg);
		return -1;
	}
	/* the group the socket's mode 0660 lets in; the daemon's own group
	 * when the socket has no path to look at */
	hs.sock_gid = getegid();
	memset(&sa, 0, sizeof(sa));
	if (!getsockname(listen_fd, (struct sockaddr *)&sa, &sl) && sa.sun_family == AF_UNIX &&
	    sa.sun_path[0] && !stat(sa.sun_path, &sb))
		hs.sock_gid = sb.st_gid;
	g = getgrgid(hs.sock_gid);
	if (hs.allow.any)
		dlog(DLOG_WARN, "HTTP callers: every local user (http-allow = any)");
	else
		dlog(DLOG_INFO, "HTTP callers: root, uid %d (this daemon)%s%s%s%s", (int)geteuid(),
		    hs.allow.socket_group ? ", members of group " : "",
		    hs.allow.socket_group ? (g ? g->gr_name : "?") : "",
		    hs.allow.socket_group ? " (the socket's group)" : "",
		    hs.allow.n_uids || hs.allow.n_gids ? ", and http-allow's users and groups" : "");
	hs.fd_limit = !getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < (rlim_t)(1 << 30) ?
	    (int)rl.rlim_cur : 1 << 30;
	hs.fd_room = hs.fd_limit - (hs.fd_limit / 8 > HTTP_FD_RESERVE ? hs.fd_limit / 8 :
	    HTTP_FD_RESERVE);
	if (!(hs.admit_ev = event_new(hs.base, -1, 0, http_admit_cb, NULL)) ||
	    !(hs.resume_ev = evtimer_new(hs.base, http_accept_resume, NULL))) {
		dlog(DLOG_ERROR, "cannot set up the HTTP server");
		return -1;
	}
	return 0;
}

int
http_start(struct daemon *d, struct event_base *base, int listen_fd)
{
	struct http_addr a;
	char msg[512], ip[INET6_ADDRSTRLEN];
	int fd;

	hs.d = d;
	hs.base = base;
	hs.created = (int64_t)time(NULL);
	if (http_addr_parse(d->cfg.http, &a, msg, sizeof(msg))) {
		dlog(DLOG_ERROR, "%s", msg);
		return -1;
	}
	http_model_name(d);
	if (!(hs.http = evhttp_new(base)) ||
	    loopq_open(&hposts, base)) {
		dlog(DLOG_ERROR, "cannot set up the HTTP server");
		return -1;
	}
	if (http_start_admission(d, listen_fd))
		return -1;
	evhttp_set_bevcb(hs.http, http_bev_cb, NULL);
	evhttp_set_gencb(hs.http, http_request_cb, NULL);
	evhttp_set_allowed_methods(hs.http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_DELETE);
	evhttp_set_max_body_size(hs.http, (ev_ssize_t)PROTO_LINE_MAX);
	evhttp_set_max_headers_size(hs.http, HTTP_HEADERS_MAX);
	/* reading a request, and a connection kept alive with none (off
	 * while a stream is written: hstream_timeouts) */
	hs.io_timeout.tv_sec = d->cfg.request_timeout > 0 ? d->cfg.request_timeout :
	    d->cfg.idle_timeout > 0 ? d->cfg.idle_timeout : 3600;
	evhttp_set_timeout_tv(hs.http, &hs.io_timeout);
	if (a.is_unix) {
		if ((fd = srv_listen(a.path)) < 0)
			return -1;
		if (!(hs.bound = evhttp_accept_socket_with_handle(hs.http, fd))) {
			close(fd);
			dlog(DLOG_ERROR, "cannot serve HTTP on %s", a.path);
			return -1;
		}
		snprintf(hs.unix_path, sizeof(hs.unix_path), "%s", a.path);
	} else {
		inet_ntop(a.family, a.ip, ip, sizeof(ip));
		if (!(hs.bound = evhttp_bind_socket_with_handle(hs.http, ip, a.port))) {
			dlog(DLOG_ERROR, "cannot listen for HTTP on %s port %u (in use?)", ip,
			    (unsigned)a.port);
			return -1;
		}
	}
	evconnlistener_set_error_cb(evhttp_bound_socket_get_listener(hs.bound),
	    http_accept_error_cb);
	dlog(DLOG_INFO, "HTTP (OpenAI-compatible) on %s, model \"%s\"", d->cfg.http, hs.model);
	return 0;
}

void
http_stop_accepting(void)
{
	if (hs.http && hs.bound)
		evhttp_del_accept_socket(hs.http, hs.bound); /* closes it */
	hs.bound = NULL;
	if (hs.resume_ev)
		evtimer_del(hs.resume_ev);
	if (hs.unix_path[0])
		unlink(hs.unix_path);
	hs.unix_path[0] = '\0';
}

int
http_pending(void)
{
	struct hconn *c;
	struct bufferevent *bev;
	if (loopq_pending(&hposts) || hs.n_open)
		return 1;
	for (c = hs.conns; c; c = c->next)
		if ((bev = evhttp_connection_get_bufferevent(c->evcon)) &&
		    evbuffer_get_length(bufferevent_get_output(bev)))
			return 1;
	return 0;
}

void
http_free(void)
{
	http_stop_accepting();
	if (hs.http)
		evhttp_free(hs.http); /* closes every connection: hconn_close_cb */
	hs.http = NULL;
	http_admit_cb(-1, 0, NULL); /* drops the references of any not yet admitted */
	if (hs.admit_ev)
		event_free(hs.admit_ev);
	if (hs.resume_ev)
		event_free(hs.resume_ev);
	hs.admit_ev = hs.resume_ev = NULL;
	free(hs.fresh);
	hs.fresh = NULL;
	hs.n_fresh = hs.cap_fresh = 0;
	loopq_close(&hposts);
}
