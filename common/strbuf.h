/*
 * strbuf.h: a growable byte string kept NUL-terminated, on libc alone: the
 * PoD map's JSON text (engine/cache/pod_map.c) and the QA bench's files
 * and replies (bench/bench_qa.c).
 */
#ifndef COMMON_STRBUF_H
#define COMMON_STRBUF_H

#include <stdlib.h>
#include <string.h>

struct kv_strbuf {
	char *p; /* NULL until the first add; then p[len] == 0 */
	size_t len, cap;
};

/* Append s[0..n): 0, or -1 out of memory (b as it was). */
static inline int
kv_strbuf_add(struct kv_strbuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *p;
		while (cap < b->len + n + 1)
			cap *= 2;
		if (!(p = realloc(b->p, cap)))
			return -1;
		b->p = p;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
	return 0;
}

#endif
