/*
 * client_proto.c: the client side of kvsnapd's protocol (docs/PROTOCOL.md):
 * find and connect to the socket, send one request line (with a file
 * descriptor attached by SCM_RIGHTS when asked), read event lines back and
 * parse them (jansson), and map the daemon's error codes to exit codes.
 * When the daemon answers and closes (a refusal: too many connections, a
 * timeout), its reason is printed rather than the failed write's errno.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "clients/cli.h"

#define CLI_EVENT_MAX ((size_t)16 << 20) /* longest event line we accept */

const char *
cli_socket_path(const char *flag)
{
	static char buf[PATH_MAX];
	const char *e;
	if (flag && *flag)
		return flag;
	if ((e = getenv("KVSNAP_SOCKET")) && *e)
		return e;
	if ((e = getenv("XDG_RUNTIME_DIR")) && *e) {
		snprintf(buf, sizeof(buf), "%s/kvsnap/kvsnapd.sock", e);
		return buf;
	}
	return "/run/kvsnap/kvsnapd.sock";
}

int
cli_conn_open(struct cli_conn *c, const char *path)
{
	struct sockaddr_un sa;
	int saved;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		cli_err("socket path too long: %s", path);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if ((c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    connect(c->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		saved = errno;
		cli_err("cannot reach kvsnapd at %s: %s (is the daemon running? -s SOCK or "
		    "$KVSNAP_SOCKET pick the socket; --local works without it)", path,
		    strerror(saved));
		if (c->fd >= 0)
			close(c->fd);
		c->fd = -1;
		return -1;
	}
	return 0;
}

void
cli_conn_close(struct cli_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->buf);
	c->buf = NULL;
	c->len = c->cap = 0;
}

/* The next buffered line, parsed (*ev NULL if it is not JSON) and taken
 * off the buffer: 1; 0 if no whole line is buffered. */
static int
conn_take_line(struct cli_conn *c, json_t **ev)
{
	char *nl;
	size_t n;
	if (!c->len || !(nl = memchr(c->buf, '\n', c->len)))
		return 0;
	n = (size_t)(nl - c->buf);
	*ev = json_loadb(c->buf, n, 0, NULL);
	memmove(c->buf, nl + 1, c->len - n - 1);
	c->len -= n + 1;
	return 1;
}

/* Room in the buffer for more bytes: 0, -1 if a line would pass
 * CLI_EVENT_MAX, -2 out of memory. */
static int
conn_room(struct cli_conn *c)
{
	char *nb;
	if (c->len < c->cap)
		return 0;
	if (c->cap >= CLI_EVENT_MAX)
		return -1;
	if (!(nb = realloc(c->buf, c->cap ? 2 * c->cap : 65536)))
		return -2;
	c->buf = nb;
	c->cap = c->cap ? 2 * c->cap : 65536;
	return 0;
}

/* The first error event already waiting to be read, without blocking
 * (the daemon wrote it before closing); NULL if none. */
static json_t *
cli_conn_waiting_error(struct cli_conn *c)
{
	json_t *ev;
	ssize_t r;

	for (;;) {
		while (conn_take_line(c, &ev)) {
			const char *kind = json_string_value(json_object_get(ev, "event"));
			if (kind && !strcmp(kind, "error"))
				return ev;
			json_decref(ev);
		}
		if (conn_room(c))
			return NULL;
		r = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return NULL;
		c->len += (size_t)r;
	}
}

int
cli_conn_refused(json_t *ev)
{
	const char *code = json_string_value(json_object_get(ev, "code"));
	const char *msg = json_string_value(json_object_get(ev, "message"));
	cli_err("kvsnapd closed the connection: %s (%s)", msg ? msg : "no reason given",
	    code ? code : "?");
	return cli_exit_for_code(code);
}

int
cli_conn_send(struct cli_conn *c, json_t *req, int fd)
{
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cm;
	struct msghdr mh;
	struct iovec iov;
	char *s = json_dumps(req, JSON_COMPACT | JSON_PRESERVE_ORDER), *line;
	size_t n, off = 0;
	ssize_t w;

	if (!s) {
		cli_err("out of memory");
		return CLI_EXIT_FAILURE;
	}
	n = strlen(s);
	if (!(line = realloc(s, n + 2))) {
		free(s);
		cli_err("out of memory");
		return CLI_EXIT_FAILURE;
	}
	line[n++] = '\n';
	while (off < n) {
		memset(&mh, 0, sizeof(mh));
		iov.iov_base = line + off;
		iov.iov_len = n - off;
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		if (fd >= 0 && off == 0) { /* the descriptor rides with the line's first byte */
			struct cmsghdr *h;
			memset(&cm, 0, sizeof(cm));
			mh.msg_control = cm.b;
			mh.msg_controllen = sizeof(cm.b);
			h = CMSG_FIRSTHDR(&mh);
			h->cmsg_level = SOL_SOCKET;
			h->cmsg_type = SCM_RIGHTS;
			h->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(h), &fd, sizeof(int));
		}
		w = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int saved = errno, rc = CLI_EXIT_UNREACHABLE;
			json_t *ev = cli_conn_waiting_error(c);
			if (ev)
				rc = cli_conn_refused(ev); /* it said why before closing */
			else
				cli_err("lost the connection to kvsnapd: %s", strerror(saved));
			json_decref(ev);
			free(line);
			return rc;
		}
		off += (size_t)w;
	}
	free(line);
	return 0;
}

