/*
 * strv.h: a malloc'd array of n malloc'd strings freed, on libc alone: the
 * redis-cluster client's key lists (storage/) and the CLI's file name
 * lists (clients/).
 */
#ifndef COMMON_STRV_H
#define COMMON_STRV_H

#include <stdlib.h>

/* Free v[0..n) and v (NULL is fine). */
static inline void
kv_strv_free(char **v, size_t n)
{
	size_t i;
	for (i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

#endif
