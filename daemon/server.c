/*
 * server.c: the event loop: the listening socket (created 0660 under a
 * restrictive umask, or handed over by systemd), connections, line framing
 * with limits, descriptors received with SCM_RIGHTS, request dispatch, and
 * the graceful stop on SIGTERM/SIGINT/SIGHUP.
 *
 * A connection reads with recvmsg() itself (a bufferevent's read() would
 * drop passed descriptors) into an evbuffer and writes through a
 * bufferevent that only the loop touches.  Workers do not write: they post
 * their events (conn_post) to one queue, first in first out, and wake the
 * loop (daemon/loop_queue.c, shared with http.c), which writes them out in that
 * order, so a job's events keep theirs.  A connection is refcounted: the
 * loop holds one reference while it is open, every job holds one and
 * every posted event holds one; closing marks it closed under its mutex
 * (posts and queued events for it are then dropped quietly) and cancels
 * its jobs, and the last unref frees the memory, on whichever thread drops
 * it.
 *
 * Nobody holds a slot for nothing (issue 15): one uid may hold at most
 * max-connections-per-user connections; a connection with no request and
 * no job in flight for idle-timeout seconds, or whose request line takes
 * longer than request-timeout to arrive, gets a `timeout` error event and
 * is closed (one timer per connection, armed for its next deadline).  A
 * client that shuts down its write side (half-close) still gets every
 * answer: end of stream cancels its jobs only when the peer is gone
 * altogether (POLLHUP), and the connection closes once they are answered.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <systemd/sd-daemon.h>

#include "daemon/daemon_internal.h"
#include "daemon/loop_queue.h"

#define SRV_READ_CHUNK 65536
#define SRV_STOP_GRACE_S 5 /* after the jobs ended, time to flush replies */
#define SRV_LOADING_MSG "kvsnapd is loading its model and store; try again in a moment"
/* A client that does not read its replies: stop reading its requests while
 * more than SRV_OUT_HIGH bytes wait to be sent, resume below SRV_OUT_LOW. */
#define SRV_OUT_HIGH ((size_t)4 << 20)
#define SRV_OUT_LOW ((size_t)64 << 10)
/* A closing connection whose client does not take its last events within
 * this many seconds is closed anyway (they are lost). */
#define SRV_CLOSE_GRACE_S 5.0
/* A half-closed client with jobs in flight: how often to check that it is
 * still there (POLLHUP), so that its queued jobs are dropped in time. */
#define SRV_HUP_CHECK_S 1.0

struct conn {
	pthread_mutex_t mu;
	int refs;                  /* under mu */
	int closed;                /* under mu: no more sends */
	int fd;
	uint64_t serial;
	pid_t pid;
	uid_t uid;
	gid_t gid;
	struct bufferevent *bev;   /* write side */
	struct event *rev;         /* read side: recvmsg */
	struct evbuffer *in;       /* bytes not yet framed */
	int fds[PROTO_FDS_PER_CONN]; /* passed descriptors, oldest first */
	int n_fds;
	int discarding;            /* inside an over-long line */
	int closing;               /* close once the output is flushed */
	int paused;                /* reading stopped: too much output waiting */
	int rd_eof;                /* half-closed: no more requests; answer, then close */
	const char *close_why;     /* for the log, when closing */
	double active_at;          /* accepted, last request line or last job end */
	double line_at;            /* first byte of the unfinished line; 0: none */
	double closing_at;         /* when closing began */
	struct event *tev;         /* the timer for the next deadline */
	atomic_int jobs;           /* jobs in flight */
	struct conn *prev, *next;  /* the loop's list */
};

/* An event line posted by a worker, waiting for the loop (an empty one:
 * conn_job_done's marker). */
struct post {
	struct loopq_item q;       /* first: the queue's link */
	struct conn *c;            /* a reference */
	size_t len;
	char line[];
};

static void post_run(struct loopq_item *it);
/* The queue workers post to (lock order: a connection's mu, then its). */
static struct loopq posts = LOOPQ_INIT(post_run);

static struct {
	struct daemon *d;
	struct event_base *base;
	struct evconnlistener *lis;
	struct event *sig_term, *sig_int, *sig_hup, *stop_timer;
	struct conn *conns;
	int n_conns;
	uint64_t serial;
	double stop_started;
	int stop_flushing;
	int spare_fd;              /* the descriptor held back for EMFILE (below), or -1 */
	long fd_refused;           /* connections refused in this burst of EMFILE */
	/* the load (srv_run): its thread, and the event it wakes the loop with */
	int (*load)(struct daemon *d);
	pthread_t loader;
	int loader_live;
	atomic_int load_rc;
	struct event *loaded_ev;
	int load_failed;
} srv;

/* Monotonic seconds. */

static void conn_jobs_ended(struct conn *c);

/* ------------------------------------------------------------------------ */
/* References and sending (any thread)                                       */

void
conn_ref(struct conn *c)
{
	pthread_mutex_lock(&c->mu);
	c->refs++;
	pthread_mutex_unlock(&c->mu);
}

