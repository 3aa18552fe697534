/*
 * creds.h: a credentials file: "USER PASSWORD" on one line, the user and
 * the password on two lines (the password line whole, blanks inside kept),
 * or a password alone.  It must be a regular file of this user (or root)
 * that group and others cannot access (mode 0600 or 0400): a secret others
 * could read is refused, with the chmod that fixes it.
 */
#ifndef COMMON_CREDS_H
#define COMMON_CREDS_H

#include <stddef.h>

#define KV_CREDS_MAX 4096 /* bytes of a credentials file, at most */

enum kv_creds_err {
	KV_CREDS_BAD = -1,    /* the file will not do (mode, owner, kind, content) */
	KV_CREDS_IO = -2,     /* it cannot be read */
	KV_CREDS_NOMEM = -3
};

/* Read and parse the file: *user (NULL when it names none) and *pass,
 * malloc'd.  0 or a kv_creds_err with a reason naming the file. */
int kv_creds_load(const char *path, char **user, char **pass, char *why, size_t why_len);
/* The parser alone, over buf[0..len) (buf has room for a NUL at len; it
 * is cut up); the reason does not name a file. */
int kv_creds_parse(char *buf, size_t len, char **user, char **pass, char *why, size_t why_len);

#endif /* COMMON_CREDS_H */
