/*
 * fdio.h: files read and written whole, on libc alone (header-only): a
 * file into memory (the tests, bench_index), a buffer to a file descriptor
 * (write(2) again after a signal or a short write: the block map's atomic
 * save, engine/cache/pod_map.c, and the isolated converter's input and
 * output, formats/isolate.c), and a temporary file closed and renamed over
 * its path (the retaining heads' sidecar and the training checkpoint).
 */
#ifndef COMMON_FDIO_H
#define COMMON_FDIO_H

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The whole file at path in a malloc'd buffer with pad + 1 zero bytes
 * after it (so always a string), its length without them in *len; NULL
 * when it cannot be opened or read. */
static inline char *
kv_slurp(const char *path, size_t pad, size_t *len)
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

/* All of p[0..n) to fd: 0, or -1 (a write failed, errno set, or wrote
 * nothing). */
static inline int
kv_write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* f, written to tmp (err: a write already failed), closed and renamed over
 * path: 0, or -1 with tmp removed. */
static inline int
kv_file_commit(FILE *f, int err, const char *tmp, const char *path)
{
	if (fclose(f) != 0)
		err = 1;
	if (err || rename(tmp, path) != 0) {
		remove(tmp);
		return -1;
	}
	return 0;
}

#endif /* COMMON_FDIO_H */