void
conn_unref(struct conn *c)
{
	if (loopq_unref(&c->mu, &c->refs)) {
		pthread_mutex_destroy(&c->mu);
		free(c);
	}
}

/* Write an event line to the client (loop thread).  -1 if it is gone. */
static int
conn_send(struct conn *c, const char *line, size_t len)
{
	if (c->closed || !c->bev)
		return -1;
	return bufferevent_write(c->bev, line, len);
}

int
conn_post(struct conn *c, const char *line, size_t len)
{
	struct post *p = malloc(sizeof(*p) + len);

	if (!p)
		return -1;
	p->c = c;
	p->len = len;
	if (len)
		memcpy(p->line, line, len);
	/* the post holds a reference to c until post_run */
	if (loopq_push_ref(&posts, &p->q, &c->mu, &c->refs, &c->closed)) {
		free(p);
		return -1;
	}
	return 0;
}

/* A posted event, written out (loop thread; the queue keeps their order). */
static void
post_run(struct loopq_item *it)
{
	struct post *p = (struct post *)it;
	if (p->len)
		conn_send(p->c, p->line, p->len);
	else
		conn_jobs_ended(p->c); /* conn_job_done's marker */
	conn_unref(p->c);
	free(p);
}

uint64_t
conn_serial(const struct conn *c)
{
	return c->serial;
}

void
conn_job_done(struct conn *c)
{
	/* the last one: an empty post tells the loop (after the job's events:
	 * the queue keeps order), which restarts the idle clock or closes a
	 * half-closed connection */
	if (atomic_fetch_sub(&c->jobs, 1) == 1)
		conn_post(c, NULL, 0);
}

/* The socket front end's job sink: each reply as a protocol event line,
 * posted to the loop. */
static void
conn_sink_event(struct job *j, const char *event, json_t *body)
{
	size_t n;
	char *line = proto_event(j->req.id, event, body, &n);
	if (line) {
		conn_post(j->owner, line, n);
		free(line);
	}
}

static void
conn_sink_error(struct job *j, enum proto_code code, const char *msg)
{
	size_t n;
	char *line = proto_error(j->req.id, code, msg, &n);
	if (line) {
		conn_post(j->owner, line, n);
		free(line);
	}
}

static void
conn_sink_release(struct job *j)
{
	conn_job_done(j->owner);
	conn_unref(j->owner);
}

static const struct job_sink conn_sink = { conn_sink_event, conn_sink_error, conn_sink_release };

/* Send an error event from the loop. */
static void
conn_send_error(struct conn *c, const json_t *id, enum proto_code code, const char *msg)
{
	size_t n;
	char *line = proto_error(id, code, msg, &n);
	if (line) {
		conn_send(c, line, n);
		free(line);
	}
}

/* ------------------------------------------------------------------------ */
/* Closing (loop thread)                                                     */

static void
conn_close(struct conn *c, const char *why)
{
	struct bufferevent *bev;
	int i;

	dlog(DLOG_INFO, "conn %llu: closed (%s)", (unsigned long long)c->serial, why);
	pthread_mutex_lock(&c->mu);
	c->closed = 1;
	bev = c->bev;
	c->bev = NULL;
	pthread_mutex_unlock(&c->mu);
	jobs_cancel_owner(c); /* a client that leaves cancels its jobs */
	if (c->rev)
		event_free(c->rev);
	c->rev = NULL;
	if (c->tev)
		event_free(c->tev);
	c->tev = NULL;
	if (bev)
		bufferevent_free(bev); /* closes fd */
	evbuffer_free(c->in);
	c->in = NULL;
	for (i = 0; i < c->n_fds; i++)
		close(c->fds[i]);
	c->n_fds = 0;
	if (c->prev)
		c->prev->next = c->next;
	else
		srv.conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	srv.n_conns--;
	conn_unref(c);
}

static void conn_frame(struct conn *c);

/* Too much output waiting for this client? (loop thread) */
static int
conn_out_full(struct conn *c)
{
	return c->bev && evbuffer_get_length(bufferevent_get_output(c->bev)) > SRV_OUT_HIGH;
}

/* Output down to the low watermark: close if we were waiting for that,
 * resume reading if it was paused. */
static void
conn_write_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	(void)bev;
	if (c->closing) {
		if (!evbuffer_get_length(bufferevent_get_output(c->bev)))
			conn_close(c, c->close_why);
		return;
	}
	if (c->paused && !c->rd_eof) {
		c->paused = 0;
		event_add(c->rev, NULL);
		conn_frame(c);
	}
}

static void
conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	if (what & (BEV_EVENT_ERROR | BEV_EVENT_EOF))
		conn_close(arg, "write error");
}

/* ------------------------------------------------------------------------ */
/* Deadlines and half-close (loop thread)                                    */

