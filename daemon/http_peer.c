/*
 * http_peer.c: who is at the other end of an HTTP connection.  A Unix
 * socket says it itself (SO_PEERCRED).  A loopback TCP connection does
 * not, but the kernel knows the owner of the client's socket: ask its
 * socket table (NETLINK_SOCK_DIAG, inet_diag) for the socket whose local
 * address and port are our peer's and whose remote ones are ours, and read
 * its idiag_uid.  When that fails the caller refuses the request (403):
 * nobody is served as someone unknown.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
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
