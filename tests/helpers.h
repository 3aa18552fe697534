/*
 * helpers.h: small set-up pieces more than one test program needs, static
 * inline so each test takes only what it calls: a whole file read into
 * memory or written out, a fresh temporary file.
 */
#ifndef TESTS_HELPERS_H
#define TESTS_HELPERS_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The whole file at path in a malloc'd buffer with pad + 1 zero bytes
 * after it (so always a string), its length without them in *len; NULL
 * when it cannot be opened or read. */
static inline char *
th_slurp(const char *path, size_t pad, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	long n;
	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (p = calloc((size_t)n + pad + 1, 1)) && fread(p, 1, (size_t)n, f) == (size_t)n) {
		*len = (size_t)n;
	} else {
		free(p);
		p = NULL;
	}
	fclose(f);
	return p;
}

/* Write p[0..n) to path (created or truncated); 0 or -1. */
static inline int
th_write(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	size_t w;
	if (!f)
		return -1;
	w = fwrite(p, 1, n, f);
	return fclose(f) == 0 && w == n ? 0 : -1;
}

/* A fresh empty temporary file (mkstemp) in $TMPDIR or /tmp named
 * kvsnap-TAG-XXXXXX, its path in path[0..cap); 0 or -1. */
static inline int
th_tmp(char *path, size_t cap, const char *tag)
{
	const char *dir = getenv("TMPDIR");
	int fd;
	if (!dir || !*dir)
		dir = "/tmp";
	if ((size_t)snprintf(path, cap, "%s/kvsnap-%s-XXXXXX", dir, tag) >= cap)
		return -1;
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

#endif