/* Arm the connection's timer for its next deadline (or none). */
static void
conn_arm(struct conn *c)
{
	const struct dcfg *cfg = &srv.d->cfg;
	double now = svc_now(), due = 0, t;
	struct timeval tv;

	if (c->closed || !c->tev)
		return;
	if (c->closing) {
		due = c->closing_at + SRV_CLOSE_GRACE_S;
	} else if (c->rd_eof) {
		due = now + SRV_HUP_CHECK_S;
	} else {
		if (cfg->idle_timeout > 0) /* with jobs in flight: look again later */
			due = (atomic_load(&c->jobs) ? now : c->active_at) + (double)cfg->idle_timeout;
		t = c->line_at + (double)cfg->request_timeout;
		if (cfg->request_timeout > 0 && c->line_at > 0 && !c->paused && (!due || t < due))
			due = t;
	}
	if (!due) {
		event_del(c->tev);
		return;
	}
	t = due > now ? due - now : 0;
	tv.tv_sec = (time_t)t;
	tv.tv_usec = (suseconds_t)((t - (double)tv.tv_sec) * 1e6) + 1000; /* never early */
	event_add(c->tev, &tv);
}

/* Close once every event already written has left (the client reads it
 * first), within SRV_CLOSE_GRACE_S. */
static void
conn_finish(struct conn *c, const char *why)
{
	c->closing = 1;
	c->close_why = why;
	c->closing_at = svc_now();
	if (c->rev)
		event_del(c->rev);
	if (!c->bev || !evbuffer_get_length(bufferevent_get_output(c->bev))) {
		conn_close(c, why);
		return;
	}
	bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0); /* the write callback at empty */
	conn_arm(c);
}

/* The peer closed its socket altogether (not only its write side)? */
static int
conn_peer_gone(struct conn *c)
{
	struct pollfd p = { .fd = c->fd, .events = POLLOUT };
	return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR));
}

static void
conn_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	const struct dcfg *cfg = &srv.d->cfg;
	struct conn *c = arg;
	double now = svc_now();
	char msg[160];

	(void)fd;
	(void)what;
	if (c->closing) {
		conn_close(c, "its last events were not taken in time");
		return;
	}
	if (c->rd_eof) {
		if (conn_peer_gone(c)) {
			conn_close(c, "client gone after half-closing");
			return;
		}
		if (!atomic_load(&c->jobs)) { /* conn_job_done's post was lost (memory) */
			conn_finish(c, "half-closed; every request answered");
			return;
		}
	} else if (cfg->request_timeout > 0 && c->line_at > 0 && !c->paused &&
	    now >= c->line_at + (double)cfg->request_timeout) {
		snprintf(msg, sizeof(msg), "a request line took over %ld s to arrive "
		    "(--request-timeout); closing", cfg->request_timeout);
		goto timeout;
	} else if (cfg->idle_timeout > 0 && !atomic_load(&c->jobs) &&
	    now >= c->active_at + (double)cfg->idle_timeout) {
		snprintf(msg, sizeof(msg), "no request for %ld s (--idle-timeout); closing",
		    cfg->idle_timeout);
		goto timeout;
	}
	conn_arm(c);
	return;
timeout:
	dlog(DLOG_INFO, "conn %llu (uid %d): %s", (unsigned long long)c->serial, (int)c->uid, msg);
	conn_send_error(c, NULL, PROTO_E_TIMEOUT, msg);
	conn_finish(c, "timeout");
}

/* The connection's last job ended (its events are written). */
static void
conn_jobs_ended(struct conn *c)
{
	if (c->closed || c->closing)
		return;
	c->active_at = svc_now();
	if (c->rd_eof && !atomic_load(&c->jobs))
		conn_finish(c, "half-closed; every request answered");
	else
		conn_arm(c);
}

/* End of stream.  A client that only shut down its write side still
 * reads: its jobs run and are answered, then the connection closes.  One
 * that closed altogether (POLLHUP) cancels them, as before. */
static void
conn_eof(struct conn *c)
{
	if (conn_peer_gone(c)) {
		conn_close(c, "end of stream");
		return;
	}
	event_del(c->rev);
	c->rd_eof = 1;
	if (!c->discarding && evbuffer_get_length(c->in))
		conn_send_error(c, NULL, PROTO_E_BAD_REQUEST,
		    "the stream ended inside a request line (no newline); it was dropped");
	evbuffer_drain(c->in, evbuffer_get_length(c->in));
	c->line_at = 0;
	if (!atomic_load(&c->jobs)) {
		conn_finish(c, "end of stream");
		return;
	}
	dlog(DLOG_DEBUG, "conn %llu: half-closed; answering its requests, then closing",
	    (unsigned long long)c->serial);
	conn_arm(c);
}

/* ------------------------------------------------------------------------ */
/* Requests                                                                  */