json_t *
cli_conn_recv(struct cli_conn *c)
{
	json_t *ev;
	ssize_t r;
	int room;

	for (;;) {
		if (conn_take_line(c, &ev)) {
			if (!ev || !json_is_object(ev)) {
				json_decref(ev);
				cli_err("kvsnapd sent something that is not an event");
				return NULL;
			}
			return ev;
		}
		if ((room = conn_room(c))) {
			if (room == -1)
				cli_err("kvsnapd sent an over-long line");
			return NULL;
		}
		r = read(c->fd, c->buf + c->len, c->cap - c->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			cli_err("kvsnapd closed the connection%s%s", r < 0 ? ": " : "",
			    r < 0 ? strerror(errno) : "");
			return NULL;
		}
		c->len += (size_t)r;
	}
}

int
cli_exit_for_code(const char *code)
{
	static const struct {
		const char *code;
		int exit;
	} map[] = {
		{ "not_found", CLI_EXIT_NOT_FOUND },
		{ "ambiguous", CLI_EXIT_USAGE },
		{ "bad_json", CLI_EXIT_USAGE },
		{ "bad_request", CLI_EXIT_USAGE },
		{ "unknown_op", CLI_EXIT_USAGE },
		{ "version", CLI_EXIT_USAGE },
		{ "line_too_long", CLI_EXIT_USAGE },
		{ "too_large", CLI_EXIT_USAGE },
		{ "name_taken", CLI_EXIT_USAGE },
		{ "denied", CLI_EXIT_USAGE },
		{ "too_long", CLI_EXIT_CORRUPT }, /* the document, not the command line */
		{ "profile_mismatch", CLI_EXIT_CORRUPT },
		{ "corrupt", CLI_EXIT_CORRUPT },
		{ "unsupported_format", CLI_EXIT_CORRUPT },
		{ "too_many_connections", CLI_EXIT_UNREACHABLE },
		{ "shutting_down", CLI_EXIT_UNREACHABLE },
		{ "loading", CLI_EXIT_UNREACHABLE },
	};
	size_t i;
	for (i = 0; code && i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(code, map[i].code))
			return map[i].exit;
	return CLI_EXIT_FAILURE;
}

int
cli_conn_ready(struct cli_conn *c)
{
	struct timespec pause = { 0, 200 * 1000 * 1000 }, t0, now;
	json_t *req, *ev;
	const char *kind, *code;
	int rc, said = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (!(req = json_pack("{s:i, s:i, s:s}", "v", 1, "id", 0, "op", "hello"))) {
			cli_err("out of memory");
			return CLI_EXIT_FAILURE;
		}
		rc = cli_conn_send(c, req, -1);
		json_decref(req);
		if (rc)
			return rc;
		if (!(ev = cli_conn_recv(c)))
			return CLI_EXIT_UNREACHABLE;
		kind = json_string_value(json_object_get(ev, "event"));
		code = json_string_value(json_object_get(ev, "code"));
		if (kind && !strcmp(kind, "error") && json_is_null(json_object_get(ev, "id"))) {
			rc = cli_conn_refused(ev); /* too many connections: it closes */
			json_decref(ev);
			return rc;
		}
		if (!kind || strcmp(kind, "error") || !code || strcmp(code, "loading")) {
			json_decref(ev); /* ready (or an error the request itself will meet) */
			return 0;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec >= CLI_LOAD_WAIT_S) {
			rc = cli_conn_refused(ev);
			json_decref(ev);
			return rc;
		}
		json_decref(ev);
		if (!said++)
			cli_err("waiting for kvsnapd: it is loading its model and store");
		nanosleep(&pause, NULL);
	}
}
