/*
 * grow.h: an array grown by doubling as elements are appended, on libc
 * alone (header-only): the store's verify records, transaction commands and
 * prune lists, the tokenizer's regex program and classes, the QA bench's
 * tables.
 */
#ifndef COMMON_GROW_H
#define COMMON_GROW_H

#include <stdint.h>
#include <stdlib.h>

/* Room for element n of the array p (room for *cap elements of elem
 * bytes): p itself while n < *cap, else p moved to twice the room (first
 * when it had none) and *cap updated; NULL when out of memory (p and *cap
 * as they were). */
static inline void *
kv_grow(void *p, int64_t n, int64_t *cap, int64_t first, size_t elem)
{
	int64_t c = *cap ? 2 * *cap : first;
	void *q;
	if (n < *cap)
		return p;
	if (!(q = realloc(p, (size_t)c * elem)))
		return NULL;
	*cap = c;
	return q;
}

#endif /* COMMON_GROW_H */