/* The hello reply: who we are. */
static void
conn_hello(struct conn *c, const struct proto_req *r)
{
	struct daemon *d = srv.d;
	size_t n;
	char *line;
	json_t *b = json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:I, s:f, s:I, s:s, s:i}",
	    "protocol", PROTO_VERSION, "server", "kvsnapd " KVSNAP_VERSION, "model",
	    svc_model_fingerprint(d->v), "profile", svc_profile_text(d->v), "profile_id",
	    svc_profile_hex(d->v), "policy", d->cfg.policy, "budget", (json_int_t)d->cfg.budget,
	    "ratio", d->cfg.ratio, "chunk", (json_int_t)d->cfg.chunk, "quant",
	    svc_quant_name(svc_profile_quant(d->v)), "workers", (int)d->cfg.workers);
	if (b && svc_has_tier(d->v)) /* the shared tier: where, and whether it answers */
		json_object_set_new(b, "shared", job_tier_json(0));
	if ((line = proto_event(r->id, "result", b, &n))) {
		conn_send(c, line, n);
		free(line);
	}
}

static enum job_kind
conn_kind(enum proto_op op)
{
	switch (op) {
	case PROTO_OP_INGEST: return JOB_INGEST;
	case PROTO_OP_QUERY: return JOB_QUERY;
	case PROTO_OP_CHAT: return JOB_QUERY; /* HTTP only: never parsed from a line */
	case PROTO_OP_HELLO:
	case PROTO_OP_CANCEL:
	case PROTO_OP_HAS:
	case PROTO_OP_LS:
	case PROTO_OP_INFO:
	case PROTO_OP_RM:
	case PROTO_OP_STATS:
	case PROTO_OP_VERIFY:
	case PROTO_OP_PRUNE:
	case PROTO_OP_SHRINK: /* no model run: the store's worker */
	case PROTO_OP_MODELS: /* HTTP only */
	case PROTO_OP_SEARCH: /* the text index, no model */
		break;
	}
	return JOB_ADMIN;
}

/* One complete request line. */
static void
conn_line(struct conn *c, const char *line, size_t len)
{
	struct proto_req r;
	struct job *j;
	char msg[512];
	size_t n;
	char *out;
	int code, fd = -1;

	code = proto_parse(line, len, &r, msg, sizeof(msg));
	if (code) {
		dlog(DLOG_DEBUG, "conn %llu: bad request: %s", (unsigned long long)c->serial, msg);
		conn_send_error(c, r.id, code, msg);
		proto_req_free(&r);
		return;
	}
	dlog(DLOG_DEBUG, "conn %llu: %s", (unsigned long long)c->serial, proto_op_name(r.op));
	if (r.op == PROTO_OP_HELLO && !atomic_load(&srv.d->ready)) {
		conn_send_error(c, r.id, PROTO_E_LOADING, SRV_LOADING_MSG);
		goto out;
	}
	if (r.op == PROTO_OP_HELLO) {
		conn_hello(c, &r);
		goto out;
	}
	if (r.op == PROTO_OP_CANCEL) {
		int found = jobs_cancel_id(c, r.target);
		if ((out = proto_event(r.id, "result", json_pack("{s:b}", "cancelled", found), &n))) {
			conn_send(c, out, n);
			free(out);
		}
		goto out;
	}
	if ((r.op == PROTO_OP_INGEST || r.op == PROTO_OP_QUERY) && r.use_fd) {
		if (!c->n_fds) {
			conn_send_error(c, r.id, PROTO_E_NO_FD,
			    "\"fd\":true but no descriptor came with the request (SCM_RIGHTS)");
			goto out;
		}
		fd = c->fds[0];
		memmove(c->fds, c->fds + 1, (size_t)(--c->n_fds) * sizeof(int));
	}
	/* a bad name is refused now, not after the whole ingest */
	if (r.op == PROTO_OP_INGEST && r.name && svc_name_check(r.name, msg, sizeof(msg))) {
		conn_send_error(c, r.id, PROTO_E_BAD_REQUEST, msg);
		goto out;
	}
	if (atomic_load(&srv.d->stopping)) {
		conn_send_error(c, r.id, PROTO_E_SHUTTING_DOWN, "the daemon is stopping");
		goto out;
	}
	/* after the descriptor is taken: it goes with this request, refused */
	if (!atomic_load(&srv.d->ready)) {
		conn_send_error(c, r.id, PROTO_E_LOADING, SRV_LOADING_MSG);
		goto out;
	}
	if (atomic_load(&c->jobs) >= PROTO_JOBS_PER_CONN) {
		snprintf(msg, sizeof(msg), "over %d requests in flight on one connection",
		    PROTO_JOBS_PER_CONN);
		conn_send_error(c, r.id, PROTO_E_BUSY, msg);
		goto out;
	}
	if (!(j = calloc(1, sizeof(*j)))) {
		conn_send_error(c, r.id, PROTO_E_INTERNAL, "out of memory");
		goto out;
	}
	j->kind = conn_kind(r.op);
	j->req = r; /* the job owns the request now */
	memset(&r, 0, sizeof(r));
	j->fd = fd;
	fd = -1;
	j->sink = &conn_sink;
	j->owner = c;
	snprintf(j->label, sizeof(j->label), "conn %llu", (unsigned long long)c->serial);
	j->who.uid = (uint32_t)c->uid;
	j->who.all = c->uid == 0 || c->uid == geteuid(); /* root and the service user */
	conn_ref(c);
	atomic_fetch_add(&c->jobs, 1);
	if ((code = jobs_submit(j))) {
		conn_send_error(c, j->req.id, code, code == PROTO_E_BUSY ?
		    "the job queue is full; try again later" : "the daemon is stopping");
		job_free(j); /* conn_job_done included */
	}
out:
	if (fd >= 0)
		close(fd);
	proto_req_free(&r);
}

