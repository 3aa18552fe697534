/*
 * creds.c: a credentials file (a networked store's user and password): who
 * may have written it (this user or root, nobody else able to read it) and
 * what it says.  Read by kvsnapd at start (--shared-auth) and by the CLI's
 * store commands; the bytes are wiped after parsing.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/creds.h"
#include "common/fail.h"

/* The words of one line (at most 3 looked at), trimmed. */
static int
auth_words(char *line, char *w[3])
{
	char *save = NULL, *tok;
	int n = 0;
	for (tok = strtok_r(line, " \t", &save); tok && n < 3; tok = strtok_r(NULL, " \t", &save))
		w[n++] = tok;
	return n;
}

/* A line without its surrounding blanks. */
static char *
auth_trim(char *s)
{
	char *e;
	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

int
kv_creds_parse(char *buf, size_t len, char **user, char **pass, char *why, size_t why_len)
{
	char *line[3], *w[3], *p, *save = NULL;
	const char *u = NULL, *pw = NULL;
	int nl = 0, nw;

	*user = *pass = NULL;
	if (memchr(buf, '\0', len))
		return kv_fail(why, why_len, KV_CREDS_BAD, "it holds a NUL byte");
	buf[len] = '\0';
	for (p = strtok_r(buf, "\n", &save); p && nl < 3; p = strtok_r(NULL, "\n", &save))
		if (*(p = auth_trim(p)))
			line[nl++] = p;
	if (nl == 1 && (nw = auth_words(line[0], w)) <= 2) {
		u = nw == 2 ? w[0] : NULL; /* "USER PASSWORD", or a password alone */
		pw = w[nw - 1];
	} else if (nl == 2 && auth_words(line[0], w) == 1) {
		u = w[0];                  /* the password line whole: it may hold blanks */
		pw = line[1];
	}
	if (!pw)
		return kv_fail(why, why_len, KV_CREDS_BAD, "it must hold \"USER PASSWORD\" on one "
		    "line, the user and the password on two lines, or a password alone");
	if ((u && !(*user = strdup(u))) || !(*pass = strdup(pw))) {
		free(*user);
		*user = NULL;
		return kv_fail(why, why_len, KV_CREDS_NOMEM, "out of memory");
	}
	return 0;
}

int
kv_creds_load(const char *path, char **user, char **pass, char *why, size_t why_len)
{
	char buf[KV_CREDS_MAX + 1], w[256];
	struct stat sb;
	ssize_t n;
	size_t got = 0;
	int fd, rc;

	*user = *pass = NULL;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
		return kv_fail(why, why_len, KV_CREDS_BAD, "cannot open the credentials file %s: %s",
		    path, strerror(errno));
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		close(fd);
		return kv_fail(why, why_len, KV_CREDS_BAD, "the credentials file %s is not a "
		    "regular file", path);
	}
	if (sb.st_mode & 077) {
		close(fd);
		return kv_fail(why, why_len, KV_CREDS_BAD, "the credentials file %s is readable by "
		    "others (mode %04o); make it the service user's alone: chmod 600 %s", path,
		    (unsigned)(sb.st_mode & 07777), path);
	}
	if (sb.st_uid != geteuid() && sb.st_uid != 0) {
		close(fd);
		return kv_fail(why, why_len, KV_CREDS_BAD, "the credentials file %s belongs to uid "
		    "%u, not to this user (uid %u) or root: chown it", path, (unsigned)sb.st_uid,
		    (unsigned)geteuid());
	}
	while (got < KV_CREDS_MAX && (n = read(fd, buf + got, KV_CREDS_MAX - got)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = errno;
			close(fd);
			return kv_fail(why, why_len, KV_CREDS_IO, "cannot read the credentials file "
			    "%s: %s", path, strerror(rc));
		}
		got += (size_t)n;
	}
	close(fd);
	if (got >= KV_CREDS_MAX)
		return kv_fail(why, why_len, KV_CREDS_BAD, "the credentials file %s is %d bytes or "
		    "more: not a credentials file", path, KV_CREDS_MAX);
	rc = kv_creds_parse(buf, got, user, pass, w, sizeof(w));
	explicit_bzero(buf, sizeof(buf));
	if (rc)
		return kv_fail(why, why_len, rc, "the credentials file %s: %s", path, w);
	return 0;
}
