/*
 * helpers.h: small set-up pieces more than one test program needs, static
 * inline so each test takes only what it calls: a whole file read into
 * memory.
 */
#ifndef TESTS_HELPERS_H
#define TESTS_HELPERS_H

#include <stdio.h>
#include <stdlib.h>

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

#endif