/* Frame whatever is buffered into lines. */
static void
conn_frame_lines(struct conn *c)
{
	struct evbuffer_ptr p;
	size_t have, n;
	char *line;

	while (c->in && !c->closing && (have = evbuffer_get_length(c->in)) > 0) {
		if (conn_out_full(c)) {
			/* the client does not read: stop reading it until it does */
			dlog(DLOG_DEBUG, "conn %llu: output backlog; reading paused",
			    (unsigned long long)c->serial);
			c->paused = 1;
			event_del(c->rev);
			return;
		}
		p = evbuffer_search(c->in, "\n", 1, NULL);
		if (c->discarding) {
			if (p.pos < 0) {
				evbuffer_drain(c->in, have);
				return;
			}
			evbuffer_drain(c->in, (size_t)p.pos + 1);
			c->discarding = 0;
			c->line_at = 0;
			continue;
		}
		if (p.pos < 0) {
			if (have > PROTO_LINE_MAX) {
				char msg[128];
				snprintf(msg, sizeof(msg), "request line over %zu bytes", PROTO_LINE_MAX);
				conn_send_error(c, NULL, PROTO_E_LINE_TOO_LONG, msg);
				evbuffer_drain(c->in, have);
				c->discarding = 1; /* until the end of this line */
			}
			return;
		}
		n = (size_t)p.pos;
		c->line_at = 0; /* a line ended (even one refused) */
		if (n > PROTO_LINE_MAX) {
			char msg[128];
			snprintf(msg, sizeof(msg), "request line over %zu bytes", PROTO_LINE_MAX);
			conn_send_error(c, NULL, PROTO_E_LINE_TOO_LONG, msg);
			evbuffer_drain(c->in, n + 1);
			continue;
		}
		if (!(line = malloc(n + 1))) {
			conn_send_error(c, NULL, PROTO_E_INTERNAL, "out of memory");
			evbuffer_drain(c->in, n + 1);
			continue;
		}
		evbuffer_remove(c->in, line, n + 1);
		c->line_at = 0;
		c->active_at = svc_now();
		line[n] = '\0';
		if (n && line[n - 1] == '\r')
			line[--n] = '\0';
		if (n)
			conn_line(c, line, n);
		free(line);
	}
}

/* Frame lines, then the deadlines: the request timeout runs from the
 * first byte of an unfinished line. */
static void
conn_frame(struct conn *c)
{
	conn_frame_lines(c);
	if (c->closed || c->closing || !c->in)
		return;
	if (evbuffer_get_length(c->in) || c->discarding) {
		if (!c->line_at)
			c->line_at = svc_now();
	} else {
		c->line_at = 0;
	}
	conn_arm(c);
}

