/*
 * http_peer.c: who is at the other end of an HTTP connection, and whether
 * they may use it.  A Unix socket says who itself (SO_PEERCRED).  A
 * loopback TCP connection does not, but the kernel knows the owner of the
 * client's socket: ask its socket table (NETLINK_SOCK_DIAG, inet_diag) for
 * the socket whose local address and port are our peer's and whose remote
 * ones are ours, and read its idiag_uid.  http.c asks once, when it
 * accepts the connection, before it reads a byte of the request.
 *
 * Only a full socket that a process still holds counts (issue 26, defect
 * 1): a client that sent its request and closed at once leaves a
 * time-wait entry (or an orphan, or nothing after a reset), and the kernel
 * reports a time-wait socket's uid as 0: read as is, any local user was
 * root.  Such a caller cannot be identified; the caller refuses it (403).
 *
 * Who may call (http_allow_*): root, the daemon's own user, and what
 * http-allow lists, by default the members of the main socket's group:
 * the rule the socket's mode 0660 makes for the socket protocol, now also
 * for a TCP port, which has no file mode (defect 4).
 */
#include <errno.h>
#include <grp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>

#include "daemon/http.h"

/* The uid owning the TCP socket local=src, remote=dst (family AF_INET or
 * AF_INET6; addresses and ports in network order). */
static int
http_diag_uid(int family, const void *src, uint16_t sport, const void *dst, uint16_t dport,
    uid_t *uid, char *why, size_t why_len)
{
	struct {
		struct nlmsghdr nh;
		struct inet_diag_req_v2 r;
	} req;
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	union {
		char b[8192];
		struct nlmsghdr align;
	} buf;
	struct nlmsghdr *h;
	struct timeval tv = { 1, 0 };
	ssize_t n;
	int fd, rc = -1;
	size_t alen = family == AF_INET ? 4 : 16;

	if ((fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG)) < 0) {
		snprintf(why, why_len, "netlink sock_diag: %s", strerror(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = sizeof(req);
	req.nh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.nh.nlmsg_flags = NLM_F_REQUEST; /* one socket, found by its addresses */
	req.nh.nlmsg_seq = 1;
	req.r.sdiag_family = (uint8_t)family;
	req.r.sdiag_protocol = IPPROTO_TCP;
	req.r.idiag_states = ~0u;
	req.r.id.idiag_sport = sport;
	req.r.id.idiag_dport = dport;
	memcpy(req.r.id.idiag_src, src, alen);
	memcpy(req.r.id.idiag_dst, dst, alen);
	req.r.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
	req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		snprintf(why, why_len, "netlink sock_diag: %s", strerror(errno));
		goto out;
	}
	if ((n = recv(fd, buf.b, sizeof(buf.b), 0)) < 0) {
		snprintf(why, why_len, "netlink sock_diag: %s", strerror(errno));
		goto out;
	}
	for (h = &buf.align; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
		if (h->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(h);
			snprintf(why, why_len, "the kernel does not know the peer's socket: %s",
			    strerror(-e->error));
			goto out;
		}
		if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
		    h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
			const struct inet_diag_msg *m = NLMSG_DATA(h);
			/* a time-wait entry (uid 0 whoever it was) or an orphan: the
			 * client has closed; its inode is 0 either way */
			if (m->idiag_inode == 0 || m->idiag_state == TCP_TIME_WAIT ||
			    m->idiag_state == TCP_CLOSE) {
				snprintf(why, why_len, "the client's socket is already closed "
				    "(TCP state %u, no process holds it)", (unsigned)m->idiag_state);
				goto out;
			}
			*uid = (uid_t)m->idiag_uid;
			rc = 0;
			goto out;
		}
	}
	snprintf(why, why_len, "the kernel did not answer for the peer's socket");
out:
	close(fd);
	return rc;
}

int
http_peer_uid(int fd, uid_t *uid, char *why, size_t why_len)
{
	struct sockaddr_storage me, peer;
	socklen_t ml = sizeof(me), pl = sizeof(peer);
	struct ucred cr;
	socklen_t cl = sizeof(cr);

	if (getsockname(fd, (struct sockaddr *)&me, &ml) || getpeername(fd, (struct sockaddr *)&peer,
	    &pl)) {
		snprintf(why, why_len, "cannot read the connection's addresses: %s", strerror(errno));
		return -1;
	}
	if (me.ss_family == AF_UNIX) {
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl)) {
			snprintf(why, why_len, "SO_PEERCRED: %s", strerror(errno));
			return -1;
		}
		*uid = cr.uid;
		return 0;
	}
	if (me.ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)&me, *b = (const void *)&peer;
		return http_diag_uid(AF_INET, &b->sin_addr, b->sin_port, &a->sin_addr, a->sin_port,
		    uid, why, why_len);
	}
	if (me.ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)&me, *b = (const void *)&peer;
		return http_diag_uid(AF_INET6, &b->sin6_addr, b->sin6_port, &a->sin6_addr,
		    a->sin6_port, uid, why, why_len);
	}
	snprintf(why, why_len, "a connection of address family %d", (int)me.ss_family);
	return -1;
}

