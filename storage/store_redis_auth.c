/*
 * store_redis_auth.c: the redis-cluster credentials file reader
 * (store_redis_auth_file in store.h).  Credentials never travel on a
 * command line (ps shows argv to every user); they live in a file only
 * its owner can read, and a file anyone else could read or change is
 * refused with the fix in the message.
 *
 *   # /etc/kvsnap/redis.auth, mode 0600, owned by the service user
 *   user = kvsnap
 *   password = s3cret
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/store_backend.h"

#define RA_MAX 4096 /* bytes of a credentials file */

/* Trim spaces and tabs at both ends of s[0..*n). */
static const char *
ra_trim(const char *s, size_t *n)
{
	while (*n && (*s == ' ' || *s == '\t'))
		s++, (*n)--;
	while (*n && (s[*n - 1] == ' ' || s[*n - 1] == '\t' || s[*n - 1] == '\r'))
		(*n)--;
	return s;
}

int
store_redis_auth_parse(const char *buf, size_t len, char *user, size_t user_len, char *pass,
    size_t pass_len, char *why, size_t why_len)
{
	size_t n, kn, vn;
	const char *line, *nl, *eq, *k, *v;
	int lineno = 0, have_pass = 0;

	if (!buf || !user || !pass || user_len == 0 || pass_len == 0)
		return store_fail(why, why_len, STORE_ERR_ARG, "missing argument");
	user[0] = pass[0] = '\0';
	if (len > RA_MAX)
		return store_fail(why, why_len, STORE_ERR_ARG, "over %d bytes", RA_MAX);
	for (line = buf; line < buf + len; line = nl + 1) {
		lineno++;
		if (!(nl = memchr(line, '\n', (size_t)(buf + len - line))))
			nl = buf + len;
		n = (size_t)(nl - line);
		line = ra_trim(line, &n);
		if (n == 0 || line[0] == '#')
			continue;
		if (!(eq = memchr(line, '=', n))) {
			user[0] = pass[0] = '\0';
			return store_fail(why, why_len, STORE_ERR_ARG,
			    "line %d: want 'user = NAME' or 'password = SECRET'", lineno);
		}
		kn = (size_t)(eq - line);
		k = ra_trim(line, &kn);
		vn = n - (size_t)(eq + 1 - line);
		v = ra_trim(eq + 1, &vn);
		if (kn == 4 && memcmp(k, "user", 4) == 0 && vn < user_len && !memchr(v, 0, vn)) {
			memcpy(user, v, vn);
			user[vn] = '\0';
		} else if (kn == 8 && memcmp(k, "password", 8) == 0 && vn && vn < pass_len &&
		    !memchr(v, 0, vn)) {
			memcpy(pass, v, vn);
			pass[vn] = '\0';
			have_pass = 1;
		} else {
			user[0] = pass[0] = '\0';
			return store_fail(why, why_len, STORE_ERR_ARG,
			    "line %d: unknown key, empty or too long value "
			    "(want 'user = NAME' or 'password = SECRET')", lineno);
		}
	}
	if (!have_pass) {
		user[0] = '\0';
		return store_fail(why, why_len, STORE_ERR_ARG, "no 'password = SECRET' line");
	}
	return 0;
}

int
store_redis_auth_file(const char *path, char *user, size_t user_len, char *pass,
    size_t pass_len, char *why, size_t why_len)
{
	char buf[RA_MAX + 1], w[256];
	struct stat st;
	ssize_t got;
	size_t len = 0;
	int fd, rc;

	if (!path || !user || !pass || user_len == 0 || pass_len == 0)
		return store_fail(why, why_len, STORE_ERR_ARG, "credentials: missing argument");
	user[0] = pass[0] = '\0';
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return store_fail(why, why_len, STORE_ERR_ARG, "credentials file %s: %s", path,
		    errno == ELOOP ? "is a symbolic link; name the file itself" : strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return store_fail(why, why_len, STORE_ERR_ARG, "credentials file %s: not a regular file",
		    path);
	}
	if (st.st_uid != geteuid()) {
		close(fd);
		return store_fail(why, why_len, STORE_ERR_ARG,
		    "credentials file %s is owned by uid %u, not by this user (uid %u): chown it",
		    path, (unsigned)st.st_uid, (unsigned)geteuid());
	}
	if (st.st_mode & 077) {
		close(fd);
		return store_fail(why, why_len, STORE_ERR_ARG,
		    "credentials file %s is open to group or others (mode %04o): chmod 600 %s", path,
		    (unsigned)(st.st_mode & 07777), path);
	}
	while (len <= RA_MAX && (got = read(fd, buf + len, RA_MAX + 1 - len)) > 0)
		len += (size_t)got;
	close(fd);
	rc = store_redis_auth_parse(buf, len, user, user_len, pass, pass_len, w, sizeof(w));
	explicit_bzero(buf, sizeof(buf));
	if (rc)
		return store_fail(why, why_len, rc, "credentials file %s: %s", path, w);
	return 0;
}