/* Readable: recvmsg, keep passed descriptors, frame lines. */
static void
conn_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	char buf[SRV_READ_CHUNK];
	union {
		char b[CMSG_SPACE(sizeof(int) * PROTO_FDS_PER_CONN * 2)];
		struct cmsghdr align;
	} cm;
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr mh;
	struct cmsghdr *h;
	ssize_t n;
	int extra = 0;

	(void)what;
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cm.b;
	mh.msg_controllen = sizeof(cm.b);
	n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return;
		conn_close(c, strerror(errno));
		return;
	}
	for (h = CMSG_FIRSTHDR(&mh); h; h = CMSG_NXTHDR(&mh, h)) {
		int *fds, k, nf;
		if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
			continue;
		fds = (int *)(void *)CMSG_DATA(h);
		nf = (int)((h->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (k = 0; k < nf; k++) {
			if (c->n_fds < PROTO_FDS_PER_CONN)
				c->fds[c->n_fds++] = fds[k];
			else {
				close(fds[k]);
				extra = 1;
			}
		}
	}
	if (extra || (mh.msg_flags & MSG_CTRUNC))
		conn_send_error(c, NULL, PROTO_E_BUSY,
		    "too many unclaimed descriptors on this connection; extra ones were closed");
	if (n == 0) {
		conn_eof(c);
		return;
	}
	evbuffer_add(c->in, buf, (size_t)n);
	conn_frame(c);
}

/* ------------------------------------------------------------------------ */
/* Accepting                                                                 */

/* Refuse a connection: the reason as an error event, then close. */
static void
srv_refuse(int fd, const struct ucred *cr, const char *msg)
{
	size_t n;
	char *line = proto_error(NULL, PROTO_E_TOO_MANY_CONNS, msg, &n);
	dlog(DLOG_WARN, "refused a connection from pid %d uid %d: %s", (int)cr->pid, (int)cr->uid,
	    msg);
	if (line && send(fd, line, n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* the refusal is best effort */
	}
	free(line);
	close(fd);
}

static void
srv_accept_cb(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa, int salen,
    void *arg)
{
	struct ucred cr;
	socklen_t crlen = sizeof(cr);
	struct conn *c;
	char msg[160];
	int mine = 0;

	(void)lis;
	(void)sa;
	(void)salen;
	(void)arg;
	if (srv.fd_refused) {
		dlog(DLOG_WARN, "accepting again: descriptors are free; %ld connection%s refused "
		    "while there were none", srv.fd_refused, srv.fd_refused == 1 ? " was" : "s were");
		srv.fd_refused = 0;
	}
	memset(&cr, 0, sizeof(cr));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen)) {
		cr.pid = -1; /* unknown peers share one uid's cap */
		cr.uid = (uid_t)-1;
		cr.gid = (gid_t)-1;
	}
	srv.serial++;
	for (c = srv.conns; c; c = c->next)
		mine += c->uid == cr.uid;
	if (srv.n_conns >= srv.d->cfg.max_conns) {
		snprintf(msg, sizeof(msg), "too many connections (%d open, --max-connections %ld)",
		    srv.n_conns, srv.d->cfg.max_conns);
		srv_refuse(fd, &cr, msg);
		return;
	}
	if (mine >= srv.d->cfg.max_conns_user) {
		snprintf(msg, sizeof(msg), "too many connections from uid %d (%d open, "
		    "--max-connections-per-user %ld)", (int)cr.uid, mine, srv.d->cfg.max_conns_user);
		srv_refuse(fd, &cr, msg);
		return;
	}
	if (!(c = calloc(1, sizeof(*c)))) {
		close(fd);
		return;
	}
	pthread_mutex_init(&c->mu, NULL);
	c->refs = 1;
	c->fd = fd;
	c->serial = srv.serial;
	c->pid = cr.pid;
	c->uid = cr.uid;
	c->gid = cr.gid;
	c->in = evbuffer_new();
	c->bev = bufferevent_socket_new(srv.base, fd, BEV_OPT_CLOSE_ON_FREE);
	c->rev = event_new(srv.base, fd, EV_READ | EV_PERSIST, conn_read_cb, c);
	c->tev = evtimer_new(srv.base, conn_timer_cb, c);
	c->active_at = svc_now();
	if (!c->in || !c->bev || !c->rev || !c->tev) {
		if (c->bev)
			bufferevent_free(c->bev);
		else
			close(fd);
		if (c->rev)
			event_free(c->rev);
		if (c->tev)
			event_free(c->tev);
		if (c->in)
			evbuffer_free(c->in);
		free(c);
		return;
	}
	bufferevent_setcb(c->bev, NULL, conn_write_cb, conn_event_cb, c);
	bufferevent_setwatermark(c->bev, EV_WRITE, SRV_OUT_LOW, 0);
	bufferevent_disable(c->bev, EV_READ);
	bufferevent_enable(c->bev, EV_WRITE);
	event_add(c->rev, NULL);
	c->next = srv.conns;
	if (srv.conns)
		srv.conns->prev = c;
	srv.conns = c;
	srv.n_conns++;
	conn_arm(c);
	dlog(DLOG_INFO, "conn %llu: from pid %d uid %d gid %d", (unsigned long long)c->serial,
	    (int)cr.pid, (int)cr.uid, (int)cr.gid);
}

/* Accept again after a pause for descriptors. */
static void
srv_accept_resume(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	if (srv.lis)
		evconnlistener_enable(srv.lis);
}