/* ------------------------------------------------------------------------ */
/* Who may call                                                              */

int
http_allow_parse(const char *s, struct http_allow *a, char *msg, size_t msg_len)
{
	char tok[256], *end;
	const char *p = s;
	size_t n;
	long v;
	int grp;

	memset(a, 0, sizeof(*a));
	for (;;) {
		p += strspn(p, ", \t");
		if (!*p)
			break;
		n = strcspn(p, ", \t");
		if (n >= sizeof(tok)) {
			snprintf(msg, msg_len, "an entry of %zu bytes (at most %zu)", n, sizeof(tok) - 1);
			return -1;
		}
		memcpy(tok, p, n);
		tok[n] = '\0';
		p += n;
		if (!strcmp(tok, "any")) {
			a->any = 1;
			continue;
		}
		if (!strcmp(tok, "socket-group")) {
			a->socket_group = 1;
			continue;
		}
		grp = tok[0] == '@';
		if (grp && !tok[1]) {
			snprintf(msg, msg_len, "'@' needs a group name or gid");
			return -1;
		}
		errno = 0;
		v = strtol(tok + grp, &end, 10);
		if (!*end && !errno && v >= 0 && v < (long)UINT32_MAX) {
			/* a number: a uid or gid, with or without an entry */
		} else if (grp) {
			struct group *g = getgrnam(tok + 1);
			if (!g) {
				snprintf(msg, msg_len, "no group '%s'", tok + 1);
				return -1;
			}
			v = (long)g->gr_gid;
		} else {
			struct passwd *pw = getpwnam(tok);
			if (!pw) {
				snprintf(msg, msg_len, "no user '%s' (a group is written @NAME)", tok);
				return -1;
			}
			v = (long)pw->pw_uid;
		}
		if ((grp ? a->n_gids : a->n_uids) >= HTTP_ALLOW_MAX) {
			snprintf(msg, msg_len, "more than %d %s", HTTP_ALLOW_MAX, grp ? "groups" : "users");
			return -1;
		}
		if (grp)
			a->gids[a->n_gids++] = (gid_t)v;
		else
			a->uids[a->n_uids++] = (uid_t)v;
	}
	if (!a->any && !a->socket_group && !a->n_uids && !a->n_gids) {
		snprintf(msg, msg_len, "needs at least one of: socket-group, any, a user (NAME or UID), "
		    "a group (@NAME or @GID)");
		return -1;
	}
	return 0;
}

static int
http_gid_in(const struct http_allow *a, gid_t sock_gid, gid_t g)
{
	int i;
	if (a->socket_group && g == sock_gid)
		return 1;
	for (i = 0; i < a->n_gids; i++)
		if (a->gids[i] == g)
			return 1;
	return 0;
}

int
http_allow_check(const struct http_allow *a, gid_t sock_gid, uid_t uid, char *why,
    size_t why_len)
{
	struct passwd pw, *pwp = NULL;
	char buf[4096];
	gid_t *groups = NULL;
	int i, ng = 64, ok = 0;

	if (uid == 0 || uid == geteuid() || a->any)
		return 0;
	for (i = 0; i < a->n_uids; i++)
		if (a->uids[i] == uid)
			return 0;
	if (!a->socket_group && !a->n_gids)
		goto refuse;
	/* groups from the user database: a TCP peer has no credentials of
	 * its own beyond the uid */
	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &pwp) || !pwp) {
		snprintf(why, why_len, "uid %d is not allowed to use this HTTP listener: it has no "
		    "entry in the user database, so its groups are unknown", (int)uid);
		return -1;
	}
	if (http_gid_in(a, sock_gid, pw.pw_gid))
		return 0;
	for (;;) {
		gid_t *ng_groups = realloc(groups, (size_t)ng * sizeof(*groups));
		int want = ng;
		if (!ng_groups)
			break;
		groups = ng_groups;
		if (getgrouplist(pw.pw_name, pw.pw_gid, groups, &want) >= 0) {
			for (i = 0; i < want && !ok; i++)
				ok = http_gid_in(a, sock_gid, groups[i]);
			break;
		}
		if (want <= ng || want > 65536)
			break;
		ng = want;
	}
	free(groups);
	if (ok)
		return 0;
refuse:
	snprintf(why, why_len, "uid %d (%s) is not allowed to use this HTTP listener: it is not "
	    "root, this daemon's user, %s (http-allow, docs/HTTP.md)", (int)uid,
	    pwp ? pw.pw_name : "?", a->socket_group && !a->n_gids && !a->n_uids ?
	    "or a member of the socket's group" : "or one of the users and groups http-allow names");
	return -1;
}