/* The descriptor held back for EMFILE (a read-only /dev/null), or -1. */
static int
srv_spare_open(void)
{
	return open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/* Out of descriptors (EMFILE, ENFILE), the connections waiting in the
 * listen queue are told so and closed, one at a time through the spare
 * descriptor (given up to accept one, taken again after), as nginx and
 * libev do: otherwise they would wait unanswered while the loop either
 * spins on accept's error (the socket stays readable) or pauses.  One log
 * line when a burst starts and one when accepting works again (with the
 * count).  Returns 0 when the queue is drained, -1 when the spare is gone
 * (another thread took the descriptor): the caller pauses instead. */
static int
srv_accept_refuse_all(struct evconnlistener *lis, int e)
{
	evutil_socket_t lfd = evconnlistener_get_fd(lis);
	char msg[200];
	struct rlimit rl;
	size_t n;
	char *line;
	int fd, ae;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		snprintf(msg, sizeof(msg), "kvsnapd is out of file descriptors (%s, its limit %llu: "
		    "ulimit -n, LimitNOFILE=); try again later", strerror(e),
		    (unsigned long long)rl.rlim_cur);
	else
		snprintf(msg, sizeof(msg), "kvsnapd is out of file descriptors (%s); try again later",
		    strerror(e));
	while (srv.spare_fd >= 0) {
		close(srv.spare_fd);
		srv.spare_fd = -1;
		if ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0) {
			ae = errno;
			srv.spare_fd = srv_spare_open();
			/* drained (EAGAIN), or that one gone meanwhile; else pause */
			return srv.spare_fd >= 0 && ae != EMFILE && ae != ENFILE ? 0 : -1;
		}
		if (srv.fd_refused++ == 0)
			dlog(DLOG_WARN, "accept: %s: refusing new connections with an error until "
			    "descriptors are free (%s)", strerror(e), msg);
		if ((line = proto_error(NULL, PROTO_E_TOO_MANY_CONNS, msg, &n)) &&
		    send(fd, line, n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
			/* the refusal is best effort */
		}
		free(line);
		close(fd);
		srv.spare_fd = srv_spare_open(); /* the slot fd had */
	}
	return -1;
}

static void
srv_accept_error_cb(struct evconnlistener *lis, void *arg)
{
	static struct dlog_limit lim; /* a line per 10 s, not one per pause */
	int e = EVUTIL_SOCKET_ERROR();
	(void)arg;
	if ((e == EMFILE || e == ENFILE) && srv_accept_refuse_all(lis, e) == 0)
		return;
	dlog_limited(&lim, DLOG_WARN, "accept: %s", evutil_socket_error_to_string(e));
	if (e == EMFILE || e == ENFILE) {
		/* no spare descriptor: pause accepting for a moment */
		struct timeval tv = { 1, 0 };
		evconnlistener_disable(lis);
		event_base_once(srv.base, -1, EV_TIMEOUT, srv_accept_resume, NULL, &tv);
	}
}

/* ------------------------------------------------------------------------ */
/* Listening socket                                                          */

int
srv_listen(const char *path)
{
	struct sockaddr_un sa;
	struct stat sb;
	mode_t old;
	int fd, saved;
	char dir[sizeof(sa.sun_path)], *slash;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		dlog(DLOG_ERROR, "socket path too long (%zu bytes, at most %zu): %s", strlen(path),
		    sizeof(sa.sun_path) - 1, path);
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	/* the parent directory (e.g. $XDG_RUNTIME_DIR/kvsnap) if missing */
	memcpy(dir, path, strlen(path) + 1);
	if ((slash = strrchr(dir, '/')) && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0750) && errno != EEXIST) {
			dlog(DLOG_ERROR, "cannot create %s: %s", dir, strerror(errno));
			return -1;
		}
	}
	if (!lstat(path, &sb)) {
		/* unlink only a socket nobody answers on */
		if (!S_ISSOCK(sb.st_mode)) {
			dlog(DLOG_ERROR, "%s exists and is not a socket", path);
			return -1;
		}
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && !connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
			close(fd);
			dlog(DLOG_ERROR, "another kvsnapd is listening on %s", path);
			return -1;
		}
		if (fd >= 0)
			close(fd);
		unlink(path);
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0) {
		dlog(DLOG_ERROR, "socket: %s", strerror(errno));
		return -1;
	}
	old = umask(0117); /* the socket comes out 0660 */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 64)) {
		saved = errno;
		umask(old);
		close(fd);
		dlog(DLOG_ERROR, "cannot listen on %s: %s", path, strerror(saved));
		return -1;
	}
	umask(old);
	chmod(path, 0660);
	return fd;
}

/* ------------------------------------------------------------------------ */
/* Stopping                                                                  */

/* Every 100 ms while stopping: once no job runs, flush replies, then exit. */
static void
srv_stop_tick(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c;
	int pending = 0;
	(void)fd;
	(void)what;
	(void)arg;
	if (jobs_busy() || loopq_pending(&posts) || (srv.d->cfg.http && http_pending()))
		return;
	for (c = srv.conns; c; c = c->next)
		if (c->bev && evbuffer_get_length(bufferevent_get_output(c->bev)))
			pending = 1;
	if (!pending || srv.stop_flushing++ > SRV_STOP_GRACE_S * 10) {
		dlog(DLOG_INFO, "stopped");
		event_base_loopexit(srv.base, NULL);
	}
}

static void
srv_signal_cb(evutil_socket_t sig, short what, void *arg)
{
	struct timeval tv = { 0, 100000 };
	(void)what;
	(void)arg;
	if (atomic_load(&srv.d->stopping)) {
		dlog(DLOG_WARN, "signal %d again: stopping now", (int)sig);
		main_stop_now(); /* not the loop's exit: main would join busy workers */
	}
	if (!atomic_load(&srv.d->ready)) {
		/* nothing runs and nothing is stored yet; the load itself (a
		 * model's pages, a store's lock) cannot be interrupted: exit */
		dlog(DLOG_INFO, "signal %d while loading: stopped", (int)sig);
		if (srv.d->cfg.http)
			http_stop_accepting(); /* removes its socket file */
		main_stop_now();
	}
	dlog(DLOG_INFO, "signal %d: no new connections; abandoning ingests, finishing queries",
	    (int)sig);
	atomic_store(&srv.d->stopping, 1);
	sd_notify(0, "STOPPING=1");
	if (srv.lis) {
		evconnlistener_free(srv.lis); /* closes the listening socket */
		srv.lis = NULL;
	}
	if (srv.d->cfg.http)
		http_stop_accepting();
	jobs_stop();
	srv.stop_timer = event_new(srv.base, -1, EV_PERSIST, srv_stop_tick, NULL);
	if (srv.stop_timer)
		event_add(srv.stop_timer, &tv);
	else
		event_base_loopexit(srv.base, NULL);
}

/* ------------------------------------------------------------------------ */
/* Loading                                                                   */

/* The loader thread: the model, the store and the workers, while the loop
 * already answers (`loading`, /health). */
static void *
srv_load_thread(void *arg)
{
	(void)arg;
	atomic_store(&srv.load_rc, srv.load(srv.d));
	event_active(srv.loaded_ev, 0, 0);
	return NULL;
}

/* The load ended (loop thread): serve, or stop with its failure. */
static void
srv_loaded_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	pthread_join(srv.loader, NULL); /* d->v and the workers are now the loop's to see */
	srv.loader_live = 0;
	if (atomic_load(&srv.load_rc)) {
		srv.load_failed = 1; /* the reason is logged */
		event_base_loopexit(srv.base, NULL);
		return;
	}
	atomic_store(&srv.d->ready, 1);
	sd_notify(0, "READY=1\nSTATUS=ready");
	dlog(DLOG_INFO, "ready");
}

/* ------------------------------------------------------------------------ */
/* The loop                                                                  */

int
srv_run(struct daemon *d, int listen_fd, int (*load)(struct daemon *d))
{
	int rc = -1, posts_ok;

	memset(&srv, 0, sizeof(srv));
	srv.d = d;
	srv.load = load;
	if ((srv.spare_fd = srv_spare_open()) < 0)
		dlog(DLOG_WARN, "cannot hold a spare descriptor (%s): out of descriptors, accepting "
		    "will pause instead of refusing with an error", strerror(errno));
	if (!(srv.base = event_base_new())) {
		dlog(DLOG_ERROR, "event_base_new failed");
		goto out;
	}
	srv.lis = evconnlistener_new(srv.base, srv_accept_cb, NULL,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, listen_fd);
	srv.sig_term = evsignal_new(srv.base, SIGTERM, srv_signal_cb, NULL);
	srv.sig_int = evsignal_new(srv.base, SIGINT, srv_signal_cb, NULL);
	/* SIGHUP drains too (no reload: docs/PROTOCOL.md "Stopping"); its
	 * default action would kill us mid-reply */
	srv.sig_hup = evsignal_new(srv.base, SIGHUP, srv_signal_cb, NULL);
	posts_ok = loopq_open(&posts, srv.base) == 0;
	srv.loaded_ev = event_new(srv.base, -1, 0, srv_loaded_cb, NULL);
	if (!srv.lis || !srv.sig_term || !srv.sig_int || !srv.sig_hup || !posts_ok ||
	    !srv.loaded_ev) {
		dlog(DLOG_ERROR, "cannot set up the event loop");
		goto out;
	}
	evconnlistener_set_error_cb(srv.lis, srv_accept_error_cb);
	if (d->cfg.http && http_start(d, srv.base, listen_fd))
		goto out;
	event_add(srv.sig_term, NULL);
	event_add(srv.sig_int, NULL);
	event_add(srv.sig_hup, NULL);
	/* listening already: /health says "loading", requests get `loading`,
	 * and READY=1 waits for the load (srv_loaded_cb) */
	sd_notify(0, "STATUS=loading the model and the store");
	dlog(DLOG_INFO, "loading the model and the store");
	if (pthread_create(&srv.loader, NULL, srv_load_thread, NULL)) {
		dlog(DLOG_ERROR, "cannot start the loading thread");
		goto out;
	}
	srv.loader_live = 1;
	rc = event_base_dispatch(srv.base) < 0 || srv.load_failed ? -1 : 0;
out:
	if (srv.loader_live) /* the loop failed while loading: let the load end first */
		pthread_join(srv.loader, NULL);
	while (srv.conns)
		conn_close(srv.conns, "daemon stopping");
	if (d->cfg.http)
		http_free();
	/* every connection is closed: what is still queued goes nowhere, and
	 * workers still running post no more */
	loopq_close(&posts);
	if (srv.lis)
		evconnlistener_free(srv.lis);
	if (srv.stop_timer)
		event_free(srv.stop_timer);
	if (srv.loaded_ev)
		event_free(srv.loaded_ev);
	if (srv.sig_term)
		event_free(srv.sig_term);
	if (srv.sig_int)
		event_free(srv.sig_int);
	if (srv.sig_hup)
		event_free(srv.sig_hup);
	if (srv.base)
		event_base_free(srv.base);
	if (srv.spare_fd >= 0)
		close(srv.spare_fd);
	return rc;
}
